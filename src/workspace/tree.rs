//! The work tree as the file system has it (SPEC §8: "the work tree is read from the file system
//! itself (names, types, modes, bytes), never from git's index, stat cache, fsmonitor"): every
//! path with its kind, mode, size and, for a regular file, its git blob id and SHA-256 from one
//! read; and the referee's own stat cache, so a judgment costs the `lstat`s, not the reads.
//!
//! It never follows a symlink, never opens a FIFO, socket or device, never reads more than the
//! cap, never writes in the tree and never panics: a path it cannot read is an entry with the
//! reason, for the checks to make INCONCLUSIVE. Each directory is opened without following a
//! link and checked to be the one that was listed (device and inode), and its children are
//! listed, looked at and read through that open directory (`getdents`, `fstatat`, `openat` and
//! `readlinkat` on its descriptor), so a directory swapped for a symlink mid-walk cannot lead it
//! out of the tree. What is ignored is the caller's answer
//! ([`Options::ignored`], from the baseline's committed `.gitignore` files); an ignored directory
//! is still walked, because protected globs must see every path, but nothing in it is read.

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::{OsStr, OsString};
use std::fmt;
use std::fs::File;
use std::io::{self, Read};
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use gix::ObjectId;
use rustix::fs::{AtFlags, Dir, FileType, Mode, OFlags};
use sha2::{Digest, Sha256};

use super::name;
pub use super::statcache::StatCache;
use super::statcache::{now, Cached, Stamp, Stat};
use crate::artifacts::fsread::lowercase_message;

/// What is at a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// A regular file; `exec` is the owner's execute bit (git's 100755).
    File { exec: bool },
    /// A symbolic link, never followed; `target` is what `readlink` gives.
    Symlink { target: Vec<u8> },
    /// A directory (walked).
    Dir,
    /// A `.git` directory (a nested repository) or `.git` file (a submodule or worktree
    /// pointer): an entry, never descended into or read.
    GitDir,
    /// `fifo`, `socket`, `block device`, `char device`, or `unknown` (the path could not be
    /// looked at; see [`Entry::unreadable`]). Never opened.
    Other(&'static str),
}

/// One path of the work tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub kind: Kind,
    /// `st_mode` as `lstat` gives it (type and permission bits).
    pub mode: u32,
    /// Bytes: a file's length (as read, when it was read), a symlink target's length; 0 for a
    /// directory, whose size says nothing about its content.
    pub size: u64,
    /// Git's blob id: of a regular file's bytes, or of a symlink's target (as git stores links).
    /// `None` when the file was not read (ignored, unreadable, over the cap).
    pub oid: Option<ObjectId>,
    /// SHA-256 of a regular file's bytes, from the same read as `oid` (hex:
    /// [`Entry::sha256_hex`]).
    pub sha256: Option<[u8; 32]>,
    /// Why the path could not be read (a file) or listed (a directory).
    pub unreadable: Option<String>,
    /// Ignored by the caller's rules, itself or as a path under an ignored directory.
    pub ignored: bool,
    /// Device and inode (what a hard link shares) and the link count (0 for a directory).
    pub dev: u64,
    pub ino: u64,
    pub nlink: u64,
}

impl Entry {
    /// The lowercase hex SHA-256 of a regular file's bytes, when it was read.
    pub fn sha256_hex(&self) -> Option<String> {
        self.sha256.as_ref().map(|b| hex(b))
    }

    /// A regular file that was read: what the stat cache holds.
    fn is_hashed_file(&self) -> bool {
        matches!(self.kind, Kind::File { .. }) && self.oid.is_some()
    }
}

/// How to scan.
pub struct Options<'a> {
    /// The most bytes read from one file; a bigger one is unreadable ("over the read cap").
    pub cap: u64,
    /// Top-level names that are not part of the tree at all (e.g. `.git`, `.tasks`, `.referee`).
    pub skip_top: &'a [&'a str],
    /// Whether a path (raw bytes, relative, `/`-separated) is ignored; the flag says whether it
    /// is a directory. Not asked below an ignored directory: all of it is ignored.
    pub ignored: &'a dyn Fn(&[u8], bool) -> bool,
}

impl fmt::Debug for Options<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Options")
            .field("cap", &self.cap)
            .field("skip_top", &self.skip_top)
            .finish_non_exhaustive()
    }
}

/// The work tree: every path under the root but the skipped top-level names.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkTree {
    /// Keyed by [`name::encode`]d relative paths, `/`-separated.
    pub entries: BTreeMap<String, Entry>,
}

impl WorkTree {
    /// Walks the whole tree under `root`. An `Err` only when `root` itself cannot be listed;
    /// anything below that cannot be read is an entry with its reason. The cache keeps only the
    /// files of this tree afterwards: use one cache per root.
    pub fn scan(root: &Path, opts: &Options<'_>, cache: &mut StatCache) -> io::Result<WorkTree> {
        let mut top = OpenDir::open(root, None)?;
        let id = top.id()?;
        let listing = top.list()?;
        let mut tree = WorkTree::default();
        // Afterwards the cache holds exactly the files of this tree: what the walk did not see
        // is dropped at its end.
        cache.begin_scan(id);
        let mut walker = Walker {
            root,
            opts,
            cache,
            entries: &mut tree.entries,
            bulk: Some(Vec::new()),
            unlisted: Vec::new(),
        };
        let mut stack = Vec::new();
        walker.visit_listing(&[], &top, listing, false, &mut stack);
        drop(top);
        walker.run(stack);
        walker.cache.end_scan();
        // Built at once from the walk (sorted, then laid out), not an insertion per path.
        let (bulk, unlisted) = (walker.bulk.take(), std::mem::take(&mut walker.unlisted));
        tree.entries = bulk.unwrap_or_default().into_iter().collect();
        for (key, why) in unlisted {
            if let Some(entry) = tree.entries.get_mut(&key) {
                entry.unreadable = Some(why);
            }
        }
        Ok(tree)
    }

    /// Re-reads only `paths` (relative, encoded) and, for a directory among them, its subtree;
    /// entries that vanished are removed; a path whose parent is new (or no longer a directory)
    /// is scanned from that ancestor. For the daemon: the cost follows the change, not the tree.
    /// An empty path stands for the whole tree (a full [`scan`](Self::scan); if the root cannot
    /// be listed any more, the tree is left as it was). Paths under a skipped top-level name
    /// are not part of the tree and are left alone.
    pub fn rescan(
        &mut self,
        root: &Path,
        paths: &[String],
        opts: &Options<'_>,
        cache: &mut StatCache,
    ) {
        let mut targets = BTreeSet::new();
        for path in paths {
            let bytes = name::decode(path);
            let parts: Vec<&[u8]> = bytes
                .split(|&b| b == b'/')
                .filter(|p| !p.is_empty())
                .collect();
            if parts.is_empty() {
                if let Ok(tree) = WorkTree::scan(root, opts, cache) {
                    *self = tree;
                }
                return;
            }
            if opts.skip_top.iter().any(|s| s.as_bytes() == parts[0]) {
                continue;
            }
            targets.insert(self.rescan_target(&parts));
        }
        // A target inside another one is covered by it.
        let mut chosen: Vec<Vec<u8>> = Vec::new();
        for target in targets {
            let covered = chosen.iter().any(|c| {
                target.len() > c.len() && target.starts_with(c) && target[c.len()] == b'/'
            });
            if !covered {
                chosen.push(target);
            }
        }

        let mut removed = Vec::new();
        let mut stack = Vec::new();
        let mut walker = Walker {
            root,
            opts,
            cache,
            entries: &mut self.entries,
            bulk: None,
            unlisted: Vec::new(),
        };
        for mut target in chosen {
            loop {
                walker.remove_subtree(&target, &mut removed);
                let (parent, base) = match target.iter().rposition(|&b| b == b'/') {
                    Some(i) => (target[..i].to_vec(), target[i + 1..].to_vec()),
                    None => (Vec::new(), target.clone()),
                };
                let (parent_id, parent_ignored) = if parent.is_empty() {
                    (None, false)
                } else {
                    match walker.entries.get(&name::encode(&parent)) {
                        Some(e) => (Some((e.dev, e.ino)), e.ignored),
                        // Only reached once a parent failed to open (see below).
                        None => (None, false),
                    }
                };
                let opened = if parent.is_empty() || parent_id.is_some() {
                    OpenDir::open(&walker.abs(&parent), parent_id)
                } else {
                    Err(io::Error::from(io::ErrorKind::NotFound))
                };
                match opened {
                    Ok(dir) => {
                        let base = OsString::from_vec(base);
                        let meta = dir.stat(&base);
                        if let Some(next) = walker.visit(target, &dir, &base, meta, parent_ignored)
                        {
                            stack.push(next);
                        }
                        break;
                    }
                    // The parent is no longer the directory that was listed: look again from it.
                    Err(_) if !parent.is_empty() => target = parent,
                    Err(_) => break,
                }
            }
        }
        walker.run(stack);
        for key in removed {
            if !walker.entries.get(&key).is_some_and(Entry::is_hashed_file) {
                walker.cache.remove(&name::decode(&key));
            }
        }
    }

    /// The path to look at again for a change at `parts`: the first ancestor that is not a
    /// known directory (new, or something else now), else the path itself.
    fn rescan_target(&self, parts: &[&[u8]]) -> Vec<u8> {
        let mut prefix = Vec::new();
        for (i, part) in parts.iter().enumerate() {
            if i > 0 {
                prefix.push(b'/');
            }
            prefix.extend_from_slice(part);
            if i + 1 == parts.len() {
                break;
            }
            let is_dir = self
                .entries
                .get(&name::encode(&prefix))
                .is_some_and(|e| e.kind == Kind::Dir);
            if !is_dir {
                break;
            }
        }
        prefix
    }
}

/// A directory still to list: its path and the identity it had when its parent was listed.
struct Pending {
    rel: Vec<u8>,
    id: (u64, u64),
    ignored: bool,
}

/// An open directory: its children are listed, looked at and opened through its descriptor
/// (`*at()` calls), never by a path that a swap could redirect.
struct OpenDir {
    dir: Dir,
}

/// What `lstat` (`fstatat` without following) says of a path.
#[derive(Debug, Clone, Copy)]
struct Lstat {
    mode: u32,
    dev: u64,
    ino: u64,
    nlink: u64,
    size: u64,
    mtime: Stamp,
    ctime: Stamp,
}

impl Lstat {
    #[allow(
        clippy::useless_conversion,
        clippy::unnecessary_cast,
        reason = "the field types of `struct stat` differ between targets: no-ops on some"
    )]
    fn of(st: &rustix::fs::Stat) -> Lstat {
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

    fn file_type(&self) -> FileType {
        FileType::from_raw_mode(self.mode)
    }
}

impl OpenDir {
    /// Opens `abs` as a directory. With `expect`, a symlink is refused and the directory must
    /// still be the one listed (device, inode); without it (the root), links are followed.
    fn open(abs: &Path, expect: Option<(u64, u64)>) -> io::Result<OpenDir> {
        let mut flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NONBLOCK | OFlags::CLOEXEC;
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

    /// The directory's own device and inode.
    fn id(&self) -> io::Result<(u64, u64)> {
        let st = Lstat::of(&rustix::fs::fstat(self.dir.fd()?)?);
        Ok((st.dev, st.ino))
    }

    /// The `lstat` of the child `base`.
    fn stat(&self, base: &OsStr) -> io::Result<Lstat> {
        let st = rustix::fs::statat(self.dir.fd()?, base, AtFlags::SYMLINK_NOFOLLOW)?;
        Ok(Lstat::of(&st))
    }

    /// The target of the symlink `base`.
    fn read_link(&self, base: &OsStr) -> io::Result<Vec<u8>> {
        Ok(rustix::fs::readlinkat(self.dir.fd()?, base, Vec::new())?.into_bytes())
    }

    /// Opens the child `base` for reading, without following a link or blocking.
    fn open_file(&self, base: &OsStr) -> io::Result<File> {
        let flags = OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC;
        Ok(File::from(rustix::fs::openat(
            self.dir.fd()?,
            base,
            flags,
            Mode::empty(),
        )?))
    }

    /// The names in the directory with their `lstat` (taken relative to the descriptor).
    fn list(&mut self) -> io::Result<Vec<(OsString, io::Result<Lstat>)>> {
        let mut names = Vec::new();
        for item in self.dir.by_ref() {
            let item = item?;
            let name = item.file_name().to_bytes();
            if name == b"." || name == b".." {
                continue;
            }
            names.push(OsString::from_vec(name.to_vec()));
        }
        Ok(names
            .into_iter()
            .map(|name| {
                let meta = self.stat(&name);
                (name, meta)
            })
            .collect())
    }
}

/// How many directories are opened and listed at once in a walk: bounds the descriptors held.
const BATCH: usize = 128;

/// A directory opened and listed, or why not.
type Listed = io::Result<(OpenDir, Vec<(OsString, io::Result<Lstat>)>)>;

fn abs_of(root: &Path, rel: &[u8]) -> PathBuf {
    if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(OsStr::from_bytes(rel))
    }
}

fn list_one(root: &Path, dir: &Pending) -> Listed {
    let mut open = OpenDir::open(&abs_of(root, &dir.rel), Some(dir.id))?;
    let listing = open.list()?;
    Ok((open, listing))
}

/// Opens and lists `batch` (in its order), half of it on a second thread when there is enough
/// to share; without a second thread, all of it here.
fn list_all(root: &Path, batch: &[Pending]) -> Vec<Listed> {
    let one = |dir: &Pending| list_one(root, dir);
    if batch.len() < 8 {
        return batch.iter().map(one).collect();
    }
    let (first, second) = batch.split_at(batch.len() / 2);
    std::thread::scope(|s| {
        let other = std::thread::Builder::new()
            .name("referee-walk".into())
            .spawn_scoped(s, || second.iter().map(one).collect::<Vec<_>>());
        let mut out: Vec<Listed> = first.iter().map(one).collect();
        match other.ok().map(|h| h.join()) {
            Some(Ok(rest)) => out.extend(rest),
            // No second thread (or it died): the rest here.
            _ => out.extend(second.iter().map(one)),
        }
        out
    })
}

struct Walker<'w, 'o> {
    root: &'w Path,
    opts: &'w Options<'o>,
    cache: &'w mut StatCache,
    entries: &'w mut BTreeMap<String, Entry>,
    /// In a full scan, the entries as walked, laid out as a map once at the end.
    bulk: Option<Vec<(String, Entry)>>,
    /// In a full scan, the directories that could not be listed (path, why).
    unlisted: Vec<(String, String)>,
}

impl Walker<'_, '_> {
    fn abs(&self, rel: &[u8]) -> PathBuf {
        abs_of(self.root, rel)
    }

    /// Lists the pending directories, depth first, with an explicit stack (any depth).
    ///
    /// Up to [`BATCH`] directories at a time are opened and listed (`getdents` and an `fstatat`
    /// per name, most of a walk's time) on two threads, as git's `core.preloadIndex` takes its
    /// `lstat`s; what is seen is then recorded here, in one thread. Each directory is still
    /// opened without following a link and checked to be the one listed.
    fn run(&mut self, mut stack: Vec<Pending>) {
        while !stack.is_empty() {
            let batch = stack.split_off(stack.len().saturating_sub(BATCH));
            let listed = list_all(self.root, &batch);
            for (dir, listed) in batch.into_iter().zip(listed) {
                match listed {
                    Ok((open, listing)) => {
                        self.visit_listing(&dir.rel, &open, listing, dir.ignored, &mut stack);
                    }
                    Err(e) => {
                        let key = name::encode(&dir.rel);
                        if self.bulk.is_some() {
                            self.unlisted.push((key, reason(&e)));
                        } else if let Some(entry) = self.entries.get_mut(&key) {
                            entry.unreadable = Some(reason(&e));
                        }
                    }
                }
            }
        }
    }

    fn visit_listing(
        &mut self,
        parent: &[u8],
        dir: &OpenDir,
        listing: Vec<(OsString, io::Result<Lstat>)>,
        ignored: bool,
        stack: &mut Vec<Pending>,
    ) {
        for (base, meta) in listing {
            if parent.is_empty()
                && self
                    .opts
                    .skip_top
                    .iter()
                    .any(|s| s.as_bytes() == base.as_bytes())
            {
                continue;
            }
            let mut rel = Vec::with_capacity(parent.len() + 1 + base.len());
            if !parent.is_empty() {
                rel.extend_from_slice(parent);
                rel.push(b'/');
            }
            rel.extend_from_slice(base.as_bytes());
            if let Some(next) = self.visit(rel, dir, &base, meta, ignored) {
                stack.push(next);
            }
        }
    }

    /// Records the entry at `rel` (named `base` in `dir`) from its `lstat`; returns the
    /// directory to walk next, if it is one.
    fn visit(
        &mut self,
        rel: Vec<u8>,
        dir: &OpenDir,
        base: &OsStr,
        meta: io::Result<Lstat>,
        under_ignored: bool,
    ) -> Option<Pending> {
        let meta = match meta {
            Ok(meta) => meta,
            // Gone since the listing: not part of the tree.
            Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
            Err(e) => {
                let entry = Entry {
                    kind: Kind::Other("unknown"),
                    mode: 0,
                    size: 0,
                    oid: None,
                    sha256: None,
                    unreadable: Some(reason(&e)),
                    ignored: under_ignored,
                    dev: 0,
                    ino: 0,
                    nlink: 0,
                };
                self.insert(name::encode_owned(rel), entry);
                return None;
            }
        };
        let file_type = meta.file_type();
        let is_dir = file_type == FileType::Directory;
        let is_file = file_type == FileType::RegularFile;
        let ignored = under_ignored || (self.opts.ignored)(&rel, is_dir);
        let is_git = base.as_bytes() == b".git";
        let mut entry = Entry {
            kind: Kind::Dir,
            mode: meta.mode,
            size: if is_dir { 0 } else { meta.size },
            oid: None,
            sha256: None,
            unreadable: None,
            ignored,
            dev: meta.dev,
            ino: meta.ino,
            // A directory's link count follows its subdirectories: noise, like its size.
            nlink: if is_dir { 0 } else { meta.nlink },
        };
        if is_git && (is_dir || is_file) {
            entry.kind = Kind::GitDir;
        } else if is_dir {
            // The directory to walk keeps the path's bytes.
            let key = name::encode(&rel);
            let next = Pending {
                rel,
                id: (meta.dev, meta.ino),
                ignored,
            };
            self.insert(key, entry);
            return Some(next);
        } else if is_file {
            entry.kind = Kind::File {
                exec: meta.mode & 0o100 != 0,
            };
            if !ignored {
                self.hash(&rel, dir, base, &meta, &mut entry);
            }
        } else if file_type == FileType::Symlink {
            match dir.read_link(base) {
                Ok(target) => {
                    match blob_oid(&target) {
                        Ok(oid) => entry.oid = Some(oid),
                        Err(why) => entry.unreadable = Some(why),
                    }
                    entry.kind = Kind::Symlink { target };
                }
                Err(e) => {
                    entry.kind = Kind::Symlink { target: Vec::new() };
                    entry.unreadable = Some(reason(&e));
                }
            }
        } else {
            entry.kind = Kind::Other(other_kind(file_type));
        }
        // The key takes over the path's bytes.
        self.insert(name::encode_owned(rel), entry);
        None
    }

    fn insert(&mut self, key: String, entry: Entry) {
        match &mut self.bulk {
            Some(bulk) => bulk.push((key, entry)),
            None => {
                self.entries.insert(key, entry);
            }
        }
    }

    /// Fills in a regular file's hashes: from the cache when it can be trusted, else from one
    /// read of at most the cap.
    fn hash(&mut self, rel: &[u8], dir: &OpenDir, base: &OsStr, meta: &Lstat, entry: &mut Entry) {
        let listed = stat_of(meta);
        if let Some(hit) = self.cache.take(rel, &listed) {
            entry.oid = Some(hit.oid);
            entry.sha256 = Some(hit.sha256);
            return;
        }
        let cap = self.opts.cap;
        if listed.size > cap {
            entry.unreadable = Some(over_cap(cap));
            return;
        }
        self.cache.count_read();
        let read = match read_capped(dir, base, &listed, cap) {
            Ok(read) => read,
            Err(why) => {
                entry.unreadable = Some(why);
                return;
            }
        };
        let oid = match blob_oid(&read.bytes) {
            Ok(oid) => oid,
            Err(why) => {
                entry.unreadable = Some(why);
                return;
            }
        };
        let sha256: [u8; 32] = Sha256::digest(&read.bytes).into();
        entry.size = read.bytes.len() as u64;
        entry.oid = Some(oid);
        entry.sha256 = Some(sha256);
        self.cache.insert(
            rel,
            Cached {
                stat: read.stat,
                at: read.at,
                oid,
                sha256,
            },
        );
    }

    /// Removes `target` and everything under it, noting the keys.
    fn remove_subtree(&mut self, target: &[u8], removed: &mut Vec<String>) {
        let key = name::encode(target);
        let prefix = format!("{key}/");
        let under: Vec<String> = self
            .entries
            .range(prefix.clone()..)
            .take_while(|(k, _)| k.starts_with(&prefix))
            .map(|(k, _)| k.clone())
            .collect();
        for k in under.into_iter().chain(std::iter::once(key)) {
            if self.entries.remove(&k).is_some() {
                removed.push(k);
            }
        }
    }
}

fn stat_of(meta: &Lstat) -> Stat {
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
struct ReadFile {
    bytes: Vec<u8>,
    stat: Stat,
    at: Stamp,
}

/// Opens `base` in `dir` without following a link or blocking, checks on the descriptor that it
/// is the regular file that was listed, and reads at most `cap` bytes.
fn read_capped(dir: &OpenDir, base: &OsStr, listed: &Stat, cap: u64) -> Result<ReadFile, String> {
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

fn over_cap(cap: u64) -> String {
    format!("over the read cap of {cap} bytes")
}

fn read_reason(err: &io::Error) -> String {
    if err.kind() == io::ErrorKind::NotFound {
        return "vanished while being read".to_string();
    }
    reason(err)
}

fn reason(err: &io::Error) -> String {
    lowercase_message(err)
}

fn other_kind(file_type: FileType) -> &'static str {
    match file_type {
        FileType::Fifo => "fifo",
        FileType::Socket => "socket",
        FileType::BlockDevice => "block device",
        FileType::CharacterDevice => "char device",
        _ => "unknown",
    }
}

/// Git's blob id of `bytes` (SHA-1, with git's collision detection).
fn blob_oid(bytes: &[u8]) -> Result<ObjectId, String> {
    gix::objs::compute_hash(gix::hash::Kind::Sha1, gix::objs::Kind::Blob, bytes)
        .map_err(|e| format!("git blob id: {e}"))
}

fn hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(char::from(HEX[usize::from(b >> 4)]));
        out.push(char::from(HEX[usize::from(b & 0x0f)]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CString;
    use std::fs;
    use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
    use std::time::Duration;

    const SKIP: &[&str] = &[".git", ".tasks", ".referee"];

    fn no_ignore(_: &[u8], _: bool) -> bool {
        false
    }

    fn opts(cap: u64) -> Options<'static> {
        Options {
            cap,
            skip_top: SKIP,
            ignored: &no_ignore,
        }
    }

    fn write(root: &Path, rel: &str, bytes: &[u8]) {
        let path = root.join(rel);
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(path, bytes).expect("write");
    }

    fn scan(root: &Path, cache: &mut StatCache) -> WorkTree {
        WorkTree::scan(root, &opts(1 << 20), cache).expect("scan")
    }

    fn is_root() -> bool {
        // SAFETY: geteuid has no preconditions and cannot fail.
        unsafe { libc::geteuid() == 0 }
    }

    /// A fresh cache that trusts a file 20 ms after its last change (the tests then wait 60 ms
    /// instead of the default 2 s).
    fn quick_cache() -> StatCache {
        StatCache::new().with_margin(Duration::from_millis(20))
    }

    fn settle() {
        std::thread::sleep(Duration::from_millis(60));
    }

    const HELLO_OID: &str = "ce013625030ba8dba906f756967f9e9ca394464a";
    const HELLO_SHA256: &str = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";

    #[test]
    fn every_kind() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        write(root, "a.txt", b"hello\n");
        write(root, "run.sh", b"#!/bin/sh\n");
        fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o755)).expect("chmod");
        symlink("a.txt", root.join("in")).expect("symlink");
        symlink("/etc/passwd", root.join("out")).expect("symlink");
        symlink("nowhere", root.join("dangling")).expect("symlink");
        fs::create_dir(root.join("empty")).expect("mkdir");
        let fifo = CString::new(root.join("pipe").as_os_str().as_bytes()).expect("cstring");
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(fifo.as_ptr(), 0o644) }, 0);
        write(root, "nested/.git/HEAD", b"ref: refs/heads/main\n");
        write(root, "nested/roles.py", b"x = 1\n");
        write(root, "sub/.git", b"gitdir: ../.git/modules/sub\n");
        write(root, "sub/safety_x.py", b"y\n");

        let tree = scan(root, &mut StatCache::new());
        let e = |k: &str| {
            tree.entries
                .get(k)
                .unwrap_or_else(|| panic!("no entry {k}"))
        };

        let a = e("a.txt");
        assert_eq!(a.kind, Kind::File { exec: false });
        assert_eq!(a.oid.map(|o| o.to_string()).as_deref(), Some(HELLO_OID));
        assert_eq!(a.sha256_hex().as_deref(), Some(HELLO_SHA256));
        assert_eq!(a.size, 6);
        assert_eq!(a.unreadable, None);
        assert_eq!(e("run.sh").kind, Kind::File { exec: true });
        assert_eq!(e("run.sh").mode & 0o777, 0o755);

        assert_eq!(
            e("in").kind,
            Kind::Symlink {
                target: b"a.txt".to_vec()
            }
        );
        assert_eq!(e("in").oid, blob_oid(b"a.txt").ok());
        assert_eq!(e("in").sha256, None);
        assert_eq!(
            e("out").kind,
            Kind::Symlink {
                target: b"/etc/passwd".to_vec()
            }
        );
        assert_eq!(
            e("dangling").kind,
            Kind::Symlink {
                target: b"nowhere".to_vec()
            }
        );
        assert_eq!(e("empty").kind, Kind::Dir);
        assert_eq!(e("empty").size, 0);
        assert_eq!(e("pipe").kind, Kind::Other("fifo"));
        assert_eq!(e("pipe").oid, None);

        assert_eq!(e("nested").kind, Kind::Dir);
        assert_eq!(e("nested/.git").kind, Kind::GitDir);
        assert!(!tree.entries.contains_key("nested/.git/HEAD"));
        assert!(e("nested/roles.py").oid.is_some());
        assert_eq!(e("sub/.git").kind, Kind::GitDir);
        assert_eq!(e("sub/.git").oid, None);
        assert!(e("sub/safety_x.py").oid.is_some());
        assert_eq!(tree.entries.len(), 13);
    }

    #[test]
    fn skipped_top_level_names_are_not_entries() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        write(root, ".git/HEAD", b"x");
        write(root, ".tasks/t1.json", b"{}");
        write(root, ".referee/OBSERVER-STOP.md", b"x");
        write(root, "deep/.tasks/t.json", b"{}");
        let tree = scan(root, &mut StatCache::new());
        let keys: Vec<&str> = tree.entries.keys().map(String::as_str).collect();
        assert_eq!(keys, ["deep", "deep/.tasks", "deep/.tasks/t.json"]);
    }

    #[test]
    fn ignored_directories_are_walked_but_not_read() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        write(root, "__pycache__/roles.cpython-312.pyc", b"forged");
        write(root, "node_modules/a/b.js", b"12345");
        write(root, "debug.log", b"log");
        write(root, "keep.py", b"k\n");
        let asked = std::cell::RefCell::new(Vec::new());
        let ignored = |path: &[u8], is_dir: bool| {
            asked.borrow_mut().push(path.to_vec());
            (is_dir && (path == b"__pycache__" || path == b"node_modules"))
                || path.ends_with(b".log")
        };
        let options = Options {
            cap: 1 << 20,
            skip_top: SKIP,
            ignored: &ignored,
        };
        let mut cache = StatCache::new();
        let tree = WorkTree::scan(root, &options, &mut cache).expect("scan");
        let pyc = &tree.entries["__pycache__/roles.cpython-312.pyc"];
        assert!(pyc.ignored);
        assert_eq!((pyc.oid, pyc.sha256, pyc.size), (None, None, 6));
        assert_eq!(pyc.kind, Kind::File { exec: false });
        let js = &tree.entries["node_modules/a/b.js"];
        assert!(js.ignored && js.oid.is_none() && js.size == 5);
        assert!(tree.entries["node_modules/a"].ignored);
        assert!(tree.entries["debug.log"].ignored && tree.entries["debug.log"].oid.is_none());
        assert!(!tree.entries["keep.py"].ignored && tree.entries["keep.py"].oid.is_some());
        // Only keep.py was read; nothing below an ignored directory was asked about.
        assert_eq!(cache.reads(), 1);
        assert!(!asked
            .borrow()
            .iter()
            .any(|p| p.starts_with(b"node_modules/")));
    }

    #[test]
    fn the_read_cap() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        write(root, "ten", b"0123456789");
        write(root, "eleven", b"0123456789a");
        let tree = WorkTree::scan(root, &opts(10), &mut StatCache::new()).expect("scan");
        assert!(tree.entries["ten"].oid.is_some());
        let big = &tree.entries["eleven"];
        assert_eq!(
            big.unreadable.as_deref(),
            Some("over the read cap of 10 bytes")
        );
        assert_eq!((big.oid, big.size), (None, 11));
    }

    #[test]
    fn unreadable_files_and_directories() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        write(root, "secret", b"s");
        write(root, "closed/inside", b"i");
        fs::set_permissions(root.join("secret"), fs::Permissions::from_mode(0o000)).expect("chmod");
        fs::set_permissions(root.join("closed"), fs::Permissions::from_mode(0o000)).expect("chmod");
        let tree = scan(root, &mut StatCache::new());
        fs::set_permissions(root.join("closed"), fs::Permissions::from_mode(0o755)).expect("chmod");
        if is_root() {
            // root reads through mode 000: nothing to assert but that the scan went through.
            eprintln!("running as root: chmod 000 does not stop reads, permission checks skipped");
            assert!(tree.entries["secret"].oid.is_some());
            return;
        }
        let secret = &tree.entries["secret"];
        assert_eq!(secret.oid, None);
        assert!(secret
            .unreadable
            .as_deref()
            .is_some_and(|r| r.contains("permission denied")));
        let closed = &tree.entries["closed"];
        assert_eq!(closed.kind, Kind::Dir);
        assert!(closed
            .unreadable
            .as_deref()
            .is_some_and(|r| r.contains("permission denied")));
        assert!(!tree.entries.contains_key("closed/inside"));
    }

    #[test]
    fn names_of_any_bytes_round_trip() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let raw: &[u8] = b"d\xffir/na\xc3me\nwith space\t\xf4\x8f\xbf\xbf";
        let path = root.join(OsStr::from_bytes(raw));
        fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        fs::write(&path, b"hello\n").expect("write");
        let tree = scan(root, &mut StatCache::new());
        let key = name::encode(raw);
        let entry = &tree.entries[&key];
        assert_eq!(entry.sha256_hex().as_deref(), Some(HELLO_SHA256));
        assert_eq!(name::to_path(root, &key), path);
        assert_eq!(
            fs::read(name::to_path(root, &key)).expect("read"),
            b"hello\n"
        );
        assert!(tree.entries.contains_key(&name::encode(b"d\xffir")));
    }

    #[test]
    fn deep_trees() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        let rel = vec!["d"; 1000].join("/");
        write(root, &format!("{rel}/leaf"), b"x");
        let tree = scan(root, &mut StatCache::new());
        assert_eq!(tree.entries.len(), 1001);
        assert!(tree.entries[&format!("{rel}/leaf")].oid.is_some());
    }

    #[test]
    fn the_cache_is_trusted_until_the_file_changes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        write(root, "f", b"one\n");
        settle();
        let mut cache = quick_cache();
        let first = scan(root, &mut cache);
        assert_eq!(cache.reads(), 1);
        let again = scan(root, &mut cache);
        assert_eq!(
            cache.reads(),
            1,
            "an unchanged, settled file is not read again"
        );
        assert_eq!(first, again);

        // Same size, mtime put back: ctime still moves, so it is read again.
        let mtime = filetime::FileTime::from_last_modification_time(
            &fs::metadata(root.join("f")).expect("stat"),
        );
        settle();
        fs::write(root.join("f"), b"two\n").expect("write");
        filetime::set_file_mtime(root.join("f"), mtime).expect("mtime");
        let edited = scan(root, &mut cache);
        assert_eq!(cache.reads(), 2);
        assert_ne!(edited.entries["f"].oid, first.entries["f"].oid);
        assert_eq!(edited.entries["f"].oid, blob_oid(b"two\n").ok());
    }

    #[test]
    fn a_file_changed_within_the_margin_is_read_again() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        write(root, "f", b"racy");
        // The default margin (2 s): the file was just written, so no read of it is trusted yet.
        let mut cache = StatCache::new();
        scan(root, &mut cache);
        scan(root, &mut cache);
        assert_eq!(cache.reads(), 2);
    }

    #[test]
    fn rescan_follows_the_change() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        write(root, "src/a.py", b"a\n");
        write(root, "src/b.py", b"b\n");
        write(root, "old/x/y.txt", b"y\n");
        write(root, "old/z.txt", b"z\n");
        settle();
        let mut cache = quick_cache();
        let options = opts(1 << 20);
        let mut tree = WorkTree::scan(root, &options, &mut cache).expect("scan");
        assert_eq!(cache.reads(), 4);

        // A changed file: only it is read.
        settle();
        write(root, "src/a.py", b"A!\n");
        tree.rescan(root, &["src/a.py".to_string()], &options, &mut cache);
        assert_eq!(cache.reads(), 5);
        assert_eq!(tree.entries["src/a.py"].oid, blob_oid(b"A!\n").ok());

        // A new directory: the event names a deep path, the new ancestor is walked.
        write(root, "new/deeper/n.txt", b"n\n");
        write(root, "new/m.txt", b"m\n");
        tree.rescan(
            root,
            &["new/deeper/n.txt".to_string()],
            &options,
            &mut cache,
        );
        assert_eq!(tree.entries["new"].kind, Kind::Dir);
        assert!(tree.entries["new/m.txt"].oid.is_some());
        assert!(tree.entries["new/deeper/n.txt"].oid.is_some());

        // A removed subtree: its entries and cached hashes go.
        fs::remove_dir_all(root.join("old")).expect("rm");
        let before = cache.len();
        tree.rescan(
            root,
            &["old".to_string(), ".git/index".to_string()],
            &options,
            &mut cache,
        );
        assert!(!tree.entries.keys().any(|k| k.starts_with("old")));
        assert_eq!(cache.len(), before - 2);

        // A file replaced by a directory.
        fs::remove_file(root.join("src/b.py")).expect("rm");
        write(root, "src/b.py/inner", b"i\n");
        tree.rescan(root, &["src/b.py/inner".to_string()], &options, &mut cache);
        assert_eq!(tree.entries["src/b.py"].kind, Kind::Dir);

        // The rescanned tree is the tree a full scan sees.
        assert_eq!(
            tree,
            WorkTree::scan(root, &options, &mut StatCache::new()).expect("scan")
        );
    }

    #[test]
    fn the_cache_file() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path().join("ws");
        write(&root, "a", b"a\n");
        write(&root, "b", b"b\n");
        settle();
        let state = dir.path().join("stat-cache.json");
        let mut cache = quick_cache();
        scan(&root, &mut cache);
        cache.save(&state).expect("save");

        // A restart: the loaded cache spares the reads.
        let mut loaded = StatCache::load(&state).with_margin(Duration::from_millis(20));
        assert_eq!(loaded.len(), 2);
        scan(&root, &mut loaded);
        assert_eq!(loaded.reads(), 0);

        // A path gone is dropped on save.
        fs::remove_file(root.join("b")).expect("rm");
        scan(&root, &mut loaded);
        loaded.save(&state).expect("save");
        assert_eq!(StatCache::load(&state).len(), 1);

        // Garbage, a wrong version or no file at all: an empty cache.
        fs::write(&state, b"{not json").expect("write");
        assert!(StatCache::load(&state).is_empty());
        fs::write(&state, br#"{"version":99,"entries":{}}"#).expect("write");
        assert!(StatCache::load(&state).is_empty());
        assert!(StatCache::load(&dir.path().join("missing")).is_empty());
    }

    #[test]
    fn an_unlistable_root_is_an_error() {
        let dir = tempfile::tempdir().expect("tempdir");
        let missing = dir.path().join("missing");
        assert!(WorkTree::scan(&missing, &opts(10), &mut StatCache::new()).is_err());
        write(dir.path(), "file", b"x");
        assert!(
            WorkTree::scan(&dir.path().join("file"), &opts(10), &mut StatCache::new()).is_err()
        );
    }

    #[test]
    fn a_swapped_directory_or_file_is_not_followed() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        write(root, "d/f", b"f\n");
        write(root, "other/f", b"o\n");
        let meta = fs::metadata(root.join("other")).expect("stat");
        let other = (meta.dev(), meta.ino());
        // A directory that is not the one listed is refused, and so is a symlink in its place.
        let err = OpenDir::open(&root.join("d"), Some(other))
            .err()
            .expect("refused");
        assert_eq!(err.to_string(), "replaced while being read");
        symlink("other", root.join("link")).expect("symlink");
        assert!(OpenDir::open(&root.join("link"), Some(other)).is_err());
        // A file that is not the one listed is not read.
        let d = OpenDir::open(&root.join("d"), None).expect("open d");
        let o = OpenDir::open(&root.join("other"), None).expect("open other");
        let f = OsStr::new("f");
        let listed = stat_of(&o.stat(f).expect("stat"));
        let err = read_capped(&d, f, &listed, 100).err().expect("refused");
        assert_eq!(err, "replaced while being read");
        assert!(read_capped(&o, f, &listed, 100).is_ok());
        // Nor is a symlink put where the file was listed.
        fs::remove_file(root.join("other/f")).expect("rm");
        symlink("../d/f", root.join("other/f")).expect("symlink");
        assert!(read_capped(&o, f, &listed, 100).is_err());
    }

    #[test]
    fn rescan_keeps_ignored_and_nested_repositories_as_a_scan_has_them() {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        write(root, "target/debug/x", b"x");
        write(root, "vendor/lib/.git/HEAD", b"ref\n");
        let ignored = |path: &[u8], is_dir: bool| is_dir && path == b"target";
        let options = Options {
            cap: 1 << 20,
            skip_top: SKIP,
            ignored: &ignored,
        };
        let mut cache = StatCache::new();
        let mut tree = WorkTree::scan(root, &options, &mut cache).expect("scan");
        write(root, "target/debug/y", b"y");
        write(root, "vendor/lib/.git/objects/ab", b"o");
        let paths = [
            "target/debug/y".to_string(),
            "vendor/lib/.git/objects/ab".to_string(),
        ];
        tree.rescan(root, &paths, &options, &mut cache);
        let y = &tree.entries["target/debug/y"];
        assert!(y.ignored && y.oid.is_none());
        assert_eq!(tree.entries["vendor/lib/.git"].kind, Kind::GitDir);
        assert!(!tree.entries.contains_key("vendor/lib/.git/objects"));
        assert_eq!(
            tree,
            WorkTree::scan(root, &options, &mut StatCache::new()).expect("scan")
        );
    }
}
