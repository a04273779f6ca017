//! `OBSERVER-STOP.md` of a workspace: while a veto stands (whatever the records say) or a task
//! is escalated.

use super::*;

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
pub(super) fn veto_blocks(p: &Protocol, ws: &Workspace) -> Vec<String> {
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
