//! `referee task open WORKSPACE ID…`: once the orchestrator registered the tasks it assigned, a
//! record of any other task is CC-00 FAIL (`unknown_task`) and claims nothing: a decoy record
//! excuses no change of a real task. Through the binary, with real git and a live `watch`.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::code_change::{git, git_workspace, judged, record, start, verdict, APP, ORIGINAL};
use crate::util::{run, Output};

fn task_open(ws: &Path, ids: &[&str]) -> Output {
    let mut all = vec!["task".to_string(), "open".into(), ws.display().to_string()];
    all.extend(ids.iter().map(|s| s.to_string()));
    run(&all)
}

/// The CC-00 result of a verdict, as text (the whole verdict when it has none).
fn cc00(v: &serde_json::Value) -> String {
    v["results"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|r| r["check"] == "CC-00" || r["id"] == "CC-00")
        .map(|r| r.to_string())
        .unwrap_or_else(|| v.to_string())
}

const UTIL: &str = "src/util.py";
const UTIL_BASE: &str = "def helper():\n    return 1\n";

/// [`git_workspace`] with `UTIL` committed too.
fn workspace() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (root, ws, logs) = git_workspace();
    fs::write(ws.join(UTIL), UTIL_BASE).expect("write");
    git(&ws, &["add", UTIL]);
    git(&ws, &["commit", "-q", "-m", "util"]);
    (root, ws, logs)
}

/// t1's work: `APP` (listed by t1) and `UTIL` (listed only by a decoy record, truly: it did
/// change); both records written.
fn t1_and_decoy(ws: &Path) {
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    fs::write(ws.join(UTIL), "def helper():\n    return 2\n").expect("write");
    record(
        ws,
        "decoy",
        1,
        &[UTIL],
        &BTreeMap::from([(UTIL, UTIL_BASE)]),
    );
    record(ws, "t1", 1, &[APP], &BTreeMap::from([(APP, ORIGINAL)]));
}

/// With t1 and t2 registered, the decoy (a task nobody opened) is CC-00 FAIL (`unknown_task`)
/// and claims nothing: t1 is not APPROVEd, and its verdict names `UTIL`.
#[test]
fn a_record_of_a_task_never_opened_claims_nothing() {
    let (_root, ws, logs) = workspace();
    let o = task_open(&ws, &["t1", "t2"]);
    assert_eq!(o.code, 0, "{o:?}");
    assert!(o.stdout.contains("t1, t2"), "{o:?}");
    let mut w = start(&ws, &logs, &[]);
    t1_and_decoy(&ws);
    w.until("both judged", || {
        judged(&ws, "t1", 1) && judged(&ws, "decoy", 1)
    });
    let d = verdict(&ws, "decoy");
    assert_ne!(d["verdict"], "APPROVE", "{d}");
    assert!(cc00(&d).contains("unknown_task"), "{d}");
    let t1 = verdict(&ws, "t1");
    assert_ne!(
        t1["verdict"],
        "APPROVE",
        "the decoy excuses nothing: {t1}\n{}",
        w.output()
    );
    assert!(t1.to_string().contains(UTIL), "{t1}");
    w.signal(libc::SIGTERM);
    w.wait(crate::watch::WAIT);
}

/// Without registration every record's task counts, as before: the decoy's true claim stands
/// and t1 is APPROVEd. Registration is what makes the orchestrator's list the only one.
#[test]
fn without_registration_every_task_counts() {
    let (_root, ws, logs) = workspace();
    let mut w = start(&ws, &logs, &[]);
    t1_and_decoy(&ws);
    // t1 may be judged before the decoy's record lands (REJECT, `UTIL` unclaimed), then again
    // once it has.
    w.until("t1 APPROVEd once the decoy is judged", || {
        judged(&ws, "decoy", 1) && verdict(&ws, "t1")["verdict"] == "APPROVE"
    });
    assert!(!cc00(&verdict(&ws, "decoy")).contains("unknown_task"));
    w.signal(libc::SIGTERM);
    w.wait(crate::watch::WAIT);
}

/// A task id that could name a path elsewhere is refused (exit 2), and so is no id at all.
#[test]
fn task_open_refuses_ids_that_are_not_ids() {
    let (_root, ws, _logs) = git_workspace();
    let o = task_open(&ws, &["../t1"]);
    assert_eq!(o.code, 2, "{o:?}");
    assert!(o.stderr.contains("is not a task id"), "{o:?}");
    let o = run(&["task", "open", &ws.display().to_string()]);
    assert_eq!(o.code, 2, "no id: {o:?}");
}
