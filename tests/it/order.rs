//! The order the referee watched is evidence (issue 16 §5): a time the watched side writes (an
//! mtime, a tracker timestamp) is a claim, and a claim that contradicts the order in which the
//! referee saw things written does not lift a STOP. Each attack is made for real against a live
//! `watch`: an auditor report rewritten after the integrative report and its mtime set back
//! (OBS-20); the experiential scan filled in, back-dated, after the auditors were spawned
//! (OBS-01). `verify` with the referee's state directory agrees; without one it has only the
//! claims. An honest order still passes.

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use crate::builder::fixtures_dir;
use crate::util::Output;
use crate::watch::{exit_code, read, run, status, Watch, STOP, WAIT};

const INTEGRATIVE: &str = "p3b-pa-integrative.md";
const TRACKER: &str = "EXECUTION-TRACKER.md";

/// Writes `rel` whole, as a writer's atomic replace (so nothing is held as half-written).
fn put(dir: &Path, rel: &str, text: &str) {
    let tmp = dir.join(format!(".{rel}.tmp"));
    fs::write(&tmp, text).expect("write");
    fs::rename(&tmp, dir.join(rel)).expect("rename");
}

/// The order the referee saw counts only between writes at least `PHASE_GAP` apart (closer ones
/// are one burst, a copy or an editor's save): waits until that long has passed since `since`
/// (a moment after the referee had seen the earlier write), so the next write is a later phase.
fn a_phase_later(since: Instant) {
    let gap = Duration::from_millis(
        referee::checks::PHASE_GAP
            .num_milliseconds()
            .try_into()
            .expect("a positive gap"),
    );
    crate::watch::wait_until(
        gap + Duration::from_secs(1),
        "a phase's gap has passed",
        || since.elapsed() > gap,
        String::new,
    );
}

fn content(name: &str) -> String {
    fs::read_to_string(fixtures_dir().join("content").join(name)).expect("fixture content")
}

fn set_mtime(path: &Path, t: SystemTime) {
    filetime::set_file_mtime(path, filetime::FileTime::from_system_time(t)).expect("set mtime");
}

/// A check's status and evidence in `verify --format json` (`extra`: more arguments).
fn verify_check(dir: &Path, check: &str, extra: &[&str]) -> (String, String) {
    let d = dir.to_str().expect("utf-8");
    let mut args = vec!["verify", d, "--format", "json"];
    args.extend_from_slice(extra);
    let Output {
        stdout: out,
        stderr: err,
        ..
    } = run(&args);
    let doc: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("json: {e}\n{err}"));
    let r = doc["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|r| r["check"] == check && r["pass"] != "R")
        .unwrap_or_else(|| panic!("no {check} in {out}"))
        .clone();
    (
        r["status"].as_str().unwrap_or_default().to_string(),
        r["evidence"].to_string(),
    )
}

fn headline(dir: &Path) -> String {
    read(&dir.join("OBSERVER-REPORT.md"))
        .lines()
        .find(|l| l.starts_with("**"))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn an_auditor_mtime_set_back_after_the_stop_does_not_lift_it() {
    let (tmp, dir) = crate::watch::build("audit-done");
    let w = Watch::start(&dir, tmp.path(), &[]);
    w.until("the referee is live", || status(&dir, true).code == 0);
    put(&dir, INTEGRATIVE, &content("integrative.md"));
    w.until("pass 3 ran on the integrative report", || {
        dir.join("OBSERVER-PASS-3.md").exists()
    });
    // `--sync`: answered once the referee has judged (and so seen) the integrative report.
    let d = dir.to_str().expect("utf-8");
    assert_eq!(
        run(&["status", d, "--sync", "--require-live"]).code,
        0,
        "in order so far\n{}",
        w.output()
    );
    let judged = Instant::now();
    // Auditor A rewritten a phase after the integrative report was written: OBS-20 FAILs.
    let a = dir.join("p3b-pa-auditor-A.md");
    let rewritten = format!("{}\nAddendum: I see the footer sits tight.\n", read(&a));
    a_phase_later(judged);
    put(&dir, "p3b-pa-auditor-A.md", &rewritten);
    w.until("the STOP stands for OBS-20", || {
        read(&dir.join(STOP)).contains("OBS-20")
    });
    // Its mtime set back before the integrative report's: the claims are in order again.
    let integrative_at = fs::metadata(dir.join(INTEGRATIVE))
        .and_then(|m| m.modified())
        .expect("mtime");
    set_mtime(&a, integrative_at - Duration::from_secs(600));
    w.until("the referee judged the new mtime and kept the STOP", || {
        read(&dir.join(STOP)).contains("seen in the other order")
    });
    assert!(read(&dir.join(STOP)).contains("OBS-20"), "{}", w.output());
    assert_eq!(status(&dir, true).code, 1, "{}", w.output());
    // `verify` reads the referee's record: the same FAIL and why.
    let (s, evidence) = verify_check(&dir, "OBS-20", &[]);
    assert_eq!(s, "FAIL", "{evidence}");
    assert!(evidence.contains("seen in the other order"), "{evidence}");
    // Without it (another state directory), only the claims: they are in order.
    let elsewhere = tmp.path().join("no-memory");
    let (s, evidence) = verify_check(
        &dir,
        "OBS-20",
        &["--state-dir", elsewhere.to_str().expect("utf-8")],
    );
    assert_eq!(s, "PASS", "{evidence}");
    assert!(!elsewhere.exists(), "verify made no state directory");
    w.signal(libc::SIGTERM);
    let mut w = w;
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    assert!(headline(&dir).starts_with("**FAIL"), "{}", headline(&dir));
}

/// `audit-done` with the experiential scan not recorded (value and time empty).
fn scan_missing() -> (tempfile::TempDir, std::path::PathBuf) {
    crate::formats::build(
        "base = \"audit-done\"\n[[field]]\nname = \"EXPERIENTIAL_SCAN\"\nvalue = \"___\"\ntime = \"___\"\n",
    )
}

/// The tracker with its `EXPERIENTIAL_SCAN` row as the clean run recorded it (10:49, before
/// the auditors' Spawned times from 10:50:10).
fn scan_filled(dir: &Path) -> String {
    let row = content("tracker.md")
        .lines()
        .find(|l| l.starts_with("| EXPERIENTIAL_SCAN |"))
        .expect("the clean scan row")
        .to_string();
    let text = read(&dir.join(TRACKER));
    let mut out: Vec<String> = text.lines().map(str::to_string).collect();
    let at = out
        .iter()
        .position(|l| l.starts_with("| EXPERIENTIAL_SCAN |"))
        .expect("a scan row");
    out[at] = row;
    out.join("\n") + "\n"
}

#[test]
fn a_back_dated_scan_filled_in_after_the_auditors_does_not_lift_the_stop() {
    let (tmp, dir) = scan_missing();
    let mut w = Watch::start(&dir, tmp.path(), &[]);
    w.until("the STOP stands for OBS-01 (no scan recorded)", || {
        read(&dir.join(STOP)).contains("OBS-01")
    });
    a_phase_later(Instant::now());
    put(&dir, TRACKER, &scan_filled(&dir));
    w.until(
        "the referee judged the back-dated scan and kept the STOP",
        || read(&dir.join(STOP)).contains("seen in the other order"),
    );
    assert_eq!(status(&dir, true).code, 1, "{}", w.output());
    let (s, evidence) = verify_check(&dir, "OBS-01", &[]);
    assert_eq!(s, "FAIL", "{evidence}");
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    assert!(headline(&dir).starts_with("**FAIL"), "{}", headline(&dir));
}

#[test]
fn a_scan_recorded_before_the_auditors_report_passes() {
    // Phase 3A done, the scan not yet recorded, no auditor spawned (their rows empty).
    let (tmp, dir) = crate::formats::build(
        "base = \"pre-audit\"\n[[field]]\nname = \"EXPERIENTIAL_SCAN\"\nvalue = \"___\"\ntime = \"___\"\n",
    );
    let mut w = Watch::start(&dir, tmp.path(), &[]);
    w.until("the referee is live", || status(&dir, true).code == 0);
    put(&dir, TRACKER, &scan_filled(&dir));
    w.until("the referee saw the scan (OBS-01 WAITING → PASS)", || {
        crate::watch::payloads(&dir, "result_changed")
            .iter()
            .any(|p| p["check"] == "OBS-01" && p["to"] == "PASS")
    });
    for letter in ["A", "B", "C", "D", "E", "F", "G", "H", "I"] {
        put(
            &dir,
            &format!("p3b-pa-auditor-{letter}.md"),
            &content(&format!("auditor-{letter}.md")),
        );
    }
    w.until("pass 3 ran on the 9 reports", || {
        dir.join("OBSERVER-PASS-3.md").exists()
    });
    w.signal(libc::SIGTERM);
    let code = exit_code(w.wait(WAIT));
    let (s, evidence) = verify_check(&dir, "OBS-01", &[]);
    assert_eq!(s, "PASS", "{evidence}");
    assert!(
        !read(&dir.join(STOP)).contains("OBS-01"),
        "{}",
        read(&dir.join(STOP))
    );
    assert_eq!(code, 0, "{}", w.output());
}
