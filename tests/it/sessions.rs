//! Sessions (an honest working day, SPEC "Sessions"): `referee accept` moves the baseline after
//! an APPROVE, so the next task is judged against what was accepted, never against the work of
//! the task before it; a verdict holds only for the files it judged. Through the binary, with
//! real git and a live `watch`.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde_json::json;

use crate::code_change::{
    git, git_workspace, judged, record, settle_record, start, verdict, APP, PROTECTED,
};
use crate::util::{run, Output};
use crate::watch::{read, status, WAIT};

pub(crate) const OTHER: &str = "src/other.py";

pub(crate) fn accept(ws: &Path, args: &[&str]) -> Output {
    let mut all = vec!["accept".to_string(), ws.display().to_string()];
    all.extend(args.iter().map(|s| s.to_string()));
    run(&all)
}

fn task_status(ws: &Path, id: &str) -> Output {
    run(&["status", &ws.display().to_string(), "--task", id])
}

/// t1 APPROVEd, accepted and committed; t2, a clean edit of another file, is APPROVEd: t1's
/// work is not counted against it. The accept is in the event log.
#[test]
fn an_accepted_task_is_the_baseline_of_the_next() {
    let (_root, ws, logs) = git_workspace();
    fs::write(ws.join(OTHER), "X = 1\n").expect("write");
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-q", "-m", "other"]);
    let base = BTreeMap::from([(APP, "def main():\n    return 1\n"), (OTHER, "X = 1\n")]);
    let mut w = start(&ws, &logs, &[]);

    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    record(&ws, "t1", 1, &[APP], &base);
    w.until("t1 judged", || judged(&ws, "t1", 1));
    assert_eq!(verdict(&ws, "t1")["verdict"], "APPROVE", "{}", w.output());
    assert_eq!(task_status(&ws, "t1").code, 0);

    let a = accept(&ws, &["--task", "t1"]);
    assert_eq!(a.code, 0, "{a:?}");
    assert!(a.stdout.contains(APP), "{a:?}");
    settle_record(&ws, "t1", "approved");
    git(&ws, &["commit", "-q", "-am", "t1"]);

    // t2 lists only its own file, measured against the accepted APP.
    let base2 = BTreeMap::from([(APP, "def main():\n    return 2\n"), (OTHER, "X = 1\n")]);
    fs::write(ws.join(OTHER), "X = 2\n").expect("write");
    record(&ws, "t2", 1, &[OTHER], &base2);
    w.until("t2 judged", || judged(&ws, "t2", 1));
    let v = verdict(&ws, "t2");
    assert_eq!(v["verdict"], "APPROVE", "{v}\n{}", w.output());
    assert_eq!(task_status(&ws, "t2").code, 0);
    assert_eq!(status(&ws, true).code, 0, "no STOP");

    let events = read(&ws.join(".referee/OBSERVER-EVENTS.jsonl"));
    let accepted: Vec<serde_json::Value> = events
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|e| e["payload"].clone())
        .filter(|p| p["event"] == "accepted")
        .collect();
    assert_eq!(accepted.len(), 1, "{events}");
    assert_eq!(accepted[0]["task"], json!("t1"), "{accepted:?}");
    assert!(
        accepted[0]["paths"].to_string().contains(APP),
        "{accepted:?}"
    );

    // A one-shot verify in the same state directory agrees: nothing of t1 counts against t2.
    w.signal(libc::SIGTERM);
    w.wait(WAIT);
    let out = run(&[
        "verify",
        &ws.display().to_string(),
        "--protocol",
        "code-change",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{out:?}");
}

/// `accept` refuses what it must not move the baseline to, exit 1 with why, and moves nothing:
/// a task never judged, a REJECT, and an APPROVE whose files changed after the judgment (which
/// `status --task` answers 4 for: the verdict is stale).
#[test]
fn accept_refuses_unjudged_rejected_and_stale_verdicts() {
    let (_root, ws, logs) = git_workspace();
    let base = BTreeMap::from([
        (APP, "def main():\n    return 1\n"),
        (PROTECTED, "ROLES = ['worker']\n"),
    ]);
    let w = start(&ws, &logs, &[]);

    let a = accept(&ws, &["--task", "nope"]);
    assert_eq!(a.code, 1, "{a:?}");
    assert!(a.stderr.contains("not judged"), "{a:?}");

    // A REJECT (a protected file): refused, and it says so.
    fs::write(ws.join(PROTECTED), "ROLES = []\n").expect("write");
    record(&ws, "t1", 1, &[PROTECTED], &base);
    w.until("t1 judged", || judged(&ws, "t1", 1));
    assert_eq!(verdict(&ws, "t1")["verdict"], "REJECT");
    let a = accept(&ws, &["--task", "t1"]);
    assert_eq!(a.code, 1, "{a:?}");
    assert!(a.stderr.contains("REJECT"), "{a:?}");
    fs::write(ws.join(PROTECTED), base[PROTECTED]).expect("write");
    settle_record(&ws, "t1", "rejected");
    w.until("STOP lifted", || status(&ws, false).code == 0);

    // An APPROVE, then the file changes again before the accept: stale.
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    record(&ws, "t2", 1, &[APP], &base);
    w.until("t2 judged", || judged(&ws, "t2", 1));
    assert_eq!(verdict(&ws, "t2")["verdict"], "APPROVE", "{}", w.output());
    fs::write(ws.join(APP), "def main():\n    return 3\n").expect("write");
    // Stale (4) until the live referee has judged the new state, then that judgment: REJECT,
    // for the file no longer has the hash the record claims. Never the old APPROVE.
    let st = task_status(&ws, "t2");
    assert!(
        st.code == 4 || (st.code == 1 && st.stdout.contains("REJECT")),
        "a stale verdict is not judged: {st:?}"
    );
    // Refused either way: stale until the live referee judges the attempt as it stands now,
    // then REJECT (the file no longer has the hash the record claims).
    let a = accept(&ws, &["--task", "t2"]);
    assert_eq!(a.code, 1, "{a:?}");
    assert!(
        a.stderr.contains("changed after") || a.stderr.contains("is REJECT"),
        "{a:?}"
    );
    // Nothing moved: a one-shot verify of t3 (listing nothing) still sees APP changed.
    let state = crate::code_change::default_state(&ws);
    assert!(!state.join("accepted.json").exists());
}

/// `verify WS --protocol code-change --format json`: the exit code and the JSON.
pub(crate) fn verify_json(ws: &Path) -> (i32, serde_json::Value) {
    verify_json_with(ws, &[])
}

/// [`verify_json`] with more arguments (`--write`: the verdicts and the pin kept).
pub(crate) fn verify_json_with(ws: &Path, extra: &[&str]) -> (i32, serde_json::Value) {
    let shown = ws.display().to_string();
    let mut args = vec![
        "verify",
        &shown,
        "--protocol",
        "code-change",
        "--format",
        "json",
    ];
    args.extend_from_slice(extra);
    let out = run(&args);
    let doc = serde_json::from_str(&out.stdout).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    (out.code, doc)
}

fn verdict_in<'a>(doc: &'a serde_json::Value, task: &str) -> &'a serde_json::Value {
    doc["verdicts"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["task_id"] == task))
        .unwrap_or_else(|| panic!("no verdict for {task}: {doc}"))
}

/// Two tasks pending at once, each listing its own file: t1's file does not parse, t2's is
/// clean. t1 is REJECTed for its own file; t2 is APPROVEd, never for t1's broken file nor for
/// t1's change (which t1 claims truthfully, REJECTed or not). The same in `watch`.
#[test]
fn two_pending_tasks_do_not_reject_each_other() {
    let (_root, ws, logs) = git_workspace();
    fs::write(ws.join(OTHER), "X = 1\n").expect("write");
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-q", "-m", "other"]);
    let base = BTreeMap::from([(APP, "def main():\n    return 1\n"), (OTHER, "X = 1\n")]);
    fs::write(ws.join(APP), "def main(:\n    return 2\n").expect("write");
    fs::write(ws.join(OTHER), "X = 2\n").expect("write");
    record(&ws, "t1", 1, &[APP], &base);
    record(&ws, "t2", 1, &[OTHER], &base);
    let (code, doc) = verify_json(&ws);
    assert_eq!(code, 1, "t1 is REJECTed: {doc}");
    let t1 = verdict_in(&doc, "t1");
    assert_eq!(t1["verdict"], "REJECT", "{doc}");
    assert_eq!(t1["reasons"], json!(["syntax_error"]), "{t1}");
    let t2 = verdict_in(&doc, "t2");
    assert_eq!(t2["verdict"], "APPROVE", "{t2}");

    let w = start(&ws, &logs, &[]);
    w.until("both judged", || {
        judged(&ws, "t1", 1) && judged(&ws, "t2", 1)
    });
    assert_eq!(verdict(&ws, "t2")["verdict"], "APPROVE", "{}", w.output());
    assert_eq!(task_status(&ws, "t2").code, 0);
    assert_eq!(task_status(&ws, "t1").code, 1);
}

/// A record whose claim is false (it lists a change that did not happen) excuses nothing: the
/// change it claims is still the other task's, which did not list it.
#[test]
fn a_false_claim_still_excuses_nothing() {
    let (_root, ws, _logs) = git_workspace();
    let base = BTreeMap::from([(APP, "def main():\n    return 1\n")]);
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    fs::write(ws.join(OTHER), "import os\n").expect("write");
    record(&ws, "t1", 1, &[APP], &base);
    // The decoy lists OTHER as added (true) and a phantom file (false): its claims drop.
    let decoy = json!({
        "task_id": "decoy", "status": "pending_review", "description": "a task", "attempt": 1,
        "summary": "Here's what I did: the change.",
        "changes": {"added": [OTHER, "src/never.py"], "modified": [], "removed": []},
    });
    crate::code_change::put_record(&ws, "decoy", &decoy.to_string());
    let (code, doc) = verify_json(&ws);
    assert_eq!(code, 1, "{doc}");
    let t1 = verdict_in(&doc, "t1");
    assert_eq!(t1["verdict"], "REJECT", "{t1}");
    assert!(t1.to_string().contains("undeclared_changes"), "{t1}");
}

/// `examples/orchestrator/code-change.sh` run for real beside a live referee: three tasks in
/// a row (an edit, an edit of another file, a new file), each judged, accepted and committed;
/// the second and third are judged against the accepted work of those before them, so every
/// one is APPROVEd at its first attempt.
#[test]
fn the_example_orchestrator_accepts_a_day_of_tasks() {
    let (_root, ws, logs) = git_workspace();
    fs::write(ws.join(OTHER), "X = 1\n").expect("write");
    fs::write(ws.join(".gitignore"), ".referee/\n").expect("write");
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-q", "-m", "other"]);
    let worker = logs.join("worker.sh");
    fs::write(
        &worker,
        r#"#!/usr/bin/env bash
set -euo pipefail
task=$1 attempt=$2
case $task in
  t1) printf 'def main():\n    return 2\n' > src/app.py; mod='["src/app.py"]'; add='[]' ;;
  t2) printf 'X = 2\n' > src/other.py; mod='["src/other.py"]'; add='[]' ;;
  t3) printf 'Y = 3\n' > src/new.py; mod='[]'; add='["src/new.py"]' ;;
esac
mkdir -p .tasks
cat > .tasks/.$task.tmp <<JSON
{"task_id": "$task", "status": "pending_review", "description": "a task", "attempt": $attempt,
 "summary": "Here's what I did: $task.",
 "changes": {"added": $add, "modified": $mod, "removed": []}}
JSON
mv .tasks/.$task.tmp .tasks/$task.json
"#,
    )
    .expect("write worker");
    fs::set_permissions(&worker, std::os::unix::fs::PermissionsExt::from_mode(0o755))
        .expect("chmod");
    let w = start(&ws, &logs, &[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/orchestrator/code-change.sh");
    let out = std::process::Command::new("bash")
        .arg(&script)
        .arg(&ws)
        .arg(&worker)
        .args(["t1", "t2", "t3"])
        .env("REFEREE", crate::util::referee_bin())
        .env("XDG_STATE_HOME", crate::util::state_home())
        .env("ATTEMPTS", "1")
        .env("WAIT", "20s")
        .output()
        .expect("run the orchestrator");
    let text = format!(
        "{}\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
        w.output()
    );
    assert_eq!(out.status.code(), Some(0), "{text}");
    for t in ["t1", "t2", "t3"] {
        assert!(
            text.contains(&format!("{t} accepted at attempt 1")),
            "{text}"
        );
        assert_eq!(verdict(&ws, t)["verdict"], "APPROVE", "{t}: {text}");
    }
    assert_eq!(status(&ws, true).code, 0, "no STOP: {text}");
}

/// A protected file modified with no task record: every format of `verify` names CC-01, the
/// path and what happened to it, and the exit code is the STOP's (1), never "PASS: no task
/// attempt to judge".
#[test]
fn a_veto_without_a_record_explains_itself_in_every_format() {
    let (_root, ws, _logs) = git_workspace();
    fs::write(ws.join(PROTECTED), "ROLES = []\n").expect("write");
    fs::remove_file(ws.join(APP)).expect("rm");
    git(&ws, &["rm", "-q", "--cached", APP]);
    git(&ws, &["commit", "-q", "-m", "no app"]);
    let dir = ws.display().to_string();
    let out = |format: &str| {
        run(&[
            "verify",
            &dir,
            "--protocol",
            "code-change",
            "--format",
            format,
        ])
    };
    let md = out("md");
    assert_eq!(md.code, 1, "{md:?}");
    let head = md
        .stdout
        .lines()
        .find(|l| l.starts_with("**"))
        .unwrap_or("");
    assert!(
        head.contains("STOP")
            && head.contains("CC-01")
            && head.contains(PROTECTED)
            && head.contains("modified"),
        "{}",
        md.stdout
    );
    assert!(
        !md.stdout.contains("PASS: no task attempt"),
        "{}",
        md.stdout
    );

    let json = out("json");
    assert_eq!(json.code, 1, "{json:?}");
    let doc: serde_json::Value = serde_json::from_str(&json.stdout).expect("json");
    let h = doc["headline"].as_str().unwrap_or("");
    assert!(
        h.contains("CC-01") && h.contains(PROTECTED) && h.contains("modified"),
        "{doc}"
    );
    assert_eq!(doc["veto"][0]["paths"][0]["happened"], "modified", "{doc}");

    for format in ["junit", "sarif", "github"] {
        let o = out(format);
        assert_eq!(o.code, 1, "{format}: {o:?}");
        assert!(
            o.stdout.contains("CC-01") && o.stdout.contains(PROTECTED),
            "{format}: {}",
            o.stdout
        );
    }
}

/// A referee restarted by the worker with another baseline (its own commit holding the
/// protected edit) refuses to start (exit 2, saying why and naming `--fresh`) instead of
/// laundering the veto; restarted as before it starts and the STOP still stands; `--fresh` is
/// the human's way to pin anew.
#[test]
fn a_restart_with_another_baseline_is_refused_without_fresh() {
    let (_root, ws, logs) = git_workspace();
    let mut w = start(&ws, &logs, &[]);
    fs::write(ws.join(PROTECTED), "ROLES = []\n").expect("write");
    w.until("STOP raised", || status(&ws, false).code == 1);
    w.kill9();
    // The worker commits its edit and restarts the referee on its own commit.
    git(&ws, &["commit", "-q", "-am", "mine"]);
    let dir = ws.display().to_string();
    let refused = run(&[
        "watch",
        &dir,
        "--protocol",
        "code-change",
        "--baseline",
        "HEAD",
        "--timeout",
        "5s",
    ]);
    assert_eq!(refused.code, 2, "{refused:?}");
    assert!(
        refused.stderr.contains("--fresh") && refused.stderr.contains("baseline"),
        "{refused:?}"
    );
    assert_eq!(status(&ws, false).code, 1, "the STOP still stands");

    // As before (the pinned HEAD): it starts, and the veto stands.
    let mut w = start(&ws, &logs, &[]);
    w.until("STOP still raised", || status(&ws, true).code == 1);
    w.kill9();

    // A human pins anew: `--fresh` starts on the new baseline, where nothing differs.
    let fresh = run(&[
        "watch",
        &dir,
        "--protocol",
        "code-change",
        "--baseline",
        "HEAD",
        "--fresh",
        "--timeout",
        "2s",
    ]);
    assert_eq!(fresh.code, 0, "{fresh:?}");
    assert_eq!(status(&ws, false).code, 0, "{fresh:?}");
}

/// A task that adds a symbolic link (`ln -s other.py src/alias.py`) is judged, accepted, and is
/// the baseline of the next task; a link pointed elsewhere after its judgment is stale. Found by
/// the session simulator (class `accept_refused:AddLink`: the accept read a link as "not a
/// file" where the judgment had read it as a link).
#[test]
fn an_accepted_link_is_the_baseline_of_the_next() {
    let (_root, ws, _logs) = git_workspace();
    let link = "src/alias.py";
    let added = |id: &str, paths: &[&str]| {
        let doc = json!({
            "task_id": id, "status": "pending_review", "description": "a task", "attempt": 1,
            "summary": "Here's what I did: the change.",
            "changes": {"added": paths, "modified": [], "removed": []},
            "pre_hashes": {}, "post_hashes": {},
        });
        crate::code_change::put_record(&ws, id, &doc.to_string());
    };
    // `verify --write`: the verdicts kept, as an orchestrator's one-shot look keeps them.
    let verify = || verify_json_with(&ws, &["--write"]);
    let (code, doc) = verify();
    assert_eq!(code, 0, "pinned: {doc}");

    std::os::unix::fs::symlink("app.py", ws.join(link)).expect("link");
    added("t1", &[link]);
    let (code, doc) = verify();
    assert_eq!(verdict_in(&doc, "t1")["verdict"], "APPROVE", "{doc}");
    assert_eq!(code, 0, "{doc}");

    // Pointed elsewhere after the judgment: stale, nothing moved.
    fs::remove_file(ws.join(link)).expect("rm");
    std::os::unix::fs::symlink("orchestrator.py", ws.join(link)).expect("link");
    let a = accept(&ws, &["--task", "t1"]);
    assert_eq!(a.code, 1, "{a:?}");
    assert!(a.stderr.contains("changed after"), "{a:?}");
    fs::remove_file(ws.join(link)).expect("rm");
    std::os::unix::fs::symlink("app.py", ws.join(link)).expect("link");

    let a = accept(&ws, &["--task", "t1"]);
    assert_eq!(a.code, 0, "{a:?}");
    settle_record(&ws, "t1", "approved");

    // t2 adds a file of its own and lists only it: the accepted link is no change of its.
    fs::write(ws.join(OTHER), "X = 1\n").expect("write");
    added("t2", &[OTHER]);
    let (code, doc) = verify();
    assert_eq!(verdict_in(&doc, "t2")["verdict"], "APPROVE", "{doc}");
    assert_eq!(code, 0, "{doc}");
}
