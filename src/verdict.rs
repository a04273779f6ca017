//! The verdict of a task attempt (SPEC §7): the protocol's grade mapping over the attempt's
//! results, the files to restore and the cleanup task, then the loop guards over the task's
//! earlier attempts, whose diffs and verdicts are kept in `.referee/attempts/`. Judging only:
//! reading the kept attempts is the one I/O here; writing them is `outputs::code_change`'s.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::checks::change::protected_changes;
use crate::engine::{CheckResult, Status, TaskRun};
use crate::protocol::predicate::Predicate;
use crate::protocol::{Grade, Guards, Protocol};
use crate::workspace::{diff, Change, Content, Workspace};

pub const ESCALATE: &str = "ESCALATE";
pub const ESCALATE_CONVERGENCE: &str = "ESCALATE_CONVERGENCE";
/// The reason tag of a BLOCKING check that could not be decided (fail closed).
pub const INCONCLUSIVE_TAG: &str = "inconclusive";

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
    /// The attempt's diff, to keep.
    #[serde(skip)]
    pub diff: Option<String>,
}

/// What is kept of an attempt in `.referee/attempts/<task>/<attempt>.json` (its diff beside it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kept {
    pub attempt: u64,
    pub verdict: String,
    pub graded: String,
    /// Why the attempt was escalated (absent in attempts kept before this field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<String>,
}

/// A file or directory name made from a task id: only `[A-Za-z0-9._-]`, never starting
/// with a dot, so a task id cannot name a path outside `.referee/`.
pub fn safe_name(task_id: &str) -> String {
    let mut s: String = task_id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if s.is_empty() || s.starts_with('.') {
        s.insert(0, '_');
    }
    s
}

/// The kept attempts of a task, sorted by attempt number (unreadable ones are skipped).
/// `state`: the referee's state directory, which holds `attempts/` (SPEC §8).
pub fn kept_attempts(state: &Path, task_id: &str) -> Vec<(Kept, Option<String>)> {
    let dir = state.join("attempts").join(safe_name(task_id));
    let Ok(rd) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".json") else {
            continue;
        };
        let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if !meta.is_file() || meta.len() > 1 << 20 {
            continue;
        }
        let Ok(kept) = std::fs::read(e.path())
            .map_err(|_| ())
            .and_then(|b| serde_json::from_slice::<Kept>(&b).map_err(|_| ()))
        else {
            continue;
        };
        if stem != kept.attempt.to_string() {
            continue;
        }
        let diff_path = dir.join(format!("{stem}.diff"));
        let diff = std::fs::symlink_metadata(&diff_path)
            .ok()
            .filter(|m| m.is_file())
            .and_then(|_| std::fs::read_to_string(&diff_path).ok());
        out.push((kept, diff));
    }
    out.sort_by_key(|(k, _)| k.attempt);
    out
}

/// The first grade that matches the results, with the reasons (the tags of the matched
/// results; `inconclusive` for an undecided one).
fn grade<'p>(
    protocol: &'p Protocol,
    results: &[CheckResult],
) -> Option<(&'p Grade, Vec<String>, Vec<&'p str>)> {
    for g in &protocol.grades {
        let matched: Vec<&CheckResult> = results
            .iter()
            .filter(|r| {
                // A waived FAIL is shown but grades nothing (`--waivers`).
                !r.waived()
                    && g.when.iter().any(|w| {
                        w.severity == r.severity && w.status.iter().any(|s| s == r.status.as_str())
                    })
            })
            .collect();
        if g.when.is_empty() || !matched.is_empty() {
            let mut reasons = Vec::new();
            let mut checks = Vec::new();
            for r in matched {
                let tag = if r.status == Status::Inconclusive {
                    INCONCLUSIVE_TAG.to_string()
                } else {
                    protocol
                        .checks()
                        .iter()
                        .find(|c| c.id == r.check)
                        .and_then(|c| c.tag.clone())
                        .unwrap_or_else(|| r.check.to_lowercase())
                };
                if !reasons.contains(&tag) {
                    reasons.push(tag);
                }
                checks.push(r.check.as_str());
            }
            let checks = checks
                .into_iter()
                .filter_map(|id| protocol.checks().into_iter().find(|c| c.id == id))
                .map(|c| c.id.as_str())
                .collect();
            return Some((g, reasons, checks));
        }
    }
    None
}

/// The protected globs of the protocol (from the `unchanged` predicates of its checks).
fn protected_globs(protocol: &Protocol) -> Vec<crate::protocol::predicate::Glob> {
    fn walk(p: &Predicate, out: &mut Vec<crate::protocol::predicate::Glob>) {
        match p {
            Predicate::Unchanged(u) => out.extend(u.globs.iter().cloned()),
            Predicate::All(v) | Predicate::Any(v) => v.iter().for_each(|q| walk(q, out)),
            Predicate::Not(q) | Predicate::FailIfMissing(q) => walk(q, out),
            _ => {}
        }
    }
    let mut out = Vec::new();
    for pass in &protocol.passes {
        for c in &pass.checks {
            walk(&c.predicate, &mut out);
        }
    }
    out
}

/// The verdict of every judged task attempt of an evaluation.
pub fn judge(
    protocol: &Protocol,
    ws: &Workspace,
    results: &[CheckResult],
    runs: &[TaskRun],
    state: &Path,
) -> Vec<TaskVerdict> {
    let globs = protected_globs(protocol);
    let mut out = Vec::new();
    for run in runs.iter().filter(|r| r.judged) {
        let mine: Vec<CheckResult> = results
            .iter()
            .filter(|r| r.pass == run.key)
            .cloned()
            .collect();
        let (verdict, reasons, cleanup, restore_wanted) = match grade(protocol, &mine) {
            Some((g, reasons, _)) => {
                let cleanup = g.cleanup.then(|| cleanup_task(&mine, protocol));
                (g.verdict.clone(), reasons, cleanup, g.restore)
            }
            None => ("UNGRADED".to_string(), Vec::new(), None, false),
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
            reasons,
            results: mine,
            restore,
            cleanup_task: cleanup,
            diff_similarity: None,
            escalation: None,
            protected_diffs,
            record: run.record.rel.clone(),
            diff: run.diff.clone(),
        };
        if let (Some(guards), Some(attempt)) = (&protocol.guards, attempt) {
            let kept = kept_attempts(state, &run.key);
            let history: Vec<(Kept, Option<String>)> = kept
                .iter()
                .filter(|(k, _)| k.attempt < attempt)
                .cloned()
                .collect();
            apply_guards(guards, &history, attempt, &mut v);
            hold_escalation(&mut v, &kept);
        }
        out.push(v);
    }
    out
}

fn is_escalation(verdict: &str) -> bool {
    verdict == ESCALATE || verdict == ESCALATE_CONVERGENCE
}

/// An escalation, once decided for an attempt, stands while that attempt's record is pending:
/// putting files back under it (as an orchestrator does on its way to a human) changes the
/// workspace, not the decision, so the STOP keeps saying so until the record moves on (a new
/// attempt, or another status). `kept`: the task's kept attempts, this one included if judged.
pub fn hold_escalation(v: &mut TaskVerdict, kept: &[(Kept, Option<String>)]) {
    let Some(attempt) = v.attempt else {
        return;
    };
    let Some((k, _)) = kept.iter().find(|(k, _)| k.attempt == attempt) else {
        return;
    };
    if is_escalation(&k.verdict) && !is_escalation(&v.verdict) {
        v.verdict = k.verdict.clone();
        v.escalation = Some(k.escalation.clone().unwrap_or_else(|| {
            format!("attempt {attempt} was escalated when it was judged: human review required")
        }));
        v.reasons.push("escalated_when_judged".into());
    }
}

/// The loop guards, in the order of SPEC §7; the first that applies wins.
pub fn apply_guards(
    guards: &Guards,
    history: &[(Kept, Option<String>)],
    attempt: u64,
    v: &mut TaskVerdict,
) {
    let previous = history.last();
    if let (Some((_, Some(prev))), Some(now)) = (previous, v.diff.as_deref()) {
        v.diff_similarity = diff::ratio(prev, now);
    }
    if guards.final_verdicts.contains(&v.graded) {
        return;
    }
    let rejects = history
        .iter()
        .filter(|(k, _)| k.graded == guards.reject)
        .count()
        + usize::from(v.graded == guards.reject);
    if v.graded == guards.reject && rejects >= guards.max_rejects as usize {
        v.verdict = ESCALATE.into();
        v.escalation = Some(format!(
            "rejection {rejects} of task `{}` (limit {}): human review required",
            v.task_id, guards.max_rejects
        ));
        v.reasons.push("max_rejects".into());
        return;
    }
    let Some((prev, Some(prev_diff))) = previous else {
        return;
    };
    let Some(now) = v.diff.as_deref() else {
        return;
    };
    if guards.identical_diff && prev_diff == now {
        v.verdict = ESCALATE.into();
        v.escalation = Some(format!(
            "attempt {attempt}'s diff is identical to attempt {}'s: no progress, human review required",
            prev.attempt
        ));
        v.reasons.push("identical_diff".into());
        return;
    }
    if attempt >= guards.convergence_from_attempt {
        if let Some(r) = v.diff_similarity {
            if r >= guards.convergence_ratio {
                v.verdict = ESCALATE_CONVERGENCE.into();
                v.escalation = Some(format!(
                    "attempt {attempt}'s diff is {:.1}% similar to attempt {}'s (threshold {:.1}%): the rework is going in circles, hand off to a tester",
                    r * 100.0,
                    prev.attempt,
                    guards.convergence_ratio * 100.0
                ));
                v.reasons.push("convergence".into());
            }
        }
    }
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
            let sha256 = match (c, ws.base(&p)) {
                (Some(Change::Added), _) | (_, Content::Absent) => None,
                (_, Content::Bytes(d)) => Some(d.sha256.clone()),
                (_, Content::Unknown(_)) => None,
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
        }
    }

    fn v(graded: &str, diff: &str) -> TaskVerdict {
        TaskVerdict {
            task_id: "t".into(),
            attempt: None,
            verdict: graded.into(),
            graded: graded.into(),
            reasons: vec![],
            results: vec![],
            restore: vec![],
            cleanup_task: None,
            diff_similarity: None,
            escalation: None,
            protected_diffs: vec![],
            record: String::new(),
            diff: Some(diff.into()),
        }
    }

    fn kept(attempt: u64, graded: &str, diff: &str) -> (Kept, Option<String>) {
        (
            Kept {
                attempt,
                verdict: graded.into(),
                graded: graded.into(),
                escalation: None,
            },
            Some(diff.into()),
        )
    }

    #[test]
    fn the_third_reject_escalates_before_anything_else() {
        let h = [kept(1, "REJECT", "a\n"), kept(2, "REJECT", "b\n")];
        let mut x = v("REJECT", "b\n");
        apply_guards(&guards(), &h, 3, &mut x);
        assert_eq!(x.verdict, ESCALATE);
        assert!(x.escalation.unwrap().contains("rejection 3"));
        let mut y = v("REJECT", "c\n");
        apply_guards(&guards(), &h[..1], 2, &mut y);
        assert_eq!(y.verdict, "REJECT");
    }

    #[test]
    fn an_identical_diff_escalates_and_approve_is_final() {
        let h = [kept(1, "REJECT", "same\n")];
        let mut x = v("MINOR_ISSUES", "same\n");
        apply_guards(&guards(), &h, 2, &mut x);
        assert_eq!(x.verdict, ESCALATE);
        assert_eq!(x.diff_similarity, Some(1.0));
        let mut y = v("APPROVE", "same\n");
        apply_guards(&guards(), &h, 2, &mut y);
        assert_eq!(y.verdict, "APPROVE");
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
        apply_guards(&guards(), &h, 3, &mut x);
        assert_eq!(x.verdict, ESCALATE_CONVERGENCE);
        assert_eq!(x.diff_similarity, Some(0.99));
        // The first rework (attempt 2) is not judged for convergence.
        let mut y = v("MINOR_ISSUES", &near);
        apply_guards(&guards(), &h[1..], 2, &mut y);
        assert_eq!(y.verdict, "MINOR_ISSUES");
    }

    #[test]
    fn an_escalation_stands_while_its_attempt_is_pending() {
        let mut escalated = kept(2, "REJECT", "d\n");
        escalated.0.verdict = ESCALATE.into();
        escalated.0.escalation = Some("attempt 2's diff is identical to attempt 1's".into());
        let history = [kept(1, "REJECT", "d\n"), escalated];
        // The files put back under attempt 2: judged again, it would only be a REJECT.
        let mut again = v("REJECT", "");
        again.attempt = Some(2);
        hold_escalation(&mut again, &history);
        assert_eq!(again.verdict, ESCALATE);
        assert_eq!(
            again.escalation.as_deref(),
            Some("attempt 2's diff is identical to attempt 1's")
        );
        assert!(again.reasons.contains(&"escalated_when_judged".to_string()));
        // A new attempt is judged on its own; an attempt not escalated stays as judged.
        let mut next = v("APPROVE", "e\n");
        next.attempt = Some(3);
        hold_escalation(&mut next, &history);
        assert_eq!(next.verdict, "APPROVE");
        let mut first = v("APPROVE", "");
        first.attempt = Some(1);
        hold_escalation(&mut first, &history);
        assert_eq!(first.verdict, "APPROVE");
        // Kept before the `escalation` field existed: a reason is still given.
        let old: Kept = serde_json::from_str(
            r#"{"attempt": 2, "verdict": "ESCALATE_CONVERGENCE", "graded": "REJECT"}"#,
        )
        .unwrap();
        let mut x = v("REJECT", "");
        x.attempt = Some(2);
        hold_escalation(&mut x, &[(old, None)]);
        assert_eq!(x.verdict, ESCALATE_CONVERGENCE);
        assert!(x
            .escalation
            .unwrap()
            .contains("escalated when it was judged"));
    }

    #[test]
    fn task_ids_cannot_leave_the_output_folder() {
        assert_eq!(safe_name(".."), "_..");
        assert_eq!(safe_name("a/b"), "a_b");
        assert_eq!(safe_name("t-1.x"), "t-1.x");
        assert_eq!(safe_name(""), "_");
    }
}
