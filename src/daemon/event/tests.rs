use super::*;
use serde_json::json;

fn every_kind() -> Vec<Event> {
    let run = Started {
        protocol: ProtocolInfo {
            id: "d10".into(),
            version: "1.0.0".into(),
            sha256: "abc".into(),
            origin: "embedded:d10".into(),
        },
        started: Some("2026-11-23T10:00:00.000Z".into()),
        pid: 42,
        build_dir: "/b".into(),
        options: RunOptions {
            watch: "inotify".into(),
            exit_with: Some(7),
            timeout_secs: None,
            on_fault: "stop".into(),
            max_fix_attempts: 3,
            heartbeat_secs: 2.0,
            settle_ms: 300,
            max_read_bytes: 1 << 26,
            vars: Vec::new(),
        },
        warning: None,
    };
    vec![
        Event::Start {
            run: run.clone(),
            rotated: Some("/b/OBSERVER-EVENTS-1.jsonl".into()),
        },
        Event::Restart {
            run,
            previous_trace_ids: vec!["t1".into()],
            skipped_lines: 1,
            text: "restarted".into(),
        },
        Event::PassRun {
            pass: "2".into(),
            reason: Some(RunReason::Trigger),
            at: Some("2026-11-23T10:00:01.000Z".into()),
            results: BTreeMap::from([("OBS-27".into(), Status::Fail)]),
        },
        Event::ResultChanged {
            pass: "2".into(),
            check: "OBS-27".into(),
            title: "Gate results".into(),
            severity: "BLOCKING".into(),
            from: None,
            to: Status::Fail,
            note: Some("STOP raised".into()),
            due: true,
            expected: "e".into(),
            observed: "o".into(),
            details: vec!["a.md:7: `GR-` matched \"GR-12\"".into()],
            evidence_sha256: "h".into(),
        },
        Event::StopRaised {
            pass: "2".into(),
            check: "OBS-27".into(),
            title: "Gate results".into(),
            observed: "o".into(),
            evidence_sha256: "h".into(),
        },
        Event::StopResolved {
            pass: "2".into(),
            check: "OBS-27".into(),
            to: Some(Status::Pass),
        },
        Event::FixAttempt {
            pass: "2".into(),
            check: "OBS-27".into(),
            attempt: 2,
            identical: true,
            evidence_sha256: "h".into(),
        },
        Event::Escalation {
            pass: "2".into(),
            check: "OBS-27".into(),
            reason: "no progress".into(),
            attempts: 3,
            text: "escalated".into(),
        },
        Event::Verdict {
            task_id: "t1".into(),
            attempt: Some(2),
            verdict: "REJECT".into(),
            reasons: vec!["protected_file_modified".into()],
            text: "task t1 attempt 2: REJECT".into(),
            // Not part of the payload: a line read back has the default.
            level: Level::default(),
        },
        Event::Fault {
            area: "scan".into(),
            message: "m".into(),
            policy: Some("stop".into()),
            text: Some("m".into()),
            cleared: false,
        },
        Event::Fault {
            area: "scan".into(),
            message: "m".into(),
            policy: None,
            text: None,
            cleared: true,
        },
        Event::Rescan {
            why: "overflow".into(),
        },
        Event::Detached {
            build_dir: "/b".into(),
            why: "gone".into(),
            text: "detached".into(),
        },
        Event::Reattach {
            build_dir: "/b".into(),
            dev: 1,
            ino: 2,
            previous_log: None,
            previous_lines: 0,
            text: "reattached".into(),
        },
        Event::ProtocolEdit {
            path: "/p.toml".into(),
            loaded_sha256: "a".into(),
            now_sha256: "b".into(),
            text: "edited".into(),
        },
        Event::Tamper {
            file: "OBSERVER-STOP.md".into(),
            what: "deleted".into(),
            found: None,
            action: "restored".into(),
            moved_to: None,
            failing: vec!["OBS-27 (pass 2)".into()],
            text: "deleted; restored".into(),
        },
        Event::LogDamaged {
            file: "OBSERVER-EVENTS.jsonl".into(),
            skipped: 2,
            lines: vec![3, 9],
            events: 10,
            text: "damaged".into(),
        },
        Event::StopAdopted {
            raised_by_referee: true,
            text: "adopted".into(),
        },
        Event::WaiversReloaded {
            file: "/w.toml".into(),
            why: "invalid".into(),
            count: 1,
            expired: vec![
                "waiver for OBS-27 (/w.toml:1, approved by a) expired on 2020-01-01; ignored"
                    .into(),
            ],
            error: Some("/w.toml:3:1: unknown field `x`".into()),
            text: "cannot be used".into(),
        },
        Event::HeadMoved {
            pinned: "a".repeat(40),
            head: "b".repeat(40),
            text: "HEAD moved".into(),
        },
        Event::Veto {
            paths: vec!["src/orchestrator.py (modified)".into()],
            lifted: vec![".git/hooks/pre-commit (added)".into()],
            text: "veto: src/orchestrator.py (modified)".into(),
        },
        Event::Accepted {
            generation: 1,
            task: Some("t1".into()),
            attempt: Some(1),
            paths: vec!["src/app.py".into()],
            commit: None,
            protected: Vec::new(),
            unjudged: Vec::new(),
            text: "accepted".into(),
        },
        Event::End(Box::new(Ended {
            reason: "complete".into(),
            text: "the pipeline completed".into(),
            final_: false,
            complete: true,
            verdict: Some("SHIP".into()),
            exit_code: 0,
            stop: false,
            unresolved: Vec::new(),
            summary: None,
            report: Some("/b/OBSERVER-REPORT.md".into()),
            results: vec![FinalResult {
                pass: "2".into(),
                check: "OBS-27".into(),
                severity: "BLOCKING".into(),
                status: Status::Pass,
            }],
        })),
    ]
}

#[test]
fn every_event_round_trips_through_json() {
    for e in every_kind() {
        let text = serde_json::to_string(&e).unwrap();
        let back: Event = serde_json::from_str(&text).unwrap();
        assert_eq!(back, e, "{text}");
        let name = serde_json::from_str::<serde_json::Value>(&text).unwrap()["event"].clone();
        assert!(name.is_string(), "tagged: {text}");
    }
}

#[test]
fn the_wire_names_stay_as_logs_have_them() {
    let names: Vec<String> = every_kind()
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["event"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        names,
        [
            "start",
            "restart",
            "pass_run",
            "result_changed",
            "stop_raised",
            "stop_resolved",
            "fix_attempt",
            "escalation",
            "verdict",
            "fault",
            "fault",
            "rescan",
            "detached",
            "reattach",
            "protocol_edit",
            "tamper",
            "log_damaged",
            "stop_adopted",
            "waivers_reloaded",
            "head_moved",
            "veto",
            "accepted",
            "end"
        ]
    );
    let end = serde_json::to_value(every_kind().pop().unwrap()).unwrap();
    assert_eq!(end["final"], json!(false), "`final`, a keyword in Rust");
}

#[test]
fn unknown_events_and_missing_fields() {
    let e: Event = serde_json::from_value(json!({"event": "from_the_future", "x": 1})).unwrap();
    assert_eq!(e, Event::Unknown);
    assert!(serde_json::from_value::<Event>(json!({"pass": "2"})).is_err());
    assert!(
        serde_json::from_value::<Event>(json!({"event": "stop_raised", "pass": "2"})).is_err(),
        "an event about a check names it"
    );
    let e: Event =
        serde_json::from_value(json!({"event": "stop_raised", "pass": "2", "check": "OBS-27"}))
            .unwrap();
    assert_eq!(e.check(), Some(("2", "OBS-27")));
}

#[test]
fn envelopes_follow_from_the_event() {
    let kinds = every_kind();
    let levels: Vec<Level> = kinds.iter().map(Event::level).collect();
    assert_eq!(levels[3], Level::Error, "a BLOCKING FAIL");
    assert_eq!(
        levels[8],
        Level::Info,
        "a verdict read back carries no severity"
    );
    // A verdict's severity is what it means in the protocol, whatever it is called.
    let verdict = |name: &str, outcome| Event::Verdict {
        task_id: "t1".into(),
        attempt: Some(1),
        verdict: name.into(),
        reasons: vec![],
        text: String::new(),
        level: Level::of(outcome),
    };
    use crate::protocol::GradeOutcome;
    assert_eq!(verdict("NO", GradeOutcome::Reject).level(), Level::Error);
    assert_eq!(
        verdict("HUMAN", GradeOutcome::Escalate).level(),
        Level::Critical
    );
    assert_eq!(verdict("TIDY", GradeOutcome::Cleanup).level(), Level::Info);
    assert_eq!(verdict("OK", GradeOutcome::Pass).level(), Level::Info);
    assert_eq!(levels[9], Level::Critical, "a fault under --on-fault stop");
    assert_eq!(levels[10], Level::Info, "a fault cleared");
    assert_eq!(kinds[4].scope(), Scope::App);
    assert_eq!(kinds[15].signal(), Signal::Error);
    assert_eq!(
        kinds[8].scope(),
        Scope::App,
        "a verdict judges the pipeline's work"
    );
    assert_eq!(kinds[0].signal(), Signal::Coverage);
    let incidents: Vec<&str> = kinds
        .iter()
        .filter_map(|e| e.incident())
        .map(|i| i.0)
        .collect();
    assert_eq!(
        incidents,
        [
            "restart",
            "escalation",
            "fault",
            "detached",
            "reattach",
            "protocol edit",
            "tamper",
            "log damaged",
            "waivers",
            "head moved",
            "veto",
            "accepted"
        ]
    );
    let veto = kinds
        .iter()
        .find(|e| matches!(e, Event::Veto { .. }))
        .expect("a veto event");
    assert_eq!(veto.level(), Level::Error, "a veto raised");
    assert_eq!(veto.scope(), Scope::App, "a veto judges the worker's work");
}
