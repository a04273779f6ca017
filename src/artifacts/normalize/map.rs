//! Where each byte of a normalised text came from: a short list of segments mapping offsets in
//! the normalised text back to offsets in the text it was made from, so a rule can match on the
//! normalised text and the evidence can be cut from the bytes as written.
//!
//! A segment is either a stride (each normalised byte stands for `step` bytes of the source, in
//! order: 1 for text copied as it is, 2 or 4 for ASCII decoded from UTF-16 or UTF-32) or opaque
//! (step 0: the segment's normalised bytes stand together for all its source bytes, e.g. `&gt;`
//! read as `>`). Bytes dropped (a zero-width space, a NUL) get no segment: they fall in the gap
//! before the next one. This module must stay linear and must never panic on any offset.

use std::ops::Range;

use super::buf::Buf;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Seg {
    /// Where the segment starts in the normalised text.
    norm: usize,
    /// Where it starts in the source.
    orig: usize,
    /// Source bytes per normalised byte; 0 for an opaque replacement.
    step: u8,
}

/// The map from a normalised text back to its source.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Map {
    segs: Vec<Seg>,
    orig_len: usize,
}

impl Map {
    /// The source offset where the normalised byte at `n` starts.
    pub fn start(&self, n: usize) -> usize {
        let Some(i) = self.segs.partition_point(|s| s.norm <= n).checked_sub(1) else {
            return 0;
        };
        let s = self.segs[i];
        (s.orig + (n - s.norm) * usize::from(s.step)).min(self.orig_end(i))
    }

    /// The source offset where the normalised text up to `n` (exclusive) ends: an opaque
    /// segment is taken whole, so a match ending inside `&gt;` ends after its `;`.
    pub fn end(&self, n: usize) -> usize {
        let Some(last) = n.checked_sub(1) else {
            return self.start(0);
        };
        let Some(i) = self.segs.partition_point(|s| s.norm <= last).checked_sub(1) else {
            return 0;
        };
        let s = self.segs[i];
        if s.step == 0 {
            return self.orig_end(i);
        }
        (s.orig + (n - s.norm) * usize::from(s.step)).min(self.orig_end(i))
    }

    /// The source range of the normalised range `r`.
    pub fn range(&self, r: Range<usize>) -> Range<usize> {
        let start = self.start(r.start);
        start..self.end(r.end).max(start)
    }

    fn orig_end(&self, i: usize) -> usize {
        self.segs.get(i + 1).map_or(self.orig_len, |s| s.orig)
    }
}

/// Builds a normalised text and its [`Map`] together.
#[derive(Debug, Default)]
pub struct Builder {
    pub out: Buf,
    segs: Vec<Seg>,
}

impl Builder {
    pub fn with_capacity(n: usize) -> Builder {
        Builder::with_buffer(Buf::with_capacity(n))
    }

    /// A builder writing into `out` (cleared first), so an earlier text's memory is reused.
    pub fn with_buffer(mut out: Buf) -> Builder {
        out.clear();
        Builder {
            out,
            segs: Vec::new(),
        }
    }

    /// Appends `bytes`, read from the source at `orig` with `step` source bytes per byte (0:
    /// opaque). Empty `bytes` (a dropped character) appends nothing.
    pub fn push(&mut self, orig: usize, bytes: &[u8], step: u8) {
        if bytes.is_empty() {
            return;
        }
        let extends = step != 0
            && self.segs.last().is_some_and(|last| {
                last.step == step
                    && last.orig + (self.out.len() - last.norm) * usize::from(step) == orig
            });
        if !extends {
            self.segs.push(Seg {
                norm: self.out.len(),
                orig,
                step,
            });
        }
        self.out.extend_from_slice(bytes);
    }

    pub fn finish(self, orig_len: usize) -> (Buf, Map) {
        (
            self.out,
            Map {
                segs: self.segs,
                orig_len,
            },
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strides_opaque_segments_and_gaps_map_back() {
        // Source: "ab&gt;c\u{200b}d" → "ab>cd".
        let src = "ab&gt;c\u{200b}d".as_bytes();
        let mut b = Builder::default();
        b.push(0, b"ab", 1);
        b.push(2, b">", 0);
        b.push(6, b"c", 1);
        b.push(10, b"d", 1); // the zero-width space (3 bytes) is dropped
        let (out, map) = b.finish(src.len());
        assert_eq!(out, b"ab>cd");
        assert_eq!(map.range(0..2), 0..2);
        assert_eq!(map.range(2..3), 2..6, "the entity whole");
        assert_eq!(map.range(1..3), 1..6);
        assert_eq!(
            map.range(3..5),
            6..11,
            "the dropped character inside the match"
        );
        assert_eq!(map.range(3..4), 6..7, "not past the stride's own byte");
        assert_eq!(map.range(5..5), 11..11);
        assert_eq!(map.range(0..99), 0..11, "past the end is clamped");
    }

    #[test]
    fn a_wide_stride_extends_while_contiguous() {
        let mut b = Builder::default();
        b.push(2, b"a", 2);
        b.push(4, b"b", 2);
        b.push(8, b"c", 2); // a gap: a new segment
        let (out, map) = b.finish(10);
        assert_eq!(out, b"abc");
        assert_eq!(map.segs.len(), 2);
        assert_eq!(map.range(0..2), 2..6);
        assert_eq!(map.range(2..3), 8..10);
    }

    #[test]
    fn an_empty_map_never_panics() {
        let map = Map::default();
        assert_eq!(map.range(0..0), 0..0);
        assert_eq!(map.range(3..9), 0..0);
    }
}
