//! The trust boundary: the referee's memory lives in its state directory, out of the
//! watched side's reach. Each test runs the real binary with `--state-dir` in its own tempdir and
//! does what a careless or hostile pipeline or worker could do in the watched directory: delete
//! or replace `.referee`, forge a verdict or a heartbeat, delete the STOP. None of it makes
//! `status` say go, switches the loop guards off, or makes the referee write outside.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::code_change::{git_workspace, record, APP, PROTECTED};
use crate::util::{run, Output};
use crate::watch::{build, exit_code, raise_stop, read, Watch, EVENTS, HEARTBEAT, STOP, WAIT};

/// Takes `.referee` away in one step (as `rm -r` would, without racing the referee's writes).
fn take_away(ws: &Path) {
    let n = fs::read_dir(ws.parent().expect("parent")).map_or(0, |r| r.count());
    let trash = ws.with_file_name(format!("trash-{n}"));
    fs::rename(ws.join(".referee"), trash).expect("take .referee away");
}

fn p(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// `referee status DIR --state-dir STATE [extra]`.
fn status(dir: &Path, state: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["status", p(dir), "--state-dir", p(state)];
    args.extend_from_slice(extra);
    run(&args)
}

/// A referee on a code-change workspace with its state in `state`, once its heartbeat is there.
fn watch_workspace(ws: &Path, logs: &Path, state: &Path) -> Watch {
    let w = Watch::start(
        ws,
        logs,
        &["--protocol", "code-change", "--state-dir", p(state)],
    );
    w.until("the heartbeat in the state directory", || {
        state.join(HEARTBEAT).exists()
    });
    w
}

/// The verdict the state directory holds for a task.
fn verdict(state: &Path, id: &str) -> Value {
    serde_json::from_str(&read(&state.join(format!("OBSERVER-VERDICT-{id}.json"))))
        .unwrap_or(Value::Null)
}

fn judged(state: &Path, id: &str, attempt: u64) -> bool {
    verdict(state, id)["attempt"] == json!(attempt)
}

/// Whether `.referee/` holds the copy of the verdict of `attempt`.
fn copied(ws: &Path, id: &str, attempt: u64) -> bool {
    let copy = ws.join(format!(".referee/OBSERVER-VERDICT-{id}.json"));
    serde_json::from_str::<Value>(&read(&copy)).is_ok_and(|v| v["attempt"] == json!(attempt))
}

fn tamper_in(state: &Path, file: &str) -> bool {
    read(&state.join(EVENTS))
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .any(|e| e["payload"]["event"] == "tamper" && e["payload"]["file"] == file)
}

/// Deleting `.referee` (its kept attempts with it) between attempts does not reset the loop
/// guards: they count the attempts kept in the state directory, and the third REJECT escalates.
#[test]
fn deleting_the_referee_folder_does_not_switch_the_guards_off() {
    let (root, ws, logs) = git_workspace();
    let state = root.path().join("state");
    let base = BTreeMap::from([(PROTECTED, "ROLES = ['worker']\n")]);
    let mut w = watch_workspace(&ws, &logs, &state);
    for attempt in 1..=3u64 {
        // A different protected edit each time: no "identical diff" escalation.
        fs::write(
            ws.join(PROTECTED),
            format!("ROLES = ['root{attempt}']\nX = {}\n", attempt * 1000),
        )
        .expect("write");
        record(&ws, "t1", attempt, &[PROTECTED], &base);
        w.until("the attempt judged in the state directory", || {
            judged(&state, "t1", attempt)
        });
        if attempt < 3 {
            assert_eq!(verdict(&state, "t1")["verdict"], "REJECT", "{}", w.output());
            // The worker reads the verdict where it is told to, in `.referee/`, then wipes the
            // folder, kept attempts and all. The state directory's verdict is written before
            // its copy, and a folder taken away is made again only once the referee sees it
            // gone (the attempt may be judged first, its copy landing in the folder the referee
            // holds, wherever it was moved): wait for the copy, not only for the verdict.
            w.until("the attempt's verdict copied into .referee/", || {
                copied(&ws, "t1", attempt)
            });
            take_away(&ws);
        }
    }
    assert_eq!(
        verdict(&state, "t1")["verdict"],
        "ESCALATE",
        "{}",
        w.output()
    );
    assert!(state.join("attempts/t1/1.json").is_file());
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = status(&ws, &state, &["--task", "t1"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("ESCALATE"), "{out}");
    // The folder is made again and its copies restored; the deletion is on record.
    w.until("the verdict copy is back in .referee/", || {
        read(&ws.join(".referee/OBSERVER-VERDICT-t1.json")).contains("ESCALATE")
    });
    assert!(tamper_in(&state, ".referee"), "{}", w.output());
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
}

/// `.referee` replaced by something that is not a directory: never followed, nothing written
/// outside, the tamper logged, and `status` says STOP (1), not go.
fn a_replaced_referee_folder_is_tamper(plant: fn(&Path, &Path) -> std::io::Result<()>) {
    let (root, ws, logs) = git_workspace();
    let state = root.path().join("state");
    let outside = root.path().join("outside");
    fs::create_dir(&outside).expect("mkdir outside");
    let mut w = watch_workspace(&ws, &logs, &state);
    assert_eq!(status(&ws, &state, &[]).code, 0, "{}", w.output());
    // The referee makes a deleted folder again at once: plant until the plant sticks.
    let at = ws.join(".referee");
    for _ in 0..100 {
        if fs::symlink_metadata(&at).is_ok_and(|m| m.is_dir()) {
            take_away(&ws);
        }
        if plant(&at, &outside).is_ok() {
            break;
        }
    }
    assert!(fs::symlink_metadata(&at).is_ok_and(|m| !m.is_dir()));
    // `status` may say STOP before the referee has seen the plant: a STOP file it cannot read
    // in the watched directory (`.referee` a file: "not a directory") stands too. Wait for the
    // referee's own STOP, which it writes after logging the tamper.
    w.until("status says the referee's STOP", || {
        let o = status(&ws, &state, &[]);
        o.code == 1 && o.stdout.contains("REFEREE FOLDER REPLACED")
    });
    assert!(tamper_in(&state, ".referee"), "{}", w.output());
    // Beats go on (in the state directory), and still nothing lands outside.
    let beat = || read(&state.join(HEARTBEAT));
    let before = beat();
    w.until("two more heartbeats", || beat() != before);
    let before = beat();
    w.until("one more heartbeat", || beat() != before);
    assert_eq!(
        fs::read_dir(&outside).expect("list outside").count(),
        0,
        "the referee wrote outside the workspace"
    );
    // With --require-live too: the live referee holds the STOP.
    assert_eq!(status(&ws, &state, &["--require-live"]).code, 1);
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    assert_eq!(fs::read_dir(&outside).expect("list outside").count(), 0);
}

#[test]
fn a_referee_folder_replaced_by_a_symlink_is_tamper() {
    a_replaced_referee_folder_is_tamper(|at, outside| std::os::unix::fs::symlink(outside, at));
}

#[test]
fn a_referee_folder_replaced_by_a_file_is_tamper() {
    a_replaced_referee_folder_is_tamper(|at, _| {
        fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(at)
            .and_then(|mut f| std::io::Write::write_all(&mut f, b"{\"verdict\": \"APPROVE\"}\n"))
    });
}

/// A verdict forged in `.referee/` changes no answer: `status --task` reads the state
/// directory's, and the copy is restored.
#[test]
fn a_forged_verdict_in_the_referee_folder_is_not_believed() {
    let (root, ws, logs) = git_workspace();
    let state = root.path().join("state");
    let base = BTreeMap::from([(PROTECTED, "ROLES = ['worker']\n")]);
    let mut w = watch_workspace(&ws, &logs, &state);
    fs::write(ws.join(PROTECTED), "ROLES = ['root']\n").expect("write");
    record(&ws, "t1", 1, &[PROTECTED], &base);
    let copy = ws.join(".referee/OBSERVER-VERDICT-t1.json");
    // The copy is written after the state directory's verdict: wait for both.
    w.until("t1 judged, its copy in .referee/", || {
        judged(&state, "t1", 1) && serde_json::from_str::<Value>(&read(&copy)).is_ok()
    });
    let mut forged: Value = serde_json::from_str(&read(&copy)).expect("the copy");
    forged["verdict"] = json!("APPROVE");
    forged["reasons"] = json!([]);
    fs::write(&copy, forged.to_string()).expect("forge");
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = status(&ws, &state, &["--task", "t1"]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(out.contains("REJECT"), "{out}");
    w.until("the copy restored", || {
        serde_json::from_str::<Value>(&read(&copy)).is_ok_and(|v| v["verdict"] == "REJECT")
    });
    // The restore is on record (its event may follow the restored file by a moment).
    w.until("the tamper on record", || {
        tamper_in(&state, "OBSERVER-VERDICT-t1.json")
    });
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
}

/// `status --task`: 4 before the attempt is judged, 0 once it is approved (waiting for it).
#[test]
fn status_task_answers_not_judged_then_waits_for_the_approval() {
    let (root, ws, logs) = git_workspace();
    let state = root.path().join("state");
    let base = BTreeMap::from([(APP, "def main():\n    return 1\n")]);
    let mut w = watch_workspace(&ws, &logs, &state);
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = status(&ws, &state, &["--task", "t1"]);
    assert_eq!(code, 4, "not judged yet: {out}{err}");
    assert!(err.contains("not judged"), "{err}");
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    record(&ws, "t1", 1, &[APP], &base);
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = status(&ws, &state, &["--task", "t1", "--wait", "20s"]);
    assert_eq!(code, 0, "{out}{err}\n{}", w.output());
    assert!(out.contains("APPROVE"), "{out}");
    // A next attempt is not answered by the previous one's verdict.
    fs::write(ws.join(APP), "def main():\n    return 3\n").expect("write");
    let mut doc: Value =
        serde_json::from_str(&read(&ws.join(".tasks/t1.json"))).expect("the record");
    doc["attempt"] = json!(2);
    fs::write(ws.join(".tasks/.t1.tmp"), doc.to_string()).expect("write");
    w.signal(libc::SIGSTOP);
    fs::rename(ws.join(".tasks/.t1.tmp"), ws.join(".tasks/t1.json")).expect("rename");
    let Output {
        code, stderr: err, ..
    } = status(&ws, &state, &["--task", "t1"]);
    w.signal(libc::SIGCONT);
    assert_eq!(
        code, 4,
        "attempt 2 is not judged by attempt 1's verdict: {err}"
    );
    w.signal(libc::SIGTERM);
    let _ = w.wait(WAIT);
}

/// D10: deleting BUILD_DIR's STOP and heartbeat does not make `status` say go.
#[test]
fn deleted_stop_and_heartbeat_copies_leave_the_stop_standing() {
    let (root, dir) = build("pre-audit");
    let state = root.path().join("state");
    let mut w = Watch::start(&dir, root.path(), &["--state-dir", p(&state)]);
    w.until("pass 2 ran", || dir.join("OBSERVER-PASS-2.md").exists());
    raise_stop(&dir, &w);
    // The copy is written first (what the orchestrator waits on), the state directory's a
    // moment after it.
    w.until("the state directory's STOP", || state.join(STOP).is_file());
    fs::remove_file(dir.join(STOP)).expect("rm STOP");
    fs::remove_file(dir.join(HEARTBEAT)).expect("rm heartbeat");
    assert_eq!(status(&dir, &state, &[]).code, 1);
    assert_eq!(status(&dir, &state, &["--require-live"]).code, 1);
    // The live referee puts its copies back.
    w.until("the STOP copy restored", || dir.join(STOP).is_file());
    w.until("the heartbeat copy restored", || {
        dir.join(HEARTBEAT).is_file()
    });
    w.kill9();
    fs::remove_file(dir.join(STOP)).expect("rm STOP");
    let Output {
        code, stdout: out, ..
    } = status(&dir, &state, &[]);
    assert_eq!(code, 1, "the STOP outlives the referee and its copy");
    assert!(out.contains("OBS-27"), "{out}");
}

/// A heartbeat written by hand into BUILD_DIR naming a live pid is not a live referee, whether
/// a referee ever ran there or not.
#[test]
fn a_hand_written_heartbeat_is_not_live() {
    let (root, dir) = build("pre-audit");
    let state = root.path().join("state");
    let canon = fs::canonicalize(&dir).expect("canon");
    let id = referee::state::dir_id::DirId::of(&canon).expect("id");
    let pid = std::process::id();
    let now = chrono::Utc::now();
    let forged = json!({
        "pid": pid,
        "started": now.to_rfc3339(),
        "last_beat": now.to_rfc3339(),
        "interval_secs": 2.0,
        "protocol": {"id": "d10", "sha256": "x"},
        "state": "watching",
        "stop": false,
        "stop_wanted": false,
        "faults": [],
        "build_dir": canon.display().to_string(),
        "dir": id,
        "proc_start": referee::state::heartbeat::proc_start(pid),
        "trace_id": "forged",
    });
    fs::write(dir.join(HEARTBEAT), forged.to_string()).expect("forge");
    let Output {
        code, stderr: err, ..
    } = status(&dir, &state, &["--require-live"]);
    assert_eq!(code, 3, "no referee ever ran: {err}");
    assert!(err.contains("no referee has run"), "{err}");
    // A referee ran and finished; the forged heartbeat goes back in the build directory and
    // into the state directory too (as if the state directory were reachable): no lock held.
    let Output {
        code, stderr: err, ..
    } = run(&[
        "watch",
        p(&dir),
        "--state-dir",
        p(&state),
        "--timeout",
        "1s",
        "-q",
    ]);
    assert!(code == 0 || code == 1, "{err}");
    fs::write(dir.join(HEARTBEAT), forged.to_string()).expect("forge");
    let Output {
        code, stderr: err, ..
    } = status(&dir, &state, &["--require-live"]);
    assert_eq!(code, 3, "{err}");
    fs::write(state.join(HEARTBEAT), forged.to_string()).expect("forge");
    let Output {
        code, stderr: err, ..
    } = status(&dir, &state, &["--require-live"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("lock"), "{err}");
}

/// A referee stopped with SIGSTOP is not live, at once (not only once its heartbeat is stale).
#[test]
fn a_stopped_referee_is_not_live() {
    let (root, dir) = build("pre-audit");
    let state = root.path().join("state");
    let mut w = Watch::start(&dir, root.path(), &["--state-dir", p(&state)]);
    w.until("a live referee", || {
        status(&dir, &state, &["--require-live"]).code == 0
    });
    w.signal(libc::SIGSTOP);
    // A signal is delivered when the kernel next schedules the process: under load that is
    // later than `kill` returns. Asked only once the process is stopped (`T` in
    // /proc/PID/stat), `status` must say so at once.
    let stat = format!("/proc/{}/stat", w.pid());
    w.until("the referee stopped", || {
        fs::read_to_string(&stat).is_ok_and(|s| {
            s.rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with('T'))
        })
    });
    let Output {
        code, stderr: err, ..
    } = status(&dir, &state, &["--require-live"]);
    w.signal(libc::SIGCONT);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("stopped"), "{err}");
    w.until("live again", || {
        status(&dir, &state, &["--require-live"]).code == 0
    });
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
}

/// A state directory others could write, or a symlink, is refused before anything runs.
#[test]
fn an_unsafe_state_directory_is_refused() {
    let (root, dir) = build("pre-audit");
    let open = root.path().join("open");
    fs::create_dir(&open).expect("mkdir");
    fs::set_permissions(&open, fs::Permissions::from_mode(0o770)).expect("chmod");
    let Output {
        code, stderr: err, ..
    } = run(&["watch", p(&dir), "--state-dir", p(&open), "--timeout", "1s"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("writable by group"), "{err}");
    assert!(err.contains("chmod 700"), "{err}");
    let Output {
        code, stderr: err, ..
    } = status(&dir, &open, &[]);
    assert_eq!(code, 2, "{err}");

    let real = root.path().join("real");
    fs::create_dir(&real).expect("mkdir");
    fs::set_permissions(&real, fs::Permissions::from_mode(0o700)).expect("chmod");
    let link = root.path().join("link");
    std::os::unix::fs::symlink(&real, &link).expect("symlink");
    let Output {
        code, stderr: err, ..
    } = run(&["watch", p(&dir), "--state-dir", p(&link), "--timeout", "1s"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    assert!(!dir.join(HEARTBEAT).exists(), "nothing ran");
}

/// The worker side, run as another user (`nobody`), can write the watched directory but can
/// neither read nor write the referee's state directory (0700).
#[test]
fn another_user_cannot_reach_the_state_directory() {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("note: skipped: needs root to run a command as another user");
        return;
    }
    let setpriv = |args: &[&str]| {
        Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .args(args)
            .output()
    };
    if setpriv(&["true"])
        .map(|o| !o.status.success())
        .unwrap_or(true)
    {
        eprintln!("note: skipped: `setpriv` (util-linux) is not available");
        return;
    }
    let (root, dir) = build("pre-audit");
    // Everyone may pass through the root and write the build directory (the worker's side).
    fs::set_permissions(root.path(), fs::Permissions::from_mode(0o755)).expect("chmod root");
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o777)).expect("chmod build");
    let state: PathBuf = root.path().join("state");
    let mut w = Watch::start(&dir, root.path(), &["--state-dir", p(&state)]);
    w.until("the heartbeat in the state directory", || {
        state.join(HEARTBEAT).exists()
    });
    let mode = fs::metadata(&state).expect("state").permissions().mode() & 0o777;
    assert_eq!(mode, 0o700);
    let ok = |args: &[&str]| setpriv(args).expect("setpriv").status.success();
    assert!(
        ok(&[
            "sh",
            "-c",
            &format!("echo x > '{}/worker.txt'", dir.display())
        ]),
        "the worker writes its own directory"
    );
    let hb = state.join(HEARTBEAT);
    assert!(
        !ok(&["cat", p(&hb)]),
        "read the state directory's heartbeat"
    );
    assert!(!ok(&["ls", p(&state)]), "list the state directory");
    assert!(
        !ok(&[
            "sh",
            "-c",
            &format!("echo forged > '{}/{STOP}'", state.display())
        ]),
        "write into the state directory"
    );
    assert!(!ok(&["rm", "-f", p(&hb)]), "delete the heartbeat");
    assert!(hb.exists());
    w.signal(libc::SIGTERM);
    let _ = w.wait(WAIT);
}

/// `.referee` moved away and a symlink put at its name while the referee is writing (a verdict,
/// its copies, the heartbeat): the folder is held open , so every write lands in the
/// referee's own folder wherever it was moved, never through the link; then the swap is tamper.
#[test]
fn a_referee_folder_swapped_mid_write_is_never_written_through() {
    let (root, ws, logs) = git_workspace();
    let state = root.path().join("state");
    let outside = root.path().join("outside");
    fs::create_dir(&outside).expect("mkdir outside");
    let base = BTreeMap::from([(PROTECTED, "ROLES = ['worker']\n")]);
    let mut w = watch_workspace(&ws, &logs, &state);
    let at = ws.join(".referee");
    // Each round: a record lands (the referee judges and writes), and at once the folder is
    // moved away and a link to `outside` put in its place.
    for round in 1..=5u64 {
        fs::write(ws.join(PROTECTED), format!("ROLES = ['root{round}']\n")).expect("write");
        record(&ws, "t1", round, &[PROTECTED], &base);
        if fs::symlink_metadata(&at).is_ok_and(|m| m.is_dir()) {
            let _ = fs::rename(&at, root.path().join(format!("moved-{round}")));
            let _ = std::os::unix::fs::symlink(&outside, &at);
        }
        w.until("the attempt judged in the state directory", || {
            judged(&state, "t1", round)
        });
        assert_eq!(
            fs::read_dir(&outside).expect("list outside").count(),
            0,
            "the referee wrote through the link (round {round}): {}",
            w.output()
        );
        // Put a real folder back for the next round (the referee makes it again).
        if fs::symlink_metadata(&at).is_ok_and(|m| m.file_type().is_symlink()) {
            fs::remove_file(&at).expect("unlink");
        }
        w.until("the folder made again", || {
            fs::symlink_metadata(&at).is_ok_and(|m| m.is_dir())
        });
    }
    assert!(tamper_in(&state, ".referee"), "{}", w.output());
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    assert_eq!(fs::read_dir(&outside).expect("list outside").count(), 0);
}

/// A state directory this user may not reach (a folder above it closed to it, as systemd's
/// `DynamicUser=` closes `/var/lib/private`) is never a go: 2, 3 with `--require-live`, and 1
/// while a STOP file stands in the watched directory. As root, `status` runs as `nobody`, for
/// whom the folder is closed; otherwise the folder is closed to this user.
#[test]
fn a_state_directory_out_of_reach_is_never_go() {
    const NOBODY: u32 = 65534;
    let as_root = rustix::process::geteuid().is_root();
    let root = tempfile::tempdir().expect("tempdir");
    fs::set_permissions(root.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
    let dir = root.path().join("build");
    fs::create_dir(&dir).expect("mkdir");
    fs::set_permissions(&dir, fs::Permissions::from_mode(0o755)).expect("chmod");
    let closed = root.path().join("private");
    let state = closed.join("state");
    fs::create_dir_all(&state).expect("mkdir");
    fs::set_permissions(&state, fs::Permissions::from_mode(0o700)).expect("chmod");
    let closed_mode = if as_root { 0o700 } else { 0o000 };
    fs::set_permissions(&closed, fs::Permissions::from_mode(closed_mode)).expect("chmod");
    let ask = |extra: &[&str]| {
        let mut cmd = crate::util::TestCommand::new();
        cmd.args(["status", p(&dir), "--state-dir", p(&state)])
            .args(extra);
        if as_root {
            cmd.as_user(NOBODY, NOBODY);
        }
        cmd.output()
    };
    let o = ask(&[]);
    assert_eq!(o.code, 2, "{o}");
    assert!(o.stderr.contains("cannot reach the state directory"), "{o}");
    assert_eq!(ask(&["--require-live"]).code, 3);
    assert_eq!(ask(&["--sync"]).code, 3);
    fs::write(dir.join(STOP), "# OBSERVER STOP\n\nOBS-27\n").expect("write");
    fs::set_permissions(dir.join(STOP), fs::Permissions::from_mode(0o644)).expect("chmod");
    let o = ask(&[]);
    assert_eq!(o.code, 1, "{o}");
    assert!(o.stdout.contains("OBS-27"), "{o}");
    fs::set_permissions(&closed, fs::Permissions::from_mode(0o700)).expect("chmod back");
}
