//! The REJECT cap is counted by the referee: a record replayed (its `attempt` set back) is
//! CC-00 FAIL and no attempt, but it is a REJECT the referee judged, so the next attempt after
//! two REJECTs and a replay is the third judged REJECT and ESCALATEs. Through the binary, with
//! real git and a live `watch`.

use std::collections::BTreeMap;
use std::fs;

use crate::code_change::{git_workspace, judged, record, start, verdict, APP, ORIGINAL};

/// Attempt 1 REJECTed, attempt 1 replayed with other work (REJECT, CC-00), attempt 2 REJECTed:
/// that is the third judged REJECT, ESCALATE (`max_rejects`).
#[test]
fn a_replayed_record_counts_toward_the_reject_cap() {
    let (_root, ws, logs) = git_workspace();
    let mut w = start(&ws, &logs, &[]);
    let base = BTreeMap::from([(APP, ORIGINAL)]);

    fs::write(ws.join(APP), "def main(:\n    return 2\n").expect("write");
    record(&ws, "t1", 1, &[APP], &base);
    w.until("attempt 1 judged", || judged(&ws, "t1", 1));
    assert_eq!(verdict(&ws, "t1")["verdict"], "REJECT", "{}", w.output());

    fs::write(ws.join(APP), "def main(:\n    return 3\n").expect("write");
    record(&ws, "t1", 1, &[APP], &base);
    w.until("the replay judged", || {
        verdict(&ws, "t1")
            .to_string()
            .contains("is not above attempt")
    });
    assert_eq!(verdict(&ws, "t1")["verdict"], "REJECT", "{}", w.output());

    fs::write(ws.join(APP), "def main(:\n    return 4 + 1\n").expect("write");
    record(&ws, "t1", 2, &[APP], &base);
    w.until("attempt 2 judged", || judged(&ws, "t1", 2));
    let v = verdict(&ws, "t1");
    assert_eq!(v["verdict"], "ESCALATE", "{v}\n{}", w.output());
    assert!(v["reasons"].to_string().contains("max_rejects"), "{v}");
    w.signal(libc::SIGTERM);
    w.wait(crate::watch::WAIT);
}

/// `referee verify --write WS --protocol code-change` (the one-shot judgment that keeps its
/// attempts, as an orchestrator polling without `watch` runs it): its exit code.
fn verify_write(ws: &std::path::Path) -> i32 {
    let o = crate::watch::run(&[
        "verify",
        ws.to_str().expect("utf-8"),
        "--protocol",
        "code-change",
        "--write",
    ]);
    o.code
}

/// Class `replay_escapes_reject_cap` (found by the session simulator, seed 1203): attempts 1
/// and 2 REJECTed, then the record replayed as attempt 1 with other work. The replay is the
/// task's third judged REJECT: ESCALATE (`max_rejects`) and a STOP, whatever its `attempt`
/// says. The referee skipped every guard for a replay and answered REJECT. One-shot, then the
/// same replay judged again (a pending replay is judged on every event) still counts once.
#[test]
fn a_replay_that_is_the_third_reject_is_escalated() {
    let (_root, ws, _logs) = git_workspace();
    let base = BTreeMap::from([(APP, ORIGINAL)]);
    fs::write(ws.join(APP), "def main(:\n    return 2\n").expect("write");
    record(&ws, "t1", 1, &[APP], &base);
    assert_eq!(verify_write(&ws), 1);
    assert_eq!(verdict(&ws, "t1")["verdict"], "REJECT");

    fs::write(ws.join(APP), "def main(:\n    return 3\n").expect("write");
    record(&ws, "t1", 2, &[APP], &base);
    assert_eq!(verify_write(&ws), 1);
    assert_eq!(verdict(&ws, "t1")["verdict"], "REJECT");

    fs::write(ws.join(APP), "def main(:\n    return 4 + 1\n").expect("write");
    record(&ws, "t1", 1, &[APP], &base);
    assert_eq!(verify_write(&ws), 1);
    let v = verdict(&ws, "t1");
    assert_eq!(v["verdict"], "ESCALATE", "{v}");
    assert_eq!(v["attempt"], 1, "{v}");
    let reasons = v["reasons"].to_string();
    assert!(reasons.contains("max_rejects"), "{v}");
    assert!(
        reasons.contains("malformed_task_record"),
        "the replay is still CC-00: {v}"
    );
    assert!(v.to_string().contains("rejection 3 of task"), "{v}");
    assert!(
        ws.join(".referee/OBSERVER-STOP.md").exists(),
        "an escalation stops"
    );
    // Judged again, unchanged: the same escalation, its REJECT counted once (rejection 3).
    assert_eq!(verify_write(&ws), 1);
    let again = verdict(&ws, "t1");
    assert_eq!(again["verdict"], "ESCALATE", "{again}");
    assert!(again.to_string().contains("rejection 3 of task"), "{again}");
}

/// A replay is no attempt: with one REJECT before it, it is the second judged REJECT and stays
/// REJECT (the cap is not reached), and no guard compares its diff with the attempts' (the
/// same work as attempt 1, under attempt 1 again, is a REJECTed replay, not an escalation).
#[test]
fn a_replay_below_the_cap_is_rejected() {
    let (_root, ws, _logs) = git_workspace();
    let base = BTreeMap::from([(APP, ORIGINAL)]);
    fs::write(ws.join(APP), "def main(:\n    return 2\n").expect("write");
    record(&ws, "t1", 1, &[APP], &base);
    assert_eq!(verify_write(&ws), 1);
    // The same work, the record rewritten with another description: a replay of attempt 1.
    let path = ws.join(".tasks/t1.json");
    let text = fs::read_to_string(&path).expect("record");
    crate::code_change::put_record(&ws, "t1", &text.replace("a task", "a task, again"));
    assert_eq!(verify_write(&ws), 1);
    let v = verdict(&ws, "t1");
    assert_eq!(v["verdict"], "REJECT", "{v}");
    assert!(!v["reasons"].to_string().contains("identical_diff"), "{v}");
}

/// Class `rejudged_attempt_kept_again` (found by the session simulator, seeds 1472 and 1576):
/// attempt 1 is judged (MINOR_ISSUES), the worker reworks it, an orchestrator's `verify --write`
/// runs while the rework is on disk (attempt 1 judged again over its grown scope), and attempt
/// 2 hands in exactly that rework. A one-shot `verify --write` kept attempt 1 again as judged
/// the second time, so attempt 2 was "identical" to it and ESCALATEd (`identical_diff`) where a
/// live `watch`, which keeps an attempt as first judged, said MINOR_ISSUES. An attempt is now
/// kept once, as first judged, by both.
#[test]
fn rework_judged_mid_way_is_not_identical_to_it() {
    let (_root, ws, _logs) = git_workspace();
    let base = BTreeMap::from([(APP, ORIGINAL)]);
    // No final newline: MINOR_ISSUES (CC-09), which the guards still compare.
    fs::write(ws.join(APP), "def main():\n    return 2").expect("write");
    record(&ws, "t1", 1, &[APP], &base);
    assert_eq!(verify_write(&ws), 0);
    assert_eq!(verdict(&ws, "t1")["verdict"], "MINOR_ISSUES");

    fs::write(ws.join(APP), "def main():\n    return 3").expect("write");
    // The orchestrator polls while the worker is at it: attempt 1 judged again (stale).
    verify_write(&ws);
    record(&ws, "t1", 2, &[APP], &base);
    assert_eq!(verify_write(&ws), 0, "{}", verdict(&ws, "t1"));
    let v = verdict(&ws, "t1");
    assert_eq!(v["verdict"], "MINOR_ISSUES", "{v}");
    assert_eq!(v["attempt"], 2, "{v}");
}
