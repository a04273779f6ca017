//! What the daemon says happened, as one typed enum: every line of `OBSERVER-EVENTS.jsonl` carries
//! one [`Event`] as its `payload`, written with serde and read back with serde on resume, so the
//! writer and the reader cannot drift apart (a round-trip test holds them together).
//!
//! This module owns the payloads' shapes and names (`"event": "stop_raised"` …), what each event
//! means for the envelope (scope, signal type, severity), the human line the daemon prints for it,
//! and which events are incidents for the report. It does no I/O and decides nothing: sessions
//! decide, [`super::journal`] appends and replays.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::engine::{RunReason, Status, Summary};

/// `app`: a judgment about the pipeline's artifacts; `motor`: about the referee itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    App,
    Motor,
}

/// The envelope's `signal_type` (seed 003's list; the referee uses these three).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Signal {
    /// Results, pass runs, STOP raised/resolved, fix attempts, escalations.
    Validation,
    /// The referee's faults and tampering with its files.
    Error,
    /// What the referee covered: start, restart, rescan, protocol edits, end.
    Coverage,
}

/// The envelope's `severity`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    #[default]
    Info,
    Warn,
    Error,
    Critical,
}

impl Level {
    /// The severity of a task attempt's verdict: an escalation is critical, a rejection an
    /// error, an attempt let through is news.
    pub fn of(outcome: crate::protocol::GradeOutcome) -> Level {
        use crate::protocol::GradeOutcome;
        match outcome {
            GradeOutcome::Escalate => Level::Critical,
            GradeOutcome::Reject => Level::Error,
            GradeOutcome::Pass | GradeOutcome::Cleanup => Level::Info,
        }
    }
}

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
    /// The protocol variables `--vars`/`--set`/`--protect` changed, as resolved.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub vars: Vec<crate::protocol::overrides::Resolved>,
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
        /// What a FAIL or INCONCLUSIVE rests on (file:line, term, value), capped
        /// ([`crate::outputs::StatusChange::kept_details`]): the cause stays in the log after the
        /// result changes again.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        details: Vec<String>,
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
        /// The envelope's severity, from what the verdict means in the protocol ([`Level::of`]);
        /// not part of the payload.
        #[serde(skip)]
        level: Level,
    },
    /// The workspace's `HEAD` names another commit than the baseline pinned at start (a
    /// commit, amend, reset or checkout by the worker): logged once per new `HEAD`; the
    /// baseline stays the pinned one.
    HeadMoved {
        pinned: String,
        head: String,
        #[serde(default)]
        text: String,
    },
    /// The protected paths a workspace's veto names changed (code-change): each path that
    /// differs from the baseline now, with what happened to it (`paths`; empty: the veto is
    /// lifted), and each that no longer does (`lifted`).
    Veto {
        #[serde(default)]
        paths: Vec<String>,
        #[serde(default)]
        lifted: Vec<String>,
        #[serde(default)]
        text: String,
    },
    /// `referee accept` moved the baseline: the accepted paths are measured against what was
    /// accepted from now on (`generation`: the accept's number in the state directory).
    Accepted {
        generation: u64,
        #[serde(default)]
        task: Option<String>,
        #[serde(default)]
        attempt: Option<u64>,
        paths: Vec<String>,
        /// `accept --commit`: the commit the baseline was re-pinned at.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        commit: Option<String>,
        /// `accept --commit --protected-too`: the protected paths it changed.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        protected: Vec<String>,
        /// `accept --commit`: the paths it changed to content no `accept --task` accepted.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        unjudged: Vec<String>,
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
    /// The waiver file (`--waivers`) changed (`why`: `changed`, `removed`, `invalid` — the
    /// waivers loaded before still apply) or one of its waivers expired (`expired`); the
    /// directory is judged again with what now applies.
    WaiversReloaded {
        file: String,
        why: String,
        #[serde(default)]
        count: usize,
        /// Each expired waiver, described.
        #[serde(default)]
        expired: Vec<String>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
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
            | Event::Verdict { .. }
            | Event::Veto { .. } => Scope::App,
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
            Event::Veto { paths, .. } if !paths.is_empty() => Level::Error,
            Event::Verdict { level, .. } => *level,
            Event::Restart { .. }
            | Event::FixAttempt { .. }
            | Event::Rescan { .. }
            | Event::Reattach { .. }
            | Event::ProtocolEdit { .. }
            | Event::WaiversReloaded { .. }
            | Event::HeadMoved { .. }
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
            Event::WaiversReloaded { text, .. } => Some(("waivers", text)),
            Event::LogDamaged { text, .. } => Some(("log damaged", text)),
            Event::Detached { text, .. } => Some(("detached", text)),
            Event::Reattach { text, .. } => Some(("reattach", text)),
            Event::HeadMoved { text, .. } => Some(("head moved", text)),
            Event::Accepted { text, .. } => Some(("accepted", text)),
            Event::Veto { text, .. } => Some(("veto", text)),
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
            Event::HeadMoved { text, .. } => text.clone(),
            Event::Accepted { text, .. } => text.clone(),
            Event::Veto { text, .. } => text.clone(),
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
            | Event::WaiversReloaded { text, .. }
            | Event::StopAdopted { text, .. } => text.clone(),
            Event::Start { .. } | Event::End(_) | Event::Unknown => return None,
        })
    }
}

#[cfg(test)]
mod tests;
