//! The [`Snapshot`]: one listing of the build directory, with each file read at most once and
//! the execution tracker parsed at most once.

use std::borrow::Cow;
use std::collections::HashMap;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use super::entry::{Entry, Kind, Unlisted};
use super::escape::normalize_rel;
use super::fsread::{self, FileData, ReadError};
use super::{tracker, walk, Limits, MAX_TRACKER_BYTES};

/// A file read ahead of the walk: its `rel` and what reading it gave.
type ReadAhead<'a> = (&'a str, Result<Arc<FileData>, ReadError>);

/// A file's read, shared by every reader of one snapshot.
pub(super) type ReadSlot = Arc<OnceLock<Result<Arc<FileData>, ReadError>>>;

/// A listing of a build directory at one moment, with reads cached per file.
///
/// A snapshot is cheap to share between threads: reads of one file share one `OnceLock`, so each
/// file is read and hashed at most once however many checks ask for it. Contents live as long as
/// the snapshot: drop it when the evaluation is done.
#[derive(Debug)]
pub struct Snapshot {
    pub(super) root: PathBuf,
    pub(super) canonical_root: Arc<PathBuf>,
    pub(super) entries: Vec<Entry>,
    pub(super) limits: Limits,
    /// Places the walk could not look into, sorted by `rel`.
    pub(super) unlisted: Vec<Unlisted>,
    /// Reads by entry index: only the few files that are read have a slot.
    pub(super) reads: Mutex<HashMap<usize, ReadSlot>>,
    /// Files read ahead while the walk listed ([`Snapshot::scan_reading`]), by entry index:
    /// each becomes that file's read when a check first reads it.
    pub(super) early: Mutex<HashMap<usize, Result<Arc<FileData>, ReadError>>>,
    /// The tracker parsed at the first call, with its name.
    pub(super) tracker: OnceLock<(String, ParsedTracker)>,
}

impl Snapshot {
    /// Lists everything under `root` ([`walk`](super::walk): each directory once, on two threads
    /// in a large tree).
    ///
    /// Fails only when `root` itself cannot be resolved, is not a directory, or cannot be listed.
    /// Directories that cannot be listed and entries that cannot be examined during the walk are
    /// recorded in [`Snapshot::unlisted`]: what they hold is unknown, not absent.
    pub fn scan(root: &Path, limits: Limits) -> io::Result<Snapshot> {
        Snapshot::scan_with(root, limits, None)
    }

    /// Like [`Snapshot::scan`], and meanwhile reads (and hashes), on two more threads, the
    /// files directly in the root that `wanted` names: a one-shot judgment that will read megabytes
    /// of reports reads them while the walk lists tens of thousands of screenshots, instead of
    /// after it. Only a snapshot that keeps what it reads (`keep_bytes: None`) reads ahead,
    /// and only when the wanted files come to 1 MiB or more.
    ///
    /// A file read ahead is still read once: that read becomes the snapshot's read of it
    /// when a check asks for it, provided the walk listed a regular file at its name (a
    /// symlink, a directory, a FIFO there is refused as [`Snapshot::read`] refuses it). A file
    /// no check asks for is never evidence.
    pub fn scan_reading(
        root: &Path,
        limits: Limits,
        wanted: &dyn Fn(&str) -> bool,
    ) -> io::Result<Snapshot> {
        Snapshot::scan_with(root, limits, Some(wanted))
    }

    /// Like [`Snapshot::scan_reading`], with the walk `listing` started before it was known
    /// which files would be read: the reading ahead joins it where it is.
    pub fn scan_reading_from(
        listing: Listing,
        limits: Limits,
        wanted: &dyn Fn(&str) -> bool,
    ) -> io::Result<Snapshot> {
        let (canonical_root, walk) = listing.started?;
        let top =
            fs::read_dir(canonical_root.as_path()).map_err(|e| root_error(&listing.root, &e))?;
        let ahead = match limits.keep_bytes {
            None => to_read_ahead(top, wanted, limits.max_read_bytes),
            Some(_) => Vec::new(),
        };
        let (listed, early) = read_beside(&canonical_root, &ahead, limits, true, || {
            // A walk that panicked (a bug) is walked again here rather than lose the listing.
            walk.join().unwrap_or_else(|_| walk::walk(&canonical_root))
        });
        Ok(Snapshot::of_listing(
            listing.root,
            canonical_root,
            limits,
            listed,
            early,
        ))
    }

    fn scan_with(
        root: &Path,
        limits: Limits,
        wanted: Option<&dyn Fn(&str) -> bool>,
    ) -> io::Result<Snapshot> {
        let (canonical_root, top) = open_root(root)?;
        let ahead = match wanted {
            Some(wanted) if limits.keep_bytes.is_none() => {
                to_read_ahead(top, wanted, limits.max_read_bytes)
            }
            _ => Vec::new(),
        };
        let canonical_root = Arc::new(canonical_root);
        let (listed, early) = read_beside(&canonical_root, &ahead, limits, false, || {
            walk::walk(&canonical_root)
        });
        Ok(Snapshot::of_listing(
            root.to_path_buf(),
            canonical_root,
            limits,
            listed,
            early,
        ))
    }

    /// The snapshot of a finished listing and the files read ahead beside it.
    fn of_listing(
        root: PathBuf,
        canonical_root: Arc<PathBuf>,
        limits: Limits,
        (mut entries, mut unlisted): (Vec<Entry>, Vec<Unlisted>),
        early: Vec<ReadAhead<'_>>,
    ) -> Snapshot {
        // `rel` is an injective escape of the path, so no two entries share one: nothing is
        // de-duplicated (two names that differ only in invalid bytes are two files).
        // A snapshot kept while a daemon watches gives back the listing's spare room; a
        // one-shot judgment's would only be copied (2.9 MB for 30,000 screenshots) to be freed.
        if limits.keep_bytes.is_some() {
            entries.shrink_to_fit();
        }
        unlisted.sort_by(|a, b| a.rel.cmp(&b.rel));
        unlisted.dedup();
        // A read ahead stands for the entry the walk listed only when that is a regular file
        // (a name swapped for a link or a directory in between is judged as listed).
        let early = early
            .into_iter()
            .filter_map(|(rel, read)| {
                let i = entries.binary_search_by(|e| e.rel.as_str().cmp(rel)).ok()?;
                let e = &entries[i];
                (e.kind == Kind::File && !e.is_symlink()).then_some((i, read))
            })
            .collect();
        Snapshot {
            root,
            canonical_root,
            entries,
            limits,
            unlisted,
            reads: Mutex::new(HashMap::new()),
            early: Mutex::new(early),
            tracker: OnceLock::new(),
        }
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

    /// Drops from this listing the entries `aside` names (an earlier run's leftovers in a
    /// daemon's build directory): no check sees them, as if the directory did not hold them.
    /// The reads made so far are dropped too (they are kept by entry index).
    pub fn set_aside(&mut self, aside: &std::collections::BTreeSet<String>) {
        if aside.is_empty() {
            return;
        }
        let before = self.entries.len();
        self.entries.retain(|e| !aside.contains(&e.rel));
        if self.entries.len() != before {
            self.reads = Mutex::new(HashMap::new());
            self.early = Mutex::new(HashMap::new());
            self.tracker = OnceLock::new();
        }
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
            let early = self
                .early
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&i);
            if let Some(read) = early {
                return read;
            }
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

    /// The files this snapshot has read, each with its entry and what the read saw: the inputs
    /// a judgment of it used (a daemon compares them with the disk later, for the writes that
    /// make no file event).
    pub fn read_files(&self) -> Vec<(&Entry, Arc<FileData>)> {
        let reads = self.reads();
        reads
            .iter()
            .filter_map(|(&i, slot)| {
                let data = slot.get()?.as_ref().ok()?.clone();
                Some((self.entries.get(i)?, data))
            })
            .collect()
    }

    /// The paths under the links to folders of this listing that name what `changed` names in
    /// the folders they link to: a linked folder is listed under the link's name, but a change
    /// in it is reported under its own path (`captures/768/a.png` is also `screenshots/768/a.png`
    /// when `screenshots` links to `captures`). Empty when the listing has no such link.
    pub fn aliases(&self, changed: &[String]) -> Vec<String> {
        let mut out = Vec::new();
        for link in self
            .entries
            .iter()
            .filter(|e| e.kind == Kind::Dir && e.symlink)
        {
            let Ok(target) = fs::canonicalize(link.path()) else {
                continue;
            };
            let Ok(target) = target.strip_prefix(self.canonical_root.as_path()) else {
                continue;
            };
            let target = target.to_string_lossy();
            for c in changed {
                let c = normalize_rel(c);
                if let Some(rest) = c.strip_prefix(target.as_ref()) {
                    if rest.is_empty() || rest.starts_with('/') {
                        out.push(format!("{}{rest}", link.rel));
                    }
                }
            }
        }
        out
    }

    /// The first `n` bytes of the file at `rel` (fewer when it is shorter), read from the disk
    /// each time unless the whole file was read already; a refusal as [`Snapshot::read`]'s.
    pub fn head(&self, rel: &str, n: usize) -> Result<Vec<u8>, ReadError> {
        let i = self
            .index(rel)
            .ok_or_else(|| ReadError::NotFound(normalize_rel(rel).to_string()))?;
        let entry = &self.entries[i];
        if let Some(refusal) = entry.refusal() {
            return Err(refusal);
        }
        if let Some(data) = self.peek(rel) {
            return Ok(data.bytes[..n.min(data.bytes.len())].to_vec());
        }
        fsread::read_head(&self.canonical_root, &entry.path(), &entry.rel, n)
    }

    /// The parsed execution tracker at `rel` (the protocol's tracker file; parsed once, cached:
    /// a snapshot is judged by one protocol); `None` when the snapshot has no such entry. An entry that cannot be read (vanished, too large, a FIFO, not examinable, …) is
    /// `Some(Err(..))`: unreadable is never absent.
    pub fn tracker(&self, rel: &str) -> ParsedTracker {
        let (name, parsed) = self
            .tracker
            .get_or_init(|| (rel.to_string(), self.parse_tracker(rel)));
        match name == rel {
            true => parsed.clone(),
            // Another name than the first asked for (one snapshot judged by two protocols).
            false => self.parse_tracker(rel),
        }
    }

    fn parse_tracker(&self, rel: &str) -> ParsedTracker {
        if self.get(rel).is_none() {
            let u = self.unlisted_at(rel)?;
            return Some(Err(ReadError::Io {
                rel: rel.to_string(),
                message: format!("cannot be examined: {}", u.describe()),
                source: None,
            }));
        }
        Some(self.read(rel).and_then(|data| {
            let size = data.bytes.len() as u64;
            if size > MAX_TRACKER_BYTES {
                return Err(ReadError::TooLargeToParse {
                    rel: rel.to_string(),
                    what: "execution tracker",
                    size,
                    cap: MAX_TRACKER_BYTES,
                });
            }
            Ok(Arc::new(tracker::Tracker::read(&data.bytes)))
        }))
    }
}

/// A tracker as [`Snapshot::tracker`] gives it: `None` when absent, an error when unreadable.
pub type ParsedTracker = Option<Result<Arc<tracker::Tracker>, ReadError>>;

/// The wanted files in a read-ahead worth a thread: together at least this many bytes.
const READ_AHEAD_MIN: u64 = 1 << 20;
/// Threads reading ahead (beside the walk's two).
const READ_AHEAD_THREADS: usize = 2;

/// The regular files directly in the root (as the listing `top` names them) that `wanted`
/// names and the read cap allows, as `(rel, path, size)`, largest first; none when together
/// they are smaller than [`READ_AHEAD_MIN`]. A name that needs escaping is left to be read
/// when asked for.
fn to_read_ahead(
    top: fs::ReadDir,
    wanted: &dyn Fn(&str) -> bool,
    cap: u64,
) -> Vec<(String, PathBuf, u64)> {
    let mut ahead = Vec::new();
    for item in top.flatten() {
        if !item.file_type().is_ok_and(|t| t.is_file()) {
            continue;
        }
        let name = item.file_name();
        let Some(rel) = name.to_str() else { continue };
        if !matches!(super::escape::escape_name(rel.as_bytes()), Cow::Borrowed(_)) || !wanted(rel) {
            continue;
        }
        let size = item.metadata().map_or(0, |m| m.len());
        // One past the read cap is refused without being read: nothing to do ahead.
        if size <= cap {
            ahead.push((rel.to_string(), item.path(), size));
        }
    }
    if ahead.iter().map(|a| a.2).fold(0u64, u64::saturating_add) < READ_AHEAD_MIN {
        ahead.clear();
    }
    ahead.sort_by_key(|a| std::cmp::Reverse(a.2));
    ahead
}

/// A walk of a build directory started on a thread before it is known which files will be
/// read ([`Snapshot::scan_reading_from`]): `verify` lists the directory while it loads the
/// protocol that says what to read. Whatever makes the root unusable is kept, to be reported
/// when the listing is asked for (after the protocol's own errors).
#[derive(Debug)]
pub struct Listing {
    root: PathBuf,
    started: io::Result<(Arc<PathBuf>, std::thread::JoinHandle<walk::Walked>)>,
}

impl Listing {
    /// Starts listing `root` on a thread of its own.
    pub fn start(root: &Path) -> Listing {
        let started = open_root(root).and_then(|(canonical_root, _)| {
            let canonical_root = Arc::new(canonical_root);
            let walked = Arc::clone(&canonical_root);
            let walk = std::thread::Builder::new()
                .name("referee-walk".into())
                .spawn(move || walk::walk(&walked))?;
            Ok((canonical_root, walk))
        });
        Listing {
            root: root.to_path_buf(),
            started,
        }
    }
}

/// The root resolved, known to be a directory, and its top-level listing. The walk would report
/// an unreadable root as one more unlisted place; here it is fatal, or an unreadable directory
/// would look like an empty one.
fn open_root(root: &Path) -> io::Result<(PathBuf, fs::ReadDir)> {
    let canonical_root = fs::canonicalize(root).map_err(|e| root_error(root, &e))?;
    let meta = fs::metadata(&canonical_root).map_err(|e| root_error(root, &e))?;
    if !meta.is_dir() {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("build directory `{}` is not a directory", root.display()),
        ));
    }
    let top = fs::read_dir(&canonical_root).map_err(|e| root_error(root, &e))?;
    Ok((canonical_root, top))
}

/// `list()` on this thread while the files of `ahead` are read (and hashed) on up to
/// [`READ_AHEAD_THREADS`] threads, each taking the next file (largest first) from a shared
/// counter so that the reading ends with the listing instead of trailing it on one thread.
/// When the listing runs elsewhere already (`listed_elsewhere`), this thread is one of the
/// readers. A reader that panicked leaves its files to be read when asked for.
fn read_beside<'a>(
    canonical_root: &Path,
    ahead: &'a [(String, PathBuf, u64)],
    limits: Limits,
    listed_elsewhere: bool,
    list: impl FnOnce() -> walk::Walked,
) -> (walk::Walked, Vec<ReadAhead<'a>>) {
    let next = AtomicUsize::new(0);
    let read = || {
        let mut done = Vec::new();
        while let Some((rel, path, _)) = ahead.get(next.fetch_add(1, Ordering::Relaxed)) {
            let read = fsread::read_file(canonical_root, path, rel, limits.max_read_bytes);
            done.push((rel.as_str(), read.map(Arc::new)));
        }
        done
    };
    std::thread::scope(|scope| {
        let spawned = ahead
            .len()
            .min(READ_AHEAD_THREADS)
            .saturating_sub(usize::from(listed_elsewhere));
        let readers: Vec<_> = (0..spawned).map(|_| scope.spawn(read)).collect();
        let mut early = if listed_elsewhere && !ahead.is_empty() {
            read()
        } else {
            Vec::new()
        };
        let listed = list();
        early.extend(readers.into_iter().filter_map(|r| r.join().ok()).flatten());
        (listed, early)
    })
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
#[cfg(test)]
mod tests;
