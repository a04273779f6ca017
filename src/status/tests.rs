//! `status`'s decisions, without a daemon: heartbeats written by hand, processes faked.

use super::*;
use crate::state::heartbeat::{self, write};

fn cfg(dir: &Path, live: bool) -> Config {
    Config {
        build_dir: dir.to_path_buf(),
        held: None,
        // The directory is its own state directory here: one place for the heartbeat.
        state_dir: Some(dir.to_path_buf()),
        require_live: live,
        stale: None,
        task: None,
        expect_protocol: None,
        expect_waivers: None,
        show_run: false,
        sync: None,
    }
}

fn beat(dir: &Path, age: Duration, state: &str) {
    write(dir, &heartbeat::of_this_process(dir, age, state)).unwrap();
}

#[test]
fn go_stop_and_liveness() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    assert_eq!(status(&cfg(d, false)).unwrap().code, ExitCode::Ok);
    assert_eq!(status(&cfg(d, false)).unwrap().stdout, "go\n");
    let missing = status(&cfg(d, true)).unwrap();
    assert_eq!(missing.code, ExitCode::NotLive);
    assert!(matches!(missing.note, Some(Note::Error(t)) if t.contains("missing")));
    beat(d, Duration::ZERO, heartbeat::WATCHING);
    // A heartbeat alone, with nobody holding the event log's lock, is a forgery.
    let forged = status(&cfg(d, true)).unwrap();
    assert_eq!(forged.code, ExitCode::NotLive);
    assert!(matches!(forged.note, Some(Note::Error(t)) if t.contains("lock")));
    let _log = crate::state::lock::lock(d).unwrap();
    assert_eq!(status(&cfg(d, true)).unwrap().code, ExitCode::Ok);
    beat(d, Duration::from_secs(60), heartbeat::WATCHING);
    let stale = status(&cfg(d, true)).unwrap();
    assert_eq!(stale.code, ExitCode::NotLive);
    assert!(matches!(stale.note, Some(Note::Error(t)) if t.contains("stale")));
    beat(d, Duration::ZERO, heartbeat::FINISHED);
    assert_eq!(status(&cfg(d, true)).unwrap().code, ExitCode::NotLive);
    std::fs::write(d.join(STOP_FILE), "# OBSERVER STOP\n").unwrap();
    let stop = status(&cfg(d, false)).unwrap();
    assert_eq!(stop.code, ExitCode::Violation);
    assert!(stop.stdout.starts_with("# OBSERVER STOP"));
}

/// A `--state-dir` named but not there (never made, or renamed away since) is no go: the
/// orchestrator was told where the referee's memory is.
#[test]
fn a_state_directory_named_but_missing_is_never_go() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = cfg(dir.path(), false);
    c.state_dir = Some(dir.path().join("never"));
    let e = status(&c).unwrap_err().to_string();
    assert!(
        e.contains("no referee has run with it, or it was moved"),
        "{e}"
    );
    c.require_live = true;
    let a = status(&c).unwrap();
    assert_eq!(a.code, ExitCode::NotLive);
    assert!(matches!(a.note, Some(Note::Error(t)) if t.contains("no state directory")));
    c.require_live = false;
    c.task = Some(TaskQuery {
        id: "t1".into(),
        wait: Duration::ZERO,
        go: vec!["APPROVE".into()],
    });
    assert_eq!(status(&c).unwrap().code, ExitCode::NotJudged);
}

/// A state directory that cannot be looked up (here a file where a folder should be; for
/// another user, a folder it may not search) is an error, 3 with `--require-live`, and 1
/// while a STOP stands in the watched directory: never go.
#[test]
fn a_state_directory_that_cannot_be_looked_up_is_never_go() {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("build");
    std::fs::create_dir(&dir).unwrap();
    let file = root.path().join("file");
    std::fs::write(&file, "").unwrap();
    let mut c = cfg(&dir, false);
    c.state_dir = Some(file.join("state"));
    let e = crate::error::chain(&status(&c).unwrap_err());
    assert!(e.contains("cannot reach the state directory"), "{e}");
    c.require_live = true;
    assert_eq!(status(&c).unwrap().code, ExitCode::NotLive);
    c.require_live = false;
    std::fs::write(dir.join(STOP_FILE), "# OBSERVER STOP\n\nOBS-27\n").unwrap();
    let a = status(&c).unwrap();
    assert_eq!(a.code, ExitCode::Violation);
    assert!(a.stdout.contains("OBS-27"), "{}", a.stdout);
}

#[test]
fn a_missing_directory_has_no_live_referee() {
    let root = tempfile::tempdir().unwrap();
    let gone = root.path().join("gone");
    assert_eq!(status(&cfg(&gone, true)).unwrap().code, ExitCode::NotLive);
    assert!(status(&cfg(&gone, false)).is_err());
}

#[test]
fn a_stop_the_disk_refused_still_stops() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let _log = crate::state::lock::lock(d).unwrap();
    let mut h = heartbeat::of_this_process(d, Duration::ZERO, heartbeat::FAULTED);
    h.stop_wanted = true;
    h.faults = vec!["cannot write `OBSERVER-STOP.md`: no space left on device".into()];
    write(d, &h).unwrap();
    for live in [false, true] {
        let a = status(&cfg(d, live)).unwrap();
        assert_eq!(a.code, ExitCode::Violation);
        assert!(a.stdout.contains("no space left"), "{}", a.stdout);
    }
    h.stop_wanted = false;
    write(d, &h).unwrap();
    let a = status(&cfg(d, true)).unwrap();
    assert_eq!(a.code, ExitCode::NotLive);
    assert!(matches!(a.note, Some(Note::Error(t)) if t.contains("faulted")));
    assert_eq!(status(&cfg(d, false)).unwrap().code, ExitCode::Ok);
}
