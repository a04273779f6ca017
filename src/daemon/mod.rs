//! The live referee (`referee watch`): runs beside a pipeline, re-judges the build directory as
//! files change, keeps `OBSERVER-STOP.md`, the pass files, the event log and the heartbeat current,
//! and writes the final report when the pipeline completes, its process exits, the timeout passes
//! or it is told to stop.
//!
//! This module owns the daemon's loop and state: pass memory between evaluations, the published
//! results (after settling), the history of changes, incidents, the fault policy, the timers
//! (heartbeat, settle re-checks, completion, timeout) and the human one-line log. The loop sleeps on
//! one channel (file events, the pipeline's exit, shutdown) with a timeout to the next timer, and
//! nothing else wakes it. It judges nothing itself (the engine does), renders no markdown (outputs
//! does), and writes only the referee's own `OBSERVER-*` files.
//!
//! Submodules: [`events`] (the JSONL log and resume), [`settle`] (is a file still being written),
//! [`guard`] (fix attempts and escalation), [`stop`] (the STOP file and tamper), [`tamper`]
//! (recording tamper with the referee's own files and a damaged log), [`heartbeat`], [`attach`]
//! (is the build directory's path still the directory being watched), [`signals`]
//! (SIGINT/SIGTERM and `--exit-with`).
//!
//! Never blind while saying live: at every wake-up and every heartbeat the daemon compares what
//! the build directory's path names with the directory it attached to; a directory deleted,
//! re-created, renamed or replaced is re-attached (new watches, a full scan, its files written
//! there) or, while the path names nothing usable, the daemon is detached and writes nothing.
//! Its heartbeat says `faulted` while any of its own faults stands, and whether a STOP should
//! stand even when the disk refused it.

pub mod attach;
pub mod events;
pub mod guard;
pub mod heartbeat;
pub mod settle;
pub mod signals;
pub mod stop;
mod tamper;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write as _;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant, SystemTime};

use chrono::{DateTime, Utc};
use serde_json::{json, Value};
use sha2::{Digest, Sha256};

use crate::artifacts::{Kind, Limits, Snapshot};
use crate::checks::is_own_file;
use crate::engine::{self, CheckResult, Evaluation, Evidence, Options, PassState, Status};
use crate::exit::ExitCode;
use crate::outputs::{self, markdown, Change, Context, Incident, REPORT_FILE, STOP_FILE};
use crate::protocol::{CheckInstance, Protocol, ProtocolError, Severity};
use crate::watch::{self, ChangeKind, FsEvent, Mode, Source};

use events::{ContextRef, EventLog, Level, Record, Scope, Signal};
use guard::{evidence_hash, Guard};
use settle::Settle;
use stop::{StopFile, Synced};

/// What to do when the referee itself cannot evaluate or write (SPEC §5, seed 004).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FaultPolicy {
    /// Write a STOP block naming the fault: a referee that cannot see must not wave a pipeline on.
    Stop,
    /// Record the fault (event, incident) and go on.
    Continue,
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
    /// Start a new event log (the old one is moved aside) instead of resuming.
    pub fresh: bool,
    /// No human lines on stdout.
    pub quiet: bool,
    pub limits: Limits,
    /// Also receives every human line (e.g. an embedding demo).
    pub lines: Option<Sender<String>>,
}

impl Config {
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
            fresh: false,
            quiet: false,
            // A watcher lives long beside big builds: files over 1 MiB are read by each check
            // that needs them rather than all held at once (see `Limits::keep_bytes`).
            limits: Limits {
                keep_bytes: Some(1 << 20),
                ..Limits::default()
            },
            lines: None,
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
    fn is_final(&self) -> bool {
        matches!(self, EndReason::PipelineExited { .. })
    }

    /// What the report says about why the referee finished.
    pub fn describe(&self) -> String {
        const AS_IS: &str =
            "judged as the directory stands (not final: checks not yet due stay WAITING)";
        match self {
            EndReason::Complete { verdict } => format!(
                "the pipeline completed (VERDICT: {})",
                verdict.as_deref().unwrap_or("?")
            ),
            EndReason::PipelineExited { pid } => format!(
                "the pipeline process (pid {pid}) exited; judged as final (every check due: missing artifacts fail)"
            ),
            EndReason::Timeout(d) => format!("the timeout ({}) passed; {AS_IS}", human(*d)),
            EndReason::Shutdown(Shutdown::Signal(s)) => format!("{s} received; {AS_IS}"),
            EndReason::Shutdown(Shutdown::Requested(why)) => format!("stopped: {why}; {AS_IS}"),
        }
    }

    fn tag(&self) -> &'static str {
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
    #[error("cannot read build directory `{path}`: {message}")]
    BuildDir { path: String, message: String },
    #[error(
        "`{log}` was written under protocol sha256 `{logged}`, but the loaded protocol has sha256 `{loaded}`; \
refusing to resume under a different protocol — pass `--fresh` to start a new log (the old one is kept as OBSERVER-EVENTS-<time>.jsonl)"
    )]
    ProtocolChanged {
        log: String,
        logged: String,
        loaded: String,
    },
    #[error(transparent)]
    Log(#[from] events::LogError),
    #[error("cannot write the referee's own file `{path}`: {message} (use `--on-fault continue` to run without it)")]
    OwnFile { path: String, message: String },
    #[error(transparent)]
    Watch(#[from] watch::WatchError),
    #[error("--exit-with `{pid}`: no such process (is it the pipeline's pid, and is the pipeline still running?)")]
    NoSuchPid { pid: i32 },
}

/// Parses `90s`, `30m`, `2h`, `1h30m`, `500ms`, or plain seconds (`45`, `1.5`).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    let t = s.trim();
    if t.is_empty() {
        return Err("empty duration (e.g. `90s`, `30m`, `2h`)".into());
    }
    if let Ok(secs) = t.parse::<f64>() {
        return if secs.is_finite() && secs >= 0.0 {
            Ok(Duration::from_secs_f64(secs))
        } else {
            Err(format!("invalid duration `{s}`"))
        };
    }
    let mut total = Duration::ZERO;
    let mut rest = t;
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| {
                format!("duration `{s}` needs a unit after `{rest}` (ms, s, m, h, d)")
            })?;
        if digits == 0 {
            return Err(format!("invalid duration `{s}` (e.g. `90s`, `30m`, `2h`)"));
        }
        let n: f64 = rest[..digits]
            .parse()
            .map_err(|_| format!("invalid number in duration `{s}`"))?;
        let unit_len = rest[digits..]
            .find(|c: char| c.is_ascii_digit())
            .unwrap_or(rest.len() - digits);
        let unit = &rest[digits..digits + unit_len];
        let secs = match unit {
            "ms" => n / 1000.0,
            "s" | "sec" | "secs" => n,
            "m" | "min" | "mins" => n * 60.0,
            "h" | "hr" | "hrs" => n * 3600.0,
            "d" => n * 86400.0,
            _ => {
                return Err(format!(
                    "unknown unit `{unit}` in duration `{s}` (ms, s, m, h, d)"
                ))
            }
        };
        total += Duration::from_secs_f64(secs);
        rest = &rest[digits + unit_len..];
    }
    Ok(total)
}

/// `90s`, `30m`, `2h`, `1500ms`.
fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if ms % 1000 != 0 {
        return format!("{ms}ms");
    }
    let s = d.as_secs();
    if s >= 3600 && s % 3600 == 0 {
        format!("{}h", s / 3600)
    } else if s >= 60 && s % 60 == 0 {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

/// What arrives on the daemon's one channel.
#[derive(Debug)]
enum Msg {
    /// Relative paths (the referee's own files already dropped, except the STOP file), and what
    /// happened to each.
    Changed(Vec<(String, ChangeKind)>),
    Rescan(String),
    Limit(String),
    PipelineExited(i32),
    Shutdown(Shutdown),
    /// An event on the build directory itself; `lost`: it was deleted or moved (its watch is
    /// gone). `source`: which event source saw it (one still queued from a source already
    /// replaced is about a directory the daemon has left).
    Root {
        lost: bool,
        source: u64,
    },
}

/// Everything that arrived since the loop last woke.
#[derive(Debug, Default)]
struct Batch {
    /// The event sources that said the root's watch is gone.
    root_lost: BTreeSet<u64>,
    paths: BTreeMap<String, ChangeKind>,
    stop_touched: bool,
    rescan: Vec<String>,
    limit: Option<String>,
    end: Option<EndReason>,
}

impl Batch {
    fn add(&mut self, m: Msg) {
        match m {
            Msg::Changed(v) => {
                for (rel, kind) in v {
                    if rel == STOP_FILE {
                        self.stop_touched = true;
                    } else if kind == ChangeKind::Metadata {
                        // A metadata change after a write leaves it a write.
                        self.paths.entry(rel).or_insert(kind);
                    } else {
                        // Otherwise the latest event decides (written, renamed in, removed).
                        self.paths.insert(rel, kind);
                    }
                }
            }
            Msg::Rescan(why) => self.rescan.push(why),
            Msg::Limit(m) => self.limit = Some(m),
            Msg::PipelineExited(pid) => {
                self.end.get_or_insert(EndReason::PipelineExited { pid });
            }
            Msg::Shutdown(s) => {
                self.end.get_or_insert(EndReason::Shutdown(s));
            }
            Msg::Root { lost, source } => {
                if lost {
                    self.root_lost.insert(source);
                }
            }
        }
    }
}

/// A result held back while its files settle.
#[derive(Debug, Clone, Copy)]
struct Hold {
    since: Instant,
}

/// The protocol file, watched cheaply at heartbeat ticks for edits (which are ignored).
#[derive(Debug)]
struct ProtocolFile {
    path: PathBuf,
    seen: Option<(SystemTime, u64)>,
    reported: BTreeSet<String>,
}

/// Runs the daemon until it finishes; the final report is always attempted.
///
/// `shutdown`: a channel whose first message ends the run (the binary connects SIGINT/SIGTERM to
/// it; an embedding application sends [`Shutdown::Requested`]). Startup problems (protocol, build
/// directory, a log under another protocol, another referee on the same directory) are errors;
/// once running, problems are faults handled by [`Config::on_fault`].
pub fn run(config: Config, shutdown: Option<Receiver<Shutdown>>) -> Result<Outcome, DaemonError> {
    // Before anything is written: finishing at once "because the pipeline exited" would judge a
    // live pipeline's half-built directory as final.
    if let Some(pid) = config.exit_with {
        if !u32::try_from(pid).is_ok_and(heartbeat::pid_alive) {
            return Err(DaemonError::NoSuchPid { pid });
        }
    }
    let (tx, rx) = mpsc::channel::<Msg>();
    let mut d = Daemon::start(config, tx.clone())?;
    if let Some(srx) = shutdown {
        let tx = tx.clone();
        // Forwards the first request into the one channel the loop sleeps on.
        let _ = std::thread::Builder::new()
            .name("referee-shutdown".into())
            .spawn(move || {
                if let Ok(s) = srx.recv() {
                    let _ = tx.send(Msg::Shutdown(s));
                }
            });
    }
    if let Some(pid) = d.cfg.exit_with {
        let tx = tx.clone();
        let how = signals::watch_pid(pid, move || {
            let _ = tx.send(Msg::PipelineExited(pid));
        });
        d.pid_by_ticks = how == signals::PidWatch::Ticks;
    }
    drop(tx);
    d.first_evaluation();
    d.run_loop(&rx)
}

struct Daemon {
    cfg: Config,
    protocol: Protocol,
    /// The build directory as given (for display and writes).
    dir: PathBuf,
    /// Its canonical path (events arrive under it).
    canon: PathBuf,
    /// The directory the daemon watches, or detached.
    attached: attach::State,
    /// Why it is detached (said and recorded once per reason).
    detached_why: Option<String>,
    /// This process's start time, for the heartbeat (tells it from a recycled pid).
    proc_start: Option<u64>,
    /// Whether a STOP should stand as of the last sync, written or not (for the heartbeat).
    wants_stop: bool,
    /// Counts event sources started, to tell the current one's messages from stale ones.
    source_gen: u64,
    tx: Sender<Msg>,
    source: Option<Source>,
    started: DateTime<Utc>,
    trace_id: String,
    log: Option<EventLog>,
    /// Pass memory: a pass that ran stays run.
    ran: BTreeMap<String, PassState>,
    /// The last published status of every instance whose pass ran.
    statuses: BTreeMap<String, Status>,
    published: Option<Evaluation>,
    history: Vec<Change>,
    incidents: Vec<Incident>,
    faults: BTreeMap<String, String>,
    settle: Settle,
    holds: BTreeMap<String, Hold>,
    guard: Guard,
    stop: StopFile,
    pass_files: BTreeMap<String, String>,
    protocol_file: Option<ProtocolFile>,
    pid_by_ticks: bool,
    /// An evaluation ran since memory was last handed back.
    evaluated: bool,
    // Timers.
    next_beat: Instant,
    recheck_at: Option<Instant>,
    finish_at: Option<Instant>,
    timeout_at: Option<Instant>,
    last_activity: Instant,
    end: Option<EndReason>,
}

fn trace_id(dir: &Path) -> String {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = format!("{}:{nanos}:{}", std::process::id(), dir.display());
    let mut h = crate::protocol::hex(&Sha256::digest(seed.as_bytes()));
    h.truncate(32);
    h
}

/// A changed path as the snapshot names it (escaped by [`crate::artifacts::escape_name`]), so a
/// change and the entry it touched agree even for a name with invalid UTF-8 or a newline.
fn rel_of(canon: &Path, path: &Path) -> Option<String> {
    use std::os::unix::ffi::OsStrExt;
    let rel = path.strip_prefix(canon).ok()?;
    Some(crate::artifacts::escape_name(rel.as_os_str().as_bytes()).into_owned())
}

/// Removes temp files a killed referee left beside its own files (`.OBSERVER-*.tmp.*`).
fn remove_stale_temps(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with(".OBSERVER-") && name.contains(".tmp.") && is_own_file(&name) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

fn artifact_ids(ev: &Evidence) -> Vec<String> {
    ev.files
        .iter()
        .filter_map(|f| f.sha256.as_ref().map(|h| format!("{}@{h}", f.path)))
        .collect()
}

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

impl Daemon {
    fn start(cfg: Config, tx: Sender<Msg>) -> Result<Daemon, DaemonError> {
        let protocol = Protocol::load(&cfg.protocol)?;
        let dir = cfg.build_dir.clone();
        let bad_dir = |message: String| DaemonError::BuildDir {
            path: dir.display().to_string(),
            message,
        };
        let canon =
            std::fs::canonicalize(&dir).map_err(|e| bad_dir(e.to_string().to_lowercase()))?;
        if !canon.is_dir() {
            return Err(bad_dir("not a directory".into()));
        }
        if let Err(e) = std::fs::read_dir(&canon) {
            return Err(bad_dir(e.to_string().to_lowercase()));
        }
        let dir_id = attach::DirId::of(&canon).map_err(|e| bad_dir(e.describe()))?;

        let now = Utc::now();
        let trace = trace_id(&canon);
        let context = ContextRef {
            app_ctx: canon.display().to_string(),
            motor_ctx: format!("{}@{}+{}", protocol.id, protocol.version, protocol.sha256),
        };
        // The event log: lock it (one referee per directory), read it, resume or rotate.
        let mut rotated = None;
        let mut resumed = None;
        let mut log_moved = None;
        let mut damaged = None;
        let log = match events::open_locked(&dir) {
            Ok(events::Opened {
                file,
                resumed: r,
                torn_tail,
                moved_aside,
            }) => {
                // Holding the lock, no other referee writes here: its temp files are leftovers.
                remove_stale_temps(&dir);
                log_moved = moved_aside;
                let (file, torn_tail) = if r.events == 0 && r.skipped == 0 {
                    (file, torn_tail)
                } else if cfg.fresh {
                    let to = events::rotate(&dir, &now).map_err(|e| DaemonError::OwnFile {
                        path: dir.join(events::EVENTS_FILE).display().to_string(),
                        message: format!("cannot move it aside: {e}"),
                    })?;
                    rotated = Some(to);
                    let reopened = events::open_locked(&dir)?;
                    drop(file);
                    (reopened.file, reopened.torn_tail)
                } else {
                    // Reported once the new log is open (a log of nothing but garbage too).
                    damaged = (r.skipped > 0).then(|| r.clone());
                    if let Some(logged) = &r.protocol_sha256 {
                        if *logged != protocol.sha256 {
                            return Err(DaemonError::ProtocolChanged {
                                log: dir.join(events::EVENTS_FILE).display().to_string(),
                                logged: logged.clone(),
                                loaded: protocol.sha256.clone(),
                            });
                        }
                    }
                    if r.events > 0 {
                        resumed = Some(r);
                    }
                    (file, torn_tail)
                };
                match EventLog::new(&dir, file, torn_tail, trace.clone(), context) {
                    Ok(log) => Some(log),
                    Err(e) => own_file_fault(&cfg, &dir, events::EVENTS_FILE, &e)?,
                }
            }
            Err(events::LogError::Busy { path }) => {
                return Err(events::LogError::Busy { path }.into());
            }
            Err(events::LogError::Io { source, .. }) => {
                own_file_fault(&cfg, &dir, events::EVENTS_FILE, &source)?
            }
        };

        let protocol_file = (!protocol.origin.starts_with("embedded:")).then(|| {
            let path = PathBuf::from(&protocol.origin);
            let seen = std::fs::metadata(&path)
                .ok()
                .and_then(|m| Some((m.modified().ok()?, m.len())));
            ProtocolFile {
                path,
                seen,
                reported: BTreeSet::new(),
            }
        });

        let start = Instant::now();
        let mut d = Daemon {
            settle: Settle::new(cfg.settle),
            guard: Guard::new(cfg.max_fix_attempts),
            stop: StopFile::new(&dir),
            timeout_at: cfg.timeout.map(|t| start + t),
            next_beat: start,
            cfg,
            protocol,
            dir,
            canon,
            attached: attach::State::Attached(dir_id),
            detached_why: None,
            proc_start: heartbeat::proc_start(std::process::id()),
            wants_stop: false,
            source_gen: 0,
            tx,
            source: None,
            started: now,
            trace_id: trace,
            log,
            ran: BTreeMap::new(),
            statuses: BTreeMap::new(),
            published: None,
            history: Vec::new(),
            incidents: Vec::new(),
            faults: BTreeMap::new(),
            holds: BTreeMap::new(),
            pass_files: BTreeMap::new(),
            protocol_file,
            pid_by_ticks: false,
            evaluated: false,
            recheck_at: None,
            finish_at: None,
            last_activity: start,
            end: None,
        };
        // A STOP left standing is adopted before anything else can touch it, and stays as it is
        // until the first settled evaluation (no resolve-then-raise gap across a restart).
        let raised_by_referee = resumed
            .as_ref()
            .is_some_and(|r: &events::Resumed| !r.attempts.is_empty());
        let adopted = d.stop.adopt();
        // Watch before the first scan, so nothing written in between is missed.
        d.start_source(d.cfg.watch)?;
        d.announce(resumed, rotated);
        if let Some((found, to)) = log_moved {
            d.log_moved_aside(found, &to);
        }
        if let Some(r) = damaged {
            d.log_damaged(&r);
        }
        if adopted {
            d.stop_adopted(raised_by_referee);
        }
        Ok(d)
    }

    fn start_source(&mut self, mode: Mode) -> Result<(), DaemonError> {
        let canon = self.canon.clone();
        let tx = self.tx.clone();
        self.source_gen += 1;
        let gen = self.source_gen;
        let sink = move |ev: FsEvent| {
            let msg = match ev {
                FsEvent::Changed(changes) => {
                    let mut root: Option<bool> = None;
                    let v: Vec<(String, ChangeKind)> = changes
                        .into_iter()
                        .filter_map(|c| {
                            let rel = rel_of(&canon, &c.path)?;
                            if rel.is_empty() {
                                // The build directory itself: the daemon checks what its path
                                // names now (deleted, moved: the watch on it is gone).
                                root = Some(root.unwrap_or(false) || c.kind == ChangeKind::Removed);
                            }
                            // The root itself (its mtime) and the referee's own writes are no
                            // work; the STOP file is checked for tampering.
                            let keep = !rel.is_empty() && (rel == STOP_FILE || !is_own_file(&rel));
                            keep.then_some((rel, c.kind))
                        })
                        .collect();
                    if let Some(lost) = root {
                        let _ = tx.send(Msg::Root { lost, source: gen });
                    }
                    if v.is_empty() {
                        return;
                    }
                    Msg::Changed(v)
                }
                FsEvent::Rescan { why } => Msg::Rescan(why),
                FsEvent::Limit { message } => Msg::Limit(message),
            };
            let _ = tx.send(msg);
        };
        // Drop the old source first, so its thread stops before the new one starts.
        self.source = None;
        let source = watch::start(&self.canon, mode, sink)?;
        if let Some(w) = &source.warning {
            eprintln!("referee: warning: {w}");
            self.say(&format!("warning: {w}"));
        }
        self.source = Some(source);
        Ok(())
    }

    fn source_name(&self) -> String {
        self.source
            .as_ref()
            .map_or_else(|| "nothing".into(), |s| s.kind.to_string())
    }

    /// The start (or restart) event and line; restores the state of a resumed run.
    fn announce(&mut self, resumed: Option<events::Resumed>, rotated: Option<PathBuf>) {
        let p = &self.protocol;
        let protocol =
            json!({"id": p.id, "version": p.version, "sha256": p.sha256, "origin": p.origin});
        let options = json!({
            "watch": self.source_name(),
            "exit_with": self.cfg.exit_with,
            "timeout_secs": self.cfg.timeout.map(|t| t.as_secs_f64()),
            "on_fault": match self.cfg.on_fault { FaultPolicy::Stop => "stop", FaultPolicy::Continue => "continue" },
            "max_fix_attempts": self.cfg.max_fix_attempts,
            "heartbeat_secs": self.cfg.heartbeat.as_secs_f64(),
            "settle_ms": self.cfg.settle.as_millis() as u64,
            "max_read_bytes": self.cfg.limits.max_read_bytes,
        });
        let warning = self.source.as_ref().and_then(|s| s.warning.clone());
        self.say(&format!(
            "watching `{}` ({}) — protocol {} {} (sha256 {}…), trace {}",
            self.dir.display(),
            self.source_name(),
            p.id,
            p.version,
            &p.sha256[..12.min(p.sha256.len())],
            self.trace_id
        ));
        match resumed {
            Some(r) => {
                let text = format!(
                    "restarted: resumed from {} ({} events, {} history entries; the previous run {})",
                    events::EVENTS_FILE,
                    r.events,
                    r.history.len(),
                    if r.ended { "had finished" } else { "was interrupted" }
                );
                self.started = r.started.unwrap_or(self.started);
                self.ran = r.ran;
                self.statuses = r.statuses;
                self.history = r.history;
                self.incidents = r.incidents;
                for (key, (count, hash)) in r.attempts {
                    let esc = r
                        .escalations
                        .iter()
                        .find(|(k, _)| *k == key)
                        .map(|(_, why)| why.clone());
                    self.guard.restore(&key, count, hash, esc);
                }
                self.incident(
                    "restart",
                    text.clone(),
                    &text,
                    Record {
                        scope: Scope::Motor,
                        signal: Signal::Coverage,
                        level: Level::Warn,
                        payload: json!({
                            "event": "restart",
                            "protocol": protocol,
                            "started": events::timestamp(&self.started),
                            "pid": std::process::id(),
                            "build_dir": self.canon.display().to_string(),
                            "previous_trace_ids": r.trace_ids,
                            "skipped_lines": r.skipped,
                            "options": options,
                            "warning": warning,
                            "text": text,
                        }),
                        artifacts: Vec::new(),
                    },
                );
            }
            None => {
                if let Some(to) = &rotated {
                    self.say(&format!(
                        "--fresh: the previous event log was moved to `{}`",
                        to.display()
                    ));
                }
                self.record(Record {
                    scope: Scope::Motor,
                    signal: Signal::Coverage,
                    level: Level::Info,
                    payload: json!({
                        "event": "start",
                        "protocol": protocol,
                        "started": events::timestamp(&self.started),
                        "pid": std::process::id(),
                        "build_dir": self.canon.display().to_string(),
                        "rotated": rotated.map(|r| r.display().to_string()),
                        "options": options,
                        "warning": warning,
                    }),
                    artifacts: Vec::new(),
                });
            }
        }
    }

    // ---- the loop ------------------------------------------------------------------------

    fn first_evaluation(&mut self) {
        if let Some((eval, snap)) = self.evaluate(None, false) {
            let eval = self.hold(eval, &snap);
            self.apply(eval, &BTreeSet::new(), &snap);
        }
        self.flush_outputs();
        self.tick();
        self.release_memory();
    }

    fn run_loop(&mut self, rx: &Receiver<Msg>) -> Result<Outcome, DaemonError> {
        loop {
            if let Some(reason) = self.end.take() {
                return Ok(self.finish(reason));
            }
            let wait = self
                .next_deadline()
                .saturating_duration_since(Instant::now());
            let mut batch = Batch::default();
            if !wait.is_zero() {
                match rx.recv_timeout(wait) {
                    Ok(m) => batch.add(m),
                    Err(RecvTimeoutError::Timeout) => {}
                    Err(RecvTimeoutError::Disconnected) => {
                        // Every event source is gone: nothing can wake the loop but timers.
                        std::thread::sleep(wait);
                    }
                }
            }
            // Coalesce: everything pending now is one evaluation. Read even when a timer is
            // already due, so a signal or the pipeline's exit that arrived during a long
            // evaluation is acted on before the timer (which could end the run otherwise).
            while let Ok(m) = rx.try_recv() {
                batch.add(m);
            }
            self.handle(batch);
            self.timers();
            self.release_memory();
        }
    }

    /// After an evaluation (its snapshot, with every file it read, is gone by now), hands the freed
    /// memory back to the OS: glibc keeps freed heap for reuse, and a large read raises its mmap
    /// threshold so later ones land in that heap too — an idle daemon would otherwise hold the
    /// peak of its last evaluation. Runs after the outputs are written, so it costs no latency.
    fn release_memory(&mut self) {
        if !std::mem::take(&mut self.evaluated) {
            return;
        }
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: malloc_trim only returns free pages to the OS; no live allocation is touched.
        unsafe {
            libc::malloc_trim(0);
        }
    }

    fn next_deadline(&self) -> Instant {
        [self.recheck_at, self.finish_at, self.timeout_at]
            .into_iter()
            .flatten()
            .fold(self.next_beat, Instant::min)
    }

    fn handle(&mut self, batch: Batch) {
        if let Some(end) = batch.end {
            // The final evaluation looks at everything anyway.
            self.end = Some(end);
            return;
        }
        // One stat per wake-up: nothing is judged or written for a directory no longer there.
        self.check_dir(batch.root_lost.contains(&self.source_gen));
        if self.detached_why.is_some() {
            return;
        }
        let mut full = false;
        if let Some(message) = batch.limit {
            let text = format!(
                "inotify watch limit reached while watching ({message}); switching to polling every {} ms — {}",
                watch::DEFAULT_POLL.as_millis(),
                watch::WATCH_LIMIT_HINT
            );
            eprintln!("referee: warning: {text}");
            if let Err(e) = self.start_source(Mode::Poll(watch::DEFAULT_POLL)) {
                self.fault(
                    "watch",
                    format!("cannot poll the build directory either: {e}"),
                );
            }
            self.rescan_event(&text);
            full = true;
        }
        for why in &batch.rescan {
            self.rescan_event(why);
            full = true;
        }
        let now = Instant::now();
        for (rel, kind) in &batch.paths {
            self.settle.saw(rel, *kind, now);
            self.last_activity = now;
        }
        let touched: BTreeSet<String> = batch.paths.into_keys().collect();
        if full || !touched.is_empty() {
            let changed = (!full).then_some(&touched);
            if let Some((eval, snap)) = self.evaluate(changed, false) {
                // A new directory may have had files before the watch on it existed: look again
                // once it has settled (correctness first; the scan is full anyway).
                if touched
                    .iter()
                    .any(|p| snap.get(p).is_some_and(|e| e.kind == Kind::Dir))
                {
                    self.recheck(now + self.settle.window());
                }
                let eval = self.hold(eval, &snap);
                self.apply(eval, &touched, &snap);
            }
        }
        self.flush_outputs();
        if batch.stop_touched {
            self.check_stop();
        }
    }

    fn timers(&mut self) {
        let now = Instant::now();
        if self.timeout_at.is_some_and(|t| t <= now) {
            self.timeout_at = None;
            if let Some(t) = self.cfg.timeout {
                self.end.get_or_insert(EndReason::Timeout(t));
            }
            return;
        }
        if self.recheck_at.is_some_and(|t| t <= now) {
            self.recheck_at = None;
            if let Some((eval, snap)) = self.evaluate(None, false) {
                let eval = self.hold(eval, &snap);
                self.apply(eval, &BTreeSet::new(), &snap);
            }
            self.flush_outputs();
        }
        if self.finish_at.is_some_and(|t| t <= now) {
            self.finish_at = None;
            if let Some(e) = &self.published {
                if e.complete && self.holds.is_empty() {
                    self.end = Some(EndReason::Complete {
                        verdict: e.verdict.clone(),
                    });
                    return;
                }
            }
        }
        if self.next_beat <= now {
            self.tick();
        }
    }

    fn recheck(&mut self, at: Instant) {
        self.recheck_at = Some(self.recheck_at.map_or(at, |t| t.min(at)));
    }

    /// The heartbeat tick: beat, and the cheap checks that need no event.
    fn tick(&mut self) {
        self.next_beat = Instant::now() + self.cfg.heartbeat;
        self.check_dir(false);
        self.beat(heartbeat::WATCHING);
        self.check_protocol_file();
        self.check_stop();
        self.check_own_files();
        if self.pid_by_ticks {
            if let Some(pid) = self.cfg.exit_with {
                if !u32::try_from(pid).is_ok_and(heartbeat::pid_alive) {
                    self.end.get_or_insert(EndReason::PipelineExited { pid });
                }
            }
        }
    }

    // ---- the build directory's identity ----------------------------------------------------

    /// Compares what the build directory's path names with the directory the daemon watches, and
    /// detaches or re-attaches (see [`attach::decide`]). `watch_lost`: the root's watch is gone.
    fn check_dir(&mut self, watch_lost: bool) {
        let (now, why) = match attach::DirId::of(&self.dir) {
            Ok(id) => (Some(id), None),
            Err(e) => (None, Some(e.describe())),
        };
        match attach::decide(&self.attached, now, watch_lost) {
            attach::Action::Stay => {}
            attach::Action::Detach => {
                self.detach(why.unwrap_or_else(|| "the build directory is gone".into()))
            }
            attach::Action::Reattach(id) => self.reattach(id),
        }
    }

    /// Stops watching and writing: the path names nothing the daemon can watch. Said and recorded
    /// once per reason (in the old event log, whose file moved with a renamed directory).
    fn detach(&mut self, why: String) {
        self.source = None;
        self.attached = attach::State::Detached;
        if self.detached_why.as_deref() == Some(why.as_str()) {
            return;
        }
        self.detached_why = Some(why.clone());
        let text = format!(
            "detached: {why}; watching and writing nothing until a directory is at `{}` again (checked every heartbeat)",
            self.dir.display()
        );
        eprintln!("referee: warning: {text}");
        self.incident(
            "detached",
            text.clone(),
            &text,
            Record {
                scope: Scope::Motor,
                signal: Signal::Error,
                level: Level::Critical,
                payload: json!({
                    "event": "detached",
                    "build_dir": self.dir.display().to_string(),
                    "why": why,
                    "text": text,
                }),
                artifacts: Vec::new(),
            },
        );
    }

    /// The path names a directory the daemon is not watching (re-created, replaced, or back after
    /// a detach): new watches, its own event log, a full scan, and the STOP, pass files and
    /// heartbeat written there. What the daemon knows (passes run, history, fix attempts) is
    /// kept: re-creating the directory must not wipe a STOP.
    fn reattach(&mut self, id: attach::DirId) {
        // Watch before the scan, so nothing written in between is missed.
        self.source = None;
        let canon = match std::fs::canonicalize(&self.dir) {
            Ok(c) => c,
            Err(e) => {
                self.detach(format!(
                    "cannot resolve `{}`: {}",
                    self.dir.display(),
                    e.to_string().to_lowercase()
                ));
                return;
            }
        };
        // The old log's file went with the old directory. Dropping it first releases its lock
        // (the same file, when the directory was renamed away and back).
        let old_log = self.log.take().map(|l| l.path().to_path_buf());
        let context = ContextRef {
            app_ctx: canon.display().to_string(),
            motor_ctx: format!(
                "{}@{}+{}",
                self.protocol.id, self.protocol.version, self.protocol.sha256
            ),
        };
        let mut previous_events = 0;
        let mut log_moved = None;
        match events::open_locked(&self.dir) {
            Ok(events::Opened {
                file,
                resumed,
                torn_tail,
                moved_aside,
            }) => {
                previous_events = resumed.events.saturating_add(resumed.skipped);
                log_moved = moved_aside;
                match EventLog::new(&self.dir, file, torn_tail, self.trace_id.clone(), context) {
                    Ok(log) => self.log = Some(log),
                    Err(e) => self.fault(
                        "events",
                        format!(
                            "cannot append to `{}`: {}",
                            events::EVENTS_FILE,
                            e.to_string().to_lowercase()
                        ),
                    ),
                }
            }
            Err(events::LogError::Busy { path }) => {
                self.detach(format!(
                    "another referee watches the directory now at the build directory's path (`{path}` is locked)"
                ));
                return;
            }
            Err(events::LogError::Io { path, source }) => self.fault(
                "events",
                format!(
                    "cannot open `{path}`: {}",
                    source.to_string().to_lowercase()
                ),
            ),
        }
        if let Some((found, to)) = log_moved {
            self.log_moved_aside(found, &to);
        }
        let was = std::mem::replace(&mut self.attached, attach::State::Attached(id));
        self.detached_why = None;
        self.canon = canon;
        remove_stale_temps(&self.dir);
        self.stop = StopFile::new(&self.dir);
        self.stop.adopt();
        self.pass_files.clear();
        // A referee that cannot watch is blind: a fault (the heartbeat says `faulted`).
        match self.start_source(self.cfg.watch) {
            Ok(()) => self.clear_fault("watch"),
            Err(e) => self.fault("watch", format!("cannot watch the build directory: {e}")),
        }
        let text = format!(
            "build directory `{}` re-created or replaced ({}); re-attached: new watches ({}), a full rescan, its files written there",
            self.dir.display(),
            match was {
                attach::State::Attached(old) => format!("was {old}, now {id}"),
                attach::State::Detached => format!("now {id}"),
            },
            self.source_name()
        );
        self.incident(
            "reattach",
            text.clone(),
            &text,
            Record {
                scope: Scope::Motor,
                signal: Signal::Coverage,
                level: Level::Warn,
                payload: json!({
                    "event": "reattach",
                    "build_dir": self.canon.display().to_string(),
                    "dev": id.dev,
                    "ino": id.ino,
                    "previous_log": old_log.map(|p| p.display().to_string()),
                    "previous_lines": previous_events,
                    "text": text,
                }),
                artifacts: Vec::new(),
            },
        );
        if let Some((eval, snap)) = self.evaluate(None, false) {
            let eval = self.hold(eval, &snap);
            self.apply(eval, &BTreeSet::new(), &snap);
        }
        self.flush_outputs();
        self.beat(heartbeat::WATCHING);
    }

    // ---- judging --------------------------------------------------------------------------

    /// Scans and evaluates (only the instances `changed` touches, when given); faults on failure.
    fn evaluate(
        &mut self,
        changed: Option<&BTreeSet<String>>,
        final_: bool,
    ) -> Option<(Evaluation, Snapshot)> {
        if self.detached_why.is_some() {
            return None;
        }
        self.evaluated = true;
        let snap = match Snapshot::scan(&self.dir, self.cfg.limits) {
            Ok(s) => {
                self.clear_fault("scan");
                s
            }
            Err(e) => {
                self.fault("scan", format!("cannot scan the build directory: {e}"));
                return None;
            }
        };
        let opts = Options {
            final_,
            ran: self.ran.clone(),
            now: Some(Utc::now()),
        };
        let changed: Option<Vec<String>> = changed.map(|c| c.iter().cloned().collect());
        let protocol = &self.protocol;
        let published = self.published.as_ref();
        let result = catch_unwind(AssertUnwindSafe(|| match (&changed, published) {
            (Some(c), Some(prev)) if !final_ => {
                engine::evaluate_changed(protocol, &snap, &opts, Some((prev, c.as_slice())))
            }
            _ => engine::evaluate(protocol, &snap, &opts),
        }));
        match result {
            Ok(eval) => {
                self.clear_fault("evaluate");
                Some((eval, snap))
            }
            Err(p) => {
                self.fault(
                    "evaluate",
                    format!("the evaluation panicked: {}", panic_message(p.as_ref())),
                );
                None
            }
        }
    }

    fn instance(&self, pass: &str, check: &str) -> Option<&CheckInstance> {
        self.protocol
            .passes
            .iter()
            .find(|p| p.id == pass)?
            .checks
            .iter()
            .find(|i| i.def.id == check)
    }

    /// Until when a result's files (its evidence, and its inputs being written in place) are
    /// unsettled. Anything else — a writer's temp file, a file no input glob matches — never holds.
    fn unsettled_until(
        &self,
        r: &CheckResult,
        snap: &Snapshot,
        now: Instant,
        wall: SystemTime,
    ) -> Option<Instant> {
        let inst = self.instance(&r.pass, &r.check);
        let evidence = r.evidence.files.iter().map(|f| f.path.as_str());
        let moving = self
            .settle
            .moving()
            .filter(|p| inst.is_some_and(|i| settle::reads(&i.inputs, p)));
        evidence
            .chain(moving)
            .filter_map(|p| self.settle.fresh_until(p, snap.get(p), now, wall))
            .max()
    }

    /// The longest a result is held: a file written forever cannot jam the referee.
    fn max_hold(&self) -> Duration {
        (self.cfg.settle * 20).max(Duration::from_secs(3))
    }

    /// Holds back results that would newly become FAIL or INCONCLUSIVE (or would lift a standing
    /// STOP) while their files are still being written; schedules their re-check.
    fn hold(&mut self, mut eval: Evaluation, snap: &Snapshot) -> Evaluation {
        let now = Instant::now();
        let wall = SystemTime::now();
        self.settle.prune(now);
        let mut holds = BTreeMap::new();
        let mut recheck: Option<Instant> = None;
        for i in 0..eval.results.len() {
            let r = &eval.results[i];
            let key = r.key();
            let prev = self.statuses.get(&key).copied();
            if prev == Some(r.status) {
                continue;
            }
            let bad = matches!(r.status, Status::Fail | Status::Inconclusive);
            // A standing STOP is not lifted by a file caught mid-write either (a truncated file
            // must not let the pipeline through for a moment).
            let lifts_stop = prev == Some(Status::Fail) && r.severity == Severity::Blocking;
            if !bad && !lifts_stop {
                continue;
            }
            let Some(until) = self.unsettled_until(r, snap, now, wall) else {
                continue;
            };
            let since = self.holds.get(&key).map_or(now, |h| h.since);
            if now.saturating_duration_since(since) >= self.max_hold() {
                continue;
            }
            let previous = self
                .published
                .as_ref()
                .and_then(|p| p.results.iter().find(|x| x.key() == key))
                .cloned();
            // Nothing published yet: a fresh start shows WAITING; a restart keeps the status the
            // previous run left (a standing FAIL keeps its STOP until the files settle).
            let held = previous.unwrap_or_else(|| CheckResult {
                status: prev.unwrap_or(Status::Waiting),
                due: prev.is_some_and(|p| p != Status::Waiting),
                evidence: Evidence {
                    expected: r.evidence.expected.clone(),
                    observed: match prev {
                        Some(p) => format!(
                            "{} when the referee was restarted; its files are still being written (judged again when they settle)",
                            p.as_str()
                        ),
                        None => "settling: its files are still being written".into(),
                    },
                    details: Vec::new(),
                    files: Vec::new(),
                },
                ..r.clone()
            });
            eval.results[i] = held;
            holds.insert(key, Hold { since });
            recheck = recheck.max(Some(until));
        }
        self.holds = holds;
        if let Some(at) = recheck {
            self.recheck(at);
        }
        eval
    }

    /// Publishes an evaluation: pass runs, status changes (history, STOP raised/resolved), fix
    /// attempts and escalations. Writing the files is [`Daemon::flush_outputs`]'s job.
    fn apply(&mut self, eval: Evaluation, touched: &BTreeSet<String>, snap: &Snapshot) {
        let now = Utc::now();
        // Changes to the inputs of a check that was holding the pipeline are fix attempts.
        let stopping: Vec<String> = self
            .published
            .iter()
            .flat_map(|e| e.stops())
            .map(CheckResult::key)
            .collect();
        for key in stopping {
            let Some((pass, check)) = key.split_once(':') else {
                continue;
            };
            let Some(inst) = self.instance(pass, check) else {
                continue;
            };
            let paths: Vec<&String> = touched
                .iter()
                .filter(|p| inst.inputs.everything || settle::reads(&inst.inputs, p))
                .collect();
            if !paths.is_empty() {
                self.guard.touched(&key, paths);
            }
        }

        for ps in &eval.passes {
            if !ps.ran || self.ran.contains_key(&ps.id) {
                continue;
            }
            self.ran.insert(ps.id.clone(), ps.clone());
            let results: serde_json::Map<String, Value> = eval
                .results
                .iter()
                .filter(|r| r.pass == ps.id)
                .map(|r| (r.check.clone(), json!(r.status)))
                .collect();
            let reason = ps.reason.map(|r| format!("{r:?}").to_lowercase());
            self.say(&format!(
                "pass {} ran ({})",
                ps.id,
                reason.as_deref().unwrap_or("?")
            ));
            self.record(Record {
                scope: Scope::App,
                signal: Signal::Validation,
                level: Level::Info,
                payload: json!({
                    "event": "pass_run",
                    "pass": ps.id,
                    "reason": ps.reason,
                    "at": ps.at.map(|t| events::timestamp(&t)),
                    "results": results,
                }),
                artifacts: Vec::new(),
            });
        }

        for r in &eval.results {
            if !self.ran.contains_key(&r.pass) {
                continue;
            }
            let key = r.key();
            let prev = self.statuses.get(&key).copied();
            if prev == Some(r.status) {
                continue;
            }
            let was_stop = prev == Some(Status::Fail) && r.severity == Severity::Blocking;
            let note = if r.stops() {
                Some("STOP raised")
            } else if was_stop {
                Some("RESOLVED after STOP")
            } else {
                None
            };
            let hash = evidence_hash(&r.evidence);
            // A pass's first results are in its pass_run event; only bad ones enter the history.
            if prev.is_some() || matches!(r.status, Status::Fail | Status::Inconclusive) {
                self.history.push(Change {
                    at: now,
                    pass: r.pass.clone(),
                    check: r.check.clone(),
                    from: prev,
                    to: r.status,
                    note: note.map(str::to_string),
                    observed: Some(r.evidence.observed.clone()),
                });
                let level = match (r.status, r.severity) {
                    (Status::Fail, Severity::Blocking) => Level::Error,
                    (Status::Fail | Status::Inconclusive, _) => Level::Warn,
                    _ => Level::Info,
                };
                self.say(&format!(
                    "{} (pass {}): {} → {}{}",
                    r.check,
                    r.pass,
                    prev.map_or("—", Status::as_str),
                    r.status.as_str(),
                    if matches!(r.status, Status::Fail | Status::Inconclusive) {
                        format!(" — {}", r.evidence.observed)
                    } else {
                        String::new()
                    }
                ));
                self.record(Record {
                    scope: Scope::App,
                    signal: Signal::Validation,
                    level,
                    payload: json!({
                        "event": "result_changed",
                        "pass": r.pass,
                        "check": r.check,
                        "title": r.title,
                        "severity": r.severity.as_str(),
                        "from": prev,
                        "to": r.status,
                        "note": note,
                        "due": r.due,
                        "expected": r.evidence.expected,
                        "observed": r.evidence.observed,
                        "evidence_sha256": hash,
                    }),
                    artifacts: artifact_ids(&r.evidence),
                });
            }
            if r.stops() {
                self.guard.raised(&key, hash.clone());
                self.guard.echo(&key, input_state(&r.evidence, snap));
                self.say(&format!(
                    "STOP raised: {} (pass {}) — {}: {}",
                    r.check, r.pass, r.title, r.evidence.observed
                ));
                self.record(Record {
                    scope: Scope::App,
                    signal: Signal::Validation,
                    level: Level::Error,
                    payload: json!({
                        "event": "stop_raised",
                        "pass": r.pass,
                        "check": r.check,
                        "title": r.title,
                        "observed": r.evidence.observed,
                        "evidence_sha256": hash,
                    }),
                    artifacts: artifact_ids(&r.evidence),
                });
            } else if was_stop {
                self.guard.resolved(&key);
                self.say(&format!("STOP resolved: {} (pass {})", r.check, r.pass));
                self.record(Record {
                    scope: Scope::App,
                    signal: Signal::Validation,
                    level: Level::Info,
                    payload: json!({
                        "event": "stop_resolved",
                        "pass": r.pass,
                        "check": r.check,
                        "to": r.status,
                    }),
                    artifacts: artifact_ids(&r.evidence),
                });
            }
            self.statuses.insert(key, r.status);
        }

        // Fix attempts whose inputs have settled.
        let pending: Vec<(String, BTreeSet<String>)> = self
            .guard
            .pending()
            .map(|(k, p)| (k.clone(), p.clone()))
            .collect();
        let inst_now = Instant::now();
        let wall = SystemTime::now();
        for (key, paths) in pending {
            let Some(r) = eval.results.iter().find(|r| r.key() == key) else {
                self.guard.resolved(&key);
                continue;
            };
            if !r.stops() {
                self.guard.resolved(&key);
                continue;
            }
            let moving = paths
                .iter()
                .filter_map(|p| self.settle.fresh_until(p, snap.get(p), inst_now, wall))
                .max();
            if let Some(until) = moving {
                self.recheck(until);
                continue;
            }
            if self.guard.echo(&key, input_state(&r.evidence, snap)) {
                continue;
            }
            let a = self.guard.attempt(&key, evidence_hash(&r.evidence));
            self.say(&format!(
                "fix attempt {} on {} (pass {}): still failing{}",
                a.number,
                r.check,
                r.pass,
                if a.identical {
                    " (evidence unchanged)"
                } else {
                    ""
                }
            ));
            self.record(Record {
                scope: Scope::App,
                signal: Signal::Validation,
                level: Level::Warn,
                payload: json!({
                    "event": "fix_attempt",
                    "pass": r.pass,
                    "check": r.check,
                    "attempt": a.number,
                    "identical": a.identical,
                    "evidence_sha256": evidence_hash(&r.evidence),
                }),
                artifacts: artifact_ids(&r.evidence),
            });
            if let Some(reason) = a.escalate {
                let text = format!(
                    "{} (pass {}) ESCALATED: human review required — {reason}",
                    r.check, r.pass
                );
                self.history.push(Change {
                    at: now,
                    pass: r.pass.clone(),
                    check: r.check.clone(),
                    from: Some(Status::Fail),
                    to: Status::Fail,
                    note: Some(format!("ESCALATED: human review required — {reason}")),
                    observed: None,
                });
                self.incident(
                    "escalation",
                    text.clone(),
                    &format!("ESCALATED: {text}"),
                    Record {
                        scope: Scope::App,
                        signal: Signal::Validation,
                        level: Level::Critical,
                        payload: json!({
                            "event": "escalation",
                            "pass": r.pass,
                            "check": r.check,
                            "reason": reason,
                            "attempts": a.number,
                            "text": text,
                        }),
                        artifacts: artifact_ids(&r.evidence),
                    },
                );
            }
        }

        let complete = eval.complete;
        self.published = Some(eval);
        if complete && self.holds.is_empty() && !self.guard.has_pending() {
            // Finish once the directory has been quiet for a settle window.
            let at = (self.last_activity + self.settle.window()).max(Instant::now());
            self.finish_at = Some(at);
        } else {
            self.finish_at = None;
        }
    }

    // ---- writing ---------------------------------------------------------------------------

    fn context(&self, written: Option<DateTime<Utc>>, ended: Option<String>) -> Context {
        Context {
            build_dir: self.dir.clone(),
            started: Some(self.started),
            written,
            ended,
            history: self.history.clone(),
            incidents: self.incidents.clone(),
            escalations: self.guard.escalations(),
        }
    }

    fn fault_list(&self) -> Vec<(String, String)> {
        self.faults
            .iter()
            .map(|(a, m)| (a.clone(), m.clone()))
            .collect()
    }

    /// Brings the STOP file and the pass files in line with the published evaluation.
    fn flush_outputs(&mut self) {
        if self.detached_why.is_some() {
            return;
        }
        let Some(eval) = self.published.take() else {
            self.sync_stop(None);
            return;
        };
        self.sync_stop(Some(&eval));
        let bare = self.context(None, None);
        let stamped = self.context(Some(Utc::now()), None);
        for pass in eval.passes.iter().filter(|p| p.ran) {
            let key = markdown::pass_file(&self.protocol, &eval, &pass.id, &bare);
            if self.pass_files.get(&pass.id) == Some(&key) {
                continue;
            }
            let name = outputs::pass_file(&pass.id);
            let text = markdown::pass_file(&self.protocol, &eval, &pass.id, &stamped);
            match outputs::write_atomic(&self.dir, &name, &text) {
                Ok(w) => {
                    self.pass_files.insert(pass.id.clone(), key);
                    self.clear_fault(&format!("write {name}"));
                    if let Some(found) = w.replaced {
                        self.own_file_tampered(&name, found);
                    }
                }
                Err(e) => self.fault(
                    &format!("write {name}"),
                    format!("cannot write `{name}`: {}", e.to_string().to_lowercase()),
                ),
            }
        }
        self.published = Some(eval);
    }

    fn sync_stop(&mut self, eval: Option<&Evaluation>) {
        let ctx = self.context(None, None);
        let checks = eval.and_then(|e| markdown::stop_file(&self.protocol, e, &ctx));
        let faults = match self.cfg.on_fault {
            FaultPolicy::Stop => self.fault_list(),
            FaultPolicy::Continue => Vec::new(),
        };
        let was = self.stop.standing();
        if eval.is_some() && self.holds.is_empty() {
            // Judged with nothing held back: a STOP adopted at start now follows the evaluation.
            self.stop.judged();
        }
        let want = stop::compose(checks, &faults);
        self.wants_stop = want.is_some();
        let synced = self.stop.sync(want);
        if let Some(t) = self.stop.take_noticed() {
            self.stop_tampered(&t);
        }
        match synced {
            Ok(Synced::Unchanged | Synced::Kept) => {}
            Ok(Synced::Written) => {
                self.clear_fault("write OBSERVER-STOP.md");
                if !was {
                    self.say(&format!("{STOP_FILE} written"));
                }
                self.beat(heartbeat::WATCHING);
            }
            Ok(Synced::Removed) => {
                self.clear_fault("write OBSERVER-STOP.md");
                self.say(&format!("{STOP_FILE} removed: no BLOCKING failure stands"));
                self.beat(heartbeat::WATCHING);
            }
            Err(e) => self.fault(
                "write OBSERVER-STOP.md",
                format!(
                    "cannot write `{STOP_FILE}`: {}",
                    e.to_string().to_lowercase()
                ),
            ),
        }
    }

    /// Compares the STOP file with what the daemon wrote; restores it and records tamper.
    fn check_stop(&mut self) {
        if self.detached_why.is_some() {
            return;
        }
        match self.stop.check() {
            Ok(None) => {}
            Ok(Some(t)) => self.stop_tampered(&t),
            Err(e) => self.fault(
                "write OBSERVER-STOP.md",
                format!(
                    "cannot check or restore `{STOP_FILE}`: {}",
                    e.to_string().to_lowercase()
                ),
            ),
        }
    }

    fn beat(&mut self, state: &str) {
        if self.detached_why.is_some() {
            // The path names no directory of ours: a heartbeat written there would vouch for it.
            return;
        }
        let area = format!("write {}", heartbeat::HEARTBEAT_FILE);
        // Every fault standing, the heartbeat's own included: when this write clears it, clearing
        // brings the next beat forward, and that one says `watching`.
        let faults: Vec<String> = self
            .faults
            .values()
            .map(|m| m.chars().take(300).collect())
            .take(8)
            .collect();
        let state = if state == heartbeat::WATCHING && !faults.is_empty() {
            heartbeat::FAULTED
        } else {
            state
        };
        let hb = heartbeat::Heartbeat {
            pid: std::process::id(),
            started: self.started,
            last_beat: Utc::now(),
            interval_secs: self.cfg.heartbeat.as_secs_f64(),
            protocol: heartbeat::ProtocolRef {
                id: self.protocol.id.clone(),
                sha256: self.protocol.sha256.clone(),
            },
            state: state.to_string(),
            stop: self.stop.standing(),
            // The STOP as last composed, and one for a fault since under `--on-fault stop`.
            stop_wanted: self.wants_stop
                || (self.cfg.on_fault == FaultPolicy::Stop && !faults.is_empty()),
            faults,
            build_dir: self.canon.display().to_string(),
            dir: match &self.attached {
                attach::State::Attached(id) => Some(*id),
                attach::State::Detached => None,
            },
            proc_start: self.proc_start,
            trace_id: self.trace_id.clone(),
        };
        match heartbeat::write(&self.dir, &hb) {
            Ok(heartbeat::Written::Atomic(w)) => {
                self.clear_fault(&area);
                if let Some(found) = w.replaced {
                    self.own_file_tampered(heartbeat::HEARTBEAT_FILE, found);
                }
            }
            Ok(heartbeat::Written::InPlace(e)) => self.fault(
                &area,
                format!(
                    "cannot write `{}` atomically ({}); overwrote it in place",
                    heartbeat::HEARTBEAT_FILE,
                    e.to_string().to_lowercase()
                ),
            ),
            Err(e) => self.fault(
                &area,
                format!(
                    "cannot write `{}`: {}",
                    heartbeat::HEARTBEAT_FILE,
                    e.to_string().to_lowercase()
                ),
            ),
        }
    }

    /// Edits to the protocol file mid-run are ignored, and recorded once per new content.
    fn check_protocol_file(&mut self) {
        let Some(pf) = &mut self.protocol_file else {
            return;
        };
        let now_seen = std::fs::metadata(&pf.path)
            .ok()
            .and_then(|m| Some((m.modified().ok()?, m.len())));
        if now_seen == pf.seen {
            return;
        }
        pf.seen = now_seen;
        let hash = match std::fs::read(&pf.path) {
            Ok(b) => crate::protocol::hex(&Sha256::digest(&b)),
            Err(_) => "(unreadable or removed)".to_string(),
        };
        if hash == self.protocol.sha256 || !pf.reported.insert(hash.clone()) {
            return;
        }
        let path = pf.path.display().to_string();
        let text = format!(
            "protocol file `{path}` was edited mid-run (now sha256 {hash}); ignored: the referee keeps judging with the protocol it loaded (sha256 {})",
            self.protocol.sha256
        );
        self.incident(
            "protocol edit",
            text.clone(),
            &text,
            Record {
                scope: Scope::Motor,
                signal: Signal::Coverage,
                level: Level::Warn,
                payload: json!({
                    "event": "protocol_edit",
                    "path": path,
                    "loaded_sha256": self.protocol.sha256,
                    "now_sha256": hash,
                    "text": text,
                }),
                artifacts: Vec::new(),
            },
        );
    }

    /// Something about the referee's own files or itself: kept for the report, said to the
    /// user, and logged as an event.
    fn incident(&mut self, kind: &str, text: String, said: &str, record: Record) {
        self.incidents.push(Incident {
            at: Utc::now(),
            kind: kind.to_string(),
            text,
        });
        self.say(said);
        self.record(record);
    }

    fn rescan_event(&mut self, why: &str) {
        self.say(&format!("rescan: {why}"));
        self.record(Record {
            scope: Scope::Motor,
            signal: Signal::Coverage,
            level: Level::Warn,
            payload: json!({"event": "rescan", "why": why}),
            artifacts: Vec::new(),
        });
    }

    // ---- faults, events, lines -------------------------------------------------------------

    /// The referee's own fault: recorded once per distinct message; under `--on-fault stop` the
    /// STOP file names it (at the next flush).
    fn fault(&mut self, area: &str, message: String) {
        if self.faults.get(area) == Some(&message) {
            return;
        }
        self.faults.insert(area.to_string(), message.clone());
        // The heartbeat says `faulted` at once, not at the next tick.
        self.next_beat = Instant::now();
        eprintln!("referee: fault: {message}");
        self.say(&format!("fault: {message}"));
        self.incidents.push(Incident {
            at: Utc::now(),
            kind: "fault".into(),
            text: message.clone(),
        });
        if area != "events" {
            self.record(Record {
                scope: Scope::Motor,
                signal: Signal::Error,
                level: match self.cfg.on_fault {
                    FaultPolicy::Stop => Level::Critical,
                    FaultPolicy::Continue => Level::Error,
                },
                payload: json!({
                    "event": "fault",
                    "area": area,
                    "message": message,
                    "policy": match self.cfg.on_fault { FaultPolicy::Stop => "stop", FaultPolicy::Continue => "continue" },
                    "text": message,
                }),
                artifacts: Vec::new(),
            });
        }
    }

    fn clear_fault(&mut self, area: &str) {
        if let Some(message) = self.faults.remove(area) {
            self.next_beat = Instant::now();
            self.say(&format!("fault cleared: {message}"));
            self.record(Record {
                scope: Scope::Motor,
                signal: Signal::Error,
                level: Level::Info,
                payload: json!({"event": "fault", "area": area, "cleared": true, "message": message}),
                artifacts: Vec::new(),
            });
        }
    }

    fn record(&mut self, r: Record) {
        let Some(log) = &mut self.log else {
            return;
        };
        match log.append(&r, &Utc::now()) {
            Ok(()) => {
                if self.faults.contains_key("events") {
                    self.faults.remove("events");
                    self.say("fault cleared: the event log is writable again");
                }
            }
            Err(e) => self.fault(
                "events",
                format!(
                    "cannot append to `{}`: {}",
                    events::EVENTS_FILE,
                    e.to_string().to_lowercase()
                ),
            ),
        }
    }

    /// One human line: stdout (unless `--quiet`) and the configured sink.
    fn say(&self, text: &str) {
        let line = format!("[{}] {text}", chrono::Local::now().format("%H:%M:%S%.3f"));
        if !self.cfg.quiet {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
        if let Some(tx) = &self.cfg.lines {
            let _ = tx.send(line);
        }
    }

    // ---- the end --------------------------------------------------------------------------

    fn finish(&mut self, reason: EndReason) -> Outcome {
        let final_ = reason.is_final();
        // Judge everything once more, as it stands (as final when the pipeline is gone).
        if let Some((eval, snap)) = self.evaluate(None, final_) {
            // Not final (a signal, the timeout): a file caught mid-write is still not judged —
            // a standing STOP is not lifted, nor a new one raised, on half a file, and no referee
            // is left to put it right. Final: the pipeline is gone, so are its writes.
            let eval = if final_ {
                self.holds.clear();
                eval
            } else {
                self.hold(eval, &snap)
            };
            self.apply(eval, &BTreeSet::new(), &snap);
        }
        self.flush_outputs();
        let eval = self.published.clone().unwrap_or_else(|| Evaluation {
            complete: false,
            verdict: None,
            verdict_at: None,
            verdict_note: None,
            final_,
            passes: Vec::new(),
            results: Vec::new(),
        });
        let ended = reason.describe();
        let written = Utc::now();
        let ctx = self.context(Some(written), Some(ended.clone()));
        let text = markdown::report(&self.protocol, &eval, &ctx);
        let report = match outputs::write_atomic(&self.dir, REPORT_FILE, &text) {
            Ok(w) => {
                if let Some(found) = w.replaced {
                    // After the report, but in the log (the report was already rendered).
                    self.own_file_tampered(REPORT_FILE, found);
                }
                Some(self.dir.join(REPORT_FILE))
            }
            Err(e) => {
                self.fault(
                    "write OBSERVER-REPORT.md",
                    format!(
                        "cannot write `{REPORT_FILE}`: {}",
                        e.to_string().to_lowercase()
                    ),
                );
                self.flush_outputs();
                None
            }
        };
        let unresolved: Vec<String> = eval.stops().map(CheckResult::key).collect();
        let faulted = self.cfg.on_fault == FaultPolicy::Stop && !self.faults.is_empty();
        let exit = if report.is_none() || faulted {
            ExitCode::Error
        } else if !unresolved.is_empty() {
            ExitCode::Violation
        } else {
            ExitCode::Ok
        };
        self.beat(heartbeat::FINISHED);
        let results: Vec<Value> = eval
            .results
            .iter()
            .map(|r| json!({"pass": r.pass, "check": r.check, "severity": r.severity.as_str(), "status": r.status}))
            .collect();
        self.record(Record {
            scope: Scope::Motor,
            signal: Signal::Coverage,
            level: if exit == ExitCode::Ok {
                Level::Info
            } else {
                Level::Error
            },
            payload: json!({
                "event": "end",
                "reason": reason.tag(),
                "text": ended,
                "final": final_,
                "complete": eval.complete,
                "verdict": eval.verdict,
                "exit_code": exit as u8,
                "stop": self.stop.standing(),
                "unresolved": unresolved,
                "summary": eval.summary(),
                "report": report.as_ref().map(|p| p.display().to_string()),
                "results": results,
            }),
            artifacts: markdown::artifacts(&eval)
                .into_iter()
                .filter_map(|f| f.sha256.map(|h| format!("{}@{h}", f.path)))
                .collect(),
        });
        if let Some(log) = &self.log {
            let _ = log.sync();
        }
        self.say(&format!("finished: {ended}"));
        if let Some(p) = &report {
            self.say(&format!("report: {}", p.display()));
        }
        Outcome {
            exit,
            reason,
            report,
            evaluation: eval,
            faults: self.fault_list(),
        }
    }
}

/// At startup, a file of the referee's own that cannot be written: fatal under `--on-fault stop`,
/// a warning (and no such file) under `continue`.
fn own_file_fault<T>(
    cfg: &Config,
    dir: &Path,
    name: &str,
    e: &std::io::Error,
) -> Result<Option<T>, DaemonError> {
    let message = e.to_string().to_lowercase();
    match cfg.on_fault {
        FaultPolicy::Stop => Err(DaemonError::OwnFile {
            path: dir.join(name).display().to_string(),
            message,
        }),
        FaultPolicy::Continue => {
            eprintln!("referee: warning: cannot write `{name}` ({message}); continuing without it (--on-fault continue)");
            Ok(None)
        }
    }
}

/// The evidence with its files' exact mtimes: what tells a rewrite from an echo of one.
fn input_state(ev: &Evidence, snap: &Snapshot) -> String {
    let mtimes: Vec<Option<u128>> = ev
        .files
        .iter()
        .map(|f| {
            snap.get(&f.path)
                .and_then(|e| e.mtime())
                .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                .map(|d| d.as_nanos())
        })
        .collect();
    guard::state_hash(ev, &mtimes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90s").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_duration("30m").unwrap(), Duration::from_secs(1800));
        assert_eq!(parse_duration("2h").unwrap(), Duration::from_secs(7200));
        assert_eq!(parse_duration("1h30m").unwrap(), Duration::from_secs(5400));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("45").unwrap(), Duration::from_secs(45));
        assert_eq!(parse_duration("1.5").unwrap(), Duration::from_millis(1500));
        assert!(parse_duration("").is_err());
        assert!(parse_duration("5x").is_err());
        assert!(parse_duration("m").is_err());
        assert!(parse_duration("-3").is_err());
        assert_eq!(human(Duration::from_secs(90)), "90s");
        assert_eq!(human(Duration::from_secs(1800)), "30m");
        assert_eq!(human(Duration::from_secs(7200)), "2h");
        assert_eq!(human(Duration::from_millis(1500)), "1500ms");
    }

    #[test]
    fn paths_relative_to_the_root() {
        let root = Path::new("/b");
        assert_eq!(
            rel_of(root, Path::new("/b/x/y.md")).as_deref(),
            Some("x/y.md")
        );
        assert_eq!(rel_of(root, Path::new("/b")).as_deref(), Some(""));
        assert_eq!(rel_of(root, Path::new("/c/x")), None);
        // The snapshot's escaped form, not a lossy one.
        assert_eq!(
            rel_of(root, Path::new("/b/a\nb.md")).as_deref(),
            Some("a\\nb.md")
        );
    }

    #[test]
    fn batches_coalesce_and_keep_the_latest_event() {
        let mut b = Batch::default();
        b.add(Msg::Changed(vec![
            ("a.md".into(), ChangeKind::Written),
            (STOP_FILE.into(), ChangeKind::Written),
            (".b.tmp".into(), ChangeKind::Written),
            ("c.md".into(), ChangeKind::Written),
        ]));
        b.add(Msg::Changed(vec![
            ("a.md".into(), ChangeKind::RenamedIn),
            (".b.tmp".into(), ChangeKind::Removed),
            ("c.md".into(), ChangeKind::Metadata),
            ("d.md".into(), ChangeKind::Metadata),
        ]));
        b.add(Msg::Root {
            lost: false,
            source: 1,
        });
        assert!(b.root_lost.is_empty(), "a touch of the root loses no watch");
        b.add(Msg::Root {
            lost: true,
            source: 1,
        });
        b.add(Msg::Root {
            lost: false,
            source: 1,
        });
        b.add(Msg::Root {
            lost: true,
            source: 2,
        });
        assert_eq!(
            b.root_lost,
            BTreeSet::from([1, 2]),
            "once lost, a source's watch stays lost"
        );
        b.add(Msg::Shutdown(Shutdown::Signal("SIGTERM".into())));
        b.add(Msg::PipelineExited(7));
        assert_eq!(b.paths.len(), 4);
        assert_eq!(b.paths["a.md"], ChangeKind::RenamedIn);
        assert_eq!(b.paths[".b.tmp"], ChangeKind::Removed);
        assert_eq!(
            b.paths["c.md"],
            ChangeKind::Written,
            "a touch after a write"
        );
        assert_eq!(b.paths["d.md"], ChangeKind::Metadata);
        assert!(b.stop_touched);
        assert_eq!(
            b.end,
            Some(EndReason::Shutdown(Shutdown::Signal("SIGTERM".into())))
        );
    }
}
