//! The verdict of a task attempt: the protocol's grade mapping over the attempt's
//! results, the files to restore and the cleanup task, then the loop guards over the task's
//! earlier attempts (every one of them, whitespace-only differences aside) and the
//! REJECTed attempts of other tasks, as the [`crate::state::attempts`] store keeps them. Judging
//! only: reading the store is the one I/O here; what is kept of a judged attempt is said by
//! [`TaskVerdict::kept`], and the store writes it.

use serde::{Deserialize, Serialize};

use std::cell::OnceCell;
use std::collections::BTreeMap;

use crate::checks::change::protected_changes;
use crate::engine::grade::grade;
use crate::engine::{CheckResult, Status, TaskRun};
use crate::protocol::predicate::{Glob, Predicate};
use crate::protocol::{GradeOutcome, Guards, Protocol, TaskRules};
use crate::state::attempts::{
    diff_hash, is_empty_change, normalise, Everyone, Kept, KeptAttempt, Store,
};
use crate::workspace::{diff, Change, Workspace};

pub use crate::engine::grade::INCONCLUSIVE_TAG;

/// The verdict of an attempt no grade matched (a protocol whose last grade has a `when`): the
/// referee's, not the protocol's, and it rejects (fail closed).
pub const UNGRADED: &str = "UNGRADED";

/// A file to restore to its baseline content: `sha256` `None` means "remove it" (it was added).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Restore {
    pub path: String,
    pub sha256: Option<String>,
}

/// One judged task attempt.
#[derive(Debug, Clone, Serialize)]
pub struct TaskVerdict {
    pub task_id: String,
    /// `None` for a record too malformed to say.
    pub attempt: Option<u64>,
    pub verdict: String,
    /// What `verdict` means in the protocol (whether the attempt may go on).
    #[serde(skip)]
    pub outcome: GradeOutcome,
    /// The verdict of the grade mapping, before the guards.
    pub graded: String,
    pub reasons: Vec<String>,
    pub results: Vec<CheckResult>,
    pub restore: Vec<Restore>,
    pub cleanup_task: Option<String>,
    pub diff_similarity: Option<f64>,
    /// Why a guard escalated.
    pub escalation: Option<String>,
    /// The unified diff of each protected file changed (the veto's evidence).
    pub protected_diffs: Vec<(String, String)>,
    /// The record's path.
    pub record: String,
    /// What this verdict covers: each path of the task's scope with the SHA-256 of the bytes
    /// judged (`null`: judged as removed; `unreadable`: could not be hashed). A later change
    /// of one of them makes the verdict stale, and `referee accept` takes these hashes, never
    /// the files as they are by then.
    pub judged_files: BTreeMap<String, Option<String>>,
    /// The attempt's diff, to keep.
    #[serde(skip)]
    pub diff: Option<String>,
    /// The hash of the record judged ([`crate::state::attempts::record_hash`]), to keep.
    #[serde(skip)]
    pub record_hash: Option<String>,
    /// The record replays an attempt already judged (CC-00 FAILs): it is not an attempt, so
    /// nothing of it is kept; the guards judge it as coming after every kept attempt.
    #[serde(skip)]
    pub replay: bool,
}

impl TaskVerdict {
    /// A REJECTed replay (or a record of a task never opened), escalated by a guard or not, to
    /// note for the REJECT cap: its task and its record's hash; `None` for anything else.
    pub fn rejected_replay(&self) -> Option<(&str, &str)> {
        let rejected = matches!(self.outcome, GradeOutcome::Reject | GradeOutcome::Escalate);
        (self.replay && rejected)
            .then_some(())
            .and(Some((self.task_id.as_str(), self.record_hash.as_deref()?)))
    }

    /// What the loop guards keep of this attempt, and its diff: `None` for a record too
    /// malformed to have an attempt or a diff, and for a replay (not an attempt).
    pub fn kept(&self) -> Option<(Kept, &str)> {
        let (Some(attempt), Some(diff), false) = (self.attempt, &self.diff, self.replay) else {
            return None;
        };
        let kept = Kept {
            attempt,
            verdict: self.verdict.clone(),
            graded: self.graded.clone(),
            escalation: self.escalation.clone(),
            task_id: self.task_id.clone(),
            record_hash: self.record_hash.clone(),
            diff_hash: Some(diff_hash(diff)),
        };
        Some((kept, diff))
    }

    /// A loop guard hands the attempt to a human under the guards' verdict `name`.
    fn escalate(&mut self, name: &str) {
        self.verdict = name.to_string();
        self.outcome = GradeOutcome::Escalate;
    }
}

/// The globs of the `unchanged` predicates in `p`, each shadow glob with the glob it shadows.
fn unchanged_globs(p: &Predicate, out: &mut Vec<ProtectedGlob>) {
    match p {
        Predicate::Unchanged(u) => out.extend(u.all_globs()),
        Predicate::All(v) | Predicate::Any(v) => v.iter().for_each(|q| unchanged_globs(q, out)),
        Predicate::Not(q) | Predicate::FailIfMissing(q) => unchanged_globs(q, out),
        _ => {}
    }
}

/// The protected globs of the protocol (from the `unchanged` predicates of its checks).
fn protected_globs(protocol: &Protocol) -> Vec<Glob> {
    let mut out = Vec::new();
    for pass in &protocol.passes {
        for c in &pass.checks {
            unchanged_globs(&c.predicate, &mut out);
        }
    }
    out.into_iter().map(|(g, _)| g).collect()
}

/// The veto checks of the protocol (`veto = true`) that protect paths, each with its globs:
/// what stands in the workspace whatever the records say.
pub fn veto_globs(protocol: &Protocol) -> Vec<(String, Vec<Glob>)> {
    veto_checks(protocol)
        .into_iter()
        .map(|(id, globs)| (id, globs.into_iter().map(|(g, _)| g).collect()))
        .collect()
}

/// A protected glob, or a shadow glob with the protected glob it stands for.
pub type ProtectedGlob = (Glob, Option<String>);

/// [`veto_globs`], each shadow glob with the protected glob it stands for.
pub fn veto_checks(protocol: &Protocol) -> Vec<(String, Vec<ProtectedGlob>)> {
    let mut out: Vec<(String, Vec<ProtectedGlob>)> = Vec::new();
    for pass in &protocol.passes {
        for c in pass.checks.iter().filter(|c| c.def.veto) {
            let mut globs = Vec::new();
            unchanged_globs(&c.predicate, &mut globs);
            if globs.is_empty() || out.iter().any(|(id, _)| *id == c.def.id) {
                continue;
            }
            out.push((c.def.id.clone(), globs));
        }
    }
    out
}

/// The paths of `scope` with the SHA-256 of their bytes as `ws` read them (`None`: absent; a
/// link: its [`link_mark`], which holds the file it leads to as well: CC-05 judged that file).
fn judged_files(ws: &Workspace, scope: &[String]) -> BTreeMap<String, Option<String>> {
    scope
        .iter()
        .map(|p| {
            let h = match ws.current_digest(p) {
                Ok(Some(d)) if ws.read_a_link(p) => {
                    let led = ws.led_to(p, crate::workspace::Side::WorkTree);
                    Some(link_mark(
                        &d.sha256,
                        led.as_deref().map(|f| f.sha256.as_str()),
                    ))
                }
                Ok(Some(d)) => Some(d.sha256),
                Ok(None) => None,
                Err(_) => Some(UNREADABLE.to_string()),
            };
            (p.clone(), h)
        })
        .collect()
}

/// What [`TaskVerdict::judged_files`] says of a file that could not be hashed: never a hash.
pub const UNREADABLE: &str = "unreadable";

/// What [`TaskVerdict::judged_files`] says of a symbolic link whose target text has the
/// SHA-256 `target`: never a file's hash, so a file with the same bytes is another thing. `led`:
/// the SHA-256 of the regular file inside the workspace the link leads to, when it leads to
/// one: the verdict holds for that file too (a rewrite of it is a change to what was judged).
pub fn link_mark(target: &str, led: Option<&str>) -> String {
    match led {
        Some(file) => format!("{LINK}{target}>{file}"),
        None => format!("{LINK}{target}"),
    }
}

/// The SHA-256 of a [`link_mark`]'s target text; `None` when `mark` is not a link's.
pub fn link_target(mark: &str) -> Option<&str> {
    let rest = mark.strip_prefix(LINK)?;
    Some(rest.split_once('>').map_or(rest, |(target, _)| target))
}

/// What every [`link_mark`] starts with.
const LINK: &str = "link:";

/// The verdict of every judged task attempt of an evaluation.
pub fn judge(
    protocol: &Protocol,
    rules: &TaskRules,
    ws: &Workspace,
    results: &[CheckResult],
    runs: &[TaskRun],
    store: &Store,
    everyone: Option<Everyone>,
) -> Vec<TaskVerdict> {
    let globs = protected_globs(protocol);
    // Every task's kept attempts, read once for all the tasks judged here (unless read ahead).
    let everyone = everyone.map(OnceCell::from).unwrap_or_default();
    let mut out = Vec::new();
    for run in runs.iter().filter(|r| r.judged) {
        let mine: Vec<CheckResult> = results
            .iter()
            .filter(|r| r.pass == run.key)
            .cloned()
            .collect();
        let (verdict, outcome, reasons, cleanup, restore_wanted) =
            match grade(protocol, rules, &mine) {
                Some((g, reasons, _)) => {
                    let cleanup = g.cleanup.then(|| cleanup_task(&mine, protocol));
                    (g.verdict.clone(), g.outcome, reasons, cleanup, g.restore)
                }
                None => (
                    UNGRADED.to_string(),
                    GradeOutcome::Reject,
                    Vec::new(),
                    None,
                    false,
                ),
            };
        let attempt = run.record.parsed.as_ref().ok().map(|t| t.attempt);
        let restore = if restore_wanted {
            restore_list(ws, run, &globs)
        } else {
            Vec::new()
        };
        let protected_diffs = protected_changes(ws, &globs)
            .into_iter()
            .map(|p| {
                let d = ws
                    .diff(&p)
                    .unwrap_or_else(|why| format!("(cannot be read: {why})\n"));
                (p, d)
            })
            .collect();
        let mut v = TaskVerdict {
            task_id: run.key.clone(),
            attempt,
            graded: verdict.clone(),
            verdict,
            outcome,
            reasons,
            results: mine,
            restore,
            cleanup_task: cleanup,
            diff_similarity: None,
            escalation: None,
            protected_diffs,
            record: run.record.rel.clone(),
            judged_files: judged_files(ws, &run.scope),
            diff: run.diff.clone(),
            record_hash: run.record_hash.clone(),
            replay: run.replay.is_some(),
        };
        if let (Some(guards), Some(attempt)) = (&rules.guards, attempt) {
            let kept = store.attempts(&run.key);
            let replays = store.replays(&run.key, run.record_hash.as_deref());
            if v.replay {
                // No attempt: nothing of it is kept, no guard compares its diff, it inherits
                // no escalation. But its REJECT is one the referee judged, after every kept
                // attempt whatever its number says, and the cap counts it like any other: a
                // worker cannot resubmit under old numbers forever.
                reject_cap(guards, &kept, replays, &mut v);
            } else {
                let history: Vec<KeptAttempt> = kept
                    .iter()
                    .filter(|(k, _)| k.attempt < attempt)
                    .cloned()
                    .collect();
                let elsewhere = everyone
                    .get_or_init(|| store.everyone())
                    .graded_elsewhere(&run.key, &guards.reject);
                apply_guards(guards, &history, replays, &elsewhere, attempt, &mut v);
                hold_escalation(guards, &mut v, &kept);
            }
        }
        out.push(v);
    }
    out
}

/// An escalation, once decided for an attempt, stands while that attempt's record is pending:
/// putting files back under it (as an orchestrator does on its way to a human) changes the
/// workspace, not the decision, so the STOP keeps saying so until the record moves on (a new
/// attempt, or another status). `kept`: the task's kept attempts, this one included if judged.
pub fn hold_escalation(guards: &Guards, v: &mut TaskVerdict, kept: &[KeptAttempt]) {
    let Some(attempt) = v.attempt else {
        return;
    };
    let Some((k, _)) = kept.iter().find(|(k, _)| k.attempt == attempt) else {
        return;
    };
    let escalation =
        |verdict: &str| verdict == guards.escalate || verdict == guards.escalate_convergence;
    // The first escalation stands as it was decided, by the guard that decided it: judged
    // again, the attempt may meet another guard (`ESCALATE_CONVERGENCE` after `ESCALATE`).
    if escalation(&k.verdict) && (v.outcome != GradeOutcome::Escalate || v.verdict != k.verdict) {
        v.verdict = k.verdict.clone();
        v.outcome = GradeOutcome::Escalate;
        v.escalation = Some(k.escalation.clone().unwrap_or_else(|| {
            format!("attempt {attempt} was escalated when it was judged: human review required")
        }));
        v.reasons.push("escalated_when_judged".into());
    }
}

/// The loop guards, in the order of; the first that applies wins. `history`: every
/// earlier kept attempt of the task; `rejected_elsewhere`: the REJECTed attempts of other tasks.
/// Diffs are compared [`normalise`]d, so whitespace-only differences do not count.
pub fn apply_guards(
    guards: &Guards,
    history: &[KeptAttempt],
    replays: usize,
    rejected_elsewhere: &[Kept],
    attempt: u64,
    v: &mut TaskVerdict,
) {
    // The most similar earlier attempt (the later one on a tie).
    let mut nearest: Option<(f64, u64)> = None;
    if let Some(now) = v.diff.as_deref().map(normalise) {
        for (k, d) in history {
            let Some(r) = d.as_deref().and_then(|d| diff::ratio(&normalise(d), &now)) else {
                continue;
            };
            if nearest.is_none_or(|(best, _)| r >= best) {
                nearest = Some((r, k.attempt));
            }
        }
    }
    v.diff_similarity = nearest.map(|(r, _)| r);
    if guards.final_verdicts.contains(&v.graded) {
        return;
    }
    if reject_cap(guards, history, replays, v) {
        return;
    }
    let Some(now) = v.diff.as_deref() else {
        return;
    };
    let hash = diff_hash(now);
    // A change that is nothing at all once normalised is no resubmission of work, for this
    // task or another: there is no diff to repeat (an attempt that only mends its record).
    if guards.identical_diff && !is_empty_change(now) {
        if let Some((same, _)) = history
            .iter()
            .rev()
            .find(|(k, _)| k.diff_hash.as_deref() == Some(hash.as_str()))
        {
            v.escalate(&guards.escalate);
            v.escalation = Some(format!(
                "attempt {attempt}'s diff is identical to attempt {}'s (whitespace aside): no progress, human review required",
                same.attempt
            ));
            v.reasons.push("identical_diff".into());
            return;
        }
        // A new task id does not reset the guards.
        {
            if let Some(other) = rejected_elsewhere
                .iter()
                .find(|k| k.diff_hash.as_deref() == Some(hash.as_str()))
            {
                v.escalate(&guards.escalate);
                v.escalation = Some(format!(
                    "attempt {attempt}'s diff is identical to attempt {} of task `{}`, which was rejected (whitespace aside): human review required",
                    other.attempt, other.task_id
                ));
                v.reasons.push("identical_to_rejected_task".into());
                return;
            }
        }
    }
    if attempt >= guards.convergence_from_attempt {
        if let Some((r, near)) = nearest {
            if r >= guards.convergence_ratio {
                v.escalate(&guards.escalate_convergence);
                v.escalation = Some(format!(
                    "attempt {attempt}'s diff is {:.1}% similar to attempt {near}'s (threshold {:.1}%): the rework is going in circles, hand off to a tester",
                    r * 100.0,
                    guards.convergence_ratio * 100.0
                ));
                v.reasons.push("convergence".into());
            }
        }
    }
}

/// The first guard: a REJECT that is the task's `max_rejects`-th judged one (the REJECTs kept in
/// `history`, the `replays` noted, and this one) is escalated. Whether it applied.
fn reject_cap(
    guards: &Guards,
    history: &[KeptAttempt],
    replays: usize,
    v: &mut TaskVerdict,
) -> bool {
    if guards.final_verdicts.contains(&v.graded) || v.graded != guards.reject {
        return false;
    }
    let rejects = history
        .iter()
        .filter(|(k, _)| k.graded == guards.reject)
        .count()
        + replays
        + 1;
    if rejects < guards.max_rejects as usize {
        return false;
    }
    v.escalate(&guards.escalate);
    v.escalation = Some(format!(
        "rejection {rejects} of task `{}` (limit {}): human review required",
        v.task_id, guards.max_rejects
    ));
    v.reasons.push("max_rejects".into());
    true
}

/// The files a REJECT asks to restore: every change in the task's record and scope, each with
/// its baseline SHA-256 (`None`: it was added, remove it).
fn restore_list(
    ws: &Workspace,
    run: &TaskRun,
    globs: &[crate::protocol::predicate::Glob],
) -> Vec<Restore> {
    let mut paths: Vec<(String, Option<Change>)> = Vec::new();
    if let Some(changes) = ws.changes() {
        for (p, c) in changes {
            let protected = globs.iter().any(|g| g.is_match(p));
            if protected || run.scope.contains(p) {
                paths.push((p.clone(), Some(*c)));
            }
        }
    }
    paths
        .into_iter()
        .map(|(p, c)| {
            let sha256 = match (c, ws.base_digest(&p)) {
                (Some(Change::Added), _) | (_, Ok(None) | Err(_)) => None,
                (_, Ok(Some(d))) => Some(d.sha256),
            };
            Restore { path: p, sha256 }
        })
        .collect()
}

/// The cleanup task: one line per finding of the failing SIGNIFICANT checks.
fn cleanup_task(results: &[CheckResult], protocol: &Protocol) -> String {
    let mut lines = vec!["Cleanup task:".to_string()];
    for r in results.iter().filter(|r| {
        r.status == Status::Fail && r.severity == crate::protocol::Severity::Significant
    }) {
        let action = protocol
            .checks()
            .iter()
            .find(|c| c.id == r.check)
            .map(|c| c.action.clone())
            .unwrap_or_default();
        lines.push(format!("- {} {}: {action}", r.check, r.title));
        if r.evidence.details.is_empty() {
            lines.push(format!("  - {}", r.evidence.observed));
        }
        for d in &r.evidence.details {
            lines.push(format!("  - {d}"));
        }
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn guards() -> Guards {
        Guards {
            final_verdicts: vec!["APPROVE".into()],
            reject: "REJECT".into(),
            max_rejects: 3,
            identical_diff: true,
            convergence_from_attempt: 3,
            convergence_ratio: 0.97,
            escalate: "ESCALATE".into(),
            escalate_convergence: "ESCALATE_CONVERGENCE".into(),
        }
    }

    fn v(graded: &str, diff: &str) -> TaskVerdict {
        TaskVerdict {
            task_id: "t".into(),
            attempt: None,
            verdict: graded.into(),
            outcome: if graded == "REJECT" {
                GradeOutcome::Reject
            } else {
                GradeOutcome::Pass
            },
            graded: graded.into(),
            reasons: vec![],
            results: vec![],
            restore: vec![],
            cleanup_task: None,
            diff_similarity: None,
            escalation: None,
            protected_diffs: vec![],
            record: String::new(),
            judged_files: BTreeMap::new(),
            diff: Some(diff.into()),
            record_hash: None,
            replay: false,
        }
    }

    fn kept(attempt: u64, graded: &str, diff: &str) -> KeptAttempt {
        (
            Kept {
                attempt,
                verdict: graded.into(),
                graded: graded.into(),
                escalation: None,
                task_id: "t".into(),
                record_hash: None,
                diff_hash: Some(diff_hash(diff)),
            },
            Some(diff.into()),
        )
    }

    #[test]
    fn the_third_reject_escalates_before_anything_else() {
        let h = [kept(1, "REJECT", "a\n"), kept(2, "REJECT", "b\n")];
        let mut x = v("REJECT", "b\n");
        apply_guards(&guards(), &h, 0, &[], 3, &mut x);
        assert_eq!(x.verdict, "ESCALATE");
        assert!(x.escalation.unwrap().contains("rejection 3"));
        let mut y = v("REJECT", "c\n");
        apply_guards(&guards(), &h[..1], 0, &[], 2, &mut y);
        assert_eq!(y.verdict, "REJECT");
        // A REJECTed replay between them is a REJECT the referee judged: the cap counts it.
        let mut z = v("REJECT", "c\n");
        apply_guards(&guards(), &h[..1], 1, &[], 2, &mut z);
        assert_eq!(z.verdict, "ESCALATE");
        assert!(z.escalation.unwrap().contains("rejection 3"));
    }

    #[test]
    fn an_identical_diff_escalates_and_approve_is_final() {
        let h = [kept(1, "REJECT", "same\n")];
        let mut x = v("MINOR_ISSUES", "same\n");
        apply_guards(&guards(), &h, 0, &[], 2, &mut x);
        assert_eq!(x.verdict, "ESCALATE");
        assert_eq!(x.diff_similarity, Some(1.0));
        let mut y = v("APPROVE", "same\n");
        apply_guards(&guards(), &h, 0, &[], 2, &mut y);
        assert_eq!(y.verdict, "APPROVE");
    }

    /// Found by the session simulator (seed 73257): attempt 1 changed nothing and was
    /// APPROVEd; attempt 2, nothing again with a sloppy summary (MINOR_ISSUES), was ESCALATEd
    /// as "identical". An empty change repeats no work.
    #[test]
    fn an_empty_change_is_no_identical_resubmission() {
        let empty = "--- a/x\n+++ b/x\n";
        let h = [kept(1, "APPROVE", empty)];
        let mut x = v("MINOR_ISSUES", empty);
        apply_guards(&guards(), &h, 0, &[], 2, &mut x);
        assert_eq!(x.verdict, "MINOR_ISSUES");
        assert!(!x.reasons.contains(&"identical_diff".to_string()));
    }

    #[test]
    fn convergence_from_the_second_rework_on() {
        let base: String = (0..100).map(|i| format!("+line {i}\n")).collect();
        let near = base.replace("+line 50\n", "+line fifty\n");
        // 2 × 99 / 200 = 0.99 ≥ 0.97
        let h = [
            kept(1, "MINOR_ISSUES", "x\n"),
            kept(2, "MINOR_ISSUES", &base),
        ];
        let mut x = v("MINOR_ISSUES", &near);
        apply_guards(&guards(), &h, 0, &[], 3, &mut x);
        assert_eq!(x.verdict, "ESCALATE_CONVERGENCE");
        assert_eq!(x.diff_similarity, Some(0.99));
        // The first rework (attempt 2) is not judged for convergence.
        let mut y = v("MINOR_ISSUES", &near);
        apply_guards(&guards(), &h[1..], 0, &[], 2, &mut y);
        assert_eq!(y.verdict, "MINOR_ISSUES");
    }

    #[test]
    fn an_escalation_stands_while_its_attempt_is_pending() {
        let mut escalated = kept(2, "REJECT", "d\n");
        escalated.0.verdict = "ESCALATE".into();
        escalated.0.escalation = Some("attempt 2's diff is identical to attempt 1's".into());
        let history = [kept(1, "REJECT", "d\n"), escalated];
        // The files put back under attempt 2: judged again, it would only be a REJECT.
        let mut again = v("REJECT", "");
        again.attempt = Some(2);
        hold_escalation(&guards(), &mut again, &history);
        assert_eq!(again.verdict, "ESCALATE");
        assert_eq!(
            again.escalation.as_deref(),
            Some("attempt 2's diff is identical to attempt 1's")
        );
        assert!(again.reasons.contains(&"escalated_when_judged".to_string()));
        // Judged again into another guard's escalation (seed 72507): the first one stands.
        let mut converged = v("REJECT", "d\n+x\n");
        converged.attempt = Some(2);
        converged.escalate("ESCALATE_CONVERGENCE");
        converged.escalation = Some("converging".into());
        hold_escalation(&guards(), &mut converged, &history);
        assert_eq!(converged.verdict, "ESCALATE");
        assert_eq!(
            converged.escalation.as_deref(),
            Some("attempt 2's diff is identical to attempt 1's")
        );
        // A new attempt is judged on its own; an attempt not escalated stays as judged.
        let mut next = v("APPROVE", "e\n");
        next.attempt = Some(3);
        hold_escalation(&guards(), &mut next, &history);
        assert_eq!(next.verdict, "APPROVE");
        let mut first = v("APPROVE", "");
        first.attempt = Some(1);
        hold_escalation(&guards(), &mut first, &history);
        assert_eq!(first.verdict, "APPROVE");
        // Kept before the `escalation` field existed: a reason is still given.
        let old: Kept = serde_json::from_str(
            r#"{"attempt": 2, "verdict": "ESCALATE_CONVERGENCE", "graded": "REJECT"}"#,
        )
        .unwrap();
        let mut x = v("REJECT", "");
        x.attempt = Some(2);
        hold_escalation(&guards(), &mut x, &[(old, None)]);
        assert_eq!(x.verdict, "ESCALATE_CONVERGENCE");
        assert!(x
            .escalation
            .unwrap()
            .contains("escalated when it was judged"));
    }

    #[test]
    fn every_earlier_attempt_counts_whitespace_aside() {
        let a = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-x = 1\n+x = 2\n";
        let b = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-x = 1\n+x = 3\n";
        // A, B, A: the third is identical to the first.
        let h = [kept(1, "MINOR_ISSUES", a), kept(2, "MINOR_ISSUES", b)];
        let mut x = v("MINOR_ISSUES", a);
        apply_guards(&guards(), &h, 0, &[], 3, &mut x);
        assert_eq!(x.verdict, "ESCALATE");
        assert!(x.reasons.contains(&"identical_diff".to_string()));
        assert!(x.escalation.unwrap().contains("attempt 1's"));
        // Whitespace only: identical.
        let spaced = "--- a/x\n+++ b/x\n@@ -1,2 +1,3 @@\n-x = 1\n+x  =  2 \n+\n";
        let mut y = v("MINOR_ISSUES", spaced);
        apply_guards(&guards(), &h[..1], 0, &[], 2, &mut y);
        assert_eq!(y.verdict, "ESCALATE", "{:?}", y.escalation);
    }

    #[test]
    fn a_rejected_diff_under_a_new_task_id_escalates() {
        let d = "--- a/x\n+++ b/x\n@@ -1 +1 @@\n-x = 1\n+x = (\n";
        let other = kept(1, "REJECT", d).0;
        let other = Kept {
            task_id: "t-old".into(),
            ..other
        };
        let mut x = v("REJECT", d);
        apply_guards(&guards(), &[], 0, std::slice::from_ref(&other), 1, &mut x);
        assert_eq!(x.verdict, "ESCALATE");
        assert_eq!(x.reasons, ["identical_to_rejected_task"]);
        assert!(x.escalation.unwrap().contains("`t-old`"));
        // Approved is final; an empty change is no resubmission.
        let mut y = v("APPROVE", d);
        apply_guards(&guards(), &[], 0, std::slice::from_ref(&other), 1, &mut y);
        assert_eq!(y.verdict, "APPROVE");
        let empty = Kept {
            diff_hash: Some(diff_hash("")),
            ..other
        };
        let mut z = v("REJECT", "");
        apply_guards(&guards(), &[], 0, &[empty], 1, &mut z);
        assert_eq!(z.verdict, "REJECT");
    }
}
