//! The start snapshot: the baseline of a workspace that is neither a git work tree nor given a
//! `--baseline-dir`. `referee watch` takes it once at start ([`create`]) and keeps it in its
//! state directory (`STATE/baseline/`, out of the worker's reach, SPEC §8), so a restarted
//! referee measures against the same tree ([`load`]).
//!
//! Layout: `STATE/baseline/tree/<path>` holds a copy of every file (the excluded top-level
//! names left out, ignore rules honoured in a git work tree); `STATE/baseline/COMPLETE` is
//! written last, so a snapshot cut short by a crash is never taken for a baseline.

use std::path::{Path, PathBuf};

use std::os::unix::fs::PermissionsExt;

use super::{excluded, name, walk};

const DIR: &str = "baseline";
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
    // and link, read the referee's own way; a link is kept as a link.
    let canon = std::fs::canonicalize(root)?;
    for rel in walk(&canon).into_iter().filter(|p| !excluded(p)) {
        let src = name::to_path(&canon, &rel);
        let dest = name::to_path(&tree, &rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent)?;
        }
        let Ok(meta) = std::fs::symlink_metadata(&src) else {
            continue;
        };
        if meta.file_type().is_symlink() {
            if let Ok(target) = std::fs::read_link(&src) {
                std::os::unix::fs::symlink(target, &dest)?;
            }
            continue;
        }
        let shown = name::display(&rel);
        let Ok(data) = crate::artifacts::fsread::read_file(&canon, &src, &shown, cap) else {
            continue;
        };
        std::fs::write(&dest, &data.bytes)?;
        if meta.permissions().mode() & 0o111 != 0 {
            std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755))?;
        }
    }
    std::fs::write(
        base.join(COMPLETE),
        format!("{}\n", chrono::Utc::now().to_rfc3339()),
    )?;
    Ok(tree)
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
        assert!(none.no_baseline.as_deref().unwrap().contains("snapshot"));

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
