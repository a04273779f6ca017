//! `OBSERVER-STOP.md`, and its one writer: every entry point that writes, replaces or removes
//! the STOP file (the live `watch` daemon, `verify --write`, the agents' hooks) does it through
//! [`StopFile`]. The file exists exactly while a STOP stands (a BLOCKING check fails, a veto or
//! an escalation stands, or, under `watch --on-fault stop`, the referee itself has a fault).
//! The daemon keeps it saying what it last wrote and restores it when someone else deletes or
//! edits it (tamper); a one-shot command puts it in line once ([`StopFile::put`]).
//!
//! This module owns the bytes last written, writing or removing the file, and comparing the disk
//! with them. It never opens anything but a regular file: a symlink or FIFO put in its place is
//! replaced or unlinked, never followed or read, and a directory is moved aside
//! (`OBSERVER-STOP.md.tampered-<time>`), never deleted. A STOP found at start is adopted as it
//! stands and kept until the daemon has judged the directory (see [`StopFile::adopt`]): a restart
//! never lifts it by accident. The text comes from the caller (`outputs` renders it from the
//! decision); this module must not judge checks or decide when to stop.
//!
//! The authoritative STOP is in the state directory ([`crate::state`]): removed first, read
//! back at start (raised, the live daemon writes the copy a moment before it, as that is what
//! the orchestrator waits on); the file in the watched directory is its copy, restored
//! from it when someone else touches it. While the copy's folder is not usable (a workspace's
//! `.referee` replaced by a link or a file), only the state directory's is kept.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

use chrono::Utc;

use crate::atomic::{
    foreign_at, move_aside, remove_own, write_over_dir, AsOutDir, Durability, Foreign, OutDir,
};

/// The STOP file's name, in the state directory and in the watched directory alike.
pub const STOP_FILE: &str = "OBSERVER-STOP.md";

/// What someone else did to the STOP file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tamper {
    /// Deleted while a failure stands (restored).
    Deleted,
    /// Changed while a failure stands (restored).
    Edited,
    /// Created while there is no failure (removed).
    Created,
}

impl Tamper {
    pub fn describe(self) -> &'static str {
        match self {
            Tamper::Deleted => "deleted by someone else while a BLOCKING failure stands; restored",
            Tamper::Edited => "edited by someone else while a BLOCKING failure stands; restored",
            Tamper::Created => "created by someone else while no BLOCKING failure stands; removed",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Tamper::Deleted => "deleted",
            Tamper::Edited => "edited",
            Tamper::Created => "created",
        }
    }
}

/// One tamper with the STOP file, and what the daemon did about it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tampered {
    pub what: Tamper,
    /// Not a regular file: what was found there (never opened or followed).
    pub found: Option<Foreign>,
    /// Where a directory found there was moved to.
    pub moved_to: Option<PathBuf>,
}

impl Tampered {
    /// `edited … restored (it was a directory, moved aside to `…`)`.
    pub fn describe(&self) -> String {
        let mut text = self.what.describe().to_string();
        match (self.found, &self.moved_to) {
            (Some(f), Some(to)) => text.push_str(&format!(
                " (it was {}; moved aside to `{}`, not deleted)",
                f.describe(),
                to.file_name().map_or_else(
                    || to.display().to_string(),
                    |n| n.to_string_lossy().into_owned()
                )
            )),
            (Some(f), None) => text.push_str(&format!(
                " (it was {}; replaced without being followed or opened)",
                f.describe()
            )),
            _ => {}
        }
        text
    }
}

/// What [`StopFile::sync`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Synced {
    Unchanged,
    Written,
    Removed,
    /// No STOP is wanted, but the one found at start stays until the directory has been judged.
    Kept,
}

/// What is on disk at the STOP path.
#[derive(Debug, PartialEq, Eq)]
enum OnDisk {
    Absent,
    File(Vec<u8>),
    /// Not a regular file (FIFO, directory, symlink …): never ours, never opened.
    Foreign(Foreign),
    /// A regular file too large to be what the daemon wrote.
    TooLarge,
}

/// What stands in for a STOP found at start that was not a readable regular file, until the
/// first settled evaluation says what fails (or removes it).
const UNJUDGED: &str = "# OBSERVER STOP — NOT YET JUDGED\n\nThe referee found `OBSERVER-STOP.md` at start in a form it did not write (not a readable regular file). It keeps the STOP standing until it has judged the build directory; it then rewrites or removes this file.\n";

/// The largest STOP file the daemon reads back; anything larger is not what it wrote.
const MAX_STOP_BYTES: u64 = 4 << 20;

#[derive(Debug)]
pub struct StopFile {
    /// The folder of the copy in the watched directory.
    dir: OutDir,
    /// The state directory: the authoritative STOP (`None`: only the copy, as in unit tests).
    state: Option<PathBuf>,
    /// Whether the copy's folder is usable (never written through when it is not).
    copy: bool,
    /// What the file should contain; `None`: it should not exist.
    expected: Option<String>,
    /// A STOP found at start, kept until [`StopFile::judged`].
    adopted: bool,
    /// Tamper found while writing or removing (not by [`StopFile::check`]), for the daemon to
    /// record.
    noticed: Option<Tampered>,
    /// The copy is not in line with what is expected (its write failed, or was not tried while
    /// its last failure waits out its backoff): the next [`StopFile::check`] that may write it
    /// puts it right, which is no tamper.
    copy_stale: bool,
    /// Why the copy could not be written at the last try, for the daemon to take once.
    copy_failed: Option<io::Error>,
    /// What every write must survive besides readers: the daemon's fsyncs are its background
    /// thread's; a one-shot command's are done before it returns (it may exit right after).
    durability: Durability,
}

impl StopFile {
    pub fn new(dir: &(impl AsOutDir + ?Sized)) -> StopFile {
        StopFile {
            dir: dir.out_dir().into_owned(),
            state: None,
            copy: true,
            expected: None,
            adopted: false,
            noticed: None,
            copy_stale: false,
            copy_failed: None,
            durability: Durability::Background,
        }
    }

    /// A STOP kept in the state directory `state`, with its copy in `dir`.
    pub fn with_state(dir: &(impl AsOutDir + ?Sized), state: &Path) -> StopFile {
        StopFile {
            state: Some(state.to_path_buf()),
            ..StopFile::new(dir)
        }
    }

    /// The STOP of a one-shot command (`verify --write`, a hook): kept in the state directory
    /// `state`, with its copy in `copy` (`None`: the state directory's alone, as a hook keeps
    /// it). Each write is on disk before [`StopFile::put`] returns.
    pub fn one_shot(state: &Path, copy: Option<&OutDir>) -> StopFile {
        let mut stop = match copy {
            Some(dir) => StopFile::with_state(dir, state),
            None => StopFile::with_state(state, state),
        };
        stop.copy = copy.is_some();
        stop.durability = Durability::Contents;
        stop
    }

    /// The folder of the copy from now on (a `.referee` made again).
    pub fn set_dir(&mut self, dir: &OutDir) {
        self.dir = dir.clone();
    }

    /// Whether the copy's folder can be written (a replaced `.referee` cannot); when it comes
    /// back, the next [`StopFile::check`] restores the copy.
    pub fn set_copy(&mut self, usable: bool) {
        self.copy = usable;
    }

    /// Whether a STOP stands (as far as the daemon wrote it).
    pub fn standing(&self) -> bool {
        self.expected.is_some()
    }

    /// Takes what is on disk as the current state (at start: a STOP left by an earlier run, or by
    /// anyone). The file is left exactly as it is — not rewritten, not removed — until the daemon
    /// has judged the directory ([`StopFile::judged`]): between a restart and its first settled
    /// evaluation an orchestrator must keep seeing the STOP. Returns whether one was there.
    pub fn adopt(&mut self) -> bool {
        if let Some(state) = self.state.clone() {
            // The state directory's STOP is the referee's own: it stands whatever the copy says.
            if let Ok(OnDisk::File(b)) = read_in(&state) {
                self.expected = Some(String::from_utf8_lossy(&b).into_owned());
                self.adopted = true;
                return true;
            }
        }
        self.expected = match self.read() {
            Ok(OnDisk::File(b)) => Some(String::from_utf8_lossy(&b).into_owned()),
            // Not what the daemon wrote, but an orchestrator reads it as a STOP: it stands until
            // judged, and the first check or sync replaces it with this (and records it).
            Ok(OnDisk::Foreign(_) | OnDisk::TooLarge) | Err(_) => Some(UNJUDGED.to_string()),
            Ok(OnDisk::Absent) => None,
        };
        self.adopted = self.expected.is_some();
        if let Some(text) = self.expected.clone() {
            // A STOP found only in the watched directory is kept in the state directory too.
            let _ = self.write_state(&text);
        }
        self.adopted
    }

    /// Writes the authoritative STOP.
    fn write_state(&self, text: &str) -> io::Result<()> {
        match &self.state {
            Some(state) => write_over_dir(state, STOP_FILE, text, self.durability).map(|_| ()),
            None => Ok(()),
        }
    }

    /// Puts the state directory's STOP in line with what the daemon last wrote (nobody else
    /// can write there; a failed write is found here again).
    pub fn check_state(&self) -> io::Result<()> {
        let Some(state) = &self.state else {
            return Ok(());
        };
        match (&self.expected, read_in(state)?) {
            (Some(e), OnDisk::File(d)) if d.as_slice() == e.as_bytes() => Ok(()),
            (Some(e), _) => self.write_state(e),
            (None, OnDisk::Absent) => Ok(()),
            (None, _) => remove_own(state, STOP_FILE),
        }
    }

    /// The directory has been judged (an evaluation with nothing held back): a STOP adopted at
    /// start follows the evaluation from now on.
    pub fn judged(&mut self) {
        self.adopted = false;
    }

    /// Whether a STOP found at start is still kept unjudged.
    pub fn adopted(&self) -> bool {
        self.adopted
    }

    /// Tamper found by the last [`StopFile::sync`], once.
    pub fn take_noticed(&mut self) -> Option<Tampered> {
        self.noticed.take()
    }

    /// Makes the file say `want` (or not exist) unless it already does. A STOP adopted at start
    /// and not yet judged is never removed; it is rewritten in place (atomically) if `want` says
    /// something else.
    ///
    /// Raised where none stood, the copy goes first (what the orchestrator waits on), then the
    /// state directory's; rewritten or lifted, the state directory's goes first. An error is the
    /// state directory's.
    /// What the daemon expects follows the wanted text even when the copy cannot be written (or
    /// `copy_now` is false: its last failure is waiting out its backoff): the copy is then
    /// stale, why is kept for [`StopFile::take_copy_failed`], and a later [`StopFile::check`]
    /// puts it right without calling it tamper.
    pub fn sync(&mut self, want: Option<String>, copy_now: bool) -> io::Result<Synced> {
        if want == self.expected {
            return Ok(Synced::Unchanged);
        }
        match want {
            Some(text) => {
                // Anything found there that is not a regular file was put there by someone else.
                let raised = self.expected.is_none();
                let what = match raised {
                    true => Tamper::Created,
                    false => Tamper::Edited,
                };
                if raised {
                    // Raised where none stood, the copy goes first: it is what the
                    // orchestrator waits on, and a STOP in the watched directory is never
                    // answered with go, whatever the state directory says. A state write that
                    // fails leaves the STOP shown, and [`StopFile::check_state`] tries it again.
                    self.expected = Some(text.clone());
                    self.write_copy(&text, what, copy_now);
                    self.write_state(&text)?;
                } else {
                    // Rewritten, the state directory's first: a rewrite it cannot take
                    // changes nothing (the STOP standing stays as it is, in both places).
                    self.write_state(&text)?;
                    self.expected = Some(text.clone());
                    self.write_copy(&text, what, copy_now);
                }
                Ok(Synced::Written)
            }
            None if self.adopted => Ok(Synced::Kept),
            None => {
                if let Some(state) = &self.state {
                    remove_own(state, STOP_FILE)?;
                }
                self.expected = None;
                self.remove_copy(Tamper::Created, copy_now);
                Ok(Synced::Removed)
            }
        }
    }

    /// Whether the copy is not in line (its write failed or was put off).
    pub fn copy_stale(&self) -> bool {
        self.copy_stale
    }

    /// Why the copy could not be written at the last try, once.
    pub fn take_copy_failed(&mut self) -> Option<io::Error> {
        self.copy_failed.take()
    }

    /// Compares the disk with what the daemon wrote; puts it right and says what happened.
    /// An error is the state directory's STOP's; the copy's is kept as in [`StopFile::sync`]
    /// (`copy_now`: whether the copy may be written now).
    pub fn check(&mut self, copy_now: bool) -> io::Result<Option<Tampered>> {
        self.check_state()?;
        if !self.copy {
            return Ok(None);
        }
        if self.copy_stale || !copy_now {
            // A copy our own write could not put in line is no one else's doing: put right
            // when it may be tried (the caller says the fault cleared), never called tamper.
            if copy_now {
                match self.expected.clone() {
                    Some(text) => self.write_copy(&text, Tamper::Edited, true),
                    None => self.remove_copy(Tamper::Created, true),
                }
            }
            return Ok(self.noticed.take());
        }
        let Some(what) = self.put_copy() else {
            return Ok(None);
        };
        if self.copy_stale {
            // Not restored: the caller says why (a fault), and tamper is not claimed undone.
            return Ok(None);
        }
        // `write_copy`/`remove_copy` noted what they found; this tamper is returned, not noted twice.
        Ok(self.noticed.take().or(Some(Tampered {
            what,
            found: None,
            moved_to: None,
        })))
    }

    /// A one-shot command's STOP: nothing is remembered from the run before, so the STOP is
    /// made to say `want` (or not to exist) whatever is on disk now: the state directory's
    /// first, then the copy, in raising and lifting alike, each written or removed only where
    /// it differs. Returns what someone else had put at the copy's name (a link, FIFO or
    /// directory: replaced, unlinked or moved aside, never followed). An error is the first
    /// that stopped it; after one in the state directory the copy is left as it was.
    pub fn put(&mut self, want: Option<String>) -> io::Result<Option<Tampered>> {
        self.expected = want;
        self.adopted = false;
        self.check_state()?;
        if self.copy {
            self.put_copy();
        }
        match self.copy_failed.take() {
            Some(e) => Err(e),
            None => Ok(self.noticed.take()),
        }
    }

    /// Puts the copy in line with what is expected when it is not: says how it differed
    /// (`None`: it was in line, or could not be read, which is kept for
    /// [`StopFile::take_copy_failed`]).
    fn put_copy(&mut self) -> Option<Tamper> {
        let disk = match self.read() {
            Ok(d) => d,
            Err(e) => {
                self.copy_failed = Some(e);
                return None;
            }
        };
        let what = match (&self.expected, &disk) {
            (Some(e), OnDisk::File(d)) if d.as_slice() == e.as_bytes() => return None,
            (Some(_), OnDisk::Absent) => Tamper::Deleted,
            (Some(_), _) => Tamper::Edited,
            (None, OnDisk::Absent) => return None,
            (None, _) => Tamper::Created,
        };
        match self.expected.clone() {
            Some(text) => self.write_copy(&text, what, true),
            None => self.remove_copy(what, true),
        }
        Some(what)
    }

    /// Writes the copy: `text` atomically over whatever is there: a symlink or FIFO is replaced
    /// by the exchange (never followed), a directory swapped out and moved aside. What was found
    /// is noted. The daemon's STOP takes its name before it is fsynced, and the fsync is the
    /// background thread's ([`Durability::Background`]): an orchestrator sees it without waiting
    /// for the disk, and the loop goes on to the next event (another build's, under `--root`).
    /// A one-shot command's is on disk before it takes its name ([`StopFile::one_shot`]).
    fn write_copy(&mut self, text: &str, what: Tamper, now: bool) {
        if !self.copy {
            return;
        }
        if !now {
            self.copy_stale = true;
            return;
        }
        // Even a directory is swapped out with the new STOP in one step: the name is never absent.
        match write_over_dir(&self.dir, STOP_FILE, text, self.durability) {
            Ok(w) => {
                self.copy_stale = false;
                if w.replaced.is_some() {
                    self.noticed = Some(Tampered {
                        what,
                        found: w.replaced,
                        moved_to: w.moved_to,
                    });
                }
            }
            Err(e) => self.stale(e),
        }
    }

    fn stale(&mut self, e: io::Error) {
        self.copy_stale = true;
        self.copy_failed = Some(e);
    }

    /// Removes the copy; a symlink or FIFO is unlinked (never opened), a directory moved aside.
    fn remove_copy(&mut self, what: Tamper, now: bool) {
        if !self.copy {
            return;
        }
        if !now {
            self.copy_stale = true;
            return;
        }
        let removed = foreign_at(&self.dir, STOP_FILE).and_then(|found| {
            let moved_to = self.move_dir_aside()?;
            if moved_to.is_none() {
                remove_own(&self.dir, STOP_FILE)?;
            }
            Ok((found, moved_to))
        });
        match removed {
            Ok((found, moved_to)) => {
                self.copy_stale = false;
                if found.is_some() {
                    self.noticed = Some(Tampered {
                        what,
                        found,
                        moved_to,
                    });
                }
            }
            Err(e) => self.stale(e),
        }
    }

    /// A directory cannot be renamed over or unlinked: it is moved aside, never deleted.
    fn move_dir_aside(&self) -> io::Result<Option<PathBuf>> {
        match foreign_at(&self.dir, STOP_FILE)? {
            Some(Foreign::Dir) => move_aside(&self.dir, STOP_FILE, &Utc::now()).map(Some),
            _ => Ok(None),
        }
    }

    fn read(&self) -> io::Result<OnDisk> {
        read_in(self.dir.path())
    }
}

/// What is at `dir/OBSERVER-STOP.md`, never following or opening anything but a regular file.
fn read_in(dir: &Path) -> io::Result<OnDisk> {
    {
        let path = dir.join(STOP_FILE);
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(OnDisk::Absent),
            Err(e) => return Err(e),
        };
        if let Some(f) = Foreign::of(&meta) {
            return Ok(OnDisk::Foreign(f));
        }
        if meta.len() > MAX_STOP_BYTES {
            return Ok(OnDisk::TooLarge);
        }
        // O_NONBLOCK | O_NOFOLLOW: a FIFO or symlink swapped in after the check cannot hang or
        // redirect the read.
        let mut f = match crate::safefs::open(&path, crate::safefs::Access::READ) {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(OnDisk::Absent),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                return Ok(OnDisk::Foreign(Foreign::Symlink))
            }
            Err(e) => return Err(e),
        };
        if let Some(found) = Foreign::of(&f.metadata()?) {
            return Ok(OnDisk::Foreign(found));
        }
        let mut bytes = Vec::new();
        f.by_ref()
            .take(MAX_STOP_BYTES + 1)
            .read_to_end(&mut bytes)?;
        if bytes.len() as u64 > MAX_STOP_BYTES {
            return Ok(OnDisk::TooLarge);
        }
        Ok(OnDisk::File(bytes))
    }
}

#[cfg(test)]
mod tests;
