//! Looking at and reading a directory's children through the directory's own descriptor
//! (`fstatat`, `readlinkat`, `openat` without following a link or blocking): what a swap of a
//! path for a symlink cannot redirect.

use std::ffi::{OsStr, OsString};
use std::fs::File;
use std::io::{self, Read};
use std::os::fd::BorrowedFd;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags, ResolveFlags};
use rustix::io::Errno;

use super::super::statcache::{now, Stamp, Stat};
use crate::artifacts::fsread::lowercase_message;

/// An open directory: its children are listed, looked at and opened through its descriptor
/// (`*at()` calls), never by a path that a swap could redirect.
pub(super) struct OpenDir {
    pub(super) dir: Dir,
}

/// How a directory is opened: to list it, never blocking, not inherited.
const DIRECTORY: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NONBLOCK)
    .union(OFlags::CLOEXEC);

/// The name at `(offset, length)` in `heap`.
pub(super) fn name_at(heap: &[u8], (at, len): (u32, u32)) -> &OsStr {
    OsStr::from_bytes(&heap[at as usize..(at + len) as usize])
}

/// The buffer one `getdents` call fills: a folder of a few hundred names in one call.
const GETDENTS_BUFFER: usize = 32 << 10;

/// What `lstat` (`fstatat` without following) says of a path.
#[derive(Debug, Clone, Copy)]
pub(super) struct Lstat {
    pub(super) mode: u32,
    pub(super) dev: u64,
    pub(super) ino: u64,
    pub(super) nlink: u64,
    pub(super) size: u64,
    pub(super) mtime: Stamp,
    pub(super) ctime: Stamp,
}

impl Lstat {
    #[allow(
        clippy::useless_conversion,
        clippy::unnecessary_cast,
        reason = "the field types of `struct stat` differ between targets: no-ops on some"
    )]
    pub(super) fn of(st: &rustix::fs::Stat) -> Lstat {
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

    pub(super) fn file_type(&self) -> FileType {
        FileType::from_raw_mode(self.mode)
    }

    /// A directory known only by its type so far: the rest comes when it is opened.
    pub(super) fn directory() -> Lstat {
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

impl OpenDir {
    /// Opens `abs` as a directory. With `expect`, a symlink is refused and the directory must
    /// still be the one listed (device, inode); without it (the root), links are followed.
    pub(super) fn open(abs: &Path, expect: Option<(u64, u64)>) -> io::Result<OpenDir> {
        let mut flags = DIRECTORY;
        if expect.is_some() {
            flags |= OFlags::NOFOLLOW;
        }
        let fd = rustix::fs::open(abs, flags, Mode::empty())?;
        if let Some(id) = expect {
            let st = Lstat::of(&rustix::fs::fstat(&fd)?);
            if (st.dev, st.ino) != id {
                return Err(io::Error::other("replaced while being read"));
            }
        }
        Ok(OpenDir { dir: Dir::new(fd)? })
    }

    /// Opens `rel` (a relative path) under the directory `base` as a directory, without
    /// following a link at its last name, and checks that it is still the one listed (device,
    /// inode): a link swapped in higher up is caught by that check. Cheaper than [`OpenDir::open`]
    /// by the whole path: the names above `base` are not looked up again for every directory.
    pub(super) fn open_under(
        base: BorrowedFd<'_>,
        rel: &OsStr,
        expect: (u64, u64),
    ) -> io::Result<OpenDir> {
        let flags = DIRECTORY | OFlags::NOFOLLOW;
        let fd = rustix::fs::openat(base, rel, flags, Mode::empty())?;
        let st = Lstat::of(&rustix::fs::fstat(&fd)?);
        if (st.dev, st.ino) != expect {
            return Err(io::Error::other("replaced while being read"));
        }
        Ok(OpenDir { dir: Dir::new(fd)? })
    }

    /// Opens `rel` (a relative path) under the directory `base` as a directory, with no symlink
    /// followed on the way and nothing outside `base` reachable (`openat2` with
    /// `RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH`): whatever directory is at that path now, inside
    /// the tree, in one call and without the identity check of [`OpenDir::open_under`], which
    /// only guards against a link swapped in on the way. A link found on the way is
    /// "replaced while being read". `Ok(None)` where the kernel has no `openat2` (before Linux
    /// 5.6, or a sandbox that filters it).
    pub(super) fn open_beneath(base: BorrowedFd<'_>, rel: &OsStr) -> io::Result<Option<OpenDir>> {
        let flags = DIRECTORY | OFlags::NOFOLLOW;
        let resolve = ResolveFlags::NO_SYMLINKS | ResolveFlags::BENEATH;
        match rustix::fs::openat2(base, rel, flags, Mode::empty(), resolve) {
            Ok(fd) => Ok(Some(OpenDir { dir: Dir::new(fd)? })),
            Err(Errno::NOSYS | Errno::PERM | Errno::TOOBIG | Errno::AGAIN) => Ok(None),
            Err(Errno::LOOP | Errno::XDEV) => Err(io::Error::other("replaced while being read")),
            Err(e) => Err(e.into()),
        }
    }

    /// Opens `rel` (a relative path of any length) under the directory `base` as a directory,
    /// with no symlink followed anywhere on the way, and, with `expect`, checks that it is the
    /// directory listed (device, inode). A path longer than the kernel takes in one call
    /// (`PATH_MAX`, 4,096 bytes) is opened a piece at a time, each piece beneath the directory
    /// the one before opened: nothing on the way builds a path the kernel would refuse.
    pub(super) fn open_long(
        base: BorrowedFd<'_>,
        rel: &[u8],
        expect: Option<(u64, u64)>,
    ) -> io::Result<OpenDir> {
        let fd = open_dir_beneath(base, rel)?;
        let dir = OpenDir { dir: Dir::new(fd)? };
        if let Some(id) = expect {
            if dir.id()? != id {
                return Err(io::Error::other("replaced while being read"));
            }
        }
        Ok(dir)
    }

    /// The directory's own device and inode.
    pub(super) fn id(&self) -> io::Result<(u64, u64)> {
        let st = self.own()?;
        Ok((st.dev, st.ino))
    }

    /// The directory's own `lstat`, taken on its descriptor.
    pub(super) fn own(&self) -> io::Result<Lstat> {
        Ok(Lstat::of(&rustix::fs::fstat(self.dir.fd()?)?))
    }

    /// The `lstat` of the child `base`.
    pub(super) fn stat(&self, base: &OsStr) -> io::Result<Lstat> {
        let st = rustix::fs::statat(self.dir.fd()?, base, AtFlags::SYMLINK_NOFOLLOW)?;
        Ok(Lstat::of(&st))
    }

    /// The target of the symlink `base`.
    pub(super) fn read_link(&self, base: &OsStr) -> io::Result<Vec<u8>> {
        Ok(rustix::fs::readlinkat(self.dir.fd()?, base, Vec::new())?.into_bytes())
    }

    /// Opens the child `base` for reading, without following a link or blocking.
    pub(super) fn open_file(&self, base: &OsStr) -> io::Result<File> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        Ok(File::from(rustix::fs::openat(
            self.dir.fd()?,
            base,
            flags,
            Mode::empty(),
        )?))
    }

    /// The names in the directory, sorted by their bytes, with their `lstat` (taken relative
    /// to the descriptor).
    pub(super) fn list(&mut self) -> io::Result<Vec<(OsString, io::Result<Lstat>)>> {
        Ok(self
            .names()?
            .into_iter()
            .map(|name| {
                let meta = self.stat(&name);
                (name, meta)
            })
            .collect())
    }

    /// The names in the directory (without `.` and `..`), sorted by their bytes, laid one after
    /// another in `heap`: each as its offset and length there (one allocation per directory,
    /// not one per name).
    ///
    /// Each comes with the type its directory entry gives: only a hint (the entry can change
    /// before it is looked at, and some file systems give none, `Unknown`).
    pub(super) fn names_into(
        &mut self,
        heap: &mut Vec<u8>,
    ) -> io::Result<Vec<((u32, u32), FileType)>> {
        // `getdents` straight into one buffer (rustix's `Dir` grows and zeroes its own buffer
        // call after call, a copy of every name more than needed).
        let mut buf = Vec::with_capacity(GETDENTS_BUFFER);
        let mut raw = rustix::fs::RawDir::new(self.dir.fd()?, buf.spare_capacity_mut());
        let mut names = Vec::new();
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
        names.sort_unstable_by(|(a, _), (b, _)| name_at(heap, *a).cmp(name_at(heap, *b)));
        Ok(names)
    }

    /// The names in the directory (without `.` and `..`), sorted by their bytes.
    pub(super) fn names(&mut self) -> io::Result<Vec<OsString>> {
        let mut heap = Vec::new();
        let names = self.names_into(&mut heap)?;
        // In name order: a walk then meets paths nearly in the order they are kept (and the
        // stat cache's records one after another).
        Ok(names
            .into_iter()
            .map(|(at, _)| name_at(&heap, at).to_os_string())
            .collect())
    }
}

/// The directory whose children a walk records: the one it holds open, or one listed earlier
/// (on a lister thread), opened again only if a child must be read, by its path, without
/// following a link, and checked to be the directory that was listed (device, inode).
pub(super) enum DirRef<'a> {
    Open(&'a OpenDir),
    Listed {
        root: &'a Path,
        rel: &'a [u8],
        id: (u64, u64),
        dir: std::cell::OnceCell<Result<OpenDir, String>>,
    },
}

impl<'a> DirRef<'a> {
    /// The directory `rel` under `root` that was listed with the identity `id`, not opened yet.
    pub(super) fn listed(root: &'a Path, rel: &'a [u8], id: (u64, u64)) -> DirRef<'a> {
        DirRef::Listed {
            root,
            rel,
            id,
            dir: std::cell::OnceCell::new(),
        }
    }

    /// The open directory, or why it cannot be had (gone, or no longer the one listed).
    pub(super) fn get(&self) -> Result<&OpenDir, String> {
        match self {
            DirRef::Open(dir) => Ok(dir),
            DirRef::Listed { root, rel, id, dir } => dir
                .get_or_init(|| {
                    // The root as a scan opens it (a link to it followed), or the directory
                    // beneath it; either way still the directory listed.
                    let opened = open_in_tree(root, rel, Some(*id));
                    opened.map_err(|e| read_reason(&e))
                })
                .as_ref()
                .map_err(String::clone),
        }
    }
}

pub(super) fn stat_of(meta: &Lstat) -> Stat {
    Stat {
        dev: meta.dev,
        ino: meta.ino,
        mode: meta.mode,
        size: meta.size,
        mtime: meta.mtime,
        ctime: meta.ctime,
    }
}

/// A file's bytes from one read, the `fstat` taken before reading, and when it was read.
pub(super) struct ReadFile {
    pub(super) bytes: Vec<u8>,
    pub(super) stat: Stat,
    pub(super) at: Stamp,
}

/// Opens `base` in `dir` without following a link or blocking, checks on the descriptor that it
/// is the regular file that was listed, and reads at most `cap` bytes.
pub(super) fn read_capped(
    dir: &OpenDir,
    base: &OsStr,
    listed: &Stat,
    cap: u64,
) -> Result<ReadFile, String> {
    // Taken before the read: a write after this moment gives a ctime that is not older than
    // it, so the cache will not trust this read for the new content.
    let at = now();
    let file = dir.open_file(base).map_err(|e| read_reason(&e))?;
    let meta = rustix::fs::fstat(&file)
        .map(|st| Lstat::of(&st))
        .map_err(|e| read_reason(&e.into()))?;
    if meta.file_type() != FileType::RegularFile || (meta.dev, meta.ino) != (listed.dev, listed.ino)
    {
        return Err("replaced while being read".to_string());
    }
    if meta.size > cap {
        return Err(over_cap(cap));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.size).unwrap_or(0));
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(|e| read_reason(&e))?;
    if bytes.len() as u64 > cap {
        return Err(over_cap(cap));
    }
    Ok(ReadFile {
        bytes,
        stat: stat_of(&meta),
        at,
    })
}

pub(super) fn over_cap(cap: u64) -> String {
    format!("over the read cap of {cap} bytes")
}

pub(super) fn read_reason(err: &io::Error) -> String {
    if err.kind() == io::ErrorKind::NotFound {
        return "vanished while being read".to_string();
    }
    reason(err)
}

pub(super) fn reason(err: &io::Error) -> String {
    lowercase_message(err)
}

pub(super) fn other_kind(file_type: FileType) -> &'static str {
    match file_type {
        FileType::Fifo => "fifo",
        FileType::Socket => "socket",
        FileType::BlockDevice => "block device",
        FileType::CharacterDevice => "char device",
        _ => "unknown",
    }
}

/// The most bytes of a relative path opened in one call: well under `PATH_MAX` (4,096), so a
/// piece and the kernel's own prefix always fit.
pub(crate) const PIECE: usize = 2048;

/// Whether a path of `len` bytes is opened a piece at a time ([`open_dir_beneath`]) rather
/// than in one call.
pub(crate) fn is_long(len: usize) -> bool {
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
pub(crate) fn open_dir_beneath(
    base: BorrowedFd<'_>,
    rel: &[u8],
) -> io::Result<rustix::fd::OwnedFd> {
    let flags = DIRECTORY | OFlags::NOFOLLOW;
    let mut cur: Option<rustix::fd::OwnedFd> = None;
    for piece in pieces(rel) {
        let at = cur.as_ref().map_or(base, |fd| {
            use std::os::fd::AsFd;
            fd.as_fd()
        });
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
                let mut fd: Option<rustix::fd::OwnedFd> = None;
                for name in piece.split(|&b| b == b'/').filter(|n| !n.is_empty()) {
                    if name == b".." {
                        return Err(io::Error::other("`..` in a path beneath the root"));
                    }
                    let from = fd.as_ref().map_or(at, |f| {
                        use std::os::fd::AsFd;
                        f.as_fd()
                    });
                    fd = Some(rustix::fs::openat(
                        from,
                        OsStr::from_bytes(name),
                        flags,
                        Mode::empty(),
                    )?);
                }
                match fd {
                    Some(fd) => fd,
                    None => rustix::io::fcntl_dupfd_cloexec(at, 0)?,
                }
            }
            Err(Errno::LOOP | Errno::XDEV) => {
                return Err(io::Error::other("replaced while being read"))
            }
            Err(e) => return Err(e.into()),
        };
        cur = Some(next);
    }
    match cur {
        Some(fd) => Ok(fd),
        None => Ok(rustix::io::fcntl_dupfd_cloexec(base, 0)?),
    }
}

/// Opens the directory `rel` under the tree at `root` (the root itself followed if a link, as a
/// scan opens it), checked to be `expect` when given: by its whole path when that is short,
/// else through the root's descriptor a piece at a time ([`open_dir_beneath`]).
pub(super) fn open_in_tree(
    root: &Path,
    rel: &[u8],
    expect: Option<(u64, u64)>,
) -> io::Result<OpenDir> {
    if rel.is_empty() {
        let dir = OpenDir::open(root, None)?;
        if let Some(id) = expect {
            if dir.id()? != id {
                return Err(io::Error::other("replaced while being read"));
            }
        }
        return Ok(dir);
    }
    if expect.is_some() && !is_long(root.as_os_str().len() + 1 + rel.len()) {
        // The directory a listing saw: by its path (its last name not followed), then checked
        // to be that one.
        return OpenDir::open(&root.join(OsStr::from_bytes(rel)), expect);
    }
    // Otherwise beneath the root, no link followed anywhere on the way.
    let top = OpenDir::open(root, None)?;
    OpenDir::open_long(top.dir.fd()?, rel, expect)
}

/// Whether an error from [`open_in_tree`] says a link (or another file system) stands on the way.
pub(crate) fn is_link_on_the_way(e: &io::Error) -> bool {
    e.kind() == io::ErrorKind::Other && e.to_string() == "replaced while being read"
}

/// A regular file's bytes read through descriptors only: its directory opened beneath `root`
/// ([`open_in_tree`]), the file opened there without following a link or blocking, checked on
/// the descriptor to be a regular file, at most `cap` bytes. For a path too long for one system
/// call. `Ok(None)`: there is nothing at that path.
pub(crate) fn read_in_tree(root: &Path, rel: &[u8], cap: u64) -> Result<Option<Vec<u8>>, String> {
    let (parent, base) = match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => (&rel[..0], rel),
    };
    let dir = match open_in_tree(root, parent, None) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(reason(&e)),
    };
    let base = OsStr::from_bytes(base);
    let meta = match dir.stat(base) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(reason(&e)),
    };
    match meta.file_type() {
        FileType::RegularFile => {}
        FileType::Symlink => {
            return Err("a symbolic link; the referee does not follow links".into())
        }
        other => return Err(format!("not a regular file ({})", other_kind(other))),
    }
    read_capped(&dir, base, &stat_of(&meta), cap).map(|r| Some(r.bytes))
}

/// Whether `rel` under `root` is a regular file (a link followed, as `stat` does) and its size,
/// through descriptors for a path too long for one system call ([`open_in_tree`]).
pub(crate) fn size_in_tree(root: &Path, rel: &[u8]) -> io::Result<(bool, u64)> {
    let (parent, base) = match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => (&rel[..0], rel),
    };
    let dir = open_in_tree(root, parent, None)?;
    let st = rustix::fs::statat(dir.dir.fd()?, OsStr::from_bytes(base), AtFlags::empty())?;
    let st = Lstat::of(&st);
    Ok((st.file_type() == FileType::RegularFile, st.size))
}

/// What [`write_in_tree`] puts at a path.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Put<'a> {
    /// A regular file with these bytes (executable or not).
    File(&'a [u8], bool),
    /// A symbolic link to this target.
    Link(&'a [u8]),
}

/// Creates `rel` under the directory `root` (which the caller owns: the referee's state
/// directory), its missing directories first, through descriptors one name at a time, so a path
/// of any length can be written; no link is followed on the way and nothing existing is
/// overwritten.
pub(crate) fn write_in_tree(root: &Path, rel: &[u8], what: Put<'_>) -> io::Result<()> {
    use std::io::Write as _;
    use std::os::fd::AsFd;
    let names: Vec<&[u8]> = rel
        .split(|&b| b == b'/')
        .filter(|n| !n.is_empty())
        .collect();
    let Some((base, dirs)) = names.split_last() else {
        return Err(io::Error::other("an empty path"));
    };
    let mut cur = OpenDir::open(root, None)?.dir;
    for name in dirs {
        let name = OsStr::from_bytes(name);
        let fd = cur.fd()?;
        match rustix::fs::mkdirat(fd, name, Mode::from_raw_mode(0o755)) {
            Ok(()) | Err(Errno::EXIST) => {}
            Err(e) => return Err(e.into()),
        }
        let next = rustix::fs::openat(fd, name, DIRECTORY | OFlags::NOFOLLOW, Mode::empty())?;
        cur = Dir::new(next)?;
    }
    let base = OsStr::from_bytes(base);
    match what {
        Put::File(bytes, exec) => {
            let mode = Mode::from_raw_mode(if exec { 0o755 } else { 0o644 });
            let flags =
                OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::NOFOLLOW | OFlags::CLOEXEC;
            let fd = rustix::fs::openat(cur.fd()?, base, flags, mode)?;
            let mut file = File::from(fd);
            file.write_all(bytes)?;
            // The mode asked for, whatever the umask took away.
            rustix::fs::fchmod(file.as_fd(), mode)?;
        }
        Put::Link(target) => {
            rustix::fs::symlinkat(OsStr::from_bytes(target), cur.fd()?, base)?;
        }
    }
    Ok(())
}

/// What is at one path, looked at through its directory's descriptor (a link never followed).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Looked {
    /// `file`, `symlink`, `directory`, `fifo`, `socket`, `block device`, `char device`.
    pub kind: &'static str,
    pub mode: u32,
    pub size: u64,
    pub dev: u64,
    pub ino: u64,
    pub mtime: Stamp,
    pub ctime: Stamp,
    /// A regular file's bytes when at most the cap, a link's target; `None` otherwise.
    pub bytes: Option<Vec<u8>>,
}

/// Looks at `rel` under `root` (any length: through descriptors where the path is long), and
/// reads a regular file of at most `cap` bytes (never a FIFO or device: opened without
/// blocking and checked on the descriptor) or a link's target. `Ok(None)`: nothing there.
pub(crate) fn look_in_tree(root: &Path, rel: &[u8], cap: u64) -> Result<Option<Looked>, String> {
    let (parent, base) = match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => (&rel[..0], rel),
    };
    let dir = match open_in_tree(root, parent, None) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        // A path whose parent is not a directory (any more), or is reached through a link, has
        // no file of its own at it (the link itself is a path of its own).
        Err(e) if e.raw_os_error() == Some(libc::ENOTDIR) || is_link_on_the_way(&e) => {
            return Ok(None)
        }
        Err(e) => return Err(reason(&e)),
    };
    let base = OsStr::from_bytes(base);
    let meta = match dir.stat(base) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(reason(&e)),
    };
    let ft = meta.file_type();
    let kind = match ft {
        FileType::RegularFile => "file",
        FileType::Symlink => "symlink",
        FileType::Directory => "directory",
        other => other_kind(other),
    };
    let bytes = match ft {
        FileType::RegularFile if meta.size <= cap => {
            Some(read_capped(&dir, base, &stat_of(&meta), cap)?.bytes)
        }
        FileType::Symlink => Some(dir.read_link(base).map_err(|e| reason(&e))?),
        _ => None,
    };
    Ok(Some(Looked {
        kind,
        mode: meta.mode,
        size: meta.size,
        dev: meta.dev,
        ino: meta.ino,
        mtime: meta.mtime,
        ctime: meta.ctime,
        bytes,
    }))
}

/// Every path under the directory `root` that is not a directory (files, links, FIFOs, …;
/// relative, `/`-separated, sorted), at any depth, no link followed, with the directories that
/// could not be listed (path, why); a directory for which `descend` says no is a path itself,
/// not listed. At most `max` paths: `Err` past that.
pub(crate) fn names_in_tree(
    root: &Path,
    max: usize,
    descend: &dyn Fn(&[u8]) -> bool,
) -> io::Result<NamesInTree> {
    let mut out = NamesInTree::default();
    let mut stack: Vec<Vec<u8>> = vec![Vec::new()];
    let mut heap = Vec::new();
    while let Some(rel) = stack.pop() {
        let listed = open_in_tree(root, &rel, None).and_then(|mut d| {
            heap.clear();
            let names = d.names_into(&mut heap)?;
            let mut kids = Vec::with_capacity(names.len());
            for (at, hint) in names {
                let name = name_at(&heap, at);
                // The entry's type where the file system gives one, else a look at it.
                let t = match hint {
                    FileType::Unknown => d.stat(name).map_or(FileType::Unknown, |m| m.file_type()),
                    t => t,
                };
                kids.push((name.as_bytes().to_vec(), t));
            }
            Ok(kids)
        });
        match listed {
            Ok(kids) => {
                for (name, t) in kids {
                    let is_dir = t == FileType::Directory;
                    let mut path = rel.clone();
                    if !path.is_empty() {
                        path.push(b'/');
                    }
                    path.extend_from_slice(&name);
                    if t == FileType::Symlink {
                        out.links.push(path.clone());
                    }
                    if is_dir && descend(&path) {
                        stack.push(path);
                    } else if !is_dir {
                        if out.paths.len() >= max {
                            return Err(io::Error::other(format!(
                                "more than {max} paths to look at"
                            )));
                        }
                        out.paths.push(path);
                    }
                }
            }
            // The top itself: the caller's to report.
            Err(e) if rel.is_empty() => return Err(e),
            Err(e) => out.unlisted.push((rel, reason(&e))),
        }
    }
    out.paths.sort();
    Ok(out)
}

/// What [`names_in_tree`] found.
#[derive(Debug, Default)]
pub(crate) struct NamesInTree {
    pub paths: Vec<Vec<u8>>,
    pub unlisted: Vec<(Vec<u8>, String)>,
    /// The paths that are symbolic links (among `paths`).
    pub links: Vec<Vec<u8>>,
}
