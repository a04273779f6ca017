//! A file's stat identity, as the referee keeps it: what it judged of an input, what an earlier
//! run left in a build directory.

use std::os::unix::fs::MetadataExt;
use std::time::SystemTime;

/// A file's stat identity: two identities that are equal are (as far as `stat` can tell) the same
/// bytes. A write in place changes the size or the times; a replacement changes the inode; a
/// new link changes the link count and the change time.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Ident {
    pub dev: u64,
    pub ino: u64,
    pub size: u64,
    pub mtime: (i64, i64),
    pub ctime: (i64, i64),
    pub nlink: u64,
}

impl Ident {
    pub fn of(m: &std::fs::Metadata) -> Ident {
        Ident {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
            ctime: (m.ctime(), m.ctime_nsec()),
            nlink: m.nlink(),
        }
    }

    /// Whether a read that saw `size` bytes with modification time `mtime` read this file as it
    /// is (a write between the read and the stat shows as a difference).
    pub fn matches_read(&self, size: u64, mtime: Option<SystemTime>) -> bool {
        let same_time = mtime.is_none_or(|t| {
            let (s, ns) = match t.duration_since(SystemTime::UNIX_EPOCH) {
                Ok(d) => (
                    i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
                    i64::from(d.subsec_nanos()),
                ),
                Err(e) => {
                    // Before the epoch: negative seconds, nanoseconds counted forward.
                    let d = e.duration();
                    let mut s = -i64::try_from(d.as_secs()).unwrap_or(i64::MAX);
                    let mut ns = i64::from(d.subsec_nanos());
                    if ns > 0 {
                        s -= 1;
                        ns = 1_000_000_000 - ns;
                    }
                    (s, ns)
                }
            };
            self.mtime == (s, ns)
        });
        self.size == size && same_time
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_read_matches_only_the_size_and_time_it_saw() {
        let t = SystemTime::UNIX_EPOCH + std::time::Duration::new(100, 5);
        let i = Ident {
            mtime: (100, 5),
            dev: 1,
            ino: 7,
            size: 10,
            ctime: (100, 0),
            nlink: 1,
        };
        assert!(i.matches_read(10, Some(t)));
        assert!(i.matches_read(10, None));
        assert!(!i.matches_read(11, Some(t)));
        assert!(!i.matches_read(10, Some(t + std::time::Duration::from_nanos(1))));
    }
}
