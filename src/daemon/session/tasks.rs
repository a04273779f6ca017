//! How a session judges a protocol of task records (code-change), as opposed to a
//! build directory's passes: on a settled change it brings its work tree up to date from the
//! file events and hands the workspace to [`judge::evaluate`], the one judgment of task records
//! that `verify` and the hooks run too; it writes each `(task, attempt)`'s verdict files once
//! (keeping the attempt, so the loop guards hold across restarts), and takes the STOP text from
//! the decision. The STOP file itself stays the session's
//! ([`crate::state::stop::StopFile`]): atomic, tamper-restored, adopted at start.
//!
//! What counts (verdicts, kept attempts, the start snapshot) is written into the state directory;
//! `WORKSPACE/.referee/` gets copies of the verdicts. It never touches the git index
//! (the workspace's git calls run with `GIT_OPTIONAL_LOCKS=0`).

use std::collections::{BTreeMap, BTreeSet};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use chrono::Utc;

use crate::decision::Decision;
use crate::engine::{Evaluation, TaskRun};
use crate::judge;
use crate::outputs::code_change;
use crate::protocol::Subject;
use crate::state::attempts::{self, Store};
use crate::task_verdict::TaskVerdict;
use crate::workspace::baseline::Baseline;
use crate::workspace::tree::{StatCache, WorkTree};
use crate::workspace::{self, BaselineSpec, Pinned, Workspace, OUTPUT_DIR};

use super::super::event::{Event, Level};
use super::super::{Config, DaemonError};
use super::{panic_message, Part, Session};

/// How long a directory events named is read again at every judgment.
const NEW_DIR_WINDOW: std::time::Duration = std::time::Duration::from_secs(2);

/// How often the stat cache is kept in the state directory while watching.
const CACHE_SAVE_EVERY: std::time::Duration = std::time::Duration::from_secs(30);

/// A session's state for a protocol with `[tasks]`.
#[derive(Debug)]
pub(super) struct Tasks {
    /// The baseline pinned at start (with what was accepted since), or why there is none.
    base: Pinned,
    /// What it was pinned from, to take it again when `referee accept` moves it.
    spec: BaselineSpec,
    /// The generation of the accepts the baseline holds ([`crate::workspace::accepted`]).
    accepted: u64,
    /// The referee's own stat cache of the work tree (kept in the state directory).
    cache: StatCache,
    /// The work tree as last read, kept up to date path by path from file events, so a
    /// judgment costs what changed, not the whole tree; `None` until the first full read.
    tree: Option<WorkTree>,
    /// What changed since the tree was last brought up to date (relative paths as events name
    /// them); `None`: read it all again (a start, a lost event, a timer).
    dirty: Option<BTreeSet<String>>,
    /// When the stat cache was last kept in the state directory, and its read count then.
    cache_saved: Option<(Instant, u64)>,
    /// The last `HEAD` logged as moved away from the pinned commit.
    head_seen: Option<String>,
    /// Directories events named lately, read again at every judgment for
    /// [`NEW_DIR_WINDOW`] (files made in a new directory before its watch existed).
    new_dirs: Vec<(String, Instant)>,
    /// `WORKSPACE/.referee/`: the copies of the session's files.
    pub out: crate::outputs::OutDir,
    /// What `.referee` was when the session last made or checked it (a real directory).
    pub out_id: crate::state::dir_id::DirId,
    /// The state directory: the verdicts and kept attempts that count.
    pub state: PathBuf,
    /// The verdict files last written, by name: their copies in `.referee/` are restored from
    /// these when someone else deletes or edits them.
    pub copies: BTreeMap<String, String>,
    /// The copies must be checked (the folder came back).
    pub copies_dirty: bool,
    /// The STOP text as of the last judgment (`None`: no veto stands, nothing escalated).
    pub stop: Option<String>,
    /// The last judgment says exit 1 (a REJECT or escalation, or a BLOCKING failure).
    pub violation: bool,
    /// The protected paths the last judgment's veto named, each with what happened to it.
    veto_paths: Vec<String>,
    /// The kept attempts ([`attempts::dir_for`] the workspace).
    store: Store,
    /// Attempts judged by this process (besides those kept in the store), and the verdict file
    /// last written for a record that is no attempt to keep (too malformed to have one, or a
    /// replay of an attempt already judged).
    judged: BTreeSet<(String, u64)>,
    unkept: BTreeMap<String, String>,
    /// The records judged by this process that are no attempt (a replay, a task never opened,
    /// one too malformed to have an attempt): the task (the file's stem when malformed) and
    /// the record's hash (`None` when malformed). Like a judged attempt, such a record is
    /// judged again with every change, not only at its own event.
    unattempted: BTreeSet<(String, Option<String>)>,
    /// Attempts whose `verdict` event is in the log (this run's, and a resumed run's).
    pub logged: BTreeSet<(String, u64)>,
}

/// What one judgment of the workspace found.
pub(super) struct Judged {
    pub ws: Workspace,
    pub eval: Evaluation,
    pub runs: Vec<TaskRun>,
    pub decision: Decision,
}

/// Whether a changed path (relative to the workspace) can change a judgment. The referee's own
/// folder never does. Under `.git/`, what runs code or decides how files are read does (the
/// place `.git` itself, `config`, `config.worktree`, `hooks/`, `info/`, a linked work tree's or a
/// submodule's config, hooks and attributes: what the executable surface protects), and so do
/// `HEAD` and its refs (a moved `HEAD` is logged, `head_moved`); the rest (objects, logs, the
/// index) is what git rewrites on every command.
pub(super) fn relevant(rel: &str) -> bool {
    let top = rel.split('/').next().unwrap_or(rel);
    if top == ".git" {
        let Some(inside) = rel.strip_prefix(".git/") else {
            return rel == ".git";
        };
        let nested = |p: &str| {
            p.ends_with("/config")
                || p.ends_with("/config.worktree")
                || p.contains("/hooks/")
                || p.ends_with("/hooks")
                || p.contains("/info/")
        };
        return matches!(
            inside,
            "HEAD" | "packed-refs" | "config" | "config.worktree" | "hooks" | "info"
        ) || inside.starts_with("refs/")
            || inside.starts_with("hooks/")
            || inside.starts_with("info/")
            || ((inside.starts_with("worktrees/") || inside.starts_with("modules/"))
                && nested(inside));
    }
    if top != OUTPUT_DIR {
        return true;
    }
    // In the referee's own folder, its files (the copies, their temp files, the folder's
    // `.gitignore`) and the folder itself never change a judgment; anything else put there
    // does, as anywhere in the workspace (a protected name planted where the referee writes).
    rel.strip_prefix(OUTPUT_DIR)
        .and_then(|r| r.strip_prefix('/'))
        .is_some_and(|name| name != ".gitignore" && !crate::checks::is_own_file(name))
}

/// The STOP file's path relative to the workspace, as events name it.
pub(super) fn stop_rel() -> String {
    format!("{OUTPUT_DIR}/{}", crate::outputs::STOP_FILE)
}

impl Tasks {
    /// Prepares a workspace: `.referee/` (refused when a symlink or a file), the start snapshot
    /// when there is no other baseline (a restart keeps the first), and one opening of the
    /// workspace, so a bad `--baseline` is an error before anything runs.
    pub fn open(canon: &Path, state: &Path, cfg: &Config) -> Result<Tasks, DaemonError> {
        let out_err = |source| DaemonError::OutputDir {
            path: canon.join(OUTPUT_DIR).to_path_buf(),
            source,
        };
        let out = code_change::ensure_dir(canon).map_err(out_err)?;
        let out_id = std::fs::symlink_metadata(out.path())
            .map(|m| crate::state::dir_id::DirId::from_meta(&m))
            .map_err(out_err)?;
        let cap = cfg.limits.max_read_bytes;
        let spec = if cfg.baseline == BaselineSpec::Auto && workspace::needs_snapshot(canon) {
            // The start snapshot is kept in the state directory, out of the worker's reach.
            workspace::snapshot::create(canon, state, cap).map_err(|source| {
                DaemonError::OutputDir {
                    path: state.to_path_buf(),
                    source,
                }
            })?;
            BaselineSpec::Snapshot(state.to_path_buf())
        } else {
            cfg.baseline.clone()
        };
        // The baseline is pinned here, once, and kept in the state directory: what the worker
        // does to `.git/` afterwards (a commit, a reset, a replace ref) changes nothing, and a
        // restart measures against the same commit.
        // A restart measures against the baseline pinned first: another one is refused, unless
        // a human starts anew (`--fresh`), which also sets aside what was accepted on the old.
        if let Some(why) = workspace::baseline::other_than_pinned(canon, &spec, state) {
            if !cfg.fresh {
                return Err(workspace::WorkspaceError::Pin(format!(
                    "the state directory `{}` holds another baseline: {why}. A restart cannot \
                     measure against another baseline (it would lift the veto of any change \
                     it holds): start the referee as before, or, to pin anew (a human's \
                     decision), with `--fresh`",
                    state.display()
                ))
                .into());
            }
            let aside = format!(
                "accepted-{}.json",
                chrono::Utc::now().format("%Y%m%dT%H%M%S%.3fZ")
            );
            let from = state.join(crate::workspace::accepted::FILE);
            if from.exists() {
                std::fs::rename(&from, state.join(aside)).map_err(|source| {
                    DaemonError::OutputDir {
                        path: from.to_path_buf(),
                        source,
                    }
                })?;
            }
        }
        let accepted = crate::workspace::accepted::generation(state);
        let base = Baseline::pin(canon, &spec, Some(state), cap)?.map(Arc::new);
        Ok(Tasks {
            base,
            spec,
            accepted,
            cache: StatCache::load(&state.join(workspace::STAT_CACHE)),
            tree: None,
            dirty: None,
            cache_saved: None,
            head_seen: None,
            new_dirs: Vec::new(),
            out,
            out_id,
            state: state.to_path_buf(),
            copies: super::copies::published(state, cap),
            copies_dirty: false,
            stop: None,
            violation: false,
            veto_paths: Vec::new(),
            store: Store::open(&attempts::dir_for(state)),
            judged: BTreeSet::new(),
            unkept: BTreeMap::new(),
            unattempted: BTreeSet::new(),
            logged: BTreeSet::new(),
        })
    }
}

impl Tasks {
    /// Keeps the stat cache in the state directory (at the end: a restart reads each file
    /// once at most).
    pub(super) fn keep_cache(&mut self) {
        let reads = self.cache.reads();
        if self.cache_saved.is_none_or(|(_, n)| n != reads) {
            let _ = self.cache.save(&self.state.join(workspace::STAT_CACHE));
            self.cache_saved = Some((Instant::now(), reads));
        }
    }
}

impl Session {
    /// Notes what an event batch touched, for the next reading of the work tree (`None`: all
    /// of it).
    pub(super) fn note_touched(&mut self, touched: Option<&BTreeSet<String>>) {
        if let Part::Workspace(tasks) = &mut self.part {
            match (touched, &mut tasks.dirty) {
                (Some(t), Some(d)) => d.extend(t.iter().cloned()),
                (Some(_), None) => {}
                (None, d) => *d = None,
            }
        }
    }

    /// Judges again, at a heartbeat tick, when `referee accept` moved the baseline since the
    /// last judgment: an accept takes effect (a veto it lifts, a change it makes no longer
    /// count) without waiting for the next file event.
    pub(super) fn check_accepted(&mut self) {
        let Part::Workspace(tasks) = &self.part else {
            return;
        };
        if crate::workspace::accepted::generation(&tasks.state) != tasks.accepted {
            self.judge(Some(&BTreeSet::new()));
        }
    }

    /// Takes the baseline again when `referee accept` moved it since it was last taken (one
    /// small read of the state directory per judgment), and logs each accept made since.
    fn take_accepted(&mut self) {
        let cap = self.cfg.limits.max_read_bytes;
        let Part::Workspace(tasks) = &mut self.part else {
            return;
        };
        let now = crate::workspace::accepted::generation(&tasks.state);
        if now == tasks.accepted {
            return;
        }
        let before = tasks.accepted;
        match Baseline::pin(&self.canon, &tasks.spec, Some(&tasks.state), cap) {
            Ok(base) => {
                tasks.base = base.map(Arc::new);
                tasks.accepted = now;
            }
            Err(e) => {
                let why = crate::error::chain(&e);
                self.fault(
                    "accept",
                    format!("cannot take the accepted baseline: {why}"),
                );
                return;
            }
        }
        let log = crate::workspace::accepted::load(&tasks.state)
            .ok()
            .flatten()
            .map(|a| a.log)
            .unwrap_or_default();
        for e in log.into_iter().filter(|e| e.generation > before) {
            let what = match (&e.task, e.attempt, &e.commit) {
                _ if e.start => "the start as it is now (a human's word, `accept --start`)".into(),
                (Some(t), Some(a), _) => format!("task {t} attempt {a}"),
                (Some(t), None, _) => format!("task {t}"),
                (None, _, Some(c)) => format!(
                    "commit {}: the baseline is re-pinned there",
                    c.get(..12).unwrap_or(c)
                ),
                _ => "the orchestrator's own work".to_string(),
            };
            let protected = if e.protected.is_empty() {
                String::new()
            } else {
                format!(
                    "; protected path(s) accepted with --protected-too: {}",
                    e.protected.join(", ")
                )
            };
            let unjudged = if e.unjudged.is_empty() {
                String::new()
            } else {
                format!("; not judged as any task's work: {}", e.unjudged.join(", "))
            };
            // git's own `*.sample` hooks are counted, not named.
            let samples = e.paths.iter().filter(|p| p.ends_with(".sample")).count();
            let named: Vec<&str> = e
                .paths
                .iter()
                .filter(|p| !p.ends_with(".sample"))
                .map(String::as_str)
                .collect();
            let samples = match samples {
                0 => String::new(),
                n => format!(", and {n} of git's own `*.sample` hooks"),
            };
            let text = format!(
                "accepted {what}: {} path(s) are measured against what was accepted from now on ({}{samples}){protected}{unjudged}",
                e.paths.len(),
                named.join(", ")
            );
            self.emit(
                Event::Accepted {
                    generation: e.generation,
                    task: e.task,
                    attempt: e.attempt,
                    paths: e.paths,
                    commit: e.commit,
                    protected: e.protected,
                    unjudged: e.unjudged,
                    text,
                }
                .into(),
            );
        }
        self.clear_fault("accept");
    }

    /// Opens the workspace against its pinned baseline. `None` on the referee's own fault
    /// (recorded).
    fn open_workspace(&mut self) -> Option<Workspace> {
        self.take_accepted();
        let cap = self.cfg.limits.max_read_bytes;
        let Part::Workspace(tasks) = &mut self.part else {
            return None;
        };
        // Only the paths events named are read again; a name the event source escaped (not
        // plain UTF-8) is looked at through a full read.
        let mut touched: Option<Vec<String>> =
            match (&tasks.tree, tasks.dirty.replace(BTreeSet::new())) {
                (Some(_), Some(paths)) if !paths.iter().any(|p| p.contains('\\')) => {
                    Some(paths.into_iter().collect())
                }
                _ => None,
            };
        // A directory made a moment ago may have had files before the watch on it existed
        // (their events are lost): it is read again at every judgment for a while.
        let now = self.cfg.clock.now();
        tasks
            .new_dirs
            .retain(|(_, at)| now.duration_since(*at) < NEW_DIR_WINDOW);
        if let Some(t) = touched.as_mut() {
            t.extend(tasks.new_dirs.iter().map(|(p, _)| p.clone()));
        }
        let opened = Workspace::judge_live(
            &self.canon,
            &tasks.base,
            &mut tasks.tree,
            touched.as_deref(),
            &mut tasks.cache,
            cap,
        )
        .map(|ws| ws.with_state(&tasks.state));
        if let (Some(t), Some(tree)) = (&touched, &tasks.tree) {
            for p in t {
                let is_dir = tree
                    .entries
                    .get(p)
                    .is_some_and(|e| e.kind == workspace::tree::Kind::Dir);
                if is_dir && !tasks.new_dirs.iter().any(|(q, _)| q == p) {
                    tasks.new_dirs.push((p.clone(), now));
                }
            }
        }
        // Records first, then the tree, holds for a full read; an incremental one is only as
        // new as the events handled so far. A record written after them (its own event still
        // on its way) may follow files whose events are on their way too: a new attempt is
        // judged at its record's own event, never before (nothing written before the
        // record escapes the judgment of it).
        let opened = match (opened, &touched) {
            (Ok(mut ws), Some(fresh)) => {
                let required: &[String] = match &self.protocol.subject {
                    Subject::Workspace(rules) => &rules.records.required,
                    Subject::Build(_) => &[],
                };
                for r in ws.records(required) {
                    if fresh.contains(&r.rel) {
                        continue;
                    }
                    let judged = match r.parsed.as_ref() {
                        Ok(t) => {
                            tasks.judged.contains(&(t.task_id.clone(), t.attempt))
                                || tasks.store.is_kept(&t.task_id, t.attempt)
                                || tasks.unattempted.contains(&(
                                    t.task_id.clone(),
                                    Some(attempts::record_hash(&t.raw)),
                                ))
                        }
                        Err(_) => tasks.unattempted.contains(&(r.stem.clone(), None)),
                    };
                    if !judged {
                        ws.defer_record(&r.rel);
                    }
                }
                Ok(ws)
            }
            (other, _) => other,
        };
        match opened {
            Ok(ws) => {
                // The stat cache is kept now and then, so a restart after a checkout that
                // changed every mtime reads each file once, not at every judgment.
                let reads = tasks.cache.reads();
                let due = tasks
                    .cache_saved
                    .is_none_or(|(at, n)| n != reads && at.elapsed() >= CACHE_SAVE_EVERY);
                if due {
                    let _ = tasks.cache.save(&tasks.state.join(workspace::STAT_CACHE));
                    tasks.cache_saved = Some((Instant::now(), reads));
                }
                let moved = match &tasks.base {
                    Ok(b) => b
                        .head_moved()
                        .filter(|h| tasks.head_seen.as_ref() != Some(h)),
                    Err(_) => None,
                };
                let pinned = tasks.base.as_ref().ok().and_then(|b| b.commit);
                if let (Some(head), Some(pinned)) = (moved, pinned) {
                    tasks.head_seen = Some(head.clone());
                    let text = format!(
                        "HEAD moved to {head}: the baseline stays the commit pinned at start, {pinned}"
                    );
                    self.emit(
                        Event::HeadMoved {
                            pinned: pinned.to_string(),
                            head,
                            text,
                        }
                        .into(),
                    );
                }
                self.clear_fault("scan");
                Some(ws)
            }
            Err(e) => {
                if let Part::Workspace(t) = &mut self.part {
                    // What changed is not known to the tree: read it all next time.
                    t.dirty = None;
                }
                self.fault("scan", format!("cannot open the workspace: {e}"));
                None
            }
        }
    }

    /// Judges the workspace as it stands. `None` on the referee's own fault (recorded).
    pub(super) fn evaluate_tasks(&mut self) -> Option<Judged> {
        let ws = self.open_workspace()?;
        self.evaluate_tasks_in(ws)
    }

    /// [`Self::evaluate_tasks`] on a workspace already opened.
    fn evaluate_tasks_in(&mut self, ws: Workspace) -> Option<Judged> {
        let protocol = Arc::clone(&self.protocol);
        let Subject::Workspace(rules) = &protocol.subject else {
            return None;
        };
        self.evaluated = true;
        let waivers = &mut self.waivers;
        let result = catch_unwind(AssertUnwindSafe(|| {
            let state = ws.state().unwrap_or(ws.root()).to_path_buf();
            let store = Store::open(&crate::state::attempts::dir_for(&state));
            let memory = judge::Memory {
                store: &store,
                everyone: None,
            };
            let waive = &mut |eval: &mut Evaluation| {
                if let Some(w) = waivers.as_mut() {
                    w.apply(eval);
                }
            };
            judge::evaluate(&protocol, rules, &ws, Utc::now(), memory, waive)
        }));
        match result {
            Ok(e) => {
                self.clear_fault("evaluate");
                Some(Judged {
                    ws,
                    eval: e.eval,
                    runs: e.runs,
                    decision: e.decision,
                })
            }
            Err(p) => {
                self.fault(
                    "evaluate",
                    format!("the evaluation panicked: {}", panic_message(p.as_ref())),
                );
                None
            }
        }
    }

    /// Whether a record in the workspace asks for a judgment now.
    fn anything_to_judge(&self) -> bool {
        let Subject::Workspace(t) = &self.protocol.subject else {
            return false;
        };
        workspace::any_judged(
            &self.canon,
            self.cfg.limits.max_read_bytes,
            &t.records.required,
            &t.records.judge_status,
        )
    }

    /// Judges the workspace, unless a task record is still being written (then again once it
    /// has settled); writes each new attempt's verdict and sets the STOP text.
    pub(super) fn judge_tasks(&mut self) {
        let now = self.cfg.clock.now();
        self.settle.prune(now);
        // A record caught mid-write is judged once it has settled, and nothing is published
        // before: a half-written record must not lift or raise a STOP. A record removed (the
        // orchestrator clearing a judged task) is no record being written: it holds nothing
        // back, or every next task's verdict would wait out the settle window; if it is
        // written again (an editor's save), that write holds it.
        if let Some(at) = self.record_written_until(now) {
            self.recheck(at);
            return;
        }
        if !self.anything_to_judge() {
            // No record asks for a judgment, so no attempt holds the STOP; but the veto is a
            // property of the workspace: whatever the records say (none, deleted, a
            // status set to anything), it stands while a protected path differs from the
            // baseline, and only the protected paths' changes are looked at for it.
            let Some(ws) = self.open_workspace() else {
                return;
            };
            let d =
                crate::decision::workspace(&self.protocol, &ws, &Evaluation::default(), Vec::new());
            self.decided(&ws, &d);
            self.flush_outputs();
            return;
        }
        let Some(ws) = tracing::debug_span!("open_workspace").in_scope(|| self.open_workspace())
        else {
            return;
        };
        // The veto first, on a path of its own: it looks at the protected paths alone, so a
        // protected edit raises the STOP at once, before the tasks' judgment (which reads,
        // diffs and parses every changed file: long for a large change) has begun. Only a
        // veto newly raised or changed is published early; everything else (a veto lifted, an
        // escalation) waits for the whole decision, so no STOP is ever lifted too soon.
        let first = tracing::debug_span!("veto").in_scope(|| {
            crate::decision::workspace(&self.protocol, &ws, &Evaluation::default(), Vec::new())
        });
        let raised = match &self.part {
            Part::Workspace(t) => veto_lines(&first).iter().any(|p| !t.veto_paths.contains(p)),
            Part::Build => false,
        };
        if raised {
            self.decided(&ws, &first);
            self.flush_outputs();
        }
        let Some(j) = self.evaluate_tasks_in(ws) else {
            return;
        };
        // A record whose save began before the reads ended, its events still on their way,
        // was read half-written: held like one whose events came first.
        self.catch_up();
        if let Some(at) = self.record_written_until(self.cfg.clock.now()) {
            self.recheck(at);
            return;
        }
        self.decided(&j.ws, &j.decision);
        // The STOP (and the heartbeat saying so) first, then the verdicts: whoever reads a
        // new verdict finds the STOP already in line with it.
        tracing::debug_span!("flush_outputs").in_scope(|| self.flush_outputs());
        tracing::debug_span!("write_verdicts")
            .in_scope(|| self.write_verdicts(&j.decision.verdicts));
    }

    /// Until when a task record is being written, the latest of them; `None` when none is.
    fn record_written_until(&self, now: Instant) -> Option<Instant> {
        self.settle
            .moving()
            .filter(|p| workspace::is_record(p))
            .filter_map(|p| self.settle.being_written_until(p, now))
            .max()
    }

    /// Takes the STOP text and the exit code from a decision (the STOP file follows at the
    /// next flush).
    pub(super) fn decided(&mut self, ws: &Workspace, d: &Decision) {
        let stop = d
            .stops()
            .then(|| code_change::stop_md(&self.protocol, ws, d));
        let paths = veto_lines(d);
        let mut changed = None;
        if let Part::Workspace(tasks) = &mut self.part {
            tasks.violation = d.violation();
            tasks.stop = stop;
            if tasks.veto_paths != paths {
                let lifted: Vec<String> = tasks
                    .veto_paths
                    .iter()
                    .filter(|p| !paths.contains(p))
                    .cloned()
                    .collect();
                tasks.veto_paths = paths.clone();
                changed = Some(lifted);
            }
        }
        // The event log names the paths of every veto raised, changed and lifted.
        if let Some(lifted) = changed {
            let text = if paths.is_empty() {
                format!("veto lifted: {}", lifted.join("; "))
            } else {
                format!("veto: {}", paths.join("; "))
            };
            self.emit(
                Event::Veto {
                    paths,
                    lifted,
                    text,
                }
                .into(),
            );
        }
    }

    /// Writes the verdict files of every attempt not judged before (and a malformed record's
    /// when it changed). Each attempt's `verdict` event is logged first, once: a `kill -9`
    /// between the two leaves the attempt unkept, so the restarted referee judges it again and
    /// writes its files, but does not log it twice (the resumed log says it is there).
    pub(super) fn write_verdicts(&mut self, verdicts: &[TaskVerdict]) {
        let Part::Workspace(tasks) = &self.part else {
            return;
        };
        let out = tasks.out.clone();
        let store = tasks.store.clone();
        let state = tasks.state.clone();
        // No copy while `.referee` is not the folder the session made: never written through.
        let copy = self.folder_lost.is_none().then_some(&out);
        // Each verdict to write, and whether it is a new attempt to keep. An attempt already
        // judged is written again (not kept again) when the task's last published verdict is
        // a malformed record's: a record broken mid-write and put back whole gets its
        // attempt's judgment back.
        // An attempt judged again to another verdict than the one published, or to the same
        // verdict over other files (its scope changed: another task's unclaimed edit joined
        // it, a claim landed, a file of it was written again), is published again, as a
        // one-shot `verify` would judge it now; it is not kept again. Otherwise `status --task`
        // would find the published verdict stale for good. An escalation holds
        // (`hold_escalation`): files put back under it publish nothing new.
        // `Some(verdict changed)` when the published verdict of the same attempt is to be
        // written again (logged as an event only when the verdict itself changed).
        let republish = |v: &TaskVerdict| -> Option<bool> {
            let old = tasks
                .copies
                .get(&code_change::verdict_file(&v.task_id, "json"))
                .and_then(|old| serde_json::from_str::<serde_json::Value>(old).ok())?;
            if old["attempt"] != serde_json::json!(v.attempt) {
                return None;
            }
            let files = serde_json::to_value(&v.judged_files).unwrap_or_default();
            let escalated = v.outcome == crate::protocol::GradeOutcome::Escalate;
            match (old["verdict"] != v.verdict, old["judged_files"] != files) {
                (true, _) => Some(true),
                (false, true) if !escalated => Some(false),
                _ => None,
            }
        };
        let fresh: Vec<(&TaskVerdict, bool, bool)> =
            verdicts
                .iter()
                .filter_map(|v| match v.attempt.filter(|_| !v.replay) {
                    Some(a) => {
                        let new = !tasks.judged.contains(&(v.task_id.clone(), a))
                            && !store.is_kept(&v.task_id, a);
                        let again = if new { None } else { republish(v) };
                        (new || again.is_some() || tasks.unkept.contains_key(&v.task_id))
                            .then_some((v, new, again == Some(true)))
                    }
                    None => (tasks.unkept.get(&v.task_id) != Some(&code_change::verdict_json(v)))
                        .then_some((v, false, false)),
                })
                .collect();
        for (v, keep, verdict_changed) in fresh {
            let logged = match (v.attempt.filter(|_| !v.replay), &mut self.part) {
                (Some(a), Part::Workspace(tasks)) => {
                    !tasks.logged.insert((v.task_id.clone(), a)) && !verdict_changed
                }
                _ => false,
            };
            if !logged {
                self.emit(verdict_event(v).into());
            }
            let area = format!("write {}", code_change::verdict_file(&v.task_id, "json"));
            // In the state directory first, then the copy in `.referee/` (what an orchestrator
            // or the worker waits on: before the fsyncs of the kept attempt); then the kept
            // attempt, the guards' memory, fsynced before it takes its name. A copy that cannot
            // be written (the worker took `.referee/` away) costs no memory: its error is
            // said after.
            let durability = crate::outputs::Durability::Background;
            let written = code_change::write_verdict(&state, &self.protocol, v, durability)
                .and_then(|()| {
                    let copied = copy.map_or(Ok(()), |dir| {
                        code_change::write_verdict(dir, &self.protocol, v, durability)
                    });
                    if let Some((kept, diff)) = v.kept().filter(|_| keep) {
                        store.keep(&kept, diff)?;
                    }
                    // Noted once per distinct record, however often it is written again.
                    if let Some((task, hash)) = v.rejected_replay() {
                        store.keep_replay(task, hash)?;
                    }
                    copied
                });
            match written {
                Ok(()) => {
                    self.clear_fault(&area);
                    if let Part::Workspace(tasks) = &mut self.part {
                        for ext in ["json", "md"] {
                            tasks.copies.insert(
                                code_change::verdict_file(&v.task_id, ext),
                                match ext {
                                    "json" => code_change::verdict_json(v),
                                    _ => code_change::verdict_md(&self.protocol, v),
                                },
                            );
                        }
                        match v.attempt.filter(|_| !v.replay) {
                            Some(a) => {
                                tasks.judged.insert((v.task_id.clone(), a));
                                tasks.unkept.remove(&v.task_id);
                            }
                            None => {
                                tasks
                                    .unkept
                                    .insert(v.task_id.clone(), code_change::verdict_json(v));
                                tasks
                                    .unattempted
                                    .insert((v.task_id.clone(), v.record_hash.clone()));
                            }
                        }
                    }
                }
                Err(e) => self.fault(
                    &area,
                    format!(
                        "cannot write the verdict of task `{}` into `{}`: {}",
                        v.task_id,
                        state.display(),
                        e.to_string().to_lowercase()
                    ),
                ),
            }
        }
    }

    /// The report of a task protocol, written at the end; `None` when it cannot be written.
    pub(super) fn write_tasks_report(&mut self, j: &Judged, ended: &str) -> Option<PathBuf> {
        let out = self.out.clone();
        let ctx = self.context(Some(Utc::now()), Some(ended.to_string()));
        let text =
            code_change::report_md(&self.protocol, &j.ws, &j.eval, &j.runs, &j.decision, &ctx);
        let name = crate::outputs::REPORT_FILE;
        // The state directory keeps one too; the copy only while `.referee` is the session's.
        let state = self.state.clone();
        let _ = crate::outputs::write_atomic(&state, name, &text);
        let out = if self.folder_lost.is_some() {
            crate::outputs::OutDir::at(state)
        } else {
            out
        };
        match crate::outputs::write_atomic(&out, name, &text) {
            Ok(w) => {
                if let Some(found) = w.replaced {
                    self.own_file_tampered(name, found);
                }
                Some(out.join(name))
            }
            Err(e) => {
                self.fault(
                    "write OBSERVER-REPORT.md",
                    format!("cannot write `{name}`: {}", e.to_string().to_lowercase()),
                );
                self.flush_outputs();
                None
            }
        }
    }
}

/// The `verdict` event of an attempt: `task t1 attempt 2: ESCALATE (identical_diff) — why`.
/// Each protected path a decision's veto names, with what happened to it (`src/o.py
/// (modified)`): what the event log names and what tells a veto raised from one standing.
fn veto_lines(d: &Decision) -> Vec<String> {
    d.veto
        .iter()
        .flat_map(|v| &v.paths)
        .map(|p| {
            format!(
                "{} ({})",
                crate::workspace::name::display(&p.path),
                p.happened.describe()
            )
        })
        .collect()
}

fn verdict_event(v: &TaskVerdict) -> Event {
    let attempt = v.attempt.map_or("?".to_string(), |a| a.to_string());
    let reasons = if v.reasons.is_empty() {
        String::new()
    } else {
        format!(" ({})", v.reasons.join(", "))
    };
    let why = v
        .escalation
        .as_deref()
        .map_or(String::new(), |e| format!(" — {e}"));
    Event::Verdict {
        task_id: v.task_id.clone(),
        attempt: v.attempt,
        verdict: v.verdict.clone(),
        reasons: v.reasons.clone(),
        level: Level::of(v.outcome),
        text: format!(
            "task {} attempt {attempt}: {}{reasons}{why}",
            v.task_id, v.verdict
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_files_and_what_git_rewrites_are_never_relevant() {
        assert!(!relevant(".referee/OBSERVER-HEARTBEAT.json"));
        assert!(!relevant(".referee/.OBSERVER-STOP.md.k3x9"));
        assert!(!relevant(".referee/.gitignore"));
        assert!(!relevant(".referee"));
        // Not the referee's: judged at once (a protected name planted in its folder).
        assert!(relevant(".referee/roles.py"));
        assert!(relevant(".referee/sub/OBSERVER-STOP.md"));
        for p in [
            ".git/index",
            ".git/objects/3f/ab",
            ".git/logs/HEAD",
            ".git/COMMIT_EDITMSG",
        ] {
            assert!(!relevant(p), "{p}");
        }
        assert!(relevant(".git/HEAD"), "a moved HEAD is logged");
        assert!(relevant(".git/refs/heads/main"));
        // What runs code or decides how files are read: a planted hook is judged at once.
        for p in [
            ".git",
            ".git/config",
            ".git/hooks/pre-commit",
            ".git/info/attributes",
            ".git/worktrees/w/config.worktree",
            ".git/modules/lib/hooks/post-checkout",
            ".git/modules/lib/config",
        ] {
            assert!(relevant(p), "{p}");
        }
        assert!(!relevant(".git/modules/lib/objects/3f/ab"));
        assert!(relevant(".tasks/t1.json"));
        assert!(relevant("src/.git-keep"));
        assert!(relevant("a/.referee/x"));
        assert_eq!(stop_rel(), ".referee/OBSERVER-STOP.md");
    }
}
