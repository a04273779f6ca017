//! The comparison of the work tree with the baseline: one merge over both sorted listings,
//! giving the changed paths, what changed about them (type, mode), what could not be decided,
//! and the new paths that are a way to a baseline file (a symlink or hard link).

use std::collections::{BTreeMap, HashMap};

use super::baseline::{BaseKind, Baseline};
use super::tree::{Kind, WorkTree};
use super::{excluded, name, Change, Workspace};

impl Workspace {
    /// Every difference between the baseline and the work tree: bytes, type and mode.
    pub(super) fn compare(&mut self, base: &Baseline, tree: &WorkTree) {
        let mut changes = BTreeMap::new();
        // Both sides are sorted the same way: one merge over them, no look-ups (the cost of a
        // judgment on a large tree was mostly these).
        let mut bi = base.entries.iter().peekable();
        let mut ti = tree.entries.iter().peekable();
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
            if excluded(p) {
                continue;
            }
            let Some(e) = e else {
                changes.insert(p.clone(), Change::Removed);
                continue;
            };
            let Some(b) = b else {
                if matches!(e.kind, Kind::Dir) {
                    continue;
                }
                if e.ignored {
                    self.ignored.push(p.clone());
                    continue;
                }
                changes.insert(p.clone(), Change::Added);
                continue;
            };
            let now = match &e.kind {
                Kind::File { exec } => BaseKind::File { exec: *exec },
                Kind::Symlink { .. } => BaseKind::Symlink,
                Kind::Dir if b.kind == BaseKind::Submodule => continue,
                other => {
                    // A directory, FIFO, socket, device or nested repository where the
                    // baseline has a file: its type changed.
                    changes.insert(p.clone(), Change::Modified);
                    self.details.insert(
                        p.clone(),
                        format!("type: {} → {}", b.kind.describe(), kind_name(other)),
                    );
                    continue;
                }
            };
            let same_type = matches!(
                (&now, &b.kind),
                (BaseKind::File { .. }, BaseKind::File { .. })
                    | (BaseKind::Symlink, BaseKind::Symlink)
            );
            if !same_type {
                changes.insert(p.clone(), Change::Modified);
                self.details.insert(
                    p.clone(),
                    format!("type: {} → {}", b.kind.describe(), now.describe()),
                );
                continue;
            }
            if now != b.kind {
                changes.insert(p.clone(), Change::Modified);
                self.details.insert(
                    p.clone(),
                    format!("mode: {} → {}", b.kind.describe(), now.describe()),
                );
            }
            if let Some(why) = &e.unreadable {
                self.undecided.push((p.clone(), why.clone()));
                continue;
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
                        .push((p.clone(), "its content could not be hashed".into()));
                    continue;
                }
            };
            if differs {
                changes.insert(p.clone(), Change::Modified);
            }
        }
        // A new path that is a way to a baseline file: a link that resolves to one, or a hard
        // link sharing its inode.
        let mut inodes: HashMap<(u64, u64), String> = HashMap::new();
        let added: Vec<&String> = changes
            .iter()
            .filter(|(_, c)| **c == Change::Added)
            .map(|(p, _)| p)
            .collect();
        let hard_links = added.iter().any(|p| {
            tree.entries
                .get(*p)
                .is_some_and(|e| matches!(e.kind, Kind::File { .. }) && e.nlink > 1)
        });
        if hard_links {
            for p in base.entries.keys() {
                if let Some(e) = tree.entries.get(p) {
                    if matches!(e.kind, Kind::File { .. }) {
                        inodes.insert((e.dev, e.ino), p.clone());
                    }
                }
            }
        }
        for p in added {
            let Some(e) = tree.entries.get(p) else {
                continue;
            };
            match &e.kind {
                Kind::Symlink { target } => {
                    if let Some(to) = resolve_link(p, target) {
                        if base.entries.contains_key(&to) {
                            self.aliases.push((p.clone(), to));
                        }
                    }
                }
                Kind::File { .. } if e.nlink > 1 => {
                    if let Some(to) = inodes.get(&(e.dev, e.ino)) {
                        self.aliases.push((p.clone(), to.clone()));
                    }
                }
                _ => {}
            }
        }
        self.changes = Some(changes);
    }
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

/// Where a symlink at `rel` with `target` points, relative to the workspace, resolved
/// lexically; `None` outside it or when absolute.
fn resolve_link(rel: &str, target: &[u8]) -> Option<String> {
    let target = name::encode(target);
    if target.starts_with('/') {
        return None;
    }
    let mut parts: Vec<&str> = rel.split('/').collect();
    parts.pop();
    for c in target.split('/') {
        match c {
            "" | "." => {}
            ".." => {
                parts.pop()?;
            }
            c => parts.push(c),
        }
    }
    Some(parts.join("/"))
}
