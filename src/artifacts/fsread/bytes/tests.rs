use std::io::{self, Cursor, Read};

use proptest::prelude::*;

use super::{Bytes, HUGE_MIN, HUGE_PAGE};

/// `n` bytes that differ from one position to the next (so a shifted or repeated chunk shows).
fn content(n: usize) -> Vec<u8> {
    (0..n).map(|i| (i % 251) as u8).collect()
}

/// What a plain read of `limit` bytes at most gives: the reference the mapping is held to.
fn plain(bytes: &[u8], limit: u64) -> Vec<u8> {
    let mut out = Vec::new();
    Cursor::new(bytes)
        .take(limit)
        .read_to_end(&mut out)
        .unwrap();
    out
}

#[test]
fn a_large_file_is_mapped_and_a_small_one_is_not() {
    let big = content(HUGE_MIN + 17);
    let b = Bytes::read_from(Cursor::new(&big), big.len(), u64::MAX).unwrap();
    assert_eq!(b.is_mapped(), cfg!(target_os = "linux"));
    assert_eq!(b, big);
    assert_eq!(b.len(), big.len());

    let small = content(HUGE_MIN - 2);
    let b = Bytes::read_from(Cursor::new(&small), small.len(), u64::MAX).unwrap();
    assert!(!b.is_mapped());
    assert_eq!(b, small);
}

#[test]
fn a_file_larger_than_it_said_is_read_to_its_end() {
    // Grown past the mapping (two huge pages for a hint of one MiB): the rest goes on in a Vec.
    let grown = content(2 * HUGE_PAGE + 12_345);
    let b = Bytes::read_from(Cursor::new(&grown), HUGE_MIN, u64::MAX).unwrap();
    assert_eq!(b, grown);
    // Exactly the mapping's length: the end is seen only after the mapping is full.
    let exact = content(HUGE_PAGE);
    let b = Bytes::read_from(Cursor::new(&exact), HUGE_MIN, u64::MAX).unwrap();
    assert_eq!(b, exact);
    // And the limit still holds when it grew.
    let b = Bytes::read_from(Cursor::new(&grown), HUGE_MIN, 3 * HUGE_PAGE as u64 / 2).unwrap();
    assert_eq!(b, grown[..3 * HUGE_PAGE / 2].to_vec());
}

#[test]
fn a_file_smaller_than_it_said_is_what_was_read() {
    let shrunk = content(10);
    let b = Bytes::read_from(Cursor::new(&shrunk), 3 * HUGE_MIN, u64::MAX).unwrap();
    assert_eq!(b, shrunk);
    let b = Bytes::read_from(Cursor::new(&[][..]), 3 * HUGE_MIN, u64::MAX).unwrap();
    assert!(b.is_empty());
}

/// Hands out its bytes a few at a time, with an interruption before each chunk, then fails
/// if told to.
struct Trickle {
    data: Vec<u8>,
    at: usize,
    interrupted: bool,
    fail_at_end: bool,
}

impl Read for Trickle {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if !self.interrupted {
            self.interrupted = true;
            return Err(io::Error::from(io::ErrorKind::Interrupted));
        }
        self.interrupted = false;
        if self.at == self.data.len() && self.fail_at_end {
            return Err(io::Error::from(io::ErrorKind::PermissionDenied));
        }
        let n = buf.len().min(self.data.len() - self.at).min(100_003);
        buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

#[test]
fn interrupted_reads_are_retried_and_errors_are_kept() {
    let data = content(HUGE_MIN + 300_000);
    let trickle = |fail_at_end| Trickle {
        data: data.clone(),
        at: 0,
        interrupted: false,
        fail_at_end,
    };
    let b = Bytes::read_from(trickle(false), data.len(), u64::MAX).unwrap();
    assert_eq!(b.is_mapped(), cfg!(target_os = "linux"));
    assert_eq!(b, data);
    let err = Bytes::read_from(trickle(true), data.len(), u64::MAX).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever the file holds against what its size said, and wherever the limit is, the
    /// bytes are those a plain capped read gives.
    #[test]
    fn same_bytes_as_a_plain_read(
        len in prop_oneof![0..64usize, (HUGE_MIN - 4)..(HUGE_MIN + 4), (HUGE_PAGE - 3)..(HUGE_PAGE + 3), 0..(2 * HUGE_PAGE + 9)],
        hint in prop_oneof![Just(None), (0..(2 * HUGE_PAGE + 9)).prop_map(Some)],
        limit in prop_oneof![Just(u64::MAX), 0..(2 * HUGE_PAGE as u64 + 9)],
    ) {
        let data = content(len);
        let hint = hint.unwrap_or(len);
        let b = Bytes::read_from(Cursor::new(&data), hint, limit).unwrap();
        prop_assert_eq!(&*b, &plain(&data, limit)[..]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The hash taken a piece at a time is the hash of the whole, and the NUL noted while
    /// hashing is the NUL a search of the whole finds: wherever it is (either side of a
    /// piece's edge, first or last byte), and in mapped or heap bytes.
    #[test]
    fn hashing_notes_nul_as_a_search_finds_it(
        len in prop_oneof![0..300usize, (65_536usize - 3)..(65_536 + 3), (HUGE_MIN - 2)..(HUGE_MIN + 70_000)],
        nul_at in prop::option::of(any::<prop::sample::Index>()),
    ) {
        let mut data: Vec<u8> = (0..len).map(|i| (i % 250) as u8 + 1).collect();
        if let (Some(at), false) = (nul_at, data.is_empty()) {
            let at = at.index(data.len());
            data[at] = 0;
        }
        let want_nul = memchr::memchr(0, &data).is_some();
        let want_hash = crate::artifacts::fsread::sha256_hex(&data);
        let read = Bytes::read_from(Cursor::new(&data), data.len(), u64::MAX).unwrap();
        let d = crate::artifacts::fsread::FileData::from_bytes("f", read, None);
        prop_assert_eq!(&d.sha256, &want_hash);
        prop_assert_eq!(d.bytes.has_nul(), want_nul);
        // Bytes that were never hashed search when asked.
        prop_assert_eq!(Bytes::from(data.clone()).has_nul(), want_nul);
    }
}
