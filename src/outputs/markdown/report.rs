//! The final report (OBSERVER-REPORT.md, and `verify`'s markdown): the headline verdict, what
//! to do, the summary and the tables of every pass.

use std::collections::BTreeMap;
use std::fmt::Write;

use chrono::Utc;

use super::{artifacts, cell, def, evidence_summary, header_line, pass_title, waivers_section};
use crate::engine::{CheckKey, CheckResult, Evaluation, Status};
use crate::outputs::blocks::{table_head, table_row, tidy, ts};
use crate::outputs::escape::{code, code_cell, text};
use crate::outputs::{history, Context, StatusChange};
use crate::protocol::{Protocol, Severity};

/// Where a protocol has no `[verdict]`: the run is finished when the referee is told so
/// (`--final`, `--exit-with`, a timeout), never by a verdict file.
fn no_verdict(eval: &Evaluation) -> &'static str {
    match eval.final_ {
        true => "run judged as finished (the protocol reads no pipeline verdict)",
        false => "run in progress (the protocol reads no pipeline verdict: `--final`, `--exit-with` or a timeout finish it)",
    }
}

/// The first line under the title: the referee's verdict on the run in a few words.
fn headline(p: &Protocol, eval: &Evaluation) -> String {
    let s = eval.summary();
    let state = match (&eval.verdict, eval.complete) {
        (Some(v), true) => format!("pipeline complete (VERDICT: {})", text(v)),
        (Some(v), false) => format!("pipeline in progress (latest VERDICT: {})", text(v)),
        (None, _) if p.verdict_spec().is_none() => no_verdict(eval).to_string(),
        (None, _) => "pipeline not complete (no verdict yet)".to_string(),
    };
    let mut also = Vec::new();
    if s.fail_significant > 0 {
        also.push(format!("{} SIGNIFICANT FAIL", s.fail_significant));
    }
    if s.inconclusive > 0 {
        also.push(format!("{} INCONCLUSIVE", s.inconclusive));
    }
    if s.waiting > 0 {
        also.push(format!("{} not yet due", s.waiting));
    }
    if s.waived > 0 {
        also.push(format!("{} FAIL waived", s.waived));
    }
    let also = if also.is_empty() {
        String::new()
    } else {
        format!("{}; ", also.join(", "))
    };
    if s.fail_blocking + s.cannot_verify > 0 {
        let cannot = if s.cannot_verify > 0 {
            format!(" ({} cannot be verified)", s.cannot_verify)
        } else {
            String::new()
        };
        format!(
            "**FAIL: {} BLOCKING unresolved{cannot}** — {also}{state}.",
            s.fail_blocking + s.cannot_verify
        )
    } else if s.fail_significant + s.inconclusive > 0 {
        format!("**PASS with findings: no BLOCKING failure** — {also}{state}.")
    } else if s.waiting > 0 {
        format!("**PASS so far: every check due has passed** — {also}{state}.")
    } else if s.waived > 0 {
        format!("**PASS with waivers: every FAIL is waived** — {also}{state}.")
    } else {
        format!("**PASS: every check passed or does not apply** — {state}.")
    }
}

/// What to do about the run, most urgent first: one line per failing or inconclusive check
/// (with the passes it fails in), from the protocol's required actions.
fn what_to_do(out: &mut String, p: &Protocol, eval: &Evaluation, ctx: &Context) {
    // Check id → (severity, status, passes), BLOCKING FAILs first, then SIGNIFICANT, then
    // INCONCLUSIVE, each in protocol order.
    let mut todo: Vec<(u8, usize, &CheckResult, Vec<&str>)> = Vec::new();
    let order = |id: &str| {
        p.checks()
            .iter()
            .position(|d| d.id == id)
            .unwrap_or(usize::MAX)
    };
    for r in eval
        .results
        .iter()
        .filter(|r| matches!(r.status, Status::Fail | Status::Inconclusive))
    {
        let rank = match (r.status, r.severity) {
            _ if r.waived() => 3,
            (Status::Fail, Severity::Blocking) => 0,
            (Status::Fail, _) => 1,
            _ => 2,
        };
        match todo
            .iter_mut()
            .find(|(k, _, t, _)| *k == rank && t.check == r.check)
        {
            Some((_, _, _, passes)) => passes.push(&r.pass),
            None => todo.push((rank, order(&r.check), r, vec![&r.pass])),
        }
    }
    todo.sort_by_key(|(rank, pos, _, _)| (*rank, *pos));
    let _ = writeln!(out, "What to do:\n");
    if todo.is_empty() {
        let _ = writeln!(
            out,
            "- Nothing: no check failed or was inconclusive.{}\n",
            if eval.summary().waiting > 0 {
                " The checks not yet due are judged as the pipeline reaches them."
            } else {
                ""
            }
        );
        return;
    }
    for (rank, _, r, passes) in todo {
        let label = match rank {
            0 => "BLOCKING",
            1 => "SIGNIFICANT",
            2 => "INCONCLUSIVE",
            _ => "WAIVED",
        };
        let plural = if passes.len() > 1 { "es" } else { "" };
        let passes = passes
            .iter()
            .map(|p| text(p))
            .collect::<Vec<_>>()
            .join(", ");
        let action = if let (3, Some(w)) = (rank, &r.waiver) {
            format!(
                "waived until {} by {} ({}): fix it before then; it raises no STOP meanwhile.",
                w.expires,
                text(&w.approved_by),
                text(&w.reason)
            )
        } else if rank == 2 {
            format!(
                "the referee could not judge it ({}); make its inputs readable and complete.",
                text(&r.evidence.observed)
            )
        } else {
            text(
                def(p, &r.check).map_or("Resolve the violation described below.", |d| {
                    d.action.as_str()
                }),
            )
        };
        let escalated = if ctx.escalations.iter().any(|(k, _)| k.check == r.check) {
            " ESCALATED: human review required."
        } else {
            ""
        };
        let _ = writeln!(
            out,
            "- {} (pass{plural} {passes}, {label}): {action}{escalated}",
            text(&r.check)
        );
    }
    out.push('\n');
}

/// The summary, with what its numbers count said once: checks, instances (a check can run in
/// more than one pass), and why instances SKIP.
fn summary_block(out: &mut String, p: &Protocol, eval: &Evaluation) {
    let s = eval.summary();
    let defs = p.checks();
    let blocking = defs
        .iter()
        .filter(|d| d.severity == Severity::Blocking)
        .count();
    let _ = writeln!(out, "### Summary\n");
    // Checks that run again in a later pass (D10: pass R repeats 22 checks on a REFINE run).
    let mut seen: Vec<&str> = Vec::new();
    let mut repeats: Vec<String> = Vec::new();
    for pass in &p.passes {
        let again = pass
            .checks
            .iter()
            .filter(|c| seen.contains(&c.def.id.as_str()))
            .count();
        if again > 0 {
            repeats.push(format!("pass {} repeats {again}", text(&pass.id)));
        }
        seen.extend(pass.checks.iter().map(|c| c.def.id.as_str()));
    }
    let _ = writeln!(
        out,
        "The {} protocol has {} checks ({blocking} BLOCKING, {} SIGNIFICANT) in {} passes. {}, so this build has {} check instances, and every number below counts instances.\n",
        code(&p.id),
        defs.len(),
        defs.len() - blocking,
        p.passes.len(),
        if repeats.is_empty() {
            "Each check runs in one pass".to_string()
        } else {
            format!("Some run in more than one pass ({})", repeats.join(", "))
        },
        s.checks
    );
    let _ = writeln!(
        out,
        "- Total checks executed: {} (PASS + FAIL + INCONCLUSIVE)",
        s.checks - s.waiting - s.skip
    );
    let _ = writeln!(out, "- PASS: {}", s.pass);
    let _ = writeln!(
        out,
        "- FAIL: {} ({} BLOCKING, {} SIGNIFICANT{})",
        s.fail,
        s.fail_blocking,
        s.fail_significant,
        if s.waived > 0 {
            format!(", {} waived", s.waived)
        } else {
            String::new()
        }
    );
    // Why instances SKIP: a whole optional pass that was not triggered, or a check whose
    // condition does not hold in this build.
    let mut why: Vec<String> = Vec::new();
    for pass in &p.passes {
        let skipped: Vec<&CheckResult> = eval
            .results
            .iter()
            .filter(|r| r.pass == pass.id && r.status == Status::Skip)
            .collect();
        if skipped.is_empty() {
            continue;
        }
        let ran = eval.passes.iter().any(|s| s.id == pass.id && s.ran);
        if pass.optional && !ran {
            why.push(format!(
                "{} in pass {}, an optional pass not triggered",
                skipped.len(),
                text(&pass.id)
            ));
        } else {
            let ids: Vec<String> = skipped.iter().map(|r| text(&r.check)).collect();
            why.push(format!(
                "{} in pass {}, whose condition does not hold",
                ids.join(", "),
                text(&pass.id)
            ));
        }
    }
    if why.is_empty() {
        let _ = writeln!(out, "- SKIP: {} (not applicable)", s.skip);
    } else {
        let _ = writeln!(
            out,
            "- SKIP: {} — not applicable: {}",
            s.skip,
            why.join("; ")
        );
    }
    let _ = writeln!(out, "- INCONCLUSIVE: {}", s.inconclusive);
    let _ = writeln!(out, "- WAITING: {} (not yet due)", s.waiting);
    let _ = writeln!(
        out,
        "- Observer compliance rate: {}",
        s.compliance_rate
            .map_or("n/a (nothing judged yet)".to_string(), |r| format!(
                "{:.0}% (PASS ÷ executed)",
                r * 100.0
            ))
    );
    out.push('\n');
}

/// `OBSERVER-REPORT.md` (and what `verify` prints): a headline verdict and what to do, then
/// the seed's report format.
pub fn report(p: &Protocol, eval: &Evaluation, ctx: &Context) -> String {
    let mut out = String::new();
    let slug = ctx.build_dir.file_name().map_or_else(
        || ctx.build_dir.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    );
    let date = ctx.written.or(ctx.started).unwrap_or_else(Utc::now);
    let _ = writeln!(out, "# Observer Verification Report\n");
    let _ = writeln!(out, "{}\n", headline(p, eval));
    what_to_do(&mut out, p, eval, ctx);
    let _ = writeln!(
        out,
        "## Build: {} — {}\n",
        text(&slug),
        date.format("%Y-%m-%d")
    );
    let _ = writeln!(
        out,
        "- Build directory: {}",
        code(&ctx.build_dir.display().to_string())
    );
    let _ = writeln!(out, "- {}", header_line(p));
    let _ = writeln!(
        out,
        "- Pipeline: {}",
        match (&eval.verdict, eval.complete) {
            (Some(v), true) => format!(
                "complete (VERDICT: {}, {})",
                text(v),
                text(eval.verdict_at.as_deref().unwrap_or("?"))
            ),
            (Some(v), false) => format!(
                "in progress (latest VERDICT: {}, {})",
                text(v),
                text(eval.verdict_at.as_deref().unwrap_or("?"))
            ),
            (None, _) if p.verdict_spec().is_none() => no_verdict(eval).to_string(),
            (None, _) => match &eval.verdict_note {
                Some(note) => format!("not complete: {}", text(note)),
                None => "in progress (no verdict yet)".to_string(),
            },
        }
    );
    if let (Some(_), Some(note)) = (&eval.verdict, &eval.verdict_note) {
        let _ = writeln!(out, "- Verdict files: {}", text(note));
    }
    if eval.final_ {
        let _ = writeln!(out, "- Judged with `--final`: every check treated as due");
    }
    if let Some(e) = &ctx.ended {
        let _ = writeln!(out, "- Referee finished: {}", text(e));
    }
    out.push('\n');
    summary_block(&mut out, p, eval);

    // BLOCKING failures: those failing now, and those that failed earlier and were resolved.
    let mut blocking: BTreeMap<CheckKey, (Option<&CheckResult>, Option<&StatusChange>)> =
        BTreeMap::new();
    for r in eval.results.iter().filter(|r| r.stops()) {
        blocking.entry(r.key()).or_default().0 = Some(r);
    }
    for c in &ctx.history {
        let is_blocking = def(p, &c.check).is_some_and(|d| d.severity == Severity::Blocking);
        if is_blocking && c.to == Status::Fail {
            // The latest failure that says what was observed: an escalation noted after it
            // (FAIL to FAIL, no evidence of its own) does not hide the cause.
            let past = &mut blocking
                .entry(CheckKey::new(&c.pass, &c.check))
                .or_default()
                .1;
            if past.is_none_or(|p| c.observed.is_some() || p.observed.is_none()) {
                *past = Some(c);
            }
        }
    }
    let _ = writeln!(out, "### BLOCKING Failures\n");
    if blocking.is_empty() {
        let _ = writeln!(out, "None.\n");
    } else {
        table_head(
            &mut out,
            &["Check ID", "Description", "Evidence", "Phase", "Resolved?"],
        );
        for (CheckKey { pass, check }, (now, past)) in &blocking {
            let current = eval
                .results
                .iter()
                .find(|r| r.pass == *pass && r.check == *check);
            // A resolved failure is shown with what was observed when it failed.
            let (desc, evidence) = match (now, current, past) {
                (Some(r), _, _) => (r.title.clone(), evidence_summary(r)),
                (None, Some(r), Some(c)) => (
                    r.title.clone(),
                    if c.observed.is_some() {
                        history::cause(c)
                    } else {
                        evidence_summary(r)
                    },
                ),
                (None, Some(r), None) => (r.title.clone(), evidence_summary(r)),
                (None, None, _) => (String::new(), String::new()),
            };
            let resolved = match (now, past) {
                (Some(_), _) => "No".to_string(),
                (None, Some(c)) => {
                    let when = ctx
                        .history
                        .iter()
                        .filter(|h| {
                            h.pass == *pass
                                && h.check == *check
                                && h.at >= c.at
                                && h.to != Status::Fail
                        })
                        .map(|h| ts(&h.at))
                        .next_back()
                        .unwrap_or_default();
                    format!("Yes ({when})")
                }
                (None, None) => String::new(),
            };
            let phase = format!("Pass {}", cell(pass));
            let (check, desc, evidence) = (cell(check), cell(&desc), cell(&evidence));
            table_row(&mut out, &[&check, &desc, &evidence, &phase, &resolved]);
        }
        out.push('\n');
    }

    let _ = writeln!(out, "### SIGNIFICANT Failures\n");
    let sig: Vec<&CheckResult> = eval
        .results
        .iter()
        .filter(|r| r.status == Status::Fail && r.severity == Severity::Significant)
        .collect();
    if sig.is_empty() {
        let _ = writeln!(out, "None.\n");
    } else {
        table_head(&mut out, &["Check ID", "Description", "Evidence", "Phase"]);
        result_rows(&mut out, &sig);
        out.push('\n');
    }

    let incon: Vec<&CheckResult> = eval
        .results
        .iter()
        .filter(|r| r.status == Status::Inconclusive)
        .collect();
    if !incon.is_empty() {
        let _ = writeln!(out, "### INCONCLUSIVE\n");
        table_head(
            &mut out,
            &["Check ID", "Description", "What is missing", "Phase"],
        );
        result_rows(&mut out, &incon);
        out.push('\n');
    }

    // Waived FAILs and expired waivers (`--waivers`); rendered by `waivers`.
    out.push_str(&waivers_section(eval, ctx.waivers.as_ref()));

    if !ctx.escalations.is_empty() {
        let _ = writeln!(out, "### Escalations\n");
        for (CheckKey { pass, check }, why) in &ctx.escalations {
            let _ = writeln!(
                out,
                "- {} (pass {}): ESCALATED: human review required — {}",
                text(check),
                text(pass),
                text(why)
            );
        }
        out.push('\n');
    }

    if !ctx.incidents.is_empty() {
        let _ = writeln!(out, "### Incidents\n");
        table_head(&mut out, &["Time", "Kind", "What happened"]);
        for i in &ctx.incidents {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                ts(&i.at),
                cell(&i.kind),
                cell(&i.text)
            );
        }
        out.push('\n');
    }

    let _ = writeln!(out, "### Pass-by-Pass Detail\n");
    for pass in &p.passes {
        let state = eval.passes.iter().find(|s| s.id == pass.id);
        let ran = match state {
            Some(s) if s.ran => format!(
                "ran{}",
                s.reason
                    .map(|r| format!(" on its {r:?}").to_lowercase())
                    .unwrap_or_default()
            ),
            _ if pass.optional => "not triggered (optional)".to_string(),
            _ => "not run yet".to_string(),
        };
        let _ = writeln!(out, "#### {} — {ran}\n", pass_title(p, &pass.id));
        let results: Vec<&CheckResult> =
            eval.results.iter().filter(|r| r.pass == pass.id).collect();
        if pass.optional && state.is_none_or(|s| !s.ran) {
            let ids: Vec<String> = results.iter().map(|r| text(&r.check)).collect();
            let _ = writeln!(
                out,
                "All {} check instances SKIP: {}\n",
                ids.len(),
                ids.join(", ")
            );
            continue;
        }
        for r in results {
            let _ = writeln!(
                out,
                "- {} [{}] **{}** — {}: {}",
                text(&r.check),
                r.severity.as_str(),
                r.status.as_str(),
                text(&r.title),
                text(&r.evidence.observed)
            );
            if matches!(r.status, Status::Fail | Status::Inconclusive) {
                for d in r.evidence.details.iter().take(8) {
                    let _ = writeln!(out, "  - {}", text(d));
                }
            }
        }
        out.push('\n');
    }

    let history: Vec<&StatusChange> = ctx.history.iter().collect();
    if !history.is_empty() {
        let _ = writeln!(out, "### History\n");
        history::lines(&mut out, &history);
        out.push('\n');
    }

    let _ = writeln!(out, "### Timestamps\n");
    table_head(&mut out, &["Event", "Timestamp"]);
    if let Some(s) = ctx.started {
        let _ = writeln!(out, "| Observer spawned | {} |", ts(&s));
    }
    for s in &eval.passes {
        if let Some(at) = s.at {
            let _ = writeln!(out, "| Pass {} complete | {} |", cell(&s.id), ts(&at));
        }
    }
    if let Some(w) = ctx.written {
        let _ = writeln!(out, "| Final report written | {} |", ts(&w));
    }
    out.push('\n');

    let _ = writeln!(out, "### Recommendations\n");
    let mut recs: Vec<(Severity, String, String)> = Vec::new();
    for r in eval
        .results
        .iter()
        .filter(|r| matches!(r.status, Status::Fail | Status::Inconclusive))
    {
        if let Some(d) = def(p, &r.check) {
            if !recs.iter().any(|(_, id, _)| *id == d.id) {
                recs.push((d.severity, d.id.clone(), d.recommendation.clone()));
            }
        }
    }
    recs.sort();
    if recs.is_empty() {
        let _ = writeln!(
            out,
            "- No process change indicated: no check failed or was inconclusive."
        );
    }
    for (_, id, rec) in recs {
        let _ = writeln!(out, "- {}: {}", text(&id), text(&rec));
    }
    out.push('\n');

    let _ = writeln!(out, "### Artifacts\n");
    let files = artifacts(eval);
    if files.is_empty() {
        let _ = writeln!(out, "None read.");
    } else {
        table_head(&mut out, &["Path", "Bytes", "SHA-256"]);
        for f in files {
            let _ = writeln!(
                out,
                "| {} | {} | {} |",
                code_cell(&f.path),
                f.size,
                f.sha256.as_deref().map_or(
                    "(not read: only its existence or time counts)".to_string(),
                    code_cell
                )
            );
        }
    }
    tidy(&out)
}

/// One row per result: check, description, what the evidence says, pass (the SIGNIFICANT and
/// INCONCLUSIVE tables).
fn result_rows(out: &mut String, results: &[&CheckResult]) {
    for r in results {
        let _ = writeln!(
            out,
            "| {} | {} | {} | Pass {} |",
            cell(&r.check),
            cell(&r.title),
            cell(&evidence_summary(r)),
            cell(&r.pass)
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Evidence, PassState};

    /// A BLOCKING failure resolved after its fix attempts escalated: the report shows what
    /// raised it, not the escalation note (which observed nothing of its own) nor the evidence
    /// of the PASS that resolved it.
    #[test]
    fn a_resolved_failure_keeps_its_cause_past_an_escalation() {
        let p = Protocol::load("d10").expect("the embedded D10 protocol");
        let now = Utc::now();
        let change =
            |secs: i64, from, to, observed: Option<&str>, note: Option<&str>| StatusChange {
                at: now + chrono::Duration::seconds(secs),
                pass: "3".into(),
                check: "OBS-21".into(),
                from,
                to,
                note: note.map(str::to_string),
                observed: observed.map(str::to_string),
                details: vec!["p3b-pa-auditor-C.md:7: `gate runner`".into()],
            };
        let ctx = Context {
            build_dir: "/b".into(),
            started: None,
            written: None,
            ended: None,
            history: vec![
                change(
                    0,
                    Some(Status::Pass),
                    Status::Fail,
                    Some("1 forbidden term"),
                    None,
                ),
                change(
                    1,
                    Some(Status::Fail),
                    Status::Fail,
                    None,
                    Some("ESCALATED: human review required"),
                ),
                change(
                    2,
                    Some(Status::Fail),
                    Status::Pass,
                    Some("no forbidden language"),
                    None,
                ),
            ],
            incidents: Vec::new(),
            escalations: Vec::new(),
            waivers: None,
        };
        let eval = Evaluation {
            complete: false,
            verdict: None,
            verdict_at: None,
            verdict_note: None,
            final_: false,
            passes: vec![PassState {
                id: "3".into(),
                ran: true,
                reason: None,
                at: None,
            }],
            results: vec![CheckResult {
                pass: "3".into(),
                check: "OBS-21".into(),
                title: "PA auditors did not receive pipeline context".into(),
                severity: Severity::Blocking,
                status: Status::Pass,
                due: true,
                evidence: Evidence {
                    expected: "none of `gate runner`".into(),
                    observed: "no forbidden language in 9 sources".into(),
                    details: Vec::new(),
                    files: Vec::new(),
                },
                waiver: None,
                stands: false,
            }],
        };
        let text = report(&p, &eval, &ctx);
        let row = text
            .lines()
            .find(|l| l.starts_with("| OBS-21 |"))
            .unwrap_or_else(|| panic!("no OBS-21 row:\n{text}"));
        assert!(row.contains("Yes ("), "{row}");
        assert!(
            row.contains("1 forbidden term") && row.contains("auditor-C.md:7"),
            "the cause is lost: {row}"
        );
    }
}
