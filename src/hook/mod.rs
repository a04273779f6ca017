//! Agent hooks (`referee hook claude-code|codex|gemini|cursor|copilot|openhands`, issues 18
//! and 32): the referee where a coding agent works. The agent runs the hook with one JSON payload
//! on stdin per event; the answer is what that agent documents that it reads (JSON on stdout,
//! an exit code). Each agent's module reads its payload into one vocabulary (Claude Code's event
//! and tool names) and writes the referee's [`Answer`] in its own form; the judgment in between
//! knows no agent.
//!
//! - `Stop` / `SubagentStop`: the workspace is judged as it stands against the referee's
//!   baseline ([`crate::judge::attempt`]). With no pending task record from the agent, the whole
//!   change since the baseline is one *implicit attempt* of the task `<agent>-<session_id>`: a
//!   record made in memory (never written into the workspace) that declares every changed path,
//!   claims their current hashes, and is numbered after the task's kept attempts. A REJECT
//!   blocks the stop with the failing checks as the reason, so the agent keeps working; the
//!   protocol's loop guards (`max_rejects`, identical diffs, convergence) turn the next
//!   failures into ESCALATE, which lets the stop through with a message for the human and
//!   leaves the STOP in the state directory.
//! - `SessionStart`: the baseline is pinned (HEAD of a git work tree, else a start snapshot), so
//!   the session is measured from where it began. Without it, the first hook call pins it.
//! - `PreToolUse`: an advisory deny of a write to a protected path (Write/Edit/MultiEdit, a Codex
//!   `apply_patch`, a shell command parsed for what it may write: [`targets`]).
//! - `PostToolUse`: feedback on what the call broke (a failing check on a path that call changed:
//!   syntax, secrets, a protected path; `seen` keeps what the last call saw).
//!
//! Fail closed: a payload that cannot be read, a workspace or state directory that cannot be
//! opened, or a judgment that does not finish within `--timeout` blocks the stop with the
//! reason; `--timeout` and the blocks of a referee that cannot judge are capped too (the
//! guard limit, then the stop goes through with the failure told to the human). Nothing is
//! written into the workspace; the state directory holds the pin, the kept attempts, the
//! verdicts and the STOP.
//!
//! Here: the payload, the answer and the dispatch; each agent's format in `claude` (Claude Code
//! and Codex), `gemini`, `cursor`, `copilot` and `openhands`; the stop's answer in `stop`, the
//! tool calls' in `tool`, what the agent is told in `reason`, the shell's write targets in
//! [`targets`].

mod claude;
pub mod confine;
mod copilot;
mod cursor;
mod gemini;
mod openhands;
mod reason;
mod seen;
mod stop;
pub mod targets;
mod tool;

use stop::stop;
use tool::{post_tool, pre_tool};

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context as _, Result};
use serde_json::{json, Map, Value};

use crate::judge;
use crate::protocol::{Protocol, Subject};
use crate::workspace::{Workspace, TASKS_DIR};

/// The agent whose hook format is spoken: how its payload is read ([`Agent::parse`]) and how
/// the referee's answer is written for it ([`Agent::render`]). The judgment in between is the
/// same for every agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Agent {
    ClaudeCode,
    Codex,
    Gemini,
    Cursor,
    Copilot,
    OpenHands,
}

impl Agent {
    /// The prefix of an implicit task id (`claude-code-<session_id>`).
    pub fn id(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "claude-code",
            Agent::Codex => "codex",
            Agent::Gemini => "gemini",
            Agent::Cursor => "cursor",
            Agent::Copilot => "copilot",
            Agent::OpenHands => "openhands",
        }
    }

    /// The agent whose [`Agent::id`] is `id`.
    pub fn from_id(id: &str) -> Option<Agent> {
        [
            Agent::ClaudeCode,
            Agent::Codex,
            Agent::Gemini,
            Agent::Cursor,
            Agent::Copilot,
            Agent::OpenHands,
        ]
        .into_iter()
        .find(|a| a.id() == id)
    }

    /// What the agent is told when the referee cannot be asked at all (`referee serve`
    /// unreachable, a flag refused): blocked, in the agent's own form of "blocked" — exit 2
    /// with the reason on stderr for most, a deny on stdout for Copilot.
    pub fn cannot_ask(self, why: &str) -> Reply {
        self.render(
            None,
            &Answer::Unreadable(format!(
                "referee: cannot judge: {why}; blocked, fail closed, until the referee answers"
            )),
        )
    }

    fn name(self) -> &'static str {
        match self {
            Agent::ClaudeCode => "Claude Code",
            Agent::Codex => "Codex",
            Agent::Gemini => "Gemini CLI",
            Agent::Cursor => "Cursor",
            Agent::Copilot => "GitHub Copilot CLI",
            Agent::OpenHands => "OpenHands",
        }
    }

    /// The agent's payload as the referee reads it, its events and tools named as Claude Code
    /// names them (`Stop`, `PreToolUse`, `Write`, `Bash`, …).
    fn parse(self, input: &[u8]) -> Result<Payload, PayloadError> {
        let o = object(input)?;
        match self {
            Agent::ClaudeCode | Agent::Codex => claude::parse(&o),
            Agent::Gemini => gemini::parse(&o),
            Agent::Cursor => cursor::parse(&o),
            Agent::Copilot => copilot::parse(&o),
            Agent::OpenHands => openhands::parse(&o),
        }
    }

    /// The answer as this agent reads it for the event of `p` (`None`: the payload could not be
    /// read, so the event is not known).
    fn render(self, p: Option<&Payload>, a: &Answer) -> Reply {
        match self {
            Agent::ClaudeCode | Agent::Codex => claude::render(p, a),
            Agent::Gemini => gemini::render(p, a),
            Agent::Cursor => cursor::render(p, a),
            Agent::Copilot => copilot::render(p, a),
            Agent::OpenHands => openhands::render(p, a),
        }
    }
}

/// How `referee hook` runs.
#[derive(Debug, Clone)]
pub struct Config {
    pub agent: Agent,
    /// The rules the judgment uses (`--protocol`, `--protect`, `--set`, `--vars`,
    /// `--max-read-bytes`).
    pub rules: Rules,
    /// `--workspace`; default: the git work tree holding the payload's `cwd`, else `cwd`.
    pub workspace: Option<PathBuf>,
    /// `--state-dir`: this workspace's state directory itself.
    pub state_dir: Option<PathBuf>,
    /// Where each workspace's state directory is made when `state_dir` is not given (its
    /// `<name>` below, as `watch --root` makes them): the daemon's own for `referee serve`;
    /// `None`, the default base (`$XDG_STATE_HOME/referee`, else `~/.local/state/referee`).
    pub state_base: Option<PathBuf>,
    /// The folders whose workspaces may be judged (`referee serve --allow`), open; empty: any.
    pub allow: confine::Allowed,
    /// The judgment's deadline (below the agent's hook timeout).
    pub timeout: Duration,
}

/// The rules a judgment uses: one type for the hook in process, the client that asks
/// `referee serve` (they are sent with the request) and the daemon (which answers only a
/// request for its own), so a rule added later travels everywhere or fails to compile.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Rules {
    /// `--protocol`: an embedded id, or a file's absolute path.
    pub protocol: String,
    /// `--vars`, absolute.
    pub vars: Option<PathBuf>,
    /// `--set`, each as given.
    pub set: Vec<String>,
    /// `--protect`, each as given.
    pub protect: Vec<String>,
    /// `--max-read-bytes`.
    pub max_read_bytes: u64,
}

impl Rules {
    /// The rules `protocol` (an embedded id, or a file made absolute: the daemon runs
    /// elsewhere), `overrides` (their `--vars` made absolute) and `max_read_bytes` name.
    pub fn new(
        protocol: &str,
        overrides: crate::protocol::overrides::Overrides,
        max_read_bytes: u64,
    ) -> Rules {
        let crate::protocol::overrides::Overrides { file, set, protect } = overrides;
        Rules {
            protocol: absolute_protocol(protocol),
            vars: file,
            set,
            protect,
            max_read_bytes,
        }
    }

    /// The project's rules as the protocol loader takes them.
    pub fn overrides(&self) -> crate::protocol::overrides::Overrides {
        crate::protocol::overrides::Overrides {
            file: self.vars.clone(),
            set: self.set.clone(),
            protect: self.protect.clone(),
        }
    }

    /// One line naming them, as flags (for a refusal).
    pub fn describe(&self) -> String {
        let Rules {
            protocol,
            vars,
            set,
            protect,
            max_read_bytes,
        } = self;
        let mut s = format!("--protocol {protocol}");
        if let Some(v) = vars {
            s.push_str(&format!(" --vars {}", v.display()));
        }
        for x in set {
            s.push_str(&format!(" --set {x}"));
        }
        for x in protect {
            s.push_str(&format!(" --protect {x}"));
        }
        s.push_str(&format!(" --max-read-bytes {max_read_bytes}"));
        s
    }
}

/// `--protocol` as the rules carry it: a file's path made absolute, anything else (an
/// embedded id) as it is.
pub fn absolute_protocol(protocol: &str) -> String {
    let path = Path::new(protocol);
    if path.is_file() {
        std::path::absolute(path).map_or_else(
            |_| protocol.to_string(),
            |p| p.to_string_lossy().into_owned(),
        )
    } else {
        protocol.to_string()
    }
}

/// What the hook prints: stdout, stderr and the exit code (also what `referee serve` sends
/// back to the `referee hook` that asked it).
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Reply {
    pub stdout: String,
    pub stderr: String,
    pub exit: u8,
}

impl Reply {
    fn json(v: &Value) -> Reply {
        Reply {
            stdout: format!("{v}\n"),
            ..Reply::default()
        }
    }

    /// Nothing on stdout, `message` on stderr, exit 0: for an agent that reads no message on
    /// this event, the human still finds it in the hook's log.
    fn log(message: &str) -> Reply {
        Reply {
            stderr: format!("{message}\n"),
            ..Reply::default()
        }
    }

    /// Exit 2 with the reason on stderr: what Claude Code, Codex, Gemini CLI, Cursor and
    /// OpenHands take as "blocked" for a stop or a tool call, whatever the event was.
    fn blocked(why: &str) -> Reply {
        Reply {
            stdout: String::new(),
            stderr: format!("{why}\n"),
            exit: 2,
        }
    }
}

/// What the referee says, whatever the agent: each agent's module writes it in that agent's
/// documented form.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Answer {
    /// Go on, nothing said.
    Allow,
    /// Go on; the human is told this (an ESCALATE, a referee that could not judge a tool call).
    Tell(String),
    /// The stop is refused: the agent reads the reason and keeps working.
    Block(String),
    /// Before a tool: the call does not run; the agent reads why.
    Deny(String),
    /// After a tool: the agent reads what its call broke.
    Feedback(String),
    /// The payload cannot be read: blocked, fail closed, whatever the event was.
    Unreadable(String),
}

impl Answer {
    fn allow() -> Answer {
        Answer::Allow
    }

    fn tell(message: &str) -> Answer {
        Answer::Tell(message.to_string())
    }

    fn block(reason: &str) -> Answer {
        Answer::Block(reason.to_string())
    }

    fn deny(reason: &str) -> Answer {
        Answer::Deny(reason.to_string())
    }

    fn feedback(reason: &str) -> Answer {
        Answer::Feedback(reason.to_string())
    }

    fn unreadable(why: &str) -> Answer {
        Answer::Unreadable(format!(
            "referee: cannot judge: {why}; blocked until the referee can read the hook's input"
        ))
    }
}

/// The hook's input, as far as the referee reads it, in Claude Code's vocabulary whatever the
/// agent: `event` is `Stop`, `SubagentStop`, `PreToolUse`, `PostToolUse` or `SessionStart`
/// (anything else is let through), `tool_name` `Write` (with `tool_input.file_path`), `Bash`
/// (`tool_input.command`) or `apply_patch` (`tool_input.command`, a patch envelope).
#[derive(Debug, Clone, Default)]
struct Payload {
    event: String,
    /// The agent's own name of the event (`AfterAgent`, `beforeShellExecution`, …): some
    /// agents read a different answer for events the referee treats alike.
    native: String,
    session: String,
    cwd: PathBuf,
    stop_hook_active: bool,
    tool_name: String,
    tool_input: Value,
    /// Where a shell command runs when the tool says so (Gemini's `dir_path`, Cursor's
    /// `working_directory`), else `cwd`.
    tool_dir: Option<PathBuf>,
}

impl Payload {
    fn is_stop(&self) -> bool {
        matches!(self.event.as_str(), "Stop" | "SubagentStop")
    }
}

/// Biggest payload read: a Write's content can be large, but not unbounded.
pub const MAX_PAYLOAD: u64 = 64 << 20;

/// Why the hook's input could not be read; its text is what the agent is told.
#[derive(Debug, thiserror::Error)]
pub enum PayloadError {
    #[error(
        "the hook's input is not JSON ({source}) — is the hook wired as documented in examples/?"
    )]
    NotJson {
        #[source]
        source: serde_json::Error,
    },
    #[error("the hook's input is not a JSON object")]
    NotObject,
    #[error("the hook's input has no `{field}`")]
    Missing { field: String },
    #[error("the hook's input has neither `{0}` nor `{1}`")]
    MissingEither(&'static str, &'static str),
}

/// The payload as a JSON object.
fn object(input: &[u8]) -> Result<Map<String, Value>, PayloadError> {
    let v: Value =
        serde_json::from_slice(input).map_err(|source| PayloadError::NotJson { source })?;
    let Value::Object(o) = v else {
        return Err(PayloadError::NotObject);
    };
    Ok(o)
}

/// The string field `k` of `o`.
fn text(o: &Map<String, Value>, k: &str) -> Option<String> {
    o.get(k).and_then(Value::as_str).map(str::to_string)
}

/// The non-empty string field `k`, or the reason it is missing.
fn required(o: &Map<String, Value>, k: &str) -> Result<String, PayloadError> {
    text(o, k)
        .filter(|v| !v.is_empty())
        .ok_or_else(|| PayloadError::Missing {
            field: k.to_string(),
        })
}

/// A tool input of Claude Code's `Write` for `path`.
fn write_input(path: &str) -> Value {
    json!({ "file_path": path })
}

/// A tool input of Claude Code's `Bash` for `command`.
fn shell_input(command: &str) -> Value {
    json!({ "command": command })
}

/// Answers one hook call: `input` is the payload read from stdin, the reply is what the agent
/// reads. Never panics on bad input; a judgment that does not finish within `cfg.timeout` is
/// answered as the event's failure (blocked at a stop, allowed with a message before or after a
/// tool). Reading the payload and writing the reply are the agent's ([`Agent::parse`],
/// [`Agent::render`]); the judgment between them ([`judgment`]) knows no agent's format.
pub fn run(cfg: &Config, input: &[u8]) -> Reply {
    let p = match cfg.agent.parse(input) {
        Ok(p) => p,
        Err(why) => {
            return cfg
                .agent
                .render(None, &Answer::unreadable(&why.to_string()))
        }
    };
    let a = judgment(cfg, &p);
    cfg.agent.render(Some(&p), &a)
}

/// The answer when the judgment itself failed beyond an error (the process judging it was
/// killed or aborted, say on memory): `input` is read again and answered as a referee that
/// cannot judge answers — a stop blocked (within the cap of such blocks), a tool call told.
pub fn failed(cfg: &Config, input: &[u8], why: &str) -> Reply {
    match cfg.agent.parse(input) {
        Ok(p) => {
            let a = on_failure(cfg, &p, why);
            cfg.agent.render(Some(&p), &a)
        }
        Err(e) => cfg
            .agent
            .render(None, &Answer::unreadable(&format!("{e}; and {why}"))),
    }
}

/// The referee's answer to one event, judged in this process on a thread of its own (with a
/// stack for deeply nested shell commands), within `cfg.timeout`.
fn judgment(cfg: &Config, p: &Payload) -> Answer {
    let (tx, rx) = std::sync::mpsc::channel();
    let (cfg2, p2) = (cfg.clone(), p.clone());
    let spawned = std::thread::Builder::new()
        .name(JUDGING_THREAD.into())
        .stack_size(HOOK_STACK)
        .spawn(move || {
            let _ = tx.send(answer(&cfg2, &p2));
        });
    if let Err(e) = spawned {
        return on_failure(cfg, p, &format!("cannot start the judgment: {e}"));
    }
    match rx.recv_timeout(cfg.timeout) {
        Ok(a) => a,
        // The judging thread ended without an answer: it panicked (the message is on stderr).
        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => on_failure(
            cfg,
            p,
            "the judgment failed with an internal error (a panic; its message is on stderr)",
        ),
        // The thread is left behind; the process ends when the answer is printed.
        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => on_failure(
            cfg,
            p,
            &format!(
                "the judgment did not finish within {} s (--timeout)",
                cfg.timeout.as_secs_f64()
            ),
        ),
    }
}

/// Makes a panic anywhere in this process but the judging thread (whose panic is answered as
/// a referee that cannot judge, [`judgment`]) end it with exit 2 and the reason on stderr:
/// what every agent takes as "blocked". Without it a panic is exit 101, which the agents take
/// as a non-blocking error: the stop would go through. For `referee hook` only (a daemon
/// answers for itself).
pub fn exit_2_on_panic() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default(info);
        if std::thread::current().name() == Some(JUDGING_THREAD) {
            return;
        }
        use std::io::Write as _;
        let _ = writeln!(
            std::io::stderr(),
            "referee hook: internal error ({info}); blocked (exit 2), fail closed"
        );
        std::process::exit(2);
    }));
}

/// The name of the thread that judges one hook call.
const JUDGING_THREAD: &str = "hook";

/// The judging thread's stack: the shell parser recurses once per nesting level of a command
/// (`targets::MAX_NESTING` bounds them).
const HOOK_STACK: usize = 64 << 20;

fn answer(cfg: &Config, p: &Payload) -> Answer {
    // The session's first event pins its workspace, whatever the event: a read-only tool call
    // before the agent `cd`s elsewhere pins it as surely as `SessionStart`. It is opened once
    // here; the events that judge use it, and fail on an error. Those that read it by path
    // check after their judgment that it was not replaced meanwhile ([`judged`]); the deny
    // before a tool walks it through its descriptor.
    let ws = workspace_root(cfg, p);
    let result = match p.event.as_str() {
        "Stop" | "SubagentStop" => stop(cfg, p, &ws),
        "PreToolUse" => pre_tool(cfg, p, &ws),
        "PostToolUse" => post_tool(cfg, p, &ws),
        "SessionStart" => session_start(cfg, p, &ws),
        // Events the referee has nothing to say about.
        _ => Ok(Answer::allow()),
    };
    result.unwrap_or_else(|e| on_failure(cfg, p, &format!("{e:#}")))
}

/// Judges `root` (by path) with `judge`, then makes sure it was not replaced meanwhile: if it
/// was, the judgment is an error, and whatever it pinned first (from whatever stood at the
/// path: the baseline, the protected surface, a start snapshot) is forgotten, so the next
/// judgment pins it from the workspace.
fn judged<T>(root: &confine::Root, state: &Path, judge: impl FnOnce() -> Result<T>) -> Result<T> {
    let pins = crate::workspace::baseline::PINNED;
    let before: Vec<bool> = pins
        .iter()
        .map(|f| std::fs::symlink_metadata(state.join(f)).is_ok())
        .collect();
    let out = judge();
    if let Err(e) = root.unchanged() {
        for (f, _) in pins.iter().zip(before).filter(|(_, was)| !was) {
            let path = state.join(f);
            let _ = match std::fs::symlink_metadata(&path) {
                Ok(m) if m.is_dir() => std::fs::remove_dir_all(&path),
                _ => std::fs::remove_file(&path),
            };
        }
        return Err(e.into());
    }
    out
}

/// The workspace of an event, opened ([`workspace_root`]), or why it could not be.
type Opened = Result<confine::Root>;

/// The opened workspace, or the reason it could not be opened, as an error.
fn opened(ws: &Opened) -> Result<&confine::Root> {
    ws.as_ref().map_err(|e| anyhow::anyhow!("{e:#}"))
}

/// The answer when the referee cannot judge: a stop is blocked (fail closed) until the blocks
/// of this session reach the cap, then let through with the failure told to the human; before
/// or after a tool, the call goes on with a message (those answers are advisory).
fn on_failure(cfg: &Config, p: &Payload, why: &str) -> Answer {
    let what = format!(
        "referee ({}) cannot judge the workspace: {why}",
        cfg.agent.name()
    );
    if !p.is_stop() {
        return Answer::tell(&what);
    }
    let counter = Counter::for_payload(cfg, p);
    let (blocks, cap) = match &counter {
        Some(c) => (c.read(), c.cap),
        // No state to count in: one block per stop chain (`stop_hook_active`).
        None => (usize::from(p.stop_hook_active), 1),
    };
    if blocks >= cap {
        if let Some(c) = &counter {
            c.write(0);
        }
        return Answer::tell(&format!(
            "{what}. The stop was blocked {blocks} time(s) for this and is now let through: ESCALATE — a human must review the workspace."
        ));
    }
    if let Some(c) = &counter {
        c.write(blocks + 1);
    }
    Answer::block(&format!(
        "{what}. The referee fails closed: this stop is blocked until it can judge (block {} of at most {cap}); fix what is named above if it is in the workspace, else stop again.",
        blocks + 1
    ))
}

/// The consecutive stops blocked by a referee that could not judge, per session, kept in the
/// state directory (`hook-<task>.json`): the cap of fail-closed blocks.
struct Counter {
    state: PathBuf,
    name: String,
    cap: usize,
}

impl Counter {
    fn for_payload(cfg: &Config, p: &Payload) -> Option<Counter> {
        let root = workspace_root(cfg, p).ok()?;
        let state = state_for(cfg, &root).ok()?;
        crate::state::ensure(&state).ok()?;
        let cap = Protocol::load_with(&cfg.rules.protocol, None, &cfg.rules.overrides())
            .ok()
            .and_then(|pr| pr.guards().map(|g| g.max_rejects as usize))
            .unwrap_or(3)
            .max(1);
        Some(Counter {
            state,
            name: format!(
                "hook-{}.json",
                crate::workspace::name::file_stem_for(&task_id(cfg.agent, &p.session))
            ),
            cap,
        })
    }

    fn read(&self) -> usize {
        std::fs::read(self.state.join(&self.name))
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .and_then(|v| v.get("blocks").and_then(Value::as_u64))
            .map_or(0, |n| n as usize)
    }

    fn write(&self, blocks: usize) {
        let text = json!({ "blocks": blocks }).to_string();
        if let Err(e) =
            crate::outputs::write_atomic(&crate::outputs::OutDir::at(&self.state), &self.name, text)
        {
            tracing::warn!("cannot keep the hook's block count: {e}");
        }
    }
}

/// The implicit task of a session: `<agent>-<session_id>`.
pub fn task_id(agent: Agent, session: &str) -> String {
    format!("{}-{}", agent.id(), session)
}

/// The workspace a payload is about, opened: `--workspace`, else the one pinned at the
/// session's first event (kept in [`sessions_dir`]), else — at that first event, which pins it —
/// the git work tree holding the payload's `cwd` (the nearest ancestor with a `.git`), else
/// `cwd` itself. Never the `cwd` of a later event: an agent that `cd`s into a nested repository
/// (or makes one, `git init`) before it stops is still judged on the workspace its session
/// began in. Opened beneath `--allow` ([`confine`]): what is pinned and judged is
/// the directory found then, by the path its descriptor has.
fn workspace_root(cfg: &Config, p: &Payload) -> Result<confine::Root> {
    let open =
        |candidate: &Path| confine::confine(&cfg.allow, cfg.state_base.as_deref(), candidate);
    if let Some(w) = &cfg.workspace {
        return Ok(open(w)?);
    }
    let pin = (!p.session.is_empty())
        .then(|| sessions_dir(cfg).map(|d| d.join(pin_name(cfg.agent, &p.session))))
        .transpose()?;
    if let Some(pin) = &pin {
        if let Some(pinned) = read_pin(pin)? {
            heard_from(pin);
            return Ok(open(&pinned)?);
        }
    }
    let cwd = std::fs::canonicalize(&p.cwd)
        .with_context(|| format!("the hook's `cwd` `{}` cannot be opened", p.cwd.display()))?;
    // Named as the payload gave it when it resolves outside the allowed folders (through a
    // link, say): the answer never names where the link led.
    let allowed = cfg.allow.paths();
    anyhow::ensure!(
        allowed.is_empty() || allowed.iter().any(|a| cwd.starts_with(a)),
        "{}",
        confine::ConfineError::Outside {
            path: p.cwd.clone()
        }
    );
    let candidate = cwd
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(&cwd)
        .to_path_buf();
    let root = open(&candidate)?;
    match &pin {
        Some(pin) => {
            let kept = write_pin(pin, root.path())?;
            if kept == root.path() {
                Ok(root)
            } else {
                Ok(open(&kept)?)
            }
        }
        None => Ok(root),
    }
}

/// Marks the session's pin as heard from now (its modification time): `referee serve` forgets
/// the pins of sessions not heard from for `--forget-sessions-after`.
fn heard_from(pin: &Path) {
    let now = std::time::SystemTime::now();
    if let Err(e) = std::fs::File::options()
        .append(true)
        .open(pin)
        .and_then(|f| f.set_modified(now))
    {
        tracing::debug!("cannot mark the session's pin `{}`: {e}", pin.display());
    }
}

/// Where the sessions' pinned workspaces are kept: `hook-sessions/` in `--state-dir`, else in
/// the state base (the daemon's for `referee serve`).
fn sessions_dir(cfg: &Config) -> Result<PathBuf> {
    let dir = match (&cfg.state_dir, &cfg.state_base) {
        (Some(d), _) => d.join(SESSIONS_DIR),
        (None, Some(b)) => b.join(SESSIONS_DIR),
        (None, None) => crate::state::default_base()?.join(SESSIONS_DIR),
    };
    crate::state::ensure(&dir)?;
    Ok(dir)
}

/// The folder of the sessions' pins, in a state directory or base.
pub const SESSIONS_DIR: &str = "hook-sessions";

fn pin_name(agent: Agent, session: &str) -> String {
    format!(
        "{}.workspace",
        crate::workspace::name::file_stem_for(&task_id(agent, session))
    )
}

/// The workspace pinned for a session (its path's bytes), `None` when it has none yet.
fn read_pin(pin: &Path) -> Result<Option<PathBuf>> {
    use std::os::unix::ffi::OsStrExt as _;
    match std::fs::read(pin) {
        Ok(bytes) => {
            let bytes = bytes.strip_suffix(b"\n").unwrap_or(&bytes);
            anyhow::ensure!(
                !bytes.is_empty(),
                "the session's pinned workspace `{}` is empty",
                pin.display()
            );
            Ok(Some(PathBuf::from(std::ffi::OsStr::from_bytes(bytes))))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e).with_context(|| {
            format!(
                "cannot read the session's pinned workspace `{}`",
                pin.display()
            )
        }),
    }
}

/// Pins `root` as the session's workspace unless a concurrent first event pinned one already
/// (that one is kept and returned): created whole or not at all.
fn write_pin(pin: &Path, root: &Path) -> Result<PathBuf> {
    use std::io::Write as _;
    use std::os::unix::ffi::OsStrExt as _;
    let tmp = pin.with_extension(format!("tmp{}", std::process::id()));
    let mut bytes = root.as_os_str().as_bytes().to_vec();
    bytes.push(b'\n');
    let written = std::fs::File::create(&tmp)
        .and_then(|mut f| f.write_all(&bytes).and_then(|()| f.sync_all()));
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e)
            .with_context(|| format!("cannot pin the session's workspace in `{}`", tmp.display()));
    }
    // A hard link fails when the pin exists: the first writer wins, atomically.
    let linked = std::fs::hard_link(&tmp, pin);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(root.to_path_buf()),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => read_pin(pin)?
            .with_context(|| format!("the session's pin `{}` vanished", pin.display())),
        Err(e) => Err(e)
            .with_context(|| format!("cannot pin the session's workspace in `{}`", pin.display())),
    }
}

/// The state directory of `root`: `--state-dir`, else `<state base>/<name>`, the name that of
/// the directory opened (never of whatever stands at its path now).
fn state_for(cfg: &Config, root: &confine::Root) -> Result<PathBuf> {
    if let Some(d) = &cfg.state_dir {
        return Ok(d.clone());
    }
    let here = crate::state::live::Here::of_fd(root.fd(), root.path())?;
    match &cfg.state_base {
        Some(base) => Ok(base.join(crate::state::name(&here))),
        None => Ok(crate::state::locate(&here, None)?),
    }
}

fn load_protocol(cfg: &Config, root: &Path) -> Result<Protocol> {
    // Refused before it is read: nothing from inside the workspace is believed.
    if let Some(file) = &cfg.rules.vars {
        crate::protocol::overrides::refuse_inside(file, root).map_err(anyhow::Error::msg)?;
    }
    let protocol = Protocol::load_with(&cfg.rules.protocol, None, &cfg.rules.overrides())?;
    for file in protocol.secret_files() {
        crate::protocol::secrets::refuse_inside(&file, root).map_err(|e| anyhow::anyhow!(e))?;
    }
    if let Some(path) = Path::new(&cfg.rules.protocol)
        .is_file()
        .then(|| std::fs::canonicalize(&cfg.rules.protocol).ok())
        .flatten()
    {
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        anyhow::ensure!(
            !path.starts_with(&root),
            "the protocol file `{}` lies inside the workspace, where the agent could edit it",
            path.display()
        );
    }
    anyhow::ensure!(
        matches!(protocol.subject, Subject::Workspace(_)),
        "protocol `{}` judges no task records: agent hooks need a protocol like `code-change`",
        protocol.id
    );
    Ok(protocol)
}

fn request<'a>(cfg: &'a Config, root: &'a Path, state: &'a Path) -> judge::Request<'a> {
    judge::Request {
        max_read_bytes: cfg.rules.max_read_bytes,
        state_dir: Some(state),
        ..judge::Request::new(root)
    }
}

fn session_start(cfg: &Config, p: &Payload, ws: &Opened) -> Result<Answer> {
    let root = opened(ws)?;
    let state = state_for(cfg, root)?;
    let protocol = load_protocol(cfg, root)?;
    // Opening the workspace pins the baseline in the state directory (kept for the session).
    let w = judged(root, &state, || {
        Ok(judge::attempt(
            &request(cfg, root, &state),
            &protocol,
            &|_| None,
        )?)
    })?;
    // What the session starts from, so that its first tool call is told only its own changes.
    seen::store(
        &w.state,
        &task_id(cfg.agent, &p.session),
        &seen::snapshot(&w.ws),
    );
    Ok(Answer::allow())
}

/// The implicit attempt of `task` on `ws` as it was opened, or `None` when the agent wrote a
/// record of its own that is up for judgment.
fn implicit_record(
    ws: &Workspace,
    protocol: &Protocol,
    agent: Agent,
    task: &str,
) -> Option<(String, Vec<u8>)> {
    let Subject::Workspace(tasks) = &protocol.subject else {
        return None;
    };
    if ws
        .records(&tasks.records.required)
        .iter()
        .any(|r| r.is_judged(&tasks.records.judge_status))
    {
        return None;
    }
    let mut changes: Map<String, Value> = Map::new();
    let mut post: Map<String, Value> = Map::new();
    let (mut added, mut modified, mut removed) = (Vec::new(), Vec::new(), Vec::new());
    for (path, change) in ws.changes().into_iter().flatten() {
        let list = match change {
            crate::workspace::Change::Added => &mut added,
            crate::workspace::Change::Modified => &mut modified,
            crate::workspace::Change::Removed => &mut removed,
        };
        list.push(Value::String(path.clone()));
        // Hashed as read, never held whole: a change may be larger than a judgment holds.
        let hash = ws.current_digest(path).ok().flatten().map(|d| d.sha256);
        post.insert(path.clone(), hash.map_or(Value::Null, Value::String));
    }
    changes.insert("added".into(), Value::Array(added));
    changes.insert("modified".into(), Value::Array(modified));
    changes.insert("removed".into(), Value::Array(removed));
    let status = tasks
        .records
        .judge_status
        .first()
        .cloned()
        .unwrap_or_else(|| "pending_review".into());
    let make = |attempt: u64| {
        let mut m = Map::new();
        m.insert("task_id".into(), Value::String(task.to_string()));
        m.insert("status".into(), Value::String(status.clone()));
        m.insert("attempt".into(), json!(attempt));
        m.insert(
            "summary".into(),
            Value::String(format!(
                "Here's what I did: every change of this {} session since the referee's baseline, judged at its stop (an implicit attempt made by `referee hook`).",
                agent.name()
            )),
        );
        m.insert("changes".into(), Value::Object(changes.clone()));
        m.insert("post_hashes".into(), Value::Object(post.clone()));
        m
    };
    // The same workspace at a later stop is the attempt judged then, when that attempt let the
    // stop through (a question answered without an edit is no new attempt); after a block, every
    // stop is a new attempt, so the guards see an agent that does not fix anything.
    let store = crate::state::attempts::Store::open(&crate::state::attempts::dir_for(ws.state()?));
    let attempt = match store.last(task) {
        Some(k) => {
            let same = make(k.attempt);
            let passed = tasks.outcome(&k.verdict).lets_through();
            if passed
                && k.record_hash.as_deref() == Some(&crate::state::attempts::record_hash(&same))
            {
                k.attempt
            } else {
                k.attempt + 1
            }
        }
        None => 1,
    };
    let rel = format!(
        "{TASKS_DIR}/{}.json",
        crate::workspace::name::file_stem_for(task)
    );
    let bytes = serde_json::to_vec(&Value::Object(make(attempt))).ok()?;
    Some((rel, bytes))
}

#[cfg(test)]
mod judged_tests {
    use super::*;

    /// A judgment during which the workspace was swapped (a link in its place, then the
    /// folder put back) forgets everything it pinned first, the protected surface and a start
    /// snapshot as surely as the baseline: what it read by path may have been the other
    /// directory's, and kept, it would be the baseline of every later honest stop. What was
    /// pinned before the judgment stays.
    #[test]
    fn a_swap_during_a_judgment_forgets_every_pin_it_made_and_none_made_before() {
        let tmp = tempfile::tempdir().expect("tmp");
        let allowed = tmp.path().join("allowed");
        let ws = allowed.join("ws");
        let state = tmp.path().join("state");
        std::fs::create_dir_all(&ws).expect("mkdir");
        std::fs::create_dir_all(&state).expect("mkdir");
        let allow = confine::Allowed::open(std::slice::from_ref(&allowed)).expect("allow");
        let root = confine::confine(&allow, None, &ws).expect("confined");
        let pins = crate::workspace::baseline::PINNED;
        // Pinned before: the listing (kept whatever happens).
        std::fs::write(state.join(pins[1]), "before").expect("write");
        let out = judged(&root, &state, || {
            for (i, f) in pins.iter().enumerate().filter(|(i, _)| *i != 1) {
                if i % 2 == 0 {
                    std::fs::write(state.join(f), "pinned mid-swap").expect("write");
                } else {
                    std::fs::create_dir_all(state.join(f).join("sub")).expect("mkdir");
                }
            }
            std::fs::rename(&ws, allowed.join("ws.real")).expect("away");
            std::os::unix::fs::symlink(tmp.path(), &ws).expect("link");
            std::fs::remove_file(&ws).expect("unlink");
            std::fs::rename(allowed.join("ws.real"), &ws).expect("back");
            Ok(())
        });
        assert!(out.is_err(), "a swapped workspace is no judgment");
        for (i, f) in pins.iter().enumerate() {
            let kept = std::fs::symlink_metadata(state.join(f)).is_ok();
            assert_eq!(kept, i == 1, "{f}: kept {kept}");
        }
        // Unswapped (the workspace opened anew), what a judgment pins stays.
        let root = confine::confine(&allow, None, &ws).expect("confined");
        let out = judged(&root, &state, || {
            std::fs::write(state.join(pins[0]), "pinned").expect("write");
            Ok(())
        });
        assert!(out.is_ok());
        assert!(state.join(pins[0]).is_file());
    }
}

#[cfg(test)]
mod panic_tests {
    use super::*;

    /// The test itself, run again as a child process with `PLANT` set: what it plants.
    const PLANT: &str = "REFEREE_TEST_PLANT_PANIC";

    /// Runs this test binary again on `test` alone with [`PLANT`] = `plant`: its exit code and
    /// stderr.
    fn child(test: &str, plant: &str) -> (Option<i32>, String) {
        let out = std::process::Command::new(std::env::current_exe().expect("test binary"))
            .args([test, "--exact", "--nocapture", "--test-threads=1"])
            .env(PLANT, plant)
            .output()
            .expect("run the test binary");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }

    /// A panic outside the judging thread ends `referee hook` with exit 2 (every agent's
    /// "blocked"), never Rust's 101 (the agents' non-blocking error: the stop would go
    /// through); a panic on the judging thread leaves the process to answer for it. In a real
    /// process: the test runs itself again with the panic planted.
    #[test]
    fn a_panic_outside_the_judging_thread_exits_2_and_one_inside_it_does_not() {
        const ME: &str =
            "hook::panic_tests::a_panic_outside_the_judging_thread_exits_2_and_one_inside_it_does_not";
        match std::env::var(PLANT).as_deref() {
            Ok("main") => {
                exit_2_on_panic();
                panic!("a planted panic");
            }
            Ok("judging") => {
                exit_2_on_panic();
                let joined = std::thread::Builder::new()
                    .name(JUDGING_THREAD.into())
                    .spawn(|| panic!("a planted panic while judging"))
                    .expect("spawn")
                    .join();
                assert!(joined.is_err(), "the judging thread panicked");
                eprintln!("the process answers for it");
                return;
            }
            _ => {}
        }
        let (code, stderr) = child(ME, "main");
        assert_eq!(code, Some(2), "{stderr}");
        assert!(
            stderr.contains("a planted panic") && stderr.contains("blocked (exit 2), fail closed"),
            "{stderr}"
        );
        let (code, stderr) = child(ME, "judging");
        assert_eq!(code, Some(0), "{stderr}");
        assert!(
            stderr.contains("a planted panic while judging")
                && stderr.contains("the process answers for it")
                && !stderr.contains("fail closed"),
            "{stderr}"
        );
    }
}
