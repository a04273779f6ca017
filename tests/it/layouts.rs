//! Every layout a workspace comes in (a repository with no commit yet, SHA-256 objects, a sparse
//! checkout, a linked work tree, submodules, paths deeper than `PATH_MAX`), each made with real
//! `git` commands in a temporary directory and judged through the binary: `referee verify
//! --protocol code-change` (pinned by a first `verify --write` on the pristine workspace, as an
//! orchestrator's first look) and, where quick, a live `referee watch`. Each asserts the
//! verdict, CC-01's evidence, the STOP, `referee status` and the exit code. The workspaces and
//! assertions here serve [`crate::surface`] too.

use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::util::{Output, TestCommand};
use crate::watch::{read, Watch};

pub(crate) const PROTECTED: &str = "src/orchestrator.py";
pub(crate) const APP: &str = "src/app.py";
const ORIGINAL_APP: &str = "def main():\n    return 1\n";

/// Runs git in `dir` as a worker or an orchestrator would, with no global config.
pub(crate) fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args(["-c", "user.name=o", "-c", "user.email=o@o"])
        .args([
            "-c",
            "protocol.file.allow=always",
            "-c",
            "init.defaultBranch=main",
        ])
        .args(args)
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn sha(bytes: &[u8]) -> String {
    referee::workspace::sha256(bytes)
}

/// A workspace, the referee's state directory and the daemon's logs, in one temporary root.
pub(crate) struct Ws {
    _tmp: tempfile::TempDir,
    pub(crate) root: PathBuf,
    pub(crate) ws: PathBuf,
    pub(crate) state: PathBuf,
    pub(crate) logs: PathBuf,
}

/// The files every layout starts with.
fn seed(dir: &Path) {
    for (p, text) in [(PROTECTED, "ROLES = ['worker']\n"), (APP, ORIGINAL_APP)] {
        let path = dir.join(p);
        fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
        fs::write(path, text).expect("write");
    }
}

impl Ws {
    pub(crate) fn empty() -> Ws {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().to_path_buf();
        let ws = root.join("ws");
        let state = root.join("state");
        let logs = root.join("logs");
        fs::create_dir_all(&logs).expect("mkdir");
        Ws {
            _tmp: tmp,
            root,
            ws,
            state,
            logs,
        }
    }

    /// A git repository with the seed committed; `init` adds to `git init`.
    pub(crate) fn repo(init: &[&str]) -> Ws {
        let w = Ws::empty();
        fs::create_dir_all(&w.ws).expect("mkdir");
        seed(&w.ws);
        let mut args = vec!["init", "-q"];
        args.extend_from_slice(init);
        w.git(&args);
        w.git(&["add", "-A"]);
        w.git(&["commit", "-q", "-m", "init"]);
        w
    }

    /// A git repository with the seed in its work tree and no commit yet.
    pub(crate) fn unborn() -> Ws {
        let w = Ws::empty();
        fs::create_dir_all(&w.ws).expect("mkdir");
        seed(&w.ws);
        w.git(&["init", "-q"]);
        w
    }

    pub(crate) fn path(&self, rel: &str) -> PathBuf {
        self.ws.join(rel)
    }

    pub(crate) fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
        fs::write(p, text).expect("write");
    }

    pub(crate) fn git(&self, args: &[&str]) -> String {
        git(&self.ws, args)
    }

    pub(crate) fn state_arg(&self) -> String {
        format!("--state-dir={}", self.state.display())
    }

    pub(crate) fn referee(&self, args: &[&str]) -> Output {
        TestCommand::new().args(args).arg(self.state_arg()).output()
    }

    /// `referee verify WS --protocol code-change --write --format json`: exit code and document.
    pub(crate) fn verify(&self) -> (i32, Value) {
        let ws = self.ws.to_str().expect("utf-8");
        let Output {
            code,
            stdout,
            stderr,
            ..
        } = self.referee(&[
            "verify",
            ws,
            "--protocol",
            "code-change",
            "--write",
            "--format",
            "json",
        ]);
        assert!(
            code == 0 || code == 1,
            "verify exited {code}: {stderr}\n{stdout}"
        );
        let doc =
            serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
        (code, doc)
    }

    /// A first `verify --write` on the pristine workspace: the pin, and nothing to say.
    pub(crate) fn pin(&self) {
        let (code, doc) = self.verify();
        assert_eq!(code, 0, "the pristine workspace: {doc:#}");
        assert!(!self.stop().exists(), "no STOP on the pristine workspace");
    }

    pub(crate) fn status(&self) -> i32 {
        self.referee(&["status", self.ws.to_str().expect("utf-8")])
            .code
    }

    pub(crate) fn stop(&self) -> PathBuf {
        self.path(".referee/OBSERVER-STOP.md")
    }

    /// Writes `.tasks/<id>.json` (temp name, then rename) declaring `modified` and `added` with
    /// their hashes as they are now.
    pub(crate) fn record(&self, id: &str, attempt: u64, modified: &[&str], added: &[&str]) {
        let post: Vec<(&str, String)> = modified
            .iter()
            .chain(added)
            .map(|p| (*p, sha(&fs::read(self.path(p)).expect("a declared file"))))
            .collect();
        self.record_hashed(id, attempt, modified, added, &post);
    }

    /// [`Ws::record`] with the `post_hashes` given.
    pub(crate) fn record_hashed(
        &self,
        id: &str,
        attempt: u64,
        modified: &[&str],
        added: &[&str],
        hashes: &[(&str, String)],
    ) {
        let post: serde_json::Map<String, Value> = hashes
            .iter()
            .map(|(p, h)| ((*p).to_string(), json!(h)))
            .collect();
        let doc = json!({
            "task_id": id,
            "status": "pending_review",
            "description": "a task",
            "attempt": attempt,
            "summary": "Here's what I did: the change.",
            "changes": {"added": added, "modified": modified, "removed": []},
            "post_hashes": post,
        });
        let tasks = self.path(".tasks");
        fs::create_dir_all(&tasks).expect("mkdir .tasks");
        let tmp = tasks.join(format!(".{id}.tmp"));
        fs::write(&tmp, serde_json::to_string_pretty(&doc).expect("json")).expect("write");
        fs::rename(&tmp, tasks.join(format!("{id}.json"))).expect("rename");
    }

    /// The honest change to the app, and its record.
    pub(crate) fn honest(&self, id: &str, attempt: u64) {
        self.write(APP, &format!("def main():\n    return {}\n", attempt + 1));
        self.record(id, attempt, &[APP], &[]);
    }

    /// `referee watch` on the workspace, up (its heartbeat names its pid).
    pub(crate) fn watch(&self) -> Watch {
        let state = self.state_arg();
        let w = Watch::start(&self.ws, &self.logs, &["--protocol", "code-change", &state]);
        let hb = self.path(".referee/OBSERVER-HEARTBEAT.json");
        let pid = w.pid();
        w.until("the referee is up", || {
            serde_json::from_str::<Value>(&read(&hb)).is_ok_and(|h| h["pid"] == json!(pid))
        });
        w
    }

    /// The verdict of `id` once its attempt `attempt` is judged by the live referee.
    pub(crate) fn judged(&self, w: &Watch, id: &str, attempt: u64) -> Value {
        let verdict = self.path(&format!(".referee/OBSERVER-VERDICT-{id}.json"));
        w.until(&format!("{id} attempt {attempt} is judged"), || {
            serde_json::from_str::<Value>(&read(&verdict))
                .is_ok_and(|v| v["attempt"] == json!(attempt))
        });
        serde_json::from_str(&read(&verdict)).expect("verdict")
    }
}

pub(crate) fn task_verdict(doc: &Value, id: &str) -> String {
    doc["tasks"]
        .as_array()
        .and_then(|t| t.iter().find(|x| x["task_id"] == json!(id)))
        .and_then(|t| t["verdict"].as_str())
        .unwrap_or("none")
        .to_string()
}

pub(crate) fn result(doc: &Value, check: &str) -> Value {
    doc["results"]
        .as_array()
        .and_then(|r| r.iter().find(|x| x["check"] == json!(check)))
        .cloned()
        .unwrap_or(Value::Null)
}

/// The task is APPROVEd with exit 0, no STOP, and `status` says go.
#[track_caller]
pub(crate) fn assert_approved(w: &Ws, (code, doc): (i32, Value), id: &str) {
    assert_eq!(task_verdict(&doc, id), "APPROVE", "{doc:#}");
    assert_eq!(code, 0, "{doc:#}");
    assert!(!w.stop().exists(), "no STOP: {}", read(&w.stop()));
    assert_eq!(w.status(), 0, "status says go");
}

/// The task is REJECTed by the veto at `path` (CC-01 FAIL naming it, with `how` in its
/// evidence unless empty), exit 1, a STOP naming the path, and `status` says stop.
#[track_caller]
pub(crate) fn assert_vetoed(w: &Ws, (code, doc): (i32, Value), id: &str, path: &str, how: &str) {
    assert_eq!(task_verdict(&doc, id), "REJECT", "{doc:#}");
    let cc01 = result(&doc, "CC-01");
    assert_eq!(cc01["status"], json!("FAIL"), "{doc:#}");
    let evidence = cc01["evidence"]["details"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    assert!(
        evidence.iter().filter_map(Value::as_str).any(|d| {
            d.starts_with(&format!("protected_file_modified: {path}"))
                && (how.is_empty() || d.contains(&format!("({how}")))
        }),
        "CC-01 names `{path}` ({how}): {cc01:#}"
    );
    assert_eq!(code, 1, "{doc:#}");
    let stop = read(&w.stop());
    assert!(stop.contains(path), "the STOP names `{path}`: {stop}");
    assert_eq!(w.status(), 1, "status says stop");
}

/// Under `watch`: the attempt is REJECTed and a STOP naming `path` stands.
#[track_caller]
pub(crate) fn assert_watch_vetoed(w: &Ws, live: &Watch, id: &str, attempt: u64, path: &str) {
    let v = w.judged(live, id, attempt);
    assert_eq!(v["verdict"], json!("REJECT"), "{v:#}\n{}", live.output());
    assert!(
        v["reasons"]
            .as_array()
            .is_some_and(|r| r.contains(&json!("protected_file_modified"))),
        "{v:#}"
    );
    live.until("the STOP names the path", || read(&w.stop()).contains(path));
    live.until("status says stop", || w.status() == 1);
}

/// Under `watch`: the attempt is APPROVEd and no STOP stands.
#[track_caller]
pub(crate) fn assert_watch_approved(w: &Ws, live: &Watch, id: &str, attempt: u64) {
    let v = w.judged(live, id, attempt);
    assert_eq!(v["verdict"], json!("APPROVE"), "{v:#}\n{}", live.output());
    assert!(!w.stop().exists(), "no STOP: {}", read(&w.stop()));
    assert_eq!(w.status(), 0);
}

// ---- a repository with no commit yet ---------------------------------------------------------

#[test]
fn no_commit_yet_honest_work_is_approved_under_watch() {
    let w = Ws::unborn();
    let live = w.watch();
    assert!(
        w.state.join("baseline/tree").join(APP).is_file(),
        "the start snapshot, in the state directory"
    );
    w.honest("t1", 1);
    assert_watch_approved(&w, &live, "t1", 1);
}

#[test]
fn no_commit_yet_a_protected_edit_is_vetoed_under_watch() {
    let w = Ws::unborn();
    let live = w.watch();
    w.write(PROTECTED, "ROLES = ['worker', 'admin']\n");
    w.honest("t1", 1);
    assert_watch_vetoed(&w, &live, "t1", 1, PROTECTED);
}

/// `verify` measures a repository with no commit against the snapshot the live referee took at
/// its start, also once the orchestrator has made the first commit: the first commit is the
/// orchestrator's, not a new baseline.
#[test]
fn no_commit_yet_verify_measures_against_the_start_snapshot() {
    let w = Ws::unborn();
    let mut live = w.watch();
    live.signal(libc::SIGTERM);
    live.wait(std::time::Duration::from_secs(30));
    w.honest("t1", 1);
    assert_approved(&w, w.verify(), "t1");
    // The orchestrator commits everything, the worker's protected edit too.
    w.write(PROTECTED, "ROLES = ['worker', 'admin']\n");
    w.git(&["add", "-A", "src"]);
    w.git(&["commit", "-q", "-m", "first"]);
    w.record("t1", 2, &[APP], &[]);
    assert_vetoed(&w, w.verify(), "t1", PROTECTED, "modified");
}

/// Without a start snapshot (no live referee ever ran), a repository with no commit has no
/// baseline: REJECT `inconclusive`, and the evidence says how to get one.
#[test]
fn no_commit_yet_without_a_snapshot_is_inconclusive_and_says_why() {
    let w = Ws::unborn();
    w.honest("t1", 1);
    let (code, doc) = w.verify();
    assert_eq!(code, 1);
    assert_eq!(task_verdict(&doc, "t1"), "REJECT", "{doc:#}");
    let cc01 = result(&doc, "CC-01");
    assert_eq!(cc01["status"], json!("INCONCLUSIVE"), "{doc:#}");
    assert!(
        cc01["evidence"]["observed"]
            .as_str()
            .is_some_and(|o| o.contains("no commit yet") && o.contains("start snapshot")),
        "{cc01:#}"
    );
}

// ---- SHA-256 repositories ----------------------------------------------------------------------

#[test]
fn sha256_repository_honest_work_is_approved_and_a_protected_edit_vetoed() {
    let w = Ws::repo(&["--object-format=sha256"]);
    assert_eq!(w.git(&["rev-parse", "--show-object-format"]), "sha256");
    w.pin();
    w.honest("t1", 1);
    assert_approved(&w, w.verify(), "t1");
    // Again, from the kept listing and stat cache.
    assert_approved(&w, w.verify(), "t1");
    w.write(PROTECTED, "ROLES = ['worker', 'admin']\n");
    w.honest("t1", 2);
    assert_vetoed(&w, w.verify(), "t1", PROTECTED, "modified");
}

#[test]
fn sha256_repository_under_watch() {
    let w = Ws::repo(&["--object-format=sha256"]);
    let live = w.watch();
    w.honest("t1", 1);
    assert_watch_approved(&w, &live, "t1", 1);
    w.write(PROTECTED, "ROLES = ['worker', 'admin']\n");
    w.honest("t1", 2);
    assert_watch_vetoed(&w, &live, "t1", 2, PROTECTED);
}

// ---- sparse checkouts --------------------------------------------------------------------------

/// A repository whose `docs/` and `lib/` (a protected file in it) are outside the sparse set.
fn sparse() -> Ws {
    let w = Ws::empty();
    fs::create_dir_all(&w.ws).expect("mkdir");
    seed(&w.ws);
    w.write("docs/guide.md", "# Guide\n");
    w.write("lib/roles.py", "R = 1\n");
    w.git(&["init", "-q"]);
    w.git(&["add", "-A"]);
    w.git(&["commit", "-q", "-m", "init"]);
    w.git(&["sparse-checkout", "set", "src"]);
    assert!(!w.path("docs/guide.md").exists() && !w.path("lib/roles.py").exists());
    w
}

#[test]
fn sparse_checkout_paths_outside_the_set_are_not_removed() {
    let w = sparse();
    w.pin();
    w.honest("t1", 1);
    let (code, doc) = w.verify();
    assert_eq!(result(&doc, "CC-04")["status"], json!("PASS"), "{doc:#}");
    assert_eq!(result(&doc, "CC-02")["status"], json!("PASS"), "{doc:#}");
    assert_approved(&w, (code, doc), "t1");
}

/// The sparse set is pinned when the referee starts: narrowing it afterwards (by hand, in
/// `.git/info/sparse-checkout`) does not make a protected file's removal "outside the set".
#[test]
fn sparse_checkout_set_is_pinned_at_start() {
    let w = sparse();
    w.pin();
    fs::write(w.path(".git/info/sparse-checkout"), "/*\n!/*/\n/docs/\n").expect("write");
    fs::remove_file(w.path(PROTECTED)).expect("rm");
    w.honest("t1", 1);
    assert_vetoed(&w, w.verify(), "t1", PROTECTED, "removed");
}

#[test]
fn sparse_checkout_under_watch() {
    let w = sparse();
    let live = w.watch();
    w.honest("t1", 1);
    assert_watch_approved(&w, &live, "t1", 1);
}

// ---- linked work trees -------------------------------------------------------------------------

/// `ws` is a linked work tree (`.git` is a `gitdir:` file) of the repository `main`.
fn linked() -> Ws {
    let w = Ws::empty();
    let main = w.root.join("main");
    fs::create_dir_all(&main).expect("mkdir");
    seed(&main);
    git(&main, &["init", "-q"]);
    git(&main, &["add", "-A"]);
    git(&main, &["commit", "-q", "-m", "init"]);
    git(&main, &["worktree", "add", "-q", "../ws", "-b", "task"]);
    assert!(w.path(".git").is_file(), "a linked work tree");
    w
}

#[test]
fn linked_worktree_honest_work_is_approved_and_a_protected_edit_vetoed() {
    let w = linked();
    w.pin();
    w.honest("t1", 1);
    assert_approved(&w, w.verify(), "t1");
    w.write(PROTECTED, "ROLES = ['worker', 'admin']\n");
    w.honest("t1", 2);
    assert_vetoed(&w, w.verify(), "t1", PROTECTED, "modified");
}

/// The hooks of a linked work tree are the main repository's: one planted there runs at the
/// orchestrator's next commit in the work tree.
#[test]
fn linked_worktree_a_hook_planted_in_the_main_repository_is_vetoed() {
    let w = linked();
    w.pin();
    let hook = w.root.join("main/.git/hooks/pre-commit");
    fs::write(&hook, "#!/bin/sh\necho planted\n").expect("write");
    fs::set_permissions(&hook, fs::Permissions::from_mode(0o755)).expect("chmod");
    w.honest("t1", 1);
    assert_vetoed(&w, w.verify(), "t1", ".git/hooks/pre-commit", "added");
}

#[test]
fn linked_worktree_under_watch() {
    let w = linked();
    let live = w.watch();
    w.honest("t1", 1);
    assert_watch_approved(&w, &live, "t1", 1);
    w.write(PROTECTED, "ROLES = ['worker', 'admin']\n");
    w.honest("t1", 2);
    assert_watch_vetoed(&w, &live, "t1", 2, PROTECTED);
}

// ---- submodules --------------------------------------------------------------------------------

/// `ws` with the repository `lib-origin` checked out as the submodule `lib` (with a protected
/// file of its own).
fn with_submodule() -> Ws {
    let w = Ws::empty();
    let origin = w.root.join("lib-origin");
    fs::create_dir_all(&origin).expect("mkdir");
    seed(&origin);
    git(&origin, &["init", "-q"]);
    git(&origin, &["add", "-A"]);
    git(&origin, &["commit", "-q", "-m", "lib"]);
    fs::create_dir_all(&w.ws).expect("mkdir");
    seed(&w.ws);
    w.git(&["init", "-q"]);
    w.git(&["add", "-A"]);
    w.git(&["commit", "-q", "-m", "init"]);
    w.git(&["submodule", "add", "-q", "../lib-origin", "lib"]);
    w.git(&["commit", "-q", "-m", "lib"]);
    assert!(w.path("lib/.git").is_file(), "a checked-out submodule");
    w
}

/// A checked-out submodule's own `.git` file is git's, not a change the worker must list.
#[test]
fn submodule_checked_out_is_no_change() {
    let w = with_submodule();
    w.pin();
    w.honest("t1", 1);
    assert_approved(&w, w.verify(), "t1");
}

#[test]
fn submodule_a_protected_file_inside_is_vetoed() {
    let w = with_submodule();
    w.pin();
    w.write("lib/src/orchestrator.py", "ROLES = ['admin']\n");
    w.honest("t1", 1);
    assert_vetoed(&w, w.verify(), "t1", "lib/src/orchestrator.py", "modified");
}

/// Moves the submodule `lib` to a new upstream commit that writes `files` (as `git pull` in
/// it does): what `git status` shows as `M lib`. Returns the new commit's id.
fn bump_submodule(w: &Ws, files: &[(&str, &str)]) -> String {
    let origin = w.root.join("lib-origin");
    for (p, text) in files {
        fs::write(origin.join(p), text).expect("write upstream");
    }
    git(&origin, &["add", "-A"]);
    git(&origin, &["commit", "-q", "-m", "upstream"]);
    git(&w.path("lib"), &["pull", "-q", "origin", "HEAD"]);
    assert_eq!(w.git(&["status", "--porcelain", "--", "lib"]), "M lib");
    git(&w.path("lib"), &["rev-parse", "HEAD"])
}

/// A worker that moves a submodule to a new commit lists it as `git status` shows it: the one
/// path `lib`, modified, its "hash" the commit. That listing names every change beneath it
/// (the referee reads the submodule's files one by one): APPROVEd, where it was REJECTed as a
/// phantom `lib` and an unlisted `lib/src/extra.py`.
#[test]
fn submodule_moved_to_a_new_commit_and_listed_as_git_status_shows_it() {
    let w = with_submodule();
    w.pin();
    let commit = bump_submodule(
        &w,
        &[
            ("src/extra.py", "X = 1\n"),
            ("src/app.py", "def main():\n    return 7\n"),
        ],
    );
    w.record_hashed("t1", 1, &["lib"], &[], &[("lib", commit)]);
    assert_approved(&w, w.verify(), "t1");
}

/// The same listing excuses no protected change the new commit brings: the veto holds.
#[test]
fn submodule_moved_to_a_commit_that_changes_a_protected_file_is_vetoed() {
    let w = with_submodule();
    w.pin();
    bump_submodule(&w, &[("src/orchestrator.py", "ROLES = ['admin']\n")]);
    w.record_hashed("t1", 1, &["lib"], &[], &[]);
    assert_vetoed(&w, w.verify(), "t1", "lib/src/orchestrator.py", "modified");
}

/// A submodule's hooks live in the superproject's `.git/modules/NAME/hooks/`.
#[test]
fn submodule_a_hook_in_its_git_directory_is_vetoed() {
    let w = with_submodule();
    w.pin();
    w.write(
        ".git/modules/lib/hooks/post-checkout",
        "#!/bin/sh\necho planted\n",
    );
    w.honest("t1", 1);
    assert_vetoed(
        &w,
        w.verify(),
        "t1",
        ".git/modules/lib/hooks/post-checkout",
        "added",
    );
}

// ---- deeper than PATH_MAX ----------------------------------------------------------------------

/// Makes `count` nested folders of 100-byte names under `rel` and writes `name` at the bottom,
/// one directory at a time (bash's `cd`, relative each time): the whole path is longer than
/// `PATH_MAX`.
/// Returns the file's path relative to the workspace.
pub(crate) fn deep_file(w: &Ws, rel: &str, count: usize, name: &str, text: &str) -> String {
    let seg = "d".repeat(100);
    let script = format!(
        "set -e; cd {rel}; for i in $(seq 1 {count}); do mkdir -p {seg}; cd {seg}; done; \
         printf '%s' \"$1\" > {name}"
    );
    let out = Command::new("bash")
        .current_dir(&w.ws)
        .args(["-c", &script, "bash", text])
        .output()
        .expect("bash");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut path = rel.to_string();
    for _ in 0..count {
        path.push('/');
        path.push_str(&seg);
    }
    path.push('/');
    path.push_str(name);
    assert!(w.ws.join(&path).as_os_str().len() > 4096);
    path
}

#[test]
fn deep_a_protected_file_below_path_max_is_vetoed_by_verify() {
    let w = Ws::repo(&[]);
    w.pin();
    let deep = deep_file(&w, "src", 45, "orchestrator.py", "ROLES = ['admin']\n");
    w.honest("t1", 1);
    let verdict = w.verify();
    // The evidence shortens so long a name; the file named is the whole path.
    let files = result(&verdict.1, "CC-01")["evidence"]["files"].to_string();
    assert!(files.contains(&format!("\"path\":\"{deep}\"")), "{files}");
    assert_vetoed(&w, verdict, "t1", &deep[..60], "");
}

/// A deep file is a change like any other: unlisted, CC-02 names it; listed, the attempt is
/// approved (its size and syntax read through directory descriptors).
#[test]
fn deep_an_honest_file_below_path_max_is_judged() {
    let w = Ws::repo(&[]);
    w.pin();
    let deep = deep_file(&w, "src", 45, "util.py", "X = 1\n");
    w.honest("t1", 1);
    let (code, doc) = w.verify();
    assert_eq!(code, 1);
    let cc02 = result(&doc, "CC-02");
    assert_eq!(cc02["status"], json!("FAIL"), "{doc:#}");
    assert!(
        cc02["evidence"].to_string().contains("unlisted: src/ddd"),
        "{cc02:#}"
    );
    w.write(APP, "def main():\n    return 3\n");
    let app = sha(&fs::read(w.path(APP)).expect("app"));
    w.record_hashed(
        "t1",
        2,
        &[APP],
        &[&deep],
        &[(APP, app), (&deep, sha(b"X = 1\n"))],
    );
    let (code, doc) = w.verify();
    for check in ["CC-02", "CC-03", "CC-05", "CC-06"] {
        assert_eq!(
            result(&doc, check)["status"],
            json!("PASS"),
            "{check}: {doc:#}"
        );
    }
    assert_approved(&w, (code, doc), "t1");
}

/// The live referee reads a deep protected file that was there when it started.
#[test]
fn deep_a_protected_file_below_path_max_is_vetoed_by_watch() {
    let w = Ws::repo(&[]);
    let deep = deep_file(&w, "src", 45, "orchestrator.py", "ROLES = ['admin']\n");
    let live = w.watch();
    live.until("the STOP names the deep path", || {
        read(&w.stop()).contains(&deep[..60])
    });
    w.honest("t1", 1);
    assert_watch_vetoed(&w, &live, "t1", 1, &deep[..60]);
}

/// A deep protected file written while the live referee runs is seen at the next judgment.
#[test]
fn deep_a_protected_file_written_after_start_is_vetoed_by_watch() {
    let w = Ws::repo(&[]);
    let live = w.watch();
    let deep = deep_file(&w, "src", 45, "orchestrator.py", "ROLES = ['admin']\n");
    w.honest("t1", 1);
    assert_watch_vetoed(&w, &live, "t1", 1, &deep[..60]);
}
