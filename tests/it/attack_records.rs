//! Attacks through the task records ("Nothing the watched side writes decides what
//! changed"), as a worker with a shell would try them on a real git workspace: lifting the veto
//! by editing, deleting or never writing its record, laundering a change through a decoy
//! record, holding judgment back with a record kept "being written", switching the loop guards
//! off by replaying an attempt number, by a new task id or by whitespace, and sharing a verdict
//! file between two task ids. Each runs `referee verify --protocol code-change` or a live
//! `referee watch`, and reads the verdict JSON, the STOP file and `referee status`.

use std::fs;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use crate::code_change::{
    git_workspace, judged, put_record, record, settle_record, start, stop, verdict, APP, PROTECTED,
};
use crate::util::Output;
use crate::watch::{exit_code, read, run, status, WAIT};

const GOOD_SUMMARY: &str = "Here's what I did: the change.";

/// A pending record listing `modified` and `added` (no hashes claimed), with `summary`.
fn task(ws: &Path, id: &str, attempt: u64, modified: &[&str], added: &[&str], summary: &str) {
    let doc = json!({
        "task_id": id,
        "status": "pending_review",
        "description": "a task",
        "attempt": attempt,
        "summary": summary,
        "changes": {"added": added, "modified": modified, "removed": []},
    });
    put_record(ws, id, &doc.to_string());
}

/// `referee verify WS --protocol code-change --format json` (with `--write` when `write`):
/// the exit code and the JSON.
fn verify(ws: &Path, write: bool) -> (i32, Value) {
    let mut args = vec![
        "verify",
        ws.to_str().expect("utf-8"),
        "--protocol",
        "code-change",
        "--format",
        "json",
    ];
    if write {
        args.push("--write");
    }
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&args);
    let doc = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    (code, doc)
}

/// The verdict of `task` in `verify`'s JSON.
fn verdict_of<'a>(doc: &'a Value, task: &str) -> &'a Value {
    doc["verdicts"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["task_id"] == task))
        .unwrap_or_else(|| panic!("no verdict for {task}: {doc}"))
}

fn reasons(v: &Value) -> Vec<String> {
    v["reasons"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// The STOP file, once it contains `needle` (waiting for the daemon).
fn stop_says(w: &crate::watch::Watch, ws: &Path, what: &str, needle: &str) -> String {
    w.until(what, || read(&stop(ws)).contains(needle));
    read(&stop(ws))
}

const WORKSPACE_VETO: &str = "**Phase:** workspace";

/// With `orchestrator.py` modified, the STOP stands whatever the records say: before any
/// record, after the record's status is set to `approved`, after the record is deleted; it is
/// lifted only when the file is put back.
#[test]
fn the_veto_stands_whatever_the_records_say() {
    let (_root, ws, logs) = git_workspace();
    let base = std::collections::BTreeMap::from([(PROTECTED, "ROLES = ['worker']\n")]);
    let mut w = start(&ws, &logs, &[]);
    assert_eq!(status(&ws, true).code, 0, "{}", w.output());

    // No record at all.
    fs::write(ws.join(PROTECTED), "ROLES = ['worker', 'admin']\n").expect("write");
    // `fs::write` truncates, then writes: the referee may judge (and veto) the empty file
    // first, so what is waited for is the veto of the file as written.
    let text = stop_says(
        &w,
        &ws,
        "the veto without a record",
        "+ROLES = ['worker', 'admin']",
    );
    assert!(text.contains(WORKSPACE_VETO), "{text}");
    assert!(text.contains("CC-01"), "{text}");
    assert!(text.contains("`src/orchestrator.py`"), "{text}");
    assert!(
        text.contains("+ROLES = ['worker', 'admin']"),
        "the diff: {text}"
    );
    assert_eq!(status(&ws, true).code, 1, "{}", w.output());

    // A record: REJECT, the STOP is the verdict's.
    record(&ws, "t1", 1, &[PROTECTED], &base);
    w.until("t1 judged", || judged(&ws, "t1", 1));
    let v = verdict(&ws, "t1");
    assert_eq!(v["verdict"], "REJECT", "{v}");
    assert!(
        reasons(&v).contains(&"protected_file_modified".into()),
        "{v}"
    );
    stop_says(&w, &ws, "the STOP names t1", "task `t1`");

    // Its status set to `approved`: the record no longer asks for judgment, the veto stands.
    settle_record(&ws, "t1", "approved");
    let text = stop_says(&w, &ws, "the veto after the status change", WORKSPACE_VETO);
    assert!(!text.contains("task `t1`"), "{text}");
    assert_eq!(status(&ws, true).code, 1, "status changed: {}", w.output());

    // Pending again as attempt 2, then deleted.
    record(&ws, "t1", 2, &[PROTECTED], &base);
    w.until("t1 attempt 2 judged", || judged(&ws, "t1", 2));
    stop_says(&w, &ws, "the STOP names t1 again", "task `t1`");
    fs::remove_file(ws.join(".tasks/t1.json")).expect("rm record");
    stop_says(
        &w,
        &ws,
        "the veto after the record is deleted",
        WORKSPACE_VETO,
    );
    assert_eq!(status(&ws, true).code, 1, "record deleted: {}", w.output());

    // Put back: the STOP is lifted.
    fs::write(ws.join(PROTECTED), base[PROTECTED]).expect("write");
    w.until("STOP lifted", || !stop(&ws).exists());
    assert_eq!(status(&ws, true).code, 0, "{}", w.output());
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
}

/// The end of a run does not lift a veto that no record carries: the STOP stays, exit 1.
#[test]
fn the_veto_without_a_record_outlives_the_run() {
    let (_root, ws, logs) = git_workspace();
    let mut w = start(&ws, &logs, &[]);
    fs::write(ws.join(PROTECTED), "ROLES = []\n").expect("write");
    stop_says(&w, &ws, "the veto without a record", WORKSPACE_VETO);
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    assert!(read(&stop(&ws)).contains(WORKSPACE_VETO), "the STOP stays");
    assert_eq!(status(&ws, false).code, 1);
}

/// `verify --write` with a protected change and no record (or none pending) writes the STOP.
#[test]
fn verify_writes_the_veto_without_a_record() {
    let (_root, ws, _logs) = git_workspace();
    fs::write(ws.join(PROTECTED), "ROLES = []\n").expect("write");
    let (_, doc) = verify(&ws, true);
    assert_eq!(doc["stop"], true, "{doc}");
    let text = read(&stop(&ws));
    assert!(
        text.contains(WORKSPACE_VETO) && text.contains("CC-01"),
        "{text}"
    );
    assert_eq!(status(&ws, false).code, 1);

    // A record set to another status changes nothing.
    task(&ws, "t1", 1, &[PROTECTED], &[], GOOD_SUMMARY);
    settle_record(&ws, "t1", "approved");
    let (_, doc) = verify(&ws, true);
    assert_eq!(doc["stop"], true, "{doc}");
    assert_eq!(status(&ws, false).code, 1);

    fs::write(ws.join(PROTECTED), "ROLES = ['worker']\n").expect("write");
    let (_, doc) = verify(&ws, true);
    assert_eq!(doc["stop"], false, "{doc}");
    assert!(!stop(&ws).exists());
    assert_eq!(status(&ws, false).code, 0);
}

/// A change claimed by another pending record is excused only while that record is not
/// REJECTed: a decoy that claims the unlisted file and is itself rejected launders nothing.
#[test]
fn a_rejected_decoy_record_does_not_excuse_a_change() {
    let (_root, ws, _logs) = git_workspace();
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    fs::write(ws.join("src/evil.py"), "import os\n").expect("write");
    task(&ws, "t1", 1, &[APP], &[], GOOD_SUMMARY);
    // The decoy claims evil.py, and a file that never changed (a phantom: CC-02 FAILs).
    task(
        &ws,
        "decoy",
        1,
        &["src/never.py"],
        &["src/evil.py"],
        GOOD_SUMMARY,
    );
    let (code, doc) = verify(&ws, false);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(verdict_of(&doc, "decoy")["verdict"], "REJECT", "{doc}");
    let t1 = verdict_of(&doc, "t1");
    assert_eq!(t1["verdict"], "REJECT", "{doc}");
    assert!(reasons(t1).contains(&"undeclared_changes".into()), "{t1}");
    let cc02 = doc["results"]
        .as_array()
        .and_then(|r| {
            r.iter()
                .find(|r| r["pass"] == "t1" && r["check"] == "CC-02")
        })
        .expect("t1's CC-02");
    assert!(cc02.to_string().contains("unlisted: src/evil.py"), "{cc02}");

    // A claim by a record that is not rejected still excuses the change.
    task(&ws, "decoy", 1, &[], &["src/evil.py"], GOOD_SUMMARY);
    let (code, doc) = verify(&ws, false);
    assert_eq!(verdict_of(&doc, "decoy")["verdict"], "APPROVE", "{doc}");
    assert_eq!(verdict_of(&doc, "t1")["verdict"], "APPROVE", "{doc}");
    assert_eq!(code, 0, "{doc}");
}

/// A record rewritten in place faster than the settle window is judged as it stands once it
/// has been moving for `--settle-max`, while it is still churning.
#[test]
fn a_churning_record_is_judged_within_settle_max() {
    let (_root, ws, logs) = git_workspace();
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    // `.tasks/` is watched from the start, so every write of the record is seen.
    fs::create_dir_all(ws.join(".tasks")).expect("mkdir");
    let mut w = start(&ws, &logs, &["--settle", "300ms", "--settle-max", "1s"]);
    let doc = json!({
        "task_id": "t1", "status": "pending_review", "description": "a task", "attempt": 1,
        "summary": GOOD_SUMMARY, "changes": {"added": [], "modified": [APP], "removed": []},
    })
    .to_string();
    let churning = Arc::new(AtomicBool::new(true));
    let churner = {
        let (path, churning) = (ws.join(".tasks/t1.json"), churning.clone());
        std::thread::spawn(move || {
            let until = Instant::now() + WAIT + Duration::from_secs(5);
            // Written in place (never renamed) every 50 ms: never quiet for the window. The pace
            // of a writer, not a margin: a stalled writer lets the record settle sooner, and it
            // is judged sooner, which the test accepts too.
            while churning.load(Ordering::Relaxed) && Instant::now() < until {
                fs::write(&path, &doc).expect("write the record");
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    // Judged while it churns: the console says so (the verdict file may already hold a later
    // judgment of the record caught mid-write, `attempt ?`, which is malformed as it stands).
    w.until("t1 judged while its record churns", || {
        w.output().contains("task t1 attempt 1: APPROVE")
    });
    // (`until` fails at WAIT: judged within it, not held until the churn stops.)
    churning.store(false, Ordering::Relaxed);
    churner.join().expect("the churner");
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
}

/// The orchestrator clears a judged task's record and the worker hands in the next one: the
/// next task is judged at once. A removed record is not a record being written, so it holds
/// no judgment back for the settle window (the class `bench/code-change.sh` found: every trial
/// waited out what was left of the window after the previous record's removal).
#[test]
fn a_removed_record_holds_no_judgment_back() {
    let (_root, ws, logs) = git_workspace();
    fs::create_dir_all(ws.join(".tasks")).expect("mkdir");
    // A window far longer than `until`'s WAIT: a hold cannot end in time by chance.
    let mut w = start(&ws, &logs, &["--settle", "60s", "--settle-max", "120s"]);
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    task(&ws, "t1", 1, &[APP], &[], GOOD_SUMMARY);
    w.until("t1 judged", || {
        w.output().contains("task t1 attempt 1: APPROVE")
    });
    // The orchestrator takes t1's work and clears its record; the worker's next task.
    fs::remove_file(ws.join(".tasks/t1.json")).expect("remove t1's record");
    fs::write(ws.join(APP), "def main():\n    return 3\n").expect("write");
    task(&ws, "t2", 1, &[APP], &[], GOOD_SUMMARY);
    // (`until` fails at WAIT, 10 s: held for the 60 s window, it would.)
    w.until("t2 judged at once", || {
        w.output().contains("task t2 attempt 1: APPROVE")
    });
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
}

/// The neighbour of the test above: a record saved the way an editor saves (removed, then
/// written anew in place) is still held while it is being written; the half-written record is
/// never judged, and the finished one is.
#[test]
fn a_record_saved_by_remove_then_write_is_judged_once_written() {
    let (_root, ws, logs) = git_workspace();
    fs::create_dir_all(ws.join(".tasks")).expect("mkdir");
    let mut w = start(&ws, &logs, &["--settle", "3s", "--settle-max", "60s"]);
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    task(&ws, "t1", 1, &[APP], &[], GOOD_SUMMARY);
    w.until("attempt 1 judged", || judged(&ws, "t1", 1));
    fs::write(ws.join(APP), "def main():\n    return 3\n").expect("write");
    let doc = json!({
        "task_id": "t1", "status": "pending_review", "description": "a task", "attempt": 2,
        "summary": GOOD_SUMMARY, "changes": {"added": [], "modified": [APP], "removed": []},
    })
    .to_string();
    let path = ws.join(".tasks/t1.json");
    fs::remove_file(&path).expect("the editor removes the record");
    fs::write(&path, &doc[..doc.len() / 2]).expect("half the record, in place");
    // A span watched for what must never happen (the 3 s window holds it; a second is a
    // quarter of it): the half-written record is not judged.
    let until = Instant::now() + Duration::from_secs(1);
    while Instant::now() < until {
        let v = verdict(&ws, "t1");
        assert_eq!(v["attempt"], 1, "a half-written record was judged: {v}");
        std::thread::sleep(Duration::from_millis(20));
    }
    fs::write(&path, &doc).expect("the whole record");
    w.until("attempt 2 judged once written", || judged(&ws, "t1", 2));
    assert_eq!(verdict(&ws, "t1")["verdict"], "APPROVE", "{}", w.output());
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
}

/// A record resubmitted under an attempt number already judged is a replay: CC-00 FAILs and
/// the attempt is REJECTed; the very attempt judged, unchanged, keeps its verdict.
#[test]
fn a_replayed_attempt_number_is_rejected() {
    let (_root, ws, logs) = git_workspace();
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    task(&ws, "t1", 1, &[APP], &[], "first try");
    let (_, doc) = verify(&ws, true);
    assert_eq!(verdict_of(&doc, "t1")["verdict"], "MINOR_ISSUES", "{doc}");
    // The same record judged again: the same verdict, no replay.
    let (_, doc) = verify(&ws, true);
    assert_eq!(verdict_of(&doc, "t1")["verdict"], "MINOR_ISSUES", "{doc}");
    fs::write(ws.join(APP), "def main():\n    return 3\n").expect("write");
    task(&ws, "t1", 2, &[APP], &[], "second try");
    let (_, doc) = verify(&ws, true);
    assert_eq!(verdict_of(&doc, "t1")["verdict"], "MINOR_ISSUES", "{doc}");

    // Back to attempt 1: a replay.
    task(&ws, "t1", 1, &[APP], &[], GOOD_SUMMARY);
    let (code, doc) = verify(&ws, true);
    assert_eq!(code, 1, "{doc}");
    let v = verdict(&ws, "t1");
    assert_eq!(v["verdict"], "REJECT", "{v}");
    assert_eq!(v["attempt"], 1, "{v}");
    let cc00 = v["results"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["check"] == "CC-00"))
        .expect("CC-00");
    assert_eq!(cc00["status"], "FAIL", "{v}");
    assert!(
        cc00["evidence"]["observed"].as_str().is_some_and(
            |o| o.contains("attempt 1 is not above attempt 2, already judged for task t1")
        ),
        "{cc00}"
    );
    // Attempt 2 rewritten with another content: a replay too.
    task(&ws, "t1", 2, &[APP], &[], GOOD_SUMMARY);
    let (_, doc) = verify(&ws, false);
    assert_eq!(verdict_of(&doc, "t1")["verdict"], "REJECT", "{doc}");

    // Live: the daemon judges attempt 3, then the replay of attempt 1.
    task(&ws, "t1", 3, &[APP], &[], GOOD_SUMMARY);
    let mut w = start(&ws, &logs, &[]);
    w.until("t1 attempt 3 judged", || judged(&ws, "t1", 3));
    assert_eq!(verdict(&ws, "t1")["verdict"], "APPROVE", "{}", w.output());
    task(&ws, "t1", 1, &[APP], &[], GOOD_SUMMARY);
    w.until("the replay judged", || {
        judged(&ws, "t1", 1) && verdict(&ws, "t1")["verdict"] == "REJECT"
    });
    w.signal(libc::SIGTERM);
    assert_eq!(
        exit_code(w.wait(WAIT)),
        1,
        "a rejected replay stands: {}",
        w.output()
    );
}

/// A diff rejected under one task id, resubmitted under a new one, is escalated.
#[test]
fn a_new_task_id_does_not_reset_the_guards() {
    let (_root, ws, _logs) = git_workspace();
    fs::write(ws.join(APP), "def main(:\n    return 2\n").expect("write");
    task(&ws, "t1", 1, &[APP], &[], GOOD_SUMMARY);
    let (_, doc) = verify(&ws, true);
    assert_eq!(verdict_of(&doc, "t1")["verdict"], "REJECT", "{doc}");
    settle_record(&ws, "t1", "rejected");
    task(&ws, "t1-again", 1, &[APP], &[], GOOD_SUMMARY);
    let (code, _) = verify(&ws, true);
    assert_eq!(code, 1);
    let v = verdict(&ws, "t1-again");
    assert_eq!(v["verdict"], "ESCALATE", "{v}");
    assert!(
        reasons(&v).contains(&"identical_to_rejected_task".into()),
        "{v}"
    );
    assert!(
        v["escalation"].as_str().is_some_and(|e| e.contains("`t1`")),
        "{v}"
    );
    assert!(read(&stop(&ws)).contains("ESCALATED: human review required"));
    assert_eq!(status(&ws, false).code, 1);
}

/// A, B, A: the third attempt is identical to the first, and is escalated.
#[test]
fn a_b_a_is_escalated() {
    let (_root, ws, _logs) = git_workspace();
    for (attempt, body) in [(1, "return 2"), (2, "return 3"), (3, "return 2")] {
        fs::write(ws.join(APP), format!("def main():\n    {body}\n")).expect("write");
        task(&ws, "t1", attempt, &[APP], &[], "no summary form");
        verify(&ws, true);
    }
    let v = verdict(&ws, "t1");
    assert_eq!(v["attempt"], 3, "{v}");
    assert_eq!(v["verdict"], "ESCALATE", "{v}");
    assert!(reasons(&v).contains(&"identical_diff".into()), "{v}");
    assert!(
        v["escalation"]
            .as_str()
            .is_some_and(|e| e.contains("attempt 1's")),
        "{v}"
    );
    assert_eq!(status(&ws, false).code, 1);
}

/// An attempt that differs from the last only in whitespace is the same attempt.
#[test]
fn a_whitespace_only_change_is_escalated() {
    let (_root, ws, _logs) = git_workspace();
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    task(&ws, "t1", 1, &[APP], &[], "no summary form");
    verify(&ws, true);
    assert_eq!(verdict(&ws, "t1")["verdict"], "MINOR_ISSUES");
    fs::write(ws.join(APP), "def main():\n        return   2\n\n").expect("write");
    task(&ws, "t1", 2, &[APP], &[], "no summary form");
    let (code, _) = verify(&ws, true);
    assert_eq!(code, 1);
    let v = verdict(&ws, "t1");
    assert_eq!(v["verdict"], "ESCALATE", "{v}");
    assert!(reasons(&v).contains(&"identical_diff".into()), "{v}");
}

/// `t 1` and `t_1` each get their own verdict files.
#[test]
fn task_ids_differing_in_one_character_get_separate_verdict_files() {
    let (_root, ws, _logs) = git_workspace();
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    task(&ws, "t 1", 1, &[APP], &[], GOOD_SUMMARY);
    task(&ws, "t_1", 1, &[], &[], "no summary form");
    verify(&ws, true);
    let one = |name: &str| -> Value {
        serde_json::from_str(&read(&ws.join(".referee").join(name))).unwrap_or(Value::Null)
    };
    let spaced = one("OBSERVER-VERDICT-t%201.json");
    let under = one("OBSERVER-VERDICT-t_1.json");
    assert_eq!(spaced["task_id"], "t 1", "{spaced}");
    assert_eq!(under["task_id"], "t_1", "{under}");
    assert_ne!(spaced["verdict"], under["verdict"]);
    assert!(ws.join(".referee/OBSERVER-VERDICT-t%201.md").is_file());
    assert!(ws.join(".referee/OBSERVER-VERDICT-t_1.md").is_file());
}

/// A record that reads two ways (a key written twice, or once more in another case) is not a
/// declaration the referee can hold the worker to: CC-00 FAILs with both positions and the
/// attempt is REJECTed, whichever copy a reader takes (serde_json alone takes the last one,
/// which here declares the change and would have APPROVEd it).
#[test]
fn a_record_that_reads_two_ways_is_rejected() {
    let (_root, ws, _logs) = git_workspace();
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    let record = format!(
        "{{\"task_id\": \"t1\", \"status\": \"pending_review\", \"attempt\": 1,\n \
         \"summary\": \"{GOOD_SUMMARY}\",\n \
         \"changes\": {{\"added\": [], \"modified\": [], \"removed\": []}},\n \
         \"changes\": {{\"added\": [], \"modified\": [\"{APP}\"], \"removed\": []}}}}"
    );
    put_record(&ws, "t1", &record);
    let (code, doc) = verify(&ws, false);
    assert_eq!(code, 1, "{doc}");
    let t1 = verdict_of(&doc, "t1");
    assert_eq!(t1["verdict"], "REJECT", "{doc}");
    let cc00 = doc["results"]
        .as_array()
        .and_then(|r| {
            r.iter()
                .find(|r| r["pass"] == "t1" && r["check"] == "CC-00")
        })
        .expect("t1's CC-00");
    assert_eq!(cc00["status"], "FAIL", "{cc00}");
    let text = cc00.to_string();
    assert!(text.contains("`changes` twice"), "{cc00}");
    assert!(text.contains("line 3"), "{cc00}");

    // Another case of a key the referee reads is a second copy too.
    let record = format!(
        "{{\"task_id\": \"t1\", \"Status\": \"approved\", \"status\": \"pending_review\", \
         \"attempt\": 1, \"summary\": \"{GOOD_SUMMARY}\", \
         \"changes\": {{\"added\": [], \"modified\": [\"{APP}\"], \"removed\": []}}}}"
    );
    put_record(&ws, "t1", &record);
    let (code, doc) = verify(&ws, false);
    assert_eq!(code, 1, "{doc}");
    assert_eq!(verdict_of(&doc, "t1")["verdict"], "REJECT", "{doc}");
    assert!(doc.to_string().contains("`status` twice"), "{doc}");

    // The same record written once: APPROVE.
    task(&ws, "t1", 1, &[APP], &[], GOOD_SUMMARY);
    let (code, doc) = verify(&ws, false);
    assert_eq!(verdict_of(&doc, "t1")["verdict"], "APPROVE", "{doc}");
    assert_eq!(code, 0, "{doc}");
}

/// A record caught mid-write (or written broken) and then put back whole as the attempt
/// already judged: the task's verdict is that attempt's again, so `status --task` says go. A
/// malformed read must not stand as the last word on a record that is whole and judged.
#[test]
fn a_record_put_back_whole_gets_its_judgment_back() {
    let (_root, ws, logs) = git_workspace();
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    let w = start(&ws, &logs, &[]);
    task(&ws, "t1", 1, &[APP], &[], GOOD_SUMMARY);
    w.until("attempt 1 approved", || {
        judged(&ws, "t1", 1) && verdict(&ws, "t1")["verdict"] == "APPROVE"
    });
    let whole = read(&ws.join(".tasks/t1.json"));
    // Broken in place: a malformed record is judged (REJECT, no attempt number).
    fs::write(ws.join(".tasks/t1.json"), &whole[..whole.len() / 2]).expect("write");
    w.until("the broken record rejected", || {
        verdict(&ws, "t1")["attempt"].is_null() && verdict(&ws, "t1")["verdict"] == "REJECT"
    });
    let task_status = |ws: &Path| {
        let Output { code, .. } = run(&["status", ws.to_str().expect("utf-8"), "--task", "t1"]);
        code
    };
    assert_eq!(task_status(&ws), 1);
    // Put back whole: attempt 1's judgment again, not a replay.
    put_record(&ws, "t1", &whole);
    w.until("attempt 1's judgment back", || {
        judged(&ws, "t1", 1) && verdict(&ws, "t1")["verdict"] == "APPROVE"
    });
    assert_eq!(task_status(&ws), 0);
}
