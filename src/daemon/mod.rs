//! The live referee (`referee watch`): runs beside a pipeline, re-judges the build directory as
//! files change, keeps `OBSERVER-STOP.md`, the pass files, the event log and the heartbeat current,
//! and writes the final report when the pipeline completes, its process exits, the timeout passes
//! or it is told to stop. With `--root`, one process does this for every build directory under a
//! root.
//!
//! The layout: one loop drives many sessions; an I/O shell around pure rules.
//!
//! - [`driver`]: the loop. It owns the event source (one for all sessions), signals, the
//!   pipeline's exit, the timers, and which session an event belongs to; under `--root` it finds
//!   new build directories, and each build's queue of changes (builds take turns, so one build's
//!   storm of events does not hold up another's STOP). It sleeps on one channel with a timeout
//!   to the earliest timer.
//! - [`session`]: one build directory's referee: its state, its own files, its timers, its end.
//! - [`rules`]: the decisions, as plain functions with no I/O: what an evaluation changes
//!   ([`rules::ledger`]: holds, status changes, STOP, fix attempts), fix attempts and escalation
//!   ([`rules::guard`]), "is this file still being written" ([`rules::settle`]), when a failed
//!   write of its own is tried again ([`rules::retry`]), what the referee saw (`rules::seen`).
//! - [`event`]: the typed events, appended to and resumed from [`journal`] (the JSONL log).
//! - [`heartbeat`], [`attach`], [`signals`]: the heartbeat, "is this still the directory", and
//!   SIGINT/SIGTERM and `--exit-with`; the STOP file is written through
//!   [`crate::state::stop::StopFile`], its one writer, shared with the one-shot commands.
//!
//! Nothing here judges (the engine does) or renders markdown (outputs does), and only the
//! referee's own `OBSERVER-*` files are written.

pub mod attach;
mod driver;
pub mod event;
use crate::state::heartbeat;
pub mod journal;
pub mod rules;
mod session;
pub mod signals;

use std::path::PathBuf;
use std::sync::mpsc::{Receiver, Sender};
use std::time::Duration;

use crate::artifacts::Limits;
use crate::engine::Evaluation;
use crate::exit::ExitCode;
use crate::fsevents::{self, Mode};
use crate::protocol::ProtocolError;

/// What to do when the referee itself cannot evaluate or write (seed 004).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPolicy {
    /// Write a STOP block naming the fault: a referee that cannot see must not wave a pipeline on.
    Stop,
    /// Record the fault (event, incident) and go on.
    Continue,
}

impl FaultPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            FaultPolicy::Stop => "stop",
            FaultPolicy::Continue => "continue",
        }
    }
}

/// Everything `referee watch` needs, resolved from the command line (or built by a library user).
#[derive(Debug, Clone)]
pub struct Config {
    pub build_dir: PathBuf,
    /// An embedded protocol id or the path of a protocol file.
    pub protocol: String,
    pub watch: Mode,
    /// Finish (judging as final) when this process exits.
    pub exit_with: Option<i32>,
    pub timeout: Option<Duration>,
    pub on_fault: FaultPolicy,
    /// Fix attempts on a failing BLOCKING check before its STOP is escalated.
    pub max_fix_attempts: u32,
    pub heartbeat: Duration,
    /// How long a file must be quiet before a failure that rests on it is published.
    pub settle: Duration,
    /// The longest a file being written holds judgment back (`--settle-max`): a file still
    /// changing after that is judged as it stands.
    pub settle_max: Duration,
    /// Start a new event log (the old one is moved aside) instead of resuming.
    pub fresh: bool,
    /// No human lines on stdout.
    pub quiet: bool,
    pub limits: Limits,
    /// Also receives every human line (e.g. an embedding demo).
    pub lines: Option<Sender<String>>,
    /// A protocol with `[tasks]` (code-change): what the workspace is measured against.
    pub baseline: crate::workspace::BaselineSpec,
    /// `--waivers`: loaded (and checked) before the run; the file is reloaded when it changes.
    pub waivers: Option<crate::waivers::Waivers>,
    /// `--state-dir`: the referee's memory; `None`: the default for the directory
    /// ([`crate::state::locate`]). Under `watch --root`, the folder each build's is made in.
    pub state_dir: Option<PathBuf>,
    /// `--secrets`: CC-07's secret rules from this file instead of the protocol's (an absolute
    /// path, checked to lie outside the watched directory before the run).
    pub secrets: Option<PathBuf>,
    /// `--vars`/`--set`/`--protect`: the project's values of the protocol's variables (the
    /// file checked to lie outside the watched directory before the run).
    pub overrides: crate::protocol::overrides::Overrides,
    /// The time each session's timing decisions are made at (settling, heartbeats, retries,
    /// finishing): the machine's in production, a manual one in tests that drive a session.
    pub clock: crate::clock::Clock,
}

impl Config {
    /// The protocol this run judges by: its rule files and overrides applied.
    pub fn load_protocol(
        &self,
    ) -> Result<crate::protocol::Protocol, crate::protocol::ProtocolError> {
        crate::protocol::Protocol::load_with(
            &self.protocol,
            self.secrets.as_deref(),
            &self.overrides,
        )
    }

    /// The defaults of `referee watch BUILD_DIR`.
    pub fn new(build_dir: impl Into<PathBuf>) -> Config {
        Config {
            build_dir: build_dir.into(),
            protocol: crate::protocol::DEFAULT_ID.to_string(),
            watch: Mode::Native,
            exit_with: None,
            timeout: None,
            on_fault: FaultPolicy::Stop,
            max_fix_attempts: 3,
            heartbeat: Duration::from_secs(2),
            settle: Duration::from_millis(300),
            settle_max: rules::settle::DEFAULT_MAX,
            fresh: false,
            quiet: false,
            // A watcher lives long beside big builds: files over 1 MiB are read by each check
            // that needs them rather than all held at once (see `Limits::keep_bytes`).
            limits: Limits {
                keep_bytes: Some(1 << 20),
                ..Limits::default()
            },
            lines: None,
            baseline: crate::workspace::BaselineSpec::Auto,
            waivers: None,
            state_dir: None,
            secrets: None,
            overrides: Default::default(),
            clock: crate::clock::Clock::real(),
        }
    }
}

/// A request to finish, from outside the daemon.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shutdown {
    /// `SIGINT` / `SIGTERM` (by name).
    Signal(String),
    /// An embedding application asked (with its reason).
    Requested(String),
}

/// Why the daemon finished.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EndReason {
    Complete { verdict: Option<String> },
    PipelineExited { pid: i32 },
    Timeout(Duration),
    Shutdown(Shutdown),
}

impl EndReason {
    /// The final evaluation treats every check as due only when the pipeline is gone.
    pub(crate) fn is_final(&self) -> bool {
        matches!(self, EndReason::PipelineExited { .. })
    }

    /// What the report says about why the referee finished.
    pub fn describe(&self) -> String {
        self.describe_as(
            "judged as the directory stands (not final: checks not yet due stay WAITING)",
        )
    }

    /// [`EndReason::describe`] for a task protocol, which has no checks waiting to be due.
    pub fn describe_tasks(&self) -> String {
        self.describe_as("every pending attempt judged as the workspace stands")
    }

    fn describe_as(&self, as_is: &str) -> String {
        match self {
            EndReason::Complete { verdict } => format!(
                "the pipeline completed (VERDICT: {})",
                verdict.as_deref().unwrap_or("?")
            ),
            EndReason::PipelineExited { pid } => format!(
                "the pipeline process (pid {pid}) exited; judged as final (every check due: missing artifacts fail)"
            ),
            EndReason::Timeout(d) => format!("the timeout ({}) passed; {as_is}", crate::duration::human(*d)),
            EndReason::Shutdown(Shutdown::Signal(s)) => format!("{s} received; {as_is}"),
            EndReason::Shutdown(Shutdown::Requested(why)) => format!("stopped: {why}; {as_is}"),
        }
    }

    pub(crate) fn tag(&self) -> &'static str {
        match self {
            EndReason::Complete { .. } => "complete",
            EndReason::PipelineExited { .. } => "exit_with",
            EndReason::Timeout(_) => "timeout",
            EndReason::Shutdown(Shutdown::Signal(_)) => "signal",
            EndReason::Shutdown(Shutdown::Requested(_)) => "requested",
        }
    }
}

/// How a run ended.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// 0: no unresolved BLOCKING failure; 1: one stands; 2: the referee could not do its job.
    pub exit: ExitCode,
    pub reason: EndReason,
    /// The final report (absent if it could not be written).
    pub report: Option<PathBuf>,
    /// The final evaluation.
    pub evaluation: Evaluation,
    /// The referee's own faults still standing: (area, message).
    pub faults: Vec<(String, String)>,
}

#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    #[error("cannot read build directory `{}`", .path.display())]
    BuildDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read build directory `{}`: not a directory", .path.display())]
    NotADirectory { path: PathBuf },
    #[error(transparent)]
    Gone(#[from] crate::state::dir_id::Gone),
    #[error(
        "`{}` was written under protocol sha256 `{logged}`, but the loaded protocol has sha256 `{loaded}`; \
refusing to resume under a different protocol — pass `--fresh` to start a new log (the old one is kept as OBSERVER-EVENTS-<time>.jsonl)",
        .log.display()
    )]
    ProtocolChanged {
        log: PathBuf,
        logged: String,
        loaded: String,
    },
    #[error(transparent)]
    Log(#[from] journal::LockError),
    #[error(
        "cannot write the referee's own file `{}` (`--on-fault continue` runs without it)",
        .path.display()
    )]
    OwnFile {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("--fresh: cannot move the event log `{}` aside", .path.display())]
    Rotate {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Watch(#[from] fsevents::WatchError),
    #[error("--exit-with `{pid}`: no such process (is it the pipeline's pid, and is the pipeline still running?)")]
    NoSuchPid { pid: i32 },
    #[error(transparent)]
    Workspace(#[from] crate::workspace::WorkspaceError),
    #[error("cannot use the workspace's referee folder `{}` (it must be a real directory the referee can write; a symlink or a file named `.referee` is refused; a referee run as another user than the worker needs it made for it: `install -d -o REFEREE_USER {}`, see docs/deployment.md)", .path.display(), .path.display())]
    OutputDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    State(#[from] crate::state::StateError),
    #[error(transparent)]
    Seen(#[from] crate::state::observed::SeenError),
    #[error("another referee (pid {pid}) is already watching `{}` (its heartbeat `{}` is fresh and the process runs); a second one would fight it over the OBSERVER-* files: stop it first, or ask it with `referee status`", .path.display(), .heartbeat.display())]
    Rival {
        path: PathBuf,
        pid: u32,
        heartbeat: PathBuf,
    },
    #[error("another referee is already watching `{}` (it holds the directory's lock); a second one would fight it over the OBSERVER-* files: stop it first, or ask it with `referee status`", .path.display())]
    RivalHolds { path: PathBuf },
    #[error("`--baseline`/`--baseline-dir` apply to a protocol of task records (e.g. `--protocol code-change`), not to `{protocol}`")]
    BaselineWithoutTasks { protocol: String },
}

/// Runs the referee on one build directory until it finishes; the final report is always
/// attempted.
///
/// `shutdown`: a channel whose first message ends the run (the binary connects SIGINT/SIGTERM to
/// it; an embedding application sends [`Shutdown::Requested`]). Startup problems (protocol, build
/// directory, a log under another protocol, another referee on the same directory) are errors;
/// once running, problems are faults handled by [`Config::on_fault`].
pub fn run(config: Config, shutdown: Option<Receiver<Shutdown>>) -> Result<Outcome, DaemonError> {
    driver::run_one(config, shutdown)
}

/// How a `watch --root` run ended: each build directory's outcome, by name.
#[derive(Debug)]
pub struct RootOutcome {
    /// 0: no build has an unresolved BLOCKING failure; 1: one has; 2: the referee could not do
    /// its job for one (the worst over all builds).
    pub exit: ExitCode,
    pub builds: Vec<(String, Outcome)>,
}

/// Runs one referee for every build directory directly under `root` (each immediate
/// subdirectory, and every one created later) until `shutdown`; each build gets the files a
/// single `watch` would give it. `template` holds the options (its `build_dir` is ignored; its
/// `timeout` is the whole run's).
pub fn run_root(
    root: PathBuf,
    template: Config,
    shutdown: Option<Receiver<Shutdown>>,
) -> Result<RootOutcome, DaemonError> {
    driver::run_root(root, template, shutdown)
}
