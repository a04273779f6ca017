//! The rules a live code-change referee runs with are the ones that count: `verify --write`
//! with other rules never lifts its STOP (refused, exit 2, and why), and `status --task` pins
//! the protocol the orchestrator started (`--expect-protocol`). Through the binary, with real
//! git and a live `watch`.

use std::collections::BTreeMap;
use std::fs;

use crate::code_change::{git_workspace, judged, record, start, stop, APP, ORIGINAL, PROTECTED};
use crate::util::run;

/// A protected edit raises the live referee's STOP; a `verify --write` that protects nothing
/// (the worker's attempt to lift it) is refused with exit 2, says why, and the STOP stands.
#[test]
fn verify_write_with_other_rules_never_lifts_a_live_stop() {
    let (_root, ws, logs) = git_workspace();
    let mut w = start(&ws, &logs, &[]);
    fs::write(ws.join(PROTECTED), "ROLES = ['worker', 'root']\n").expect("write");
    w.until("the veto", || stop(&ws).exists());
    let d = ws.display().to_string();
    let out = run(&[
        "verify",
        &d,
        "--protocol",
        "code-change",
        "--set",
        "protected=[]",
        "--write",
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("live referee"), "{out:?}");
    assert!(stop(&ws).exists(), "the STOP stands");
    assert_eq!(run(&["status", &d]).code, 1, "status still says STOP");
    w.signal(libc::SIGTERM);
    w.wait(crate::watch::WAIT);
}

/// `status --task` with `--expect-protocol`: 0 with the hash of the protocol the referee runs,
/// 1 (and why) with another's, so a referee restarted with other rules is not believed.
#[test]
fn status_task_pins_the_protocol_the_orchestrator_started() {
    let (_root, ws, logs) = git_workspace();
    let mut w = start(&ws, &logs, &[]);
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    record(&ws, "t1", 1, &[APP], &BTreeMap::from([(APP, ORIGINAL)]));
    w.until("t1 judged", || judged(&ws, "t1", 1));
    let hash = run(&["protocol", "hash", "code-change"]);
    assert_eq!(hash.code, 0, "{hash:?}");
    let hash = hash
        .stdout
        .split_whitespace()
        .next()
        .unwrap_or("")
        .to_string();
    let d = ws.display().to_string();
    let ok = run(&["status", &d, "--task", "t1", "--expect-protocol", &hash]);
    assert_eq!(ok.code, 0, "{ok:?}");
    let other = "0".repeat(64);
    let no = run(&["status", &d, "--task", "t1", "--expect-protocol", &other]);
    assert_eq!(no.code, 1, "{no:?}");
    assert!(
        no.stdout.contains("protocol") || no.stderr.contains("protocol"),
        "{no:?}"
    );
    w.signal(libc::SIGTERM);
    w.wait(crate::watch::WAIT);
}

/// Found by the session simulator (`not_judged_live`): a nested repository put in the
/// workspace is in a task's scope as a path the referee cannot read as a file; `status --task`
/// took its verdict as stale forever (the folder is not what was judged), so it answered "not
/// judged" where the referee had judged. A path judged unreadable is stale only when it becomes
/// a readable file (or goes away).
#[test]
fn a_verdict_over_a_nested_repository_is_not_stale() {
    let (_root, ws, logs) = git_workspace();
    let mut w = start(&ws, &logs, &[]);
    let nested = ws.join("nested");
    fs::create_dir(&nested).expect("mkdir");
    fs::write(nested.join("lib.py"), "X = 1\n").expect("write");
    crate::code_change::git(&nested, &["init", "-q"]);
    crate::code_change::git(&nested, &["add", "-A"]);
    crate::code_change::git(&nested, &["commit", "-q", "-m", "nested"]);
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    record(&ws, "t1", 1, &[APP], &BTreeMap::from([(APP, ORIGINAL)]));
    w.until("t1 judged", || judged(&ws, "t1", 1));
    let d = ws.display().to_string();
    let out = run(&["status", &d, "--task", "t1"]);
    assert!(
        out.stdout.contains("task t1 attempt 1: "),
        "the verdict, not `stale`: {out:?}\n{}",
        w.output()
    );
    assert_ne!(out.code, 4, "{out:?}");
    w.signal(libc::SIGTERM);
    w.wait(crate::watch::WAIT);
}
