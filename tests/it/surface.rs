//! The executable surface through the binary (SPEC 9, "What runs code is protected by
//! default"): git hooks and config, the project's own hooks folder, links under `.git/`, the
//! agents' hook settings, protected names under `.git/`, `.tasks/` and `.referee/`, each planted
//! with real `git` and file commands after the referee pinned the start; and the other side, an
//! honest commit by the orchestrator that must raise no STOP. Built on the workspaces of
//! [`crate::layouts`].

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::process::Command;

use serde_json::{json, Value};

use crate::layouts::{
    assert_approved, assert_vetoed, assert_watch_approved, assert_watch_vetoed, result,
    task_verdict, Ws, APP, PROTECTED,
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

/// A one-shot `verify` with no state directory has no start to date a hook by: a hook planted
/// with the work is not let through as the user's (it was APPROVEd), and the evidence says why
/// and how to give the referee a start.
#[test]
fn surface_a_hook_blocks_a_verify_with_no_start() {
    let w = Ws::repo(&[]);
    w.write(".git/hooks/pre-commit", "#!/bin/sh\necho planted\n");
    w.honest("t1", 1);
    let ws = w.ws.to_str().expect("utf-8");
    let out = w.referee(&[
        "verify",
        ws,
        "--protocol",
        "code-change",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 1, "{}", out.stdout);
    assert!(!w.state.exists(), "no state directory is made");
    let doc: Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(task_verdict(&doc, "t1"), "REJECT", "{doc:#}");
    let ev = result(&doc, "CC-01")["evidence"]["details"].to_string();
    assert!(
        ev.contains("protected_file_modified: .git/hooks/pre-commit (a hook git runs; no state directory says it was there")
            && ev.contains("before the work gives it a start"),
        "{ev}"
    );
    // git's own samples are no hook git runs: removed, the same verify approves.
    fs::remove_file(w.path(".git/hooks/pre-commit")).expect("rm");
    let out = w.referee(&[
        "verify",
        ws,
        "--protocol",
        "code-change",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 0, "{}", out.stdout);
}

/// With no start, `.git/config` is read for what git would run: a `!` alias set with the work
/// blocks (it was APPROVEd), while the keys tools add as data (`gh`'s `gh-resolved`, VS Code's
/// `vscode-merge-base`, a plain alias) run nothing and need no start.
#[test]
fn surface_a_git_config_that_runs_a_command_blocks_a_verify_with_no_start() {
    let w = Ws::repo(&[]);
    w.git(&["config", "remote.origin.url", "git@example.com:o/r.git"]);
    w.git(&["config", "remote.origin.gh-resolved", "base"]);
    w.git(&["config", "branch.main.vscode-merge-base", "origin/main"]);
    w.git(&["config", "alias.st", "status -sb"]);
    w.honest("t1", 1);
    let ws = w.ws.to_str().expect("utf-8");
    let verify = || {
        w.referee(&[
            "verify",
            ws,
            "--protocol",
            "code-change",
            "--format",
            "json",
        ])
    };
    let out = verify();
    assert_eq!(out.code, 0, "an honest config: {}", out.stdout);
    w.git(&["config", "alias.ci", "!sh -c 'echo planted' && git commit"]);
    let out = verify();
    assert_eq!(out.code, 1, "{}", out.stdout);
    let doc: Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(task_verdict(&doc, "t1"), "REJECT", "{doc:#}");
    let headline = doc["headline"].as_str().unwrap_or_default();
    assert!(
        headline.contains(
            "`.git/config` (git config that runs a command (alias.ci); no state directory says"
        ),
        "{headline}"
    );
}

/// A team that protects `**/*.md` and `**/*.json` protects its own files, not the protocol's:
/// a task record and what the referee writes in `.referee/` are never a protected change.
/// (Every honest task was REJECTed: the referee's own report, written at the pin, read as
/// "added since the start", and the record itself as a protected addition.)
#[test]
fn surface_broad_globs_never_cover_the_records_or_the_referees_own_files() {
    let w = Ws::repo(&[]);
    let ws = w.ws.to_str().expect("utf-8");
    let verify = || {
        let out = w.referee(&[
            "verify",
            ws,
            "--protocol",
            "code-change",
            "--write",
            "--format",
            "json",
            "--protect",
            "**/*.md",
            "--protect",
            "**/*.json",
        ]);
        let doc: Value = serde_json::from_str(&out.stdout).expect("json");
        (out.code, doc)
    };
    assert_eq!(verify().0, 0, "the pin");
    for attempt in 1..=2 {
        w.honest("t1", attempt);
        let (code, doc) = verify();
        assert_eq!(task_verdict(&doc, "t1"), "APPROVE", "{doc:#}");
        assert_eq!(code, 0, "{doc:#}");
    }
    // The project's own Markdown is protected as the team asked.
    w.write("docs/notes.md", "# Notes\n");
    w.honest("t1", 3);
    let (code, doc) = verify();
    assert_eq!(code, 1, "{doc:#}");
    let headline = doc["headline"].as_str().unwrap_or_default();
    assert!(headline.contains("`docs/notes.md` (added)"), "{headline}");
    assert!(!headline.contains(".referee/"), "{headline}");
}

/// The first `verify --write` comes after the work (a record pending review): the start it
/// pins holds the worker's hook, so that start dates nothing. The hook is vetoed then, and at
/// the next attempt too (a pin that took it as the user's let attempt 2 through).
#[test]
fn surface_a_hook_there_when_the_first_look_came_after_the_work_is_vetoed_at_every_attempt() {
    let w = Ws::repo(&[]);
    w.write(".git/hooks/pre-commit", "#!/bin/sh\necho planted\n");
    w.honest("t1", 1);
    let verdict = w.verify();
    let ev = result(&verdict.1, "CC-01")["evidence"]["details"].to_string();
    assert!(
        ev.contains("taken by a judgment of work already done (`.tasks/t1.json` was there then)"),
        "{ev}"
    );
    assert_vetoed(
        &w,
        verdict,
        "t1",
        ".git/hooks/pre-commit",
        "a hook git runs",
    );
    w.honest("t1", 2);
    assert_vetoed(
        &w,
        w.verify(),
        "t1",
        ".git/hooks/pre-commit",
        "a hook git runs",
    );
    // Changed, it is still vetoed; removed as the STOP asked, the next attempt is approved
    // (the start that held it dates nothing, so its removal is no change either).
    // (Task t2: a third REJECT of t1 would escalate.)
    fs::remove_file(w.path(".tasks/t1.json")).expect("rm t1's record");
    w.write(".git/hooks/pre-commit", "#!/bin/sh\necho planted again\n");
    w.write(APP, "def main():\n    return 'two'\n");
    w.record("t2", 1, &[APP], &[]);
    assert_vetoed(&w, w.verify(), "t2", ".git/hooks/pre-commit", "modified");
    fs::remove_file(w.path(".git/hooks/pre-commit")).expect("rm");
    w.write(APP, "def main():\n    return 'three'\n");
    w.record("t2", 2, &[APP], &[]);
    assert_approved(&w, w.verify(), "t2");
}

/// The user's own Git LFS hook, and a first look after the work: the referee cannot tell it
/// from a planted one and blocks; the human looks, vouches for it with `accept --start`, and
/// the next attempt is approved. A hook planted after that is vetoed as any change since the
/// start is.
#[test]
fn surface_accept_start_vouches_for_the_users_hook_after_a_late_first_look() {
    let w = Ws::repo(&[]);
    let lfs = "#!/bin/sh\ncommand -v git-lfs >/dev/null 2>&1 || exit 2\ngit lfs pre-push \"$@\"\n";
    w.write(".git/hooks/pre-push", lfs);
    w.honest("t1", 1);
    assert_vetoed(
        &w,
        w.verify(),
        "t1",
        ".git/hooks/pre-push",
        "a hook git runs",
    );
    let ws = w.ws.to_str().expect("utf-8");
    let out = w.referee(&["accept", ws, "--start"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("accepted the start (accept 1)")
            && out.stdout.contains("  .git/hooks/pre-push\n")
            && out.stdout.contains("the start pinned before dated nothing"),
        "{}",
        out.stdout
    );
    let accepted = read(&w.state.join("accepted.json"));
    assert!(accepted.contains("\"start\": true"), "{accepted}");
    w.honest("t1", 2);
    assert_approved(&w, w.verify(), "t1");
    w.write(".git/hooks/post-checkout", "#!/bin/sh\necho planted\n");
    w.honest("t1", 3);
    assert_vetoed(&w, w.verify(), "t1", ".git/hooks/post-checkout", "added");
}

/// `watch` started after the work (a record already there) with the user's hook: the live
/// referee cannot date it and stops; `accept --start` lifts that STOP without a restart, and
/// the event log says what was vouched for.
#[test]
fn surface_accept_start_lifts_a_live_stop() {
    let w = Ws::repo(&[]);
    w.write(
        ".git/hooks/pre-push",
        "#!/bin/sh\ngit lfs pre-push \"$@\"\n",
    );
    w.honest("t1", 1);
    let live = w.watch();
    live.until("the STOP names the hook", || {
        read(&w.stop()).contains(".git/hooks/pre-push")
    });
    let ws = w.ws.to_str().expect("utf-8");
    let out = w.referee(&["accept", ws, "--start"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains("  .git/hooks/pre-push\n") && out.stdout.contains("`*.sample` hooks"),
        "{}",
        out.stdout
    );
    live.until("the STOP is lifted", || !w.stop().exists());
    live.until("status says go", || w.status() == 0);
    let status = w.referee(&["status", ws, "--task", "t1"]);
    assert_eq!(status.code, 0, "{}", status.stdout);
    assert!(
        live.output().contains("accepted the start as it is now"),
        "{}",
        live.output()
    );
}

/// `accept --start` is a start for the paths no commit holds, nothing more: a protected file
/// the baseline holds stays vetoed (and is listed so), and with no state directory there is no
/// referee to vouch to (refused, exit 1).
#[test]
fn surface_accept_start_does_not_cover_a_protected_file_and_needs_a_referee() {
    let w = Ws::repo(&[]);
    let ws = w.ws.to_str().expect("utf-8");
    let refused = w.referee(&["accept", ws, "--start"]);
    assert_eq!(refused.code, 1, "{}\n{}", refused.stdout, refused.stderr);
    assert!(
        refused
            .stderr
            .contains("no referee has judged this workspace"),
        "{}",
        refused.stderr
    );
    w.pin();
    w.write(PROTECTED, "print('mine')\n");
    let out = w.referee(&["accept", ws, "--start"]);
    assert_eq!(out.code, 0, "{}\n{}", out.stdout, out.stderr);
    assert!(
        out.stdout.contains(
            "still vetoed (a start does not cover them):\n  src/orchestrator.py (modified)"
        ),
        "{}",
        out.stdout
    );
    w.honest("t1", 1);
    assert_vetoed(&w, w.verify(), "t1", PROTECTED, "modified");
}

/// The user's own hook (pre-commit, Git LFS) there when the referee first looked, before any
/// work: the user's, and every honest attempt is approved.
#[test]
fn surface_the_users_hook_there_before_the_work_is_theirs() {
    let w = Ws::repo(&[]);
    w.write(
        ".git/hooks/pre-push",
        "#!/bin/sh\ncommand -v git-lfs >/dev/null 2>&1 || exit 2\ngit lfs pre-push \"$@\"\n",
    );
    w.pin();
    w.honest("t1", 1);
    assert_approved(&w, w.verify(), "t1");
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

/// A virtual environment in the workspace, made before the work by `python3 -m venv`: the
/// default rules protect no environment (an honest `pip install -e .` adds a `.pth`), but with
/// the globs `referee init` suggests for it, in the vars file it writes, a `.pth` planted in its
/// `site-packages` (its `import` lines run at every start of that Python) is vetoed, while the
/// environment as it stood at the start (a `.pth` of its own included) is the user's.
#[test]
fn surface_a_pth_planted_in_a_virtual_environment_is_vetoed_with_the_init_rules() {
    let w = Ws::repo(&[]);
    w.write(".gitignore", ".venv/\n");
    w.git(&["add", ".gitignore"]);
    w.git(&["commit", "-q", "-m", "ignore the environment"]);
    let venv = Command::new("python3")
        .args(["-m", "venv", "--without-pip", ".venv"])
        .current_dir(&w.ws)
        .status()
        .expect("python3 -m venv");
    assert!(venv.success());
    let lib = fs::read_dir(w.path(".venv/lib"))
        .expect(".venv/lib")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .find(|n| n.starts_with("python"))
        .expect("lib/pythonX.Y");
    let site = format!(".venv/lib/{lib}/site-packages");
    w.write(
        &format!("{site}/distutils-precedence.pth"),
        "import os; var = 'SETUPTOOLS_USE_DISTUTILS'\n",
    );

    let vars = w.root.join("rules.toml");
    let (ws, vars_arg) = (w.ws.to_str().expect("utf-8"), vars.to_str().expect("utf-8"));
    let out = crate::util::run(&["init", ws, "--output", vars_arg]);
    assert_eq!(out.code, 0, "{out:?}");
    let rules = read(&vars);
    assert!(
        rules.contains("\".venv/lib/*/site-packages/*.pth\""),
        "{rules}"
    );
    let verify = || {
        let out = w.referee(&[
            "verify",
            ws,
            "--protocol",
            "code-change",
            "--vars",
            vars_arg,
            "--write",
            "--format",
            "json",
        ]);
        let doc: Value = serde_json::from_str(&out.stdout).expect("json");
        (out.code, doc)
    };
    let (code, doc) = verify();
    assert_eq!(
        code, 0,
        "the start, the environment's own `.pth` in it: {doc:#}"
    );

    w.honest("t1", 1);
    assert_approved(&w, verify(), "t1");
    let planted = format!("{site}/zz-planted.pth");
    w.write(&planted, "import os; os.system('echo planted')\n");
    w.honest("t1", 2);
    assert_vetoed(&w, verify(), "t1", &planted, "added");
}
