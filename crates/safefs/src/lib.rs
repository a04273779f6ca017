//! The one place the referee opens a file or a directory it does not trust: a build directory,
//! a git workspace, its own state directory that an agent can write into.
//!
//! Everything here opens without following a symlink at the last name (`O_NOFOLLOW`), without
//! blocking on a FIFO or device (`O_NONBLOCK`: the open returns at once and the type is then
//! checked on the descriptor), and without leaking the descriptor into a child (`O_CLOEXEC`);
//! relative to a directory's descriptor where the caller holds one (`openat`, `fstatat`,
//! `readlinkat`), so a path swapped for a link after it was looked at cannot redirect what is
//! read. Reads stop at a cap (a file that grows while it is read is cut off at cap + 1 bytes and
//! refused), and every refusal is a typed [`FsError`] that names the path and keeps its cause.
//!
//! A library of its own (the workspace crate `referee-safefs`): it imports nothing of the
//! referee, so no part of the referee can reach past it to a file opened another way. The
//! one TOML loader ([`toml`]) sits here too, since it reads only through this layer.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

pub use rustix::fs::CWD;

mod error;
pub mod toml;

pub use error::{lowercase_message, FsError, IoCause};

/// A modification or change time: seconds and nanoseconds since the epoch.
pub type Stamp = (i64, i64);

/// How a directory is opened: to list it, never blocking, not inherited.
const DIRECTORY: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NONBLOCK)
    .union(OFlags::CLOEXEC);

/// What a file is opened for. Every access adds `O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Access {
    flags: OFlags,
    mode: Mode,
}

impl Access {
    /// Reading.
    pub const READ: Access = Access::new(OFlags::RDONLY, 0);
    /// Writing an existing file from its start (neither created nor truncated).
    pub const WRITE: Access = Access::new(OFlags::WRONLY, 0);
    /// Appending to an existing file.
    pub const APPEND: Access = Access::new(OFlags::WRONLY.union(OFlags::APPEND), 0);
    /// Reading and appending to an existing file.
    pub const READ_APPEND: Access = Access::new(OFlags::RDWR.union(OFlags::APPEND), 0);
    /// Reading and appending, the file created (mode 0o666 before the umask) when absent.
    pub const READ_APPEND_CREATE: Access = Access::new(
        OFlags::RDWR.union(OFlags::APPEND).union(OFlags::CREATE),
        0o666,
    );

    /// Reading a file the user named, a symlink at its last name followed (a protocol or
    /// waiver file kept elsewhere and linked in); still never blocking on a FIFO or device.
    pub const READ_FOLLOWING: Access = Access {
        flags: OFlags::RDONLY
            .union(OFlags::NONBLOCK)
            .union(OFlags::CLOEXEC),
        mode: Mode::empty(),
    };

    const fn new(flags: OFlags, mode: u32) -> Access {
        Access {
            flags: flags
                .union(OFlags::NOFOLLOW)
                .union(OFlags::NONBLOCK)
                .union(OFlags::CLOEXEC),
            mode: Mode::from_bits_retain(mode),
        }
    }

    /// A new file created for writing, failing if anything (a file, a link, a FIFO) is already at
    /// the name (`O_CREAT | O_EXCL`), with `mode` before the umask. Never blocks: nothing that
    /// existed is opened.
    pub const fn create_new(mode: u32) -> Access {
        Access {
            flags: OFlags::WRONLY
                .union(OFlags::CREATE)
                .union(OFlags::EXCL)
                .union(OFlags::NOFOLLOW)
                .union(OFlags::CLOEXEC),
            mode: Mode::from_bits_retain(mode),
        }
    }
}

/// Opens `path` (relative to the directory `at`, or to the working directory with [`CWD`])
/// without following a symlink at its last name or blocking: a symlink there fails with
/// `ELOOP`, a FIFO or device opens at once (the caller that wants a regular file checks the
/// descriptor, or uses [`open_regular`]). The error is the system's, unchanged.
pub fn open_at(at: BorrowedFd<'_>, path: impl AsRef<Path>, access: Access) -> io::Result<File> {
    let fd = rustix::fs::openat(at, path.as_ref(), access.flags, access.mode)?;
    Ok(File::from(fd))
}

/// [`open_at`] relative to the working directory.
pub fn open(path: impl AsRef<Path>, access: Access) -> io::Result<File> {
    open_at(CWD, path, access)
}

/// Opens `path` under `at` as [`open_at`] does and checks on the descriptor that it is a regular
/// file: a symlink is [`FsError::Symlink`], a FIFO, socket, device or directory
/// [`FsError::NotRegular`], nothing there [`FsError::NotFound`]. `shown` is the path errors name.
pub fn open_regular(
    at: BorrowedFd<'_>,
    path: &Path,
    shown: &Path,
    access: Access,
) -> Result<(File, rustix::fs::Stat), FsError> {
    let file = open_at(at, path, access).map_err(|e| FsError::from_io(shown, e))?;
    let st = rustix::fs::fstat(&file).map_err(|e| FsError::from_io(shown, e.into()))?;
    let ft = FileType::from_raw_mode(st.st_mode);
    if ft != FileType::RegularFile {
        return Err(FsError::NotRegular {
            path: shown.to_path_buf(),
            what: kind_name(ft),
        });
    }
    Ok((file, st))
}

/// Reads at most `cap` bytes from `from` (`hint`: the expected size, a capacity hint trusted only
/// up to the cap). More than `cap` bytes is [`FsError::TooLarge`] after reading at most `cap + 1`.
pub fn read_capped(from: impl Read, hint: u64, cap: u64, shown: &Path) -> Result<Vec<u8>, FsError> {
    let mut bytes = Vec::with_capacity(usize::try_from(hint.min(cap)).unwrap_or(0));
    from.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| FsError::from_io(shown, e))?;
    if bytes.len() as u64 > cap {
        return Err(FsError::TooLarge {
            path: shown.to_path_buf(),
            size: (bytes.len() as u64).max(hint),
            cap,
        });
    }
    Ok(bytes)
}

/// Reads `from` a piece at a time (256 KiB), handing each piece to `each`, and stops after at
/// most `cap + 1` bytes: the count returned is over `cap` when there was more (the caller's
/// "too large"). For hashing a file without ever holding it whole.
pub fn read_pieces(from: impl Read, cap: u64, mut each: impl FnMut(&[u8])) -> io::Result<u64> {
    let mut piece = vec![0u8; 256 << 10];
    let mut read: u64 = 0;
    let mut limited = from.take(cap.saturating_add(1));
    loop {
        let n = match limited.read(&mut piece) {
            Ok(0) => return Ok(read),
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        each(&piece[..n]);
        read += n as u64;
    }
}

/// The bytes of the regular file at `path` (relative to `at`), at most `cap`; `Ok(None)` when
/// nothing is there. A symlink, FIFO, device or directory is refused without being followed or
/// blocking on it; a file over the cap is refused before it is read.
pub fn read_regular(
    at: BorrowedFd<'_>,
    path: &Path,
    shown: &Path,
    cap: u64,
) -> Result<Option<Vec<u8>>, FsError> {
    let (file, st) = match open_regular(at, path, shown, Access::READ) {
        Ok(opened) => opened,
        Err(FsError::NotFound { .. }) => return Ok(None),
        Err(e) => return Err(e),
    };
    let size = u64::try_from(st.st_size).unwrap_or(0);
    if size > cap {
        return Err(FsError::TooLarge {
            path: shown.to_path_buf(),
            size,
            cap,
        });
    }
    read_capped(file, size, cap, shown).map(Some)
}

/// [`read_regular`] of a path relative to the working directory, naming it in errors.
pub fn read_file(path: &Path, cap: u64) -> Result<Option<Vec<u8>>, FsError> {
    read_regular(CWD, path, path, cap)
}

/// The bytes of the regular file the user named at `path` (a symlink followed, as a shell
/// would), at most `cap`: a FIFO, device or directory is refused on the descriptor without
/// blocking, a file over the cap before it is read; nothing there is [`FsError::NotFound`].
pub fn read_named(path: &Path, cap: u64) -> Result<Vec<u8>, FsError> {
    let (file, st) = open_regular(CWD, path, path, Access::READ_FOLLOWING)?;
    let size = u64::try_from(st.st_size).unwrap_or(0);
    if size > cap {
        return Err(FsError::TooLarge {
            path: path.to_path_buf(),
            size,
            cap,
        });
    }
    read_capped(file, size, cap, path)
}

/// A short human name for a file type: `regular file`, `directory`, `symlink`, `fifo`, `socket`,
/// `character device`, `block device`, or `unknown file type`.
pub fn kind_name(file_type: FileType) -> &'static str {
    match file_type {
        FileType::RegularFile => "regular file",
        FileType::Directory => "directory",
        FileType::Symlink => "symlink",
        FileType::Fifo => "fifo",
        FileType::Socket => "socket",
        FileType::CharacterDevice => "character device",
        FileType::BlockDevice => "block device",
        FileType::Unknown => "unknown file type",
    }
}

/// Whether `err` is the system saying a symlink stood where none is followed (`ELOOP`).
pub fn is_symlink_loop(err: &io::Error) -> bool {
    err.raw_os_error() == Some(libc::ELOOP)
}

/// What `lstat` (`fstatat` without following) says of a path.
#[derive(Debug, Clone, Copy)]
pub struct Lstat {
    pub mode: u32,
    pub dev: u64,
    pub ino: u64,
    pub nlink: u64,
    pub size: u64,
    pub mtime: Stamp,
    pub ctime: Stamp,
}

impl Lstat {
    #[allow(
        clippy::useless_conversion,
        clippy::unnecessary_cast,
        reason = "the field types of `struct stat` differ between targets: no-ops on some"
    )]
    pub fn of(st: &rustix::fs::Stat) -> Lstat {
        Lstat {
            mode: st.st_mode as u32,
            dev: st.st_dev as u64,
            ino: st.st_ino as u64,
            nlink: st.st_nlink as u64,
            size: u64::try_from(st.st_size).unwrap_or(0),
            mtime: (st.st_mtime as i64, st.st_mtime_nsec as i64),
            ctime: (st.st_ctime as i64, st.st_ctime_nsec as i64),
        }
    }

    pub fn file_type(&self) -> FileType {
        FileType::from_raw_mode(self.mode)
    }

    /// A directory known only by its type so far: the rest comes when it is opened.
    pub fn directory() -> Lstat {
        Lstat {
            mode: FileType::Directory.as_raw_mode(),
            dev: 0,
            ino: 0,
            nlink: 0,
            size: 0,
            mtime: (0, 0),
            ctime: (0, 0),
        }
    }
}

/// The name at `(offset, length)` in `heap` (see [`read_names`]).
pub fn name_at(heap: &[u8], (at, len): (u32, u32)) -> &OsStr {
    OsStr::from_bytes(&heap[at as usize..(at + len) as usize])
}

/// The buffer one `getdents` call fills: a folder of a few hundred names in one call.
const GETDENTS_BUFFER: usize = 32 << 10;

/// The names in the open directory `fd` (without `.` and `..`), in the order the file system
/// gives them, laid one after another in `heap`: each as its offset and length there (one
/// allocation per directory, not one per name), with the type its directory entry gives (only
/// a hint: the entry can change before it is looked at, and some file systems give none,
/// `Unknown`), pushed onto `names`. A listing cut short by an error keeps in `names` what it
/// listed before, and returns the error.
pub fn read_names(
    fd: BorrowedFd<'_>,
    heap: &mut Vec<u8>,
    names: &mut Vec<((u32, u32), FileType)>,
) -> io::Result<()> {
    // `getdents` straight into one buffer (rustix's `Dir` grows and zeroes its own buffer
    // call after call, a copy of every name more than needed).
    let mut buf = Vec::with_capacity(GETDENTS_BUFFER);
    let mut raw = rustix::fs::RawDir::new(fd, buf.spare_capacity_mut());
    while let Some(item) = raw.next() {
        let item = item?;
        let name = item.file_name().to_bytes();
        if name == b"." || name == b".." {
            continue;
        }
        let (Ok(at), Ok(len)) = (u32::try_from(heap.len()), u32::try_from(name.len())) else {
            return Err(io::Error::other("too many names to list"));
        };
        heap.extend_from_slice(name);
        names.push(((at, len), item.file_type()));
    }
    Ok(())
}

/// The error of a directory found to be another one than was listed (or a link found on the
/// way): the walk reports the place as not listable.
pub fn replaced() -> io::Error {
    io::Error::other("replaced while being read")
}

/// Whether an error says a link (or another file system) stood on the way ([`replaced`]).
pub fn is_replaced(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::Other && e.to_string() == "replaced while being read"
}

/// An open directory: its children are listed, looked at and opened through its descriptor
/// (`*at()` calls), never by a path that a swap could redirect.
#[derive(Debug)]
pub struct OpenDir {
    pub dir: Dir,
}

impl OpenDir {
    /// Opens `abs` as a directory. With `expect`, a symlink is refused and the directory must
    /// still be the one listed (device, inode); without it (the root), links are followed.
    pub fn open(abs: &Path, expect: Option<(u64, u64)>) -> io::Result<OpenDir> {
        let fd = open_dir(CWD, abs, expect.is_none())?;
        if let Some(id) = expect {
            let st = Lstat::of(&rustix::fs::fstat(&fd)?);
            if (st.dev, st.ino) != id {
                return Err(replaced());
            }
        }
        Ok(OpenDir { dir: Dir::new(fd)? })
    }

    /// Opens `rel` (a relative path) under the directory `base` as a directory, without
    /// following a link at its last name, and checks that it is still the one listed (device,
    /// inode): a link swapped in higher up is caught by that check. Cheaper than
    /// [`OpenDir::open`] by the whole path: the names above `base` are not looked up again.
    pub fn open_under(
        base: BorrowedFd<'_>,
        rel: &OsStr,
        expect: (u64, u64),
    ) -> io::Result<OpenDir> {
        let fd = open_dir(base, rel, false)?;
        let st = Lstat::of(&rustix::fs::fstat(&fd)?);
        if (st.dev, st.ino) != expect {
            return Err(replaced());
        }
        Ok(OpenDir { dir: Dir::new(fd)? })
    }

    /// Opens `rel` (a relative path) under the directory `base` as a directory, with no symlink
    /// followed on the way and nothing outside `base` reachable (`openat2` with
    /// `RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH`), in one call. A link found on the way is
    /// [`replaced`]. `Ok(None)` where the kernel has no `openat2` (before Linux 5.6, or a
    /// sandbox that filters it).
    pub fn open_beneath(base: BorrowedFd<'_>, rel: &OsStr) -> io::Result<Option<OpenDir>> {
        let flags = DIRECTORY | OFlags::NOFOLLOW;
        let resolve = ResolveFlags::NO_SYMLINKS | ResolveFlags::BENEATH;
        match rustix::fs::openat2(base, rel, flags, Mode::empty(), resolve) {
            Ok(fd) => Ok(Some(OpenDir { dir: Dir::new(fd)? })),
            Err(Errno::NOSYS | Errno::PERM | Errno::TOOBIG | Errno::AGAIN) => Ok(None),
            Err(Errno::LOOP | Errno::XDEV) => Err(replaced()),
            Err(e) => Err(e.into()),
        }
    }

    /// Opens `rel` (a relative path of any length) under the directory `base` as a directory,
    /// with no symlink followed anywhere on the way ([`open_dir_beneath`]), and, with `expect`,
    /// checks that it is the directory listed (device, inode).
    pub fn open_long(
        base: BorrowedFd<'_>,
        rel: &[u8],
        expect: Option<(u64, u64)>,
    ) -> io::Result<OpenDir> {
        let fd = open_dir_beneath(base, rel)?;
        let dir = OpenDir { dir: Dir::new(fd)? };
        if let Some(id) = expect {
            if dir.id()? != id {
                return Err(replaced());
            }
        }
        Ok(dir)
    }

    /// The directory's descriptor.
    pub fn fd(&self) -> io::Result<BorrowedFd<'_>> {
        Ok(self.dir.fd()?)
    }

    /// The directory's own device and inode.
    pub fn id(&self) -> io::Result<(u64, u64)> {
        let st = self.own()?;
        Ok((st.dev, st.ino))
    }

    /// The directory's own `lstat`, taken on its descriptor.
    pub fn own(&self) -> io::Result<Lstat> {
        Ok(Lstat::of(&rustix::fs::fstat(self.dir.fd()?)?))
    }

    /// The `lstat` of the child `base`.
    pub fn stat(&self, base: &OsStr) -> io::Result<Lstat> {
        let st = rustix::fs::statat(self.dir.fd()?, base, AtFlags::SYMLINK_NOFOLLOW)?;
        Ok(Lstat::of(&st))
    }

    /// The target of the symlink `base`.
    pub fn read_link(&self, base: &OsStr) -> io::Result<Vec<u8>> {
        Ok(rustix::fs::readlinkat(self.dir.fd()?, base, Vec::new())?.into_bytes())
    }

    /// Opens the child `base` for reading, without following a link or blocking.
    pub fn open_file(&self, base: &OsStr) -> io::Result<File> {
        open_at(self.dir.fd()?, base, Access::READ)
    }

    /// The names in the directory, sorted by their bytes, with their `lstat` (taken relative
    /// to the descriptor).
    pub fn list(&mut self) -> io::Result<Vec<(OsString, io::Result<Lstat>)>> {
        Ok(self
            .names()?
            .into_iter()
            .map(|name| {
                let meta = self.stat(&name);
                (name, meta)
            })
            .collect())
    }

    /// [`read_names`] of this directory, sorted by their bytes.
    pub fn names_into(&mut self, heap: &mut Vec<u8>) -> io::Result<Vec<((u32, u32), FileType)>> {
        let mut names = Vec::new();
        read_names(self.dir.fd()?, heap, &mut names)?;
        names.sort_unstable_by(|(a, _), (b, _)| name_at(heap, *a).cmp(name_at(heap, *b)));
        Ok(names)
    }

    /// The names in the directory (without `.` and `..`), sorted by their bytes.
    pub fn names(&mut self) -> io::Result<Vec<OsString>> {
        let mut heap = Vec::new();
        let names = self.names_into(&mut heap)?;
        Ok(names
            .into_iter()
            .map(|(at, _)| name_at(&heap, at).to_os_string())
            .collect())
    }
}

/// Opens `path` (relative to `at`) as a directory to list, never blocking; with `follow` false a
/// symlink at its last name is refused (`ELOOP`, or `ENOTDIR`) rather than followed.
pub fn open_dir(at: BorrowedFd<'_>, path: impl AsRef<Path>, follow: bool) -> io::Result<OwnedFd> {
    let mut flags = DIRECTORY;
    if !follow {
        flags |= OFlags::NOFOLLOW;
    }
    Ok(rustix::fs::openat(at, path.as_ref(), flags, Mode::empty())?)
}

/// The most bytes of a relative path opened in one call: well under `PATH_MAX` (4,096), so a
/// piece and the kernel's own prefix always fit.
pub const PIECE: usize = 2048;

/// Whether a path of `len` bytes is opened a piece at a time ([`open_dir_beneath`]) rather
/// than in one call.
pub fn is_long(len: usize) -> bool {
    len > PIECE
}

/// The pieces of `rel` (`/`-separated), each at most [`PIECE`] bytes where its names allow
/// (a name is at most 255 bytes on Linux; a longer one is a piece of its own, which the kernel
/// then refuses).
fn pieces(rel: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut last_slash = None;
    for (i, &b) in rel.iter().enumerate() {
        if b == b'/' {
            if i - start > PIECE {
                if let Some(at) = last_slash.filter(|&at| at > start) {
                    out.push(&rel[start..at]);
                    start = at + 1;
                }
            }
            last_slash = Some(i);
        }
    }
    if rel.len() - start > PIECE {
        if let Some(at) = last_slash.filter(|&at| at > start) {
            out.push(&rel[start..at]);
            start = at + 1;
        }
    }
    out.push(&rel[start..]);
    out.retain(|p| !p.is_empty());
    out
}

/// Opens the directory `rel` beneath `base` (any length, no symlink followed on the way, nothing
/// outside `base` reachable): a piece at a time with `openat2` (`RESOLVE_BENEATH |
/// RESOLVE_NO_SYMLINKS`), or one name at a time with `O_NOFOLLOW` where the kernel has no
/// `openat2`. An empty `rel` is `base` itself (a new descriptor of it).
pub fn open_dir_beneath(base: BorrowedFd<'_>, rel: &[u8]) -> io::Result<OwnedFd> {
    let flags = DIRECTORY | OFlags::NOFOLLOW;
    let mut cur: Option<OwnedFd> = None;
    for piece in pieces(rel) {
        let at = cur.as_ref().map_or(base, |fd| fd.as_fd());
        let resolve = ResolveFlags::NO_SYMLINKS | ResolveFlags::BENEATH;
        let next = match rustix::fs::openat2(
            at,
            OsStr::from_bytes(piece),
            flags,
            Mode::empty(),
            resolve,
        ) {
            Ok(fd) => fd,
            Err(Errno::NOSYS | Errno::PERM | Errno::TOOBIG | Errno::AGAIN) => {
                // No `openat2`: one name at a time, none of them a link.
                let mut fd: Option<OwnedFd> = None;
                for name in piece.split(|&b| b == b'/').filter(|n| !n.is_empty()) {
                    if name == b".." {
                        return Err(io::Error::other("`..` in a path beneath the root"));
                    }
                    let from = fd.as_ref().map_or(at, |f| f.as_fd());
                    fd = Some(open_dir(from, OsStr::from_bytes(name), false)?);
                }
                match fd {
                    Some(fd) => fd,
                    None => rustix::io::fcntl_dupfd_cloexec(at, 0)?,
                }
            }
            Err(Errno::LOOP | Errno::XDEV) => return Err(replaced()),
            Err(e) => return Err(e.into()),
        };
        cur = Some(next);
    }
    match cur {
        Some(fd) => Ok(fd),
        None => Ok(rustix::io::fcntl_dupfd_cloexec(base, 0)?),
    }
}

/// Opens the directory `rel` beneath `base` as the kernel resolves it in one step, symlinks
/// followed while they stay beneath `base` (`openat2` with `RESOLVE_BENEATH |
/// RESOLVE_NO_MAGICLINKS`): `..` above `base`, an absolute path and a link that leaves `base`
/// or names an absolute target are refused ([`replaced`]'s error, `EXDEV` from the kernel).
/// The descriptor is the directory found at that instant, so whatever replaces a name on the
/// way afterwards, what is read through it stays beneath `base` (no check-then-use race).
/// Where the kernel has no `openat2`, [`open_dir_beneath`] (no link followed at all).
pub fn open_dir_within(base: BorrowedFd<'_>, rel: &[u8]) -> io::Result<OwnedFd> {
    if is_long(rel.len()) {
        return open_dir_beneath(base, rel);
    }
    let rel = if rel.is_empty() { b"." as &[u8] } else { rel };
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    match rustix::fs::openat2(
        base,
        OsStr::from_bytes(rel),
        DIRECTORY,
        Mode::empty(),
        resolve,
    ) {
        Ok(fd) => Ok(fd),
        Err(Errno::NOSYS | Errno::PERM | Errno::TOOBIG) => open_dir_beneath(base, rel),
        Err(Errno::XDEV) => Err(replaced()),
        Err(e) => Err(e.into()),
    }
}

#[cfg(test)]
mod tests;
