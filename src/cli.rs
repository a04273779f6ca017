//! The command line: clap types, and turning them into plain configuration for the rest of
//! the crate. Each subcommand's handler is a few lines that call into the library; clap
//! types never leave this module.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use clap::{Args, CommandFactory as _, FromArgMatches as _, Parser, Subcommand, ValueEnum};

use crate::engine;
use crate::exit::ExitCode;
use crate::judge;
use crate::outputs::{self, markdown, Context};
use crate::protocol::{self, Protocol};

/// An independent referee for AI build pipelines: binary PASS/FAIL checks on the artifacts
/// in a build directory, a STOP file the orchestrator obeys, and a report for humans.
#[derive(Parser, Debug)]
#[command(name = "referee", version, about, long_about = None)]
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
    /// reason (capped like the guards). Snippets: examples/claude-code/, examples/codex/; README
    /// "Agent hooks".
    Hook(HookArgs),
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
    #[arg(long, value_name = "ID|FILE", default_value = protocol::DEFAULT_ID)]
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
    /// is shown everywhere; an expired waiver is ignored and reported.
    #[arg(long, value_name = "FILE")]
    waivers: Option<PathBuf>,
}

impl WaiversArg {
    /// The waiver file, read and checked against `p` before anything runs.
    fn load(&self, p: &Protocol) -> Result<Option<crate::waivers::Waivers>> {
        Ok(match &self.waivers {
            Some(path) => Some(crate::waivers::Waivers::load(path, p)?),
            None => None,
        })
    }
}

/// A project's own rules (README "Your project's rules"): applied in this order, the file, then
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
    fn overrides(&self) -> Result<protocol::overrides::Overrides> {
        protocol::overrides::Overrides {
            file: self.vars.clone(),
            set: self.set.clone(),
            protect: self.protect.clone(),
        }
        .resolve_paths()
        .context("cannot resolve the `--vars` path")
    }
}

#[derive(Args, Debug)]
struct VerifyArgs {
    /// The pipeline's build output directory.
    build_dir: PathBuf,
    #[command(flatten)]
    protocol: ProtocolArg,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Md)]
    format: Format,
    /// Treat every check as due (and every non-optional pass as run): judge a finished run.
    #[arg(long = "final")]
    final_: bool,
    /// Also write OBSERVER-PASS-N.md for each pass that ran and OBSERVER-REPORT.md into
    /// BUILD_DIR (atomically). Without it, verify writes nothing. It never writes
    /// OBSERVER-STOP.md: only the live `watch` daemon owns the STOP file, and while one watches
    /// BUILD_DIR, --write is refused (exit 2).
    #[arg(long)]
    write: bool,
    #[command(flatten)]
    read: ReadArgs,
    #[command(flatten)]
    waivers: WaiversArg,
    /// Code-change protocol: the git revision the workspace is measured against (default:
    /// `HEAD` in a git work tree).
    #[arg(long, value_name = "REV", conflicts_with = "baseline_dir")]
    baseline: Option<String>,
    /// Code-change protocol: a pristine copy of the workspace to measure against (for a
    /// workspace that is not a git work tree).
    #[arg(long, value_name = "DIR")]
    baseline_dir: Option<PathBuf>,
    /// Code-change protocol: CC-07's secret rules from FILE instead of the protocol's (in the
    /// format of the embedded rules, documented in the README). Refused when FILE lies inside
    /// the watched directory: the worker could edit it.
    #[arg(long, value_name = "FILE")]
    secrets: Option<PathBuf>,
    #[command(flatten)]
    rules: RulesArgs,
    /// The referee's own memory (event log, heartbeat, STOP, verdicts, kept attempts), kept
    /// out of the watched directory's reach (created 0700; a symlink, a directory of another
    /// user or one others can write is refused). Default:
    /// `$XDG_STATE_HOME/referee/<name>-<hash>` (else `~/.local/state/referee/…`), named from the
    /// directory's canonical path and identity.
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct HookArgs {
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
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// The OBSERVER-REPORT.md format.
    Md,
    /// One JSON object, schema `referee.verify/1` (see README).
    Json,
    /// JUnit XML: a testcase per check instance (FAIL failure, WAITING/SKIP skipped,
    /// INCONCLUSIVE error).
    Junit,
    /// SARIF 2.1.0, for code scanning (BLOCKING error, SIGNIFICANT warning).
    Sarif,
    /// GitHub Actions workflow commands (`::error file=…,line=…::…`).
    Github,
}

/// The report in `format`; `base` is the build directory as the user named it.
fn render(
    format: Format,
    p: &Protocol,
    eval: &engine::Evaluation,
    ctx: &Context,
    base: &Path,
    md: impl FnOnce() -> String,
) -> String {
    match format {
        Format::Md => md(),
        Format::Json => outputs::json::render(p, eval, ctx),
        Format::Junit => outputs::junit::render(p, eval, ctx),
        Format::Sarif => outputs::sarif::render(p, eval, ctx),
        Format::Github => outputs::github::render(p, eval, ctx, base),
    }
}

#[derive(Subcommand, Debug)]
enum ProtocolCommand {
    /// List the embedded protocols.
    List,
    /// Print a protocol's source (embedded id or file); with `--protect`/`--set`/`--vars`,
    /// followed by the variables as they resolve.
    Show {
        /// An embedded protocol id (`d10`) or the path of a protocol file.
        #[arg(value_name = "ID|FILE", default_value = protocol::DEFAULT_ID)]
        protocol: String,
        #[command(flatten)]
        rules: RulesArgs,
    },
    /// Validate a protocol (a file, or an embedded id); errors point at file:line:column.
    Check {
        /// The path of a protocol file, or an embedded protocol id (`d10`); a file of that
        /// name wins.
        #[arg(value_name = "FILE|ID")]
        protocol: String,
    },
    /// Print a protocol's SHA-256 (what `watch` records and `status --expect-protocol` pins).
    Hash {
        /// An embedded protocol id (`d10`) or the path of a protocol file.
        #[arg(value_name = "ID|FILE", default_value = protocol::DEFAULT_ID)]
        protocol: String,
        /// As given to `watch`: the hash covers the resolved variables.
        #[command(flatten)]
        rules: RulesArgs,
    },
    /// Run a protocol's fixtures (a case per sub-directory of DIR); exit 1 on any mismatch.
    ///
    /// Each case holds `expect.toml` (`[checks]` CHECK-ID = "PASS"|"FAIL"|…, and optional
    /// `stop`, `verdict`, `final`) and `build/` (the build directory's files). Prints a line per
    /// case and, for a case that differs, a diff of its expect.toml lines with the evidence.
    Test {
        /// The directory of cases.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        /// The protocol file (or embedded id) to test; default `DIR/protocol.toml`.
        #[arg(long, value_name = "FILE|ID")]
        protocol: Option<String>,
    },
    /// Explain one check: what it reads, when it is due, what makes it PASS/FAIL/WAIT.
    Explain {
        /// The check's id (`OBS-07`, `CC-05`).
        #[arg(value_name = "CHECK-ID")]
        check: String,
        /// An embedded protocol id (`d10`) or the path of a protocol file; by default the
        /// embedded protocol that has the check.
        #[arg(long, value_name = "ID|FILE")]
        protocol: Option<String>,
    },
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
        Command::Watch(a) => watch(a, &g),
        Command::Verify(a) => verify(a),
        Command::Status(a) => status(a),
        Command::Init(a) => init(a),
        Command::Protocol(p) => protocol_command(p),
        Command::Replay(a) => replay(a, &g),
        Command::Demo(a) => demo(a, &g),
        Command::Hook(a) => hook(a),
        Command::Mcp(a) => mcp(a),
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

fn completions(shell: clap_complete::Shell) -> Result<ExitCode> {
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "referee", &mut buf);
    print(&String::from_utf8_lossy(&buf))?;
    Ok(ExitCode::Ok)
}

/// The subcommand `path` names (`protocol-explain`: names joined with `-`), from `cmd` down.
fn find_subcommand<'c>(cmd: &'c clap::Command, path: &str) -> Option<&'c clap::Command> {
    cmd.get_subcommands().find_map(|sub| {
        let name = sub.get_name();
        if path == name {
            return Some(sub);
        }
        let rest = path.strip_prefix(name)?.strip_prefix('-')?;
        find_subcommand(sub, rest)
    })
}

/// Every subcommand path under `cmd`, depth first (`protocol`, `protocol list`, …).
fn subcommand_paths(cmd: &clap::Command, prefix: &str, out: &mut Vec<String>) {
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let path = format!("{prefix}{}", sub.get_name());
        out.push(path.clone());
        subcommand_paths(sub, &format!("{path} "), out);
    }
}

fn man(command: &[String]) -> Result<ExitCode> {
    let mut cmd = Cli::command();
    cmd.build();
    let page = if command.is_empty() {
        cmd
    } else {
        let words: Vec<&str> = command.iter().flat_map(|w| w.split_whitespace()).collect();
        let name = words.join("-");
        match find_subcommand(&cmd, &name) {
            Some(sub) => sub
                .clone()
                .display_name(format!("referee-{name}"))
                .version(env!("CARGO_PKG_VERSION")),
            None => {
                let mut all = Vec::new();
                subcommand_paths(&cmd, "", &mut all);
                bail!(
                    "no command `{}` (commands: {})",
                    words.join(" "),
                    all.join(", ")
                )
            }
        }
    };
    let mut buf = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut buf)
        .context("cannot render the manual page")?;
    print(&String::from_utf8_lossy(&buf))?;
    Ok(ExitCode::Ok)
}

fn load_protocol(spec: &str) -> Result<Protocol> {
    Ok(Protocol::load(spec)?)
}

/// The protocol a run judges `dir` by: with `--secrets FILE`, CC-07's rules from the file, and
/// the project's overrides of its variables; every rule file it reads must lie outside `dir`
/// (the worker could edit it).
fn load_protocol_for(
    spec: &str,
    secrets: Option<&Path>,
    overrides: &protocol::overrides::Overrides,
    dir: &Path,
) -> Result<Protocol> {
    let secrets = secrets
        .map(std::path::absolute)
        .transpose()
        .context("cannot resolve the `--secrets` path")?;
    // Refused before it is read: nothing from inside the watched directory is believed.
    if let Some(file) = &overrides.file {
        protocol::overrides::refuse_inside(file, dir).map_err(anyhow::Error::msg)?;
    }
    let protocol = Protocol::load_with(spec, secrets.as_deref(), overrides)?;
    for file in protocol.secret_files() {
        protocol::secrets::refuse_inside(&file, dir).map_err(|e| anyhow::anyhow!(e))?;
    }
    Ok(protocol)
}

fn verify(a: VerifyArgs) -> Result<ExitCode> {
    // One thread: listing the directory beside the protocol load, or compiling patterns
    // beside the judging, cost a small build about as much as it saved (threads are not
    // free on a shared 2-core machine); the large-report scans split across cores instead.
    let protocol = load_protocol_for(
        &a.protocol.protocol,
        a.secrets.as_deref(),
        &a.rules.overrides()?,
        &a.build_dir,
    )?;
    let waivers = a.waivers.load(&protocol)?;
    let req = judge::Request {
        dir: &a.build_dir,
        max_read_bytes: a.read.max_read_bytes,
        final_: a.final_,
        state_dir: a.state_dir.as_deref(),
        baseline: a.baseline.as_deref(),
        baseline_dir: a.baseline_dir.as_deref(),
        write: a.write,
    };
    let judgment = judge::judge(&req, &protocol, waivers.as_ref())?;
    let text = match &judgment {
        judge::Judgment::Build(b) => {
            render(a.format, &protocol, &b.eval, &b.ctx, &a.build_dir, || {
                markdown::report(&protocol, &b.eval, &b.ctx)
            })
        }
        judge::Judgment::Workspace(w) => {
            use crate::outputs::code_change;
            match a.format {
                Format::Json => code_change::verify_json(
                    &protocol,
                    &w.ws,
                    &w.eval,
                    &w.runs,
                    &w.verdicts,
                    &w.ctx,
                ),
                f => render(f, &protocol, &w.eval, &w.ctx, &a.build_dir, || {
                    code_change::report_md(&protocol, &w.ws, &w.eval, &w.runs, &w.verdicts, &w.ctx)
                }),
            }
        }
    };
    print(&text)?;
    let code = if judgment.violation(&protocol) {
        ExitCode::Violation
    } else {
        ExitCode::Ok
    };
    // The process ends here: freeing tens of thousands of entries one by one would only
    // cost time (a tenth of a large build's run), so leave that to the OS.
    std::mem::forget(judgment);
    std::mem::forget(protocol);
    Ok(code)
}

fn hook(a: HookArgs) -> Result<ExitCode> {
    use std::io::Read as _;
    let cfg = crate::hook::Config {
        agent: match a.agent {
            HookAgent::ClaudeCode => crate::hook::Agent::ClaudeCode,
            HookAgent::Codex => crate::hook::Agent::Codex,
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

fn protocol_command(c: ProtocolCommand) -> Result<ExitCode> {
    match c {
        ProtocolCommand::List => {
            let mut s = String::new();
            for (id, _, _) in protocol::EMBEDDED {
                let p = load_protocol(id)?;
                // Counted, never written by hand (a description once said 11 BLOCKING of 15).
                let blocking = p
                    .checks()
                    .iter()
                    .filter(|c| c.severity == protocol::Severity::Blocking)
                    .count();
                s.push_str(&format!(
                    "{}\t{}\t{} passes, {} checks ({blocking} BLOCKING)\t{}\n",
                    p.id,
                    p.version,
                    p.passes.len(),
                    p.checks().len(),
                    p.title
                ));
            }
            print(&s)?;
        }
        ProtocolCommand::Show { protocol, rules } => {
            let p = Protocol::load_with(&protocol, None, &rules.overrides()?)?;
            let mut text = p.text.clone();
            if !p.overrides.is_empty() {
                text.push_str(&format!("\n# ---- overridden (sha256 {}) ----\n", p.sha256));
                for line in protocol::overrides::describe(&p.overrides) {
                    text.push_str(&format!("# {line}\n"));
                }
            }
            print(&text)?;
        }
        ProtocolCommand::Hash { protocol, rules } => {
            let p = Protocol::load_with(&protocol, None, &rules.overrides()?)?;
            print(&format!("{}\n", p.sha256))?;
        }
        ProtocolCommand::Check { protocol } => {
            let path = Path::new(&protocol);
            let p = if path.exists() {
                Protocol::load_file(path)?
            } else {
                load_protocol(&protocol)?
            };
            let instances: usize = p.passes.iter().map(|x| x.checks.len()).sum();
            print(&format!(
                "{}: ok: protocol `{}` {} — {} passes, {} checks, {} check instances (sha256 {})",
                protocol,
                p.id,
                p.version,
                p.passes.len(),
                p.checks().len(),
                instances,
                p.sha256
            ))?;
        }
        ProtocolCommand::Test { dir, protocol } => {
            let p = match protocol {
                Some(spec) => load_protocol(&spec)?,
                None => Protocol::load_file(&dir.join("protocol.toml"))?,
            };
            let results = crate::protocol_test::run(&p, &dir)?;
            print(&crate::protocol_test::render(&results))?;
            if results.iter().any(|r| !r.ok()) {
                return Ok(ExitCode::Violation);
            }
        }
        ProtocolCommand::Explain { check, protocol } => {
            let (_, text) = protocol::explain::lookup(protocol.as_deref(), &check)
                .map_err(anyhow::Error::msg)?;
            print(&text)?;
        }
    }
    Ok(ExitCode::Ok)
}

#[derive(Args, Debug)]
struct InitArgs {
    /// The repository (default: the current directory).
    #[arg(value_name = "DIR", default_value = ".")]
    dir: PathBuf,
    /// Write the file here instead of stdout; refused inside DIR (the worker could edit it).
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Overwrite `--output` when it exists.
    #[arg(long, requires = "output")]
    force: bool,
}

fn init(a: InitArgs) -> Result<ExitCode> {
    print(&crate::init::run(&crate::init::Options {
        dir: a.dir,
        output: a.output,
        force: a.force,
    })?)?;
    Ok(ExitCode::Ok)
}

#[derive(Args, Debug)]
struct McpArgs {
    /// What `judge` uses when a call names no protocol (default `d10`): an embedded id or a
    /// protocol file. Calls themselves may name embedded protocols only.
    #[arg(long, value_name = "ID|FILE")]
    protocol: Option<String>,
    /// The referee's state directory of the directory the calls judge (as `watch
    /// --state-dir`); default: the one `watch` uses for each directory.
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Refuse every directory outside DIR (symlinks resolved); relative paths in calls are
    /// taken from DIR.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    #[command(flatten)]
    read: ReadArgs,
}

fn mcp(a: McpArgs) -> Result<ExitCode> {
    if let Some(spec) = &a.protocol {
        load_protocol(spec)?;
    }
    let cfg = crate::mcp::Config::new(
        a.protocol,
        a.state_dir,
        a.root.as_deref(),
        a.read.max_read_bytes,
    )
    .map_err(anyhow::Error::msg)?;
    crate::mcp::serve(cfg)?;
    Ok(ExitCode::Ok)
}

#[derive(Args, Debug)]
struct ReplayArgs {
    /// A timeline file (`fixtures/timelines/*.toml`) or an embedded one (`demo`, `clean`).
    #[arg(value_name = "TIMELINE")]
    timeline: String,
    /// The directory to write into (created if missing); nothing is written outside it.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Play X times faster than recorded; 0 writes everything without waiting.
    #[arg(long, value_name = "X", default_value_t = 1.0)]
    speed: f64,
    /// Play only the steps recorded at or after this offset (e.g. `49m`).
    #[arg(long, value_name = "OFFSET")]
    from: Option<String>,
    /// Play only the steps recorded before this offset (e.g. `49m`: a run stopped in Phase 3A).
    #[arg(long, value_name = "OFFSET")]
    until: Option<String>,
}

fn replay(a: ReplayArgs, g: &GlobalArgs) -> Result<ExitCode> {
    let timeline = crate::replay::Timeline::load(&a.timeline)?;
    let offset = |s: &Option<String>| -> Result<_> {
        s.as_deref()
            .map(crate::replay::parse_offset)
            .transpose()
            .map_err(anyhow::Error::msg)
    };
    let opts = crate::replay::PlayOptions {
        speed: a.speed,
        from: offset(&a.from)?,
        until: offset(&a.until)?,
        ..Default::default()
    };
    crate::replay::play(&timeline, &a.dir, &opts, |played| {
        if !g.quiet && print(&crate::replay::line(played)).is_err() {
            return std::ops::ControlFlow::Break(());
        }
        std::ops::ControlFlow::Continue(())
    })?;
    Ok(ExitCode::Ok)
}

// ---- watch and status -----------------------------------------------------------------------

#[derive(Args, Debug)]
struct WatchArgs {
    /// The pipeline's build output directory.
    #[arg(required_unless_present = "root")]
    build_dir: Option<PathBuf>,
    /// Referee every build directory under ROOT in one process: each immediate subdirectory
    /// (and each one created later; hidden ones and symlinks are skipped) gets the files a
    /// single `watch` would give it. A build's report is written when it completes, the rest
    /// at SIGINT/SIGTERM or `--timeout`; the exit code is the worst of all builds.
    #[arg(long, value_name = "ROOT", conflicts_with_all = ["build_dir", "exit_with"])]
    root: Option<PathBuf>,
    #[command(flatten)]
    protocol: ProtocolArg,
    /// Poll the directory every INTERVAL (default 200 ms; `500ms`, `2s`; a bare number is
    /// milliseconds) instead of using OS notifications (for network filesystems). Polling is
    /// also the automatic fallback when notifications are unavailable.
    #[arg(long, value_name = "INTERVAL", num_args = 0..=1, default_missing_value = DEFAULT_POLL, value_parser = crate::duration::parse_millis)]
    poll: Option<std::time::Duration>,
    /// Finish (judging every check as due) when the pipeline's process PID exits. A PID that
    /// does not exist at start is an error (exit 2): nothing is judged or written.
    #[arg(long, value_name = "PID")]
    exit_with: Option<i32>,
    /// Finish after this long, judging the directory as it stands (e.g. `90s`, `30m`, `2h`).
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::parse)]
    timeout: Option<std::time::Duration>,
    /// What to do when the referee itself cannot scan, evaluate or write its files: `stop`
    /// writes a STOP block naming the fault; `continue` records it and goes on.
    #[arg(long, value_enum, default_value_t = OnFault::Stop)]
    on_fault: OnFault,
    /// Fix attempts on a failing BLOCKING check before its STOP says `ESCALATED: human review
    /// required` (an attempt whose evidence is unchanged escalates at once).
    #[arg(long, value_name = "N", default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
    max_fix_attempts: u32,
    /// Time between writes of OBSERVER-HEARTBEAT.json (`2s`, `500ms`; a bare number is
    /// seconds).
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = parse_heartbeat)]
    heartbeat: std::time::Duration,
    /// A failure resting on a file changed less than DURATION ago is held until the file is
    /// quiet (a half-written file is not judged). `300ms`, `1s`; a bare number is milliseconds.
    #[arg(long, value_name = "DURATION", default_value = "300ms", value_parser = crate::duration::parse_millis)]
    settle: std::time::Duration,
    /// The longest a file still being written holds judgment back: one changing for DURATION
    /// (rewritten faster than `--settle`) is judged as it stands, so a churning file cannot
    /// hold a task record or a result back forever. `2s`, `1500ms`; a bare number is
    /// milliseconds (as for `--settle`).
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = crate::duration::parse_millis)]
    settle_max: std::time::Duration,
    /// Start a new OBSERVER-EVENTS.jsonl instead of resuming (the old log is moved aside to
    /// OBSERVER-EVENTS-<time>.jsonl, never deleted).
    #[arg(long)]
    fresh: bool,
    #[command(flatten)]
    read: ReadArgs,
    /// As for `verify`; the file is looked at again at each heartbeat and reloaded when it
    /// changes (an event in OBSERVER-EVENTS.jsonl): a STOP held only by a now-waived FAIL is
    /// resolved, and raised again when its waiver expires or is removed.
    #[arg(long, value_name = "FILE")]
    waivers: Option<PathBuf>,
    /// Code-change protocol: the git revision the workspace is measured against (default:
    /// `HEAD` in a git work tree).
    #[arg(long, value_name = "REV", conflicts_with_all = ["baseline_dir", "root"])]
    baseline: Option<String>,
    /// Code-change protocol: a pristine copy of the workspace to measure against (otherwise,
    /// outside a git work tree, a snapshot taken at start and kept in the state directory).
    #[arg(long, value_name = "DIR", conflicts_with = "root")]
    baseline_dir: Option<PathBuf>,
    /// Code-change protocol: CC-07's secret rules from FILE instead of the protocol's (in the
    /// format of the embedded rules, documented in the README). Refused when FILE lies inside
    /// the watched directory: the worker could edit it.
    #[arg(long, value_name = "FILE")]
    secrets: Option<PathBuf>,
    #[command(flatten)]
    rules: RulesArgs,
    /// The referee's own memory (event log, heartbeat, STOP, verdicts, kept attempts), kept
    /// out of the watched directory's reach (created 0700; a symlink, a directory of another
    /// user or one others can write is refused). With `--root`, each build gets `DIR/<name>-<hash>`. Default:
    /// `$XDG_STATE_HOME/referee/<name>-<hash>` (else `~/.local/state/referee/…`), named from the
    /// directory's canonical path and identity.
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum OnFault {
    Stop,
    Continue,
}

fn parse_heartbeat(s: &str) -> Result<std::time::Duration, String> {
    let d = crate::duration::parse(s).map_err(|e| e.to_string())?;
    if d < crate::status::MIN_INTERVAL {
        return Err(format!("heartbeat `{s}` is too short (at least 0.05 s)"));
    }
    // `status` believes no heartbeat interval longer than this: a referee beating less often
    // could never be live.
    if d > crate::status::MAX_INTERVAL {
        return Err(format!("heartbeat `{s}` is too long (at most 1d)"));
    }
    Ok(d)
}

#[derive(Args, Debug)]
struct StatusArgs {
    /// The pipeline's build output directory.
    build_dir: PathBuf,
    /// Exit 3 unless a live referee watches this very directory: its heartbeat is fresh, sane,
    /// not finished or faulted, written for this directory (same identity and path), and its
    /// process runs (the same process: a recycled pid is not live).
    #[arg(long)]
    require_live: bool,
    /// A heartbeat older than DURATION is stale (default: 3 × its interval, or 10s; a bare
    /// number is seconds).
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::parse)]
    stale: Option<std::time::Duration>,
    /// Answer for one task of a task protocol (code-change): 0 when its latest attempt is judged
    /// good (a final verdict, or the cleanup grade's) and no STOP stands; 1 when it is judged
    /// bad (REJECT, ESCALATE*) or a STOP stands; 4 when it is not judged yet. Run it before
    /// accepting an attempt: plain `status` says go for a REJECT that raised no STOP.
    #[arg(long, value_name = "ID")]
    task: Option<String>,
    /// With `--task`: wait up to DURATION for the verdict to appear (`30s`; default 0). With
    /// `--sync`: wait up to DURATION for the referee to catch up (default 30s; then exit 3).
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::parse)]
    wait: Option<std::time::Duration>,
    /// First wait until the live referee has judged every file written before this call (a
    /// barrier queued behind the pipeline's own file events: a token file `OBSERVER-SYNC-*` is
    /// put in the build directory and removed, and the referee acknowledges it in its state
    /// directory), then answer. Exit 3 when no live referee catches up within `--wait`. For a
    /// build directory; for a task use `--task ID --wait`.
    #[arg(long)]
    sync: bool,
    /// Exit 1 unless the live referee runs the protocol with this SHA-256 (`referee protocol
    /// hash ID|FILE` prints it; a prefix of 12+ hex digits will do): a referee restarted with
    /// other rules is refused.
    #[arg(long, value_name = "SHA256")]
    expect_protocol: Option<String>,
    /// Exit 1 unless the live referee runs with the waiver file whose bytes have this SHA-256
    /// (`sha256sum FILE`), or, with `none`, without waivers.
    #[arg(long, value_name = "SHA256|none")]
    expect_waivers: Option<String>,
    /// Print how the referee was started (pid, protocol and waiver hashes, `--fresh`) before
    /// the answer, for an orchestrator to pin.
    #[arg(long)]
    show_run: bool,
    /// With `--task`: the protocol whose verdict names count as good (default: code-change).
    #[arg(long, value_name = "ID|FILE", requires = "task")]
    protocol: Option<String>,
    /// The referee's own memory (event log, heartbeat, STOP, verdicts, kept attempts), kept
    /// out of the watched directory's reach (created 0700; a symlink, a directory of another
    /// user or one others can write is refused). Default:
    /// `$XDG_STATE_HOME/referee/<name>-<hash>` (else `~/.local/state/referee/…`), named from the
    /// directory's canonical path and identity.
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
}

fn watch(a: WatchArgs, g: &GlobalArgs) -> Result<ExitCode> {
    // SIGINT/SIGTERM become a request to finish, so the daemon can write its final report.
    let shutdown = crate::daemon::signals::listen_for_termination()
        .context("cannot set up SIGINT/SIGTERM handling")?;
    let mut config = crate::daemon::Config::new(a.build_dir.clone().unwrap_or_default());
    config.overrides = a.rules.overrides()?;
    if a.secrets.is_some()
        || a.protocol.protocol != protocol::DEFAULT_ID
        || !config.overrides.is_empty()
    {
        // Checked before anything runs (exit 2): the rule files load and lie outside what is
        // watched.
        let watched = a.root.as_ref().or(a.build_dir.as_ref());
        if let Some(dir) = watched {
            load_protocol_for(
                &a.protocol.protocol,
                a.secrets.as_deref(),
                &config.overrides,
                dir,
            )?;
        }
        config.secrets = a
            .secrets
            .as_deref()
            .map(std::path::absolute)
            .transpose()
            .context("cannot resolve the `--secrets` path")?;
    }
    if let Some(file) = &a.waivers {
        // Checked before anything runs: a bad file is exit 2 at its line and column.
        let protocol = load_protocol(&a.protocol.protocol)?;
        config.waivers = Some(crate::waivers::Waivers::load(file, &protocol)?);
    }
    config.protocol = a.protocol.protocol;
    config.watch = match a.poll {
        Some(every) => crate::fsevents::Mode::Poll(every.max(std::time::Duration::from_millis(10))),
        None => crate::fsevents::Mode::Native,
    };
    config.exit_with = a.exit_with;
    config.timeout = a.timeout;
    config.on_fault = match a.on_fault {
        OnFault::Stop => crate::daemon::FaultPolicy::Stop,
        OnFault::Continue => crate::daemon::FaultPolicy::Continue,
    };
    config.max_fix_attempts = a.max_fix_attempts;
    config.heartbeat = a.heartbeat;
    config.settle = a.settle;
    config.settle_max = a.settle_max;
    config.fresh = a.fresh;
    config.quiet = g.quiet;
    config.limits = crate::artifacts::Limits {
        max_read_bytes: a.read.max_read_bytes,
        ..config.limits
    };
    config.baseline = match (a.baseline, a.baseline_dir) {
        (Some(rev), _) => crate::workspace::BaselineSpec::Rev(rev),
        (None, Some(dir)) => crate::workspace::BaselineSpec::Dir(dir),
        (None, None) => crate::workspace::BaselineSpec::Auto,
    };
    config.state_dir = a.state_dir;
    match a.root {
        Some(root) => Ok(crate::daemon::run_root(root, config, Some(shutdown))?.exit),
        None => Ok(crate::daemon::run(config, Some(shutdown))?.exit),
    }
}

fn status(a: StatusArgs) -> Result<ExitCode> {
    if a.wait.is_some() && a.task.is_none() && !a.sync {
        bail!("`--wait` applies to `--task ID` or `--sync`");
    }
    let sync = a
        .sync
        .then(|| a.wait.unwrap_or(std::time::Duration::from_secs(30)));
    let task = match a.task {
        Some(id) => {
            let p = load_protocol(a.protocol.as_deref().unwrap_or("code-change"))?;
            let go = crate::status::go_verdicts(&p);
            Some(crate::status::TaskQuery {
                id,
                wait: a.wait.unwrap_or_default(),
                go,
            })
        }
        None => None,
    };
    let answer = crate::status::status(&crate::status::Config {
        build_dir: a.build_dir,
        state_dir: a.state_dir,
        require_live: a.require_live,
        stale: a.stale,
        task,
        expect_protocol: a.expect_protocol,
        expect_waivers: a.expect_waivers,
        show_run: a.show_run,
        sync,
    })?;
    match &answer.note {
        Some(crate::status::Note::Info(text)) => tracing::info!("{text}"),
        Some(crate::status::Note::Warning(text)) => tracing::warn!("{text}"),
        Some(crate::status::Note::Error(text)) => tracing::error!("{text}"),
        None => {}
    }
    if !answer.stdout.is_empty() {
        print(&answer.stdout)?;
    }
    Ok(answer.code)
}

#[derive(Args, Debug)]
struct DemoArgs {
    /// Which run to show: a D10 page build, or a coding agent's task attempts under the
    /// code-change protocol (about 10 s).
    #[arg(value_enum, default_value_t = DemoRun::D10)]
    run: DemoRun,
    /// Play X times faster than recorded (the run lasts about 15 s at 1); 0: no pauses.
    #[arg(long, value_name = "X", default_value_t = 1.0)]
    speed: f64,
    /// Play into DIR (created; must be empty) instead of a new temporary directory.
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
    /// The referee's state directory (default: beside the demo's directory, or, with
    /// `--keep`, the default of `watch`).
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum DemoRun {
    /// A D10 pipeline run: a hand-entered gate result raises STOP, a re-run resolves it.
    D10,
    /// A worker touches a protected file (REJECT, STOP), resubmits the same diff (ESCALATE),
    /// then a clean task (APPROVE).
    CodeChange,
}

fn demo(a: DemoArgs, g: &GlobalArgs) -> Result<ExitCode> {
    // SIGINT/SIGTERM reach the daemon as a request to finish.
    let signals = crate::daemon::signals::listen_for_termination()
        .context("cannot listen for SIGINT/SIGTERM")?;
    let cfg = crate::demo::DemoConfig {
        scenario: match a.run {
            DemoRun::D10 => crate::demo::Scenario::D10,
            DemoRun::CodeChange => crate::demo::Scenario::CodeChange,
        },
        speed: a.speed,
        dir: a.keep,
        state_dir: a.state_dir,
        // `-v`: every change the referee logs, not just passes, failures and STOP.
        verbose: g.verbose > 0,
    };
    let outcome = crate::demo::run(&cfg, Some(signals), &mut std::io::stdout().lock())?;
    Ok(outcome.exit)
}
