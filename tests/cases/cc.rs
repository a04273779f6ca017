//! `cc::CASE`: the code-change protocol's data-driven cases (`fixtures/code-change/cases/*.toml`,
//! format in `fixtures/README.md`). The sample workspace `fixtures/code-change/workspace/` is
//! copied to a tempdir, made a git repository (or a baseline copy, or neither), then each step
//! edits it, writes task records and runs `referee verify WS --protocol code-change --format
//! json`, checking its expectations. Every run must leave everything outside `.referee/`
//! byte-for-byte as it was (hashes of the whole tree, `.git/` included), and a run without
//! `--write` must not touch `.referee/` either.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::builder::fixtures_dir;
use crate::util::TestCommand;

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Case {
    #[allow(dead_code, reason = "for readers")]
    description: String,
    /// `git` (default), `dir` (`--baseline-dir` of a pristine copy), `none`.
    #[serde(default = "git")]
    baseline: String,
    /// Written and committed with the baseline.
    #[serde(default)]
    setup: Vec<Write>,
    /// A variant of the protocol: edits of `protocols/code-change.toml` (each `find` must
    /// occur), written beside the workspace and passed as `--protocol FILE`.
    #[serde(default)]
    protocol_replace: Vec<Replace>,
    step: Vec<Step>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Replace {
    find: String,
    with: String,
}

fn git() -> String {
    "git".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Write {
    path: String,
    #[serde(default)]
    text: Option<String>,
    /// Generated content: `text` repeated this many times.
    #[serde(default)]
    times: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Rename {
    from: String,
    to: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Step {
    #[serde(default)]
    write: Vec<Write>,
    #[serde(default)]
    remove: Vec<String>,
    #[serde(default)]
    rename: Vec<Rename>,
    #[serde(default)]
    task: Vec<Task>,
    /// Run with `--write` (default true: the guards need the kept attempts).
    #[serde(default = "yes")]
    write_outputs: bool,
    #[serde(default)]
    args: Vec<String>,
    exit: Option<i32>,
    #[serde(default)]
    expect: Vec<Expect>,
    #[serde(default)]
    verdict: Vec<VerdictExpect>,
    /// Files that must exist under `.referee/` after the run (or, with `!` first, must not).
    #[serde(default)]
    outputs: Vec<String>,
}

fn yes() -> bool {
    true
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Task {
    id: String,
    #[serde(default = "one")]
    attempt: u64,
    #[serde(default = "pending")]
    status: String,
    #[serde(default = "summary")]
    summary: String,
    #[serde(default)]
    added: Vec<String>,
    #[serde(default)]
    modified: Vec<String>,
    #[serde(default)]
    removed: Vec<String>,
    /// `auto`: post_hashes of the added and modified files as they are now, pre_hashes of the
    /// modified and removed files from the baseline copy; `none`: no hashes.
    #[serde(default = "auto")]
    hashes: String,
    /// Overrides of single hashes (`{ "app/main.py" = "00…" }`).
    #[serde(default)]
    post_hashes: BTreeMap<String, String>,
    /// The record's text as is (a malformed record).
    raw: Option<String>,
}

fn one() -> u64 {
    1
}
fn pending() -> String {
    "pending_review".into()
}
fn summary() -> String {
    "Here's what I did: the change the task asked for.".into()
}
fn auto() -> String {
    "auto".into()
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Expect {
    task: String,
    check: String,
    status: String,
    #[serde(default)]
    evidence: Vec<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct VerdictExpect {
    task: String,
    verdict: String,
    #[serde(default)]
    reasons: Vec<String>,
    /// Paths that must be in the restore list.
    #[serde(default)]
    restore: Vec<String>,
    cleanup: Option<bool>,
    similarity: Option<f64>,
}

/// Every `fixtures/code-change/cases/*.toml`, sorted.
pub fn files() -> Vec<PathBuf> {
    let dir = fixtures_dir().join("code-change/cases");
    let mut v: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v
}

fn copy_tree(from: &Path, to: &Path) -> Result<(), String> {
    for e in walkdir::WalkDir::new(from).min_depth(1) {
        let e = e.map_err(|e| e.to_string())?;
        let rel = e.path().strip_prefix(from).map_err(|e| e.to_string())?;
        let dest = to.join(rel);
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dest).map_err(|e| e.to_string())?;
        } else {
            std::fs::copy(e.path(), &dest).map_err(|e| e.to_string())?;
        }
    }
    Ok(())
}

fn sh(dir: &Path, args: &[&str]) -> Result<(), String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.email=case@referee",
            "-c",
            "user.name=case",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .map_err(|e| format!("git: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        ));
    }
    Ok(())
}

fn write(root: &Path, w: &Write) -> Result<(), String> {
    let path = root.join(&w.path);
    if let Some(p) = path.parent() {
        std::fs::create_dir_all(p).map_err(|e| e.to_string())?;
    }
    let text = w
        .text
        .clone()
        .unwrap_or_default()
        .repeat(w.times.unwrap_or(1));
    std::fs::write(&path, text).map_err(|e| format!("{}: {e}", w.path))
}

/// The library's hex of a digest (one copy of hex encoding, not one per crate).
fn sha(bytes: &[u8]) -> String {
    referee::protocol::hex(&Sha256::digest(bytes))
}

/// Path → SHA-256 of every file under `root` (`.git/` included), optionally skipping `.referee/`.
fn tree(root: &Path, skip_own: bool) -> BTreeMap<String, String> {
    walkdir::WalkDir::new(root)
        .min_depth(1)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| !e.file_type().is_dir())
        .filter_map(|e| {
            let rel = e
                .path()
                .strip_prefix(root)
                .ok()?
                .to_string_lossy()
                .into_owned();
            if skip_own && rel.starts_with(".referee") {
                return None;
            }
            let h = std::fs::read(e.path()).map(|b| sha(&b)).unwrap_or_default();
            Some((rel, h))
        })
        .collect()
}

fn record(t: &Task, ws: &Path, base: &Path) -> String {
    if let Some(raw) = &t.raw {
        return raw.clone();
    }
    let mut pre = serde_json::Map::new();
    let mut post = serde_json::Map::new();
    if t.hashes == "auto" {
        for p in t.added.iter().chain(&t.modified) {
            if let Ok(b) = std::fs::read(ws.join(p)) {
                post.insert(p.clone(), Value::String(sha(&b)));
            }
        }
        for p in t.modified.iter().chain(&t.removed) {
            if let Ok(b) = std::fs::read(base.join(p)) {
                pre.insert(p.clone(), Value::String(sha(&b)));
            }
        }
    }
    for (p, h) in &t.post_hashes {
        post.insert(p.clone(), Value::String(h.clone()));
    }
    serde_json::to_string_pretty(&serde_json::json!({
        "task_id": t.id, "status": t.status, "description": "a case task",
        "attempt": t.attempt, "summary": t.summary,
        "changes": {"added": t.added, "modified": t.modified, "removed": t.removed},
        "pre_hashes": pre, "post_hashes": post,
    }))
    .unwrap_or_default()
}

pub fn check(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let case: Case = toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let ws = tmp.path().join("ws");
    let base = tmp.path().join("baseline");
    std::fs::create_dir(&ws).map_err(|e| e.to_string())?;
    copy_tree(&fixtures_dir().join("code-change/workspace"), &ws)?;
    for w in &case.setup {
        write(&ws, w)?;
    }
    std::fs::create_dir(&base).map_err(|e| e.to_string())?;
    copy_tree(&ws, &base)?;
    let mut protocol = "code-change".to_string();
    if !case.protocol_replace.is_empty() {
        let file = fixtures_dir().join("../protocols/code-change.toml");
        let mut text = std::fs::read_to_string(&file).map_err(|e| e.to_string())?;
        for r in &case.protocol_replace {
            if !text.contains(&r.find) {
                return Err(format!(
                    "protocol_replace: `{}` is not in {}",
                    r.find,
                    file.display()
                ));
            }
            text = text.replace(&r.find, &r.with);
        }
        let variant = tmp.path().join("code-change-variant.toml");
        std::fs::write(&variant, text).map_err(|e| e.to_string())?;
        protocol = variant.display().to_string();
    }
    let mut base_args: Vec<String> = Vec::new();
    match case.baseline.as_str() {
        "git" => {
            sh(&ws, &["init", "-q"])?;
            sh(&ws, &["add", "-A"])?;
            sh(&ws, &["commit", "-q", "-m", "baseline"])?;
        }
        "dir" => base_args = vec!["--baseline-dir".into(), base.display().to_string()],
        "none" => {}
        other => return Err(format!("unknown baseline `{other}`")),
    }
    for (i, step) in case.step.iter().enumerate() {
        let at = format!("step {}", i + 1);
        for w in &step.write {
            write(&ws, w)?;
        }
        for r in &step.remove {
            std::fs::remove_file(ws.join(r)).map_err(|e| format!("{at}: remove {r}: {e}"))?;
        }
        for r in &step.rename {
            std::fs::rename(ws.join(&r.from), ws.join(&r.to)).map_err(|e| format!("{at}: {e}"))?;
        }
        std::fs::create_dir_all(ws.join(".tasks")).map_err(|e| e.to_string())?;
        for t in &step.task {
            std::fs::write(
                ws.join(format!(".tasks/{}.json", t.id)),
                record(t, &ws, &base),
            )
            .map_err(|e| e.to_string())?;
        }
        let before_all = tree(&ws, false);
        let before = tree(&ws, true);
        let mut cmd = TestCommand::new();
        // The referee's memory (kept attempts, the authoritative STOP and verdicts) is in its
        // state directory, out of the workspace: one per case, never the real $HOME.
        cmd.arg("verify")
            .arg(&ws)
            .arg("--state-dir")
            .arg(tmp.path().join("state"))
            .args(["--protocol", &protocol, "--format", "json"])
            .args(&base_args)
            .args(&step.args)
            .timeout(std::time::Duration::from_secs(30));
        if step.write_outputs {
            cmd.arg("--write");
        }
        let out = cmd.output();
        let fail = |m: String| format!("{at}: {m}\n{out}");
        if tree(&ws, true) != before {
            return Err(fail(
                "the referee changed something outside .referee/".into(),
            ));
        }
        if !step.write_outputs && tree(&ws, false) != before_all {
            return Err(fail("verify without --write wrote something".into()));
        }
        if let Some(code) = step.exit {
            if out.status.code() != Some(code) {
                return Err(fail(format!(
                    "exit {:?}, expected {code}",
                    out.status.code()
                )));
            }
        }
        let json: Value =
            serde_json::from_str(&out.stdout).map_err(|e| fail(format!("not JSON: {e}")))?;
        let results = json["results"].as_array().cloned().unwrap_or_default();
        for e in &step.expect {
            let r = results
                .iter()
                .find(|r| r["pass"] == e.task.as_str() && r["check"] == e.check.as_str())
                .ok_or_else(|| fail(format!("no result for {} {}", e.task, e.check)))?;
            if r["status"] != e.status.as_str() {
                return Err(fail(format!(
                    "{} {}: status {}, expected {} (evidence {})",
                    e.task, e.check, r["status"], e.status, r["evidence"]
                )));
            }
            let ev = r["evidence"].to_string().to_lowercase();
            for needle in &e.evidence {
                if !ev.contains(&needle.to_lowercase()) {
                    return Err(fail(format!(
                        "{} {}: evidence lacks {needle:?}: {ev}",
                        e.task, e.check
                    )));
                }
            }
        }
        let verdicts = json["verdicts"].as_array().cloned().unwrap_or_default();
        for v in &step.verdict {
            let got = verdicts
                .iter()
                .find(|x| x["task_id"] == v.task.as_str())
                .ok_or_else(|| fail(format!("no verdict for {}", v.task)))?;
            if got["verdict"] != v.verdict.as_str() {
                return Err(fail(format!(
                    "{}: verdict {}, expected {}",
                    v.task, got["verdict"], v.verdict
                )));
            }
            let tasks = json["tasks"].as_array().cloned().unwrap_or_default();
            if !tasks
                .iter()
                .any(|t| t["task_id"] == v.task.as_str() && t["verdict"] == v.verdict.as_str())
            {
                return Err(fail(format!(
                    "{}: `tasks` does not say {}",
                    v.task, v.verdict
                )));
            }
            for reason in &v.reasons {
                if !got["reasons"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|x| x == reason.as_str()))
                {
                    return Err(fail(format!(
                        "{}: reasons {} lack {reason}",
                        v.task, got["reasons"]
                    )));
                }
            }
            for p in &v.restore {
                if !got["restore"]
                    .as_array()
                    .is_some_and(|a| a.iter().any(|x| x["path"] == p.as_str()))
                {
                    return Err(fail(format!(
                        "{}: restore {} lacks {p}",
                        v.task, got["restore"]
                    )));
                }
            }
            if let Some(c) = v.cleanup {
                if got["cleanup_task"].is_string() != c {
                    return Err(fail(format!(
                        "{}: cleanup_task {}",
                        v.task, got["cleanup_task"]
                    )));
                }
            }
            if let Some(s) = v.similarity {
                let g = got["diff_similarity"].as_f64().unwrap_or(-1.0);
                if (g - s).abs() > 1e-9 {
                    return Err(fail(format!(
                        "{}: diff_similarity {g}, expected {s}",
                        v.task
                    )));
                }
            }
        }
        for o in &step.outputs {
            let (absent, name) = match o.strip_prefix('!') {
                Some(n) => (true, n),
                None => (false, o.as_str()),
            };
            // Kept attempts are the state directory's; the rest has a copy in `.referee/`.
            let at = if name.starts_with("attempts/") {
                tmp.path().join("state").join(name)
            } else {
                ws.join(".referee").join(name)
            };
            if at.exists() == absent {
                return Err(fail(format!(
                    ".referee/{name}: expected {}",
                    if absent { "absent" } else { "present" }
                )));
            }
        }
    }
    Ok(())
}
