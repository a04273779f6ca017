//! Bringing a [`Snapshot`] up to date after changes: only the changed paths are listed again.

use std::collections::HashMap;
use std::fs;
use std::io;
use std::sync::{Mutex, OnceLock};

use super::entry::{relisted, Kind};
use super::escape::{escape_name, normalize_rel};
use super::snapshot::Snapshot;
use super::walk;

/// More changed paths than this in one [`Snapshot::rescan`]: one walk of the tree is cheaper.
const MAX_RESCAN_PATHS: usize = 256;

impl Snapshot {
    /// This listing brought up to date after `changed` (paths relative to the root, as
    /// [`Entry::rel`] names them): each changed path, and everything under it, is listed again;
    /// every other entry is taken over as it was listed. Nothing read is carried over (contents,
    /// the tracker, sizes and mtimes are looked up again on demand), and symlinks are resolved
    /// again (their targets may be among the changes).
    ///
    /// `changed` must name every path that changed since this snapshot was taken (the watcher's
    /// events): what it does not name is not looked at. The referee's own files (`OBSERVER-*`)
    /// are not inputs to any check, so a listing may be stale about them. Falls back to a full
    /// [`Snapshot::scan`] (this listing dropped first, so two are never held) when the root no
    /// longer resolves to the directory listed, when a changed path cannot be mapped back to the
    /// disk (an escaped name, `.` or `..`), lies below something not listed as a directory (a
    /// symlinked directory, a place the walk could not look into), or when there are so many
    /// that one walk is cheaper. A change at an unlisted place or below it, or at the root itself,
    /// falls back too.
    pub fn rescan(self, changed: &[String]) -> io::Result<Snapshot> {
        let Some(dirty) = self.rescan_plan(changed) else {
            let (root, limits) = (self.root.clone(), self.limits);
            drop(self);
            return Snapshot::scan(&root, limits);
        };
        let Snapshot {
            root,
            canonical_root,
            entries,
            limits,
            unlisted,
            ..
        } = self;
        let mut entries = entries;
        drop_under(&mut entries, &dirty, |e| &e.rel);
        let mut unlisted = unlisted;
        drop_under(&mut unlisted, &dirty, |u| &u.rel);
        for e in &mut entries {
            if e.symlink {
                *e = relisted(&canonical_root, e);
            } else {
                e.meta = OnceLock::new();
            }
        }
        let mut fresh = Vec::new();
        for rel in &dirty {
            // Listed as the scan lists: through each directory's own descriptor, never
            // through a symlink swapped in since.
            let (listed, places) = walk::walk_from(&canonical_root, rel);
            fresh.extend(listed);
            unlisted.extend(places);
        }
        if fresh.len() <= 16 {
            // A few: each moved into place (one shift of the tail each).
            fresh.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
            for e in fresh {
                let at = entries.partition_point(|x| x.rel < e.rel);
                entries.insert(at, e);
            }
        } else {
            // Two sorted runs: the stable sort merges them in one pass.
            entries.extend(fresh);
            entries.sort_by(|a, b| a.rel.cmp(&b.rel));
        }
        unlisted.sort_by(|a, b| a.rel.cmp(&b.rel));
        unlisted.dedup();
        Ok(Snapshot {
            root,
            canonical_root,
            entries,
            limits,
            unlisted,
            reads: Mutex::new(HashMap::new()),
            early: Mutex::new(HashMap::new()),
            tracker: OnceLock::new(),
        })
    }

    /// The changed paths to list again (none below another), or `None` when only a full scan
    /// will do (see [`Snapshot::rescan`]).
    fn rescan_plan(&self, changed: &[String]) -> Option<Vec<String>> {
        if changed.len() > MAX_RESCAN_PATHS {
            return None;
        }
        // The root still names the directory listed (and can be listed at all).
        if fs::canonicalize(&self.root).ok()? != *self.canonical_root {
            return None;
        }
        fs::read_dir(self.canonical_root.as_path()).ok()?;
        // A linked folder is listed under its link's name, but its changes come under its own
        // path: with one in the listing, only a full scan keeps both names up to date.
        if self
            .entries
            .iter()
            .any(|e| e.kind == Kind::Dir && e.symlink)
        {
            return None;
        }
        let mut rels: Vec<&str> = changed.iter().map(|c| normalize_rel(c)).collect();
        // Shortest first, so a directory comes before what is under it.
        rels.sort_unstable_by_key(|r| (r.len(), *r));
        rels.dedup();
        let mut dirty: Vec<String> = Vec::new();
        for rel in rels {
            let mappable = !rel.is_empty()
                && !rel.contains('\\')
                && rel
                    .split('/')
                    .all(|c| !c.is_empty() && c != "." && c != "..")
                && escape_name(rel.as_bytes()) == rel;
            if !mappable {
                return None;
            }
            // Inside a `.git` folder: never listed, no input (see `ignored`).
            if rel
                .rsplit_once('/')
                .is_some_and(|(dir, _)| dir.split('/').any(|c| c == ".git"))
            {
                continue;
            }
            let ancestors: Vec<&str> = rel.match_indices('/').map(|(i, _)| &rel[..i]).collect();
            if ancestors.iter().any(|a| dirty.iter().any(|d| d == a)) {
                continue;
            }
            // Listed below a directory this snapshot listed (or the root), and nowhere the
            // walk could not look.
            if let Some(parent) = ancestors.last() {
                let listed_dir = self
                    .get(parent)
                    .is_some_and(|e| e.kind == Kind::Dir && !e.symlink);
                if !listed_dir {
                    return None;
                }
            }
            let hidden = self
                .unlisted
                .iter()
                .any(|u| u.rel.is_empty() || u.rel == rel || ancestors.contains(&u.rel.as_str()));
            if hidden {
                return None;
            }
            dirty.push(rel.to_string());
        }
        Some(dirty)
    }

    /// Drops every cached read (contents, the parsed tracker), keeping the listing: what a
    /// caller holds between two [`Snapshot::rescan`]s need not hold the files it read.
    pub fn forget_reads(&mut self) {
        self.reads = Mutex::new(HashMap::new());
        self.tracker = OnceLock::new();
    }
}

/// Removes from `items` (sorted by `rel`) everything at or under one of `paths`: binary searches
/// for the ranges, then one pass, so a change costs no hashing or scanning of every name.
fn drop_under<T>(items: &mut Vec<T>, paths: &[String], rel: impl Fn(&T) -> &str) {
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for p in paths {
        // `p` itself, then everything in `p/` … up to `p0` (`0` sorts right after `/`).
        let at = items.partition_point(|x| rel(x) < p.as_str());
        if items.get(at).is_some_and(|x| rel(x) == p) {
            ranges.push((at, at + 1));
        }
        let (lo, hi) = (format!("{p}/"), format!("{p}0"));
        let start = items.partition_point(|x| rel(x) < lo.as_str());
        let end = items.partition_point(|x| rel(x) < hi.as_str());
        if start < end {
            ranges.push((start, end));
        }
    }
    if ranges.is_empty() {
        return;
    }
    ranges.sort_unstable();
    let mut i = 0;
    let mut next = 0;
    items.retain(|_| {
        while next < ranges.len() && ranges[next].1 <= i {
            next += 1;
        }
        let gone = next < ranges.len() && ranges[next].0 <= i;
        i += 1;
        !gone
    });
}
#[cfg(test)]
mod tests;
