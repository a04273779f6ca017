//! The live daemon (`referee watch`) and `referee status`, end to end: the built binary runs
//! against a temporary build directory, artifacts arrive as plain writes or renames, and real
//! signals stop it. Every wait polls the file system against a deadline and fails with the
//! daemon's output; nothing sleeps and hopes.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::builder::{fixtures_dir, Build};
use crate::util::{Output, TestCommand};

/// The longest any single condition may take to become true.
pub(crate) const WAIT: Duration = Duration::from_secs(10);
pub(crate) const STOP: &str = "OBSERVER-STOP.md";
pub(crate) const EVENTS: &str = "OBSERVER-EVENTS.jsonl";
pub(crate) const HEARTBEAT: &str = "OBSERVER-HEARTBEAT.json";
pub(crate) const GATES: &str = "p3a-gate-results.json";

pub(crate) fn referee() -> PathBuf {
    crate::util::referee_bin().to_path_buf()
}

/// A materialised fixture build in its own temporary root: `root/build`.
#[track_caller]
pub(crate) fn build(name: &str) -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().expect("tempdir");
    // A match, not a closure: the panic then points at the caller's line.
    match Build::named(name).and_then(|b| b.materialise(root.path())) {
        Ok(dir) => (root, dir),
        Err(e) => panic!("cannot materialise `{name}`: {e}"),
    }
}

pub(crate) fn gates_text() -> String {
    fs::read_to_string(fixtures_dir().join("content/gate-results.json")).expect("gate results")
}

/// The fixture's gate results with the first `n` entries' source made manual (OBS-27 FAILs).
pub(crate) fn manual_gates(n: usize) -> String {
    gates_text().replacen("\"source\": \"gate-runner\"", "\"source\": \"manual\"", n)
}

/// A running `referee watch`, killed if the test fails before it ends.
pub(crate) struct Watch {
    child: Option<Child>,
    pub(crate) out: PathBuf,
    pub(crate) err: PathBuf,
}

impl Watch {
    pub(crate) fn start(dir: &Path, logs: &Path, args: &[&str]) -> Watch {
        Watch::spawn(Some(dir), logs, args)
    }

    /// `referee watch --root ROOT`.
    pub(crate) fn start_root(root: &Path, logs: &Path, args: &[&str]) -> Watch {
        let mut all = vec!["--root", root.to_str().expect("a UTF-8 root")];
        all.extend_from_slice(args);
        Watch::spawn(None, logs, &all)
    }

    fn spawn(dir: Option<&Path>, logs: &Path, args: &[&str]) -> Watch {
        Watch::spawn_beating(dir, logs, "0.5", args)
    }

    /// [`Watch::start`] with another heartbeat interval than the tests' 0.5 s.
    pub(crate) fn start_beating(dir: &Path, logs: &Path, heartbeat: &str, args: &[&str]) -> Watch {
        Watch::spawn_beating(Some(dir), logs, heartbeat, args)
    }

    fn spawn_beating(dir: Option<&Path>, logs: &Path, heartbeat: &str, args: &[&str]) -> Watch {
        let n = fs::read_dir(logs).map(|r| r.count()).unwrap_or(0);
        let out = logs.join(format!("watch-{n}.out"));
        let err = logs.join(format!("watch-{n}.err"));
        // A test that gives its own heartbeat (a slower one, for a loaded machine) keeps it.
        let beat = (!args.contains(&"--heartbeat")).then_some(["--heartbeat", heartbeat]);
        let child = TestCommand::new()
            .arg("watch")
            .args(dir)
            .args(beat.into_iter().flatten())
            .args(args)
            .spawn(
                fs::File::create(&out).expect("stdout file"),
                fs::File::create(&err).expect("stderr file"),
            );
        Watch {
            child: Some(child),
            out,
            err,
        }
    }

    pub(crate) fn pid(&self) -> i32 {
        self.child.as_ref().map_or(0, |c| c.id() as i32)
    }

    /// What the daemon printed so far (for failure messages).
    pub(crate) fn output(&self) -> String {
        format!(
            "--- stdout ---\n{}\n--- stderr ---\n{}",
            fs::read_to_string(&self.out).unwrap_or_default(),
            fs::read_to_string(&self.err).unwrap_or_default()
        )
    }

    #[track_caller]
    pub(crate) fn signal(&self, sig: libc::c_int) {
        // SAFETY: sending a signal to our own child process.
        let rc = unsafe { libc::kill(self.pid(), sig) };
        assert_eq!(rc, 0, "cannot signal the referee");
    }

    /// Waits for the daemon to exit on its own; a timeout points at the caller's line.
    #[track_caller]
    pub(crate) fn wait(&mut self, within: Duration) -> ExitStatus {
        let deadline = Instant::now() + within;
        let child = self.child.as_mut().expect("already waited");
        loop {
            if let Some(status) = child.try_wait().expect("try_wait") {
                self.child = None;
                return status;
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                self.child = None;
                panic!(
                    "referee watch did not exit within {within:?}\n{}",
                    self.output()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    pub(crate) fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            c.kill().expect("kill -9");
            c.wait().expect("reap");
        }
    }

    /// Waits until `cond` holds (at most [`WAIT`]); a failure points at the caller's line.
    #[track_caller]
    pub(crate) fn until(&self, what: &str, cond: impl FnMut() -> bool) {
        wait_until(WAIT, what, cond, || self.output());
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Polls `cond` until it holds; fails the test with `what` and `context()` at the deadline, at
/// the caller's line.
#[track_caller]
pub(crate) fn wait_until(
    within: Duration,
    what: &str,
    mut cond: impl FnMut() -> bool,
    context: impl Fn() -> String,
) {
    let deadline = Instant::now() + within;
    while !cond() {
        assert!(
            Instant::now() < deadline,
            "timed out after {within:?} waiting until {what}\n{}",
            context()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

pub(crate) fn events(dir: &Path) -> Vec<Value> {
    fs::read_to_string(dir.join(EVENTS))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

pub(crate) fn payloads(dir: &Path, event: &str) -> Vec<Value> {
    events(dir)
        .into_iter()
        .map(|e| e["payload"].clone())
        .filter(|p| p["event"] == event)
        .collect()
}

pub(crate) fn count(dir: &Path, event: &str, check: &str) -> usize {
    payloads(dir, event)
        .iter()
        .filter(|p| check.is_empty() || p["check"] == check)
        .count()
}

pub(crate) fn read(path: &Path) -> String {
    fs::read_to_string(path).unwrap_or_default()
}

pub(crate) fn exit_code(s: ExitStatus) -> i32 {
    s.code()
        .unwrap_or_else(|| panic!("referee died of a signal: {s:?}"))
}

fn mv(from: &Path, to: &Path, rel: &str) {
    fs::rename(from.join(rel), to.join(rel)).unwrap_or_else(|e| panic!("move {rel}: {e}"));
}

/// Runs a short command (`status`, `verify`) with a timeout.
pub(crate) use crate::util::run;

pub(crate) fn status(dir: &Path, live: bool) -> Output {
    let d = dir.to_str().expect("utf-8 path");
    if live {
        run(&["status", d, "--require-live"])
    } else {
        run(&["status", d])
    }
}

/// `pass:check → status` from the `end` event of the last run.
pub(crate) fn final_statuses(dir: &Path) -> BTreeMap<String, String> {
    let end = payloads(dir, "end").pop().expect("an end event");
    end["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            (
                format!(
                    "{}:{}",
                    r["pass"].as_str().unwrap_or(""),
                    r["check"].as_str().unwrap_or("")
                ),
                r["status"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// `pass:check → status` from `referee verify --format json`.
pub(crate) fn verify_statuses(dir: &Path, final_: bool) -> BTreeMap<String, String> {
    let d = dir.to_str().expect("utf-8 path");
    let mut args = vec!["verify", d, "--format", "json"];
    if final_ {
        args.push("--final");
    }
    let Output {
        stdout: out,
        stderr: err,
        ..
    } = run(&args);
    let doc: Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("verify json: {e}\n{err}"));
    doc["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            (
                format!(
                    "{}:{}",
                    r["pass"].as_str().unwrap_or(""),
                    r["check"].as_str().unwrap_or("")
                ),
                r["status"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

/// A pre-audit build (passes 0–2 ran, pass 2 not due) with a running daemon on it.
pub(crate) fn watching(args: &[&str]) -> (tempfile::TempDir, PathBuf, Watch) {
    let (root, dir) = build("pre-audit");
    let w = Watch::start(&dir, root.path(), args);
    w.until("pass 2 ran", || dir.join("OBSERVER-PASS-2.md").exists());
    (root, dir, w)
}

pub(crate) fn raise_stop(dir: &Path, w: &Watch) {
    fs::write(dir.join(GATES), manual_gates(1)).expect("write gates");
    w.until("STOP raised for OBS-27", || {
        read(&dir.join(STOP)).contains("OBS-27")
    });
}

// ---- tests ------------------------------------------------------------------------------------

/// A pipeline run replayed file by file: each pass runs on its trigger or at its deadline, pass 2
/// becomes due when an auditor report appears, and the daemon finishes by itself when the weaver
/// says SHIP, with the same verdicts as `verify --final` on the finished directory.
#[test]
fn passes_run_on_trigger_and_deadline_and_the_run_ends_at_completion() {
    let (stage_root, stage) = build("pre-audit");
    let (clean_root, clean) = build("clean");
    let dir = stage_root.path().join("watched");
    fs::create_dir(&dir).expect("mkdir");
    let mut w = Watch::start(&dir, clean_root.path(), &[]);
    w.until("the first heartbeat", || dir.join(HEARTBEAT).exists());

    // Phase 0 was skipped: the brief is pass 0's deadline and pass 1's trigger.
    mv(&stage, &dir, "p1-execution-brief.md");
    w.until("passes 0 and 1 ran", || {
        dir.join("OBSERVER-PASS-0.md").exists() && dir.join("OBSERVER-PASS-1.md").exists()
    });
    assert!(read(&dir.join("OBSERVER-PASS-0.md")).contains("(on its Deadline)"));
    assert!(read(&dir.join("OBSERVER-PASS-1.md")).contains("(on its Trigger)"));
    mv(&stage, &dir, "EXECUTION-TRACKER.md");

    for rel in [
        "p0-content-map.md",
        "p2-builder-prompt.md",
        "p2-output.html",
        "screenshots",
        GATES,
    ] {
        mv(&stage, &dir, rel);
    }
    w.until("pass 2 ran", || dir.join("OBSERVER-PASS-2.md").exists());
    let run2 = payloads(&dir, "pass_run")
        .into_iter()
        .find(|p| p["pass"] == "2")
        .expect("pass_run 2");
    assert_eq!(run2["reason"], "trigger");
    assert_eq!(
        run2["results"]["OBS-03"], "WAITING",
        "pass 2 is not due yet"
    );

    // The first auditor report is pass 2's deadline: OBS-03 is judged now.
    mv(&clean, &dir, "p3b-pa-auditor-A.md");
    w.until("OBS-03 judged when pass 2 became due", || {
        payloads(&dir, "result_changed")
            .iter()
            .any(|p| p["check"] == "OBS-03" && p["pass"] == "2" && p["to"] == "PASS")
    });
    assert!(!dir.join("OBSERVER-PASS-3.md").exists());

    for l in "BCDEFGHI".chars() {
        mv(&clean, &dir, &format!("p3b-pa-auditor-{l}.md"));
    }
    mv(&clean, &dir, "EXECUTION-TRACKER.md");
    mv(&clean, &dir, "p3b-pa-integrative.md");
    w.until("pass 3 ran", || dir.join("OBSERVER-PASS-3.md").exists());
    mv(&clean, &dir, "p3c-weaver.md");

    let code = exit_code(w.wait(WAIT));
    assert_eq!(code, 0, "{}", w.output());
    let report = read(&dir.join("OBSERVER-REPORT.md"));
    assert!(
        report.contains("the pipeline completed (VERDICT: SHIP)"),
        "{report}"
    );
    assert!(!dir.join(STOP).exists());
    assert!(read(&dir.join("OBSERVER-PASS-4.md")).contains("(on its Trigger)"));
    let hb: Value = serde_json::from_str(&read(&dir.join(HEARTBEAT))).expect("heartbeat json");
    assert_eq!(hb["state"], "finished");
    assert!(read(&w.out).contains("report: "));
    assert_eq!(final_statuses(&dir), verify_statuses(&dir, true));
}

fn stop_raised_resolved_and_tamper_restored(mode: &[&str]) {
    let (_root, dir, mut w) = watching(mode);
    raise_stop(&dir, &w);
    let stop = read(&dir.join(STOP));
    assert!(stop.contains("**Check:** OBS-27"), "{stop}");
    assert!(stop.contains("**Severity:** BLOCKING"));

    // Someone deletes the STOP while the failure stands: it comes back, and it is recorded.
    fs::remove_file(dir.join(STOP)).expect("delete STOP");
    w.until("the STOP file is restored", || dir.join(STOP).exists());
    w.until("a tamper event", || count(&dir, "tamper", "") == 1);
    assert_eq!(read(&dir.join(STOP)), stop);

    // The fix resolves it.
    fs::write(dir.join(GATES), gates_text()).expect("fix gates");
    w.until("the STOP file is removed", || !dir.join(STOP).exists());
    w.until("the pass file notes the resolution", || {
        read(&dir.join("OBSERVER-PASS-2.md")).contains("OBS-27: RESOLVED after STOP.")
    });

    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
    let report = read(&dir.join("OBSERVER-REPORT.md"));
    assert!(report.contains("| tamper |"), "{report}");
    assert!(report.contains("SIGTERM received"), "{report}");
    assert!(
        report.contains("| OBS-27 |") && report.contains("Yes ("),
        "{report}"
    );
    let out = read(&w.out);
    assert!(
        out.contains("STOP raised: OBS-27") && out.contains("STOP resolved: OBS-27"),
        "{out}"
    );
}

/// OBS-27 (a manual gate source) raises STOP; deleting the STOP restores it (tamper, in the
/// report); the fix removes it and the pass file says `OBS-27: RESOLVED after STOP.`
#[test]
fn stop_raised_tamper_restored_and_resolved_by_the_fix() {
    stop_raised_resolved_and_tamper_restored(&[]);
}

/// The same scenario with `--poll` instead of inotify.
#[test]
fn stop_raised_tamper_restored_and_resolved_in_poll_mode() {
    stop_raised_resolved_and_tamper_restored(&["--poll=50"]);
}

/// A STOP file created by someone else while nothing fails is removed and recorded.
#[test]
fn a_foreign_stop_file_is_removed() {
    let (_root, dir, mut w) = watching(&[]);
    fs::write(dir.join(STOP), "# fake stop\n").expect("write fake STOP");
    w.until("the fake STOP is removed", || !dir.join(STOP).exists());
    w.until("a tamper event", || count(&dir, "tamper", "") == 1);
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
}

/// kill -9 mid-run, then a restart on the same directory resumes from OBSERVER-EVENTS.jsonl: the
/// STOP stands, history is kept (the fix is `RESOLVED after STOP`), and the final verdicts match
/// `verify`. A different protocol is refused without `--fresh`; with it the old log is kept aside.
#[test]
fn kill_9_and_restart_resumes_and_another_protocol_needs_fresh() {
    let (root, dir, mut w) = watching(&[]);
    raise_stop(&dir, &w);
    w.until("stop_raised is logged", || {
        count(&dir, "stop_raised", "OBS-27") == 1
    });
    w.kill9();
    assert_eq!(status(&dir, true).code, 1, "the STOP outlives the referee");
    fs::remove_file(dir.join(STOP)).expect("remove STOP");
    // The copy is gone, the referee's own STOP is not.
    assert_eq!(
        status(&dir, true).code,
        1,
        "the state directory's STOP stands"
    );
    let state = crate::code_change::default_state(&dir);
    fs::remove_file(state.join(STOP)).expect("remove the state directory's STOP");
    let Output {
        code, stderr: err, ..
    } = status(&dir, true);
    assert_eq!(code, 3, "a killed referee is not live: {err}");
    assert!(
        err.contains("not running") || err.contains("stale"),
        "{err}"
    );

    let mut w = Watch::start(&dir, root.path(), &[]);
    w.until("a restart event", || count(&dir, "restart", "") == 1);
    w.until("the STOP is rewritten (the failure still stands)", || {
        read(&dir.join(STOP)).contains("OBS-27")
    });
    assert_eq!(
        count(&dir, "stop_raised", "OBS-27"),
        1,
        "no second STOP raised"
    );
    fs::write(dir.join(GATES), gates_text()).expect("fix gates");
    w.until("the STOP file is removed", || !dir.join(STOP).exists());
    w.until("the pass file notes the resolution", || {
        read(&dir.join("OBSERVER-PASS-2.md")).contains("OBS-27: RESOLVED after STOP.")
    });
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
    let report = read(&dir.join("OBSERVER-REPORT.md"));
    assert!(
        report.contains("OBS-27: STOP raised"),
        "history from before the kill: {report}"
    );
    assert!(report.contains("| restart |"), "{report}");
    assert_eq!(final_statuses(&dir), verify_statuses(&dir, false));

    // Another protocol (one added comment changes its hash): refused, naming both hashes.
    let proto = root.path().join("edited.toml");
    let mut text =
        fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("protocols/d10.toml"))
            .expect("d10.toml");
    text.push_str("\n# edited\n");
    fs::write(&proto, text).expect("write protocol");
    let d = dir.to_str().expect("utf-8");
    let p = proto.to_str().expect("utf-8");
    let Output {
        code, stderr: err, ..
    } = run(&["watch", d, "--protocol", p, "--timeout", "1s", "--quiet"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--fresh") && err.matches("sha256 `").count() == 2,
        "{err}"
    );
    let Output {
        code, stderr: err, ..
    } = run(&[
        "watch",
        d,
        "--protocol",
        p,
        "--timeout",
        "1s",
        "--quiet",
        "--fresh",
    ]);
    assert_eq!(code, 0, "{err}");
    // In the state directory, where the log is.
    let rotated: Vec<String> = fs::read_dir(&state)
        .expect("read dir")
        .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
        .filter(|n| n.starts_with("OBSERVER-EVENTS-") && n.ends_with(".jsonl"))
        .collect();
    assert_eq!(rotated.len(), 1, "the old log is kept aside");
    assert_eq!(count(&dir, "start", ""), 1, "the new log starts afresh");
    assert_eq!(count(&dir, "restart", ""), 0);
}

/// Two changes that leave OBS-27 failing are two fix attempts; with `--max-fix-attempts 2` the
/// STOP then says `ESCALATED: human review required`, once.
#[test]
fn escalates_after_max_fix_attempts() {
    let (_root, dir, mut w) = watching(&["--max-fix-attempts", "2"]);
    raise_stop(&dir, &w);
    fs::write(dir.join(GATES), manual_gates(2)).expect("attempt 1");
    w.until("fix attempt 1", || {
        count(&dir, "fix_attempt", "OBS-27") == 1
    });
    assert!(!read(&dir.join(STOP)).contains("ESCALATED"));
    fs::write(dir.join(GATES), manual_gates(3)).expect("attempt 2");
    w.until("escalated", || {
        read(&dir.join(STOP)).contains("ESCALATED: human review required")
    });
    assert!(read(&dir.join(STOP)).contains("2 fix attempts"));
    // The STOP goes first; the events that decided it follow.
    w.until("the escalation is logged", || {
        count(&dir, "escalation", "OBS-27") == 1
    });
    w.signal(libc::SIGTERM);
    assert_eq!(
        exit_code(w.wait(WAIT)),
        1,
        "the failure stands: {}",
        w.output()
    );
    assert!(read(&dir.join("OBSERVER-REPORT.md")).contains("| escalation |"));
}

/// An attempt whose evidence is identical to the previous one (the same bad file written again)
/// is no progress and escalates at once.
#[test]
fn escalates_on_identical_evidence() {
    let (_root, dir, mut w) = watching(&[]);
    raise_stop(&dir, &w);
    fs::write(dir.join(GATES), manual_gates(1)).expect("same bytes again");
    w.until("escalated", || {
        read(&dir.join(STOP)).contains("ESCALATED: human review required")
    });
    assert!(read(&dir.join(STOP)).contains("no progress"));
    // The STOP goes first; the events that decided it follow.
    w.until("the fix attempt is logged", || {
        count(&dir, "escalation", "OBS-27") == 1
    });
    let attempt = payloads(&dir, "fix_attempt").pop().expect("a fix attempt");
    assert_eq!(attempt["identical"], true);
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
}

/// Invalid JSON written and completed within the settle window is never judged: OBS-24 goes from
/// WAITING to PASS, with no FAIL and no STOP in between. The window is ten minutes, so however
/// slow the machine the whole file comes within it (a PASS is never held: no wait for the window);
/// the hold itself, and its end, are timed on a manual clock in the daemon's session tests.
#[test]
fn a_half_written_file_is_not_judged() {
    let (root, dir) = build("pre-audit");
    fs::remove_file(dir.join(GATES)).expect("no gate results yet");
    let mut w = Watch::start(&dir, root.path(), &["--settle", "600000"]);
    w.until("pass 2 ran", || dir.join("OBSERVER-PASS-2.md").exists());
    let full = gates_text();
    let half = &full[..full.len() / 2];
    fs::write(dir.join(GATES), half).expect("half");
    // The writer is still busy: the half file stays on disk a moment so the daemon may see it.
    // Not a race: with a ten-minute window, a longer pause (a loaded machine) changes nothing.
    std::thread::sleep(Duration::from_millis(50));
    fs::write(dir.join(GATES), &full).expect("whole");
    w.until("OBS-24 passes", || {
        payloads(&dir, "result_changed")
            .iter()
            .any(|p| p["check"] == "OBS-24" && p["pass"] == "2" && p["to"] == "PASS")
    });
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
    let judged: Vec<Value> = payloads(&dir, "result_changed")
        .into_iter()
        .filter(|p| p["to"] == "FAIL" || p["to"] == "INCONCLUSIVE")
        .collect();
    assert!(judged.is_empty(), "judged half-written: {judged:?}");
    assert_eq!(count(&dir, "stop_raised", ""), 0);
}

/// Replaces `rel` the way atomic writers do: the contents go to a temp file beside it, which is
/// then renamed into place.
fn rename_into_place(dir: &Path, rel: &str, contents: &str) {
    let tmp = dir.join(format!(".{rel}.tmp"));
    fs::write(&tmp, contents).expect("write the temp file");
    fs::rename(&tmp, dir.join(rel)).expect("rename into place");
}

/// A file renamed into place is complete: a violation that arrives that way raises STOP at once,
/// not after the settle window, and its temp file (never an input) holds nothing. The fix, renamed
/// in the same way, lifts it at once too. The window is ten minutes, so a wait that ends within
/// [`WAIT`] shows the rename was not held for it, without timing anything.
#[test]
fn a_violation_renamed_into_place_is_judged_at_once() {
    let (_root, dir, mut w) = watching(&["--settle", "600000"]);
    rename_into_place(&dir, GATES, &manual_gates(1));
    w.until(
        "STOP raised for OBS-27 (not held for the 10 min settle window)",
        || read(&dir.join(STOP)).contains("OBS-27"),
    );
    rename_into_place(&dir, GATES, &gates_text());
    w.until(
        "the STOP file is removed (not held for the settle window)",
        || !dir.join(STOP).exists(),
    );
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
}

/// A file that is none of a failing check's inputs is no fix attempt: writing notes beside the
/// build while OBS-27 fails neither counts as an attempt nor escalates (as "no progress").
#[test]
fn an_unrelated_file_is_not_a_fix_attempt() {
    let (_root, dir, mut w) = watching(&[]);
    raise_stop(&dir, &w);
    fs::write(dir.join("notes.md"), "notes of the orchestrator\n").expect("write notes");
    // A fix attempt is counted once its files have settled (300 ms); two heartbeats later
    // (0.5 s each) the daemon has long decided.
    let beat = || read(&dir.join(HEARTBEAT));
    for _ in 0..2 {
        let before = beat();
        w.until("the next heartbeat", || beat() != before);
    }
    assert_eq!(count(&dir, "fix_attempt", "OBS-27"), 0, "{}", w.output());
    assert_eq!(count(&dir, "escalation", "OBS-27"), 0, "{}", w.output());
    // A change to its input still is one.
    fs::write(dir.join(GATES), manual_gates(2)).expect("attempt 1");
    w.until("fix attempt 1", || {
        count(&dir, "fix_attempt", "OBS-27") == 1
    });
    assert_eq!(count(&dir, "escalation", "OBS-27"), 0, "{}", w.output());
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
}

/// SIGTERM: the report is written, says why and that it judged as-is; a standing failure keeps its
/// STOP and makes the exit status 1.
#[test]
fn sigterm_writes_the_report_with_the_reason_and_the_exit_status() {
    let (_root, dir, mut w) = watching(&[]);
    raise_stop(&dir, &w);
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    let report = read(&dir.join("OBSERVER-REPORT.md"));
    assert!(
        report.contains("SIGTERM received; judged as the directory stands (not final"),
        "{report}"
    );
    assert!(
        report.contains("| OBS-27 |") && report.contains("| No |"),
        "{report}"
    );
    assert!(dir.join(STOP).exists(), "a standing failure keeps its STOP");
    let end = payloads(&dir, "end").pop().expect("end event");
    assert_eq!(end["reason"], "signal");
    assert_eq!(end["exit_code"], 1);
}

/// `--exit-with PID`: when the pipeline's process exits, the run is judged as final (missing
/// artifacts now fail) and the report says so.
#[test]
fn exit_with_pid_judges_the_run_as_final() {
    let (root, dir) = build("in-progress");
    // The pipeline ends once pass 2 ran (killed), not after a guessed time.
    let mut pipeline = Command::new("sleep")
        .arg("600")
        .spawn()
        .expect("spawn sleep");
    let pid = pipeline.id().to_string();
    let mut w = Watch::start(&dir, root.path(), &["--exit-with", &pid]);
    w.until("pass 2 ran", || dir.join("OBSERVER-PASS-2.md").exists());
    pipeline.kill().expect("end the pipeline");
    pipeline.wait().expect("sleep exits");
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    let report = read(&dir.join("OBSERVER-REPORT.md"));
    assert!(
        report.contains(&format!("(pid {pid}) exited; judged as final")),
        "{report}"
    );
    assert!(
        read(&dir.join(STOP)).contains("OBS-24"),
        "gate results never came"
    );
    assert_eq!(final_statuses(&dir), verify_statuses(&dir, true));
}

/// `referee status`: 0 `go`, 1 with the STOP printed, 3 without a live referee.
#[test]
fn status_exit_codes() {
    let (root, dir) = build("pre-audit");
    let Output {
        code, stdout: out, ..
    } = status(&dir, false);
    assert_eq!((code, out.as_str()), (0, "go\n"));
    let Output {
        code, stderr: err, ..
    } = status(&dir, true);
    assert_eq!(code, 3);
    assert!(err.contains("no referee has run"), "{err}");

    let mut w = Watch::start(&dir, root.path(), &["--timeout", "8s"]);
    w.until("the first heartbeat", || dir.join(HEARTBEAT).exists());
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = status(&dir, true);
    assert_eq!((code, out.as_str()), (0, "go\n"), "{err}");
    // One referee per directory.
    let d = dir.to_str().expect("utf-8");
    let Output {
        code, stderr: err, ..
    } = run(&["watch", d, "--timeout", "1s", "--quiet"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("another referee"), "{err}");
    raise_stop(&dir, &w);
    let Output {
        code, stdout: out, ..
    } = status(&dir, true);
    assert_eq!(code, 1);
    assert!(out.contains("OBS-27"), "{out}");

    fs::write(dir.join(GATES), gates_text()).expect("fix gates");
    w.until("the STOP file is removed", || !dir.join(STOP).exists());
    w.signal(libc::SIGINT);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
    assert!(read(&dir.join("OBSERVER-REPORT.md")).contains("SIGINT received"));
    let Output {
        code, stderr: err, ..
    } = status(&dir, true);
    assert_eq!(code, 3, "a finished referee is not live");
    assert!(err.contains("finished"), "{err}");
    assert_eq!(status(&dir, false).code, 0);
}

/// The protocol is loaded once: an edit to its file mid-run is ignored and recorded.
#[test]
fn a_protocol_file_edited_mid_run_is_ignored_and_recorded() {
    let (root, dir) = build("pre-audit");
    let proto = root.path().join("d10.toml");
    let text = fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("protocols/d10.toml"))
        .expect("d10.toml");
    fs::write(&proto, &text).expect("copy protocol");
    let p = proto.to_str().expect("utf-8");
    let mut w = Watch::start(&dir, root.path(), &["--protocol", p]);
    w.until("pass 2 ran", || dir.join("OBSERVER-PASS-2.md").exists());
    fs::write(&proto, format!("{text}\n# tightened mid-run\n")).expect("edit protocol");
    w.until("a protocol_edit event", || {
        count(&dir, "protocol_edit", "") == 1
    });
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
    assert!(read(&dir.join("OBSERVER-REPORT.md")).contains("| protocol edit |"));
}

/// The referee's own fault (here: a directory squats on `OBSERVER-PASS-2.md`, so the pass file
/// cannot be written): `--on-fault stop` names it in a STOP block and exits 2; `continue` records
/// it and carries on.
#[test]
fn own_faults_stop_or_continue_by_policy() {
    for (policy, exit) in [("stop", 2), ("continue", 0)] {
        let (root, dir) = build("pre-audit");
        fs::create_dir(dir.join("OBSERVER-PASS-2.md")).expect("squat");
        let mut w = Watch::start(&dir, root.path(), &["--on-fault", policy]);
        w.until("a fault event", || count(&dir, "fault", "") >= 1);
        if policy == "stop" {
            w.until("the STOP names the fault", || {
                read(&dir.join(STOP)).contains("**Check:** REFEREE-FAULT")
            });
        }
        w.signal(libc::SIGTERM);
        assert_eq!(
            exit_code(w.wait(WAIT)),
            exit,
            "--on-fault {policy}: {}",
            w.output()
        );
        assert_eq!(dir.join(STOP).exists(), policy == "stop");
        assert!(read(&dir.join("OBSERVER-REPORT.md")).contains("| fault |"));
    }
}

// Attacks on the referee's own files (a child module: it shares the helpers above).
#[path = "attacks.rs"]
mod attacks;

/// The judgments' barrier keeps its cookies in a folder of its own under the temporary folder
/// (`TMPDIR`): made for this user alone, and removed when the referee ends (it was left
/// behind, one per run, until the loop removed it itself).
#[test]
fn the_barrier_folder_is_private_and_gone_when_the_referee_ends() {
    use std::os::unix::fs::PermissionsExt as _;
    use std::process::Stdio;
    let tmp = tempfile::tempdir().expect("tmp");
    let (build, temp) = (tmp.path().join("build"), tmp.path().join("temp"));
    fs::create_dir(&build).expect("mkdir");
    fs::create_dir(&temp).expect("mkdir");
    let cookies = || -> Vec<PathBuf> {
        fs::read_dir(&temp)
            .expect("list")
            .flatten()
            .filter(|e| {
                e.file_name()
                    .to_string_lossy()
                    .starts_with(".referee-cookies-")
            })
            .map(|e| e.path())
            .collect()
    };
    let mut child = TestCommand::new()
        .arg("watch")
        .arg(&build)
        .args(["--heartbeat", "0.5"])
        .env("TMPDIR", &temp)
        .spawn(Stdio::null(), Stdio::null());
    let until = Instant::now() + Duration::from_secs(10);
    while cookies().is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let made = cookies();
    assert_eq!(made.len(), 1, "one cookie folder while it runs: {made:?}");
    let mode = fs::metadata(&made[0]).expect("stat").permissions().mode() & 0o777;
    assert_eq!(mode, 0o700, "for this user alone");
    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    assert_eq!(child.wait().expect("wait").code(), Some(0));
    assert!(cookies().is_empty(), "left behind: {:?}", cookies());

    // Killed with SIGKILL, a referee cannot remove its folder: the next one started does.
    let spawn = || {
        TestCommand::new()
            .arg("watch")
            .arg(&build)
            .args(["--heartbeat", "0.5"])
            .env("TMPDIR", &temp)
            .spawn(Stdio::null(), Stdio::null())
    };
    let mut killed = spawn();
    let named = format!(".referee-cookies-{}-", killed.id());
    let until = Instant::now() + Duration::from_secs(10);
    while cookies().is_empty() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    let left = cookies();
    assert_eq!(left.len(), 1, "{left:?}");
    assert!(
        left[0]
            .file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(&named)),
        "named with its pid: {left:?}"
    );
    killed.kill().expect("SIGKILL");
    killed.wait().expect("wait");
    assert!(left[0].exists(), "SIGKILL leaves it behind");
    let mut next = spawn();
    let until = Instant::now() + Duration::from_secs(10);
    while left[0].exists() && Instant::now() < until {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!left[0].exists(), "the next referee removes it");
    // SAFETY: signalling the child we spawned.
    unsafe { libc::kill(next.id() as i32, libc::SIGTERM) };
    assert_eq!(next.wait().expect("wait").code(), Some(0));
    assert!(cookies().is_empty(), "left behind: {:?}", cookies());
}
