//! Claude Code and Codex: the payload (`hook_event_name`, `session_id`, `cwd`,
//! `stop_hook_active`, `tool_name`, `tool_input`) is the referee's own vocabulary, read as it
//! comes; the answers are the ones both document for command hooks (Claude Code's hooks
//! reference; the `*.command.output.schema.json` files Codex ships).

use serde_json::{json, Map, Value};

use super::{required, text, Answer, Payload, PayloadError, Reply};

pub(super) fn parse(o: &Map<String, Value>) -> Result<Payload, PayloadError> {
    let event = required(o, "hook_event_name")?;
    let cwd = required(o, "cwd")?;
    Ok(Payload {
        native: event.clone(),
        event,
        session: text(o, "session_id").unwrap_or_default(),
        cwd: cwd.into(),
        stop_hook_active: o
            .get("stop_hook_active")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        tool_name: text(o, "tool_name").unwrap_or_default(),
        tool_input: o.get("tool_input").cloned().unwrap_or(Value::Null),
        tool_dir: None,
    })
}

pub(super) fn render(p: Option<&Payload>, a: &Answer) -> Reply {
    match a {
        Answer::Allow => Reply::default(),
        Answer::Tell(m) => Reply::json(&json!({ "systemMessage": m })),
        // A stop blocked, or what a tool call broke: the agent reads `reason` and keeps working.
        Answer::Block(r) | Answer::Feedback(r) => {
            Reply::json(&json!({ "decision": "block", "reason": r }))
        }
        Answer::Deny(r) => Reply::json(&json!({
            "hookSpecificOutput": {
                "hookEventName": p.map_or("PreToolUse", |p| p.native.as_str()),
                "permissionDecision": "deny",
                "permissionDecisionReason": r,
            }
        })),
        Answer::Unreadable(why) => Reply::blocked(why),
    }
}
