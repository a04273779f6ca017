//! The comparison of the work tree with the baseline: one merge over both sorted listings,
//! giving the changed paths, what changed about them (type, mode), what could not be decided,
//! and the new paths that are a way to a baseline file (a symlink or hard link).

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;

use super::baseline::{BaseEntry, BaseKind, Baseline};
use super::tree::{Entry, Kind, WorkTree};
use super::{excluded, Change, Compared, Workspace};

/// A work tree's entries as a judgment has them: kept in a map (a live referee, which updates
/// them path by path), or laid out sorted once (a one-shot judgment, which only reads them).
#[derive(Debug, Clone, Copy)]
pub(super) enum Entries<'a> {
    Map(&'a BTreeMap<String, Entry>),
    /// Sorted by key, each key once.
    Sorted(&'a [(String, Entry)]),
}

impl<'a> Entries<'a> {
    pub(super) fn get(self, key: &str) -> Option<&'a Entry> {
        match self {
            Entries::Map(m) => m.get(key),
            Entries::Sorted(s) => s
                .binary_search_by(|(k, _)| k.as_str().cmp(key))
                .ok()
                .map(|i| &s[i].1),
        }
    }

    fn iter(self) -> Box<dyn Iterator<Item = (&'a String, &'a Entry)> + 'a> {
        match self {
            Entries::Map(m) => Box::new(m.iter()),
            Entries::Sorted(s) => Box::new(s.iter().map(|(k, e)| (k, e))),
        }
    }
}

impl Compared {
    /// Every path of both sides, in one merge: both are sorted the same way, no look-ups.
    fn full(base: &Arc<Baseline>, entries: Entries<'_>) -> Compared {
        let mut c = Compared {
            base: Some(base.clone()),
            ..Compared::default()
        };
        let mut bi = base.entries.as_slice().iter().peekable();
        let mut ti = entries.iter().peekable();
        loop {
            let (p, b, e) = match (bi.peek().copied(), ti.peek().copied()) {
                (None, None) => break,
                (Some((bp, be)), Some((tp, te))) => match bp.cmp(tp) {
                    std::cmp::Ordering::Equal => {
                        bi.next();
                        ti.next();
                        (bp, Some(be), Some(te))
                    }
                    std::cmp::Ordering::Less => {
                        bi.next();
                        (bp, Some(be), None)
                    }
                    std::cmp::Ordering::Greater => {
                        ti.next();
                        (tp, None, Some(te))
                    }
                },
                (Some((bp, be)), None) => {
                    bi.next();
                    (bp, Some(be), None)
                }
                (None, Some((tp, te))) => {
                    ti.next();
                    (tp, None, Some(te))
                }
            };
            c.note(p, b, e, base);
        }
        c
    }

    /// Brings the comparison kept with `tree` up to date: at the keys rescans touched since
    /// (each looked up on both sides), or made anew after a full scan or for another baseline.
    pub(super) fn bring_up_to_date(tree: &mut WorkTree, base: &Arc<Baseline>) {
        let WorkTree {
            entries,
            touched,
            compared,
        } = tree;
        let same = compared
            .as_ref()
            .and_then(|c| c.base.as_ref())
            .is_some_and(|b| Arc::ptr_eq(b, base));
        match (compared.as_mut(), touched.as_ref()) {
            (Some(c), Some(keys)) if same => {
                for key in keys {
                    c.forget(key);
                    c.note(key, base.entries.get(key), entries.get(key), base);
                }
            }
            _ => *compared = Some(Box::new(Compared::full(base, Entries::Map(entries)))),
        }
        *touched = Some(BTreeSet::new());
    }

    fn forget(&mut self, p: &str) {
        self.changes.remove(p);
        self.details.remove(p);
        self.ignored.remove(p);
        self.undecided.remove(p);
    }

    /// How `p` differs: on the baseline as `b`, in the work tree as `e`.
    fn note(&mut self, p: &str, b: Option<&BaseEntry>, e: Option<&Entry>, base: &Baseline) {
        if excluded(p) {
            return;
        }
        let Some(e) = e else {
            // Outside a sparse checkout's (pinned) set, a path is absent by design.
            if b.is_some() && !base.outside_checkout(p) {
                self.changes.insert(p.to_string(), Change::Removed);
            }
            return;
        };
        let Some(b) = b else {
            if matches!(e.kind, Kind::Dir) {
                return;
            }
            // A submodule's own `.git` (the `gitdir:` file, or its folder) is git's: no
            // commit holds it.
            let parent = p.rsplit_once('/').map(|(d, _)| d);
            if matches!(e.kind, Kind::GitDir) && parent.is_some_and(|d| base.is_submodule(d)) {
                return;
            }
            // What git cannot record at a path of its own (a dev server's socket, a FIFO) is
            // no change either, as `git status` shows none: it has no content to list, and it
            // stays in sight as an ignored path (a protected name is vetoed whatever it is).
            if e.ignored || matches!(e.kind, Kind::Other("socket" | "fifo")) {
                self.ignored.insert(p.to_string());
                return;
            }
            self.changes.insert(p.to_string(), Change::Added);
            return;
        };
        let now = match &e.kind {
            Kind::File { exec } => BaseKind::File { exec: *exec },
            Kind::Symlink { .. } => BaseKind::Symlink,
            Kind::Dir if b.kind == BaseKind::Submodule => return,
            other => {
                // A directory, FIFO, socket, device or nested repository where the
                // baseline has a file: its type changed.
                self.changes.insert(p.to_string(), Change::Modified);
                self.details.insert(
                    p.to_string(),
                    format!("type: {} → {}", b.kind.describe(), kind_name(other)),
                );
                return;
            }
        };
        let same_type = matches!(
            (&now, &b.kind),
            (BaseKind::File { .. }, BaseKind::File { .. }) | (BaseKind::Symlink, BaseKind::Symlink)
        );
        if !same_type {
            self.changes.insert(p.to_string(), Change::Modified);
            self.details.insert(
                p.to_string(),
                format!("type: {} → {}", b.kind.describe(), now.describe()),
            );
            return;
        }
        if now != b.kind {
            self.changes.insert(p.to_string(), Change::Modified);
            self.details.insert(
                p.to_string(),
                format!("mode: {} → {}", b.kind.describe(), now.describe()),
            );
        }
        if let Some(why) = &e.unreadable {
            self.undecided.insert(p.to_string(), why.clone());
            return;
        }
        // The hex of a file's SHA-256 only for the rare path checked out with other line
        // endings: not one string per file of the tree.
        let checked_out = base.checked_out_sha256(p);
        let now = checked_out.and_then(|_| e.sha256_hex());
        let differs = match (checked_out, now, e.oid) {
            (Some(sha), Some(now), _) => sha != now,
            (None, _, Some(oid)) => oid != b.oid,
            _ => {
                self.undecided
                    .insert(p.to_string(), "its content could not be hashed".into());
                return;
            }
        };
        if differs {
            self.changes.insert(p.to_string(), Change::Modified);
        }
    }
}

impl Workspace {
    /// Every difference between the baseline and the work tree (bytes, type and mode): `c`
    /// as made for this judgment, or a kept one (copied).
    pub(super) fn adopt(&mut self, c: Cow<'_, Compared>, base: &Baseline, tree: Entries<'_>) {
        let (changes, details, ignored, undecided) = match c {
            Cow::Owned(c) => (c.changes, c.details, c.ignored, c.undecided),
            Cow::Borrowed(c) => (
                c.changes.clone(),
                c.details.clone(),
                c.ignored.clone(),
                c.undecided.clone(),
            ),
        };
        self.details = details;
        self.ignored = ignored.into_iter().collect();
        self.undecided = undecided.into_iter().collect();
        self.aliases = aliases(&changes, base, tree);
        self.changes = Some(changes);
    }

    /// The baseline's files (and links) whose file name is `file_name`, by path; none without
    /// a baseline.
    pub fn baseline_paths_named(&self, file_name: &str) -> Vec<String> {
        self.baseline_paths_where(|p| p.rsplit('/').next() == Some(file_name))
    }

    /// The baseline's files (and links) whose path `keep` keeps; none without a baseline.
    pub fn baseline_paths_where(&self, keep: impl Fn(&str) -> bool) -> Vec<String> {
        let Some(base) = &self.base else {
            return Vec::new();
        };
        base.entries.keys().filter(|p| keep(p)).cloned().collect()
    }

    /// [`Workspace::baseline_paths_where`], picked once per `key` (which must name what `keep`
    /// keeps) for this workspace, whose baseline never changes: a judgment that asks the same
    /// of the whole baseline in each check pays for it once.
    pub fn baseline_paths_once(&self, key: &str, keep: impl Fn(&str) -> bool) -> Arc<Vec<String>> {
        if let Some(p) = self.picked.borrow().get(key) {
            return Arc::clone(p);
        }
        let p = Arc::new(self.baseline_paths_where(keep));
        self.picked
            .borrow_mut()
            .insert(key.to_string(), Arc::clone(&p));
        p
    }

    /// [`adopt`](Self::adopt) of a comparison made now, in one merge.
    pub(super) fn compare(&mut self, base: &Arc<Baseline>, tree: Entries<'_>) {
        let c = Compared::full(base, tree);
        self.adopt(Cow::Owned(c), base, tree);
    }
}

/// The paths that are a way to a baseline file: an added link whose text leads to one, or a
/// file sharing one's inode (a hard link). git records a link, so a link in the baseline is the
/// baseline's own; git cannot record a hard link, so no baseline vouches for one: a path of the
/// tree that shares a baseline file's inode is a way to it whether it was added or accepted
/// (an `accept --commit` of a commit that took the link along as a file).
fn aliases(
    changes: &BTreeMap<String, Change>,
    base: &Baseline,
    tree: Entries<'_>,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for (p, _) in changes.iter().filter(|(_, c)| **c == Change::Added) {
        if let Some(Kind::Symlink { target }) = tree.get(p).map(|e| &e.kind) {
            if let Some(to) = super::link::resolve(p, target) {
                if base.entries.contains_key(&to) {
                    out.push((p.clone(), to));
                }
            }
        }
    }
    let shared: Vec<(&String, &Entry)> = tree
        .iter()
        .filter(|(_, e)| matches!(e.kind, Kind::File { .. }) && e.nlink > 1)
        .collect();
    if !shared.is_empty() {
        // The baseline files by inode (their own link count as last seen may be stale: a link
        // made to a file changes its count without an event for it).
        let mut inodes: HashMap<(u64, u64), Vec<&String>> = HashMap::new();
        for p in base.entries.keys() {
            if let Some(e) = tree.get(p).filter(|e| matches!(e.kind, Kind::File { .. })) {
                inodes.entry((e.dev, e.ino)).or_default().push(p);
            }
        }
        for (p, e) in shared {
            for to in inodes.get(&(e.dev, e.ino)).into_iter().flatten() {
                if *to != p {
                    out.push((p.clone(), (*to).clone()));
                }
            }
        }
    }
    out.sort();
    out
}

fn kind_name(k: &Kind) -> &'static str {
    match k {
        Kind::File { exec: false } => "file (100644)",
        Kind::File { exec: true } => "executable file (100755)",
        Kind::Symlink { .. } => "symlink",
        Kind::Dir => "directory",
        Kind::GitDir => "nested git repository",
        Kind::Other(what) => what,
    }
}
