//! "Never blind while saying live": `referee status --require-live` must not answer 0 unless a
//! referee is watching the very directory it is asked about. Real processes, real signals and
//! real file-system conditions: the build directory deleted and re-created or renamed away under a
//! running `watch`, forged heartbeats (from the future, absurd intervals, a recycled pid), and a
//! full disk (a small tmpfs, mounted when the tests run as root; skipped with a note otherwise).

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::Output;
use crate::watch::{
    build, count, events, exit_code, gates_text, manual_gates, read, status, wait_until, watching,
    Watch, GATES, HEARTBEAT, STOP, WAIT,
};

/// The heartbeat interval `Watch::start` gives the daemon.
const BEAT: Duration = Duration::from_millis(500);

/// A directory deleted and re-created (`rm -rf`, `mkdir`, files moved in, one of them a
/// violation): the daemon notices, re-attaches, and writes the STOP into the new directory (within
/// [`WAIT`]; the time it took, about a heartbeat, is printed); the new watches see the fix.
fn a_recreated_directory_is_reattached(mode: &[&str]) {
    let (_root, dir, mut w) = watching(mode);
    let (_stage_root, stage) = build("pre-audit");
    fs::write(stage.join(GATES), manual_gates(1)).expect("stage the violation");

    // The referee may write one of its files while the directory is being emptied (as with any
    // `rm -rf` racing a writer): try again until it is gone.
    wait_until(
        WAIT,
        "the build directory is removed",
        || match fs::remove_dir_all(&dir) {
            Ok(()) => true,
            Err(e) if e.kind() == std::io::ErrorKind::DirectoryNotEmpty => false,
            Err(e) => panic!("rm -rf the build directory: {e}"),
        },
        || w.output(),
    );
    fs::create_dir(&dir).expect("mkdir it again");
    for e in fs::read_dir(&stage).expect("read the stage") {
        let e = e.expect("entry");
        fs::rename(e.path(), dir.join(e.file_name())).expect("move into the new directory");
    }
    let at = Instant::now();
    w.until("the STOP is written into the re-created directory", || {
        read(&dir.join(STOP)).contains("OBS-27")
    });
    eprintln!(
        "re-attached and the STOP written {:?} after the directory was re-created",
        at.elapsed()
    );
    // Its files are written there, not only the STOP (the pass files it had already written
    // went with the old directory).
    w.until("the pass file is written into the new directory", || {
        dir.join("OBSERVER-PASS-2.md").exists()
    });
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = status(&dir, true);
    assert_eq!(code, 1, "{out}{err}");

    // The new watches see the fix.
    fs::write(dir.join(GATES), gates_text()).expect("fix gates");
    w.until("the STOP file is removed", || !dir.join(STOP).exists());
    // The heartbeat follows the STOP file's removal (until then it still says a STOP stands).
    w.until("status says go", || status(&dir, true).code == 0);
    w.until("a reattach event in the new directory's log", || {
        count(&dir, "reattach", "") == 1
    });
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
    assert!(read(&dir.join("OBSERVER-REPORT.md")).contains("| reattach |"));
}

#[test]
fn a_recreated_build_directory_is_reattached() {
    a_recreated_directory_is_reattached(&[]);
}

#[test]
fn a_recreated_build_directory_is_reattached_in_poll_mode() {
    a_recreated_directory_is_reattached(&["--poll=50"]);
}

/// Asserts `status --require-live` on `dir` answers 3 every time for `span` (never a 0 between).
/// A span watched for what must never happen, not a margin raced: a slow machine asks less often
/// in it, and nothing asserted can fail for that.
fn never_live(dir: &Path, span: Duration, w: &Watch) {
    let until = Instant::now() + span;
    while Instant::now() < until {
        let Output {
            code,
            stdout: out,
            stderr: err,
            ..
        } = status(dir, true);
        assert_eq!(
            code,
            3,
            "`{}` said live: {out}{err}\n{}",
            dir.display(),
            w.output()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The build directory renamed away: neither the old path (nothing there) nor the moved directory
/// (its heartbeat vouches for the old path) has a live referee, at once and for as long as it
/// stays so. A directory created at the old path is re-attached; the moved one stays not live.
#[test]
fn a_build_directory_renamed_away_is_not_live() {
    let (root, dir, mut w) = watching(&[]);
    w.until("a live referee", || status(&dir, true).code == 0);
    // The referee's memory, named from the directory's path and identity.
    let state = crate::code_change::default_state(&dir);
    let moved = root.path().join("moved");
    fs::rename(&dir, &moved).expect("rename the build directory away");
    let Output {
        code, stderr: err, ..
    } = status(&moved, true);
    assert_eq!(
        code, 3,
        "the moved directory's heartbeat is not about it: {err}"
    );
    // The moved directory has no memory of its own; the live referee's (found by the
    // directory's identity) says it watches it at the old path.
    assert!(
        err.contains("renamed, moved or reached through a link"),
        "{err}"
    );
    let Output {
        code, stderr: err, ..
    } = status(&dir, true);
    assert_eq!(code, 3, "nothing at the old path: {err}");
    w.until("a detached event (in the state directory's log)", || {
        count(&state, "detached", "") == 1
    });
    never_live(&moved, BEAT * 4, &w);

    // The pipeline puts a directory back at the path: the referee attaches to it.
    let (_stage_root, stage) = build("pre-audit");
    fs::rename(&stage, &dir).expect("a new build directory at the old path");
    w.until("the new directory is live", || status(&dir, true).code == 0);
    w.until("a reattach event", || count(&dir, "reattach", "") == 1);
    never_live(&moved, BEAT * 2, &w);
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
}

/// Renamed away and back (the same directory, the same inode): the referee detaches while it is
/// gone, re-attaches when it is back (the inotify watch it had is not trusted after a move), and
/// judges what happens there next.
#[test]
fn a_build_directory_renamed_away_and_back_is_watched_again() {
    let (root, dir, mut w) = watching(&[]);
    w.until("a live referee", || status(&dir, true).code == 0);
    let state = crate::code_change::default_state(&dir);
    let away = root.path().join("away");
    fs::rename(&dir, &away).expect("rename away");
    w.until("a detached event", || count(&state, "detached", "") == 1);
    fs::rename(&away, &dir).expect("rename back");
    w.until("a reattach event", || count(&dir, "reattach", "") == 1);
    w.until("live again", || status(&dir, true).code == 0);
    fs::write(dir.join(GATES), manual_gates(1)).expect("a violation");
    w.until("STOP raised for OBS-27", || {
        read(&dir.join(STOP)).contains("OBS-27")
    });
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
}

/// A process that lives until dropped.
struct Sleeper(Child);

impl Sleeper {
    fn start() -> Sleeper {
        Sleeper(
            Command::new("sleep")
                .arg("300")
                .spawn()
                .expect("spawn sleep"),
        )
    }
}

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Field 22 of `/proc/PID/stat`: the process start time in clock ticks after boot.
fn proc_start(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let (_, rest) = stat.rsplit_once(')')?;
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Heartbeats that look fresh but prove nothing: from the future, with an absurd interval, or
/// naming a pid that is alive but is not the referee that wrote them (a recycled pid).
#[test]
fn forged_heartbeats_are_not_live() {
    let (root, dir) = build("pre-audit");
    let mut w = Watch::start(&dir, root.path(), &[]);
    w.until("a live referee", || status(&dir, true).code == 0);
    w.kill9();
    // Forged where `status` reads it, the state directory (the copy in the build directory is
    // never believed): each case still trips on what it forges.
    let state = crate::code_change::default_state(&dir);
    let real: Value =
        serde_json::from_str(&read(&state.join(HEARTBEAT))).expect("the referee's heartbeat");
    let sleeper = Sleeper::start();
    let spid = sleeper.0.id();
    // The sleeper's own start time, so a case trips only on what it forges.
    let sleeper_start = proc_start(spid);
    let now = chrono::Utc::now();
    let stamp = |t: chrono::DateTime<chrono::Utc>| Value::from(t.to_rfc3339());

    // A recycled pid: alive, but started at another time than the referee that wrote the beat.
    let dead_start = real["proc_start"].clone();
    type Forge = Box<dyn Fn(&mut Value)>;
    let recycled = |pid: u32| -> Forge {
        let start = dead_start.clone();
        Box::new(move |v: &mut Value| {
            v["pid"] = pid.into();
            v["proc_start"] = start.clone();
        })
    };
    let cases: Vec<(&str, Forge, &str)> = vec![
        (
            "the pid of a live `sleep` (recycled)",
            recycled(spid),
            "recycled pid",
        ),
        ("pid 1 (recycled)", recycled(1), "recycled pid"),
        (
            "a beat an hour in the future",
            Box::new(move |v| v["last_beat"] = stamp(now + chrono::Duration::hours(1))),
            "future",
        ),
        (
            "an interval of 0",
            Box::new(|v| v["interval_secs"] = 0.0.into()),
            "not believable",
        ),
        (
            "a negative interval",
            Box::new(|v| v["interval_secs"] = (-2.0).into()),
            "not believable",
        ),
        (
            "an interval of 1e300 s",
            Box::new(|v| v["interval_secs"] = 1e300.into()),
            "not believable",
        ),
        (
            "an interval of 2 days and a beat a day old",
            Box::new(move |v| {
                v["interval_secs"] = 172_800.0.into();
                v["last_beat"] = stamp(now - chrono::Duration::days(1));
            }),
            "not believable",
        ),
    ];
    for (what, forge, why) in cases {
        // Everything else as a live referee's would be: fresh, watching, the pid of a running
        // process with its own start time, so each case trips only on what it forges.
        let mut v = real.clone();
        v["state"] = "watching".into();
        v["last_beat"] = stamp(now);
        v["pid"] = spid.into();
        if let Some(s) = sleeper_start {
            v["proc_start"] = s.into();
        }
        forge(&mut v);
        fs::write(state.join(HEARTBEAT), v.to_string()).expect("forge");
        let Output {
            code,
            stdout: out,
            stderr: err,
            ..
        } = status(&dir, true);
        assert_eq!(code, 3, "{what}: {out}{err}\n{v}");
        assert!(err.contains(why), "{what}: expected `{why}` in: {err}");
    }
    // `NaN` is no JSON number: such a heartbeat does not parse.
    let text = real.to_string().replace(
        &format!("\"interval_secs\":{}", real["interval_secs"]),
        "\"interval_secs\":NaN",
    );
    assert!(text.contains("NaN"));
    fs::write(state.join(HEARTBEAT), text).expect("forge");
    let Output {
        code, stderr: err, ..
    } = status(&dir, true);
    assert_eq!(code, 3, "NaN: {err}");
    drop(sleeper);
}

/// A tmpfs of `size` mounted at `at` for the life of the value (lazily unmounted on drop).
pub(crate) struct Tmpfs {
    pub(crate) at: PathBuf,
}

impl Tmpfs {
    pub(crate) fn mount(at: &Path, size: &str) -> Option<Tmpfs> {
        fs::create_dir_all(at).expect("mount point");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs {
                at: at.to_path_buf(),
            }),
            Ok(o) => {
                eprintln!(
                    "note: skipped: cannot mount a tmpfs here (needs root or CAP_SYS_ADMIN): {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("note: skipped: cannot run `mount`: {e}");
                None
            }
        }
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.at).status();
    }
}

/// Fills the file system holding `dir` with one file; returns its path.
pub(crate) fn fill(dir: &Path) -> PathBuf {
    let path = dir.join("filler.bin");
    let mut f = fs::File::create(&path).expect("filler");
    let chunk = vec![0u8; 16 << 10];
    loop {
        match f.write(&chunk) {
            Ok(0) => break,
            Ok(_) => {}
            Err(e) if e.raw_os_error() == Some(libc::ENOSPC) => break,
            Err(e) => panic!("filling the disk: {e}"),
        }
    }
    path
}

/// Rewrites a file in place, never needing a new block (the new contents are no longer).
pub(crate) fn rewrite_in_place(path: &Path, contents: &str) {
    let mut f = fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open in place");
    assert!(f.metadata().expect("meta").len() >= contents.len() as u64);
    f.write_all(contents.as_bytes()).expect("write in place");
    f.set_len(contents.len() as u64).expect("cut");
}

/// Every line of the event log is one whole JSON object: a write the disk cut short left nothing.
fn assert_no_torn_line(dir: &Path) {
    let text = read(&dir.join(crate::watch::EVENTS));
    for (i, line) in text.lines().enumerate() {
        assert!(
            serde_json::from_str::<Value>(line).is_ok(),
            "line {} of the event log is torn: {line:?}",
            i + 1
        );
    }
    assert!(!events(dir).is_empty());
}

/// The disk fills while a BLOCKING check fails: the STOP cannot be written, but the heartbeat
/// (overwritten in place) says a STOP is wanted, so `status` answers 1, never 0. When room comes
/// back the STOP is written.
#[test]
fn a_full_disk_still_stops() {
    let root = tempfile::tempdir().expect("tempdir");
    let Some(mnt) = Tmpfs::mount(&root.path().join("mnt"), "4m") else {
        return;
    };
    let dir = crate::builder::Build::named("pre-audit")
        .and_then(|b| b.materialise(&mnt.at))
        .expect("materialise");
    let mut w = Watch::start(&dir, root.path(), &[]);
    w.until("a live referee", || {
        dir.join("OBSERVER-PASS-2.md").exists() && status(&dir, true).code == 0
    });
    let filler = fill(&mnt.at);
    rewrite_in_place(&dir.join(GATES), &manual_gates(1));
    w.until("OBS-27 judged FAIL", || {
        read(&w.out)
            .lines()
            .any(|l| l.contains("OBS-27 (pass 2)") && l.contains("→ FAIL"))
    });
    let mut last = None;
    wait_until(
        WAIT,
        "status stops saying go",
        || {
            let o = status(&dir, true);
            let stopped = o.code != 0;
            last = Some(o);
            stopped
        },
        || w.output(),
    );
    // The first answer after go may be a heartbeat read mid-overwrite (3, unparsable); then 1.
    wait_until(
        WAIT,
        "status says a STOP stands",
        || {
            let o = status(&dir, true);
            assert_ne!(o.code, 0, "go while OBS-27 fails: {o}");
            let stop = o.code == 1;
            last = Some(o);
            stop
        },
        || w.output(),
    );
    let out = last.expect("a status answer").stdout;
    // The STOP is in the state directory (another disk) or, when it could not be written there
    // yet, known from the heartbeat: either way not go.
    assert!(
        out.contains("not on disk") || out.contains("**Check:** OBS-27"),
        "{out}"
    );
    assert!(!dir.join(STOP).exists(), "the disk is full");
    let hb: Value = serde_json::from_str(&read(&dir.join(HEARTBEAT))).expect("heartbeat");
    assert_eq!(hb["state"], "faulted", "{hb}");
    assert_eq!(hb["stop_wanted"], true, "{hb}");
    assert_no_torn_line(&dir);

    fs::remove_file(filler).expect("free the disk");
    w.until("the STOP is written once there is room", || {
        read(&dir.join(STOP)).contains("**Check:** OBS-27")
    });
    w.until("the faults clear", || {
        read(&dir.join(HEARTBEAT)).contains("\"state\": \"watching\"")
    });
    assert_eq!(status(&dir, true).code, 1);
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    assert_no_torn_line(&dir);
    drop(w);
}

/// The disk fills with nothing failing, under `--on-fault continue`: the referee cannot write its
/// files, says `faulted`, and `status --require-live` answers 3 (with the fault), not 0.
#[test]
fn a_full_disk_faults_the_referee() {
    let root = tempfile::tempdir().expect("tempdir");
    let Some(mnt) = Tmpfs::mount(&root.path().join("mnt"), "4m") else {
        return;
    };
    let dir = crate::builder::Build::named("pre-audit")
        .and_then(|b| b.materialise(&mnt.at))
        .expect("materialise");
    let mut w = Watch::start(&dir, root.path(), &["--on-fault", "continue"]);
    w.until("a live referee", || status(&dir, true).code == 0);
    let filler = fill(&mnt.at);
    let mut last = None;
    wait_until(
        WAIT,
        "status stops saying go",
        || {
            let o = status(&dir, true);
            let stopped = o.code != 0;
            last = Some(o);
            stopped
        },
        || w.output(),
    );
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = last.expect("a status answer");
    assert_eq!(code, 3, "{out}{err}");
    assert!(
        err.contains("faulted") && err.contains("no space left"),
        "{err}"
    );
    fs::remove_file(filler).expect("free the disk");
    w.until("live again", || status(&dir, true).code == 0);
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
    assert_no_torn_line(&dir);
}

/// The build directory made immutable (`chattr +i`): nobody, root included, can create, rename
/// or remove a name in it (a read-only bind mount over it would not do: the referee holds the
/// directory open and writes through the mount it opened). Undone on drop.
struct Immutable {
    at: PathBuf,
}

impl Immutable {
    fn set(at: &Path) -> Option<Immutable> {
        match Command::new("chattr").arg("+i").arg(at).output() {
            Ok(o) if o.status.success() => Some(Immutable {
                at: at.to_path_buf(),
            }),
            Ok(o) => {
                eprintln!(
                    "note: skipped: cannot make the directory immutable (needs root and a file system with chattr): {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("note: skipped: cannot run chattr: {e}");
                None
            }
        }
    }
}

impl Drop for Immutable {
    fn drop(&mut self) {
        let _ = Command::new("chattr").arg("-i").arg(&self.at).status();
    }
}

/// The build directory becomes unwritable (immutable): the referee cannot write even its
/// heartbeat, so the heartbeat goes stale and `status --require-live` answers 3 within 3
/// intervals; once writable again the referee is live again.
#[test]
fn an_unwritable_build_directory_is_not_live_once_its_heartbeat_is_stale() {
    let (_root, dir, mut w) = watching(&[]);
    w.until("a live referee", || status(&dir, true).code == 0);
    let Some(ro) = Immutable::set(&dir) else {
        return;
    };
    let at = Instant::now();
    let mut last = None;
    wait_until(
        WAIT,
        "status stops saying go",
        || {
            let o = status(&dir, true);
            let stopped = o.code != 0;
            last = Some(o);
            stopped
        },
        || w.output(),
    );
    let took = at.elapsed();
    eprintln!("immutable: not live after {took:?} (heartbeat {BEAT:?})");
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = last.expect("a status answer");
    // Its memory is outside the immutable directory, so it is not stale: it is faulted (it
    // cannot write its copies there), and under `--on-fault stop` its STOP says so.
    assert!(code == 1 || code == 3, "{out}{err}");
    assert!(
        format!("{out}{err}").contains("operation not permitted"),
        "{out}{err}"
    );
    w.until("the referee says it cannot write", || {
        read(&w.out).contains("operation not permitted")
    });
    drop(ro);
    w.until("live again", || status(&dir, true).code == 0);
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
}

/// An event-log append the disk cuts short (a line longer than what is left of a full tmpfs) is
/// taken back whole: the log never holds a torn line, and the next append, once there is room,
/// starts on a line of its own.
#[test]
fn an_append_the_disk_cuts_short_leaves_no_torn_line() {
    use referee::daemon::event::Event;
    use referee::daemon::journal::{self, ContextRef, EventLog, Record};
    let root = tempfile::tempdir().expect("tempdir");
    let Some(mnt) = Tmpfs::mount(&root.path().join("mnt"), "256k") else {
        return;
    };
    let opened = journal::open_locked(&mnt.at).expect("open the log");
    let context = ContextRef {
        app_ctx: mnt.at.display().to_string(),
        motor_ctx: "d10@test".into(),
    };
    let mut log =
        EventLog::new(&mnt.at, opened.file, opened.torn_tail, "t".into(), context).expect("log");
    let rec = |why: String| Record::from(Event::Rescan { why });
    let now = chrono::Utc::now();
    log.append(&rec("first".into()), &now)
        .expect("room for the first line");
    let filler = fill(&mnt.at);
    let cut = log.append(&rec("x".repeat(64 << 10)), &now);
    assert!(cut.is_err(), "the disk is full");
    let lines = |n: usize| {
        let text = read(&mnt.at.join(journal::EVENTS_FILE));
        assert!(
            text.ends_with('\n'),
            "a torn tail: {:?}",
            &text[text.len().saturating_sub(80)..]
        );
        let all: Vec<&str> = text.lines().collect();
        assert_eq!(all.len(), n, "{} lines", all.len());
        for l in all {
            assert!(
                serde_json::from_str::<Value>(l).is_ok(),
                "torn line: {l:.80}"
            );
        }
    };
    lines(1);
    fs::remove_file(filler).expect("free the disk");
    log.append(&rec("after".into()), &now).expect("room again");
    lines(2);
}
