//! The executable surface through the binary (SPEC 9, "What runs code is protected by
//! default"): git hooks and config, the project's own hooks folder, links under `.git/`, the
//! agents' hook settings, protected names under `.git/`, `.tasks/` and `.referee/`, each planted
//! with real `git` and file commands after the referee pinned the start; and the other side, an
//! honest commit by the orchestrator that must raise no STOP. Built on the workspaces of
//! [`crate::layouts`].

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use serde_json::json;

use crate::layouts::{
    assert_approved, assert_vetoed, assert_watch_approved, assert_watch_vetoed, result, Ws, APP,
};
use crate::watch::read;

/// A hook planted in `.git/hooks/` runs as the orchestrator at its next commit.
#[test]
fn surface_a_planted_pre_commit_hook_is_vetoed() {
    let w = Ws::repo(&[]);
    w.pin();
    let hook = w.path(".git/hooks/pre-commit");
    fs::write(&hook, "#!/bin/sh\necho planted\n").expect("write");
    fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).expect("chmod");
    w.honest("t1", 1);
    let verdict = w.verify();
    let details = result(&verdict.1, "CC-01")["evidence"]["details"].to_string();
    assert!(
        details.contains("+echo planted"),
        "the hook's diff: {details}"
    );
    assert_vetoed(&w, verdict, "t1", ".git/hooks/pre-commit", "added");
    // Removed again, the next attempt is approved.
    fs::remove_file(&hook).expect("rm");
    w.honest("t1", 2);
    assert_approved(&w, w.verify(), "t1");
}

#[test]
fn surface_a_planted_pre_commit_hook_is_vetoed_under_watch() {
    let w = Ws::repo(&[]);
    let live = w.watch();
    w.write(".git/hooks/pre-commit", "#!/bin/sh\necho planted\n");
    w.honest("t1", 1);
    assert_watch_vetoed(&w, &live, "t1", 1, ".git/hooks/pre-commit");
}

/// `.git/hooks` swapped for a link to a folder of the worker's (with git's samples copied, so
/// every file pinned there still reads the same): the link is vetoed, whatever its name.
#[test]
fn surface_git_hooks_swapped_for_a_link_is_vetoed() {
    let w = Ws::repo(&[]);
    w.pin();
    let elsewhere = w.root.join("evil-hooks");
    let copy = Command::new("cp")
        .args(["-a"])
        .arg(w.path(".git/hooks"))
        .arg(&elsewhere)
        .status()
        .expect("cp");
    assert!(copy.success());
    fs::write(elsewhere.join("pre-commit"), "#!/bin/sh\necho planted\n").expect("write");
    fs::remove_dir_all(w.path(".git/hooks")).expect("rm");
    std::os::unix::fs::symlink(&elsewhere, w.path(".git/hooks")).expect("symlink");
    w.honest("t1", 1);
    assert_vetoed(&w, w.verify(), "t1", ".git/hooks", "added");
}

/// `core.hooksPath` set by the worker's own `git config` points git at hooks of its choosing.
#[test]
fn surface_core_hooks_path_in_git_config_is_vetoed() {
    let w = Ws::repo(&[]);
    w.pin();
    w.git(&["config", "core.hooksPath", "tools/hooks"]);
    w.honest("t1", 1);
    let verdict = w.verify();
    let details = result(&verdict.1, "CC-01")["evidence"]["details"].to_string();
    assert!(
        details.contains("hooksPath = tools/hooks"),
        "the config's diff: {details}"
    );
    assert_vetoed(&w, verdict, "t1", ".git/config", "modified");
}

#[test]
fn surface_core_hooks_path_in_git_config_is_vetoed_under_watch() {
    let w = Ws::repo(&[]);
    let live = w.watch();
    w.git(&["config", "core.hooksPath", "tools/hooks"]);
    w.honest("t1", 1);
    assert_watch_vetoed(&w, &live, "t1", 1, ".git/config");
}

/// A project whose `core.hooksPath` names a folder of its own work tree (husky's `.husky/_`, a
/// `githooks/`): a hook edited or added there runs as the orchestrator at its next commit.
#[test]
fn surface_a_hook_in_the_projects_own_hooks_path_is_vetoed() {
    let w = Ws::repo(&[]);
    w.write("githooks/pre-commit", "#!/bin/sh\nexit 0\n");
    w.git(&["add", "githooks"]);
    w.git(&["commit", "-q", "-m", "hooks"]);
    w.git(&["config", "core.hooksPath", "githooks"]);
    w.pin();
    w.honest("t1", 1);
    assert_approved(&w, w.verify(), "t1");
    w.write("githooks/pre-commit", "#!/bin/sh\necho planted\n");
    w.honest("t1", 2);
    assert_vetoed(&w, w.verify(), "t1", "githooks/pre-commit", "modified");
    w.git(&["checkout", "--", "githooks"]);
    w.write("githooks/post-commit", "#!/bin/sh\necho planted\n");
    w.honest("t1", 3);
    assert_vetoed(&w, w.verify(), "t1", "githooks/post-commit", "added");
}

/// Git writes `index`, `logs/`, `ORIG_HEAD`, objects and refs when the orchestrator commits:
/// none of that is the worker's, and none raises a STOP.
#[test]
fn surface_an_honest_commit_by_the_orchestrator_raises_no_stop() {
    let w = Ws::repo(&[]);
    w.pin();
    w.honest("t1", 1);
    assert_approved(&w, w.verify(), "t1");
    w.git(&["add", APP]);
    w.git(&["commit", "-q", "-m", "t1"]);
    w.git(&["reset", "-q", "--soft", "HEAD~1"]);
    w.git(&["commit", "-q", "-m", "t1 again"]);
    w.git(&["gc", "-q"]);
    let (code, doc) = w.verify();
    assert_eq!(result(&doc, "CC-01")["status"], json!("PASS"), "{doc:#}");
    assert_approved(&w, (code, doc), "t1");
}

#[test]
fn surface_an_honest_commit_by_the_orchestrator_raises_no_stop_under_watch() {
    let w = Ws::repo(&[]);
    let live = w.watch();
    w.honest("t1", 1);
    assert_watch_approved(&w, &live, "t1", 1);
    w.git(&["add", APP]);
    w.git(&["commit", "-q", "-m", "t1"]);
    w.write("src/other.py", "Y = 1\n");
    w.record("t2", 1, &[], &["src/other.py"]);
    let v = w.judged(&live, "t2", 1);
    assert_ne!(
        v["reasons"]
            .as_array()
            .map(|r| r.contains(&json!("protected_file_modified"))),
        Some(true),
        "{v:#}"
    );
    assert!(!w.stop().exists(), "no STOP: {}", read(&w.stop()));
}

/// A protected name under `.tasks/`, `.referee/` or `.git/` is a veto like any other.
#[test]
fn surface_a_protected_name_inside_the_referees_folders_is_vetoed() {
    for place in [
        ".tasks/orchestrator.py",
        ".referee/roles.py",
        ".git/info/safety_x.py",
    ] {
        let w = Ws::repo(&[]);
        w.pin();
        w.write(place, "ROLES = ['admin']\n");
        w.honest("t1", 1);
        assert_vetoed(&w, w.verify(), "t1", place, "added");
    }
}

/// The agents' hook settings make the agent run the worker's commands.
#[test]
fn surface_an_agent_hook_setting_is_vetoed() {
    for place in [
        ".claude/settings.json",
        ".codex/hooks.json",
        ".github/hooks/x.json",
    ] {
        let w = Ws::repo(&[]);
        w.pin();
        w.write(place, "{\"hooks\": {}}\n");
        w.honest("t1", 1);
        assert_vetoed(&w, w.verify(), "t1", place, "added");
    }
}

/// Attributes name filter and diff drivers that git runs.
#[test]
fn surface_gitattributes_and_info_attributes_are_vetoed() {
    for place in [
        ".gitattributes",
        "src/.gitattributes",
        ".git/info/attributes",
    ] {
        let w = Ws::repo(&[]);
        w.pin();
        w.write(place, "*.py filter=x\n");
        w.honest("t1", 1);
        assert_vetoed(&w, w.verify(), "t1", place, "added");
    }
}

/// An ignored protected file that was there when the referee started (a local agent setting
/// the project ignores) is no veto; changed afterwards, it is.
#[test]
fn surface_an_ignored_protected_file_present_at_start_is_vetoed_only_when_changed() {
    let w = Ws::repo(&[]);
    w.write(".gitignore", ".claude/settings.local.json\n");
    w.git(&["add", ".gitignore"]);
    w.git(&["commit", "-q", "-m", "ignore"]);
    w.write(".claude/settings.local.json", "{\"permissions\": {}}\n");
    w.pin();
    w.honest("t1", 1);
    assert_approved(&w, w.verify(), "t1");
    w.write(
        ".claude/settings.local.json",
        "{\"hooks\": {\"Stop\": [{\"command\": \"sh x\"}]}}\n",
    );
    w.honest("t1", 2);
    assert_vetoed(
        &w,
        w.verify(),
        "t1",
        ".claude/settings.local.json",
        "modified",
    );
}
