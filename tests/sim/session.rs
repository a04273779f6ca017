//! The vocabulary of a session (what an honest worker, a hostile worker and the orchestrator
//! do, with real files and real git), how a random session is composed from it, and how one is
//! run and judged against the model.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use globset::GlobSet;
use serde_json::json;

use crate::model::{self, Expect, Judged, Memory, Node, Snapshot, Tri};
use crate::world::{self, chmod, git, git_ok, sh, write_file, Caps, World};

/// Files an honest task edits: task `i` of `n` takes every `n`-th, so concurrent tasks never
/// share a file.
pub const POOL: &[&str] = &[
    "app/util.py",
    "lib/helpers.js",
    "config.json",
    "app/models.py",
    "settings.yaml",
    "README.md",
    "app/api.py",
    "lib/format.ts",
    "pyproject.toml",
    "docs/guide.md",
    "app/views.py",
    "scripts/check.sh",
    "cmd/main.go",
];

pub const PROTECTED_FILES: &[&str] = &[
    "app/orchestrator.py",
    "app/roles.py",
    "app/safety_checks.py",
];

pub const TASKS: &[&str] = &["t1", "t2", "t3"];

/// One step of a session. Task and file arguments are indices (taken modulo what exists), so
/// any sub-list of a session is still a session (the shrinker relies on it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Act {
    // ---- honest: the worker's edits for a task ----
    Write(u8, u8),
    TempRename(u8, u8),
    EditorBackup(u8, u8),
    RemoveWrite(u8, u8),
    SedI(u8, u8),
    AddModule(u8, u8),
    AddPackage(u8, u8),
    /// `ln -s` inside the workspace: to a module of the app, or to a folder.
    AddLink(u8, u8),
    Remove(u8, u8),
    Rename(u8, u8),
    ChmodX(u8),
    Crlf(u8, u8),
    Asset(u8),
    LockRegen(u8),
    Extglob(u8),
    CodingLine(u8),
    TrailingWs(u8, u8),
    NoFinalNewline(u8, u8),
    // ---- honest: tools and agents, no task ----
    FormatTree,
    FormatInPlace,
    TouchAll,
    BuildOutput,
    /// `rm -rf build dist` (`make clean`): the build's output, copies of protected files in it,
    /// gone.
    CleanBuild,
    PyCache,
    /// pytest's and ruff's caches, each with its own `.gitignore` of `*` (written last).
    ToolCache,
    NodeModules,
    LogFile,
    ReadOnlyAgent,
    // ---- honest: records ----
    Record(u8),
    RecordInPlace(u8),
    RecordSloppySummary(u8),
    /// The record removed, then written anew in place (an editor's save).
    RecordRemoveWrite(u8),
    /// The record written in place in two parts with a pause between: a streaming writer.
    RecordHalf(u8),
    /// The record with every path absolute (`str(path)` of an absolute `pathlib.Path`).
    RecordAbsolute(u8),
    /// The record as Windows PowerShell 5.1 writes it (UTF-16LE with its byte-order mark).
    RecordUtf16(u8),
    /// The record listing a new folder as `git status` shows it (`app/pkg_3/`), not its files.
    RecordFolders(u8),
    /// The record that also lists the ignored build output there is (`dist/…`, `build/`).
    RecordOutput(u8),
    /// The record that lists every path the worker wrote, its own file among them (hashed as
    /// it was before its hash was put in).
    RecordSelf(u8),
    // ---- the orchestrator ----
    Judge,
    Accept(u8),
    AcceptCommit,
    Commit,
    TaskOpen,
    Close(u8),
    Restart,
    Kill9Restart,
    // ---- hostile: a protected path by every route ----
    ProtWrite(u8),
    ProtTempRename(u8),
    ProtRemove(u8),
    ProtSedI(u8),
    ProtChmod(u8),
    ProtSymlinkSwap(u8),
    ProtCheckout(u8),
    ProtRestore(u8),
    ProtReadTree(u8),
    ProtApply(u8),
    ProtUpdateIndex(u8),
    ProtHardLink(u8),
    ProtSymLink(u8),
    ProtRenameOnto(u8),
    ProtToDir(u8),
    ProtCrlf(u8),
    ProtWorkerCommit(u8),
    ProtIndexChmodCommitted(u8),
    ProtChangeAndRestore(u8),
    ProtViaDirLink(u8),
    DeepPath,
    IgnoredPlant,
    ExcludePlant,
    /// A package beside the protected modules with a `.gitignore` of `*` of its own: the form a
    /// tool cache has, in a place an `import` reaches.
    SelfIgnorePkg,
    NestedRepo,
    SubmoduleEdit,
    ShadowSo,
    ShadowPkg,
    ShadowPyc,
    ShadowPkgSo,
    /// `app/os.py` beside the protected `app/orchestrator.py`, which does `import os`.
    ShadowImport,
    /// `app/os.abi3.so` there: an extension module, hidden by the `*.so` ignore rule.
    ShadowImportSo,
    /// `app/local_settings.py` (gitignored, imported by the orchestrator in a `try`) written:
    /// the user's, changed, or new.
    LocalSettings,
    NewProtectedName,
    // ---- hostile: code planted where git or an agent runs it ----
    HookPlant,
    /// The hook `HookPlant` puts there, removed again (as a STOP asks).
    HookRemove,
    HooksPath,
    GitConfigAlias,
    InfoAttributes,
    GitAttributes,
    ClaudeSettings,
    CodexConfig,
    GithubHooks,
    ModulesHook,
    ProtInTasks,
    ProtInReferee,
    // ---- hostile: records ----
    ForgeHash(u8),
    OmitFile(u8),
    Phantom(u8),
    Replay(u8),
    RenameTask(u8),
    DeleteRecord(u8),
    FlipStatus(u8),
    Decoy(u8),
    Malformed(u8),
    // ---- hostile content in a task ----
    Secret(u8),
    Conflict(u8),
    Broken(u8),
    Oversize(u8),
    Empty(u8),
}

impl Act {
    /// What a referee whose first look comes after the work cannot see when it came before
    /// (a commit moves the baseline it pins; `.git/info/attributes` is judged only against a
    /// start).
    pub fn blind_before_a_start(&self) -> bool {
        matches!(
            self,
            Act::ProtWorkerCommit(_)
                | Act::ProtIndexChmodCommitted(_)
                | Act::InfoAttributes
                | Act::Commit
                | Act::AcceptCommit
        )
    }

    /// The action's name without its arguments (a class of disagreement names these).
    pub fn name(&self) -> String {
        let s = format!("{self:?}");
        s.split('(').next().unwrap_or(&s).to_string()
    }

    pub fn hostile(&self) -> bool {
        use Act::*;
        !matches!(
            self,
            Write(..)
                | TempRename(..)
                | EditorBackup(..)
                | RemoveWrite(..)
                | SedI(..)
                | AddModule(..)
                | AddPackage(..)
                | AddLink(..)
                | Remove(..)
                | Rename(..)
                | ChmodX(..)
                | Crlf(..)
                | Asset(..)
                | LockRegen(..)
                | Extglob(..)
                | CodingLine(..)
                | TrailingWs(..)
                | NoFinalNewline(..)
                | FormatTree
                | FormatInPlace
                | TouchAll
                | BuildOutput
                | CleanBuild
                | PyCache
                | ToolCache
                | NodeModules
                | LogFile
                | ReadOnlyAgent
                | Record(..)
                | RecordInPlace(..)
                | RecordSloppySummary(..)
                | RecordRemoveWrite(..)
                | RecordHalf(..)
                | RecordAbsolute(..)
                | RecordSelf(..)
                | RecordFolders(..)
                | RecordOutput(..)
                | RecordUtf16(..)
                | Judge
                | Accept(..)
                | AcceptCommit
                | Commit
                | TaskOpen
                | Close(..)
                | Restart
                | Kill9Restart
        )
    }

    /// Structural steps (records, judgments, the orchestrator's moves) do not name a class.
    pub fn structural(&self) -> bool {
        use Act::*;
        matches!(
            self,
            Record(..)
                | RecordInPlace(..)
                | RecordRemoveWrite(..)
                | RecordHalf(..)
                | RecordAbsolute(..)
                | RecordSelf(..)
                | RecordFolders(..)
                | RecordOutput(..)
                | RecordUtf16(..)
                | Judge
                | Accept(..)
                | Close(..)
                | TaskOpen
                | Commit
        )
    }

    /// Steps that write, replace or remove a task record.
    pub fn writes_record(&self) -> bool {
        use Act::*;
        matches!(
            self,
            Record(..)
                | RecordInPlace(..)
                | RecordSloppySummary(..)
                | RecordRemoveWrite(..)
                | RecordHalf(..)
                | RecordAbsolute(..)
                | RecordSelf(..)
                | RecordFolders(..)
                | RecordOutput(..)
                | RecordUtf16(..)
                | ForgeHash(..)
                | Decoy(..)
                | Replay(..)
                | RenameTask(..)
                | DeleteRecord(..)
                | FlipStatus(..)
                | Malformed(..)
        )
    }

    pub fn task(&self) -> Option<u8> {
        use Act::*;
        match *self {
            Write(t, _)
            | TempRename(t, _)
            | EditorBackup(t, _)
            | RemoveWrite(t, _)
            | SedI(t, _)
            | AddModule(t, _)
            | AddPackage(t, _)
            | AddLink(t, _)
            | Remove(t, _)
            | Rename(t, _)
            | Crlf(t, _)
            | TrailingWs(t, _)
            | NoFinalNewline(t, _) => Some(t),
            ChmodX(t)
            | Asset(t)
            | LockRegen(t)
            | Extglob(t)
            | CodingLine(t)
            | Record(t)
            | RecordInPlace(t)
            | RecordSloppySummary(t)
            | RecordRemoveWrite(t)
            | RecordHalf(t)
            | RecordAbsolute(t)
            | RecordSelf(t)
            | RecordFolders(t)
            | RecordOutput(t)
            | RecordUtf16(t)
            | Accept(t)
            | Close(t)
            | ForgeHash(t)
            | OmitFile(t)
            | Phantom(t)
            | Replay(t)
            | RenameTask(t)
            | DeleteRecord(t)
            | FlipStatus(t)
            | Decoy(t)
            | Malformed(t)
            | Secret(t)
            | Conflict(t)
            | Broken(t)
            | Oversize(t)
            | Empty(t) => Some(t),
            _ => None,
        }
    }
}

/// Every action kind, one example each (for the vocabulary's size and `SIM_ONLY`).
pub fn vocabulary() -> Vec<Act> {
    use Act::*;
    vec![
        Write(0, 0),
        TempRename(0, 0),
        EditorBackup(0, 0),
        RemoveWrite(0, 0),
        SedI(0, 0),
        AddModule(0, 0),
        AddPackage(0, 0),
        AddLink(0, 0),
        Remove(0, 0),
        Rename(0, 0),
        ChmodX(0),
        Crlf(0, 0),
        Asset(0),
        LockRegen(0),
        Extglob(0),
        CodingLine(0),
        TrailingWs(0, 0),
        NoFinalNewline(0, 0),
        FormatTree,
        FormatInPlace,
        TouchAll,
        BuildOutput,
        CleanBuild,
        PyCache,
        ToolCache,
        NodeModules,
        LogFile,
        ReadOnlyAgent,
        Record(0),
        RecordInPlace(0),
        RecordSloppySummary(0),
        RecordRemoveWrite(0),
        RecordHalf(0),
        RecordAbsolute(0),
        RecordSelf(0),
        RecordFolders(0),
        RecordOutput(0),
        RecordUtf16(0),
        Judge,
        Accept(0),
        AcceptCommit,
        Commit,
        TaskOpen,
        Close(0),
        Restart,
        Kill9Restart,
        ProtWrite(0),
        ProtTempRename(0),
        ProtRemove(0),
        ProtSedI(0),
        ProtChmod(0),
        ProtSymlinkSwap(0),
        ProtCheckout(0),
        ProtRestore(0),
        ProtReadTree(0),
        ProtApply(0),
        ProtUpdateIndex(0),
        ProtHardLink(0),
        ProtSymLink(0),
        ProtRenameOnto(0),
        ProtToDir(0),
        ProtCrlf(0),
        ProtWorkerCommit(0),
        ProtIndexChmodCommitted(0),
        ProtChangeAndRestore(0),
        ProtViaDirLink(0),
        DeepPath,
        IgnoredPlant,
        ExcludePlant,
        SelfIgnorePkg,
        NestedRepo,
        SubmoduleEdit,
        ShadowSo,
        ShadowPkg,
        ShadowPyc,
        ShadowPkgSo,
        ShadowImport,
        ShadowImportSo,
        LocalSettings,
        NewProtectedName,
        HookPlant,
        HookRemove,
        HooksPath,
        GitConfigAlias,
        InfoAttributes,
        GitAttributes,
        ClaudeSettings,
        CodexConfig,
        GithubHooks,
        ModulesHook,
        ProtInTasks,
        ProtInReferee,
        ForgeHash(0),
        OmitFile(0),
        Phantom(0),
        Replay(0),
        RenameTask(0),
        DeleteRecord(0),
        FlipStatus(0),
        Decoy(0),
        Malformed(0),
        Secret(0),
        Conflict(0),
        Broken(0),
        Oversize(0),
        Empty(0),
    ]
}

/// How a session is set up.
#[derive(Clone, Copy, Debug)]
pub struct Setup {
    pub live: bool,
    pub submodule: bool,
    /// A build's output (`build/`, `dist/`) is there when the referee starts.
    pub built: bool,
    /// The user's gitignored `app/local_settings.py`, which the orchestrator imports, is there
    /// when the referee starts.
    pub local: bool,
    /// One-shot only: the referee's first look is the first judgment, after the first attempt's
    /// work (no `verify --write` before it). What no commit holds is measured from that look,
    /// which dates nothing when a record is there (see `model::veto_late`).
    pub late: bool,
}

/// A whole session: its setup and its steps.
#[derive(Clone, Debug)]
pub struct Plan {
    pub seed: u64,
    pub setup: Setup,
    pub acts: Vec<Act>,
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "seed {} ({}{}{}{}{}): ",
            self.seed,
            if self.setup.live {
                "live + verify"
            } else {
                "one-shot verify"
            },
            if self.setup.submodule {
                ", submodule"
            } else {
                ""
            },
            if self.setup.built { ", built" } else { "" },
            if self.setup.local {
                ", local settings"
            } else {
                ""
            },
            if self.setup.late {
                ", first look after the work"
            } else {
                ""
            }
        )?;
        let names: Vec<String> = self.acts.iter().map(|a| format!("{a:?}")).collect();
        write!(f, "{}", names.join(", "))
    }
}

/// Composes a random session: tasks in rounds (edits, a record, a judgment, an accept), honest
/// tools between them, and in a hostile session a few hostile steps anywhere.
pub fn generate(
    seed: u64,
    caps: Caps,
    live_share: f64,
    excluded: &dyn Fn(&Act, &Setup) -> bool,
) -> Plan {
    let mut rng = fastrand::Rng::with_seed(seed);
    // `late` is drawn from a stream of its own, so that every other draw (and every seed
    // recorded before it) stays as it was.
    let live = rng.f64() < live_share;
    let late = !live && fastrand::Rng::with_seed(seed ^ LATE_STREAM).f64() < 0.2;
    let setup = Setup {
        live,
        submodule: rng.f64() < 0.15,
        built: rng.f64() < 0.15,
        local: rng.f64() < 0.2,
        late,
    };
    let hostile = rng.bool();
    let vocab = vocabulary();
    let honest_edits: Vec<Act> = vocab
        .iter()
        .copied()
        .filter(|a| !a.hostile() && a.task().is_some() && !a.structural())
        .collect();
    let honest_tools: Vec<Act> = vocab
        .iter()
        .copied()
        .filter(|a| !a.hostile() && a.task().is_none() && !a.structural())
        .filter(|a| setup.live || !matches!(a, Act::Restart | Act::Kill9Restart))
        .filter(|a| !matches!(a, Act::AcceptCommit) || caps.accept_commit)
        .collect();
    let hostiles: Vec<Act> = vocab.iter().copied().filter(Act::hostile).collect();
    let mut acts = Vec::new();
    let ntasks = 1 + rng.usize(..TASKS.len());
    if caps.task_open && rng.bool() {
        acts.push(Act::TaskOpen);
    }
    let pick = |rng: &mut fastrand::Rng, from: &[Act], t: u8| -> Act {
        let a = from[rng.usize(..from.len())];
        let (x, y) = (rng.u8(..), rng.u8(..));
        with_args(a, t, x, y)
    };
    // In a live session each task is handed over before the next starts (the live referee
    // judges each record the moment it lands); a one-shot session may run tasks side by side.
    let concurrent = !setup.live && ntasks > 1 && rng.bool();
    let mut t = 0u8;
    while (t as usize) < ntasks {
        let group: Vec<u8> = if concurrent {
            (t..ntasks as u8).collect()
        } else {
            vec![t]
        };
        let attempts = 1 + rng.usize(..2);
        for _ in 0..attempts {
            for &g in &group {
                for _ in 0..1 + rng.usize(..3) {
                    let a = pick(&mut rng, &honest_edits, g);
                    if !excluded(&a, &setup) {
                        acts.push(a);
                    }
                }
            }
            if rng.f64() < 0.4 {
                let a = pick(&mut rng, &honest_tools, 0);
                if !excluded(&a, &setup) {
                    acts.push(a);
                }
            }
            if hostile && rng.f64() < 0.5 {
                let g = group[rng.usize(..group.len())];
                let a = pick(&mut rng, &hostiles, g);
                if !excluded(&a, &setup) {
                    acts.push(a);
                }
            }
            for &g in &group {
                let r = match rng.usize(..15) {
                    0 => Act::RecordInPlace(g),
                    1 => Act::RecordSloppySummary(g),
                    2 => Act::RecordRemoveWrite(g),
                    3 => Act::RecordHalf(g),
                    4 => Act::RecordAbsolute(g),
                    5 => Act::RecordUtf16(g),
                    6 => Act::RecordSelf(g),
                    7 => Act::RecordFolders(g),
                    8 => Act::RecordOutput(g),
                    _ => Act::Record(g),
                };
                if !excluded(&r, &setup) {
                    acts.push(r);
                }
            }
            acts.push(Act::Judge);
        }
        if caps.accept {
            for &g in &group {
                acts.push(Act::Accept(g));
                if rng.bool() && !excluded(&Act::Commit, &setup) {
                    acts.push(Act::Commit);
                }
                acts.push(Act::Close(g));
            }
        } else if rng.f64() < 0.2 && !excluded(&Act::Commit, &setup) {
            acts.push(Act::Commit);
        }
        t += group.len() as u8;
    }
    if hostile && rng.bool() {
        let g = rng.u8(..ntasks as u8);
        let a = pick(&mut rng, &hostiles, g);
        if !excluded(&a, &setup) {
            acts.push(a);
            acts.push(Act::Judge);
        }
    }
    if setup.late {
        // Before a start nothing dates a commit or `.git/info/attributes`: the contract says a
        // referee that looks after the work does not see them, so they are not drawn there.
        let first = acts.iter().position(|a| matches!(a, Act::Judge));
        let mut i = 0;
        acts.retain(|a| {
            let before = first.is_none_or(|f| i < f);
            i += 1;
            !(before && a.blind_before_a_start())
        });
    }
    Plan { seed, setup, acts }
}

/// The seed stream `late` is drawn from.
const LATE_STREAM: u64 = 0x4c41_5445_0000_0001;

fn with_args(a: Act, t: u8, x: u8, y: u8) -> Act {
    use Act::*;
    let _ = y;
    match a {
        Write(..) => Write(t, x),
        TempRename(..) => TempRename(t, x),
        EditorBackup(..) => EditorBackup(t, x),
        RemoveWrite(..) => RemoveWrite(t, x),
        SedI(..) => SedI(t, x),
        AddModule(..) => AddModule(t, x),
        AddPackage(..) => AddPackage(t, x),
        AddLink(..) => AddLink(t, x),
        Remove(..) => Remove(t, x),
        Rename(..) => Rename(t, x),
        Crlf(..) => Crlf(t, x),
        TrailingWs(..) => TrailingWs(t, x),
        NoFinalNewline(..) => NoFinalNewline(t, x),
        ChmodX(_) => ChmodX(t),
        Asset(_) => Asset(t),
        LockRegen(_) => LockRegen(t),
        Extglob(_) => Extglob(t),
        CodingLine(_) => CodingLine(t),
        ProtWrite(_) => ProtWrite(x),
        ProtTempRename(_) => ProtTempRename(x),
        ProtRemove(_) => ProtRemove(x),
        ProtSedI(_) => ProtSedI(x),
        ProtChmod(_) => ProtChmod(x),
        ProtSymlinkSwap(_) => ProtSymlinkSwap(x),
        ProtCheckout(_) => ProtCheckout(x),
        ProtRestore(_) => ProtRestore(x),
        ProtReadTree(_) => ProtReadTree(x),
        ProtApply(_) => ProtApply(x),
        ProtUpdateIndex(_) => ProtUpdateIndex(x),
        ProtHardLink(_) => ProtHardLink(x),
        ProtSymLink(_) => ProtSymLink(x),
        ProtRenameOnto(_) => ProtRenameOnto(x),
        ProtToDir(_) => ProtToDir(x),
        ProtCrlf(_) => ProtCrlf(x),
        ProtWorkerCommit(_) => ProtWorkerCommit(x),
        ProtIndexChmodCommitted(_) => ProtIndexChmodCommitted(x),
        ProtChangeAndRestore(_) => ProtChangeAndRestore(x),
        ProtViaDirLink(_) => ProtViaDirLink(x),
        ForgeHash(_) => ForgeHash(t),
        OmitFile(_) => OmitFile(t),
        Phantom(_) => Phantom(t),
        Replay(_) => Replay(t),
        RenameTask(_) => RenameTask(t),
        DeleteRecord(_) => DeleteRecord(t),
        FlipStatus(_) => FlipStatus(t),
        Decoy(_) => Decoy(t),
        Malformed(_) => Malformed(t),
        Secret(_) => Secret(t),
        Conflict(_) => Conflict(t),
        Broken(_) => Broken(t),
        Oversize(_) => Oversize(t),
        Empty(_) => Empty(t),
        other => other,
    }
}

/// How the worker writes a task record.
#[derive(Clone, Copy, Debug)]
enum Put {
    /// To a temporary name, then renamed over the record.
    Rename,
    /// Truncated and written in place.
    InPlace,
    /// Removed, then written anew.
    RemoveWrite,
    /// Written in place in two parts, with a pause between.
    Halves(Duration),
    /// In UTF-16LE with its byte-order mark, renamed over the record.
    Utf16,
}

/// What the worker knows of each task.
#[derive(Clone, Debug, Default)]
struct Task {
    touched: BTreeSet<String>,
    attempts: u64,
    accepted: bool,
    /// The attempt `accept` took: done, its verdict stands, not judged again.
    accepted_attempt: Option<u64>,
}

/// A disagreement between the referee and the model (or a broken invariant).
#[derive(Clone, Debug)]
pub struct Disagreement {
    pub kind: String,
    pub step: usize,
    pub detail: String,
}

#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub actions: usize,
    /// Sessions whose referee first looked after the work (setup `late`).
    pub late: usize,
    pub judgments: usize,
    pub vetoes: usize,
    pub veto_ms_max: u128,
    pub veto_over_1s: usize,
}

pub struct Session {
    pub w: World,
    setup: Setup,
    caps: Caps,
    prot: GlobSet,
    start: Snapshot,
    base: BTreeMap<String, Node>,
    base_commit: String,
    mem: Memory,
    /// Tasks whose guard memory the model cannot follow exactly (a live re-judgment the model
    /// does not replay): their REJECTs may escalate early.
    fuzzy: BTreeSet<String>,
    tasks: BTreeMap<String, Task>,
    n: u32,
    pub stats: Stats,
    head_moved: bool,
    side_commit: Option<String>,
    /// With `late`: what the referee's first look found (the model's snapshot then), and
    /// whether a task record was there (the look then came after the work).
    late_pin: Option<(Snapshot, bool)>,
}

fn tid(t: u8) -> String {
    TASKS[t as usize % TASKS.len()].to_string()
}

fn pool_file(t: u8, f: u8) -> &'static str {
    let ti = t as usize % TASKS.len();
    let mine: Vec<&str> = POOL
        .iter()
        .enumerate()
        .filter(|(i, _)| i % TASKS.len() == ti)
        .map(|(_, p)| *p)
        .collect();
    mine[f as usize % mine.len()]
}

fn prot_file(x: u8) -> &'static str {
    PROTECTED_FILES[x as usize % PROTECTED_FILES.len()]
}

/// A valid edit of a file of the pool (its language's own syntax), distinct for each `n`.
fn edited(path: &str, old: &[u8], n: u32) -> Vec<u8> {
    let mut s = String::from_utf8_lossy(old).into_owned();
    if !s.ends_with('\n') && !s.is_empty() {
        s.push('\n');
    }
    let ext = path.rsplit('.').next().unwrap_or("");
    match ext {
        "py" => s.push_str(&format!("\n\ndef gen_{n}(x):\n    return x + {n}\n")),
        "js" => s.push_str(&format!("export function gen{n}() {{\n  return {n};\n}}\n")),
        "ts" => s.push_str(&format!(
            "export const gen{n} = (x: number): number => x + {n};\n"
        )),
        "json" => {
            let mut v: serde_json::Value =
                serde_json::from_str(&s).unwrap_or_else(|_| json!({"tag": "token-x"}));
            v[format!("k{n}")] = json!(n);
            s = format!("{}\n", serde_json::to_string_pretty(&v).unwrap_or_default());
        }
        "yaml" => s.push_str(&format!("k{n}: {n}\n")),
        "toml" => s.push_str(&format!("k{n} = {n}\n")),
        "md" => s.push_str(&format!("\nParagraph {n}.\n")),
        "sh" => s.push_str(&format!("echo {n}\n")),
        "go" => s.push_str(&format!("\nfunc gen{n}() int {{ return {n} }}\n")),
        _ => s.push_str(&format!("{n}\n")),
    }
    s.into_bytes()
}

impl Session {
    pub fn new(setup: Setup, caps: Caps) -> Session {
        let w = World::new(setup.submodule);
        let base_commit = git_ok(&w.ws, &["rev-parse", "HEAD"]).trim().to_string();
        Session {
            start: Snapshot::default(),
            base: BTreeMap::new(),
            w,
            setup,
            caps,
            prot: model::protected_set(),
            base_commit,
            mem: Memory::default(),
            fuzzy: BTreeSet::new(),
            tasks: BTreeMap::new(),
            n: 0,
            stats: Stats::default(),
            head_moved: false,
            side_commit: None,
            late_pin: None,
        }
    }

    /// Pins the start: the model's snapshot and the referee's (a live `watch`, or a first
    /// `verify --write` that creates the state directory).
    pub fn begin(&mut self) -> Result<(), Disagreement> {
        if self.setup.built {
            let _ = self.apply(Act::BuildOutput);
        }
        if self.setup.local {
            write_file(&self.w.ws, "app/local_settings.py", b"DEBUG = True\n");
        }
        self.start = self.w.snapshot();
        self.base = world::baseline_of(&self.start);
        let r = if self.setup.live {
            self.w.start_live()
        } else if self.setup.late {
            Ok(())
        } else {
            self.w.verify(true).map(|_| ())
        };
        r.map_err(|e| Disagreement {
            kind: "referee_error".into(),
            step: 0,
            detail: e,
        })
    }

    fn next(&mut self) -> u32 {
        self.n += 1;
        self.n
    }

    fn touch(&mut self, t: u8, path: &str) {
        self.tasks
            .entry(tid(t))
            .or_default()
            .touched
            .insert(path.to_string());
    }

    fn p(&self, rel: &str) -> std::path::PathBuf {
        self.w.ws.join(rel)
    }

    fn read(&self, rel: &str) -> Option<Vec<u8>> {
        fs::read(self.p(rel)).ok()
    }

    /// Runs one step; a disagreement found while judging is returned.
    pub fn step(&mut self, i: usize, act: Act) -> Result<(), Disagreement> {
        self.stats.actions += 1;
        let mut r = self.apply(act);
        if r.is_ok() && act.hostile() {
            // The guards' memory of every task pending now may hold re-judgments the model
            // does not replay (a verdict gone stale is judged again).
            for rec in self.w.records() {
                self.fuzzy.insert(rec.file_id.clone());
            }
            // A live referee vetoes at once, not at the next judgment.
            if self.setup.live {
                let (veto, why, _) = self.model_now();
                if veto == Tri::Yes {
                    r = self.wait_veto(&why);
                }
            }
        }
        // A live referee judges a record the moment it lands: so does the model.
        if r.is_ok() && self.setup.live && act.writes_record() {
            r = self.judge();
        }
        r.map_err(|(kind, detail)| Disagreement {
            kind,
            step: i,
            detail,
        })
    }

    fn apply(&mut self, act: Act) -> Result<(), (String, String)> {
        use Act::*;
        let ws = self.w.ws.clone();
        match act {
            Write(t, f) | TempRename(t, f) | EditorBackup(t, f) | RemoveWrite(t, f) => {
                let path = pool_file(t, f);
                let Some(old) = self.read(path) else {
                    return Ok(());
                };
                let n = self.next();
                let new = edited(path, &old, n);
                let p = self.p(path);
                match act {
                    Write(..) => fs::write(&p, &new).expect("write"),
                    TempRename(..) => {
                        let tmp = p.with_extension("sim-tmp");
                        fs::write(&tmp, &new).expect("write tmp");
                        fs::rename(&tmp, &p).expect("rename");
                    }
                    EditorBackup(..) => {
                        let bak = ws.join(format!("{path}~"));
                        fs::rename(&p, &bak).expect("backup");
                        fs::write(&p, &new).expect("write");
                        let mode = fs::metadata(&bak).expect("bak").permissions();
                        fs::set_permissions(&p, mode).expect("mode");
                        fs::remove_file(&bak).expect("rm backup");
                    }
                    _ => {
                        let exec = is_exec(&p);
                        fs::remove_file(&p).expect("rm");
                        fs::write(&p, &new).expect("write");
                        chmod(&p, exec);
                    }
                }
                self.touch(t, path);
            }
            SedI(t, f) => {
                let path = pool_file(t, f);
                if self.read(path).is_none() {
                    return Ok(());
                }
                let n = self.next();
                sh(
                    &ws,
                    &format!("sed -i 's/token-\\([a-z]*\\)[0-9]*/token-\\1{n}/' '{path}'"),
                );
                self.touch(t, path);
            }
            AddModule(t, f) => {
                let n = self.next();
                let path = format!("app/task_{}_{f}.py", tid(t));
                let _ = n;
                write_file(
                    &ws,
                    &path,
                    format!("# new module\n\n\ndef run():\n    return {f}\n").as_bytes(),
                );
                self.touch(t, &path);
            }
            AddPackage(t, f) => {
                let dir = format!("pkg_{}_{f}", tid(t));
                write_file(&ws, &format!("{dir}/__init__.py"), b"");
                write_file(&ws, &format!("{dir}/core.py"), b"VALUE = 1\n");
                self.touch(t, &format!("{dir}/__init__.py"));
                self.touch(t, &format!("{dir}/core.py"));
            }
            AddLink(t, f) => {
                let (path, target) = if f % 2 == 0 {
                    (format!("app/link_{}_{f}.py", tid(t)), "views.py")
                } else {
                    (format!("scripts_{}_{f}", tid(t)), "scripts")
                };
                if fs::symlink_metadata(self.p(&path)).is_err()
                    && std::os::unix::fs::symlink(target, self.p(&path)).is_ok()
                {
                    self.touch(t, &path);
                }
            }
            Remove(t, f) => {
                let path = pool_file(t, f);
                if fs::remove_file(self.p(path)).is_ok() {
                    self.touch(t, path);
                }
            }
            Rename(t, f) => {
                let path = pool_file(t, f);
                let to = renamed(path);
                if fs::rename(self.p(path), self.p(&to)).is_ok() {
                    self.touch(t, path);
                    self.touch(t, &to);
                }
            }
            ChmodX(t) => {
                let path = pool_file(t, 250);
                let p = self.p(path);
                if p.exists() {
                    chmod(&p, !is_exec(&p));
                    self.touch(t, path);
                }
            }
            Crlf(t, f) => {
                let path = pool_file(t, f);
                let Some(old) = self.read(path) else {
                    return Ok(());
                };
                if old.contains(&b'\r') {
                    return Ok(());
                }
                let mut new = Vec::new();
                for b in old {
                    if b == b'\n' {
                        new.push(b'\r');
                    }
                    new.push(b);
                }
                fs::write(self.p(path), new).expect("crlf");
                self.touch(t, path);
            }
            Asset(t) => {
                // The committed asset is task 0's to replace; the others add their own.
                let n = self.next();
                let path = if (t as usize).is_multiple_of(TASKS.len()) {
                    "assets/logo.png".to_string()
                } else {
                    format!("assets/icon_{}.png", tid(t))
                };
                write_file(&ws, &path, &world::png((n % 250) as u8 + 2));
                self.touch(t, &path);
            }
            LockRegen(t) => {
                // The lock file is task 1's (one task regenerates it at a time).
                if t as usize % TASKS.len() != 1 {
                    return Ok(());
                }
                let n = self.next();
                let tmp = ws.join("package-lock.json.tmp");
                fs::write(&tmp, world::lock(2 + (n as usize % 40))).expect("lock");
                fs::rename(&tmp, ws.join("package-lock.json")).expect("lock rename");
                self.touch(t, "package-lock.json");
            }
            Extglob(t) => {
                let path = format!("scripts/glob_{}.sh", tid(t));
                write_file(
                    &ws,
                    &path,
                    b"#!/bin/bash\nshopt -s extglob\nfor f in *.@(py|js); do\n  echo \"$f\"\ndone\n",
                );
                self.touch(t, &path);
            }
            CodingLine(t) => {
                let path = format!("app/latin_{}.py", tid(t));
                write_file(
                    &ws,
                    &path,
                    b"# -*- coding: latin-1 -*-\nNAME = '\xe9t\xe9'\n",
                );
                self.touch(t, &path);
            }
            TrailingWs(t, f) => {
                let path = pool_file(t, f);
                let Some(old) = self.read(path) else {
                    return Ok(());
                };
                if path.ends_with(".json") {
                    return Ok(());
                }
                let n = self.next();
                let mut new = edited(path, &old, n);
                // A trailing space on the line just added (kept valid in every language).
                if let Some(pos) = new.iter().rposition(|b| *b == b'\n') {
                    new.insert(pos, b' ');
                }
                fs::write(self.p(path), new).expect("write");
                self.touch(t, path);
            }
            NoFinalNewline(t, f) => {
                let path = pool_file(t, f);
                let Some(old) = self.read(path) else {
                    return Ok(());
                };
                if path.ends_with(".json") || path.ends_with(".go") {
                    return Ok(());
                }
                let n = self.next();
                let mut new = edited(path, &old, n);
                while new.last() == Some(&b'\n') || new.last() == Some(&b'\r') {
                    new.pop();
                }
                fs::write(self.p(path), new).expect("write");
                self.touch(t, path);
            }
            FormatTree | FormatInPlace => {
                // A formatter that finds nothing to change: every file rewritten with its
                // own bytes (temp file and rename, or in place), protected ones included.
                let snap = self.w.snapshot();
                for (p, n) in &snap.nodes {
                    if model::outside_change(p) || model::ignored(p) || p.starts_with("ext/") {
                        continue;
                    }
                    if let Node::File { bytes, exec } = n {
                        let full = ws.join(p);
                        if act == FormatTree {
                            let tmp = full.with_file_name(format!(
                                ".fmt-{}",
                                full.file_name()
                                    .map(|f| f.to_string_lossy().into_owned())
                                    .unwrap_or_default()
                            ));
                            if fs::write(&tmp, bytes).is_ok() {
                                chmod(&tmp, *exec);
                                let _ = fs::rename(&tmp, &full);
                            }
                        } else if fs::symlink_metadata(&full).is_ok_and(|m| m.nlink() == 1) {
                            let _ = fs::write(&full, bytes);
                        }
                    }
                }
            }
            TouchAll => {
                sh(
                    &ws,
                    "find . -path ./.git -prune -o -path ./ext -prune -o -type f -exec touch {} +",
                );
            }
            BuildOutput => {
                // `python -m build`: copies of the sources (protected ones too) under build/.
                for p in ["app/orchestrator.py", "app/util.py", "app/roles.py"] {
                    if let Some(b) = self.read(p) {
                        write_file(&ws, &format!("build/lib/{p}"), &b);
                    }
                }
                write_file(&ws, "dist/demo-0.1.tar.gz", &world::png(7));
            }
            CleanBuild => {
                for d in ["build", "dist"] {
                    let _ = std::fs::remove_dir_all(ws.join(d));
                }
            }
            PyCache => {
                write_file(&ws, "app/__pycache__/util.cpython-312.pyc", &world::png(3));
                write_file(
                    &ws,
                    "app/__pycache__/models.cpython-312.pyc",
                    &world::png(4),
                );
            }
            ToolCache => {
                // As pytest and ruff leave them: `git status` shows neither folder.
                write_file(&ws, ".pytest_cache/v/cache/nodeids", b"[]");
                write_file(
                    &ws,
                    ".pytest_cache/README.md",
                    b"# pytest cache directory #\n",
                );
                write_file(&ws, ".ruff_cache/0.6.9/1234", &world::png(5));
                write_file(
                    &ws,
                    ".pytest_cache/.gitignore",
                    b"# Created by pytest automatically.\n*\n",
                );
                write_file(&ws, ".ruff_cache/.gitignore", b"*");
            }
            NodeModules => {
                write_file(
                    &ws,
                    "node_modules/left-pad/index.js",
                    b"module.exports = 1;\n",
                );
                write_file(&ws, "node_modules/left-pad/roles.py", b"# not ours\n");
            }
            LogFile => write_file(&ws, "test-run.log", b"ok\n"),
            ReadOnlyAgent => {
                // A read-only subagent: git status (refreshes the index), diff, log, grep.
                git(&ws, &["status", "--porcelain"]);
                git(&ws, &["diff", "--stat"]);
                git(&ws, &["log", "--oneline", "-3"]);
                git(&ws, &["grep", "-q", "token"]);
            }
            Record(t)
            | RecordInPlace(t)
            | RecordSloppySummary(t)
            | RecordRemoveWrite(t)
            | RecordHalf(t)
            | RecordAbsolute(t)
            | RecordSelf(t)
            | RecordFolders(t)
            | RecordOutput(t)
            | RecordUtf16(t) => {
                let id = tid(t);
                let Some(task) = self.tasks.get(&id).cloned() else {
                    return Ok(());
                };
                if task.accepted {
                    return Ok(());
                }
                let attempt = task.attempts + 1;
                let summary = if matches!(act, RecordSloppySummary(_)) {
                    "did some things".to_string()
                } else {
                    format!("Here's what I did: attempt {attempt} of {id}")
                };
                let mut rec = self.honest_record(&id, attempt, &summary, &task.touched);
                if matches!(act, RecordAbsolute(_)) {
                    absolute_paths(&mut rec, &ws);
                }
                if matches!(act, RecordFolders(_)) {
                    self.collapse_new_folders(&mut rec);
                }
                if matches!(act, RecordOutput(_)) {
                    // What the build made, as a worker that ran it names it: each file under
                    // `dist/`, and `build/` as one folder.
                    let snap = self.w.snapshot();
                    let mut out: Vec<String> = snap
                        .nodes
                        .iter()
                        .filter(|(k, n)| k.starts_with("dist/") && **n != Node::Dir)
                        .map(|(k, _)| k.clone())
                        .collect();
                    if snap.nodes.keys().any(|k| k.starts_with("build/")) {
                        out.push("build/".into());
                    }
                    if let Some(added) = rec["changes"]["added"].as_array_mut() {
                        added.extend(out.into_iter().map(|p| json!(p)));
                    }
                }
                if matches!(act, RecordSelf(_)) {
                    let own = format!(".tasks/{id}.json");
                    let hash = model::sha(rec.to_string().as_bytes());
                    if let Some(added) = rec["changes"]["added"].as_array_mut() {
                        added.push(json!(own));
                    }
                    if let Some(post) = rec["post_hashes"].as_object_mut() {
                        post.insert(own, json!(hash));
                    }
                }
                let how = match act {
                    RecordInPlace(_) => Put::InPlace,
                    RecordRemoveWrite(_) => Put::RemoveWrite,
                    RecordUtf16(_) => Put::Utf16,
                    // A pause of 0 to 60 ms between the two parts, the session's own.
                    RecordHalf(_) => {
                        Put::Halves(Duration::from_millis(u64::from(self.next() % 4) * 20))
                    }
                    _ => Put::Rename,
                };
                self.put_record_as(&id, &rec, how);
                if let Some(task) = self.tasks.get_mut(&id) {
                    task.attempts = attempt;
                }
            }
            Judge => return self.judge(),
            Accept(t) => return self.accept(t),
            AcceptCommit => {
                if !self.caps.accept_commit {
                    return Ok(());
                }
                // The orchestrator's own work: a vendored file, committed, then re-pinned. The
                // commit takes whatever the index holds (a worker's staged change too): the
                // referee refuses it when it changes a protected path, and otherwise every path
                // it changed is the baseline from then on.
                let n = self.next();
                write_file(&ws, &format!("vendor/upstream_{n}.txt"), b"upstream\n");
                git_ok(&ws, &["add", &format!("vendor/upstream_{n}.txt")]);
                git_ok(&ws, &["commit", "-qm", "vendor", "--no-verify"]);
                self.head_moved = true;
                let touches = self.head_touches_protected();
                let o = self
                    .w
                    .referee(&["accept", self.w.ws_str(), "--commit", "HEAD"]);
                if o.code != if touches { 1 } else { 0 } {
                    return Err((
                        "accept_commit_refused".into(),
                        format!(
                            "accept --commit HEAD exited {} (model: the commit touches a protected path: {touches}): {}",
                            o.code,
                            o.stderr.trim()
                        ),
                    ));
                }
                if !touches {
                    for (p, node) in self.committed_since_base() {
                        match node {
                            Some(node) => self.base.insert(p, node),
                            None => self.base.remove(&p),
                        };
                    }
                    self.base_commit = git_ok(&ws, &["rev-parse", "HEAD"]).trim().to_string();
                    self.head_moved = false;
                }
            }
            Commit => {
                // The orchestrator commits what is there (its hooks never run here).
                git(&ws, &["add", "-A"]);
                if git(&ws, &["commit", "-qm", "orchestrator", "--no-verify"]).code == 0 {
                    self.head_moved = true;
                }
            }
            TaskOpen => {
                if !self.caps.task_open {
                    return Ok(());
                }
                let mut args = vec!["task", "open", self.w.ws_str()];
                args.extend(TASKS.iter().copied());
                let o = self.w.referee(&args);
                if o.code != 0 {
                    return Err(("task_open_failed".into(), o.stderr));
                }
                self.mem.registered = Some(world::set_of(TASKS));
            }
            Close(t) => {
                let id = tid(t);
                if !self.tasks.get(&id).is_some_and(|t| t.accepted) {
                    return Ok(());
                }
                // The orchestrator reads the record as the model does (UTF-16 too) and writes
                // it back settled.
                let rec = self.w.records().into_iter().find(|r| r.file_id == id);
                let text = rec.and_then(|r| r.text);
                if let Some(text) = text {
                    if let Ok(mut v) = serde_json::from_str::<serde_json::Value>(&text) {
                        v["status"] = json!("accepted");
                        self.put_record(&id, &v, false);
                    }
                }
            }
            Restart | Kill9Restart => {
                if self.w.live.is_none() {
                    return Ok(());
                }
                let sig = if act == Restart {
                    libc::SIGTERM
                } else {
                    libc::SIGKILL
                };
                self.w
                    .stop_live(sig)
                    .map_err(|e| ("referee_error".to_string(), e))?;
                self.w
                    .start_live()
                    .map_err(|e| ("referee_error".to_string(), e))?;
            }
            // ---- hostile: protected paths ----
            ProtWrite(x) => append(&self.p(prot_file(x)), b"import subprocess\n"),
            ProtTempRename(x) => {
                let p = self.p(prot_file(x));
                let mut b = fs::read(&p).unwrap_or_default();
                b.extend_from_slice(b"EVIL = True\n");
                let tmp = p.with_extension("tmp");
                // A directory at the name (an earlier `ProtToDir`), or its folder gone: nothing
                // to replace.
                if fs::write(&tmp, b).is_ok() && fs::rename(&tmp, &p).is_err() {
                    let _ = fs::remove_file(&tmp);
                }
            }
            ProtRemove(x) => {
                let _ = fs::remove_file(self.p(prot_file(x)));
            }
            ProtSedI(x) => {
                sh(
                    &ws,
                    &format!("sed -i 's/return/return not/' '{}'", prot_file(x)),
                );
            }
            ProtChmod(x) => {
                let p = self.p(prot_file(x));
                chmod(&p, !is_exec(&p));
            }
            ProtSymlinkSwap(x) => {
                let path = prot_file(x);
                let Some(b) = self.read(path) else {
                    return Ok(());
                };
                let copy = self.w.side.join(format!("copy-{}", path.replace('/', "_")));
                fs::write(&copy, b).expect("copy");
                let _ = fs::remove_file(self.p(path));
                let _ = std::os::unix::fs::symlink(&copy, self.p(path));
            }
            ProtCheckout(x) | ProtRestore(x) | ProtReadTree(x) => {
                let path = prot_file(x);
                let side = self.side_commit(path);
                match act {
                    ProtCheckout(_) => {
                        git(&ws, &["checkout", &side, "--", path]);
                    }
                    ProtRestore(_) => {
                        git(&ws, &["restore", "--source", &side, "--", path]);
                    }
                    _ => {
                        git(&ws, &["read-tree", "-u", "-m", "HEAD", &side]);
                    }
                }
            }
            ProtApply(x) => {
                let path = prot_file(x);
                let Some(old) = self.read(path) else {
                    return Ok(());
                };
                let mut new = old.clone();
                new.extend_from_slice(b"APPLIED = 1\n");
                fs::write(self.w.side.join("new"), &new).expect("new");
                fs::write(self.w.side.join("old"), &old).expect("old");
                let d = sh(
                    &self.w.side,
                    &format!("git diff --no-index --src-prefix=a/ --dst-prefix=b/ old new | sed 's#a/old#a/{path}#; s#b/new#b/{path}#' > patch.diff"),
                );
                let _ = d;
                let patch = self.w.side.join("patch.diff");
                git(&ws, &["apply", patch.to_str().unwrap_or("")]);
            }
            ProtUpdateIndex(x) => {
                let path = prot_file(x);
                let blob_src = self.w.side.join("blob");
                fs::write(&blob_src, b"def run():\n    return 'owned'\n").expect("blob");
                let id = git_ok(&ws, &["hash-object", "-w", blob_src.to_str().unwrap_or("")]);
                git(
                    &ws,
                    &[
                        "update-index",
                        "--cacheinfo",
                        &format!("100644,{},{path}", id.trim()),
                    ],
                );
                git(&ws, &["checkout-index", "-f", "--", path]);
            }
            ProtHardLink(x) => {
                let _ = fs::hard_link(self.p(prot_file(x)), ws.join("app/helper_link.py"));
            }
            ProtSymLink(x) => {
                let target = prot_file(x).rsplit('/').next().unwrap_or("").to_string();
                let _ = std::os::unix::fs::symlink(target, ws.join("app/alias.py"));
            }
            ProtRenameOnto(x) => {
                write_file(&ws, "app/evil.py", b"def run():\n    return 'evil'\n");
                let _ = fs::rename(ws.join("app/evil.py"), self.p(prot_file(x)));
            }
            ProtToDir(x) => {
                let p = self.p(prot_file(x));
                if fs::remove_file(&p).is_ok() {
                    let _ = fs::create_dir(&p);
                    write_file(&p, "x", b"x\n");
                }
            }
            ProtCrlf(x) => {
                let p = self.p(prot_file(x));
                let Ok(old) = fs::read(&p) else { return Ok(()) };
                if old.contains(&b'\r') {
                    return Ok(());
                }
                let new: Vec<u8> = old
                    .iter()
                    .flat_map(|b| {
                        if *b == b'\n' {
                            vec![b'\r', b'\n']
                        } else {
                            vec![*b]
                        }
                    })
                    .collect();
                fs::write(&p, new).expect("crlf");
            }
            ProtWorkerCommit(x) => {
                append(&self.p(prot_file(x)), b"# committed\n");
                git(&ws, &["commit", "-qam", "worker", "--no-verify"]);
                self.head_moved = true;
            }
            ProtIndexChmodCommitted(x) => {
                // Only the index learns the mode; the orchestrator's next commit records it.
                git(&ws, &["update-index", "--chmod=+x", prot_file(x)]);
                if git(&ws, &["commit", "-qm", "orchestrator", "--no-verify"]).code == 0 {
                    self.head_moved = true;
                }
            }
            ProtChangeAndRestore(x) => {
                let p = self.p(prot_file(x));
                if let Ok(old) = fs::read(&p) {
                    append(&p, b"# gone soon\n");
                    fs::write(&p, old).expect("restore");
                }
            }
            ProtViaDirLink(x) => {
                let _ = std::os::unix::fs::symlink("app", ws.join("appx"));
                let name = prot_file(x).rsplit('/').next().unwrap_or("");
                append(&ws.join("appx").join(name), b"# via a link\n");
            }
            DeepPath => {
                let comps: Vec<String> = (0..40)
                    .map(|i| format!("d{i:03}{}", "x".repeat(120)))
                    .collect();
                world::write_deep(
                    &ws,
                    &comps,
                    "orchestrator.py",
                    b"def run():\n    return 'deep'\n",
                );
            }
            IgnoredPlant => write_file(&ws, "build/roles.py", b"ROLES = ['root']\n"),
            ExcludePlant => {
                append(&ws.join(".git/info/exclude"), b"private/\n");
                write_file(
                    &ws,
                    "private/safety_override.py",
                    b"def check(x):\n    return True\n",
                );
            }
            SelfIgnorePkg => {
                write_file(&ws, "app/helpers/.gitignore", b"*\n");
                write_file(
                    &ws,
                    "app/helpers/__init__.py",
                    b"def check(x):\n    return True\n",
                );
            }
            NestedRepo => {
                write_file(&ws, "nested/orchestrator.py", b"def run():\n    return 1\n");
                git(&ws.join("nested"), &["init", "-q"]);
            }
            SubmoduleEdit => {
                let p = ws.join("ext/safety_net.py");
                if p.exists() {
                    append(&p, b"def net():\n    return False\n");
                }
            }
            ShadowSo => write_file(
                &ws,
                "app/orchestrator.cpython-312-x86_64-linux-gnu.so",
                &world::png(9),
            ),
            ShadowPkg => write_file(&ws, "app/roles/__init__.py", b"ROLES = ['root']\n"),
            ShadowPyc => write_file(
                &ws,
                "app/__pycache__/orchestrator.cpython-312.pyc",
                &world::png(11),
            ),
            ShadowPkgSo => write_file(&ws, "app/roles/__init__.abi3.so", &world::png(12)),
            ShadowImport => write_file(&ws, "app/os.py", b"def getcwd():\n    return '/'\n"),
            ShadowImportSo => write_file(&ws, "app/os.abi3.so", &world::png(13)),
            LocalSettings => {
                let p = ws.join("app/local_settings.py");
                if p.exists() {
                    append(&p, b"ROLES = ['admin']\n");
                } else {
                    write_file(&ws, "app/local_settings.py", b"ROLES = ['admin']\n");
                }
            }
            NewProtectedName => write_file(
                &ws,
                "lib/safety_bypass.py",
                b"def check(x):\n    return True\n",
            ),
            HookPlant => {
                write_file(
                    &ws,
                    ".git/hooks/pre-commit",
                    b"#!/bin/sh\ntouch /tmp/referee-sim-pwned\n",
                );
                chmod(&ws.join(".git/hooks/pre-commit"), true);
            }
            HookRemove => {
                let _ = fs::remove_file(ws.join(".git/hooks/pre-commit"));
            }
            HooksPath => {
                git(&ws, &["config", "core.hooksPath", ".husky"]);
                write_file(&ws, ".husky/pre-commit", b"#!/bin/sh\nexit 0\n");
            }
            GitConfigAlias => {
                git(&ws, &["config", "alias.st", "!sh -c 'exit 0'"]);
            }
            InfoAttributes => write_file(&ws, ".git/info/attributes", b"*.py filter=evil\n"),
            GitAttributes => write_file(&ws, ".gitattributes", b"*.py filter=evil\n"),
            ClaudeSettings => write_file(
                &ws,
                ".claude/settings.json",
                b"{\"hooks\": {\"Stop\": []}}\n",
            ),
            CodexConfig => write_file(&ws, ".codex/config.toml", b"[hooks]\n"),
            GithubHooks => write_file(&ws, ".github/hooks/hooks.json", b"{}\n"),
            ModulesHook => {
                let d = ws.join(".git/modules/ext/hooks");
                if d.is_dir() {
                    write_file(
                        &ws,
                        ".git/modules/ext/hooks/post-checkout",
                        b"#!/bin/sh\nexit 0\n",
                    );
                } else {
                    write_file(&ws, ".git/hooks/post-checkout", b"#!/bin/sh\nexit 0\n");
                }
            }
            ProtInTasks => write_file(&ws, ".tasks/orchestrator.py", b"def run():\n    return 0\n"),
            ProtInReferee => {
                let d = ws.join(".referee");
                if d.is_dir() {
                    write_file(&ws, ".referee/roles.py", b"ROLES = []\n");
                }
            }
            // ---- hostile: records ----
            ForgeHash(t) | OmitFile(t) | Phantom(t) | Decoy(t) | Secret(t) | Conflict(t)
            | Broken(t) | Oversize(t) | Empty(t) => {
                let id = tid(t);
                match act {
                    OmitFile(_) => {
                        // An edit the record will not list (the worker's own change, hidden).
                        let path = pool_file(t, 7);
                        if let Some(old) = self.read(path) {
                            let n = self.next();
                            fs::write(self.p(path), edited(path, &old, n)).expect("write");
                        }
                        self.tasks.entry(id.clone()).or_default();
                    }
                    Phantom(_) => {
                        self.touch(t, "app/never_written.py");
                    }
                    Decoy(_) => {
                        write_file(&ws, "conftest.py", b"import os\nos.system('true')\n");
                        let rec = self.honest_record(
                            "decoy",
                            1,
                            "Here's what I did: a fixture",
                            &world::set_of(&["conftest.py"]),
                        );
                        self.put_record("decoy", &rec, false);
                        self.tasks.entry(id.clone()).or_default();
                    }
                    Secret(_) => {
                        let path = format!("app/keys_{id}.py");
                        write_file(&ws, &path, b"KEY = '''\n-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM9Oi7Qd0m0Ch9GvP1pN0sYHhuXw3z\nq6Ve0fYyjmGnPqGcW3u8uJ2x0oXb0rM8wLsQ6kJm2V5yQJ1zq4dQ3vS9kV8e1Hh2\n-----END RSA PRIVATE KEY-----\n'''\n");
                        self.touch(t, &path);
                    }
                    Conflict(_) => {
                        let path = format!("docs/merge_{id}.md");
                        write_file(
                            &ws,
                            &path,
                            b"# Notes\n<<<<<<< HEAD\nours\n=======\ntheirs\n>>>>>>> branch\n",
                        );
                        self.touch(t, &path);
                    }
                    Broken(_) => {
                        let path = format!("app/broken_{id}.py");
                        write_file(&ws, &path, b"def f(:  # <<broken>>\n    return 1\n");
                        self.touch(t, &path);
                    }
                    Oversize(_) => {
                        let path = format!("app/big_{id}.py");
                        let mut b = Vec::new();
                        while b.len() <= 200 * 1024 {
                            b.extend_from_slice(
                                b"X = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]\n",
                            );
                        }
                        write_file(&ws, &path, &b);
                        self.touch(t, &path);
                    }
                    Empty(_) => {
                        let path = pool_file(t, 0);
                        if self.read(path).is_some() {
                            fs::write(self.p(path), b"").expect("empty");
                            self.touch(t, path);
                        }
                    }
                    _ => {
                        // ForgeHash: the next record claims a hash the file does not have.
                        self.tasks.entry(id.clone()).or_default();
                        let Some(task) = self.tasks.get(&id).cloned() else {
                            return Ok(());
                        };
                        if task.touched.is_empty() || task.accepted {
                            return Ok(());
                        }
                        let attempt = task.attempts + 1;
                        let mut rec = self.honest_record(
                            &id,
                            attempt,
                            "Here's what I did: forged",
                            &task.touched,
                        );
                        if let Some(obj) = rec["post_hashes"].as_object_mut() {
                            for v in obj.values_mut() {
                                *v = json!("0".repeat(64));
                            }
                            if obj.is_empty() {
                                if let Some(p) = task.touched.iter().next() {
                                    obj.insert(p.clone(), json!("0".repeat(64)));
                                }
                            }
                        }
                        self.put_record(&id, &rec, false);
                        if let Some(task) = self.tasks.get_mut(&id) {
                            task.attempts = attempt;
                        }
                    }
                }
            }
            Replay(t) => {
                // A record whose attempt is set back to 1 after a later one was written.
                let id = tid(t);
                let Some(task) = self.tasks.get(&id).cloned() else {
                    return Ok(());
                };
                if task.attempts < 1 || task.accepted {
                    return Ok(());
                }
                let n = self.next();
                let path = pool_file(t, 1);
                if let Some(old) = self.read(path) {
                    fs::write(self.p(path), edited(path, &old, n)).expect("write");
                    self.touch(t, path);
                }
                let touched = self
                    .tasks
                    .get(&id)
                    .map(|t| t.touched.clone())
                    .unwrap_or_default();
                let rec = self.honest_record(&id, 1, "Here's what I did: again", &touched);
                self.put_record(&id, &rec, false);
            }
            RenameTask(t) => {
                // The same work handed over under a new id (`t1-retry`).
                let id = tid(t);
                let Some(task) = self.tasks.get(&id).cloned() else {
                    return Ok(());
                };
                if task.accepted {
                    return Ok(());
                }
                let new_id = format!("{id}-retry");
                let _ = fs::remove_file(ws.join(format!(".tasks/{id}.json")));
                let rec = self.honest_record(&new_id, 1, "Here's what I did: retry", &task.touched);
                self.put_record(&new_id, &rec, false);
            }
            DeleteRecord(t) => {
                let _ = fs::remove_file(ws.join(format!(".tasks/{}.json", tid(t))));
            }
            FlipStatus(t) => {
                let id = tid(t);
                let p = ws.join(format!(".tasks/{id}.json"));
                if let Ok(text) = fs::read_to_string(&p) {
                    if let Ok(mut v) = serde_json::from_str::<serde_json::Value>(&text) {
                        v["status"] = json!("approved");
                        self.put_record(&id, &v, false);
                    }
                }
            }
            Malformed(t) => {
                let id = tid(t);
                fs::create_dir_all(ws.join(".tasks")).expect("tasks");
                fs::write(
                    ws.join(format!(".tasks/{id}.json")),
                    format!(
                        "{{\"task_id\": \"{id}\", \"status\": \"pending_review\", \"attempt\": "
                    ),
                )
                .expect("record");
                self.tasks.entry(id).or_default();
            }
        }
        Ok(())
    }

    fn side_commit(&mut self, path: &str) -> String {
        if let Some(s) = &self.side_commit {
            return s.clone();
        }
        // A commit beside HEAD (plumbing, HEAD does not move) whose protected files differ.
        let ws = self.w.ws.clone();
        let idx = self.w.side.join("index");
        let env_git = |args: &[&str], input: Option<&str>| -> String {
            let mut c = std::process::Command::new("git");
            c.args(args)
                .current_dir(&ws)
                .env("GIT_INDEX_FILE", &idx)
                .env("GIT_AUTHOR_NAME", "w")
                .env("GIT_AUTHOR_EMAIL", "w@x")
                .env("GIT_COMMITTER_NAME", "w")
                .env("GIT_COMMITTER_EMAIL", "w@x");
            let _ = input;
            let o = c.output().expect("git");
            String::from_utf8_lossy(&o.stdout).trim().to_string()
        };
        env_git(&["read-tree", &self.base_commit], None);
        let evil = self.w.side.join("evil.py");
        fs::write(&evil, b"def run():\n    return 'side'\n").expect("evil");
        let blob = env_git(&["hash-object", "-w", evil.to_str().unwrap_or("")], None);
        let _ = path;
        for p in PROTECTED_FILES {
            env_git(
                &["update-index", "--cacheinfo", &format!("100644,{blob},{p}")],
                None,
            );
        }
        let tree = env_git(&["write-tree"], None);
        let commit = env_git(
            &["commit-tree", &tree, "-p", &self.base_commit, "-m", "side"],
            None,
        );
        self.side_commit = Some(commit.clone());
        commit
    }

    /// The record an honest worker writes: every path it touched, by what happened to it
    /// against the baseline, with the baseline's and the files' hashes.
    fn honest_record(
        &self,
        id: &str,
        attempt: u64,
        summary: &str,
        touched: &BTreeSet<String>,
    ) -> serde_json::Value {
        let (mut added, mut modified, mut removed) = (vec![], vec![], vec![]);
        let mut pre = serde_json::Map::new();
        let mut post = serde_json::Map::new();
        let snap = self.w.snapshot();
        for p in touched {
            let before = self.base.get(p);
            let now = snap.nodes.get(p).filter(|n| **n != Node::Dir);
            match (before, now) {
                (None, Some(n)) => {
                    added.push(p.clone());
                    if let Some(s) = model::node_sha(Some(n)).filter(|_| n.bytes().is_some()) {
                        post.insert(p.clone(), json!(s));
                    }
                }
                (Some(b), Some(n)) if b != n => {
                    modified.push(p.clone());
                    if let Some(bb) = b.bytes() {
                        pre.insert(p.clone(), json!(model::sha(bb)));
                    }
                    if let Some(nb) = n.bytes() {
                        post.insert(p.clone(), json!(model::sha(nb)));
                    }
                }
                (Some(b), None) => {
                    removed.push(p.clone());
                    if let Some(bb) = b.bytes() {
                        pre.insert(p.clone(), json!(model::sha(bb)));
                    }
                }
                _ => {}
            }
        }
        json!({
            "task_id": id,
            "status": "pending_review",
            "description": format!("task {id}"),
            "attempt": attempt,
            "summary": summary,
            "changes": {"added": added, "modified": modified, "removed": removed},
            "pre_hashes": pre,
            "post_hashes": post,
        })
    }

    /// Lists each new folder of `rec`'s additions as `git status` shows it: the topmost folder
    /// the baseline has nothing in, all of whose files now are additions `rec` lists, becomes
    /// one `folder/` in place of them (their hashes kept).
    fn collapse_new_folders(&self, rec: &mut serde_json::Value) {
        let Some(added) = rec["changes"]["added"].as_array() else {
            return;
        };
        let added: BTreeSet<String> = added
            .iter()
            .filter_map(|v| v.as_str().map(str::to_string))
            .collect();
        let snap = self.w.snapshot();
        let new_and_ours = |dir: &str| {
            let prefix = format!("{dir}/");
            !self.base.contains_key(dir)
                && !self.base.keys().any(|k| k.starts_with(&prefix))
                && snap
                    .nodes
                    .iter()
                    .filter(|(k, n)| k.starts_with(&prefix) && **n != Node::Dir)
                    .filter(|(k, _)| !model::ignored(k))
                    .all(|(k, _)| added.contains(k))
        };
        let mut listed: BTreeSet<String> = BTreeSet::new();
        for p in &added {
            let parts: Vec<&str> = p.split('/').collect();
            let top = (1..parts.len())
                .map(|n| parts[..n].join("/"))
                .find(|d| new_and_ours(d));
            listed.insert(match top {
                Some(d) => format!("{d}/"),
                None => p.clone(),
            });
        }
        rec["changes"]["added"] = json!(listed.into_iter().collect::<Vec<_>>());
    }

    fn put_record(&self, id: &str, v: &serde_json::Value, in_place: bool) {
        let how = if in_place { Put::InPlace } else { Put::Rename };
        self.put_record_as(id, v, how);
    }

    fn put_record_as(&self, id: &str, v: &serde_json::Value, how: Put) {
        let dir = self.w.ws.join(".tasks");
        fs::create_dir_all(&dir).expect("tasks");
        let text = serde_json::to_string_pretty(v).expect("json") + "\n";
        let dest = dir.join(format!("{id}.json"));
        match how {
            Put::InPlace => fs::write(&dest, text).expect("record"),
            Put::Rename => {
                let tmp = dir.join(format!(".{id}.json.tmp"));
                fs::write(&tmp, text).expect("record");
                fs::rename(&tmp, &dest).expect("record rename");
            }
            Put::RemoveWrite => {
                let _ = fs::remove_file(&dest);
                fs::write(&dest, text).expect("record");
            }
            Put::Utf16 => {
                let mut bytes = vec![0xff, 0xfe];
                bytes.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
                let tmp = dir.join(format!(".{id}.json.tmp"));
                fs::write(&tmp, bytes).expect("record");
                fs::rename(&tmp, &dest).expect("record rename");
            }
            Put::Halves(pause) => {
                use std::io::Write as _;
                let (a, b) = text.as_bytes().split_at(text.len() / 2);
                let mut f = fs::File::create(&dest).expect("record");
                f.write_all(a).expect("first half");
                f.flush().expect("flush");
                std::thread::sleep(pause);
                f.write_all(b).expect("second half");
            }
        }
    }

    /// Each path whose tree entry differs between the baseline commit and HEAD, with what HEAD
    /// records for it (`None`: not in HEAD).
    fn committed_since_base(&self) -> Vec<(String, Option<Node>)> {
        let ls = |rev: &str| -> BTreeMap<String, (String, String)> {
            git(&self.w.ws, &["ls-tree", "-r", rev])
                .stdout
                .lines()
                .filter_map(|l| {
                    let (meta, path) = l.split_once('\t')?;
                    let mut f = meta.split_whitespace();
                    let mode = f.next()?.to_string();
                    let _kind = f.next()?;
                    let oid = f.next()?.to_string();
                    Some((path.to_string(), (mode, oid)))
                })
                .collect()
        };
        let (a, b) = (ls(&self.base_commit), ls("HEAD"));
        let mut out = Vec::new();
        for p in a.keys().chain(b.keys().filter(|k| !a.contains_key(*k))) {
            // A committed record (or anything else of git's, the records', the referee's) is
            // never part of a change, nor of the model's baseline.
            if a.get(p) == b.get(p) || model::outside_change(p) {
                continue;
            }
            let node = b.get(p).map(|(mode, oid)| {
                let bytes = std::process::Command::new("git")
                    .args(["cat-file", "blob", oid])
                    .current_dir(&self.w.ws)
                    .output()
                    .map(|o| o.stdout)
                    .unwrap_or_default();
                match mode.as_str() {
                    "120000" => Node::Link(bytes),
                    "100755" => Node::File { bytes, exec: true },
                    "100644" => Node::File { bytes, exec: false },
                    _ => Node::Other,
                }
            });
            out.push((p.clone(), node));
        }
        out
    }

    /// Whether HEAD now records a protected path other than the baseline commit does.
    fn head_touches_protected(&self) -> bool {
        if !self.head_moved {
            return false;
        }
        let ls = |rev: &str| -> BTreeMap<String, String> {
            git(&self.w.ws, &["ls-tree", "-r", rev])
                .stdout
                .lines()
                .filter_map(|l| {
                    let (meta, path) = l.split_once('\t')?;
                    Some((path.to_string(), meta.to_string()))
                })
                .collect()
        };
        let (a, b) = (ls(&self.base_commit), ls("HEAD"));
        let touched = a
            .keys()
            .chain(b.keys())
            .filter(|p| self.prot.is_match(p.as_str()))
            .any(|p| a.get(p) != b.get(p));
        // A module committed where CPython loads it before a protected one shadows it.
        let shadowed = b.keys().filter(|p| !a.contains_key(*p)).any(|p| {
            a.keys()
                .filter(|pp| pp.ends_with(".py") && self.prot.is_match(pp.as_str()))
                .any(|pp| model::shadows(pp, p))
        });
        // A link committed that leads to a protected file: a way to it, which the veto holds.
        let linked = b
            .iter()
            .filter(|(p, m)| m.starts_with("120000") && a.get(*p) != Some(*m))
            .any(|(p, _)| {
                let target = git_ok(&self.w.ws, &["cat-file", "-p", &format!("HEAD:{p}")]);
                model::leads_to(p, &target).is_some_and(|t| self.prot.is_match(t.as_str()))
            });
        touched || shadowed || linked
    }

    /// The model's view now: the veto, and the expectations of every record judged now.
    fn model_now(&self) -> (Tri, Vec<String>, Vec<Expect>) {
        let now = self.w.snapshot();
        let (mut veto, mut why) = match &self.late_pin {
            Some((pin, after_work)) => {
                model::veto_late(&self.start, pin, *after_work, &now, &self.prot)
            }
            None => model::veto(&self.start, &now, &self.prot),
        };
        if self.head_touches_protected() {
            veto = Tri::Yes;
            why.push("HEAD: a commit touching a protected path".into());
        }
        let records = self.w.records();
        let mut exp = model::judge(&self.mem, &self.base, &now, &records, veto, &self.prot);
        // An attempt the orchestrator accepted is done: its record, until settled, is not
        // judged again against the baseline it moved.
        exp.retain(|e| {
            !self.tasks.get(&e.task).is_some_and(|t| {
                t.accepted && t.accepted_attempt.is_some() && t.accepted_attempt == e.attempt
            })
        });
        for e in &mut exp {
            if self.fuzzy.contains(&e.task) && e.verdicts.contains("REJECT") {
                e.verdicts.insert("ESCALATE");
                e.verdicts.insert("ESCALATE_CONVERGENCE");
            }
            // Stale verdicts (judged again when their scope changes) come with the session
            // commands (`accept`); a referee without them may keep the verdict it gave.
            if e.rejudge && !self.caps.accept {
                if let Some(j) = self.mem.latest(&e.task) {
                    if let Some(v) = [
                        "APPROVE",
                        "MINOR_ISSUES",
                        "REJECT",
                        "ESCALATE",
                        "ESCALATE_CONVERGENCE",
                    ]
                    .into_iter()
                    .find(|v| *v == j.verdict)
                    {
                        e.verdicts.insert(v);
                    }
                }
            }
        }
        (veto, why, exp)
    }

    /// Whether a STOP must stand: a veto, or a pending task whose latest verdict escalated.
    fn stop_expected(&self, veto: Tri) -> Option<bool> {
        let records = self.w.records();
        let escalated = records.iter().any(|r| {
            r.parsed
                .as_ref()
                .is_ok_and(|p| p.status == "pending_review")
                && self
                    .mem
                    .latest(&r.file_id)
                    .is_some_and(|j| j.verdict.starts_with("ESCALATE") && j.record_sha == r.sha)
        });
        match veto {
            Tri::Yes => Some(true),
            Tri::Maybe => None,
            Tri::No if escalated => Some(true),
            Tri::No => {
                // An escalation whose record changed since may or may not still stand.
                let changed_escalated = records.iter().any(|r| {
                    self.mem
                        .latest(&r.file_id)
                        .is_some_and(|j| j.verdict.starts_with("ESCALATE") && j.record_sha != r.sha)
                });
                // A task the model let be escalated or not (a guard it cannot decide exactly,
                // an attempt judged again over another scope): whether its STOP stands follows
                // the verdict the live referee settles on, which may come after the one it
                // answered.
                let either = records.iter().any(|r| {
                    self.mem
                        .latest(&r.file_id)
                        .is_some_and(|j| j.either_escalation && j.record_sha == r.sha)
                });
                if changed_escalated || either {
                    None
                } else {
                    Some(false)
                }
            }
        }
    }

    fn judge(&mut self) -> Result<(), (String, String)> {
        self.stats.judgments += 1;
        if self.setup.late && self.late_pin.is_none() {
            let found = self.w.snapshot();
            let record = found.nodes.keys().any(|p| {
                p.strip_prefix(".tasks/").is_some_and(|n| {
                    !n.contains('/') && !n.starts_with('.') && n.ends_with(".json")
                })
            });
            self.late_pin = Some((found, record));
            self.stats.late = 1;
        }
        let (veto, why, exp) = self.model_now();
        if veto == Tri::Yes {
            self.stats.vetoes += 1;
        }
        let mut got: BTreeMap<String, (Option<u64>, String, String)> = BTreeMap::new();
        let mut oneshot = None;
        if self.setup.live {
            if veto == Tri::Yes {
                self.wait_veto(&why)?;
            }
            for e in &exp {
                let want = e.attempt;
                let mut last = (0, None, String::new(), String::new());
                // The live referee judges on its own schedule: a verdict gone stale may still
                // be shown until it has judged the new state, so wait for one the model allows
                // (and, failing that, compare the last one given).
                let ok = self.w.wait_within(
                    &format!("a verdict for {}", e.task),
                    world::VERDICT_WAIT,
                    || {
                        last = self.w.status_task(&e.task, "5s");
                        last.0 != 4
                            && (want.is_none() || last.1 == want)
                            && e.verdicts.contains(last.2.as_str())
                    },
                );
                let answered = last.0 != 4 && (want.is_none() || last.1 == want);
                if ok.is_err() && !answered {
                    return Err((
                        "not_judged_live".into(),
                        format!(
                            "{} attempt {:?}: the live referee gave no verdict (last: exit {}, attempt {:?}, {})\nmodel: {:?} because {:?}\n{}",
                            e.task, want, last.0, last.1, last.2, e.verdicts, e.why, self.w.live_output()
                        ),
                    ));
                }
                got.insert(e.task.clone(), (last.1, last.2.clone(), last.3.clone()));
            }
        } else {
            let v = self
                .w
                .verify(true)
                .map_err(|e| ("referee_error".to_string(), e))?;
            for e in &exp {
                match v.tasks.get(&e.task) {
                    Some((a, verdict, reasons)) => {
                        got.insert(e.task.clone(), (*a, verdict.clone(), reasons.clone()));
                    }
                    None => {
                        return Err((
                            "not_judged_verify".into(),
                            format!(
                                "{}: verify lists no verdict; model {:?} because {:?}",
                                e.task, e.verdicts, e.why
                            ),
                        ))
                    }
                }
            }
            oneshot = Some(v);
        }
        // Each verdict against the model's, then into the model's memory.
        let now = self.w.snapshot();
        let records = self.w.records();
        for e in &exp {
            let (a, verdict, reasons) =
                got.get(&e.task)
                    .cloned()
                    .unwrap_or((None, String::new(), String::new()));
            if !e.verdicts.contains(verdict.as_str()) {
                return Err((
                    format!(
                        "verdict_{}_got_{}",
                        e.verdicts.iter().next().copied().unwrap_or("?").to_lowercase(),
                        verdict.to_lowercase()
                    ),
                    format!(
                        "{} attempt {:?}: referee {verdict} (attempt {a:?}, reasons: {reasons}); model {:?} because {:?} (veto: {})",
                        e.task, e.attempt, e.verdicts, e.why, why.join("; ")
                    ),
                ));
            }
            let rec_sha = records
                .iter()
                .find(|r| r.file_id == e.task)
                .map(|r| r.sha.clone())
                .unwrap_or_default();
            let at = e
                .scope
                .iter()
                .map(|p| (p.clone(), model::node_sha(now.nodes.get(p))))
                .collect();
            self.mem.keep(
                &e.task,
                Judged {
                    attempt: e.attempt,
                    record_sha: rec_sha,
                    first_verdict: verdict.clone(),
                    is_attempt: e.is_attempt,
                    verdict,
                    graded: e.graded.to_string(),
                    diff: e.diff.clone(),
                    raw_diff: e.raw_diff.clone(),
                    scope: e.scope.clone(),
                    at,
                    either_escalation: e.verdicts.iter().any(|v| v.starts_with("ESCALATE"))
                        && e.verdicts.iter().any(|v| !v.starts_with("ESCALATE")),
                },
            );
        }
        let stop = self.stop_expected(veto);
        if self.setup.live {
            // The one-shot referee on the live referee's state must agree with it (once the
            // live referee has caught up with the files: both are asked again for a while).
            let mut v = self
                .w
                .verify(false)
                .map_err(|e| ("referee_error".to_string(), e))?;
            let deadline = Instant::now() + world::VERDICT_WAIT;
            loop {
                let mismatch = got.iter().find_map(|(task, (_, verdict, _))| {
                    let (_, vv, vr) = v.tasks.get(task)?;
                    (vv != verdict).then(|| (task.clone(), verdict.clone(), vv.clone(), vr.clone()))
                });
                let Some((task, verdict, vv, vr)) = mismatch else {
                    break;
                };
                if Instant::now() > deadline {
                    return Err((
                        "live_oneshot".into(),
                        format!("{task}: live {verdict}, verify {vv} (reasons: {vr})"),
                    ));
                }
                std::thread::sleep(std::time::Duration::from_millis(200));
                let (code, a, now_verdict, reasons) = self.w.status_task(&task, "1s");
                if code != 4 {
                    got.insert(task.clone(), (a, now_verdict, reasons));
                }
                v = self
                    .w
                    .verify(false)
                    .map_err(|e| ("referee_error".to_string(), e))?;
            }
            if let Some(s) = stop {
                let want = if s { 1 } else { 0 };
                if self
                    .w
                    .wait_for("status to match the model", || self.w.status() == want)
                    .is_err()
                {
                    return Err((
                        if s {
                            "veto_missed_live"
                        } else {
                            "false_stop_live"
                        }
                        .into(),
                        format!(
                            "model STOP={s} ({}); status says otherwise\n{}",
                            why.join("; "),
                            self.w.live_output()
                        ),
                    ));
                }
            }
            oneshot = Some(v);
        }
        if let (Some(s), Some(v)) = (stop, oneshot) {
            if v.stop != s {
                return Err((
                    if s {
                        "veto_missed_verify"
                    } else {
                        "false_stop_verify"
                    }
                    .into(),
                    format!(
                        "model STOP={s} ({}); verify stop={}; verify's tasks: {}",
                        why.join("; "),
                        v.stop,
                        v.tasks
                            .iter()
                            .map(|(t, (a, verdict, r))| format!(
                                "{t} attempt {a:?} {verdict} (reasons: {r})"
                            ))
                            .collect::<Vec<_>>()
                            .join("; ")
                    ),
                ));
            }
        }
        Ok(())
    }

    /// In a live session: the STOP the model's veto calls for, and how long it took.
    fn wait_veto(&mut self, why: &[String]) -> Result<(), (String, String)> {
        let t0 = Instant::now();
        let stop_file = self.w.ws.join(".referee/OBSERVER-STOP.md");
        let ok = self
            .w
            .wait_for("the STOP file", || stop_file.exists())
            .and_then(|_| {
                self.w
                    .wait_for("status to say STOP", || self.w.status() == 1)
            });
        let ms = t0.elapsed().as_millis();
        self.stats.veto_ms_max = self.stats.veto_ms_max.max(ms);
        if ms > 1000 {
            self.stats.veto_over_1s += 1;
        }
        ok.map_err(|_| {
            (
                "veto_missed_live".to_string(),
                format!(
                    "the model vetoes ({}) but no STOP came\n{}",
                    why.join("; "),
                    self.w.live_output()
                ),
            )
        })
    }

    fn accept(&mut self, t: u8) -> Result<(), (String, String)> {
        if !self.caps.accept {
            return Ok(());
        }
        let id = tid(t);
        let Some(j) = self.mem.latest(&id).cloned() else {
            return Ok(());
        };
        let now = self.w.snapshot();
        let records = self.w.records();
        let rec_now = records
            .iter()
            .find(|r| r.file_id == id)
            .map(|r| r.sha.clone());
        let stale =
            j.at.iter()
                .any(|(p, h)| model::node_sha(now.nodes.get(p)) != *h)
                || rec_now.as_deref() != Some(j.record_sha.as_str());
        let (veto, _, _) = self.model_now();
        let touches = j.scope.iter().any(|p| self.prot.is_match(p.as_str()));
        let good = model::GOOD.contains(&j.verdict.as_str());
        let o = self.w.referee(&["accept", self.w.ws_str(), "--task", &id]);
        let want_ok = good && !stale && !touches && veto == Tri::No;
        let allowed = if veto == Tri::Maybe {
            o.code == 0 || o.code == 1
        } else {
            (o.code == 0) == want_ok && (o.code == 0 || o.code == 1)
        };
        if !allowed {
            return Err((
                if want_ok { "accept_refused" } else { "accept_allowed" }.into(),
                format!(
                    "accept --task {id}: exit {} (model: verdict {}, stale {stale}, protected {touches}, veto {veto:?}): {}",
                    o.code, j.verdict, o.stderr.trim()
                ),
            ));
        }
        if o.code == 0 {
            for p in &j.scope {
                match now.nodes.get(p) {
                    Some(n) if *n != Node::Dir => {
                        self.base.insert(p.clone(), n.clone());
                    }
                    _ => {
                        self.base.remove(p);
                    }
                }
            }
            if let Some(task) = self.tasks.get_mut(&id) {
                task.accepted = true;
                task.accepted_attempt = j.attempt;
            }
        }
        Ok(())
    }

    /// The end of a session: one last judgment, then the live referee's end.
    /// `judged_last`: the session's last step was a judgment, so nothing changed since and a
    /// one-shot session needs no other (a live referee is still asked once more: it may have
    /// moved on its own).
    pub fn finish(&mut self, judged_last: bool) -> Result<(), Disagreement> {
        let r = if judged_last && !self.setup.live {
            Ok(())
        } else {
            self.judge()
        };
        let end = self.w.stop_live(libc::SIGTERM);
        r.map_err(|(kind, detail)| Disagreement {
            kind,
            step: usize::MAX,
            detail,
        })?;
        end.map_err(|e| Disagreement {
            kind: "referee_error".into(),
            step: usize::MAX,
            detail: e,
        })
    }
}

fn renamed(path: &str) -> String {
    match path.rsplit_once('.') {
        Some((a, b)) => format!("{a}_renamed.{b}"),
        None => format!("{path}_renamed"),
    }
}

fn is_exec(p: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    fs::symlink_metadata(p).is_ok_and(|m| m.permissions().mode() & 0o100 != 0)
}

fn append(p: &Path, bytes: &[u8]) {
    use std::io::Write;
    if let Ok(mut f) = fs::OpenOptions::new().append(true).open(p) {
        let _ = f.write_all(bytes);
    }
}

use std::os::unix::fs::MetadataExt;

/// Every path of the record `rec` made absolute under the workspace `ws`: in `changes` and as
/// the keys of `pre_hashes` and `post_hashes`.
fn absolute_paths(rec: &mut serde_json::Value, ws: &Path) {
    let abs = |p: &str| format!("{}/{p}", ws.display());
    for k in ["added", "modified", "removed"] {
        if let Some(arr) = rec["changes"][k].as_array_mut() {
            for p in arr.iter_mut() {
                if let Some(s) = p.as_str() {
                    *p = json!(abs(s));
                }
            }
        }
    }
    for k in ["pre_hashes", "post_hashes"] {
        if let Some(m) = rec[k].as_object_mut() {
            *m = std::mem::take(m)
                .into_iter()
                .map(|(p, h)| (abs(&p), h))
                .collect();
        }
    }
}
