//! GitHub Copilot CLI (`referee hook copilot`), as GitHub documents its hooks ("GitHub Copilot
//! CLI hooks reference" and "Hooks configuration" in github/docs,
//! `content/copilot/reference/`):
//!
//! - Input, in one of two forms chosen by how the event is named in `.github/hooks/*.json`:
//!   camelCase events (`preToolUse`, `agentStop`, …) send `sessionId`, `timestamp`, `cwd`,
//!   `toolName`, `toolArgs` (a JSON string of the tool's arguments), `toolResult`,
//!   `stopReason`, `agentName`, `source` and no event name, so the event is known by its
//!   fields; PascalCase events (`PreToolUse`, `Stop`, …: the VS Code compatible form) send
//!   `hook_event_name`, `session_id`, `cwd`, `tool_name`, `tool_input`, … The tools are `bash`
//!   (`command`), `create` and `edit` (`path`), `view`, …
//! - Output: `preToolUse` reads `permissionDecision` (`"deny"` blocks the tool) and
//!   `permissionDecisionReason` (shown to the agent); `agentStop` and `subagentStop` read
//!   `decision: "block"` with `reason`, the prompt of the next turn. Empty output is the default
//!   behaviour. There is no field for a message to the user, and `postToolUse`'s output is not
//!   read from command hooks. A non-zero exit is "logged and skipped" — it never blocks — so
//!   the referee answers an unreadable payload with exit 0 and a deny that both `preToolUse`
//!   and `agentStop` read.

use serde_json::{json, Map, Value};

use super::{required, shell_input, text, write_input, Answer, Payload, PayloadError, Reply};

pub(super) fn parse(o: &Map<String, Value>) -> Result<Payload, PayloadError> {
    let cwd = required(o, "cwd")?;
    let has = |k: &str| o.contains_key(k);
    let (event, native) = match text(o, "hook_event_name") {
        Some(e) => (e.clone(), e),
        None if has("toolName") && has("toolResult") => {
            ("PostToolUse".into(), "postToolUse".into())
        }
        None if has("toolName") && has("error") => (String::new(), "postToolUseFailure".into()),
        None if has("toolName") => ("PreToolUse".into(), "preToolUse".into()),
        None if has("stopReason") && has("agentName") => {
            ("SubagentStop".into(), "subagentStop".into())
        }
        None if has("stopReason") => ("Stop".into(), "agentStop".into()),
        None if has("source") => ("SessionStart".into(), "sessionStart".into()),
        None => (String::new(), String::new()),
    };
    let tool = text(o, "toolName")
        .or_else(|| text(o, "tool_name"))
        .unwrap_or_default();
    // `toolArgs` is a JSON string in the documented examples; an object is taken as it is.
    let args = match o.get("toolArgs").or_else(|| o.get("tool_input")) {
        Some(Value::String(s)) => serde_json::from_str(s).unwrap_or(Value::Null),
        Some(v) => v.clone(),
        None => Value::Null,
    };
    let field = |k: &str| args.get(k).and_then(Value::as_str).map(str::to_string);
    let (tool_name, tool_input) = match (tool.as_str(), field("command"), field("path")) {
        ("bash", Some(c), _) => ("Bash".to_string(), shell_input(&c)),
        ("create" | "edit", _, Some(f)) => ("Write".to_string(), write_input(&f)),
        _ => (tool, args.clone()),
    };
    Ok(Payload {
        event,
        native,
        session: text(o, "sessionId")
            .or_else(|| text(o, "session_id"))
            .unwrap_or_default(),
        cwd: cwd.into(),
        // Copilot says nothing of a stop already continued: the referee's own count caps it.
        stop_hook_active: false,
        tool_name,
        tool_input,
        tool_dir: None,
    })
}

pub(super) fn render(_p: Option<&Payload>, a: &Answer) -> Reply {
    match a {
        Answer::Allow => Reply::default(),
        Answer::Deny(r) => Reply::json(&json!({
            "permissionDecision": "deny",
            "permissionDecisionReason": r,
        })),
        Answer::Block(r) => Reply::json(&json!({ "decision": "block", "reason": r })),
        // No field reaches the user (nor the agent after a tool): kept in the hook's log.
        Answer::Tell(m) | Answer::Feedback(m) => Reply::log(m),
        Answer::Unreadable(why) => Reply {
            stderr: format!("{why}\n"),
            ..Reply::json(&json!({
                "permissionDecision": "deny",
                "permissionDecisionReason": why,
                "decision": "block",
                "reason": why,
            }))
        },
    }
}
