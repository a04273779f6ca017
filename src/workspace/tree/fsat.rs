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
                    let opened = if rel.is_empty() {
                        // The root, as a scan opens it (a link to it followed), and still the
                        // directory listed.
                        OpenDir::open(root, None).and_then(|d| {
                            if d.id()? == *id {
                                Ok(d)
                            } else {
                                Err(io::Error::other("replaced while being read"))
                            }
                        })
                    } else {
                        OpenDir::open(&root.join(std::ffi::OsStr::from_bytes(rel)), Some(*id))
                    };
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
