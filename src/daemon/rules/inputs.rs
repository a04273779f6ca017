//! The input ledger: what the referee judged of each file a judgment read, as the file's stat
//! identity (device, inode, size, modification and change times, link count) at the read.
//!
//! File events do not tell the referee about every change: a file written through a hard link
//! from outside the watched directory, or through `mmap`, makes no event there. So before it
//! answers `status --sync`, and at each heartbeat, the referee compares the identity it recorded
//! with the file's identity now; a file that differs is judged again. A stat is cheap, and only
//! the files a judgment actually read are compared (not a listing of every screenshot).
//!
//! The comparison is a function of what it is given (no I/O): the session stats the files.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

pub use crate::state::ident::Ident;

/// One judged input.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Judged {
    /// Where it is on disk (a symlink inside the build directory is followed by the stat).
    path: PathBuf,
    /// Its identity when it was read; `None` when it could not be had, or the file changed
    /// while it was read: it differs at the next comparison, and is judged again.
    ident: Option<Ident>,
}

/// The files judgments read, by relative path, with what each read saw.
#[derive(Clone, Debug, Default)]
pub struct InputLedger {
    judged: BTreeMap<String, Judged>,
}

impl InputLedger {
    /// A judgment read `rel` (at `path`); `ident` is what it is now, if the read saw it so.
    pub fn record(&mut self, rel: &str, path: PathBuf, ident: Option<Ident>) {
        self.judged.insert(rel.to_string(), Judged { path, ident });
    }

    /// Forgets the inputs `keep` says are gone (no longer listed as files).
    pub fn retain(&mut self, keep: impl Fn(&str) -> bool) {
        self.judged.retain(|rel, _| keep(rel));
    }

    pub fn len(&self) -> usize {
        self.judged.len()
    }

    pub fn is_empty(&self) -> bool {
        self.judged.is_empty()
    }

    /// The inputs whose identity now (`now`: a stat of the path, `None` when it fails) is not
    /// what was judged.
    pub fn differs(
        &self,
        mut now: impl FnMut(&std::path::Path) -> Option<Ident>,
    ) -> BTreeSet<String> {
        self.judged
            .iter()
            .filter(|(_, j)| j.ident.is_none() || now(&j.path) != j.ident)
            .map(|(rel, _)| rel.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ino: u64, size: u64, m: i64) -> Ident {
        Ident {
            dev: 1,
            ino,
            size,
            mtime: (m, 0),
            ctime: (m, 0),
            nlink: 1,
        }
    }

    #[test]
    fn an_unchanged_input_does_not_differ() {
        let mut l = InputLedger::default();
        l.record("a.json", "/b/a.json".into(), Some(id(7, 10, 100)));
        assert!(l.differs(|_| Some(id(7, 10, 100))).is_empty());
    }

    #[test]
    fn a_written_replaced_or_removed_input_differs() {
        let mut l = InputLedger::default();
        l.record("a.json", "/b/a.json".into(), Some(id(7, 10, 100)));
        for now in [
            Some(id(7, 10, 101)),
            Some(id(8, 10, 100)),
            Some(id(7, 11, 100)),
            None,
        ] {
            assert_eq!(
                l.differs(|_| now),
                BTreeSet::from(["a.json".to_string()]),
                "{now:?}"
            );
        }
    }

    #[test]
    fn an_input_whose_identity_was_not_had_differs_until_judged_again() {
        let mut l = InputLedger::default();
        l.record("a.json", "/b/a.json".into(), None);
        assert_eq!(l.differs(|_| Some(id(7, 10, 100))).len(), 1);
        l.record("a.json", "/b/a.json".into(), Some(id(7, 10, 100)));
        assert!(l.differs(|_| Some(id(7, 10, 100))).is_empty());
        l.retain(|_| false);
        assert!(l.is_empty());
    }
}
