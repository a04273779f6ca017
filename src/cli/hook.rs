//! `referee hook`: answer a coding agent's hook from its JSON on stdin.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, ValueEnum};

use super::{ReadArgs, RulesArgs};
use crate::exit::ExitCode;

#[derive(Args, Debug)]
pub(super) struct HookArgs {
    /// The agent whose hook input is read and whose documented answer is written.
    #[arg(value_enum)]
    agent: HookAgent,
    /// A protocol of task records: an embedded id or a file outside the workspace.
    #[arg(long, value_name = "ID|FILE", default_value = "code-change")]
    protocol: String,
    /// The workspace (default: the git work tree holding the hook's `cwd`, else `cwd`).
    #[arg(long, value_name = "DIR")]
    workspace: Option<PathBuf>,
    /// The referee's state directory, as for `watch` and `verify` (a running `watch` shares it).
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    #[command(flatten)]
    read: ReadArgs,
    #[command(flatten)]
    rules: RulesArgs,
    /// Answer within this long (keep it below the hook's own timeout); a stop not judged by then
    /// is blocked, fail closed.
    #[arg(long, value_name = "DURATION", default_value = "45s", value_parser = crate::duration::parse)]
    timeout: std::time::Duration,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum HookAgent {
    /// Claude Code (`Stop`, `SubagentStop`, `PreToolUse`, `PostToolUse`, `SessionStart`).
    ClaudeCode,
    /// OpenAI Codex CLI (`Stop`, `PreToolUse`, `PostToolUse`, `SessionStart`).
    Codex,
    /// Gemini CLI (`AfterAgent`, `BeforeTool`, `AfterTool`, `SessionStart`).
    Gemini,
    /// Cursor (`stop`, `subagentStop`, `beforeShellExecution`, `preToolUse`, `postToolUse`,
    /// `sessionStart`).
    Cursor,
    /// GitHub Copilot CLI (`agentStop`, `subagentStop`, `preToolUse`, `sessionStart`).
    Copilot,
    /// OpenHands (`Stop`, `PreToolUse`, `SessionStart`; its own payload, not Claude Code's).
    #[value(name = "openhands")]
    OpenHands,
}

pub(super) fn hook(a: HookArgs) -> Result<ExitCode> {
    use std::io::Read as _;
    let cfg = crate::hook::Config {
        agent: match a.agent {
            HookAgent::ClaudeCode => crate::hook::Agent::ClaudeCode,
            HookAgent::Codex => crate::hook::Agent::Codex,
            HookAgent::Gemini => crate::hook::Agent::Gemini,
            HookAgent::Cursor => crate::hook::Agent::Cursor,
            HookAgent::Copilot => crate::hook::Agent::Copilot,
            HookAgent::OpenHands => crate::hook::Agent::OpenHands,
        },
        protocol: a.protocol,
        workspace: a.workspace,
        state_dir: a.state_dir,
        max_read_bytes: a.read.max_read_bytes,
        timeout: a.timeout,
        overrides: a.rules.overrides()?,
    };
    let mut input = Vec::new();
    let read = std::io::stdin()
        .take(crate::hook::MAX_PAYLOAD)
        .read_to_end(&mut input);
    let answer = match read {
        Ok(_) => crate::hook::run(&cfg, &input),
        Err(e) => crate::hook::run(&cfg, format!("unreadable stdin: {e}").as_bytes()),
    };
    // An agent that closed its end of a pipe gets no answer, and no panic.
    let _ = std::io::stderr().write_all(answer.stderr.as_bytes());
    let mut out = std::io::stdout().lock();
    let _ = out
        .write_all(answer.stdout.as_bytes())
        .and_then(|_| out.flush());
    Ok(if answer.exit == 2 {
        ExitCode::Error
    } else {
        ExitCode::Ok
    })
}
