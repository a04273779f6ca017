//! The buffer a normalised text is built in: a `Vec` for a small text and, from
//! [`HUGE_MIN`] bytes on, an anonymous mapping advised to use transparent huge pages (as a
//! large file is read, see [`crate::artifacts::fsread::Bytes`]). A 2 MB report with one en
//! dash is copied whole into its reading: in a `Vec` that was ~490 page faults per copy, the
//! largest share of the faults left in a `verify` of a build with megabytes of reports.

use std::fmt;
use std::ops::Deref;

use memmap2::MmapMut;

use crate::artifacts::fsread::{huge_map, HUGE_MIN};

/// A growable byte buffer; derefs to the bytes pushed so far.
pub struct Buf(Repr);

enum Repr {
    Heap(Vec<u8>),
    /// The first `len` bytes of `map` are the text; the rest is room.
    Mapped {
        map: MmapMut,
        len: usize,
    },
}

impl Buf {
    pub const fn new() -> Buf {
        Buf(Repr::Heap(Vec::new()))
    }

    /// An empty buffer with room for `n` bytes (mapped from [`HUGE_MIN`] on, when a mapping
    /// can be had).
    pub fn with_capacity(n: usize) -> Buf {
        if n >= HUGE_MIN {
            if let Some(map) = huge_map(n) {
                return Buf(Repr::Mapped { map, len: 0 });
            }
        }
        Buf(Repr::Heap(Vec::with_capacity(n)))
    }

    pub fn capacity(&self) -> usize {
        match &self.0 {
            Repr::Heap(v) => v.capacity(),
            Repr::Mapped { map, .. } => map.len(),
        }
    }

    /// Empties the buffer, keeping its memory.
    pub fn clear(&mut self) {
        match &mut self.0 {
            Repr::Heap(v) => v.clear(),
            Repr::Mapped { len, .. } => *len = 0,
        }
    }

    /// Makes room for `extra` more bytes: at least doubling, so pushes stay linear overall.
    pub fn reserve(&mut self, extra: usize) {
        let len = self.len();
        let need = len.saturating_add(extra);
        if need <= self.capacity() {
            return;
        }
        if let Repr::Heap(v) = &mut self.0 {
            if need < HUGE_MIN {
                v.reserve(extra);
                return;
            }
        }
        let mut grown = Buf::with_capacity(need.max(self.capacity().saturating_mul(2)));
        grown.push_within(self);
        *self = grown;
    }

    /// Appends `bytes`.
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.reserve(bytes.len());
        self.push_within(bytes);
    }

    /// Appends `bytes`, for which [`Buf::reserve`] made room (a `Vec` grows by itself if not).
    fn push_within(&mut self, bytes: &[u8]) {
        match &mut self.0 {
            Repr::Heap(v) => v.extend_from_slice(bytes),
            Repr::Mapped { map, len } => {
                let end = *len + bytes.len();
                if end <= map.len() {
                    map[*len..end].copy_from_slice(bytes);
                    *len = end;
                } else {
                    // Not reached (reserve made room); stays correct if it were.
                    let mut v = Vec::with_capacity(end);
                    v.extend_from_slice(&map[..*len]);
                    v.extend_from_slice(bytes);
                    self.0 = Repr::Heap(v);
                }
            }
        }
    }
}

impl Default for Buf {
    fn default() -> Buf {
        Buf::new()
    }
}

impl Deref for Buf {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.0 {
            Repr::Heap(v) => v,
            Repr::Mapped { map, len } => &map[..*len],
        }
    }
}

impl Clone for Buf {
    fn clone(&self) -> Buf {
        let mut b = Buf::with_capacity(self.len());
        b.push_within(self);
        b
    }
}

impl PartialEq<[u8]> for Buf {
    fn eq(&self, other: &[u8]) -> bool {
        **self == *other
    }
}

impl PartialEq<&[u8]> for Buf {
    fn eq(&self, other: &&[u8]) -> bool {
        **self == **other
    }
}

impl<const N: usize> PartialEq<&[u8; N]> for Buf {
    fn eq(&self, other: &&[u8; N]) -> bool {
        **self == other[..]
    }
}

// Never dumps a report's worth of text into a log.
impl fmt::Debug for Buf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{} bytes>", self.len())
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn small_stays_on_the_heap_and_large_is_mapped() {
        assert!(matches!(Buf::with_capacity(100).0, Repr::Heap(_)));
        let linux = cfg!(target_os = "linux");
        let big = Buf::with_capacity(HUGE_MIN);
        assert_eq!(matches!(big.0, Repr::Mapped { .. }), linux);
        // Growing past the threshold moves the text into a mapping, bytes intact.
        let mut b = Buf::with_capacity(10);
        let piece: Vec<u8> = (0..=255u8).cycle().take(HUGE_MIN / 3 + 7).collect();
        for _ in 0..4 {
            b.extend_from_slice(&piece);
        }
        assert_eq!(matches!(b.0, Repr::Mapped { .. }), linux);
        assert_eq!(&*b, &piece.repeat(4)[..]);
        // Clearing keeps the memory; a clone is equal.
        let cap = b.capacity();
        b.clear();
        assert!(b.is_empty());
        assert_eq!(b.capacity(), cap);
        b.extend_from_slice(b"abc");
        assert_eq!(b, b"abc");
        assert_eq!(b.clone(), b"abc");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// Any run of pushes and clears (some large enough to map, some to outgrow a mapping)
        /// leaves the same bytes as a `Vec` given the same calls.
        #[test]
        fn same_bytes_as_a_vec(
            start in prop_oneof![0..16usize, (HUGE_MIN - 2)..(HUGE_MIN + 2)],
            ops in prop::collection::vec(
                prop_oneof![
                    8 => (0..2048usize).prop_map(Some),
                    2 => ((HUGE_MIN / 2)..(3 * HUGE_MIN)).prop_map(Some),
                    1 => Just(None),
                ],
                1..12,
            ),
        ) {
            let mut b = Buf::with_capacity(start);
            let mut v: Vec<u8> = Vec::new();
            for (i, op) in ops.into_iter().enumerate() {
                match op {
                    Some(n) => {
                        let piece: Vec<u8> = (0..n).map(|k| (k * 7 + i) as u8).collect();
                        b.extend_from_slice(&piece);
                        v.extend_from_slice(&piece);
                    }
                    None => {
                        b.clear();
                        v.clear();
                    }
                }
                prop_assert!(b.capacity() >= b.len());
                prop_assert_eq!(&*b, &v[..]);
            }
            prop_assert_eq!(&*b.clone(), &v[..]);
        }
    }
}
