//! Literal terms (`forbid_terms`, `require.terms`) found as a reader finds them: in any ASCII
//! case, and with the words of a term apart by any run of whitespace, a line break included
//! (`content⏎map`, `gate  runner`, `content\n    map` in an indented list item).
//!
//! A term's first words are searched together by one automaton; each hit is extended over the
//! term's other words by hand. Matching runs on lowercased text, so the fast SIMD searcher
//! applies where an ASCII-case-insensitive automaton would have to step through every byte of
//! prose.

use std::collections::HashMap;
use std::sync::{Mutex, OnceLock};

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};

/// The terms of one list, ready to search.
#[derive(Debug, Clone)]
pub(super) struct Terms {
    /// Over the distinct lowercased first words.
    ac: AhoCorasick,
    /// The longest first word, in bytes (the overlap between chunks).
    longest: usize,
    /// For each first word, the terms that start with it: (term index, the other words).
    by_first: Vec<Vec<(usize, Vec<Vec<u8>>)>>,
}

/// The terms of `list` (cached per list for the process), or `None` if the automaton cannot be
/// built.
pub(super) fn terms(list: &[String]) -> Option<Terms> {
    type Cache = OnceLock<Mutex<HashMap<String, Option<Terms>>>>;
    static CACHE: Cache = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    cache
        .entry(list.join("\u{0}"))
        .or_insert_with(|| build(list))
        .clone()
}

fn build(list: &[String]) -> Option<Terms> {
    let mut firsts: Vec<Vec<u8>> = Vec::new();
    let mut by_first: Vec<Vec<(usize, Vec<Vec<u8>>)>> = Vec::new();
    for (t, term) in list.iter().enumerate() {
        let mut words = term
            .to_ascii_lowercase()
            .split_ascii_whitespace()
            .map(|w| w.as_bytes().to_vec())
            .collect::<Vec<_>>()
            .into_iter();
        let Some(first) = words.next() else { continue };
        let i = match firsts.iter().position(|f| *f == first) {
            Some(i) => i,
            None => {
                firsts.push(first);
                by_first.push(Vec::new());
                firsts.len() - 1
            }
        };
        by_first[i].push((t, words.collect()));
    }
    if firsts.is_empty() {
        return None;
    }
    let longest = firsts.iter().map(Vec::len).max().unwrap_or(0);
    // A contiguous NFA builds in a fraction of a DFA's time (which would cost more than a
    // small build's whole scan) and searches nearly as fast behind the prefilter.
    let ac = AhoCorasick::builder()
        .match_kind(MatchKind::LeftmostFirst)
        .kind(Some(AhoCorasickKind::ContiguousNFA))
        .build(&firsts)
        .ok()?;
    Some(Terms {
        ac,
        longest,
        by_first,
    })
}

impl Terms {
    /// Every term in `bytes`: (start, end, term index), in order of start. Lowercases a
    /// cache-sized chunk at a time (with an overlap of the longest first word) and searches it.
    pub fn find(&self, bytes: &[u8]) -> Vec<(usize, usize, usize)> {
        const CHUNK: usize = 64 * 1024;
        let mut out = Vec::new();
        let mut buf = Vec::with_capacity(CHUNK + self.longest);
        let mut pos = 0;
        while pos < bytes.len() {
            let end = (pos + CHUNK + self.longest).min(bytes.len());
            lowercase_into(&bytes[pos..end], &mut buf);
            for m in self.ac.find_iter(&buf) {
                // A match starting in the overlap belongs to the next chunk.
                if m.start() >= CHUNK {
                    continue;
                }
                let (start, first_end) = (pos + m.start(), pos + m.end());
                for (t, rest) in &self.by_first[m.pattern().as_usize()] {
                    if let Some(end) = rest_of_term(bytes, first_end, rest) {
                        out.push((start, end, *t));
                        break;
                    }
                }
            }
            pos += CHUNK;
        }
        out
    }
}

/// `bytes` with ASCII `A`-`Z` lowercased, into `out` (cleared first); every other byte as it
/// is. Eight bytes at a time: this runs over every byte of every report searched for terms, and
/// the byte-wise `to_ascii_lowercase` loop is not vectorised in the size-optimised release build
/// (it was a tenth of a `verify` on the large build).
fn lowercase_into(bytes: &[u8], out: &mut Vec<u8>) {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    out.clear();
    out.resize(bytes.len(), 0);
    // Written in place, a word at a time, through fixed-size arrays: in the size-optimised
    // build, growing the vector or `copy_from_slice` per word is a function call per word.
    let (to, to_rest) = out.as_chunks_mut::<8>();
    let (from, from_rest) = bytes.as_chunks::<8>();
    for (o, chunk) in to.iter_mut().zip(from) {
        let w = u64::from_le_bytes(*chunk);
        // Per byte, with its high bit cleared (no carry crosses a byte): the high bit of
        // `low + (0x80 - b'A')` is set when the byte is at least `A`, that of
        // `low + (0x7f - b'Z')` when it is past `Z`. Bytes ≥ 0x80 are not ASCII: left alone.
        let low = w & !HI;
        let at_least_a = low + LO * u64::from(0x80 - b'A');
        let past_z = low + LO * u64::from(0x7f - b'Z');
        let upper = at_least_a & !past_z & !w & HI;
        *o = (w | (upper >> 2)).to_le_bytes();
    }
    for (o, b) in to_rest.iter_mut().zip(from_rest) {
        *o = b.to_ascii_lowercase();
    }
}

/// Where a term ends whose first word ends at `at`: each other word after at least one
/// whitespace byte, in any ASCII case. `None` if the text does not go on with them.
fn rest_of_term(bytes: &[u8], mut at: usize, rest: &[Vec<u8>]) -> Option<usize> {
    for word in rest {
        let gap = bytes
            .get(at..)?
            .iter()
            .take_while(|b| b.is_ascii_whitespace())
            .count();
        if gap == 0 {
            return None;
        }
        at += gap;
        let next = bytes.get(at..at + word.len())?;
        if !next.eq_ignore_ascii_case(word) {
            return None;
        }
        at += word.len();
    }
    Some(at)
}

/// Whether `text` contains `term` as [`Terms::find`] reads it, or, for a term with hyphens,
/// without them (a hyphen broken over a line reads joined: `trade-⏎off` is `tradeoff`).
pub(super) fn contains(text: &str, term: &str) -> bool {
    let squash = |s: &str, hyphens: bool| {
        s.split_ascii_whitespace()
            .map(|w| {
                if hyphens {
                    w.to_ascii_lowercase()
                } else {
                    w.to_ascii_lowercase().replace('-', "")
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    };
    let found = |hyphens: bool| {
        let term = squash(term, hyphens);
        !term.is_empty() && squash(text, hyphens).contains(&term)
    };
    found(true) || (term.contains('-') && found(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn terms_match_any_ascii_case_across_chunks() {
        let list = vec!["Gate Runner".to_string(), "BV-".to_string()];
        let t = terms(&list).unwrap();
        // Put one hit across the 64 KiB chunk boundary and one at the very end.
        let mut text = vec![b'x'; 64 * 1024 - 4];
        text.extend_from_slice(b"gATE rUNNER and bv-");
        assert_eq!(
            t.find(&text),
            vec![
                (64 * 1024 - 4, 64 * 1024 + 7, 0),
                (64 * 1024 + 12, 64 * 1024 + 15, 1)
            ]
        );
    }

    #[test]
    fn lowercasing_eight_at_a_time_is_to_ascii_lowercase() {
        // Every byte value at every position of a word, and every length's remainder.
        let all: Vec<u8> = (0..=255u8).collect();
        let mut out = Vec::new();
        for shift in 0..8 {
            let bytes: Vec<u8> = all
                .iter()
                .cycle()
                .skip(shift)
                .take(256 + shift)
                .copied()
                .collect();
            for len in [0, 1, 7, 8, 9, 15, 16, bytes.len()] {
                let part = &bytes[..len.min(bytes.len())];
                lowercase_into(part, &mut out);
                assert_eq!(
                    out,
                    part.to_ascii_lowercase(),
                    "shift {shift}, length {len}"
                );
            }
        }
        // `out` is cleared first.
        lowercase_into(b"AB", &mut out);
        assert_eq!(out, b"ab");
    }

    #[test]
    fn the_words_of_a_term_may_be_apart_by_any_whitespace() {
        let list = vec![
            "content map".to_string(),
            "gate runner".to_string(),
            "gate keeper".to_string(),
        ];
        let t = terms(&list).unwrap();
        let text = b"the content\n    map; a gate  keeper; gate\r\nrunner; contentmap; gate-runner";
        let found: Vec<usize> = t.find(text).into_iter().map(|(_, _, i)| i).collect();
        assert_eq!(found, vec![0, 2, 1]);
        let (s, e, _) = t.find(text)[0];
        assert_eq!(&text[s..e], b"content\n    map");
        assert!(
            t.find(b"content").is_empty(),
            "a first word alone is no term"
        );
    }

    #[test]
    fn required_terms_read_over_breaks_and_hyphens() {
        assert!(contains("a trade\n off here", "trade off"));
        assert!(contains("the tradeoff was", "trade-off"), "re-joined");
        assert!(contains("Trade-Off", "trade-off"));
        assert!(!contains("trade", "trade-off"));
        assert!(!contains("anything", ""));
    }
}
