//! Judging a subject once, as it stands: one pipeline for `verify`, the agents' hooks and the
//! MCP server, whose evaluation of a workspace `watch` runs too ([`evaluate`], on the work tree
//! it keeps). The subject (a build directory, or a workspace and its task records) is opened
//! while the protocol is loaded and prepared on a thread of its own, then evaluated, graded and
//! decided ([`crate::decision`]). Each entry point gathers its inputs ([`Request`], [`Source`])
//! and writes its outputs ([`write`]); nothing here prints, and nothing is written but the
//! referee's own memory of the workspace (its pinned baseline and stat cache).

mod build;
mod error;
mod workspace;
mod write;

pub use error::JudgeError;
pub use workspace::{attempt, evaluate, Evaluated, Implicit, ImplicitRecord, Memory};
pub use write::{write, write_workspace, Writes};

use std::path::{Path, PathBuf};

use anyhow::Result;

use crate::artifacts::{Listing, Snapshot};
use crate::decision::Decision;
use crate::engine::{Evaluation, TaskRun};
use crate::outputs::Context;
use crate::protocol::{Protocol, Subject};
use crate::state::live::Here;
use crate::waivers::{InUse, Waivers};
use crate::workspace::Workspace;

/// What to judge and how: a build directory (D10) or a workspace (a protocol of task records).
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The build directory or workspace.
    pub dir: &'a Path,
    /// The directory, opened already by the caller (a hook's workspace, the MCP server's
    /// directory beneath its root): the state directory is named from it, never by looking
    /// `dir` up again. `None`: `dir` is opened once per judgment, here.
    pub opened: Option<&'a Here>,
    /// Files larger than this are INCONCLUSIVE, never read.
    pub max_read_bytes: u64,
    /// Judge a finished run (every check due). A workspace is always judged as finished.
    pub final_: bool,
    /// `--state-dir`, else the default for `dir`.
    pub state_dir: Option<&'a Path>,
    /// The workspace's baseline: `--baseline REV`.
    pub baseline: Option<&'a str>,
    /// The workspace's baseline: `--baseline-dir DIR`.
    pub baseline_dir: Option<&'a Path>,
    /// The caller writes the outputs after (`verify --write`): refused while a live referee
    /// owns `dir`, and nothing that writes runs before the protocol has loaded.
    pub write: bool,
}

impl<'a> Request<'a> {
    /// Judging `dir` with the defaults of `verify`.
    pub fn new(dir: &'a Path) -> Self {
        Request {
            dir,
            opened: None,
            max_read_bytes: crate::artifacts::DEFAULT_MAX_READ_BYTES,
            final_: false,
            state_dir: None,
            baseline: None,
            baseline_dir: None,
            write: false,
        }
    }
}

/// A protocol and its waivers, as loaded for a command.
pub type Loaded = (Protocol, Option<Waivers>);

/// What a protocol judges.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A build directory (no `[tasks]` table).
    Build,
    /// A workspace and its task records.
    Workspace,
}

/// Where the protocol of a judgment comes from, and what is known of it before it is loaded.
#[derive(Debug)]
pub struct Source<F> {
    /// What it judges, when known before loading (an embedded protocol); `None`: load first.
    judges: Option<Kind>,
    /// Its loading may be refused (rules, secrets or waivers read from files): then nothing
    /// that writes runs before it has loaded.
    may_refuse: bool,
    load: F,
}

impl<F: FnOnce() -> Result<Loaded> + Send> Source<F> {
    /// The protocol `spec` names (an embedded id or a file), as `load` loads it. What an
    /// embedded protocol judges is known from its text without parsing it
    /// ([`Protocol::embedded_judges_records`]), so its subject is opened while it loads.
    pub fn named(spec: &str, may_refuse: bool, load: F) -> Source<F> {
        let judges = if Protocol::embedded_judges_records(spec) {
            Some(Kind::Workspace)
        } else if Protocol::embedded_lists_build(spec) {
            Some(Kind::Build)
        } else {
            None
        };
        Source {
            judges,
            may_refuse,
            load,
        }
    }
}

/// A protocol loaded already (the MCP server's, a hook's).
pub fn loaded(loaded: Loaded) -> Source<impl FnOnce() -> Result<Loaded> + Send> {
    let judges = Some(match loaded.0.subject {
        Subject::Build(_) => Kind::Build,
        Subject::Workspace(_) => Kind::Workspace,
    });
    Source {
        judges,
        may_refuse: false,
        load: move || Ok(loaded),
    }
}

/// A build directory judged once.
#[derive(Debug)]
pub struct BuildJudgment {
    pub snap: Snapshot,
    pub eval: Evaluation,
    /// A STOP and exit 1 while an unwaived BLOCKING failure stands.
    pub decision: Decision,
    pub ctx: Context,
}

/// A workspace judged once: every task record against the baseline.
#[derive(Debug)]
pub struct WorkspaceJudgment {
    pub ws: Workspace,
    pub eval: Evaluation,
    pub runs: Vec<TaskRun>,
    /// Each task's verdict, the veto, the STOP and the exit code, as `watch` decides them too.
    pub decision: Decision,
    pub ctx: Context,
    /// The referee's state directory for this workspace.
    pub state: PathBuf,
}

/// What [`judge`] found.
#[derive(Debug)]
#[allow(
    clippy::large_enum_variant,
    reason = "one per call, moved once; boxing would only add an allocation"
)]
pub enum Judgment {
    Build(Box<BuildJudgment>),
    Workspace(Box<WorkspaceJudgment>),
}

impl Judgment {
    /// What was decided.
    pub fn decision(&self) -> &Decision {
        match self {
            Judgment::Build(b) => &b.decision,
            Judgment::Workspace(w) => &w.decision,
        }
    }

    /// Whether the answer is "do not go on" (exit 1).
    pub fn violation(&self) -> bool {
        self.decision().violation()
    }
}

/// `verify --write` refuses a directory a live `referee watch` owns: its pass files and report
/// would be overwritten under it (exit 2, nothing written).
#[derive(Debug, thiserror::Error)]
#[error(
    "`{dir}` is watched by a live referee ({why}); `verify --write` would overwrite the files that daemon owns — \
run `verify` without `--write` to print the report, or stop the daemon first"
)]
pub struct LiveReferee {
    dir: String,
    why: String,
}

/// Judges `req.dir` once, as it stands, by the protocol `source` loads, with its waivers
/// applied. The subject is opened while the protocol loads when what it judges is known before
/// (listing a build directory reads and writes nothing, so always; opening a workspace only
/// when neither the load may be refused nor the caller writes); otherwise the protocol is
/// loaded first, so a refused load touches nothing. An error of the load is the answer, before
/// any of the subject's.
pub fn judge<F>(req: &Request<'_>, source: Source<F>) -> Result<(Loaded, Judgment), JudgeError>
where
    F: FnOnce() -> Result<Loaded> + Send,
{
    match source.judges {
        Some(Kind::Build) => {
            let listing = Listing::start(req.dir);
            judge_loaded(
                req,
                (source.load)().map_err(JudgeError::Load)?,
                Some(listing),
            )
        }
        Some(Kind::Workspace) if !source.may_refuse && !req.write => {
            match workspace::judge(req, source.load)? {
                (loaded, Some(j)) => Ok((loaded, Judgment::Workspace(Box::new(j)))),
                (loaded, None) => judge_loaded(req, loaded, None),
            }
        }
        _ => judge_loaded(req, (source.load)().map_err(JudgeError::Load)?, None),
    }
}

/// [`judge`] once the protocol is loaded; `listing`: the build directory's walk, started
/// already (a protocol of task records lets it go: its walk ends with the process).
fn judge_loaded(
    req: &Request<'_>,
    loaded: Loaded,
    listing: Option<Listing>,
) -> Result<(Loaded, Judgment), JudgeError> {
    match loaded.0.subject {
        Subject::Build(_) => {
            let listing = listing.unwrap_or_else(|| Listing::start(req.dir));
            build::judge(req, loaded, listing)
        }
        Subject::Workspace(_) => match workspace::judge(req, move || Ok(loaded))? {
            (loaded, Some(j)) => Ok((loaded, Judgment::Workspace(Box::new(j)))),
            (_, None) => Err(JudgeError::NoWorkspace {
                dir: req.dir.to_path_buf(),
            }),
        },
    }
}

/// What the outputs say of a judgment made once, at `now`, of the directory `root`.
fn context(root: &Path, now: chrono::DateTime<chrono::Utc>, waivers: Option<InUse>) -> Context {
    Context {
        build_dir: root.to_path_buf(),
        started: Some(now),
        written: Some(now),
        waivers,
        ..Context::default()
    }
}

/// Applies the waivers to `eval` as of `now`, warns of the expired ones on stderr, and
/// returns what the outputs show of them.
pub fn apply_waivers(
    waivers: Option<&Waivers>,
    eval: &mut Evaluation,
    now: chrono::DateTime<chrono::Utc>,
) -> Option<InUse> {
    let w = waivers?;
    let today = now.date_naive();
    for e in w.apply(eval, today) {
        tracing::warn!("{}", e.describe());
    }
    Some(w.in_use(today))
}

/// Refuses the directory `here` (asked about as `dir`) when a live referee keeps it (its state
/// directory `state`).
fn refuse_live(dir: &Path, here: &Here, state: &Path) -> Result<(), JudgeError> {
    match crate::state::live::referee(here, state) {
        Some(why) => Err(LiveReferee {
            dir: dir.display().to_string(),
            why,
        }
        .into()),
        None => Ok(()),
    }
}

/// The directory `dir`, opened once ([`Here::of`]); a failure is the directory's to read.
pub fn open(dir: &Path) -> Result<Here, JudgeError> {
    Here::of(dir).map_err(|e| JudgeError::ReadDir {
        path: dir.to_path_buf(),
        source: e.into_io(),
    })
}

/// The directory a judgment is about: the one its caller opened, else `req.dir` opened now.
fn opened(req: &Request<'_>) -> Result<Here, JudgeError> {
    match req.opened {
        Some(here) => Ok(here.clone()),
        None => open(req.dir),
    }
}

/// The state directory of `dir` (`--state-dir`, else the default), as `watch` finds it: `dir`
/// opened once and its memory named from what was opened. For callers that start from a path
/// (`referee accept`, `referee task`); one that holds the directory open names it from that
/// ([`crate::state::locate`]).
pub fn state_of(dir: &Path, explicit: Option<&Path>) -> Result<PathBuf, JudgeError> {
    Ok(crate::state::locate(&open(dir)?, explicit)?)
}

#[cfg(test)]
mod tests;
