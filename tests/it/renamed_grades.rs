//! A task protocol whose verdicts have other names than code-change's (`OK`, `TIDY`, `NO`,
//! `HUMAN`, `CIRCLES`): the referee knows a verdict only by what the protocol says it means
//! (a grade's `outcome`, the guards' `escalate`), so its cleanup grade exits 0 and its
//! rejection 1 in `verify`, `watch` and `status --task` alike, and its events get the severity
//! of what the verdict means.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::code_change::{git_workspace, judged, record, verdict, APP, PROTECTED};
use crate::util::Output;
use crate::watch::{exit_code, payloads, read, run, Watch, WAIT};

/// `referee watch WORKSPACE --protocol PROTOCOL`, once its heartbeat is there.
fn start_with(ws: &Path, logs: &Path, protocol: &str) -> Watch {
    let w = Watch::start(ws, logs, &["--protocol", protocol]);
    let hb = ws.join(".referee/OBSERVER-HEARTBEAT.json");
    let pid = w.pid();
    w.until("this referee's heartbeat is in .referee/", || {
        serde_json::from_str::<Value>(&read(&hb)).is_ok_and(|h| h["pid"] == serde_json::json!(pid))
    });
    w
}

/// code-change with every verdict renamed. `TIDY` keeps no `outcome` (its `cleanup = true`
/// makes it a cleanup grade by default); the others say theirs.
fn renamed(dir: &Path) -> String {
    let text = referee::protocol::EMBEDDED
        .iter()
        .find(|(id, _, _)| *id == "code-change")
        .expect("embedded code-change")
        .2
        .replace("id = \"code-change\"", "id = \"renamed\"")
        .replace("\"ESCALATE_CONVERGENCE\"", "\"CIRCLES\"")
        .replace("\"ESCALATE\"", "\"HUMAN\"")
        .replace("\"REJECT\"", "\"NO\"")
        .replace("\"APPROVE\"", "\"OK\"")
        .replace("\"MINOR_ISSUES\"\noutcome = \"cleanup\"", "\"TIDY\"");
    assert!(
        !["REJECT\"", "APPROVE\"", "MINOR_ISSUES\"", "\"ESCALATE"]
            .iter()
            .any(|n| text.contains(n)),
        "every verdict renamed"
    );
    let path = dir.join("renamed.toml");
    fs::write(&path, text).expect("write protocol");
    path.to_str().expect("utf-8").to_string()
}

fn verify(ws: &Path, protocol: &str) -> (i32, Value) {
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&[
        "verify",
        ws.to_str().expect("utf-8"),
        "--protocol",
        protocol,
        "--format",
        "json",
    ]);
    let doc = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    (code, doc)
}

fn task_status(ws: &Path, protocol: &str, task: &str) -> (i32, String) {
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&[
        "status",
        ws.to_str().expect("utf-8"),
        "--task",
        task,
        "--protocol",
        protocol,
    ]);
    (code, format!("{out}{err}"))
}

/// The `severity` of the envelope of each `verdict` event, by verdict.
fn severities(ws: &Path) -> Vec<(String, String)> {
    let dir = ws.join(".referee");
    let events = crate::watch::events(&dir);
    let verdicts = payloads(&dir, "verdict");
    assert_eq!(
        events
            .iter()
            .filter(|e| e["payload"]["event"] == "verdict")
            .count(),
        verdicts.len()
    );
    events
        .iter()
        .filter(|e| e["payload"]["event"] == "verdict")
        .map(|e| {
            (
                e["payload"]["verdict"].as_str().unwrap_or("").to_string(),
                e["severity"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect()
}

#[test]
fn renamed_grades_exit_by_what_they_mean() {
    let (root, ws, logs) = git_workspace();
    let protocol = renamed(root.path());
    let base = BTreeMap::from([(APP, "def main():\n    return 1\n")]);

    // A trailing space: CC-09 (SIGNIFICANT) fails, the cleanup grade `TIDY`: exit 0.
    fs::write(ws.join(APP), "def main():\n    return 2 \n").expect("write");
    record(&ws, "t1", 1, &[APP], &base);
    let (code, doc) = verify(&ws, &protocol);
    assert_eq!(doc["verdicts"][0]["verdict"], "TIDY", "{doc}");
    assert_eq!(code, 0, "a cleanup grade lets the attempt through: {doc}");

    let mut w = start_with(&ws, &logs, &protocol);
    w.until("t1 judged", || judged(&ws, "t1", 1));
    assert_eq!(verdict(&ws, "t1")["verdict"], "TIDY", "{}", w.output());
    let (code, out) = task_status(&ws, &protocol, "t1");
    assert_eq!(code, 0, "{out}");
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
    assert_eq!(severities(&ws), [("TIDY".to_string(), "info".to_string())]);

    // The protected file changed: the rejection `NO`, exit 1, an error event.
    fs::write(ws.join(PROTECTED), "ROLES = ['worker', 'admin']\n").expect("write");
    let base = BTreeMap::from([
        (APP, "def main():\n    return 1\n"),
        (PROTECTED, "ROLES = ['worker']\n"),
    ]);
    record(&ws, "t1", 2, &[APP, PROTECTED], &base);
    let (code, doc) = verify(&ws, &protocol);
    assert_eq!(doc["verdicts"][0]["verdict"], "NO", "{doc}");
    assert_eq!(code, 1, "{doc}");
    let mut w = start_with(&ws, &logs, &protocol);
    w.until("t1 attempt 2 judged", || judged(&ws, "t1", 2));
    assert_eq!(verdict(&ws, "t1")["verdict"], "NO", "{}", w.output());
    let (code, out) = task_status(&ws, &protocol, "t1");
    assert_eq!(code, 1, "{out}");

    // The same diff again: the guards' `HUMAN`, a critical event.
    record(&ws, "t1", 3, &[APP, PROTECTED], &base);
    w.until("t1 attempt 3 judged", || judged(&ws, "t1", 3));
    assert_eq!(verdict(&ws, "t1")["verdict"], "HUMAN", "{}", w.output());
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    assert_eq!(
        severities(&ws),
        [
            ("TIDY".to_string(), "info".to_string()),
            ("NO".to_string(), "error".to_string()),
            ("HUMAN".to_string(), "critical".to_string()),
        ]
    );
}
