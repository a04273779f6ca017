//! `referee watch`: the daemon's configuration from its flags, then the daemon.

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::{Args, ValueEnum};

use super::{
    load_protocol, load_protocol_for, GlobalArgs, ProtocolArg, ReadArgs, RulesArgs, DEFAULT_POLL,
};
use crate::exit::ExitCode;
use crate::protocol;

#[derive(Args, Debug)]
pub(super) struct WatchArgs {
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
    /// quiet, and its writer has closed it (a half-written file is not judged; a writer that
    /// keeps it open is waited for up to `--settle-max`, except for a finding already complete
    /// in the file: a hand-entered gate entry, a forbidden word on a line a complete line
    /// follows). `300ms`, `1s`; a bare number is
    /// milliseconds.
    #[arg(long, value_name = "DURATION", default_value = "300ms", value_parser = crate::duration::parse_millis)]
    settle: std::time::Duration,
    /// The longest a file still being written holds judgment back: a D10 result read bad at
    /// every look for DURATION while its files keep moving is published as it stands (a look
    /// that reads it good, a file between two saves, ends the wait), and a task record changing
    /// for DURATION is judged as it stands, so a churning file cannot hold a STOP or a task
    /// back forever; `status --sync` waits at most this for files still being written. `2s`,
    /// `1500ms`; a bare number is milliseconds (as for `--settle`).
    #[arg(long, value_name = "DURATION", default_value = "2s", value_parser = crate::duration::parse_millis)]
    settle_max: std::time::Duration,
    /// Start a new run: a new OBSERVER-EVENTS.jsonl instead of resuming (the old log is moved
    /// aside to OBSERVER-EVENTS-<time>.jsonl, never deleted), and a build directory's files as
    /// they are now set aside as an earlier run's until this run writes them.
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
    /// format of the embedded rules, documented in docs/GUIDE.md). Refused when FILE lies inside
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

/// Why a `--heartbeat` interval is refused.
#[derive(Debug, thiserror::Error)]
enum HeartbeatError {
    #[error(transparent)]
    Duration(#[from] crate::duration::DurationError),
    #[error("heartbeat `{0}` is too short (at least 0.05 s)")]
    TooShort(String),
    #[error("heartbeat `{0}` is too long (at most 1d)")]
    TooLong(String),
}

fn parse_heartbeat(s: &str) -> Result<std::time::Duration, HeartbeatError> {
    let d = crate::duration::parse(s)?;
    if d < crate::state::live::MIN_INTERVAL {
        return Err(HeartbeatError::TooShort(s.to_string()));
    }
    // `status` believes no heartbeat interval longer than this: a referee beating less often
    // could never be live.
    if d > crate::state::live::MAX_INTERVAL {
        return Err(HeartbeatError::TooLong(s.to_string()));
    }
    Ok(d)
}

pub(super) fn watch(a: WatchArgs, g: &GlobalArgs) -> Result<ExitCode> {
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
        // Checked before anything runs: a file inside what is watched, or a bad one (at its
        // line and column), is exit 2.
        if let Some(dir) = a.root.as_ref().or(a.build_dir.as_ref()) {
            crate::waivers::Waivers::refuse_inside(file, dir)?;
        }
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
