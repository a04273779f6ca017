//! What changed in a workspace (a source tree a coding agent edits) against its baseline:
//! the change set (added, modified, removed paths, with type and mode changes),
//! the contents on both sides, unified diffs, and the task records.
//!
//! Nothing the worker writes decides what changed: the baseline is pinned once
//! ([`baseline`]: git objects read in-process, or a pristine directory), and the work tree is
//! read from the file system itself ([`tree`]: names of any bytes, types, modes, bytes hashed
//! through the referee's own stat cache), never through git's index, config or filters. What
//! is ignored is what the baseline's committed `.gitignore` files say; protected globs still
//! see ignored paths ([`Workspace::ignored`]).
//!
//! `.git/`, `.tasks/` and `.referee/` at the top are never part of a change. Nothing here
//! judges: a file that cannot be read is data (its reason), for the checks to make
//! INCONCLUSIVE. It reads and never writes, except the pin [`baseline`] keeps in the state
//! directory.

pub mod accepted;
pub mod baseline;
mod compare;
pub mod diff;
pub mod eol;
pub mod gitconfig;
pub mod gitread;
pub mod link;
pub mod name;
pub mod record;
pub mod selfignore;
pub mod snapshot;
pub mod statcache;
pub mod surface;
pub mod tree;
pub mod unknowable;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::artifacts::fsread::{self, sha256_hex, FileData, ReadError};
use baseline::Baseline;
use tree::{Kind, StatCache, WorkTree};
pub use unknowable::{NoBaseline, Unknowable};

/// The referee's own folder in a workspace.
pub const OUTPUT_DIR: &str = ".referee";
/// Where task records live.
pub const TASKS_DIR: &str = ".tasks";
/// Top-level names that are never part of a change.
pub const EXCLUDED: &[&str] = &[".git", TASKS_DIR, OUTPUT_DIR];

/// The referee's stat cache of a work tree, in its state directory.
pub const STAT_CACHE: &str = "statcache.bin";

/// Which baseline to measure against.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum BaselineSpec {
    /// A git work tree: `HEAD` (pinned once); otherwise none.
    #[default]
    Auto,
    /// A git revision (`--baseline REV`).
    Rev(String),
    /// A pristine copy (`--baseline-dir DIR`).
    Dir(PathBuf),
    /// Not a git work tree: the start snapshot kept in this state directory
    /// ([`snapshot::create`]); none there, no baseline.
    Snapshot(PathBuf),
}

/// What the baseline is, for evidence and outputs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BaselineInfo {
    /// `git`, `dir` or `snapshot`.
    pub kind: &'static str,
    /// `HEAD (3f2a…)`, the directory, …
    pub describe: String,
}

/// The referee's own faults opening a workspace (exit 2): the workspace itself or the named
/// baseline cannot be used. A file that cannot be read is not one of these.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("workspace `{}` cannot be opened", .path.display())]
    Root {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`--baseline {rev}` names no commit in the repository at `{}` (try `git log` for one)", .path.display())]
    NoSuchRev { rev: String, path: PathBuf },
    #[error(
        "`--baseline {0}` needs a git work tree; for a plain directory give `--baseline-dir DIR`"
    )]
    NotGit(String),
    #[error("baseline directory `{}` cannot be opened", .path.display())]
    BaseDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the git baseline")]
    Git(#[from] gitread::GitReadError),
    #[error("{0}")]
    Pin(String),
}

/// How a path differs from the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    Added,
    Modified,
    Removed,
}

impl Change {
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Modified => "modified",
            Change::Removed => "removed",
        }
    }
}

/// A file's content on one side.
#[derive(Debug, Clone)]
pub enum Content {
    Absent,
    Bytes(Arc<FileData>),
    /// A symbolic link, never followed: its target's bytes (git's content of a link). On the
    /// work tree's side only a link that resolves inside the workspace; one that leads out of
    /// it, or nowhere, is `Unknown` (see [`link`]).
    Link(Arc<FileData>),
    /// It exists (or may) but cannot be read: why.
    Unknown(Unknowable),
}

/// The most symbolic links followed in a row (the kernel's own limit, `MAXSYMLINKS`).
const MAX_LINKS: usize = 40;

/// Which copy of a file a diff could not read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    Baseline,
    WorkTree,
}

impl std::fmt::Display for Side {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Side::Baseline => "the baseline's copy",
            Side::WorkTree => "the work tree's copy",
        })
    }
}

/// Why a file's diff cannot be made: one of its two copies cannot be read.
#[derive(Debug, Clone, thiserror::Error)]
#[error("{why} ({side})")]
pub struct DiffError {
    /// The copy that cannot be read.
    pub side: Side,
    /// Why (it names the path).
    #[source]
    pub why: Unknowable,
}

impl Content {
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            Content::Bytes(d) => Some(&d.bytes),
            _ => None,
        }
    }
}

/// A workspace against its pinned baseline, as it stands at one moment: read once per judgment.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    cap: u64,
    pub git_work_tree: bool,
    pub baseline: Option<BaselineInfo>,
    /// Why there is no baseline (evidence of every INCONCLUSIVE that needs one).
    pub no_baseline: Option<NoBaseline>,
    base: Option<Arc<Baseline>>,
    /// The referee's state directory (its memory), when the caller has one.
    state: Option<PathBuf>,
    /// Every changed path, sorted; `None` without a baseline.
    changes: Option<BTreeMap<String, Change>>,
    /// What changed about a path besides (or instead of) its bytes: its type or its mode.
    details: BTreeMap<String, String>,
    /// Paths an ignore rule of the baseline hides that the baseline does not have: never a
    /// change, but protected globs see them.
    ignored: Vec<String>,
    /// Added paths that are a way to a baseline file: a symlink resolving to one, or a hard
    /// link to one (path, the baseline file it reaches).
    aliases: Vec<(String, String)>,
    /// Paths whose change could not be decided (unreadable on a side).
    pub undecided: Vec<(String, String)>,
    /// The task records as read at opening, before the tree: see [`Workspace::records`].
    raw_records: Vec<(String, Content)>,
    /// What this judgment read of each file, on each side: the content while the budget
    /// lasts, past it only the first read's hash (see [`Held`]).
    base_cache: RefCell<HashMap<String, Held>>,
    cur_cache: RefCell<HashMap<String, Held>>,
    /// What [`Workspace::baseline_paths_once`] picked, by the asker's key.
    picked: RefCell<HashMap<String, Arc<Vec<String>>>>,
    /// The bytes of file contents this judgment may hold ([`Workspace::hold_budget`]).
    budget: u64,
    /// The bytes of file contents held now (both sides).
    held: std::cell::Cell<u64>,
    /// The size limits past which a file's content is not read for content checks (a
    /// blocking size-limit check FAILs it): see [`Workspace::limit_content`].
    content_limit: RefCell<Option<ContentLimit>>,
    /// What [`Workspace::size_on_disk`] measured, by path (the error as kind, code, message).
    sizes: RefCell<HashMap<String, SizeMeasure>>,
    /// `.git/`, `.tasks/` and `.referee/` as listed at the first look (see [`surface`]).
    surface: std::cell::OnceCell<surface::Listing>,
    /// The protected paths outside the baseline as last decided, for the glob set named.
    outside: RefCell<Option<(Vec<String>, surface::Findings)>>,
    /// The pin they were decided against.
    pinned_outside: RefCell<Option<surface::Kept>>,
    /// The work tree's folder git runs hooks from (`core.hooksPath`), when inside it.
    hooks_dir: std::cell::OnceCell<Option<String>>,
    /// Set by `referee accept --start`: the next pin of the paths no commit holds is taken
    /// anew, as they are now, and is a start whatever records are pending (the human vouched).
    start_now: std::cell::Cell<bool>,
}

/// A work tree compared with a baseline, path by path: what changed (and how, besides the
/// bytes), what the baseline's rules ignore, what could not be decided. Made in one merge over
/// both sorted listings; a live referee keeps it with its work tree and brings it up to date
/// at the keys its rescans touched, so a judgment costs the change, not the tree.
#[derive(Debug, Clone, Default)]
pub struct Compared {
    /// The baseline it is of (held, so it is never taken for another one at its address).
    base: Option<Arc<Baseline>>,
    changes: BTreeMap<String, Change>,
    details: BTreeMap<String, String>,
    ignored: BTreeSet<String>,
    undecided: BTreeMap<String, String>,
}

/// A pinned baseline, or why there is none.
pub type Pinned = Result<Arc<Baseline>, NoBaseline>;

impl Workspace {
    /// Opens `root` against the baseline `spec`, pinned now and kept nowhere (one-shot readers
    /// and tests); `cap` bounds every file read.
    pub fn open(root: &Path, spec: &BaselineSpec, cap: u64) -> Result<Workspace, WorkspaceError> {
        let root = canonical_root(root)?;
        let base = Baseline::pin(&root, spec, None, cap)?.map(Arc::new);
        Workspace::judge(&root, &base, &mut StatCache::default(), cap)
    }

    /// Opens `root` with the referee's state directory `state`: the baseline pinned
    /// there (or reused when pinned before), the kept attempts there. A `state` that does not
    /// exist is not created: the pin is then not kept. The stat cache is read from and kept
    /// at `cache_file` (in a directory only this user can write), when given.
    pub fn open_in(
        root: &Path,
        spec: &BaselineSpec,
        state: &Path,
        cache_file: Option<&Path>,
        cap: u64,
    ) -> Result<Workspace, WorkspaceError> {
        let root = canonical_root(root)?;
        let keep = state.is_dir();
        // The records first, then the tree (see `judge`). The tree's listing (most of a
        // judgment's system calls) needs neither the baseline nor the stat cache: it starts
        // now, on threads of its own, and is recorded once both are had.
        let raw_records = read_records(&root, cap);
        let lister = start_listing(&root)?;
        // The stat cache is read while the baseline is pinned (on a thread of its own, see
        // `baseline::bounded`): the two are independent, and each takes a few milliseconds on
        // a large tree.
        let (base, mut cache) = std::thread::scope(|s| {
            let loading = std::thread::Builder::new()
                .name("referee-cache".into())
                .spawn_scoped(s, || {
                    let _span = tracing::debug_span!("stat_cache_load").entered();
                    cache_file.map_or_else(StatCache::new, StatCache::load)
                });
            let base = {
                let _span = tracing::debug_span!("pin").entered();
                // With no state directory, the commit's listing is kept beside the stat cache
                // (the referee's own folder): read from the object store once, not per run.
                let listing = if keep {
                    Some(state)
                } else {
                    cache_file.and_then(Path::parent)
                };
                Baseline::pin_keeping(&root, spec, keep.then_some(state), listing, cap)
            };
            let cache = match loading.map(|h| h.join()) {
                Ok(Ok(cache)) => cache,
                // No thread for it (or it died): read here.
                _ => cache_file.map_or_else(StatCache::new, StatCache::load),
            };
            (base, cache)
        });
        let base = base?.map(Arc::new);
        let ws = Workspace::judge_listed(root, &base, &mut cache, cap, raw_records, lister)?
            .with_state(state);
        if let Some(cache_file) = cache_file.filter(|_| cache.is_dirty()) {
            let _span = tracing::debug_span!("stat_cache_save", reads = cache.reads()).entered();
            // Only when it changed (a hash learnt, a file gone); a cache that cannot be kept
            // costs the next run one read of each file, no more.
            let _ = cache.save(cache_file);
        }
        Ok(ws)
    }

    /// The workspace as it stands against a pinned baseline: the records first, then the work
    /// tree read from the file system (hashes through `cache`).
    pub fn judge(
        root: &Path,
        base: &Pinned,
        cache: &mut StatCache,
        cap: u64,
    ) -> Result<Workspace, WorkspaceError> {
        let root = canonical_root(root)?;
        // The records first, then the tree: a worker writes its files before the record that
        // says they are ready, so whatever record is read here has its files in place when
        // the tree is read next. Read the other way round, a record landing in between would
        // be judged against the tree before its change.
        let raw_records = read_records(&root, cap);
        let lister = start_listing(&root)?;
        Workspace::judge_listed(root, base, cache, cap, raw_records, lister)
    }

    /// [`Workspace::judge`] with the records read and the tree's listing started (after them)
    /// by the caller.
    fn judge_listed(
        root: PathBuf,
        base: &Pinned,
        cache: &mut StatCache,
        cap: u64,
        raw_records: Vec<(String, Content)>,
        lister: tree::Lister,
    ) -> Result<Workspace, WorkspaceError> {
        let tree = {
            let _span = tracing::debug_span!("walk").entered();
            let b = base.as_ref().ok().map(|b| &**b);
            let ig = |p: &[u8], d: bool| selfignore::ignored(b, &root, p, d);
            let known = |p: &[u8]| b.and_then(|b| b.blob_of(p));
            let opts = tree::Options {
                cap,
                skip_top: EXCLUDED,
                ignored: &ig,
                known: &known,
                hash: b.map_or(gix::hash::Kind::Sha1, Baseline::hash_kind),
            };
            // Read once and not kept: laid out sorted, never built into a map.
            WorkTree::scan_listed_sorted(lister, &opts, cache).map_err(|source| {
                WorkspaceError::Root {
                    path: root.to_path_buf(),
                    source,
                }
            })?
        };
        let _span = tracing::debug_span!("compare", paths = tree.len()).entered();
        let ws = Workspace::from_tree(
            root,
            base,
            compare::Entries::Sorted(&tree),
            raw_records,
            cap,
            None,
        );
        // The tree is not kept: freeing its entries one by one (a few milliseconds on a large
        // tree) is done beside the rest of the judgment, not before it.
        drop_beside(tree);
        Ok(ws)
    }

    /// [`Workspace::judge`] for a referee that keeps the work tree between judgments: `tree`
    /// is read in full when `None` or when `touched` is `None`, else only at the `touched`
    /// paths (encoded, relative) and what is below them.
    pub fn judge_live(
        root: &Path,
        base: &Pinned,
        tree: &mut Option<WorkTree>,
        touched: Option<&[String]>,
        cache: &mut StatCache,
        cap: u64,
    ) -> Result<Workspace, WorkspaceError> {
        let root = canonical_root(root)?;
        let raw_records = read_records(&root, cap);
        let b = base.as_ref().ok().map(|b| &**b);
        match (tree.as_mut(), touched) {
            (Some(t), Some(paths)) => {
                let _span = tracing::debug_span!("rescan", paths = paths.len()).entered();
                let ig = |p: &[u8], d: bool| selfignore::ignored(b, &root, p, d);
                let known = |p: &[u8]| b.and_then(|b| b.blob_of(p));
                let opts = tree::Options {
                    cap,
                    skip_top: EXCLUDED,
                    ignored: &ig,
                    known: &known,
                    hash: b.map_or(gix::hash::Kind::Sha1, Baseline::hash_kind),
                };
                t.rescan(&root, paths, &opts, cache);
            }
            _ => {
                let _span = tracing::debug_span!("walk").entered();
                *tree = Some(scan(&root, b, cache, cap)?);
            }
        }
        let t = tree.as_mut().ok_or_else(|| WorkspaceError::Root {
            path: root.to_path_buf(),
            source: std::io::Error::other("the work tree could not be read"),
        })?;
        // Compared again only where the rescans touched it (a full scan: all of it).
        if let Ok(b) = base {
            let _span = tracing::debug_span!("compare", paths = t.entries.len()).entered();
            Compared::bring_up_to_date(t, b);
        }
        let t = &*t;
        Ok(Workspace::from_tree(
            root.clone(),
            base,
            compare::Entries::Map(&t.entries),
            raw_records,
            cap,
            t.compared.as_deref(),
        ))
    }

    /// The workspace of `tree` against `base`: compared now in one merge, or `kept` (a
    /// comparison of this tree with this baseline, up to date).
    fn from_tree(
        root: PathBuf,
        base: &Pinned,
        tree: compare::Entries<'_>,
        raw_records: Vec<(String, Content)>,
        cap: u64,
        kept: Option<&Compared>,
    ) -> Workspace {
        let git_work_tree = std::fs::symlink_metadata(root.join(".git")).is_ok();
        let mut ws = Workspace {
            root,
            cap,
            git_work_tree,
            baseline: None,
            no_baseline: None,
            base: None,
            state: None,
            changes: None,
            details: BTreeMap::new(),
            ignored: Vec::new(),
            aliases: Vec::new(),
            undecided: Vec::new(),
            raw_records,
            base_cache: RefCell::new(HashMap::new()),
            cur_cache: RefCell::new(HashMap::new()),
            picked: RefCell::new(HashMap::new()),
            budget: hold_budget(cap),
            held: std::cell::Cell::new(0),
            content_limit: RefCell::new(None),
            sizes: RefCell::new(HashMap::new()),
            surface: std::cell::OnceCell::new(),
            outside: RefCell::new(None),
            pinned_outside: RefCell::new(None),
            hooks_dir: std::cell::OnceCell::new(),
            start_now: std::cell::Cell::new(false),
        };
        match base {
            Ok(b) => {
                ws.baseline = Some(b.info.clone());
                match kept {
                    Some(c) => ws.adopt(std::borrow::Cow::Borrowed(c), b, tree),
                    None => ws.compare(b, tree),
                }
                ws.base = Some(b.clone());
            }
            Err(why) => ws.no_baseline = Some(why.clone()),
        }
        if let compare::Entries::Sorted(_) = tree {
            ws.seed_from_scan(tree);
        }
        ws
    }

    /// Takes the hashes of a fresh scan (the read that decided what changed) as the first read
    /// of each changed regular file: a file hashed there need not be read again to be known by
    /// its hash, and a later read that differs is "changed while it was judged".
    fn seed_from_scan(&self, tree: compare::Entries<'_>) {
        let Some(changes) = &self.changes else {
            return;
        };
        let mut cache = self.cur_cache.borrow_mut();
        for (rel, change) in changes {
            if *change == Change::Removed {
                continue;
            }
            let Some(e) = tree.get(rel) else { continue };
            if let (Kind::File { .. }, Some(sha), None) = (&e.kind, &e.sha256, &e.unreadable) {
                cache.insert(
                    rel.clone(),
                    Held::Hashed(Digest {
                        sha256: fsread::hex(sha),
                        size: e.size,
                    }),
                );
            }
        }
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// This workspace judged with the referee's state directory `state` (where the kept
    /// attempts are).
    pub fn with_state(mut self, state: &Path) -> Workspace {
        self.state = Some(state.to_path_buf());
        self
    }

    /// Makes the next pin of the paths no commit holds a start taken now (see
    /// [`Workspace::outside_baseline`]): what `referee accept --start` does when a human vouches
    /// for them as they are.
    pub fn start_now(&self) {
        self.start_now.set(true);
        *self.outside.borrow_mut() = None;
    }

    /// The referee's state directory, when given.
    pub fn state(&self) -> Option<&Path> {
        self.state.as_deref()
    }

    /// Every change against the baseline, by path; `None` without a baseline.
    pub fn changes(&self) -> Option<&BTreeMap<String, Change>> {
        self.changes.as_ref()
    }

    /// What changed about `rel` besides its bytes (`type: …`, `mode: …`), if anything.
    pub fn detail(&self, rel: &str) -> Option<&str> {
        self.details.get(rel).map(String::as_str)
    }

    /// Present paths the baseline's ignore rules hide (not changes; protected globs see them).
    pub fn ignored(&self) -> &[String] {
        &self.ignored
    }

    /// Added paths that reach a baseline file (a symlink to it, a hard link of it).
    pub fn aliases(&self) -> &[(String, String)] {
        &self.aliases
    }

    /// What commits made since the pin changed against it (see [`Baseline::committed`]).
    pub fn committed(&self) -> Option<baseline::Committed> {
        self.base.as_ref()?.committed()
    }

    /// The baseline's content of `rel` (`Unknown` without a baseline). Held within the
    /// judgment's budget; past it read again when asked again, and compared with the first
    /// read's hash (see [`Workspace::current`]).
    pub fn base(&self, rel: &str) -> Content {
        self.held_read(&self.base_cache, rel, || self.read_base(rel))
    }

    /// Reads the baseline's content of `rel`, not held.
    fn read_base(&self, rel: &str) -> Content {
        // A path no baseline holds (under `.git/`, `.tasks/`, `.referee/`, or ignored): its
        // bytes as pinned when the referee started, when kept.
        let pinned = || {
            let kept = self.pinned_outside.borrow();
            kept.as_ref().and_then(|k| k.copy(rel))
        };
        let in_base = self
            .base
            .as_ref()
            .is_some_and(|b| b.entries.contains_key(rel));
        match &self.base {
            Some(_) if !in_base && pinned().is_some() => pinned().unwrap_or(Content::Absent),
            None => Content::Unknown(Unknowable::NoBaseline(self.why_no_baseline())),
            Some(b) if b.is_git() => {
                let (b2, key, cap) = (b.clone(), rel.to_string(), self.cap);
                b.read_bounded(move || b2.content(&key, cap))
                    .unwrap_or_else(|| {
                        Content::Unknown(if b.is_stuck() {
                            Unknowable::GitStuck {
                                rel: rel.to_string(),
                                secs: baseline::GIT_READ_LIMIT.as_secs(),
                            }
                        } else {
                            Unknowable::GitPanicked {
                                rel: rel.to_string(),
                            }
                        })
                    })
            }
            Some(b) => b.content(rel, self.cap),
        }
    }

    /// The work tree's content of `rel`: a regular file's bytes; a symlink is never followed.
    ///
    /// What one judgment reads of a file is what every check of it sees: the first read is
    /// held while the judgment's byte budget lasts ([`Workspace::hold_budget`]); past it only
    /// that read's SHA-256 and size are kept, and a later read that differs is `Unknown`
    /// ("changed while it was judged"), so the bound opens no gap between a check and another.
    pub fn current(&self, rel: &str) -> Content {
        self.held_read(&self.cur_cache, rel, || self.read_current(rel))
    }

    /// Reads the work tree's content of `rel`, not held.
    fn read_current(&self, rel: &str) -> Content {
        if rel == ".git" || rel.starts_with(".git/") {
            // Where git keeps it: a linked work tree's or a submodule's `.git/` is elsewhere.
            match self.surface().look(rel) {
                Ok(Some(l)) if l.kind == "file" => match l.bytes {
                    Some(b) => Content::Bytes(Arc::new(FileData::from_bytes(rel, b, None))),
                    None => Content::Unknown(Unknowable::SurfaceOver {
                        rel: rel.to_string(),
                        size: surface::SMALL,
                    }),
                },
                Ok(Some(l)) => Content::Unknown(Unknowable::NotAFile {
                    rel: rel.to_string(),
                    kind: l.kind.to_string(),
                }),
                Ok(None) => Content::Absent,
                Err(why) => Content::Unknown(Unknowable::Surface(why)),
            }
        } else {
            read(&self.root, rel, self.cap, true)
        }
    }

    /// `rel`'s content on one side, through that side's record of this judgment's reads: held
    /// content as it was first read; past the budget, `read` again and compared with the first
    /// read's hash.
    fn held_read(
        &self,
        cache: &RefCell<HashMap<String, Held>>,
        rel: &str,
        read: impl FnOnce() -> Content,
    ) -> Content {
        let first = cache.borrow().get(rel).cloned();
        match first {
            Some(Held::Kept(c)) => c,
            Some(Held::Hashed(d)) => {
                let now = same_as_first(rel, &d, read());
                // The same bytes again, and room for them now: held from here on.
                if let Content::Bytes(b) = &now {
                    if self.held.get().saturating_add(b.size) <= self.budget {
                        self.held.set(self.held.get() + b.size);
                        cache
                            .borrow_mut()
                            .insert(rel.to_string(), Held::Kept(now.clone()));
                    }
                }
                now
            }
            None => {
                let c = read();
                self.remember(cache, rel, &c);
                c
            }
        }
    }

    /// Records the first read of `rel`: held while the budget lasts, else its hash.
    fn remember(&self, cache: &RefCell<HashMap<String, Held>>, rel: &str, c: &Content) {
        let held = match c {
            Content::Bytes(d) if self.held.get().saturating_add(d.size) > self.budget => {
                Held::Hashed(Digest::of(d))
            }
            Content::Bytes(d) => {
                self.held.set(self.held.get().saturating_add(d.size));
                Held::Kept(c.clone())
            }
            other => Held::Kept(other.clone()),
        };
        cache.borrow_mut().insert(rel.to_string(), held);
    }

    /// The bytes of file contents one judgment holds at most (both sides together): the
    /// smaller of [`HOLD_BUDGET`] and the read cap. Past it a file's first read is hashed and
    /// let go (a file read again is compared with that hash).
    pub fn hold_budget(&self) -> u64 {
        self.budget
    }

    /// The work tree's `rel` as this judgment holds it, when it holds its bytes (nothing is
    /// read here).
    pub fn current_if_held(&self, rel: &str) -> Option<Arc<FileData>> {
        match self.cur_cache.borrow().get(rel) {
            Some(Held::Kept(Content::Bytes(d))) => Some(d.clone()),
            _ => None,
        }
    }

    /// What a reader (a parser, a test runner) meets at the work tree's `rel`: its content, or
    /// for a link inside the workspace the regular file it leads to (read again, not held:
    /// links are few). A link to a folder is `Unknown` (not a regular file).
    pub fn followed(&self, rel: &str) -> Content {
        match self.current(rel) {
            Content::Link(_) => read(&self.root, rel, self.cap, false),
            c => c,
        }
    }

    /// Whether this judgment read the work tree's `rel` as a link (nothing is read here).
    pub fn read_a_link(&self, rel: &str) -> bool {
        matches!(
            self.cur_cache.borrow().get(rel),
            Some(Held::Kept(Content::Link(_)))
        )
    }

    /// For a link this judgment read at `rel` on `side` (nothing else is read here), the file
    /// it leads to: what `sha256sum` of the link hashes.
    pub fn led_to(&self, rel: &str, side: Side) -> Option<Arc<FileData>> {
        let cache = match side {
            Side::Baseline => &self.base_cache,
            Side::WorkTree => &self.cur_cache,
        };
        let is_link = matches!(cache.borrow().get(rel), Some(Held::Kept(Content::Link(_))));
        let followed = match (is_link, side) {
            (false, _) => return None,
            (true, Side::Baseline) => self.base_followed(rel),
            (true, Side::WorkTree) => self.followed(rel),
        };
        match followed {
            Content::Bytes(d) => Some(d),
            _ => None,
        }
    }

    /// What a reader met at the baseline's `rel`: a link resolved by its text inside the
    /// baseline's tree (at most [`MAX_LINKS`] links in a row).
    pub fn base_followed(&self, rel: &str) -> Content {
        let mut at = rel.to_string();
        for _ in 0..MAX_LINKS {
            match self.base(&at) {
                Content::Link(d) => match link::resolve(&at, &d.bytes) {
                    Some(next) => at = next,
                    None => {
                        return Content::Unknown(Unknowable::BaseLinkOut {
                            rel: at,
                            to: d.text().into_owned(),
                        })
                    }
                },
                c => return c,
            }
        }
        Content::Unknown(Unknowable::BaseLinkLoop {
            rel: rel.to_string(),
            max: MAX_LINKS,
        })
    }

    /// Why there is no baseline: the pin's reason, one answer for every check and output.
    pub fn why_no_baseline(&self) -> NoBaseline {
        self.no_baseline.clone().unwrap_or(NoBaseline::NoSnapshot)
    }

    /// The bytes of file contents held now.
    pub fn held_bytes(&self) -> u64 {
        self.held.get()
    }

    /// The SHA-256 and size of the work tree's `rel` as this judgment first read it (`None`:
    /// absent; `Err`: why it cannot be read): from what was read before, else hashed as it is
    /// read, a piece at a time, without holding it when it would not fit in the budget.
    pub fn current_digest(&self, rel: &str) -> Result<Option<Digest>, Unknowable> {
        let first = self.cur_cache.borrow().get(rel).cloned();
        match first {
            Some(h) => return h.digest(),
            None if !self.streams(rel) => return Digest::of_content(&self.current(rel)),
            None => {}
        }
        let c = match self.stream_current(rel) {
            Ok(Some(d)) => {
                let out = Ok(Some(d.clone()));
                self.cur_cache
                    .borrow_mut()
                    .insert(rel.to_string(), Held::Hashed(d));
                return out;
            }
            Ok(None) => Content::Absent,
            Err(why) => Content::Unknown(why),
        };
        self.remember(&self.cur_cache, rel, &c);
        Digest::of_content(&c)
    }

    /// The SHA-256 and size of the baseline's `rel` (see [`Workspace::current_digest`]).
    pub fn base_digest(&self, rel: &str) -> Result<Option<Digest>, Unknowable> {
        let first = self.base_cache.borrow().get(rel).cloned();
        match first {
            Some(h) => h.digest(),
            None => Digest::of_content(&self.base(rel)),
        }
    }

    /// Whether the work tree's `rel` is hashed as it is read rather than read whole: a plain
    /// regular file (by a short path, outside `.git/`) that would not fit in what is left of
    /// the budget.
    fn streams(&self, rel: &str) -> bool {
        if rel == ".git" || rel.starts_with(".git/") {
            return false;
        }
        let path = name::to_path(&self.root, rel);
        if tree::is_long(path.as_os_str().len()) {
            return false;
        }
        let left = self.budget.saturating_sub(self.held.get());
        std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_file() && m.len() > left)
    }

    /// Hashes the work tree's `rel` as [`read`] reads it, a piece at a time.
    fn stream_current(&self, rel: &str) -> Result<Option<Digest>, Unknowable> {
        let path = name::to_path(&self.root, rel);
        match fsread::hash_file(&self.root, &path, &name::display(rel), self.cap) {
            Ok((sha256, size)) => Ok(Some(Digest { sha256, size })),
            Err(ReadError::NotFound(_)) => Ok(None),
            Err(e) => Err(Unknowable::Read(e)),
        }
    }

    /// Sets the size limits of the blocking size-limit check: a file over its limit is not read
    /// for content checks ([`Workspace::content`]), since that check FAILs it anyway.
    pub fn limit_content(&self, limit: Option<ContentLimit>) {
        *self.content_limit.borrow_mut() = limit;
    }

    /// When `rel` is over the size limit the blocking size-limit check FAILs it for (see
    /// [`Workspace::limit_content`]): its size and that limit. A check of what a file holds
    /// (syntax, added lines, style) leaves such a file unread; the size is measured once per
    /// judgment, so the size-limit check FAILs every file left unread.
    pub fn over_limit(&self, rel: &str) -> Option<(u64, u64)> {
        let limit = self.content_limit.borrow().as_ref().map(|l| l.of(rel))?;
        match self.size_on_disk(rel) {
            Ok((true, len)) if len > limit => Some((len, limit)),
            _ => None,
        }
    }

    /// The work tree's content of `rel` for a check of what it holds: [`Workspace::current`],
    /// or `Unknown` for a file over its size limit ([`Workspace::over_limit`]), not read.
    pub fn content(&self, rel: &str) -> Content {
        if let Some((len, limit)) = self.over_limit(rel) {
            return Content::Unknown(Unknowable::OverLimit {
                rel: rel.to_string(),
                size: len,
                limit,
            });
        }
        self.current(rel)
    }

    /// Whether `rel` in the work tree is a regular file or a link (measured as its target's
    /// length, not followed) and its size on disk,
    /// at any depth (through directory descriptors where the path is too long for one call).
    /// Measured once per judgment: the size-limit check and the content checks that leave a
    /// file over its limit unread ([`Workspace::over_limit`]) see the same size.
    pub fn size_on_disk(&self, rel: &str) -> std::io::Result<(bool, u64)> {
        let measured = self.sizes.borrow().get(rel).cloned();
        let m = measured.unwrap_or_else(|| {
            let m = self
                .measure(rel)
                .map_err(|e| (e.kind(), e.raw_os_error(), e.to_string()));
            self.sizes.borrow_mut().insert(rel.to_string(), m.clone());
            m
        });
        m.map_err(|(kind, os, msg)| match os {
            Some(code) => std::io::Error::from_raw_os_error(code),
            None => std::io::Error::new(kind, msg),
        })
    }

    fn measure(&self, rel: &str) -> std::io::Result<(bool, u64)> {
        let path = name::to_path(&self.root, rel);
        if tree::is_long(path.as_os_str().len()) {
            return tree::size_in_tree(&self.root, &name::decode(rel));
        }
        // A link is measured as git stores it: its target's length (what it leads to is not
        // part of the change).
        std::fs::symlink_metadata(path).map(|m| (m.is_file() || m.is_symlink(), m.len()))
    }

    /// The unified diff of `rel` from the baseline to the work tree ("" when equal).
    pub fn diff(&self, rel: &str) -> Result<String, DiffError> {
        let side = |c: Content, side: Side| match c {
            Content::Absent => Ok(None),
            Content::Bytes(d) | Content::Link(d) => Ok(Some(d)),
            Content::Unknown(why) => Err(DiffError { side, why }),
        };
        let shown = name::display(rel);
        // Over the diff's limit on either side: the two hashes and sizes, never the contents
        // (a diff of megabytes is read by nobody, and would be held and kept with the attempt).
        let digests = (
            self.base_digest(rel).map_err(|why| DiffError {
                side: Side::Baseline,
                why,
            })?,
            self.current_digest(rel).map_err(|why| DiffError {
                side: Side::WorkTree,
                why,
            })?,
        );
        let big = |d: &Option<Digest>| d.as_ref().is_some_and(|d| d.size > MAX_DIFF_BYTES);
        if big(&digests.0) || big(&digests.1) {
            let mut d = String::new();
            if digests.0 != digests.1 {
                let one = |d: &Option<Digest>| {
                    d.as_ref().map_or("absent".to_string(), |d| {
                        format!("{} bytes, sha256 {}", d.size, d.sha256)
                    })
                };
                d = format!(
                    "# {shown}: too large to diff (over {MAX_DIFF_BYTES} bytes): {} -> {}\n",
                    one(&digests.0),
                    one(&digests.1)
                );
            }
            if let Some(detail) = self.detail(rel) {
                d.insert_str(0, &format!("# {shown}: {detail}\n"));
            }
            return Ok(d);
        }
        let old = side(self.base(rel), Side::Baseline)?;
        let new = side(self.current(rel), Side::WorkTree)?;
        let mut d = diff::unified(
            &shown,
            old.as_deref().map(|d| &d.bytes[..]),
            new.as_deref().map(|d| &d.bytes[..]),
        );
        if let Some(detail) = self.detail(rel) {
            d.insert_str(0, &format!("# {shown}: {detail}\n"));
        }
        Ok(d)
    }

    /// Whether a record's listing `p` names what git ignores and nothing else: an ignored path
    /// that is there (a build's output the worker names), or a folder with ignored paths in it
    /// and no change beneath it. Such a listing claims nothing.
    fn lists_ignored(&self, p: &str) -> bool {
        let p = p.trim_end_matches('/');
        let first_from = |from: &str| {
            let at = self.ignored.partition_point(|q| q.as_str() < from);
            self.ignored.get(at)
        };
        let dir = format!("{p}/");
        let changed_beneath = self.changes.as_ref().is_some_and(|c| {
            c.range(dir.clone()..)
                .next()
                .is_some_and(|(k, _)| k.starts_with(&dir))
        });
        first_from(p).is_some_and(|q| q == p)
            || (first_from(&dir).is_some_and(|q| q.starts_with(&dir)) && !changed_beneath)
    }

    /// The task records under `.tasks/` (`*.json` directly in it), sorted by path, as read
    /// when the workspace was opened; records that cannot be read are records with an error.
    pub fn records(&self, required: &[String]) -> Vec<record::Record> {
        self.raw_records
            .iter()
            .map(|(rel, content)| {
                let failed = |message: String| record::Record {
                    stem: record_stem(rel).to_string(),
                    rel: rel.clone(),
                    parsed: Err(record::RecordError {
                        message,
                        line: 0,
                        column: 0,
                    }),
                };
                match content {
                    Content::Bytes(d) => {
                        let mut r = record::parse(rel, &d.bytes, required);
                        if let Ok(t) = &mut r.parsed {
                            t.relative_to(&self.root);
                            // A path git ignores is never a change either.
                            t.forget_unchangeable(|p| excluded(p) || self.lists_ignored(p));
                            if let (Some(base), Some(changes)) = (&self.base, &self.changes) {
                                t.expand_folders(
                                    |p| base.is_submodule(p),
                                    |p| !base.tracks(p),
                                    changes,
                                );
                            }
                        }
                        r
                    }
                    Content::Link(d) => failed(format!(
                        "a symbolic link (to `{}`): a record is read only as a regular file",
                        d.text()
                    )),
                    Content::Absent => failed("vanished while being read".into()),
                    Content::Unknown(why) => failed(format!("cannot be read: {why}")),
                }
            })
            .collect()
    }

    /// Why a start pinned now would be no start: a task record is here (any status, or one that
    /// cannot be read; a hook's attempt is one), so a worker has already been at work and what
    /// it did may be in the tree. A record marked done or removed before the referee's first
    /// look hides that: the start is taken before the work (`watch`, a hook session's first
    /// event), not after it. `None` when no record is here.
    pub(crate) fn pending_record(&self) -> Option<String> {
        self.raw_records.first().map(|(rel, _)| {
            format!(
                "the referee's start was taken by a judgment of work already done (`{}` was \
                 there then), so nothing says it was there before the work (a human who has \
                 looked at it vouches with `referee accept --start`)",
                name::display(rel)
            )
        })
    }

    /// Judges a task record that is not in the workspace, as if read from `.tasks/` at opening:
    /// an agent hook's implicit attempt ([`crate::judge::attempt`]), kept in memory, never
    /// written into the workspace. `rel` names it (`.tasks/<stem>.json`).
    pub fn add_record(&mut self, rel: &str, bytes: Vec<u8>) {
        let data = FileData {
            rel: rel.to_string(),
            size: bytes.len() as u64,
            sha256: sha256_hex(&bytes),
            bytes: bytes.into(),
            mtime: None,
        };
        self.raw_records.retain(|(r, _)| r != rel);
        self.raw_records
            .push((rel.to_string(), Content::Bytes(Arc::new(data))));
    }

    /// Leaves the record at `rel` out of this judgment (the live referee defers a record whose
    /// own file event it has not handled yet: the files written before it may not be read).
    pub fn defer_record(&mut self, rel: &str) {
        self.raw_records.retain(|(r, _)| r != rel);
    }

    /// SHA-256 of a content, for evidence and hash checks.
    pub fn sha256(c: &Content) -> Option<String> {
        match c {
            Content::Bytes(d) => Some(d.sha256.clone()),
            _ => None,
        }
    }
}

/// The most bytes of file contents one judgment holds (both sides together), whatever the
/// workspace holds: past it a file's first read is hashed and let go.
pub const HOLD_BUDGET: u64 = 32 << 20;

/// The most bytes of a file's copy a diff is made of: past it the diff is the two hashes.
pub const MAX_DIFF_BYTES: u64 = 4 << 20;

/// The budget of a judgment whose reads are capped at `cap`: [`HOLD_BUDGET`], or the cap when
/// smaller (a referee told to read little holds little).
pub fn hold_budget(cap: u64) -> u64 {
    HOLD_BUDGET.min(cap)
}

/// A file's identity as a judgment read it: its SHA-256 (lowercase hex) and size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Digest {
    pub sha256: String,
    pub size: u64,
}

impl Digest {
    fn of(d: &FileData) -> Digest {
        Digest {
            sha256: d.sha256.clone(),
            size: d.size,
        }
    }

    /// The digest of a content: `None` when absent, `Err` (why) when it cannot be read.
    fn of_content(c: &Content) -> Result<Option<Digest>, Unknowable> {
        match c {
            Content::Bytes(d) | Content::Link(d) => Ok(Some(Digest::of(d))),
            Content::Absent => Ok(None),
            Content::Unknown(why) => Err(why.clone()),
        }
    }
}

/// What one judgment keeps of its first read of a file on one side.
#[derive(Debug, Clone)]
enum Held {
    /// What it read (within the budget), or that it is absent or unreadable.
    Kept(Content),
    /// Past the budget: the first read's hash and size; a later read is compared with it.
    Hashed(Digest),
}

impl Held {
    fn digest(&self) -> Result<Option<Digest>, Unknowable> {
        match self {
            Held::Kept(c) => Digest::of_content(c),
            Held::Hashed(d) => Ok(Some(d.clone())),
        }
    }
}

/// A read of `rel` made after the first one (`first`) of the same judgment: the same bytes,
/// or `Unknown`, saying how the file changed while it was judged.
fn same_as_first(rel: &str, first: &Digest, now: Content) -> Content {
    let now_is = match &now {
        Content::Bytes(d) if d.sha256 == first.sha256 => return now,
        Content::Bytes(d) => format!("{} bytes, sha256 {}", d.size, d.sha256),
        Content::Link(d) => format!("a symbolic link to `{}`", d.text()),
        Content::Absent => "absent".to_string(),
        Content::Unknown(why) => format!("unreadable: {why}"),
    };
    Content::Unknown(Unknowable::Changed {
        rel: rel.to_string(),
        size: first.size,
        sha256: first.sha256.clone(),
        now: now_is,
    })
}

/// A size measured ([`Workspace::size_on_disk`]), its error kept as kind, OS code and message.
type SizeMeasure = Result<(bool, u64), (std::io::ErrorKind, Option<i32>, String)>;

/// The size limits (a blocking size-limit check's) past which a file's content is not read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContentLimit {
    /// By extension (matched case-insensitively at the end of the path), the first wins.
    pub by_extension: Vec<(String, u64)>,
    /// For every other file.
    pub default: u64,
}

impl ContentLimit {
    /// The limit of `rel`.
    pub fn of(&self, rel: &str) -> u64 {
        let lower = rel.to_ascii_lowercase();
        self.by_extension
            .iter()
            .find(|(ext, _)| lower.ends_with(&ext.to_ascii_lowercase()))
            .map_or(self.default, |(_, max)| *max)
    }
}

/// Drops `value` on a thread of its own (here, if there is none to be had). A process that
/// ends first leaves the rest to the OS.
fn drop_beside<T: Send + 'static>(value: T) {
    let _ = std::thread::Builder::new()
        .name("referee-free".into())
        .spawn(move || drop(value));
}

/// Starts listing the work tree at `root` on threads of its own (the referee's directories left
/// out); an `Err` when `root` cannot be opened as a directory.
fn start_listing(root: &Path) -> Result<tree::Lister, WorkspaceError> {
    tree::Lister::start(root, EXCLUDED).map_err(|source| WorkspaceError::Root {
        path: root.to_path_buf(),
        source,
    })
}

fn canonical_root(root: &Path) -> Result<PathBuf, WorkspaceError> {
    let canon = std::fs::canonicalize(root).map_err(|source| WorkspaceError::Root {
        path: root.to_path_buf(),
        source,
    })?;
    std::fs::read_dir(&canon).map_err(|source| WorkspaceError::Root {
        path: root.to_path_buf(),
        source,
    })?;
    Ok(canon)
}

/// The work tree as the file system has it, with the baseline's ignore rules.
pub fn scan(
    root: &Path,
    base: Option<&Baseline>,
    cache: &mut StatCache,
    cap: u64,
) -> Result<WorkTree, WorkspaceError> {
    let ig = |p: &[u8], d: bool| selfignore::ignored(base, root, p, d);
    let known = |p: &[u8]| base.and_then(|b| b.blob_of(p));
    let opts = tree::Options {
        cap,
        skip_top: EXCLUDED,
        ignored: &ig,
        known: &known,
        hash: base.map_or(gix::hash::Kind::Sha1, Baseline::hash_kind),
    };
    WorkTree::scan(root, &opts, cache).map_err(|source| WorkspaceError::Root {
        path: root.to_path_buf(),
        source,
    })
}

/// Whether the workspace at `root` is measured against a start snapshot when no baseline is
/// named: it is not a git work tree, or its repository has no commit yet (it is then judged
/// as a directory without git). A repository that cannot be read is a git work tree (the
/// pin reports why).
///
/// A snapshot, once taken, is the baseline for good: "no commit" is believed only when HEAD
/// read beneath `root` by this process's own lookups says so too. `git` reads refs through
/// paths it resolves itself, and a ref not found there (the workspace renamed or swapped for
/// a moment: `root` may be a held directory's `/proc/self/fd/N`, which is not) reads as
/// "no commit": an honest repository would then be pinned to a snapshot of whatever was read.
pub fn needs_snapshot(root: &Path) -> bool {
    let at = root.to_path_buf();
    let has_commit = baseline::bounded(move || match gitread::Repo::open(&at) {
        Ok(Some(repo)) => !matches!(repo.head(), Ok(None)),
        Ok(None) => false,
        Err(_) => true,
    });
    // A read that did not finish: a git work tree (its pin reports why).
    !has_commit.unwrap_or(true) && !head_may_name_a_commit(root)
}

/// Whether `root/.git`'s HEAD may name a commit, read by plain lookups beneath `root`: a
/// commit id, a loose or packed ref that exists, or anything this cannot tell (a `.git` file,
/// an unreadable HEAD). Only a missing `.git`, or a HEAD naming a branch that exists neither
/// loose nor packed, is "no commit".
fn head_may_name_a_commit(root: &Path) -> bool {
    const SMALL: u64 = 64 << 10;
    let git = root.join(".git");
    let Ok(meta) = std::fs::symlink_metadata(&git) else {
        return false;
    };
    if !meta.is_dir() {
        return true;
    }
    let read = |p: &Path, cap: u64| -> Option<Vec<u8>> {
        use std::io::Read as _;
        let mut out = Vec::new();
        std::fs::File::open(p)
            .ok()?
            .take(cap)
            .read_to_end(&mut out)
            .ok()?;
        Some(out)
    };
    let Some(head) = read(&git.join("HEAD"), SMALL) else {
        return true;
    };
    let head = String::from_utf8_lossy(&head);
    let Some(name) = head.trim_end().strip_prefix("ref: ") else {
        // A detached HEAD (a commit id) or something else: not "no commit".
        return true;
    };
    if name
        .split('/')
        .any(|c| c.is_empty() || c == "." || c == "..")
    {
        return true;
    }
    if std::fs::symlink_metadata(git.join(name)).is_ok() {
        return true;
    }
    match read(&git.join("packed-refs"), 1 << 30) {
        Some(packed) => packed.split(|&b| b == b'\n').any(|line| {
            line.strip_suffix(name.as_bytes())
                .is_some_and(|l| l.ends_with(b" "))
        }),
        None => std::fs::symlink_metadata(git.join("packed-refs")).is_ok(),
    }
}

/// Whether any task record under `root` asks for a judgment (see [`record::Record::is_judged`]):
/// the cheap look before opening the workspace against its baseline (git processes and all).
pub fn any_judged(root: &Path, cap: u64, required: &[String], judge_status: &[String]) -> bool {
    read_records(root, cap)
        .iter()
        .any(|(rel, content)| match content {
            Content::Bytes(d) => record::parse(rel, &d.bytes, required).is_judged(judge_status),
            // A record that vanished or cannot be read is judged (and shown as such).
            _ => true,
        })
}

/// The task records' paths (`.tasks/*.json`, not hidden) and contents, sorted by path.
fn read_records(root: &Path, cap: u64) -> Vec<(String, Content)> {
    let Ok(rd) = std::fs::read_dir(root.join(TASKS_DIR)) else {
        return Vec::new();
    };
    let mut names: Vec<String> = rd
        .filter_map(Result::ok)
        .map(|e| name::from_os(&e.file_name()))
        .filter(|n| is_record_name(n))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let rel = format!("{TASKS_DIR}/{n}");
            let content = read(root, &rel, cap.min(16 << 20), true);
            (rel, content)
        })
        .collect()
}

/// Whether a file name in `.tasks/` names a task record: `<id>.json`, not hidden (a writer's
/// temp file, an editor's backup or lock file beside it is none).
pub fn is_record_name(name: &str) -> bool {
    name.ends_with(".json") && !name.starts_with('.')
}

/// Whether a path (relative to the workspace, `/`-separated) is a task record:
/// `.tasks/<id>.json` ([`is_record_name`]), the worker's word to the referee.
pub fn is_record(rel: &str) -> bool {
    rel.strip_prefix(TASKS_DIR)
        .and_then(|r| r.strip_prefix('/'))
        .is_some_and(|name| !name.contains('/') && is_record_name(name))
}

/// `.tasks/t1.json` → `t1`.
fn record_stem(rel: &str) -> &str {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name.strip_suffix(".json").unwrap_or(name)
}

/// Whether a path is never part of a change (`.git/`, `.tasks/`, `.referee/`).
pub fn excluded(rel: &str) -> bool {
    if !rel.starts_with('.') {
        return false;
    }
    let top = rel.split('/').next().unwrap_or(rel);
    EXCLUDED.contains(&top)
}

/// Reads `rel` (encoded, see [`name`]) under the canonical `root`; with `nofollow`, a symlink
/// is read as a link ([`link::in_work_tree`]), else followed when it resolves inside `root`.
fn read(root: &Path, rel: &str, cap: u64, nofollow: bool) -> Content {
    let path = name::to_path(root, rel);
    if tree::is_long(path.as_os_str().len()) {
        // Deeper than one system call takes: through directory descriptors, a piece of the
        // path at a time (a link is never followed there).
        return match tree::read_in_tree(root, &name::decode(rel), cap) {
            Ok(Some(bytes)) => Content::Bytes(Arc::new(FileData::from_bytes(rel, bytes, None))),
            Ok(None) => Content::Absent,
            Err(why) => Content::Unknown(Unknowable::InTree {
                rel: rel.to_string(),
                why,
            }),
        };
    }
    if nofollow && std::fs::symlink_metadata(&path).is_ok_and(|m| m.file_type().is_symlink()) {
        return link::in_work_tree(root, rel, &path);
    }
    match fsread::read_file(root, &path, &name::display(rel), cap) {
        Ok(d) => Content::Bytes(Arc::new(d)),
        Err(ReadError::NotFound(_)) => Content::Absent,
        Err(e) => Content::Unknown(Unknowable::Read(e)),
    }
}

/// Every regular file (or symlink) under `root`, relative (encoded, see [`name`]), sorted,
/// without the excluded top-level names; what cannot be listed is left out.
pub fn walk(root: &Path) -> Vec<String> {
    let none = |_: &[u8], _: bool| false;
    let opts = tree::Options {
        cap: 0,
        skip_top: EXCLUDED,
        ignored: &none,
        known: &|_: &[u8]| None,
        hash: gix::hash::Kind::Sha1,
    };
    WorkTree::scan(root, &opts, &mut StatCache::default())
        .map(|t| {
            t.entries
                .into_iter()
                .filter(|(_, e)| matches!(e.kind, Kind::File { .. } | Kind::Symlink { .. }))
                .map(|(p, _)| p)
                .collect()
        })
        .unwrap_or_default()
}

/// Lowercase hex SHA-256 of bytes.
pub fn sha256(bytes: &[u8]) -> String {
    sha256_hex(bytes)
}

#[cfg(test)]
mod tests;
