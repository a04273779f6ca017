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
    /// In-process mode only: a served hook's state is the daemon's.
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Ask the `referee serve` listening on SOCKET instead of judging in this process (default:
    /// the `REFEREE_SERVE` environment variable). The daemon, run as another user, keeps the
    /// session's memory where the agent cannot reach it. When it cannot be reached, the hook
    /// blocks (exit 2, the reason on stderr): fail closed. With neither, the hook judges in
    /// process (the agent's user keeps the state, in `--state-dir` or
    /// `~/.local/state/referee/`): docs/agents.md, "A referee the agent cannot touch".
    #[arg(long, value_name = "SOCKET")]
    serve: Option<PathBuf>,
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
    // Whatever fails in here blocks: a panic is exit 2, never the agents' non-blocking 101.
    crate::hook::exit_2_on_panic();
    let agent = match a.agent {
        HookAgent::ClaudeCode => crate::hook::Agent::ClaudeCode,
        HookAgent::Codex => crate::hook::Agent::Codex,
        HookAgent::Gemini => crate::hook::Agent::Gemini,
        HookAgent::Cursor => crate::hook::Agent::Cursor,
        HookAgent::Copilot => crate::hook::Agent::Copilot,
        HookAgent::OpenHands => crate::hook::Agent::OpenHands,
    };
    let serve = a.serve.clone().or_else(|| {
        std::env::var_os("REFEREE_SERVE")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
    });
    let overrides = match a.rules.overrides() {
        Ok(o) => o,
        // Served, a flag that cannot be read is a block like any failure to ask.
        Err(e) if serve.is_some() => return Ok(print(&agent.cannot_ask(&format!("{e:#}")))),
        Err(e) => return Err(e),
    };
    // Served: one byte over the cap is read, so the daemon refuses what it would cut.
    let cap = crate::hook::MAX_PAYLOAD + u64::from(serve.is_some());
    let mut input = Vec::new();
    let read = std::io::stdin().take(cap).read_to_end(&mut input);
    let answer = match (&serve, read) {
        (Some(socket), Ok(_)) => served(&a, agent, overrides, socket, &input),
        (Some(_), Err(e)) => agent.cannot_ask(&format!("unreadable stdin: {e}")),
        (None, read) => {
            let cfg = crate::hook::Config {
                agent,
                rules: crate::hook::Rules::new(&a.protocol, overrides, a.read.max_read_bytes),
                workspace: a.workspace,
                state_dir: a.state_dir,
                state_base: None,
                allow: crate::hook::confine::Allowed::default(),
                timeout: a.timeout,
            };
            match read {
                Ok(_) if std::env::var_os(CHILD).is_some() => crate::hook::run(&cfg, &input),
                Ok(_) => in_child(&cfg, &input),
                Err(e) => crate::hook::run(&cfg, format!("unreadable stdin: {e}").as_bytes()),
            }
        }
    };
    Ok(print(&answer))
}

/// Set in the process that judges for an in-process hook ([`in_child`]).
const CHILD: &str = "REFEREE_HOOK_JUDGE";

/// Judges in a child process of this binary (the same command line): a judgment that aborts
/// (an allocation refused under a memory limit is an abort, not an error) or is killed is
/// answered here as a referee that cannot judge — the stop blocked — never as the agent's
/// "non-blocking error" that lets it through.
fn in_child(cfg: &crate::hook::Config, input: &[u8]) -> crate::hook::Reply {
    use std::io::Write as _;
    use std::os::unix::process::ExitStatusExt as _;
    let failed = |why: String| crate::hook::failed(cfg, input, &why);
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return failed(format!("cannot find the referee's own binary: {e}")),
    };
    let child = std::process::Command::new(exe)
        .args(std::env::args_os().skip(1))
        .env(CHILD, "1")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn();
    let mut child = match child {
        Ok(c) => c,
        Err(e) => return failed(format!("cannot start the judgment: {e}")),
    };
    // Fed from a thread: a child that answers before reading all of it never blocks the feed.
    let feed = child.stdin.take().map(|mut stdin| {
        let input = input.to_vec();
        std::thread::spawn(move || {
            let _ = stdin.write_all(&input);
        })
    });
    let out = child.wait_with_output();
    if let Some(f) = feed {
        let _ = f.join();
    }
    match out {
        Ok(o) if matches!(o.status.code(), Some(0 | 2)) => crate::hook::Reply {
            stdout: String::from_utf8_lossy(&o.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&o.stderr).into_owned(),
            exit: u8::try_from(o.status.code().unwrap_or(2)).unwrap_or(2),
        },
        Ok(o) => {
            let how = match (o.status.code(), o.status.signal()) {
                (_, Some(sig)) => format!("killed by signal {sig}"),
                (Some(code), _) => format!("exit {code}"),
                _ => "an unknown end".to_string(),
            };
            let said = String::from_utf8_lossy(&o.stderr);
            let said = said.lines().next().unwrap_or_default();
            failed(format!("the judgment ended abnormally ({how}): {said}"))
        }
        Err(e) => failed(format!("the judgment's process failed: {e}")),
    }
}

/// The daemon's answer to this hook call, or a block saying why there is none.
fn served(
    a: &HookArgs,
    agent: crate::hook::Agent,
    overrides: crate::protocol::overrides::Overrides,
    socket: &std::path::Path,
    input: &[u8],
) -> crate::hook::Reply {
    if a.state_dir.is_some() {
        return agent.cannot_ask(
            "`--state-dir` is refused with `--serve`: a served hook's state is the daemon's, out of the agent's reach",
        );
    }
    // Paths are made absolute here: the daemon runs elsewhere.
    let absolute = |p: &std::path::Path| std::path::absolute(p).unwrap_or_else(|_| p.to_path_buf());
    let req = crate::serve::Request {
        agent: agent.id().to_string(),
        workspace: a.workspace.as_deref().map(absolute),
        timeout_ms: u64::try_from(a.timeout.as_millis()).unwrap_or(u64::MAX),
        rules: crate::hook::Rules::new(&a.protocol, overrides, a.read.max_read_bytes),
    };
    match crate::serve::client::ask(socket, &req, input) {
        Ok(reply) => reply,
        Err(e) => {
            let mut why = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                why.push_str(&format!(": {s}"));
                source = s.source();
            }
            agent.cannot_ask(&why)
        }
    }
}

/// Prints the answer as the agent reads it.
fn print(answer: &crate::hook::Reply) -> ExitCode {
    // An agent that closed its end of a pipe gets no answer, and no panic.
    let _ = std::io::stderr().write_all(answer.stderr.as_bytes());
    let mut out = std::io::stdout().lock();
    let _ = out
        .write_all(answer.stdout.as_bytes())
        .and_then(|_| out.flush());
    if answer.exit == 2 {
        ExitCode::Error
    } else {
        ExitCode::Ok
    }
}
