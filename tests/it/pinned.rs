//! A `status` that cannot be forged or run ahead (issue 16 §7), against real processes: a
//! hand-written heartbeat naming a live pid is not a live referee; a referee restarted with
//! other rules (a permissive protocol, its own waivers, `--fresh`) is refused by `status
//! --expect-protocol/--expect-waivers`; and `status --sync` answers only once everything
//! written before it is judged (exit 3 with no live referee to catch up).

use std::fs;
use std::path::Path;
use std::process::{Child, Command};

use serde_json::Value;

use crate::util::Output;
use crate::watch::{build, exit_code, manual_gates, read, run, status, Watch, GATES, STOP, WAIT};

const HEARTBEAT: &str = "OBSERVER-HEARTBEAT.json";

/// A live process that is not a referee.
struct Sleeper(Child);

impl Drop for Sleeper {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Field 22 of `/proc/PID/stat`: the start time `status` compares.
fn proc_start(pid: u32) -> Option<u64> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 2..];
    after.split(' ').nth(19)?.parse().ok()
}

/// A heartbeat as a live referee would write it, naming `pid` (with its real start time).
fn forge(template: &Value, pid: u32) -> String {
    let mut v = template.clone();
    v["pid"] = pid.into();
    if let Some(s) = proc_start(pid) {
        v["proc_start"] = s.into();
    }
    v["state"] = "watching".into();
    v["last_beat"] = chrono::Utc::now().to_rfc3339().into();
    v["stop"] = false.into();
    v["stop_wanted"] = false.into();
    v.to_string()
}

#[test]
fn a_hand_written_heartbeat_naming_a_live_pid_is_not_live() {
    let (root, dir) = build("pre-audit");
    let mut w = Watch::start(&dir, root.path(), &[]);
    w.until("a live referee", || status(&dir, true).code == 0);
    w.kill9();
    let state = crate::code_change::default_state(&dir);
    let real: Value = serde_json::from_str(&read(&state.join(HEARTBEAT))).expect("a heartbeat");
    let sleeper = Sleeper(Command::new("sleep").arg("60").spawn().expect("sleep"));
    let forged = forge(&real, sleeper.0.id());
    // Everything a heartbeat can say is right, where `status` reads it and where the pipeline
    // can write: only the event log's lock, held by no one, gives it away.
    fs::write(state.join(HEARTBEAT), &forged).expect("forge");
    fs::write(dir.join(HEARTBEAT), &forged).expect("forge the copy");
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = status(&dir, true);
    assert_eq!(code, 3, "{out}{err}");
    assert!(err.contains("lock"), "{err}");
    // A directory no referee ever watched, with a heartbeat the pipeline wrote.
    let (_other_root, other) = build("pre-audit");
    fs::write(other.join(HEARTBEAT), &forged).expect("forge");
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = status(&other, true);
    assert_eq!(code, 3, "{out}{err}");
    assert!(err.contains("no referee has run"), "{err}");
}

fn protocol_hash(of: &str) -> String {
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&["protocol", "hash", of]);
    assert_eq!(code, 0, "{err}");
    let sha = out.trim().to_string();
    assert_eq!(sha.len(), 64, "{out}");
    sha
}

fn status_with(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["status", dir.to_str().expect("utf-8"), "--require-live"];
    args.extend_from_slice(extra);
    run(&args)
}

#[test]
fn status_refuses_a_referee_restarted_with_other_rules() {
    let (root, dir) = build("pre-audit");
    let d10 = protocol_hash("d10");
    let mut w = Watch::start(&dir, root.path(), &[]);
    w.until("a live referee", || status(&dir, true).code == 0);
    let pinned = ["--expect-protocol", &d10, "--expect-waivers", "none"];
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = status_with(&dir, &pinned);
    assert_eq!((code, out.as_str()), (0, "go\n"), "{err}");
    let Output {
        code, stdout: out, ..
    } = status_with(&dir, &["--show-run"]);
    assert_eq!(code, 0);
    assert!(out.contains(&format!("sha256 {d10}")), "{out}");
    assert!(
        out.contains("waivers: none") && out.contains("fresh: false"),
        "{out}"
    );
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());

    // The pipeline restarts it with its own rules: a protocol of its own (here the same checks
    // with one more comment line), its own waivers, and `--fresh` to get past the log's hash.
    let own = root.path().join("permissive.toml");
    let text = read(&crate::builder::fixtures_dir().join("../protocols/d10.toml"));
    fs::write(&own, format!("# mine\n{text}")).expect("protocol");
    let waivers = root.path().join("waivers.toml");
    fs::write(
        &waivers,
        "[[waiver]]\ncheck = \"OBS-27\"\nreason = \"mine\"\napproved_by = \"me\"\nexpires = 2099-12-31\n",
    )
    .expect("waivers");
    let mut w = Watch::start(
        &dir,
        root.path(),
        &[
            "--protocol",
            own.to_str().expect("utf-8"),
            "--waivers",
            waivers.to_str().expect("utf-8"),
            "--fresh",
        ],
    );
    w.until("the restarted referee is live", || {
        status(&dir, true).code == 0
    });
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = status_with(&dir, &pinned);
    assert_eq!(code, 1, "{out}{err}\n{}", w.output());
    assert!(
        out.contains("does not run the rules pinned") && out.contains(&d10),
        "{out}"
    );
    assert!(out.contains("waiver file"), "{out}");
    // Pinned to what it does run, it is believed.
    let own_sha = protocol_hash(own.to_str().expect("utf-8"));
    let waivers_sha = crate::code_change::sha(&fs::read(&waivers).expect("read"));
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = status_with(
        &dir,
        &[
            "--expect-protocol",
            &own_sha,
            "--expect-waivers",
            &waivers_sha,
        ],
    );
    assert_eq!(code, 0, "{out}{err}");
    let Output {
        code, stdout: out, ..
    } = status_with(&dir, &["--show-run"]);
    assert_eq!(code, 0);
    assert!(
        out.contains("fresh: true") && out.contains(&waivers_sha),
        "{out}"
    );
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
}

fn sync(dir: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["status", dir.to_str().expect("utf-8"), "--sync"];
    args.extend_from_slice(extra);
    run(&args)
}

fn tokens_left(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .expect("list")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("OBSERVER-SYNC-"))
        .collect()
}

#[test]
fn status_sync_answers_only_once_every_write_before_it_is_judged() {
    let (root, dir) = build("pre-audit");
    // A long settle window: a bad write in place is held back for 2 s before it is judged.
    let mut w = Watch::start(&dir, root.path(), &["--settle", "2000"]);
    w.until("a live referee", || status(&dir, true).code == 0);
    fs::write(dir.join(GATES), manual_gates(1)).expect("in-place write");
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = sync(&dir, &["--require-live"]);
    assert_eq!(
        code,
        1,
        "--sync ran ahead of the write\n{out}{err}\n{}",
        w.output()
    );
    assert!(out.contains("OBS-27"), "{out}");
    fs::write(dir.join(GATES), crate::watch::gates_text()).expect("in-place fix");
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = sync(&dir, &["--require-live"]);
    assert_eq!((code, out.as_str()), (0, "go\n"), "{err}\n{}", w.output());
    assert!(!dir.join(STOP).exists());
    assert!(tokens_left(&dir).is_empty(), "{:?}", tokens_left(&dir));
    // A stopped referee cannot catch up: exit 3, not a go.
    w.signal(libc::SIGSTOP);
    let Output {
        code, stderr: err, ..
    } = sync(&dir, &["--wait", "5s"]);
    w.signal(libc::SIGCONT);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("--sync"), "{err}");
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
    let Output {
        code, stderr: err, ..
    } = sync(&dir, &["--wait", "1s"]);
    assert_eq!(code, 3, "{err}");
    assert!(tokens_left(&dir).is_empty(), "{:?}", tokens_left(&dir));
}
