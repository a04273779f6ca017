//! Where events come from (the file-system event source; `daemon` is what `referee watch` runs
//! on them): a recursive watch on the build directory that turns file-system
//! notifications into [`FsEvent`]s handed to a callback.
//!
//! This module owns choosing the event source (inotify through `notify`'s recommended watcher, or
//! a stat poller with `--poll`), falling back to polling when the native watcher cannot be created
//! or runs out of watches (with the `max_user_watches` hint), and deciding which notifications are
//! changes at all (opening or reading a file is not; closing it after writing is) and what kind
//! ([`ChangeKind`]: written in place, renamed into place, removed, metadata only). It must not
//! evaluate, block or sleep in the callback: the callback runs on the source's thread and only
//! forwards. It knows nothing of the referee's own files, of passes or of checks.
//!
//! Why not `notify`'s `PollWatcher`: it compares whole-second mtimes with `>` and nothing else, so a
//! file rewritten within the same second, or rewritten with an older mtime (as `referee replay`
//! does), is never reported. The poller here compares size, mtime and ctime to the nanosecond and
//! the inode, so every write is seen (ctime cannot be set back by a writer).

use std::collections::HashMap;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

use crate::safefs::IoCause;
use notify::event::{AccessKind, AccessMode, ModifyKind, RenameMode};
use notify::{Config, Event, EventKind, RecommendedWatcher, RecursiveMode, Watcher};

/// Whether the native watcher reports a writer's close after writing (inotify does), so that a
/// write seen without its close is known to be unfinished.
const REPORTS_CLOSE: bool = cfg!(any(target_os = "linux", target_os = "android"));

/// The poll interval of `--poll` without a value.
pub const DEFAULT_POLL: Duration = Duration::from_millis(200);

/// What to tell a user whose inotify watches ran out.
pub const WATCH_LIMIT_HINT: &str =
    "raise the limit with `sysctl fs.inotify.max_user_watches=524288`, or use `--poll`";

/// How to watch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// OS notifications (inotify), falling back to polling when they are unavailable.
    Native,
    /// Poll the directory tree at this interval.
    Poll(Duration),
}

/// What happened to a path, as far as the source can tell.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChangeKind {
    /// Created or written in place, or closed after writing; with polling, any change that is
    /// not a removal. The writer may not be done with it.
    Written,
    /// Data written through a handle its writer still holds: inotify's modify event, whose
    /// close comes later as [`ChangeKind::Written`]. A writer paused between two writes (`dd`
    /// between two blocks, a tool descheduled on a loaded machine) is not done, however long
    /// the pause. Only where the watcher reports closes (Linux); elsewhere a write is `Written`.
    Writing,
    /// Something was renamed into this path: it arrived complete (a writer's atomic replace).
    RenamedIn,
    /// Removed, or renamed away (a writer's temp file after its rename).
    Removed,
    /// Only its metadata changed (mode, owner, times); the contents are as they were.
    Metadata,
}

/// One path that changed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PathChange {
    pub path: PathBuf,
    pub kind: ChangeKind,
}

/// What the watcher reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FsEvent {
    /// These paths were created, written, renamed or removed.
    Changed(Vec<PathChange>),
    /// Events may have been lost (queue overflow, watcher error): look at everything again.
    Rescan { why: String },
    /// The native watcher ran out of watches: switch to polling (and look at everything again).
    /// `message` says what ran out and where; `source` is the system's error when it gave one.
    Limit {
        message: String,
        path: Option<PathBuf>,
        source: Option<IoCause>,
    },
}

/// The kind of source that is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SourceKind {
    Native,
    Poll(Duration),
}

impl std::fmt::Display for SourceKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceKind::Native => write!(f, "inotify"),
            SourceKind::Poll(d) => write!(f, "polling every {} ms", d.as_millis()),
        }
    }
}

/// A running event source. Dropping it stops the watch.
pub struct Source {
    _inner: Inner,
    pub kind: SourceKind,
    /// Set when the native watcher was wanted but polling is used: why, with a hint.
    pub warning: Option<String>,
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Source")
            .field("kind", &self.kind)
            .field("warning", &self.warning)
            .finish()
    }
}

/// Why no event source could be started (the native watcher's failures fall back to polling;
/// these are the poller's).
#[derive(Debug, thiserror::Error)]
pub enum WatchError {
    /// The directory cannot be listed: polling it would see an empty tree.
    #[error("cannot watch `{}`", path.display())]
    Unreadable {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The poll thread could not be spawned (the process's thread or memory limit).
    #[error("cannot watch `{}`: cannot start the poll thread", path.display())]
    Thread {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// Starts watching `dir` recursively; every change is passed to `sink` (on the watcher's thread).
///
/// In [`Mode::Native`], a native watcher that cannot be created or cannot watch the tree falls back
/// to polling at [`DEFAULT_POLL`], and [`Source::warning`] says why.
pub fn start<F>(dir: &Path, mode: Mode, sink: F) -> Result<Source, WatchError>
where
    F: FnMut(FsEvent) + Send + Clone + 'static,
{
    match mode {
        Mode::Poll(interval) => start_poll(dir, interval, sink),
        Mode::Native => match start_native(dir, sink.clone()) {
            Ok(source) => Ok(source),
            Err(e) => {
                let mut source = start_poll(dir, DEFAULT_POLL, sink)?;
                source.warning = Some(fallback_warning(&e));
                Ok(source)
            }
        },
    }
}

/// What to tell a user who ran out of inotify instances (one per `referee watch` process).
pub const INSTANCE_LIMIT_HINT: &str = "raise the limit with `sysctl fs.inotify.max_user_instances=1024`, or referee many builds from one process with `referee watch --root`";

/// The warning printed when polling replaces the native watcher.
pub fn fallback_warning(e: &notify::Error) -> String {
    if is_instance_limit(e) {
        format!(
            "no inotify instance left ({}); falling back to polling every {} ms — {INSTANCE_LIMIT_HINT}",
            describe(e),
            DEFAULT_POLL.as_millis()
        )
    } else if is_watch_limit(e) {
        format!(
            "inotify watch limit reached ({}); falling back to polling every {} ms — {WATCH_LIMIT_HINT}",
            describe(e),
            DEFAULT_POLL.as_millis()
        )
    } else {
        format!(
            "file notifications unavailable ({}); falling back to polling every {} ms",
            describe(e),
            DEFAULT_POLL.as_millis()
        )
    }
}

fn start_native<F>(dir: &Path, mut sink: F) -> Result<Source, notify::Error>
where
    F: FnMut(FsEvent) + Send + 'static,
{
    let handler = move |res: notify::Result<Event>| {
        if let Some(ev) = translate(res) {
            sink(ev);
        }
    };
    let mut watcher =
        RecommendedWatcher::new(handler, Config::default().with_follow_symlinks(false))?;
    watcher.watch(dir, RecursiveMode::Recursive)?;
    Ok(Source {
        _inner: Inner::Native { _watcher: watcher },
        kind: SourceKind::Native,
        warning: None,
    })
}

impl Source {
    /// Also watches `dir` (not recursively), on the same queue as the tree: its events are
    /// ordered with the tree's. Only a native source can; whether the watch was added.
    pub fn watch_also(&mut self, dir: &Path) -> bool {
        match &mut self._inner {
            Inner::Native { _watcher: w } => w.watch(dir, RecursiveMode::NonRecursive).is_ok(),
            Inner::Poll { .. } => false,
        }
    }
}

/// What keeps a source alive.
enum Inner {
    Native {
        _watcher: RecommendedWatcher,
    },
    /// Dropping the sender wakes the poll thread and ends it.
    Poll {
        _stop: mpsc::Sender<()>,
    },
}

fn start_poll<F>(dir: &Path, interval: Duration, mut sink: F) -> Result<Source, WatchError>
where
    F: FnMut(FsEvent) + Send + 'static,
{
    let mut previous = fingerprints(dir).map_err(|source| WatchError::Unreadable {
        path: dir.to_path_buf(),
        source,
    })?;
    let (stop_tx, stop_rx) = mpsc::channel::<()>();
    let root = dir.to_path_buf();
    std::thread::Builder::new()
        .name("referee-poll".into())
        .spawn(move || {
            let mut failing = false;
            // Sleeps on the stop channel: the source's drop wakes and ends it.
            while let Err(RecvTimeoutError::Timeout) = stop_rx.recv_timeout(interval) {
                match fingerprints(&root) {
                    Ok(now) => {
                        failing = false;
                        let changes = diff(&previous, &now);
                        previous = now;
                        if !changes.is_empty() {
                            sink(FsEvent::Changed(changes));
                        }
                    }
                    Err(e) if !failing => {
                        failing = true;
                        sink(FsEvent::Rescan {
                            why: format!(
                                "cannot poll `{}`: {}",
                                root.display(),
                                e.to_string().to_lowercase()
                            ),
                        });
                    }
                    Err(_) => {}
                }
            }
        })
        .map_err(|source| WatchError::Thread {
            path: dir.to_path_buf(),
            source,
        })?;
    Ok(Source {
        _inner: Inner::Poll { _stop: stop_tx },
        kind: SourceKind::Poll(interval),
        warning: None,
    })
}

/// What identifies one state of an entry: type, size, inode, mtime and ctime (nanoseconds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Print {
    dir: bool,
    mode: u32,
    size: u64,
    ino: u64,
    mtime: (i64, i64),
    ctime: (i64, i64),
}

/// Every entry under `root` (symlinks not followed) and its fingerprint.
fn fingerprints(root: &Path) -> std::io::Result<HashMap<PathBuf, Print>> {
    // An unreadable root must be an error, not an empty tree.
    std::fs::read_dir(root)?;
    let mut out = HashMap::new();
    for entry in walkdir::WalkDir::new(root)
        .min_depth(1)
        .follow_links(false)
        .into_iter()
        .flatten()
    {
        let Ok(m) = entry.metadata() else { continue };
        out.insert(
            entry.into_path(),
            Print {
                dir: m.is_dir(),
                mode: m.mode() & libc::S_IFMT,
                size: m.size(),
                ino: m.ino(),
                mtime: (m.mtime(), m.mtime_nsec()),
                ctime: (m.ctime(), m.ctime_nsec()),
            },
        );
    }
    Ok(out)
}

/// Paths added, removed or changed between two polls. A directory counts only when it appears,
/// vanishes or changes type (its own mtime moves with every child, which is reported itself).
fn diff(old: &HashMap<PathBuf, Print>, new: &HashMap<PathBuf, Print>) -> Vec<PathChange> {
    let mut changes: Vec<PathChange> = Vec::new();
    let mut push = |p: &PathBuf, kind| {
        changes.push(PathChange {
            path: p.clone(),
            kind,
        })
    };
    for (p, n) in new {
        match old.get(p) {
            None => push(p, ChangeKind::Written),
            Some(o) if n.dir && o.dir => {}
            Some(o) if o != n => push(p, ChangeKind::Written),
            Some(_) => {}
        }
    }
    for p in old.keys().filter(|p| !new.contains_key(*p)) {
        push(p, ChangeKind::Removed);
    }
    changes.sort_by(|a, b| a.path.cmp(&b.path));
    changes
}

/// Whether an error means the inotify watch (or instance) limit was reached.
pub fn is_watch_limit(e: &notify::Error) -> bool {
    match &e.kind {
        notify::ErrorKind::MaxFilesWatch => true,
        notify::ErrorKind::Io(io) => io.raw_os_error() == Some(libc::ENOSPC),
        notify::ErrorKind::Generic(s) => {
            let s = s.to_lowercase();
            s.contains("no space left on device") || (s.contains("max") && s.contains("watch"))
        }
        _ => false,
    }
}

/// Creating an inotify instance failed with EMFILE: the user's `max_user_instances` (or the
/// process's open-file limit) is reached — not the watch limit.
pub fn is_instance_limit(e: &notify::Error) -> bool {
    matches!(&e.kind, notify::ErrorKind::Io(io) if io.raw_os_error() == Some(libc::EMFILE))
}

fn describe(e: &notify::Error) -> String {
    let what = match &e.kind {
        notify::ErrorKind::MaxFilesWatch => {
            "the maximum number of inotify watches is in use".into()
        }
        notify::ErrorKind::Io(io) => io.to_string().to_lowercase(),
        notify::ErrorKind::Generic(s) => s.to_lowercase(),
        other => format!("{other:?}").to_lowercase(),
    };
    match e.paths.first() {
        Some(p) => format!("{what}: `{}`", p.display()),
        None => what,
    }
}

/// Turns one notification into a change, or nothing when it changes nothing.
fn translate(res: notify::Result<Event>) -> Option<FsEvent> {
    let ev = match res {
        Ok(ev) => ev,
        Err(e) if is_watch_limit(&e) => {
            let message = describe(&e);
            let path = e.paths.first().cloned();
            let source = match e.kind {
                notify::ErrorKind::Io(io) => Some(IoCause::new(io)),
                _ => None,
            };
            return Some(FsEvent::Limit {
                message,
                path,
                source,
            });
        }
        Err(e) => {
            return Some(FsEvent::Rescan {
                why: format!("watcher error: {}", describe(&e)),
            })
        }
    };
    if ev.need_rescan() {
        return Some(FsEvent::Rescan {
            why: "the event queue overflowed".into(),
        });
    }
    let all = |paths: Vec<PathBuf>, kind: ChangeKind| {
        paths
            .into_iter()
            .map(|path| PathChange { path, kind })
            .collect::<Vec<_>>()
    };
    let changes = match ev.kind {
        // Closing after writing: the writer is done with this write (it may write again).
        EventKind::Access(AccessKind::Close(AccessMode::Write)) => {
            all(ev.paths, ChangeKind::Written)
        }
        // Opening and reading change nothing (and the referee's own reads must not wake it).
        EventKind::Access(_) => return None,
        // Written through a handle still open: its close will say when the writer let go.
        EventKind::Modify(ModifyKind::Data(_)) if REPORTS_CLOSE => {
            all(ev.paths, ChangeKind::Writing)
        }
        EventKind::Modify(ModifyKind::Name(RenameMode::To)) => all(ev.paths, ChangeKind::RenamedIn),
        EventKind::Modify(ModifyKind::Name(RenameMode::From)) | EventKind::Remove(_) => {
            all(ev.paths, ChangeKind::Removed)
        }
        // `[from, to]`; the from path may be missing when it was not watched.
        EventKind::Modify(ModifyKind::Name(RenameMode::Both)) => {
            let last = ev.paths.len().saturating_sub(1);
            ev.paths
                .into_iter()
                .enumerate()
                .map(|(i, path)| PathChange {
                    path,
                    kind: if i == last {
                        ChangeKind::RenamedIn
                    } else {
                        ChangeKind::Removed
                    },
                })
                .collect()
        }
        EventKind::Modify(ModifyKind::Metadata(_)) => all(ev.paths, ChangeKind::Metadata),
        // Created, written, or something the backend cannot name: treat as a write.
        _ => all(ev.paths, ChangeKind::Written),
    };
    if changes.is_empty() {
        // An event without a path (e.g. an unidentified `Other`): be safe, look again.
        return Some(FsEvent::Rescan {
            why: "an event without a path".into(),
        });
    }
    Some(FsEvent::Changed(changes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use notify::event::{CreateKind, DataChange, Flag, MetadataKind, RemoveKind};
    use std::sync::mpsc;

    fn ev(kind: EventKind, paths: &[&str]) -> notify::Result<Event> {
        let mut e = Event::new(kind);
        for p in paths {
            e = e.add_path(PathBuf::from(p));
        }
        Ok(e)
    }

    #[test]
    fn reads_are_not_changes() {
        assert_eq!(
            translate(ev(
                EventKind::Access(AccessKind::Open(AccessMode::Any)),
                &["/b/x"]
            )),
            None
        );
        assert_eq!(
            translate(ev(EventKind::Access(AccessKind::Read), &["/b/x"])),
            None
        );
        assert!(matches!(
            translate(ev(
                EventKind::Access(AccessKind::Close(AccessMode::Write)),
                &["/b/x"]
            )),
            Some(FsEvent::Changed(_))
        ));
    }

    fn kinds(res: notify::Result<Event>) -> Vec<(String, ChangeKind)> {
        match translate(res) {
            Some(FsEvent::Changed(c)) => c
                .into_iter()
                .map(|p| (p.path.display().to_string(), p.kind))
                .collect(),
            other => panic!("expected a change, got {other:?}"),
        }
    }

    #[test]
    fn renames_mark_the_target_complete_and_the_source_removed() {
        use ChangeKind::*;
        let name = |m| EventKind::Modify(ModifyKind::Name(m));
        assert_eq!(
            kinds(ev(name(RenameMode::Both), &["/b/.tmp", "/b/x"])),
            [("/b/.tmp".into(), Removed), ("/b/x".into(), RenamedIn)]
        );
        // Moved in from outside the watch: only the target is known.
        assert_eq!(
            kinds(ev(name(RenameMode::Both), &["/b/x"])),
            [("/b/x".into(), RenamedIn)]
        );
        assert_eq!(
            kinds(ev(name(RenameMode::To), &["/b/x"])),
            [("/b/x".into(), RenamedIn)]
        );
        assert_eq!(
            kinds(ev(name(RenameMode::From), &["/b/.tmp"])),
            [("/b/.tmp".into(), Removed)]
        );
        assert_eq!(
            kinds(ev(EventKind::Create(CreateKind::File), &["/b/x"])),
            [("/b/x".into(), Written)]
        );
        // Written with the handle still open (its close comes later), where closes are known.
        assert_eq!(
            kinds(ev(
                EventKind::Modify(ModifyKind::Data(DataChange::Any)),
                &["/b/x"]
            )),
            [("/b/x".into(), if REPORTS_CLOSE { Writing } else { Written })]
        );
        assert_eq!(
            kinds(ev(
                EventKind::Access(AccessKind::Close(AccessMode::Write)),
                &["/b/x"]
            )),
            [("/b/x".into(), Written)]
        );
        assert_eq!(
            kinds(ev(
                EventKind::Modify(ModifyKind::Metadata(MetadataKind::Any)),
                &["/b/x"]
            )),
            [("/b/x".into(), Metadata)]
        );
        assert_eq!(
            kinds(ev(EventKind::Remove(RemoveKind::File), &["/b/x"])),
            [("/b/x".into(), Removed)]
        );
    }

    #[test]
    fn overflow_and_errors_rescan_and_limits_fall_back() {
        let overflow = Event::new(EventKind::Other).set_flag(Flag::Rescan);
        assert!(matches!(
            translate(Ok(overflow)),
            Some(FsEvent::Rescan { .. })
        ));
        assert!(matches!(
            translate(Err(notify::Error::generic("boom"))),
            Some(FsEvent::Rescan { .. })
        ));
        let limit = notify::Error::new(notify::ErrorKind::MaxFilesWatch);
        assert!(matches!(translate(Err(limit)), Some(FsEvent::Limit { .. })));
        let enospc = notify::Error::io(std::io::Error::from_raw_os_error(libc::ENOSPC));
        assert!(is_watch_limit(&enospc));
        // The limit keeps the system's error and the path it was met at.
        let at = notify::Error::io(std::io::Error::from_raw_os_error(libc::ENOSPC))
            .add_path(PathBuf::from("/b/deep"));
        match translate(Err(at)) {
            Some(FsEvent::Limit {
                path,
                source: Some(source),
                ..
            }) => {
                assert_eq!(path.as_deref(), Some(Path::new("/b/deep")));
                assert_eq!(source.0.raw_os_error(), Some(libc::ENOSPC));
            }
            other => panic!("{other:?}"),
        }
        assert!(fallback_warning(&enospc).contains("max_user_watches=524288"));
        assert!(!is_watch_limit(&notify::Error::path_not_found()));
        let emfile = notify::Error::io(std::io::Error::from_raw_os_error(libc::EMFILE));
        assert!(is_instance_limit(&emfile) && !is_watch_limit(&emfile));
        assert!(fallback_warning(&emfile).contains("max_user_instances"));
    }

    #[test]
    fn the_poller_sees_rewrites_in_the_same_second_and_backdated_mtimes() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("g.json");
        std::fs::write(&f, "one").unwrap();
        let a = fingerprints(dir.path()).unwrap();
        std::fs::write(&f, "two").unwrap();
        let b = fingerprints(dir.path()).unwrap();
        assert_eq!(
            diff(&a, &b).len(),
            1,
            "same size, same second: still a change"
        );
        let old = filetime::FileTime::from_unix_time(1_000_000, 0);
        std::fs::write(&f, "three").unwrap();
        filetime::set_file_mtime(&f, old).unwrap();
        let c = fingerprints(dir.path()).unwrap();
        assert_eq!(diff(&b, &c).len(), 1, "an older mtime is a change too");
        std::fs::create_dir(dir.path().join("d")).unwrap();
        std::fs::remove_file(&f).unwrap();
        let d = fingerprints(dir.path()).unwrap();
        let kinds: Vec<ChangeKind> = diff(&c, &d).into_iter().map(|p| p.kind).collect();
        assert_eq!(
            kinds,
            [ChangeKind::Written, ChangeKind::Removed],
            "one added, one removed"
        );
        std::fs::write(dir.path().join("d/x"), "x").unwrap();
        let e = fingerprints(dir.path()).unwrap();
        let changes = diff(&d, &e);
        assert_eq!(
            changes.len(),
            1,
            "the new file, not its directory: {changes:?}"
        );
    }

    #[test]
    fn a_missing_directory_is_an_error_with_its_path_and_cause() {
        let dir = tempfile::tempdir().unwrap();
        let gone = dir.path().join("gone");
        let e = start(&gone, Mode::Poll(Duration::from_millis(50)), |_| {}).unwrap_err();
        match &e {
            WatchError::Unreadable { path, source } => {
                assert_eq!(path, &gone);
                assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            }
            other => panic!("expected Unreadable, got {other:?}"),
        }
        assert_eq!(
            crate::error::chain(&e),
            format!(
                "cannot watch `{}`: no such file or directory (os error 2)",
                gone.display()
            )
        );
    }

    #[test]
    fn native_and_poll_sources_report_a_new_file() {
        for mode in [Mode::Native, Mode::Poll(Duration::from_millis(50))] {
            let dir = tempfile::tempdir().unwrap();
            let (tx, rx) = mpsc::channel();
            let source = start(dir.path(), mode, move |e| {
                let _ = tx.send(e);
            })
            .unwrap();
            // A file in a directory created after the watch started may be written before the
            // watch on that directory exists; the daemon's full scans cover that, not this module.
            std::fs::write(dir.path().join("a.md"), "x").unwrap();
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            let mut seen = false;
            while !seen {
                let left = deadline.saturating_duration_since(std::time::Instant::now());
                match rx.recv_timeout(left) {
                    Ok(FsEvent::Changed(c)) => seen = c.iter().any(|p| p.path.ends_with("a.md")),
                    Ok(_) => {}
                    Err(_) => panic!("no event for a.md with {:?}", source.kind),
                }
            }
        }
    }
}
