//! `referee hook gemini|cursor|copilot|openhands` through the binary: each agent's documented
//! payloads (recorded under `fixtures/hooks/<agent>/`) on real git workspaces, and the answer
//! each agent documents that it reads (stdout JSON fields, exit codes), for the allow, deny and
//! block paths.

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::code_change::{APP, PROTECTED};
use crate::hooks::{workspace, Answer};

impl Answer {
    /// Exit 0 and the JSON on stdout.
    fn ok_json(&self) -> Value {
        assert_eq!(self.code, 0, "{self:?}");
        self.json()
    }
}

/// The text of `v[k]`, which must be there.
fn field(v: &Value, k: &str) -> String {
    v[k].as_str()
        .unwrap_or_else(|| panic!("no `{k}` in {v}"))
        .to_string()
}

// ---------------------------------------------------------------- Gemini CLI

const GEMINI: &str = "gemini";

#[test]
fn gemini_after_agent_retries_a_protected_edit_and_allows_a_clean_one() {
    let w = workspace();
    assert_eq!(
        w.hook(GEMINI, "session-start.json").ok_json(),
        serde_json::json!({ "decision": "allow" })
    );
    fs::write(w.ws.join(APP), "def main():\n    return 2\n").unwrap();
    assert_eq!(
        w.hook(GEMINI, "after-agent.json").ok_json()["decision"],
        "allow"
    );
    w.sed_i("s/worker/admin/", PROTECTED);
    let v = w.hook(GEMINI, "after-agent.json").ok_json();
    // `deny` rejects the response; `reason` is the agent's next prompt.
    assert_eq!(v["decision"], "deny", "{v}");
    let reason = field(&v, "reason");
    assert!(reason.contains("CC-01"), "{reason}");
    assert!(
        reason.contains(&format!("restore `{PROTECTED}`")),
        "{reason}"
    );
    w.sed_i("s/admin/worker/", PROTECTED);
    let v = w.hook(GEMINI, "after-agent-retry.json").ok_json();
    assert_eq!(v["decision"], "allow", "{v}");
    assert!(v.get("reason").is_none(), "{v}");
}

#[test]
fn gemini_escalation_lets_the_turn_end_with_a_system_message() {
    let w = workspace();
    w.sed_i("s/worker/admin/", PROTECTED);
    assert_eq!(
        w.hook(GEMINI, "after-agent.json").ok_json()["decision"],
        "deny"
    );
    // Retried without fixing anything: the identical diff escalates, the turn ends, the user
    // is told.
    let v = w.hook(GEMINI, "after-agent-retry.json").ok_json();
    assert_eq!(v["decision"], "allow", "{v}");
    let msg = field(&v, "systemMessage");
    assert!(msg.contains("ESCALATE"), "{msg}");
}

#[test]
fn gemini_before_tool_denies_protected_writes_with_a_reason() {
    let w = workspace();
    for name in [
        "before-tool-write-file.json",
        // `sed -i … orchestrator.py` run in `dir_path: src`.
        "before-tool-run-shell-command.json",
    ] {
        let v = w.hook(GEMINI, name).ok_json();
        assert_eq!(v["decision"], "deny", "{name}: {v}");
        assert!(field(&v, "reason").contains(PROTECTED), "{name}: {v}");
    }
    let v = w.hook(GEMINI, "before-tool-replace-app.json").ok_json();
    assert_eq!(v, serde_json::json!({ "decision": "allow" }));
    assert_eq!(
        fs::read_to_string(w.ws.join(PROTECTED)).unwrap(),
        "ROLES = ['worker']\n"
    );
}

#[test]
fn gemini_after_tool_appends_what_the_write_broke_to_the_tool_result() {
    let w = workspace();
    w.hook(GEMINI, "session-start.json").ok_json();
    fs::write(w.ws.join(APP), "def main(:\n    return 2\n").unwrap();
    let v = w.hook(GEMINI, "after-tool-write-file.json").ok_json();
    // Not `decision: deny`, which would hide the tool's result from the model.
    assert!(v.get("decision").is_none(), "{v}");
    assert_eq!(v["hookSpecificOutput"]["hookEventName"], "AfterTool");
    let ctx = v["hookSpecificOutput"]["additionalContext"]
        .as_str()
        .unwrap();
    assert!(ctx.contains("CC-05") && ctx.contains(APP), "{ctx}");
}

#[test]
fn gemini_unreadable_input_is_a_system_block() {
    let w = workspace();
    for bad in [&b"not json"[..], b"{\"hook_event_name\": \"AfterAgent\"}"] {
        let a = w.run(GEMINI, bad, &[]);
        assert_eq!(a.code, 2, "{a:?}");
        assert!(a.stdout.is_empty(), "{a:?}");
        assert!(a.stderr.contains("cannot judge"), "{a:?}");
    }
}

// ---------------------------------------------------------------- Cursor

const CURSOR: &str = "cursor";

#[test]
fn cursor_stop_follows_up_on_a_reject_and_says_nothing_on_approve() {
    let w = workspace();
    assert_eq!(
        w.hook(CURSOR, "session-start.json").ok_json(),
        serde_json::json!({})
    );
    w.sed_i("s/worker/admin/", PROTECTED);
    // `stop` has no `cwd`: the workspace is the first of `workspace_roots`.
    let v = w.hook(CURSOR, "stop.json").ok_json();
    let next = field(&v, "followup_message");
    assert!(next.contains("CC-01") && next.contains(PROTECTED), "{next}");
    assert_eq!(
        w.verdict("cursor-cdefee2d-2727-4b73-bf77-d9d830f31d2a")["verdict"],
        "REJECT"
    );
    w.sed_i("s/admin/worker/", PROTECTED);
    assert_eq!(
        w.hook(CURSOR, "stop-followup.json").ok_json(),
        serde_json::json!({})
    );
}

#[test]
fn cursor_escalation_sends_no_followup_and_tells_the_log() {
    let w = workspace();
    w.sed_i("s/worker/admin/", PROTECTED);
    assert!(w
        .hook(CURSOR, "stop.json")
        .ok_json()
        .get("followup_message")
        .is_some());
    let a = w.hook(CURSOR, "stop-followup.json");
    // Nothing changed since the REJECT: ESCALATE, no follow-up (the loop ends); Cursor reads no
    // message on `stop`, so it goes to the hook's output channel.
    assert_eq!(a.ok_json(), serde_json::json!({}), "{a:?}");
    assert!(a.stderr.contains("ESCALATE"), "{a:?}");
}

#[test]
fn cursor_shell_and_tool_calls_are_denied_with_permission_and_messages() {
    let w = workspace();
    let v = w.hook(CURSOR, "before-shell-execution.json").ok_json();
    assert_eq!(v["permission"], "deny", "{v}");
    assert!(field(&v, "agent_message").contains(PROTECTED), "{v}");
    assert!(field(&v, "user_message").contains(PROTECTED), "{v}");
    // `cp /tmp/roles.py src/` writes `src/roles.py`, protected by `**/roles.py`.
    let v = w.hook(CURSOR, "pre-tool-use-shell.json").ok_json();
    assert_eq!(v["permission"], "deny", "{v}");
    assert!(field(&v, "agent_message").contains("src/roles.py"), "{v}");
    let v = w
        .hook_with(CURSOR, "before-shell-execution.json", &[], |v| {
            v["command"] = "sed -i s/1/2/ src/app.py && git status".into();
        })
        .ok_json();
    assert_eq!(v, serde_json::json!({ "permission": "allow" }));
}

#[test]
fn cursor_post_tool_use_adds_context_and_after_file_edit_reads_no_answer() {
    let w = workspace();
    w.hook(CURSOR, "session-start.json").ok_json();
    w.sed_i("s/(/(:/", APP);
    let v = w.hook(CURSOR, "post-tool-use-shell.json").ok_json();
    let ctx = field(&v, "additional_context");
    assert!(ctx.contains("CC-05") && ctx.contains(APP), "{ctx}");
    // `afterFileEdit` has no output field in Cursor's documentation: an empty object.
    assert_eq!(
        w.hook(CURSOR, "after-file-edit.json").ok_json(),
        serde_json::json!({})
    );
}

#[test]
fn cursor_unreadable_input_blocks_with_exit_2() {
    let w = workspace();
    let a = w.run(CURSOR, b"{\"hook_event_name\": \"stop\"}", &[]);
    assert_eq!(a.code, 2, "{a:?}");
    assert!(a.stderr.contains("workspace_roots"), "{a:?}");
}

// ---------------------------------------------------------------- GitHub Copilot CLI

const COPILOT: &str = "copilot";

#[test]
fn copilot_pre_tool_use_denies_protected_writes_in_both_payload_forms() {
    let w = workspace();
    for name in [
        "pre-tool-use-bash.json",
        "pre-tool-use-edit.json",
        "pre-tool-use-vscode.json",
    ] {
        let v = w.hook(COPILOT, name).ok_json();
        assert_eq!(v["permissionDecision"], "deny", "{name}: {v}");
        assert!(
            field(&v, "permissionDecisionReason").contains(PROTECTED),
            "{name}: {v}"
        );
    }
    // Empty output: Copilot's default behaviour.
    let a = w.hook(COPILOT, "pre-tool-use-create-app.json");
    assert_eq!((a.code, a.stdout.as_str()), (0, ""), "{a:?}");
}

#[test]
fn copilot_agent_stop_blocks_a_protected_edit_and_lets_a_clean_one_end() {
    for (stop, task) in [
        (
            "agent-stop.json",
            "copilot-b7e4c1d2-9f3a-4c5b-8e6d-0a1b2c3d4e5f",
        ),
        (
            "stop-vscode.json",
            "copilot-b7e4c1d2-9f3a-4c5b-8e6d-0a1b2c3d4e5f",
        ),
    ] {
        let w = workspace();
        let a = w.hook(COPILOT, "session-start.json");
        assert_eq!((a.code, a.stdout.as_str()), (0, ""), "{a:?}");
        w.sed_i("s/worker/admin/", PROTECTED);
        let v = w.hook(COPILOT, stop).ok_json();
        assert_eq!(v["decision"], "block", "{stop}: {v}");
        assert!(field(&v, "reason").contains("CC-01"), "{stop}: {v}");
        assert_eq!(w.verdict(task)["verdict"], "REJECT");
        w.sed_i("s/admin/worker/", PROTECTED);
        let a = w.hook(COPILOT, stop);
        assert_eq!((a.code, a.stdout.as_str()), (0, ""), "{stop}: {a:?}");
    }
}

#[test]
fn copilot_unreadable_input_is_denied_on_stdout_because_exit_codes_never_block() {
    let w = workspace();
    let a = w.run(COPILOT, b"{\"toolName\": \"bash\"}", &[]);
    // Copilot logs and skips a failing hook: the deny must be a successful answer.
    let v = a.ok_json();
    assert_eq!(v["permissionDecision"], "deny", "{v}");
    assert_eq!(v["decision"], "block", "{v}");
    assert!(field(&v, "reason").contains("cwd"), "{v}");
}

// ---------------------------------------------------------------- OpenHands

const OPENHANDS: &str = "openhands";

#[test]
fn openhands_payloads_are_not_claude_codes_and_get_their_own_answers() {
    let w = workspace();
    // Claude Code's reader finds no `hook_event_name` in OpenHands' payload: it would block
    // every event (exit 2), which is why OpenHands has an agent of its own.
    let a = w.run(
        "claude-code",
        crate::hooks::fixture(OPENHANDS, "stop.json")
            .replace(crate::hooks::DOC_PROJECT, w.ws.to_str().unwrap())
            .as_bytes(),
        &[],
    );
    assert_eq!(a.code, 2, "{a:?}");
    assert!(a.stderr.contains("hook_event_name"), "{a:?}");
    let a = w.hook(OPENHANDS, "session-start.json");
    assert_eq!((a.code, a.stdout.as_str()), (0, ""), "{a:?}");
    for name in [
        "pre-tool-use-terminal.json",
        "pre-tool-use-file-editor.json",
    ] {
        let v = w.hook(OPENHANDS, name).ok_json();
        assert_eq!(v["decision"], "deny", "{name}: {v}");
        assert!(field(&v, "reason").contains(PROTECTED), "{name}: {v}");
    }
    w.sed_i("s/worker/admin/", PROTECTED);
    let v = w.hook(OPENHANDS, "stop.json").ok_json();
    // `deny`, not Claude Code's `block`, which the SDK no longer reads.
    assert_eq!(v["decision"], "deny", "{v}");
    assert!(field(&v, "reason").contains("CC-01"), "{v}");
    w.sed_i("s/admin/worker/", PROTECTED);
    let a = w.hook(OPENHANDS, "stop.json");
    assert_eq!((a.code, a.stdout.as_str()), (0, ""), "{a:?}");
    let a = w.run(OPENHANDS, b"{\"event_type\": \"Stop\"}", &[]);
    assert_eq!(a.code, 2, "{a:?}");
}

// ---------------------------------------------------------------- every agent

#[test]
fn no_agent_writes_into_the_workspace() {
    let w = workspace();
    fs::write(w.ws.join(APP), "def main(:\n").unwrap();
    w.sed_i("s/worker/admin/", PROTECTED);
    let before = crate::hooks::listing(&w.ws);
    for (agent, dir) in [
        (GEMINI, "gemini"),
        (CURSOR, "cursor"),
        (COPILOT, "copilot"),
        (OPENHANDS, "openhands"),
    ] {
        let fixtures = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("fixtures/hooks")
            .join(dir);
        let mut names: Vec<String> = fs::read_dir(&fixtures)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        for name in names {
            let a = w.hook(agent, &name);
            assert_eq!(a.code, 0, "{agent} {name}: {a:?}");
        }
    }
    assert_eq!(before, crate::hooks::listing(&w.ws));
    assert!(!w.ws.join(".tasks").exists());
    assert!(!w.ws.join(".referee").exists());
}

#[test]
fn the_agents_example_settings_wire_the_referee() {
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples");
    let read = |p: &str| -> Value {
        serde_json::from_str(&fs::read_to_string(examples.join(p)).unwrap()).unwrap()
    };
    // Gemini CLI: `timeout` in milliseconds, above the referee's own 45 s.
    let g = read("gemini/settings.json");
    for e in ["SessionStart", "BeforeTool", "AfterTool", "AfterAgent"] {
        let h = &g["hooks"][e][0]["hooks"][0];
        assert_eq!(h["command"], "referee hook gemini", "{e}");
        assert_eq!(h["type"], "command", "{e}");
        assert!(h["timeout"].as_u64().unwrap() > 45_000, "{e}");
    }
    // Cursor: `timeout` in seconds; the shell guard fails closed.
    let c = read("cursor/hooks.json");
    assert_eq!(c["version"], 1);
    for e in [
        "sessionStart",
        "beforeShellExecution",
        "preToolUse",
        "postToolUse",
        "stop",
    ] {
        let h = &c["hooks"][e][0];
        assert_eq!(h["command"], "referee hook cursor", "{e}");
        assert!(h["timeout"].as_u64().unwrap() > 45, "{e}");
    }
    assert_eq!(c["hooks"]["beforeShellExecution"][0]["failClosed"], true);
    // Copilot: `timeoutSec` defaults to 30, below the referee's 45 s: raised.
    let p = read("copilot/referee.json");
    assert_eq!(p["version"], 1);
    for e in ["sessionStart", "preToolUse", "agentStop", "subagentStop"] {
        let h = &p["hooks"][e][0];
        assert_eq!(h["bash"], "referee hook copilot", "{e}");
        assert_eq!(h["type"], "command", "{e}");
        assert!(h["timeoutSec"].as_u64().unwrap() > 45, "{e}");
    }
    let o = read("openhands/hooks.json");
    for e in ["session_start", "pre_tool_use", "stop"] {
        let h = &o[e][0]["hooks"][0];
        assert_eq!(h["command"], "referee hook openhands", "{e}");
        assert!(h["timeout"].as_u64().unwrap() > 45, "{e}");
    }
}
