//! Looking at and reading a directory's children through the directory's own descriptor
//! (`fstatat`, `readlinkat`, `openat` without following a link or blocking): what a swap of a
//! path for a symlink cannot redirect.

use std::ffi::OsStr;
use std::io::{self, Read};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::{AtFlags, Dir, FileType, Mode};
use rustix::io::Errno;

use super::super::statcache::{now, Stamp, Stat};
pub(crate) use crate::safefs::is_long;
use crate::safefs::{lowercase_message, Access, IoCause};
pub(super) use crate::safefs::{name_at, Lstat, OpenDir};

/// Why a file of the workspace could not be read; its text is the entry's evidence.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Unreadable {
    #[error("vanished while being read")]
    Vanished,
    #[error("replaced while being read")]
    Replaced,
    #[error("over the read cap of {cap} bytes")]
    OverCap { cap: u64 },
    #[error("a symbolic link; the referee does not follow links")]
    Symlink,
    #[error("not a regular file ({0})")]
    NotRegular(&'static str),
    /// Its size changed between the `fstat` and the end of the read: it was being written.
    #[error("changed size while being read ({listed} bytes listed, {read} read)")]
    ChangedSize { listed: u64, read: u64 },
    /// git's blob id could not be computed (the hasher's message).
    #[error("git blob id: {0}")]
    BlobId(String),
    /// The system refused; the text is its message, lowercased.
    #[error("{}", lowercase_message(&(.0).0))]
    Io(#[source] IoCause),
}

impl Unreadable {
    /// The system's error, kept.
    pub(crate) fn io(err: io::Error) -> Unreadable {
        Unreadable::Io(IoCause::new(err))
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
        dir: std::cell::OnceCell<Result<OpenDir, Unreadable>>,
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
    pub(super) fn get(&self) -> Result<&OpenDir, Unreadable> {
        match self {
            DirRef::Open(dir) => Ok(dir),
            DirRef::Listed { root, rel, id, dir } => dir
                .get_or_init(|| {
                    // The root as a scan opens it (a link to it followed), or the directory
                    // beneath it; either way still the directory listed.
                    let opened = open_in_tree(root, rel, Some(*id));
                    opened.map_err(read_reason)
                })
                .as_ref()
                .map_err(Unreadable::clone),
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
) -> Result<ReadFile, Unreadable> {
    // Taken before the read: a write after this moment gives a ctime that is not older than
    // it, so the cache will not trust this read for the new content.
    let at = now();
    let file = dir.open_file(base).map_err(read_reason)?;
    let meta = rustix::fs::fstat(&file)
        .map(|st| Lstat::of(&st))
        .map_err(|e| read_reason(e.into()))?;
    if meta.file_type() != FileType::RegularFile || (meta.dev, meta.ino) != (listed.dev, listed.ino)
    {
        return Err(Unreadable::Replaced);
    }
    if meta.size > cap {
        return Err(over_cap(cap));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.size).unwrap_or(0));
    file.take(cap.saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(read_reason)?;
    if bytes.len() as u64 > cap {
        return Err(over_cap(cap));
    }
    Ok(ReadFile {
        bytes,
        stat: stat_of(&meta),
        at,
    })
}

/// Files larger than this are hashed as they are read, a piece at a time, never held whole
/// (smaller ones are read in one go, the faster way).
pub(super) const STREAM_ABOVE: u64 = 4 << 20;

/// A file's hashes from one read (git's blob id of the kind asked for, and SHA-256 unless the
/// blob id is the one expected), its size, the `fstat` taken before reading, and when it was
/// read.
pub(super) struct HashedFile {
    pub(super) size: u64,
    pub(super) oid: gix::ObjectId,
    pub(super) sha256: Option<[u8; 32]>,
    pub(super) stat: Stat,
    pub(super) at: Stamp,
}

/// [`read_capped`], hashed: a file over [`STREAM_ABOVE`] bytes is hashed as it is read, so the
/// scan of a tree holds at most that much of any file. Its git blob id is of the size listed on
/// the descriptor: a file whose size changes while it is read is refused (it was being written).
/// A file up to [`STREAM_ABOVE`] whose blob id is `expect` (its baseline blob) gets no SHA-256.
pub(super) fn hash_capped(
    dir: &OpenDir,
    base: &OsStr,
    listed: &Stat,
    cap: u64,
    kind: gix::hash::Kind,
    expect: Option<gix::ObjectId>,
) -> Result<HashedFile, Unreadable> {
    use sha2::{Digest as _, Sha256};
    if listed.size <= STREAM_ABOVE {
        let read = read_capped(dir, base, listed, cap)?;
        let oid = super::blob_oid(kind, &read.bytes)
            .map_err(|why| Unreadable::BlobId(why.to_string()))?;
        return Ok(HashedFile {
            size: read.bytes.len() as u64,
            oid,
            sha256: (expect != Some(oid)).then(|| Sha256::digest(&read.bytes).into()),
            stat: read.stat,
            at: read.at,
        });
    }
    let at = now();
    let file = dir.open_file(base).map_err(read_reason)?;
    let meta = rustix::fs::fstat(&file)
        .map(|st| Lstat::of(&st))
        .map_err(|e| read_reason(e.into()))?;
    if meta.file_type() != FileType::RegularFile || (meta.dev, meta.ino) != (listed.dev, listed.ino)
    {
        return Err(Unreadable::Replaced);
    }
    if meta.size > cap {
        return Err(over_cap(cap));
    }
    let mut git = gix::hash::hasher(kind);
    git.update(&gix::objs::encode::loose_header(
        gix::objs::Kind::Blob,
        meta.size,
    ));
    let mut sha = Sha256::new();
    let read = crate::safefs::read_pieces(file, cap, |piece| {
        git.update(piece);
        sha.update(piece);
    })
    .map_err(read_reason)?;
    if read > cap {
        return Err(over_cap(cap));
    }
    if read != meta.size {
        return Err(Unreadable::ChangedSize {
            listed: meta.size,
            read,
        });
    }
    let oid = git
        .try_finalize()
        .map_err(|why| Unreadable::BlobId(why.to_string()))?;
    Ok(HashedFile {
        size: read,
        oid,
        sha256: Some(sha.finalize().into()),
        stat: stat_of(&meta),
        at,
    })
}

pub(super) fn over_cap(cap: u64) -> Unreadable {
    Unreadable::OverCap { cap }
}

pub(super) fn read_reason(err: io::Error) -> Unreadable {
    if err.kind() == io::ErrorKind::NotFound {
        return Unreadable::Vanished;
    }
    if crate::safefs::is_replaced(&err) {
        return Unreadable::Replaced;
    }
    Unreadable::io(err)
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

/// Opens the directory `rel` under the tree at `root` (the root itself followed if a link, as a
/// scan opens it), checked to be `expect` when given: by its whole path when that is short,
/// else through the root's descriptor a piece at a time ([`crate::safefs::open_dir_beneath`]).
pub(super) fn open_in_tree(
    root: &Path,
    rel: &[u8],
    expect: Option<(u64, u64)>,
) -> io::Result<OpenDir> {
    if rel.is_empty() {
        let dir = OpenDir::open(root, None)?;
        if let Some(id) = expect {
            if dir.id()? != id {
                return Err(crate::safefs::replaced());
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
    OpenDir::open_long(top.fd()?, rel, expect)
}

/// Whether an error from [`open_in_tree`] says a link (or another file system) stands on the way.
pub(crate) fn is_link_on_the_way(e: &io::Error) -> bool {
    crate::safefs::is_replaced(e)
}

/// A regular file's bytes read through descriptors only: its directory opened beneath `root`
/// ([`open_in_tree`]), the file opened there without following a link or blocking, checked on
/// the descriptor to be a regular file, at most `cap` bytes. For a path too long for one system
/// call. `Ok(None)`: there is nothing at that path.
pub(crate) fn read_in_tree(
    root: &Path,
    rel: &[u8],
    cap: u64,
) -> Result<Option<Vec<u8>>, Unreadable> {
    let (parent, base) = match rel.iter().rposition(|&b| b == b'/') {
        Some(i) => (&rel[..i], &rel[i + 1..]),
        None => (&rel[..0], rel),
    };
    let dir = match open_in_tree(root, parent, None) {
        Ok(d) => d,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Unreadable::io(e)),
    };
    let base = OsStr::from_bytes(base);
    let meta = match dir.stat(base) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Unreadable::io(e)),
    };
    match meta.file_type() {
        FileType::RegularFile => {}
        FileType::Symlink => return Err(Unreadable::Symlink),
        other => return Err(Unreadable::NotRegular(other_kind(other))),
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
        cur = Dir::new(crate::safefs::open_dir(fd, name, false)?)?;
    }
    let base = OsStr::from_bytes(base);
    match what {
        Put::File(bytes, exec) => {
            let mode = Mode::from_raw_mode(if exec { 0o755 } else { 0o644 });
            let access = Access::create_new(mode.as_raw_mode());
            let mut file = crate::safefs::open_at(cur.fd()?, base, access)?;
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
pub(crate) fn look_in_tree(
    root: &Path,
    rel: &[u8],
    cap: u64,
) -> Result<Option<Looked>, Unreadable> {
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
        Err(e) => return Err(Unreadable::io(e)),
    };
    let base = OsStr::from_bytes(base);
    let meta = match dir.stat(base) {
        Ok(m) => m,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Unreadable::io(e)),
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
        FileType::Symlink => Some(dir.read_link(base).map_err(Unreadable::io)?),
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
