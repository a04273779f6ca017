//! Gemini CLI (`referee hook gemini`), as its hooks reference documents it
//! (google-gemini/gemini-cli `docs/hooks/reference.md`, `docs/tools/`):
//!
//! - Input: `session_id`, `transcript_path`, `cwd`, `hook_event_name`, `timestamp`; `BeforeTool` /
//!   `AfterTool` add `tool_name` and `tool_input` (`write_file` and `replace`: `file_path`;
//!   `run_shell_command`: `command` and an optional `dir_path`, "the absolute path or relative
//!   path from workspace root where the command runs"); `AfterAgent` adds `prompt`,
//!   `prompt_response` and `stop_hook_active`.
//! - Output (exit 0, JSON on stdout): `decision` `"allow"` or `"deny"` with `reason`; on
//!   `BeforeTool` a deny stops the tool and sends the reason to the agent as the tool's error;
//!   on `AfterAgent` it rejects the response and sends the reason "to the agent as a new prompt"
//!   (the retry the referee's block is); `AfterTool` appends `hookSpecificOutput.additionalContext`
//!   to the tool's result (a `deny` there would hide the result instead); `systemMessage` is shown
//!   to the user. Exit 2 is a "System Block" with stderr as the reason.

use std::path::Path;

use serde_json::{json, Map, Value};

use super::{required, shell_input, text, write_input, Answer, Payload, PayloadError, Reply};

pub(super) fn parse(o: &Map<String, Value>) -> Result<Payload, PayloadError> {
    let native = required(o, "hook_event_name")?;
    let cwd = required(o, "cwd")?;
    let event = match native.as_str() {
        "BeforeTool" => "PreToolUse",
        "AfterTool" => "PostToolUse",
        "AfterAgent" => "Stop",
        other => other,
    }
    .to_string();
    let input = o.get("tool_input").cloned().unwrap_or(Value::Null);
    let field = |k: &str| input.get(k).and_then(Value::as_str).map(str::to_string);
    let tool = text(o, "tool_name").unwrap_or_default();
    let (tool_name, tool_input, tool_dir) = match tool.as_str() {
        "write_file" | "replace" => match field("file_path") {
            Some(f) => ("Write".to_string(), write_input(&f), None),
            None => (tool, input.clone(), None),
        },
        "run_shell_command" => match field("command") {
            Some(c) => (
                "Bash".to_string(),
                shell_input(&c),
                field("dir_path").map(|d| Path::new(&cwd).join(d)),
            ),
            None => (tool, input.clone(), None),
        },
        _ => (tool, input.clone(), None),
    };
    Ok(Payload {
        event,
        native,
        session: text(o, "session_id").unwrap_or_default(),
        cwd: cwd.into(),
        stop_hook_active: o
            .get("stop_hook_active")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        tool_name,
        tool_input,
        tool_dir,
    })
}

pub(super) fn render(_p: Option<&Payload>, a: &Answer) -> Reply {
    match a {
        Answer::Allow => Reply::json(&json!({ "decision": "allow" })),
        Answer::Tell(m) => Reply::json(&json!({ "decision": "allow", "systemMessage": m })),
        Answer::Block(r) | Answer::Deny(r) => {
            Reply::json(&json!({ "decision": "deny", "reason": r }))
        }
        Answer::Feedback(r) => Reply::json(&json!({
            "hookSpecificOutput": { "hookEventName": "AfterTool", "additionalContext": r }
        })),
        Answer::Unreadable(why) => Reply::blocked(why),
    }
}
