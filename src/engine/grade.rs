//! The protocol's grade mapping (`[[grade]]`) over one attempt's results: the first grade whose
//! `when` matches, with the reasons. The engine asks it whether a decoy record is REJECTed;
//! [`crate::task_verdict`] grades each attempt with it.

use super::{CheckResult, Status};
use crate::protocol::{Grade, GradeOutcome, Protocol, TaskRules};

/// The reason tag of a BLOCKING check that could not be decided (fail closed).
pub const INCONCLUSIVE_TAG: &str = "inconclusive";

/// Whether the grade mapping rejects one attempt's results (a grade whose outcome is
/// `reject`; no grade matching is not a rejection here).
pub fn rejects(protocol: &Protocol, rules: &TaskRules, results: &[CheckResult]) -> bool {
    grade(protocol, rules, results).is_some_and(|(g, _, _)| g.outcome == GradeOutcome::Reject)
}

/// The first grade that matches the results, with the reasons (the tags of the matched
/// results; `inconclusive` for an undecided one).
pub fn grade<'p>(
    protocol: &'p Protocol,
    rules: &'p TaskRules,
    results: &[CheckResult],
) -> Option<(&'p Grade, Vec<String>, Vec<&'p str>)> {
    for g in &rules.grades {
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
