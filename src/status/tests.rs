//! `status`'s decisions, without a daemon: heartbeats written by hand, processes faked.

use super::*;
use crate::daemon::heartbeat::{write, ProtocolRef};

fn cfg(dir: &Path, live: bool) -> Config {
    Config {
        build_dir: dir.to_path_buf(),
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

/// A heartbeat as this process's own referee would write it for `dir`.
fn hb(dir: &Path, age: Duration, state: &str) -> Heartbeat {
    let last = Utc::now() - chrono::Duration::from_std(age).unwrap();
    Heartbeat {
        pid: std::process::id(),
        started: last,
        last_beat: last,
        interval_secs: 2.0,
        protocol: ProtocolRef {
            id: "d10".into(),
            sha256: "x".into(),
        },
        state: state.into(),
        stop: false,
        stop_wanted: false,
        faults: Vec::new(),
        build_dir: std::fs::canonicalize(dir).unwrap().display().to_string(),
        dir: Some(DirId::of(dir).unwrap()),
        proc_start: heartbeat::proc_start(std::process::id()),
        trace_id: String::new(),
    }
}

fn beat(dir: &Path, age: Duration, state: &str) {
    write(dir, &hb(dir, age, state)).unwrap();
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
    let _log = crate::daemon::journal::open_locked(d).unwrap();
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

#[test]
fn no_state_directory_means_no_referee_ever_ran() {
    let dir = tempfile::tempdir().unwrap();
    let mut c = cfg(dir.path(), false);
    c.state_dir = Some(dir.path().join("never"));
    let a = status(&c).unwrap();
    assert_eq!(a.code, ExitCode::Ok);
    assert!(matches!(a.note, Some(Note::Info(t)) if t.contains("no referee has run")));
    c.require_live = true;
    assert_eq!(status(&c).unwrap().code, ExitCode::NotLive);
    c.require_live = false;
    c.task = Some(TaskQuery {
        id: "t1".into(),
        wait: Duration::ZERO,
        go: vec!["APPROVE".into()],
    });
    assert_eq!(status(&c).unwrap().code, ExitCode::NotJudged);
}

#[test]
fn a_stopped_process_is_not_live() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let h = hb(d, Duration::ZERO, heartbeat::WATCHING);
    let here = look(d).unwrap();
    assert!(verdict(&h, &here, &|_| Proc::Stopped).contains("stopped"));
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
    let _log = crate::daemon::journal::open_locked(d).unwrap();
    let mut h = hb(d, Duration::ZERO, heartbeat::FAULTED);
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

fn verdict(h: &Heartbeat, here: &Here, procs: &dyn Fn(u32) -> Proc) -> String {
    match judge(h, here, Utc::now(), None, procs) {
        Liveness::Live => "live".into(),
        Liveness::StopWanted(_) => "stop".into(),
        Liveness::NotLive(why) => why,
    }
}

#[test]
fn only_a_sane_heartbeat_from_this_directory_and_this_process_is_live() {
    let root = tempfile::tempdir().unwrap();
    let d = root.path().join("b");
    std::fs::create_dir(&d).unwrap();
    let here = look(&d).unwrap();
    let good = hb(&d, Duration::ZERO, heartbeat::WATCHING);
    let start = good.proc_start;
    let running = move |_| Proc::Running(start);
    assert_eq!(verdict(&good, &here, &running), "live");

    let bad = |f: &dyn Fn(&mut Heartbeat)| {
        let mut h = good.clone();
        f(&mut h);
        verdict(&h, &here, &running)
    };
    let future = Utc::now() + chrono::Duration::seconds(3600);
    assert!(bad(&|h| h.last_beat = future).contains("future"));
    assert!(bad(&|h| h.started = future).contains("started after its last beat"));
    for absurd in [
        0.0,
        -2.0,
        f64::NAN,
        f64::INFINITY,
        86_401.0,
        1e300,
        5e-324,
        0.049,
    ] {
        assert!(
            bad(&|h| h.interval_secs = absurd).contains("not believable"),
            "interval {absurd}"
        );
    }
    // A day is the most believed: then a beat 2 days old is stale.
    assert!(bad(&|h| {
        h.interval_secs = 86_400.0;
        h.last_beat = Utc::now() - chrono::Duration::days(4);
        h.started = h.last_beat;
    })
    .contains("stale"));
    assert!(bad(&|h| h.dir = None).contains("no directory identity"));
    assert!(bad(&|h| {
        if let Some(id) = &mut h.dir {
            id.ino += 1;
        }
    })
    .contains("another directory"));
    assert!(bad(&|h| h.build_dir = "/elsewhere".into()).contains("renamed"));
    assert!(bad(&|h| h.state = heartbeat::FINISHED.into()).contains("finished"));
    assert!(bad(&|h| h.state = "detached".into()).contains("unknown"));
    assert!(bad(&|h| h.state = "sleeping".into()).contains("unknown"));
    assert!(bad(&|h| {
        h.state = heartbeat::FAULTED.into();
        h.faults = vec!["cannot write `OBSERVER-PASS-2.md`".into()];
    })
    .contains("OBSERVER-PASS-2.md"));
    assert_eq!(
        bad(&|h| {
            h.state = heartbeat::FAULTED.into();
            h.stop_wanted = true;
        }),
        "stop"
    );

    // The process: gone, recycled (alive, another start time), or unverifiable.
    assert!(verdict(&good, &here, &|_| Proc::Gone).contains("not running"));
    if here.proc_times {
        let other = |_| Proc::Running(Some(start.unwrap_or(0) + 1));
        assert!(verdict(&good, &here, &other).contains("recycled pid"));
        assert!(verdict(&good, &here, &|_| Proc::Running(None)).contains("cannot be told"));
        assert!(bad(&|h| h.proc_start = None).contains("no process start time"));
        // The real process table: pid 1 is alive but is not this process.
        let mut init = good.clone();
        init.pid = 1;
        assert!(verdict(&init, &here, &process).contains("recycled pid"));
    }
    assert_eq!(verdict(&good, &here, &process), "live");

    // The same heartbeat found in a copy of the directory, or after it was re-created.
    let copy = root.path().join("copy");
    std::fs::create_dir(&copy).unwrap();
    let there = look(&copy).unwrap();
    assert!(verdict(&good, &there, &running).contains("another directory"));
    std::fs::remove_dir(&d).unwrap();
    std::fs::create_dir(&d).unwrap();
    let recreated = look(&d).unwrap();
    if recreated.dir.born_ns.is_some() || recreated.dir.ino != here.dir.ino {
        assert!(verdict(&good, &recreated, &running).contains("another directory"));
    }
}
