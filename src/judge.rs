//! Judging a directory once, as it stands: what `verify` prints, and what an agent hook or the
//! MCP server answers. The command line only parses flags and renders; the deciding is here.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context as _, Result};

use crate::artifacts::{Limits, Listing, Snapshot};
use crate::decision::Decision;
use crate::engine::{self, Evaluation, Options, TaskRun};
use crate::outputs::{self, Context};
use crate::protocol::{Protocol, Subject, TaskRules};
use crate::state::attempts::{Everyone, Store};
use crate::waivers::{InUse, Waivers};
use crate::workspace::{BaselineSpec, Workspace, OUTPUT_DIR};

/// What to judge and how: a build directory (D10) or a workspace (a protocol of task records).
#[derive(Debug, Clone)]
pub struct Request<'a> {
    /// The build directory or workspace.
    pub dir: &'a Path,
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
    /// Also write the outputs (`verify --write`); refused while a live referee owns `dir`.
    pub write: bool,
}

impl<'a> Request<'a> {
    /// Judging `dir` with the defaults of `verify`.
    pub fn new(dir: &'a Path) -> Self {
        Request {
            dir,
            max_read_bytes: crate::artifacts::DEFAULT_MAX_READ_BYTES,
            final_: false,
            state_dir: None,
            baseline: None,
            baseline_dir: None,
            write: false,
        }
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

/// Judges `req.dir` by `protocol` once, as it stands, with `waivers` applied; with
/// `req.write`, writes the outputs.
pub fn judge(
    req: &Request<'_>,
    protocol: &Protocol,
    waivers: Option<&Waivers>,
) -> Result<Judgment> {
    judge_listed(req, protocol, waivers, None)
}

/// [`judge`], with the build directory's walk started already (`listing`, see
/// [`Listing::start`]): `verify` lists the directory while the protocol loads. A protocol of
/// task records lets the listing go (its walk ends with the process).
pub fn judge_listed(
    req: &Request<'_>,
    protocol: &Protocol,
    waivers: Option<&Waivers>,
    listing: Option<Listing>,
) -> Result<Judgment> {
    if let Subject::Workspace(rules) = &protocol.subject {
        return Ok(Judgment::Workspace(Box::new(workspace(
            req, protocol, rules, waivers,
        )?)));
    }
    if req.baseline.is_some() || req.baseline_dir.is_some() {
        anyhow::bail!(
            "`--baseline` and `--baseline-dir` apply to a protocol of task records (e.g. `--protocol code-change`), not to `{}`",
            protocol.id
        );
    }
    Ok(Judgment::Build(Box::new(build(
        req, protocol, waivers, listing,
    )?)))
}

fn build(
    req: &Request<'_>,
    protocol: &Protocol,
    waivers: Option<&Waivers>,
    listing: Option<Listing>,
) -> Result<BuildJudgment> {
    if req.write {
        let state = state_of(req.dir, req.state_dir)?;
        refuse_live(req.dir, &state)?;
    }
    let snap = scan(req.dir, req.max_read_bytes, protocol, listing)?;
    let now = chrono::Utc::now();
    let options = Options {
        final_: req.final_,
        now: Some(now),
        seen: seen_record(req.dir, req.state_dir)?,
        ..Options::default()
    };
    let mut eval = engine::evaluate(protocol, &snap, &options);
    let waived = apply_waivers(waivers, &mut eval, now);
    if eval.passes.iter().all(|p| !p.ran) && snap.get(crate::artifacts::TRACKER_FILE).is_none() {
        tracing::warn!(
            "no pass has run and there is no {} in `{}`: is this the build directory?",
            crate::artifacts::TRACKER_FILE,
            req.dir.display()
        );
    }
    let ctx = context(snap.root(), now, waived);
    if req.write {
        for pass in eval.passes.iter().filter(|p| p.ran) {
            let text = outputs::markdown::pass_file(protocol, &eval, &pass.id, &ctx);
            write_own(req.dir, &outputs::pass_file(&pass.id), &text)?;
        }
        let report = outputs::markdown::report(protocol, &eval, &ctx);
        write_own(req.dir, outputs::REPORT_FILE, &report)?;
    }
    let decision = crate::decision::build(&eval);
    Ok(BuildJudgment {
        snap,
        eval,
        decision,
        ctx,
    })
}

fn workspace(
    req: &Request<'_>,
    protocol: &Protocol,
    rules: &TaskRules,
    waivers: Option<&Waivers>,
) -> Result<WorkspaceJudgment> {
    let (state, spec) = workspace_state(req)?;
    let store = Store::open(&crate::state::attempts::dir_for(&state));
    // While the workspace is listed, not after: the other tasks' kept attempts the loop
    // guards compare each task with are read, and the task checks' patterns and globs
    // compiled. Without a thread, each is done when first needed.
    let (ws, everyone) = open_beside(req, &spec, &state, || prepared(protocol, &store));
    let j = evaluated(
        req,
        protocol,
        rules,
        ws?,
        state,
        (&store, everyone.flatten()),
        waivers,
    )?;
    written(req, protocol, j)
}

/// A protocol and its waivers, as loaded for a command.
pub type Loaded = (Protocol, Option<Waivers>);

/// [`judge`] for a protocol of task records that `load` gives (a protocol known to be one
/// before it is read: an embedded one, see [`Protocol::embedded_judges_records`]), loaded on a
/// thread of its own while the workspace is opened, instead of before: the protocol's
/// parsing and validation then cost a one-shot judgment no wall time of its own. An error of
/// `load` is the answer, before any of the workspace's; a protocol that turns out not to judge
/// task records is judged as [`judge`] would.
pub fn judge_loading(
    req: &Request<'_>,
    load: impl Fn() -> Result<Loaded> + Sync,
) -> Result<(Loaded, Judgment)> {
    let (state, spec) = match workspace_state(req) {
        Ok(found) => found,
        // The protocol's error first, as when it is loaded first.
        Err(e) => {
            load()?;
            return Err(e);
        }
    };
    let store = Store::open(&crate::state::attempts::dir_for(&state));
    let load_prepared = || {
        let (protocol, waivers) = load()?;
        let everyone = prepared(&protocol, &store);
        Ok::<_, anyhow::Error>((protocol, waivers, everyone))
    };
    let (ws, loaded) = open_beside(req, &spec, &state, load_prepared);
    // No thread for it (or it died): here, then.
    let (protocol, waivers, everyone) = loaded.unwrap_or_else(load_prepared)?;
    let Subject::Workspace(rules) = &protocol.subject else {
        let judgment = judge(req, &protocol, waivers.as_ref())?;
        return Ok(((protocol, waivers), judgment));
    };
    let j = evaluated(
        req,
        &protocol,
        rules,
        ws?,
        state,
        (&store, everyone),
        waivers.as_ref(),
    )?;
    let j = written(req, &protocol, j)?;
    Ok(((protocol, waivers), Judgment::Workspace(Box::new(j))))
}

/// The state directory of a workspace judgment and the baseline to open it against; the state
/// directory created when it exists or is to be written, and a live referee's workspace
/// refused for `--write`.
fn workspace_state(req: &Request<'_>) -> Result<(PathBuf, BaselineSpec)> {
    // The kept attempts (the loop guards' memory), the start snapshot and, with `--write`, the
    // verdicts and STOP that count are the state directory's (SPEC §8).
    let state = state_of(req.dir, req.state_dir)?;
    let spec = match (req.baseline, req.baseline_dir) {
        (Some(rev), _) => BaselineSpec::Rev(rev.to_string()),
        (None, Some(dir)) => BaselineSpec::Dir(dir.to_path_buf()),
        (None, None) if !req.dir.join(".git").exists() => BaselineSpec::Snapshot(state.clone()),
        (None, None) => BaselineSpec::Auto,
    };
    if crate::state::exists(&state) || req.write {
        crate::state::ensure(&state)?;
    }
    if req.write {
        refuse_live(req.dir, &state)?;
    }
    Ok((state, spec))
}

/// The workspace opened (records, listing, pin, stat cache) while `beside` runs on a thread of
/// its own; `None` for `beside` when no thread could run it.
fn open_beside<T: Send>(
    req: &Request<'_>,
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
        let ws = Workspace::open_in(req.dir, spec, state, req.max_read_bytes);
        (ws, reading.and_then(|r| r.join().ok()))
    })
}

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

/// `j`, warned of when it judged no record, and with `--write` its outputs written.
fn written(
    req: &Request<'_>,
    protocol: &Protocol,
    j: WorkspaceJudgment,
) -> Result<WorkspaceJudgment> {
    if j.runs.is_empty() {
        tracing::warn!(
            "no task records in `{}`: nothing to judge",
            req.dir.join(crate::workspace::TASKS_DIR).display()
        );
    }
    if req.write {
        write_verdicts(protocol, &j)
            .and_then(|()| {
                outputs::code_change::write_all(
                    protocol,
                    &j.ws,
                    &j.eval,
                    &j.runs,
                    &j.decision,
                    &j.ctx,
                    &j.state,
                )
            })
            .with_context(|| {
                format!(
                    "cannot write into `{}`",
                    j.ws.root().join(OUTPUT_DIR).display()
                )
            })?;
    }
    Ok(j)
}

/// Each verdict of `j` written into the state directory and copied into `.referee/`, and each
/// attempt kept (the loop guards' memory) after its copy: a copy that cannot be written costs no
/// memory.
fn write_verdicts(protocol: &Protocol, j: &WorkspaceJudgment) -> std::io::Result<()> {
    let dir = outputs::code_change::ensure_dir(j.ws.root())?;
    let store = Store::open(&crate::state::attempts::dir_for(&j.state));
    let durability = outputs::Durability::Contents;
    for v in &j.decision.verdicts {
        outputs::code_change::write_verdict(&j.state, protocol, v, durability)?;
        let copied = outputs::code_change::write_verdict(&dir, protocol, v, durability);
        if let Some((kept, diff)) = v.kept() {
            store.keep(&kept, diff)?;
        }
        copied?;
    }
    Ok(())
}

/// `ws` judged as it stands: every task record evaluated against the baseline, the waivers
/// applied, each judged record graded with the guards over the attempts kept in `state`.
fn evaluated(
    req: &Request<'_>,
    protocol: &Protocol,
    rules: &TaskRules,
    ws: Workspace,
    state: PathBuf,
    (store, everyone): (&Store, Option<Everyone>),
    waivers: Option<&Waivers>,
) -> Result<WorkspaceJudgment> {
    let limits = Limits {
        max_read_bytes: req.max_read_bytes,
        ..Limits::default()
    };
    let snap = Snapshot::empty(req.dir, limits)?;
    let now = chrono::Utc::now();
    let options = Options {
        final_: true,
        now: Some(now),
        ..Options::default()
    };
    let (mut eval, runs) = engine::evaluate_workspace(protocol, rules, &snap, &ws, &options);
    let waived = apply_waivers(waivers, &mut eval, now);
    let verdicts =
        crate::task_verdict::judge(protocol, rules, &ws, &eval.results, &runs, store, everyone);
    let decision = crate::decision::workspace(protocol, &ws, &eval, verdicts);
    let ctx = context(ws.root(), now, waived);
    Ok(WorkspaceJudgment {
        ws,
        eval,
        runs,
        decision,
        ctx,
        state,
    })
}

/// A task record made in memory for [`attempt`]: its path (`.tasks/<stem>.json`) and bytes.
pub type ImplicitRecord = (String, Vec<u8>);

/// The workspace judged once at an agent's stop point (`referee hook`), read only: like
/// [`judge`] on a protocol of task records, plus the record `implicit` makes from the workspace
/// as opened (`Some((rel, bytes))`), judged as if read from `.tasks/` but kept in memory, never
/// written into the workspace. The state directory is created (the baseline is pinned there on
/// the first call, reused after), and nothing is written besides the pin, the stat cache and
/// the attempts' index: the caller keeps the verdicts it acts on.
pub fn attempt(
    req: &Request<'_>,
    protocol: &Protocol,
    implicit: &dyn Fn(&Workspace) -> Option<ImplicitRecord>,
) -> Result<WorkspaceJudgment> {
    let Subject::Workspace(rules) = &protocol.subject else {
        anyhow::bail!(
            "protocol `{}` judges no task records: agent hooks need a protocol like `code-change`",
            protocol.id
        );
    };
    let state = state_of(req.dir, req.state_dir)?;
    crate::state::ensure(&state)?;
    let git = req.dir.join(".git").exists();
    let spec = match (req.baseline, req.baseline_dir) {
        (Some(rev), _) => BaselineSpec::Rev(rev.to_string()),
        (None, Some(dir)) => BaselineSpec::Dir(dir.to_path_buf()),
        (None, None) if !git => {
            // A plain folder: its start snapshot, taken at the first call.
            let canon = std::fs::canonicalize(req.dir)
                .with_context(|| format!("cannot read directory `{}`", req.dir.display()))?;
            crate::workspace::snapshot::create(&canon, &state, req.max_read_bytes).with_context(
                || format!("cannot keep a start snapshot in `{}`", state.display()),
            )?;
            BaselineSpec::Snapshot(state.clone())
        }
        (None, None) => BaselineSpec::Auto,
    };
    let mut ws = Workspace::open_in(req.dir, &spec, &state, req.max_read_bytes)?;
    if let Some((rel, bytes)) = implicit(&ws) {
        ws.add_record(&rel, bytes);
    }
    let store = Store::open(&crate::state::attempts::dir_for(&state));
    evaluated(req, protocol, rules, ws, state, (&store, None), None)
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

/// Lists `dir` (or finishes `listing`, its walk started already), reading ahead the reports
/// `protocol` will read (see [`Snapshot::scan_reading`]).
fn scan(
    dir: &Path,
    max_read_bytes: u64,
    protocol: &Protocol,
    listing: Option<Listing>,
) -> Result<Snapshot> {
    let limits = Limits {
        max_read_bytes,
        ..Limits::default()
    };
    let _span = tracing::debug_span!("scan", dir = %dir.display()).entered();
    let wanted = |rel: &str| protocol.may_read(rel);
    // The error already names the directory.
    match listing {
        Some(listing) => Snapshot::scan_reading_from(listing, limits, &wanted),
        None => Snapshot::scan_reading(dir, limits, &wanted),
    }
    .map_err(anyhow::Error::from)
}

fn refuse_live(dir: &Path, state: &Path) -> Result<()> {
    match crate::state::live::referee(dir, state) {
        Some(why) => Err(LiveReferee {
            dir: dir.display().to_string(),
            why,
        }
        .into()),
        None => Ok(()),
    }
}

/// The state directory of `dir` (`--state-dir`, else the default), as `watch` finds it.
pub fn state_of(dir: &Path, explicit: Option<&Path>) -> Result<PathBuf> {
    let canon = std::fs::canonicalize(dir)
        .with_context(|| format!("cannot read directory `{}`", dir.display()))?;
    Ok(crate::state::locate(&canon, explicit)?)
}

/// What the referee that watched `dir` saw, in order ([`crate::state::observed`]), when its state
/// directory holds a record: `verify` orders what it saw like `watch` does. No state directory
/// (or no record in it): the claims alone. Read only; a state directory the referee could not
/// trust is refused.
fn seen_record(
    dir: &Path,
    explicit: Option<&Path>,
) -> Result<Option<Arc<crate::state::observed::Observed>>> {
    let state = match state_of(dir, explicit) {
        Ok(s) => s,
        // No home to find a default in: no memory to read.
        Err(_) if explicit.is_none() => return Ok(None),
        Err(e) => return Err(e),
    };
    if !crate::state::exists(&state) {
        return Ok(None);
    }
    crate::state::check(&state)?;
    Ok(crate::state::observed::Observed::load(&state)?.map(Arc::new))
}

/// One of `verify --write`'s files; a symlink or FIFO found at its name is replaced, never
/// followed, and said.
fn write_own(dir: &Path, name: &str, text: &str) -> Result<()> {
    let w =
        outputs::write_atomic(dir, name, text).with_context(|| format!("cannot write {name}"))?;
    if let Some(found) = w.replaced {
        tracing::warn!(
            "`{name}` was {} put there by someone else; replaced without being followed",
            found.describe()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What a workspace judgment decided, without the moment it was made.
    fn decided(j: &Judgment) -> String {
        let Judgment::Workspace(w) = j else {
            panic!("a workspace judgment");
        };
        let verdicts: Vec<_> = w
            .decision
            .verdicts
            .iter()
            .map(|v| (&v.task_id, &v.verdict, &v.graded, &v.reasons, &v.diff))
            .collect();
        let results: Vec<_> = w
            .eval
            .results
            .iter()
            .map(|r| (&r.pass, &r.check, r.status, &r.evidence))
            .collect();
        format!(
            "{verdicts:?}\n{results:?}\n{:?}\n{}",
            w.ws.changes(),
            j.violation()
        )
    }

    /// The protocol loaded while the workspace is opened: the same judgment as loaded first,
    /// attempt after attempt (the kept attempts and the loop guards included); a load that
    /// fails is the answer; a protocol that judges no records is judged as `judge` would.
    #[test]
    fn judging_while_the_protocol_loads_decides_as_judging_after() {
        let (ws, base, state) = (
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
            tempfile::tempdir().unwrap(),
        );
        let state = state.path().join("state");
        for d in [ws.path(), base.path()] {
            std::fs::write(d.join("a.py"), "x = 1\n").unwrap();
            std::fs::write(d.join("orchestrator.py"), "run()\n").unwrap();
        }
        std::fs::write(ws.path().join("a.py"), "x = 2\n").unwrap();
        std::fs::create_dir(ws.path().join(".tasks")).unwrap();
        let record = |task: &str, attempt: u64, listed: &str| {
            let doc = serde_json::json!({
                "task_id": task, "status": "pending_review", "description": "a task",
                "attempt": attempt, "summary": "Here's what I did: the change.",
                "changes": {"added": [], "modified": [listed], "removed": []},
                "pre_hashes": {}, "post_hashes": {},
            });
            let path = ws.path().join(format!(".tasks/{task}.json"));
            std::fs::write(path, doc.to_string()).unwrap();
        };
        let req = Request {
            state_dir: Some(&state),
            baseline_dir: Some(base.path()),
            ..Request::new(ws.path())
        };
        let keeping = Request {
            write: true,
            ..req.clone()
        };
        let load = || Ok((Protocol::load("code-change")?, None));
        let same = |what: &str| {
            let p = Protocol::load("code-change").unwrap();
            let after = judge(&req, &p, None).unwrap();
            let (_, beside) = judge_loading(&req, load).unwrap();
            assert_eq!(decided(&beside), decided(&after), "{what}");
            after.violation()
        };
        // Tasks attempt after attempt, each judgment kept (`--write`) before the next: the
        // loop guards compare each with its history and with the other tasks' REJECTs.
        for (attempt, listed) in [(1, "b.py"), (2, "b.py"), (3, "a.py"), (4, "b.py")] {
            record("t1", attempt, listed);
            record("t2", attempt, "b.py");
            // A new task each time, its first attempt the same diff as others' REJECTs.
            record(&format!("n{attempt}"), 1, "b.py");
            assert!(same(&format!("attempt {attempt}")));
            let p = Protocol::load("code-change").unwrap();
            judge(&keeping, &p, None).unwrap();
        }
        let kept = Store::open(&crate::state::attempts::dir_for(&state)).everyone();
        assert_eq!(kept.graded_elsewhere("t3", "REJECT").len(), 11, "{kept:?}");
        std::fs::write(ws.path().join("orchestrator.py"), "run(evil)\n").unwrap();
        assert!(same("a protected change"));

        let refused = || -> Result<Loaded> { anyhow::bail!("the protocol is refused") };
        let e = judge_loading(&keeping, refused).unwrap_err();
        assert_eq!(e.to_string(), "the protocol is refused");
        let gone = Request {
            dir: &ws.path().join("no-such-dir"),
            ..req.clone()
        };
        let e = judge_loading(&gone, refused).unwrap_err();
        assert_eq!(
            e.to_string(),
            "the protocol is refused",
            "the protocol's error first"
        );
        assert!(judge_loading(&gone, load).is_err());

        let build = Request {
            state_dir: Some(&state),
            ..Request::new(base.path())
        };
        let d10 = || Ok((Protocol::load("d10")?, None));
        let ((p, _), j) = judge_loading(&build, d10).unwrap();
        assert_eq!(p.id, "d10");
        assert!(matches!(j, Judgment::Build(_)));
    }
}
