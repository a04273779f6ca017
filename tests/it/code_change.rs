//! `referee watch WORKSPACE --protocol code-change`, end to end: a real git (or plain) workspace
//! in a tempdir, task records renamed into `.tasks/` as an orchestrator would, real inotify,
//! `kill -9` and a restart. Every wait polls against a deadline and fails with the daemon's
//! output.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::util::Output;
use crate::watch::{exit_code, read, status, Watch, WAIT};

pub(crate) const PROTECTED: &str = "src/orchestrator.py";
pub(crate) const APP: &str = "src/app.py";

pub(crate) fn sha(bytes: &[u8]) -> String {
    referee::workspace::sha256(bytes)
}

/// Runs git in `ws` as a worker or orchestrator would (never taking the index lock).
pub(crate) fn git(ws: &Path, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(ws)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The first content of `APP` in every test workspace.
pub(crate) const ORIGINAL: &str = "def main():\n    return 1\n";

/// `root/ws`, a plain folder (no git) holding `APP` as `ORIGINAL`; `root/logs` for the
/// daemon's output.
pub(crate) fn plain_workspace() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let root = tempfile::tempdir().expect("tempdir");
    let ws = root.path().join("ws");
    let logs = root.path().join("logs");
    fs::create_dir_all(ws.join("src")).expect("mkdir");
    fs::create_dir(&logs).expect("mkdir");
    fs::write(ws.join(APP), ORIGINAL).expect("write");
    (root, ws, logs)
}

/// [`plain_workspace`] with `PROTECTED` too, made a git work tree with one commit.
pub(crate) fn git_workspace() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let (root, ws, logs) = plain_workspace();
    fs::write(ws.join(PROTECTED), "ROLES = ['worker']\n").expect("write");
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-q", "-m", "init"]);
    (root, ws, logs)
}

/// Writes `.tasks/<id>.json` the way an orchestrator should: to a temp name, then renamed into
/// place. `modified` are listed as modified, with their hashes (`base`: the baseline contents).
pub(crate) fn record(
    ws: &Path,
    id: &str,
    attempt: u64,
    modified: &[&str],
    base: &BTreeMap<&str, &str>,
) {
    let mut pre = serde_json::Map::new();
    let mut post = serde_json::Map::new();
    for p in modified {
        if let Some(b) = base.get(p) {
            pre.insert((*p).into(), json!(sha(b.as_bytes())));
        }
        let now = fs::read(ws.join(p)).expect("a listed file");
        post.insert((*p).into(), json!(sha(&now)));
    }
    let doc = json!({
        "task_id": id,
        "status": "pending_review",
        "description": "a task",
        "attempt": attempt,
        "summary": "Here's what I did: the change.",
        "changes": {"added": [], "modified": modified, "removed": []},
        "pre_hashes": pre,
        "post_hashes": post,
    });
    put_record(ws, id, &serde_json::to_string_pretty(&doc).expect("json"));
}

pub(crate) fn put_record(ws: &Path, id: &str, text: &str) {
    let tasks = ws.join(".tasks");
    fs::create_dir_all(&tasks).expect("mkdir .tasks");
    let tmp = tasks.join(format!(".{id}.tmp"));
    fs::write(&tmp, text).expect("write record");
    fs::rename(&tmp, tasks.join(format!("{id}.json"))).expect("rename record");
}

/// The orchestrator acts on a verdict: the record leaves `pending_review`.
pub(crate) fn settle_record(ws: &Path, id: &str, status: &str) {
    let path = ws.join(".tasks").join(format!("{id}.json"));
    let mut doc: Value = serde_json::from_str(&read(&path)).expect("record");
    doc["status"] = json!(status);
    put_record(ws, id, &doc.to_string());
}

pub(crate) fn verdict(ws: &Path, id: &str) -> Value {
    let text = read(&ws.join(format!(".referee/OBSERVER-VERDICT-{id}.json")));
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

pub(crate) fn judged(ws: &Path, id: &str, attempt: u64) -> bool {
    verdict(ws, id)["attempt"] == json!(attempt)
}

pub(crate) fn stop(ws: &Path) -> PathBuf {
    ws.join(".referee/OBSERVER-STOP.md")
}

/// A hash of every file in the tree but `.referee/` (`.git/` included): what the referee
/// must never change.
fn tree_hash(ws: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let mut entries: Vec<_> = fs::read_dir(dir).expect("read_dir").flatten().collect();
        entries.sort_by_key(|e| e.file_name());
        for e in entries {
            let path = e.path();
            let rel = path
                .strip_prefix(root)
                .expect("under root")
                .to_string_lossy()
                .into_owned();
            if rel == ".referee" {
                continue;
            }
            let meta = fs::symlink_metadata(&path).expect("lstat");
            if meta.is_dir() {
                out.insert(rel.clone(), "dir".into());
                walk(root, &path, out);
            } else {
                let bytes = fs::read(&path).unwrap_or_default();
                let mtime = meta.modified().ok().map(|t| format!("{t:?}"));
                out.insert(rel, format!("{} {mtime:?}", sha(&bytes)));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(ws, ws, &mut out);
    out
}

pub(crate) fn start(ws: &Path, logs: &Path, extra: &[&str]) -> Watch {
    let mut args = vec!["--protocol", "code-change"];
    args.extend_from_slice(extra);
    let w = Watch::start(ws, logs, &args);
    let hb = ws.join(".referee/OBSERVER-HEARTBEAT.json");
    let pid = w.pid();
    w.until("this referee's heartbeat is in .referee/", || {
        serde_json::from_str::<Value>(&read(&hb)).is_ok_and(|h| h["pid"] == json!(pid))
    });
    w
}

/// Rejected for a protected file, approved once fixed, escalated for an identical retry, and
/// escalated at the third REJECT across a `kill -9` and restart; nothing written outside
/// `.referee/`.
#[test]
fn a_workspace_is_judged_live_and_the_guards_hold_across_restarts() {
    let (_root, ws, logs) = git_workspace();
    let base = BTreeMap::from([
        (APP, "def main():\n    return 1\n"),
        (PROTECTED, "ROLES = ['worker']\n"),
    ]);
    let mut w = start(&ws, &logs, &[]);
    assert!(ws.join(".referee/.gitignore").exists());
    assert_eq!(status(&ws, true).code, 0, "{}", w.output());

    // Attempt 1 touches a protected file: REJECT, STOP.
    fs::write(ws.join(PROTECTED), "ROLES = ['worker', 'admin']\n").expect("write");
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    record(&ws, "t1", 1, &[APP, PROTECTED], &base);
    let before = tree_hash(&ws);
    w.until("t1 attempt 1 judged", || judged(&ws, "t1", 1));
    let v = verdict(&ws, "t1");
    assert_eq!(v["verdict"], "REJECT", "{v}");
    assert!(
        v["reasons"]
            .as_array()
            .is_some_and(|r| r.contains(&json!("protected_file_modified"))),
        "{v}"
    );
    w.until("STOP written", || stop(&ws).exists());
    assert!(read(&stop(&ws)).contains("CC-01"));
    w.until("the markdown verdict too", || {
        read(&ws.join(".referee/OBSERVER-VERDICT-t1.md")).contains("REJECT")
    });
    assert_eq!(
        tree_hash(&ws),
        before,
        "the referee wrote outside .referee/"
    );
    assert_eq!(status(&ws, false).code, 1, "STOP present");
    assert_eq!(status(&ws, true).code, 1, "STOP present, referee live");

    // Fixed: the protected file restored, attempt 2 a clean change: APPROVE, STOP gone.
    fs::write(ws.join(PROTECTED), base[PROTECTED]).expect("write");
    record(&ws, "t1", 2, &[APP], &base);
    w.until("t1 attempt 2 judged", || judged(&ws, "t1", 2));
    assert_eq!(verdict(&ws, "t1")["verdict"], "APPROVE", "{}", w.output());
    w.until("STOP removed", || !stop(&ws).exists());
    assert_eq!(status(&ws, false).code, 0);
    // The orchestrator merges t1.
    settle_record(&ws, "t1", "approved");
    git(&ws, &["commit", "-q", "-am", "t1"]);

    // t2 retries with an identical diff: ESCALATE.
    let base2 = BTreeMap::from([
        (APP, "def main():\n    return 2\n"),
        (PROTECTED, "ROLES = ['worker']\n"),
    ]);
    fs::write(ws.join(PROTECTED), "ROLES = []\n").expect("write");
    record(&ws, "t2", 1, &[PROTECTED], &base2);
    w.until("t2 attempt 1 judged", || judged(&ws, "t2", 1));
    assert_eq!(verdict(&ws, "t2")["verdict"], "REJECT");
    record(&ws, "t2", 2, &[PROTECTED], &base2);
    w.until("t2 attempt 2 judged", || judged(&ws, "t2", 2));
    let v = verdict(&ws, "t2");
    assert_eq!(v["verdict"], "ESCALATE", "{v}");
    assert!(v["reasons"]
        .as_array()
        .is_some_and(|r| r.contains(&json!("identical_diff"))));
    w.until("STOP says escalated", || {
        read(&stop(&ws)).contains("ESCALATED: human review required")
    });
    // The orchestrator takes t2 to a human and puts the file back.
    fs::write(ws.join(PROTECTED), base2[PROTECTED]).expect("write");
    settle_record(&ws, "t2", "escalated");
    w.until("STOP removed after t2", || !stop(&ws).exists());

    // t3: two REJECTs (an unlisted change), then kill -9; the third REJECT after the restart
    // escalates (the kept attempts are the guards' memory).
    for (attempt, body) in [(1, "return 30"), (2, "x = [1, 2, 3]\n    return len(x)")] {
        fs::write(ws.join(APP), format!("def main():\n    {body}\n")).expect("write");
        record(&ws, "t3", attempt, &[], &base2);
        w.until("t3 judged", || judged(&ws, "t3", attempt));
        assert_eq!(verdict(&ws, "t3")["verdict"], "REJECT", "{}", w.output());
    }
    w.kill9();
    let before = tree_hash(&ws);
    let mut w = start(&ws, &logs, &[]);
    assert_eq!(status(&ws, true).code, 0, "{}", w.output());
    assert_eq!(
        verdict(&ws, "t3")["attempt"],
        json!(2),
        "attempt 2 is not judged again after the restart"
    );
    assert_eq!(
        tree_hash(&ws),
        before,
        "the restart wrote outside .referee/"
    );
    fs::write(
        ws.join(APP),
        "import sys\n\n\ndef main(argv):\n    print(argv)\n    return 0\n",
    )
    .expect("write");
    record(&ws, "t3", 3, &[], &base2);
    w.until("t3 attempt 3 judged", || judged(&ws, "t3", 3));
    let v = verdict(&ws, "t3");
    assert_eq!(v["verdict"], "ESCALATE", "{v}\n{}", w.output());
    assert!(v["reasons"]
        .as_array()
        .is_some_and(|r| r.contains(&json!("max_rejects"))));
    w.until("STOP escalated", || {
        read(&stop(&ws)).contains("ESCALATED: human review required")
    });

    // Events: one `verdict` per judged attempt, across both runs.
    let verdicts = || -> Vec<Value> {
        read(&ws.join(".referee/OBSERVER-EVENTS.jsonl"))
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|e| e["payload"].clone())
            .filter(|p| p["event"] == "verdict")
            .collect()
    };
    w.until("seven verdict events", || verdicts().len() >= 7);
    assert_eq!(verdicts().len(), 7, "{:?}", verdicts());

    // SIGTERM: the report, exit 1 (an escalation stands).
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    assert!(read(&ws.join(".referee/OBSERVER-REPORT.md")).contains("t3"));
    assert!(stop(&ws).exists(), "a standing STOP stays");
    assert_eq!(status(&ws, true).code, 1, "finished, STOP present");

    // Nothing of the referee's shows in git, and its writes never touched the tree.
    let out = Command::new("git")
        .current_dir(&ws)
        .env("GIT_OPTIONAL_LOCKS", "0")
        .args(["status", "--porcelain", "--ignored"])
        .output()
        .expect("git status");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(!text.contains("?? .referee"), "{text}");
}

/// The state directory `watch` makes for `dir` by default (under the tests' `XDG_STATE_HOME`).
pub(crate) fn default_state(dir: &Path) -> PathBuf {
    crate::state_home()
        .join("referee")
        .join(referee::state::name(
            &referee::state::live::Here::of(dir).expect("the directory opened"),
        ))
}

/// Outside git and without `--baseline-dir`: the start snapshot is the baseline, and a restart
/// keeps it.
#[test]
fn a_plain_workspace_is_measured_against_the_start_snapshot_across_restarts() {
    let (_root, ws, logs) = plain_workspace();
    let base = BTreeMap::from([(APP, ORIGINAL)]);

    let mut w = start(&ws, &logs, &[]);
    let kept = default_state(&ws).join("baseline/tree").join(APP);
    assert_eq!(
        read(&kept),
        ORIGINAL,
        "the start snapshot, in the state directory"
    );
    assert!(
        !ws.join(".referee/baseline").exists(),
        "not in the worker's reach"
    );
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    record(&ws, "t1", 1, &[APP], &base);
    w.until("t1 judged", || judged(&ws, "t1", 1));
    assert_eq!(verdict(&ws, "t1")["verdict"], "APPROVE", "{}", w.output());
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());

    // Restarted with the workspace changed: the baseline is still the first snapshot, so the
    // record's pre-hash (of the original) still matches.
    let mut w = start(&ws, &logs, &[]);
    assert_eq!(read(&kept), ORIGINAL, "the restart kept the first snapshot");
    fs::write(ws.join(APP), "def main():\n    return 3\n").expect("write");
    record(&ws, "t1", 2, &[APP], &base);
    w.until("t1 attempt 2 judged", || judged(&ws, "t1", 2));
    let v = verdict(&ws, "t1");
    assert_eq!(v["verdict"], "APPROVE", "{v}\n{}", w.output());
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
}

/// A `.referee` that is a symlink (or a file) is refused before anything runs.
#[test]
fn a_symlinked_referee_folder_is_refused() {
    let root = tempfile::tempdir().expect("tempdir");
    let ws = root.path().join("ws");
    let elsewhere = root.path().join("elsewhere");
    fs::create_dir_all(&ws).expect("mkdir");
    fs::create_dir_all(&elsewhere).expect("mkdir");
    std::os::unix::fs::symlink(&elsewhere, ws.join(".referee")).expect("symlink");
    let Output {
        code, stderr: err, ..
    } = crate::watch::run(&[
        "watch",
        ws.to_str().expect("utf-8"),
        "--protocol",
        "code-change",
        "--timeout",
        "1s",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(".referee"), "{err}");
    assert_eq!(fs::read_dir(&elsewhere).expect("read_dir").count(), 0);
}

/// The third guard, live and across a `kill -9`: attempts 2 and 3 differ in one line of a
/// 120-line change (both MINOR_ISSUES, so neither of the other guards applies), and attempt 3,
/// judged by a restarted referee, is `ESCALATE_CONVERGENCE` against the kept attempt 2.
#[test]
fn a_rework_going_in_circles_is_escalated_across_a_restart() {
    let (_root, ws, logs) = git_workspace();
    let base = BTreeMap::from([(APP, "def main():\n    return 1\n")]);
    // A trailing space on the last line: CC-09 (SIGNIFICANT) fails, so MINOR_ISSUES.
    let attempt = |k: u64| -> String {
        let mut s = String::from("def main():\n    return 1\n\n");
        for i in 0..120 {
            let v = if i == 60 { k } else { i };
            s.push_str(&format!("X_{i} = {v}\n"));
        }
        s.push_str("Y = 1 \n");
        s
    };
    let mut w = start(&ws, &logs, &[]);
    for k in [1, 2] {
        fs::write(ws.join(APP), attempt(k)).expect("write");
        record(&ws, "t4", k, &[APP], &base);
        w.until("t4 judged", || judged(&ws, "t4", k));
        let v = verdict(&ws, "t4");
        assert_eq!(v["verdict"], "MINOR_ISSUES", "{v}\n{}", w.output());
        assert!(v["cleanup_task"].is_string(), "{v}");
    }
    assert!(
        verdict(&ws, "t4")["diff_similarity"]
            .as_f64()
            .is_some_and(|r| r >= 0.97),
        "attempt 2 is as near, but convergence starts at attempt 3"
    );
    assert!(!stop(&ws).exists(), "no veto, no escalation yet");
    w.kill9();

    let mut w = start(&ws, &logs, &[]);
    fs::write(ws.join(APP), attempt(3)).expect("write");
    record(&ws, "t4", 3, &[APP], &base);
    w.until("t4 attempt 3 judged", || judged(&ws, "t4", 3));
    let v = verdict(&ws, "t4");
    assert_eq!(v["verdict"], "ESCALATE_CONVERGENCE", "{v}\n{}", w.output());
    assert!(
        v["reasons"]
            .as_array()
            .is_some_and(|r| r.contains(&json!("convergence"))),
        "{v}"
    );
    let ratio = v["diff_similarity"].as_f64().unwrap_or(0.0);
    assert!((0.97..1.0).contains(&ratio), "{v}");
    w.until("STOP escalated", || {
        read(&stop(&ws)).contains("ESCALATED: human review required")
    });
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
}

/// `watch --root ROOT --protocol code-change`: every workspace under the root (a git work tree
/// and a plain folder, whose start snapshot is its baseline) judged on its own, with its own
/// `.referee/`; a veto in one raises STOP there only; `status` works on each.
#[test]
fn one_process_referees_every_workspace_under_a_root() {
    let top = tempfile::tempdir().expect("tempdir");
    let root = top.path().join("root");
    let logs = top.path().join("logs");
    fs::create_dir_all(&root).expect("mkdir");
    fs::create_dir(&logs).expect("mkdir");
    let (_git_root, git_ws, _) = git_workspace();
    let a = root.join("a");
    fs::rename(&git_ws, &a).expect("move the git workspace under the root");
    let (_plain_root, plain_ws, _) = plain_workspace();
    let b = root.join("b");
    fs::rename(&plain_ws, &b).expect("move the plain workspace under the root");

    let mut w = crate::watch::Watch::start_root(&root, &logs, &["--protocol", "code-change"]);
    w.until("both workspaces are refereed", || {
        [&a, &b]
            .iter()
            .all(|ws| ws.join(".referee/OBSERVER-HEARTBEAT.json").exists())
    });
    assert!(default_state(&b).join("baseline/tree").join(APP).is_file());

    let base_a = BTreeMap::from([(PROTECTED, "ROLES = ['worker']\n")]);
    fs::write(a.join(PROTECTED), "ROLES = ['root']\n").expect("write");
    record(&a, "t1", 1, &[PROTECTED], &base_a);
    let base_b = BTreeMap::from([(APP, ORIGINAL)]);
    fs::write(b.join(APP), "def main():\n    return 2\n").expect("write");
    record(&b, "t1", 1, &[APP], &base_b);
    w.until("both judged", || judged(&a, "t1", 1) && judged(&b, "t1", 1));
    assert_eq!(verdict(&a, "t1")["verdict"], "REJECT", "{}", w.output());
    assert_eq!(verdict(&b, "t1")["verdict"], "APPROVE", "{}", w.output());
    w.until("STOP in a", || stop(&a).exists());
    assert!(!stop(&b).exists(), "b's STOP is b's own");
    // Under load a heartbeat can lag a turn behind the verdicts: wait for both answers.
    w.until("a's status says STOP and b's says go", || {
        status(&a, true).code == 1 && status(&b, true).code == 0
    });
    assert!(
        !root.join(".referee").exists(),
        "nothing at the root itself"
    );

    w.signal(libc::SIGTERM);
    assert_eq!(
        exit_code(w.wait(WAIT)),
        1,
        "the worst of both: {}",
        w.output()
    );
    assert!(a.join(".referee/OBSERVER-REPORT.md").is_file());
    assert!(b.join(".referee/OBSERVER-REPORT.md").is_file());
}

/// A record written into a `.tasks/` folder made a moment before (the orchestrator's first
/// task, or one that deletes and re-creates the folder) is judged even when it lands before
/// the watch on the new folder exists: a new folder is looked at again once it has settled.
#[test]
fn a_record_in_a_folder_made_just_before_it_is_judged() {
    let (_root, ws, logs) = plain_workspace();
    let base = BTreeMap::from([(APP, ORIGINAL)]);
    let mut w = start(&ws, &logs, &[]);
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    for i in 0..8 {
        let task = format!("n{i}");
        let _ = fs::remove_dir_all(ws.join(".tasks"));
        // `record` makes `.tasks/`, writes the temp file and renames it, with no pause.
        record(&ws, &task, 1, &[APP], &base);
        w.until(&format!("{task} judged"), || judged(&ws, &task, 1));
        assert_eq!(verdict(&ws, &task)["verdict"], "APPROVE", "{}", w.output());
    }
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
}

/// The event log names the paths of a veto when it is raised and when it is lifted, with what
/// happened to each.
#[test]
fn the_event_log_names_the_paths_of_a_veto_raised_and_lifted() {
    let (_root, ws, logs) = git_workspace();
    let mut w = start(&ws, &logs, &[]);
    let original = read(&ws.join(PROTECTED));
    fs::write(ws.join(PROTECTED), "ROLES = ['worker', 'admin']\n").expect("write");
    w.until("STOP written", || stop(&ws).exists());
    let vetoes = || -> Vec<Value> {
        read(&ws.join(".referee/OBSERVER-EVENTS.jsonl"))
            .lines()
            .filter_map(|l| serde_json::from_str::<Value>(l).ok())
            .map(|e| e["payload"].clone())
            .filter(|p| p["event"] == "veto")
            .collect()
    };
    w.until("a veto event", || !vetoes().is_empty());
    let raised = &vetoes()[0];
    assert_eq!(
        raised["paths"],
        json!([format!("{PROTECTED} (modified)")]),
        "{raised}"
    );
    fs::write(ws.join(PROTECTED), &original).expect("restore");
    w.until("STOP removed", || !stop(&ws).exists());
    w.until("the veto lifted in the log", || vetoes().len() >= 2);
    let lifted = &vetoes()[1];
    assert_eq!(lifted["paths"], json!([]), "{lifted}");
    assert_eq!(
        lifted["lifted"],
        json!([format!("{PROTECTED} (modified)")]),
        "{lifted}"
    );
    assert_eq!(
        lifted["text"],
        json!(format!("veto lifted: {PROTECTED} (modified)"))
    );
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());
}

/// A commit that changes a protected path is a veto even when the work tree matches it, and
/// removing the commit's tree object (so what it committed cannot be read) keeps the veto: an
/// unreadable HEAD is never "nothing committed".
#[test]
fn a_commit_to_a_protected_path_is_vetoed_even_when_its_tree_is_removed() {
    let (root, ws, _logs) = git_workspace();
    let state = root.path().join("state");
    let verify = || verify_write(&ws, &state);
    assert_eq!(verify().0, 0, "the pristine workspace pins");
    git(&ws, &["update-index", "--chmod=+x", PROTECTED]);
    git(&ws, &["commit", "-q", "-m", "make it executable"]);
    let (code, text) = verify();
    assert_eq!(code, 1, "{text}");
    assert!(
        text.contains(PROTECTED) && text.contains("by commit"),
        "{text}"
    );
    let tree = String::from_utf8(
        Command::new("git")
            .current_dir(&ws)
            .args(["rev-parse", "HEAD^{tree}"])
            .output()
            .expect("git")
            .stdout,
    )
    .expect("utf-8");
    let tree = tree.trim();
    fs::remove_file(ws.join(".git/objects").join(&tree[..2]).join(&tree[2..])).expect("rm tree");
    let (code, text) = verify();
    assert_eq!(code, 1, "{text}");
    assert!(text.contains("what it committed is unknown"), "{text}");
}

/// `referee verify WS --protocol code-change --write --state-dir STATE`: exit code and stdout.
fn verify_write(ws: &Path, state: &Path) -> (i32, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_referee"))
        .arg("verify")
        .arg(ws)
        .args(["--protocol", "code-change", "--write", "--state-dir"])
        .arg(state)
        .output()
        .expect("referee");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}
