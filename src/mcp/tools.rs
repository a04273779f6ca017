//! What each MCP tool answers, as plain synchronous calls into the library: judge a directory
//! once, a task's verdict, a check explained, the protected paths, the status. No MCP types
//! here (the [`super::server`] glue turns a [`Reply`] or an error string into a tool result),
//! so every answer and every refusal is testable without a client.
//!
//! A refusal is a [`ToolError`], which keeps the library's typed error as its source; the
//! server writes it down, with its causes (`crate::error::chain`), as the whole of what the
//! agent reads (the tool result's text), as `cli` hands its errors to `anyhow`.
//!
//! Read-only: nothing is written into the judged directory (`verify --write` is not offered).
//! A workspace is judged as `verify` judges it: where the referee has run (its state
//! directory exists), against the baseline pinned there; where it has not, against `HEAD`
//! read now and kept nowhere (no state directory is created).

use std::path::{Path, PathBuf};

use serde_json::{json, Value};

use crate::exit::ExitCode;
use crate::judge::{self, Judgment};
use crate::protocol::predicate::Predicate;
use crate::protocol::{self, Protocol};
use crate::workspace::{name, EXCLUDED};

/// Why a tool call was refused. Its text with its causes is what the agent reads.
#[derive(Debug, thiserror::Error)]
pub enum ToolError {
    #[error("no {what} given: `{field}` is empty")]
    Empty {
        what: &'static str,
        field: &'static str,
    },
    #[error("cannot read `--root` `{}`", path.display())]
    Root {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`--root` `{}` is not a directory", path.display())]
    RootNotDir { path: PathBuf },
    #[error("cannot read directory `{}`", path.display())]
    Dir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{}` is outside the server's --root `{}`: refused", path.display(), root.display())]
    OutsideRoot { path: PathBuf, root: PathBuf },
    #[error("`{}` is not a directory", path.display())]
    NotDir { path: PathBuf },
    #[error("unknown protocol `{name}`: a call names an embedded protocol ({embedded}) or the server's --protocol")]
    UnknownProtocol { name: String, embedded: String },
    #[error("unknown protocol `{name}`: name an embedded protocol ({embedded})")]
    UnknownEmbedded { name: String, embedded: String },
    #[error("cannot load protocol `{spec}`")]
    Protocol {
        spec: String,
        #[source]
        source: protocol::ProtocolError,
    },
    #[error("protocol `{id}` judges no task records: name a task protocol (`code-change`)")]
    NoTasks { id: String },
    #[error(transparent)]
    RulesInside(#[from] protocol::secrets::RulesInside),
    #[error(transparent)]
    Judge(#[from] crate::judge::JudgeError),
    #[error("the verdict JSON did not parse back (a referee bug)")]
    Json(#[source] serde_json::Error),
    #[error(transparent)]
    Status(#[from] crate::status::StatusError),
    #[error(transparent)]
    Explain(#[from] protocol::explain::ExplainError),
}

/// How the server was started (`referee mcp` flags, resolved).
#[derive(Debug, Clone, Default)]
pub struct Config {
    /// `--protocol`: what `judge` uses when the call names none (else `d10`, as `verify`).
    pub protocol: Option<String>,
    /// `--state-dir`: the referee's state directory of the judged directory.
    pub state_dir: Option<PathBuf>,
    /// `--root`, canonical: every directory a call names must lie inside it.
    pub root: Option<PathBuf>,
    /// Files larger than this are INCONCLUSIVE, never read.
    pub max_read_bytes: u64,
}

impl Config {
    /// `root` canonicalized (it must exist and be a directory).
    pub fn new(
        protocol: Option<String>,
        state_dir: Option<PathBuf>,
        root: Option<&Path>,
        max_read_bytes: u64,
    ) -> Result<Config, ToolError> {
        let root = root
            .map(|r| {
                let c = std::fs::canonicalize(r).map_err(|source| ToolError::Root {
                    path: r.to_path_buf(),
                    source,
                })?;
                if !c.is_dir() {
                    return Err(ToolError::RootNotDir {
                        path: r.to_path_buf(),
                    });
                }
                Ok(c)
            })
            .transpose()?;
        Ok(Config {
            protocol,
            state_dir,
            root,
            max_read_bytes,
        })
    }
}

/// A tool's answer: a short text for a reader, and the same as JSON for a program.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub text: String,
    pub json: Value,
}

/// The most paths `protected_paths` lists as present, and the most entries it walks.
pub const MAX_LISTED: usize = 1000;
pub const MAX_WALKED: usize = 200_000;

/// The directory a call names, canonical: relative to `--root` (else to the server's working
/// directory); refused when it is not a readable directory or lies outside `--root` (symlinks
/// resolved first, so a link out of the root is refused too).
pub fn resolve(cfg: &Config, dir: &str) -> Result<PathBuf, ToolError> {
    if dir.is_empty() {
        return Err(ToolError::Empty {
            what: "directory",
            field: "dir",
        });
    }
    let p = Path::new(dir);
    let joined = match (&cfg.root, p.is_relative()) {
        (Some(root), true) => root.join(p),
        _ => p.to_path_buf(),
    };
    let canon = std::fs::canonicalize(&joined).map_err(|source| ToolError::Dir {
        path: p.to_path_buf(),
        source,
    })?;
    if let Some(root) = &cfg.root {
        if !canon.starts_with(root) {
            return Err(ToolError::OutsideRoot {
                path: p.to_path_buf(),
                root: root.clone(),
            });
        }
    }
    if !canon.is_dir() {
        return Err(ToolError::NotDir {
            path: p.to_path_buf(),
        });
    }
    Ok(canon)
}

/// The protocol a call names: an embedded id only (a protocol file would let the caller — the
/// watched agent, perhaps — pick its own rules); the server's `--protocol`, which may be a
/// file, when the call names none or names it; `default` otherwise.
pub fn protocol_for(
    cfg: &Config,
    named: Option<&str>,
    default: &str,
) -> Result<Protocol, ToolError> {
    let spec = match named {
        Some(n) if cfg.protocol.as_deref() == Some(n) => n,
        Some(n) if protocol::EMBEDDED.iter().any(|(id, _, _)| *id == n) => n,
        Some(n) => {
            return Err(ToolError::UnknownProtocol {
                name: n.to_string(),
                embedded: embedded_ids(),
            })
        }
        None => cfg.protocol.as_deref().unwrap_or(default),
    };
    Protocol::load(spec).map_err(|source| ToolError::Protocol {
        spec: spec.to_string(),
        source,
    })
}

fn embedded_ids() -> String {
    protocol::EMBEDDED
        .iter()
        .map(|(id, _, _)| format!("`{id}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `judge`: the directory judged once, as it stands (what `verify --format json` prints), and
/// a summary.
pub fn judge(
    cfg: &Config,
    dir: &str,
    named: Option<&str>,
    final_: bool,
) -> Result<Reply, ToolError> {
    let path = resolve(cfg, dir)?;
    let p = protocol_for(cfg, named, protocol::DEFAULT_ID)?;
    for file in p.secret_files() {
        protocol::secrets::refuse_inside(&file, &path)?;
    }
    let req = judge::Request {
        final_,
        state_dir: cfg.state_dir.as_deref(),
        max_read_bytes: cfg.max_read_bytes,
        ..judge::Request::new(&path)
    };
    let ((p, _), judgment) =
        judge::judge(&req, judge::loaded((p, None))).map_err(ToolError::Judge)?;
    let violation = judgment.violation();
    let (rendered, mut text) = match &judgment {
        Judgment::Build(b) => {
            let stops: Vec<String> = b
                .eval
                .stops()
                .map(|r| format!("{} ({}, {:?})", r.check, r.pass, r.status))
                .collect();
            let text = if stops.is_empty() {
                format!("GO: no unresolved BLOCKING failure in `{}`", path.display())
            } else {
                format!(
                    "STOP: {} unresolved BLOCKING failure(s) in `{}`: {}",
                    stops.len(),
                    path.display(),
                    stops.join(", ")
                )
            };
            (crate::outputs::json::render(&p, &b.eval, &b.ctx), text)
        }
        Judgment::Workspace(w) => {
            let mut lines = vec![format!(
                "{}: workspace `{}` by `{}`, {} task record(s) judged",
                if violation { "STOP" } else { "GO" },
                path.display(),
                p.id,
                w.decision.verdicts.len()
            )];
            for v in &w.decision.verdicts {
                let attempt = v.attempt.map_or("?".to_string(), |a| a.to_string());
                let reasons = if v.reasons.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", v.reasons.join(", "))
                };
                lines.push(format!(
                    "task {} attempt {attempt}: {}{reasons}",
                    v.task_id, v.verdict
                ));
            }
            if let Some(why) = &w.ws.no_baseline {
                lines.push(format!("no baseline: {why}"));
            }
            let json = crate::outputs::code_change::verify_json(
                &p,
                &w.ws,
                &w.eval,
                &w.runs,
                &w.decision,
                &w.ctx,
            );
            (json, lines.join("\n"))
        }
    };
    let json: Value = serde_json::from_str(&rendered).map_err(ToolError::Json)?;
    text.push('\n');
    Ok(Reply {
        text,
        json: json!({ "violation": violation, "protocol": p.id, "verdict": json }),
    })
}

/// `status` and `task_verdict`: what `referee status` answers, from the referee's state
/// directory only (never from the copies in the watched directory).
fn status_of(
    cfg: &Config,
    path: PathBuf,
    task: Option<crate::status::TaskQuery>,
) -> Result<Reply, ToolError> {
    let task_id = task.as_ref().map(|t| t.id.clone());
    let answer = crate::status::status(&crate::status::Config {
        build_dir: path.clone(),
        state_dir: cfg.state_dir.clone(),
        require_live: false,
        stale: None,
        task,
        expect_protocol: None,
        expect_waivers: None,
        show_run: false,
        sync: None,
    })?;
    let word = match answer.code {
        ExitCode::Ok => "go",
        ExitCode::Violation => "stop",
        ExitCode::NotJudged => "not_judged",
        ExitCode::NotLive => "not_live",
        // `status` is never interrupted (130 is the daemon's second signal); an error if it were.
        ExitCode::Error | ExitCode::Interrupted => "error",
    };
    let note = answer.note.as_ref().map(|n| match n {
        crate::status::Note::Info(t)
        | crate::status::Note::Warning(t)
        | crate::status::Note::Error(t) => t.clone(),
    });
    let mut text = format!("{word} (referee status exit {})", answer.code as u8);
    if let Some(n) = &note {
        text.push_str(&format!("\nnote: {n}"));
    }
    if !answer.stdout.is_empty() {
        text.push_str("\n\n");
        text.push_str(&answer.stdout);
    }
    Ok(Reply {
        text,
        json: json!({
            "dir": path.display().to_string(),
            "task_id": task_id,
            "answer": word,
            "exit_code": answer.code as u8,
            "output": answer.stdout,
            "note": note,
        }),
    })
}

/// `status`: STOP or go for a directory, as `referee status DIR`.
pub fn status(cfg: &Config, dir: &str) -> Result<Reply, ToolError> {
    let path = resolve(cfg, dir)?;
    status_of(cfg, path, None)
}

/// `task_verdict`: the verdict the referee recorded for a task's latest attempt, as
/// `referee status --task ID` (no waiting).
pub fn task_verdict(
    cfg: &Config,
    workspace: &str,
    task_id: &str,
    named: Option<&str>,
) -> Result<Reply, ToolError> {
    if task_id.is_empty() {
        return Err(ToolError::Empty {
            what: "task id",
            field: "task_id",
        });
    }
    let path = resolve(cfg, workspace)?;
    let p = protocol_for(cfg, named, "code-change")?;
    if !matches!(p.subject, crate::protocol::Subject::Workspace(_)) {
        return Err(ToolError::NoTasks { id: p.id.clone() });
    }
    let go = crate::status::go_verdicts(&p);
    status_of(
        cfg,
        path,
        Some(crate::status::TaskQuery {
            id: task_id.to_string(),
            wait: std::time::Duration::ZERO,
            go,
        }),
    )
}

/// `explain_check`: `referee protocol explain CHECK [--protocol P]`.
pub fn explain_check(check: &str, named: Option<&str>) -> Result<Reply, ToolError> {
    let named = match named {
        Some(n) if !protocol::EMBEDDED.iter().any(|(id, _, _)| *id == n) => {
            return Err(ToolError::UnknownEmbedded {
                name: n.to_string(),
                embedded: embedded_ids(),
            })
        }
        n => n,
    };
    let (p, text) = protocol::explain::lookup(named, check)?;
    Ok(Reply {
        json: json!({ "protocol": p.id, "check": check, "explanation": text }),
        text,
    })
}

/// A protected glob, and the protected glob it shadows (a Python package or bytecode in a
/// protected module's place) when it is a shadow.
type Shadowed = (crate::protocol::predicate::Glob, Option<String>);

/// Each check that protects paths (an `unchanged` predicate): its id, whether it is a veto, and
/// its globs with their shadows.
fn protected_globs(p: &Protocol) -> Vec<(String, bool, Vec<Shadowed>)> {
    fn walk(pred: &Predicate, out: &mut Vec<Shadowed>) {
        match pred {
            Predicate::Unchanged(u) => out.extend(u.all_globs()),
            Predicate::All(v) | Predicate::Any(v) => v.iter().for_each(|q| walk(q, out)),
            Predicate::Not(q) | Predicate::FailIfMissing(q) => walk(q, out),
            _ => {}
        }
    }
    let mut out: Vec<(String, bool, Vec<_>)> = Vec::new();
    for pass in &p.passes {
        for c in &pass.checks {
            if out.iter().any(|(id, _, _)| *id == c.def.id) {
                continue;
            }
            let mut globs = Vec::new();
            walk(&c.predicate, &mut globs);
            if !globs.is_empty() {
                out.push((c.def.id.clone(), c.def.veto, globs));
            }
        }
    }
    out
}

/// `protected_paths`: the protocol's protected globs (with the paths that shadow them), and
/// the paths present in the workspace that they match (its top-level `.git`, `.tasks` and
/// `.referee` aside; symlinks listed, never followed).
pub fn protected_paths(
    cfg: &Config,
    workspace: &str,
    named: Option<&str>,
) -> Result<Reply, ToolError> {
    let path = resolve(cfg, workspace)?;
    let p = protocol_for(cfg, named, "code-change")?;
    let checks = protected_globs(&p);
    let mut present: Vec<(String, Vec<String>)> = Vec::new();
    let (mut walked, mut truncated) = (0usize, false);
    let mut errors: Vec<String> = Vec::new();
    if !checks.is_empty() {
        let mut it = walkdir::WalkDir::new(&path)
            .follow_links(false)
            .min_depth(1)
            .sort_by_file_name()
            .into_iter();
        while let Some(entry) = it.next() {
            let entry = match entry {
                Ok(e) => e,
                Err(e) => {
                    errors.push(e.to_string());
                    continue;
                }
            };
            walked += 1;
            if walked > MAX_WALKED {
                truncated = true;
                break;
            }
            let Ok(rel) = entry.path().strip_prefix(&path) else {
                continue;
            };
            let rel = name::encode(std::os::unix::ffi::OsStrExt::as_bytes(rel.as_os_str()));
            if entry.depth() == 1 && entry.file_type().is_dir() && EXCLUDED.contains(&rel.as_str())
            {
                it.skip_current_dir();
                continue;
            }
            let matched: Vec<String> = checks
                .iter()
                .flat_map(|(_, _, globs)| globs.iter())
                .filter(|(g, _)| g.is_match(&rel))
                .map(|(g, _)| g.as_str().to_string())
                .collect();
            if matched.is_empty() {
                continue;
            }
            if present.len() == MAX_LISTED {
                truncated = true;
                break;
            }
            let mut matched = matched;
            matched.dedup();
            present.push((rel, matched));
        }
    }
    let mut text = String::new();
    if checks.is_empty() {
        text.push_str(&format!("protocol `{}` protects no paths\n", p.id));
    }
    for (id, veto, globs) in &checks {
        text.push_str(&format!(
            "{id}{}: {}\n",
            if *veto { " (veto)" } else { "" },
            globs
                .iter()
                .filter(|(_, of)| of.is_none())
                .map(|(g, _)| g.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    text.push_str(&format!(
        "{} protected path(s) present in `{}`{}\n",
        present.len(),
        path.display(),
        if truncated {
            " (listing truncated)"
        } else {
            ""
        }
    ));
    for (rel, globs) in &present {
        text.push_str(&format!(
            "  {} (matches {})\n",
            name::display(rel),
            globs.join(", ")
        ));
    }
    let json = json!({
        "protocol": p.id,
        "workspace": path.display().to_string(),
        "checks": checks.iter().map(|(id, veto, globs)| json!({
            "check": id,
            "veto": veto,
            "globs": globs.iter().map(|(g, of)| json!({"glob": g.as_str(), "shadow_of": of})).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
        "present": present.iter().map(|(rel, globs)| json!({"path": rel, "globs": globs})).collect::<Vec<_>>(),
        "truncated": truncated,
        "unreadable": errors,
    });
    Ok(Reply { text, json })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::fs;

    fn cfg(root: Option<&Path>, protocol: Option<&str>) -> Config {
        Config::new(
            protocol.map(str::to_string),
            None,
            root,
            crate::artifacts::DEFAULT_MAX_READ_BYTES,
        )
        .unwrap()
    }

    #[test]
    fn a_directory_is_resolved_inside_the_root_or_refused() {
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("root");
        fs::create_dir_all(root.join("a/b")).unwrap();
        fs::create_dir(top.path().join("out")).unwrap();
        fs::write(root.join("file"), "x").unwrap();
        std::os::unix::fs::symlink(top.path().join("out"), root.join("link")).unwrap();
        let c = cfg(Some(&root), None);
        let canon = fs::canonicalize(&root).unwrap();
        assert_eq!(resolve(&c, "a/b").unwrap(), canon.join("a/b"));
        assert_eq!(resolve(&c, ".").unwrap(), canon);
        for bad in ["..", "../out", "link", "a/../../out"] {
            let e = resolve(&c, bad).unwrap_err();
            assert!(matches!(e, ToolError::OutsideRoot { .. }), "{bad}: {e:?}");
            assert!(
                e.to_string().contains("outside the server's --root"),
                "{bad}: {e}"
            );
        }
        let out = top.path().join("out");
        assert!(resolve(&c, out.to_str().unwrap()).is_err());
        assert!(resolve(&c, "file")
            .unwrap_err()
            .to_string()
            .contains("is not a directory"));
        // The cause is kept: the path and the system's error.
        match resolve(&c, "nope").unwrap_err() {
            e @ ToolError::Dir { .. } => {
                let text = crate::error::chain(&e);
                assert!(
                    text.starts_with("cannot read directory `nope`: no such file"),
                    "{text}"
                );
                let ToolError::Dir { path, source } = e else {
                    unreachable!()
                };
                assert_eq!(path, Path::new("nope"));
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            }
            other => panic!("{other:?}"),
        }
        assert!(resolve(&c, "").unwrap_err().to_string().contains("empty"));
        // Without a root, anything readable.
        assert_eq!(
            resolve(&cfg(None, None), out.to_str().unwrap()).unwrap(),
            fs::canonicalize(&out).unwrap()
        );
        assert!(Config::new(None, None, Some(&root.join("file")), 1).is_err());
    }

    #[test]
    fn a_call_names_an_embedded_protocol_or_the_servers_own() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mine.toml");
        fs::write(&file, Protocol::load("d10").unwrap().text).unwrap();
        let spec = file.to_str().unwrap();
        let plain = cfg(None, None);
        assert_eq!(protocol_for(&plain, None, "d10").unwrap().id, "d10");
        assert_eq!(
            protocol_for(&plain, Some("code-change"), "d10").unwrap().id,
            "code-change"
        );
        let e = protocol_for(&plain, Some(spec), "d10")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown protocol") && e.contains("`d10`"), "{e}");
        // The server's own file: its default, and nameable.
        let own = cfg(None, Some(spec));
        assert_eq!(
            protocol_for(&own, None, "code-change").unwrap().origin,
            spec
        );
        assert_eq!(protocol_for(&own, Some(spec), "d10").unwrap().origin, spec);
        assert!(explain_check("OBS-27", Some(spec)).is_err());
        assert!(explain_check("OBS-27", None)
            .unwrap()
            .text
            .starts_with("OBS-27"));
    }

    #[test]
    fn protected_paths_lists_matches_and_shadows_but_not_the_referees_folders() {
        let ws = tempfile::tempdir().unwrap();
        let w = ws.path();
        fs::create_dir_all(w.join("app/orchestrator")).unwrap();
        fs::create_dir_all(w.join(".git/x")).unwrap();
        fs::create_dir_all(w.join(".tasks")).unwrap();
        fs::write(w.join("app/orchestrator/__init__.py"), "").unwrap();
        fs::write(w.join("roles.py"), "").unwrap();
        fs::write(w.join("app/main.py"), "").unwrap();
        fs::write(w.join(".git/x/roles.py"), "").unwrap();
        fs::write(w.join(".tasks/roles.py"), "").unwrap();
        let odd = <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(b"safety_\xff.py");
        fs::write(w.join(odd), "").unwrap();
        let r = protected_paths(&cfg(None, None), w.to_str().unwrap(), None).unwrap();
        let present: Vec<&str> = r.json["present"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["path"].as_str().unwrap())
            .collect();
        assert_eq!(
            present,
            [
                "app/orchestrator/__init__.py",
                "roles.py",
                name::encode(b"safety_\xff.py").as_str()
            ]
        );
        assert_eq!(
            r.json["present"][0]["globs"],
            json!(["**/orchestrator/__init__.py"])
        );
        assert!(r.text.contains("safety_\\xff.py"), "{}", r.text);
        assert!(
            r.text.starts_with("CC-01 (veto): **/grind_spawner*.py"),
            "{}",
            r.text
        );
        // A protocol that protects nothing says so.
        let d10 = protected_paths(&cfg(None, None), w.to_str().unwrap(), Some("d10")).unwrap();
        assert!(
            d10.text.contains("protocol `d10` protects no paths"),
            "{}",
            d10.text
        );
    }
}
