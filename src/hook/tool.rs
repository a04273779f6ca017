//! `PreToolUse` and `PostToolUse`: a write to a protected path denied before it happens, and a
//! failing check on what the call itself changed fed back after.

use std::collections::BTreeSet;
use std::os::fd::AsRawFd as _;
use std::path::{Path, PathBuf};

use anyhow::Result;
use serde_json::Value;

use super::reason::{describe, is_failing};
use super::targets::{Write, Written};
use super::{load_protocol, opened, seen, targets, Answer, Config, Opened, Payload};
use crate::protocol::predicate::Glob;
use crate::workspace::record;

/// Most entries walked to find the protected files a pattern may name; past it the pattern
/// counts as naming one (it cannot be ruled out).
const MAX_WALK: usize = 200_000;

pub(super) fn pre_tool(cfg: &Config, p: &Payload, ws: &Opened) -> Result<Answer> {
    let cwd = std::fs::canonicalize(&p.cwd).unwrap_or_else(|_| p.cwd.clone());
    let writes = tool_writes(p, &cwd);
    if writes.is_empty() {
        return Ok(Answer::allow());
    }
    let root = opened(ws)?;
    let protocol = load_protocol(cfg, root)?;
    let vetoes = crate::task_verdict::veto_globs(&protocol);
    let protected = |rel: &str| -> Option<String> {
        let rel = record::normalize(rel);
        vetoes.iter().find_map(|(check, globs)| {
            globs
                .iter()
                .find(|g| g.is_match(&rel))
                .map(|g| format!("protected by {check}: `{}`", g.as_str()))
        })
    };
    let mut existing: Option<Result<Vec<Protected>, usize>> = None;
    let mut hits = Vec::new();
    for w in &writes {
        match &w.written {
            Written::Path(abs) => {
                let Some(rel) = targets::relative(root, root, &abs.to_string_lossy()) else {
                    continue;
                };
                if let Some(why) = protected(&rel) {
                    hits.push(format!("`{rel}` ({why}) by `{}`", w.by));
                }
            }
            Written::Pattern(glob) => {
                // Walked through the descriptor (`/proc/self/fd/N` names the directory opened,
                // whatever stands at its path now), never by the path.
                let through = PathBuf::from(format!("/proc/self/fd/{}", root.fd().as_raw_fd()));
                let files =
                    existing.get_or_insert_with(|| protected_files(root, &through, &vetoes));
                match files {
                    // Too many entries to look through: the pattern may name any of them.
                    Err(n) => hits.push(format!(
                        "whatever `{}` writes (`{glob}`: more than {n} entries to rule out)",
                        w.by
                    )),
                    Ok(files) => {
                        let Some(m) = matcher(glob) else { continue };
                        for (rel, abs, why) in files.iter() {
                            if m.is_match(abs) {
                                hits.push(format!(
                                    "`{rel}` ({why}), which `{}` may write (`{glob}`)",
                                    w.by
                                ));
                            }
                        }
                    }
                }
            }
        }
    }
    if hits.is_empty() {
        return Ok(Answer::allow());
    }
    hits.dedup();
    hits.truncate(10);
    Ok(Answer::deny(&format!(
        "referee: this {} would change a protected path: {}. The project protects these paths from the agent's changes: a change to one is a veto at the stop whatever else is done. Leave them as they are (write the command so that it names only the files it changes; `git checkout -- PATH` puts a protected file back as HEAD has it).",
        if p.tool_name.is_empty() { "tool call" } else { &p.tool_name },
        hits.join("; ")
    )))
}

/// A pattern's matcher, `*` spanning `/` (an unknown part may hold any path).
fn matcher(glob: &str) -> Option<globset::GlobMatcher> {
    globset::GlobBuilder::new(glob)
        .literal_separator(false)
        .build()
        .ok()
        .map(|g| g.compile_matcher())
}

/// A protected file that exists: its path relative to the workspace, its absolute path, and
/// which rule protects it.
type Protected = (String, PathBuf, String);

/// The files under `root` that a protected glob matches, walked through `through` (the open
/// workspace's descriptor) and named under `root`. `Err(n)` when there are more than `n`
/// entries to look through.
fn protected_files(
    root: &Path,
    through: &Path,
    vetoes: &[(String, Vec<Glob>)],
) -> Result<Vec<Protected>, usize> {
    let mut out = Vec::new();
    let walk = walkdir::WalkDir::new(through)
        .follow_links(false)
        .into_iter()
        .filter_entry(|e| e.depth() != 1 || e.file_name() != ".git");
    for (n, entry) in walk.enumerate() {
        if n > MAX_WALK {
            return Err(MAX_WALK);
        }
        let Ok(entry) = entry else { continue };
        if entry.file_type().is_dir() {
            continue;
        }
        let Ok(rest) = entry.path().strip_prefix(through) else {
            continue;
        };
        let rel = rest.to_string_lossy().replace('\\', "/");
        let why = vetoes.iter().find_map(|(check, globs)| {
            globs
                .iter()
                .find(|g| g.is_match(&rel))
                .map(|g| format!("protected by {check}: `{}`", g.as_str()))
        });
        if let Some(why) = why {
            out.push((rel, root.join(rest), why));
        }
    }
    Ok(out)
}

/// Whether the tool is one that writes files (and so is worth judging after).
fn writes_files(p: &Payload) -> bool {
    matches!(
        p.tool_name.as_str(),
        "Write"
            | "Edit"
            | "MultiEdit"
            | "NotebookEdit"
            | "Bash"
            | "shell"
            | "exec_command"
            | "local_shell"
            | "apply_patch"
    )
}

/// Whether the call is a shell command made only of commands the referee knows write nothing
/// (`ls`, `grep`, `git status`, …): no judgment after it.
fn reads_only(p: &Payload) -> bool {
    let Some(command) = p.tool_input.get("command").and_then(Value::as_str) else {
        return false;
    };
    let cwd = std::fs::canonicalize(&p.cwd).unwrap_or_else(|_| p.cwd.clone());
    let dir = p
        .tool_dir
        .as_ref()
        .map(|d| targets::normalise(&cwd.join(d)))
        .unwrap_or(cwd);
    matches!(
        p.tool_name.as_str(),
        "Bash" | "shell" | "exec_command" | "local_shell"
    ) && !command.contains("*** Begin Patch")
        && targets::writes_nothing(command, &dir)
}

/// What a tool call writes, as its input names it (`cwd`: the payload's, canonical).
fn tool_writes(p: &Payload, cwd: &Path) -> Vec<Write> {
    let input = &p.tool_input;
    let text = |k: &str| input.get(k).and_then(Value::as_str);
    let path = |f: &str| Write {
        written: Written::Path(targets::normalise(&cwd.join(f))),
        by: p.tool_name.clone(),
    };
    let dir = p
        .tool_dir
        .as_ref()
        .map(|d| targets::normalise(&cwd.join(d)))
        .unwrap_or_else(|| cwd.to_path_buf());
    match p.tool_name.as_str() {
        "Write" | "Edit" | "MultiEdit" | "NotebookEdit" => text("file_path")
            .or_else(|| text("notebook_path"))
            .map(|f| vec![path(f)])
            .unwrap_or_default(),
        "Bash" | "shell" | "exec_command" | "local_shell" => match input.get("command") {
            Some(Value::String(c)) => {
                let mut t = targets::shell(c, &dir);
                if c.contains("*** Begin Patch") {
                    t.extend(targets::apply_patch(c).iter().map(|f| path(f)));
                }
                t
            }
            // An argv array (`["bash", "-lc", "…"]`): its last word is the script.
            Some(Value::Array(words)) => words
                .last()
                .and_then(Value::as_str)
                .map(|c| targets::shell(c, &dir))
                .unwrap_or_default(),
            _ => Vec::new(),
        },
        "apply_patch" => text("command")
            .or_else(|| text("patch"))
            .or_else(|| text("input"))
            .map(|e| targets::apply_patch(e).iter().map(|f| path(f)).collect())
            .unwrap_or_default(),
        _ => Vec::new(),
    }
}

pub(super) fn post_tool(cfg: &Config, p: &Payload, ws: &Opened) -> Result<Answer> {
    if !writes_files(p) || reads_only(p) {
        return Ok(Answer::allow());
    }
    let root = opened(ws)?;
    // Judged in memory: nothing kept but the view of the workspace, this is no attempt.
    let super::stop::Judged { task, w, .. } = super::stop::judge_attempt(cfg, p, root)?;
    let now = seen::snapshot(&w.ws);
    let before = seen::load(&w.state, &task);
    seen::store(&w.state, &task, &now);
    // What this call changed: the paths that differ from the view of the session's last tool
    // call; with no view yet, the paths the call names (a shell command's patterns name none).
    let made: BTreeSet<String> = match before {
        Some(before) => seen::changed(&before, &now),
        None => {
            let cwd = std::fs::canonicalize(&p.cwd).unwrap_or_else(|_| p.cwd.clone());
            tool_writes(p, &cwd)
                .into_iter()
                .filter_map(|w| match w.written {
                    Written::Path(abs) => targets::relative(root, root, &abs.to_string_lossy()),
                    Written::Pattern(_) => None,
                })
                .map(|r| record::normalize(&r))
                .collect()
        }
    };
    if made.is_empty() {
        return Ok(Answer::allow());
    }
    let mut found = Vec::new();
    for v in &w.decision.verdicts {
        for r in v.results.iter().filter(|r| is_failing(r)) {
            let names = |rel: &String| {
                r.evidence.observed.contains(rel.as_str())
                    || r.evidence.details.iter().any(|d| d.contains(rel.as_str()))
                    || r.evidence.files.iter().any(|f| &f.path == rel)
            };
            if made.iter().any(names) && !found.contains(&describe(r)) {
                found.push(describe(r));
            }
        }
    }
    if found.is_empty() {
        return Ok(Answer::allow());
    }
    Ok(Answer::feedback(&format!(
        "referee: this {} changed {} and broke what the referee checks at the stop:\n- {}\nFix it before you stop.",
        if p.tool_name.is_empty() { "tool call" } else { &p.tool_name },
        made.iter()
            .map(|r| format!("`{r}`"))
            .collect::<Vec<_>>()
            .join(", "),
        found.join("\n- ")
    )))
}
