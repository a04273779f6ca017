//! What gets written: the referee's own files (`OBSERVER-PASS-N.md`, `OBSERVER-STOP.md`,
//! `OBSERVER-REPORT.md`) and the printed formats. Every write is atomic — a temp file
//! beside the target, then a rename — so a reader never sees half a file; what it must survive
//! besides readers (a power cut) is the caller's [`Durability`]: the pass files and the report
//! are on disk before their rename, the STOP file is renamed into place first (an orchestrator
//! sees it at once) and on disk right after. Nothing here writes any other path: the referee
//! never changes a pipeline file.
//!
//! The referee's own names cannot be turned against it: temp files are created exclusively
//! under random names (a symlink or FIFO planted in advance is never opened or followed), and
//! what someone else put at a target (a symlink, FIFO, directory) is reported as [`Foreign`] to
//! the caller, which records it as tamper. Nothing here deletes a directory.

pub mod blocks;
pub mod code_change;
pub mod escape;
pub mod github;
pub mod history;
pub mod json;
pub mod junit;
pub mod locate;
pub mod markdown;
pub mod sarif;

use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::engine::{CheckKey, Status};

pub const STOP_FILE: &str = "OBSERVER-STOP.md";
pub const REPORT_FILE: &str = "OBSERVER-REPORT.md";

pub fn pass_file(pass: &str) -> String {
    format!("OBSERVER-PASS-{pass}.md")
}

/// One change of a check's status, as kept in the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub at: DateTime<Utc>,
    pub pass: String,
    pub check: String,
    pub from: Option<Status>,
    pub to: Status,
    /// e.g. `RESOLVED after STOP`, `STOP raised`, `ESCALATED: …`
    pub note: Option<String>,
    /// What was observed when the status changed (the evidence of a failure that was later
    /// resolved is no longer in the current results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<String>,
    /// The evidence's details when the status became FAIL or INCONCLUSIVE (file:line, term,
    /// value; at most [`Change::KEPT_DETAILS`] and a count of the rest), so what raised a STOP
    /// stays readable after it is resolved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
}

impl Change {
    /// How many evidence details a change keeps (the STOP file shows as many).
    pub const KEPT_DETAILS: usize = 12;

    /// The details a change to `to` keeps: none for a good status, else the first
    /// [`Change::KEPT_DETAILS`] and a line counting the rest.
    pub fn kept_details(to: Status, details: &[String]) -> Vec<String> {
        if !matches!(to, Status::Fail | Status::Inconclusive) {
            return Vec::new();
        }
        let mut kept: Vec<String> = details.iter().take(Self::KEPT_DETAILS).cloned().collect();
        if details.len() > Self::KEPT_DETAILS {
            kept.push(format!("… {} more", details.len() - Self::KEPT_DETAILS));
        }
        kept
    }
}

/// Something the referee noticed about its own files or itself (tamper, fault, restart).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Incident {
    pub at: DateTime<Utc>,
    pub kind: String,
    pub text: String,
}

/// What the written files say beyond one evaluation: when, why, and what happened before.
#[derive(Debug, Clone, Default)]
pub struct Context {
    pub build_dir: PathBuf,
    pub started: Option<DateTime<Utc>>,
    pub written: Option<DateTime<Utc>>,
    /// Why the referee finished (final report only).
    pub ended: Option<String>,
    pub history: Vec<Change>,
    pub incidents: Vec<Incident>,
    /// Per STOP-raising check (`pass:check`): the escalation reason, if escalated.
    pub escalations: Vec<(CheckKey, String)>,
    /// The waiver file in use (`--waivers`) and its expired waivers.
    pub waivers: Option<crate::waivers::InUse>,
}

/// Something at one of the referee's own names that the referee did not put there: it is never
/// followed or opened, and whoever writes over it records it as tamper.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Foreign {
    Symlink,
    Fifo,
    Socket,
    Device,
    Dir,
}

impl Foreign {
    /// What `meta` (from `symlink_metadata`, never following) is, unless a regular file.
    pub fn of(meta: &std::fs::Metadata) -> Option<Foreign> {
        use std::os::unix::fs::FileTypeExt;
        let t = meta.file_type();
        if t.is_file() {
            None
        } else if t.is_symlink() {
            Some(Foreign::Symlink)
        } else if t.is_dir() {
            Some(Foreign::Dir)
        } else if t.is_fifo() {
            Some(Foreign::Fifo)
        } else if t.is_socket() {
            Some(Foreign::Socket)
        } else {
            Some(Foreign::Device)
        }
    }

    pub fn describe(self) -> &'static str {
        match self {
            Foreign::Symlink => "a symbolic link",
            Foreign::Fifo => "a FIFO",
            Foreign::Socket => "a socket",
            Foreign::Device => "a device node",
            Foreign::Dir => "a directory",
        }
    }
}

/// What [`write_atomic`] found at its target and replaced (the link or FIFO itself, never what it
/// points to): the caller records it as tamper.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Written {
    pub replaced: Option<Foreign>,
    /// Where a directory found at the target was moved to ([`write_over_dir`] only).
    pub moved_to: Option<PathBuf>,
}

/// What is at `dir/name`, looked at without following it: `None` when absent or a regular file.
pub fn foreign_at(dir: &Path, name: &str) -> std::io::Result<Option<Foreign>> {
    match std::fs::symlink_metadata(dir.join(name)) {
        Ok(m) => Ok(Foreign::of(&m)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(e),
    }
}

/// The prefix of the temp files written beside `name` (`.{name}.tmp.<random>`); a restarted
/// referee removes leftovers by it.
pub fn temp_prefix(name: &str) -> String {
    format!(".{name}.tmp.")
}

/// What a write must survive besides readers (who never see half a file, whichever is chosen).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Durability {
    /// The contents are fsynced before the rename and the directory after: after a power cut the
    /// name holds the old contents or the new ones, whole. The pass files and the report.
    Contents,
    /// The rename comes first, then the fsync of the contents and of the directory: the name
    /// appears as soon as it can, and is on disk when the write returns. After a power cut in
    /// between, the name may hold less than was written (or the old entry, if the rename was not
    /// on disk yet). For `OBSERVER-STOP.md`, whose existence is the message: an orchestrator must
    /// not move on while it is there, whatever it says, so a short STOP is still a STOP; and the
    /// fsync of its contents before the rename was most of the referee's reaction time.
    VisibleFirst,
    /// As [`Durability::VisibleFirst`], but the fsyncs are done by one background thread
    /// ([`sync_in_background`]): the caller goes on at once. For the daemon's STOP and pass
    /// files, where one loop serves every build (`watch --root`) and a disk flush for one build
    /// must not hold up another build's STOP. After a power cut the name may hold less than was
    /// written; the daemon rewrites its files when it starts again.
    Background,
    /// No fsync: the rename alone. For a file that means nothing after a power cut: the
    /// heartbeat, whose process is gone then (an old, empty or unparsable heartbeat is not live).
    Volatile,
}

/// Writes `contents` to `dir/name` atomically: a new temp file beside it, fsync, rename, fsync of
/// the directory (so the rename itself survives a crash). [`write_atomic_as`] with
/// [`Durability::Contents`].
///
/// The temp file is created exclusively (`O_CREAT | O_EXCL`) under a random name by the
/// `tempfile` crate, so nothing planted in advance — a symlink pointing outside the build
/// directory, a FIFO that would block the open — can be at that name: an existing entry is never
/// opened, a new name is drawn. The rename is a `renameat2(RENAME_EXCHANGE)`: the new file takes
/// the target's name in one step and the old entry lands on the temp name, where it is looked at
/// (`lstat`, never followed or opened) and unlinked — so what was replaced is known exactly, not
/// guessed from a look taken before the rename. A symlink or FIFO found there is returned in
/// [`Written`]. A directory at the target is an error (see [`write_over_dir`]).
pub fn write_atomic(dir: &Path, name: &str, contents: &str) -> std::io::Result<Written> {
    write_atomic_as(dir, name, contents, Durability::Contents)
}

/// [`write_atomic`], fsyncing as `durability` says.
pub fn write_atomic_as(
    dir: &Path,
    name: &str,
    contents: &str,
    durability: Durability,
) -> std::io::Result<Written> {
    if foreign_at(dir, name)? == Some(Foreign::Dir) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::IsADirectory,
            format!("`{name}` is a directory someone else put there; it is not replaced"),
        ));
    }
    replace(dir, name, contents, durability)
}

/// Writes `contents` to `dir/name` even where someone put a directory, with no moment where the
/// name is absent (an orchestrator reads a directory at the STOP path as a STOP): the directory
/// is swapped out in the same exchange and moved aside (`{name}.tampered-<time>`, never
/// deleted). Where the file system cannot exchange, it is moved aside first.
pub fn write_over_dir(
    dir: &Path,
    name: &str,
    contents: &str,
    durability: Durability,
) -> std::io::Result<Written> {
    replace(dir, name, contents, durability)
}

/// How the new file took its name.
enum Swap {
    /// The old entry is now at the temp name.
    Exchanged,
    /// Nothing was at the target.
    Placed,
    /// The file system cannot exchange names.
    Unsupported,
}

fn replace(
    dir: &Path,
    name: &str,
    contents: &str,
    durability: Durability,
) -> std::io::Result<Written> {
    let tmp = temp_with(dir, name, contents)?;
    if durability == Durability::Contents {
        tmp.as_file().sync_all()?;
    }
    // The new file's handle, whatever name it ends up with, for the background fsync.
    let background = match durability {
        Durability::Background => Some(tmp.as_file().try_clone()?),
        _ => None,
    };
    let target = dir.join(name);
    let mut written = Written::default();
    let swap = swap_in(tmp.path(), &target)?;
    if durability == Durability::VisibleFirst && !matches!(swap, Swap::Unsupported) {
        // Visible now; the file handle is still the new file's, whatever name it has.
        tmp.as_file().sync_all()?;
    }
    match swap {
        Swap::Exchanged => {
            // From here the temp name holds the old entry, not our file.
            let old = tmp.into_temp_path();
            written.replaced = std::fs::symlink_metadata(&old)
                .ok()
                .and_then(|m| Foreign::of(&m));
            if written.replaced == Some(Foreign::Dir) {
                let held = old.keep().map_err(|e| e.error)?;
                let to = aside_name(dir, name, &Utc::now())?;
                std::fs::rename(&held, &to)?;
                written.moved_to = Some(to);
            } else {
                // Unlinks the entry (a link or FIFO is never opened).
                old.close()?;
            }
        }
        Swap::Placed => {
            // Nothing was there to keep; the temp path is gone (renamed into place).
            let _ = tmp.into_temp_path().keep();
        }
        Swap::Unsupported => {
            // Nothing was renamed yet; `persist` gives the handle up, so the contents go first.
            if durability == Durability::VisibleFirst {
                tmp.as_file().sync_all()?;
            }
            written.replaced = foreign_at(dir, name)?;
            if written.replaced == Some(Foreign::Dir) {
                written.moved_to = Some(move_aside(dir, name, &Utc::now())?);
            }
            // On failure the temp file comes back inside the error and is removed when it drops.
            tmp.persist(&target).map_err(|e| e.error)?;
        }
    }
    match background {
        Some(file) => sync_in_background(file, dir),
        None if durability != Durability::Volatile => sync_dir(dir)?,
        None => {}
    }
    Ok(written)
}

/// One fsync job: a file that has its name already, and the directory holding the name.
struct SyncJob {
    file: std::fs::File,
    dir: std::path::PathBuf,
}

/// Hands a file and its directory to the one background thread that fsyncs them (started on
/// first use; jobs drained in batches, each directory fsynced once a batch). Should the thread
/// be gone, the caller fsyncs itself.
pub fn sync_in_background(file: std::fs::File, dir: &Path) {
    use std::sync::mpsc::{self, Sender};
    use std::sync::{Mutex, OnceLock};
    static QUEUE: OnceLock<Mutex<Option<Sender<SyncJob>>>> = OnceLock::new();
    let queue = QUEUE.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SyncJob>();
        let spawned = std::thread::Builder::new()
            .name("referee-sync".into())
            .spawn(move || {
                while let Ok(first) = rx.recv() {
                    let mut dirs = std::collections::BTreeSet::new();
                    for job in std::iter::once(first).chain(rx.try_iter()) {
                        let _ = job.file.sync_all();
                        dirs.insert(job.dir);
                    }
                    for d in dirs {
                        let _ = sync_dir(&d);
                    }
                }
            });
        Mutex::new(spawned.ok().map(|_| tx))
    });
    let job = SyncJob {
        file,
        dir: dir.to_path_buf(),
    };
    let sent = match queue.lock() {
        Ok(q) => match q.as_ref() {
            Some(tx) => tx.send(job).map_err(|e| e.0),
            None => Err(job),
        },
        Err(_) => Err(job),
    };
    if let Err(job) = sent {
        let _ = job.file.sync_all();
        let _ = sync_dir(&job.dir);
    }
}

/// Puts `tmp` at `target`: exchanged with what is there, or renamed in where nothing is (without
/// replacing anything that appears in between).
fn swap_in(tmp: &Path, target: &Path) -> std::io::Result<Swap> {
    const UNSUPPORTED: [i32; 3] = [libc::EINVAL, libc::ENOSYS, libc::EOPNOTSUPP];
    // Each round loses only to a name appearing or vanishing in between; a few are plenty.
    for _ in 0..8 {
        match rename2(tmp, target, libc::RENAME_EXCHANGE) {
            Ok(()) => return Ok(Swap::Exchanged),
            Err(e) if e.raw_os_error() == Some(libc::ENOENT) => {
                match rename2(tmp, target, libc::RENAME_NOREPLACE) {
                    Ok(()) => return Ok(Swap::Placed),
                    Err(e) if e.raw_os_error() == Some(libc::EEXIST) => continue,
                    Err(e) => return Err(e),
                }
            }
            Err(e) if e.raw_os_error().is_some_and(|c| UNSUPPORTED.contains(&c)) => {
                return Ok(Swap::Unsupported)
            }
            Err(e) => return Err(e),
        }
    }
    Err(std::io::Error::other(format!(
        "`{}` kept appearing and vanishing while it was being replaced",
        target.display()
    )))
}

/// A new temp file beside `name` holding `contents` (not yet fsynced).
fn temp_with(dir: &Path, name: &str, contents: &str) -> std::io::Result<tempfile::NamedTempFile> {
    use std::os::unix::fs::PermissionsExt;
    let prefix = temp_prefix(name);
    // 0o666 before the umask, as `File::create` would (the crate's default, 0o600, would hide
    // the referee's files from an orchestrator running as another user).
    let mut tmp = tempfile::Builder::new()
        .prefix(&prefix)
        .rand_bytes(12)
        .permissions(std::fs::Permissions::from_mode(0o666))
        .tempfile_in(dir)?;
    tmp.write_all(contents.as_bytes())?;
    Ok(tmp)
}

/// Linux `renameat2` with `flags` (`RENAME_EXCHANGE`: swap two names atomically;
/// `RENAME_NOREPLACE`: fail if the target exists).
fn rename2(a: &Path, b: &Path, flags: libc::c_uint) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = |p: &Path| {
        std::ffi::CString::new(p.as_os_str().as_bytes())
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidInput, e))
    };
    let (a, b) = (c(a)?, c(b)?);
    // SAFETY: two valid NUL-terminated paths, relative to the working directory as given.
    let rc = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            a.as_ptr(),
            libc::AT_FDCWD,
            b.as_ptr(),
            flags,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// fsyncs a directory, so a rename or unlink in it is on disk.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let d = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(dir)?;
    match d.sync_all() {
        // Some file systems cannot sync a directory; the rename happened all the same.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => Ok(()),
        r => r,
    }
}

/// Removes one of the referee's own files; absent is fine. A symlink or FIFO there is unlinked
/// (never opened); a directory is an error (see [`move_aside`]).
pub fn remove_own(dir: &Path, name: &str) -> std::io::Result<()> {
    debug_assert!(name.starts_with("OBSERVER-"));
    match std::fs::remove_file(dir.join(name)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        Ok(()) => sync_dir(dir),
        _ => Ok(()),
    }
}

/// Renames whatever someone else put at `dir/name` to `{name}.tampered-<UTC time>` beside it:
/// evidence is kept, nothing is deleted (a directory is never removed recursively).
pub fn move_aside(dir: &Path, name: &str, now: &DateTime<Utc>) -> std::io::Result<PathBuf> {
    let target = aside_name(dir, name, now)?;
    std::fs::rename(dir.join(name), &target)?;
    sync_dir(dir)?;
    Ok(target)
}

/// A free `{name}.tampered-<time>[-n]` beside `name`.
fn aside_name(dir: &Path, name: &str, now: &DateTime<Utc>) -> std::io::Result<PathBuf> {
    let stamp = now.format("%Y%m%dT%H%M%S%.3fZ");
    let mut target = dir.join(format!("{name}.tampered-{stamp}"));
    let mut n: u32 = 1;
    // symlink_metadata: a dangling symlink at the candidate name counts as taken too.
    while std::fs::symlink_metadata(&target).is_ok() {
        target = dir.join(format!("{name}.tampered-{stamp}-{n}"));
        n = n.saturating_add(1);
        if n == u32::MAX {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                format!("no free name to move `{name}` aside to"),
            ));
        }
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        write_atomic(dir.path(), "OBSERVER-STOP.md", "one").unwrap();
        write_atomic(dir.path(), "OBSERVER-STOP.md", "two").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("OBSERVER-STOP.md")).unwrap(),
            "two"
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1);
        remove_own(dir.path(), "OBSERVER-STOP.md").unwrap();
        remove_own(dir.path(), "OBSERVER-STOP.md").unwrap();
    }

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: a valid C string; mkfifo touches nothing else.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    }

    #[test]
    fn temp_names_are_unpredictable_and_planted_ones_are_never_opened() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("build");
        std::fs::create_dir(&dir).unwrap();
        let outside = root.path().join("outside.txt");
        std::fs::write(&outside, "precious").unwrap();
        // The old predictable name, as a symlink out of the directory and as a FIFO.
        let pid = std::process::id();
        std::os::unix::fs::symlink(&outside, dir.join(format!(".OBSERVER-REPORT.md.tmp.{pid}")))
            .unwrap();
        mkfifo(&dir.join(format!(".OBSERVER-STOP.md.tmp.{pid}")));
        assert_eq!(
            write_atomic(&dir, "OBSERVER-REPORT.md", "report").unwrap(),
            Written::default()
        );
        write_atomic(&dir, "OBSERVER-STOP.md", "stop").unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
        assert_eq!(
            std::fs::read_to_string(dir.join("OBSERVER-STOP.md")).unwrap(),
            "stop"
        );
        // Two writes never use the same temp name: they are drawn at random, not from the pid.
        let a = temp_prefix("OBSERVER-REPORT.md");
        assert!(a.starts_with(".OBSERVER-REPORT.md.tmp."));
    }

    #[test]
    fn a_symlink_or_fifo_at_the_target_is_replaced_not_followed() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("build");
        std::fs::create_dir(&dir).unwrap();
        let outside = root.path().join("outside.txt");
        std::fs::write(&outside, "precious").unwrap();
        std::os::unix::fs::symlink(&outside, dir.join("OBSERVER-PASS-2.md")).unwrap();
        let w = write_atomic(&dir, "OBSERVER-PASS-2.md", "pass").unwrap();
        assert_eq!(w.replaced, Some(Foreign::Symlink));
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious");
        let meta = std::fs::symlink_metadata(dir.join("OBSERVER-PASS-2.md")).unwrap();
        assert!(meta.is_file());
        mkfifo(&dir.join("OBSERVER-REPORT.md"));
        let w = write_atomic(&dir, "OBSERVER-REPORT.md", "report").unwrap();
        assert_eq!(w.replaced, Some(Foreign::Fifo));
        assert_eq!(
            std::fs::read_to_string(dir.join("OBSERVER-REPORT.md")).unwrap(),
            "report"
        );
        // A directory cannot be renamed over: an error, and the directory is left as it is.
        std::fs::create_dir(dir.join("OBSERVER-PASS-3.md")).unwrap();
        std::fs::write(dir.join("OBSERVER-PASS-3.md/keep"), "x").unwrap();
        let e = write_atomic(&dir, "OBSERVER-PASS-3.md", "pass").unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::IsADirectory);
        assert!(dir.join("OBSERVER-PASS-3.md/keep").exists());
        // Only the written files and the planted directory remain: no temp file is left.
        let mut names: Vec<_> = std::fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        names.sort();
        assert_eq!(
            names,
            [
                "OBSERVER-PASS-2.md",
                "OBSERVER-PASS-3.md",
                "OBSERVER-REPORT.md"
            ]
        );
        // Moved aside, never deleted; twice in the same millisecond gets a second name.
        let now = Utc::now();
        let to = move_aside(&dir, "OBSERVER-PASS-3.md", &now).unwrap();
        assert!(to.join("keep").exists());
        std::fs::create_dir(dir.join("OBSERVER-PASS-3.md")).unwrap();
        let to2 = move_aside(&dir, "OBSERVER-PASS-3.md", &now).unwrap();
        assert_ne!(to, to2);
        assert!(to2
            .to_string_lossy()
            .contains("OBSERVER-PASS-3.md.tampered-"));
    }

    #[test]
    fn a_directory_is_swapped_out_with_no_moment_without_the_name() {
        let dir = tempfile::tempdir().unwrap();
        let stop = dir.path().join("OBSERVER-STOP.md");
        std::fs::create_dir(&stop).unwrap();
        std::fs::write(stop.join("keep"), "x").unwrap();
        let w = write_over_dir(
            dir.path(),
            "OBSERVER-STOP.md",
            "stop",
            Durability::VisibleFirst,
        )
        .unwrap();
        assert_eq!(w.replaced, Some(Foreign::Dir));
        let to = w.moved_to.unwrap();
        assert_eq!(std::fs::read_to_string(&stop).unwrap(), "stop");
        assert_eq!(std::fs::read_to_string(to.join("keep")).unwrap(), "x");
        let names: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 2, "no temp file left");
    }

    #[test]
    fn written_files_are_readable_by_others_as_before() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().unwrap();
        write_atomic(dir.path(), "OBSERVER-REPORT.md", "r").unwrap();
        let mode = std::fs::metadata(dir.path().join("OBSERVER-REPORT.md"))
            .unwrap()
            .permissions()
            .mode();
        // SAFETY: umask only reads and sets the process mask; restored at once.
        let mask = unsafe {
            let m = libc::umask(0o022);
            libc::umask(m);
            m
        };
        assert_eq!(mode & 0o777, 0o666 & !(mask as u32));
    }
}
