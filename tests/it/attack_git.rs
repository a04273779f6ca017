//! The code-change referee against a worker with a shell (issue 15): each test is one
//! class of attack made for real, with `git` and file commands in a real git work tree, after
//! the referee has pinned its baseline. Each runs twice, against `referee verify` (pinned by an
//! earlier `verify`, as an orchestrator's first look) and against a live `referee watch`, and
//! asserts the verdict, the STOP, `referee status` and that nothing outside the workspace and
//! the referee's state directory was written.
//!
//! The honest-work tests at the end are the other side: names and line endings an honest
//! worker produces must be APPROVEd, never panic or REJECT.

use std::collections::BTreeMap;
use std::fs;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::{json, Value};

use crate::util::{Output, TestCommand};
use crate::watch::{read, Watch};

const PROTECTED: &str = "src/orchestrator.py";
const ROLES: &str = "src/roles.py";
const APP: &str = "src/app.py";

/// A git work tree with a protected file, a module the protocol also protects, and the app
/// the worker may change; beside it the referee's state directory, the daemon's logs and an
/// `outside/` folder that nothing may write into.
struct Ws {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    ws: PathBuf,
    state: PathBuf,
    logs: PathBuf,
    /// The committed contents, for the records' pre_hashes.
    base: BTreeMap<String, Vec<u8>>,
}

fn sha(bytes: &[u8]) -> String {
    referee::workspace::sha256(bytes)
}

/// Runs git in `ws` as a worker would: its own config, no global one.
fn git(ws: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(ws)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .args(["-c", "user.name=w", "-c", "user.email=w@w"])
        .args(["-c", "protocol.file.allow=always"])
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

impl Ws {
    fn new() -> Ws {
        Ws::with(&[])
    }

    /// The work tree with `extra` files committed too.
    fn with(extra: &[(&str, &[u8])]) -> Ws {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = tmp.path().to_path_buf();
        let ws = root.join("ws");
        let state = root.join("state");
        let logs = root.join("logs");
        for d in [&ws, &logs, &root.join("outside")] {
            fs::create_dir_all(d).expect("mkdir");
        }
        fs::write(root.join("outside/precious.txt"), "not the referee's\n").expect("write");
        let mut files: Vec<(&str, &[u8])> = vec![
            (PROTECTED, b"ROLES = ['worker']\n"),
            (ROLES, b"def role():\n    return 'worker'\n"),
            (APP, b"def main():\n    return 1\n"),
            (".gitignore", b"__pycache__/\n*.log\n"),
        ];
        files.extend_from_slice(extra);
        let mut base = BTreeMap::new();
        for (p, b) in files {
            let path = ws.join(p);
            fs::create_dir_all(path.parent().expect("a parent")).expect("mkdir");
            fs::write(&path, b).expect("write");
            base.insert(p.to_string(), b.to_vec());
        }
        git(&ws, &["init", "-q", "-b", "main"]);
        git(&ws, &["add", "-A"]);
        git(&ws, &["commit", "-q", "-m", "init"]);
        Ws {
            _tmp: tmp,
            root,
            ws,
            state,
            logs,
            base,
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.ws.join(rel)
    }

    fn write(&self, rel: &str, text: &str) {
        let p = self.path(rel);
        fs::create_dir_all(p.parent().expect("a parent")).expect("mkdir");
        fs::write(p, text).expect("write");
    }

    fn git(&self, args: &[&str]) -> String {
        git(&self.ws, args)
    }

    fn state_arg(&self) -> String {
        format!("--state-dir={}", self.state.display())
    }

    /// `referee ARGS… --state-dir STATE`: (exit code, stdout, stderr).
    fn referee(&self, args: &[&str]) -> Output {
        // Bounded: an attack that hangs the referee fails the test instead of hanging it.
        TestCommand::new().args(args).arg(self.state_arg()).output()
    }

    /// `referee verify --protocol code-change --write --format json`: the JSON document.
    fn verify(&self) -> (i32, Value) {
        let ws = self.ws.to_str().expect("utf-8");
        let Output {
            code,
            stdout: out,
            stderr: err,
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
        assert!(code == 0 || code == 1, "verify exited {code}: {err}\n{out}");
        let doc = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
        (code, doc)
    }

    /// `referee status WORKSPACE`: the exit code.
    fn status(&self) -> i32 {
        self.referee(&["status", self.ws.to_str().expect("utf-8")])
            .code
    }

    /// `referee status WORKSPACE --task ID`: the exit code.
    fn status_task(&self, id: &str) -> i32 {
        self.referee(&["status", self.ws.to_str().expect("utf-8"), "--task", id])
            .code
    }

    /// Writes `.tasks/<id>.json` (temp name, then rename), declaring `modified` and `added`
    /// with hashes against the committed baseline and the files now.
    fn record(&self, id: &str, attempt: u64, modified: &[&str], added: &[&str]) {
        let mut pre = serde_json::Map::new();
        let mut post = serde_json::Map::new();
        for p in modified.iter().chain(added) {
            if let Some(b) = self.base.get(*p) {
                pre.insert((*p).into(), json!(sha(b)));
            }
            let now = fs::read(self.path(p)).expect("a declared file");
            post.insert((*p).into(), json!(sha(&now)));
        }
        let doc = json!({
            "task_id": id,
            "status": "pending_review",
            "description": "a task",
            "attempt": attempt,
            "summary": "Here's what I did: the change.",
            "changes": {"added": added, "modified": modified, "removed": []},
            "pre_hashes": pre,
            "post_hashes": post,
        });
        let tasks = self.path(".tasks");
        fs::create_dir_all(&tasks).expect("mkdir .tasks");
        let tmp = tasks.join(format!(".{id}.tmp"));
        fs::write(&tmp, serde_json::to_string_pretty(&doc).expect("json")).expect("write");
        fs::rename(&tmp, tasks.join(format!("{id}.json"))).expect("rename");
    }

    /// Everything under the temporary root but the workspace, the state dir and the logs: what
    /// the referee must never write. No script the worker planted has run (`*.ran`).
    fn outside(&self) -> BTreeMap<String, String> {
        let all = self.listing();
        let ran: Vec<&String> = all.keys().filter(|k| k.ends_with(".ran")).collect();
        assert!(
            ran.is_empty(),
            "the worker's program ran inside the referee: {ran:?}"
        );
        all
    }

    fn listing(&self) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        let mut stack = vec![self.root.clone()];
        while let Some(dir) = stack.pop() {
            for e in fs::read_dir(&dir).expect("read_dir").flatten() {
                let p = e.path();
                if [&self.ws, &self.state, &self.logs].contains(&&p) {
                    continue;
                }
                let meta = fs::symlink_metadata(&p).expect("lstat");
                let rel = p
                    .strip_prefix(&self.root)
                    .expect("under")
                    .display()
                    .to_string();
                if meta.is_dir() {
                    stack.push(p);
                    out.insert(rel, "dir".into());
                } else {
                    out.insert(rel, sha(&fs::read(&p).unwrap_or_default()));
                }
            }
        }
        out
    }
}

/// What an attack must come to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// REJECT with the protected-file veto (CC-01 FAIL) and a standing STOP.
    Veto,
    /// APPROVE, no STOP: honest work.
    Approve,
    /// REJECT because something could not be read (fail closed), and `status --task` says 1.
    Reject,
}

fn cc(doc: &Value, check: &str) -> Value {
    doc["results"]
        .as_array()
        .and_then(|r| r.iter().find(|x| x["check"] == json!(check)))
        .cloned()
        .unwrap_or(Value::Null)
}

fn task_verdict(doc: &Value, id: &str) -> String {
    doc["tasks"]
        .as_array()
        .and_then(|t| t.iter().find(|x| x["task_id"] == json!(id)))
        .and_then(|t| t["verdict"].as_str())
        .unwrap_or("none")
        .to_string()
}

/// One attack against `verify`: pin, attack, judge.
fn against_verify(setup: fn() -> Ws, attack: fn(&Ws), expect: Expect) {
    let w = setup();
    let (code, doc) = w.verify();
    assert_eq!(code, 0, "the pristine workspace: {doc:#}");
    attack(&w);
    let before = w.outside();
    let (code, doc) = w.verify();
    let stop = w.path(".referee/OBSERVER-STOP.md");
    match expect {
        Expect::Veto => {
            assert_eq!(task_verdict(&doc, "t1"), "REJECT", "{doc:#}");
            assert_eq!(cc(&doc, "CC-01")["status"], json!("FAIL"), "{doc:#}");
            assert_eq!(code, 1);
            assert!(stop.is_file(), "the STOP is written: {doc:#}");
            assert_eq!(w.status(), 1, "status says stop");
        }
        Expect::Approve => {
            assert_eq!(task_verdict(&doc, "t1"), "APPROVE", "{doc:#}");
            assert_eq!(code, 0, "{doc:#}");
            assert!(!stop.exists(), "no STOP");
            assert_eq!(w.status(), 0, "status says go");
        }
        Expect::Reject => {
            assert_eq!(task_verdict(&doc, "t1"), "REJECT", "{doc:#}");
            assert_eq!(code, 1, "{doc:#}");
            assert_eq!(w.status_task("t1"), 1, "status --task says reject");
        }
    }
    assert_eq!(w.outside(), before, "nothing written outside");
}

/// The same attack against a live `watch` started before it.
fn against_watch(setup: fn() -> Ws, attack: fn(&Ws), expect: Expect) {
    let w = setup();
    let state = w.state_arg();
    let watch = Watch::start(&w.ws, &w.logs, &["--protocol", "code-change", &state]);
    let hb = w.path(".referee/OBSERVER-HEARTBEAT.json");
    let pid = watch.pid();
    watch.until("the referee is up", || {
        serde_json::from_str::<Value>(&read(&hb)).is_ok_and(|h| h["pid"] == json!(pid))
    });
    attack(&w);
    let before = w.outside();
    let verdict = w.path(".referee/OBSERVER-VERDICT-t1.json");
    watch.until("t1 is judged", || {
        serde_json::from_str::<Value>(&read(&verdict)).is_ok_and(|v| v["attempt"] == json!(1))
    });
    let v: Value = serde_json::from_str(&read(&verdict)).expect("verdict");
    let stop = w.path(".referee/OBSERVER-STOP.md");
    match expect {
        Expect::Veto => {
            assert_eq!(v["verdict"], json!("REJECT"), "{v:#}\n{}", watch.output());
            watch.until("the STOP stands", || stop.is_file());
            watch.until("status says stop", || w.status() == 1);
        }
        Expect::Approve => {
            assert_eq!(v["verdict"], json!("APPROVE"), "{v:#}\n{}", watch.output());
            assert!(!stop.exists(), "no STOP");
            assert_eq!(w.status(), 0);
        }
        Expect::Reject => {
            assert_eq!(v["verdict"], json!("REJECT"), "{v:#}\n{}", watch.output());
            assert_eq!(w.status_task("t1"), 1);
        }
    }
    drop(watch);
    assert_eq!(w.outside(), before, "nothing written outside");
}

macro_rules! attack {
    ($name:ident, $setup:expr, $attack:expr, $expect:expr) => {
        mod $name {
            use super::*;
            #[test]
            fn verify() {
                against_verify($setup, $attack, $expect);
            }
            #[test]
            fn watch() {
                against_watch($setup, $attack, $expect);
            }
        }
    };
}

/// The worker's honest change to the app, which its record declares.
fn honest(w: &Ws) {
    w.write(APP, "def main():\n    return 2\n");
}

/// The protected edit the worker wants past the referee.
fn edit_protected(w: &Ws) {
    honest(w);
    w.write(PROTECTED, "ROLES = ['worker', 'admin']\n");
}

/// A script that leaves a marker outside the workspace when anything runs it.
fn marker_script(w: &Ws, name: &str, body: &str) -> PathBuf {
    let path = w.root.join(format!("{name}.sh"));
    let marker = w.root.join(format!("{name}.ran"));
    fs::write(
        &path,
        format!("#!/bin/sh\ntouch '{}'\n{body}\n", marker.display()),
    )
    .expect("write script");
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).expect("chmod");
    path
}

// ---- its code runs inside the referee --------------------------------------------------------

attack!(
    fsmonitor_hook,
    Ws::new,
    |w| {
        let hook = marker_script(w, "fsmonitor", "exit 0");
        w.git(&["config", "core.fsmonitor", hook.to_str().expect("utf-8")]);
        w.git(&["config", "core.hooksPath", w.root.to_str().expect("utf-8")]);
        edit_protected(w);
        w.record("t1", 1, &[APP], &[]);
    },
    Expect::Veto
);

attack!(
    clean_filter_that_lies,
    Ws::new,
    |w| {
        // The filter hands git the baseline bytes, so git sees the protected file unchanged.
        let orig = w.root.join("orig.py");
        fs::write(&orig, &w.base[PROTECTED]).expect("write");
        let script = marker_script(w, "clean", &format!("cat '{}'", orig.display()));
        w.git(&["config", "filter.x.clean", script.to_str().expect("utf-8")]);
        fs::write(
            w.path(".git/info/attributes"),
            format!("{PROTECTED} filter=x\n"),
        )
        .expect("attributes");
        edit_protected(w);
        w.record("t1", 1, &[APP], &[]);
    },
    Expect::Veto
);

attack!(
    include_path_to_an_evil_config,
    Ws::new,
    |w| {
        let hook = marker_script(w, "included", "exit 0");
        let cfg = w.root.join("evil.config");
        fs::write(&cfg, format!("[core]\n\tfsmonitor = {}\n", hook.display())).expect("w");
        w.git(&["config", "include.path", cfg.to_str().expect("utf-8")]);
        edit_protected(w);
        w.record("t1", 1, &[APP], &[]);
    },
    Expect::Veto
);

// ---- the baseline is whatever .git/ says now -------------------------------------------------

attack!(
    commit_after_the_start,
    Ws::new,
    |w| {
        edit_protected(w);
        w.git(&["commit", "-qam", "wip"]);
        w.record("t1", 1, &[APP], &[]);
    },
    Expect::Veto
);

attack!(
    amend_the_baseline_commit,
    Ws::new,
    |w| {
        edit_protected(w);
        w.git(&["commit", "-qa", "--amend", "--no-edit"]);
        w.record("t1", 1, &[APP], &[]);
    },
    Expect::Veto
);

attack!(
    checkout_another_branch,
    Ws::new,
    |w| {
        w.git(&["checkout", "-q", "-b", "other"]);
        w.write(PROTECTED, "ROLES = ['worker', 'admin']\n");
        w.git(&["commit", "-qam", "other"]);
        honest(w);
        w.record("t1", 1, &[APP], &[]);
    },
    Expect::Veto
);

attack!(
    replace_the_baseline_commit,
    Ws::new,
    |w| {
        let head = w.git(&["rev-parse", "HEAD"]);
        w.write(PROTECTED, "ROLES = ['worker', 'admin']\n");
        w.git(&["commit", "-qam", "evil"]);
        let evil = w.git(&["rev-parse", "HEAD"]);
        w.git(&["reset", "-q", "--soft", &head]);
        w.git(&["replace", &head, &evil]);
        honest(w);
        w.record("t1", 1, &[APP], &[]);
    },
    Expect::Veto
);

attack!(
    assume_unchanged,
    Ws::new,
    |w| {
        w.git(&["update-index", "--assume-unchanged", PROTECTED]);
        edit_protected(w);
        w.record("t1", 1, &[APP], &[]);
    },
    Expect::Veto
);

attack!(
    skip_worktree,
    Ws::new,
    |w| {
        w.git(&["update-index", "--skip-worktree", PROTECTED]);
        edit_protected(w);
        w.record("t1", 1, &[APP], &[]);
    },
    Expect::Veto
);

attack!(
    check_stat_minimal_with_the_mtime_put_back,
    Ws::new,
    |w| {
        w.git(&["config", "core.checkStat", "minimal"]);
        let p = w.path(PROTECTED);
        let mtime = fs::metadata(&p).expect("stat").modified().expect("mtime");
        honest(w);
        // Same size, other bytes, the old mtime.
        fs::write(&p, "ROLES = ['admin!']\n").expect("write");
        filetime::set_file_mtime(&p, filetime::FileTime::from_system_time(mtime)).expect("t");
        w.record("t1", 1, &[APP], &[]);
    },
    Expect::Veto
);

/// A commit after the start is logged as `head_moved` by the live referee (and changes
/// nothing about the baseline).
#[test]
fn a_moved_head_is_logged() {
    let w = Ws::new();
    let state = w.state_arg();
    let watch = Watch::start(&w.ws, &w.logs, &["--protocol", "code-change", &state]);
    let hb = w.path(".referee/OBSERVER-HEARTBEAT.json");
    let pid = watch.pid();
    watch.until("the referee is up", || {
        serde_json::from_str::<Value>(&read(&hb)).is_ok_and(|h| h["pid"] == json!(pid))
    });
    let pinned = w.git(&["rev-parse", "HEAD"]);
    edit_protected(&w);
    w.git(&["commit", "-qam", "wip"]);
    let head = w.git(&["rev-parse", "HEAD"]);
    let log = w.state.join("OBSERVER-EVENTS.jsonl");
    watch.until("head_moved is logged", || {
        read(&log).lines().any(|l| {
            serde_json::from_str::<Value>(l).is_ok_and(|e| {
                e["payload"]["event"] == json!("head_moved")
                    && e["payload"]["pinned"] == json!(pinned)
                    && e["payload"]["head"] == json!(head)
            })
        })
    });
    watch.until("the veto stands on the committed edit", || {
        w.path(".referee/OBSERVER-STOP.md").is_file()
    });
}

/// `--baseline <sha>` names the commit itself: a replace ref for it changes nothing either.
#[test]
fn an_explicit_baseline_is_not_replaced() {
    let w = Ws::new();
    let head = w.git(&["rev-parse", "HEAD"]);
    w.write(PROTECTED, "ROLES = ['worker', 'admin']\n");
    w.git(&["commit", "-qam", "evil"]);
    let evil = w.git(&["rev-parse", "HEAD"]);
    w.git(&["replace", &head, &evil]);
    honest(&w);
    w.record("t1", 1, &[APP], &[]);
    let ws = w.ws.to_str().expect("utf-8");
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = w.referee(&[
        "verify",
        ws,
        "--protocol",
        "code-change",
        "--baseline",
        &head,
        "--format",
        "json",
    ]);
    assert_eq!(code, 1, "{err}");
    let doc: Value = serde_json::from_str(&out).expect("json");
    assert_eq!(task_verdict(&doc, "t1"), "REJECT", "{doc:#}");
    assert_eq!(cc(&doc, "CC-01")["status"], json!("FAIL"), "{doc:#}");
}

/// Puts a FIFO where `rel` (under `.git/`) is: whoever opens it to read waits for a writer
/// that never comes.
fn fifo_at(w: &Ws, rel: &str) {
    let p = w.path(rel);
    fs::remove_file(&p).expect("rm");
    let c = std::ffi::CString::new(p.to_str().expect("utf-8")).expect("no NUL");
    // SAFETY: a valid C string; mkfifo touches nothing else.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

attack!(
    a_fifo_for_a_baseline_object,
    Ws::new,
    |w| {
        // The app's baseline blob is a loose object: the referee needs it for the diff and
        // the pre_hash; reading a FIFO there would block it forever.
        let oid = w.git(&["rev-parse", &format!("HEAD:{APP}")]);
        fifo_at(w, &format!(".git/objects/{}/{}", &oid[..2], &oid[2..]));
        honest(w);
        w.record("t1", 1, &[APP], &[]);
    },
    Expect::Reject
);

/// A FIFO at `.git/HEAD` once the live referee has pinned its baseline: it still judges (the
/// veto stands) instead of hanging on the `head_moved` look. (`verify` opens the repository
/// each run: it is the test below.)
#[test]
fn a_fifo_for_head_after_the_start() {
    against_watch(
        Ws::new,
        |w| {
            fifo_at(w, ".git/HEAD");
            edit_protected(w);
            w.record("t1", 1, &[APP], &[]);
        },
        Expect::Veto,
    );
}

/// A FIFO at `.git/HEAD` before the referee ever pinned a baseline: `verify` says it cannot
/// pin one (exit 2, the reason) within its read limit, instead of hanging or passing.
#[test]
fn a_fifo_for_head_before_the_start_is_a_fault_not_a_hang() {
    let w = Ws::new();
    fifo_at(&w, ".git/HEAD");
    w.write(PROTECTED, "ROLES = ['admin']\n");
    w.record("t1", 1, &[], &[]);
    let ws = w.ws.to_str().expect("utf-8");
    let Output {
        code, stderr: err, ..
    } = w.referee(&["verify", ws, "--protocol", "code-change"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("did not finish"), "{err}");
}

// ---- new protected files hidden by ignore rules the worker controls --------------------------

attack!(
    info_exclude_hides_a_new_protected_file,
    Ws::new,
    |w| {
        fs::write(w.path(".git/info/exclude"), "tools/\n").expect("exclude");
        honest(w);
        w.write("tools/safety_checks.py", "ALLOW_ALL = True\n");
        w.record("t1", 1, &[APP], &[]);
    },
    Expect::Veto
);

attack!(
    excludes_file_hides_a_new_protected_file,
    Ws::new,
    |w| {
        let ex = w.root.join("excludes");
        fs::write(&ex, "tools/\n").expect("excludes");
        w.git(&["config", "core.excludesFile", ex.to_str().expect("utf-8")]);
        honest(w);
        w.write("tools/safety_checks.py", "ALLOW_ALL = True\n");
        w.record("t1", 1, &[APP], &[]);
    },
    Expect::Veto
);

attack!(
    self_ignoring_gitignore,
    Ws::new,
    |w| {
        honest(w);
        w.write("tools/.gitignore", "*\n");
        w.write("tools/safety_checks.py", "ALLOW_ALL = True\n");
        w.record("t1", 1, &[APP], &[]);
    },
    Expect::Veto
);

// ---- protected means more than the bytes at one path -----------------------------------------

attack!(
    symlink_swap_to_an_identical_copy,
    Ws::new,
    |w| {
        honest(w);
        let p = w.path(PROTECTED);
        fs::rename(&p, w.path("src/orch_impl.py")).expect("move");
        std::os::unix::fs::symlink("orch_impl.py", &p).expect("symlink");
        w.record("t1", 1, &[APP], &["src/orch_impl.py"]);
    },
    Expect::Veto
);

attack!(
    chmod_plus_x,
    Ws::new,
    |w| {
        honest(w);
        fs::set_permissions(w.path(PROTECTED), fs::Permissions::from_mode(0o755)).expect("chmod");
        w.record("t1", 1, &[APP], &[]);
    },
    Expect::Veto
);

attack!(
    a_package_shadows_a_protected_module,
    Ws::new,
    |w| {
        honest(w);
        w.write("src/roles/__init__.py", "def role():\n    return 'admin'\n");
        w.record("t1", 1, &[APP], &["src/roles/__init__.py"]);
    },
    Expect::Veto
);

attack!(
    a_forged_pyc_in_an_ignored_pycache,
    Ws::new,
    |w| {
        honest(w);
        w.write("src/__pycache__/roles.cpython-312.pyc", "forged bytecode");
        w.record("t1", 1, &[APP], &[]);
    },
    Expect::Veto
);

attack!(
    protected_files_in_a_new_nested_repository,
    Ws::new,
    |w| {
        honest(w);
        w.write("vendor/tool/orchestrator.py", "ROLES = ['admin']\n");
        git(&w.path("vendor/tool"), &["init", "-q"]);
        w.record("t1", 1, &[APP], &[]);
    },
    Expect::Veto
);

attack!(
    a_hard_link_to_a_protected_file,
    Ws::new,
    |w| {
        honest(w);
        fs::hard_link(w.path(PROTECTED), w.path("src/orch_alias.py")).expect("link");
        w.record("t1", 1, &[APP], &["src/orch_alias.py"]);
    },
    Expect::Veto
);

attack!(
    a_symlink_to_a_protected_file,
    Ws::new,
    |w| {
        honest(w);
        std::os::unix::fs::symlink("orchestrator.py", w.path("src/entry.py")).expect("link");
        w.record("t1", 1, &[APP], &["src/entry.py"]);
    },
    Expect::Veto
);

/// A workspace with a submodule `vendor/tool` that holds a protected file.
fn submodule_workspace() -> Ws {
    let w = Ws::new();
    let lib = w.root.join("toolrepo");
    fs::create_dir_all(&lib).expect("mkdir");
    fs::write(lib.join("orchestrator.py"), "ROLES = ['tool']\n").expect("write");
    git(&lib, &["init", "-q", "-b", "main"]);
    git(&lib, &["add", "-A"]);
    git(&lib, &["commit", "-q", "-m", "tool"]);
    w.git(&[
        "submodule",
        "add",
        "-q",
        lib.to_str().expect("utf-8"),
        "vendor/tool",
    ]);
    w.git(&["commit", "-q", "-m", "submodule"]);
    w
}

attack!(
    an_edit_inside_a_submodule,
    submodule_workspace,
    |w| {
        honest(w);
        w.write("vendor/tool/orchestrator.py", "ROLES = ['admin']\n");
        w.record("t1", 1, &[APP], &[]);
    },
    Expect::Veto
);

// ---- honest work ------------------------------------------------------------------------------

attack!(
    a_non_ascii_name_is_judged,
    Ws::new,
    |w| {
        honest(w);
        w.write("src/é.py", "x = 1\n");
        w.record("t1", 1, &[APP], &["src/é.py"]);
    },
    Expect::Approve
);

attack!(
    a_name_with_a_space_is_judged,
    || Ws::with(&[("src/my module.py", b"x = 1\n")]),
    |w| {
        honest(w);
        w.write("src/my module.py", "x = 2\n");
        w.record("t1", 1, &[APP, "src/my module.py"], &[]);
    },
    Expect::Approve
);

/// Files checked out with `eol=crlf`: the worker's pre_hashes are of the bytes it found on disk,
/// which are the baseline as checked out, not the blob.
fn crlf_workspace() -> Ws {
    let w = Ws::with(&[
        (".gitattributes", b"*.txt eol=crlf\n"),
        ("notes.txt", b"one\ntwo\n"),
    ]);
    fs::remove_file(w.path("notes.txt")).expect("rm");
    w.git(&["checkout", "--", "notes.txt"]);
    assert_eq!(
        fs::read(w.path("notes.txt")).expect("read"),
        b"one\r\ntwo\r\n"
    );
    w
}

attack!(
    eol_crlf_checkouts_are_the_baseline,
    crlf_workspace,
    |w| {
        let before = fs::read(w.path("notes.txt")).expect("read");
        w.write("notes.txt", "one\r\ntwo\r\nthree\r\n");
        // The record's pre_hash is of what the worker found on disk.
        let mut tmp = Ws {
            _tmp: tempfile::tempdir().expect("tempdir"),
            root: w.root.clone(),
            ws: w.ws.clone(),
            state: w.state.clone(),
            logs: w.logs.clone(),
            base: w.base.clone(),
        };
        tmp.base.insert("notes.txt".into(), before);
        tmp.record("t1", 1, &["notes.txt"], &[]);
    },
    Expect::Approve
);

// ---- any bytes: names and task ids ------------------------------------------------------------

mod any_bytes {
    use super::*;
    use proptest::prelude::*;
    use std::os::unix::ffi::OsStrExt;

    /// A file name of any bytes but NUL and `/`, leaning on the awkward ones.
    fn name() -> impl Strategy<Value = Vec<u8>> {
        let byte = prop_oneof![
            4 => proptest::sample::select(b"abcXYZ019._-".to_vec()),
            1 => proptest::sample::select(b" \n\t\r\\%~\"'`*?[]{}#<>|&;$".to_vec()),
            1 => proptest::sample::select(vec![0xc3u8, 0xa9, 0xff, 0xfe, 0x80, 0xf4, 0x8f, 0xe2]),
        ];
        proptest::collection::vec(byte, 1..10)
            .prop_filter("not . or ..", |n| n != b"." && n != b"..")
    }

    /// A task id of any of these characters, not blank (a blank id is a malformed record).
    fn task_id() -> impl Strategy<Value = String> {
        "[a-z_%./é\\\\-][a-z _%./é\\\\-]{0,11}"
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

        /// Files of any names and a task id of any characters: `verify` never crashes (exit 0
        /// or 1, a JSON document), every name is a finding of CC-02 (none listed), and no
        /// verdict file lands outside `.referee/` or the state directory.
        #[test]
        fn any_names_and_task_ids_are_judged_never_crash(
            names in proptest::collection::btree_set(name(), 1..5),
            id in task_id(),
        ) {
            let w = Ws::new();
            for n in &names {
                let p = w.ws.join("src").join(std::ffi::OsStr::from_bytes(n));
                fs::write(&p, b"x = 1\n").expect("write");
            }
            let doc = json!({
                "task_id": id, "status": "pending_review", "attempt": 1,
                "summary": "Here's what I did: names.",
                "changes": {"added": [], "modified": [], "removed": []},
            });
            let tasks = w.path(".tasks");
            fs::create_dir_all(&tasks).expect("mkdir");
            let file = referee::workspace::name::file_stem_for(&id);
            fs::write(tasks.join(format!("{file}.json")), doc.to_string()).expect("record");
            let ws = w.ws.to_str().expect("utf-8");
            let Output { code, stdout: out, stderr: err, .. } = w.referee(&[
                "verify", ws, "--protocol", "code-change", "--format", "json", "--write",
            ]);
            prop_assert!(code == 0 || code == 1, "exit {code}: {err}");
            let v: Value = serde_json::from_str(&out).expect("a JSON document");
            let cc02 = cc(&v, "CC-02");
            let unlisted = cc02["evidence"]["details"]
                .as_array()
                .map_or(0, |d| d.iter().filter(|x| x.as_str().is_some_and(|s| s.starts_with("unlisted"))).count());
            prop_assert_eq!(unlisted, names.len(), "{:#}", cc02);
            prop_assert_eq!(w.outside(), w.outside());
        }
    }
}

/// A task record that is a symlink (here to a record kept outside the workspace, which the
/// worker could change behind the referee's back) is not read through: CC-00 FAILs with the
/// reason, the attempt is REJECTed.
#[test]
fn a_record_that_is_a_symlink_is_not_followed() {
    let w = Ws::new();
    let (code, _) = w.verify();
    assert_eq!(code, 0);
    honest(&w);
    w.record("t1", 1, &[APP], &[]);
    let rec = w.path(".tasks/t1.json");
    let outside = w.root.join("outside/t1.json");
    fs::rename(&rec, &outside).expect("move the record out");
    std::os::unix::fs::symlink(&outside, &rec).expect("symlink");
    let (code, doc) = w.verify();
    assert_eq!(code, 1, "{doc:#}");
    assert_eq!(cc(&doc, "CC-00")["status"], json!("FAIL"), "{doc:#}");
    let observed = cc(&doc, "CC-00")["evidence"]["observed"].to_string();
    assert!(observed.contains("symbolic link"), "{observed}");
}
