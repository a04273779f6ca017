//! The walk: directories listed in batches on two threads, each child recorded as an entry, a
//! regular file's hashes taken from the stat cache or from one read.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use rustix::fs::FileType;
use sha2::{Digest, Sha256};

use super::super::name;
use super::super::statcache::Cached;
use super::fsat::{other_kind, over_cap, read_capped, reason, stat_of, Lstat, OpenDir};
use super::{blob_oid, Entry, Kind, Options, StatCache};

/// A directory still to list: its path and the identity it had when its parent was listed.
pub(super) struct Pending {
    pub(super) rel: Vec<u8>,
    pub(super) id: (u64, u64),
    pub(super) ignored: bool,
}

/// How many directories are opened and listed at once in a walk: bounds the descriptors held.
pub(super) const BATCH: usize = 128;

/// A directory opened and listed, or why not.
pub(super) type Listed = io::Result<(OpenDir, Vec<(OsString, io::Result<Lstat>)>)>;

pub(super) fn abs_of(root: &Path, rel: &[u8]) -> PathBuf {
    if rel.is_empty() {
        root.to_path_buf()
    } else {
        root.join(OsStr::from_bytes(rel))
    }
}

pub(super) fn list_one(root: &Path, dir: &Pending) -> Listed {
    let mut open = OpenDir::open(&abs_of(root, &dir.rel), Some(dir.id))?;
    let listing = open.list()?;
    Ok((open, listing))
}

/// Opens and lists `batch` (in its order), half of it on a second thread when there is enough
/// to share; without a second thread, all of it here.
pub(super) fn list_all(root: &Path, batch: &[Pending]) -> Vec<Listed> {
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

pub(super) struct Walker<'w, 'o> {
    pub(super) root: &'w Path,
    pub(super) opts: &'w Options<'o>,
    pub(super) cache: &'w mut StatCache,
    pub(super) entries: &'w mut BTreeMap<String, Entry>,
    /// In a full scan, the entries as walked, laid out as a map once at the end.
    pub(super) bulk: Option<Vec<(String, Entry)>>,
    /// In a full scan, the directories that could not be listed (path, why).
    pub(super) unlisted: Vec<(String, String)>,
}

impl Walker<'_, '_> {
    pub(super) fn abs(&self, rel: &[u8]) -> PathBuf {
        abs_of(self.root, rel)
    }

    /// Lists the pending directories, depth first, with an explicit stack (any depth).
    ///
    /// Up to [`BATCH`] directories at a time are opened and listed (`getdents` and an `fstatat`
    /// per name, most of a walk's time) on two threads, as git's `core.preloadIndex` takes its
    /// `lstat`s; what is seen is then recorded here, in one thread. Each directory is still
    /// opened without following a link and checked to be the one listed.
    pub(super) fn run(&mut self, mut stack: Vec<Pending>) {
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

    pub(super) fn visit_listing(
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
    pub(super) fn visit(
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

    pub(super) fn insert(&mut self, key: String, entry: Entry) {
        match &mut self.bulk {
            Some(bulk) => bulk.push((key, entry)),
            None => {
                self.entries.insert(key, entry);
            }
        }
    }

    /// Fills in a regular file's hashes: from the cache when it can be trusted, else from one
    /// read of at most the cap.
    pub(super) fn hash(
        &mut self,
        rel: &[u8],
        dir: &OpenDir,
        base: &OsStr,
        meta: &Lstat,
        entry: &mut Entry,
    ) {
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
    pub(super) fn remove_subtree(&mut self, target: &[u8], removed: &mut Vec<String>) {
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
