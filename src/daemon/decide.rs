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
use crate::outputs::Change;
use crate::protocol::{CheckInstance, Protocol, Severity};

use super::event::Event;
use super::events::{self, Record};
use super::guard::{self, evidence_hash, Guard};
use super::settle::{self, Settle};

/// The time a decision is made at.
#[derive(Debug, Clone, Copy)]
pub struct Clock {
    pub now: Instant,
    pub wall: DateTime<Utc>,
}

/// What the decisions need to know of the files, beyond the evaluation.
pub trait Files {
    /// Until when `path` is still being written; `None` when it has settled (or is gone).
    fn fresh_until(&self, path: &str) -> Option<Instant>;
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
    pub history: Vec<Change>,
    pub guard: Guard,
    /// Results held back while their files settle, since when.
    pub holds: BTreeMap<CheckKey, Instant>,
    /// The longest a result is held: a file written forever cannot jam the referee.
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
    pub fn new(max_fix_attempts: u32, settle: Duration) -> Ledger {
        Ledger {
            ran: BTreeMap::new(),
            statuses: BTreeMap::new(),
            published: None,
            history: Vec::new(),
            guard: Guard::new(max_fix_attempts),
            holds: BTreeMap::new(),
            max_hold: (settle * 20).max(Duration::from_secs(3)),
        }
    }

    /// Takes over what an earlier run's log says.
    pub fn resume(&mut self, r: events::Resumed) {
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
    /// unsettled. Anything else — a writer's temp file, a file no input glob matches — never holds.
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
            .filter_map(|p| files.fresh_until(p))
            .max()
    }

    /// Holds back results that would newly become FAIL or INCONCLUSIVE (or would lift a standing
    /// STOP) while their files are still being written; says when to look again.
    pub fn hold(
        &mut self,
        protocol: &Protocol,
        mut eval: Evaluation,
        files: &impl Files,
        now: Instant,
    ) -> (Evaluation, Option<Instant>) {
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
            let Some(until) = Self::unsettled_until(protocol, r, files) else {
                continue;
            };
            let since = self.holds.get(&key).copied().unwrap_or(now);
            if now.saturating_duration_since(since) >= self.max_hold {
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
            recheck = recheck.max(Some(until));
        }
        self.holds = holds;
        (eval, recheck)
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
                    at: ps.at.map(|t| events::timestamp(&t)),
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
                    at: clock.wall,
                    pass: r.pass.clone(),
                    check: r.check.clone(),
                    from: prev,
                    to: r.status,
                    note: note.map(str::to_string),
                    observed: Some(r.evidence.observed.clone()),
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
                self.history.push(Change {
                    at: clock.wall,
                    pass: r.pass.clone(),
                    check: r.check.clone(),
                    from: Some(Status::Fail),
                    to: Status::Fail,
                    note: Some(format!("ESCALATED: human review required — {reason}")),
                    observed: None,
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
mod tests {
    use super::*;
    use crate::checks::FileRef;
    use crate::engine::RunReason;

    const GATES: &str = "p3a-gate-results.json";

    /// A view of the files chosen by the test: which paths are still being written (until when),
    /// and an evidence state that follows a counter the test bumps for "rewritten".
    #[derive(Default)]
    struct Fake {
        fresh: BTreeMap<String, Instant>,
        moving: Vec<String>,
        rewrites: u32,
    }

    impl Files for Fake {
        fn fresh_until(&self, path: &str) -> Option<Instant> {
            self.fresh.get(path).copied()
        }
        fn moving(&self) -> Vec<&str> {
            self.moving.iter().map(String::as_str).collect()
        }
        fn state(&self, ev: &Evidence) -> String {
            format!("{}#{}", ev.observed, self.rewrites)
        }
    }

    fn protocol() -> Protocol {
        Protocol::default_protocol().expect("the embedded protocol")
    }

    /// Pass 2 ran; OBS-27 (BLOCKING, reads the gate results) has `status`, observed `seen`.
    fn eval(status: Status, seen: &str) -> Evaluation {
        Evaluation {
            complete: false,
            verdict: None,
            verdict_at: None,
            verdict_note: None,
            final_: false,
            passes: vec![PassState {
                id: "2".into(),
                ran: true,
                reason: Some(RunReason::Trigger),
                at: None,
            }],
            results: vec![CheckResult {
                pass: "2".into(),
                check: "OBS-27".into(),
                title: "Gate results".into(),
                severity: Severity::Blocking,
                status,
                due: true,
                evidence: Evidence {
                    expected: "no manual source".into(),
                    observed: seen.into(),
                    details: Vec::new(),
                    files: vec![FileRef {
                        path: GATES.into(),
                        size: 10,
                        sha256: Some("ab".into()),
                        mtime: None,
                    }],
                },
            }],
        }
    }

    fn clock(now: Instant) -> Clock {
        Clock {
            now,
            wall: DateTime::<Utc>::UNIX_EPOCH,
        }
    }

    fn names(d: &Decided) -> Vec<String> {
        d.records
            .iter()
            .map(|r| {
                serde_json::to_value(&r.event).expect("an event")["event"]
                    .as_str()
                    .unwrap_or_default()
                    .to_string()
            })
            .collect()
    }

    fn touched(p: &str) -> BTreeSet<String> {
        BTreeSet::from([p.to_string()])
    }

    #[test]
    fn a_failure_raises_stop_and_its_fix_resolves_it() {
        let p = protocol();
        let files = Fake::default();
        let t0 = Instant::now();
        let mut l = Ledger::new(3, Duration::from_millis(300));
        let d = l.apply(
            &p,
            eval(Status::Pass, "ok"),
            &BTreeSet::new(),
            &files,
            clock(t0),
        );
        assert_eq!(
            names(&d),
            ["pass_run"],
            "first results are in the pass_run event"
        );
        assert!(l.history.is_empty());
        let d = l.apply(
            &p,
            eval(Status::Fail, "1 manual"),
            &touched(GATES),
            &files,
            clock(t0),
        );
        assert_eq!(names(&d), ["result_changed", "stop_raised"]);
        assert_eq!(d.records[1].artifacts, [format!("{GATES}@ab")]);
        assert_eq!(l.history[0].note.as_deref(), Some("STOP raised"));
        let d = l.apply(
            &p,
            eval(Status::Pass, "ok"),
            &touched(GATES),
            &files,
            clock(t0),
        );
        assert_eq!(names(&d), ["result_changed", "stop_resolved"]);
        assert_eq!(l.history[1].note.as_deref(), Some("RESOLVED after STOP"));
        assert_eq!(l.statuses[&CheckKey::new("2", "OBS-27")], Status::Pass);
        let d = l.apply(
            &p,
            eval(Status::Pass, "ok"),
            &touched(GATES),
            &files,
            clock(t0),
        );
        assert!(d.records.is_empty(), "no change, nothing to say");
    }

    #[test]
    fn a_failure_on_a_file_still_being_written_is_held_then_published() {
        let p = protocol();
        let t0 = Instant::now();
        let mut files = Fake::default();
        files
            .fresh
            .insert(GATES.into(), t0 + Duration::from_millis(300));
        let mut l = Ledger::new(3, Duration::from_millis(300));
        l.apply(
            &p,
            eval(Status::Pass, "ok"),
            &BTreeSet::new(),
            &files,
            clock(t0),
        );
        let (held, recheck) = l.hold(&p, eval(Status::Fail, "half"), &files, t0);
        assert_eq!(
            held.results[0].status,
            Status::Pass,
            "the published status stays"
        );
        assert_eq!(recheck, Some(t0 + Duration::from_millis(300)));
        assert_eq!(l.holds.len(), 1);
        let d = l.apply(&p, held, &touched(GATES), &files, clock(t0));
        assert!(!names(&d).contains(&"stop_raised".to_string()));
        // Settled: judged.
        files.fresh.clear();
        let later = t0 + Duration::from_millis(400);
        let (ev, recheck) = l.hold(&p, eval(Status::Fail, "1 manual"), &files, later);
        assert_eq!((ev.results[0].status, recheck), (Status::Fail, None));
        assert!(l.holds.is_empty());
        let d = l.apply(&p, ev, &BTreeSet::new(), &files, clock(later));
        assert!(names(&d).contains(&"stop_raised".to_string()));
    }

    #[test]
    fn a_file_written_forever_cannot_hold_a_failure_past_the_limit() {
        let p = protocol();
        let t0 = Instant::now();
        let mut files = Fake::default();
        let mut l = Ledger::new(3, Duration::from_millis(100));
        assert_eq!(l.max_hold, Duration::from_secs(3));
        l.apply(
            &p,
            eval(Status::Pass, "ok"),
            &BTreeSet::new(),
            &files,
            clock(t0),
        );
        let mut at = t0;
        loop {
            files
                .fresh
                .insert(GATES.into(), at + Duration::from_millis(100));
            let (ev, _) = l.hold(&p, eval(Status::Fail, "1 manual"), &files, at);
            if ev.results[0].status == Status::Fail {
                break;
            }
            at += Duration::from_millis(250);
            assert!(at - t0 <= Duration::from_secs(4), "held forever");
        }
        assert!(
            at - t0 >= Duration::from_secs(3),
            "released early: {:?}",
            at - t0
        );
    }

    #[test]
    fn fix_attempts_count_and_escalate() {
        let p = protocol();
        let t0 = Instant::now();
        let mut files = Fake::default();
        let mut l = Ledger::new(2, Duration::from_millis(300));
        l.apply(
            &p,
            eval(Status::Fail, "1 manual"),
            &BTreeSet::new(),
            &files,
            clock(t0),
        );
        // An echo of the write that raised STOP (nothing rewritten) is no attempt.
        let d = l.apply(
            &p,
            eval(Status::Fail, "1 manual"),
            &touched(GATES),
            &files,
            clock(t0),
        );
        assert!(names(&d).is_empty(), "{:?}", names(&d));
        // A rewrite still being written waits for it to settle.
        files.rewrites += 1;
        files
            .fresh
            .insert(GATES.into(), t0 + Duration::from_millis(300));
        let d = l.apply(
            &p,
            eval(Status::Fail, "2 manual"),
            &touched(GATES),
            &files,
            clock(t0),
        );
        assert!(names(&d).is_empty());
        assert_eq!(d.recheck, Some(t0 + Duration::from_millis(300)));
        assert!(!d.may_finish);
        files.fresh.clear();
        let d = l.apply(
            &p,
            eval(Status::Fail, "2 manual"),
            &BTreeSet::new(),
            &files,
            clock(t0),
        );
        assert_eq!(names(&d), ["fix_attempt"]);
        // A second attempt reaches the limit of 2: escalated, once.
        files.rewrites += 1;
        let d = l.apply(
            &p,
            eval(Status::Fail, "3 manual"),
            &touched(GATES),
            &files,
            clock(t0),
        );
        assert_eq!(names(&d), ["fix_attempt", "escalation"]);
        assert_eq!(l.guard.escalations().len(), 1);
        files.rewrites += 1;
        let d = l.apply(
            &p,
            eval(Status::Fail, "4 manual"),
            &touched(GATES),
            &files,
            clock(t0),
        );
        assert_eq!(names(&d), ["fix_attempt"]);
        // A file no input of OBS-27 reads is no attempt.
        files.rewrites += 1;
        let d = l.apply(
            &p,
            eval(Status::Fail, "4 manual"),
            &touched("notes.txt"),
            &files,
            clock(t0),
        );
        assert!(names(&d).is_empty());
    }

    #[test]
    fn identical_evidence_escalates_at_once() {
        let p = protocol();
        let t0 = Instant::now();
        let mut files = Fake::default();
        let mut l = Ledger::new(5, Duration::from_millis(300));
        l.apply(
            &p,
            eval(Status::Fail, "1 manual"),
            &BTreeSet::new(),
            &files,
            clock(t0),
        );
        files.rewrites += 1;
        let d = l.apply(
            &p,
            eval(Status::Fail, "1 manual"),
            &touched(GATES),
            &files,
            clock(t0),
        );
        assert_eq!(names(&d), ["fix_attempt", "escalation"]);
        let Event::Escalation { reason, .. } = &d.records[1].event else {
            panic!("not an escalation")
        };
        assert!(reason.starts_with("no progress"), "{reason}");
    }

    #[test]
    fn a_complete_run_may_finish_only_with_nothing_held_or_pending() {
        let p = protocol();
        let t0 = Instant::now();
        let files = Fake::default();
        let mut l = Ledger::new(3, Duration::from_millis(300));
        let mut done = eval(Status::Pass, "ok");
        done.complete = true;
        assert!(
            l.apply(&p, done.clone(), &BTreeSet::new(), &files, clock(t0))
                .may_finish
        );
        l.holds.insert(CheckKey::new("2", "OBS-27"), t0);
        assert!(
            !l.apply(&p, done, &BTreeSet::new(), &files, clock(t0))
                .may_finish
        );
    }

    #[test]
    fn a_resumed_ledger_keeps_a_standing_failure_until_its_files_settle() {
        let p = protocol();
        let t0 = Instant::now();
        let mut files = Fake::default();
        files.moving.push(GATES.into());
        files
            .fresh
            .insert(GATES.into(), t0 + Duration::from_millis(300));
        let mut l = Ledger::new(3, Duration::from_millis(300));
        l.statuses
            .insert(CheckKey::new("2", "OBS-27"), Status::Fail);
        let (ev, _) = l.hold(&p, eval(Status::Pass, "ok"), &files, t0);
        let r = &ev.results[0];
        assert_eq!(
            r.status,
            Status::Fail,
            "a STOP is not lifted by a file mid-write"
        );
        assert!(
            r.evidence.observed.contains("restarted"),
            "{}",
            r.evidence.observed
        );
    }
}
