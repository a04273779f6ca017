//! An earlier run's leftovers: what a build directory held when a new run began over it without
//! being emptied (the previous run had completed, or `--fresh`), each entry with its stat
//! identity then ([`Ident`]). A leftover still exactly as it was is the earlier run's: it is set
//! aside from every snapshot the session judges, so it triggers no pass, is no input to any check
//! and gives no final verdict. Once its identity changes (written, replaced, removed, linked:
//! with a file event or without one, found by [`Leftovers::take_changed`]) it is this run's, for
//! good. A folder is set aside while it is as it was and holds nothing of this run's.
//!
//! The record is kept in the state directory ([`LEFTOVERS_FILE`]), so a restart of the new run
//! keeps it; a resumed run that has none, an emptied directory and a new memory have none. The
//! referee's own files (`OBSERVER-*`) are never leftovers: they are handled as at any start.
//! This module decides what is set aside; it stats the directory and keeps only its own record
//! (its one writer).

use std::collections::{BTreeMap, BTreeSet};
use std::io;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::artifacts::{Kind, Snapshot};
use crate::atomic::Durability;

use super::ident::Ident;

/// The record in the state directory.
pub const LEFTOVERS_FILE: &str = "OBSERVER-LEFTOVERS.json";
const SCHEMA: &str = "referee.leftovers.v1";
/// A record larger than this is no record of the referee's.
const MAX_BYTES: u64 = 64 << 20;

/// One leftover: its identity when the run began, and whether it is a folder.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Left {
    ident: Ident,
    dir: bool,
}

#[derive(Serialize, Deserialize)]
struct Stored {
    schema: String,
    left: BTreeMap<String, Left>,
}

/// The record cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum LeftoversError {
    #[error("cannot read `{}`", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("`{}` is not the referee's record of an earlier run's files ({why})", path.display())]
    Invalid { path: PathBuf, why: String },
}

impl crate::state::kept_json::Schema for Stored {
    fn schema(&self) -> &str {
        &self.schema
    }
}

/// The earlier run's entries still as they were, by relative path.
#[derive(Debug, Default)]
pub struct Leftovers {
    left: BTreeMap<String, Left>,
    /// What was set aside from the last snapshot.
    aside: BTreeSet<String>,
    /// The record changed since it was last kept.
    dirty: bool,
}

/// The identity of what `path` names: the file a link leads to, or the link itself when it
/// leads nowhere.
fn ident_at(path: &Path) -> Option<Ident> {
    std::fs::metadata(path)
        .or_else(|_| std::fs::symlink_metadata(path))
        .ok()
        .map(|m| Ident::of(&m))
}

/// Whether `rel` names its path on disk as it is (a name escaped for display does not: such an
/// entry is never set aside, but judged).
fn maps_back(rel: &str) -> bool {
    crate::artifacts::escape_name(rel.as_bytes()) == rel
}

impl Leftovers {
    /// Everything `snap` (the whole directory, listed as a new run begins) holds, but the
    /// referee's own files (`own`).
    pub fn record(snap: &Snapshot, own: impl Fn(&str) -> bool) -> Leftovers {
        let left = snap
            .entries()
            .iter()
            .filter(|e| !own(&e.rel) && maps_back(&e.rel))
            .filter_map(|e| {
                let ident = ident_at(&e.path())?;
                Some((
                    e.rel.clone(),
                    Left {
                        ident,
                        dir: e.kind == Kind::Dir,
                    },
                ))
            })
            .collect();
        Leftovers {
            left,
            aside: BTreeSet::new(),
            dirty: true,
        }
    }

    /// How many entries are still the earlier run's.
    pub fn len(&self) -> usize {
        self.left.len()
    }

    /// Whether nothing is the earlier run's any more.
    pub fn is_empty(&self) -> bool {
        self.left.is_empty()
    }

    /// Sets aside from `snap` the leftovers still as they were, and forgets those that are not
    /// (this run's now). `full`: `snap` lists the whole directory, so a leftover it lacks was
    /// removed. The paths set aside before that `snap` shows now (what a judgment of changes
    /// must look at beside them: a folder that holds this run's files again).
    pub fn set_aside(&mut self, snap: &mut Snapshot, full: bool) -> Vec<String> {
        if self.left.is_empty() && self.aside.is_empty() {
            return Vec::new();
        }
        let mut files = BTreeSet::new();
        let mut dirs = BTreeSet::new();
        let mut changed = Vec::new();
        for e in snap.entries() {
            let Some(l) = self.left.get(&e.rel) else {
                continue;
            };
            if ident_at(&e.path()) != Some(l.ident) {
                changed.push(e.rel.clone());
            } else if l.dir {
                dirs.insert(e.rel.clone());
            } else {
                files.insert(e.rel.clone());
            }
        }
        if full {
            changed.extend(
                self.left
                    .keys()
                    .filter(|rel| snap.get(rel).is_none() && snap.unlisted_at(rel).is_none())
                    .cloned(),
            );
        }
        for rel in &changed {
            self.left.remove(rel);
            self.dirty = true;
        }
        // A folder that holds anything not set aside is shown, and so is every folder above.
        let mut holding = BTreeSet::new();
        if !dirs.is_empty() {
            for e in snap.entries() {
                if files.contains(&e.rel) || dirs.contains(&e.rel) {
                    continue;
                }
                let mut rel = e.rel.as_str();
                while let Some((parent, _)) = rel.rsplit_once('/') {
                    if !holding.insert(parent.to_string()) {
                        break;
                    }
                    rel = parent;
                }
            }
        }
        let mut aside = files;
        aside.extend(dirs.into_iter().filter(|d| !holding.contains(d)));
        let shown: Vec<String> = self
            .aside
            .iter()
            .filter(|rel| !aside.contains(*rel) && snap.get(rel).is_some())
            .cloned()
            .collect();
        if full {
            self.aside.clone_from(&aside);
        } else {
            // What a re-listing carried over had been set aside already, and is not listed.
            let left = &self.left;
            self.aside
                .retain(|rel| left.contains_key(rel) && snap.get(rel).is_none());
            self.aside.extend(aside.iter().cloned());
        }
        snap.set_aside(&aside);
        shown
    }

    /// The leftovers under `root` that are no longer as they were, found by a stat: written
    /// with no file event (through a hard link from outside, `mmap`), replaced or removed.
    /// They are this run's from now on.
    pub fn take_changed(&mut self, root: &Path) -> BTreeSet<String> {
        let changed: BTreeSet<String> = self
            .left
            .iter()
            .filter(|(rel, l)| ident_at(&root.join(rel)) != Some(l.ident))
            .map(|(rel, _)| rel.clone())
            .collect();
        if !changed.is_empty() {
            self.left.retain(|rel, _| !changed.contains(rel));
            self.dirty = true;
        }
        changed
    }

    /// The record kept in `state`; none when there is no such file.
    pub fn load(state: &Path) -> Result<Leftovers, LeftoversError> {
        use crate::state::kept_json::{read, Unread};
        let path = state.join(LEFTOVERS_FILE);
        let stored: Option<Stored> = read(&path, MAX_BYTES, SCHEMA).map_err(|e| match e {
            Unread::Io(source) => LeftoversError::Io { path, source },
            Unread::Invalid(why) => LeftoversError::Invalid { path, why },
        })?;
        Ok(stored.map_or_else(Leftovers::default, |stored| Leftovers {
            left: stored.left,
            aside: BTreeSet::new(),
            dirty: false,
        }))
    }

    /// Keeps the record in `state` (atomically) when it changed; none left, no file.
    pub fn save(&mut self, state: &Path) -> io::Result<()> {
        if !self.dirty {
            return Ok(());
        }
        if self.left.is_empty() {
            discard(state)?;
        } else {
            let stored = Stored {
                schema: SCHEMA.into(),
                left: self.left.clone(),
            };
            let text = serde_json::to_string(&stored).map_err(io::Error::other)?;
            // Lost at a power cut, a restart sees every file as this run's: the fsync waits for nothing.
            crate::atomic::write_atomic_as(state, LEFTOVERS_FILE, text, Durability::Background)?;
        }
        self.dirty = false;
        Ok(())
    }
}

/// Removes the record from `state` (a run with no leftovers).
pub fn discard(state: &Path) -> io::Result<()> {
    match std::fs::remove_file(state.join(LEFTOVERS_FILE)) {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn listed(dir: &Path) -> Snapshot {
        Snapshot::scan(dir, crate::artifacts::Limits::default()).expect("scan")
    }

    fn rels(snap: &Snapshot) -> Vec<&str> {
        snap.entries().iter().map(|e| e.rel.as_str()).collect()
    }

    #[test]
    fn leftovers_are_set_aside_until_this_run_writes_them() {
        let d = tempfile::tempdir().expect("tempdir");
        let p = d.path();
        std::fs::write(p.join("a.md"), "first run").expect("write");
        std::fs::create_dir_all(p.join("shots/768")).expect("mkdir");
        std::fs::write(p.join("shots/768/x.png"), "png").expect("write");
        std::fs::write(p.join("OBSERVER-REPORT.md"), "report").expect("write");
        let mut left = Leftovers::record(&listed(p), crate::checks::is_own_file);
        assert_eq!(left.len(), 4, "the referee's own file is no leftover");

        let mut snap = listed(p);
        assert!(left.set_aside(&mut snap, true).is_empty());
        assert_eq!(rels(&snap), ["OBSERVER-REPORT.md"]);

        // This run writes a file in a leftover folder: the folders above it are shown again.
        std::fs::write(p.join("shots/768/y.png"), "png").expect("write");
        let mut snap = listed(p);
        let shown = left.set_aside(&mut snap, true);
        assert_eq!(shown, ["shots", "shots/768"]);
        assert_eq!(
            rels(&snap),
            [
                "OBSERVER-REPORT.md",
                "shots",
                "shots/768",
                "shots/768/y.png"
            ]
        );

        // A leftover rewritten (no event needed): this run's, for good.
        std::fs::write(p.join("a.md"), "second run, longer").expect("write");
        assert_eq!(left.take_changed(p), BTreeSet::from(["a.md".to_string()]));
        let mut snap = listed(p);
        left.set_aside(&mut snap, true);
        assert!(snap.get("a.md").is_some());
        assert!(
            snap.get("shots/768/x.png").is_none(),
            "still the first run's"
        );
    }

    #[test]
    fn the_record_outlives_a_restart_and_an_empty_one_is_no_file() {
        let d = tempfile::tempdir().expect("tempdir");
        let state = tempfile::tempdir().expect("tempdir");
        std::fs::write(d.path().join("a.md"), "first run").expect("write");
        let mut left = Leftovers::record(&listed(d.path()), crate::checks::is_own_file);
        left.save(state.path()).expect("save");
        let mut again = Leftovers::load(state.path()).expect("load");
        assert_eq!(again.len(), 1);
        let mut snap = listed(d.path());
        again.set_aside(&mut snap, true);
        assert!(snap.entries().is_empty());
        std::fs::remove_file(d.path().join("a.md")).expect("rm");
        assert_eq!(again.take_changed(d.path()).len(), 1);
        again.save(state.path()).expect("save");
        assert!(!state.path().join(LEFTOVERS_FILE).exists());
        assert_eq!(Leftovers::load(state.path()).expect("load").len(), 0);
        std::fs::write(state.path().join(LEFTOVERS_FILE), "{").expect("write");
        assert!(matches!(
            Leftovers::load(state.path()),
            Err(LeftoversError::Invalid { .. })
        ));
    }
}
