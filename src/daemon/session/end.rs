//! A session's end: one more judgment (as final when the pipeline is gone), the report, the last
//! heartbeat and the `end` event, and the outcome the loop hands back.

use std::collections::BTreeSet;
use std::path::PathBuf;

use chrono::Utc;

use crate::engine::{CheckResult, Evaluation};
use crate::exit::ExitCode;
use crate::outputs::{markdown, REPORT_FILE};

use super::super::event::{Ended, Event, FinalResult};
use super::super::journal::Record;
use super::super::{heartbeat, EndReason, FaultPolicy, Outcome};
use super::{Part, Session};

/// What a session's end settled on, for [`Session::conclude`].
struct Concluded {
    reason: EndReason,
    ended: String,
    eval: Evaluation,
    report: Option<PathBuf>,
    /// Judged as final (the pipeline is gone).
    final_: bool,
    /// A violation stands (exit 1 unless the referee itself failed).
    violation: bool,
    artifacts: Vec<String>,
}

fn empty_evaluation(final_: bool) -> Evaluation {
    Evaluation {
        complete: false,
        verdict: None,
        verdict_at: None,
        verdict_note: None,
        final_,
        passes: Vec::new(),
        results: Vec::new(),
    }
}

impl Session {
    /// Judges once more (as final when the pipeline is gone), writes the report and the last
    /// heartbeat and event.
    pub fn finish(&mut self, reason: EndReason) -> Outcome {
        // The last chance: every write that failed is tried again now, whatever its backoff (a
        // fault that cleared meanwhile must not make the exit 2).
        if std::mem::take(&mut self.backoff).next().is_some() {
            self.retry_writes();
        }
        match self.part {
            Part::Build => self.finish_build(reason),
            Part::Workspace(_) => self.finish_tasks(reason),
        }
    }

    /// The end of a build directory's session: the last evaluation (final when the pipeline
    /// is gone), the report, the last heartbeat and event.
    fn finish_build(&mut self, reason: EndReason) -> Outcome {
        let final_ = reason.is_final();
        if let Some((eval, snap)) = self.evaluate(None, final_) {
            // Everything is read again as it stands, and no new failure is held back for
            // settling: the last word is about the bytes on disk now, so it is what `verify`
            // says of the same bytes (`verify --final` once the pipeline is complete or gone). A
            // bad write caught by the end (a SIGTERM right after it) is judged, never waved
            // through. The one hold left fails closed: a standing STOP is not lifted by a file
            // caught mid-write (not final), since no referee is left to raise it again.
            let eval = if final_ {
                self.ledger.holds.clear();
                eval
            } else {
                self.hold_at_end(eval, &snap)
            };
            self.publish(eval, &BTreeSet::new(), &snap);
        }
        self.flush_outputs();
        let eval = self
            .ledger
            .published
            .clone()
            .unwrap_or_else(|| empty_evaluation(final_));
        let ended = reason.describe();
        let report = self.write_report(&eval, &ended);
        let violation = crate::decision::build(&eval).violation();
        let artifacts = markdown::artifacts(&eval)
            .into_iter()
            .filter_map(|f| f.sha256.map(|h| format!("{}@{h}", f.path)))
            .collect();
        self.conclude(Concluded {
            reason,
            ended,
            eval,
            report,
            final_,
            violation,
            artifacts,
        })
    }

    /// The end of a protocol of task records: one more judgment, the report, the last
    /// heartbeat and event. Exit 1 when an attempt stands rejected or escalated, or a BLOCKING
    /// check fails.
    fn finish_tasks(&mut self, reason: EndReason) -> Outcome {
        // A record still being written is not judged; the last judgment stands for it.
        let moving = self.settle.moving().any(crate::workspace::is_record);
        let judged = self.evaluate_tasks();
        if let Part::Workspace(tasks) = &mut self.part {
            tasks.keep_cache();
        }
        if let Some(j) = judged.as_ref().filter(|_| !moving) {
            // The veto stands whatever the records say , at the end too.
            self.decided(&j.ws, &j.decision);
            self.flush_outputs();
            self.write_verdicts(&j.decision.verdicts);
        }
        self.flush_outputs();
        let ended = reason.describe_tasks();
        let report = judged
            .as_ref()
            .and_then(|j| self.write_tasks_report(j, &ended));
        // A replaced `.referee` holds a STOP too.
        let violation =
            matches!(&self.part, Part::Workspace(t) if t.violation) || self.folder_lost.is_some();
        let eval = judged.map_or_else(|| empty_evaluation(false), |j| j.eval);
        self.conclude(Concluded {
            reason,
            ended,
            eval,
            report,
            final_: false,
            violation,
            artifacts: Vec::new(),
        })
    }

    /// The last heartbeat, the `end` event, the closing lines and the outcome: exit 2 when the
    /// report could not be written or a fault stands (under `--on-fault stop`), else 1 when a
    /// violation stands, else 0.
    fn conclude(&mut self, c: Concluded) -> Outcome {
        let Concluded {
            reason,
            ended,
            eval,
            report,
            final_,
            violation,
            artifacts,
        } = c;
        let faulted = self.cfg.on_fault == FaultPolicy::Stop && !self.faults.is_empty();
        let exit = if report.is_none() || faulted {
            ExitCode::Error
        } else if violation {
            ExitCode::Violation
        } else {
            ExitCode::Ok
        };
        self.beat(heartbeat::FINISHED);
        let unresolved: Vec<String> = eval.stops().map(|r| r.key().to_string()).collect();
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
            artifacts,
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
        match crate::outputs::write_atomic(&self.out, REPORT_FILE, &text) {
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
