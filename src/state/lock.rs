//! Who owns a state directory: the live `referee watch` holds an exclusive `flock` on its event
//! log ([`EVENTS_FILE`]) for as long as it runs (the kernel lets go when the process dies), so a
//! second referee on the same directory is refused, and a one-shot command can ask whether a
//! live referee is here ([`locked_by_other`]) without a daemon of its own.
//!
//! This module owns the log's name, opening it as a regular file only (`O_NOFOLLOW`,
//! `O_NONBLOCK`: a symlink or FIFO planted at its name is moved aside, never followed or
//! read), and the lock. What the log holds, appending to it and resuming from it, is the
//! daemon's journal.

use std::fs::{File, TryLockError};
use std::io;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};

use chrono::Utc;

use crate::atomic::{move_aside, Foreign};

/// The event log's file name, in the state directory (and its copy in the watched directory).
pub const EVENTS_FILE: &str = "OBSERVER-EVENTS.jsonl";

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("another referee is already watching this directory (it holds the lock on `{}`); stop it first", .path.display())]
    Busy { path: PathBuf },
    #[error("cannot open `{}`: {source}", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

/// The event log, opened (created when missing) and locked by this process until it is closed.
#[derive(Debug)]
pub struct Locked {
    pub file: File,
    /// What someone else had put at the log's name (a symlink, FIFO, directory …), and where it
    /// was moved aside to; a new log was started in its place.
    pub moved_aside: Option<(Foreign, PathBuf)>,
}

/// Opens the log without following a symlink or blocking on a FIFO; only a regular file is used.
fn open_regular(path: &Path, create: bool) -> io::Result<Result<File, Foreign>> {
    // Not following: a symlink at the name fails (ELOOP) instead of redirecting the writes;
    // not blocking: a FIFO there cannot hang the open (a regular file ignores the flag).
    let access = match create {
        true => crate::safefs::Access::READ_APPEND_CREATE,
        false => crate::safefs::Access::READ_APPEND,
    };
    let file = match crate::safefs::open(path, access) {
        Ok(f) => f,
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Ok(Err(Foreign::Symlink)),
        // A directory (EISDIR), a socket (ENXIO) …: say what is there rather than fail on it.
        Err(e) => match std::fs::symlink_metadata(path)
            .ok()
            .and_then(|m| Foreign::of(&m))
        {
            Some(found) => return Ok(Err(found)),
            None => return Err(e),
        },
    };
    match Foreign::of(&file.metadata()?) {
        None => Ok(Ok(file)),
        Some(f) => Ok(Err(f)),
    }
}

/// Opens (creating) and locks the event log in the state directory `dir`.
///
/// The lock is an exclusive `flock` held for the life of the returned file, so a second referee
/// on the same directory is refused ([`LockError::Busy`]). Anything but a regular file at the
/// log's name is never followed or read: it is moved aside
/// (`OBSERVER-EVENTS.jsonl.tampered-<time>`) and a new log started, which the caller records as
/// tamper.
pub fn lock(dir: &Path) -> Result<Locked, LockError> {
    let path = dir.join(EVENTS_FILE);
    let io_err = |source: io::Error| LockError::Io {
        path: path.to_path_buf(),
        source,
    };
    let mut moved_aside = None;
    let file = match open_regular(&path, true).map_err(io_err)? {
        Ok(f) => f,
        Err(found) => {
            let to = move_aside(dir, EVENTS_FILE, &Utc::now()).map_err(io_err)?;
            moved_aside = Some((found, to));
            match open_regular(&path, true).map_err(io_err)? {
                Ok(f) => f,
                // Planted again in between: give up rather than loop.
                Err(again) => {
                    return Err(io_err(io::Error::other(format!(
                        "`{EVENTS_FILE}` is {} (put there by someone else)",
                        again.describe()
                    ))))
                }
            }
        }
    };
    // `flock(LOCK_EX | LOCK_NB)` on Linux, held until the file is closed.
    match file.try_lock() {
        Ok(()) => Ok(Locked { file, moved_aside }),
        Err(TryLockError::WouldBlock) => Err(LockError::Busy {
            path: path.to_path_buf(),
        }),
        Err(TryLockError::Error(e)) => Err(io_err(e)),
    }
}

/// What came of holding a watched directory ([`hold_dir`]).
#[derive(Debug)]
pub enum DirHold {
    /// Held by this process until the file is dropped.
    Held(File),
    /// Another process holds it; the pids the kernel lists as holding it (empty when it lists
    /// none or cannot be asked): [`crate::state::live::rival_holder`] says whether one of them is
    /// a referee.
    Busy(Vec<u32>),
    /// The file system does not lock directories: the heartbeat look decides alone.
    Unsupported(io::Error),
}

/// Holds the watched directory itself for this referee: an exclusive `flock` on a descriptor
/// of the directory (`dir`, opened for reading), so nothing is written into the build for it
/// and the kernel lets go when the process dies.
///
/// Two referees started on one build at the same instant cannot both hold it, so the later one
/// is refused rather than fight the first over the `OBSERVER-*` files. A look at the
/// heartbeat cannot decide that alone: both referees write the same heartbeat copy, so each
/// may read its own there and see no rival.
pub fn hold_dir(dir: OwnedFd) -> DirHold {
    let file = File::from(dir);
    match file.try_lock() {
        Ok(()) => DirHold::Held(file),
        Err(TryLockError::WouldBlock) => DirHold::Busy(flock_holders(&file)),
        Err(TryLockError::Error(e)) => DirHold::Unsupported(e),
    }
}

/// The pids that hold a `flock` on the file `file` is open on, as Linux lists them in
/// `/proc/locks` (`1: FLOCK ADVISORY WRITE PID MAJ:MIN:INODE 0 EOF`, the device in hex; a
/// waiter's line, marked `->`, holds nothing). Empty when none is listed or the list cannot be
/// read.
pub fn flock_holders(file: &File) -> Vec<u32> {
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = file.metadata() else {
        return Vec::new();
    };
    let dev = meta.dev();
    let id = format!(
        "{:02x}:{:02x}:{}",
        rustix::fs::major(dev),
        rustix::fs::minor(dev),
        meta.ino()
    );
    std::fs::read_to_string("/proc/locks")
        .map(|list| holders_in(&list, &id))
        .unwrap_or_default()
}

/// The pids of the `FLOCK` lines of `list` (the text of `/proc/locks`) on the file `id`.
fn holders_in(list: &str, id: &str) -> Vec<u32> {
    let mut pids: Vec<u32> = list
        .lines()
        .filter_map(|line| {
            let mut words = line.split_whitespace().skip(1);
            if words.next()? != "FLOCK" {
                return None;
            }
            let mut words = words.skip(2);
            let pid = words.next()?.parse().ok()?;
            (words.next()? == id).then_some(pid)
        })
        .collect();
    pids.sort_unstable();
    pids.dedup();
    pids
}

/// Whether another process holds the log's lock (a live `referee watch` keeps `dir`). Opens the
/// log read-only without creating, following or blocking; absent or not a regular file: no.
pub fn locked_by_other(dir: &Path) -> bool {
    let Ok(file) = crate::safefs::open(dir.join(EVENTS_FILE), crate::safefs::Access::READ) else {
        return false;
    };
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return false;
    }
    // A shared, non-blocking try, released when `file` is closed.
    matches!(file.try_lock_shared(), Err(TryLockError::WouldBlock))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_is_refused_and_seen_from_outside() {
        let dir = tempfile::tempdir().unwrap();
        assert!(!locked_by_other(dir.path()), "no log yet");
        let held = lock(dir.path()).unwrap();
        assert!(held.moved_aside.is_none());
        assert!(locked_by_other(dir.path()));
        assert!(matches!(lock(dir.path()), Err(LockError::Busy { .. })));
        drop(held);
        assert!(!locked_by_other(dir.path()));
        assert!(lock(dir.path()).is_ok());
    }

    #[test]
    fn a_directory_is_held_by_one_descriptor_at_a_time_until_it_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let open = || OwnedFd::from(File::open(dir.path()).unwrap());
        let DirHold::Held(first) = hold_dir(open()) else {
            panic!("a free directory is held");
        };
        // Another descriptor of the same directory, in this process too (two sessions under
        // `--root`), is refused while the first is held.
        match hold_dir(open()) {
            DirHold::Busy(pids) => assert_eq!(pids, [std::process::id()], "the holder is named"),
            other => panic!("a held directory is busy: {other:?}"),
        }
        drop(first);
        assert!(matches!(hold_dir(open()), DirHold::Held(_)));
        assert_eq!(
            std::fs::read_dir(dir.path()).unwrap().count(),
            0,
            "nothing written"
        );
    }

    #[test]
    fn the_holders_of_a_file_are_read_from_the_kernels_list() {
        let list = "1: FLOCK  ADVISORY  WRITE 4242 fd:01:1234 0 EOF\n\
                    1: -> FLOCK  ADVISORY  WRITE 77 fd:01:1234 0 EOF\n\
                    2: POSIX  ADVISORY  WRITE 99 fd:01:1234 0 EOF\n\
                    3: FLOCK  ADVISORY  WRITE 5 fd:01:12345 0 EOF\n\
                    4: FLOCK  ADVISORY  READ 4243 fd:01:1234 0 EOF\n\
                    garbage\n";
        assert_eq!(holders_in(list, "fd:01:1234"), [4242, 4243]);
        assert!(holders_in(list, "fd:01:1").is_empty());
        assert!(holders_in("", "fd:01:1234").is_empty());
    }

    #[test]
    fn a_symlink_at_the_log_is_moved_aside_never_followed() {
        let root = tempfile::tempdir().unwrap();
        let elsewhere = root.path().join("elsewhere");
        std::fs::write(&elsewhere, "theirs").unwrap();
        let dir = root.path().join("state");
        std::fs::create_dir(&dir).unwrap();
        std::os::unix::fs::symlink(&elsewhere, dir.join(EVENTS_FILE)).unwrap();
        assert!(!locked_by_other(&dir), "a link is never opened");
        let held = lock(&dir).unwrap();
        let (found, to) = held.moved_aside.clone().unwrap();
        assert_eq!(found, Foreign::Symlink);
        assert!(std::fs::symlink_metadata(&to).unwrap().is_symlink());
        assert_eq!(std::fs::read_to_string(&elsewhere).unwrap(), "theirs");
        assert!(std::fs::symlink_metadata(dir.join(EVENTS_FILE))
            .unwrap()
            .is_file());
    }
}
