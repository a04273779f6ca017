//! A workspace judged once: opened against its pinned baseline (records, listing, pin, stat
//! cache) while, on a thread of its own, the protocol is loaded, its task checks' patterns and
//! globs compiled and every task's kept attempts read; then [`evaluate`]d. [`evaluate`] is the
//! one judgment of task records: `watch` runs it on the work tree it keeps up to date.

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use chrono::{DateTime, Utc};

use super::{apply_waivers, context, opened, refuse_live, JudgeError, Loaded, Request};
use super::{Protocol, WorkspaceJudgment};
use crate::decision::Decision;
use crate::engine::{self, Evaluation, Options, TaskRun};
use crate::protocol::{Subject, TaskRules};
use crate::state::attempts::{Everyone, Store};
use crate::state::live::Here;
use crate::waivers::Waivers;
use crate::workspace::{BaselineSpec, Workspace};

/// A task record made in memory for a hook's stop ([`attempt`]): its path
/// (`.tasks/<stem>.json`) and bytes.
pub type ImplicitRecord = (String, Vec<u8>);

/// What makes a hook's implicit record from the workspace as opened.
pub type Implicit<'a> = dyn Fn(&Workspace) -> Option<ImplicitRecord> + 'a;

/// What the referee remembers that a judgment of task records reads.
#[derive(Debug)]
pub struct Memory<'a> {
    /// The kept attempts: the loop guards' memory.
    pub store: &'a Store,
    /// Every task's kept attempts, read ahead; `None`: read when first needed.
    pub everyone: Option<Everyone>,
}

/// A workspace evaluated: the results, the records judged, and what was decided.
#[derive(Debug)]
pub struct Evaluated {
    pub eval: Evaluation,
    pub runs: Vec<TaskRun>,
    pub decision: Decision,
}

/// `ws` judged as it stands at `now`: every task record evaluated against the baseline,
/// `waive` applied to the results, each judged record graded with the loop guards over
/// `memory`, and the whole decided.
pub fn evaluate(
    protocol: &Protocol,
    rules: &TaskRules,
    ws: &Workspace,
    now: DateTime<Utc>,
    memory: Memory<'_>,
    waive: &mut dyn FnMut(&mut Evaluation),
) -> Evaluated {
    let options = Options {
        final_: true,
        now: Some(now),
        ..Options::default()
    };
    let (mut eval, runs) = engine::evaluate_workspace(protocol, rules, ws, &options);
    waive(&mut eval);
    let verdicts = crate::task_verdict::judge(
        protocol,
        rules,
        ws,
        &eval.results,
        &runs,
        memory.store,
        memory.everyone,
    );
    let decision = crate::decision::workspace(protocol, ws, &eval, verdicts);
    Evaluated {
        eval,
        runs,
        decision,
    }
}

/// Judges the workspace `req.dir` by the protocol `load` gives, loaded and prepared while the
/// workspace is opened; `None` for a protocol that turns out to judge no task records.
pub(super) fn judge(
    req: &Request<'_>,
    load: impl FnOnce() -> anyhow::Result<Loaded> + Send,
) -> Result<(Loaded, Option<WorkspaceJudgment>), JudgeError> {
    let found = opened(req).and_then(|here| {
        let state = crate::state::locate(&here, req.state_dir)?;
        Ok((opened_in(req, &here, state)?, here))
    });
    let ((state, spec), here) = match found {
        Ok(found) => found,
        // The protocol's error first, as when it is loaded first.
        Err(e) => {
            load().map_err(JudgeError::Load)?;
            return Err(e);
        }
    };
    let store = Store::open(&crate::state::attempts::dir_for(&state));
    let load = Mutex::new(Some(load));
    let load_prepared = || {
        let load = load.lock().ok().and_then(|mut l| l.take());
        let Some(load) = load else {
            return Err(JudgeError::LoaderDied {
                dir: req.dir.to_path_buf(),
            });
        };
        let (protocol, waivers) = load().map_err(JudgeError::Load)?;
        let everyone = prepared(&protocol, &store);
        Ok((protocol, waivers, everyone))
    };
    let (ws, loaded) = open_beside(req, &here, &spec, &state, load_prepared);
    // No thread for it: here, then.
    let (protocol, waivers, everyone) = loaded.unwrap_or_else(load_prepared)?;
    let Subject::Workspace(rules) = &protocol.subject else {
        return Ok(((protocol, waivers), None));
    };
    let memory = Memory {
        store: &store,
        everyone,
    };
    let opened = (ws?, state);
    let j = judged(
        req,
        &protocol,
        rules,
        waivers.as_ref(),
        opened,
        memory,
        None,
    )?;
    Ok(((protocol, waivers), Some(j)))
}

/// The workspace judged once at an agent's stop point (`referee hook`): like [`super::judge`]
/// for a protocol of task records, plus the record `implicit` makes from the workspace as
/// opened, judged as if read from `.tasks/` but kept in memory, never written into the
/// workspace. The state directory is created and, for a folder that is no git work tree, the
/// start snapshot taken there at the first call (the baseline is pinned there then, reused
/// after); the caller writes what it keeps ([`super::write`]).
pub fn attempt(
    req: &Request<'_>,
    protocol: &Protocol,
    implicit: &Implicit<'_>,
) -> Result<WorkspaceJudgment, JudgeError> {
    let Subject::Workspace(rules) = &protocol.subject else {
        return Err(JudgeError::NoTasks {
            id: protocol.id.clone(),
            dir: req.dir.to_path_buf(),
        });
    };
    // Opened once: the state directory named from it, and the snapshot taken of its path.
    let here = opened(req)?;
    let state = crate::state::locate(&here, req.state_dir)?;
    crate::state::ensure(&state)?;
    let plain = req.baseline.is_none() && req.baseline_dir.is_none();
    // A plain folder (or a repository with no commit yet): its start snapshot, taken at the
    // first call. Whether it is one is read from the directory opened (the path may name
    // another by now: a repository swapped away for a moment has no commit there).
    if plain && crate::workspace::needs_snapshot(&here.at()) {
        crate::workspace::snapshot::create(here.canon(), &state, req.max_read_bytes).map_err(
            |source| JudgeError::Snapshot {
                path: state.clone(),
                source,
            },
        )?;
    }
    let (state, spec) = opened_in(req, &here, state)?;
    let store = Store::open(&crate::state::attempts::dir_for(&state));
    let (ws, everyone) = open_beside(req, &here, &spec, &state, || prepared(protocol, &store));
    let memory = Memory {
        store: &store,
        everyone: everyone.flatten(),
    };
    let opened = (ws?, state);
    judged(req, protocol, rules, None, opened, memory, Some(implicit))
}

/// The workspace opened in `state`, judged: `implicit`'s record added, [`evaluate`]d with the
/// waivers applied, and warned of when it holds no record (and no implicit attempt is made).
fn judged(
    req: &Request<'_>,
    protocol: &Protocol,
    rules: &TaskRules,
    waivers: Option<&Waivers>,
    (mut ws, state): (Workspace, PathBuf),
    memory: Memory<'_>,
    implicit: Option<&Implicit<'_>>,
) -> Result<WorkspaceJudgment, JudgeError> {
    if let Some((rel, bytes)) = implicit.and_then(|make| make(&ws)) {
        ws.add_record(&rel, bytes);
    }
    let now = Utc::now();
    let mut waived = None;
    let waive = &mut |eval: &mut Evaluation| waived = apply_waivers(waivers, eval, now);
    let e = evaluate(protocol, rules, &ws, now, memory, waive);
    // Said to a `verify` or `watch` user; a hook's look (a session's start, a stop that
    // changed nothing) has no record to expect.
    if e.runs.is_empty() && implicit.is_none() {
        tracing::warn!(
            "no task records in `{}`: nothing to judge",
            req.dir.join(crate::workspace::TASKS_DIR).display()
        );
    }
    Ok(WorkspaceJudgment {
        ctx: context(ws.root(), now, waived),
        ws,
        eval: e.eval,
        runs: e.runs,
        decision: e.decision,
        state,
    })
}

/// The state directory `state` of a judgment of the workspace `here`, and the baseline to open
/// it against; the state directory created when it exists or is to be written, and a live
/// referee's workspace refused for `--write`.
fn opened_in(
    req: &Request<'_>,
    here: &Here,
    state: PathBuf,
) -> Result<(PathBuf, BaselineSpec), JudgeError> {
    // The kept attempts (the loop guards' memory), the start snapshot and, with `--write`, the
    // verdicts and STOP that count are the state directory's.
    let spec = match (req.baseline, req.baseline_dir) {
        (Some(rev), _) => BaselineSpec::Rev(rev.to_string()),
        (None, Some(dir)) => BaselineSpec::Dir(dir.to_path_buf()),
        (None, None) if !here.at().join(".git").exists() => BaselineSpec::Snapshot(state.clone()),
        (None, None) => BaselineSpec::Auto,
    };
    if crate::state::exists(&state) || req.write {
        crate::state::ensure(&state)?;
    }
    if req.write {
        refuse_live(req.dir, here, &state)?;
    }
    Ok((state, spec))
}

/// The workspace opened (records, listing, pin, stat cache) while `beside` runs on a thread of
/// its own; `None` for `beside` when no thread could run it.
fn open_beside<T: Send>(
    req: &Request<'_>,
    here: &Here,
    spec: &BaselineSpec,
    state: &Path,
    beside: impl FnOnce() -> T + Send,
) -> (
    Result<Workspace, crate::workspace::WorkspaceError>,
    Option<T>,
) {
    std::thread::scope(|s| {
        let reading = std::thread::Builder::new()
            .name("referee-prepare".into())
            .spawn_scoped(s, || {
                let _span = tracing::debug_span!("prepare").entered();
                beside()
            })
            .ok();
        let cache = stat_cache_file(here, state);
        let ws = Workspace::open_in(req.dir, spec, state, cache.as_deref(), req.max_read_bytes);
        (ws, reading.and_then(|r| r.join().ok()))
    })
}

/// Where a one-shot judgment keeps the work tree's stat cache: in the state directory when
/// there is one (shared with a live referee), else in a directory of its own under the
/// referee's default state base, `statcache/<name>/` (made 0700 and vetted as a state
/// directory is: only this user can write the cache a judgment believes). The state directory
/// itself is not made for it: its existence says a referee has run here (a pinned baseline,
/// kept attempts). `None`: no cache kept (no home, or a directory that fails the vetting).
fn stat_cache_file(here: &Here, state: &Path) -> Option<PathBuf> {
    if state.is_dir() {
        return Some(state.join(crate::workspace::STAT_CACHE));
    }
    let own = crate::state::default_base()
        .ok()?
        .join(STAT_CACHE_DIR)
        .join(crate::state::name(here));
    crate::state::ensure(&own).ok()?;
    Some(own.join(crate::workspace::STAT_CACHE))
}

/// The folder of the default state base that holds the stat caches of workspaces judged
/// with no state directory.
const STAT_CACHE_DIR: &str = "statcache";

/// What a judgment of task records needs ready: every other task's kept attempts (when the
/// protocol has loop guards), and the task checks' patterns and globs compiled.
fn prepared(protocol: &Protocol, store: &Store) -> Option<Everyone> {
    let everyone = match &protocol.subject {
        Subject::Workspace(rules) => rules.guards.as_ref().map(|_| store.everyone()),
        Subject::Build(_) => None,
    };
    protocol.prepare();
    everyone
}
