//! Attacks on the referee's own files, end to end (issue 7 §3 and §5): names it writes planted
//! with symlinks pointing outside the build directory or with FIFOs, the STOP file replaced by a
//! directory, a damaged event log, restarts with a standing STOP polled at full speed, and the
//! command-line guards (`verify --write` beside a live daemon, `--exit-with` a missing pid).
//! Real processes and signals, and every wait against a deadline (the helpers of `watch`).

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::*;
use crate::util::Output;

/// A file outside the build directory that a planted symlink points at; it must never change.
fn outside(root: &Path) -> (PathBuf, &'static str) {
    let path = root.join("outside-the-build.txt");
    let text = "precious: not the referee's to write\n";
    fs::write(&path, text).expect("write the outside file");
    (path, text)
}

/// Puts a symlink to `target` at `at`, over whatever is there, in one rename (the daemon may be
/// writing that very name).
fn plant_link(target: &Path, at: &Path) {
    let name = at.file_name().expect("a name").to_string_lossy();
    let link = at.with_file_name(format!("planting-{name}"));
    std::os::unix::fs::symlink(target, &link).expect("make a link");
    fs::rename(&link, at).unwrap_or_else(|e| panic!("plant a link at {at:?}: {e}"));
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().expect("utf-8")).expect("no NUL");
    // SAFETY: a valid C string; mkfifo touches nothing else.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

/// The names the referee writes, with their old predictable temp names for process `pid`.
fn temp_names(pid: i32) -> Vec<String> {
    [
        STOP,
        HEARTBEAT,
        "OBSERVER-REPORT.md",
        "OBSERVER-PASS-2.md",
        "OBSERVER-PASS-3.md",
    ]
    .iter()
    .map(|n| format!(".{n}.tmp.{pid}"))
    .collect()
}

fn tamper_events(dir: &Path) -> Vec<Value> {
    payloads(dir, "tamper")
}

/// Symlinks to a file outside the build directory, planted at every temp name the referee used
/// to write through (`.NAME.tmp.PID`) and at target names, never get written through: the
/// outside file is unchanged, the targets end up regular files, and the replaced links are
/// recorded as tamper.
#[test]
fn planted_symlinks_never_make_it_write_outside_the_build() {
    let (root, dir, mut w) = watching(&[]);
    let (target, text) = outside(root.path());
    for name in temp_names(w.pid()) {
        plant_link(&target, &dir.join(name));
    }
    plant_link(&target, &dir.join("OBSERVER-REPORT.md"));
    // Over the heartbeat the daemon already wrote (it beats every 0.5 s).
    w.until("the first heartbeat", || dir.join(HEARTBEAT).exists());
    plant_link(&target, &dir.join(HEARTBEAT));
    raise_stop(&dir, &w);
    // The STOP went through `.OBSERVER-STOP.md.tmp.PID` when that name was predictable.
    assert_eq!(read(&target), text, "written through a planted link");
    // A pass file an orchestrator would read through a link to a fake: rewritten at the next
    // heartbeat, not at its next change.
    plant_link(&target, &dir.join("OBSERVER-PASS-2.md"));
    w.until("the pass file is a regular file again", || {
        fs::symlink_metadata(dir.join("OBSERVER-PASS-2.md")).is_ok_and(|m| m.is_file())
    });
    w.until("the replaced pass-file link is recorded", || {
        tamper_events(&dir)
            .iter()
            .any(|p| p["file"] == "OBSERVER-PASS-2.md" && p["found"] == "a symbolic link")
    });
    // A couple of heartbeats go through the planted heartbeat names.
    w.until("the heartbeat is a regular file again", || {
        fs::symlink_metadata(dir.join(HEARTBEAT)).is_ok_and(|m| m.is_file())
    });
    w.until("the replaced heartbeat link is recorded", || {
        tamper_events(&dir)
            .iter()
            .any(|p| p["file"] == HEARTBEAT && p["found"] == "a symbolic link")
    });
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    assert_eq!(read(&target), text, "written through a planted link");
    for name in [STOP, HEARTBEAT, "OBSERVER-REPORT.md", "OBSERVER-PASS-2.md"] {
        let m = fs::symlink_metadata(dir.join(name)).expect(name);
        assert!(m.is_file(), "{name} is not a regular file: {m:?}");
    }
    assert!(read(&dir.join(STOP)).contains("OBS-27"));
    assert!(
        tamper_events(&dir)
            .iter()
            .any(|p| p["file"] == "OBSERVER-REPORT.md" && p["found"] == "a symbolic link"),
        "{:?}",
        tamper_events(&dir)
    );
}

/// FIFOs planted at the temp names (and at the report's name) never hang the daemon: the STOP is
/// still raised, heartbeats go on, and SIGTERM still ends the run with its report, in bounded time.
#[test]
fn planted_fifos_never_hang_it() {
    let (_root, dir, mut w) = watching(&[]);
    for name in temp_names(w.pid()) {
        mkfifo(&dir.join(name));
    }
    mkfifo(&dir.join("OBSERVER-REPORT.md"));
    let beat = || read(&dir.join(HEARTBEAT));
    let before = beat();
    w.until("the next heartbeat", || beat() != before);
    raise_stop(&dir, &w);
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    assert!(fs::symlink_metadata(dir.join("OBSERVER-REPORT.md")).is_ok_and(|m| m.is_file()));
    assert!(read(&dir.join("OBSERVER-REPORT.md")).contains("SIGTERM received"));
}

/// A symlink at the event log's name pointing outside is never followed: moved aside, a new log
/// started, the outside file unchanged, and the tamper recorded.
#[test]
fn a_symlink_at_the_event_log_is_moved_aside() {
    let (root, dir) = build("pre-audit");
    let (target, text) = outside(root.path());
    // At the log's name in the state directory (the one that is opened and resumed from), and
    // at its copy's in the build directory.
    let state = crate::code_change::default_state(&dir);
    fs::create_dir_all(&state).expect("state dir");
    fs::set_permissions(&state, std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .expect("chmod");
    std::os::unix::fs::symlink(&target, state.join(EVENTS)).expect("plant");
    std::os::unix::fs::symlink(&target, dir.join(EVENTS)).expect("plant");
    let mut w = Watch::start(&dir, root.path(), &[]);
    w.until("pass 2 ran", || dir.join("OBSERVER-PASS-2.md").exists());
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
    assert_eq!(read(&target), text);
    assert!(fs::symlink_metadata(dir.join(EVENTS)).is_ok_and(|m| m.is_file()));
    let t = tamper_events(&dir);
    assert!(
        t.iter()
            .any(|p| p["file"] == EVENTS && p["action"] == "moved aside"),
        "{t:?}"
    );
    let aside: Vec<_> = fs::read_dir(&state)
        .expect("list")
        .filter_map(|e| e.ok())
        .filter(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with("OBSERVER-EVENTS.jsonl.tampered-")
        })
        .collect();
    assert_eq!(aside.len(), 1);
    assert!(aside[0].file_type().expect("type").is_symlink());
}

/// `OBSERVER-STOP.md` replaced by a directory while a failure stands: the directory is moved
/// aside with its contents (never deleted), the STOP restored, the tamper in events and report.
#[test]
fn a_stop_replaced_by_a_directory_is_moved_aside_and_restored() {
    let (_root, dir, mut w) = watching(&[]);
    raise_stop(&dir, &w);
    let stop = read(&dir.join(STOP));
    // The directory is made beside it and swapped in at once (the daemon restores a deleted
    // STOP within milliseconds, so `rm` then `mkdir` would race it).
    let planted = dir.join("planted-dir");
    fs::create_dir(&planted).expect("mkdir");
    fs::write(planted.join("note.txt"), "evidence").expect("fill the directory");
    let c = |p: &Path| std::ffi::CString::new(p.to_str().expect("utf-8")).expect("no NUL");
    let (a, b) = (c(&planted), c(&dir.join(STOP)));
    // SAFETY: two valid C strings; renameat2 only renames.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            libc::RENAME_EXCHANGE,
        )
    };
    assert_eq!(
        rc,
        0,
        "swap a directory in: {}",
        std::io::Error::last_os_error()
    );
    // `referee status` reads a directory there as a STOP: the swap back leaves no gap either.
    let poller = Poller::start(dir.join(STOP));
    w.until("the STOP is a file again", || {
        fs::symlink_metadata(dir.join(STOP)).is_ok_and(|m| m.is_file())
    });
    let (polls, absent, _) = poller.finish();
    assert_eq!(absent, 0, "absent during the swap ({polls} polls)");
    assert_eq!(read(&dir.join(STOP)), stop);
    w.until("a tamper event", || {
        tamper_events(&dir)
            .iter()
            .any(|p| p["file"] == STOP && p["found"] == "a directory")
    });
    let t = tamper_events(&dir)
        .into_iter()
        .find(|p| p["found"] == "a directory")
        .expect("tamper");
    let aside = PathBuf::from(t["moved_to"].as_str().expect("moved_to"));
    assert!(
        aside.file_name().is_some_and(|n| n
            .to_string_lossy()
            .starts_with("OBSERVER-STOP.md.tampered-")),
        "{aside:?}"
    );
    assert_eq!(read(&aside.join("note.txt")), "evidence", "never deleted");
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    let report = read(&dir.join("OBSERVER-REPORT.md"));
    assert!(
        report.contains("| tamper |") && report.contains("moved aside"),
        "{report}"
    );
}

/// Garbage in the event log is reported on resume — how many lines, which ones — as an event and
/// in the report, never silently dropped; what could be read still resumes (the STOP stands).
#[test]
fn garbage_in_the_event_log_is_reported_on_resume() {
    let (root, dir, mut w) = watching(&[]);
    raise_stop(&dir, &w);
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    // The log a restart resumes from is the state directory's.
    let state = crate::code_change::default_state(&dir);
    let log = read(&state.join(EVENTS));
    let mut lines: Vec<String> = log.lines().map(str::to_string).collect();
    let n = lines.len();
    lines.insert(1, "not json at all".into());
    lines.insert(3, "{\"payload\": {\"event\": \"stop_resolved\"}}".into());
    lines.push("[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[".into());
    fs::write(state.join(EVENTS), lines.join("\n") + "\n").expect("damage the log");

    let mut w = Watch::start(&dir, root.path(), &[]);
    w.until("a log_damaged event", || {
        count(&dir, "log_damaged", "") == 1
    });
    let d = payloads(&dir, "log_damaged").pop().expect("log_damaged");
    assert_eq!(d["skipped"], 3, "{d}");
    assert_eq!(d["lines"], serde_json::json!([2, 4, n + 3]), "{d}");
    assert!(read(&w.out).contains("3 lines of OBSERVER-EVENTS.jsonl"));
    w.until("the STOP still stands", || {
        read(&dir.join(STOP)).contains("OBS-27")
    });
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    let report = read(&dir.join("OBSERVER-REPORT.md"));
    assert!(report.contains("| log damaged |"), "{report}");
    assert!(report.contains("(lines 2, 4, "), "{report}");
}

/// Reads `OBSERVER-STOP.md` as fast as it can from a thread; counts polls, absences and reads
/// of a file that is not a whole STOP (torn).
struct Poller {
    done: Arc<AtomicBool>,
    handle: Option<JoinHandle<(u64, u64, u64)>>,
}

impl Poller {
    fn start(stop: PathBuf) -> Poller {
        let done = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&done);
        let handle = std::thread::spawn(move || {
            let (mut polls, mut absent, mut torn) = (0u64, 0u64, 0u64);
            while !flag.load(Ordering::Relaxed) {
                polls += 1;
                match fs::read(&stop) {
                    Ok(b) if b.starts_with(b"# OBSERVER STOP") => {}
                    Ok(_) => torn += 1,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => absent += 1,
                    // A directory someone put there still reads as a STOP to `referee status`.
                    Err(_) => {}
                }
            }
            (polls, absent, torn)
        });
        Poller {
            done,
            handle: Some(handle),
        }
    }

    /// (polls, absent, torn).
    fn finish(mut self) -> (u64, u64, u64) {
        self.done.store(true, Ordering::Relaxed);
        self.handle
            .take()
            .expect("running")
            .join()
            .expect("poller thread")
    }
}

impl Drop for Poller {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
    }
}

/// How the first referee goes away.
#[derive(Clone, Copy, Debug)]
enum Death {
    Kill9,
    Sigterm,
}

/// A standing STOP across a restart, polled at full speed from before the first referee dies
/// until the new one has judged the directory (and, with `rewrite`, until the failing input
/// caught mid-write at the restart has settled): it is never absent, never torn.
fn stop_stands_across_a_restart(death: Death, rewrite: bool) {
    let (root, dir) = build("pre-audit");
    let mut w = Watch::start(&dir, root.path(), &["--settle", "1000"]);
    w.until("pass 2 ran", || dir.join("OBSERVER-PASS-2.md").exists());
    raise_stop(&dir, &w);
    w.until("stop_raised is logged", || {
        count(&dir, "stop_raised", "OBS-27") == 1
    });
    let poller = Poller::start(dir.join(STOP));
    match death {
        Death::Kill9 => w.kill9(),
        Death::Sigterm => {
            w.signal(libc::SIGTERM);
            assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
        }
    }
    let gates = manual_gates(1);
    if rewrite {
        // The pipeline is rewriting the failing input when the referee comes back: half of it
        // is on disk (invalid JSON, fresh mtime), the rest arrives after the restart.
        fs::write(dir.join(GATES), &gates[..gates.len() / 2]).expect("half");
    }
    let w = Watch::start(&dir, root.path(), &["--settle", "1000"]);
    let pid = w.pid();
    w.until("the new referee has beaten", || {
        serde_json::from_str::<Value>(&read(&dir.join(HEARTBEAT))).is_ok_and(|h| h["pid"] == pid)
    });
    w.until("the new referee has judged", || {
        count(&dir, "restart", "") == 1 && dir.join("OBSERVER-PASS-2.md").exists()
    });
    if rewrite {
        fs::write(dir.join(GATES), &gates).expect("whole, still failing");
    }
    // Past the settle window (1 s) and a few heartbeats: every hold has been decided. A span
    // watched for what must never happen (the poller counts gaps and torn reads), not a margin
    // raced: on a slow machine less happens in it, and nothing it asserts can fail for that.
    let until = Instant::now() + Duration::from_millis(if rewrite { 2500 } else { 1200 });
    while Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let (polls, absent, torn) = poller.finish();
    eprintln!("{death:?} rewrite={rewrite}: {polls} polls, {absent} absent, {torn} torn");
    assert!(polls > 100, "the poller barely ran: {polls}");
    assert_eq!(
        (absent, torn),
        (0, 0),
        "the STOP was lifted or torn across the restart ({polls} polls)\n{}",
        w.output()
    );
    assert_eq!(count(&dir, "stop_resolved", ""), 0, "{}", w.output());
    assert_eq!(count(&dir, "stop_raised", "OBS-27"), 1, "no second raise");
    assert!(read(&dir.join(STOP)).contains("OBS-27"));
}

#[test]
fn a_standing_stop_survives_kill_9_and_restart_without_a_gap() {
    stop_stands_across_a_restart(Death::Kill9, false);
}

#[test]
fn a_standing_stop_survives_sigterm_and_restart_without_a_gap() {
    stop_stands_across_a_restart(Death::Sigterm, false);
}

/// The resolve-then-raise gap: on restart the failing input is caught mid-rewrite; its result is
/// held until it settles, and the STOP must stand meanwhile (it used to be lifted for the settle
/// window, then raised again).
#[test]
fn a_standing_stop_survives_a_restart_while_its_input_is_rewritten() {
    stop_stands_across_a_restart(Death::Kill9, true);
}

/// `verify --write` beside a live daemon exits 2, says why, and writes nothing.
#[test]
fn verify_write_refuses_a_live_referee() {
    let (_root, dir, mut w) = watching(&[]);
    let pass2 = read(&dir.join("OBSERVER-PASS-2.md"));
    let d = dir.to_str().expect("utf-8");
    let Output {
        code, stderr: err, ..
    } = run(&["verify", d, "--write"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("live referee") && err.contains("--write"),
        "{err}"
    );
    assert!(
        !dir.join("OBSERVER-REPORT.md").exists(),
        "a report was written"
    );
    assert_eq!(read(&dir.join("OBSERVER-PASS-2.md")), pass2);
    // Without --write it is a plain read-only audit.
    assert_ne!(run(&["verify", d]).code, 2);
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
    // Once the daemon is gone, --write works again.
    let Output {
        code, stderr: err, ..
    } = run(&["verify", d, "--write"]);
    assert_eq!(code, 0, "{err}");
}

/// `watch --exit-with PID` for a process that does not exist exits 2 with a clear message,
/// before writing anything.
#[test]
fn exit_with_a_missing_pid_exits_2_and_writes_nothing() {
    let (_root, dir) = build("pre-audit");
    let mut gone = std::process::Command::new("true")
        .spawn()
        .expect("spawn true");
    let pid = gone.id().to_string();
    gone.wait().expect("reap");
    let d = dir.to_str().expect("utf-8");
    let Output {
        code, stderr: err, ..
    } = run(&["watch", d, "--exit-with", &pid, "--quiet"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("--exit-with `{pid}`")) && err.contains("no such process"),
        "{err}"
    );
    let own: Vec<String> = fs::read_dir(&dir)
        .expect("list")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.contains("OBSERVER-"))
        .collect();
    assert!(own.is_empty(), "written: {own:?}");
}

/// SIGTERM while the failing input is being rewritten in place: the half-written file would
/// judge INCONCLUSIVE, but a standing STOP is not lifted on a file caught mid-write — not even by
/// the last evaluation before the referee exits (nobody would be left to raise it again).
#[test]
fn sigterm_mid_rewrite_does_not_lift_a_standing_stop() {
    let (_root, dir, mut w) = watching(&["--settle", "2000"]);
    raise_stop(&dir, &w);
    let gates = manual_gates(1);
    fs::write(dir.join(GATES), &gates[..gates.len() / 2]).expect("half");
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    assert!(
        read(&dir.join(STOP)).contains("OBS-27"),
        "the STOP was lifted at exit\n{}",
        w.output()
    );
    assert_eq!(count(&dir, "stop_resolved", ""), 0, "{}", w.output());
}
