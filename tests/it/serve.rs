//! `referee serve` and `referee hook AGENT --serve SOCKET`, end to end: the real daemon started
//! as a process, the agents' recorded payloads (`fixtures/hooks/`) sent through the real
//! client, real edits and real git, and the answers as the agent reads them. Also the pinned
//! workspace (a `cwd` moved into a nested repository does not escape judgment) in both modes.

use std::fs;
use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::code_change::{git, git_workspace, APP, PROTECTED};
use crate::hooks::{fixture, Answer, DOC_PROJECT};
use crate::util::TestCommand;

const CC: &str = "claude-code";
const CC_TASK: &str = "claude-code-abc123";

/// A running `referee serve`, killed when dropped.
struct Served {
    child: Child,
    socket: PathBuf,
    /// The daemon's state base.
    state: PathBuf,
}

impl Served {
    /// Starts `referee serve` on `DIR/run/hook.sock`, its state in `DIR/serve-state`, and waits
    /// until the socket answers.
    fn start(dir: &Path) -> Served {
        Served::start_with(dir, &[])
    }

    fn start_with(dir: &Path, extra: &[&str]) -> Served {
        let run = dir.join("run");
        fs::create_dir_all(&run).unwrap();
        let socket = run.join("hook.sock");
        let state = dir.join("serve-state");
        let child = TestCommand::new()
            .args(["serve", "--socket"])
            .arg(&socket)
            .arg("--state-dir")
            .arg(&state)
            .args(extra)
            .spawn(Stdio::null(), Stdio::null());
        let s = Served {
            child,
            socket,
            state,
        };
        s.wait_ready();
        s
    }

    fn wait_ready(&self) {
        let start = Instant::now();
        while UnixStream::connect(&self.socket).is_err() {
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "`referee serve` did not listen on {}",
                self.socket.display()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The daemon's state directory for the workspace `ws`.
    fn state_of(&self, ws: &Path) -> PathBuf {
        self.state.join(referee::state::name(
            &referee::state::live::Here::of(ws).unwrap(),
        ))
    }

    fn stop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A git workspace (`src/app.py`, the protected `src/orchestrator.py`) in a test folder.
struct Setup {
    root: tempfile::TempDir,
    ws: PathBuf,
}

fn setup() -> Setup {
    let (root, ws, _logs) = git_workspace();
    Setup { root, ws }
}

impl Setup {
    /// The recorded payload `name` of `agent`, its project path made this workspace's, `edit`
    /// applied.
    fn payload(&self, agent: &str, name: &str, edit: impl FnOnce(&mut Value)) -> Vec<u8> {
        let text = fixture(agent, name).replace(DOC_PROJECT, self.ws.to_str().unwrap());
        let mut v: Value = serde_json::from_str(&text).unwrap();
        edit(&mut v);
        v.to_string().into_bytes()
    }

    /// `referee hook AGENT` with `stdin` and `args`, as the agent runs it.
    fn hook(&self, agent: &str, stdin: &[u8], args: &[&str]) -> Answer {
        self.hook_in(crate::state_home(), agent, stdin, args)
    }

    /// [`Setup::hook`] with the agent's state home (`XDG_STATE_HOME`) at `home`.
    fn hook_in(&self, home: &Path, agent: &str, stdin: &[u8], args: &[&str]) -> Answer {
        let out = TestCommand::new()
            .args(["hook", agent])
            .args(args)
            .env("XDG_STATE_HOME", home)
            .env("NO_COLOR", "1")
            .env_remove("REFEREE_SERVE")
            .stdin(stdin)
            .output();
        Answer {
            code: out.code,
            stdout: out.stdout,
            stderr: out.stderr,
        }
    }

    /// `referee hook AGENT --serve SOCKET` with the recorded payload `name`.
    fn served(&self, s: &Served, agent: &str, name: &str, edit: impl FnOnce(&mut Value)) -> Answer {
        let socket = s.socket.to_str().unwrap().to_string();
        self.hook(
            agent,
            &self.payload(agent, name, edit),
            &["--serve", &socket],
        )
    }

    fn sed_i(&self, script: &str, file: &str) {
        let st = Command::new("sed")
            .current_dir(&self.ws)
            .args(["-i", script, file])
            .status()
            .unwrap();
        assert!(st.success());
    }
}

fn verdict(state: &Path, task: &str) -> Value {
    let name = referee::outputs::code_change::verdict_file(task, "json");
    let text = fs::read_to_string(state.join(&name))
        .unwrap_or_else(|e| panic!("{name} in {}: {e}", state.display()));
    serde_json::from_str(&text).unwrap()
}

#[test]
fn a_protected_edit_is_blocked_at_stop_by_the_daemon_and_its_memory_is_the_daemons() {
    let t = setup();
    let s = Served::start(t.root.path());
    t.served(&s, CC, "session-start.json", |_| {})
        .allowed_silently();
    // Before the tool runs: the write to the protected file is denied by the daemon.
    let reason = t
        .served(&s, CC, "pre-tool-use-write.json", |_| {})
        .denied_with();
    assert!(reason.contains(PROTECTED), "{reason}");
    t.sed_i("s/worker/admin/", PROTECTED);
    let reason = t.served(&s, CC, "stop.json", |_| {}).blocked_with();
    assert!(reason.contains("CC-01"), "{reason}");
    assert!(reason.contains(PROTECTED), "{reason}");
    // The verdict, the STOP and the session's pin are in the daemon's state, not the agent's.
    let state = s.state_of(&t.ws);
    assert_eq!(verdict(&state, CC_TASK)["verdict"], "REJECT");
    assert!(state.join("OBSERVER-STOP.md").is_file());
    assert!(s
        .state
        .join("hook-sessions")
        .join(format!("{CC_TASK}.workspace"))
        .is_file());
    let agents_state = crate::state_home()
        .join("referee")
        .join(referee::state::name(
            &referee::state::live::Here::of(&t.ws).unwrap(),
        ));
    assert!(
        !agents_state.exists(),
        "a served hook kept state in the agent's state home: {}",
        agents_state.display()
    );
    // Put back, the stop goes through and the STOP is lifted.
    t.sed_i("s/admin/worker/", PROTECTED);
    t.served(&s, CC, "stop.json", |_| {}).allowed_silently();
    assert!(!state.join("OBSERVER-STOP.md").exists());
}

#[test]
fn an_honest_edit_is_let_through_by_the_daemon_for_each_agent() {
    let t = setup();
    let s = Served::start(t.root.path());
    fs::write(t.ws.join(APP), "def main():\n    return 2\n").unwrap();
    t.served(&s, CC, "stop.json", |_| {}).allowed_silently();
    assert_eq!(verdict(&s.state_of(&t.ws), CC_TASK)["verdict"], "APPROVE");
    // Another agent's format through the same daemon: Codex and Gemini's own answers.
    t.served(&s, "codex", "stop.json", |_| {})
        .allowed_silently();
    let gemini = t.served(&s, "gemini", "after-agent.json", |_| {});
    assert_eq!(gemini.code, 0, "{gemini:?}");
    assert_ne!(
        gemini.json().get("decision").and_then(Value::as_str),
        Some("deny"),
        "{gemini:?}"
    );
}

#[test]
fn the_same_answer_served_as_in_process() {
    // One pipeline: the daemon's answer is byte for byte what the in-process hook prints.
    let t = setup();
    let s = Served::start(t.root.path());
    let state = t.root.path().join("in-process-state");
    let state = state.to_str().unwrap();
    t.sed_i("s/worker/admin/", PROTECTED);
    for name in [
        "pre-tool-use-write.json",
        "pre-tool-use-bash.json",
        "stop.json",
    ] {
        let payload = t.payload(CC, name, |_| {});
        let served = t.hook(CC, &payload, &["--serve", s.socket.to_str().unwrap()]);
        let local = t.hook(CC, &payload, &["--state-dir", state]);
        assert_eq!(served.code, local.code, "{name}: {served:?} {local:?}");
        assert_eq!(served.stdout, local.stdout, "{name}");
        assert_eq!(served.stderr, local.stderr, "{name}");
    }
    // Unreadable input too.
    let served = t.hook(CC, b"not json", &["--serve", s.socket.to_str().unwrap()]);
    let local = t.hook(CC, b"not json", &["--state-dir", state]);
    assert_eq!(served.code, 2, "{served:?}");
    assert_eq!((served.code, &served.stderr), (local.code, &local.stderr));
}

#[test]
fn a_daemon_that_cannot_be_reached_blocks_with_the_reason() {
    let t = setup();
    let mut s = Served::start(t.root.path());
    t.sed_i("s/1/2/", APP);
    t.served(&s, CC, "stop.json", |_| {}).allowed_silently();
    s.stop();
    for (agent, name) in [
        (CC, "stop.json"),
        (CC, "pre-tool-use-bash.json"),
        (CC, "session-start.json"),
        ("codex", "stop.json"),
    ] {
        let a = t.served(&s, agent, name, |_| {});
        assert_eq!(a.code, 2, "{agent} {name}: {a:?}");
        assert!(a.stdout.is_empty(), "{a:?}");
        assert!(
            a.stderr.contains("cannot reach `referee serve`")
                && a.stderr.contains(s.socket.to_str().unwrap())
                && a.stderr.contains("fail closed"),
            "{a:?}"
        );
    }
    // The socket named by the environment, and a path where no daemon ever ran.
    let payload = t.payload(CC, "stop.json", |_| {});
    let out = TestCommand::new()
        .args(["hook", CC])
        .env("REFEREE_SERVE", t.root.path().join("nowhere.sock"))
        .stdin(payload.clone())
        .output();
    assert_eq!(out.code, 2, "{out}");
    assert!(out.stderr.contains("nowhere.sock"), "{out}");
    // A file that is no socket; and a listener that never answers is waited for, then blocked.
    let a = t.hook(CC, &payload, &["--serve", t.ws.join(APP).to_str().unwrap()]);
    assert_eq!(a.code, 2, "{a:?}");
    // Copilot skips a failing hook: its block is a deny on stdout.
    let a = t.hook(
        "copilot",
        &t.payload("copilot", "pre-tool-use-bash.json", |_| {}),
        &["--serve", s.socket.to_str().unwrap()],
    );
    assert_eq!(a.code, 0, "{a:?}");
    assert_eq!(a.json()["permissionDecision"], "deny", "{a:?}");
    // `--state-dir` is the daemon's to choose: refused when served.
    let a = t.hook(
        CC,
        &payload,
        &["--serve", s.socket.to_str().unwrap(), "--state-dir", "/tmp"],
    );
    assert_eq!(a.code, 2, "{a:?}");
    assert!(a.stderr.contains("--state-dir"), "{a:?}");
}

/// A protected edit, then a stop from a `cwd` inside a nested repository: `vendor/lib` (a
/// repository committed beside the work) and `.s` (one the agent makes with `git init`).
fn nested_escape(t: &Setup, hook: impl Fn(&[u8]) -> Answer) {
    let lib = t.ws.join("vendor/lib");
    fs::create_dir_all(&lib).unwrap();
    fs::write(lib.join("lib.py"), "X = 1\n").unwrap();
    git(&lib, &["init", "-q"]);
    git(&lib, &["add", "-A"]);
    git(&lib, &["commit", "-q", "-m", "lib"]);
    hook(&t.payload(CC, "session-start.json", |_| {})).allowed_silently();
    t.sed_i("s/worker/admin/", PROTECTED);
    let made = t.ws.join(".s");
    fs::create_dir_all(&made).unwrap();
    git(&made, &["init", "-q"]);
    let stop_in = |cwd: &Path| {
        hook(&t.payload(CC, "stop.json", |v| {
            v["cwd"] = Value::String(cwd.display().to_string());
        }))
    };
    let reason = stop_in(&lib).blocked_with();
    assert!(reason.contains("CC-01"), "{reason}");
    assert!(reason.contains(PROTECTED), "{reason}");
    // The same work stopped again from the repository the agent made: the same workspace
    // judged, so the loop guard sees no progress and tells the human (never a silent pass).
    let a = stop_in(&made);
    assert_eq!(a.code, 0, "{a:?}");
    let told = a.json()["systemMessage"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        told.contains("ESCALATE") && told.contains("CC-01") && told.contains(PROTECTED),
        "{a:?}"
    );
    // A tool call from there is judged against the pinned workspace too.
    let reason = hook(&t.payload(CC, "pre-tool-use-bash.json", |v| {
        v["cwd"] = Value::String(made.display().to_string());
        v["tool_input"]["command"] = "echo x > ../src/orchestrator.py".into();
    }))
    .denied_with();
    assert!(reason.contains(PROTECTED), "{reason}");
}

#[test]
fn a_cwd_moved_into_a_nested_repository_does_not_escape_the_in_process_hook() {
    // The default state directory, named from the workspace the hook judges: a hook that
    // re-derived the workspace from the `cwd` met an empty memory there and let the stop through.
    let t = setup();
    let home = t.root.path().join("agent-state");
    nested_escape(&t, |p| t.hook_in(&home, CC, p, &[]));
}

#[test]
fn a_cwd_moved_into_a_nested_repository_does_not_escape_the_daemon() {
    let t = setup();
    let s = Served::start(t.root.path());
    let socket = s.socket.to_str().unwrap().to_string();
    nested_escape(&t, |p| t.hook(CC, p, &["--serve", &socket]));
}

#[test]
fn the_first_event_pins_the_workspace_even_without_session_start() {
    // No SessionStart wired: a read-only tool call is the session's first event.
    let t = setup();
    let s = Served::start(t.root.path());
    t.served(&s, CC, "pre-tool-use-bash.json", |v| {
        v["tool_input"]["command"] = "ls".into();
    })
    .allowed_silently();
    t.sed_i("s/worker/admin/", PROTECTED);
    let made = t.ws.join("sub");
    fs::create_dir_all(&made).unwrap();
    git(&made, &["init", "-q"]);
    let reason = t
        .served(&s, CC, "stop.json", |v| {
            v["cwd"] = Value::String(made.display().to_string());
        })
        .blocked_with();
    assert!(reason.contains(PROTECTED), "{reason}");
}

#[test]
fn an_oversize_request_is_refused() {
    let t = setup();
    let s = Served::start(t.root.path());
    // A payload one byte over the cap, through the client: the daemon refuses it, blocked.
    let mut big = t.payload(CC, "stop.json", |_| {});
    big.resize(
        usize::try_from(referee::hook::MAX_PAYLOAD).unwrap() + 1,
        b' ',
    );
    let a = t.hook(CC, &big, &["--serve", s.socket.to_str().unwrap()]);
    assert_eq!(a.code, 2, "{:?} {:?}", a.code, &a.stderr);
    assert!(a.stderr.contains("over"), "{}", a.stderr);
    // A header with no end, straight on the socket: refused, the connection answered.
    let mut c = UnixStream::connect(&s.socket).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let _ = c.write_all(&vec![b'{'; 80 << 10]);
    let _ = c.shutdown(std::net::Shutdown::Write);
    let mut reply = String::new();
    c.read_to_string(&mut reply).unwrap();
    let v: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(v["exit"], 2, "{v}");
    assert!(v["stderr"].as_str().unwrap().contains("header"), "{v}");
    // A header that is not a request.
    let mut c = UnixStream::connect(&s.socket).unwrap();
    c.write_all(b"{\"agent\":\"claude-code\"}\n{}").unwrap();
    c.shutdown(std::net::Shutdown::Write).unwrap();
    let mut reply = String::new();
    c.read_to_string(&mut reply).unwrap();
    let v: Value = serde_json::from_str(&reply).unwrap();
    assert_eq!(v["exit"], 2, "{v}");
    // The daemon still answers after all that.
    t.served(&s, CC, "stop.json", |_| {}).allowed_silently();
}

/// The test's own uid is root: the daemon runs as root, the agent as `nobody`.
const NOBODY: u32 = 65534;

#[test]
fn the_agents_user_cannot_reach_the_daemons_state() {
    if !rustix::process::geteuid().is_root() {
        let _ = writeln!(
            std::io::stderr(),
            "\nnote: not root: the_agents_user_cannot_reach_the_daemons_state is SKIPPED (it runs the agent as `nobody`)\n"
        );
        return;
    }
    use std::os::unix::fs::PermissionsExt as _;
    use std::os::unix::process::CommandExt as _;
    let t = setup();
    // The agent's workspace is the agent's; the test folder is traversable by it.
    fs::set_permissions(t.root.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let chown = Command::new("chown")
        .args(["-R", "65534:65534"])
        .arg(&t.ws)
        .status()
        .unwrap();
    assert!(chown.success());
    let s = Served::start(t.root.path());
    let socket = s.socket.to_str().unwrap().to_string();
    let as_agent = |payload: &[u8]| {
        let out = TestCommand::new()
            .args(["hook", CC, "--serve", &socket])
            .env("XDG_STATE_HOME", t.root.path().join("agent-state"))
            .as_user(NOBODY, NOBODY)
            .stdin(payload.to_vec())
            .output();
        Answer {
            code: out.code,
            stdout: out.stdout,
            stderr: out.stderr,
        }
    };
    as_agent(&t.payload(CC, "session-start.json", |_| {})).allowed_silently();
    // The agent's edit, made as the agent.
    let sed = Command::new("sed")
        .current_dir(&t.ws)
        .args(["-i", "s/worker/admin/", PROTECTED])
        .uid(NOBODY)
        .gid(NOBODY)
        .status()
        .unwrap();
    assert!(sed.success());
    let reason = as_agent(&t.payload(CC, "stop.json", |_| {})).blocked_with();
    assert!(reason.contains("CC-01"), "{reason}");
    // The agent cannot read, delete or replace the daemon's memory.
    let state = s.state_of(&t.ws);
    for argv in [
        vec!["ls".to_string(), state.display().to_string()],
        vec!["rm".into(), "-rf".into(), state.display().to_string()],
        vec![
            "rm".into(),
            "-rf".into(),
            s.state.join("hook-sessions").display().to_string(),
        ],
        vec!["touch".into(), s.state.join("forged").display().to_string()],
        vec!["rm".into(), "-f".into(), socket.clone()],
    ] {
        let out = Command::new(&argv[0])
            .args(&argv[1..])
            .uid(NOBODY)
            .gid(NOBODY)
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert!(!out.status.success(), "the agent could run {argv:?}");
    }
    assert!(state.join(referee::outputs::STOP_FILE).is_file());
    // A second stop is judged from that memory: attempt 2 with attempt 1's diff, no progress,
    // ESCALATE for the human (with the agent's own memory gone it would be attempt 1 again).
    let a = as_agent(&t.payload(CC, "stop.json", |_| {}));
    let told = a.json()["systemMessage"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        told.contains("ESCALATE") && told.contains("attempt 2"),
        "{a:?}"
    );
    // The client, run in process by the agent against the daemon's state, cannot use it.
    let out = TestCommand::new()
        .args(["hook", CC, "--state-dir"])
        .arg(&state)
        .as_user(NOBODY, NOBODY)
        .stdin(t.payload(CC, "stop.json", |_| {}))
        .output();
    assert!(
        out.stdout.contains("cannot judge") || out.code == 2,
        "the agent used the daemon's state: {out}"
    );
    assert_eq!(verdict(&state, CC_TASK)["attempt"], 2);
}

#[test]
fn the_daemon_judges_only_the_workspaces_it_serves_and_never_its_own_state() {
    let t = setup();
    let elsewhere = t.root.path().join("elsewhere");
    fs::create_dir_all(&elsewhere).unwrap();
    let s = Served::start_with(t.root.path(), &["--allow", elsewhere.to_str().unwrap()]);
    t.sed_i("s/1/2/", APP);
    let reason = t.served(&s, CC, "stop.json", |_| {}).blocked_with();
    assert!(reason.contains("outside the folders"), "{reason}");
    // Asked about its own state (a workspace the agent cannot read): refused, whatever `--allow`.
    let s2 = Served::start(&t.root.path().join("second"));
    fs::create_dir_all(&s2.state).unwrap();
    let reason = t
        .served(&s2, CC, "stop.json", |v| {
            v["session_id"] = "other".into();
            v["cwd"] = Value::String(s2.state.display().to_string());
        })
        .blocked_with();
    assert!(reason.contains("referee's own state"), "{reason}");
    // The workspace it serves is judged.
    let s3 = Served::start_with(
        &t.root.path().join("third"),
        &["--allow", t.ws.to_str().unwrap()],
    );
    t.served(&s3, CC, "stop.json", |_| {}).allowed_silently();
}

/// The daemon judges with its own rules: an agent that reaches the socket and asks for rules
/// that protect nothing (`--set protected=[]`), or a hook configured with other rules, gets a
/// blocking answer naming both, and nothing is judged or kept; the hook with the daemon's own
/// rules is judged by them (its `--protect` vetoes the edit).
#[test]
fn the_daemon_judges_with_its_own_rules_only() {
    let t = setup();
    let s = Served::start_with(t.root.path(), &["--protect", APP]);
    t.sed_i("s/1/2/", APP);
    let socket = s.socket.to_str().unwrap().to_string();
    let stop = t.payload(CC, "stop.json", |_| {});
    for asked in [
        vec!["--set", "protected=[]", "--protect", APP],
        vec![],
        vec!["--protect", APP, "--max-read-bytes", "1"],
    ] {
        let mut args = vec!["--serve", socket.as_str()];
        args.extend(asked.iter().copied());
        let a = t.hook(CC, &stop, &args);
        assert_eq!(a.code, 2, "{asked:?}: {a:?}");
        assert!(
            a.stderr.contains("judges with its own rules") && a.stderr.contains(APP),
            "{asked:?}: {a:?}"
        );
    }
    let kept = s
        .state_of(&t.ws)
        .join(referee::outputs::code_change::verdict_file(CC_TASK, "json"));
    assert!(!kept.exists(), "nothing judged or kept: {}", kept.display());
    let a = t.hook(CC, &stop, &["--serve", &socket, "--protect", APP]);
    let reason = a.blocked_with();
    assert!(reason.contains("CC-01") && reason.contains(APP), "{a:?}");
}

/// A folder under `--allow` swapped, again and again while stops run, between the real
/// workspace (an honest change) and a link to a directory outside `--allow` (a protected edit
/// and a file of its own): no answer ever judges or names the outside directory, no session is
/// pinned to it and no state is kept for it; once the swapping stops, an honest stop is answered.
#[test]
fn a_link_swapped_in_under_allow_never_has_the_outside_judged_or_pinned() {
    use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
    use std::sync::Arc;
    let t = setup();
    let allowed = t.root.path().join("allowed");
    fs::create_dir_all(&allowed).unwrap();
    let ws = allowed.join("ws");
    fs::rename(&t.ws, &ws).unwrap();
    fs::write(ws.join(APP), "def main():\n    return 2\n").unwrap();
    // The outside: a work tree with a protected edit and a file only it has.
    let outside = t.root.path().join("elsewhere-OUTSIDE");
    fs::create_dir_all(outside.join("src")).unwrap();
    fs::write(outside.join(PROTECTED), "ROLES = ['worker']\n").unwrap();
    git(&outside, &["init", "-q"]);
    git(&outside, &["add", "-A"]);
    git(&outside, &["commit", "-q", "-m", "init"]);
    fs::write(outside.join(PROTECTED), "ROLES = ['admin']\n").unwrap();
    fs::write(outside.join("OUTSIDE_only.py"), "def (:\n").unwrap();
    let s = Served::start_with(t.root.path(), &["--allow", allowed.to_str().unwrap()]);
    let socket = s.socket.to_str().unwrap().to_string();
    // A swap in the middle of a judgment, found by the referee, is blocked: that counts
    // toward the session's blocks, so each stop here is a session of its own.
    let stop_as = |session: &str| {
        let payload = t.payload(CC, "stop.json", |v| {
            v["session_id"] = session.into();
            v["cwd"] = Value::String(ws.display().to_string());
        });
        t.hook(CC, &payload, &["--serve", &socket])
    };
    let halt = Arc::new(AtomicBool::new(false));
    let swaps = Arc::new(AtomicU32::new(0));
    let swapper = {
        let (ws, outside) = (ws.clone(), outside.clone());
        let real = allowed.join("ws.real");
        let (halt, swaps) = (halt.clone(), swaps.clone());
        std::thread::spawn(move || {
            while !halt.load(Ordering::Relaxed) {
                let _ = fs::rename(&ws, &real);
                let _ = std::os::unix::fs::symlink(&outside, &ws);
                std::thread::yield_now();
                let _ = fs::remove_file(&ws);
                let _ = fs::rename(&real, &ws);
                // The real folder left in place a while, varying, so that judgments begin and
                // end on it while the link comes and goes in their middle.
                let n = swaps.fetch_add(1, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(u64::from(n % 25)));
            }
        })
    };
    let leaks = |what: &str| what.contains("OUTSIDE") || what.contains(PROTECTED);
    let answers: Vec<Answer> = std::thread::scope(|sc| {
        let hands: Vec<_> = (0..4)
            .map(|n| {
                let stop_as = &stop_as;
                sc.spawn(move || {
                    (0..10)
                        .map(|i| stop_as(&format!("swap-{n}-{i}")))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        hands.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    halt.store(true, Ordering::Relaxed);
    swapper.join().unwrap();
    assert!(
        swaps.load(Ordering::Relaxed) >= 30,
        "the swapper hardly ran"
    );
    for a in &answers {
        assert!(
            !leaks(&a.stdout) && !leaks(&a.stderr),
            "an answer judged or named the outside directory: {a:?}"
        );
    }
    // No session pinned to the outside, no state kept for it.
    for entry in fs::read_dir(s.state.join("hook-sessions")).unwrap() {
        let entry = entry.unwrap();
        let pinned = fs::read_to_string(entry.path()).unwrap_or_default();
        assert!(
            !pinned.contains("OUTSIDE"),
            "{}: {pinned}",
            entry.path().display()
        );
    }
    for entry in fs::read_dir(&s.state).unwrap() {
        let name = entry.unwrap().file_name().to_string_lossy().into_owned();
        assert!(
            !name.contains("OUTSIDE"),
            "state kept for the outside: {name}"
        );
    }
    // The swapping over (the real folder back in place), an honest stop is judged and let through.
    if !ws.is_dir() {
        let _ = fs::remove_file(&ws);
        fs::rename(allowed.join("ws.real"), &ws).unwrap();
    }
    stop_as("honest").allowed_silently();
    assert_eq!(
        verdict(&s.state_of(&ws), "claude-code-honest")["verdict"],
        "APPROVE"
    );
}

/// The sessions' pins are the daemon's to forget: a pin not heard from for
/// `--forget-sessions-after` (30 days by default) is removed when the daemon starts; every event
/// of a session marks its pin heard from, so a live session keeps its pin; a forgotten
/// session is pinned again at its next event, where its `cwd` is.
#[test]
fn the_daemon_forgets_the_pins_of_silent_sessions_and_never_a_live_ones() {
    use std::time::SystemTime;
    let t = setup();
    let mut s = Served::start(t.root.path());
    let pins = s.state.join("hook-sessions");
    let pin = |session: &str| pins.join(format!("claude-code-{session}.workspace"));
    let event = |s: &Served, session: &str| {
        t.served(s, CC, "pre-tool-use-bash.json", |v| {
            v["session_id"] = session.into();
            v["tool_input"]["command"] = "ls".into();
        })
        .allowed_silently();
    };
    let days_ago = |days: u64| SystemTime::now() - Duration::from_secs(days * 86_400);
    let age = |session: &str, days: u64| {
        fs::File::options()
            .append(true)
            .open(pin(session))
            .unwrap()
            .set_modified(days_ago(days))
            .unwrap();
    };
    let modified = |session: &str| fs::metadata(pin(session)).unwrap().modified().unwrap();
    for session in ["gone", "quiet", "live"] {
        event(&s, session);
        assert!(pin(session).is_file(), "{session}");
    }
    age("gone", 31);
    age("quiet", 29);
    age("live", 40);
    // The live session speaks: its pin is heard from now.
    event(&s, "live");
    assert!(
        modified("live") > days_ago(1),
        "the live session's pin was not marked"
    );
    s.stop();
    let s = Served::start(t.root.path());
    assert!(!pin("gone").exists(), "a pin silent for 31 days was kept");
    assert!(
        pin("quiet").is_file(),
        "a pin silent for 29 days was forgotten"
    );
    assert!(pin("live").is_file(), "a live session's pin was forgotten");
    // The forgotten session's next event pins it again, where its `cwd` is.
    event(&s, "gone");
    let pinned = fs::read_to_string(pin("gone")).unwrap();
    assert_eq!(
        pinned.trim_end(),
        fs::canonicalize(&t.ws).unwrap().to_str().unwrap()
    );
    drop(s);
    // A shorter lifetime, the daemon's own flag.
    let _s = Served::start_with(t.root.path(), &["--forget-sessions-after", "7d"]);
    assert!(
        !pin("quiet").exists(),
        "a pin silent for 29 days outlived `7d`"
    );
    assert!(pin("live").is_file() && pin("gone").is_file());
}
