//! A session: one build directory's referee. It holds what the referee knows of that directory
//! (the [`Ledger`] of passes, statuses, history and fix attempts; settle holds; incidents;
//! faults; timers) and its own files (the event log, the STOP file, pass files, heartbeat).
//!
//! This module owns a session's life: opening (lock and resume the event log, adopt a STOP left
//! standing), judging on what the loop hands it ([`Batch`]), its timers, and the end (the final
//! evaluation and report). What an evaluation changes is decided in [`super::rules::ledger`]; writing
//! the files is [`write`]'s; the directory's identity is [`identity`]'s. A session never reads
//! an event source or sleeps: the loop ([`super::driver`]) owns those and drives any number of
//! sessions.

mod copies;
mod end;
mod fault_stop;
mod identity;
mod inputs;
mod leftovers;
mod open;
mod rival;
mod sync;
mod tamper;
mod tasks;
mod waivers;
mod write;

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use chrono::{DateTime, Utc};

use crate::artifacts::{Kind, Snapshot};
use crate::engine::{self, Evaluation, Options};
use crate::fsevents::ChangeKind;
use crate::outputs::Incident;
use crate::protocol::Protocol;

use super::event::Event;
use super::journal::EventLog;
use super::rules::ledger::{Clock, Ledger, Seen};
use super::rules::settle::Settle;
use super::{attach, heartbeat, Config, EndReason};
use crate::state::stop::StopFile;

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
    /// Pass files (`OBSERVER-PASS-*.md`) touched: the referee's own writes, or a forgery.
    pub passes_touched: BTreeSet<String>,
    /// Events may have been lost: judge everything again (why).
    pub rescan: Vec<String>,
    /// `status --sync` tokens whose files were seen ([`crate::state::sync`]).
    pub syncs: Vec<String>,
}

impl Batch {
    /// Adds one path change: the latest event decides, but a metadata change after a write
    /// leaves it a write.
    pub fn add(&mut self, rel: String, kind: ChangeKind) {
        if let Some(token) = crate::state::sync::token_of(&rel) {
            // A token's removal is `status` done with it: it asks nothing (judging the whole
            // directory again for it would double the cost of every `--sync`).
            if kind != ChangeKind::Removed && !self.syncs.iter().any(|t| t == token) {
                self.syncs.push(token.to_string());
            }
        } else if rel == crate::outputs::STOP_FILE {
            self.stop_touched = true;
        } else if pass_id(&rel).is_some() {
            self.passes_touched.insert(rel);
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

/// The part of a session that only one kind of protocol has, made from the protocol's
/// [`Subject`]: a build directory's session keeps its listing, published evaluation and pass
/// files in [`Session`] itself; a workspace's session judges task records, and keeps its
/// baseline, work tree and verdict files here.
#[derive(Debug)]
enum Part {
    Build,
    Workspace(Box<tasks::Tasks>),
}

/// One build directory's referee.
pub struct Session {
    cfg: Config,
    protocol: Arc<Protocol>,
    /// Put before every human line (the build's name, under `watch --root`).
    label: Option<String>,
    /// The build directory as given (for display and scans).
    dir: PathBuf,
    /// Where the session's own files go: the build directory itself, or a workspace's
    /// `.referee/` for a protocol of task records.
    out: crate::outputs::OutDir,
    /// The state directory: the authoritative event log, heartbeat, STOP and (task
    /// protocols) verdicts and kept attempts. What is in `out` are copies.
    state: PathBuf,
    /// A workspace's `.referee` is no longer the folder the session made (replaced by a link, a
    /// file, a FIFO …): what was found. Nothing is written through it while so; the STOP says it.
    folder_lost: Option<String>,
    /// What only this kind of protocol's session has (the protocol's [`Subject`]).
    part: Part,
    /// Its canonical path (events arrive under it).
    canon: PathBuf,
    /// Whether a symlink at the build directory's path is followed: only when the path was one
    /// when the session opened (`watch LINK`), never under `--root` (a build is a directory).
    follow_link: bool,
    /// The directory watched, or detached.
    attached: attach::State,
    /// The directory the heartbeat vouches for: the one attached at start, and after a
    /// re-attachment the old one until the new directory has been judged with nothing held
    /// back. Until then `status` finds the heartbeat naming another directory and answers "no
    /// live referee", never a go about a directory the referee has not read.
    vouched: Option<crate::state::dir_id::DirId>,
    /// Why it is detached (said and recorded once per reason).
    detached_why: Option<String>,
    /// Another referee on the same build was seen (and said, once: [`rival`]).
    rival_seen: bool,
    /// The attached directory, held for this referee alone while attached (an exclusive
    /// `flock` on it: [`crate::state::lock::hold_dir`]); `None` while detached, or where the
    /// file system locks no directory.
    dir_hold: Option<std::fs::File>,
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
    /// Each pass file's text as last written, by pass id: a pass file that reads otherwise
    /// was edited, replaced or deleted by someone else, and is written again as it was.
    pass_texts: BTreeMap<String, String>,
    protocol_file: Option<ProtocolFile>,
    /// `--waivers`: the file, reloaded when it changes.
    waivers: Option<waivers::WaiverFile>,
    /// `--exit-with` is checked at ticks (no pidfd).
    pub(super) pid_by_ticks: bool,
    /// An evaluation ran since memory was last handed back.
    evaluated: bool,
    /// The last listing of the directory (its reads dropped): an event re-lists only the paths
    /// it names ([`Snapshot::rescan`]).
    listing: Option<Snapshot>,
    /// Events decided but not yet logged: they follow the STOP file, which goes first.
    pending: Vec<super::journal::Record>,
    /// What the referee saw and in which order (kept in the state directory); `None` for a
    /// protocol of task records.
    seen: Option<Arc<crate::state::observed::Observed>>,
    /// `status --sync` tokens seen and not yet acknowledged.
    syncs: Vec<String>,
    /// Since when the tokens in `syncs` have waited for inputs still being written.
    sync_since: Option<Instant>,
    /// The files the judgments read, with their stat identity when read: compared with the
    /// disk before a sync is acknowledged and at heartbeats (writes that make no event).
    inputs: super::rules::inputs::InputLedger,
    /// An earlier run's files, set aside from every snapshot until this run writes them (a
    /// new run begun over a completed run, or with `--fresh`; see [`leftovers`]).
    leftovers: crate::state::leftovers::Leftovers,
    /// Own writes that failed: when each is tried again (a full disk costs no core).
    backoff: super::rules::retry::Backoff,
    // Timers.
    next_beat: Instant,
    recheck_at: Option<Instant>,
    finish_at: Option<Instant>,
    timeout_at: Option<Instant>,
    last_activity: Instant,
    /// Since when the published evaluation says the pipeline is complete.
    complete_since: Option<Instant>,
    end: Option<EndReason>,
    /// Resumed state, STOP adoption and log trouble found while opening, told at [`Session::announce`].
    opening: Option<open::Opening>,
    /// What a judgment passes after its reads, before it is published (set by the loop).
    pub barrier: Option<Barrier>,
}

/// A judgment's barrier: after its reads, what has arrived for the directory and not been
/// handled yet (every change made before the reads ended among it), by path; `None` when the
/// event source cannot tell (polling, or the barrier's own event was lost). See
/// `daemon::driver::barrier`.
pub type Barrier = Box<dyn Fn() -> Option<Vec<(String, ChangeKind)>> + Send>;

fn panic_message(p: &(dyn std::any::Any + Send)) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into())
}

impl Session {
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
    pub fn source_is(&mut self, source: Result<String, &crate::fsevents::WatchError>) {
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

    // ---- judging ----------------------------------------------------------------------------

    /// The first look at the directory, once it is watched.
    pub fn first_evaluation(&mut self) {
        self.judge(None);
        // Tokens found at start (a `status --sync` asked across a restart) are answered now.
        self.ack_syncs();
        self.tick();
    }

    /// The first look, at the loop's next round of timers.
    pub fn first_evaluation_due(&mut self) {
        let now = self.cfg.clock.now();
        self.recheck(now);
        self.next_beat = now;
    }

    /// After a judgment's reads, before it is published: the changes made before the reads
    /// ended that have not been handled yet are noted as seen, so a file caught mid-write whose
    /// events are still on their way is held like one whose events came first (an editor's
    /// save, a writer's next chunk). They are judged at their own turn, as ever.
    fn catch_up(&mut self) {
        let Some(waiting) = self.barrier.as_ref().and_then(|b| b()) else {
            return;
        };
        let now = self.cfg.clock.now();
        let workspace = matches!(self.part, Part::Workspace(_));
        for (rel, kind) in waiting {
            if !workspace || tasks::relevant(&rel) {
                self.settle.saw(&rel, kind, now);
            }
        }
    }

    /// Judges what changed (everything when `touched` is `None`) and carries out what that
    /// decides; then brings the files in line.
    fn judge(&mut self, touched: Option<&BTreeSet<String>>) {
        match self.part {
            Part::Build => self.judge_build(touched),
            Part::Workspace(_) => {
                // A workspace keeps no listing: ask the file system (`.tasks/` made just before
                // its first record is the case that matters).
                self.look_again_if_new_dir(touched.is_some_and(|t| {
                    t.iter().any(|p| {
                        std::fs::symlink_metadata(self.canon.join(p)).is_ok_and(|m| m.is_dir())
                    })
                }));
                self.note_touched(touched);
                self.judge_tasks();
                self.flush_outputs();
                self.vouch();
            }
        }
    }

    /// [`Session::judge`] for a build directory: a re-listing of what changed, the evaluation,
    /// the holds while files are written, then what that publishes.
    fn judge_build(&mut self, touched: Option<&BTreeSet<String>>) {
        // Judging only what changed keeps every other result as published, which holds only
        // against the listing those results were read from. With none (a directory re-attached
        // or swapped for a copy, a scan that failed), everything is judged: the published
        // results may be another directory's.
        let touched = touched.filter(|_| self.listing.is_some());
        if let Some((eval, snap)) = self.evaluate(touched, false) {
            self.look_again_if_new_dir(touched.is_some_and(|t| {
                t.iter()
                    .any(|p| snap.get(p).is_some_and(|e| e.kind == Kind::Dir))
            }));
            if self.ledger.news(&eval) {
                self.catch_up();
            }
            let eval = self.hold(eval, touched, &snap);
            self.publish(eval, touched.unwrap_or(&BTreeSet::new()), &snap);
            self.note_inputs(&snap);
            self.keep_listing(snap);
            self.flush_outputs();
            self.vouch();
            return;
        }
        self.flush_outputs();
    }

    /// A workspace's batch: the referee's own folder and `.git/` are no work; its STOP file is
    /// checked for tampering. Whether anything is left to judge.
    fn workspace_batch(&mut self, batch: &mut Batch) -> bool {
        if batch.paths.contains_key(&tasks::stop_rel()) {
            batch.stop_touched = true;
        }
        let own = crate::workspace::OUTPUT_DIR;
        if batch
            .paths
            .keys()
            .any(|p| p == own || p.strip_prefix(own).is_some_and(|r| r.starts_with('/')))
        {
            // Someone touched `.referee` (the session's own writes are not reported).
            self.check_folder();
        }
        batch.paths.retain(|rel, _| tasks::relevant(rel));
        if batch.paths.is_empty() && batch.rescan.is_empty() && !batch.root_lost {
            if batch.stop_touched {
                self.check_stop();
            }
            return false;
        }
        true
    }

    /// A new directory may have had files before the watch on it existed (their events are
    /// lost): when an event named one, look again once it has settled.
    fn look_again_if_new_dir(&mut self, new_dir: bool) {
        if new_dir {
            self.recheck(self.cfg.clock.now() + self.settle.window());
        }
    }

    /// Keeps a judged snapshot's listing (not its reads) for the next event's re-listing.
    fn keep_listing(&mut self, mut snap: Snapshot) {
        snap.forget_reads();
        self.listing = Some(snap);
    }

    /// What arrived for this directory since the loop last woke.
    pub fn handle(&mut self, mut batch: Batch) {
        let work = match self.part {
            Part::Build => true,
            Part::Workspace(_) => self.workspace_batch(&mut batch),
        };
        if !work {
            return;
        }
        if batch.paths.is_empty()
            && batch.rescan.is_empty()
            && batch.syncs.is_empty()
            && !batch.root_lost
            && !batch.stop_touched
            && !batch.passes_touched.is_empty()
        {
            // Only pass files (mostly the referee's own writes coming back): compared, and a
            // forged one restored, without judging or rendering anything.
            if self.detached_why.is_none() {
                self.check_pass_files(&batch.passes_touched);
            }
            return;
        }
        // A `status --sync` token asks for what is on disk, not only for what made events (a
        // write through a hard link, `mmap`, a linked folder): everything is judged again.
        let asked = !batch.syncs.is_empty();
        self.syncs.append(&mut batch.syncs);
        // One stat per wake-up: nothing is judged or written for a directory no longer there.
        self.check_dir(batch.root_lost);
        if self.detached_why.is_some() {
            return;
        }
        let full = !batch.rescan.is_empty() || asked;
        for why in batch.rescan {
            self.emit(Event::Rescan { why }.into());
        }
        let now = self.cfg.clock.now();
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
            // Touched by a rival referee? Then the younger yields instead of restoring.
            self.check_rival();
            self.check_stop();
        }
        if !batch.passes_touched.is_empty() {
            self.check_pass_files(&batch.passes_touched);
        }
        self.ack_syncs();
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
        // A change re-lists only the paths it names; anything else looks at everything.
        let listed = match (changed, self.listing.take()) {
            (Some(c), Some(prev)) if !final_ => prev.rescan(&c.iter().cloned().collect::<Vec<_>>()),
            _ => Snapshot::scan(&self.dir, self.cfg.limits),
        };
        let mut snap = match listed {
            Ok(s) => {
                self.clear_fault("scan");
                s
            }
            Err(e) => {
                self.fault("scan", format!("cannot scan the build directory: {e}"));
                return None;
            }
        };
        // Every snapshot judged leaves out an earlier run's files still as they were; a folder
        // that shows again because this run wrote into it is judged with what changed.
        let shown = self.set_aside_leftovers(&mut snap, changed.is_none() || final_);
        let widened: Option<BTreeSet<String>> = match changed {
            Some(c) if !shown.is_empty() => Some(c.iter().cloned().chain(shown).collect()),
            _ => None,
        };
        let changed = widened.as_ref().or(changed);
        self.look(&snap, changed);
        let opts = Options {
            final_,
            ran: self.ledger.ran.clone(),
            now: Some(self.cfg.clock.utc()),
            seen: self.seen.clone(),
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
            Ok(mut eval) => {
                self.clear_fault("evaluate");
                if let Some(w) = &mut self.waivers {
                    w.apply(&mut eval);
                }
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

    /// Notes what the snapshot shows that the referee had not seen (see [`super::rules::seen`]) and
    /// keeps the record in the state directory.
    fn look(&mut self, snap: &Snapshot, changed: Option<&BTreeSet<String>>) {
        let Some(seen) = &mut self.seen else {
            return;
        };
        let seen = Arc::make_mut(seen);
        super::rules::seen::look(seen, &self.protocol, snap, changed, self.cfg.clock.utc());
        match seen.save(&self.state) {
            Ok(()) => self.clear_fault("seen"),
            Err(e) => self.fault(
                "seen",
                format!(
                    "cannot keep `{}` (what the referee saw, in order): {}",
                    crate::state::observed::SEEN_FILE,
                    e.to_string().to_lowercase()
                ),
            ),
        }
    }

    /// Holds back new failures whose files are still being written (see [`Ledger::hold_after`]);
    /// `touched`: what the evaluation re-judged (everything when `None`).
    fn hold(
        &mut self,
        eval: Evaluation,
        touched: Option<&BTreeSet<String>>,
        snap: &Snapshot,
    ) -> Evaluation {
        let now = self.cfg.clock.now();
        self.settle.prune(now);
        let seen = Seen {
            settle: &self.settle,
            snap,
            now,
            wall: self.cfg.clock.wall(),
        };
        let (eval, recheck) = self
            .ledger
            .hold_after(&self.protocol, eval, touched, &seen, now);
        if let Some(at) = recheck {
            self.recheck(at);
        }
        eval
    }

    /// The last judgment's holds (see [`Ledger::hold_at_end`]).
    fn hold_at_end(&mut self, eval: Evaluation, snap: &Snapshot) -> Evaluation {
        let now = self.cfg.clock.now();
        let seen = Seen {
            settle: &self.settle,
            snap,
            now,
            wall: self.cfg.clock.wall(),
        };
        let eval = self.ledger.hold_at_end(&self.protocol, eval, &seen, now);
        self.ledger.holds.clear();
        eval
    }

    /// Publishes an evaluation (see [`Ledger::apply`]) and carries out what it decided.
    fn publish(&mut self, eval: Evaluation, touched: &BTreeSet<String>, snap: &Snapshot) {
        let clock = Clock {
            now: self.cfg.clock.now(),
            wall: self.cfg.clock.utc(),
        };
        let seen = Seen {
            settle: &self.settle,
            snap,
            now: clock.now,
            wall: self.cfg.clock.wall(),
        };
        let decided = self
            .ledger
            .apply(&self.protocol, eval, touched, &seen, clock);
        // Logged once the STOP file is in line (see `flush_outputs`): it is what the
        // orchestrator waits on.
        self.pending.extend(decided.records);
        if let Some(at) = decided.recheck {
            self.recheck(at);
        }
        let complete = self.ledger.published.as_ref().is_some_and(|e| e.complete);
        if !complete {
            self.complete_since = None;
        } else if self.complete_since.is_none() {
            self.complete_since = Some(clock.now);
        }
        let since = self.complete_since;
        self.finish_at = decided.may_finish.then(|| {
            // Finish once the directory has been quiet for a settle window, and at the latest
            // `--settle-max` after the pipeline completed: a file kept moving cannot keep the
            // referee (and the final report) from finishing.
            let quiet = self.last_activity + self.settle.window();
            let latest = since.map_or(quiet, |s| s + self.cfg.settle_max);
            quiet.min(latest).max(self.cfg.clock.now())
        });
    }

    // ---- timers -------------------------------------------------------------------------------

    /// When this session next needs the loop.
    pub fn next_deadline(&self) -> Instant {
        [
            self.recheck_at,
            self.finish_at,
            self.timeout_at,
            self.backoff.next(),
        ]
        .into_iter()
        .flatten()
        .fold(self.next_beat, Instant::min)
    }

    fn recheck(&mut self, at: Instant) {
        self.recheck_at = Some(self.recheck_at.map_or(at, |t| t.min(at)));
    }

    /// Runs what is due: the timeout, a settle re-check, finishing a complete run, the heartbeat.
    pub fn timers(&mut self) {
        let now = self.cfg.clock.now();
        if self.timeout_at.is_some_and(|t| t <= now) {
            self.timeout_at = None;
            if let Some(t) = self.cfg.timeout {
                self.end.get_or_insert(EndReason::Timeout(t));
            }
            return;
        }
        if self.recheck_at.is_some_and(|t| t <= now) {
            self.recheck_at = None;
            // Nothing is judged or written for a path that no longer names the directory.
            self.check_dir(false);
            self.judge(None);
            self.ack_syncs();
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
        if self.backoff.any_due(now) {
            // A write that failed is due again: the files it failed on are put in line.
            self.check_dir(false);
            self.retry_writes();
            self.backoff.rearm(now);
        }
        if self.faults_changed {
            // A fault found while writing: the STOP names it (or stops naming it) now.
            self.flush_outputs();
        }
    }

    /// The heartbeat tick: beat, and the cheap checks that need no event.
    fn tick(&mut self) {
        self.next_beat = self.cfg.clock.now() + self.cfg.heartbeat;
        self.check_dir(false);
        // Before anything is written into it: is `.referee` still the session's folder?
        self.check_folder();
        self.check_rival();
        self.beat(heartbeat::WATCHING);
        // Writes that made no event (a hard link written from outside, `mmap`).
        self.poll_inputs();
        self.check_protocol_file();
        self.check_waivers();
        self.check_accepted();
        self.check_stop();
        self.check_copies(false);
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
}

#[cfg(test)]
mod tests;

/// The pass id a top-level name `OBSERVER-PASS-<id>.md` names.
pub(crate) fn pass_id(rel: &str) -> Option<&str> {
    let id = rel.strip_prefix("OBSERVER-PASS-")?.strip_suffix(".md")?;
    (!id.is_empty() && id.len() <= 8 && id.bytes().all(|b| b.is_ascii_alphanumeric())).then_some(id)
}
