//! The memory a file's bytes are read into: a `Vec` for a small file, and for a large one an
//! anonymous mapping advised to use transparent huge pages.
//!
//! Reading a 2 MB report into a fresh `Vec` faults in ~490 pages of 4 KiB one by one while
//! `read` copies into them (about 2 µs each in a VM): that was the largest single cost of
//! `verify` on a build with megabytes of reports. An anonymous mapping whose length is a
//! multiple of 2 MiB, advised `MADV_HUGEPAGE`, takes one fault per 2 MiB where the kernel has
//! THP in `madvise` or `always` mode; where it has not, it is ordinary memory that faults as
//! the `Vec` did. Only anonymous memory is mapped: the watched file itself never is (a
//! truncation under a file mapping is a SIGBUS, and the bytes judged must be the bytes hashed).

use std::fmt;
use std::io::{self, Read};
use std::ops::Deref;
use std::sync::OnceLock;

use memmap2::MmapMut;
use sha2::{Digest, Sha256};

/// Files of at least this many bytes are read into a huge-page mapping (and normalised texts
/// of this size are built in one, see `normalize::buf`).
pub(crate) const HUGE_MIN: usize = 1 << 20;
/// The huge page size the mapping's length is rounded up to (x86-64 and aarch64 with 4 KiB
/// pages).
#[cfg_attr(
    not(target_os = "linux"),
    allow(dead_code, reason = "huge pages are asked for on Linux only")
)]
const HUGE_PAGE: usize = 2 << 20;

/// A file's bytes, read once; derefs to `[u8]`.
pub struct Bytes {
    repr: Repr,
    /// Whether the bytes hold a NUL byte: noted while they are hashed
    /// ([`Bytes::sha256_noting_nul`]), else found when first asked.
    nul: OnceLock<bool>,
}

enum Repr {
    Heap(Vec<u8>),
    /// The first `len` bytes of `map` (its length rounded up to huge pages).
    Mapped {
        map: MmapMut,
        len: usize,
    },
}

impl Bytes {
    /// Reads at most `limit` bytes of `file` (whose size was `hint` when looked at) to its end.
    /// A file expected to hold [`HUGE_MIN`] bytes or more is read into a huge-page mapping of
    /// `hint + 1` bytes or more; if it grew past that while being read, the rest is read into
    /// a `Vec` after what was read (so the bytes are the same either way).
    pub(super) fn read_from(file: impl Read, hint: usize, limit: u64) -> io::Result<Bytes> {
        let mut file = file.take(limit);
        let want = hint.saturating_add(1);
        if want >= HUGE_MIN {
            if let Some(mut map) = huge_map(want) {
                let mut len = 0;
                while len < map.len() {
                    match file.read(&mut map[len..]) {
                        Ok(0) => return Ok(Bytes::of(Repr::Mapped { map, len })),
                        Ok(n) => len += n,
                        Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                        Err(e) => return Err(e),
                    }
                }
                // Full and not at the end: the file grew. Go on in a Vec.
                let mut bytes = map[..len].to_vec();
                file.read_to_end(&mut bytes)?;
                return Ok(Bytes::of(Repr::Heap(bytes)));
            }
        }
        let mut bytes = Vec::with_capacity(want);
        file.read_to_end(&mut bytes)?;
        Ok(Bytes::of(Repr::Heap(bytes)))
    }

    fn of(repr: Repr) -> Bytes {
        Bytes {
            repr,
            nul: OnceLock::new(),
        }
    }

    /// Whether the bytes hold a NUL byte anywhere.
    pub fn has_nul(&self) -> bool {
        *self.nul.get_or_init(|| memchr::memchr(0, self).is_some())
    }

    /// The SHA-256 of the bytes, noting meanwhile whether they hold a NUL byte: a piece at a
    /// time, each searched for NUL while the hash has it in the cache, instead of a second
    /// pass over megabytes from memory when a text rule asks ([`Bytes::has_nul`]).
    pub(super) fn sha256_noting_nul(&self) -> [u8; 32] {
        const PIECE: usize = 64 << 10;
        let mut hash = Sha256::new();
        let mut nul = false;
        for piece in self.chunks(PIECE) {
            hash.update(piece);
            nul = nul || memchr::memchr(0, piece).is_some();
        }
        let _ = self.nul.set(nul);
        hash.finalize().into()
    }

    /// Whether the bytes live in an anonymous huge-page mapping (for tests).
    #[cfg(test)]
    pub(super) fn is_mapped(&self) -> bool {
        matches!(self.repr, Repr::Mapped { .. })
    }
}

/// An anonymous read-write mapping of at least `want` bytes, rounded up to whole huge pages and
/// advised to use them; `None` when it cannot be had (the caller then uses a `Vec`).
/// Elsewhere than Linux there are no transparent huge pages to ask for: always `None`.
pub(crate) fn huge_map(want: usize) -> Option<MmapMut> {
    #[cfg(target_os = "linux")]
    {
        let len = want.checked_next_multiple_of(HUGE_PAGE)?;
        let map = memmap2::MmapOptions::new().len(len).map_anon().ok()?;
        // Advice the kernel does not take (THP off, another page size) leaves ordinary pages.
        // With THP `defrag` at `madvise` (the kernel's default) a fault here may compact memory
        // to find a huge page before it falls back to small ones: a cost only a fragmented
        // machine pays, and once per 2 MiB.
        let _ = map.advise(memmap2::Advice::HugePage);
        Some(map)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = want;
        None
    }
}

impl Deref for Bytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match &self.repr {
            Repr::Heap(v) => v,
            Repr::Mapped { map, len } => &map[..*len],
        }
    }
}

impl AsRef<[u8]> for Bytes {
    fn as_ref(&self) -> &[u8] {
        self
    }
}

impl From<Vec<u8>> for Bytes {
    fn from(v: Vec<u8>) -> Bytes {
        Bytes::of(Repr::Heap(v))
    }
}

impl PartialEq for Bytes {
    fn eq(&self, other: &Bytes) -> bool {
        **self == **other
    }
}

impl Eq for Bytes {}

impl PartialEq<[u8]> for Bytes {
    fn eq(&self, other: &[u8]) -> bool {
        **self == *other
    }
}

impl PartialEq<Vec<u8>> for Bytes {
    fn eq(&self, other: &Vec<u8>) -> bool {
        **self == **other
    }
}

impl<const N: usize> PartialEq<&[u8; N]> for Bytes {
    fn eq(&self, other: &&[u8; N]) -> bool {
        **self == other[..]
    }
}

// Never dumps megabytes of contents into a log.
impl fmt::Debug for Bytes {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "<{} bytes>", self.len())
    }
}

#[cfg(test)]
mod tests;
