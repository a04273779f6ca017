use super::*;

#[test]
fn atomic_write_replaces_and_leaves_no_temp() {
    let dir = tempfile::tempdir().unwrap();
    write_atomic(dir.path(), "OBSERVER-STOP.md", "one").unwrap();
    write_atomic(dir.path(), "OBSERVER-STOP.md", "two").unwrap();
    assert_eq!(
        std::fs::read_to_string(dir.path().join("OBSERVER-STOP.md")).unwrap(),
        "two"
    );
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1);
    remove_own(dir.path(), "OBSERVER-STOP.md").unwrap();
    remove_own(dir.path(), "OBSERVER-STOP.md").unwrap();
}

fn mkfifo(path: &Path) {
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::from_raw_mode(0o644),
    )
    .expect("mkfifo");
}

#[test]
fn temp_names_are_unpredictable_and_planted_ones_are_never_opened() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("build");
    std::fs::create_dir(&dir).unwrap();
    let outside = root.path().join("outside.txt");
    std::fs::write(&outside, "precious").unwrap();
    // The old predictable name, as a symlink out of the directory and as a FIFO.
    let pid = std::process::id();
    std::os::unix::fs::symlink(&outside, dir.join(format!(".OBSERVER-REPORT.md.tmp.{pid}")))
        .unwrap();
    mkfifo(&dir.join(format!(".OBSERVER-STOP.md.tmp.{pid}")));
    assert_eq!(
        write_atomic(&dir, "OBSERVER-REPORT.md", "report").unwrap(),
        Written::default()
    );
    write_atomic(&dir, "OBSERVER-STOP.md", "stop").unwrap();
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
    assert_eq!(
        std::fs::read_to_string(dir.join("OBSERVER-STOP.md")).unwrap(),
        "stop"
    );
    // Two writes never use the same temp name: they are drawn at random, not from the pid.
    let a = temp_prefix("OBSERVER-REPORT.md");
    assert!(a.starts_with(".OBSERVER-REPORT.md.tmp."));
}

#[test]
fn a_symlink_or_fifo_at_the_target_is_replaced_not_followed() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("build");
    std::fs::create_dir(&dir).unwrap();
    let outside = root.path().join("outside.txt");
    std::fs::write(&outside, "precious").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("OBSERVER-PASS-2.md")).unwrap();
    let w = write_atomic(&dir, "OBSERVER-PASS-2.md", "pass").unwrap();
    assert_eq!(w.replaced, Some(Foreign::Symlink));
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
    let meta = std::fs::symlink_metadata(dir.join("OBSERVER-PASS-2.md")).unwrap();
    assert!(meta.is_file());
    mkfifo(&dir.join("OBSERVER-REPORT.md"));
    let w = write_atomic(&dir, "OBSERVER-REPORT.md", "report").unwrap();
    assert_eq!(w.replaced, Some(Foreign::Fifo));
    assert_eq!(
        std::fs::read_to_string(dir.join("OBSERVER-REPORT.md")).unwrap(),
        "report"
    );
    // A directory cannot be renamed over: an error, and the directory is left as it is.
    std::fs::create_dir(dir.join("OBSERVER-PASS-3.md")).unwrap();
    std::fs::write(dir.join("OBSERVER-PASS-3.md/keep"), "x").unwrap();
    let e = write_atomic(&dir, "OBSERVER-PASS-3.md", "pass").unwrap_err();
    assert_eq!(e.kind(), std::io::ErrorKind::IsADirectory);
    assert!(dir.join("OBSERVER-PASS-3.md/keep").exists());
    // Only the written files and the planted directory remain: no temp file is left.
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "OBSERVER-PASS-2.md",
            "OBSERVER-PASS-3.md",
            "OBSERVER-REPORT.md"
        ]
    );
    // Moved aside, never deleted; twice in the same millisecond gets a second name.
    let now = Utc::now();
    let to = move_aside(&dir, "OBSERVER-PASS-3.md", &now).unwrap();
    assert!(to.join("keep").exists());
    std::fs::create_dir(dir.join("OBSERVER-PASS-3.md")).unwrap();
    let to2 = move_aside(&dir, "OBSERVER-PASS-3.md", &now).unwrap();
    assert_ne!(to, to2);
    assert!(to2
        .to_string_lossy()
        .contains("OBSERVER-PASS-3.md.tampered-"));
}

#[test]
fn a_directory_is_swapped_out_with_no_moment_without_the_name() {
    let dir = tempfile::tempdir().unwrap();
    let stop = dir.path().join("OBSERVER-STOP.md");
    std::fs::create_dir(&stop).unwrap();
    std::fs::write(stop.join("keep"), "x").unwrap();
    let w = write_over_dir(
        dir.path(),
        "OBSERVER-STOP.md",
        "stop",
        Durability::VisibleFirst,
    )
    .unwrap();
    assert_eq!(w.replaced, Some(Foreign::Dir));
    let to = w.moved_to.unwrap();
    assert_eq!(std::fs::read_to_string(&stop).unwrap(), "stop");
    assert_eq!(std::fs::read_to_string(to.join("keep")).unwrap(), "x");
    let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(names.len(), 2, "no temp file left");
}

#[test]
fn written_files_are_readable_by_others_as_before() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    write_atomic(dir.path(), "OBSERVER-REPORT.md", "r").unwrap();
    let mode = std::fs::metadata(dir.path().join("OBSERVER-REPORT.md"))
        .unwrap()
        .permissions()
        .mode();
    // Read by setting it and putting it back at once.
    let mask = rustix::process::umask(rustix::fs::Mode::from_raw_mode(0o022));
    rustix::process::umask(mask);
    assert_eq!(mode & 0o777, 0o666 & !mask.as_raw_mode());
}

#[test]
fn a_held_directory_swapped_for_a_symlink_is_never_written_through() {
    let root = tempfile::tempdir().unwrap();
    let out = root.path().join(".referee");
    std::fs::create_dir(&out).unwrap();
    let elsewhere = root.path().join("elsewhere");
    std::fs::create_dir(&elsewhere).unwrap();
    let held = OutDir::hold(&out).unwrap();
    assert!(held.is_at(&out));
    // Swapped between the referee's look and its write: moved away, a link in its place.
    let moved = root.path().join("moved");
    std::fs::rename(&out, &moved).unwrap();
    std::os::unix::fs::symlink(&elsewhere, &out).unwrap();
    assert!(!held.is_at(&out));
    write_atomic(&held, "OBSERVER-STOP.md", "stop").unwrap();
    write_atomic_as(&held, "OBSERVER-PASS-1.md", "p", Durability::Background).unwrap();
    remove_own(&held, "OBSERVER-PASS-1.md").unwrap();
    assert_eq!(std::fs::read_dir(&elsewhere).unwrap().count(), 0);
    assert_eq!(
        std::fs::read_to_string(moved.join("OBSERVER-STOP.md")).unwrap(),
        "stop"
    );
    assert_eq!(held.read_regular("OBSERVER-STOP.md", 16).unwrap(), b"stop");
    // A link is never held: the last component is not followed.
    let e = OutDir::hold(&out).unwrap_err();
    assert!(
        matches!(e.raw_os_error(), Some(libc::ELOOP | libc::ENOTDIR)),
        "{e}"
    );
    // By path, a link given as the directory is the directory it names (a user's choice).
    write_atomic(&out, "OBSERVER-REPORT.md", "r").unwrap();
    assert!(elsewhere.join("OBSERVER-REPORT.md").is_file());
}

#[test]
fn reading_and_appending_take_only_regular_files() {
    let dir = tempfile::tempdir().unwrap();
    let held = OutDir::hold(dir.path()).unwrap();
    let outside = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(outside.path(), "secret").unwrap();
    std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
    mkfifo(&dir.path().join("fifo"));
    assert_eq!(held.read_regular("link", 64), None);
    assert_eq!(held.read_regular("fifo", 64), None);
    assert!(held.append_regular("link").is_none());
    assert!(held.append_regular("fifo").is_none());
    assert!(held.append_regular("absent").is_none());
    std::fs::write(dir.path().join("log"), "a").unwrap();
    held.append_regular("log").unwrap().write_all(b"b").unwrap();
    assert_eq!(held.read_regular("log", 64).unwrap(), b"ab");
    assert_eq!(held.read_regular("log", 1).unwrap(), b"a");
    assert_eq!(held.foreign_at("fifo").unwrap(), Some(Foreign::Fifo));
    assert_eq!(held.foreign_at("log").unwrap(), None);
}
