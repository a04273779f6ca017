//! What the code-change referee writes (SPEC §7, §8): `OBSERVER-VERDICT-<task_id>.md` and
//! `.json` (`referee.verdict/1`), `OBSERVER-STOP.md` while a protected-file veto stands or a task
//! is escalated, the report, and each attempt's diff and verdict kept for the loop guards. What
//! counts is written into the referee's state directory ([`crate::state`]); the verdicts, STOP
//! and report get copies in `WORKSPACE/.referee/` (the folder itself made with a `.gitignore` of
//! `*`). Every file is written atomically; `.referee` itself must be a real directory, never a
//! symlink.

use std::fmt::Write as _;
use std::path::Path;

use serde::Serialize;

use super::blocks::{table_head, table_row};
use super::escape::{cell, code, code_cell, text};
use super::Context;
use crate::attempts::{self, Kept, Store};
use crate::engine::{CheckResult, Evaluation, Status, TaskRun};
use crate::protocol::{GradeOutcome, Protocol};
use crate::task_verdict::{Restore, TaskVerdict};
use crate::workspace::{Workspace, OUTPUT_DIR};

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
    // its name later (SPEC §8).
    let dir = super::OutDir::hold(&dir)?;
    if !dir.has(".gitignore") {
        super::write_atomic(&dir, ".gitignore", "*\n")?;
    }
    Ok(dir)
}

/// `OBSERVER-VERDICT-<task_id>.<ext>`, the task id escaped one-to-one
/// ([`attempts::file_name`]): two ids never share a verdict file.
pub fn verdict_file(task_id: &str, ext: &str) -> String {
    format!("OBSERVER-VERDICT-{}.{ext}", attempts::file_name(task_id))
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

/// The STOP text: while a veto (a check with `veto = true`, CC-01 in `code-change`) stands or a
/// task is escalated; `None` otherwise. Each field is a paragraph of its own, as in the D10
/// STOP file.
pub fn stop_md(p: &Protocol, verdicts: &[TaskVerdict]) -> Option<String> {
    let mut blocks = Vec::new();
    for v in verdicts {
        for r in v
            .results
            .iter()
            // A waived FAIL raises no STOP (README, Waivers): it is shown everywhere else.
            .filter(|r| r.status == Status::Fail && p.is_veto(&r.check) && r.waiver.is_none())
        {
            let def = p.check_def(&r.check);
            let action = if v.protected_diffs.is_empty() {
                def.map_or(String::new(), |d| d.action.clone())
            } else {
                let files: Vec<String> = v.protected_diffs.iter().map(|(p, _)| code(p)).collect();
                format!("restore: {}", files.join(", "))
            };
            blocks.push(format!(
                "**Check:** {} — {}\n\n**Severity:** BLOCKING\n\n**Phase:** task {} {}\n\n**Description:** {}\n\n**Evidence:** {}\n\n**Required Action:** {action}\n",
                r.check,
                text(&r.title),
                code(&v.task_id),
                attempt_label(v.attempt),
                def.and_then(|d| d.tag.clone()).unwrap_or_else(|| "veto".into()),
                r.evidence.details.iter().filter(|d| !d.starts_with("  ")).map(|d| text(d)).collect::<Vec<_>>().join("; "),
            ));
        }
        if v.outcome == GradeOutcome::Escalate {
            blocks.push(format!(
                "**Check:** loop guard\n\n**Severity:** BLOCKING\n\n**Phase:** task {} {}\n\n**Description:** {}\n\n**Evidence:** {}\n\n**Required Action:** ESCALATED: human review required\n",
                code(&v.task_id),
                attempt_label(v.attempt),
                text(&v.verdict),
                text(v.escalation.as_deref().unwrap_or(""))
            ));
        }
    }
    (!blocks.is_empty()).then(|| format!("# OBSERVER STOP\n\n{}", blocks.join("\n---\n\n")))
}

/// The STOP blocks of the veto as the workspace itself shows it (SPEC §8: a property of the
/// workspace, not of the records): for each veto check of the protocol that protects paths
/// (CC-01 in `code-change`), the protected paths that differ from the baseline, their changes
/// and their unified diffs. Empty when none differs, or without a baseline.
fn veto_blocks(p: &Protocol, ws: &Workspace) -> Vec<String> {
    let Some(changes) = ws.changes() else {
        return Vec::new();
    };
    let mut blocks = Vec::new();
    for (id, globs) in crate::task_verdict::veto_globs(p) {
        let paths = crate::checks::change::protected_changes(ws, &globs);
        if paths.is_empty() {
            continue;
        }
        let def = p.check_def(&id);
        let tag = def
            .and_then(|d| d.tag.clone())
            .unwrap_or_else(|| "veto".into());
        let evidence: Vec<String> = paths
            .iter()
            .map(|path| {
                let how = changes.get(path).map_or("changed", |c| c.as_str());
                text(&format!("{tag}: {path} ({how})"))
            })
            .collect();
        let files: Vec<String> = paths.iter().map(|path| code(path)).collect();
        let mut block = format!(
            "**Check:** {id} — {}\n\n**Severity:** BLOCKING\n\n**Phase:** workspace (whatever the task records say)\n\n**Description:** {}\n\n**Evidence:** {}\n\n**Required Action:** restore: {} — {}\n",
            text(def.map_or("", |d| d.title.as_str())),
            text(&tag),
            evidence.join("; "),
            files.join(", "),
            text(def.map_or("", |d| d.action.as_str())),
        );
        for path in &paths {
            let diff = ws
                .diff(path)
                .unwrap_or_else(|why| format!("(cannot be read: {why})\n"));
            let _ = write!(
                block,
                "\nUnified diff of {} against the baseline:\n\n{}\n",
                code(path),
                fenced("diff", &diff)
            );
        }
        blocks.push(block);
    }
    blocks
}

/// The STOP text of the workspace's veto alone (no verdict to go with it: no record pending,
/// a record deleted or moved to another status); `None` while no protected path differs.
pub fn veto_stop_md(p: &Protocol, ws: &Workspace) -> Option<String> {
    let blocks = veto_blocks(p, ws);
    (!blocks.is_empty()).then(|| format!("# OBSERVER STOP\n\n{}", blocks.join("\n---\n\n")))
}

/// The STOP text of a judgment: [`stop_md`]'s blocks for the verdicts, and the workspace's veto
/// ([`veto_stop_md`]) when no verdict carries it already — the veto stands whatever the
/// records say.
pub fn workspace_stop_md(p: &Protocol, ws: &Workspace, verdicts: &[TaskVerdict]) -> Option<String> {
    // Carried by a verdict, or accepted there by a waiver (a human's decision for that task's
    // attempt: the same protected change is not raised again as the workspace's).
    let carried = verdicts.iter().any(|v| {
        v.results
            .iter()
            .any(|r| r.status == Status::Fail && p.is_veto(&r.check))
    });
    let veto = if carried { None } else { veto_stop_md(p, ws) };
    match (veto, stop_md(p, verdicts)) {
        (None, s) | (s, None) => s,
        (Some(v), Some(s)) => Some(format!(
            "{v}\n---\n\n{}",
            s.trim_start_matches("# OBSERVER STOP\n\n")
        )),
    }
}

/// A verdict file inside the report: every heading one level down and, below the verdict's
/// own, ending with the task (`### Failing checks — `t1``), so no two headings of the report
/// are the same. Lines inside fenced code are left alone.
fn embed(md: &str, task_id: &str) -> String {
    let mut out = String::with_capacity(md.len() + 64);
    let mut fence: Option<String> = None;
    let mut first = true;
    for line in md.lines() {
        let ticks: String = line.chars().take_while(|c| *c == '`').collect();
        match &fence {
            Some(f) if ticks.len() >= f.len() && line.trim_end() == ticks => fence = None,
            Some(_) => {}
            None if ticks.len() >= 3 => fence = Some(ticks),
            None if line.starts_with('#') => {
                if first {
                    let _ = writeln!(out, "#{line}");
                    first = false;
                } else {
                    let _ = writeln!(out, "#{line} — {}", code(task_id));
                }
                continue;
            }
            None => {}
        }
        let _ = writeln!(out, "{line}");
    }
    out
}

/// The report's first lines: whether every judged attempt was approved, and what to do about
/// each one that was not.
fn headline(s: &mut String, verdicts: &[TaskVerdict]) {
    let open: Vec<&TaskVerdict> = verdicts
        .iter()
        .filter(|v| v.outcome != GradeOutcome::Pass)
        .collect();
    let list = |vs: &[&TaskVerdict]| {
        vs.iter()
            .map(|v| format!("{} {}", code(&v.task_id), text(&v.verdict)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let blocking: Vec<&TaskVerdict> = open
        .iter()
        .copied()
        .filter(|v| !v.outcome.lets_through())
        .collect();
    if verdicts.is_empty() {
        let _ = writeln!(s, "**PASS: no task attempt to judge** — nothing to do.\n");
        return;
    }
    if blocking.is_empty() {
        let _ = writeln!(
            s,
            "**PASS: {} of {} judged attempts approved** — {}.\n",
            verdicts.len() - open.len(),
            verdicts.len(),
            if open.is_empty() {
                "nothing to do".to_string()
            } else {
                format!("with minor issues: {}", list(&open))
            }
        );
    } else {
        let _ = writeln!(
            s,
            "**FAIL: {} of {} judged attempts not approved** — {}.\n",
            blocking.len(),
            verdicts.len(),
            list(&blocking)
        );
    }
    if open.is_empty() {
        return;
    }
    let _ = writeln!(s, "What to do:\n");
    for v in open {
        let what = match v.outcome {
            GradeOutcome::Escalate => format!(
                "a human must review it: {}",
                text(
                    v.escalation
                        .as_deref()
                        .unwrap_or("the loop guard stopped it")
                )
            ),
            GradeOutcome::Cleanup => "approved; hand on its cleanup task".to_string(),
            _ if v.restore.is_empty() => format!(
                "rework it ({}); see its failing checks below",
                text(&v.reasons.join(", "))
            ),
            _ => format!(
                "restore the listed files and rework it ({}); see its failing checks below",
                text(&v.reasons.join(", "))
            ),
        };
        let _ = writeln!(
            s,
            "- {} ({}, {}): {what}.",
            code(&v.task_id),
            attempt_label(v.attempt),
            text(&v.verdict)
        );
    }
    s.push('\n');
}

/// The report: a headline and what to do, one line per task, then each judged attempt's
/// verdict file.
pub fn report_md(
    p: &Protocol,
    ws: &Workspace,
    eval: &Evaluation,
    runs: &[TaskRun],
    verdicts: &[TaskVerdict],
    ctx: &Context,
) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "# Observer report — code change\n");
    headline(&mut s, verdicts);
    let _ = writeln!(s, "## Run\n");
    let _ = writeln!(s, "- Workspace: {}", code(&ws.root().display().to_string()));
    let _ = writeln!(
        s,
        "- Baseline: {}",
        text(&ws.baseline.as_ref().map_or_else(
            || format!("none ({})", ws.no_baseline.clone().unwrap_or_default()),
            |b| b.describe.clone()
        ))
    );
    let _ = writeln!(
        s,
        "- Protocol: {} {} (sha256 {}){}",
        code(&p.id),
        text(&p.version),
        code(&p.sha256),
        super::markdown::overridden(p)
    );
    if let Some(t) = ctx.written {
        let _ = writeln!(
            s,
            "- Written: {}",
            t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        );
    }
    let sum = eval.summary();
    let _ = writeln!(
        s,
        "- Checks: {} (PASS {}, FAIL {} — {} BLOCKING, INCONCLUSIVE {})\n",
        sum.checks, sum.pass, sum.fail, sum.fail_blocking, sum.inconclusive
    );
    let _ = writeln!(s, "## Tasks\n");
    table_head(&mut s, &["task", "attempt", "verdict", "reasons"]);
    for run in runs {
        match verdicts.iter().find(|v| v.task_id == run.key) {
            Some(v) => table_row(
                &mut s,
                &[
                    &code_cell(&v.task_id),
                    &v.attempt.map_or("?".into(), |a| a.to_string()),
                    &format!("**{}**", cell(&v.verdict)),
                    &cell(&v.reasons.join(", ")),
                ],
            ),
            None => {
                let status = run
                    .record
                    .parsed
                    .as_ref()
                    .map(|t| t.status.clone())
                    .unwrap_or_default();
                let status = if status.is_empty() {
                    "none".to_string()
                } else {
                    code_cell(&status)
                };
                let judged = format!("not judged (status {status})");
                table_row(&mut s, &[&code_cell(&run.key), "", &judged, ""]);
            }
        }
    }
    // Waived FAILs and expired waivers (`--waivers`); rendered by `waivers`.
    let waivers = super::markdown::waivers_section(eval, ctx.waivers.as_ref());
    if !waivers.is_empty() {
        s.push('\n');
        s.push_str(waivers.trim_end());
        s.push('\n');
    }
    for v in verdicts {
        let _ = writeln!(s, "\n---\n");
        s.push_str(&embed(&verdict_md(p, v), &v.task_id));
    }
    s
}

#[derive(Serialize)]
struct TaskLine<'a> {
    task_id: &'a str,
    attempt: Option<u64>,
    verdict: Option<&'a str>,
    reasons: &'a [String],
    record: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    not_judged: Option<String>,
}

/// `verify --format json` for a workspace: `referee.verify/1` with `tasks`.
pub fn verify_json(
    p: &Protocol,
    ws: &Workspace,
    eval: &Evaluation,
    runs: &[TaskRun],
    verdicts: &[TaskVerdict],
    ctx: &Context,
) -> String {
    let tasks: Vec<TaskLine<'_>> = runs
        .iter()
        .map(|run| {
            let v = verdicts.iter().find(|v| v.task_id == run.key);
            TaskLine {
                task_id: &run.key,
                attempt: run.record.parsed.as_ref().ok().map(|t| t.attempt),
                verdict: v.map(|v| v.verdict.as_str()),
                reasons: v.map_or(&[][..], |v| &v.reasons[..]),
                record: &run.record.rel,
                not_judged: (!run.judged).then(|| {
                    format!(
                        "status `{}`",
                        run.record
                            .parsed
                            .as_ref()
                            .map(|t| t.status.as_str())
                            .unwrap_or("")
                    )
                }),
            }
        })
        .collect();
    let doc = serde_json::json!({
        "schema": super::json::SCHEMA,
        "referee": { "version": env!("CARGO_PKG_VERSION") },
        "protocol": { "id": p.id, "version": p.version, "sha256": p.sha256, "origin": p.origin },
        "build_dir": ws.root().display().to_string(),
        "baseline": ws.baseline,
        "no_baseline": ws.no_baseline,
        "evaluated_at": ctx.written.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        "final": eval.final_,
        "complete": true,
        "verdict": serde_json::Value::Null,
        "stop": workspace_stop_md(p, ws, verdicts).is_some(),
        "summary": eval.summary(),
        "passes": eval.passes,
        "results": super::json::results(&eval.results, ws.root()),
        "waivers": ctx.waivers,
        "tasks": tasks,
        "verdicts": verdicts.iter().map(|v| serde_json::json!({
            "task_id": v.task_id, "attempt": v.attempt, "verdict": v.verdict, "graded": v.graded,
            "reasons": v.reasons, "restore": v.restore, "cleanup_task": v.cleanup_task,
            "diff_similarity": v.diff_similarity, "escalation": v.escalation,
        })).collect::<Vec<_>>(),
    });
    serde_json::to_string_pretty(&doc).unwrap_or_else(|e| format!("{{\"error\": \"{e}\"}}"))
}

/// Writes every output of a one-shot judgment into the state directory `state` (and copies into
/// `.referee/`) and keeps each attempt in `state`.
pub fn write_all(
    p: &Protocol,
    ws: &Workspace,
    eval: &Evaluation,
    runs: &[TaskRun],
    verdicts: &[TaskVerdict],
    ctx: &Context,
    state: &Path,
) -> std::io::Result<()> {
    let dir = ensure_dir(ws.root())?;
    let store = Store::open(&attempts::dir_for(state));
    for v in verdicts {
        write_verdict(
            state,
            Some(&dir),
            &store,
            p,
            v,
            super::Durability::Contents,
            true,
        )?;
    }
    for d in [&super::OutDir::at(state), &dir] {
        match workspace_stop_md(p, ws, verdicts) {
            Some(text) => {
                super::write_atomic(d, super::STOP_FILE, &text)?;
            }
            None => super::remove_own(d, super::STOP_FILE)?,
        }
    }
    super::write_atomic(
        &dir,
        super::REPORT_FILE,
        report_md(p, ws, eval, runs, verdicts, ctx),
    )?;
    Ok(())
}

/// Writes one attempt's verdict files into `state` (the referee's state directory) and their
/// copies into `copy` (the workspace's `.referee/`, when it may be written), and keeps the
/// attempt (its diff and verdict) in `store` for the loop guards when `keep`; a replay is not
/// an attempt and is not kept. The STOP file is not touched: `verify` writes it in [`write_all`], the
/// daemon through its own STOP file.
///
/// `durability` is the verdict files' (the daemon's are [`super::Durability::Background`], like
/// its STOP: an orchestrator waits on them, and a disk flush must not delay them); the kept
/// attempt, the loop guards' memory, is always fsynced before it takes its name.
pub fn write_verdict(
    state: &Path,
    copy: Option<&super::OutDir>,
    store: &Store,
    p: &Protocol,
    v: &TaskVerdict,
    durability: super::Durability,
    keep: bool,
) -> std::io::Result<()> {
    // In the state directory first, then the copies in `.referee/` (what an orchestrator or
    // the worker waits on: before the fsyncs of the kept attempt), the JSON before the
    // markdown; then the kept attempt (the guards' memory, fsynced). A copy that cannot be
    // written (the worker took `.referee/` away) costs no memory: its error is returned after.
    let json = verdict_file(&v.task_id, "json");
    let md = verdict_file(&v.task_id, "md");
    let (json_text, md_text) = (verdict_json(v), verdict_md(p, v));
    super::write_atomic_as(state, &json, &json_text, durability)?;
    super::write_atomic_as(state, &md, &md_text, durability)?;
    let copied = match copy {
        Some(dir) => super::write_atomic_as(dir, &json, &json_text, durability)
            .and_then(|_| super::write_atomic_as(dir, &md, &md_text, durability))
            .map(|_| ()),
        None => Ok(()),
    };
    if let (Some(attempt), Some(diff), false, true) = (v.attempt, &v.diff, v.replay, keep) {
        let kept = Kept {
            attempt,
            verdict: v.verdict.clone(),
            graded: v.graded.clone(),
            escalation: v.escalation.clone(),
            task_id: v.task_id.clone(),
            record_hash: v.record_hash.clone(),
            diff_hash: Some(attempts::diff_hash(diff)),
        };
        store.keep(&kept, diff)?;
    }
    copied?;
    Ok(())
}

#[cfg(test)]
mod tests;
