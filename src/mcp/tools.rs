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

use std::os::fd::{AsFd as _, AsRawFd as _, OwnedFd};
use std::os::unix::ffi::OsStrExt as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde_json::{json, Value};

use crate::exit::ExitCode;
use crate::judge::{self, Judgment};
use crate::protocol::overrides::{OverrideError, Overrides};
use crate::protocol::predicate::Predicate;
use crate::protocol::{self, Protocol, ProtocolError};
use crate::state::live::Here;
use crate::workspace::{name, EXCLUDED, TASKS_DIR};

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
    #[error("`{field}` is {len} bytes long, more than the {max} a call may give")]
    TooLong {
        field: &'static str,
        len: usize,
        max: usize,
    },
    #[error("cannot tell what `{}` is, so which protocol judges it: {why}; name one with `protocol` (`code-change` for a coding agent's workspace, `d10` for a pipeline's build directory)", path.display())]
    CannotTell { path: PathBuf, why: String },
    #[error("`{}` was replaced while it was judged (another directory now stands at that path): the answer is withheld; ask again", path.display())]
    Replaced { path: PathBuf },
    #[error("`{id}` is not a task id: a task id is the name of its record `.tasks/<task_id>.json`, without `/`")]
    BadTask { id: String },
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
    Overrides(#[from] OverrideError),
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
    /// `--protocol`: what every call uses when it names none (`judge` otherwise tells from the
    /// directory what it is).
    pub protocol: Option<String>,
    /// `--state-dir`: the referee's state directory of the judged directory.
    pub state_dir: Option<PathBuf>,
    /// `--root`, canonical: every directory a call names must lie inside it.
    pub root: Option<PathBuf>,
    /// `--root` held open: every directory a call names is opened beneath it.
    root_fd: Option<Arc<OwnedFd>>,
    /// `--root` as the hooks confine a workspace: what `judge` stamps the folders down to the
    /// judged directory with, and compares after ([`crate::hook::confine`]).
    allowed: crate::hook::confine::Allowed,
    /// Files larger than this are INCONCLUSIVE, never read.
    pub max_read_bytes: u64,
    /// `--vars`, `--set`, `--protect`: the project's rules, applied to every protocol a call
    /// uses that has the variables they name.
    pub overrides: Overrides,
}

impl Config {
    /// `root` canonicalized and held open (it must exist and be a directory); the project's
    /// rules checked against the server's `--protocol`, else `code-change`, so that a
    /// misspelt variable or glob stops the server at its start rather than at each call.
    pub fn new(
        protocol: Option<String>,
        state_dir: Option<PathBuf>,
        root: Option<&Path>,
        max_read_bytes: u64,
        overrides: Overrides,
    ) -> Result<Config, ToolError> {
        let root = root
            .map(|r| {
                let c = std::fs::canonicalize(r).map_err(|source| ToolError::Root {
                    path: r.to_path_buf(),
                    source,
                })?;
                let fd = crate::safefs::open_dir(crate::safefs::CWD, &c, true).map_err(|e| {
                    if e.raw_os_error() == Some(libc::ENOTDIR) {
                        ToolError::RootNotDir {
                            path: r.to_path_buf(),
                        }
                    } else {
                        ToolError::Root {
                            path: r.to_path_buf(),
                            source: e,
                        }
                    }
                })?;
                Ok::<_, ToolError>((c, Arc::new(fd)))
            })
            .transpose()?;
        let spec = protocol.as_deref().unwrap_or(CODE_CHANGE);
        Protocol::load_with(spec, None, &overrides).map_err(|source| ToolError::Protocol {
            spec: spec.to_string(),
            source,
        })?;
        let (root, root_fd) = root.unzip();
        let allowed = match &root {
            Some(r) => {
                crate::hook::confine::Allowed::open(std::slice::from_ref(r)).map_err(|e| {
                    ToolError::Root {
                        path: r.clone(),
                        source: match e {
                            crate::hook::confine::ConfineError::Allow { source, .. } => source,
                            e => std::io::Error::other(e),
                        },
                    }
                })?
            }
            None => crate::hook::confine::Allowed::default(),
        };
        Ok(Config {
            protocol,
            state_dir,
            root,
            root_fd,
            allowed,
            max_read_bytes,
            overrides,
        })
    }
}

/// The embedded protocol of task records.
const CODE_CHANGE: &str = "code-change";

/// The longest path a call may name (the kernel's `PATH_MAX`).
pub const MAX_PATH: usize = 4096;
/// The longest task id or check id a call may name.
pub const MAX_ID: usize = 255;

/// A tool's answer: a short text for a reader, and the same as JSON for a program.
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub text: String,
    pub json: Value,
}

/// The most paths `protected_paths` lists as present, and the most entries it walks.
pub const MAX_LISTED: usize = 1000;
pub const MAX_WALKED: usize = 200_000;

/// A directory a call names, open: the descriptor of the directory found when the call was
/// made, and its path as the kernel has it for that descriptor (symlink-free).
#[derive(Debug)]
pub struct Opened {
    fd: OwnedFd,
    /// The directory's path, read back from its descriptor.
    pub path: PathBuf,
}

impl Opened {
    /// The directory as opened ([`Here`], read from the descriptor), which its state directory
    /// is named from; refused when its path no longer leads to it.
    fn here(&self) -> Result<Here, ToolError> {
        Here::of_fd(self.fd.as_fd(), &self.path).map_err(|_| ToolError::Replaced {
            path: self.path.clone(),
        })
    }

    /// Whether the directory at [`Opened::path`] is still the one opened (a rename and a link
    /// put in its place while it was judged would make the answer about another directory).
    fn still_there(&self) -> Result<(), ToolError> {
        let replaced = || ToolError::Replaced {
            path: self.path.clone(),
        };
        let held = rustix::fs::fstat(&self.fd).map_err(|_| replaced())?;
        let now = rustix::fs::stat(&self.path).map_err(|_| replaced())?;
        if (held.st_dev, held.st_ino) != (now.st_dev, now.st_ino) {
            return Err(replaced());
        }
        Ok(())
    }
}

/// The directory a call names, opened: relative to `--root` (else to the server's working
/// directory). With `--root`, opened beneath it in one kernel step ([`crate::safefs::open_dir_within`]):
/// `..` out of it, an absolute link and a link out of it are refused, and what is judged is
/// the directory found then, named by the path its descriptor has (so a link swapped in and
/// out while calls run never makes an answer about a directory outside the root).
pub fn resolve(cfg: &Config, dir: &str) -> Result<Opened, ToolError> {
    if dir.is_empty() {
        return Err(ToolError::Empty {
            what: "directory",
            field: "dir",
        });
    }
    if dir.len() > MAX_PATH {
        return Err(ToolError::TooLong {
            field: "dir",
            len: dir.len(),
            max: MAX_PATH,
        });
    }
    let p = Path::new(dir);
    let outside = |root: &Path| ToolError::OutsideRoot {
        path: p.to_path_buf(),
        root: root.to_path_buf(),
    };
    let opened = match (&cfg.root, &cfg.root_fd) {
        (Some(root), Some(fd)) => {
            let rel = if p.is_absolute() {
                match p.strip_prefix(root) {
                    Ok(rel) => rel.to_path_buf(),
                    // Another spelling of a place inside the root (through a link above it):
                    // only its name is taken from here, it is opened beneath the root below.
                    Err(_) => std::fs::canonicalize(p)
                        .ok()
                        .and_then(|c| c.strip_prefix(root).ok().map(Path::to_path_buf))
                        .ok_or_else(|| outside(root))?,
                }
            } else {
                p.to_path_buf()
            };
            crate::safefs::open_dir_within(fd.as_fd(), rel.as_os_str().as_bytes()).map_err(|e| {
                if crate::safefs::is_replaced(&e) {
                    outside(root)
                } else {
                    opening(p, e)
                }
            })?
        }
        _ => crate::safefs::open_dir(crate::safefs::CWD, p, true).map_err(|e| opening(p, e))?,
    };
    let path =
        std::fs::read_link(format!("/proc/self/fd/{}", opened.as_raw_fd())).map_err(|source| {
            ToolError::Dir {
                path: p.to_path_buf(),
                source,
            }
        })?;
    if let Some(root) = &cfg.root {
        // Moved out of the root since it was opened.
        if !path.starts_with(root) {
            return Err(outside(root));
        }
    }
    Ok(Opened { fd: opened, path })
}

/// Refuses an id (a task's, a check's, a protocol's) longer than [`MAX_ID`].
fn too_long(field: &'static str, id: &str) -> Result<(), ToolError> {
    if id.len() > MAX_ID {
        return Err(ToolError::TooLong {
            field,
            len: id.len(),
            max: MAX_ID,
        });
    }
    Ok(())
}

fn opening(p: &Path, e: std::io::Error) -> ToolError {
    if e.raw_os_error() == Some(libc::ENOTDIR) {
        ToolError::NotDir {
            path: p.to_path_buf(),
        }
    } else {
        ToolError::Dir {
            path: p.to_path_buf(),
            source: e,
        }
    }
}

/// The protocol a call names: an embedded id only (a protocol file would let the caller — the
/// watched agent, perhaps — pick its own rules); the server's `--protocol`, which may be a
/// file, when the call names none or names it; `default` otherwise. The project's rules are
/// applied to it (see [`with_rules`]).
pub fn protocol_for(cfg: &Config, named: Option<&str>, default: &str) -> Result<Loaded, ToolError> {
    too_long("protocol", named.unwrap_or_default())?;
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
    with_rules(cfg, spec)
}

/// A protocol loaded for a call, and a note when the server's rules were not applied to it.
#[derive(Debug)]
pub struct Loaded {
    pub protocol: Protocol,
    pub note: Option<String>,
}

/// `spec` with the project's rules (`--vars`, `--set`, `--protect`) applied. A protocol that
/// has none of the variables they name (`d10` has no `protected`) is loaded as it is, with a
/// note saying so, unless it is the server's own `--protocol` (checked at the start).
fn with_rules(cfg: &Config, spec: &str) -> Result<Loaded, ToolError> {
    let failed = |source| ToolError::Protocol {
        spec: spec.to_string(),
        source,
    };
    match Protocol::load_with(spec, None, &cfg.overrides) {
        Ok(protocol) => Ok(Loaded {
            protocol,
            note: None,
        }),
        Err(ProtocolError::Overrides(
            why @ (OverrideError::Unknown { .. } | OverrideError::NoProtected { .. }),
        )) if cfg.protocol.as_deref() != Some(spec) => {
            let protocol = Protocol::load(spec).map_err(failed)?;
            Ok(Loaded {
                note: Some(format!(
                    "the server's project rules do not apply to protocol `{}` ({why}): judged by its own rules",
                    protocol.id
                )),
                protocol,
            })
        }
        Err(source) => Err(failed(source)),
    }
}

/// Refuses rule files (`--vars`, the protocol's secret rules) inside the directory a call
/// judges: the worker could rewrite them.
fn refuse_rules_inside(cfg: &Config, p: &Protocol, dir: &Path) -> Result<(), ToolError> {
    if let Some(file) = &cfg.overrides.file {
        protocol::overrides::refuse_inside(file, dir)?;
    }
    for file in p.secret_files() {
        protocol::secrets::refuse_inside(&file, dir)?;
    }
    Ok(())
}

fn embedded_ids() -> String {
    protocol::EMBEDDED
        .iter()
        .map(|(id, _, _)| format!("`{id}`"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// The git work tree a directory lies in, when it is a sub-folder of one (not its top).
fn enclosing_work_tree(path: &Path) -> Option<&Path> {
    if path.join(".git").symlink_metadata().is_ok() {
        return None;
    }
    path.ancestors()
        .skip(1)
        .find(|a| a.join(".git").symlink_metadata().is_ok())
}

/// The protocol a directory is judged by when neither the call nor the server names one,
/// told from what the directory is: task records (`.tasks/`) or the code-change referee's
/// or hooks' memory in its state directory → `code-change`; the D10 execution tracker →
/// `d10`; anything else is refused with what was found, so that a workspace is never
/// judged as a build (nothing of a build there: GO) nor the other way round.
fn tell(cfg: &Config, opened: &Opened) -> Result<&'static str, ToolError> {
    let dir = opened.path.as_path();
    // Looked at through the descriptor (`/proc/self/fd/N`), its state named from it.
    let here = opened.here()?;
    let at = here.at();
    let tasks = at.join(TASKS_DIR).is_dir();
    let state = crate::state::locate(&here, cfg.state_dir.as_deref()).ok();
    let remembers_tasks = state.as_deref().is_some_and(|s| {
        crate::state::attempts::dir_for(s).is_dir()
            || std::fs::read_dir(s).is_ok_and(|mut entries| {
                entries.any(|e| e.is_ok_and(|e| e.file_name().as_bytes().starts_with(b"hook-")))
            })
    });
    if tasks || remembers_tasks {
        return Ok(CODE_CHANGE);
    }
    let tracker = Protocol::load(protocol::DEFAULT_ID)
        .map(|p| p.tracker)
        .unwrap_or_default();
    if !tracker.is_empty() && at.join(&tracker).is_file() {
        return Ok(protocol::DEFAULT_ID);
    }
    let git = at.join(".git").symlink_metadata().is_ok();
    let why = if let Some(top) = enclosing_work_tree(dir) {
        format!(
            "it is a sub-folder of the git work tree `{}` (a workspace is judged at its top: name `{}`)",
            top.display(),
            top.display()
        )
    } else if git {
        format!(
            "it is a git work tree with no task records (`{TASKS_DIR}/`) and no referee or hook has judged it yet"
        )
    } else {
        format!(
            "it has no task records (`{TASKS_DIR}/`), no execution tracker (`{tracker}`), and no referee has judged it"
        )
    };
    Err(ToolError::CannotTell {
        path: dir.to_path_buf(),
        why,
    })
}

/// `judge`: the directory judged once, as it stands (what `verify --format json` prints), and
/// a summary.
pub fn judge(
    cfg: &Config,
    dir: &str,
    named: Option<&str>,
    final_: bool,
) -> Result<Reply, ToolError> {
    let opened = resolve(cfg, dir)?;
    let path = opened.path.clone();
    let default = match (named, &cfg.protocol) {
        (None, None) => tell(cfg, &opened)?,
        _ => protocol::DEFAULT_ID,
    };
    let Loaded { protocol: p, note } = protocol_for(cfg, named, default)?;
    refuse_rules_inside(cfg, &p, &path)?;
    let here = opened.here()?;
    let req = judge::Request {
        final_,
        // Its state directory named from the directory opened, never from `path` again.
        opened: Some(&here),
        state_dir: cfg.state_dir.as_deref(),
        max_read_bytes: cfg.max_read_bytes,
        ..judge::Request::new(&path)
    };
    // Its state directory is named from the directory opened, but its files are read by path
    // (the walk of a build and the work tree and git of a workspace are read under the
    // canonical path; `/proc/self/fd/N` would be resolved again by the canonicalization
    // they start with). So under `--root` the folders from the root down to it are stamped
    // before, and compared after: a link swapped in on the way and out again while it was
    // judged changes them, and the answer is refused, never mixed with another directory's
    // files.
    let chain = stamped(cfg, &opened)?;
    let judged = judge::judge(&req, judge::loaded((p, None)));
    opened.still_there()?;
    if let Some(chain) = &chain {
        chain
            .unchanged()
            .map_err(|_| ToolError::Replaced { path: path.clone() })?;
    }
    let ((p, _), judgment) = judged.map_err(ToolError::Judge)?;
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
                lines.push(no_baseline(&path, &why.to_string()));
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
    if json["build_dir"].as_str() != path.to_str() {
        return Err(ToolError::Replaced { path });
    }
    if let Some(n) = &note {
        text.push_str(&format!("\nnote: {n}"));
    }
    text.push('\n');
    Ok(Reply {
        text,
        json: json!({ "violation": violation, "protocol": p.id, "verdict": json, "note": note }),
    })
}

/// Under `--root`, the directory `opened` opened again as the hooks confine a workspace
/// beneath it, with the folders from the root down to it stamped ([`crate::hook::confine`]);
/// refused unless it is the very directory `opened` holds. `None` without `--root`.
fn stamped(cfg: &Config, opened: &Opened) -> Result<Option<crate::hook::confine::Root>, ToolError> {
    if cfg.allowed.is_empty() {
        return Ok(None);
    }
    let replaced = || ToolError::Replaced {
        path: opened.path.clone(),
    };
    let root =
        crate::hook::confine::confine(&cfg.allowed, None, &opened.path).map_err(|e| match e {
            crate::hook::confine::ConfineError::Outside { .. } => ToolError::OutsideRoot {
                path: opened.path.clone(),
                root: cfg.root.clone().unwrap_or_default(),
            },
            _ => replaced(),
        })?;
    let (a, b) = (
        rustix::fs::fstat(root.fd()).map_err(|_| replaced())?,
        rustix::fs::fstat(&opened.fd).map_err(|_| replaced())?,
    );
    if (a.st_dev, a.st_ino) != (b.st_dev, b.st_ino) {
        return Err(replaced());
    }
    Ok(Some(root))
}

/// Why a workspace has no baseline, said once, and a sub-folder of a git work tree named as
/// such (the library only knows it is not a work tree's top).
fn no_baseline(path: &Path, why: &str) -> String {
    if let Some(top) = enclosing_work_tree(path) {
        return format!(
            "no baseline: `{}` is a sub-folder of the git work tree `{}`, not a work tree of its own: judge `{}`",
            path.display(),
            top.display(),
            top.display()
        );
    }
    if why.starts_with("no baseline") {
        why.to_string()
    } else {
        format!("no baseline: {why}")
    }
}

/// `status` and `task_verdict`: what `referee status` answers, from the referee's state
/// directory only (never from the copies in the watched directory).
fn status_of(
    cfg: &Config,
    opened: &Opened,
    task: Option<crate::status::TaskQuery>,
) -> Result<Reply, ToolError> {
    let task_id = task.as_ref().map(|t| t.id.clone());
    let path = opened.path.clone();
    // The directory `resolve` opened, never its path again: a link swapped in on the way since
    // would make the answer about another directory.
    let held = opened.fd.try_clone().map_err(|source| ToolError::Dir {
        path: path.clone(),
        source,
    })?;
    let answer = crate::status::status(&crate::status::Config {
        build_dir: path.clone(),
        held: Some(std::sync::Arc::new(held)),
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
    let opened = resolve(cfg, dir)?;
    let reply = status_of(cfg, &opened, None)?;
    opened.still_there()?;
    Ok(reply)
}

/// Whether the workspace or the referee knows task `id`: its record in `.tasks/`, or a
/// verdict or attempts the referee (or a hook) kept for it in the state directory.
fn knows_task(cfg: &Config, opened: &Opened, id: &str) -> bool {
    let record = format!("{TASKS_DIR}/{id}.json");
    let fd = opened.fd.as_fd();
    let in_tasks =
        rustix::fs::statat(fd, record.as_str(), rustix::fs::AtFlags::SYMLINK_NOFOLLOW).is_ok();
    // Named from the directory opened, never by resolving the path again: a link swapped in
    // meanwhile cannot name another directory's state.
    let Some(state) = opened
        .here()
        .ok()
        .and_then(|here| crate::state::locate(&here, cfg.state_dir.as_deref()).ok())
    else {
        return in_tasks;
    };
    let verdict = crate::outputs::code_change::verdict_file(id, "json");
    in_tasks
        || state.join(verdict).symlink_metadata().is_ok()
        || crate::state::attempts::dir_for(&state)
            .join(id)
            .symlink_metadata()
            .is_ok()
}

/// `task_verdict`: the verdict the referee recorded for a task's latest attempt, as
/// `referee status --task ID` (no waiting). A task neither the workspace nor the referee
/// knows is answered `unknown_task`, never with another task's verdict or the STOP that
/// stands; whether a STOP stands is said beside it (`stop_stands`, `stop`).
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
    too_long("task_id", task_id)?;
    if task_id.contains('/') || task_id.contains('\0') || task_id == "." || task_id == ".." {
        return Err(ToolError::BadTask {
            id: task_id.to_string(),
        });
    }
    let opened = resolve(cfg, workspace)?;
    let p = protocol_for(cfg, named, CODE_CHANGE)?.protocol;
    if !matches!(p.subject, crate::protocol::Subject::Workspace(_)) {
        return Err(ToolError::NoTasks { id: p.id.clone() });
    }
    let known = knows_task(cfg, &opened, task_id);
    let standing = status_of(cfg, &opened, None)?;
    let stop_stands = standing.json["answer"] == "stop";
    let stop = stop_stands.then(|| standing.json["output"].clone());
    let mut reply = if known {
        let go = crate::status::go_verdicts(&p);
        status_of(
            cfg,
            &opened,
            Some(crate::status::TaskQuery {
                id: task_id.to_string(),
                wait: std::time::Duration::ZERO,
                go,
            }),
        )?
    } else {
        let mut text = format!(
            "unknown_task: task `{task_id}` is unknown in `{}`: it has no record `{TASKS_DIR}/{task_id}.json` and the referee kept no verdict for it",
            opened.path.display()
        );
        if stop_stands {
            text.push_str("\nseparately, a STOP stands for this workspace:\n\n");
            text.push_str(standing.json["output"].as_str().unwrap_or_default());
        }
        Reply {
            text,
            json: json!({
                "dir": opened.path.display().to_string(),
                "task_id": task_id,
                "answer": "unknown_task",
                "exit_code": Value::Null,
                "output": "",
                "note": format!("task `{task_id}` is unknown"),
            }),
        }
    };
    reply.json["task_known"] = json!(known);
    reply.json["stop_stands"] = json!(stop_stands);
    reply.json["stop"] = stop.unwrap_or(Value::Null);
    opened.still_there()?;
    Ok(reply)
}

/// `explain_check`: `referee protocol explain CHECK [--protocol P]`, with the project's rules
/// applied (CC-01's explanation lists the protected globs the server was given).
pub fn explain_check(cfg: &Config, check: &str, named: Option<&str>) -> Result<Reply, ToolError> {
    too_long("check_id", check)?;
    too_long("protocol", named.unwrap_or_default())?;
    let p = match named {
        Some(n)
            if cfg.protocol.as_deref() != Some(n)
                && !protocol::EMBEDDED.iter().any(|(id, _, _)| *id == n) =>
        {
            return Err(ToolError::UnknownEmbedded {
                name: n.to_string(),
                embedded: embedded_ids(),
            })
        }
        Some(n) => with_rules(cfg, n)?.protocol,
        None => {
            // The server's own protocol first: it is what the calls are judged by.
            let own = match &cfg.protocol {
                Some(own) => Some(with_rules(cfg, own)?.protocol),
                None => None,
            };
            match own.filter(|p| protocol::explain::explain(p, check).is_some()) {
                Some(p) => p,
                None => {
                    let mut all = Vec::new();
                    for (id, _, _) in protocol::EMBEDDED {
                        all.push(with_rules(cfg, id)?.protocol);
                    }
                    protocol::explain::find(all, check)?
                }
            }
        }
    };
    let text = protocol::explain::explain(&p, check)
        .ok_or_else(|| protocol::explain::ExplainError::no_check(&p, check))?;
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
    let opened = resolve(cfg, workspace)?;
    let path = opened.path.clone();
    let Loaded { protocol: p, note } = protocol_for(cfg, named, CODE_CHANGE)?;
    let checks = protected_globs(&p);
    // Walked through the descriptor (`/proc/self/fd/N` names the directory opened, whatever
    // stands at its path now), never by the path.
    let through = PathBuf::from(format!("/proc/self/fd/{}", opened.fd.as_raw_fd()));
    let mut present: Vec<(String, Vec<String>)> = Vec::new();
    let (mut walked, mut truncated) = (0usize, false);
    let mut errors: Vec<String> = Vec::new();
    if !checks.is_empty() {
        let mut it = walkdir::WalkDir::new(&through)
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
            let Ok(rel) = entry.path().strip_prefix(&through) else {
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
        "note": note,
    });
    if let Some(n) = &note {
        text.push_str(&format!("note: {n}\n"));
    }
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
            Overrides::default(),
        )
        .unwrap()
    }

    fn path(c: &Config, dir: &str) -> Result<PathBuf, ToolError> {
        resolve(c, dir).map(|o| o.path)
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
        assert_eq!(path(&c, "a/b").unwrap(), canon.join("a/b"));
        assert_eq!(path(&c, ".").unwrap(), canon);
        for bad in ["..", "../out", "link", "a/../../out"] {
            let e = path(&c, bad).unwrap_err();
            assert!(matches!(e, ToolError::OutsideRoot { .. }), "{bad}: {e:?}");
            assert!(
                e.to_string().contains("outside the server's --root"),
                "{bad}: {e}"
            );
        }
        let out = top.path().join("out");
        assert!(path(&c, out.to_str().unwrap()).is_err());
        assert!(path(&c, "file")
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
        assert!(path(&c, "").unwrap_err().to_string().contains("empty"));
        // Without a root, anything readable.
        assert_eq!(
            path(&cfg(None, None), out.to_str().unwrap()).unwrap(),
            fs::canonicalize(&out).unwrap()
        );
        assert!(Config::new(
            None,
            None,
            Some(&root.join("file")),
            1,
            Overrides::default()
        )
        .is_err());
    }

    #[test]
    fn a_call_names_an_embedded_protocol_or_the_servers_own() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("mine.toml");
        fs::write(&file, Protocol::load("d10").unwrap().text).unwrap();
        let spec = file.to_str().unwrap();
        let plain = cfg(None, None);
        assert_eq!(
            protocol_for(&plain, None, "d10").unwrap().protocol.id,
            "d10"
        );
        assert_eq!(
            protocol_for(&plain, Some("code-change"), "d10")
                .unwrap()
                .protocol
                .id,
            "code-change"
        );
        let e = protocol_for(&plain, Some(spec), "d10")
            .unwrap_err()
            .to_string();
        assert!(e.contains("unknown protocol") && e.contains("`d10`"), "{e}");
        // The server's own file: its default, and nameable.
        let own = cfg(None, Some(spec));
        assert_eq!(
            protocol_for(&own, None, "code-change")
                .unwrap()
                .protocol
                .origin,
            spec
        );
        assert_eq!(
            protocol_for(&own, Some(spec), "d10")
                .unwrap()
                .protocol
                .origin,
            spec
        );
        assert!(explain_check(&plain, "OBS-27", Some(spec)).is_err());
        assert!(explain_check(&own, "OBS-27", Some(spec)).is_ok());
        assert!(explain_check(&plain, "OBS-27", None)
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

    /// A folder under `root` swapped, again and again, between a real directory (a workspace
    /// holding no protected file) and a link to a directory outside the root (holding one):
    /// no answer ever names the outside directory or lists its file.
    #[test]
    fn a_link_swapped_in_and_out_while_calls_run_never_leads_outside_the_root() {
        use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("root");
        let outside = top.path().join("elsewhere-OUTSIDE");
        fs::create_dir_all(root.join("ws")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("roles.py"), "ROLES = []\n").unwrap();
        fs::write(root.join("ws/main.py"), "x = 1\n").unwrap();
        // For `judge` by D10: outside, a gate result entered by hand (OBS-27 fails); inside,
        // nothing of a pipeline.
        let gates = fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/content/gate-results.json"),
        )
        .unwrap()
        .replacen("\"source\": \"gate-runner\"", "\"source\": \"manual\"", 1);
        fs::write(outside.join("p3a-gate-results.json"), gates).unwrap();
        let c = cfg(Some(&root), Some("code-change"));
        let judged = |c: &Config, dir: &str| judge(c, dir, Some(protocol::DEFAULT_ID), false);
        let violation = |r: &Reply| r.json["violation"].as_bool();
        // The two directories judged apart: the outside one is a STOP, the inside one is not.
        let there = judged(&cfg(Some(top.path()), None), "elsewhere-OUTSIDE").unwrap();
        assert_eq!(violation(&there), Some(true), "{}", there.text);
        let here = judged(&c, "ws").unwrap();
        assert_eq!(violation(&here), Some(false), "{}", here.text);
        let stop = Arc::new(AtomicBool::new(false));
        let swaps = Arc::new(AtomicU32::new(0));
        let swapper = {
            let (root, outside) = (root.clone(), outside.clone());
            let (stop, swaps) = (stop.clone(), swaps.clone());
            std::thread::spawn(move || {
                while !stop.load(Ordering::Relaxed) {
                    let _ = fs::rename(root.join("ws"), root.join("ws.real"));
                    let _ = std::os::unix::fs::symlink(&outside, root.join("ws"));
                    std::thread::yield_now();
                    let _ = fs::remove_file(root.join("ws"));
                    let _ = fs::rename(root.join("ws.real"), root.join("ws"));
                    swaps.fetch_add(1, Ordering::Relaxed);
                    std::thread::yield_now();
                }
            })
        };
        // At least 300 calls and 3,000 judgments (a judgment mixed with the outside's files
        // is rare: about one in several thousand before the folders were stamped), and on
        // until both the real directory and the link have been met many times (a loaded
        // machine may starve either thread for a while).
        let (mut answered, mut refused, mut first, mut judgments) = (0, 0, None, 0);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
        let mut i = 0;
        while i < 300
            || (judgments < 3000 && std::time::Instant::now() < deadline)
            || ((answered < 30 || refused < 30 || swaps.load(Ordering::Relaxed) < 30)
                && std::time::Instant::now() < deadline)
        {
            judgments += usize::from(i % 3 == 2);
            let r = match i % 3 {
                0 => protected_paths(&c, "ws", None),
                1 => status(&c, "ws"),
                _ => judged(&c, "ws"),
            };
            match r {
                Ok(reply) => {
                    answered += 1;
                    let all = format!("{}{}", reply.text, reply.json);
                    assert!(!all.contains("OUTSIDE"), "call {i}: {all}");
                    // A judgment is of the inside directory's files alone, never of the
                    // outside one's (its failing tracker would make it a STOP).
                    if i % 3 == 2 {
                        assert_eq!(violation(&reply), Some(false), "call {i}: {all}");
                    }
                    let present = reply.json.get("present").map(Value::to_string);
                    assert!(
                        present.is_none_or(|p| !p.contains("roles.py")),
                        "call {i}: {all}"
                    );
                }
                Err(e) => {
                    refused += 1;
                    let text = crate::error::chain(&e);
                    first.get_or_insert_with(|| text.clone());
                    assert!(!text.contains("OUTSIDE"), "call {i}: {text}");
                }
            }
            i += 1;
        }
        stop.store(true, Ordering::Relaxed);
        swapper.join().unwrap();
        let swaps = swaps.load(Ordering::Relaxed);
        assert!(
            swaps >= 30 && answered >= 30 && judgments >= 10,
            "{swaps} swaps, {answered} answers ({judgments} judgments), {refused} refused: {first:?}"
        );
    }

    /// What `judge` compares after a judgment read by path: the folders from the root down to
    /// the directory, stamped when it was opened. A link swapped in on the way and out again
    /// (the directory renamed away and back) between the stamping and the comparison is seen,
    /// whatever the path names again by then; nothing changed, nothing is seen.
    #[test]
    fn a_swap_out_and_back_while_judging_is_seen() {
        let top = tempfile::tempdir().unwrap();
        let root = top.path().join("root");
        let outside = top.path().join("elsewhere");
        fs::create_dir_all(root.join("a/ws")).unwrap();
        fs::create_dir_all(&outside).unwrap();
        let c = cfg(Some(&root), Some("code-change"));
        assert!(
            stamped(
                &cfg(None, None),
                &resolve(&cfg(None, None), &root.join("a/ws").to_string_lossy()).unwrap()
            )
            .unwrap()
            .is_none(),
            "no --root: nothing stamped"
        );
        for swapped in ["a/ws", "a"] {
            let opened = resolve(&c, "a/ws").unwrap();
            let chain = stamped(&c, &opened).unwrap().expect("stamped under --root");
            chain.unchanged().unwrap();
            let (real, aside) = (root.join(swapped), root.join(format!("{swapped}.real")));
            fs::rename(&real, &aside).unwrap();
            std::os::unix::fs::symlink(&outside, &real).unwrap();
            // (a judgment by path would read `elsewhere` here)
            fs::remove_file(&real).unwrap();
            fs::rename(&aside, &real).unwrap();
            opened.still_there().unwrap();
            let e = chain.unchanged().unwrap_err();
            assert!(
                e.to_string().contains("replaced or changed"),
                "{swapped}: {e}"
            );
        }
    }

    #[test]
    fn judge_tells_the_protocol_from_the_directory_or_asks_for_one() {
        let top = tempfile::tempdir().unwrap();
        let state = top.path().join("state");
        let c = Config {
            state_dir: None,
            ..cfg(None, None)
        };
        // A git work tree without task records, no referee memory: cannot tell.
        let ws = top.path().join("ws");
        fs::create_dir_all(ws.join("app")).unwrap();
        let git = std::process::Command::new("git")
            .args(["init", "-q"])
            .current_dir(&ws)
            .status()
            .unwrap();
        assert!(git.success());
        let canon = fs::canonicalize(&ws).unwrap();
        let e = crate::error::chain(&judge(&c, canon.to_str().unwrap(), None, false).unwrap_err());
        assert!(
            e.contains("cannot tell what") && e.contains("name one with `protocol`"),
            "{e}"
        );
        assert!(e.contains("git work tree with no task records"), "{e}");
        // A sub-folder of it is named as such.
        let app = canon.join("app");
        let e = crate::error::chain(&judge(&c, app.to_str().unwrap(), None, false).unwrap_err());
        assert!(e.contains("is a sub-folder of the git work tree"), "{e}");
        // Task records: code-change.
        fs::create_dir(ws.join(".tasks")).unwrap();
        let sd = Config {
            state_dir: Some(state.clone()),
            ..cfg(None, None)
        };
        let r = judge(&sd, canon.to_str().unwrap(), None, false).unwrap();
        assert_eq!(r.json["protocol"], "code-change", "{}", r.text);
        // The D10 tracker: d10. Neither: asked for.
        let build = top.path().join("build");
        fs::create_dir(&build).unwrap();
        let e = crate::error::chain(&judge(&c, build.to_str().unwrap(), None, false).unwrap_err());
        assert!(
            e.contains("no execution tracker (`EXECUTION-TRACKER.md`)"),
            "{e}"
        );
        fs::write(build.join("EXECUTION-TRACKER.md"), "# tracker\n").unwrap();
        let r = judge(&sd, build.to_str().unwrap(), None, false).unwrap();
        assert_eq!(r.json["protocol"], "d10", "{}", r.text);
        // Named by the call or the server: that one.
        let r = judge(&sd, build.to_str().unwrap(), Some("code-change"), false);
        assert!(r.is_err() || r.unwrap().json["protocol"] == "code-change");
        // The sub-folder judged as a workspace says so once, and names the work tree.
        let r = judge(&sd, app.to_str().unwrap(), Some("code-change"), false).unwrap();
        assert!(!r.text.contains("no baseline: no baseline"), "{}", r.text);
        assert!(
            r.text.contains(&format!(
                "`{}` is a sub-folder of the git work tree `{}`",
                app.display(),
                canon.display()
            )),
            "{}",
            r.text
        );
    }

    #[test]
    fn the_projects_rules_reach_judge_and_protected_paths() {
        let top = tempfile::tempdir().unwrap();
        let ws = top.path().join("ws");
        fs::create_dir_all(ws.join("ci")).unwrap();
        fs::write(ws.join("ci/run.sh"), "make\n").unwrap();
        fs::write(ws.join("Makefile"), "all:\n").unwrap();
        let vars = top.path().join("vars.toml");
        fs::write(&vars, "protected = [\"Makefile\"]\n").unwrap();
        let rules = Overrides {
            file: Some(vars.clone()),
            set: vec![],
            protect: vec!["ci/**".into()],
        };
        let c = Config::new(None, None, None, 1 << 20, rules.clone()).unwrap();
        let r = protected_paths(&c, ws.to_str().unwrap(), None).unwrap();
        let present: Vec<&str> = r.json["present"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["path"].as_str().unwrap())
            .collect();
        assert_eq!(present, ["Makefile", "ci/run.sh"], "{}", r.text);
        // d10 has no `protected`: judged by its own rules, and said so.
        let d10 = protected_paths(&c, ws.to_str().unwrap(), Some("d10")).unwrap();
        assert!(
            d10.text.contains("do not apply to protocol `d10`"),
            "{}",
            d10.text
        );
        // The explanation of CC-01 lists them.
        let e = explain_check(&c, "CC-01", None).unwrap();
        assert!(e.text.contains("ci/**"), "{}", e.text);
        // A --vars file inside the judged directory is refused.
        let inside = ws.join("vars.toml");
        fs::write(&inside, "protected = []\n").unwrap();
        let c = Config::new(
            None,
            None,
            None,
            1 << 20,
            Overrides {
                file: Some(inside),
                ..Overrides::default()
            },
        )
        .unwrap();
        let e = judge(&c, ws.to_str().unwrap(), Some("code-change"), false).unwrap_err();
        assert!(matches!(e, ToolError::Overrides(_)), "{e:?}");
        // A misspelt variable stops the server at its start.
        let bad = Overrides {
            set: vec!["protectd=x".into()],
            ..Overrides::default()
        };
        assert!(Config::new(None, None, None, 1, bad).is_err());
    }

    #[test]
    fn arguments_over_their_caps_are_refused_with_the_reason() {
        let c = cfg(None, None);
        let long = "a".repeat(16 << 20);
        for e in [
            judge(&c, &long, None, false).unwrap_err(),
            status(&c, &long).unwrap_err(),
            task_verdict(&c, ".", &long, None).unwrap_err(),
            explain_check(&c, &long, None).unwrap_err(),
            protected_paths(&c, ".", Some(&long)).unwrap_err(),
        ] {
            let text = e.to_string();
            assert!(matches!(e, ToolError::TooLong { .. }), "{text}");
            assert!(text.len() < 200, "{text}");
        }
        let e = task_verdict(&c, ".", "../x", None).unwrap_err();
        assert!(matches!(e, ToolError::BadTask { .. }), "{e}");
    }

    #[test]
    fn an_unknown_task_is_said_to_be_unknown_beside_the_stop_that_stands() {
        let top = tempfile::tempdir().unwrap();
        let ws = top.path().join("ws");
        let state = top.path().join("state");
        fs::create_dir_all(ws.join(".tasks")).unwrap();
        fs::write(ws.join(".tasks/t1.json"), "{}").unwrap();
        // A `--state-dir` named must be there (a missing one is no go); this one holds nothing.
        crate::state::ensure(&state).unwrap();
        let c = Config {
            state_dir: Some(state.clone()),
            ..cfg(None, None)
        };
        let w = ws.to_str().unwrap();
        let r = task_verdict(&c, w, "nobody", None).unwrap();
        assert_eq!(r.json["answer"], "unknown_task", "{}", r.text);
        assert_eq!(r.json["task_known"], false);
        assert_eq!(r.json["stop_stands"], false);
        let known = task_verdict(&c, w, "t1", None).unwrap();
        assert_eq!(known.json["task_known"], true, "{}", known.text);
        assert_ne!(known.json["answer"], "unknown_task");
        // A STOP standing (the copy in the workspace): still unknown, the STOP said beside it.
        fs::write(
            ws.join(crate::outputs::STOP_FILE),
            "# OBSERVER STOP\nt1 rejected\n",
        )
        .unwrap();
        let r = task_verdict(&c, w, "nobody", None).unwrap();
        assert_eq!(r.json["answer"], "unknown_task", "{}", r.text);
        assert_eq!(r.json["stop_stands"], true, "{}", r.text);
        assert!(r.text.contains("separately, a STOP stands"), "{}", r.text);
        assert!(r.json["stop"].as_str().unwrap().contains("t1 rejected"));
    }
}
