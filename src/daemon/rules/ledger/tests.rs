use super::*;
use crate::checks::FileRef;
use crate::engine::RunReason;

const GATES: &str = "p3a-gate-results.json";

/// A view of the files chosen by the test: which paths are still being written (until when),
/// and an evidence state that follows a counter the test bumps for "rewritten".
#[derive(Default)]
struct Fake {
    fresh: BTreeMap<String, Instant>,
    /// Until when a path's writes alone hold it (its writer's open handle aside; `None`:
    /// settled); `fresh` when not given.
    written: BTreeMap<String, Option<Instant>>,
    moving: Vec<String>,
    rewrites: u32,
}

impl Files for Fake {
    fn fresh_until(&self, path: &str) -> Option<Instant> {
        self.fresh.get(path).copied()
    }
    fn quiet_after_writes(&self, path: &str) -> Option<Instant> {
        match self.written.get(path) {
            Some(&until) => until,
            None => self.fresh_until(path),
        }
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
            waiver: None,
            stands: false,
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

/// Publishes OBS-27 at `status` (observed `seen`), as judged after `touched` changed.
fn step(
    l: &mut Ledger,
    files: &Fake,
    status: Status,
    seen: &str,
    touched: &[&str],
    now: Instant,
) -> Decided {
    let touched = touched.iter().map(|p| p.to_string()).collect();
    l.apply(&protocol(), eval(status, seen), &touched, files, clock(now))
}

#[test]
fn a_failure_raises_stop_and_its_fix_resolves_it() {
    let files = Fake::default();
    let t0 = Instant::now();
    let mut l = Ledger::new(3, Duration::from_secs(2));
    let d = step(&mut l, &files, Status::Pass, "ok", &[], t0);
    assert_eq!(
        names(&d),
        ["pass_run"],
        "first results are in the pass_run event"
    );
    assert!(l.history.is_empty());
    let d = step(&mut l, &files, Status::Fail, "1 manual", &[GATES], t0);
    assert_eq!(names(&d), ["result_changed", "stop_raised"]);
    assert_eq!(d.records[1].artifacts, [format!("{GATES}@ab")]);
    assert_eq!(l.history[0].note.as_deref(), Some("STOP raised"));
    let d = step(&mut l, &files, Status::Pass, "ok", &[GATES], t0);
    assert_eq!(names(&d), ["result_changed", "stop_resolved"]);
    assert_eq!(l.history[1].note.as_deref(), Some("RESOLVED after STOP"));
    assert_eq!(l.statuses[&CheckKey::new("2", "OBS-27")], Status::Pass);
    let d = step(&mut l, &files, Status::Pass, "ok", &[GATES], t0);
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
    let mut l = Ledger::new(3, Duration::from_secs(2));
    step(&mut l, &files, Status::Pass, "ok", &[], t0);
    let (held, recheck) = l.hold(&p, eval(Status::Fail, "half"), &files, t0);
    assert_eq!(
        held.results[0].status,
        Status::Pass,
        "the published status stays"
    );
    assert_eq!(recheck, Some(t0 + Duration::from_millis(300)));
    assert_eq!(l.holds.len(), 1);
    let d = l.apply(
        &p,
        held,
        &BTreeSet::from([GATES.to_string()]),
        &files,
        clock(t0),
    );
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

/// Each held result is looked at again when its own files settle: a violation in a file
/// written a moment ago is not kept waiting for another file that settles later (the look again
/// was the *latest* hold's, so an honest writer streaming one file held back the STOP of a
/// violation planted in another until that file settled).
#[test]
fn each_held_result_is_looked_at_again_when_its_own_files_settle() {
    let p = protocol();
    let t0 = Instant::now();
    let (soon, late) = (t0 + Duration::from_millis(300), t0 + Duration::from_secs(2));
    let mut files = Fake::default();
    files.fresh.insert(GATES.into(), soon);
    files.fresh.insert("p3a-gate-results-b.json".into(), late);
    let mut l = Ledger::new(3, Duration::from_secs(10));
    let two = |status: Status| {
        let mut e = eval(status, "1 manual");
        let mut other = e.results[0].clone();
        other.check = "OBS-24".into();
        other.evidence.files[0].path = "p3a-gate-results-b.json".into();
        e.results.push(other);
        e
    };
    let ok = two(Status::Pass);
    l.apply(&p, ok, &BTreeSet::new(), &files, clock(t0));
    let (held, recheck) = l.hold(&p, two(Status::Fail), &files, t0);
    assert_eq!(held.results[0].status, Status::Pass);
    assert_eq!(held.results[1].status, Status::Pass);
    assert_eq!(recheck, Some(soon), "the first hold to run out");
    // Looked at again then: the first is published, the second still held.
    files.fresh.remove(GATES);
    let (ev, recheck) = l.hold(&p, two(Status::Fail), &files, soon);
    assert_eq!(ev.results[0].status, Status::Fail);
    assert_eq!(ev.results[1].status, Status::Pass);
    assert_eq!(recheck, Some(late));
}

/// A FAIL that rests on what is complete in its files ([`CheckResult::stands`]: a hand-entered
/// gate entry already closed) waits for the file's writes, not for its writer's open handle;
/// any other failure on the same file waits for both.
#[test]
fn a_failure_that_stands_is_not_held_by_an_open_handle() {
    let p = protocol();
    let t0 = Instant::now();
    let (written, closed) = (t0 + Duration::from_millis(300), t0 + Duration::from_secs(2));
    let mut files = Fake::default();
    files.fresh.insert(GATES.into(), closed);
    files.written.insert(GATES.into(), Some(written));
    for stands in [false, true] {
        let mut l = Ledger::new(3, Duration::from_secs(10));
        step(&mut l, &files, Status::Pass, "ok", &[], t0);
        let mut bad = eval(Status::Fail, "1 manual");
        bad.results[0].stands = stands;
        let (held, recheck) = l.hold(&p, bad.clone(), &files, t0);
        assert_eq!(held.results[0].status, Status::Pass);
        assert_eq!(recheck, Some(if stands { written } else { closed }));
        files.written.insert(GATES.into(), None);
        let (ev, _) = l.hold(&p, bad, &files, written);
        let want = if stands { Status::Fail } else { Status::Pass };
        assert_eq!(ev.results[0].status, want, "stands: {stands}");
        files.written.insert(GATES.into(), Some(written));
    }
}

#[test]
fn a_file_written_forever_cannot_hold_a_failure_past_the_limit() {
    let p = protocol();
    let t0 = Instant::now();
    let mut files = Fake::default();
    let mut l = Ledger::new(3, Duration::from_secs(3));
    step(&mut l, &files, Status::Pass, "ok", &[], t0);
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
    let t0 = Instant::now();
    let mut files = Fake::default();
    let mut l = Ledger::new(2, Duration::from_secs(2));
    step(&mut l, &files, Status::Fail, "1 manual", &[], t0);
    // An echo of the write that raised STOP (nothing rewritten) is no attempt.
    let d = step(&mut l, &files, Status::Fail, "1 manual", &[GATES], t0);
    assert!(names(&d).is_empty(), "{:?}", names(&d));
    // A rewrite still being written waits for it to settle.
    files.rewrites += 1;
    files
        .fresh
        .insert(GATES.into(), t0 + Duration::from_millis(300));
    let d = step(&mut l, &files, Status::Fail, "2 manual", &[GATES], t0);
    assert!(names(&d).is_empty());
    assert_eq!(d.recheck, Some(t0 + Duration::from_millis(300)));
    assert!(!d.may_finish);
    files.fresh.clear();
    let d = step(&mut l, &files, Status::Fail, "2 manual", &[], t0);
    assert_eq!(names(&d), ["fix_attempt"]);
    // A second attempt reaches the limit of 2: escalated, once.
    files.rewrites += 1;
    let d = step(&mut l, &files, Status::Fail, "3 manual", &[GATES], t0);
    assert_eq!(names(&d), ["fix_attempt", "escalation"]);
    assert_eq!(l.guard.escalations().len(), 1);
    files.rewrites += 1;
    let d = step(&mut l, &files, Status::Fail, "4 manual", &[GATES], t0);
    assert_eq!(names(&d), ["fix_attempt"]);
    // A file no input of OBS-27 reads is no attempt.
    files.rewrites += 1;
    let d = step(&mut l, &files, Status::Fail, "4 manual", &["notes.txt"], t0);
    assert!(names(&d).is_empty());
}

#[test]
fn identical_evidence_escalates_at_once() {
    let t0 = Instant::now();
    let mut files = Fake::default();
    let mut l = Ledger::new(5, Duration::from_secs(2));
    step(&mut l, &files, Status::Fail, "1 manual", &[], t0);
    files.rewrites += 1;
    let d = step(&mut l, &files, Status::Fail, "1 manual", &[GATES], t0);
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
    let mut l = Ledger::new(3, Duration::from_secs(2));
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
    let mut l = Ledger::new(3, Duration::from_secs(2));
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

#[test]
fn a_waiver_coming_or_going_resolves_or_raises_the_stop() {
    let files = Fake::default();
    let t0 = Instant::now();
    let mut l = Ledger::new(3, Duration::from_secs(2));
    let waived = |w: bool| {
        let mut e = eval(Status::Fail, "1 manual");
        e.results[0].waiver = w.then(|| crate::engine::Applied {
            pass: None,
            reason: "known".into(),
            approved_by: "a".into(),
            expires: "2099-01-01".into(),
            at: "w.toml:1".into(),
        });
        e
    };
    let apply = |l: &mut Ledger, e| l.apply(&protocol(), e, &BTreeSet::new(), &files, clock(t0));
    step(&mut l, &files, Status::Pass, "ok", &[], t0);
    let d = apply(&mut l, waived(false));
    assert_eq!(names(&d), ["result_changed", "stop_raised"]);
    let d = apply(&mut l, waived(true));
    assert_eq!(names(&d), ["stop_resolved"], "same status, now waived");
    assert_eq!(
        l.history.last().and_then(|c| c.note.as_deref()),
        Some("WAIVED (w.toml:1): RESOLVED after STOP")
    );
    let d = apply(&mut l, waived(true));
    assert!(d.records.is_empty(), "nothing changed");
    let d = apply(&mut l, waived(false));
    assert_eq!(names(&d), ["stop_raised"], "the waiver is gone");
    assert_eq!(
        l.history.last().and_then(|c| c.note.as_deref()),
        Some("waiver gone: STOP raised")
    );
    // A waived FAIL that is fixed resolves no STOP: it held none.
    apply(&mut l, waived(true));
    let d = step(&mut l, &files, Status::Pass, "ok", &[GATES], t0);
    assert_eq!(names(&d), ["result_changed"]);
    assert_eq!(l.history.last().and_then(|c| c.note.as_deref()), None);
}

#[test]
fn the_last_judgment_holds_no_new_failure_but_lifts_no_stop_on_a_moving_file() {
    let p = protocol();
    let t0 = Instant::now();
    let mut files = Fake::default();
    files
        .fresh
        .insert(GATES.into(), t0 + Duration::from_millis(300));
    let mut l = Ledger::new(3, Duration::from_secs(2));
    step(&mut l, &files, Status::Pass, "ok", &[], t0);
    let ev = l.hold_at_end(&p, eval(Status::Fail, "1 manual"), &files, t0);
    assert_eq!(ev.results[0].status, Status::Fail, "judged as it stands");
    step(
        &mut l,
        &Fake::default(),
        Status::Fail,
        "1 manual",
        &[GATES],
        t0,
    );
    let ev = l.hold_at_end(&p, eval(Status::Waiting, "half"), &files, t0);
    assert_eq!(ev.results[0].status, Status::Fail, "the STOP stands");
    files.fresh.clear();
    let ev = l.hold_at_end(&p, eval(Status::Pass, "ok"), &files, t0);
    assert_eq!(ev.results[0].status, Status::Pass, "settled: lifted");
}

/// A result held on a moving file and not looked at again (only other files changed) stays
/// held from when it was first held: its bound is not restarted by changes elsewhere. A look
/// that reads it good ends the hold, and the next bad look starts a new one.
#[test]
fn a_held_result_keeps_its_bound_until_it_is_looked_at_again() {
    let p = protocol();
    let t0 = Instant::now();
    let mut files = Fake::default();
    let mut l = Ledger::new(3, Duration::from_secs(2));
    step(&mut l, &files, Status::Pass, "ok", &[], t0);
    let moving = |files: &mut Fake, at: Instant| {
        files
            .fresh
            .insert(GATES.into(), at + Duration::from_millis(300));
    };
    moving(&mut files, t0);
    let (ev, _) = l.hold(&p, eval(Status::Fail, "half"), &files, t0);
    assert_eq!(ev.results[0].status, Status::Pass, "held");
    assert_eq!(l.holds[&CheckKey::new("2", "OBS-27")], t0);
    // Another file changed: OBS-27 was not judged again (its published PASS kept).
    let other: BTreeSet<String> = ["notes.md".to_string()].into();
    let t1 = t0 + Duration::from_millis(500);
    let (ev, _) = l.hold_after(&p, eval(Status::Pass, "ok"), Some(&other), &files, t1);
    assert_eq!(ev.results[0].status, Status::Pass);
    assert_eq!(
        l.holds.get(&CheckKey::new("2", "OBS-27")),
        Some(&t0),
        "kept"
    );
    // Bad again at every look: published once the bound from t0 has run out.
    let t2 = t0 + Duration::from_secs(2);
    moving(&mut files, t2);
    let (ev, _) = l.hold(&p, eval(Status::Fail, "1 manual"), &files, t2);
    assert_eq!(ev.results[0].status, Status::Fail, "published at the bound");
    // A look that reads it good (judged again: its input changed) ends the hold.
    let mut l = Ledger::new(3, Duration::from_secs(2));
    step(&mut l, &files, Status::Pass, "ok", &[], t0);
    let (_, _) = l.hold(&p, eval(Status::Fail, "half"), &files, t0);
    let gates: BTreeSet<String> = [GATES.to_string()].into();
    let (_, _) = l.hold_after(&p, eval(Status::Pass, "ok"), Some(&gates), &files, t1);
    assert!(l.holds.is_empty(), "read good: not held");
    let (ev, _) = l.hold(&p, eval(Status::Fail, "half"), &files, t2);
    assert_eq!(ev.results[0].status, Status::Pass, "a new hold");
    assert_eq!(l.holds[&CheckKey::new("2", "OBS-27")], t2);
}

/// News is what a reader acts on: before anything is published, a status that changes and a
/// held result are news; the same statuses with other evidence are not (the judgment's barrier
/// is skipped for them).
#[test]
fn news_is_a_status_that_changes_or_a_hold_never_evidence_alone() {
    let files = Fake::default();
    let t0 = Instant::now();
    let mut l = Ledger::new(3, Duration::from_secs(2));
    assert!(l.news(&eval(Status::Pass, "ok")), "nothing published yet");
    step(&mut l, &files, Status::Pass, "ok", &[], t0);
    assert!(!l.news(&eval(Status::Pass, "ok")));
    assert!(
        !l.news(&eval(Status::Pass, "ok, read again")),
        "evidence alone"
    );
    assert!(
        l.news(&eval(Status::Fail, "1 manual")),
        "a status that changes"
    );
    let mut done = eval(Status::Pass, "ok");
    done.complete = !done.complete;
    assert!(l.news(&done), "completeness");
    l.holds.insert(CheckKey::new("2", "OBS-27"), t0);
    assert!(
        l.news(&eval(Status::Pass, "ok")),
        "a held result may be published"
    );
}
