//! The referee's own faults stay cheap (issue 16, "its own faults"): a full disk, a build
//! directory made immutable (`chattr +i`; a read-only mode when not root), a state directory it
//! can no longer write. The referee keeps the STOP it has (`status` says stop throughout), says
//! each fault once and once more when it clears, and tries again with a backoff: over a few
//! seconds of the fault it uses a small share of a core and its log does not grow. Real processes
//! and real file systems; a case that needs root (a tmpfs, `chattr`) is skipped with a note
//! otherwise.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::liveness::{fill, rewrite_in_place, Tmpfs};
use crate::util::Output;
use crate::watch::{exit_code, manual_gates, read, run, Watch, GATES, HEARTBEAT, STOP, WAIT};

/// How long the fault is watched for its cost.
const WINDOW: Duration = Duration::from_secs(4);

/// The CPU time (user + system) a process has used so far.
fn cpu(pid: i32) -> Duration {
    let stat = read(Path::new(&format!("/proc/{pid}/stat")));
    let (_, rest) = stat.rsplit_once(')').expect("a /proc stat line");
    let f: Vec<u64> = rest
        .split_whitespace()
        .skip(11)
        .take(2)
        .map(|v| v.parse().expect("ticks"))
        .collect();
    // SAFETY: sysconf only reads a constant.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    Duration::from_millis((f[0] + f[1]) * 1000 / hz)
}

/// Lines the daemon wrote so far (stdout and stderr).
fn lines(w: &Watch) -> usize {
    read(&w.out).lines().count() + read(&w.err).lines().count()
}

/// `referee status DIR --state-dir STATE`.
fn status(dir: &Path, state: &Path) -> Output {
    run(&[
        "status",
        dir.to_str().expect("utf-8"),
        "--state-dir",
        state.to_str().expect("utf-8"),
    ])
}

/// Over [`WINDOW`] of a standing fault: `status` says stop every time it is asked, the daemon
/// uses well under a core, and says nothing new. A span watched, not a margin raced: a loaded
/// machine gives the daemon less CPU and fewer rounds in it, never more.
fn assert_cheap_and_stopped(w: &Watch, dir: &Path, state: &Path) {
    let (cpu0, lines0, t0) = (cpu(w.pid()), lines(w), Instant::now());
    while t0.elapsed() < WINDOW {
        let Output {
            code,
            stdout: out,
            stderr: err,
            ..
        } = status(dir, state);
        assert_eq!(
            code,
            1,
            "status must keep saying stop: {out}{err}\n{}",
            w.output()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
    let (used, wall) = (cpu(w.pid()) - cpu0, t0.elapsed());
    eprintln!("during the fault: {used:?} of CPU in {wall:?}");
    assert!(
        used < wall / 4,
        "the referee used {used:?} of CPU in {wall:?} of a fault (a spin)\n{}",
        w.output()
    );
    let said = lines(w) - lines0;
    assert!(
        said <= 4,
        "{said} new lines while the fault stood (said once, not at each try)\n{}",
        w.output()
    );
}

/// The daemon said it cannot write the STOP (somewhere).
fn stop_fault_said(w: &Watch) -> bool {
    read(&w.out)
        .lines()
        .any(|l| l.contains("fault: cannot") && l.contains(STOP))
}

/// Waits until the state directory's heartbeat says `faulted` with a fault naming `needle`: the
/// referee has said the fault and beaten since (a condition, not a pause).
#[track_caller]
fn until_in_heartbeat(w: &Watch, state: &Path, needle: &str) {
    w.until(
        &format!("a fault naming `{needle}` in the heartbeat"),
        || {
            serde_json::from_str::<serde_json::Value>(&read(&state.join(HEARTBEAT))).is_ok_and(
                |h| {
                    h["state"] == "faulted"
                        && h["faults"].as_array().is_some_and(|f| {
                            f.iter()
                                .any(|m| m.as_str().is_some_and(|m| m.contains(needle)))
                        })
                },
            )
        },
    );
}

/// Each fault cleared is said once, and each fault at most a few times (once per state change).
fn assert_said_once(w: &Watch) {
    let out = read(&w.out);
    let mut seen = std::collections::BTreeMap::<&str, usize>::new();
    for l in out.lines() {
        if let Some((_, rest)) = l.split_once("] fault") {
            *seen.entry(rest).or_default() += 1;
        }
    }
    for (line, n) in &seen {
        assert!(*n <= 1, "said {n} times: fault{line}\n{}", w.output());
    }
}

/// The disk under the build directory fills while a BLOCKING check fails: the STOP is in the
/// state directory (another disk) and `status` says stop; the referee keeps trying to write its
/// copies without spinning, and writes them once there is room.
#[test]
fn a_full_disk_costs_no_core_and_keeps_the_stop() {
    let root = tempfile::tempdir().expect("tempdir");
    let Some(mnt) = Tmpfs::mount(&root.path().join("mnt"), "4m") else {
        return;
    };
    let dir = crate::builder::Build::named("pre-audit")
        .and_then(|b| b.materialise(&mnt.at))
        .expect("materialise");
    let state = root.path().join("state");
    let state_arg = state.to_str().expect("utf-8");
    let mut w = Watch::start(&dir, root.path(), &["--state-dir", state_arg]);
    w.until("pass 2 judged", || dir.join("OBSERVER-PASS-2.md").exists());
    let filler = fill(&mnt.at);
    rewrite_in_place(&dir.join(GATES), &manual_gates(1));
    w.until("the STOP in the state directory", || {
        read(&state.join(STOP)).contains("**Check:** OBS-27")
    });
    w.until("the copies' fault said", || {
        read(&w.out).contains("no space left on device")
    });
    // The pass file's fault follows the STOP's within a retry.
    until_in_heartbeat(&w, &state, "OBSERVER-PASS-");
    assert!(!dir.join(STOP).exists(), "the disk is full");
    assert_cheap_and_stopped(&w, &dir, &state);
    assert!(
        read(&w.out).contains("retrying after 0.5 s, backing off to every 8 s"),
        "{}",
        w.output()
    );

    fs::remove_file(filler).expect("free the disk");
    w.until("the STOP copy written once there is room", || {
        read(&dir.join(STOP)).contains("**Check:** OBS-27")
    });
    w.until("the faults clear", || {
        read(&dir.join(HEARTBEAT)).contains("\"state\": \"watching\"")
    });
    assert!(read(&w.out).contains("fault cleared"), "{}", w.output());
    assert_said_once(&w);
    assert_eq!(status(&dir, &state).code, 1);
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
}

/// A directory nothing can be created in for the life of the value: immutable (`chattr +i`) as
/// root, read-only by its mode otherwise. `None` (with a note) when neither can be done.
struct Unwritable {
    dir: PathBuf,
    immutable: bool,
}

impl Unwritable {
    fn make(dir: &Path) -> Option<Unwritable> {
        // SAFETY: geteuid has no failure mode.
        let root = unsafe { libc::geteuid() } == 0;
        if root {
            let out = Command::new("chattr").arg("+i").arg(dir).output();
            match out {
                Ok(o) if o.status.success() => {}
                Ok(o) => {
                    eprintln!(
                        "note: skipped: `chattr +i` refused here: {}",
                        String::from_utf8_lossy(&o.stderr).trim()
                    );
                    return None;
                }
                Err(e) => {
                    eprintln!("note: skipped: cannot run `chattr`: {e}");
                    return None;
                }
            }
        } else {
            use std::os::unix::fs::PermissionsExt;
            fs::set_permissions(dir, fs::Permissions::from_mode(0o555)).expect("chmod");
        }
        Some(Unwritable {
            dir: dir.to_path_buf(),
            immutable: root,
        })
    }
}

impl Drop for Unwritable {
    fn drop(&mut self) {
        if self.immutable {
            let _ = Command::new("chattr").arg("-i").arg(&self.dir).status();
        } else {
            use std::os::unix::fs::PermissionsExt;
            let _ = fs::set_permissions(&self.dir, fs::Permissions::from_mode(0o755));
        }
    }
}

/// The build directory becomes immutable, then a BLOCKING check fails: the STOP stands in the
/// state directory, its copy cannot be written, and the referee backs off instead of spinning.
#[test]
fn an_immutable_build_directory_costs_no_core_and_keeps_the_stop() {
    let root = tempfile::tempdir().expect("tempdir");
    let dir = crate::builder::Build::named("pre-audit")
        .and_then(|b| b.materialise(root.path()))
        .expect("materialise");
    let state = root.path().join("state");
    let state_arg = state.to_str().expect("utf-8");
    let mut w = Watch::start(&dir, root.path(), &["--state-dir", state_arg]);
    w.until("pass 2 judged", || dir.join("OBSERVER-PASS-2.md").exists());
    let Some(locked) = Unwritable::make(&dir) else {
        return;
    };
    // An existing file can still be rewritten in an immutable directory.
    fs::write(dir.join(GATES), manual_gates(1)).expect("write gates");
    w.until("the STOP in the state directory", || {
        read(&state.join(STOP)).contains("**Check:** OBS-27")
    });
    w.until("the copy's fault said", || stop_fault_said(&w));
    until_in_heartbeat(&w, &state, STOP);
    assert_cheap_and_stopped(&w, &dir, &state);
    drop(locked);
    w.until("the STOP copy written once it can be", || {
        read(&dir.join(STOP)).contains("**Check:** OBS-27")
    });
    assert_said_once(&w);
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
}

/// The state directory becomes immutable while a STOP stands: the STOP it holds stays (nothing
/// can remove it), `status` keeps saying stop, a new failure is known from the heartbeat
/// (rewritten in place), and the referee backs off instead of spinning.
#[test]
fn an_immutable_state_directory_costs_no_core_and_keeps_the_stop() {
    let root = tempfile::tempdir().expect("tempdir");
    let dir = crate::builder::Build::named("pre-audit")
        .and_then(|b| b.materialise(root.path()))
        .expect("materialise");
    let state = root.path().join("state");
    let state_arg = state.to_str().expect("utf-8");
    let mut w = Watch::start(&dir, root.path(), &["--state-dir", state_arg]);
    w.until("pass 2 judged", || dir.join("OBSERVER-PASS-2.md").exists());
    fs::write(dir.join(GATES), manual_gates(1)).expect("write gates");
    w.until("the STOP in the state directory", || {
        read(&state.join(STOP)).contains("**Check:** OBS-27")
    });
    let Some(locked) = Unwritable::make(&state) else {
        return;
    };
    // Fixed while the state directory is locked: the STOP cannot be lifted, and stands.
    fs::write(dir.join(GATES), manual_gates(0)).expect("write gates");
    w.until("the state directory's fault said", || stop_fault_said(&w));
    // Not a fixed pause: the fault is in the heartbeat (written after it was said), so what the
    // referee says about it is said before the window below counts its lines.
    until_in_heartbeat(&w, &state, STOP);
    assert!(read(&state.join(STOP)).contains("OBS-27"), "kept");
    assert_cheap_and_stopped(&w, &dir, &state);
    drop(locked);
    w.until("the STOP lifted once it can be", || {
        !state.join(STOP).exists() && !dir.join(STOP).exists()
    });
    assert_eq!(status(&dir, &state).code, 0, "{}", w.output());
    assert_said_once(&w);
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
}
