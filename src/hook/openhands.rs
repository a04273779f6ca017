//! OpenHands (`referee hook openhands`). Its hooks page (docs.openhands.dev, "Hooks") calls the
//! format compatible with Claude Code's, and the *settings* are (`.openhands/hooks.json` takes
//! Claude Code's PascalCase events and `{"hooks": …}` wrapper), but the payload and the answer
//! are not, as the page's own "Input" and "Output" sections and the SDK that runs the hooks
//! (OpenHands/software-agent-sdk, `openhands/sdk/hooks/types.py` and `executor.py`) show:
//!
//! - Input: `event_type` (`PreToolUse`, `PostToolUse`, `Stop`, `SessionStart`, …), `tool_name`
//!   (`terminal`, `file_editor`, `apply_patch`, …), `tool_input` (the action: `terminal`'s
//!   `command`; `file_editor`'s `command` — `view`, `create`, `str_replace`, `insert`,
//!   `undo_edit` — and `path`; `apply_patch`'s `patch`), `tool_response`, `session_id`,
//!   `working_dir`, `metadata`. No `hook_event_name`, no `cwd`: `referee hook claude-code`
//!   cannot read it.
//! - Output: exit 2 blocks; on exit 0 a JSON `decision` of `"allow"` or `"deny"` (the SDK no
//!   longer reads Claude Code's `"block"`) with a `reason` shown in the UI and fed to the agent
//!   when a `Stop` is refused or a tool call blocked. `PostToolUse` cannot block and its answer
//!   reaches no agent.

use serde_json::{json, Map, Value};

use super::{required, shell_input, text, write_input, Answer, Payload, PayloadError, Reply};

pub(super) fn parse(o: &Map<String, Value>) -> Result<Payload, PayloadError> {
    let event = required(o, "event_type")?;
    let cwd = required(o, "working_dir")?;
    let input = o.get("tool_input").cloned().unwrap_or(Value::Null);
    let field = |k: &str| input.get(k).and_then(Value::as_str).map(str::to_string);
    let tool = text(o, "tool_name").unwrap_or_default();
    let (tool_name, tool_input) = match (tool.as_str(), field("command")) {
        ("terminal", Some(c)) => ("Bash".to_string(), shell_input(&c)),
        ("file_editor", Some(c)) if c != "view" => match field("path") {
            Some(f) => ("Write".to_string(), write_input(&f)),
            None => (tool, input.clone()),
        },
        ("apply_patch", _) => match field("patch") {
            Some(patch) => ("apply_patch".to_string(), json!({ "patch": patch })),
            None => (tool, input.clone()),
        },
        _ => (tool, input.clone()),
    };
    Ok(Payload {
        native: event.clone(),
        event,
        session: text(o, "session_id").unwrap_or_default(),
        cwd: cwd.into(),
        // OpenHands says nothing of a stop already refused: the referee's own count caps it.
        stop_hook_active: false,
        tool_name,
        tool_input,
        tool_dir: None,
    })
}

pub(super) fn render(_p: Option<&Payload>, a: &Answer) -> Reply {
    match a {
        Answer::Allow => Reply::default(),
        Answer::Block(r) | Answer::Deny(r) => {
            Reply::json(&json!({ "decision": "deny", "reason": r }))
        }
        Answer::Tell(m) | Answer::Feedback(m) => {
            Reply::json(&json!({ "decision": "allow", "reason": m }))
        }
        Answer::Unreadable(why) => Reply::blocked(why),
    }
}
