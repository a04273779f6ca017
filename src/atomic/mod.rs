//! How the referee writes its files into a directory: atomically (a temp file beside the target,
//! then a rename, so a reader never sees half a file), and through a handle on the directory
//! (the output directory is held open and written with `*at()` calls).
//!
//! An [`OutDir`] is either *held* (opened once, at attach: every later write goes into that very
//! directory, whatever its path names by then, so a `.referee` or BUILD_DIR swapped for a
//! symlink between the referee's look and its write is never written through) or *by path*
//! (opened again for each write, for one-shot commands and the referee's own state directory).
//! Within one write every step (the temp file, the rename, the look at what was replaced, the
//! fsync) goes through one handle: nothing is looked up by path twice.
//!
//! The referee's own names cannot be turned against it either: temp files are created
//! exclusively under random names (`O_CREAT | O_EXCL | O_NOFOLLOW`: a symlink or FIFO planted in
//! advance is never opened or followed), and what someone else put at a target (a symlink, FIFO,
//! directory) is reported as [`Foreign`] to the caller, which records it as tamper. Nothing here
//! deletes a directory.

use std::borrow::Cow;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use chrono::{DateTime, Utc};
use rustix::fs::{AtFlags, FileType, RenameFlags};

use crate::safefs;

mod sync;

pub use sync::sync_dir;
use sync::{sync_fd, sync_in_background, DirFd};

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
    /// What an entry of type `t` (looked at without following it) is, unless a regular file.
    pub fn of_type(t: rustix::fs::FileType) -> Option<Foreign> {
        use rustix::fs::FileType as T;
        match t {
            T::RegularFile => None,
            T::Symlink => Some(Foreign::Symlink),
            T::Directory => Some(Foreign::Dir),
            T::Fifo => Some(Foreign::Fifo),
            T::Socket => Some(Foreign::Socket),
            _ => Some(Foreign::Device),
        }
    }

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

/// A directory the referee writes into. `path` names it in messages; the writes go through the
/// held handle when there is one ([`OutDir::hold`]), else through the path looked up once per
/// write ([`OutDir::at`]).
#[derive(Debug, Clone)]
pub struct OutDir {
    path: PathBuf,
    held: Option<Arc<OwnedFd>>,
}

/// The directory's handle for one operation: the held one, or one opened for it.
enum Handle<'a> {
    Held(&'a OwnedFd),
    Opened(OwnedFd),
}

impl AsFd for Handle<'_> {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Handle::Held(fd) => fd.as_fd(),
            Handle::Opened(fd) => fd.as_fd(),
        }
    }
}

impl OutDir {
    /// The directory at `path`, looked up again for each write (the path resolved as given,
    /// symlinks included: a build directory named through a link is that directory).
    pub fn at(path: impl Into<PathBuf>) -> OutDir {
        OutDir {
            path: path.into(),
            held: None,
        }
    }

    /// Opens the directory at `path` and holds it: every write goes into this directory from now
    /// on, wherever it is moved and whatever is put at its path. The last component is never a
    /// symlink followed (a `.referee` that is a link is refused, `ELOOP`/`ENOTDIR`).
    pub fn hold(path: &Path) -> io::Result<OutDir> {
        let fd = safefs::open_dir(safefs::CWD, path, false)?;
        Ok(OutDir {
            path: path.to_path_buf(),
            held: Some(Arc::new(fd)),
        })
    }

    /// The directory open at `fd` (opened for reading, not `O_PATH`), held as [`OutDir::hold`]
    /// holds it; `path` names it in messages.
    pub fn held(path: impl Into<PathBuf>, fd: OwnedFd) -> OutDir {
        OutDir {
            path: path.into(),
            held: Some(Arc::new(fd)),
        }
    }

    /// The path that named the directory (for messages and for looking at it from outside).
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn display(&self) -> std::path::Display<'_> {
        self.path.display()
    }

    /// `path/name`, for messages.
    pub fn join(&self, name: impl AsRef<Path>) -> PathBuf {
        self.path.join(name)
    }

    /// Whether `path` (looked at without following a link) names the held directory now; a
    /// by-path directory is always where its path is.
    pub fn is_at(&self, path: &Path) -> bool {
        let Some(fd) = &self.held else {
            return true;
        };
        let (Ok(ours), Ok(there)) = (
            rustix::fs::fstat(fd),
            rustix::fs::statat(rustix::fs::CWD, path, AtFlags::SYMLINK_NOFOLLOW),
        ) else {
            return false;
        };
        FileType::from_raw_mode(there.st_mode) == FileType::Directory
            && ours.st_dev == there.st_dev
            && ours.st_ino == there.st_ino
    }

    fn handle(&self) -> io::Result<Handle<'_>> {
        match &self.held {
            Some(fd) => Ok(Handle::Held(fd)),
            None => Ok(Handle::Opened(safefs::open_dir(
                safefs::CWD,
                &self.path,
                true,
            )?)),
        }
    }

    /// A handle of its own on the directory (for the background fsync).
    fn owned_handle(&self) -> io::Result<DirFd> {
        match &self.held {
            Some(fd) => Ok(DirFd::Shared(fd.clone())),
            None => match self.handle()? {
                Handle::Opened(fd) => Ok(DirFd::Own(fd)),
                Handle::Held(fd) => Ok(DirFd::Own(fd.try_clone()?)),
            },
        }
    }

    /// The bytes of the regular file `name` in the directory, at most `cap` of them; `None` when
    /// absent or not a regular file (a link is never followed, a FIFO never blocks).
    pub fn read_regular(&self, name: &str, cap: u64) -> Option<Vec<u8>> {
        let dir = self.handle().ok()?;
        let f = safefs::open_at(dir.as_fd(), name, safefs::Access::READ).ok()?;
        if !f.metadata().ok()?.is_file() {
            return None;
        }
        let mut b = Vec::new();
        f.take(cap).read_to_end(&mut b).ok()?;
        Some(b)
    }

    /// Opens the regular file `name` for appending, only if it exists and is a regular file.
    pub fn append_regular(&self, name: &str) -> Option<std::fs::File> {
        let dir = self.handle().ok()?;
        let f = safefs::open_at(dir.as_fd(), name, safefs::Access::APPEND).ok()?;
        f.metadata().ok()?.is_file().then_some(f)
    }

    /// Whether anything (followed or not) is at `name`.
    pub fn has(&self, name: &str) -> bool {
        self.handle()
            .is_ok_and(|dir| rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW).is_ok())
    }

    /// What is at `name`, looked at without following it: `None` when absent, else what it is
    /// (`None` for a regular file) and its size.
    pub fn entry(&self, name: &str) -> io::Result<Option<(Option<Foreign>, u64)>> {
        let dir = self.handle()?;
        match rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW) {
            Ok(st) => Ok(Some((
                Foreign::of_type(FileType::from_raw_mode(st.st_mode)),
                u64::try_from(st.st_size).unwrap_or(0),
            ))),
            Err(rustix::io::Errno::NOENT) => Ok(None),
            Err(e) => Err(e.into()),
        }
    }

    /// What is at `name`, looked at without following it: `None` when absent or a regular file.
    pub fn foreign_at(&self, name: &str) -> io::Result<Option<Foreign>> {
        let dir = self.handle()?;
        look(&dir, name)
    }
}

/// Where a write goes: an [`OutDir`], or a path (an [`OutDir::at`] for that one call).
pub trait AsOutDir {
    fn out_dir(&self) -> Cow<'_, OutDir>;
}

impl AsOutDir for OutDir {
    fn out_dir(&self) -> Cow<'_, OutDir> {
        Cow::Borrowed(self)
    }
}

impl AsOutDir for Path {
    fn out_dir(&self) -> Cow<'_, OutDir> {
        Cow::Owned(OutDir::at(self))
    }
}

impl AsOutDir for PathBuf {
    fn out_dir(&self) -> Cow<'_, OutDir> {
        Cow::Owned(OutDir::at(self.as_path()))
    }
}

impl<T: AsOutDir + ?Sized> AsOutDir for &T {
    fn out_dir(&self) -> Cow<'_, OutDir> {
        (**self).out_dir()
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
pub fn foreign_at(dir: &(impl AsOutDir + ?Sized), name: &str) -> io::Result<Option<Foreign>> {
    dir.out_dir().foreign_at(name)
}

fn look(dir: &impl AsFd, name: &str) -> io::Result<Option<Foreign>> {
    match rustix::fs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(st) => Ok(Foreign::of_type(FileType::from_raw_mode(st.st_mode))),
        Err(rustix::io::Errno::NOENT) => Ok(None),
        Err(e) => Err(e.into()),
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
/// The rename is a `renameat2(RENAME_EXCHANGE)`: the new file takes the target's name in one step
/// and the old entry lands on the temp name, where it is looked at (never followed or opened) and
/// unlinked — so what was replaced is known exactly, not guessed from a look taken before the
/// rename. A symlink or FIFO found there is returned in [`Written`]. A directory at the target is
/// an error (see [`write_over_dir`]).
pub fn write_atomic(
    dir: &(impl AsOutDir + ?Sized),
    name: &str,
    contents: impl AsRef<[u8]>,
) -> io::Result<Written> {
    write_atomic_as(dir, name, contents, Durability::Contents)
}

/// [`write_atomic`], fsyncing as `durability` says.
pub fn write_atomic_as(
    dir: &(impl AsOutDir + ?Sized),
    name: &str,
    contents: impl AsRef<[u8]>,
    durability: Durability,
) -> io::Result<Written> {
    let dir = dir.out_dir();
    let fd = dir.handle()?;
    if look(&fd, name)? == Some(Foreign::Dir) {
        return Err(io::Error::new(
            io::ErrorKind::IsADirectory,
            format!("`{name}` is a directory someone else put there; it is not replaced"),
        ));
    }
    replace(&dir, &fd, name, contents, durability)
}

/// Writes `contents` to `dir/name` even where someone put a directory, with no moment where the
/// name is absent (an orchestrator reads a directory at the STOP path as a STOP): the directory
/// is swapped out in the same exchange and moved aside (`{name}.tampered-<time>`, never
/// deleted). Where the file system cannot exchange, it is moved aside first.
pub fn write_over_dir(
    dir: &(impl AsOutDir + ?Sized),
    name: &str,
    contents: impl AsRef<[u8]>,
    durability: Durability,
) -> io::Result<Written> {
    let dir = dir.out_dir();
    let fd = dir.handle()?;
    replace(&dir, &fd, name, contents, durability)
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

/// A temp file being written in a directory: unlinked on drop unless it took its name.
struct Temp<'a> {
    dir: BorrowedFd<'a>,
    name: String,
    file: std::fs::File,
    armed: bool,
}

impl Drop for Temp<'_> {
    fn drop(&mut self) {
        if self.armed {
            let _ = rustix::fs::unlinkat(self.dir, self.name.as_str(), AtFlags::empty());
        }
    }
}

/// A new temp file beside `name` holding `contents` (not yet fsynced): created exclusively under
/// a random name, never through a link.
fn temp_with<'a>(dir: BorrowedFd<'a>, name: &str, contents: &[u8]) -> io::Result<Temp<'a>> {
    let prefix = temp_prefix(name);
    // A name taken (planted, or another write's) draws again; a few hundred are plenty.
    for _ in 0..256 {
        let candidate = format!("{prefix}{}", random_suffix());
        // 0o666 before the umask, as `File::create` would: an orchestrator running as another
        // user reads the referee's files.
        match safefs::open_at(dir, candidate.as_str(), safefs::Access::create_new(0o666)) {
            Ok(file) => {
                let mut tmp = Temp {
                    dir,
                    name: candidate,
                    file,
                    armed: true,
                };
                tmp.file.write_all(contents)?;
                return Ok(tmp);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::new(
        io::ErrorKind::AlreadyExists,
        format!("no free temp name beside `{name}`"),
    ))
}

/// Twelve random alphanumeric characters (the temp name cannot be guessed in advance).
fn random_suffix() -> String {
    std::iter::repeat_with(fastrand::alphanumeric)
        .take(12)
        .collect()
}

fn replace(
    out: &OutDir,
    dir: &Handle<'_>,
    name: &str,
    contents: impl AsRef<[u8]>,
    durability: Durability,
) -> io::Result<Written> {
    let mut tmp = temp_with(dir.as_fd(), name, contents.as_ref())?;
    if durability == Durability::Contents {
        tmp.file.sync_all()?;
    }
    let mut written = Written::default();
    let swap = swap_in(dir, &tmp.name, name)?;
    if durability == Durability::VisibleFirst && !matches!(swap, Swap::Unsupported) {
        // Visible now; the file handle is still the new file's, whatever name it has.
        tmp.file.sync_all()?;
    }
    match swap {
        Swap::Exchanged => {
            // From here the temp name holds the old entry, not our file.
            written.replaced = look(dir, &tmp.name)?;
            if written.replaced == Some(Foreign::Dir) {
                tmp.armed = false;
                let to = aside_name(dir, name, &Utc::now())?;
                rename_noreplace(dir, &tmp.name, &to)?;
                written.moved_to = Some(out.join(&to));
            } else {
                // Unlinks the entry (a link or FIFO is never opened).
                rustix::fs::unlinkat(dir, tmp.name.as_str(), AtFlags::empty())?;
                tmp.armed = false;
            }
        }
        Swap::Placed => tmp.armed = false,
        Swap::Unsupported => {
            if durability == Durability::VisibleFirst {
                tmp.file.sync_all()?;
            }
            written.replaced = look(dir, name)?;
            if written.replaced == Some(Foreign::Dir) {
                let to = aside_name(dir, name, &Utc::now())?;
                rename_noreplace(dir, name, &to)?;
                written.moved_to = Some(out.join(&to));
            }
            rustix::fs::renameat(dir, tmp.name.as_str(), dir, name)?;
            tmp.armed = false;
        }
    }
    match durability {
        Durability::Background => {
            let file = tmp.file.try_clone()?;
            sync_in_background(file, out.owned_handle()?);
        }
        Durability::Volatile => {}
        _ => sync_fd(dir)?,
    }
    Ok(written)
}

/// Puts the temp file at `target`: exchanged with what is there, or renamed in where nothing is
/// (without replacing anything that appears in between).
fn swap_in(dir: &Handle<'_>, tmp: &str, target: &str) -> io::Result<Swap> {
    use rustix::io::Errno;
    // Each round loses only to a name appearing or vanishing in between; a few are plenty.
    for _ in 0..8 {
        match rustix::fs::renameat_with(dir, tmp, dir, target, RenameFlags::EXCHANGE) {
            Ok(()) => return Ok(Swap::Exchanged),
            Err(Errno::NOENT) => {
                match rustix::fs::renameat_with(dir, tmp, dir, target, RenameFlags::NOREPLACE) {
                    Ok(()) => return Ok(Swap::Placed),
                    Err(Errno::EXIST) => continue,
                    Err(e) => return Err(e.into()),
                }
            }
            Err(Errno::INVAL | Errno::NOSYS | Errno::OPNOTSUPP) => return Ok(Swap::Unsupported),
            Err(e) => return Err(e.into()),
        }
    }
    Err(io::Error::other(format!(
        "`{target}` kept appearing and vanishing while it was being replaced"
    )))
}

fn rename_noreplace(dir: &Handle<'_>, from: &str, to: &str) -> io::Result<()> {
    match rustix::fs::renameat_with(dir, from, dir, to, RenameFlags::NOREPLACE) {
        Err(rustix::io::Errno::INVAL | rustix::io::Errno::NOSYS) => {
            Ok(rustix::fs::renameat(dir, from, dir, to)?)
        }
        r => Ok(r?),
    }
}

/// Removes one of the referee's own files; absent is fine. A symlink or FIFO there is unlinked
/// (never opened); a directory is an error (see [`move_aside`]).
pub fn remove_own(dir: &(impl AsOutDir + ?Sized), name: &str) -> io::Result<()> {
    debug_assert!(name.starts_with("OBSERVER-"));
    let dir = dir.out_dir();
    let fd = dir.handle()?;
    match rustix::fs::unlinkat(&fd, name, AtFlags::empty()) {
        Ok(()) => sync_fd(&fd),
        Err(rustix::io::Errno::NOENT) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// Renames whatever someone else put at `dir/name` to `{name}.tampered-<UTC time>` beside it:
/// evidence is kept, nothing is deleted (a directory is never removed recursively).
pub fn move_aside(
    dir: &(impl AsOutDir + ?Sized),
    name: &str,
    now: &DateTime<Utc>,
) -> io::Result<PathBuf> {
    let dir = dir.out_dir();
    let fd = dir.handle()?;
    let to = aside_name(&fd, name, now)?;
    rename_noreplace(&fd, name, &to)?;
    sync_fd(&fd)?;
    Ok(dir.join(to))
}

/// A free `{name}.tampered-<time>[-n]` beside `name`.
fn aside_name(dir: &impl AsFd, name: &str, now: &DateTime<Utc>) -> io::Result<String> {
    let stamp = now.format("%Y%m%dT%H%M%S%.3fZ");
    let mut target = format!("{name}.tampered-{stamp}");
    let mut n: u32 = 1;
    // Not following: a dangling symlink at the candidate name counts as taken too.
    while rustix::fs::statat(dir, target.as_str(), AtFlags::SYMLINK_NOFOLLOW).is_ok() {
        target = format!("{name}.tampered-{stamp}-{n}");
        n = n.saturating_add(1);
        if n == u32::MAX {
            return Err(io::Error::new(
                io::ErrorKind::AlreadyExists,
                format!("no free name to move `{name}` aside to"),
            ));
        }
    }
    Ok(target)
}

#[cfg(test)]
mod tests;
