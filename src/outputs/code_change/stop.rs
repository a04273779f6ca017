//! `OBSERVER-STOP.md` of a workspace, rendered from its [`Decision`]: a block for each cause of
//! the STOP, in the decision's order (the veto that stands for the workspace, then each task's
//! veto and escalation).

use super::*;
use crate::decision::{Cause, Decision, Veto};

/// The STOP text of `d`; call it only while a STOP stands ([`Decision::stops`]). Each field is
/// a paragraph of its own, as in the D10 STOP file. `ws`: the workspace judged, for the unified
/// diff of each protected path.
pub fn stop_md(p: &Protocol, ws: &Workspace, d: &Decision) -> String {
    let mut blocks = Vec::new();
    for cause in &d.stop {
        match cause {
            Cause::Veto { check, task: None } => {
                if let Some(veto) = d.veto.iter().find(|v| v.check == *check) {
                    blocks.push(veto_block(p, ws, veto));
                }
            }
            Cause::Veto {
                check,
                task: Some(i),
            } => {
                let v = &d.verdicts[*i];
                for r in v.results.iter().filter(|r| r.check == *check) {
                    blocks.push(task_veto_block(p, v, r));
                }
            }
            Cause::Escalated(i) => {
                let v = &d.verdicts[*i];
                blocks.push(format!(
                    "**Check:** loop guard\n\n**Severity:** BLOCKING\n\n**Phase:** task {} {}\n\n**Description:** {}\n\n**Evidence:** {}\n\n**Required Action:** ESCALATED: human review required\n",
                    code(&v.task_id),
                    attempt_label(v.attempt),
                    text(&v.verdict),
                    text(v.escalation.as_deref().unwrap_or(""))
                ));
            }
            // A build directory's cause: its STOP file is the D10 one.
            Cause::Blocking(_) => {}
        }
    }
    format!("# OBSERVER STOP\n\n{}", blocks.join("\n---\n\n"))
}

/// A task's veto: its veto check's FAIL, with the check's evidence and the files to restore.
fn task_veto_block(p: &Protocol, v: &TaskVerdict, r: &CheckResult) -> String {
    let def = p.check_def(&r.check);
    let action = if v.protected_diffs.is_empty() {
        def.map_or(String::new(), |d| d.action.clone())
    } else {
        let files: Vec<String> = v.protected_diffs.iter().map(|(p, _)| code(p)).collect();
        format!("restore: {}", files.join(", "))
    };
    format!(
        "**Check:** {} — {}\n\n**Severity:** BLOCKING\n\n**Phase:** task {} {}\n\n**Description:** {}\n\n**Evidence:** {}\n\n**Required Action:** {action}\n",
        r.check,
        text(&r.title),
        code(&v.task_id),
        attempt_label(v.attempt),
        def.and_then(|d| d.tag.clone()).unwrap_or_else(|| "veto".into()),
        r.evidence
            .details
            .iter()
            .filter(|d| !d.starts_with("  "))
            .map(|d| text(d))
            .collect::<Vec<_>>()
            .join("; "),
    )
}

/// The veto as the workspace itself shows it (a property of the workspace, not of the records):
/// the protected paths that differ from the baseline, what happened to each, and their unified
/// diffs.
fn veto_block(p: &Protocol, ws: &Workspace, veto: &Veto) -> String {
    let def = p.check_def(&veto.check);
    let tag = def
        .and_then(|d| d.tag.clone())
        .unwrap_or_else(|| "veto".into());
    let evidence: Vec<String> = veto
        .paths
        .iter()
        .map(|c| text(&format!("{tag}: {} ({})", c.path, c.happened.describe())))
        .collect();
    let files: Vec<String> = veto.paths.iter().map(|c| code(&c.path)).collect();
    let mut block = format!(
        "**Check:** {} — {}\n\n**Severity:** BLOCKING\n\n**Phase:** workspace (whatever the task records say)\n\n**Description:** {}\n\n**Evidence:** {}\n\n**Required Action:** restore: {} — {}\n",
        veto.check,
        text(def.map_or("", |d| d.title.as_str())),
        text(&tag),
        evidence.join("; "),
        files.join(", "),
        text(def.map_or("", |d| d.action.as_str())),
    );
    for c in &veto.paths {
        let diff = ws
            .diff(&c.path)
            .unwrap_or_else(|why| format!("(cannot be read: {why})\n"));
        let _ = write!(
            block,
            "\nUnified diff of {} against the baseline:\n\n{}\n",
            code(&c.path),
            fenced("diff", &diff)
        );
    }
    block
}
