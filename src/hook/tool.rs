//! `PreToolUse` and `PostToolUse`: a write to a protected path denied before it happens, and a
//! failing check naming the edited file fed back after.

use anyhow::Result;
use serde_json::Value;

use super::reason::{describe, is_failing};
use super::{
    implicit_record, load_protocol, request, targets, task_id, workspace_root, Answer, Config,
    Payload,
};
use crate::judge;
use crate::workspace::record;

pub(super) fn pre_tool(cfg: &Config, p: &Payload) -> Result<Answer> {
    let paths = tool_targets(p);
    if paths.is_empty() {
        return Ok(Answer::allow());
    }
    let root = workspace_root(cfg, p)?;
    let protocol = load_protocol(cfg, &root)?;
    let cwd = std::fs::canonicalize(&p.cwd).unwrap_or_else(|_| p.cwd.clone());
    let vetoes = crate::task_verdict::veto_globs(&protocol);
    let mut hits = Vec::new();
    for path in &paths {
        let Some(rel) = targets::relative(&root, &cwd, path) else {
            continue;
        };
        let rel = record::normalize(&rel);
        for (check, globs) in &vetoes {
            if let Some(g) = globs.iter().find(|g| g.is_match(&rel)) {
                hits.push(format!("`{rel}` (protected by {check}: `{}`)", g.as_str()));
            }
        }
    }
    if hits.is_empty() {
        return Ok(Answer::allow());
    }
    Ok(Answer::deny(&format!(
        "referee: this {} would change a protected path: {}. The project protects these paths from the agent's changes: a change to one is a veto at the stop whatever else is done. Leave them as they are.",
        if p.tool_name.is_empty() { "tool call" } else { &p.tool_name },
        hits.join(", ")
    )))
}

/// The paths a tool call writes, as its input names them.
fn tool_targets(p: &Payload) -> Vec<String> {
    let input = &p.tool_input;
    let text = |k: &str| input.get(k).and_then(Value::as_str);
    match p.tool_name.as_str() {
        "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => text("file_path")
            .or_else(|| text("notebook_path"))
            .map(|f| vec![f.to_string()])
            .unwrap_or_default(),
        "Bash" | "shell" | "exec_command" | "local_shell" => match input.get("command") {
            Some(Value::String(c)) => {
                let mut t = targets::shell(c);
                if c.contains("*** Begin Patch") {
                    t.extend(targets::apply_patch(c));
                }
                t
            }
            // An argv array (`["bash", "-lc", "…"]`): its last word is the script.
            Some(Value::Array(words)) => words
                .last()
                .and_then(Value::as_str)
                .map(targets::shell)
                .unwrap_or_default(),
            _ => Vec::new(),
        },
        "apply_patch" => text("command")
            .or_else(|| text("patch"))
            .or_else(|| text("input"))
            .map(targets::apply_patch)
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

pub(super) fn post_tool(cfg: &Config, p: &Payload) -> Result<Answer> {
    let paths = tool_targets(p);
    if paths.is_empty() {
        return Ok(Answer::allow());
    }
    let root = workspace_root(cfg, p)?;
    let protocol = load_protocol(cfg, &root)?;
    let cwd = std::fs::canonicalize(&p.cwd).unwrap_or_else(|_| p.cwd.clone());
    let rels: Vec<String> = paths
        .iter()
        .filter_map(|path| targets::relative(&root, &cwd, path))
        .map(|r| record::normalize(&r))
        .collect();
    if rels.is_empty() {
        return Ok(Answer::allow());
    }
    let task = task_id(cfg.agent, &p.session);
    // Judged in memory: nothing kept, this is no attempt.
    let w = judge::attempt(&request(cfg, &root), &protocol, &|ws| {
        implicit_record(ws, &protocol, cfg.agent, &task)
    })?;
    let mut found = Vec::new();
    for v in &w.verdicts {
        for r in v.results.iter().filter(|r| is_failing(r)) {
            let names = |rel: &String| {
                r.evidence.observed.contains(rel.as_str())
                    || r.evidence.details.iter().any(|d| d.contains(rel.as_str()))
                    || r.evidence.files.iter().any(|f| &f.path == rel)
            };
            if (protocol.is_veto(&r.check) || rels.iter().any(names))
                && !found.contains(&describe(r))
            {
                found.push(describe(r));
            }
        }
    }
    if found.is_empty() {
        return Ok(Answer::allow());
    }
    Ok(Answer::block(&format!(
        "referee: this edit of {} broke what the referee checks at the stop:\n- {}\nFix it before you stop.",
        rels.iter()
            .map(|r| format!("`{r}`"))
            .collect::<Vec<_>>()
            .join(", "),
        found.join("\n- ")
    )))
}
