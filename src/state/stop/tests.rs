use super::*;

#[test]
fn sync_and_tamper() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(STOP_FILE);
    let mut s = StopFile::new(dir.path());
    assert_eq!(s.sync(None, true).unwrap(), Synced::Unchanged);
    assert_eq!(s.sync(Some("stop".into()), true).unwrap(), Synced::Written);
    assert_eq!(s.check(true).unwrap(), None);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(
        s.check(true).unwrap().map(|t| t.what),
        Some(Tamper::Deleted)
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "stop");
    std::fs::write(&path, "go on").unwrap();
    assert_eq!(s.check(true).unwrap().map(|t| t.what), Some(Tamper::Edited));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "stop");
    assert_eq!(s.sync(None, true).unwrap(), Synced::Removed);
    assert!(!path.exists());
    std::fs::write(&path, "fake").unwrap();
    assert_eq!(
        s.check(true).unwrap().map(|t| t.what),
        Some(Tamper::Created)
    );
    assert!(!path.exists());
}

/// A copy the referee cannot write (its folder is gone here; a full disk in life) does not
/// hold the authoritative STOP back, and once writable again it is put right without being
/// called tamper.
#[test]
fn a_copy_that_cannot_be_written_follows_the_state_later_and_is_no_tamper() {
    let root = tempfile::tempdir().unwrap();
    let (dir, state) = (root.path().join("b"), root.path().join("state"));
    std::fs::create_dir(&state).unwrap();
    let mut s = StopFile::with_state(&dir, &state);
    assert_eq!(s.sync(Some("stop".into()), true).unwrap(), Synced::Written);
    assert_eq!(
        std::fs::read_to_string(state.join(STOP_FILE)).unwrap(),
        "stop"
    );
    assert!(s.standing() && s.copy_stale());
    assert!(s.take_copy_failed().is_some());
    assert!(s.take_copy_failed().is_none(), "taken once");
    // Not due yet: the copy is not tried, the state directory's STOP is kept in line.
    std::fs::remove_file(state.join(STOP_FILE)).unwrap();
    assert_eq!(s.check(false).unwrap(), None);
    assert_eq!(
        std::fs::read_to_string(state.join(STOP_FILE)).unwrap(),
        "stop"
    );
    assert_eq!(
        s.sync(Some("stop 2".into()), false).unwrap(),
        Synced::Written
    );
    assert!(s.take_copy_failed().is_none(), "not tried");
    std::fs::create_dir(&dir).unwrap();
    assert_eq!(s.check(true).unwrap(), None, "our own write, no tamper");
    assert!(!s.copy_stale());
    assert_eq!(
        std::fs::read_to_string(dir.join(STOP_FILE)).unwrap(),
        "stop 2"
    );
    // Lifted while the copy cannot be removed: the state directory's goes at once.
    std::fs::remove_file(dir.join(STOP_FILE)).unwrap();
    std::fs::create_dir(dir.join(STOP_FILE)).unwrap();
    assert_eq!(s.sync(None, false).unwrap(), Synced::Removed);
    assert!(!state.join(STOP_FILE).exists());
    assert!(s.copy_stale());
}

#[test]
fn a_fifo_in_its_place_is_never_opened() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(STOP_FILE);
    let mut s = StopFile::new(dir.path());
    s.sync(Some("stop".into()), true).unwrap();
    std::fs::remove_file(&path).unwrap();
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &path,
        rustix::fs::Mode::from_raw_mode(0o644),
    )
    .expect("mkfifo");
    let t = s.check(true).unwrap().unwrap();
    assert_eq!((t.what, t.found), (Tamper::Edited, Some(Foreign::Fifo)));
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "stop");
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
}

#[test]
fn a_directory_in_its_place_is_moved_aside_never_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(STOP_FILE);
    let mut s = StopFile::new(dir.path());
    s.sync(Some("stop".into()), true).unwrap();
    std::fs::remove_file(&path).unwrap();
    std::fs::create_dir(&path).unwrap();
    std::fs::write(path.join("evidence"), "kept").unwrap();
    let t = s.check(true).unwrap().unwrap();
    assert_eq!((t.what, t.found), (Tamper::Edited, Some(Foreign::Dir)));
    let aside = t.moved_to.clone().unwrap();
    assert_eq!(
        std::fs::read_to_string(aside.join("evidence")).unwrap(),
        "kept"
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "stop");
    assert!(t.describe().contains("moved aside"), "{}", t.describe());
    // With no failure standing, a directory created there is moved aside too.
    assert_eq!(s.sync(None, true).unwrap(), Synced::Removed);
    std::fs::create_dir(&path).unwrap();
    let t = s.check(true).unwrap().unwrap();
    assert_eq!((t.what, t.found), (Tamper::Created, Some(Foreign::Dir)));
    assert!(!path.exists());
    assert_eq!(names(dir.path()).len(), 2, "{:?}", names(dir.path()));
}

#[test]
fn a_symlink_in_its_place_is_never_followed() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("b");
    std::fs::create_dir(&dir).unwrap();
    let outside = root.path().join("outside");
    std::fs::write(&outside, "precious").unwrap();
    let mut s = StopFile::new(&dir);
    s.sync(Some("stop".into()), true).unwrap();
    std::fs::remove_file(dir.join(STOP_FILE)).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join(STOP_FILE)).unwrap();
    let t = s.check(true).unwrap().unwrap();
    assert_eq!(t.found, Some(Foreign::Symlink));
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
    assert!(std::fs::symlink_metadata(dir.join(STOP_FILE))
        .unwrap()
        .is_file());
    // Removing: the link is unlinked, its target untouched.
    assert_eq!(s.sync(None, true).unwrap(), Synced::Removed);
    std::os::unix::fs::symlink(&outside, dir.join(STOP_FILE)).unwrap();
    let t = s.check(true).unwrap().unwrap();
    assert_eq!((t.what, t.found), (Tamper::Created, Some(Foreign::Symlink)));
    assert!(std::fs::symlink_metadata(dir.join(STOP_FILE)).is_err());
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
}

#[test]
fn an_adopted_stop_stands_until_judged_and_is_rewritten_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join(STOP_FILE);
    std::fs::write(&path, "left by the last run").unwrap();
    let mut s = StopFile::new(dir.path());
    assert!(s.adopt());
    assert!(s.standing());
    assert_eq!(s.check(true).unwrap(), None, "adopted as it stands");
    // Nothing to say yet (the first evaluation held its results back): it stays.
    assert_eq!(s.sync(None, true).unwrap(), Synced::Kept);
    assert_eq!(
        std::fs::read_to_string(&path).unwrap(),
        "left by the last run"
    );
    // The failure stands: rewritten in place.
    assert_eq!(
        s.sync(Some("still failing".into()), true).unwrap(),
        Synced::Written
    );
    assert_eq!(std::fs::read_to_string(&path).unwrap(), "still failing");
    s.judged();
    assert_eq!(s.sync(None, true).unwrap(), Synced::Removed);
    assert!(!path.exists());
    // A FIFO at start: standing (never opened), replaced by a "not yet judged" STOP.
    std::fs::remove_file(&path).ok();
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        &path,
        rustix::fs::Mode::from_raw_mode(0o644),
    )
    .expect("mkfifo");
    let mut s = StopFile::new(dir.path());
    assert!(s.adopt());
    let t = s.check(true).unwrap().unwrap();
    assert_eq!((t.what, t.found), (Tamper::Edited, Some(Foreign::Fifo)));
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .contains("NOT YET JUDGED"));
    assert_eq!(s.sync(None, true).unwrap(), Synced::Kept);
    s.judged();
    assert_eq!(s.sync(None, true).unwrap(), Synced::Removed);
    // Nothing at start: nothing adopted.
    let mut fresh = StopFile::new(dir.path());
    assert!(!fresh.adopt());
    assert!(!fresh.adopted());
}

/// A one-shot command remembers nothing from the run before: `put` makes the state
/// directory's STOP and its copy say what is wanted whatever is on disk, and lifts both.
#[test]
fn a_one_shot_puts_both_in_line_whatever_was_there() {
    let root = tempfile::tempdir().unwrap();
    let (dir, state) = (root.path().join("ws"), root.path().join("state"));
    std::fs::create_dir(&dir).unwrap();
    std::fs::create_dir(&state).unwrap();
    let copy = OutDir::hold(&dir).unwrap();
    // A stale STOP of another run in the state directory, something else in the copy.
    std::fs::write(state.join(STOP_FILE), "old").unwrap();
    std::fs::write(dir.join(STOP_FILE), "edited").unwrap();
    let mut s = StopFile::one_shot(&state, Some(&copy));
    assert_eq!(s.put(Some("stop".into())).unwrap(), None, "no foreign file");
    for d in [&state, &dir] {
        assert_eq!(std::fs::read_to_string(d.join(STOP_FILE)).unwrap(), "stop");
    }
    // A fresh run with nothing standing lifts both, whatever it was told before.
    let mut s = StopFile::one_shot(&state, Some(&copy));
    assert_eq!(s.put(None).unwrap(), None);
    assert!(std::fs::symlink_metadata(state.join(STOP_FILE)).is_err());
    assert!(std::fs::symlink_metadata(dir.join(STOP_FILE)).is_err());
    assert_eq!(s.put(None).unwrap(), None, "nothing there: nothing to do");
}

/// A one-shot STOP is never written through what someone else put at the copy's name: a
/// symlink is replaced (its target untouched), a directory moved aside, and it is said.
#[test]
fn a_one_shot_replaces_or_moves_aside_a_foreign_copy() {
    let root = tempfile::tempdir().unwrap();
    let (dir, state) = (root.path().join("ws"), root.path().join("state"));
    std::fs::create_dir(&dir).unwrap();
    std::fs::create_dir(&state).unwrap();
    let outside = root.path().join("outside");
    std::fs::write(&outside, "theirs").unwrap();
    std::os::unix::fs::symlink(&outside, dir.join(STOP_FILE)).unwrap();
    let copy = OutDir::hold(&dir).unwrap();
    let t = StopFile::one_shot(&state, Some(&copy))
        .put(Some("stop".into()))
        .unwrap()
        .unwrap();
    assert_eq!((t.found, t.moved_to), (Some(Foreign::Symlink), None));
    assert_eq!(
        std::fs::read_to_string(dir.join(STOP_FILE)).unwrap(),
        "stop"
    );
    assert_eq!(std::fs::read_to_string(&outside).unwrap(), "theirs");

    std::fs::remove_file(dir.join(STOP_FILE)).unwrap();
    std::fs::create_dir(dir.join(STOP_FILE)).unwrap();
    std::fs::write(dir.join(STOP_FILE).join("evidence"), "kept").unwrap();
    let t = StopFile::one_shot(&state, Some(&copy))
        .put(None)
        .unwrap()
        .unwrap();
    assert_eq!(t.found, Some(Foreign::Dir));
    let aside = t.moved_to.unwrap();
    assert_eq!(
        std::fs::read_to_string(aside.join("evidence")).unwrap(),
        "kept"
    );
    assert!(std::fs::symlink_metadata(dir.join(STOP_FILE)).is_err());
    assert!(!state.join(STOP_FILE).exists());
}

/// Without a copy (a hook) only the state directory's STOP is touched; and when the state
/// directory's cannot be written, the copy is left as it was and the error is returned.
#[test]
fn a_one_shot_writes_the_state_first_and_stops_at_its_error() {
    let root = tempfile::tempdir().unwrap();
    let (dir, state) = (root.path().join("ws"), root.path().join("state"));
    std::fs::create_dir(&dir).unwrap();
    std::fs::create_dir(&state).unwrap();
    std::fs::write(dir.join(STOP_FILE), "the watch's copy").unwrap();
    StopFile::one_shot(&state, None)
        .put(Some("stop".into()))
        .unwrap();
    assert_eq!(
        std::fs::read_to_string(state.join(STOP_FILE)).unwrap(),
        "stop"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join(STOP_FILE)).unwrap(),
        "the watch's copy"
    );

    let gone = root.path().join("no-state");
    let copy = OutDir::hold(&dir).unwrap();
    let e = StopFile::one_shot(&gone, Some(&copy))
        .put(Some("stop".into()))
        .unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");
    assert_eq!(
        std::fs::read_to_string(dir.join(STOP_FILE)).unwrap(),
        "the watch's copy",
        "the copy is never ahead of the state directory's"
    );
}

/// The live referee raising a STOP where none stood writes the copy first (what the
/// orchestrator waits on): a state directory that cannot take it leaves the STOP shown, returns
/// the error, and is put in line by the next check. A rewrite of a standing STOP goes to the
/// state directory first, and one it cannot take changes nothing.
#[test]
fn a_raise_shows_the_copy_first_and_a_rewrite_goes_to_the_state_first() {
    let root = tempfile::tempdir().unwrap();
    let (dir, state) = (root.path().join("b"), root.path().join("state"));
    std::fs::create_dir(&dir).unwrap();
    let mut s = StopFile::with_state(&dir, &state);
    let e = s.sync(Some("stop".into()), true).unwrap_err();
    assert_eq!(e.kind(), io::ErrorKind::NotFound, "{e}");
    assert_eq!(
        std::fs::read_to_string(dir.join(STOP_FILE)).unwrap(),
        "stop",
        "shown although the state directory could not take it"
    );
    assert!(s.standing());
    assert!(s.check(true).is_err(), "still no state directory");
    std::fs::create_dir(&state).unwrap();
    assert_eq!(s.check(true).unwrap(), None, "our own write, no tamper");
    assert_eq!(
        std::fs::read_to_string(state.join(STOP_FILE)).unwrap(),
        "stop"
    );
    // A rewrite the state directory cannot take: both stay as they were.
    std::fs::remove_dir_all(&state).unwrap();
    assert!(s.sync(Some("stop 2".into()), true).is_err());
    assert_eq!(
        std::fs::read_to_string(dir.join(STOP_FILE)).unwrap(),
        "stop"
    );
}
