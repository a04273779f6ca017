//! `referee hook claude-code|codex`, end to end through the binary: the agents' documented hook
//! payloads (recorded under `fixtures/hooks/`, their project path `/home/user/my-project`
//! replaced by a real git workspace), real edits (`sed -i` run as a process), the state
//! directory the referee keeps, and the answers as each agent reads them (stdout JSON, exit code).

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::code_change::{git_workspace, APP, PROTECTED};
use crate::util::TestCommand;

/// The project path in the recorded payloads.
pub(crate) const DOC_PROJECT: &str = "/home/user/my-project";

pub(crate) fn fixture(agent: &str, name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/hooks")
        .join(agent)
        .join(name);
    fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// What the hook answered.
#[derive(Debug)]
pub(crate) struct Answer {
    pub(crate) code: i32,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

impl Answer {
    /// The JSON answer on stdout (`Value::Null` when it printed nothing).
    pub(crate) fn json(&self) -> Value {
        if self.stdout.trim().is_empty() {
            return Value::Null;
        }
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }

    pub(crate) fn blocked_with(&self) -> String {
        assert_eq!(self.code, 0, "{self:?}");
        let v = self.json();
        assert_eq!(v["decision"], "block", "{self:?}");
        v["reason"].as_str().expect("a reason").to_string()
    }

    /// Exit 0, no answer, and no warning (a session's start has no task record to warn of).
    pub(crate) fn allowed_silently(&self) {
        assert_eq!(self.code, 0, "{self:?}");
        assert_eq!(self.json(), Value::Null, "{self:?}");
        assert!(!self.stderr.contains("warning"), "{self:?}");
    }

    pub(crate) fn denied_with(&self) -> String {
        assert_eq!(self.code, 0, "{self:?}");
        let v = self.json();
        let out = &v["hookSpecificOutput"];
        assert_eq!(out["hookEventName"], "PreToolUse", "{self:?}");
        assert_eq!(out["permissionDecision"], "deny", "{self:?}");
        out["permissionDecisionReason"]
            .as_str()
            .expect("a reason")
            .to_string()
    }
}

/// A workspace and the referee's state directory for it.
pub(crate) struct Ws {
    pub(crate) _root: tempfile::TempDir,
    pub(crate) ws: PathBuf,
    pub(crate) state: PathBuf,
}

pub(crate) fn workspace() -> Ws {
    let (root, ws, _logs) = git_workspace();
    let state = root.path().join("state");
    Ws {
        ws,
        state,
        _root: root,
    }
}

impl Ws {
    /// Runs `referee hook AGENT` with the recorded payload `name`, `edit` applied to it.
    pub(crate) fn hook_with(
        &self,
        agent: &str,
        name: &str,
        extra: &[&str],
        edit: impl FnOnce(&mut Value),
    ) -> Answer {
        let text = fixture(agent, name).replace(DOC_PROJECT, self.ws.to_str().unwrap());
        let mut v: Value = serde_json::from_str(&text).unwrap();
        edit(&mut v);
        self.run(agent, v.to_string().as_bytes(), extra)
    }

    pub(crate) fn hook(&self, agent: &str, name: &str) -> Answer {
        self.hook_with(agent, name, &[], |_| {})
    }

    pub(crate) fn run(&self, agent: &str, stdin: &[u8], extra: &[&str]) -> Answer {
        let out = TestCommand::new()
            .args(["hook", agent, "--state-dir"])
            .arg(&self.state)
            .args(extra)
            .env("NO_COLOR", "1")
            .stdin(stdin)
            .output();
        Answer {
            code: out.code,
            stdout: out.stdout,
            stderr: out.stderr,
        }
    }

    pub(crate) fn sed_i(&self, script: &str, file: &str) {
        let st = Command::new("sed")
            .current_dir(&self.ws)
            .args(["-i", script, file])
            .status()
            .expect("sed");
        assert!(st.success());
    }

    pub(crate) fn verdict(&self, task: &str) -> Value {
        let name = referee::outputs::code_change::verdict_file(task, "json");
        let text = fs::read_to_string(self.state.join(&name))
            .unwrap_or_else(|e| panic!("{name} in the state directory: {e}"));
        serde_json::from_str(&text).unwrap()
    }
}

/// Every path under `dir` (`.git` included) with its size, mode and content hash.
pub(crate) fn listing(dir: &Path) -> BTreeMap<String, (u64, u32, String)> {
    use std::os::unix::fs::PermissionsExt as _;
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(Result::unwrap)
        .map(|e| {
            let m = fs::symlink_metadata(e.path()).unwrap();
            let hash = if m.is_file() {
                referee::workspace::sha256(&fs::read(e.path()).unwrap())
            } else {
                String::new()
            };
            (
                e.path().strip_prefix(dir).unwrap().display().to_string(),
                (
                    if m.is_file() { m.len() } else { 0 },
                    m.permissions().mode(),
                    hash,
                ),
            )
        })
        .collect()
}

const CC: &str = "claude-code";
const CC_TASK: &str = "claude-code-abc123";

#[test]
fn a_clean_change_is_let_through_at_stop_and_kept_as_an_approved_attempt() {
    let w = workspace();
    w.hook(CC, "session-start.json").allowed_silently();
    fs::write(w.ws.join(APP), "def main():\n    return 2\n").unwrap();
    w.hook(CC, "stop.json").allowed_silently();
    let v = w.verdict(CC_TASK);
    assert_eq!(v["verdict"], "APPROVE", "{v}");
    assert_eq!(v["attempt"], 1, "{v}");
    // No STOP in the state directory.
    assert!(!w.state.join("OBSERVER-STOP.md").exists());
    // The same workspace at the next stop is the same attempt, not a new one.
    w.hook(CC, "stop.json").allowed_silently();
    assert_eq!(w.verdict(CC_TASK)["attempt"], 1);
}

#[test]
fn sed_i_on_a_protected_file_is_blocked_at_stop_with_cc01() {
    for (agent, name, task) in [
        (CC, "stop.json", CC_TASK),
        (
            "codex",
            "stop.json",
            "codex-019a6f2e-7c1d-7b30-9f7e-2d0c4b8a1e55",
        ),
    ] {
        let w = workspace();
        w.hook(CC, "session-start.json").allowed_silently();
        fs::write(w.ws.join(APP), "def main():\n    return 2\n").unwrap();
        w.sed_i("s/worker/admin/", PROTECTED);
        let reason = w.hook(agent, name).blocked_with();
        assert!(reason.contains("CC-01"), "{agent}: {reason}");
        assert!(reason.contains(PROTECTED), "{agent}: {reason}");
        assert!(reason.contains("REJECT"), "{agent}: {reason}");
        assert!(
            reason.contains(&format!("restore `{PROTECTED}`")),
            "{agent}: {reason}"
        );
        assert!(
            !reason.contains(&format!("restore `{APP}`")),
            "only protected paths are to be restored: {reason}"
        );
        assert_eq!(w.verdict(task)["verdict"], "REJECT");
        let stop = fs::read_to_string(w.state.join("OBSERVER-STOP.md")).unwrap();
        assert!(stop.contains(PROTECTED), "{stop}");
        // Put back, the stop goes through and the STOP is gone.
        w.sed_i("s/admin/worker/", PROTECTED);
        w.hook(agent, name).allowed_silently();
        assert!(!w.state.join("OBSERVER-STOP.md").exists());
    }
}

#[test]
fn a_subagent_stop_is_judged_like_a_stop() {
    let w = workspace();
    w.sed_i("s/worker/admin/", PROTECTED);
    let reason = w.hook(CC, "subagent-stop.json").blocked_with();
    assert!(reason.contains("CC-01"), "{reason}");
}

#[test]
fn writes_to_protected_paths_are_denied_before_they_run() {
    let w = workspace();
    for name in ["pre-tool-use-write.json", "pre-tool-use-edit.json"] {
        let reason = w.hook(CC, name).denied_with();
        assert!(reason.contains(PROTECTED), "{name}: {reason}");
        assert!(reason.contains("CC-01"), "{name}: {reason}");
    }
    w.hook(CC, "pre-tool-use-multiedit-app.json")
        .allowed_silently();
    // The shell: `sed -i` named relative to the payload's cwd, Claude Code and Codex alike.
    for agent in [CC, "codex"] {
        let reason = w.hook(agent, "pre-tool-use-bash.json").denied_with();
        assert!(reason.contains(PROTECTED), "{agent}: {reason}");
    }
    let reason = w
        .hook_with(CC, "pre-tool-use-bash.json", &[], |v| {
            v["cwd"] = Value::String(w.ws.join("src").display().to_string());
            v["tool_input"]["command"] = "cd . && echo x >> ../src/./orchestrator.py".into();
        })
        .denied_with();
    assert!(reason.contains(PROTECTED), "{reason}");
    let reason = w
        .hook("codex", "pre-tool-use-apply-patch.json")
        .denied_with();
    assert!(reason.contains(PROTECTED), "{reason}");
    // Reading a protected file, or writing elsewhere, goes on.
    for cmd in [
        "cat src/orchestrator.py",
        "sed -n 1p src/orchestrator.py",
        "sed -i s/1/2/ src/app.py",
        "echo x > /tmp/elsewhere-orchestrator.py",
    ] {
        w.hook_with(CC, "pre-tool-use-bash.json", &[], |v| {
            v["tool_input"]["command"] = cmd.into();
        })
        .allowed_silently();
    }
    // Nothing was written by any of this (the denies are advice, not edits).
    assert_eq!(
        fs::read_to_string(w.ws.join(PROTECTED)).unwrap(),
        "ROLES = ['worker']\n"
    );
}

#[test]
fn an_edit_that_breaks_the_syntax_gets_feedback_naming_the_file() {
    let w = workspace();
    w.hook(CC, "session-start.json").allowed_silently();
    fs::write(w.ws.join(APP), "def main(:\n    return 2\n").unwrap();
    let reason = w.hook(CC, "post-tool-use-write.json").blocked_with();
    assert!(reason.contains(APP), "{reason}");
    assert!(reason.contains("CC-05"), "{reason}");
    // Feedback is not an attempt: nothing kept.
    assert!(!w
        .state
        .join("attempts")
        .join(referee::state::attempts::file_name(CC_TASK))
        .exists());
    // Fixed, the same call says nothing.
    fs::write(w.ws.join(APP), "def main():\n    return 2\n").unwrap();
    w.hook(CC, "post-tool-use-write.json").allowed_silently();
    // A secret added is named too (by rule and line; the key is split here so that this file
    // holds none).
    let header = format!("{}BEGIN OPENSSH {}{}", "-----", "PRIVATE KEY", "-----");
    fs::write(
        w.ws.join(APP),
        format!("KEY = \"{header}\"\ndef main():\n    return 2\n"),
    )
    .unwrap();
    let reason = w.hook(CC, "post-tool-use-write.json").blocked_with();
    assert!(reason.contains("CC-07"), "{reason}");
    assert!(reason.contains("src/app.py:1: private key"), "{reason}");
}

#[test]
fn the_loop_guards_cap_the_blocks_and_escalate_to_a_human() {
    let w = workspace();
    w.hook(CC, "session-start.json").allowed_silently();
    w.sed_i("s/worker/admin/", PROTECTED);
    // Each stop the agent changes something but leaves the protected edit: REJECT, REJECT, then
    // the third rejection escalates (max_rejects = 3): the stop goes through, with the human told.
    for i in 1..=2 {
        fs::write(w.ws.join(APP), format!("def main():\n    return {i}0\n")).unwrap();
        let name = if i == 1 {
            "stop.json"
        } else {
            "stop-active.json"
        };
        let reason = w.hook(CC, name).blocked_with();
        assert!(reason.contains(&format!("attempt {i}")), "{reason}");
    }
    fs::write(w.ws.join(APP), "def main():\n    return 30\n").unwrap();
    let a = w.hook(CC, "stop-active.json");
    assert_eq!(a.code, 0, "{a:?}");
    let v = a.json();
    assert!(v.get("decision").is_none(), "not blocked: {v}");
    let msg = v["systemMessage"].as_str().unwrap();
    assert!(msg.contains("ESCALATE"), "{msg}");
    assert!(msg.contains("human"), "{msg}");
    assert_eq!(w.verdict(CC_TASK)["verdict"], "ESCALATE");
    let stop = fs::read_to_string(w.state.join("OBSERVER-STOP.md")).unwrap();
    assert!(stop.contains("ESCALATE"), "{stop}");
}

#[test]
fn a_stop_with_nothing_fixed_escalates_at_once() {
    let w = workspace();
    w.sed_i("s/worker/admin/", PROTECTED);
    w.hook(CC, "stop.json").blocked_with();
    // Blocked, the agent stops again without changing anything: no progress.
    let a = w.hook(CC, "stop-active.json");
    let v = a.json();
    assert!(v.get("decision").is_none(), "{a:?}");
    assert!(
        v["systemMessage"].as_str().unwrap().contains("identical"),
        "{a:?}"
    );
}

#[test]
fn a_payload_that_cannot_be_read_blocks_and_never_crashes() {
    let w = workspace();
    for bad in [
        &b""[..],
        b"not json",
        b"[]",
        b"{\"hook_event_name\": \"Stop\"}",
        b"{\"cwd\": \"/\"}",
        b"\xff\xfe{",
        b"{\"hook_event_name\": 7, \"cwd\": []}",
    ] {
        let a = w.run(CC, bad, &[]);
        assert_eq!(a.code, 2, "{bad:?}: {a:?}");
        assert!(a.stderr.contains("cannot judge"), "{bad:?}: {a:?}");
        assert!(!a.stderr.contains("panicked"), "{bad:?}: {a:?}");
    }
    // Readable but without a session: a stop cannot be judged as an attempt, so it is blocked.
    let reason = w
        .hook_with(CC, "stop.json", &[], |v| {
            v.as_object_mut().unwrap().remove("session_id");
        })
        .blocked_with();
    assert!(reason.contains("session_id"), "{reason}");
    // A cwd that does not exist.
    let reason = w
        .hook_with(CC, "stop.json", &[], |v| {
            v["cwd"] = "/nonexistent/project".into();
        })
        .blocked_with();
    assert!(reason.contains("/nonexistent/project"), "{reason}");
}

#[test]
fn a_referee_that_cannot_judge_blocks_then_lets_the_human_know() {
    let w = workspace();
    // A state directory that cannot be one: a file.
    fs::write(&w.state, "not a directory").unwrap();
    let reason = w.hook(CC, "stop.json").blocked_with();
    assert!(reason.contains("cannot judge"), "{reason}");
    // Already continuing because of that block, the stop goes through with the failure said.
    let a = w.hook(CC, "stop-active.json");
    let v = a.json();
    assert!(v.get("decision").is_none(), "{a:?}");
    assert!(
        v["systemMessage"].as_str().unwrap().contains("ESCALATE"),
        "{a:?}"
    );
    // A judgment that cannot finish in time is blocked too.
    let w = workspace();
    let reason = w
        .hook_with(CC, "stop.json", &["--timeout", "1ns"], |_| {})
        .blocked_with();
    assert!(reason.contains("--timeout"), "{reason}");
}

#[test]
fn nothing_in_the_workspace_is_written() {
    let w = workspace();
    fs::write(w.ws.join(APP), "def main(:\n").unwrap();
    w.sed_i("s/worker/admin/", PROTECTED);
    let before = listing(&w.ws);
    for (agent, name) in [
        (CC, "session-start.json"),
        (CC, "pre-tool-use-write.json"),
        (CC, "pre-tool-use-bash.json"),
        (CC, "post-tool-use-write.json"),
        (CC, "stop.json"),
        (CC, "stop-active.json"),
        (CC, "stop-active.json"),
        (CC, "subagent-stop.json"),
        ("codex", "stop.json"),
        ("codex", "pre-tool-use-apply-patch.json"),
    ] {
        let a = w.hook(agent, name);
        assert!(a.code == 0, "{agent} {name}: {a:?}");
    }
    assert_eq!(before, listing(&w.ws));
    assert!(!w.ws.join(".tasks").exists());
    assert!(!w.ws.join(".referee").exists());
}

#[test]
fn a_plain_folder_is_measured_from_its_start_snapshot() {
    let (root, ws, _logs) = crate::code_change::plain_workspace();
    let w = Ws {
        state: root.path().join("state"),
        ws,
        _root: root,
    };
    fs::write(w.ws.join("src/roles.py"), "R = 1\n").unwrap();
    w.hook(CC, "session-start.json").allowed_silently();
    w.hook(CC, "stop.json").allowed_silently();
    w.sed_i("s/1/2/", "src/roles.py");
    let reason = w.hook(CC, "stop.json").blocked_with();
    assert!(reason.contains("src/roles.py"), "{reason}");
}

#[test]
fn the_example_snippets_wire_the_documented_events() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let cc: Value = serde_json::from_str(
        &fs::read_to_string(examples.join("claude-code/settings.json")).unwrap(),
    )
    .unwrap();
    let codex: Value =
        serde_json::from_str(&fs::read_to_string(examples.join("codex/hooks.json")).unwrap())
            .unwrap();
    for (v, agent, events) in [
        (
            &cc,
            "claude-code",
            &[
                "SessionStart",
                "Stop",
                "SubagentStop",
                "PreToolUse",
                "PostToolUse",
            ][..],
        ),
        (
            &codex,
            "codex",
            &["SessionStart", "Stop", "PreToolUse", "PostToolUse"][..],
        ),
    ] {
        for e in events {
            let groups = v["hooks"][e]
                .as_array()
                .unwrap_or_else(|| panic!("{agent}: {e}"));
            let cmd = groups[0]["hooks"][0]["command"].as_str().unwrap();
            assert_eq!(cmd, format!("referee hook {agent}"), "{agent} {e}");
            assert_eq!(groups[0]["hooks"][0]["type"], "command");
            let timeout = groups[0]["hooks"][0]["timeout"].as_u64().unwrap();
            assert!(
                timeout > 45,
                "above the referee's own --timeout: {agent} {e}"
            );
        }
    }
}

#[test]
fn with_a_running_watch_the_hook_shares_its_state_and_leaves_the_stop_to_it() {
    let w = workspace();
    let logs = w._root.path().join("logs");
    let state = w.state.to_str().unwrap().to_string();
    let mut watch = crate::code_change::start(&w.ws, &logs, &["--state-dir", &state]);
    let stop_file = w.state.join("OBSERVER-STOP.md");
    w.sed_i("s/worker/admin/", PROTECTED);
    watch.until("the watch's STOP for the protected change", || {
        stop_file.exists()
    });
    let reason = w.hook(CC, "stop.json").blocked_with();
    assert!(reason.contains("CC-01"), "{reason}");
    assert!(
        reason.contains("The running `referee watch` holds a STOP"),
        "{reason}"
    );
    // The implicit attempt is kept beside the watch's memory, in the one state directory.
    assert_eq!(w.verdict(CC_TASK)["verdict"], "REJECT");
    // Put back: the watch takes its STOP away (the hook never touched it), the stop goes through.
    w.sed_i("s/admin/worker/", PROTECTED);
    watch.until("the STOP cleared by the watch", || !stop_file.exists());
    w.hook(CC, "stop.json").allowed_silently();
    watch.signal(libc::SIGTERM);
    let code = crate::watch::exit_code(watch.wait(crate::watch::WAIT));
    assert_eq!(code, 0, "{}", watch.output());
}

/// The project's own rules reach the hook too: `--protect GLOB` makes a path protected at the
/// stop and before a write, and a `--vars` file inside the workspace is refused (the agent must
/// not write the rules it is judged by).
#[test]
fn a_teams_protect_flag_holds_at_stop_and_before_a_write() {
    let app = |w: &Ws| w.ws.join(APP).display().to_string();
    // Without the flag, the change is the agent's to make.
    let w = workspace();
    w.hook(CC, "session-start.json").allowed_silently();
    w.sed_i("s/1/2/", APP);
    w.hook(CC, "stop.json").allowed_silently();
    // With it, the same change is CC-01, at the stop and before the write.
    let w = workspace();
    let protect = ["--protect", APP];
    w.hook_with(CC, "session-start.json", &protect, |_| {})
        .allowed_silently();
    let reason = w
        .hook_with(CC, "pre-tool-use-write.json", &protect, |v| {
            v["tool_input"]["file_path"] = Value::String(app(&w));
        })
        .denied_with();
    assert!(reason.contains(APP), "{reason}");
    w.sed_i("s/1/2/", APP);
    let reason = w
        .hook_with(CC, "stop.json", &protect, |_| {})
        .blocked_with();
    assert!(reason.contains("CC-01"), "{reason}");
    assert!(reason.contains(APP), "{reason}");
    // Rules from inside the workspace are refused: the stop is blocked with the reason.
    let rules = w.ws.join("rules.toml");
    fs::write(&rules, "protected = []\n").unwrap();
    let reason = w
        .hook_with(
            CC,
            "stop.json",
            &["--vars", rules.to_str().unwrap()],
            |_| {},
        )
        .blocked_with();
    assert!(reason.contains("inside"), "{reason}");
}

/// The shell forms that got past PreToolUse before it parsed commands (issue 32), and their
/// neighbours: each is denied with the protected path named; the honest commands beside them go
/// on, and nothing runs.
#[test]
fn pre_tool_use_denies_the_shell_forms_that_used_to_get_through() {
    let w = workspace();
    let outside = w._root.path().join("incoming");
    fs::create_dir_all(&outside).unwrap();
    fs::write(outside.join("orchestrator.py"), "ROLES = ['admin']\n").unwrap();
    fs::write(outside.join("roles.py"), "R = 1\n").unwrap();
    let patch = outside.join("p.diff");
    fs::write(
        &patch,
        "diff --git a/src/orchestrator.py b/src/orchestrator.py\n--- a/src/orchestrator.py\n+++ b/src/orchestrator.py\n@@ -1 +1 @@\n-ROLES = ['worker']\n+ROLES = ['admin']\n",
    )
    .unwrap();
    let o = outside.display();
    let p = patch.display();
    let denied: Vec<(String, &str)> = vec![
        (format!("cp -t src {o}/orchestrator.py"), ""),
        (format!("cp {o}/orchestrator.py src/"), ""),
        (format!("mv {o}/orchestrator.py ."), "src"),
        (format!("install -t src {o}/roles.py"), ""),
        (format!("ln -s {o}/orchestrator.py src/"), ""),
        (
            "cd src && sed -i s/worker/admin/ orchestrator.py".into(),
            "",
        ),
        (
            "perl -pi -e 's/worker/admin/' src/orchestrator.py".into(),
            "",
        ),
        ("git checkout HEAD~1 -- src/orchestrator.py".into(), ""),
        ("git rm src/orchestrator.py".into(), ""),
        ("echo x | tee -a src/orchestrator.py".into(), ""),
        ("dd if=/dev/zero of=src/orchestrator.py count=1".into(), ""),
        ("truncate -s 0 orchestrator.py".into(), "src"),
        (format!("rsync -a {o}/ src/"), ""),
        (format!("tar -xf {o}/a.tar -C src"), ""),
        ("cd src; echo 'ROLES = []' > orchestrator.py".into(), ""),
        (
            "find . -name orchestrator.py -exec sed -i s/a/b/ {} +".into(),
            "",
        ),
        ("find src -name '*.py' -delete".into(), ""),
        ("git ls-files | xargs sed -i s/worker/admin/".into(), ""),
        (
            "cat > src/orchestrator.py <<'EOF'\nROLES = []\nEOF".into(),
            "",
        ),
        ("bash <<'EOF'\ncd src\nrm orchestrator.py\nEOF".into(), ""),
        ("git restore --source HEAD~1 src/orchestrator.py".into(), ""),
        (format!("git apply {p}"), ""),
        (format!("patch -p1 < {p}"), ""),
        ("F=src/orchestrator.py; echo >> \"$F\"".into(), ""),
        ("ruff format src".into(), ""),
        ("black .".into(), "src"),
        // A target the referee cannot name may be a protected one.
        ("echo x > \"$OUT\"".into(), ""),
    ];
    for (cmd, dir) in &denied {
        let reason = w
            .hook_with(CC, "pre-tool-use-bash.json", &[], |v| {
                v["cwd"] = Value::String(w.ws.join(dir).display().to_string());
                v["tool_input"]["command"] = cmd.as_str().into();
            })
            .denied_with();
        assert!(
            reason.contains(PROTECTED) || reason.contains("src/roles.py"),
            "{cmd}: {reason}"
        );
    }
    let allowed = [
        "cd src && sed -i s/1/2/ app.py",
        "git status && git diff && git log -1",
        "git checkout -b topic",
        "find . -name '*.py' | xargs grep -n ROLES",
        "echo x > build.log 2>&1",
        "cp src/app.py src/app_backup.py",
        "rm -rf build dist",
        "cat src/orchestrator.py | wc -l",
        "ruff check src && black --check .",
        // Putting a protected file back, as a blocked stop asks, is no write to deny.
        "git checkout -- src/orchestrator.py",
        "git restore src/orchestrator.py",
    ];
    for cmd in allowed {
        w.hook_with(CC, "pre-tool-use-bash.json", &[], |v| {
            v["tool_input"]["command"] = cmd.into();
        })
        .allowed_silently();
    }
    assert_eq!(
        fs::read_to_string(w.ws.join(PROTECTED)).unwrap(),
        "ROLES = ['worker']\n"
    );
}

/// PostToolUse tells a call what that call changed: a shell write the referee cannot see in the
/// command is the shell call's, never the next, unrelated edit's; with no view of the workspace
/// kept, a call is told only of the files it names. The stop still judges everything.
#[test]
fn post_tool_use_blames_only_the_call_that_made_the_change() {
    let w = workspace();
    w.hook(CC, "session-start.json").allowed_silently();
    let shell = |v: &mut Value| {
        v["tool_name"] = "Bash".into();
        v["tool_input"] = serde_json::json!({
            "command": "python3 -c \"open('src/orchestrator.py', 'w').write('x')\""
        });
    };
    fs::write(w.ws.join(PROTECTED), "ROLES = ['admin']\n").unwrap();
    let reason = w
        .hook_with(CC, "post-tool-use-write.json", &[], shell)
        .blocked_with();
    assert!(
        reason.contains("CC-01") && reason.contains(PROTECTED),
        "{reason}"
    );
    // The next edit is clean: nothing to say, though the protected change still stands.
    fs::write(w.ws.join(APP), "def main():\n    return 2\n").unwrap();
    w.hook(CC, "post-tool-use-write.json").allowed_silently();
    // Its own breakage is named, and only that.
    fs::write(w.ws.join(APP), "def main(:\n").unwrap();
    let reason = w.hook(CC, "post-tool-use-write.json").blocked_with();
    assert!(reason.contains("CC-05"), "{reason}");
    assert!(!reason.contains("CC-01"), "{reason}");
    // The stop is the guard that holds: the protected change is a veto there.
    let reason = w.hook(CC, "stop.json").blocked_with();
    assert!(reason.contains("CC-01"), "{reason}");

    // No SessionStart, no view kept: the edit is told only about the file it names.
    let w = workspace();
    fs::write(w.ws.join(PROTECTED), "ROLES = ['admin']\n").unwrap();
    fs::write(w.ws.join(APP), "def main():\n    return 2\n").unwrap();
    w.hook(CC, "post-tool-use-write.json").allowed_silently();
}

/// A shell call made only of commands that write nothing is not judged after it runs (no
/// workspace read: here the state directory is unusable, and the call is still silent), while
/// any other shell call is.
#[test]
fn a_read_only_shell_call_is_not_judged_after_it_runs() {
    let w = workspace();
    fs::write(&w.state, "not a directory").unwrap();
    let after = |cmd: &str| {
        w.hook_with(CC, "post-tool-use-write.json", &[], |v| {
            v["tool_name"] = "Bash".into();
            v["tool_input"] = serde_json::json!({ "command": cmd });
        })
    };
    after("git status && ls -la src | grep py && cat src/app.py").allowed_silently();
    let a = after("make");
    assert_eq!(a.code, 0, "{a:?}");
    let msg = a.json()["systemMessage"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        msg.contains("cannot judge"),
        "judged, and told it could not: {a:?}"
    );
}

/// A read-only subagent's stop (nothing changed since the session's last judged stop) is no
/// attempt: it is let through, counts toward no guard, and the main agent's next stop, with a
/// change, is attempt 2, blocked again, not an escalation let through.
#[test]
fn a_subagent_stop_that_changed_nothing_is_no_attempt() {
    let w = workspace();
    w.hook(CC, "session-start.json").allowed_silently();
    w.sed_i("s/worker/admin/", PROTECTED);
    let reason = w.hook(CC, "stop.json").blocked_with();
    assert!(reason.contains("attempt 1"), "{reason}");
    for _ in 0..3 {
        w.hook(CC, "subagent-stop.json").allowed_silently();
    }
    assert_eq!(w.verdict(CC_TASK)["attempt"], 1, "no attempt kept");
    fs::write(w.ws.join(APP), "def main():\n    return 20\n").unwrap();
    let reason = w.hook(CC, "stop-active.json").blocked_with();
    assert!(reason.contains("attempt 2"), "{reason}");
}

/// Fifty sparse 60 MiB files (3 GB the worker wrote in an instant) under a 2.5 GiB address-space
/// limit: the hook never aborts (which Claude Code takes as a non-blocking error, the stop let
/// through); the stop is blocked, judged or, past `--timeout`, fail closed.
#[test]
fn sparse_giant_files_under_a_memory_limit_block_the_stop_and_never_abort() {
    if !crate::util::tool(
        "prlimit",
        "util-linux",
        "sparse_giant_files_under_a_memory_limit_block_the_stop_and_never_abort",
    ) {
        return;
    }
    let w = workspace();
    w.hook(CC, "session-start.json").allowed_silently();
    for i in 0..50 {
        let f = fs::File::create(w.ws.join(format!("big{i}.bin"))).unwrap();
        f.set_len(60 << 20).unwrap();
    }
    let text = fixture(CC, "stop.json").replace(DOC_PROJECT, w.ws.to_str().unwrap());
    let out = Command::new("prlimit")
        .arg("--as=2684354560")
        .arg(crate::util::referee_bin())
        .args(["hook", CC, "--timeout", "20s", "--state-dir"])
        .arg(&w.state)
        .env("XDG_STATE_HOME", crate::state_home())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write as _;
            c.stdin.take().unwrap().write_all(text.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    let a = Answer {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    // Blocked: judged (the files are over the size limit, or cannot be read) or fail closed.
    a.blocked_with();
}

/// The process that judges killed by the kernel (here its CPU limit, `prlimit --cpu`, as an
/// allocation refused under `--as` aborts it): the hook answers as a referee that cannot judge,
/// the stop blocked, never the agent's "non-blocking error" of a hook that died.
#[test]
fn a_judgment_killed_by_the_kernel_blocks_the_stop() {
    if !crate::util::tool(
        "prlimit",
        "util-linux",
        "a_judgment_killed_by_the_kernel_blocks_the_stop",
    ) {
        return;
    }
    let w = workspace();
    w.hook(CC, "session-start.json").allowed_silently();
    // Enough to read that the judgment outlives one second of CPU, in any build.
    for i in 0..50 {
        let f = fs::File::create(w.ws.join(format!("big{i}.bin"))).unwrap();
        f.set_len(60 << 20).unwrap();
    }
    let text = fixture(CC, "stop.json").replace(DOC_PROJECT, w.ws.to_str().unwrap());
    let out = Command::new("prlimit")
        .arg("--cpu=1")
        .arg(crate::util::referee_bin())
        .args(["hook", CC, "--timeout", "60s", "--state-dir"])
        .arg(&w.state)
        .env("XDG_STATE_HOME", crate::state_home())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write as _;
            c.stdin.take().unwrap().write_all(text.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    let a = Answer {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    };
    let reason = a.blocked_with();
    assert!(
        reason.contains("ended abnormally") && reason.contains("signal"),
        "{reason}"
    );
}
