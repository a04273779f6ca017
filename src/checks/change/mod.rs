//! Predicates about a task attempt in a workspace: its record, and what changed
//! against the baseline in the task's scope. They are judged in a pass instance of one task
//! record ([`TaskScope`]); outside one they are INCONCLUSIVE. Without a baseline, everything
//! that needs one is INCONCLUSIVE, never PASS: the evidence says why there is none.

use std::cell::OnceCell;
use std::collections::{BTreeMap, BTreeSet};

use super::{Ctx, FileRef, Outcome, Verdict};
use crate::protocol::glob::AnyGlob;
use crate::protocol::predicate::{Glob, RecordField, Unchanged};
use crate::syntax::pyc::Bytecode;
use crate::workspace::gitconfig::Runs;
use crate::workspace::record::{Record, Task};
use crate::workspace::{name, Change, Content, Digest, Side, Workspace};

mod content;
mod imports;

pub(super) use content::{added, added_in_context, parses, size_limit};

/// What one task attempt is judged on.
#[derive(Debug)]
pub struct TaskScope<'a> {
    pub ws: &'a Workspace,
    pub record: &'a Record,
    /// The changes in this task's scope: those its record lists, plus those no other judged
    /// record claims. `None` without a baseline.
    pub scope: Option<BTreeMap<String, Change>>,
    /// Why the record replays an attempt already judged: CC-00 FAILs with it.
    pub replay: Option<String>,
    /// Why the record's task is not one the orchestrator opened (`referee task open`;
    /// `unknown_task`): CC-00 FAILs with it, and the record claims nothing.
    pub unknown: Option<String>,
}

impl<'a> TaskScope<'a> {
    /// The scope of `record` among the `claimants`: the judged records whose claims count (in
    /// the round, those not REJECTed; `record` itself may be among them).
    pub fn new(ws: &'a Workspace, record: &'a Record, claimants: &[&Record]) -> TaskScope<'a> {
        let scope = ws.changes().map(|changes| {
            let own = record.parsed.as_ref().ok();
            let claimed_elsewhere: BTreeSet<&str> = claimants
                .iter()
                .filter(|r| r.rel != record.rel)
                .filter_map(|r| r.parsed.as_ref().ok())
                .flat_map(|t| t.listed().map(|(p, _)| p))
                .collect();
            changes
                .iter()
                .filter(|(p, _)| {
                    own.is_some_and(|t| t.lists(p)) || !claimed_elsewhere.contains(p.as_str())
                })
                .map(|(p, c)| (p.clone(), *c))
                .collect()
        });
        TaskScope {
            ws,
            record,
            scope,
            replay: None,
            unknown: None,
        }
    }

    /// The files of the task that exist now (added or modified): from the scope, or, without
    /// a baseline, as the record lists them.
    pub fn present_files(&self) -> Vec<String> {
        match (&self.scope, self.record.parsed.as_ref()) {
            (Some(scope), _) => scope
                .iter()
                .filter(|(_, c)| **c != Change::Removed)
                .map(|(p, _)| p.clone())
                .collect(),
            (None, Ok(t)) => {
                let mut v: Vec<String> = t.added.iter().chain(&t.modified).cloned().collect();
                v.sort();
                v.dedup();
                v
            }
            (None, Err(_)) => Vec::new(),
        }
    }

    /// The unified diff of every change in the scope, by path: the attempt's diff, kept for
    /// the loop guards. `None` without a baseline.
    pub fn attempt_diff(&self) -> Option<String> {
        let scope = self.scope.as_ref()?;
        let mut out = String::new();
        for p in scope.keys() {
            match self.ws.diff(p) {
                Ok(d) => out.push_str(&d),
                Err(why) => out.push_str(&format!("?? {p}: cannot be read: {why}\n")),
            }
        }
        Some(out)
    }
}

/// A task attempt's predicate met outside a pass instance of a task record.
pub(super) fn outside_task() -> Outcome {
    Outcome::new(
        Verdict::Inconclusive,
        "a task record to judge",
        "this predicate is judged only in a pass with `for_each = \"task\"`",
    )
}

/// A build directory's predicate met in a workspace protocol: there is no build directory.
pub(super) fn outside_build() -> Outcome {
    Outcome::new(
        Verdict::Inconclusive,
        "a build directory to judge",
        "this predicate is judged only against a build directory (a protocol without `[tasks]`)",
    )
}

pub(super) fn task<'c>(s: &'c TaskScope<'_>) -> Result<&'c Task, Outcome> {
    s.record.parsed.as_ref().map_err(|e| {
        Outcome::new(
            Verdict::Inconclusive,
            "a well-formed task record",
            format!(
                "{} is malformed ({e}): see the `task_record` check",
                s.record.rel
            ),
        )
    })
}

pub(super) fn no_baseline(s: &TaskScope<'_>, expected: &str) -> Outcome {
    Outcome::new(
        Verdict::Inconclusive,
        expected,
        s.ws.why_no_baseline().to_string(),
    )
}

fn file_ref(ws: &Workspace, rel: &str) -> FileRef {
    // Its hash as this judgment read it; the file itself only when held (never read whole
    // here: a protected file may be larger than what a judgment holds).
    let digest = ws.current_digest(rel);
    let fits =
        |d: &crate::workspace::Digest| d.size <= ws.hold_budget().saturating_sub(ws.held_bytes());
    let held = match &digest {
        Ok(Some(d)) if fits(d) => match ws.current(rel) {
            Content::Bytes(d) => Some(d),
            _ => None,
        },
        _ => ws.current_if_held(rel),
    };
    match (digest, held) {
        (_, Some(d)) => Ctx::data_ref(&d),
        (Ok(Some(d)), None) => FileRef {
            path: rel.to_string(),
            size: d.size,
            sha256: Some(d.sha256),
            mtime: None,
        },
        _ => FileRef {
            path: rel.to_string(),
            size: 0,
            sha256: None,
            mtime: None,
        },
    }
}

/// The outcome of a list of findings: FAIL when any, else INCONCLUSIVE when something could
/// not be judged, else PASS.
pub(super) fn conclude(
    expected: &str,
    fails: Vec<String>,
    unknown: Vec<String>,
    pass_note: String,
) -> Outcome {
    if !fails.is_empty() {
        let mut o = Outcome::new(
            Verdict::Fail,
            expected,
            format!("{} finding(s)", fails.len()),
        );
        fails.into_iter().for_each(|f| o.push_detail(f));
        unknown
            .into_iter()
            .for_each(|u| o.push_detail(format!("not judged: {u}")));
        o
    } else if !unknown.is_empty() {
        let mut o = Outcome::new(
            Verdict::Inconclusive,
            expected,
            format!("{} file(s) could not be judged", unknown.len()),
        );
        unknown.into_iter().for_each(|u| o.push_detail(u));
        o
    } else {
        Outcome::pass(expected, pass_note)
    }
}

// ---- CC-00 ----------------------------------------------------------------------------------

pub(super) fn task_record(s: &TaskScope<'_>) -> Outcome {
    let expected = "the task record parses and has the required fields";
    let o = match &s.record.parsed {
        Ok(_) if s.unknown.is_some() => {
            let why = s.unknown.clone().unwrap_or_default();
            Outcome::new(
                Verdict::Fail,
                "a task the orchestrator opened (`referee task open`)",
                why.clone(),
            )
            .detail(format!("{}: {why}", s.record.rel))
        }
        Ok(_) if s.replay.is_some() => {
            let why = s.replay.clone().unwrap_or_default();
            Outcome::new(
                Verdict::Fail,
                "an attempt above the last one judged for its task",
                why.clone(),
            )
            .detail(format!("{}: {why}", s.record.rel))
        }
        Ok(t) => Outcome::pass(
            expected,
            format!(
                "{}: task `{}`, attempt {}, status `{}`",
                s.record.rel, t.task_id, t.attempt, t.status
            ),
        ),
        Err(e) => Outcome::new(Verdict::Fail, expected, format!("{}:{e}", s.record.rel))
            .detail(format!("{}: {e}", s.record.rel)),
    };
    o.file(file_ref(s.ws, &s.record.rel))
}

// ---- CC-01 ----------------------------------------------------------------------------------

pub(super) fn unchanged(s: &TaskScope<'_>, u: &Unchanged) -> Outcome {
    let expected = format!(
        "no protected path ({}) added, modified or removed, reached by a new link or shadowed",
        u.globs
            .iter()
            .map(Glob::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    );
    let Some(changes) = s.ws.changes() else {
        return no_baseline(s, &expected);
    };
    let globs = u.all_globs();
    let any = AnyGlob::new(globs.iter().map(|(g, _)| g));
    let protected = |p: &str| veto_covers(s.ws, &any, p);
    let mut fails = Vec::new();
    let mut files = Vec::new();
    // A veto stands in the workspace, whoever made it: every change, not just the task's scope.
    let (found, undecided) = protected_paths_and_undecided(s.ws, &globs);
    for (p, happened) in found {
        fails.push(format!(
            "protected_file_modified: {} ({})",
            name::display(&p),
            happened.describe()
        ));
        if let Ok(d) = s.ws.diff(&p) {
            fails.extend(d.lines().map(|l| format!("  {l}")));
        }
        files.push(file_ref(s.ws, &p));
    }
    let unknown: Vec<String> =
        s.ws.undecided
            .iter()
            .filter(|(p, _)| protected(p))
            .chain(undecided.iter())
            .map(|(p, why)| format!("{}: {why}", name::display(p)))
            .collect();
    let mut o = conclude(
        &expected,
        fails,
        unknown,
        format!("{} change(s), none protected", changes.len()),
    );
    if o.verdict == Verdict::Fail {
        // One finding per protected path: the lines of its diff are its evidence, not findings.
        o.observed = vec![format!("{} protected path(s) changed", files.len())];
    }
    files.into_iter().for_each(|f| o.push_file(f));
    o
}

/// What happened to a protected path against the baseline (CC-01's evidence, and the veto a
/// judgment decides whatever the records say).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(tag = "happened", rename_all = "snake_case")]
pub enum Happened {
    Added,
    Modified,
    Removed,
    /// Its type changed (`file → symlink` …); `change` says from what to what.
    Retyped {
        change: String,
    },
    /// Its mode changed (`file → executable file`); its bytes may have changed too.
    Mode {
        change: String,
    },
    /// Added in the place of a protected module (`roles/__init__.py` for `**/roles.py`): `of`
    /// is the protected glob it shadows.
    Shadowed {
        of: String,
    },
    /// Added where a protected Python file's import of `module` finds it first (its folder,
    /// or the root): `by` is that file.
    Imported {
        module: String,
        by: String,
    },
    /// Present where the baseline's ignore rules hide it (not a change to git; protected
    /// globs see it).
    Hidden,
    /// Present with no start to date it (no state directory, or a start pinned by a judgment
    /// of work already done), and holding code that will run: `what` says what it is (`a hook
    /// git runs`; an ignored module a protected file imports: ``hidden by an ignore rule, takes
    /// the place of `json`, which `app/orchestrator.py` imports``), `why` why nothing says it was
    /// there before the work.
    Undated {
        what: String,
        why: String,
    },
    /// Added as a link (a symlink, a hard link) that reaches the protected baseline file `to`.
    Linked {
        to: String,
    },
    /// In no baseline (`.git/hooks`, an ignored file present at start): changed against its
    /// state when the referee started; `what` says how.
    SinceStart {
        what: String,
    },
    /// Cached bytecode (`__pycache__/M.TAG.pyc`) of an unchanged protected source that is not
    /// that source's code, or cannot be checked; `what` says which.
    Bytecode {
        what: String,
    },
    /// Changed by a commit made since the pin (`HEAD` is `commit`), whatever the work tree
    /// says; `what` says how.
    Committed {
        commit: String,
        what: String,
    },
}

impl Happened {
    /// The evidence's words for it: `modified`, `modified, mode: file → executable file`,
    /// ``added, a link to `orchestrator.py` ``.
    pub fn describe(&self) -> String {
        match self {
            Happened::Added => "added".into(),
            Happened::Modified => "modified".into(),
            Happened::Removed => "removed".into(),
            Happened::Retyped { change } => format!("modified, type: {change}"),
            Happened::Mode { change } => format!("modified, mode: {change}"),
            Happened::Shadowed { of } => format!("added, shadows `{of}`"),
            Happened::Imported { module, by } => format!(
                "added, takes the place of `{module}`, which `{}` imports",
                name::display(by)
            ),
            Happened::Hidden => "added, hidden by an ignore rule".into(),
            Happened::Undated { what, why } => format!("{what}; {why}"),
            Happened::Linked { to } => format!("added, a link to `{}`", name::display(to)),
            Happened::SinceStart { what } | Happened::Bytecode { what } => what.clone(),
            Happened::Committed { commit, what } => {
                format!("{what} by commit {}", commit.get(..12).unwrap_or(commit))
            }
        }
    }
}

/// Every way the workspace differs from the baseline at a protected path, with what happened:
/// a change of a matching path (its bytes, type or mode), a matching path the baseline's ignore
/// rules hide (but an unchanged copy of a protected file, see [`unchanged_copy`]), a new link to a
/// protected baseline file. Cached bytecode that is its unchanged source's own code is no change
/// (what running the tests leaves); other bytecode is. `globs`: the protected globs, and the
/// shadow globs each with the protected glob it shadows ([`Unchanged::all_globs`]).
pub fn protected_paths(
    ws: &Workspace,
    globs: &[(Glob, Option<String>)],
) -> Vec<(String, Happened)> {
    protected_paths_and_undecided(ws, globs).0
}

/// The key under which the ignored modules a protected file imports are pinned at start, beside
/// the protected globs (in the surface pin's glob list; no glob is written so).
const IMPORTS_KEY: &str = "(modules the protected Python files import)";

/// Why a path no commit holds is undated with no state directory.
const NO_STATE: &str = "no state directory says it was there when the referee started \
     (`referee watch`, or one `verify --write`, before the work gives it a start)";

/// Paths whose state could not be had, each with why.
pub type Undecided = Vec<(String, String)>;

/// [`protected_paths`], and the paths outside the baseline whose state could not be had.
pub fn protected_paths_and_undecided(
    ws: &Workspace,
    globs: &[(Glob, Option<String>)],
) -> (Vec<(String, Happened)>, Undecided) {
    let plain: Vec<Glob> = globs.iter().map(|(g, _)| g.clone()).collect();
    let any = AnyGlob::new(&plain);
    let protected = |p: &str| veto_covers(ws, &any, p);
    // What happened, or `None` for bytecode that is its unchanged source's own code.
    let judged = |p: &str, happened: Happened| match bytecode(ws, p) {
        Some(Bytecode::Same) => None,
        Some(Bytecode::Differs) => Some(Happened::Bytecode {
            what: format!(
                "{}: bytecode that is not its source's code",
                happened.describe()
            ),
        }),
        Some(Bytecode::Unknown(why)) => Some(Happened::Bytecode {
            what: format!(
                "{}: bytecode that cannot be checked ({why})",
                happened.describe()
            ),
        }),
        None => Some(happened),
    };
    // Matched by a shadow glob alone: it stands in the place of the protected module `of`.
    let shadow_of = |p: &str| {
        if globs.iter().any(|(g, of)| of.is_none() && g.is_match(p)) {
            None
        } else {
            globs
                .iter()
                .find_map(|(g, of)| of.as_ref().filter(|_| g.is_match(p)).cloned())
        }
    };
    let mut out: BTreeMap<String, Happened> = BTreeMap::new();
    if let Some(changes) = ws.changes() {
        for (p, c) in changes.iter().filter(|(p, _)| protected(p)) {
            let shadowed = shadow_of(p);
            let detail = ws.detail(p);
            let happened = match (c, shadowed, detail) {
                (Change::Added, Some(of), _) => Happened::Shadowed { of },
                (Change::Modified, _, Some(d)) if d.starts_with("type: ") => Happened::Retyped {
                    change: d["type: ".len()..].to_string(),
                },
                (Change::Modified, _, Some(d)) if d.starts_with("mode: ") => Happened::Mode {
                    change: d["mode: ".len()..].to_string(),
                },
                (Change::Added, _, _) => Happened::Added,
                (Change::Modified, _, _) => Happened::Modified,
                (Change::Removed, _, _) => Happened::Removed,
            };
            if let Some(happened) = judged(p, happened) {
                out.insert(p.clone(), happened);
            }
        }
    }
    // A module a protected file imports, added: a veto. Hidden by an ignore rule: measured
    // against its state at start below, as an agent's local settings are (a gitignored
    // `local_settings.py` the orchestrator imports is the user's, there before the work).
    let globs_key: Vec<&str> = plain.iter().map(Glob::as_str).collect();
    let mut imported: BTreeMap<String, (String, String)> = BTreeMap::new();
    for (p, module, by) in imports::shadows(ws, &protected, &globs_key.join("\n")) {
        if ws.ignored().binary_search(&p).is_ok() {
            imported.insert(p, (module, by));
        } else {
            out.entry(p).or_insert(Happened::Imported { module, by });
        }
    }
    // An ignored path an import may load in a protected module's place (a copy named as a
    // protected baseline file, a shadow such as cached bytecode) is judged on what it is now,
    // whenever it appeared: a veto unless it is an unchanged copy (what a build leaves) or its
    // source's own bytecode. Pinned as it was at start, a shadow there when the referee first
    // looked would stand unjudged from the next attempt on; gone, nothing runs in the protected
    // code's place (`rm -rf build` is no change).
    let ignored: BTreeSet<&String> = ws.ignored().iter().collect();
    // The names of the protected baseline files (an ignored path is never one of them), picked
    // once per judgment, and only when a path outside the baseline asks (an ignored or undated
    // one a protected glob covers): most judgments have none, and the pass over every baseline
    // path was a fifth of a judgment of a 20,000-file tree. Once: a `node_modules/` holds
    // thousands of ignored paths a glob may match.
    let names: OnceCell<BTreeSet<String>> = OnceCell::new();
    let protected_names = || {
        names.get_or_init(|| {
            ws.baseline_paths_once(&format!("protected\n{}", globs_key.join("\n")), |p| {
                protected(p)
            })
            .iter()
            .map(|q| q.rsplit('/').next().unwrap_or(q).to_string())
            .collect()
        })
    };
    let in_place = |p: &str| {
        !crate::workspace::surface::is_surface(p)
            && (shadow_of(p).is_some()
                || p.rsplit('/')
                    .next()
                    .is_some_and(|n| protected_names().contains(n)))
    };
    for p in ignored.iter().filter(|p| protected(p) && in_place(p)) {
        if unchanged_copy(ws, p, &protected) {
            continue;
        }
        let happened = match shadow_of(p) {
            Some(of) => Happened::Shadowed { of },
            None => Happened::Hidden,
        };
        if let Some(happened) = judged(p, happened) {
            out.insert((*p).clone(), happened);
        }
    }
    // Other paths no baseline holds (`.git/`, `.tasks/`, `.referee/`, an ignored agent's
    // settings, an ignored module a protected file imports): against their state when the
    // referee started, when a state directory keeps it; else each is an addition.
    let mut key: Vec<String> = globs.iter().map(|(g, _)| g.as_str().to_string()).collect();
    key.push(IMPORTS_KEY.into());
    let watched = |p: &str| protected(p) || imported.contains_key(p);
    let mut undecided = Vec::new();
    // The hooks git runs and the git configs with what each runs: listed once, when asked.
    let surface: OnceCell<(BTreeSet<String>, BTreeMap<String, Runs>)> = OnceCell::new();
    let surface = || {
        surface.get_or_init(|| {
            (
                ws.hooks().into_iter().collect(),
                ws.git_configs().into_iter().collect(),
            )
        })
    };
    let (undated, why) = match ws.outside_baseline(&key, &watched) {
        Some(found) => {
            for (p, _, what) in found.changed.into_iter().filter(|(p, ..)| !in_place(p)) {
                let what = match imported.get(&p) {
                    Some((module, by)) => format!(
                        "{what}; takes the place of `{module}`, which `{}` imports",
                        name::display(by)
                    ),
                    None => what,
                };
                if let Some(happened) = judged(&p, Happened::SinceStart { what }) {
                    out.insert(p, happened);
                }
            }
            undecided = found.undecided;
            found
                .undated
                .map(|(why, paths)| (paths, why))
                .unwrap_or_default()
        }
        None => {
            for p in ignored.iter().filter(|p| protected(p) && !in_place(p)) {
                if !imported.contains_key(*p) {
                    if let Some(happened) = judged(p, Happened::Hidden) {
                        out.insert((*p).clone(), happened);
                    }
                }
            }
            let (hooks, configs) = surface();
            let paths = imported
                .keys()
                .cloned()
                .chain(hooks.iter().chain(configs.keys()).cloned())
                .filter(|p| imported.contains_key(p) || protected(p))
                .chain(ws.records_and_outputs().filter(|p| protected(p)))
                .collect();
            (paths, NO_STATE.to_string())
        }
    };
    // Paths no start dates (no state directory, or a start pinned by a judgment of work already
    // done): nothing says they were there before the work. Those that hold code that will run
    // block, saying why: a hook git runs, a git config with a key git runs as a command, an
    // ignored module a protected file imports, an ignored path a protected glob matches.
    for p in undated.iter().filter(|p| !in_place(p)) {
        let (hooks, configs) = surface();
        let happened = match imported.get(p) {
            Some((module, by)) => Happened::Undated {
                what: format!(
                    "hidden by an ignore rule, takes the place of `{module}`, which `{}` imports",
                    name::display(by)
                ),
                why: why.clone(),
            },
            None if hooks.contains(p) => Happened::Undated {
                what: "a hook git runs".into(),
                why: why.clone(),
            },
            None => match configs.get(p) {
                Some(Runs::Keys(keys)) if keys.is_empty() => continue,
                Some(Runs::Keys(keys)) => Happened::Undated {
                    what: format!("git config that runs a command ({})", keys.join(", ")),
                    why: why.clone(),
                },
                Some(Runs::Unreadable(e)) => Happened::Undated {
                    what: format!("git config that cannot be read ({e})"),
                    why: why.clone(),
                },
                None if ignored.contains(p) => Happened::Undated {
                    what: "hidden by an ignore rule".into(),
                    why: why.clone(),
                },
                // A protected name among the records or the referee's files: no tool puts
                // one there.
                None if [".tasks/", ".referee/"].iter().any(|t| p.starts_with(t)) => {
                    Happened::Undated {
                        what: "a protected name where no commit holds it".into(),
                        why: why.clone(),
                    }
                }
                None => continue,
            },
        };
        if let Some(happened) = judged(p, happened) {
            out.entry(p.clone()).or_insert(happened);
        }
    }
    // A commit made since the pin that changed a protected path: a change, even where the work
    // tree already matches the commit.
    if let Some(c) = ws.committed() {
        if let Some(why) = &c.unreadable {
            out.entry(".git/HEAD".into())
                .or_insert_with(|| Happened::Committed {
                    commit: c.commit.clone(),
                    what: format!("moved, and what it committed is unknown ({why})"),
                });
        }
        for (p, what) in c.paths.iter().filter(|(p, _)| protected(p)) {
            out.entry(p.clone()).or_insert_with(|| Happened::Committed {
                commit: c.commit.clone(),
                what: (*what).to_string(),
            });
        }
    }
    for (p, to) in ws.aliases().iter().filter(|(_, to)| protected(to)) {
        out.insert(p.clone(), Happened::Linked { to: to.clone() });
    }
    (out.into_iter().collect(), undecided)
}

/// Whether the veto covers `p`: a protected glob matches it, or, when the globs protect git's
/// hooks (`.git/hooks/**`), it lies in the work tree's folder that `core.hooksPath` names. The
/// protocol's own channel is never covered, whatever the globs: a task record
/// (`.tasks/<id>.json`, the worker's word to the referee) and what the referee writes
/// (`.referee/OBSERVER-*`); a team protecting `**/*.json` or `**/*.md` protects its own files,
/// not these (each is judged as what it is: a record, the referee's output).
fn veto_covers(ws: &Workspace, globs: &AnyGlob, p: &str) -> bool {
    !channel(p)
        && (globs.is_match(p) || (ws.in_hooks_dir(p) && globs.is_match(".git/hooks/pre-commit")))
}

/// Whether `p` is the protocol's channel: a task record, or a file the referee writes.
fn channel(p: &str) -> bool {
    let record = crate::workspace::is_record(p);
    let output = p
        .strip_prefix(".referee/")
        .is_some_and(|n| !n.contains('/') && n.starts_with("OBSERVER-"));
    record || output
}

/// For a path in a `__pycache__/` folder named as cached bytecode (`D/__pycache__/M.TAG.pyc`),
/// whether it holds the code of its source `D/M.py` as the baseline has it, the source
/// unchanged (see [`crate::syntax::pyc`]: what running the tests leaves is no shadow, forged
/// bytecode is). `None` for any other path, or bytecode whose source is not a baseline file
/// standing unchanged.
fn bytecode(ws: &Workspace, p: &str) -> Option<Bytecode> {
    let (dir, file_name) = p.rsplit_once('/')?;
    let parent = match dir.strip_suffix("__pycache__")? {
        "" => "",
        d => d.strip_suffix('/')?,
    };
    crate::syntax::pyc::tag_of(file_name)?;
    let module = file_name.split('.').next()?;
    let source = if parent.is_empty() {
        format!("{module}.py")
    } else {
        format!("{parent}/{module}.py")
    };
    if ws.changes().is_none_or(|c| c.contains_key(&source)) {
        return None;
    }
    let (Content::Bytes(pyc), Content::Bytes(src)) = (ws.current(p), ws.base(&source)) else {
        return None;
    };
    Some(crate::syntax::pyc::compare(
        &pyc.bytes,
        file_name,
        &src.bytes,
        p,
        &name::to_path(ws.root(), p),
    ))
}

/// Whether the ignored path `p` is an unchanged copy of the protected baseline file it copies:
/// a regular file holding exactly the baseline bytes of that file, which is the protected
/// baseline file of the same name sharing the longest path tail with `p` (`python -m build`
/// copies `src/pkg/orchestrator.py` to the ignored `build/lib/pkg/orchestrator.py`; tails
/// `pkg/orchestrator.py`). Such a copy runs nothing the baseline does not; a copy that differs
/// (of another protected file of that name too), or is a link, is a protected change.
fn unchanged_copy(ws: &Workspace, p: &str, protected: &dyn Fn(&str) -> bool) -> bool {
    let Some(file_name) = p.rsplit('/').next() else {
        return false;
    };
    let Ok(Some(now)) = ws.current_digest(p) else {
        return false;
    };
    let tail = |q: &str| {
        p.rsplit('/')
            .zip(q.rsplit('/'))
            .take_while(|(a, b)| a == b)
            .count()
    };
    let named: Vec<String> = ws
        .baseline_paths_named(file_name)
        .into_iter()
        .filter(|q| protected(q))
        .collect();
    let Some(longest) = named.iter().map(|q| tail(q)).max() else {
        return false;
    };
    named
        .iter()
        .filter(|q| tail(q) == longest)
        .any(|q| matches!(ws.base_digest(q), Ok(Some(b)) if b.sha256 == now.sha256))
}

/// The protected paths changed in the workspace, for the verdict file's diffs and the veto.
pub fn protected_changes(ws: &Workspace, globs: &[Glob]) -> Vec<String> {
    let globs: Vec<(Glob, Option<String>)> = globs.iter().map(|g| (g.clone(), None)).collect();
    protected_paths(ws, &globs)
        .into_iter()
        .map(|(p, _)| p)
        .collect()
}

// ---- CC-02 ----------------------------------------------------------------------------------

pub(super) fn changes_listed(s: &TaskScope<'_>) -> Outcome {
    let expected = "every change against the baseline is listed in `changes`, and every listed change happened";
    let t = match task(s) {
        Ok(x) => x,
        Err(o) => return o,
    };
    let Some(scope) = &s.scope else {
        return no_baseline(s, expected);
    };
    let mut fails = Vec::new();
    for (p, c) in scope {
        match t.listed().find(|(q, _)| *q == p.as_str()) {
            None => fails.push(format!("unlisted: {p} ({})", c.as_str())),
            Some((_, how)) if how != c.as_str() => {
                fails.push(format!("listed as {how}, actually {}: {p}", c.as_str()))
            }
            Some(_) => {}
        }
    }
    for (p, how) in t.listed() {
        if !scope.contains_key(p) {
            fails.push(format!("phantom: {p} (listed as {how}, not changed)"));
        }
    }
    let unknown: Vec<String> =
        s.ws.undecided
            .iter()
            .map(|(p, why)| format!("{p}: {why}"))
            .collect();
    conclude(
        expected,
        fails,
        unknown,
        format!("{} change(s), all listed as they happened", scope.len()),
    )
}

// ---- CC-03 ----------------------------------------------------------------------------------

pub(super) fn hashes_match(s: &TaskScope<'_>) -> Outcome {
    let expected = "`pre_hashes` match the baseline and `post_hashes` match the files now";
    let t = match task(s) {
        Ok(x) => x,
        Err(o) => return o,
    };
    let mut fails = Vec::new();
    let mut unknown = Vec::new();
    let mut compare = |which: &str,
                       path: &str,
                       claimed: &Option<String>,
                       actual: Result<Option<Digest>, crate::workspace::Unknowable>,
                       side: Side| {
        let actual = match actual {
            Ok(None) => None,
            Ok(Some(d)) => Some(d.sha256),
            Err(why) => {
                unknown.push(format!("{which} {path}: {why}"));
                return;
            }
        };
        // A link is known by its target's hash (git's blob) or by the hash of the file it leads
        // to (what `sha256sum` of the link prints): either names it as it stands.
        let led_to = || s.ws.led_to(path, side).map(|d| d.sha256.clone());
        if *claimed != actual && (claimed.is_none() || *claimed != led_to()) {
            fails.push(format!(
                "{which} {path}: claimed {}, actual {}",
                claimed.as_deref().unwrap_or("(absent)"),
                actual.as_deref().unwrap_or("(absent)")
            ));
        }
    };
    for (p, claimed) in &t.pre_hashes {
        compare(
            "pre_hashes",
            p,
            claimed,
            s.ws.base_digest(p),
            Side::Baseline,
        );
    }
    for (p, claimed) in &t.post_hashes {
        compare(
            "post_hashes",
            p,
            claimed,
            s.ws.current_digest(p),
            Side::WorkTree,
        );
    }
    let n = t.pre_hashes.len() + t.post_hashes.len();
    conclude(
        expected,
        fails,
        unknown,
        format!("{n} hash(es) claimed, all match"),
    )
}

// ---- CC-04 ----------------------------------------------------------------------------------

pub(super) fn no_loss(s: &TaskScope<'_>) -> Outcome {
    let expected = "no file removed unless listed in `removed`, and no file shrank to zero bytes";
    let t = match task(s) {
        Ok(x) => x,
        Err(o) => return o,
    };
    let Some(scope) = &s.scope else {
        return no_baseline(s, expected);
    };
    let mut fails = Vec::new();
    let mut unknown = Vec::new();
    let old_size = |p: &str| s.ws.base_digest(p).map(|d| d.map_or(0, |d| d.size));
    for (p, c) in scope {
        match c {
            Change::Removed if !t.removed.iter().any(|r| r == p) => match old_size(p) {
                Ok(n) => fails.push(format!(
                    "removed but not listed in `removed`: {p} (was {n} bytes)"
                )),
                Err(why) => fails.push(format!("removed but not listed in `removed`: {p} ({why})")),
            },
            Change::Modified => match (s.ws.current_digest(p), old_size(p)) {
                (Ok(Some(d)), Ok(n)) if d.size == 0 && n > 0 => {
                    fails.push(format!("emptied: {p} (was {n} bytes, now 0)"))
                }
                (Err(why), _) | (_, Err(why)) => unknown.push(format!("{p}: {why}")),
                _ => {}
            },
            _ => {}
        }
    }
    conclude(
        expected,
        fails,
        unknown,
        "no unlisted removal, no file emptied".into(),
    )
}

// ---- CC-08 ----------------------------------------------------------------------------------

pub(super) fn record_field(s: &TaskScope<'_>, r: &RecordField) -> Outcome {
    let expected = format!("`{}` matches `{}`", r.field, r.pattern.as_str());
    let t = match task(s) {
        Ok(x) => x,
        Err(o) => return o,
    };
    let value = match t.raw.get(&r.field) {
        Some(serde_json::Value::String(v)) => v.as_str(),
        Some(_) => {
            return Outcome::new(
                Verdict::Fail,
                expected,
                format!("`{}` is not a string", r.field),
            )
        }
        None => return Outcome::new(Verdict::Fail, expected, format!("`{}` is absent", r.field)),
    };
    let first = value.trim_start().lines().next().unwrap_or("");
    let Some(re) = r.pattern.regex() else {
        return Outcome::new(
            Verdict::Inconclusive,
            expected,
            format!("pattern `{}` cannot be compiled", r.pattern.as_str()),
        );
    };
    let v = if re.is_match(first.as_bytes()) {
        Verdict::Pass
    } else {
        Verdict::Fail
    };
    Outcome::new(
        v,
        expected,
        format!("first line of `{}`: {:?}", r.field, super::clip(first, 120)),
    )
}
