//! The start snapshot: the baseline of a workspace that is neither a git work tree nor given a
//! `--baseline-dir`. `referee watch` takes it once at start ([`create`]) and keeps it in its
//! state directory (`STATE/baseline/`, out of the worker's reach), so a restarted
//! referee measures against the same tree ([`load`]).
//!
//! Layout: `STATE/baseline/tree/<path>` holds a copy of every file (the excluded top-level
//! names left out, ignore rules honoured in a git work tree); `STATE/baseline/COMPLETE` is
//! written last, so a snapshot cut short by a crash is never taken for a baseline.

use std::path::{Path, PathBuf};

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;

use super::tree::{self, Kind, Put, StatCache, WorkTree};
use super::{excluded, name, read, Content, EXCLUDED};

pub const DIR: &str = "baseline";
const TREE: &str = "tree";
const COMPLETE: &str = "COMPLETE";

/// The kept snapshot's tree, when a complete one exists.
pub fn load(state: &Path) -> Option<PathBuf> {
    let base = state.join(DIR);
    let complete = std::fs::symlink_metadata(base.join(COMPLETE)).ok()?;
    let tree = base.join(TREE);
    let meta = std::fs::symlink_metadata(&tree).ok()?;
    (complete.is_file() && meta.is_dir()).then_some(tree)
}

/// Takes a snapshot of the workspace as it is now, unless a complete one is kept already
/// (a restart keeps the first). Returns the tree. Files larger than `cap` are left out (they
/// then count as added), as are files that cannot be read.
pub fn create(root: &Path, state: &Path, cap: u64) -> std::io::Result<PathBuf> {
    if let Some(tree) = load(state) {
        return Ok(tree);
    }
    let out = state.to_path_buf();
    let base = out.join(DIR);
    if std::fs::symlink_metadata(&base).is_ok() {
        // An incomplete snapshot from a crashed start: set it aside, never delete blindly.
        let aside = out.join(format!(
            "baseline-incomplete-{}",
            chrono::Utc::now().format("%Y%m%dT%H%M%S%.3f")
        ));
        std::fs::rename(&base, aside)?;
    }
    std::fs::create_dir(&base)?;
    let tree = base.join(TREE);
    std::fs::create_dir(&tree)?;
    // Only a plain folder has a snapshot (a git work tree's baseline is a commit): every file
    // and link, read the referee's own way (through directory descriptors, at any depth); a
    // link is kept as a link.
    let canon = std::fs::canonicalize(root)?;
    let none = |_: &[u8], _: bool| false;
    let opts = tree::Options {
        cap,
        skip_top: EXCLUDED,
        ignored: &none,
        known: &|_: &[u8]| None,
        hash: gix::hash::Kind::Sha1,
    };
    let listed = WorkTree::scan(&canon, &opts, &mut StatCache::default())?;
    for (rel, entry) in listed.entries.iter().filter(|(p, _)| !excluded(p)) {
        let raw = name::decode(rel);
        let what = match &entry.kind {
            Kind::Symlink { target } => Put::Link(target),
            Kind::File { exec } => {
                let Content::Bytes(data) = read(&canon, rel, cap, true) else {
                    continue;
                };
                // Kept below so the bytes outlive the borrow.
                let exec = *exec;
                put(&tree, &raw, Put::File(&data.bytes, exec))?;
                continue;
            }
            _ => continue,
        };
        put(&tree, &raw, what)?;
    }
    std::fs::write(
        base.join(COMPLETE),
        format!("{}\n", chrono::Utc::now().to_rfc3339()),
    )?;
    Ok(tree)
}

/// Writes one copied path under `tree` (a new file or link): by its path when short, else
/// through descriptors a name at a time.
fn put(tree: &Path, rel: &[u8], what: Put<'_>) -> std::io::Result<()> {
    let dest = tree.join(std::ffi::OsStr::from_bytes(rel));
    if tree::is_long(dest.as_os_str().len()) {
        return tree::write_in_tree(tree, rel, what);
    }
    if let Some(parent) = dest.parent() {
        std::fs::create_dir_all(parent)?;
    }
    match what {
        Put::Link(target) => std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(target), &dest),
        Put::File(bytes, exec) => {
            std::fs::write(&dest, bytes)?;
            if exec {
                std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755))?;
            }
            Ok(())
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workspace::{BaselineSpec, Change, Workspace};

    #[test]
    fn a_snapshot_is_the_baseline_of_a_plain_directory_and_survives_a_restart() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        std::fs::write(root.join("a.py"), "x = 1\n").unwrap();
        std::fs::create_dir(root.join(".tasks")).unwrap();
        std::fs::write(root.join(".tasks/t.json"), "{}").unwrap();
        let state_tmp = tempfile::tempdir().unwrap();
        let state = state_tmp.path().to_path_buf();
        let spec = BaselineSpec::Snapshot(state.clone());
        let none = Workspace::open(root, &spec, 1 << 20).unwrap();
        assert!(none.changes().is_none());
        assert_eq!(
            none.no_baseline,
            Some(crate::workspace::NoBaseline::NoSnapshot)
        );
        assert!(none.why_no_baseline().to_string().contains("snapshot"));

        let tree = create(root, &state, 1 << 20).unwrap();
        assert!(tree.join("a.py").is_file());
        assert!(!tree.join(".tasks").exists());
        assert!(tree.starts_with(&state), "kept in the state directory");
        std::fs::write(root.join("a.py"), "x = 2\n").unwrap();
        std::fs::write(root.join("b.py"), "y\n").unwrap();
        // A second start keeps the first snapshot.
        assert_eq!(create(root, &state, 1 << 20).unwrap(), tree);
        let ws = Workspace::open(root, &spec, 1 << 20).unwrap();
        assert_eq!(ws.baseline.as_ref().unwrap().kind, "snapshot");
        let ch: Vec<_> = ws.changes().unwrap().iter().collect();
        assert_eq!(
            ch,
            vec![
                (&"a.py".to_string(), &Change::Modified),
                (&"b.py".to_string(), &Change::Added)
            ]
        );
    }
}
