//! The code-change report (`OBSERVER-REPORT.md`) and `verify --format json` of a workspace.

use super::*;

/// A verdict file inside the report: every heading one level down and, below the verdict's
/// own, ending with the task (`### Failing checks — `t1``), so no two headings of the report
/// are the same. Lines inside fenced code are left alone.
pub(super) fn embed(md: &str, task_id: &str) -> String {
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

/// The first line of every report while a veto stands, with or without task records:
/// each veto check, each protected path and what happened to it. `None`: no veto.
pub fn veto_headline(d: &Decision) -> Option<String> {
    if d.veto.is_empty() {
        return None;
    }
    let checks: Vec<String> = d
        .veto
        .iter()
        .map(|v| {
            let paths: Vec<String> = v
                .paths
                .iter()
                .map(|p| {
                    format!(
                        "`{}` ({})",
                        crate::workspace::name::display(&p.path),
                        p.happened.describe()
                    )
                })
                .collect();
            format!("{} vetoes {}", v.check, paths.join(", "))
        })
        .collect();
    Some(format!(
        "STOP: a protected path differs from the baseline: {}",
        checks.join("; ")
    ))
}

/// The veto checks no task verdict carries (no record pending, a record deleted or set to
/// another status), as results of a pass `workspace`: so a report made of results (JUnit,
/// SARIF, GitHub) shows the veto as a BLOCKING FAIL, with its paths as evidence.
pub fn workspace_veto_results(d: &Decision, protocol: &Protocol) -> Vec<CheckResult> {
    d.stop
        .iter()
        .filter_map(|c| match c {
            crate::decision::Cause::Veto { check, task: None } => {
                d.veto.iter().find(|v| &v.check == check)
            }
            _ => None,
        })
        .map(|v| {
            let def = protocol.check_def(&v.check);
            CheckResult {
                pass: "workspace".into(),
                check: v.check.clone(),
                title: def.map_or_else(|| v.check.clone(), |d| d.title.clone()),
                severity: crate::protocol::Severity::Blocking,
                status: Status::Fail,
                due: true,
                evidence: crate::engine::Evidence {
                    expected: "no protected path differs from the baseline".into(),
                    observed: format!(
                        "{} protected path(s) differ from the baseline, with no task record \
                         that carries the veto",
                        v.paths.len()
                    ),
                    details: v
                        .paths
                        .iter()
                        .map(|p| {
                            format!(
                                "{}: {}",
                                crate::workspace::name::display(&p.path),
                                p.happened.describe()
                            )
                        })
                        .collect(),
                    files: Vec::new(),
                },
                waiver: None,
                stands: false,
            }
        })
        .collect()
}

/// The report's first lines: the veto when one stands (with or without records), whether
/// every judged attempt was approved, and what to do about each one that was not.
pub(super) fn headline(s: &mut String, d: &Decision) {
    let verdicts = &d.verdicts[..];
    if let Some(h) = veto_headline(d) {
        let _ = writeln!(
            s,
            "**{}** — put them back; nothing goes on while it stands.\n",
            text(&h)
        );
        if verdicts.is_empty() {
            let _ = writeln!(s, "No task attempt to judge.\n");
            return;
        }
    }
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
    d: &Decision,
    ctx: &Context,
) -> String {
    let verdicts = &d.verdicts[..];
    let mut s = String::new();
    let _ = writeln!(s, "# Observer report — code change\n");
    headline(&mut s, d);
    let _ = writeln!(s, "## Run\n");
    let _ = writeln!(s, "- Workspace: {}", code(&ws.root().display().to_string()));
    let _ = writeln!(
        s,
        "- Baseline: {}",
        text(&ws.baseline.as_ref().map_or_else(
            || format!("none ({})", ws.why_no_baseline()),
            |b| b.describe.clone()
        ))
    );
    let _ = writeln!(
        s,
        "- Protocol: {} {} (sha256 {}){}",
        code(&p.id),
        text(&p.version),
        code(&p.sha256),
        crate::outputs::markdown::overridden(p)
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
    let waivers = crate::outputs::markdown::waivers_section(eval, ctx.waivers.as_ref());
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
pub(super) struct TaskLine<'a> {
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
    d: &Decision,
    ctx: &Context,
) -> String {
    let verdicts = &d.verdicts[..];
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
        "schema": crate::outputs::json::SCHEMA,
        "referee": { "version": env!("CARGO_PKG_VERSION") },
        "protocol": { "id": p.id, "version": p.version, "sha256": p.sha256, "origin": p.origin },
        "build_dir": ws.root().display().to_string(),
        "baseline": ws.baseline,
        "no_baseline": ws.no_baseline.as_ref().map(ToString::to_string),
        "evaluated_at": ctx.written.map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        "final": eval.final_,
        "complete": true,
        "verdict": serde_json::Value::Null,
        "stop": d.stops(),
        "headline": veto_headline(d),
        "veto": d.veto,
        "summary": eval.summary(),
        "passes": eval.passes,
        "results": crate::outputs::json::results(&eval.results, ws.root()),
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
