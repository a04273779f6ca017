use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;

use super::super::entry::Unlisted;
use super::*;
use crate::artifacts::test_support::*;
use crate::artifacts::Snapshot;

/// What a listing says, entry by entry (sizes looked up), and where it could not look.
fn listing(snap: &Snapshot) -> (Vec<String>, Vec<Unlisted>) {
    let entries = snap
        .entries()
        .iter()
        .map(|e| {
            format!(
                "{} {:?} depth={} size={} link={} note={:?}",
                e.rel,
                e.kind,
                e.depth,
                e.size(),
                e.is_symlink(),
                e.note
            )
        })
        .collect();
    (entries, snap.unlisted().to_vec())
}

#[track_caller]
fn rescans_like_a_scan(dir: &Path, before: Snapshot, changed: &[&str]) -> Snapshot {
    let changed: Vec<String> = changed.iter().map(|c| c.to_string()).collect();
    let again = before.rescan(&changed).unwrap();
    assert_eq!(listing(&again), listing(&scan(dir)), "after {changed:?}");
    again
}

#[test]
fn rescan_lists_only_what_changed_and_agrees_with_a_scan() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::create_dir_all(d.join("screenshots/1440")).unwrap();
    fs::write(d.join("screenshots/1440/a.png"), "png").unwrap();
    fs::write(d.join("p3a-gate-results.json"), "{}").unwrap();
    fs::write(d.join("notes.md"), "n").unwrap();
    symlink("notes.md", d.join("link.md")).unwrap();
    let snap = scan(d);
    // A file rewritten (renamed into place), one added, one removed.
    fs::write(d.join(".g.tmp"), "{\"gates\": []}").unwrap();
    fs::rename(d.join(".g.tmp"), d.join("p3a-gate-results.json")).unwrap();
    fs::write(d.join("screenshots/1440/b.png"), "png2").unwrap();
    fs::remove_file(d.join("screenshots/1440/a.png")).unwrap();
    let snap = rescans_like_a_scan(
        d,
        snap,
        &[
            ".g.tmp",
            "p3a-gate-results.json",
            "screenshots/1440/b.png",
            "screenshots/1440/a.png",
        ],
    );
    assert_eq!(
        snap.read("p3a-gate-results.json").unwrap().text(),
        "{\"gates\": []}"
    );
    // A new directory with files already in it (written before its watch existed), and a
    // file under it named too.
    fs::create_dir_all(d.join("screenshots/768/deep")).unwrap();
    fs::write(d.join("screenshots/768/deep/c.png"), "png").unwrap();
    fs::write(d.join("screenshots/768/d.png"), "png").unwrap();
    let snap = rescans_like_a_scan(d, snap, &["screenshots/768/d.png", "screenshots/768"]);
    // A symlink's target removed: the link dangles, though only the target was named.
    fs::remove_file(d.join("notes.md")).unwrap();
    let snap = rescans_like_a_scan(d, snap, &["notes.md"]);
    assert_eq!(snap.get("link.md").unwrap().kind, Kind::Other);
    // A directory removed with everything under it; a file replaced by a directory.
    fs::remove_dir_all(d.join("screenshots/768")).unwrap();
    fs::remove_file(d.join("p3a-gate-results.json")).unwrap();
    fs::create_dir(d.join("p3a-gate-results.json")).unwrap();
    fs::write(d.join("p3a-gate-results.json/x"), "x").unwrap();
    let snap = rescans_like_a_scan(d, snap, &["screenshots/768", "p3a-gate-results.json"]);
    // Nothing changed: the same listing, and no read carried over.
    let snap = rescans_like_a_scan(d, snap, &[]);
    // Only what was named is listed again: the rest is taken over, not walked.
    fs::write(d.join("screenshots/1440/unnamed.png"), "png").unwrap();
    let snap = snap.rescan(&[]).unwrap();
    assert!(snap.get("screenshots/1440/unnamed.png").is_none());
    let mut snap = rescans_like_a_scan(d, snap, &["screenshots/1440/unnamed.png"]);
    snap.read("screenshots/1440/b.png").unwrap();
    snap.forget_reads();
    assert!(snap.peek("screenshots/1440/b.png").is_none());
    // More than a walk's worth of changes: a full scan, the same answer.
    let many: Vec<String> = (0..=MAX_RESCAN_PATHS).map(|i| format!("f{i}")).collect();
    let many: Vec<&str> = many.iter().map(String::as_str).collect();
    rescans_like_a_scan(d, snap, &many);
}

#[test]
fn drop_under_removes_a_path_and_what_is_below_it_only() {
    let mut v: Vec<String> = ["a", "a-b", "a.c", "a/x", "a/y/z", "a0", "ab", "b", "b/c"]
        .map(String::from)
        .to_vec();
    drop_under(&mut v, &["a".into(), "b/c".into(), "nothing".into()], |s| s);
    assert_eq!(v, ["a-b", "a.c", "a0", "ab", "b"]);
}

#[test]
fn rescan_falls_back_to_a_scan_when_it_cannot_place_a_change() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::create_dir(d.join("real")).unwrap();
    symlink("real", d.join("linked")).unwrap();
    let snap = scan(d);
    // Under a directory the snapshot never listed (its own event was missed).
    fs::create_dir_all(d.join("new/inner")).unwrap();
    fs::write(d.join("new/inner/f.md"), "f").unwrap();
    let snap = rescans_like_a_scan(d, snap, &["new/inner/f.md"]);
    // Under a symlinked directory (never descended), and names that cannot be mapped back.
    fs::write(d.join("real/f.md"), "f").unwrap();
    let snap = rescans_like_a_scan(d, snap, &["linked/f.md", "real/f.md"]);
    let snap = rescans_like_a_scan(d, snap, &["", "./real/../real", "a\\\\b"]);
    // The root replaced by another directory at the same path: listed afresh.
    let other = tempfile::tempdir().unwrap();
    fs::write(other.path().join("only-here.md"), "x").unwrap();
    let moved = d.with_extension("moved");
    fs::rename(d, &moved).unwrap();
    symlink(other.path(), d).unwrap();
    let again = snap.rescan(&[]).unwrap();
    assert_eq!(rels(&again), ["only-here.md"]);
    fs::remove_file(d).unwrap();
    fs::rename(&moved, d).unwrap();
}

#[test]
fn rescan_keeps_unlisted_places_and_looks_again_where_they_changed() {
    if is_root() {
        return; // root reads everything: nothing is unlisted
    }
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    use std::os::unix::fs::PermissionsExt;
    fs::create_dir(d.join("locked")).unwrap();
    fs::write(d.join("locked/f.md"), "f").unwrap();
    fs::set_permissions(d.join("locked"), fs::Permissions::from_mode(0o000)).unwrap();
    let snap = scan(d);
    assert_eq!(snap.unlisted().len(), 1);
    fs::write(d.join("other.md"), "o").unwrap();
    let snap = rescans_like_a_scan(d, snap, &["other.md"]);
    fs::set_permissions(d.join("locked"), fs::Permissions::from_mode(0o755)).unwrap();
    let snap = rescans_like_a_scan(d, snap, &["locked"]);
    assert!(snap.unlisted().is_empty());
}
