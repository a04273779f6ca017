//! Resuming: a log replayed, line by line and never whole in memory, into the state a restarted
//! referee takes over (passes run, statuses, history, incidents, fix attempts, escalations).
//! Each line is read back as the typed [`Event`] it was written as; a line that is not one
//! (torn by a crash, damaged, forged) is counted and skipped by number, and numbers read are
//! bounded.

use std::collections::BTreeMap;
use std::io::{self, BufRead, Read};

use chrono::{DateTime, Utc};
use serde::Deserialize;

use crate::engine::{CheckKey, PassState, Status};
use crate::outputs::{Incident, StatusChange};

use super::super::event::Event;
use super::EVENTS_FILE;

/// What a restarted referee takes over from an earlier run's log.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Resumed {
    /// The protocol hash of the latest start or restart.
    pub protocol_sha256: Option<String>,
    pub protocol_id: Option<String>,
    pub trace_ids: Vec<String>,
    /// When the first run started.
    pub started: Option<DateTime<Utc>>,
    /// Passes that ran, with when and why.
    pub ran: BTreeMap<String, PassState>,
    /// The last status of every check instance whose pass ran.
    pub statuses: BTreeMap<CheckKey, Status>,
    pub history: Vec<StatusChange>,
    pub incidents: Vec<Incident>,
    /// Escalated `pass:check` keys still failing, with the reason.
    pub escalations: Vec<(CheckKey, String)>,
    /// Fix attempts of still-failing keys, and the evidence hash of the latest one.
    pub attempts: BTreeMap<CheckKey, (u32, String)>,
    /// Task attempts whose `verdict` event is logged (a task protocol's).
    pub verdicts: std::collections::BTreeSet<(String, u64)>,
    /// Whether the last run wrote its `end` event.
    pub ended: bool,
    /// Whether that `end` says the run finished because the pipeline completed, with a final
    /// verdict: the run is over, and a referee started on its directory again begins a new run
    /// (one stopped by a signal, a request or the timeout, or whose pipeline exited before it
    /// completed, is resumed).
    pub completed: bool,
    pub events: usize,
    /// Lines that could not be parsed (a torn last line, damage): ignored, and reported.
    pub skipped: usize,
    /// The first [`MAX_SKIPPED_LISTED`] of them, by line number (from 1).
    pub skipped_lines: Vec<usize>,
}

/// How many skipped line numbers are kept to name in the report (the count is always exact).
pub const MAX_SKIPPED_LISTED: usize = 20;

impl Resumed {
    fn skip(&mut self, line: usize) {
        self.skipped = self.skipped.saturating_add(1);
        if self.skipped_lines.len() < MAX_SKIPPED_LISTED {
            self.skipped_lines.push(line);
        }
    }

    /// What a damaged log lost, for the report: `3 lines … could not be read and were skipped
    /// (lines 2, 5, 9)`; `None` when every line was read.
    pub fn damage(&self) -> Option<String> {
        if self.skipped == 0 {
            return None;
        }
        let mut lines: Vec<String> = self.skipped_lines.iter().map(usize::to_string).collect();
        if self.skipped > self.skipped_lines.len() {
            lines.push("…".into());
        }
        Some(format!(
            "{n} line{s} of {EVENTS_FILE} could not be read and {were} skipped on resume (line{s} {list}); \
the state resumed from the other {events} event{es} (a line torn by a crash is one; more is damage or tampering)",
            n = self.skipped,
            s = if self.skipped == 1 { "" } else { "s" },
            were = if self.skipped == 1 { "was" } else { "were" },
            list = lines.join(", "),
            events = self.events,
            es = if self.events == 1 { "" } else { "s" },
        ))
    }
}

/// The longest log line replayed. A longer one (no event comes near it) is skipped as damage
/// without ever being held in memory whole.
pub const MAX_LINE_BYTES: usize = 16 << 20;

/// Replays a log's text. Unparsable lines (a torn last line, damage) are counted, their line
/// numbers kept, and ignored; numbers in it are bounded (a fix attempt saturates at `u32::MAX`).
pub fn replay(text: &str) -> Resumed {
    // Reading from memory cannot fail.
    replay_from(text.as_bytes()).map_or_else(|_| Resumed::default(), |(r, _)| r)
}

/// Replays a log line by line (each at most [`MAX_LINE_BYTES`]); also says whether the last
/// line lacks its newline.
pub fn replay_from(mut reader: impl io::BufRead) -> io::Result<(Resumed, bool)> {
    let mut r = Resumed::default();
    let mut buf = Vec::new();
    let mut line_no: usize = 0;
    let mut ended = true;
    loop {
        buf.clear();
        let n = (&mut reader)
            .take(MAX_LINE_BYTES as u64 + 1)
            .read_until(b'\n', &mut buf)?;
        if n == 0 {
            break;
        }
        line_no = line_no.saturating_add(1);
        ended = buf.last() == Some(&b'\n');
        if !ended && buf.len() > MAX_LINE_BYTES {
            ended = skip_line(&mut reader)?;
            r.skip(line_no);
            continue;
        }
        if ended {
            buf.pop();
        }
        replay_line(&mut r, line_no, &String::from_utf8_lossy(&buf));
    }
    Ok((r, !ended))
}

/// Consumes the rest of an over-long line; whether it ended with a newline.
fn skip_line(reader: &mut impl io::BufRead) -> io::Result<bool> {
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            return Ok(false);
        }
        if let Some(i) = memchr::memchr(b'\n', chunk) {
            reader.consume(i + 1);
            return Ok(true);
        }
        let n = chunk.len();
        reader.consume(n);
    }
}

/// A logged line as the replay reads it: the envelope's time and trace, and the typed event.
#[derive(Deserialize)]
struct Logged {
    #[serde(default)]
    trace_id: Option<String>,
    timestamp: String,
    payload: Event,
}

fn time(v: Option<&str>) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(v?)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Replays one line (numbered from 1) into `r`.
fn replay_line(r: &mut Resumed, line_no: usize, line: &str) {
    if line.trim().is_empty() {
        return;
    }
    // serde_json refuses nesting deeper than 128: a hostile line is an error, not a crash.
    let Ok(logged) = serde_json::from_str::<Logged>(line) else {
        r.skip(line_no);
        return;
    };
    let Some(at) = time(Some(&logged.timestamp)) else {
        r.skip(line_no);
        return;
    };
    r.absorb(logged.payload, logged.trace_id, at);
}

impl Resumed {
    /// What one logged event changes in the state a restart takes over.
    fn absorb(&mut self, event: Event, trace_id: Option<String>, at: DateTime<Utc>) {
        self.events = self.events.saturating_add(1);
        if let Some(t) = trace_id {
            if !self.trace_ids.contains(&t) {
                self.trace_ids.push(t);
            }
        }
        if let Some((kind, text)) = event.incident() {
            self.incidents.push(Incident {
                at,
                kind: kind.into(),
                text: text.into(),
            });
        }
        let key = event.check().map(|(p, c)| CheckKey::new(p, c));
        match event {
            Event::Start { run, .. } | Event::Restart { run, .. } => {
                self.protocol_sha256 = Some(run.protocol.sha256);
                self.protocol_id = Some(run.protocol.id);
                if self.started.is_none() {
                    self.started = time(run.started.as_deref()).or(Some(at));
                }
                self.ended = false;
                self.completed = false;
            }
            Event::PassRun {
                pass,
                reason,
                at: ran_at,
                results,
            } => {
                for (check, st) in results {
                    self.statuses.insert(CheckKey::new(&pass, &check), st);
                }
                self.ran.insert(
                    pass.clone(),
                    PassState {
                        id: pass,
                        ran: true,
                        reason,
                        at: time(ran_at.as_deref()).or(Some(at)),
                    },
                );
            }
            Event::ResultChanged {
                pass,
                check,
                from,
                to,
                note,
                observed,
                details,
                ..
            } => {
                if let Some(k) = key {
                    self.statuses.insert(k, to);
                }
                self.history.push(StatusChange {
                    at,
                    pass,
                    check,
                    from,
                    to,
                    note,
                    observed: Some(observed),
                    details,
                });
            }
            Event::StopRaised {
                evidence_sha256, ..
            } => {
                self.attempts.extend(key.map(|k| (k, (0, evidence_sha256))));
            }
            Event::StopResolved { .. } => {
                if let Some(k) = key {
                    self.attempts.remove(&k);
                    self.escalations.retain(|(e, _)| *e != k);
                }
            }
            Event::FixAttempt {
                attempt,
                evidence_sha256,
                ..
            } => {
                let n = u32::try_from(attempt).unwrap_or(u32::MAX);
                self.attempts.extend(key.map(|k| (k, (n, evidence_sha256))));
            }
            Event::Escalation {
                pass,
                check,
                reason,
                ..
            } => {
                self.history.push(StatusChange {
                    at,
                    pass,
                    check,
                    from: Some(Status::Fail),
                    to: Status::Fail,
                    note: Some(format!("ESCALATED: human review required — {reason}")),
                    observed: None,
                    details: Vec::new(),
                });
                if let Some(k) = key {
                    self.escalations.retain(|(e, _)| *e != k);
                    self.escalations.push((k, reason));
                }
            }
            Event::End(e) => {
                self.ended = true;
                // Finished because the pipeline completed (or exited once it had), not stopped
                // by a signal, a request or the timeout, whatever the evaluation said then.
                self.completed = e.complete
                    && e.verdict.is_some()
                    && matches!(e.reason.as_str(), "complete" | "exit_with");
            }
            Event::Verdict {
                task_id,
                attempt: Some(a),
                ..
            } => {
                self.verdicts.insert((task_id, a));
            }
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Value};

    fn k(s: &str) -> CheckKey {
        let (pass, check) = s.split_once(':').unwrap();
        CheckKey::new(pass, check)
    }

    fn timestamp(t: &DateTime<Utc>) -> String {
        super::super::timestamp(t)
    }

    #[test]
    fn garbage_lines_are_counted_by_number_and_counters_cannot_overflow() {
        let at = timestamp(&Utc::now());
        let good = |p: Value| {
            serde_json::to_string(&json!({"trace_id": "t", "timestamp": at, "payload": p})).unwrap()
        };
        let deep = "[".repeat(100_000);
        let text = [
            good(json!({"event": "start", "protocol": {"sha256": "abc"}})),
            "garbage".to_string(),
            good(json!({"event": "stop_raised", "pass": "2", "check": "OBS-27"})),
            deep,
            "{\"no\": \"payload\"}".to_string(),
            good(json!({"event": "fix_attempt", "pass": "2", "check": "OBS-27", "attempt": 99_999_999_999_999u64})),
            "\u{0}\u{ffff}".to_string(),
        ]
        .join("\n");
        let r = replay(&text);
        assert_eq!((r.events, r.skipped), (3, 4));
        assert_eq!(r.skipped_lines, vec![2, 4, 5, 7]);
        assert_eq!(r.attempts[&k("2:OBS-27")].0, u32::MAX);
        let d = r.damage().unwrap();
        assert!(d.starts_with("4 lines of OBSERVER-EVENTS.jsonl"), "{d}");
        assert!(d.contains("(lines 2, 4, 5, 7)"), "{d}");
        // More than are listed: the count stays exact, the list ends with an ellipsis.
        let many = vec!["x"; 50].join("\n");
        let r = replay(&many);
        assert_eq!(r.skipped, 50);
        assert_eq!(r.skipped_lines.len(), MAX_SKIPPED_LISTED);
        assert!(r.damage().unwrap().contains(", …)"));
        assert_eq!(replay("").damage(), None);
    }

    #[test]
    fn an_over_long_line_is_skipped_without_being_held() {
        let at = timestamp(&Utc::now());
        let good = serde_json::to_string(
            &json!({"trace_id": "t", "timestamp": at, "payload": {"event": "end"}}),
        )
        .unwrap();
        let long = "x".repeat(MAX_LINE_BYTES + 10);
        let text = format!("{good}\n{long}\n{good}\n{long}");
        let (r, torn) = replay_from(text.as_bytes()).unwrap();
        assert_eq!((r.events, r.skipped), (2, 2));
        assert_eq!(r.skipped_lines, vec![2, 4]);
        assert!(torn, "the last line has no newline");
        let (_, torn) = replay_from(format!("{good}\n").as_bytes()).unwrap();
        assert!(!torn);
    }

    /// A run whose log ends with the pipeline completed (a final verdict) is over; one stopped
    /// by a signal or the timeout, or started again since, is not.
    #[test]
    fn a_run_is_completed_only_when_it_ended_with_its_pipeline_complete() {
        let at = timestamp(&Utc::now());
        let line = |p: Value| {
            serde_json::to_string(&json!({"trace_id": "t", "timestamp": at, "payload": p})).unwrap()
        };
        let start = line(json!({"event": "start", "protocol": {"sha256": "abc"}}));
        let end = |reason: &str, complete: bool, verdict: Value| {
            line(
                json!({"event": "end", "reason": reason, "text": "x", "final": false,
                "complete": complete, "verdict": verdict, "exit_code": 0, "stop": false,
                "unresolved": [], "summary": null, "report": null, "results": []}),
            )
        };
        let completed = |lines: &[String]| replay(&lines.join("\n")).completed;
        let ship = || json!("SHIP");
        assert!(completed(&[start.clone(), end("complete", true, ship())]));
        assert!(completed(&[start.clone(), end("exit_with", true, ship())]));
        assert!(!completed(&[start.clone(), end("signal", true, ship())]));
        assert!(!completed(&[start.clone(), end("timeout", true, ship())]));
        assert!(!completed(&[
            start.clone(),
            end("exit_with", false, Value::Null)
        ]));
        assert!(!completed(std::slice::from_ref(&start)));
        assert!(!completed(&[
            start.clone(),
            end("complete", true, ship()),
            start.clone()
        ]));
    }

    /// The attempts whose verdict is logged, so a restarted referee that judges an attempt
    /// again (its files never written) does not log it twice; a malformed record's verdict
    /// (no attempt) is not one of them.
    #[test]
    fn logged_verdicts_are_taken_over() {
        let at = timestamp(&Utc::now());
        let line = |p: Value| {
            serde_json::to_string(&json!({"trace_id": "t", "timestamp": at, "payload": p})).unwrap()
        };
        let verdict = |task: &str, attempt: Value| {
            line(
                json!({"event": "verdict", "task_id": task, "attempt": attempt,
                "verdict": "REJECT", "reasons": [], "text": "x"}),
            )
        };
        let text = [
            verdict("t1", json!(1)),
            verdict("t1", json!(2)),
            verdict("t2", Value::Null),
        ]
        .join("\n");
        let r = replay(&text);
        assert_eq!(r.events, 3);
        let want: std::collections::BTreeSet<(String, u64)> =
            [("t1".to_string(), 1), ("t1".to_string(), 2)].into();
        assert_eq!(r.verdicts, want);
    }
}
