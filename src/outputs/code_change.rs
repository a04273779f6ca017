//! What the code-change referee writes , rendered from what was decided
//! ([`Decision`]): `OBSERVER-VERDICT-<task_id>.md` and `.json` (`referee.verdict/1`),
//! `OBSERVER-STOP.md` while the decision says a STOP stands, the report and `verify --format
//! json`. What counts is written into the referee's state directory ([`crate::state`], which
//! also keeps each attempt for the loop guards); the verdicts, STOP and report get copies in
//! `WORKSPACE/.referee/` (the folder itself made with a `.gitignore` of `*`). Every file is
//! written atomically; `.referee` itself must be a real directory, never a symlink.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use super::blocks::{table_head, table_row};
use super::escape::{cell, code, code_cell, text};
use super::Context;
use crate::decision::Decision;
use crate::engine::{CheckResult, Evaluation, Status, TaskRun};
use crate::protocol::{GradeOutcome, Protocol};
use crate::state::attempts;
use crate::task_verdict::{Restore, TaskVerdict};
use crate::workspace::{Workspace, OUTPUT_DIR};

mod report;
mod stop;

pub use report::{report_md, verify_json, veto_headline, workspace_veto_results};
pub use stop::stop_md;

pub const VERDICT_SCHEMA: &str = "referee.verdict/1";

/// `WORKSPACE/.referee/`, created (with its `.gitignore`) when missing. Refuses a `.referee`
/// that is a symlink or not a directory: writing through it could land outside the workspace.
pub fn ensure_dir(root: &Path) -> std::io::Result<super::OutDir> {
    let dir = root.join(OUTPUT_DIR);
    match std::fs::symlink_metadata(&dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(std::io::Error::other(format!(
                "`{}` exists but is not a directory (a symlink or a file): the referee writes only into a real `.referee/` folder",
                dir.display()
            )))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir(&dir)?,
        Err(e) => return Err(e),
    }
    // Held from here: what is written goes into this folder, never through whatever is put at
    // its name later.
    let dir = super::OutDir::hold(&dir)?;
    if !dir.has(".gitignore") {
        super::write_atomic(&dir, ".gitignore", "*\n")?;
    }
    Ok(dir)
}

/// What every verdict file's name begins with.
pub const VERDICT_PREFIX: &str = "OBSERVER-VERDICT-";

/// `OBSERVER-VERDICT-<task_id>.<ext>`, the task id escaped one-to-one
/// ([`attempts::file_name`]): two ids never share a verdict file.
pub fn verdict_file(task_id: &str, ext: &str) -> String {
    format!("{VERDICT_PREFIX}{}.{ext}", attempts::file_name(task_id))
}

#[derive(Serialize)]
struct VerdictDoc<'a> {
    schema: &'static str,
    task_id: &'a str,
    attempt: Option<u64>,
    verdict: &'a str,
    reasons: &'a [String],
    results: Vec<ResultDoc<'a>>,
    restore: &'a [Restore],
    cleanup_task: Option<&'a str>,
    diff_similarity: Option<f64>,
    // Beyond the schema's required keys (adding is compatible):
    graded: &'a str,
    escalation: Option<&'a str>,
    record: &'a str,
    judged_files: &'a std::collections::BTreeMap<String, Option<String>>,
}

#[derive(Serialize)]
struct ResultDoc<'a> {
    check: &'a str,
    severity: &'a str,
    status: &'a str,
    evidence: &'a crate::engine::Evidence,
}

/// `OBSERVER-VERDICT-<task_id>.json`.
pub fn verdict_json(v: &TaskVerdict) -> String {
    let doc = VerdictDoc {
        schema: VERDICT_SCHEMA,
        task_id: &v.task_id,
        attempt: v.attempt,
        verdict: &v.verdict,
        reasons: &v.reasons,
        results: v
            .results
            .iter()
            .map(|r| ResultDoc {
                check: &r.check,
                severity: r.severity.as_str(),
                status: r.status.as_str(),
                evidence: &r.evidence,
            })
            .collect(),
        restore: &v.restore,
        cleanup_task: v.cleanup_task.as_deref(),
        diff_similarity: v.diff_similarity,
        graded: &v.graded,
        escalation: v.escalation.as_deref(),
        record: &v.record,
        judged_files: &v.judged_files,
    };
    serde_json::to_string_pretty(&doc).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

fn failing(r: &CheckResult) -> bool {
    matches!(r.status, Status::Fail | Status::Inconclusive)
}

/// A fenced code block that no line of `body` can close: the fence is longer than any run of
/// backticks in it.
fn fenced(lang: &str, body: &str) -> String {
    let mut longest = 0;
    let mut run = 0;
    for c in body.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    let fence = "`".repeat((longest + 1).max(3));
    let nl = if body.ends_with('\n') { "" } else { "\n" };
    format!("{fence}{lang}\n{body}{nl}{fence}")
}

/// The cleanup task (`Cleanup task:` and a list, built by `verdict`) with each line escaped and
/// a blank line before the list.
fn cleanup_md(c: &str) -> String {
    let mut out = String::new();
    let mut in_list = false;
    for line in c.lines() {
        if let Some(rest) = line.strip_prefix("  - ") {
            let _ = writeln!(out, "  - {}", text(rest));
        } else if let Some(rest) = line.strip_prefix("- ") {
            if !in_list {
                out.push('\n');
                in_list = true;
            }
            let _ = writeln!(out, "- {}", text(rest));
        } else if !line.trim().is_empty() {
            if in_list {
                out.push('\n');
                in_list = false;
            }
            let _ = writeln!(out, "{}", text(line));
        }
    }
    out
}

/// `OBSERVER-VERDICT-<task_id>.md`: the verdict first, then each failing check with its
/// evidence (and the unified diff for a veto), the files to restore, the cleanup task.
pub fn verdict_md(p: &Protocol, v: &TaskVerdict) -> String {
    let mut s = String::new();
    let attempt = attempt_label(v.attempt);
    let _ = writeln!(
        s,
        "# Verdict: {} — task {}, {attempt}\n",
        text(&v.verdict),
        code(&v.task_id)
    );
    if let Some(e) = &v.escalation {
        let _ = writeln!(s, "**ESCALATED: human review required** — {}\n", text(e));
    }
    if v.graded != v.verdict {
        let _ = writeln!(s, "Graded {} before the loop guards.\n", text(&v.graded));
    }
    if !v.reasons.is_empty() {
        let _ = writeln!(
            s,
            "Reasons: {}\n",
            v.reasons
                .iter()
                .map(|r| code(r))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    if let Some(r) = v.diff_similarity {
        let _ = writeln!(
            s,
            "Diff similarity with the most similar earlier attempt: {r:.4}\n"
        );
    }
    let _ = writeln!(
        s,
        "Record: {} · protocol {} {} (sha256 {}){}\n",
        code(&v.record),
        code(&p.id),
        text(&p.version),
        code(&p.sha256),
        super::markdown::overridden(p)
    );
    let fails: Vec<&CheckResult> = v.results.iter().filter(|r| failing(r)).collect();
    if !fails.is_empty() {
        let _ = writeln!(s, "## Failing checks\n");
        for r in fails {
            let _ = writeln!(
                s,
                "### {} {} — {} ({})\n",
                text(&r.check),
                text(&r.title),
                r.status.as_str(),
                r.severity.as_str()
            );
            let _ = writeln!(s, "- Expected: {}", text(&r.evidence.expected));
            let _ = writeln!(s, "- Observed: {}", text(&r.evidence.observed));
            let veto = p.is_veto(&r.check) && r.status == Status::Fail;
            for d in r
                .evidence
                .details
                .iter()
                .filter(|d| !(veto && d.starts_with("  ")))
            {
                let _ = writeln!(s, "  - {}", text(d));
            }
            if veto {
                for (path, diff) in &v.protected_diffs {
                    let _ = writeln!(
                        s,
                        "\nUnified diff of {} against the baseline:\n\n{}",
                        code(path),
                        fenced("diff", diff)
                    );
                }
            }
            if let Some(action) = p
                .checks()
                .iter()
                .find(|c| c.id == r.check)
                .map(|c| c.action.clone())
            {
                let _ = writeln!(s, "\nRequired action: {}", text(&action));
            }
            let _ = writeln!(s);
        }
    }
    if !v.restore.is_empty() {
        let _ = writeln!(s, "## Files to restore\n");
        table_head(&mut s, &["path", "baseline SHA-256"]);
        for r in &v.restore {
            let _ = writeln!(
                s,
                "| {} | {} |",
                code_cell(&r.path),
                r.sha256
                    .as_deref()
                    .map_or("(added: remove it)".to_string(), code_cell)
            );
        }
        let _ = writeln!(s);
    }
    if let Some(c) = &v.cleanup_task {
        let _ = writeln!(s, "## Cleanup task\n\n{}", cleanup_md(c));
    }
    let _ = writeln!(s, "## All checks\n");
    table_head(&mut s, &["check", "severity", "status"]);
    for r in &v.results {
        let _ = writeln!(
            s,
            "| {} {} | {} | {} |",
            cell(&r.check),
            cell(&r.title),
            r.severity.as_str(),
            r.status.as_str()
        );
    }
    s
}

/// `attempt 2`, or for a record whose attempt cannot be read (a malformed record),
/// `attempt ? (unreadable record)`: never a made-up number.
fn attempt_label(attempt: Option<u64>) -> String {
    attempt.map_or("attempt ? (unreadable record)".into(), |a| {
        format!("attempt {a}")
    })
}

/// Writes one attempt's verdict files (the JSON before the markdown) into `dir`: the state
/// directory, or the copy in the workspace's `.referee/`. The STOP file is not touched: the
/// one-shot entry points write it through `judge::write`, the daemon through its own STOP file.
///
/// `durability` is the verdict files' (the daemon's are [`super::Durability::Background`], like
/// its STOP: an orchestrator waits on them, and a disk flush must not delay them).
pub fn write_verdict(
    dir: &(impl super::AsOutDir + ?Sized),
    p: &Protocol,
    v: &TaskVerdict,
    durability: super::Durability,
) -> std::io::Result<()> {
    let json = verdict_file(&v.task_id, "json");
    let md = verdict_file(&v.task_id, "md");
    super::write_atomic_as(dir, &json, verdict_json(v), durability)?;
    super::write_atomic_as(dir, &md, verdict_md(p, v), durability)?;
    Ok(())
}

#[cfg(test)]
mod tests;
