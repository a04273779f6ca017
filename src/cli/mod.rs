//! The command line: clap types, and turning them into plain configuration for the rest of
//! the crate. Each subcommand's handler is a few lines that call into the library; clap
//! types never leave this module.
//!
//! This file holds the clap definitions every command shares (the global flags, the command
//! list, the protocol/read/waiver/rule arguments) and the dispatch; each command's arguments
//! and handler live in a file of its own (`verify`, `watch`, `status`, `hook`, …).

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use clap::{Args, CommandFactory as _, FromArgMatches as _, Parser, Subcommand, ValueEnum};

use crate::exit::ExitCode;
use crate::protocol::Protocol;

mod accept;
mod demo;
mod hook;
mod init;
mod manual;
mod mcp;
mod protocol;
mod replay;
mod serve;
mod status;
mod task;
mod verify;
mod watch;

use accept::AcceptArgs;
use demo::DemoArgs;
use hook::HookArgs;
use init::InitArgs;
use manual::{completions, man};
use mcp::McpArgs;
use protocol::{protocol_command, ProtocolCommand};
use replay::ReplayArgs;
use serve::ServeArgs;
use status::StatusArgs;
use verify::VerifyArgs;
use watch::WatchArgs;

/// An independent referee for AI build pipelines: binary PASS/FAIL checks on the artifacts
/// in a build directory, a STOP file the orchestrator obeys, and a report for humans.
#[derive(Parser, Debug)]
#[command(name = "referee", version, long_version = long_version(), about, long_about = None)]
#[command(
    after_help = "Exit codes: 0 no unresolved BLOCKING failure; 1 a BLOCKING failure \
(or, for `status`, STOP present); 2 the referee could not run; 3 `status --require-live` \
found no live referee; 4 `status --task` not judged yet; 130 a second SIGINT/SIGTERM (no final report).\n\n\
Environment: REFEREE_LOG sets which diagnostics are written (env-filter syntax, e.g. `debug` or \
`referee::engine=trace`; default `info`, `warn` with -q, `debug` with -v); NO_COLOR turns colour \
off unless --color always."
)]
struct Cli {
    #[command(flatten)]
    global: GlobalArgs,
    #[command(subcommand)]
    command: Command,
}

/// `referee --version`: the version, then which source languages this build parses (the cargo
/// features of the syntax check, `+` built, `-` left out), as `rg --version` lists its own.
fn long_version() -> &'static str {
    static TEXT: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TEXT.get_or_init(|| {
        let languages: Vec<String> = referee_syntax::Language::ALL
            .iter()
            .map(|l| format!("{}{}", if l.built() { '+' } else { '-' }, l.feature()))
            .collect();
        format!(
            "{}\nsyntax: {}",
            env!("CARGO_PKG_VERSION"),
            languages.join(" ")
        )
    })
}

/// The help heading of [`GlobalArgs`].
const GLOBAL: &str = "Global options";

/// The flags every command takes (before or after its name).
#[derive(Args, Debug)]
struct GlobalArgs {
    /// Say less: warnings and errors only on stderr, and no progress lines from `watch` and
    /// `replay`. What a command is for still prints (reports, `status`'s answer, the demo's
    /// story).
    #[arg(short, long, global = true, conflicts_with = "verbose", help_heading = GLOBAL)]
    quiet: bool,
    /// Say more on stderr: `-v` debug (each evaluation with its timing), `-vv` trace. `demo -v`
    /// also narrates every change. REFEREE_LOG (env-filter syntax, e.g. `referee=debug`)
    /// overrides -q and -v.
    #[arg(short, long, global = true, action = clap::ArgAction::Count, help_heading = GLOBAL)]
    verbose: u8,
    /// Colour help, errors and diagnostics: `auto` on a terminal unless NO_COLOR is set.
    #[arg(long, value_name = "WHEN", value_enum, global = true, default_value_t = ColorArg::Auto, help_heading = GLOBAL)]
    color: ColorArg,
    /// How the referee's own diagnostics are written on stderr: `text` (`referee: warning: …`)
    /// or `json` (one object a line: timestamp, level, message, fields, target, span).
    #[arg(long, value_name = "FORMAT", value_enum, global = true, default_value_t = LogFormat::Text, help_heading = GLOBAL)]
    log_format: LogFormat,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum ColorArg {
    Auto,
    Always,
    Never,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum LogFormat {
    Text,
    Json,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Run beside a pipeline: watch BUILD_DIR, run passes as they become due, keep
    /// OBSERVER-STOP.md and the pass files current, and write the final report.
    Watch(WatchArgs),
    /// Audit a build directory once, as it stands, and print the report.
    Verify(VerifyArgs),
    /// For an orchestrator at a phase transition: print OBSERVER-STOP.md and exit 1 if it
    /// exists, else print `go` and exit 0 (exit 3 with --require-live and no live referee).
    Status(StatusArgs),
    /// For an orchestrator after `status --task ID` answered 0: accept the task's judged work,
    /// so later tasks are measured against it (code-change). Exit 1, and why, when refused.
    Accept(AcceptArgs),
    /// For an orchestrator: register the tasks it assigned (`task open WORKSPACE ID…`), so a
    /// record of any other task counts for nothing (code-change).
    #[command(subcommand)]
    Task(task::TaskCommand),
    /// Write a starting `--vars` file for a repository: the languages found, and protected
    /// paths suggested from what exists (CI configuration, lock files, build files, the
    /// referee's own configuration); prints the `referee watch` command that uses it.
    Init(InitArgs),
    /// Inspect and validate protocols.
    #[command(subcommand)]
    Protocol(ProtocolCommand),
    /// Write a recorded pipeline run (a timeline) into DIR in its recorded order and timing,
    /// setting each file's mtime to its recorded time.
    Replay(ReplayArgs),
    /// Watch the referee catch a violation live: replays a short D10 run (a hand-entered gate
    /// result raises STOP, a re-run resolves it), or with `code-change` a coding agent's task
    /// attempts, into a new directory while the watch daemon runs on it, and narrates both
    /// sides. Finishes by itself in 10 to 15 s.
    Demo(DemoArgs),
    /// Answer a coding agent's hook (Claude Code, Codex) from its JSON on stdin: every stop
    /// judged, writes to protected paths denied.
    ///
    /// At a stop (`Stop`, `SubagentStop`) the workspace is judged against the referee's baseline
    /// (the state directory's pin, else HEAD pinned at `SessionStart` or the first call); with no
    /// pending task record from the agent, the whole change is one implicit attempt of the task
    /// `<agent>-<session_id>`, kept in memory, never written into the workspace. REJECT blocks the
    /// stop with the failing checks as the reason; the protocol's loop guards (the third REJECT,
    /// or a stop with nothing fixed) ESCALATE: the stop goes through with a message for the
    /// human, the STOP stays in the state directory. `PreToolUse`: a write to a protected path
    /// (Write/Edit/MultiEdit, `apply_patch`, a plain shell write such as `sed -i`) is denied.
    /// `PostToolUse`: a failing check naming the edited file is fed back. Input that cannot be
    /// read: exit 2, the reason on stderr; a stop that cannot be judged is blocked with the
    /// reason (capped like the guards). Snippets: examples/<agent>/; docs/agents.md.
    Hook(HookArgs),
    /// Answer the agents' hooks (`referee hook AGENT --serve SOCKET`) over a Unix socket, as
    /// another user than the agent: the sessions' memory stays in this daemon's state
    /// directory, out of the agent's reach. docs/agents.md.
    Serve(ServeArgs),
    /// Serve read-only tools to an agent over stdio (Model Context Protocol): judge a
    /// directory now, a task's verdict, a check explained, the protected paths, the status.
    Mcp(McpArgs),
    /// Print a shell completion script to stdout (e.g. `referee completions bash >
    /// ~/.local/share/bash-completion/completions/referee`).
    Completions {
        /// The shell to complete in.
        #[arg(value_name = "SHELL")]
        shell: clap_complete::Shell,
    },
    /// Print the manual page (roff) to stdout (e.g. `referee man | man -l -`).
    Man {
        /// A command's own page instead of the main one: `referee man verify`; a nested one
        /// as words or as its page's name (`protocol explain`, `protocol-explain`).
        #[arg(value_name = "COMMAND", num_args = 0..)]
        command: Vec<String>,
    },
}

#[derive(Args, Debug)]
struct ProtocolArg {
    /// An embedded protocol id (`d10`) or the path of a protocol file.
    #[arg(long, value_name = "ID|FILE", default_value = crate::protocol::DEFAULT_ID)]
    protocol: String,
}

/// `--max-read-bytes`'s default, [`crate::artifacts::DEFAULT_MAX_READ_BYTES`] as typed.
const DEFAULT_MAX_READ: &str = "64MiB";

#[derive(Args, Debug)]
struct ReadArgs {
    /// Files larger than this are judged INCONCLUSIVE, never read (`64MiB`, `512KiB`, `10MB`;
    /// a bare number is bytes).
    #[arg(long, value_name = "SIZE", default_value = DEFAULT_MAX_READ, value_parser = crate::size::parse)]
    max_read_bytes: u64,
}

#[derive(Args, Debug)]
struct WaiversArg {
    /// Waive known FAILs: a TOML file of `[[waiver]]` tables (check, pass (optional), reason,
    /// approved_by, expires). A waived FAIL raises no STOP and does not count for exit 1, but
    /// is shown everywhere; an expired waiver is ignored and reported. Refused when FILE lies
    /// inside the watched directory: the pipeline could waive its own failures.
    #[arg(long, value_name = "FILE")]
    waivers: Option<PathBuf>,
}

impl WaiversArg {
    /// The waiver file, refused inside `watched` and read and checked against `p` before
    /// anything runs.
    fn load(&self, p: &Protocol, watched: &Path) -> Result<Option<crate::waivers::Waivers>> {
        Ok(match &self.waivers {
            Some(path) => {
                crate::waivers::Waivers::refuse_inside(path, watched)?;
                Some(crate::waivers::Waivers::load(path, p)?)
            }
            None => None,
        })
    }
}

/// A project's own rules (docs/GUIDE.md "Your project's rules"): applied in this order, the file, then
/// each `--set`, then each `--protect`; the resolved values change the protocol's SHA-256.
#[derive(Args, Debug, Default)]
struct RulesArgs {
    /// Add GLOB to the protected paths (the code-change protocol's `protected` variable): a
    /// worker's change to a matching file is CC-01, REJECT. Repeatable.
    #[arg(long, value_name = "GLOB")]
    protect: Vec<String>,
    /// Replace the protocol variable NAME in every variant: VALUE is TOML when it starts with
    /// `[`, `"` or `'` (`--set 'protected=["ci/**","Makefile"]'`), else a bare string.
    /// Repeatable.
    #[arg(long = "set", value_name = "NAME=VALUE")]
    set: Vec<String>,
    /// Protocol variables from FILE, a TOML file of `NAME = VALUE` lines (`referee init` writes
    /// one). Refused when FILE lies inside the watched directory: the worker could edit it.
    #[arg(long, value_name = "FILE")]
    vars: Option<PathBuf>,
}

impl RulesArgs {
    fn overrides(&self) -> Result<crate::protocol::overrides::Overrides> {
        crate::protocol::overrides::Overrides {
            file: self.vars.clone(),
            set: self.set.clone(),
            protect: self.protect.clone(),
        }
        .resolve_paths()
        .context("cannot resolve the `--vars` path")
    }
}

/// Parses the arguments, sets up logging and runs the command.
pub fn run<I: IntoIterator<Item = OsString>>(args: I) -> Result<ExitCode> {
    let args = bare_poll(args.into_iter().collect());
    // clap colours its help and errors before the parsed `--color` exists: read it first.
    let color = color_arg(&args);
    let mut cmd = Cli::command().color(match color {
        crate::color::Choice::Auto => clap::ColorChoice::Auto,
        crate::color::Choice::Always => clap::ColorChoice::Always,
        crate::color::Choice::Never => clap::ColorChoice::Never,
    });
    let parsed = cmd.try_get_matches_from_mut(args).and_then(|m| {
        let name = m.subcommand_name().unwrap_or_default().to_string();
        Cli::from_arg_matches(&m)
            .map(|cli| (cli, name))
            .map_err(|e| e.format(&mut cmd))
    });
    let (cli, name) = match parsed {
        Ok(parsed) => parsed,
        Err(e) => {
            let code = if e.use_stderr() {
                ExitCode::Error
            } else {
                ExitCode::Ok
            };
            let _ = e.print();
            return Ok(code);
        }
    };
    let g = &cli.global;
    crate::logging::init(
        &crate::logging::Config {
            format: match g.log_format {
                LogFormat::Text => crate::logging::Format::Text,
                LogFormat::Json => crate::logging::Format::Json,
            },
            verbosity: crate::logging::Verbosity::from_flags(g.quiet, g.verbose),
            color: crate::color::enabled(
                color,
                crate::color::Env::current(),
                std::io::IsTerminal::is_terminal(&std::io::stderr()),
            ),
        },
        std::env::var(crate::logging::ENV).ok().as_deref(),
    );
    tracing::debug!(
        version = env!("CARGO_PKG_VERSION"),
        command = name,
        "starting"
    );
    let g = cli.global;
    match cli.command {
        Command::Watch(a) => watch::watch(a, &g),
        Command::Verify(a) => verify::verify(a),
        Command::Status(a) => status::status(a),
        Command::Accept(a) => accept::accept(a),
        Command::Task(c) => task::task(c),
        Command::Init(a) => init::init(a),
        Command::Protocol(p) => protocol_command(p),
        Command::Replay(a) => replay::replay(a, &g),
        Command::Demo(a) => demo::demo(a, &g),
        Command::Hook(a) => hook::hook(a),
        Command::Serve(a) => serve::serve(a),
        Command::Mcp(a) => mcp::mcp(a),
        Command::Completions { shell } => completions(shell),
        Command::Man { command } => man(&command),
    }
}

/// The `--color` choice among `args` (the last one given, up to `--`); `auto` if none or not
/// a known value (clap then says what is wrong with it).
fn color_arg(args: &[OsString]) -> crate::color::Choice {
    let mut choice = crate::color::Choice::Auto;
    let mut it = args.iter().skip(1).map(|a| a.to_str().unwrap_or(""));
    while let Some(a) = it.next() {
        let value = match a {
            "--" => break,
            "--color" => it.next().unwrap_or(""),
            _ => match a.strip_prefix("--color=") {
                Some(v) => v,
                None => continue,
            },
        };
        choice = match value {
            "always" => crate::color::Choice::Always,
            "never" => crate::color::Choice::Never,
            _ => crate::color::Choice::Auto,
        };
    }
    choice
}

/// `watch --poll` takes an optional value both as `--poll=200` and as `--poll 200`; so that a
/// bare `--poll` before the build directory (`watch --poll DIR`) does not take DIR as its
/// value, a `--poll` whose next argument is not a duration is given its default here.
fn bare_poll(mut args: Vec<OsString>) -> Vec<OsString> {
    let mut i = 1;
    while i < args.len() {
        if args[i] == "--" {
            break;
        }
        if args[i] == "--poll" {
            let next = args.get(i + 1).and_then(|a| a.to_str());
            let is_value = next
                .is_some_and(|n| !n.starts_with('-') && crate::duration::parse_millis(n).is_ok());
            if !is_value && next.is_some_and(|n| !n.starts_with('-')) {
                args[i] = OsString::from(format!("--poll={DEFAULT_POLL}"));
            }
        }
        i += 1;
    }
    args
}

/// `--poll`'s interval when it is given without one.
const DEFAULT_POLL: &str = "200";

fn load_protocol(spec: &str) -> Result<Protocol> {
    Ok(Protocol::load(spec)?)
}

/// The protocol a run judges `dir` by: with `--secrets FILE`, CC-07's rules from the file, and
/// the project's overrides of its variables; every rule file it reads must lie outside `dir`
/// (the worker could edit it).
fn load_protocol_for(
    spec: &str,
    secrets: Option<&Path>,
    overrides: &crate::protocol::overrides::Overrides,
    dir: &Path,
) -> Result<Protocol> {
    let secrets = secrets
        .map(std::path::absolute)
        .transpose()
        .context("cannot resolve the `--secrets` path")?;
    // Refused before it is read: nothing from inside the watched directory is believed.
    if let Some(file) = &overrides.file {
        crate::protocol::overrides::refuse_inside(file, dir).map_err(anyhow::Error::msg)?;
    }
    let protocol = Protocol::load_with(spec, secrets.as_deref(), overrides)?;
    for file in protocol.secret_files() {
        crate::protocol::secrets::refuse_inside(&file, dir).map_err(|e| anyhow::anyhow!(e))?;
    }
    Ok(protocol)
}

fn print(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| {
        if text.ends_with('\n') {
            Ok(())
        } else {
            out.write_all(b"\n")
        }
    }) {
        // A closed pipe (`referee verify … | head`) is not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}
