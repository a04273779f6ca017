//! The deployment `docs/deployment.md` describes under "Running as another user", done as it
//! says: real users made with `useradd`, the referee run as one of them, the pipeline or worker
//! as another, the orchestrator's `status` as a third in the referee's readers group, for the
//! D10 protocol (`watch BUILD_DIR`) and for code-change (`watch WORKSPACE --protocol
//! code-change`). Each step below is a step of that section, in its order.
//!
//! It needs root (to make users and to switch to them), `useradd`, `userdel`, `groupadd`,
//! `groupdel` and `setpriv`; without them it says so and is skipped (under CI: fails). The users
//! and groups it makes have names of their own and are removed at the end, whatever happens.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write as _;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde_json::json;

use crate::builder::Build;
use crate::code_change::{sha, APP, ORIGINAL, PROTECTED};
use crate::watch::{gates_text, manual_gates, GATES, HEARTBEAT, STOP};

/// The longest any condition may take to become true on a loaded machine.
const WAIT: Duration = Duration::from_secs(60);

/// `useradd` and `userdel` lock `/etc/passwd`: one test at a time makes or removes accounts.
static ACCOUNTS: Mutex<()> = Mutex::new(());

/// Whether this machine can run the deployment: root, and the account and `setpriv` tools.
fn can_deploy(what: &str) -> bool {
    if !rustix::process::geteuid().is_root() {
        let _ = writeln!(
            std::io::stderr(),
            "\nnote: not root: {what} (users made with `useradd`) is SKIPPED\n"
        );
        return false;
    }
    ["useradd", "userdel", "groupadd", "groupdel", "setpriv"]
        .iter()
        .all(|tool| {
            let here = Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .stdout(Stdio::null())
                .status()
                .is_ok_and(|s| s.success());
            if !here {
                crate::util::missing(&format!("`{tool}`"), "util-linux / passwd", what);
            }
            here
        })
}

/// Users and groups made for one test, removed when it ends (passed or failed).
struct Accounts {
    prefix: String,
    users: Vec<String>,
    groups: Vec<String>,
}

impl Accounts {
    fn new(tag: &str) -> Accounts {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        Accounts {
            prefix: format!("rd{tag}{}{:03}", std::process::id() % 100_000, nanos % 1000),
            users: Vec::new(),
            groups: Vec::new(),
        }
    }

    fn group(&mut self, role: &str) -> String {
        let name = format!("{}{role}", self.prefix);
        let _one = ACCOUNTS.lock().unwrap_or_else(|e| e.into_inner());
        root(&["groupadd", &name]);
        self.groups.push(name.clone());
        name
    }

    /// A user with a group of its own name, in `groups` besides.
    fn user(&mut self, role: &str, groups: &[&str]) -> String {
        let name = format!("{}{role}", self.prefix);
        let mut args = vec!["useradd", "-M", "-U", "-s", "/usr/sbin/nologin"];
        let joined = groups.join(",");
        if !groups.is_empty() {
            args.extend(["-G", joined.as_str()]);
        }
        args.push(&name);
        let _one = ACCOUNTS.lock().unwrap_or_else(|e| e.into_inner());
        root(&args);
        self.users.push(name.clone());
        name
    }
}

impl Drop for Accounts {
    fn drop(&mut self) {
        let _one = ACCOUNTS.lock().unwrap_or_else(|e| e.into_inner());
        for u in &self.users {
            let _ = Command::new("userdel")
                .arg(u)
                .stderr(Stdio::null())
                .status();
            // The user's own group, if `userdel` left it.
            let _ = Command::new("groupdel")
                .arg(u)
                .stderr(Stdio::null())
                .status();
        }
        for g in &self.groups {
            let _ = Command::new("groupdel")
                .arg(g)
                .stderr(Stdio::null())
                .status();
        }
    }
}

/// Runs a command as root (the operator), which must succeed.
#[track_caller]
fn root(args: &[&str]) {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .unwrap_or_else(|e| panic!("cannot run {args:?}: {e}"));
    assert!(
        out.status.success(),
        "{args:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn p(path: &Path) -> &str {
    path.to_str().expect("a UTF-8 path")
}

/// `program args…` as `user` (its uid, its group, its supplementary groups), with a clean
/// environment, as `setpriv --reuid --regid --init-groups` runs it.
fn as_user(user: &str, program: &Path, args: &[&str]) -> Command {
    as_user_with(user, program, args, &[])
}

/// [`as_user`] with `env` set besides.
fn as_user_with(user: &str, program: &Path, args: &[&str], env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new("setpriv");
    cmd.args(["--reuid", user, "--regid", user, "--init-groups", "--"])
        .arg(program)
        .args(args)
        .env_clear()
        .env("PATH", "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin")
        .env("HOME", "/nonexistent")
        .current_dir("/")
        .envs(env.iter().copied());
    cmd
}

/// What a command run as a user did.
#[derive(Debug)]
struct Ran {
    code: i32,
    stdout: String,
    stderr: String,
}

/// Runs `cmd` to its end (killed after [`WAIT`]).
fn ran(mut cmd: Command, stdin: &[u8]) -> Ran {
    let mut child = cmd
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    if let Some(mut input) = child.stdin.take() {
        let _ = input.write_all(stdin);
    }
    let deadline = Instant::now() + WAIT;
    while child.try_wait().expect("wait").is_none() {
        if Instant::now() > deadline {
            let _ = child.kill();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let out = child.wait_with_output().expect("output");
    Ran {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// `referee ARGS` as `user`.
fn referee(user: &str, args: &[&str]) -> Ran {
    ran(as_user(user, crate::util::referee_bin(), args), b"")
}

/// A shell command as `user` (`$1`, `$2` are `args`).
fn shell(user: &str, script: &str, args: &[&str], stdin: &[u8]) -> Ran {
    let mut all = vec!["-c", script, "sh"];
    all.extend(args);
    ran(as_user(user, Path::new("/bin/sh"), &all), stdin)
}

/// `user` writes `bytes` to `path` (in place, as an editor or a pipeline step would).
#[track_caller]
fn write_as(user: &str, path: &Path, bytes: &str) {
    let r = shell(user, r#"cat > "$1""#, &[p(path)], bytes.as_bytes());
    assert_eq!(r.code, 0, "{user} writes {}: {r:?}", path.display());
}

/// `user` puts `text` at `path` by writing a temp file and renaming it into place.
#[track_caller]
fn put_as(user: &str, path: &Path, text: &str) {
    let r = shell(
        user,
        r#"mkdir -p "$(dirname "$1")" && cat > "$1.tmp" && mv "$1.tmp" "$1""#,
        &[p(path)],
        text.as_bytes(),
    );
    assert_eq!(r.code, 0, "{user} puts {}: {r:?}", path.display());
}

/// `referee watch …` running as its own user, killed if the test ends first.
struct Daemon {
    child: Option<Child>,
    log: PathBuf,
}

impl Daemon {
    fn start(user: &str, args: &[&str], log: PathBuf) -> Daemon {
        Daemon::start_with(user, args, &[], log)
    }

    fn start_with(user: &str, args: &[&str], env: &[(&str, &str)], log: PathBuf) -> Daemon {
        let file = fs::File::create(&log).expect("log");
        let child = as_user_with(user, crate::util::referee_bin(), args, env)
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("log"))
            .stderr(file)
            .spawn()
            .expect("start the referee");
        Daemon {
            child: Some(child),
            log,
        }
    }

    fn output(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// Waits until `cond` holds (or fails with the referee's output).
    #[track_caller]
    fn until(&mut self, what: &str, mut cond: impl FnMut() -> bool) {
        let deadline = Instant::now() + WAIT;
        while !cond() {
            if let Some(child) = self.child.as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    panic!(
                        "the referee ended ({status}) before {what}:\n{}",
                        self.output()
                    );
                }
            }
            assert!(
                Instant::now() < deadline,
                "{what}: not within {WAIT:?}; the referee said:\n{}",
                self.output()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// `systemctl stop`: SIGTERM, then its exit code.
    fn stop(&mut self) -> i32 {
        let mut child = self.child.take().expect("running");
        let pid = rustix::process::Pid::from_child(&child);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let deadline = Instant::now() + WAIT;
        loop {
            if let Some(status) = child.try_wait().expect("wait") {
                return status.code().unwrap_or(-1);
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                panic!("the referee did not stop:\n{}", self.output());
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Daemon {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A folder for the whole deployment that every user may enter (a tempdir is 0700).
fn open_root() -> tempfile::TempDir {
    let root = tempfile::Builder::new()
        .prefix("referee-deploy-")
        .tempdir()
        .expect("tempdir");
    fs::set_permissions(root.path(), fs::Permissions::from_mode(0o755)).expect("chmod");
    root
}

/// The state folder the operator makes for the referee (systemd's `StateDirectory=referee`
/// with `StateDirectoryMode=2750`): the referee's, readable by the readers group.
fn state_base(at: &Path, referee_user: &str, readers: &str) -> PathBuf {
    root(&[
        "install",
        "-d",
        "-m",
        "2750",
        "-o",
        referee_user,
        "-g",
        readers,
        p(at),
    ]);
    at.to_path_buf()
}

/// What the worker or pipeline may not do to the referee's memory: read it, write in it,
/// delete it or move it away; and what its `status` says (never go).
#[track_caller]
fn out_of_reach(user: &str, state: &Path, watched: &Path) {
    let ls = shell(user, r#"ls "$1""#, &[p(state)], b"");
    assert_ne!(ls.code, 0, "{user} listed the state directory: {ls:?}");
    let read = shell(
        user,
        r#"cat "$1/OBSERVER-HEARTBEAT.json""#,
        &[p(state)],
        b"",
    );
    assert_ne!(read.code, 0, "{user} read the heartbeat: {read:?}");
    let write = shell(
        user,
        r#"echo forged > "$1/OBSERVER-HEARTBEAT.json""#,
        &[p(state)],
        b"",
    );
    assert_ne!(
        write.code, 0,
        "{user} wrote in the state directory: {write:?}"
    );
    let rm = shell(user, r#"rm -rf "$1""#, &[p(state)], b"");
    assert_ne!(rm.code, 0, "{user} deleted the state directory: {rm:?}");
    let mv = shell(user, r#"mv "$1" "$1.gone""#, &[p(state)], b"");
    assert_ne!(mv.code, 0, "{user} moved the state directory: {mv:?}");
    assert!(
        state.join(HEARTBEAT).is_file(),
        "the state directory is intact"
    );
    let status = referee(user, &["status", p(watched), "--state-dir", p(state)]);
    assert_ne!(status.code, 0, "{user} was told go: {status:?}");
}

/// D10: the pipeline writes the build directory, the referee (its own user, in the build's
/// group) writes its `OBSERVER-*` copies there and its memory in a state directory only it can
/// write, the orchestrator (in the readers group) asks `status`.
#[test]
fn d10_the_referee_runs_as_its_own_user_and_the_orchestrator_reads_its_state() {
    if !can_deploy("the D10 other-user deployment") {
        return;
    }
    let mut accounts = Accounts::new("d");
    // 1. The accounts: the referee's readers group, the build group, and a user each.
    let readers = accounts.group("rd");
    let build_group = accounts.group("bd");
    let referee_user = accounts.user("ref", &[&build_group]);
    let pipeline = accounts.user("pipe", &[&build_group]);
    let orchestrator = accounts.user("orch", &[&readers, &build_group]);
    let stranger = accounts.user("oth", &[]);
    let top = open_root();

    // 2. The build directory: the pipeline's, group-writable for the build group (set-group-ID,
    //    so what anyone writes there stays in that group).
    let dir = Build::named("pre-audit")
        .and_then(|b| b.materialise(top.path()))
        .expect("materialise");
    root(&["chown", "-R", &format!("{pipeline}:{build_group}"), p(&dir)]);
    root(&["chmod", "2775", p(&dir)]);

    // 3. The state folder: the referee's, readable by the readers group; the referee makes
    //    this build's state directory in it.
    let base = state_base(&top.path().join("lib-referee"), &referee_user, &readers);
    let state = base.join("build-1");

    // 4. The referee, as its own user.
    let mut w = Daemon::start(
        &referee_user,
        &[
            "watch",
            p(&dir),
            "--state-dir",
            p(&state),
            "--heartbeat",
            "1",
        ],
        top.path().join("referee.log"),
    );
    w.until("the referee's copies in the build directory", || {
        dir.join("OBSERVER-PASS-2.md").is_file() && dir.join(HEARTBEAT).is_file()
    });
    w.until("its heartbeat in its state directory", || {
        state.join(HEARTBEAT).is_file()
    });
    let meta = fs::metadata(&state).expect("state");
    assert_eq!(
        (meta.mode() & 0o777, meta.gid()),
        (0o750, fs::metadata(&base).expect("base").gid()),
        "the state directory is the referee's, readable by the readers group"
    );
    let copy = fs::metadata(dir.join(HEARTBEAT)).expect("copy");
    let referee_uid = fs::metadata(&state).expect("state").uid();
    assert_eq!(copy.uid(), referee_uid, "written by the referee");

    // 5. The orchestrator asks, with read access only.
    let live = referee(
        &orchestrator,
        &[
            "status",
            p(&dir),
            "--state-dir",
            p(&state),
            "--require-live",
        ],
    );
    assert_eq!((live.code, live.stdout.as_str()), (0, "go\n"), "{live:?}");
    let synced = referee(
        &orchestrator,
        &[
            "status",
            p(&dir),
            "--state-dir",
            p(&state),
            "--sync",
            "--require-live",
            "--wait",
            "30s",
        ],
    );
    assert_eq!(synced.code, 0, "{synced:?}");

    // 6. The pipeline writes hand-typed gate results: a BLOCKING failure, a STOP.
    write_as(&pipeline, &dir.join(GATES), &manual_gates(1));
    w.until(
        "the STOP, in the state directory and in the build directory",
        || crate::watch::read(&dir.join(STOP)).contains("OBS-27") && state.join(STOP).is_file(),
    );
    for args in [&[][..], &["--require-live"], &["--sync", "--require-live"]] {
        let mut all = vec!["status", p(&dir), "--state-dir", p(&state)];
        all.extend(args);
        let r = referee(&orchestrator, &all);
        assert_eq!(r.code, 1, "{args:?}: {r:?}");
        assert!(r.stdout.contains("OBS-27"), "{args:?}: {r:?}");
    }
    // The pipeline deletes the copy: the orchestrator still reads the STOP from the state.
    let rm = shell(&pipeline, r#"rm -f "$1""#, &[p(&dir.join(STOP))], b"");
    assert_eq!(rm.code, 0, "{rm:?}");
    let r = referee(
        &orchestrator,
        &["status", p(&dir), "--state-dir", p(&state)],
    );
    assert_eq!(r.code, 1, "the STOP stands in the referee's memory: {r:?}");
    w.until("the copy restored", || dir.join(STOP).is_file());

    // 7. The pipeline cannot read, write, delete or move the referee's memory.
    out_of_reach(&pipeline, &state, &dir);
    // Nor can a user outside the readers group learn anything but "no go" from it.
    let r = referee(&stranger, &["status", p(&dir), "--state-dir", p(&state)]);
    assert_ne!(r.code, 0, "{r:?}");

    // 8. The pipeline puts the gate runner's results back: the STOP is resolved; go.
    write_as(&pipeline, &dir.join(GATES), &gates_text());
    w.until("the STOP resolved", || {
        !state.join(STOP).exists() && !dir.join(STOP).exists()
    });
    for args in [&[][..], &["--require-live"], &["--sync", "--require-live"]] {
        let mut all = vec!["status", p(&dir), "--state-dir", p(&state)];
        all.extend(args);
        let r = referee(&orchestrator, &all);
        assert_eq!((r.code, r.stdout.as_str()), (0, "go\n"), "{args:?}: {r:?}");
    }

    // 9. Whoever cannot reach the state directory is never told go: a user outside the readers
    //    group (below), the orchestrator once a folder above it is closed to it (as systemd's
    //    `DynamicUser=` does with `/var/lib/private`, 0700), or once it is renamed away (after
    //    the referee stopped, below).
    let r = referee(&stranger, &["status", p(&dir), "--state-dir", p(&state)]);
    assert_eq!(r.code, 2, "{r:?}");
    assert!(
        r.stderr.contains("cannot reach the state directory"),
        "{r:?}"
    );
    let r = referee(
        &stranger,
        &[
            "status",
            p(&dir),
            "--state-dir",
            p(&state),
            "--require-live",
        ],
    );
    assert_eq!(r.code, 3, "{r:?}");
    // 10. `systemctl stop`: the report is written in the build directory.
    assert_eq!(w.stop(), 0, "{}", w.output());
    assert!(dir.join("OBSERVER-REPORT.md").is_file(), "{}", w.output());
    root(&["chmod", "0700", p(&base)]);
    let r = referee(
        &orchestrator,
        &["status", p(&dir), "--state-dir", p(&state)],
    );
    assert_eq!(r.code, 2, "{r:?}");
    let r = referee(
        &orchestrator,
        &[
            "status",
            p(&dir),
            "--state-dir",
            p(&state),
            "--require-live",
        ],
    );
    assert_eq!(r.code, 3, "{r:?}");
    // A STOP in the watched directory answers 1 even then.
    write_as(
        &pipeline,
        &dir.join(STOP),
        "# OBSERVER STOP\n\nwritten by hand\n",
    );
    let r = referee(
        &orchestrator,
        &["status", p(&dir), "--state-dir", p(&state)],
    );
    assert_eq!(r.code, 1, "{r:?}");
    let rm = shell(&pipeline, r#"rm -f "$1""#, &[p(&dir.join(STOP))], b"");
    assert_eq!(rm.code, 0, "{rm:?}");
    root(&["chmod", "2750", p(&base)]);
    // The state directory renamed away: not go.
    let moved = base.join("build-1.moved");
    root(&["mv", p(&state), p(&moved)]);
    let r = referee(
        &orchestrator,
        &["status", p(&dir), "--state-dir", p(&state)],
    );
    assert_eq!(r.code, 2, "{r:?}");
    assert!(r.stderr.contains("moved or removed"), "{r:?}");
}

/// Code-change: the worker owns the workspace, the operator made `.referee/` for the referee,
/// the referee (its own user) judges every attempt and keeps its memory out of the worker's
/// reach, the orchestrator (in the readers group) asks `status` and `status --task`.
#[test]
fn code_change_the_referee_runs_as_its_own_user_and_the_orchestrator_reads_its_state() {
    if !can_deploy("the code-change other-user deployment") {
        return;
    }
    let mut accounts = Accounts::new("c");
    let readers = accounts.group("rd");
    let referee_user = accounts.user("ref", &[]);
    let worker = accounts.user("work", &[]);
    let orchestrator = accounts.user("orch", &[&readers]);
    let stranger = accounts.user("oth", &[]);
    let top = open_root();

    // 1. The worker's workspace: a git work tree with one commit.
    let ws = top.path().join("ws");
    fs::create_dir_all(ws.join("src")).expect("mkdir");
    fs::write(ws.join(APP), ORIGINAL).expect("write");
    let roles = "ROLES = ['worker']\n";
    fs::write(ws.join(PROTECTED), roles).expect("write");
    crate::code_change::git(&ws, &["init", "-q"]);
    crate::code_change::git(&ws, &["add", "-A"]);
    crate::code_change::git(&ws, &["commit", "-q", "-m", "init"]);
    root(&["chown", "-R", &format!("{worker}:{worker}"), p(&ws)]);

    // 2. The folder the referee writes its copies in, made for it by the operator.
    root(&[
        "install",
        "-d",
        "-m",
        "0755",
        "-o",
        &referee_user,
        "-g",
        &referee_user,
        p(&ws.join(".referee")),
    ]);
    // 3. Its state folder, readable by the readers group.
    let base = state_base(&top.path().join("lib-referee"), &referee_user, &readers);
    let state = base.join("ws");

    // 4. The referee, as its own user.
    let mut w = Daemon::start(
        &referee_user,
        &[
            "watch",
            p(&ws),
            "--protocol",
            "code-change",
            "--state-dir",
            p(&state),
            "--heartbeat",
            "1",
        ],
        top.path().join("referee.log"),
    );
    w.until("its heartbeat, in its state and in .referee/", || {
        state.join(HEARTBEAT).is_file() && ws.join(".referee").join(HEARTBEAT).is_file()
    });
    let r = referee(
        &orchestrator,
        &["status", p(&ws), "--state-dir", p(&state), "--require-live"],
    );
    assert_eq!((r.code, r.stdout.as_str()), (0, "go\n"), "{r:?}");

    // 5. The worker edits a protected file and asks for review: REJECT, STOP.
    let base_hashes = BTreeMap::from([(APP, ORIGINAL), (PROTECTED, roles)]);
    let record = |attempt: u64, modified: &[&str]| {
        let pre: serde_json::Map<_, _> = modified
            .iter()
            .map(|f| ((*f).to_string(), json!(sha(base_hashes[f].as_bytes()))))
            .collect();
        let post: serde_json::Map<_, _> = modified
            .iter()
            .map(|f| {
                (
                    (*f).to_string(),
                    json!(sha(&fs::read(ws.join(f)).expect("read"))),
                )
            })
            .collect();
        json!({
            "task_id": "t1",
            "status": "pending_review",
            "description": "a task",
            "attempt": attempt,
            "summary": "Here's what I did: the change.",
            "changes": {"added": [], "modified": modified, "removed": []},
            "pre_hashes": pre,
            "post_hashes": post,
        })
        .to_string()
    };
    let stop = ws.join(".referee").join(STOP);
    write_as(
        &worker,
        &ws.join(PROTECTED),
        "ROLES = ['worker', 'admin']\n",
    );
    write_as(&worker, &ws.join(APP), "def main():\n    return 2\n");
    put_as(
        &worker,
        &ws.join(".tasks/t1.json"),
        &record(1, &[APP, PROTECTED]),
    );
    w.until("the STOP, in the state directory and in .referee/", || {
        state.join(STOP).is_file() && stop.is_file()
    });
    w.until("t1 attempt 1 judged", || {
        crate::code_change::judged(&ws, "t1", 1)
    });
    let r = referee(&orchestrator, &["status", p(&ws), "--state-dir", p(&state)]);
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("CC-01"), "{r:?}");
    let r = referee(
        &orchestrator,
        &[
            "status",
            p(&ws),
            "--state-dir",
            p(&state),
            "--task",
            "t1",
            "--wait",
            "30s",
        ],
    );
    assert_eq!(r.code, 1, "{r:?}");
    assert!(r.stdout.contains("REJECT"), "{r:?}");

    // 6. The worker cannot read, write, delete or move the referee's memory.
    out_of_reach(&worker, &state, &ws);

    // 7. The worker puts the protected file back: APPROVE, the STOP resolved; go.
    write_as(&worker, &ws.join(PROTECTED), roles);
    put_as(&worker, &ws.join(".tasks/t1.json"), &record(2, &[APP]));
    w.until("the STOP resolved", || {
        !state.join(STOP).exists() && !stop.exists()
    });
    let r = referee(
        &orchestrator,
        &[
            "status",
            p(&ws),
            "--state-dir",
            p(&state),
            "--task",
            "t1",
            "--wait",
            "30s",
        ],
    );
    assert_eq!(r.code, 0, "{r:?}");
    assert!(r.stdout.contains("t1 attempt 2: APPROVE"), "{r:?}");
    let r = referee(
        &orchestrator,
        &["status", p(&ws), "--state-dir", p(&state), "--require-live"],
    );
    assert_eq!((r.code, r.stdout.as_str()), (0, "go\n"), "{r:?}");

    // 8. A user outside the readers group is never told go.
    let r = referee(&stranger, &["status", p(&ws), "--state-dir", p(&state)]);
    assert_eq!(r.code, 2, "{r:?}");
    let r = referee(
        &stranger,
        &["status", p(&ws), "--state-dir", p(&state), "--task", "t1"],
    );
    assert_ne!(r.code, 0, "{r:?}");
    assert_eq!(w.stop(), 0, "{}", w.output());
}

/// The systemd unit's form (`examples/systemd/referee@.service`): no `--state-dir`, but
/// `XDG_STATE_HOME=/var/lib` over a `StateDirectory=referee` made 0750 for the readers group.
/// The referee makes the build's state directory under its default name there, readable by the
/// group; the orchestrator, with the same `XDG_STATE_HOME`, finds it as the referee did.
#[test]
fn d10_the_systemd_form_finds_the_state_where_the_referee_made_it() {
    if !can_deploy("the systemd form of the other-user deployment") {
        return;
    }
    let mut accounts = Accounts::new("s");
    let readers = accounts.group("rd");
    let build_group = accounts.group("bd");
    let referee_user = accounts.user("ref", &[&build_group]);
    let pipeline = accounts.user("pipe", &[&build_group]);
    let orchestrator = accounts.user("orch", &[&readers]);
    let stranger = accounts.user("oth", &[]);
    let top = open_root();
    let dir = Build::named("pre-audit")
        .and_then(|b| b.materialise(top.path()))
        .expect("materialise");
    root(&["chown", "-R", &format!("{pipeline}:{build_group}"), p(&dir)]);
    root(&["chmod", "2775", p(&dir)]);
    // StateDirectory=referee, StateDirectoryMode=0750, User=referee, Group=referee-readers.
    let var_lib = top.path().join("var-lib");
    fs::create_dir(&var_lib).expect("mkdir");
    fs::set_permissions(&var_lib, fs::Permissions::from_mode(0o755)).expect("chmod");
    let base = state_base(&var_lib.join("referee"), &referee_user, &readers);
    let xdg = [("XDG_STATE_HOME", p(&var_lib))];

    let mut w = Daemon::start_with(
        &referee_user,
        &["watch", p(&dir), "--heartbeat", "1"],
        &xdg,
        top.path().join("referee.log"),
    );
    w.until("a state directory under its default name", || {
        fs::read_dir(&base)
            .map(|r| r.flatten().any(|e| e.path().join(HEARTBEAT).is_file()))
            .unwrap_or(false)
    });
    let ask = |user: &str, extra: &[&str]| {
        let mut args = vec!["status", p(&dir)];
        args.extend(extra);
        ran(
            as_user_with(user, crate::util::referee_bin(), &args, &xdg),
            b"",
        )
    };
    let r = ask(&orchestrator, &["--require-live"]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "go\n"), "{r:?}");
    write_as(&pipeline, &dir.join(GATES), &manual_gates(1));
    w.until("the STOP", || {
        crate::watch::read(&dir.join(STOP)).contains("OBS-27")
    });
    let r = ask(&orchestrator, &["--require-live"]);
    assert_eq!(r.code, 1, "{r:?}");
    // The pipeline may not look into /var/lib/referee at all: never go, STOP or not.
    write_as(&pipeline, &dir.join(GATES), &gates_text());
    w.until("the STOP resolved", || !dir.join(STOP).exists());
    let r = ask(&orchestrator, &[]);
    assert_eq!((r.code, r.stdout.as_str()), (0, "go\n"), "{r:?}");
    let r = ask(&stranger, &[]);
    assert_eq!(r.code, 2, "{r:?}");
    let r = ask(&pipeline, &["--require-live"]);
    assert_eq!(r.code, 3, "{r:?}");
    assert_eq!(w.stop(), 0, "{}", w.output());
}
