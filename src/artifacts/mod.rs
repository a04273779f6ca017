//! What is on disk: a [`Snapshot`] of the build directory and cached, safe reads of its files.
//!
//! This module owns listing the build directory (one `walkdir` walk that never follows symlinks),
//! deciding what each entry is (a symlink counts as its target only when the target is inside the
//! build directory, and a symlinked directory is never descended, so nothing is counted twice and
//! loops are impossible), and reading each file at most once per snapshot through [`fsread`]. It also
//! hosts the parsers of the two structured artifacts, the execution tracker ([`tracker`]) and the gate
//! results ([`gates`]), and the markdown block structure they and the checks share ([`markdown`]). It must not write anything, must not open anything but regular files, must not
//! filter entries (not even `OBSERVER-*` files: callers decide what to ignore), and must not judge
//! artifacts: a missing or unreadable file is reported as data, never as a check result or a panic.
//!
//! Two rules keep "cannot be read" apart from "absent": a directory the walk could not list (or an
//! entry it could not examine: permission denied, a path longer than `PATH_MAX`, …) is kept as an
//! [`Unlisted`] place, so a check whose glob could reach under it knows its listing is incomplete;
//! and every name is made into `rel` by [`escape_name`], an injective escape (invalid UTF-8 bytes
//! as `\xff`, control characters as `\n`/`\x1b`, a backslash as `\\`), so two names never
//! collapse into one and no name can carry a line break into an output file.

pub mod fsread;
pub mod gates;
pub mod json_keys;
pub mod markdown;
pub mod normalize;
pub mod tracker;

use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::SystemTime;

use walkdir::WalkDir;

pub use fsread::{FileData, ReadError};

/// The execution tracker's file name, directly in the build directory.
pub const TRACKER_FILE: &str = "EXECUTION-TRACKER.md";

/// The largest execution tracker that is parsed. A real one is tens of kilobytes; the parsed form
/// costs up to ~110 bytes per byte of text (a table of one-character rows: each row is a field
/// row and a table row, with their strings), so a 64 MiB tracker of such rows would take ~7 GB.
/// A larger tracker makes every check that reads it INCONCLUSIVE, with this reason.
pub const MAX_TRACKER_BYTES: u64 = 4 << 20;

/// The default per-file read cap: 64 MiB.
pub const DEFAULT_MAX_READ_BYTES: u64 = 64 * 1024 * 1024;

/// Resource limits for reading artifacts.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Files larger than this are refused with [`ReadError::TooLarge`], never read.
    pub max_read_bytes: u64,
    /// Files larger than this are not kept after a read: each reader reads them again. `None`
    /// keeps every file for the snapshot's life, so each is read at most once (`verify`); the
    /// daemon sets it to bound its memory while it watches a large build.
    pub keep_bytes: Option<u64>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_read_bytes: DEFAULT_MAX_READ_BYTES,
            keep_bytes: None,
        }
    }
}

/// What an entry is, after resolving a symlink that stays inside the build directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    /// A FIFO, socket or device, or a symlink that dangles, loops or escapes the build directory.
    /// [`Entry::note`] says which.
    Other,
}

/// One entry of the build directory, as listed by [`Snapshot::scan`].
///
/// Kept small (96 bytes besides `rel`'s text): a build directory can hold tens of thousands of
/// screenshots that are only counted. The name is a slice of `rel`, the path on disk is joined on
/// demand, and what only unusual entries need (a refusal, a non-UTF-8 name's real path) is boxed.
#[derive(Debug)]
pub struct Entry {
    /// Path relative to the root, `/`-separated, no leading `./`, each name escaped by
    /// [`escape_name`] (so it is one line of text, and distinct names stay distinct).
    pub rel: String,
    /// Why the entry is [`Kind::Other`] (e.g. `fifo`); `None` for files and directories.
    pub note: Option<Box<str>>,
    /// The canonical root, shared by every entry of the snapshot.
    root: Arc<PathBuf>,
    /// Only for unusual entries (see [`Extra`]).
    extra: Option<Box<Extra>>,
    /// Size and mtime, looked up on first use: a scan learns each entry's type from the
    /// directory listing alone, so 30,000 screenshots that are only counted cost no `stat`.
    meta: OnceLock<(u64, Option<SystemTime>)>,
    /// 1 = directly in the root.
    pub depth: u16,
    pub kind: Kind,
    /// Whether the entry is a symlink (its kind, size and mtime are the target's).
    symlink: bool,
}

/// What only a few entries need.
#[derive(Debug)]
struct Extra {
    /// Why [`Snapshot::read`] refuses a [`Kind::Other`] entry without touching the disk (a
    /// directory's refusal needs no storing).
    refusal: Option<ReadError>,
    /// The real path of an entry whose name [`escape_name`] changed (`rel` is not its path).
    raw: Option<PathBuf>,
}

impl Entry {
    /// The last component of `rel`.
    pub fn name(&self) -> &str {
        self.rel.rsplit('/').next().unwrap_or(&self.rel)
    }

    /// Size in bytes for files (the target's for a symlink), 0 for anything else.
    pub fn size(&self) -> u64 {
        self.meta().0
    }

    /// Modification time (the target's for a symlink); `None` if it cannot be had.
    pub fn mtime(&self) -> Option<SystemTime> {
        self.meta().1
    }

    fn meta(&self) -> (u64, Option<SystemTime>) {
        *self
            .meta
            .get_or_init(|| match fs::symlink_metadata(self.path()) {
                Ok(m) => (
                    if self.kind == Kind::File { m.len() } else { 0 },
                    m.modified().ok(),
                ),
                Err(_) => (0, None),
            })
    }

    /// The entry's path on disk (under the canonical root; for a symlink, the link itself).
    pub fn path(&self) -> PathBuf {
        match self.extra.as_ref().and_then(|x| x.raw.as_ref()) {
            Some(raw) => raw.clone(),
            None => self.root.join(&self.rel),
        }
    }

    /// Whether the entry is a regular file (or a symlink to one inside the build directory).
    pub fn is_file(&self) -> bool {
        self.kind == Kind::File
    }

    /// Whether the entry is a symlink (followed or not).
    pub fn is_symlink(&self) -> bool {
        self.symlink
    }

    /// What the entry certainly is when it is not a regular file: `directory`, `symlink to a
    /// directory`, `fifo`, `socket`, `dangling symlink`, `symlink loop`, `symlink resolves
    /// outside the build directory: …`. `None` for a regular file (or a symlink to one inside the
    /// build directory), and for an entry whose type could not be examined (permission denied
    /// on its target): that one is unknown, not known to be wrong.
    pub fn not_a_file(&self) -> Option<String> {
        match self.kind {
            Kind::File => None,
            Kind::Dir if self.symlink => Some("symlink to a directory".to_string()),
            Kind::Dir => Some("directory".to_string()),
            Kind::Other => self.other_kind(),
        }
    }

    /// Like [`Entry::not_a_file`], for a name that must be a directory (a glob ending in `/`).
    pub fn not_a_dir(&self) -> Option<String> {
        match self.kind {
            Kind::Dir => None,
            Kind::File if self.symlink => Some("symlink to a regular file".to_string()),
            Kind::File => Some("regular file".to_string()),
            Kind::Other => self.other_kind(),
        }
    }

    /// What a [`Kind::Other`] entry is, when that is known (its refusal is about its type or
    /// where it leads, not an error examining it).
    fn other_kind(&self) -> Option<String> {
        match self.refusal() {
            Some(ReadError::Io { .. }) => None,
            _ => Some(
                self.note
                    .as_deref()
                    .unwrap_or("not a regular file")
                    .to_string(),
            ),
        }
    }

    /// Why [`Snapshot::read`] must refuse this entry without touching the disk, if it must.
    fn refusal(&self) -> Option<ReadError> {
        match self.kind {
            Kind::File => None,
            Kind::Dir => Some(ReadError::NotRegular {
                rel: self.rel.clone(),
                what: "directory".to_string(),
            }),
            Kind::Other => Some(
                self.extra
                    .as_ref()
                    .and_then(|x| x.refusal.clone())
                    .unwrap_or_else(|| ReadError::NotRegular {
                        rel: self.rel.clone(),
                        what: self.note.as_deref().unwrap_or("unknown").to_string(),
                    }),
            ),
        }
    }
}

/// A file's read, shared by every reader of one snapshot.
type ReadSlot = Arc<OnceLock<Result<Arc<FileData>, ReadError>>>;

/// A listing of a build directory at one moment, with reads cached per file.
///
/// A snapshot is cheap to share between threads: reads of one file share one `OnceLock`, so each
/// file is read and hashed at most once however many checks ask for it. Contents live as long as
/// the snapshot: drop it when the evaluation is done.
#[derive(Debug)]
pub struct Snapshot {
    root: PathBuf,
    canonical_root: Arc<PathBuf>,
    entries: Vec<Entry>,
    limits: Limits,
    /// Places the walk could not look into, sorted by `rel`.
    unlisted: Vec<Unlisted>,
    /// Reads by entry index: only the few files that are read have a slot.
    reads: Mutex<HashMap<usize, ReadSlot>>,
    tracker: OnceLock<Option<Result<Arc<tracker::Tracker>, ReadError>>>,
}

impl Snapshot {
    /// Lists everything under `root` in one walk.
    ///
    /// Fails only when `root` itself cannot be resolved, is not a directory, or cannot be listed.
    /// Directories that cannot be listed and entries that cannot be examined during the walk are
    /// recorded in [`Snapshot::unlisted`]: what they hold is unknown, not absent.
    pub fn scan(root: &Path, limits: Limits) -> io::Result<Snapshot> {
        let canonical_root = fs::canonicalize(root).map_err(|e| root_error(root, &e))?;
        let meta = fs::metadata(&canonical_root).map_err(|e| root_error(root, &e))?;
        if !meta.is_dir() {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("build directory `{}` is not a directory", root.display()),
            ));
        }
        // walkdir would report an unreadable root as one more walk error; here it must be fatal,
        // or an unreadable directory would look like an empty one.
        fs::read_dir(&canonical_root).map_err(|e| root_error(root, &e))?;

        let canonical_root = Arc::new(canonical_root);
        let mut entries = Vec::new();
        let mut unlisted = Vec::new();
        for item in WalkDir::new(canonical_root.as_path())
            .min_depth(1)
            .follow_links(false)
        {
            match item {
                Ok(dent) => entries.push(make_entry(&canonical_root, &dent, 0)),
                Err(e) => unlisted.push(Unlisted::from_walk(&canonical_root, &e)),
            }
        }
        sort_by_rel(&mut entries);
        // `rel` is an injective escape of the path, so no two entries share one: nothing is
        // de-duplicated (two names that differ only in invalid bytes are two files).
        entries.shrink_to_fit();
        unlisted.sort_by(|a, b| a.rel.cmp(&b.rel));
        unlisted.dedup();
        Ok(Snapshot {
            root: root.to_path_buf(),
            canonical_root,
            entries,
            limits,
            unlisted,
            reads: Mutex::new(HashMap::new()),
            tracker: OnceLock::new(),
        })
    }

    /// A snapshot that lists nothing: for a protocol whose checks read a workspace through
    /// `crate::workspace`, not through the build-directory listing.
    pub fn empty(root: &Path, limits: Limits) -> io::Result<Snapshot> {
        let canonical_root = fs::canonicalize(root).map_err(|e| root_error(root, &e))?;
        Ok(Snapshot {
            root: root.to_path_buf(),
            canonical_root: Arc::new(canonical_root),
            entries: Vec::new(),
            limits,
            unlisted: Vec::new(),
            reads: Mutex::new(HashMap::new()),
            tracker: OnceLock::new(),
        })
    }

    /// The root as given to [`Snapshot::scan`].
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The root with every symlink resolved; containment checks use this.
    pub fn canonical_root(&self) -> &Path {
        &self.canonical_root
    }

    /// The limits this snapshot reads with.
    pub fn limits(&self) -> Limits {
        self.limits
    }

    /// All entries, sorted by `rel`.
    pub fn entries(&self) -> &[Entry] {
        &self.entries
    }

    /// Entries that are files (including symlinks to files inside the root), sorted by `rel`.
    pub fn files(&self) -> impl Iterator<Item = &Entry> {
        self.entries.iter().filter(|e| e.kind == Kind::File)
    }

    /// Places the walk could not look into (directories that could not be listed, entries that
    /// could not be examined), sorted by `rel`. Checks treat what may lie there as unknown.
    pub fn unlisted(&self) -> &[Unlisted] {
        &self.unlisted
    }

    /// The unlisted place that may hide an entry at `rel`: `rel` itself when it was not listed,
    /// or a directory above it that could not be listed.
    pub fn unlisted_at(&self, rel: &str) -> Option<&Unlisted> {
        let rel = normalize_rel(rel);
        self.unlisted.iter().find(|u| {
            u.rel.is_empty()
                || (u.rel == rel && self.get(rel).is_none())
                || rel
                    .strip_prefix(u.rel.as_str())
                    .is_some_and(|rest| rest.starts_with('/'))
        })
    }

    /// The entry at `rel` (a leading `./` is ignored).
    pub fn get(&self, rel: &str) -> Option<&Entry> {
        self.index(rel).map(|i| &self.entries[i])
    }

    fn index(&self, rel: &str) -> Option<usize> {
        let rel = normalize_rel(rel);
        self.entries
            .binary_search_by(|e| e.rel.as_str().cmp(rel))
            .ok()
    }

    /// The read slots (a panic while one was held cannot leave them inconsistent: each
    /// insertion is one map operation).
    fn reads(&self) -> std::sync::MutexGuard<'_, HashMap<usize, ReadSlot>> {
        self.reads.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The file at `rel` if it has already been read in this snapshot; never touches the disk.
    pub fn peek(&self, rel: &str) -> Option<Arc<FileData>> {
        let i = self.index(rel)?;
        let slot = self.reads().get(&i)?.clone();
        slot.get()?.as_ref().ok().cloned()
    }

    /// Reads the file at `rel`, at most once per snapshot; later calls return the cached result
    /// (including a cached error). Entries that are not files are refused without touching the disk.
    pub fn read(&self, rel: &str) -> Result<Arc<FileData>, ReadError> {
        let i = self
            .index(rel)
            .ok_or_else(|| ReadError::NotFound(normalize_rel(rel).to_string()))?;
        let entry = &self.entries[i];
        if let Some(refusal) = entry.refusal() {
            return Err(refusal);
        }
        if self
            .limits
            .keep_bytes
            .is_some_and(|keep| entry.size() > keep)
        {
            return fsread::read_file(
                &self.canonical_root,
                &entry.path(),
                &entry.rel,
                self.limits.max_read_bytes,
            )
            .map(Arc::new);
        }
        // The map is locked only to find the slot; the read itself runs outside the lock, and
        // concurrent readers of the same file wait on its slot.
        let slot = self.reads().entry(i).or_default().clone();
        slot.get_or_init(|| {
            fsread::read_file(
                &self.canonical_root,
                &entry.path(),
                &entry.rel,
                self.limits.max_read_bytes,
            )
            .map(Arc::new)
        })
        .clone()
    }

    /// The parsed `EXECUTION-TRACKER.md` (parsed once, cached); `None` when the snapshot has no such
    /// entry. An entry that cannot be read (vanished, too large, a FIFO, not examinable, …) is
    /// `Some(Err(..))`: unreadable is never absent.
    pub fn tracker(&self) -> Option<Result<Arc<tracker::Tracker>, ReadError>> {
        self.tracker
            .get_or_init(|| {
                if self.get(TRACKER_FILE).is_none() {
                    let u = self.unlisted_at(TRACKER_FILE)?;
                    return Some(Err(ReadError::Io {
                        rel: TRACKER_FILE.to_string(),
                        message: format!("cannot be examined: {}", u.describe()),
                    }));
                }
                Some(self.read(TRACKER_FILE).and_then(|data| {
                    let size = data.bytes.len() as u64;
                    if size > MAX_TRACKER_BYTES {
                        return Err(ReadError::TooLargeToParse {
                            rel: TRACKER_FILE.to_string(),
                            what: "execution tracker",
                            size,
                            cap: MAX_TRACKER_BYTES,
                        });
                    }
                    Ok(Arc::new(tracker::Tracker::parse(&data.text())))
                }))
            })
            .clone()
    }
}

/// More changed paths than this in one [`Snapshot::rescan`]: one walk of the tree is cheaper.
const MAX_RESCAN_PATHS: usize = 256;

impl Snapshot {
    /// This listing brought up to date after `changed` (paths relative to the root, as
    /// [`Entry::rel`] names them): each changed path, and everything under it, is listed again;
    /// every other entry is taken over as it was listed. Nothing read is carried over (contents,
    /// the tracker, sizes and mtimes are looked up again on demand), and symlinks are resolved
    /// again (their targets may be among the changes).
    ///
    /// `changed` must name every path that changed since this snapshot was taken (the watcher's
    /// events): what it does not name is not looked at. The referee's own files (`OBSERVER-*`)
    /// are not inputs to any check, so a listing may be stale about them. Falls back to a full
    /// [`Snapshot::scan`] (this listing dropped first, so two are never held) when the root no
    /// longer resolves to the directory listed, when a changed path cannot be mapped back to the
    /// disk (an escaped name, `.` or `..`), lies below something not listed as a directory (a
    /// symlinked directory, a place the walk could not look into), or when there are so many
    /// that one walk is cheaper. A change at an unlisted place or below it, or at the root itself,
    /// falls back too.
    pub fn rescan(self, changed: &[String]) -> io::Result<Snapshot> {
        let Some(dirty) = self.rescan_plan(changed) else {
            let (root, limits) = (self.root.clone(), self.limits);
            drop(self);
            return Snapshot::scan(&root, limits);
        };
        let Snapshot {
            root,
            canonical_root,
            entries,
            limits,
            unlisted,
            ..
        } = self;
        let mut entries = entries;
        drop_under(&mut entries, &dirty, |e| &e.rel);
        let mut unlisted = unlisted;
        drop_under(&mut unlisted, &dirty, |u| &u.rel);
        for e in &mut entries {
            if e.symlink {
                *e = relisted(&canonical_root, e);
            } else {
                e.meta = OnceLock::new();
            }
        }
        let mut fresh = Vec::new();
        for rel in &dirty {
            let base = rel.split('/').count();
            let walk = WalkDir::new(canonical_root.join(rel))
                .follow_links(false)
                .follow_root_links(false);
            for item in walk {
                match item {
                    Ok(dent) => fresh.push(make_entry(&canonical_root, &dent, base)),
                    // The changed path itself is gone: removed, nothing to list.
                    Err(e)
                        if e.depth() == 0
                            && e.io_error()
                                .is_some_and(|io| io.kind() == io::ErrorKind::NotFound) => {}
                    Err(e) => unlisted.push(Unlisted::from_walk(&canonical_root, &e)),
                }
            }
        }
        if fresh.len() <= 16 {
            // A few: each moved into place (one shift of the tail each).
            fresh.sort_unstable_by(|a, b| a.rel.cmp(&b.rel));
            for e in fresh {
                let at = entries.partition_point(|x| x.rel < e.rel);
                entries.insert(at, e);
            }
        } else {
            // Two sorted runs: the stable sort merges them in one pass.
            entries.extend(fresh);
            entries.sort_by(|a, b| a.rel.cmp(&b.rel));
        }
        unlisted.sort_by(|a, b| a.rel.cmp(&b.rel));
        unlisted.dedup();
        Ok(Snapshot {
            root,
            canonical_root,
            entries,
            limits,
            unlisted,
            reads: Mutex::new(HashMap::new()),
            tracker: OnceLock::new(),
        })
    }

    /// The changed paths to list again (none below another), or `None` when only a full scan
    /// will do (see [`Snapshot::rescan`]).
    fn rescan_plan(&self, changed: &[String]) -> Option<Vec<String>> {
        if changed.len() > MAX_RESCAN_PATHS {
            return None;
        }
        // The root still names the directory listed (and can be listed at all).
        if fs::canonicalize(&self.root).ok()? != *self.canonical_root {
            return None;
        }
        fs::read_dir(self.canonical_root.as_path()).ok()?;
        let mut rels: Vec<&str> = changed.iter().map(|c| normalize_rel(c)).collect();
        // Shortest first, so a directory comes before what is under it.
        rels.sort_unstable_by_key(|r| (r.len(), *r));
        rels.dedup();
        let mut dirty: Vec<String> = Vec::new();
        for rel in rels {
            let mappable = !rel.is_empty()
                && !rel.contains('\\')
                && rel
                    .split('/')
                    .all(|c| !c.is_empty() && c != "." && c != "..")
                && escape_name(rel.as_bytes()) == rel;
            if !mappable {
                return None;
            }
            let ancestors: Vec<&str> = rel.match_indices('/').map(|(i, _)| &rel[..i]).collect();
            if ancestors.iter().any(|a| dirty.iter().any(|d| d == a)) {
                continue;
            }
            // Listed below a directory this snapshot listed (or the root), and nowhere the
            // walk could not look.
            if let Some(parent) = ancestors.last() {
                let listed_dir = self
                    .get(parent)
                    .is_some_and(|e| e.kind == Kind::Dir && !e.symlink);
                if !listed_dir {
                    return None;
                }
            }
            let hidden = self
                .unlisted
                .iter()
                .any(|u| u.rel.is_empty() || u.rel == rel || ancestors.contains(&u.rel.as_str()));
            if hidden {
                return None;
            }
            dirty.push(rel.to_string());
        }
        Some(dirty)
    }

    /// Drops every cached read (contents, the parsed tracker), keeping the listing: what a
    /// caller holds between two [`Snapshot::rescan`]s need not hold the files it read.
    pub fn forget_reads(&mut self) {
        self.reads = Mutex::new(HashMap::new());
        self.tracker = OnceLock::new();
    }
}

/// Removes from `items` (sorted by `rel`) everything at or under one of `paths`: binary searches
/// for the ranges, then one pass, so a change costs no hashing or scanning of every name.
fn drop_under<T>(items: &mut Vec<T>, paths: &[String], rel: impl Fn(&T) -> &str) {
    let mut ranges: Vec<(usize, usize)> = Vec::new();
    for p in paths {
        // `p` itself, then everything in `p/` … up to `p0` (`0` sorts right after `/`).
        let at = items.partition_point(|x| rel(x) < p.as_str());
        if items.get(at).is_some_and(|x| rel(x) == p) {
            ranges.push((at, at + 1));
        }
        let (lo, hi) = (format!("{p}/"), format!("{p}0"));
        let start = items.partition_point(|x| rel(x) < lo.as_str());
        let end = items.partition_point(|x| rel(x) < hi.as_str());
        if start < end {
            ranges.push((start, end));
        }
    }
    if ranges.is_empty() {
        return;
    }
    ranges.sort_unstable();
    let mut i = 0;
    let mut next = 0;
    items.retain(|_| {
        while next < ranges.len() && ranges[next].1 <= i {
            next += 1;
        }
        let gone = next < ranges.len() && ranges[next].0 <= i;
        i += 1;
        !gone
    });
}

/// A symlink entry taken over by [`Snapshot::rescan`], resolved again.
fn relisted(root: &Arc<PathBuf>, old: &Entry) -> Entry {
    let path = old.path();
    let resolved = resolve_symlink(root, &path, &old.rel);
    let meta = OnceLock::new();
    if let Some(known) = resolved.meta {
        let _ = meta.set(known);
    }
    let refusal = resolved.refusal.filter(|_| resolved.kind == Kind::Other);
    let raw = old.extra.as_ref().and_then(|x| x.raw.clone());
    let extra = (refusal.is_some() || raw.is_some()).then(|| Box::new(Extra { refusal, raw }));
    Entry {
        rel: old.rel.clone(),
        note: resolved.note.map(String::into_boxed_str),
        root: Arc::clone(root),
        extra,
        meta,
        depth: old.depth,
        kind: resolved.kind,
        symlink: true,
    }
}

/// Strips any leading `./` so callers may write either form.
fn normalize_rel(rel: &str) -> &str {
    let mut rel = rel;
    while let Some(rest) = rel.strip_prefix("./") {
        rel = rest;
    }
    rel
}

/// An error about the root itself, naming it.
fn root_error(root: &Path, err: &io::Error) -> io::Error {
    io::Error::new(
        err.kind(),
        format!(
            "cannot read build directory `{}`: {}",
            root.display(),
            fsread::lowercase_message(err)
        ),
    )
}

/// A place the walk could not look into: a directory that could not be listed or an entry that
/// could not be examined (permission denied, a path longer than `PATH_MAX`, a loop, …). What is
/// there is unknown: a check whose glob could reach it must not call it absent or clean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unlisted {
    /// Escaped path relative to the root (as [`Entry::rel`]); empty when the walk did not say.
    pub rel: String,
    /// Why, lowercase (e.g. `permission denied (os error 13)`).
    pub cause: String,
}

impl Unlisted {
    fn from_walk(root: &Path, err: &walkdir::Error) -> Unlisted {
        let rel = err.path().map(|p| rel_of(root, p).0).unwrap_or_default();
        let cause = err
            .io_error()
            .map(fsread::lowercase_message)
            .unwrap_or_else(|| err.to_string());
        Unlisted { rel, cause }
    }

    /// `` `rel` cannot be listed or examined: cause `` for evidence. A path too long to show
    /// (one past `PATH_MAX` is 4 KB) keeps its start and end, so the cause survives the cap on
    /// evidence lines.
    pub fn describe(&self) -> String {
        const KEEP: usize = 60;
        let what = if self.rel.is_empty() {
            "part of the build directory".to_string()
        } else if self.rel.chars().count() > 2 * KEEP {
            let head: String = self.rel.chars().take(KEEP).collect();
            let tail: Vec<char> = self.rel.chars().rev().take(KEEP).collect();
            let tail: String = tail.into_iter().rev().collect();
            format!("{head}…{tail}")
        } else {
            self.rel.clone()
        };
        format!("`{what}` cannot be listed or examined: {}", self.cause)
    }
}

/// Escapes one path (or name) for use as a `rel`: valid UTF-8 stays as it is except that a
/// backslash becomes `\\`, control characters become `\n`, `\r`, `\t` or `\xNN` (C1 and
/// the Unicode line, paragraph and bidirectional controls `\u{NNNN}`), and each byte of invalid
/// UTF-8 becomes `\xNN` (always >= 0x80, so never confused with an escaped control). The
/// escape is injective, so distinct names stay distinct, and its output is one line of text
/// that cannot forge a line in a markdown file. Borrowed when nothing needed escaping.
pub fn escape_name(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    use std::fmt::Write;
    let needs = |c: char| c == '\\' || needs_escape(c);
    if let Ok(s) = std::str::from_utf8(bytes) {
        if !s.chars().any(needs) {
            return Cow::Borrowed(s);
        }
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if (c as u32) < 0x80 && needs_escape(c) => {
                    let _ = write!(out, "\\x{:02x}", c as u32);
                }
                c if needs_escape(c) => {
                    let _ = write!(out, "\\u{{{:04x}}}", c as u32);
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    Cow::Owned(out)
}

/// Characters that must not reach output text raw: controls (C0, DEL, C1) and the Unicode
/// line/paragraph separators and bidirectional overrides, which reorder or break a line.
pub fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// The path of an entry relative to the root, from the bytes (the walk yields normalised
/// paths under the root, so no component parsing is needed), escaped by [`escape_name`].
/// Also says whether it is lossless (joining it to the root gives the entry's path back).
fn rel_of(root: &Path, path: &Path) -> (String, bool) {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    let root = root.as_os_str().as_bytes();
    let rest = match bytes.strip_prefix(root) {
        Some(rest) => rest.strip_prefix(b"/").unwrap_or(rest),
        // Never for a walk under `root`; keep the whole path rather than guess.
        None => bytes,
    };
    match escape_name(rest) {
        std::borrow::Cow::Borrowed(rel) => (rel.to_string(), true),
        std::borrow::Cow::Owned(rel) => (rel, false),
    }
}

/// Sorts entries by `rel` through a sorted index, then moves each entry once into place (cycle by
/// cycle): sorting the entries themselves would move them O(n log n) times, and a sorted copy
/// would hold two listings of 30,000 screenshots at once.
fn sort_by_rel(entries: &mut [Entry]) {
    let mut order: Vec<usize> = (0..entries.len()).collect();
    order.sort_unstable_by(|&a, &b| entries[a].rel.cmp(&entries[b].rel));
    // Position j must receive the entry now at order[j]; usize::MAX marks a placed position.
    for start in 0..order.len() {
        let mut j = start;
        loop {
            let k = order[j];
            if k == usize::MAX {
                break;
            }
            order[j] = usize::MAX;
            if k == start {
                break;
            }
            entries.swap(j, k);
            j = k;
        }
    }
}

/// What [`make_entry`] learned about an entry's type.
struct Resolved {
    kind: Kind,
    /// Size and mtime when already known (symlink targets).
    meta: Option<(u64, Option<SystemTime>)>,
    note: Option<String>,
    refusal: Option<ReadError>,
}

/// The entry for what the walk found; `base`: the depth of the walk's start below the root (0 for
/// the root itself).
fn make_entry(root: &Arc<PathBuf>, dent: &walkdir::DirEntry, base: usize) -> Entry {
    let path = dent.path();
    let (rel, lossless) = rel_of(root, path);
    let meta = OnceLock::new();
    let (resolved, symlink) = if dent.path_is_symlink() {
        (resolve_symlink(root, path, &rel), true)
    } else {
        // The type comes from the directory listing (no syscall); size and mtime on demand.
        (classify_type(&rel, &dent.file_type(), false), false)
    };
    if let Some(known) = resolved.meta {
        let _ = meta.set(known);
    }
    // A directory's refusal is made on demand; only an odd entry's is kept.
    let refusal = resolved.refusal.filter(|_| resolved.kind == Kind::Other);
    let raw = (!lossless).then(|| path.to_path_buf());
    let extra = (refusal.is_some() || raw.is_some()).then(|| Box::new(Extra { refusal, raw }));
    Entry {
        depth: u16::try_from(dent.depth() + base).unwrap_or(u16::MAX),
        kind: resolved.kind,
        note: resolved.note.map(String::into_boxed_str),
        root: Arc::clone(root),
        extra,
        symlink,
        meta,
        rel,
    }
}

/// Classifies an entry by its type (a symlink target's when `via_symlink`).
fn classify_type(rel: &str, file_type: &fs::FileType, via_symlink: bool) -> Resolved {
    if file_type.is_file() {
        return Resolved {
            kind: Kind::File,
            meta: None,
            note: None,
            refusal: None,
        };
    }
    if file_type.is_dir() {
        return Resolved {
            kind: Kind::Dir,
            meta: None,
            note: None,
            refusal: Some(ReadError::NotRegular {
                rel: rel.to_string(),
                what: "directory".to_string(),
            }),
        };
    }
    let what = if via_symlink {
        format!("symlink to a {}", fsread::describe_type(file_type))
    } else {
        fsread::describe_type(file_type).to_string()
    };
    Resolved {
        kind: Kind::Other,
        meta: None,
        note: Some(what.clone()),
        refusal: Some(ReadError::NotRegular {
            rel: rel.to_string(),
            what,
        }),
    }
}

/// Classifies a symlink's target from its metadata, which is kept (the link's own path
/// would give the link's size and mtime).
fn classify(rel: &str, meta: &fs::Metadata, via_symlink: bool) -> Resolved {
    let mut r = classify_type(rel, &meta.file_type(), via_symlink);
    let size = if r.kind == Kind::File { meta.len() } else { 0 };
    r.meta = Some((size, meta.modified().ok()));
    r
}

/// Resolves a symlink: it counts as its target only when the canonical target is inside `root`.
fn resolve_symlink(root: &Path, path: &Path, rel: &str) -> Resolved {
    let other = |note: String, refusal: ReadError| Resolved {
        kind: Kind::Other,
        meta: Some((0, None)),
        note: Some(note),
        refusal: Some(refusal),
    };
    let not_regular = |what: &str| {
        other(
            what.to_string(),
            ReadError::NotRegular {
                rel: rel.to_string(),
                what: what.to_string(),
            },
        )
    };
    let target = match fs::canonicalize(path) {
        Ok(target) => target,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return not_regular("dangling symlink"),
        Err(e) if fsread::is_symlink_loop(&e) => return not_regular("symlink loop"),
        Err(e) => {
            let message = format!(
                "symlink cannot be resolved: {}",
                fsread::lowercase_message(&e)
            );
            return other(
                message.clone(),
                ReadError::Io {
                    rel: rel.to_string(),
                    message,
                },
            );
        }
    };
    if !target.starts_with(root) {
        let shown = target.display().to_string();
        return other(
            format!("symlink resolves outside the build directory: `{shown}`"),
            ReadError::OutsideRoot {
                rel: rel.to_string(),
                target: shown,
            },
        );
    }
    match fs::metadata(&target) {
        Ok(meta) => classify(rel, &meta, true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => not_regular("dangling symlink"),
        Err(e) => {
            let message = format!(
                "symlink target cannot be examined: {}",
                fsread::lowercase_message(&e)
            );
            other(
                message.clone(),
                ReadError::Io {
                    rel: rel.to_string(),
                    message,
                },
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;
    use std::sync::mpsc;
    use std::thread;
    use std::time::Duration;

    fn mkfifo(path: &Path) {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
        assert_eq!(rc, 0, "mkfifo failed");
    }

    fn is_root() -> bool {
        unsafe { libc::geteuid() == 0 }
    }

    fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(secs))
            .expect("operation hung")
    }

    fn scan(dir: &Path) -> Snapshot {
        Snapshot::scan(dir, Limits::default()).unwrap()
    }

    fn rels(snap: &Snapshot) -> Vec<&str> {
        snap.entries().iter().map(|e| e.rel.as_str()).collect()
    }

    #[test]
    fn limits_default_is_64_mib() {
        assert_eq!(Limits::default().max_read_bytes, 64 * 1024 * 1024);
    }

    #[test]
    fn snapshot_is_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<Snapshot>();
        assert_send_sync::<Entry>();
    }

    #[test]
    fn normalize_rel_strips_dot_slash() {
        assert_eq!(normalize_rel("./a/b"), "a/b");
        assert_eq!(normalize_rel("././a"), "a");
        assert_eq!(normalize_rel("a"), "a");
        assert_eq!(normalize_rel(""), "");
    }

    #[test]
    fn escape_name_is_injective_and_one_line() {
        assert!(matches!(
            escape_name(b"a/b c.md"),
            std::borrow::Cow::Borrowed("a/b c.md")
        ));
        assert_eq!(escape_name("é.md".as_bytes()), "é.md");
        assert_eq!(escape_name(b"bad-\xff.md"), "bad-\\xff.md");
        assert_eq!(escape_name(b"bad-\\xff.md"), "bad-\\\\xff.md");
        assert_eq!(
            escape_name(b"x\n## OBS-21: PASS\r\t\x1b[0m\x7f"),
            "x\\n## OBS-21: PASS\\r\\t\\x1b[0m\\x7f"
        );
        assert_eq!(
            escape_name("a\u{2028}b\u{202e}c\u{85}".as_bytes()),
            "a\\u{2028}b\\u{202e}c\\u{0085}"
        );
        // Names that differ only in invalid bytes stay apart, and apart from U+FFFD.
        let names: [&[u8]; 5] = [
            b"a\xff",
            b"a\xfe",
            "a\u{fffd}".as_bytes(),
            b"a\\xff",
            b"a\xc3",
        ];
        let escaped: std::collections::BTreeSet<String> =
            names.iter().map(|n| escape_name(n).into_owned()).collect();
        assert_eq!(escaped.len(), names.len());
        for e in &escaped {
            assert!(!e.chars().any(needs_escape), "{e:?}");
        }
    }

    #[test]
    fn scan_lists_everything_sorted_with_depth_and_sizes() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        fs::write(root.join("p0-content-map.md"), "12345").unwrap();
        fs::write(root.join("OBSERVER-REPORT.md"), "mine").unwrap();
        fs::create_dir_all(root.join("screenshots/1440")).unwrap();
        fs::write(root.join("screenshots/1440/cold-look.png"), [0u8; 10]).unwrap();
        let snap = scan(root);
        assert_eq!(
            rels(&snap),
            [
                "OBSERVER-REPORT.md",
                "p0-content-map.md",
                "screenshots",
                "screenshots/1440",
                "screenshots/1440/cold-look.png",
            ]
        );
        let map = snap.get("p0-content-map.md").unwrap();
        assert_eq!(map.kind, Kind::File);
        assert_eq!(map.size(), 5);
        assert_eq!(map.depth, 1);
        assert_eq!(map.name(), "p0-content-map.md");
        assert!(map.mtime().is_some());
        assert!(map.note.is_none());
        assert!(map.is_file());
        let png = snap.get("screenshots/1440/cold-look.png").unwrap();
        assert_eq!(png.depth, 3);
        assert_eq!(png.name(), "cold-look.png");
        assert_eq!(png.size(), 10);
        let shots = snap.get("screenshots").unwrap();
        assert_eq!(shots.kind, Kind::Dir);
        assert_eq!(shots.size(), 0);
        assert_eq!(snap.root(), root);
        assert_eq!(snap.canonical_root(), fs::canonicalize(root).unwrap());
        assert!(snap.unlisted().is_empty());
        assert_eq!(snap.files().count(), 3);
        assert!(snap.get("./p0-content-map.md").is_some());
        assert!(snap.get("missing.md").is_none());
    }

    #[test]
    fn empty_directory_scans_to_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let snap = scan(dir.path());
        assert!(snap.entries().is_empty());
        assert!(snap.tracker().is_none());
    }

    #[test]
    fn scan_fails_only_for_a_bad_root() {
        let dir = tempfile::tempdir().unwrap();
        let missing = Snapshot::scan(&dir.path().join("nope"), Limits::default()).unwrap_err();
        assert_eq!(missing.kind(), io::ErrorKind::NotFound);
        assert!(missing.to_string().contains("nope`"), "{missing}");
        fs::write(dir.path().join("file"), "x").unwrap();
        let not_dir = Snapshot::scan(&dir.path().join("file"), Limits::default()).unwrap_err();
        assert_eq!(not_dir.kind(), io::ErrorKind::InvalidInput);
        assert!(not_dir.to_string().contains("is not a directory"));
    }

    #[test]
    fn unreadable_root_is_an_error() {
        if is_root() {
            return; // root lists any directory; nothing to test
        }
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let locked = dir.path().join("locked");
        fs::create_dir(&locked).unwrap();
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
        let result = Snapshot::scan(&locked, Limits::default());
        fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(result.unwrap_err().kind(), io::ErrorKind::PermissionDenied);
    }

    #[test]
    fn unreadable_subdirectory_is_skipped_not_fatal() {
        if is_root() {
            return; // root lists any directory; nothing to test
        }
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("locked")).unwrap();
        fs::write(dir.path().join("locked/x"), "x").unwrap();
        fs::write(dir.path().join("ok.md"), "x").unwrap();
        fs::set_permissions(dir.path().join("locked"), fs::Permissions::from_mode(0o000)).unwrap();
        let snap = scan(dir.path());
        fs::set_permissions(dir.path().join("locked"), fs::Permissions::from_mode(0o755)).unwrap();
        assert_eq!(rels(&snap), ["locked", "ok.md"]);
        assert_eq!(snap.unlisted().len(), 1);
        assert_eq!(snap.unlisted()[0].rel, "locked");
        assert!(snap.unlisted_at("locked/x").is_some());
        assert!(snap.unlisted_at("ok.md").is_none());
    }

    /// Makes `depth` nested directories named `name` under `dir` with `mkdirat`/`openat`, one
    /// level at a time (the full path soon exceeds `PATH_MAX`, which only the `*at` calls
    /// tolerate); returns the nesting as a relative path.
    fn deep_dirs(dir: &Path, name: &str, depth: usize, file: &str) -> String {
        use std::os::unix::ffi::OsStrExt;
        let c = |s: &str| std::ffi::CString::new(s).unwrap();
        let root = std::ffi::CString::new(dir.as_os_str().as_bytes()).unwrap();
        let mut fd = unsafe { libc::open(root.as_ptr(), libc::O_DIRECTORY | libc::O_RDONLY) };
        assert!(fd >= 0);
        for _ in 0..depth {
            let n = c(name);
            assert_eq!(unsafe { libc::mkdirat(fd, n.as_ptr(), 0o755) }, 0);
            let next = unsafe { libc::openat(fd, n.as_ptr(), libc::O_DIRECTORY | libc::O_RDONLY) };
            assert!(next >= 0);
            unsafe { libc::close(fd) };
            fd = next;
        }
        let f = c(file);
        let file_fd = unsafe {
            libc::openat(
                fd,
                f.as_ptr(),
                libc::O_CREAT | libc::O_WRONLY,
                0o644 as libc::c_uint,
            )
        };
        assert!(file_fd >= 0);
        unsafe {
            libc::write(file_fd, b"fix it".as_ptr().cast(), 6);
            libc::close(file_fd);
            libc::close(fd);
        }
        vec![name; depth].join("/")
    }

    #[test]
    fn a_path_longer_than_path_max_is_unlisted_not_absent() {
        let dir = tempfile::tempdir().unwrap();
        // 40 levels of 200 bytes: about 8 KB, twice PATH_MAX.
        let name = "d".repeat(200);
        let nested = deep_dirs(dir.path(), &name, 40, "deep.md");
        let snap = scan(dir.path());
        assert!(
            !snap.unlisted().is_empty(),
            "the walk must record what it could not list"
        );
        let u = snap.unlisted_at(&format!("{nested}/deep.md")).unwrap();
        assert!(u.cause.contains("too long"), "{u:?}");
        assert!(u.describe().contains("cannot be listed"));
        assert!(snap.get(&format!("{nested}/deep.md")).is_none());
    }

    #[test]
    fn root_given_through_a_symlink_works() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("real")).unwrap();
        fs::write(dir.path().join("real/a.md"), "a").unwrap();
        symlink("real", dir.path().join("link")).unwrap();
        let snap = scan(&dir.path().join("link"));
        assert_eq!(rels(&snap), ["a.md"]);
        assert_eq!(snap.get("a.md").unwrap().kind, Kind::File);
        assert_eq!(snap.read("a.md").unwrap().bytes, b"a");
        assert_eq!(snap.root(), dir.path().join("link"));
    }

    #[test]
    fn symlink_to_file_inside_takes_the_targets_kind_and_size() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("sub")).unwrap();
        fs::write(dir.path().join("sub/real.md"), "123").unwrap();
        symlink("sub/real.md", dir.path().join("p3b-pa-auditor-B.md")).unwrap();
        let snap = scan(dir.path());
        let e = snap.get("p3b-pa-auditor-B.md").unwrap();
        assert_eq!(e.kind, Kind::File);
        assert_eq!(e.size(), 3);
        assert!(e.mtime().is_some());
        assert_eq!(e.note, None);
        assert!(e.is_symlink());
        assert!(!snap.get("sub/real.md").unwrap().is_symlink());
        let data = snap.read("p3b-pa-auditor-B.md").unwrap();
        assert_eq!(data.bytes, b"123");
        assert_eq!(data.rel, "p3b-pa-auditor-B.md");
    }

    #[test]
    fn symlinked_directory_inside_is_a_dir_but_not_descended() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("real")).unwrap();
        fs::write(dir.path().join("real/f"), "x").unwrap();
        symlink("real", dir.path().join("alias")).unwrap();
        symlink(".", dir.path().join("self")).unwrap();
        let snap = scan(dir.path());
        assert_eq!(rels(&snap), ["alias", "real", "real/f", "self"]);
        assert_eq!(snap.get("alias").unwrap().kind, Kind::Dir);
        assert_eq!(snap.get("self").unwrap().kind, Kind::Dir);
        assert!(snap.get("alias").unwrap().is_symlink());
        assert_eq!(snap.get("alias").unwrap().note, None);
        assert!(matches!(
            snap.read("alias"),
            Err(ReadError::NotRegular { what, .. }) if what == "directory"
        ));
    }

    #[test]
    fn symlinks_out_of_the_root_are_other_and_refused() {
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("build");
        fs::create_dir(&root).unwrap();
        fs::write(outer.path().join("secret.md"), "s").unwrap();
        symlink("/etc/passwd", root.join("abs.md")).unwrap();
        symlink("../secret.md", root.join("rel.md")).unwrap();
        symlink("..", root.join("up")).unwrap();
        let snap = scan(&root);
        for rel in ["abs.md", "rel.md", "up"] {
            let e = snap.get(rel).unwrap();
            assert_eq!(e.kind, Kind::Other, "{rel}");
            assert_eq!(e.size(), 0);
            let note = e.note.as_deref().unwrap();
            assert!(
                note.starts_with("symlink resolves outside the build directory: `"),
                "{note}"
            );
            assert!(matches!(snap.read(rel), Err(ReadError::OutsideRoot { .. })));
        }
        assert_eq!(
            snap.get("abs.md").unwrap().note.as_deref(),
            Some("symlink resolves outside the build directory: `/etc/passwd`")
        );
        // Not descended: nothing from the parent appears.
        assert_eq!(rels(&snap), ["abs.md", "rel.md", "up"]);
    }

    #[test]
    fn dangling_and_looping_symlinks_are_other() {
        let dir = tempfile::tempdir().unwrap();
        symlink("nowhere.md", dir.path().join("dangling.md")).unwrap();
        symlink("b", dir.path().join("a")).unwrap();
        symlink("a", dir.path().join("b")).unwrap();
        symlink("me", dir.path().join("me")).unwrap();
        let snap = scan(dir.path());
        let dangling = snap.get("dangling.md").unwrap();
        assert_eq!(dangling.kind, Kind::Other);
        assert_eq!(dangling.note.as_deref(), Some("dangling symlink"));
        for rel in ["a", "b", "me"] {
            let e = snap.get(rel).unwrap();
            assert_eq!(e.kind, Kind::Other);
            assert_eq!(e.note.as_deref(), Some("symlink loop"));
        }
        assert_eq!(
            snap.read("dangling.md"),
            Err(ReadError::NotRegular {
                rel: "dangling.md".into(),
                what: "dangling symlink".into()
            })
        );
    }

    #[test]
    fn fifo_named_like_an_auditor_report_never_hangs() {
        let dir = tempfile::tempdir().unwrap();
        mkfifo(&dir.path().join("p3b-pa-auditor-A.md"));
        symlink(
            "p3b-pa-auditor-A.md",
            dir.path().join("p3b-pa-auditor-C.md"),
        )
        .unwrap();
        let (note_a, note_c, read_a, read_c) = within(5, move || {
            let snap = scan(dir.path());
            let a = snap.get("p3b-pa-auditor-A.md").unwrap();
            let c = snap.get("p3b-pa-auditor-C.md").unwrap();
            assert_eq!(a.kind, Kind::Other);
            assert_eq!(c.kind, Kind::Other);
            (
                a.note.clone(),
                c.note.clone(),
                snap.read("p3b-pa-auditor-A.md"),
                snap.read("p3b-pa-auditor-C.md"),
            )
        });
        assert_eq!(note_a.as_deref(), Some("fifo"));
        assert_eq!(note_c.as_deref(), Some("symlink to a fifo"));
        assert_eq!(
            read_a,
            Err(ReadError::NotRegular {
                rel: "p3b-pa-auditor-A.md".into(),
                what: "fifo".into()
            })
        );
        assert!(matches!(read_c, Err(ReadError::NotRegular { .. })));
    }

    #[test]
    fn file_replaced_by_a_fifo_after_scan_never_hangs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p3b-pa-auditor-A.md");
        fs::write(&path, "report").unwrap();
        let result = within(5, move || {
            let snap = scan(dir.path());
            fs::remove_file(&path).unwrap();
            mkfifo(&path);
            snap.read("p3b-pa-auditor-A.md")
        });
        assert!(matches!(result, Err(ReadError::NotRegular { what, .. }) if what == "fifo"));
    }

    #[test]
    fn file_replaced_by_an_escaping_symlink_after_scan_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a.md");
        fs::write(&path, "x").unwrap();
        let snap = scan(dir.path());
        fs::remove_file(&path).unwrap();
        symlink("/etc/passwd", &path).unwrap();
        assert!(matches!(
            snap.read("a.md"),
            Err(ReadError::OutsideRoot { .. })
        ));
    }

    #[test]
    fn socket_is_other() {
        let dir = tempfile::tempdir().unwrap();
        let _sock = std::os::unix::net::UnixListener::bind(dir.path().join("s.md")).unwrap();
        let snap = scan(dir.path());
        let e = snap.get("s.md").unwrap();
        assert_eq!(e.kind, Kind::Other);
        assert_eq!(e.note.as_deref(), Some("socket"));
        assert!(matches!(
            snap.read("s.md"),
            Err(ReadError::NotRegular { .. })
        ));
    }

    #[test]
    fn device_is_other() {
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("null.md");
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        // Same device numbers as /dev/null (1, 3); needs privileges, so skip when refused.
        let rc = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
        if rc != 0 {
            return;
        }
        let snap = scan(dir.path());
        let e = snap.get("null.md").unwrap();
        assert_eq!(e.kind, Kind::Other);
        assert_eq!(e.note.as_deref(), Some("character device"));
        assert!(matches!(
            snap.read("null.md"),
            Err(ReadError::NotRegular { .. })
        ));
    }

    #[test]
    fn read_is_cached_and_hashed_once() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.md"), "first").unwrap();
        let snap = scan(dir.path());
        let one = snap.read("a.md").unwrap();
        assert_eq!(one.sha256, fsread::sha256_hex(b"first"));
        fs::write(dir.path().join("a.md"), "second").unwrap();
        let two = snap.read("./a.md").unwrap();
        assert!(Arc::ptr_eq(&one, &two));
        assert_eq!(two.bytes, b"first");
        // A fresh snapshot sees the new contents.
        assert_eq!(scan(dir.path()).read("a.md").unwrap().bytes, b"second");
    }

    #[test]
    fn large_files_are_not_kept_when_asked() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("big.md"), "0123456789").unwrap();
        fs::write(dir.path().join("small.md"), "01").unwrap();
        let limits = Limits {
            keep_bytes: Some(5),
            ..Limits::default()
        };
        let snap = Snapshot::scan(dir.path(), limits).unwrap();
        let a = snap.read("big.md").unwrap();
        let b = snap.read("big.md").unwrap();
        assert!(!Arc::ptr_eq(&a, &b), "read again, not kept");
        assert_eq!(a.sha256, b.sha256);
        assert!(snap.peek("big.md").is_none());
        let c = snap.read("small.md").unwrap();
        assert!(Arc::ptr_eq(&c, &snap.read("small.md").unwrap()));
    }

    #[test]
    fn errors_are_cached_too() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.md"), "x").unwrap();
        let snap = scan(dir.path());
        fs::remove_file(dir.path().join("a.md")).unwrap();
        assert_eq!(snap.read("a.md"), Err(ReadError::NotFound("a.md".into())));
        fs::write(dir.path().join("a.md"), "back").unwrap();
        assert_eq!(snap.read("a.md"), Err(ReadError::NotFound("a.md".into())));
    }

    #[test]
    fn reading_an_unlisted_path_is_not_found() {
        let dir = tempfile::tempdir().unwrap();
        let snap = scan(dir.path());
        fs::write(dir.path().join("late.md"), "x").unwrap();
        assert_eq!(
            snap.read("late.md"),
            Err(ReadError::NotFound("late.md".into()))
        );
        assert_eq!(snap.read("./x"), Err(ReadError::NotFound("x".into())));
        assert_eq!(
            snap.read("../etc/passwd"),
            Err(ReadError::NotFound("../etc/passwd".into()))
        );
    }

    #[test]
    fn read_respects_the_cap() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("big.html"), vec![b'x'; 11]).unwrap();
        fs::write(dir.path().join("ok.html"), vec![b'x'; 10]).unwrap();
        let snap = Snapshot::scan(
            dir.path(),
            Limits {
                max_read_bytes: 10,
                ..Limits::default()
            },
        )
        .unwrap();
        assert_eq!(snap.limits().max_read_bytes, 10);
        assert_eq!(
            snap.read("big.html"),
            Err(ReadError::TooLarge {
                rel: "big.html".into(),
                size: 11,
                cap: 10
            })
        );
        assert_eq!(snap.read("ok.html").unwrap().size, 10);
    }

    #[test]
    fn file_that_grew_past_the_cap_after_scan_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a"), "small").unwrap();
        let snap = Snapshot::scan(
            dir.path(),
            Limits {
                max_read_bytes: 8,
                ..Limits::default()
            },
        )
        .unwrap();
        fs::write(dir.path().join("a"), "much larger now").unwrap();
        assert!(matches!(
            snap.read("a"),
            Err(ReadError::TooLarge { size: 15, .. })
        ));
    }

    #[test]
    fn permission_denied_is_io() {
        if is_root() {
            return; // root reads regardless of mode bits
        }
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("locked.md");
        fs::write(&path, "x").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).unwrap();
        let snap = scan(dir.path());
        assert!(matches!(snap.read("locked.md"), Err(ReadError::Io { .. })));
    }

    #[test]
    fn non_utf8_names_are_listed_and_readable() {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        let name = OsStr::from_bytes(b"bad-\xff.md");
        fs::write(dir.path().join(name), "content").unwrap();
        let snap = scan(dir.path());
        let rel = "bad-\\xff.md";
        let e = snap.get(rel).unwrap();
        assert_eq!(e.name(), rel);
        assert_eq!(e.kind, Kind::File);
        // The real name is kept for the disk: stat and read work.
        assert_eq!(e.path(), fs::canonicalize(dir.path()).unwrap().join(name));
        assert_eq!(e.size(), 7);
        assert_eq!(snap.read(rel).unwrap().bytes, b"content");
    }

    #[test]
    fn names_differing_only_in_invalid_bytes_are_two_files() {
        use std::ffi::OsStr;
        use std::os::unix::ffi::OsStrExt;
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(OsStr::from_bytes(b"r-\xff.md")), "one").unwrap();
        fs::write(dir.path().join(OsStr::from_bytes(b"r-\xfe.md")), "two").unwrap();
        fs::write(dir.path().join("r-\u{fffd}.md"), "three").unwrap();
        fs::write(dir.path().join("x\n## OBS-21: PASS"), "four").unwrap();
        let snap = scan(dir.path());
        assert_eq!(
            rels(&snap),
            [
                "r-\\xfe.md",
                "r-\\xff.md",
                "r-\u{fffd}.md",
                "x\\n## OBS-21: PASS"
            ]
        );
        assert_eq!(snap.read("r-\\xff.md").unwrap().bytes, b"one");
        assert_eq!(snap.read("r-\\xfe.md").unwrap().bytes, b"two");
        assert_eq!(snap.read("r-\u{fffd}.md").unwrap().bytes, b"three");
        assert_eq!(snap.read("x\\n## OBS-21: PASS").unwrap().bytes, b"four");
    }

    #[test]
    fn entries_stay_small() {
        // 30,000 screenshots are listed on every evaluation of a large build.
        assert!(
            std::mem::size_of::<Entry>() <= 96,
            "{}",
            std::mem::size_of::<Entry>()
        );
    }

    #[test]
    fn sorting_moves_every_entry_to_its_place() {
        let dir = tempfile::tempdir().unwrap();
        // `a.md` and `a-b` sort before `a/x` although the walk meets `a/` first.
        fs::create_dir_all(dir.path().join("a/x")).unwrap();
        fs::create_dir_all(dir.path().join("c/d")).unwrap();
        for file in ["b", "a.md", "a-b", "c/d/e", "A", "a/x.y"] {
            fs::write(dir.path().join(file), "x").unwrap();
        }
        let snap = scan(dir.path());
        let got = rels(&snap);
        let mut want = got.clone();
        want.sort_unstable();
        assert_eq!(got, want);
        assert_eq!(got.len(), 10);
        // Entries moved with their own data.
        for e in snap.entries() {
            assert_eq!(e.path(), fs::canonicalize(dir.path()).unwrap().join(&e.rel));
            assert_eq!(e.depth as usize, e.rel.split('/').count());
        }
    }

    #[test]
    fn peek_sees_only_what_was_read() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.md"), "a").unwrap();
        let snap = scan(dir.path());
        assert!(snap.peek("a.md").is_none());
        let read = snap.read("a.md").unwrap();
        assert!(Arc::ptr_eq(&snap.peek("./a.md").unwrap(), &read));
        assert!(snap.peek("missing").is_none());
    }

    #[test]
    fn concurrent_reads_share_one_result() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join("a.md"), "shared").unwrap();
        let snap = Arc::new(scan(dir.path()));
        let handles: Vec<_> = (0..8)
            .map(|_| {
                let snap = Arc::clone(&snap);
                thread::spawn(move || snap.read("a.md").unwrap())
            })
            .collect();
        let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        for r in &results {
            assert!(Arc::ptr_eq(r, &results[0]));
        }
    }

    #[test]
    fn tracker_is_parsed_once() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(
            dir.path().join(TRACKER_FILE),
            "## Phase Timestamps\n| Field | Value |\n|---|---|\n| P0_START | 2026-02-25T10:00:00Z |\n",
        )
        .unwrap();
        let snap = scan(dir.path());
        let one = snap.tracker().unwrap().unwrap();
        assert_eq!(one.field("p0_start").unwrap().value, "2026-02-25T10:00:00Z");
        let two = snap.tracker().unwrap().unwrap();
        assert!(Arc::ptr_eq(&one, &two));
    }

    #[test]
    fn a_tracker_over_the_parse_cap_is_not_parsed() {
        let dir = tempfile::tempdir().unwrap();
        // One-character rows: the costliest text per byte to parse.
        let rows = "| a |\n".repeat(MAX_TRACKER_BYTES as usize / 6 + 1);
        fs::write(dir.path().join(TRACKER_FILE), &rows).unwrap();
        let snap = scan(dir.path());
        match snap.tracker() {
            Some(Err(ReadError::TooLargeToParse { size, cap, .. })) => {
                assert_eq!(size, rows.len() as u64);
                assert_eq!(cap, MAX_TRACKER_BYTES);
            }
            other => panic!("want TooLargeToParse, got {other:?}"),
        }
        // At the cap it is parsed.
        fs::write(
            dir.path().join(TRACKER_FILE),
            &rows[..MAX_TRACKER_BYTES as usize],
        )
        .unwrap();
        assert!(scan(dir.path()).tracker().unwrap().is_ok());
    }

    #[test]
    fn tracker_with_invalid_utf8_is_read_lossily() {
        let dir = tempfile::tempdir().unwrap();
        fs::write(dir.path().join(TRACKER_FILE), b"| A\xff | v |\n").unwrap();
        let snap = scan(dir.path());
        let t = snap.tracker().unwrap().unwrap();
        assert_eq!(t.rows[0].name, "A\u{fffd}");
    }

    #[test]
    fn tracker_absent_unreadable_or_nested() {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join("sub")).unwrap();
        fs::write(dir.path().join("sub").join(TRACKER_FILE), "| A | b |\n").unwrap();
        assert!(scan(dir.path()).tracker().is_none());

        let fifo_dir = tempfile::tempdir().unwrap();
        mkfifo(&fifo_dir.path().join(TRACKER_FILE));
        let result = within(5, move || scan(fifo_dir.path()).tracker());
        assert!(matches!(result, Some(Err(ReadError::NotRegular { .. }))));

        let big = tempfile::tempdir().unwrap();
        fs::write(big.path().join(TRACKER_FILE), "0123456789").unwrap();
        let snap = Snapshot::scan(
            big.path(),
            Limits {
                max_read_bytes: 4,
                ..Limits::default()
            },
        )
        .unwrap();
        assert!(matches!(
            snap.tracker(),
            Some(Err(ReadError::TooLarge { .. }))
        ));
    }

    #[test]
    fn scans_thirty_thousand_files_in_one_walk() {
        let dir = tempfile::tempdir().unwrap();
        for d in 0..30 {
            let sub = dir.path().join(format!("d{d:02}"));
            fs::create_dir(&sub).unwrap();
            for f in 0..1000 {
                fs::File::create(sub.join(format!("f{f:04}.md"))).unwrap();
            }
        }
        let start = std::time::Instant::now();
        let snap = scan(dir.path());
        let elapsed = start.elapsed();
        assert_eq!(snap.entries().len(), 30_030);
        assert_eq!(snap.files().count(), 30_000);
        assert!(snap.get("d29/f0999.md").is_some());
        assert!(snap.entries().windows(2).all(|w| w[0].rel < w[1].rel));
        // Generous bound for debug builds on slow CI; a release scan takes tens of milliseconds.
        assert!(elapsed < Duration::from_secs(20), "scan took {elapsed:?}");
    }

    /// What a listing says, entry by entry (sizes looked up), and where it could not look.
    fn listing(snap: &Snapshot) -> (Vec<String>, Vec<Unlisted>) {
        let entries = snap
            .entries()
            .iter()
            .map(|e| {
                format!(
                    "{} {:?} depth={} size={} link={} note={:?}",
                    e.rel,
                    e.kind,
                    e.depth,
                    e.size(),
                    e.is_symlink(),
                    e.note
                )
            })
            .collect();
        (entries, snap.unlisted().to_vec())
    }

    #[track_caller]
    fn rescans_like_a_scan(dir: &Path, before: Snapshot, changed: &[&str]) -> Snapshot {
        let changed: Vec<String> = changed.iter().map(|c| c.to_string()).collect();
        let again = before.rescan(&changed).unwrap();
        assert_eq!(listing(&again), listing(&scan(dir)), "after {changed:?}");
        again
    }

    #[test]
    fn rescan_lists_only_what_changed_and_agrees_with_a_scan() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::create_dir_all(d.join("screenshots/1440")).unwrap();
        fs::write(d.join("screenshots/1440/a.png"), "png").unwrap();
        fs::write(d.join("p3a-gate-results.json"), "{}").unwrap();
        fs::write(d.join("notes.md"), "n").unwrap();
        symlink("notes.md", d.join("link.md")).unwrap();
        let snap = scan(d);
        // A file rewritten (renamed into place), one added, one removed.
        fs::write(d.join(".g.tmp"), "{\"gates\": []}").unwrap();
        fs::rename(d.join(".g.tmp"), d.join("p3a-gate-results.json")).unwrap();
        fs::write(d.join("screenshots/1440/b.png"), "png2").unwrap();
        fs::remove_file(d.join("screenshots/1440/a.png")).unwrap();
        let snap = rescans_like_a_scan(
            d,
            snap,
            &[
                ".g.tmp",
                "p3a-gate-results.json",
                "screenshots/1440/b.png",
                "screenshots/1440/a.png",
            ],
        );
        assert_eq!(
            snap.read("p3a-gate-results.json").unwrap().text(),
            "{\"gates\": []}"
        );
        // A new directory with files already in it (written before its watch existed), and a
        // file under it named too.
        fs::create_dir_all(d.join("screenshots/768/deep")).unwrap();
        fs::write(d.join("screenshots/768/deep/c.png"), "png").unwrap();
        fs::write(d.join("screenshots/768/d.png"), "png").unwrap();
        let snap = rescans_like_a_scan(d, snap, &["screenshots/768/d.png", "screenshots/768"]);
        // A symlink's target removed: the link dangles, though only the target was named.
        fs::remove_file(d.join("notes.md")).unwrap();
        let snap = rescans_like_a_scan(d, snap, &["notes.md"]);
        assert_eq!(snap.get("link.md").unwrap().kind, Kind::Other);
        // A directory removed with everything under it; a file replaced by a directory.
        fs::remove_dir_all(d.join("screenshots/768")).unwrap();
        fs::remove_file(d.join("p3a-gate-results.json")).unwrap();
        fs::create_dir(d.join("p3a-gate-results.json")).unwrap();
        fs::write(d.join("p3a-gate-results.json/x"), "x").unwrap();
        let snap = rescans_like_a_scan(d, snap, &["screenshots/768", "p3a-gate-results.json"]);
        // Nothing changed: the same listing, and no read carried over.
        let snap = rescans_like_a_scan(d, snap, &[]);
        // Only what was named is listed again: the rest is taken over, not walked.
        fs::write(d.join("screenshots/1440/unnamed.png"), "png").unwrap();
        let snap = snap.rescan(&[]).unwrap();
        assert!(snap.get("screenshots/1440/unnamed.png").is_none());
        let mut snap = rescans_like_a_scan(d, snap, &["screenshots/1440/unnamed.png"]);
        snap.read("screenshots/1440/b.png").unwrap();
        snap.forget_reads();
        assert!(snap.peek("screenshots/1440/b.png").is_none());
        // More than a walk's worth of changes: a full scan, the same answer.
        let many: Vec<String> = (0..=MAX_RESCAN_PATHS).map(|i| format!("f{i}")).collect();
        let many: Vec<&str> = many.iter().map(String::as_str).collect();
        rescans_like_a_scan(d, snap, &many);
    }

    #[test]
    fn drop_under_removes_a_path_and_what_is_below_it_only() {
        let mut v: Vec<String> = ["a", "a-b", "a.c", "a/x", "a/y/z", "a0", "ab", "b", "b/c"]
            .map(String::from)
            .to_vec();
        drop_under(&mut v, &["a".into(), "b/c".into(), "nothing".into()], |s| s);
        assert_eq!(v, ["a-b", "a.c", "a0", "ab", "b"]);
    }

    #[test]
    fn rescan_falls_back_to_a_scan_when_it_cannot_place_a_change() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        fs::create_dir(d.join("real")).unwrap();
        symlink("real", d.join("linked")).unwrap();
        let snap = scan(d);
        // Under a directory the snapshot never listed (its own event was missed).
        fs::create_dir_all(d.join("new/inner")).unwrap();
        fs::write(d.join("new/inner/f.md"), "f").unwrap();
        let snap = rescans_like_a_scan(d, snap, &["new/inner/f.md"]);
        // Under a symlinked directory (never descended), and names that cannot be mapped back.
        fs::write(d.join("real/f.md"), "f").unwrap();
        let snap = rescans_like_a_scan(d, snap, &["linked/f.md", "real/f.md"]);
        let snap = rescans_like_a_scan(d, snap, &["", "./real/../real", "a\\\\b"]);
        // The root replaced by another directory at the same path: listed afresh.
        let other = tempfile::tempdir().unwrap();
        fs::write(other.path().join("only-here.md"), "x").unwrap();
        let moved = d.with_extension("moved");
        fs::rename(d, &moved).unwrap();
        symlink(other.path(), d).unwrap();
        let again = snap.rescan(&[]).unwrap();
        assert_eq!(rels(&again), ["only-here.md"]);
        fs::remove_file(d).unwrap();
        fs::rename(&moved, d).unwrap();
    }

    #[test]
    fn rescan_keeps_unlisted_places_and_looks_again_where_they_changed() {
        if is_root() {
            return; // root reads everything: nothing is unlisted
        }
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        use std::os::unix::fs::PermissionsExt;
        fs::create_dir(d.join("locked")).unwrap();
        fs::write(d.join("locked/f.md"), "f").unwrap();
        fs::set_permissions(d.join("locked"), fs::Permissions::from_mode(0o000)).unwrap();
        let snap = scan(d);
        assert_eq!(snap.unlisted().len(), 1);
        fs::write(d.join("other.md"), "o").unwrap();
        let snap = rescans_like_a_scan(d, snap, &["other.md"]);
        fs::set_permissions(d.join("locked"), fs::Permissions::from_mode(0o755)).unwrap();
        let snap = rescans_like_a_scan(d, snap, &["locked"]);
        assert!(snap.unlisted().is_empty());
    }
}
