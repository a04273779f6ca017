//! What the daemon says happened, as one typed enum: every line of `OBSERVER-EVENTS.jsonl` carries
//! one [`Event`] as its `payload`, written with serde and read back with serde on resume, so the
//! writer and the reader cannot drift apart (a round-trip test holds them together).
//!
//! This module owns the payloads' shapes and names (`"event": "stop_raised"` …), what each event
//! means for the envelope (scope, signal type, severity), the human line the daemon prints for it,
//! and which events are incidents for the report. It does no I/O and decides nothing: sessions
//! decide, [`super::events`] appends and replays.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::engine::{RunReason, Status, Summary};

use super::events::{Level, Scope, Signal};

/// A protocol, as the start and restart events name it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct ProtocolInfo {
    #[serde(default)]
    pub id: String,
    #[serde(default)]
    pub version: String,
    pub sha256: String,
    #[serde(default)]
    pub origin: String,
}

/// The options a run was started with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct RunOptions {
    pub watch: String,
    pub exit_with: Option<i32>,
    pub timeout_secs: Option<f64>,
    pub on_fault: String,
    pub max_fix_attempts: u32,
    pub heartbeat_secs: f64,
    pub settle_ms: u64,
    pub max_read_bytes: u64,
}

/// A run's start (or restart): what was started, where, how.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Started {
    #[serde(default)]
    pub protocol: ProtocolInfo,
    /// RFC 3339; on a restart, when the first run started.
    #[serde(default)]
    pub started: Option<String>,
    #[serde(default)]
    pub pid: u32,
    #[serde(default)]
    pub build_dir: String,
    #[serde(default)]
    pub options: RunOptions,
    #[serde(default)]
    pub warning: Option<String>,
}

/// One check's status at the end.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FinalResult {
    pub pass: String,
    pub check: String,
    pub severity: String,
    pub status: Status,
}

/// Every event the daemon logs. The `event` field names the variant (`snake_case`); an event
/// name this build does not know (written by a newer referee) reads as [`Event::Unknown`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    Start {
        #[serde(flatten)]
        run: Started,
        /// Where `--fresh` moved the previous log.
        #[serde(default)]
        rotated: Option<String>,
    },
    Restart {
        #[serde(flatten)]
        run: Started,
        #[serde(default)]
        previous_trace_ids: Vec<String>,
        #[serde(default)]
        skipped_lines: usize,
        text: String,
    },
    /// A pass ran; its first results.
    PassRun {
        pass: String,
        #[serde(default)]
        reason: Option<RunReason>,
        /// RFC 3339.
        #[serde(default)]
        at: Option<String>,
        #[serde(default)]
        results: BTreeMap<String, Status>,
    },
    /// A check's published status changed (or a pass's first result is bad).
    ResultChanged {
        pass: String,
        check: String,
        #[serde(default)]
        title: String,
        #[serde(default)]
        severity: String,
        #[serde(default)]
        from: Option<Status>,
        to: Status,
        #[serde(default)]
        note: Option<String>,
        #[serde(default)]
        due: bool,
        #[serde(default)]
        expected: String,
        #[serde(default)]
        observed: String,
        #[serde(default)]
        evidence_sha256: String,
    },
    StopRaised {
        pass: String,
        check: String,
        #[serde(default)]
        title: String,
        #[serde(default)]
        observed: String,
        #[serde(default)]
        evidence_sha256: String,
    },
    StopResolved {
        pass: String,
        check: String,
        #[serde(default)]
        to: Option<Status>,
    },
    /// A change to a failing BLOCKING check's inputs that left it failing.
    FixAttempt {
        pass: String,
        check: String,
        /// Read back saturating (a forged huge number is `u32::MAX`).
        attempt: u64,
        #[serde(default)]
        identical: bool,
        #[serde(default)]
        evidence_sha256: String,
    },
    Escalation {
        pass: String,
        check: String,
        reason: String,
        #[serde(default)]
        attempts: u32,
        text: String,
    },
    /// A task attempt judged (a protocol with `[tasks]`): its verdict, once per attempt.
    Verdict {
        task_id: String,
        #[serde(default)]
        attempt: Option<u64>,
        verdict: String,
        #[serde(default)]
        reasons: Vec<String>,
        #[serde(default)]
        text: String,
    },
    /// The referee's own fault (`cleared`: it no longer stands).
    Fault {
        area: String,
        message: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        policy: Option<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        text: Option<String>,
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        cleared: bool,
    },
    /// Events may have been lost: everything was looked at again.
    Rescan {
        why: String,
    },
    Detached {
        build_dir: String,
        why: String,
        text: String,
    },
    Reattach {
        build_dir: String,
        dev: u64,
        ino: u64,
        #[serde(default)]
        previous_log: Option<String>,
        #[serde(default)]
        previous_lines: usize,
        text: String,
    },
    ProtocolEdit {
        path: String,
        loaded_sha256: String,
        now_sha256: String,
        text: String,
    },
    /// Someone else touched one of the referee's own files.
    Tamper {
        #[serde(default)]
        file: String,
        #[serde(default)]
        what: String,
        #[serde(default)]
        found: Option<String>,
        #[serde(default)]
        action: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        moved_to: Option<String>,
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        failing: Vec<String>,
        text: String,
    },
    LogDamaged {
        file: String,
        skipped: usize,
        lines: Vec<usize>,
        events: usize,
        text: String,
    },
    StopAdopted {
        raised_by_referee: bool,
        text: String,
    },
    End(Box<Ended>),
    #[serde(other)]
    Unknown,
}

/// The end of a run: why, the verdict, the exit code and every check's final status.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(default)]
pub struct Ended {
    pub reason: String,
    pub text: String,
    #[serde(rename = "final")]
    pub final_: bool,
    pub complete: bool,
    pub verdict: Option<String>,
    pub exit_code: u8,
    pub stop: bool,
    pub unresolved: Vec<String>,
    pub summary: Option<Summary>,
    pub report: Option<String>,
    pub results: Vec<FinalResult>,
}

impl Event {
    /// The envelope's `scope`: a judgment of the pipeline's artifacts, or about the referee.
    pub fn scope(&self) -> Scope {
        match self {
            Event::PassRun { .. }
            | Event::ResultChanged { .. }
            | Event::StopRaised { .. }
            | Event::StopResolved { .. }
            | Event::FixAttempt { .. }
            | Event::Escalation { .. }
            | Event::Verdict { .. } => Scope::App,
            _ => Scope::Motor,
        }
    }

    /// The envelope's `signal_type`.
    pub fn signal(&self) -> Signal {
        match self.scope() {
            Scope::App => Signal::Validation,
            Scope::Motor => match self {
                Event::Fault { .. }
                | Event::Detached { .. }
                | Event::Tamper { .. }
                | Event::LogDamaged { .. } => Signal::Error,
                _ => Signal::Coverage,
            },
        }
    }

    /// The envelope's `severity`.
    pub fn level(&self) -> Level {
        match self {
            Event::ResultChanged { to, severity, .. } => match (to, severity.as_str()) {
                (Status::Fail, "BLOCKING") => Level::Error,
                (Status::Fail | Status::Inconclusive, _) => Level::Warn,
                _ => Level::Info,
            },
            Event::StopRaised { .. } | Event::Tamper { .. } => Level::Error,
            Event::Fault { cleared: true, .. } => Level::Info,
            Event::Fault { policy, .. } => match policy.as_deref() {
                Some("continue") => Level::Error,
                _ => Level::Critical,
            },
            Event::Escalation { .. } | Event::Detached { .. } => Level::Critical,
            Event::Verdict { verdict, .. } if verdict.starts_with("ESCALATE") => Level::Critical,
            Event::Verdict { verdict, .. } if verdict == "REJECT" => Level::Error,
            Event::Restart { .. }
            | Event::FixAttempt { .. }
            | Event::Rescan { .. }
            | Event::Reattach { .. }
            | Event::ProtocolEdit { .. }
            | Event::LogDamaged { .. } => Level::Warn,
            Event::End(e) if e.exit_code != 0 => Level::Error,
            _ => Level::Info,
        }
    }

    /// What the report lists among its incidents: `(kind, text)`. Live and resumed runs both
    /// take their incidents from here.
    pub fn incident(&self) -> Option<(&'static str, &str)> {
        match self {
            Event::Restart { text, .. } => Some(("restart", text)),
            Event::Escalation { text, .. } => Some(("escalation", text)),
            Event::Tamper { text, .. } => Some(("tamper", text)),
            Event::Fault {
                message,
                cleared: false,
                ..
            } => Some(("fault", message)),
            Event::ProtocolEdit { text, .. } => Some(("protocol edit", text)),
            Event::LogDamaged { text, .. } => Some(("log damaged", text)),
            Event::Detached { text, .. } => Some(("detached", text)),
            Event::Reattach { text, .. } => Some(("reattach", text)),
            _ => None,
        }
    }

    /// `pass:check` of an event about one check.
    pub fn check(&self) -> Option<(&str, &str)> {
        match self {
            Event::ResultChanged { pass, check, .. }
            | Event::StopRaised { pass, check, .. }
            | Event::StopResolved { pass, check, .. }
            | Event::FixAttempt { pass, check, .. }
            | Event::Escalation { pass, check, .. } => Some((pass, check)),
            _ => None,
        }
    }

    /// The one human line the daemon prints for this event (`None`: it prints its own, or none).
    pub fn line(&self) -> Option<String> {
        Some(match self {
            Event::PassRun { pass, reason, .. } => format!(
                "pass {pass} ran ({})",
                reason.map_or("?".to_string(), |r| format!("{r:?}").to_lowercase())
            ),
            Event::ResultChanged {
                pass,
                check,
                from,
                to,
                observed,
                ..
            } => format!(
                "{check} (pass {pass}): {} → {}{}",
                from.map_or("—", Status::as_str),
                to.as_str(),
                if matches!(to, Status::Fail | Status::Inconclusive) {
                    format!(" — {observed}")
                } else {
                    String::new()
                }
            ),
            Event::StopRaised {
                pass,
                check,
                title,
                observed,
                ..
            } => format!("STOP raised: {check} (pass {pass}) — {title}: {observed}"),
            Event::StopResolved { pass, check, .. } => {
                format!("STOP resolved: {check} (pass {pass})")
            }
            Event::FixAttempt {
                pass,
                check,
                attempt,
                identical,
                ..
            } => format!(
                "fix attempt {attempt} on {check} (pass {pass}): still failing{}",
                if *identical {
                    " (evidence unchanged)"
                } else {
                    ""
                }
            ),
            Event::Escalation { text, .. } => format!("ESCALATED: {text}"),
            Event::Verdict { text, .. } => text.clone(),
            Event::Fault {
                message,
                cleared: false,
                ..
            } => format!("fault: {message}"),
            Event::Fault { message, .. } => format!("fault cleared: {message}"),
            Event::Rescan { why } => format!("rescan: {why}"),
            Event::Tamper { text, .. } => format!("tamper: {text}"),
            Event::LogDamaged { text, .. } => format!("warning: {text}"),
            Event::Restart { text, .. }
            | Event::Detached { text, .. }
            | Event::Reattach { text, .. }
            | Event::ProtocolEdit { text, .. }
            | Event::StopAdopted { text, .. } => text.clone(),
            Event::Start { .. } | Event::End(_) | Event::Unknown => return None,
        })
    }
}

#[cfg(test)]
mod tests {
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
        assert_eq!(levels[8], Level::Error, "a REJECT verdict");
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
                "log damaged"
            ]
        );
    }
}
