//! Cursor (`referee hook cursor`), as its hooks page documents it (cursor.com/docs/hooks):
//!
//! - Input: every event carries `conversation_id`, `generation_id`, `hook_event_name`,
//!   `workspace_roots`, …; `beforeShellExecution` adds `command` and `cwd`; `preToolUse` /
//!   `postToolUse` add `tool_name` (`Shell`, `Write`, …), `tool_input` (for `Shell`: `command`,
//!   `working_directory`) and `cwd`; `afterFileEdit` adds `file_path` and `edits`; `stop` adds
//!   `status` and `loop_count` (the follow-ups already sent); `sessionStart` adds `session_id`.
//!   There is no `cwd` on `stop`: the first of `workspace_roots` is the workspace.
//! - Output: `beforeShellExecution` and `preToolUse` read `permission` (`"allow"` / `"deny"`),
//!   `user_message` (shown to the user) and `agent_message` (sent to the agent); `postToolUse`
//!   reads `additional_context` (injected after the tool's result); `stop` reads only
//!   `followup_message`, submitted as the next user message — Cursor cannot refuse a stop, so a
//!   REJECT is a follow-up that starts the next turn with the failing checks (Cursor caps them
//!   with `loop_limit`, 5 by default); `afterFileEdit` and `sessionStart` read no answer the
//!   referee needs. Exit 2 blocks the action, like `permission: "deny"`.
//!
//! Not in Cursor's documentation: the `tool_input` of `preToolUse` for `Write` and `Delete`.
//! The referee reads a `file_path` or `path` there when it finds one; else the call is let
//! through and the stop judges what it wrote.

use serde_json::{json, Map, Value};

use super::{required, shell_input, text, write_input, Answer, Payload, PayloadError, Reply};

pub(super) fn parse(o: &Map<String, Value>) -> Result<Payload, PayloadError> {
    let native = required(o, "hook_event_name")?;
    let root = o
        .get("workspace_roots")
        .and_then(Value::as_array)
        .and_then(|r| r.first())
        .and_then(Value::as_str)
        .filter(|r| !r.is_empty())
        .map(str::to_string);
    let cwd = text(o, "cwd")
        .filter(|c| !c.is_empty())
        .or(root)
        .ok_or(PayloadError::MissingEither("cwd", "workspace_roots"))?;
    let input = o.get("tool_input").cloned().unwrap_or(Value::Null);
    let field = |k: &str| input.get(k).and_then(Value::as_str).map(str::to_string);
    let tool = text(o, "tool_name").unwrap_or_default();
    let (event, tool_name, tool_input, tool_dir) = match native.as_str() {
        "sessionStart" => ("SessionStart", String::new(), Value::Null, None),
        "stop" => ("Stop", String::new(), Value::Null, None),
        "subagentStop" => ("SubagentStop", String::new(), Value::Null, None),
        "beforeShellExecution" => (
            "PreToolUse",
            "Bash".to_string(),
            shell_input(&required(o, "command")?),
            None,
        ),
        "preToolUse" | "postToolUse" => {
            let event = if native == "preToolUse" {
                "PreToolUse"
            } else {
                "PostToolUse"
            };
            match (tool.as_str(), field("command")) {
                ("Shell", Some(c)) => (
                    event,
                    "Bash".to_string(),
                    shell_input(&c),
                    field("working_directory").map(Into::into),
                ),
                ("Write" | "Delete", _) => match field("file_path").or_else(|| field("path")) {
                    Some(f) => (event, "Write".to_string(), write_input(&f), None),
                    None => (event, tool, input.clone(), None),
                },
                _ => (event, tool, input.clone(), None),
            }
        }
        // `afterFileEdit` and the rest: nothing the referee answers.
        _ => ("", String::new(), Value::Null, None),
    };
    Ok(Payload {
        event: event.to_string(),
        session: text(o, "conversation_id")
            .or_else(|| text(o, "session_id"))
            .unwrap_or_default(),
        cwd: cwd.into(),
        stop_hook_active: o
            .get("loop_count")
            .and_then(Value::as_u64)
            .is_some_and(|n| n > 0),
        tool_name,
        tool_input,
        tool_dir,
        native,
    })
}

pub(super) fn render(p: Option<&Payload>, a: &Answer) -> Reply {
    let Some(p) = p else {
        return match a {
            Answer::Unreadable(why) => Reply::blocked(why),
            _ => Reply::json(&json!({})),
        };
    };
    // An answer Cursor has no field for on this event is kept for the human on stderr.
    let said = |m: &str| Reply {
        stderr: format!("{m}\n"),
        ..Reply::json(&json!({}))
    };
    match (p.native.as_str(), a) {
        (_, Answer::Unreadable(why)) => Reply::blocked(why),
        ("beforeShellExecution" | "preToolUse", Answer::Deny(r)) => Reply::json(&json!({
            "permission": "deny",
            "user_message": r,
            "agent_message": r,
        })),
        ("beforeShellExecution" | "preToolUse", Answer::Tell(m)) => {
            Reply::json(&json!({ "permission": "allow", "user_message": m }))
        }
        ("beforeShellExecution" | "preToolUse", _) => {
            Reply::json(&json!({ "permission": "allow" }))
        }
        ("postToolUse", Answer::Feedback(r)) => Reply::json(&json!({ "additional_context": r })),
        ("stop" | "subagentStop", Answer::Block(r)) => {
            Reply::json(&json!({ "followup_message": r }))
        }
        (_, Answer::Tell(m) | Answer::Block(m) | Answer::Deny(m) | Answer::Feedback(m)) => said(m),
        (_, Answer::Allow) => Reply::json(&json!({})),
    }
}
