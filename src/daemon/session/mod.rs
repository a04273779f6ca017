//! A session: one build directory's referee. It holds what the referee knows of that directory
//! (the [`Ledger`] of passes, statuses, history and fix attempts; settle holds; incidents;
//! faults; timers) and its own files (the event log, the STOP file, pass files, heartbeat).
//!
//! This module owns a session's life: opening (lock and resume the event log, adopt a STOP left
//! standing), judging on what the loop hands it ([`Batch`]), its timers, and the end (the final
//! evaluation and report). What an evaluation changes is decided in [`super::decide`]; writing
//! the files is [`write`]'s; the directory's identity is [`identity`]'s. A session never reads
//! an event source or sleeps: the loop ([`super::driver`]) owns those and drives any number of
//! sessions.

mod identity;
mod tamper;
mod write;

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use crate::artifacts::{Kind, Snapshot};
use crate::checks::is_own_file;
use crate::engine::{self, CheckResult, Evaluation, Options};
use crate::exit::ExitCode;
use crate::outputs::{markdown, Incident, REPORT_FILE};
use crate::protocol::Protocol;
use crate::watch::ChangeKind;

use super::decide::{Clock, Ledger, Seen};
use super::event::{Ended, Event, FinalResult, ProtocolInfo, RunOptions, Started};
use super::events::{self, ContextRef, EventLog, Record};
use super::settle::Settle;
use super::stop::StopFile;
use super::{attach, heartbeat, Config, DaemonError, EndReason, FaultPolicy, Outcome};

/// What the loop hands a session at a wake-up: what happened in its directory since the last.
#[derive(Debug, Default)]
pub struct Batch {
    /// The event source says the directory's own watch is gone (deleted, moved).
    pub root_lost: bool,
    /// Relative paths (the referee's own files already dropped, except the STOP file), and the
    /// latest of what happened to each.
    pub paths: BTreeMap<String, ChangeKind>,
    /// Someone touched the STOP file.
    pub stop_touched: bool,
    /// Events may have been lost: judge everything again (why).
    pub rescan: Vec<String>,
}

impl Batch {
    /// Adds one path change: the latest event decides, but a metadata change after a write
    /// leaves it a write.
    pub fn add(&mut self, rel: String, kind: ChangeKind) {
        if rel == crate::outputs::STOP_FILE {
            self.stop_touched = true;
        } else if kind == ChangeKind::Metadata {
            self.paths.entry(rel).or_insert(kind);
        } else {
            self.paths.insert(rel, kind);
        }
    }
}

/// What the session asks of the loop's event source.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rewatch {
    /// The directory at the path is a new one: watch it (from the path).
    Start,
    /// Nothing usable is at the path: stop watching.
    Drop,
}

/// The protocol file, watched cheaply at heartbeat ticks for edits (which are ignored).
#[derive(Debug)]
struct ProtocolFile {
    path: PathBuf,
    seen: Option<(SystemTime, u64)>,
    reported: BTreeSet<String>,
}

/// One build directory's referee.
pub struct Session {
    cfg: Config,
    protocol: Arc<Protocol>,
    /// Put before every human line (the build's name, under `watch --root`).
    label: Option<String>,
    /// The build directory as given (for display and writes).
    dir: PathBuf,
    /// Its canonical path (events arrive under it).
    canon: PathBuf,
    /// The directory watched, or detached.
    attached: attach::State,
    /// Why it is detached (said and recorded once per reason).
    detached_why: Option<String>,
    /// What the loop watches with (`inotify`, `polling every 200 ms`), for the lines and events.
    source: String,
    rewatch: Option<Rewatch>,
    /// This process's start time, for the heartbeat (tells it from a recycled pid).
    proc_start: Option<u64>,
    /// Whether a STOP should stand as of the last sync, written or not (for the heartbeat).
    wants_stop: bool,
    started: DateTime<Utc>,
    trace_id: String,
    log: Option<EventLog>,
    ledger: Ledger,
    incidents: Vec<Incident>,
    faults: BTreeMap<String, String>,
    /// The faults changed since the STOP file was last brought in line (it names them).
    faults_changed: bool,
    settle: Settle,
    stop: StopFile,
    pass_files: BTreeMap<String, String>,
    protocol_file: Option<ProtocolFile>,
    /// `--exit-with` is checked at ticks (no pidfd).
    pub(super) pid_by_ticks: bool,
    /// An evaluation ran since memory was last handed back.
    evaluated: bool,
    // Timers.
    next_beat: Instant,
    recheck_at: Option<Instant>,
    finish_at: Option<Instant>,
    timeout_at: Option<Instant>,
    last_activity: Instant,
    end: Option<EndReason>,
    /// Resumed state, STOP adoption and log trouble found while opening, told at [`Session::announce`].
    opening: Option<Opening>,
}

/// What opening found, said once the event source is known.
struct Opening {
    resumed: Option<events::Resumed>,
    rotated: Option<PathBuf>,
    log_moved: Option<(crate::outputs::Foreign, PathBuf)>,
    damaged: Option<events::Resumed>,
    adopted: bool,
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

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

fn context_ref(canon: &Path, p: &Protocol) -> ContextRef {
    ContextRef {
        app_ctx: canon.display().to_string(),
        motor_ctx: format!("{}@{}+{}", p.id, p.version, p.sha256),
    }
}

impl Session {
    /// Opens a build directory: checks it, locks and reads its event log (resume, or rotate with
    /// `--fresh`), and adopts a STOP left standing before anything can touch it. Nothing is
    /// judged yet; the loop starts watching, then calls [`Session::announce`] and
    /// [`Session::first_evaluation`].
    pub fn open(
        cfg: Config,
        protocol: Arc<Protocol>,
        label: Option<String>,
    ) -> Result<Session, DaemonError> {
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
        let mut opening = Opening {
            resumed: None,
            rotated: None,
            log_moved: None,
            damaged: None,
            adopted: false,
        };
        // The event log: lock it (one referee per directory), read it, resume or rotate.
        let log = match events::open_locked(&dir) {
            Ok(events::Opened {
                file,
                resumed: r,
                torn_tail,
                moved_aside,
            }) => {
                // Holding the lock, no other referee writes here: its temp files are leftovers.
                remove_stale_temps(&dir);
                opening.log_moved = moved_aside;
                let (file, torn_tail) = if r.events == 0 && r.skipped == 0 {
                    (file, torn_tail)
                } else if cfg.fresh {
                    let to = events::rotate(&dir, &now).map_err(|e| DaemonError::OwnFile {
                        path: dir.join(events::EVENTS_FILE).display().to_string(),
                        message: format!("cannot move it aside: {e}"),
                    })?;
                    opening.rotated = Some(to);
                    let reopened = events::open_locked(&dir)?;
                    drop(file);
                    (reopened.file, reopened.torn_tail)
                } else {
                    // Reported once the new log is open (a log of nothing but garbage too).
                    opening.damaged = (r.skipped > 0).then(|| r.clone());
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
                        opening.resumed = Some(r);
                    }
                    (file, torn_tail)
                };
                let context = context_ref(&canon, &protocol);
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
        let mut stop = StopFile::new(&dir);
        // A STOP left standing is adopted before anything else can touch it, and stays as it is
        // until the first settled evaluation (no resolve-then-raise gap across a restart).
        opening.adopted = stop.adopt();
        Ok(Session {
            settle: Settle::new(cfg.settle),
            ledger: Ledger::new(cfg.max_fix_attempts, cfg.settle),
            stop,
            timeout_at: cfg.timeout.map(|t| start + t),
            next_beat: start,
            cfg,
            protocol,
            label,
            dir,
            canon,
            attached: attach::State::Attached(dir_id),
            detached_why: None,
            source: "nothing".into(),
            rewatch: None,
            proc_start: heartbeat::proc_start(std::process::id()),
            wants_stop: false,
            started: now,
            trace_id: trace,
            log,
            incidents: Vec::new(),
            faults: BTreeMap::new(),
            faults_changed: false,
            pass_files: BTreeMap::new(),
            protocol_file,
            pid_by_ticks: false,
            evaluated: false,
            recheck_at: None,
            finish_at: None,
            last_activity: start,
            end: None,
            opening: Some(opening),
        })
    }

    /// The directory's canonical path, as events name it.
    pub fn canon(&self) -> &Path {
        &self.canon
    }

    /// The directory as given.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// What the session needs of the event source, once.
    pub fn take_rewatch(&mut self) -> Option<Rewatch> {
        self.rewatch.take()
    }

    /// Whether the session has evaluated since the last call (memory worth handing back).
    pub fn take_evaluated(&mut self) -> bool {
        std::mem::take(&mut self.evaluated)
    }

    /// The loop's event source changed (or could not start: `Err`, a fault).
    pub fn source_is(&mut self, source: Result<String, String>) {
        match source {
            Ok(name) => {
                self.source = name;
                self.clear_fault("watch");
            }
            Err(e) => {
                self.source = "nothing".into();
                self.fault("watch", format!("cannot watch the build directory: {e}"));
            }
        }
    }

    fn run_options(&self) -> RunOptions {
        RunOptions {
            watch: self.source.clone(),
            exit_with: self.cfg.exit_with,
            timeout_secs: self.cfg.timeout.map(|t| t.as_secs_f64()),
            on_fault: self.cfg.on_fault.as_str().into(),
            max_fix_attempts: self.cfg.max_fix_attempts,
            heartbeat_secs: self.cfg.heartbeat.as_secs_f64(),
            settle_ms: self.cfg.settle.as_millis() as u64,
            max_read_bytes: self.cfg.limits.max_read_bytes,
        }
    }

    /// The start (or restart) event and line; restores the state of a resumed run; tells what
    /// opening found (a log moved aside or damaged, a STOP adopted).
    pub fn announce(&mut self, warning: Option<String>) {
        let Some(opening) = self.opening.take() else {
            return;
        };
        let p = &self.protocol;
        let run = Started {
            protocol: ProtocolInfo {
                id: p.id.clone(),
                version: p.version.clone(),
                sha256: p.sha256.clone(),
                origin: p.origin.clone(),
            },
            started: None,
            pid: std::process::id(),
            build_dir: self.canon.display().to_string(),
            options: self.run_options(),
            warning,
        };
        self.say(&format!(
            "watching `{}` ({}) — protocol {} {} (sha256 {}…), trace {}",
            self.dir.display(),
            self.source,
            p.id,
            p.version,
            &p.sha256[..12.min(p.sha256.len())],
            self.trace_id
        ));
        let raised_by_referee = opening
            .resumed
            .as_ref()
            .is_some_and(|r| !r.attempts.is_empty());
        match opening.resumed {
            Some(r) => {
                let text = format!(
                    "restarted: resumed from {} ({} events, {} history entries; the previous run {})",
                    events::EVENTS_FILE,
                    r.events,
                    r.history.len(),
                    if r.ended { "had finished" } else { "was interrupted" }
                );
                self.started = r.started.unwrap_or(self.started);
                let previous_trace_ids = r.trace_ids.clone();
                let skipped_lines = r.skipped;
                self.incidents = r.incidents.clone();
                self.ledger.resume(r);
                self.emit(
                    Event::Restart {
                        run: Started {
                            started: Some(events::timestamp(&self.started)),
                            ..run
                        },
                        previous_trace_ids,
                        skipped_lines,
                        text,
                    }
                    .into(),
                );
            }
            None => {
                if let Some(to) = &opening.rotated {
                    self.say(&format!(
                        "--fresh: the previous event log was moved to `{}`",
                        to.display()
                    ));
                }
                self.emit(
                    Event::Start {
                        run: Started {
                            started: Some(events::timestamp(&self.started)),
                            ..run
                        },
                        rotated: opening.rotated.map(|r| r.display().to_string()),
                    }
                    .into(),
                );
            }
        }
        if let Some((found, to)) = opening.log_moved {
            self.log_moved_aside(found, &to);
        }
        if let Some(r) = opening.damaged {
            self.log_damaged(&r);
        }
        if opening.adopted {
            self.stop_adopted(raised_by_referee);
        }
    }

    // ---- judging ----------------------------------------------------------------------------

    /// The first look at the directory, once it is watched.
    pub fn first_evaluation(&mut self) {
        self.judge(None);
        self.tick();
    }

    /// Judges what changed (everything when `touched` is `None`) and carries out what that
    /// decides; then brings the files in line.
    fn judge(&mut self, touched: Option<&BTreeSet<String>>) {
        if let Some((eval, snap)) = self.evaluate(touched, false) {
            // A new directory may have had files before the watch on it existed: look again
            // once it has settled (correctness first; the scan is full anyway).
            if touched.is_some_and(|t| {
                t.iter()
                    .any(|p| snap.get(p).is_some_and(|e| e.kind == Kind::Dir))
            }) {
                self.recheck(Instant::now() + self.settle.window());
            }
            let eval = self.hold(eval, &snap);
            self.publish(eval, touched.unwrap_or(&BTreeSet::new()), &snap);
        }
        self.flush_outputs();
    }

    /// What arrived for this directory since the loop last woke.
    pub fn handle(&mut self, batch: Batch) {
        // One stat per wake-up: nothing is judged or written for a directory no longer there.
        self.check_dir(batch.root_lost);
        if self.detached_why.is_some() {
            return;
        }
        let full = !batch.rescan.is_empty();
        for why in batch.rescan {
            self.emit(Event::Rescan { why }.into());
        }
        let now = Instant::now();
        for (rel, kind) in &batch.paths {
            self.settle.saw(rel, *kind, now);
            self.last_activity = now;
        }
        let touched: BTreeSet<String> = batch.paths.into_keys().collect();
        if full {
            self.judge(None);
        } else if !touched.is_empty() {
            self.judge(Some(&touched));
        } else {
            self.flush_outputs();
        }
        if batch.stop_touched {
            self.check_stop();
        }
    }

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
            ran: self.ledger.ran.clone(),
            now: Some(Utc::now()),
        };
        let changed: Option<Vec<String>> = changed.map(|c| c.iter().cloned().collect());
        let protocol = &*self.protocol;
        let published = self.ledger.published.as_ref();
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

    /// Holds back new failures whose files are still being written (see [`Ledger::hold`]).
    fn hold(&mut self, eval: Evaluation, snap: &Snapshot) -> Evaluation {
        let now = Instant::now();
        self.settle.prune(now);
        let seen = Seen {
            settle: &self.settle,
            snap,
            now,
            wall: SystemTime::now(),
        };
        let (eval, recheck) = self.ledger.hold(&self.protocol, eval, &seen, now);
        if let Some(at) = recheck {
            self.recheck(at);
        }
        eval
    }

    /// Publishes an evaluation (see [`Ledger::apply`]) and carries out what it decided.
    fn publish(&mut self, eval: Evaluation, touched: &BTreeSet<String>, snap: &Snapshot) {
        let clock = Clock {
            now: Instant::now(),
            wall: Utc::now(),
        };
        let seen = Seen {
            settle: &self.settle,
            snap,
            now: clock.now,
            wall: SystemTime::now(),
        };
        let decided = self
            .ledger
            .apply(&self.protocol, eval, touched, &seen, clock);
        for r in decided.records {
            self.emit(r);
        }
        if let Some(at) = decided.recheck {
            self.recheck(at);
        }
        self.finish_at = decided.may_finish.then(|| {
            // Finish once the directory has been quiet for a settle window.
            (self.last_activity + self.settle.window()).max(Instant::now())
        });
    }

    // ---- timers -------------------------------------------------------------------------------

    /// When this session next needs the loop.
    pub fn next_deadline(&self) -> Instant {
        [self.recheck_at, self.finish_at, self.timeout_at]
            .into_iter()
            .flatten()
            .fold(self.next_beat, Instant::min)
    }

    fn recheck(&mut self, at: Instant) {
        self.recheck_at = Some(self.recheck_at.map_or(at, |t| t.min(at)));
    }

    /// Runs what is due: the timeout, a settle re-check, finishing a complete run, the heartbeat.
    pub fn timers(&mut self) {
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
            self.judge(None);
        }
        if self.finish_at.is_some_and(|t| t <= now) {
            self.finish_at = None;
            if let Some(e) = &self.ledger.published {
                if e.complete && self.ledger.holds.is_empty() {
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
        if self.faults_changed {
            // A fault found while writing: the STOP names it (or stops naming it) now.
            self.flush_outputs();
        }
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

    /// Asks the session to end (a signal, the pipeline's exit); the first reason stands.
    pub fn end_with(&mut self, reason: EndReason) {
        self.end.get_or_insert(reason);
    }

    /// Why the session should end now, if it should.
    pub fn take_end(&mut self) -> Option<EndReason> {
        self.end.take()
    }

    // ---- the end ------------------------------------------------------------------------------

    /// Judges once more (as final when the pipeline is gone), writes the report and the last
    /// heartbeat and event.
    pub fn finish(&mut self, reason: EndReason) -> Outcome {
        let final_ = reason.is_final();
        if let Some((eval, snap)) = self.evaluate(None, final_) {
            // Not final (a signal, the timeout): a file caught mid-write is still not judged —
            // a standing STOP is not lifted, nor a new one raised, on half a file, and no referee
            // is left to put it right. Final: the pipeline is gone, so are its writes.
            let eval = if final_ {
                self.ledger.holds.clear();
                eval
            } else {
                self.hold(eval, &snap)
            };
            self.publish(eval, &BTreeSet::new(), &snap);
        }
        self.flush_outputs();
        let eval = self.ledger.published.clone().unwrap_or_else(|| Evaluation {
            complete: false,
            verdict: None,
            verdict_at: None,
            verdict_note: None,
            final_,
            passes: Vec::new(),
            results: Vec::new(),
        });
        let ended = reason.describe();
        let report = self.write_report(&eval, &ended);
        let unresolved: Vec<String> = eval.stops().map(|r| r.key().to_string()).collect();
        let faulted = self.cfg.on_fault == FaultPolicy::Stop && !self.faults.is_empty();
        let exit = if report.is_none() || faulted {
            ExitCode::Error
        } else if !unresolved.is_empty() {
            ExitCode::Violation
        } else {
            ExitCode::Ok
        };
        self.beat(heartbeat::FINISHED);
        let results = eval
            .results
            .iter()
            .map(|r: &CheckResult| FinalResult {
                pass: r.pass.clone(),
                check: r.check.clone(),
                severity: r.severity.as_str().to_string(),
                status: r.status,
            })
            .collect();
        self.emit(Record {
            event: Event::End(Box::new(Ended {
                reason: reason.tag().into(),
                text: ended.clone(),
                final_,
                complete: eval.complete,
                verdict: eval.verdict.clone(),
                exit_code: exit as u8,
                stop: self.stop.standing(),
                unresolved,
                summary: Some(eval.summary()),
                report: report.as_ref().map(|p| p.display().to_string()),
                results,
            })),
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

    fn write_report(&mut self, eval: &Evaluation, ended: &str) -> Option<PathBuf> {
        let ctx = self.context(Some(Utc::now()), Some(ended.to_string()));
        let text = markdown::report(&self.protocol, eval, &ctx);
        match crate::outputs::write_atomic(&self.dir, REPORT_FILE, &text) {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batches_keep_the_latest_event_and_note_the_stop_file() {
        let mut b = Batch::default();
        b.add("a.md".into(), ChangeKind::Written);
        b.add(crate::outputs::STOP_FILE.into(), ChangeKind::Written);
        b.add("c.md".into(), ChangeKind::Written);
        b.add("a.md".into(), ChangeKind::RenamedIn);
        b.add("c.md".into(), ChangeKind::Metadata);
        b.add("d.md".into(), ChangeKind::Metadata);
        b.add("d.md".into(), ChangeKind::Removed);
        assert_eq!(b.paths.len(), 3);
        assert_eq!(b.paths["a.md"], ChangeKind::RenamedIn);
        assert_eq!(
            b.paths["c.md"],
            ChangeKind::Written,
            "a touch after a write"
        );
        assert_eq!(b.paths["d.md"], ChangeKind::Removed);
        assert!(b.stop_touched);
    }
}
