//! When things run and what they mean: which passes have run (on their trigger, at their
//! deadline, or at completion), which checks are due, and how a predicate's outcome
//! becomes a status (PASS, FAIL, WAITING, SKIP, INCONCLUSIVE). One [`evaluate`] call judges
//! a snapshot of the build directory; the daemon keeps pass state between calls.

pub mod grade;
mod jobs;
mod workspace;

pub use workspace::{evaluate_workspace, TaskRun};

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Serialize;

use crate::artifacts::Snapshot;
use crate::checks::{self, Ctx, FileRef, Outcome, Subject, Verdict};
use crate::protocol::{CheckInstance, MissingAs, Pass, Protocol, Severity};

/// A check result's status.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, serde::Deserialize,
)]
#[serde(rename_all = "UPPERCASE")]
pub enum Status {
    Pass,
    Fail,
    Waiting,
    Skip,
    Inconclusive,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pass => "PASS",
            Status::Fail => "FAIL",
            Status::Waiting => "WAITING",
            Status::Skip => "SKIP",
            Status::Inconclusive => "INCONCLUSIVE",
        }
    }
}

/// Why a pass ran.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RunReason {
    /// Its trigger held.
    Trigger,
    /// Its deadline held before its trigger did (the phase was skipped).
    Deadline,
    /// The pipeline completed before its trigger held.
    Complete,
    /// `--final`: everything is judged as if the pipeline were complete.
    Final,
}

/// The evidence of one result, as printed and serialised.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Evidence {
    pub expected: String,
    pub observed: String,
    pub details: Vec<String>,
    pub files: Vec<FileRef>,
}

impl Evidence {
    /// The outcome's evidence, each string made one line: names are escaped where they are
    /// listed, but matched text and tracker values come from file contents, and no content may
    /// forge a line in a STOP, pass or report file.
    fn from_outcome(o: &Outcome) -> Evidence {
        Evidence {
            expected: one_line(&dedup_join(&o.expected)),
            observed: one_line(&dedup_join(&o.observed)),
            details: o.details.iter().map(|d| one_line(d)).collect(),
            files: o.files.clone(),
        }
    }

    fn note(expected: &str, observed: String) -> Evidence {
        Evidence {
            expected: expected.to_string(),
            observed,
            details: Vec::new(),
            files: Vec::new(),
        }
    }
}

use crate::artifacts::one_line;

fn dedup_join(parts: &[String]) -> String {
    let mut seen = Vec::<&str>::new();
    for p in parts {
        if !p.is_empty() && !seen.contains(&p.as_str()) {
            seen.push(p);
        }
    }
    seen.join("; ")
}

/// One check instance's result.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct CheckResult {
    pub pass: String,
    pub check: String,
    pub title: String,
    pub severity: Severity,
    pub status: Status,
    pub due: bool,
    pub evidence: Evidence,
    /// The waiver that covers this FAIL (`--waivers`): it stays a FAIL, shown everywhere, but
    /// raises no STOP and does not count for exit 1.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub waiver: Option<Applied>,
    /// A FAIL resting on what is already complete in its files ([`Outcome::stands`]): the
    /// daemon does not let its writer's open handle hold it back. Not published.
    #[serde(skip)]
    pub stands: bool,
}

/// A waiver as it shows on the result it covers (JSON `waiver`, SARIF suppression, JUnit
/// property, report section).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Applied {
    /// The pass it is limited to, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass: Option<String>,
    pub reason: String,
    pub approved_by: String,
    /// `YYYY-MM-DD`, the last day it applies.
    pub expires: String,
    /// Where it is written: `FILE:LINE`.
    pub at: String,
}

impl CheckResult {
    /// Whether this result holds the pipeline (raises STOP): a BLOCKING FAIL no waiver covers,
    /// or a due BLOCKING check the referee cannot decide (fail closed: what cannot be
    /// read blocks).
    pub fn stops(&self) -> bool {
        self.severity == Severity::Blocking
            && self.waiver.is_none()
            && (self.status == Status::Fail || (self.status == Status::Inconclusive && self.due))
    }

    /// Whether this is a FAIL a waiver covers.
    pub fn waived(&self) -> bool {
        self.status == Status::Fail && self.waiver.is_some()
    }

    /// Which check instance this is: unique within an evaluation.
    pub fn key(&self) -> CheckKey {
        CheckKey::new(&self.pass, &self.check)
    }
}

/// One check instance: a check in a pass (a check may run in several passes). Shown, and read
/// from older logs, as `pass:check`.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CheckKey {
    pub pass: String,
    pub check: String,
}

impl CheckKey {
    pub fn new(pass: &str, check: &str) -> CheckKey {
        CheckKey {
            pass: pass.to_string(),
            check: check.to_string(),
        }
    }
}

impl std::fmt::Display for CheckKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.pass, self.check)
    }
}

/// A pass's state.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct PassState {
    pub id: String,
    pub ran: bool,
    pub reason: Option<RunReason>,
    /// When it first ran (the daemon's clock; for `verify`, the evaluation time).
    pub at: Option<DateTime<Utc>>,
}

/// Options for one evaluation.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// Treat every check as due and every non-optional pass as run.
    pub final_: bool,
    /// Passes that already ran in earlier evaluations (the daemon's memory).
    pub ran: BTreeMap<String, PassState>,
    /// The time to stamp on passes that run now.
    pub now: Option<DateTime<Utc>>,
    /// What the referee saw and in which order (the daemon's, or the record `verify` found):
    /// time checks also order what it saw.
    pub seen: Option<std::sync::Arc<crate::state::observed::Observed>>,
}

/// The result of judging a build directory once.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Evaluation {
    pub complete: bool,
    pub verdict: Option<String>,
    /// Where the verdict was read: `file:line`.
    pub verdict_at: Option<String>,
    /// Verdict files that exist but have no readable verdict line (e.g. `p3c-weaver.md exists
    /// but has no readable VERDICT line`), so that an unreadable verdict is never silent.
    pub verdict_note: Option<String>,
    pub final_: bool,
    pub passes: Vec<PassState>,
    pub results: Vec<CheckResult>,
}

impl Evaluation {
    pub fn stops(&self) -> impl Iterator<Item = &CheckResult> {
        self.results.iter().filter(|r| r.stops())
    }

    pub fn count(&self, s: Status) -> usize {
        self.results.iter().filter(|r| r.status == s).count()
    }

    pub fn summary(&self) -> Summary {
        let fail_blocking = self.stops().filter(|r| r.status == Status::Fail).count();
        let waived = self.results.iter().filter(|r| r.waived()).count();
        let cannot_verify = self
            .stops()
            .filter(|r| r.status == Status::Inconclusive)
            .count();
        let fail = self.count(Status::Fail);
        let pass = self.count(Status::Pass);
        let inconclusive = self.count(Status::Inconclusive);
        let judged = pass + fail + inconclusive;
        Summary {
            checks: self.results.len(),
            pass,
            fail,
            fail_blocking,
            fail_significant: fail - fail_blocking - waived,
            waived,
            waiting: self.count(Status::Waiting),
            skip: self.count(Status::Skip),
            inconclusive,
            cannot_verify,
            compliance_rate: (judged > 0).then(|| pass as f64 / judged as f64),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct Summary {
    pub checks: usize,
    pub pass: usize,
    pub fail: usize,
    pub fail_blocking: usize,
    pub fail_significant: usize,
    /// FAILs a waiver covers (counted in `fail`, not in `fail_blocking` or `fail_significant`).
    #[serde(default)]
    pub waived: usize,
    pub waiting: usize,
    pub skip: usize,
    pub inconclusive: usize,
    /// Due BLOCKING checks the referee cannot decide (counted in `inconclusive`): they hold
    /// the pipeline like a BLOCKING FAIL (fail closed).
    #[serde(default)]
    pub cannot_verify: usize,
    /// PASS ÷ (PASS + FAIL + INCONCLUSIVE); `None` when nothing was judged.
    pub compliance_rate: Option<f64>,
}

/// Judges every check instance of the protocol against a snapshot.
pub fn evaluate(protocol: &Protocol, snap: &Snapshot, opts: &Options) -> Evaluation {
    evaluate_changed(protocol, snap, opts, None)
}

/// Like [`evaluate`], but after a change: re-judges only the check instances whose inputs
/// a changed path touches (or whose pass just ran, or when completion flipped), and keeps
/// `previous`'s result for the rest. `changed` holds paths relative to the build directory.
pub fn evaluate_changed(
    protocol: &Protocol,
    snap: &Snapshot,
    opts: &Options,
    previous: Option<(&Evaluation, &[String])>,
) -> Evaluation {
    // At debug, each evaluation's end is logged with its time (`-v`).
    let _span = tracing::debug_span!(
        "evaluate",
        protocol = %protocol.id,
        changed = previous.map(|(_, changed)| changed.len())
    )
    .entered();
    // A change in a linked folder touches the checks that look at it under the link's name too.
    let with_aliases: Vec<String>;
    let previous = match previous {
        Some((prev, changed)) => {
            let aliases = snap.aliases(changed);
            if aliases.is_empty() {
                Some((prev, changed))
            } else {
                with_aliases = changed.iter().cloned().chain(aliases).collect();
                Some((prev, with_aliases.as_slice()))
            }
        }
        None => None,
    };
    let mut ctx = Ctx::new(protocol, snap);
    ctx.seen = opts.seen.as_deref();
    let complete = ctx.complete();
    let now = opts.now.unwrap_or_else(Utc::now);
    let mut passes = Vec::new();
    let mut results: Vec<Option<CheckResult>> = Vec::new();
    // The instances to judge now: (slot in `results`, pass index, instance).
    let mut todo: Vec<(usize, usize, &CheckInstance)> = Vec::new();
    for (pi, pass) in protocol.passes.iter().enumerate() {
        let state = pass_state(&ctx, pass, opts, complete, now);
        let before = previous.and_then(|(prev, changed)| {
            let was = prev.passes.iter().find(|p| p.id == pass.id)?;
            let same_run =
                was.ran == state.ran && prev.complete == complete && prev.final_ == opts.final_;
            same_run.then_some((prev, changed))
        });
        for inst in &pass.checks {
            let kept = before.and_then(|(prev, changed)| {
                let touched = changed.iter().any(|c| inst.inputs.touched_by(c));
                if touched {
                    return None;
                }
                prev.results
                    .iter()
                    .find(|r| r.pass == pass.id && r.check == inst.def.id)
                    .cloned()
            });
            if kept.is_none() {
                todo.push((results.len(), pi, inst));
            }
            results.push(kept);
        }
        passes.push(state);
    }
    let judge = |ctx: &Ctx<'_>, &(_, pi, inst): &(usize, usize, &CheckInstance)| {
        let (pass, state) = (&protocol.passes[pi], &passes[pi]);
        judge_instance(ctx, pass, state, inst, opts, complete)
    };
    for (slot, mut result) in jobs::run(&ctx, &todo, judge) {
        // A file some check read carries its hash in every check's evidence, whichever thread
        // got to it first: added once all are judged, so the same bytes give the same evidence.
        for f in result
            .evidence
            .files
            .iter_mut()
            .filter(|f| f.sha256.is_none())
        {
            f.sha256 = snap.peek(&f.path).map(|d| d.sha256.clone());
        }
        results[todo[slot].0] = Some(result);
    }
    let results = results.into_iter().flatten().collect();
    crate::artifacts::normalize::release_spare();
    Evaluation {
        complete,
        verdict: ctx.verdict.as_ref().map(|v| v.verdict.clone()),
        verdict_at: ctx
            .verdict
            .as_ref()
            .map(|v| format!("{}:{}", v.file, v.line)),
        verdict_note: ctx.verdict_note(),
        final_: opts.final_,
        passes,
        results,
    }
}

fn pass_state<S: Subject + ?Sized>(
    ctx: &S,
    pass: &Pass,
    opts: &Options,
    complete: bool,
    now: DateTime<Utc>,
) -> PassState {
    if let Some(prev) = opts.ran.get(&pass.id).filter(|p| p.ran) {
        return prev.clone();
    }
    let reason = if checks::holds(ctx, &pass.trigger) {
        Some(RunReason::Trigger)
    } else if pass.optional {
        None
    } else if pass
        .deadline
        .as_ref()
        .is_some_and(|d| checks::holds(ctx, d))
    {
        Some(RunReason::Deadline)
    } else if complete {
        Some(RunReason::Complete)
    } else if opts.final_ {
        Some(RunReason::Final)
    } else {
        None
    };
    PassState {
        id: pass.id.clone(),
        ran: reason.is_some(),
        reason,
        at: reason.map(|_| now),
    }
}

fn judge_instance<S: Subject + ?Sized>(
    ctx: &S,
    pass: &Pass,
    state: &PassState,
    inst: &CheckInstance,
    opts: &Options,
    complete: bool,
) -> CheckResult {
    let def = &inst.def;
    let result = |status: Status, due: bool, evidence: Evidence| CheckResult {
        pass: pass.id.clone(),
        check: def.id.clone(),
        title: def.title.clone(),
        severity: def.severity,
        status,
        due,
        evidence,
        waiver: None,
        stands: false,
    };
    if !state.ran {
        return if pass.optional {
            result(
                Status::Skip,
                false,
                Evidence::note(
                    &inst.description,
                    format!("pass {} was never triggered (optional)", pass.id),
                ),
            )
        } else {
            result(
                Status::Waiting,
                false,
                Evidence::note(
                    &inst.description,
                    format!("pass {} has not run yet", pass.id),
                ),
            )
        };
    }
    let due =
        opts.final_ || complete || inst.deadline.as_ref().is_none_or(|d| checks::holds(ctx, d));
    if let Some(why) = &def.off {
        return result(
            Status::Skip,
            due,
            Evidence::note(
                &inst.description,
                format!("switched off by the protocol's variables ({why})"),
            ),
        );
    }
    // Why the check applies (the values its `when` matched), shown before its own evidence.
    let mut applies: Option<Outcome> = None;
    if let Some(when) = &inst.when {
        let w = checks::judge(ctx, when);
        if w.verdict == Verdict::Inconclusive {
            // Whether the check applies cannot be read: neither SKIP ("not applicable") nor
            // a judgment of the predicate.
            let mut ev = Evidence::from_outcome(&w);
            ev.expected = format!("applies when: {}", ev.expected);
            ev.observed = format!("cannot tell whether it applies: {}", ev.observed);
            let status = if due {
                Status::Inconclusive
            } else {
                Status::Waiting
            };
            return result(status, due, ev);
        }
        if w.wrong {
            // Whether it applies rests on something present and wrong (a directory where the
            // tracker belongs): not "not applicable", a FAIL.
            let mut ev = Evidence::from_outcome(&w);
            ev.expected = format!("applies when: {}", ev.expected);
            return result(Status::Fail, due, ev);
        }
        if w.verdict != Verdict::Pass {
            let mut ev = Evidence::from_outcome(&w);
            ev.expected = format!("applies when: {}", ev.expected);
            ev.observed = format!("not applicable: {}", ev.observed);
            return result(Status::Skip, due, ev);
        }
        applies = Some(w);
    }
    let mut outcome = checks::judge(ctx, &inst.predicate);
    if let Some(w) = applies {
        let own = std::mem::take(&mut outcome.details);
        for d in w.details.into_iter().chain(own) {
            outcome.push_detail(d);
        }
        for f in w.files {
            outcome.push_file(f);
        }
    }
    let status = match (outcome.verdict, due) {
        (Verdict::Pass, _) => Status::Pass,
        (Verdict::Fail, _) => Status::Fail,
        (Verdict::Missing, true) => match def.missing {
            MissingAs::Fail => Status::Fail,
            MissingAs::Inconclusive => Status::Inconclusive,
        },
        (Verdict::Inconclusive, true) => Status::Inconclusive,
        (_, false) => Status::Waiting,
    };
    CheckResult {
        // Only a check that applies unconditionally: an append could change whether a `when`
        // holds.
        stands: outcome.stands && status == Status::Fail && inst.when.is_none(),
        ..result(status, due, Evidence::from_outcome(&outcome))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn evidence_is_one_line_whatever_the_content() {
        assert_eq!(one_line("plain \\ text"), "plain \\ text");
        assert_eq!(
            one_line("GR-12\n## OBS-21: PASS\r\t\u{1b}[2J\u{2028}"),
            "GR-12\\n## OBS-21: PASS\\r\\t\\u{1b}[2J\\u{2028}"
        );
    }
}
