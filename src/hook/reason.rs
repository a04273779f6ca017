//! What the agent is told: the failing checks of its verdicts, one bounded line each, and the
//! reason a stop is blocked (what to fix, which protected paths to restore).

use super::Agent;
use crate::engine::CheckResult;
use crate::judge;
use crate::protocol::Protocol;
use crate::task_verdict::TaskVerdict;

/// The failing checks of `verdicts`, one line each (bounded).
pub(super) fn failing(verdicts: &[&TaskVerdict]) -> Vec<String> {
    let mut out = Vec::new();
    for v in verdicts {
        for r in v.results.iter().filter(|r| is_failing(r)) {
            out.push(describe(r));
        }
    }
    if out.len() > 20 {
        let more = out.len() - 20;
        out.truncate(20);
        out.push(format!("… and {more} more"));
    }
    out
}

pub(super) fn is_failing(r: &CheckResult) -> bool {
    matches!(
        r.status,
        crate::engine::Status::Fail | crate::engine::Status::Inconclusive
    ) && r.waiver.is_none()
}

pub(super) fn describe(r: &CheckResult) -> String {
    let mut s = format!(
        "{} {} ({}): {}",
        r.check,
        r.status.as_str(),
        r.title,
        cut(&r.evidence.observed, 400)
    );
    // The details, not the diff lines quoted under them (indented): the agent has the diff.
    for d in r
        .evidence
        .details
        .iter()
        .filter(|d| !d.starts_with("  "))
        .take(5)
    {
        s.push_str("; ");
        s.push_str(&cut(d, 200));
    }
    s
}

fn cut(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut t: String = s.chars().take(max).collect();
    t.push('…');
    t
}

pub(super) fn blocked_reason(
    protocol: &Protocol,
    w: &judge::WorkspaceJudgment,
    agent: Agent,
) -> String {
    let mut s = format!(
        "The referee ({}) judged this workspace against its baseline and blocks this stop.\n",
        protocol.id
    );
    for v in &w.decision.verdicts {
        s.push_str(&format!(
            "\n{} — task `{}`{}\n",
            v.verdict,
            v.task_id,
            v.attempt
                .map(|a| format!(", attempt {a}"))
                .unwrap_or_default()
        ));
        for line in failing(&[v]) {
            s.push_str(&format!("- {line}\n"));
        }
        // Only the protected paths: the rest of the attempt is the agent's to fix, not undo.
        let vetoes = crate::task_verdict::veto_globs(protocol);
        let protected = |p: &str| vetoes.iter().any(|(_, g)| g.iter().any(|g| g.is_match(p)));
        for r in v.restore.iter().filter(|r| protected(&r.path)) {
            s.push_str(&format!(
                "- restore `{}` to its baseline content{}\n",
                r.path,
                if r.sha256.is_none() {
                    " (absent at the baseline: remove it)"
                } else {
                    ""
                }
            ));
        }
    }
    // No verdict to carry it: the veto stands for the workspace alone.
    let d = &w.decision;
    if d.verdicts.is_empty() && d.stops() {
        let stop = crate::outputs::code_change::stop_md(protocol, &w.ws, d);
        s.push_str("\nThe workspace changes a protected path:\n");
        s.push_str(&cut(&stop, 4000));
    }
    let cap = protocol.guards().map_or(3, |g| g.max_rejects);
    s.push_str(&format!(
        "\nFix these, then stop again. Do not edit protected files. After {cap} rejections, or an attempt that changes nothing, the referee escalates to a human ({} hook).",
        agent.name()
    ));
    s
}
