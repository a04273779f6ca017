//! The STOP a one-shot `referee verify --write` keeps for a workspace goes through the same
//! writer as the live `watch`'s: whatever someone else put at `.referee/OBSERVER-STOP.md` (a
//! symlink, a directory) is replaced or moved aside, never followed, never deleted, whether the
//! STOP is raised or lifted; and the state directory's STOP is written first, removed first.

use std::fs;
use std::path::{Path, PathBuf};

use crate::code_change::{default_state, git_workspace, stop, PROTECTED};
use crate::util::{run, Output};

const WORKSPACE_VETO: &str = "**Phase:** workspace";

/// `referee verify WS --protocol code-change --write --format json`: exit code, JSON, stderr.
fn verify_write(ws: &Path) -> (i32, serde_json::Value, String) {
    let Output {
        code,
        stdout,
        stderr,
        ..
    } = run(&[
        "verify",
        ws.to_str().expect("utf-8"),
        "--protocol",
        "code-change",
        "--write",
        "--format",
        "json",
    ]);
    let doc = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    (code, doc, stderr)
}

/// The entries beside the STOP copy named `OBSERVER-STOP.md.tampered-*`.
fn moved_aside(ws: &Path) -> Vec<PathBuf> {
    let mut found: Vec<PathBuf> = fs::read_dir(ws.join(".referee"))
        .expect("read .referee")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name().is_some_and(|n| {
                n.to_string_lossy()
                    .starts_with("OBSERVER-STOP.md.tampered-")
            })
        })
        .collect();
    found.sort();
    found
}

fn is_regular_file(path: &Path) -> bool {
    fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_file())
}

/// A symlink planted at the STOP copy is replaced when the STOP is raised, unlinked when it is
/// lifted, and what it points to is never written, read as the STOP or removed.
#[test]
fn verify_write_never_follows_a_symlinked_stop_copy() {
    let (root, ws, _logs) = git_workspace();
    let outside = root.path().join("outside.md");
    fs::write(&outside, "not the referee's\n").expect("write");
    fs::create_dir(ws.join(".referee")).expect("mkdir");
    std::os::unix::fs::symlink(&outside, stop(&ws)).expect("symlink");

    fs::write(ws.join(PROTECTED), "ROLES = []\n").expect("write");
    let (code, doc, err) = verify_write(&ws);
    assert_eq!(code, 1, "{doc}\n{err}");
    assert_eq!(doc["stop"], true, "{doc}");
    assert!(is_regular_file(&stop(&ws)), "the link is replaced");
    assert!(
        err.contains("a symbolic link put there by someone else; replaced without being followed"),
        "said: {err}"
    );
    let text = fs::read_to_string(stop(&ws)).expect("read");
    assert!(text.contains(WORKSPACE_VETO), "{text}");
    let state = default_state(&ws).join("OBSERVER-STOP.md");
    assert_eq!(fs::read_to_string(&state).expect("state STOP"), text);
    assert_eq!(
        fs::read_to_string(&outside).expect("outside"),
        "not the referee's\n",
        "the link's target is never written"
    );

    // Lifted with a link put back at the copy: the link goes, its target stays as it was.
    fs::write(ws.join(PROTECTED), "ROLES = ['worker']\n").expect("write");
    fs::remove_file(stop(&ws)).expect("rm");
    std::os::unix::fs::symlink(&outside, stop(&ws)).expect("symlink");
    let (code, doc, err) = verify_write(&ws);
    assert_eq!(code, 0, "{doc}\n{err}");
    assert_eq!(doc["stop"], false, "{doc}");
    assert!(fs::symlink_metadata(stop(&ws)).is_err(), "the link is gone");
    assert!(
        fs::symlink_metadata(&state).is_err(),
        "the state's STOP is gone"
    );
    assert_eq!(
        fs::read_to_string(&outside).expect("outside"),
        "not the referee's\n"
    );
    assert!(moved_aside(&ws).is_empty(), "{:?}", moved_aside(&ws));
}

/// A directory planted at the STOP copy is moved aside with what it holds, never deleted,
/// when the STOP is raised (the STOP takes its name) and when it is lifted (the name is freed).
#[test]
fn verify_write_moves_a_directory_at_the_stop_copy_aside() {
    let (_root, ws, _logs) = git_workspace();
    fs::create_dir_all(stop(&ws)).expect("mkdir");
    fs::write(stop(&ws).join("kept.txt"), "evidence\n").expect("write");

    fs::write(ws.join(PROTECTED), "ROLES = []\n").expect("write");
    let (code, doc, err) = verify_write(&ws);
    assert_eq!(code, 1, "{doc}\n{err}");
    assert_eq!(doc["stop"], true, "{doc}");
    assert!(is_regular_file(&stop(&ws)), "the STOP took the name");
    assert!(
        err.contains("a directory put there by someone else; moved aside to"),
        "said: {err}"
    );
    let text = fs::read_to_string(stop(&ws)).expect("read");
    assert!(text.contains(WORKSPACE_VETO), "{text}");
    let aside = moved_aside(&ws);
    assert_eq!(aside.len(), 1, "{aside:?}");
    assert_eq!(
        fs::read_to_string(aside[0].join("kept.txt")).expect("moved with its contents"),
        "evidence\n"
    );

    // Lifted with a directory put back at the copy: it is moved aside too, and the name freed.
    fs::write(ws.join(PROTECTED), "ROLES = ['worker']\n").expect("write");
    fs::remove_file(stop(&ws)).expect("rm");
    fs::create_dir(stop(&ws)).expect("mkdir");
    fs::write(stop(&ws).join("second.txt"), "more\n").expect("write");
    let (code, doc, err) = verify_write(&ws);
    assert_eq!(code, 0, "{doc}\n{err}");
    assert_eq!(doc["stop"], false, "{doc}");
    assert!(fs::symlink_metadata(stop(&ws)).is_err(), "the name is free");
    let state = default_state(&ws).join("OBSERVER-STOP.md");
    assert!(
        fs::symlink_metadata(&state).is_err(),
        "the state's STOP is gone"
    );
    let aside = moved_aside(&ws);
    assert_eq!(aside.len(), 2, "{aside:?}");
    assert!(
        aside.iter().any(|p| p.join("second.txt").is_file()),
        "{aside:?}"
    );
}
