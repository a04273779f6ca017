//! A session's decisions: what one evaluation changes in what the referee has published.
//!
//! This module owns the rules between "the engine judged the directory" and "the files say so":
//! which new failures wait for their files to settle ([`Ledger::hold`]), which passes ran, which
//! statuses changed, when a STOP is raised or resolved, what counts as a fix attempt and when one
//! escalates ([`Ledger::apply`]). They are plain functions of the evaluation, the paths touched, a
//! view of the files ([`Files`]) and the time ([`Clock`]): no threads, no I/O, no clock read, so a
//! test drives them directly. What they decide comes back as [`Decided`]: the events to log (in
//! order), when to look again, and whether the run may finish. The session carries it out.

use std::collections::{BTreeMap, BTreeSet};
use std::time::{Duration, Instant, SystemTime};

use chrono::{DateTime, Utc};

use crate::artifacts::Snapshot;
use crate::engine::{CheckKey, CheckResult, Evaluation, Evidence, PassState, Status};
use crate::outputs::StatusChange;
use crate::protocol::{CheckInstance, Protocol, Severity};

use super::guard::{self, evidence_hash, Guard};
use super::settle::{self, Settle};
use crate::daemon::event::Event;
use crate::daemon::journal::{self, Record};

/// The time a decision is made at.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    pub now: Instant,
    pub wall: DateTime<Utc>,
}

/// What the decisions need to know of the files, beyond the evaluation.
pub trait Files {
    /// Until when `path` is still being written; `None` when it has settled (or is gone), or
    /// has been moving for `--settle-max`.
    fn fresh_until(&self, path: &str) -> Option<Instant>;
    /// Until when `path` is unsettled however long it has been moving: `None` once it has been
    /// quiet for the settle window. What a held result waits on; its wait is bounded per
    /// result ([`Ledger::max_hold`]), not per file.
    fn quiet_at(&self, path: &str) -> Option<Instant> {
        self.fresh_until(path)
    }
    /// [`Files::quiet_at`] for a FAIL that rests on what is complete in its files
    /// ([`CheckResult::stands`]): a handle its writer keeps open does not hold it.
    fn quiet_after_writes(&self, path: &str) -> Option<Instant> {
        self.quiet_at(path)
    }
    /// Paths written in place and not yet settled.
    fn moving(&self) -> Vec<&str>;
    /// A digest of the evidence with its files' exact mtimes: what tells a rewrite from an echo.
    fn state(&self, evidence: &Evidence) -> String;
}

/// The real view: what the settle tracker saw, and the snapshot that was judged.
#[derive(Debug)]
pub struct Seen<'a> {
    pub settle: &'a Settle,
    pub snap: &'a Snapshot,
    pub now: Instant,
    pub wall: SystemTime,
}

impl Files for Seen<'_> {
    fn fresh_until(&self, path: &str) -> Option<Instant> {
        self.settle
            .fresh_until(path, self.snap.get(path), self.now, self.wall)
    }

    fn quiet_at(&self, path: &str) -> Option<Instant> {
        self.settle
            .quiet_at(path, self.snap.get(path), self.now, self.wall)
    }

    fn quiet_after_writes(&self, path: &str) -> Option<Instant> {
        self.settle
            .quiet_after_writes(path, self.snap.get(path), self.now, self.wall)
    }

    fn moving(&self) -> Vec<&str> {
        self.settle.moving().collect()
    }

    fn state(&self, ev: &Evidence) -> String {
        let mtimes: Vec<Option<u128>> = ev
            .files
            .iter()
            .map(|f| {
                self.snap
                    .get(&f.path)
                    .and_then(|e| e.mtime())
                    .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
                    .map(|d| d.as_nanos())
            })
            .collect();
        guard::state_hash(ev, &mtimes)
    }
}

/// What an evaluation decided.
#[derive(Debug, Default)]
pub struct Decided {
    /// Events to log, in order (each also said as a line).
    pub records: Vec<Record>,
    /// Look again at this time (files still settling).
    pub recheck: Option<Instant>,
    /// The pipeline is complete and nothing is held or pending: the run may finish once quiet.
    pub may_finish: bool,
}

/// What a session has published and remembers between evaluations.
#[derive(Debug)]
pub struct Ledger {
    /// Pass memory: a pass that ran stays run.
    pub ran: BTreeMap<String, PassState>,
    /// The last published status of every instance whose pass ran.
    pub statuses: BTreeMap<CheckKey, Status>,
    pub published: Option<Evaluation>,
    pub history: Vec<StatusChange>,
    pub guard: Guard,
    /// Results held back while their files settle, since when: the first look that read the
    /// result bad while its files moved, kept as long as every look since read it bad (or did
    /// not look at it again).
    pub holds: BTreeMap<CheckKey, Instant>,
    /// The longest a result is held (`--settle-max`): one read bad at every look for this long
    /// while its files keep moving is published as it stands, so a writer that keeps a violation
    /// on disk and never stops writing delays its STOP by at most this. A look that reads the
    /// result good (an honest file between two saves) ends the hold, so an honest file saved
    /// again and again is never judged half-saved, however long it keeps moving.
    pub max_hold: Duration,
}

fn instance<'p>(protocol: &'p Protocol, key: &CheckKey) -> Option<&'p CheckInstance> {
    protocol
        .passes
        .iter()
        .find(|p| p.id == key.pass)?
        .checks
        .iter()
        .find(|i| i.def.id == key.check)
}

fn artifact_ids(ev: &Evidence) -> Vec<String> {
    ev.files
        .iter()
        .filter_map(|f| f.sha256.as_ref().map(|h| format!("{}@{h}", f.path)))
        .collect()
}

fn record(event: Event, ev: &Evidence) -> Record {
    Record {
        event,
        artifacts: artifact_ids(ev),
    }
}

impl Ledger {
    /// `max_hold`: `--settle-max` (see [`Ledger::max_hold`]).
    pub fn new(max_fix_attempts: u32, max_hold: Duration) -> Ledger {
        Ledger {
            ran: BTreeMap::new(),
            statuses: BTreeMap::new(),
            published: None,
            history: Vec::new(),
            guard: Guard::new(max_fix_attempts),
            holds: BTreeMap::new(),
            max_hold,
        }
    }

    /// Takes over what an earlier run's log says.
    pub fn resume(&mut self, r: journal::Resumed) {
        self.ran = r.ran;
        self.statuses = r.statuses;
        self.history = r.history;
        for (key, (count, hash)) in r.attempts {
            let esc = r
                .escalations
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, why)| why.clone());
            self.guard.restore(&key, count, hash, esc);
        }
    }

    /// Until when a result's files (its evidence, and its inputs being written in place) are
    /// unsettled. Anything else — a writer's temp file, a file no input glob matches — never holds,
    /// and a FAIL that rests on what is complete in its files is not held by an open handle.
    fn unsettled_until(
        protocol: &Protocol,
        r: &CheckResult,
        files: &impl Files,
    ) -> Option<Instant> {
        let inst = instance(protocol, &r.key());
        let moving = files.moving();
        let moving = moving
            .into_iter()
            .filter(|p| inst.is_some_and(|i| settle::reads(&i.inputs, p)));
        r.evidence
            .files
            .iter()
            .map(|f| f.path.as_str())
            .chain(moving)
            .filter_map(|p| match r.stands {
                true => files.quiet_after_writes(p),
                false => files.quiet_at(p),
            })
            .max()
    }

    /// Holds back results that would newly become FAIL or INCONCLUSIVE (or would lift a standing
    /// STOP) while their files are still being written; says when to look again.
    pub fn hold(
        &mut self,
        protocol: &Protocol,
        eval: Evaluation,
        files: &impl Files,
        now: Instant,
    ) -> (Evaluation, Option<Instant>) {
        self.hold_some(protocol, eval, None, files, now, false)
    }

    /// [`Ledger::hold`] for an evaluation that re-judged only the instances `touched` touches
    /// (the others keep their published result): a result held and not looked at again stays
    /// held since when it was first held, so changes elsewhere do not restart its bound.
    pub fn hold_after(
        &mut self,
        protocol: &Protocol,
        eval: Evaluation,
        touched: Option<&BTreeSet<String>>,
        files: &impl Files,
        now: Instant,
    ) -> (Evaluation, Option<Instant>) {
        self.hold_some(protocol, eval, touched, files, now, false)
    }

    /// The last judgment's holds: a new FAIL or INCONCLUSIVE is never held (the last word is
    /// about the bytes on disk; nobody would be left to raise it), but a standing STOP is still
    /// not lifted by a file caught mid-write (nobody would be left to raise it again either).
    pub fn hold_at_end(
        &mut self,
        protocol: &Protocol,
        eval: Evaluation,
        files: &impl Files,
        now: Instant,
    ) -> Evaluation {
        self.hold_some(protocol, eval, None, files, now, true).0
    }

    fn hold_some(
        &mut self,
        protocol: &Protocol,
        mut eval: Evaluation,
        touched: Option<&BTreeSet<String>>,
        files: &impl Files,
        now: Instant,
        lifts_only: bool,
    ) -> (Evaluation, Option<Instant>) {
        let mut holds = BTreeMap::new();
        let mut recheck: Option<Instant> = None;
        for i in 0..eval.results.len() {
            let r = &eval.results[i];
            let key = r.key();
            let prev = self.statuses.get(&key).copied();
            if prev == Some(r.status) {
                // Held, and not looked at again (no input of it changed): still held, since
                // when it was first held. A look that read it good drops it.
                if let (Some(&since), Some(t)) = (self.holds.get(&key), touched) {
                    let looked = instance(protocol, &key)
                        .is_none_or(|inst| t.iter().any(|p| inst.inputs.touched_by(p)));
                    if !looked {
                        holds.insert(key, since);
                    }
                }
                continue;
            }
            // A PASS that would fall back to WAITING while its files move (a tracker between an
            // editor's rename to the backup and the new write) is a reading of a half-saved
            // file too: held like a new failure, so an honest save leaves no trace in the history.
            let bad = matches!(r.status, Status::Fail | Status::Inconclusive)
                || (prev == Some(Status::Pass) && r.status == Status::Waiting);
            // A standing STOP is not lifted by a file caught mid-write either (a truncated file
            // must not let the pipeline through for a moment).
            let lifts_stop = prev == Some(Status::Fail) && r.severity == Severity::Blocking;
            if (lifts_only || !bad) && !lifts_stop {
                continue;
            }
            let Some(until) = Self::unsettled_until(protocol, r, files) else {
                continue;
            };
            let since = self.holds.get(&key).copied().unwrap_or(now);
            if now.saturating_duration_since(since) >= self.max_hold && !lifts_only {
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
            holds.insert(key, since);
            // The first hold to run out: each held result is looked at again when its own
            // files settle (a FAIL a kept-open file cannot undo is not kept waiting for the
            // results that file does hold).
            recheck = Some(recheck.map_or(until, |r: Instant| r.min(until)));
        }
        self.holds = holds;
        (eval, recheck)
    }

    /// Whether publishing `eval` could change what a reader acts on: a result's status or
    /// waiver, a pass's state, the verdict or completeness, or a result held. An evaluation that
    /// changes none of them needs no barrier before it is published (`Session::catch_up`):
    /// the same answers read from a file caught mid-write are still the same answers.
    pub fn news(&self, eval: &Evaluation) -> bool {
        let Some(p) = &self.published else {
            return true;
        };
        if !self.holds.is_empty()
            || p.complete != eval.complete
            || p.final_ != eval.final_
            || p.verdict != eval.verdict
            || p.verdict_note != eval.verdict_note
            || p.passes != eval.passes
            || p.results.len() != eval.results.len()
        {
            return true;
        }
        let was: std::collections::HashMap<CheckKey, (Status, bool)> = p
            .results
            .iter()
            .map(|r| (r.key(), (r.status, r.waived())))
            .collect();
        eval.results
            .iter()
            .any(|r| was.get(&r.key()) != Some(&(r.status, r.waived())))
    }

    /// Publishes an evaluation: pass runs, status changes (history, STOP raised/resolved), fix
    /// attempts and escalations. `touched`: the paths whose change caused it.
    pub fn apply(
        &mut self,
        protocol: &Protocol,
        eval: Evaluation,
        touched: &BTreeSet<String>,
        files: &impl Files,
        clock: Clock,
    ) -> Decided {
        let mut out = Decided::default();
        self.count_touches(protocol, touched);
        self.passes_run(&eval, &mut out);
        self.changes(&eval, files, clock, &mut out);
        self.attempts(&eval, files, clock, &mut out);
        out.may_finish = eval.complete && self.holds.is_empty() && !self.guard.has_pending();
        self.published = Some(eval);
        out
    }

    /// Changes to the inputs of a check that was holding the pipeline are fix attempts.
    fn count_touches(&mut self, protocol: &Protocol, touched: &BTreeSet<String>) {
        let stopping: Vec<CheckKey> = self
            .published
            .iter()
            .flat_map(|e| e.stops())
            .map(CheckResult::key)
            .collect();
        for key in stopping {
            let Some(inst) = instance(protocol, &key) else {
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
    }

    fn passes_run(&mut self, eval: &Evaluation, out: &mut Decided) {
        for ps in &eval.passes {
            if !ps.ran || self.ran.contains_key(&ps.id) {
                continue;
            }
            self.ran.insert(ps.id.clone(), ps.clone());
            let results = eval
                .results
                .iter()
                .filter(|r| r.pass == ps.id)
                .map(|r| (r.check.clone(), r.status))
                .collect();
            out.records.push(
                Event::PassRun {
                    pass: ps.id.clone(),
                    reason: ps.reason,
                    at: ps.at.map(|t| journal::timestamp(&t)),
                    results,
                }
                .into(),
            );
        }
    }

    fn changes(&mut self, eval: &Evaluation, files: &impl Files, clock: Clock, out: &mut Decided) {
        for r in &eval.results {
            if !self.ran.contains_key(&r.pass) {
                continue;
            }
            let key = r.key();
            let prev = self.statuses.get(&key).copied();
            // Whether the published FAIL was waived (`--waivers`): then it held no STOP.
            let was_waived = self
                .published
                .as_ref()
                .and_then(|p| p.results.iter().find(|x| x.key() == key))
                .is_some_and(CheckResult::waived);
            if prev == Some(r.status) {
                if self.published.is_some() && was_waived != r.waived() {
                    self.waiver_changed(r, files, clock, out);
                }
                continue;
            }
            let was_stop =
                prev == Some(Status::Fail) && r.severity == Severity::Blocking && !was_waived;
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
                let details = StatusChange::kept_details(r.status, &r.evidence.details);
                self.history.push(StatusChange {
                    at: clock.wall,
                    pass: r.pass.clone(),
                    check: r.check.clone(),
                    from: prev,
                    to: r.status,
                    note: note.map(str::to_string),
                    observed: Some(r.evidence.observed.clone()),
                    details: details.clone(),
                });
                let event = Event::ResultChanged {
                    pass: r.pass.clone(),
                    check: r.check.clone(),
                    title: r.title.clone(),
                    severity: r.severity.as_str().to_string(),
                    from: prev,
                    to: r.status,
                    note: note.map(str::to_string),
                    due: r.due,
                    expected: r.evidence.expected.clone(),
                    observed: r.evidence.observed.clone(),
                    details,
                    evidence_sha256: hash.clone(),
                };
                out.records.push(record(event, &r.evidence));
            }
            if r.stops() {
                self.guard.raised(&key, hash.clone());
                self.guard.echo(&key, files.state(&r.evidence));
                let event = Event::StopRaised {
                    pass: r.pass.clone(),
                    check: r.check.clone(),
                    title: r.title.clone(),
                    observed: r.evidence.observed.clone(),
                    evidence_sha256: hash,
                };
                out.records.push(record(event, &r.evidence));
            } else if was_stop {
                self.guard.resolved(&key);
                let event = Event::StopResolved {
                    pass: r.pass.clone(),
                    check: r.check.clone(),
                    to: Some(r.status),
                };
                out.records.push(record(event, &r.evidence));
            }
            self.statuses.insert(key, r.status);
        }
    }

    /// A standing FAIL whose waiver came or went (`--waivers`): in the history, and, for a
    /// BLOCKING one, the STOP it held resolved or raised again.
    fn waiver_changed(
        &mut self,
        r: &CheckResult,
        files: &impl Files,
        clock: Clock,
        out: &mut Decided,
    ) {
        let key = r.key();
        let blocking = r.severity == Severity::Blocking;
        let note = match (&r.waiver, blocking) {
            (Some(w), true) => format!("WAIVED ({}): RESOLVED after STOP", w.at),
            (Some(w), false) => format!("WAIVED ({})", w.at),
            (None, true) => "waiver gone: STOP raised".to_string(),
            (None, false) => "waiver gone".to_string(),
        };
        self.history.push(StatusChange {
            at: clock.wall,
            pass: r.pass.clone(),
            check: r.check.clone(),
            from: Some(Status::Fail),
            to: Status::Fail,
            note: Some(note),
            observed: Some(r.evidence.observed.clone()),
            details: Vec::new(),
        });
        if !blocking {
            return;
        }
        let hash = evidence_hash(&r.evidence);
        let event = if r.stops() {
            self.guard.raised(&key, hash.clone());
            self.guard.echo(&key, files.state(&r.evidence));
            Event::StopRaised {
                pass: r.pass.clone(),
                check: r.check.clone(),
                title: r.title.clone(),
                observed: r.evidence.observed.clone(),
                evidence_sha256: hash,
            }
        } else {
            self.guard.resolved(&key);
            Event::StopResolved {
                pass: r.pass.clone(),
                check: r.check.clone(),
                to: Some(r.status),
            }
        };
        out.records.push(record(event, &r.evidence));
    }

    /// Fix attempts whose inputs have settled: counted, and escalated at the limit or when an
    /// attempt changed nothing.
    fn attempts(&mut self, eval: &Evaluation, files: &impl Files, clock: Clock, out: &mut Decided) {
        let pending: Vec<(CheckKey, BTreeSet<String>)> = self
            .guard
            .pending()
            .map(|(k, p)| (k.clone(), p.clone()))
            .collect();
        for (key, paths) in pending {
            let Some(r) = eval.results.iter().find(|r| r.key() == key) else {
                self.guard.resolved(&key);
                continue;
            };
            if !r.stops() {
                self.guard.resolved(&key);
                continue;
            }
            if let Some(until) = paths.iter().filter_map(|p| files.fresh_until(p)).max() {
                out.recheck = Some(out.recheck.map_or(until, |t| t.min(until)));
                continue;
            }
            if self.guard.echo(&key, files.state(&r.evidence)) {
                continue;
            }
            let hash = evidence_hash(&r.evidence);
            let a = self.guard.attempt(&key, hash.clone());
            let event = Event::FixAttempt {
                pass: r.pass.clone(),
                check: r.check.clone(),
                attempt: a.number.into(),
                identical: a.identical,
                evidence_sha256: hash,
            };
            out.records.push(record(event, &r.evidence));
            if let Some(reason) = a.escalate {
                let text = format!(
                    "{} (pass {}) ESCALATED: human review required — {reason}",
                    r.check, r.pass
                );
                self.history.push(StatusChange {
                    at: clock.wall,
                    pass: r.pass.clone(),
                    check: r.check.clone(),
                    from: Some(Status::Fail),
                    to: Status::Fail,
                    note: Some(format!("ESCALATED: human review required — {reason}")),
                    observed: None,
                    details: Vec::new(),
                });
                let event = Event::Escalation {
                    pass: r.pass.clone(),
                    check: r.check.clone(),
                    reason,
                    attempts: a.number,
                    text,
                };
                out.records.push(record(event, &r.evidence));
            }
        }
    }
}

#[cfg(test)]
mod tests;
