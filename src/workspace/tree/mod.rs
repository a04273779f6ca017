//! The work tree as the file system has it ("the work tree is read from the file system
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

mod fsat;
mod lister;
mod walk;

use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fmt;
use std::io;
use std::os::unix::ffi::OsStringExt;
use std::path::Path;

use gix::ObjectId;

pub use super::statcache::StatCache;
use super::{name, Compared};
use fsat::DirRef;
pub use fsat::Unreadable;
pub(crate) use fsat::{
    is_long, look_in_tree, names_in_tree, read_in_tree, size_in_tree, write_in_tree, Looked, Put,
};
pub(crate) use lister::Lister;
use walk::{Bulk, Walker};

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
    /// [`Entry::sha256_hex`]); none for a file whose bytes are its baseline blob
    /// ([`Options::known`]): nothing asks an unchanged file's SHA-256.
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
        self.sha256.as_ref().map(|b| crate::protocol::hex(b))
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
    /// The blob id a path (raw bytes, relative) has in the baseline when it is a regular file
    /// there: a file whose bytes hash to it is unchanged, and its SHA-256 is not computed
    /// ([`Entry::sha256`] none). Only asked of files the scan reads.
    pub known: &'a dyn Fn(&[u8]) -> Option<ObjectId>,
    /// The kind of git blob id a file's bytes get (the baseline repository's: SHA-1, or SHA-256
    /// for a repository made with `--object-format=sha256`).
    pub hash: gix::hash::Kind,
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
#[derive(Debug, Clone, Default)]
pub struct WorkTree {
    /// Keyed by [`name::encode`]d relative paths, `/`-separated.
    pub entries: BTreeMap<String, Entry>,
    /// The keys [`rescan`](Self::rescan)s added, removed or read again since the kept
    /// comparison was brought up to date; `None`: every key (a full scan).
    pub(super) touched: Option<BTreeSet<String>>,
    /// The comparison with the baseline as last made, kept for a live referee: the next
    /// judgment compares again only the `touched` keys (see [`super::Compared`]).
    pub(super) compared: Option<Box<Compared>>,
}

/// Two trees are equal when their entries are: what was kept between judgments is not the tree.
impl PartialEq for WorkTree {
    fn eq(&self, other: &WorkTree) -> bool {
        self.entries == other.entries
    }
}

impl Eq for WorkTree {}

impl WorkTree {
    /// Walks the whole tree under `root`. An `Err` only when `root` itself cannot be listed;
    /// anything below that cannot be read is an entry with its reason. The cache keeps only the
    /// files of this tree afterwards: use one cache per root.
    pub fn scan(root: &Path, opts: &Options<'_>, cache: &mut StatCache) -> io::Result<WorkTree> {
        WorkTree::scan_listed(Lister::start(root, opts.skip_top)?, opts, cache)
    }

    /// [`scan`](Self::scan) of what `lister` lists (started earlier, with the same skipped
    /// top-level names): each directory recorded as it arrives, while the listers go on.
    pub(crate) fn scan_listed(
        lister: Lister,
        opts: &Options<'_>,
        cache: &mut StatCache,
    ) -> io::Result<WorkTree> {
        WorkTree::scan_listed_sorted(lister, opts, cache).map(WorkTree::of_sorted)
    }

    /// A tree of a full scan's entries.
    fn of_sorted(entries: Vec<(String, Entry)>) -> WorkTree {
        WorkTree {
            entries: entries.into_iter().collect(),
            ..WorkTree::default()
        }
    }

    /// [`scan_listed`](Self::scan_listed)'s entries, sorted by key (each key once), without
    /// building the map: for a judgment that only reads them once.
    pub(crate) fn scan_listed_sorted(
        lister: Lister,
        opts: &Options<'_>,
        cache: &mut StatCache,
    ) -> io::Result<Vec<(String, Entry)>> {
        let (root, id) = (lister.root.clone(), lister.id);
        WorkTree::record_sorted(&root, id, std::iter::from_fn(|| lister.recv()), opts, cache)
    }

    /// [`record_sorted`](Self::record_sorted) as a tree.
    #[cfg(test)]
    fn record_all(
        root: &Path,
        id: (u64, u64),
        listings: impl Iterator<Item = lister::Listed>,
        opts: &Options<'_>,
        cache: &mut StatCache,
    ) -> io::Result<WorkTree> {
        WorkTree::record_sorted(root, id, listings, opts, cache).map(WorkTree::of_sorted)
    }

    /// A full scan's entries, sorted, from the listings of the tree at `root` (whose identity
    /// is `id`), in the order a lister sends them (a directory before its subdirectories).
    fn record_sorted(
        root: &Path,
        id: (u64, u64),
        listings: impl Iterator<Item = lister::Listed>,
        opts: &Options<'_>,
        cache: &mut StatCache,
    ) -> io::Result<Vec<(String, Entry)>> {
        // A full scan lays its rows out in `bulk`: no map is filled.
        let mut unused = BTreeMap::new();
        let mut walker = Walker {
            root,
            opts,
            cache,
            entries: &mut unused,
            bulk: Some(Bulk::new()),
            unlisted: Vec::new(),
            fresh: Vec::new(),
            deferred: Some(Vec::new()),
        };
        for listed in listings {
            match listed.children {
                Ok(children) => {
                    if listed.slot == 0 {
                        // Afterwards the cache holds exactly the files of this tree: what the
                        // walk did not see is dropped at its end.
                        walker.cache.begin_scan(id);
                    }
                    walker.record_listed(
                        &listed.rel,
                        listed.id,
                        listed.own,
                        listed.slot,
                        &listed.names,
                        children,
                    );
                }
                // The root itself cannot be listed (it comes first, alone).
                Err(e) if listed.slot == 0 => return Err(e),
                Err(e) => walker
                    .unlisted
                    .push((name::encode(&listed.rel), fsat::reason(&e))),
            }
        }
        // The files not in the cache, read on two threads now that every one is known.
        walker.read_deferred();
        walker.cache.end_scan();
        // Built at once from the walk, laid out in order (no sort), not an insertion per path.
        let (bulk, unlisted) = (walker.bulk.take(), std::mem::take(&mut walker.unlisted));
        let mut entries = bulk.map(Bulk::into_sorted).unwrap_or_default();
        for (key, why) in unlisted {
            if let Ok(i) = entries.binary_search_by(|(k, _)| k.as_str().cmp(&key)) {
                entries[i].1.unreadable = Some(why);
            }
        }
        Ok(entries)
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
            // A folder's own `.gitignore` may make all of it ignored (a tool's cache, see
            // `selfignore`): the folder is looked at again, not only the file.
            let path = match path.strip_suffix("/.gitignore") {
                Some(folder) if !folder.is_empty() => folder,
                _ => path.as_str(),
            };
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
            fresh: Vec::new(),
            deferred: None,
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
                    fsat::open_in_tree(root, &parent, parent_id)
                } else {
                    Err(io::Error::from(io::ErrorKind::NotFound))
                };
                match opened {
                    Ok(dir) => {
                        let base = OsString::from_vec(base);
                        let meta = dir.stat(&base);
                        let at = DirRef::Open(&dir);
                        if let Some(next) =
                            walker.visit(target, &at, &base, meta, None, None, parent_ignored)
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
        let fresh = std::mem::take(&mut walker.fresh);
        for key in &removed {
            if !walker.entries.get(key).is_some_and(Entry::is_hashed_file) {
                walker.cache.remove(&name::decode(key));
            }
        }
        if let Some(touched) = &mut self.touched {
            touched.extend(removed);
            touched.extend(fresh);
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

/// Git's blob id of `bytes` of the kind `hash` (SHA-1 with git's collision detection, or
/// SHA-256). The error is gix's own; its evidence is "git blob id: …".
pub(super) fn blob_oid(hash: gix::hash::Kind, bytes: &[u8]) -> Result<ObjectId, gix::Error> {
    gix::objs::compute_hash(hash, gix::objs::Kind::Blob, bytes)
}

#[cfg(test)]
mod tests;
