//! The walk: each child of a listed directory recorded as an entry, a regular file's hashes
//! taken from the stat cache or from one read. A full scan's directories come from the lister
//! threads ([`super::lister`]); a rescan lists its directories here, in batches on two threads.

use std::collections::BTreeMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

use rustix::fs::FileType;

use super::super::name;
use super::super::statcache::{Cached, Stat};
use super::fsat::{
    hash_capped, name_at, open_in_tree, other_kind, over_cap, reason, stat_of, DirRef, Lstat,
    OpenDir, Unreadable,
};
use super::lister::Child;
use super::{blob_oid, Entry, Kind, Options, StatCache};

/// A directory still to list: its path and the identity it had when its parent was listed.
pub(super) struct Pending {
    pub(super) rel: Vec<u8>,
    pub(super) id: (u64, u64),
    pub(super) ignored: bool,
    /// In a full scan, where its children's rows go ([`Bulk`]).
    pub(super) slot: usize,
}

/// One child as a full scan records it: its row (taken out when laid out) and, for a directory
/// walked, the [`Bulk`] slot of its own children.
type Row = (Option<(String, Entry)>, Option<usize>);

/// A slot being laid out: its number, its items in order (row, or that row's children), and
/// the next item.
type Open = (usize, Vec<(usize, bool)>, usize);

/// A full scan's entries as walked: per listed directory (slot 0: the root) its children's
/// rows, laid out in key order once at the end ([`Bulk::into_sorted`]), never sorted as a
/// whole nor inserted one by one.
#[derive(Debug)]
pub(super) struct Bulk {
    dirs: Vec<Vec<Row>>,
    /// Per slot, whether its directory is ignored (what its children inherit), once its row
    /// is recorded.
    ignored: Vec<bool>,
    /// The slot the rows recorded now go to.
    current: usize,
    /// Per slot, where its directory's own row is (its parent's slot, the row's index there),
    /// once recorded: filled in when its listing brings what its parent did not look at.
    row_of: Vec<Option<(usize, usize)>>,
}

impl Bulk {
    pub(super) fn new() -> Bulk {
        Bulk {
            dirs: vec![Vec::new()],
            ignored: vec![false],
            current: 0,
            row_of: vec![None],
        }
    }

    /// Makes room for `slot` (a lister numbers the directories as it meets them).
    fn ensure(&mut self, slot: usize) {
        if self.dirs.len() <= slot {
            self.dirs.resize_with(slot + 1, Vec::new);
            self.ignored.resize(slot + 1, false);
            self.row_of.resize(slot + 1, None);
        }
    }

    /// Every row, sorted by key: each directory's children in name order, a directory's own
    /// children where `name/` sorts among its siblings (so `a`, `a-b`, `a/x`, `a0`), depth
    /// first. The keys are checked to be in order at the end, and sorted if they are not (a
    /// name whose escaped form sorts otherwise than its bytes).
    pub(super) fn into_sorted(mut self) -> Vec<(String, Entry)> {
        let total = self.dirs.iter().map(Vec::len).sum();
        let mut out: Vec<(String, Entry)> = Vec::with_capacity(total);
        let first = self.order(0);
        let mut stack: Vec<Open> = vec![(0, first, 0)];
        while let Some((slot, order, next)) = stack.last_mut() {
            let Some(&(i, sub)) = order.get(*next) else {
                stack.pop();
                continue;
            };
            *next += 1;
            let slot = *slot;
            if sub {
                if let Some(child) = self.dirs[slot][i].1 {
                    let order = self.order(child);
                    stack.push((child, order, 0));
                }
            } else if let Some(row) = self.dirs[slot][i].0.take() {
                out.push(row);
            }
        }
        if !out.windows(2).all(|w| w[0].0 < w[1].0) {
            out.sort_by(|a, b| a.0.cmp(&b.0));
            // Each key once (as a map would have it: the last one recorded).
            out.reverse();
            out.dedup_by(|a, b| a.0 == b.0);
            out.reverse();
        }
        out
    }

    /// The items of a slot in key order: each row by its name, each walked directory's
    /// children as `name/`.
    fn order(&self, slot: usize) -> Vec<(usize, bool)> {
        let rows = &self.dirs[slot];
        let mut items = Vec::with_capacity(rows.len() * 2);
        for (i, (_, sub)) in rows.iter().enumerate() {
            items.push((i, false));
            if sub.is_some() {
                items.push((i, true));
            }
        }
        if items.len() == rows.len() {
            // No directory among them: the rows are in name order as listed (and whatever
            // is not is sorted at the end).
            return items;
        }
        let name = |i: usize| -> &[u8] {
            rows[i].0.as_ref().map_or(&[][..], |(k, _)| {
                let k = k.as_bytes();
                k.iter()
                    .rposition(|&b| b == b'/')
                    .map_or(k, |at| &k[at + 1..])
            })
        };
        let tail = |sub: bool| sub.then_some(&b'/');
        items.sort_by(|a, b| {
            name(a.0)
                .iter()
                .chain(tail(a.1))
                .cmp(name(b.0).iter().chain(tail(b.1)))
        });
        items
    }
}

/// How many directories are opened and listed at once in a walk: bounds the descriptors held.
pub(super) const BATCH: usize = 128;

/// A directory opened and listed, or why not.
pub(super) type Listed = io::Result<(OpenDir, Vec<(OsString, io::Result<Lstat>)>)>;

pub(super) fn list_one(root: &Path, dir: &Pending) -> Listed {
    let mut open = open_in_tree(root, &dir.rel, Some(dir.id))?;
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
    /// In a full scan, the entries as walked, laid out in order once at the end.
    pub(super) bulk: Option<Bulk>,
    /// In a full scan, the directories that could not be listed (path, why).
    pub(super) unlisted: Vec<(String, String)>,
    /// In a rescan, the keys recorded anew (for the kept comparison).
    pub(super) fresh: Vec<String>,
    /// In a full scan, the files to read (not in the cache), by directory: read and hashed
    /// on two threads once the listing is recorded ([`Walker::read_deferred`]).
    pub(super) deferred: Option<Vec<Deferred>>,
}

/// A full scan's files to read in one listed directory.
pub(super) struct Deferred {
    /// The directory: its path and the identity it was listed with.
    rel: Vec<u8>,
    id: (u64, u64),
    files: Vec<DeferredFile>,
}

/// One file of a [`Deferred`] job.
struct DeferredFile {
    name: OsString,
    /// Its `lstat` as listed.
    listed: Stat,
    /// Where its row is ([`Bulk`] slot, index).
    at: (usize, usize),
    /// Its baseline blob ([`super::Options::known`]).
    expect: Option<gix::ObjectId>,
}

/// What one deferred file's read gave: its hashes and the cache's record, or why not.
type ReadOutcome = Result<(u64, Cached), Unreadable>;

/// Files per deferred job at most: a folder of thousands of files is shared by both threads.
const DEFERRED_CHUNK: usize = 64;

impl Walker<'_, '_> {
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
                        self.visit_listing(
                            &dir.rel,
                            &open,
                            listing,
                            dir.ignored,
                            dir.slot,
                            &mut stack,
                        );
                    }
                    Err(e) => {
                        let key = name::encode(&dir.rel);
                        if self.bulk.is_some() {
                            self.unlisted.push((key, reason(&e)));
                        } else if let Some(entry) = self.entries.get_mut(&key) {
                            entry.unreadable = Some(reason(&e));
                            self.fresh.push(key);
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
        slot: usize,
        stack: &mut Vec<Pending>,
    ) {
        if let Some(bulk) = &mut self.bulk {
            bulk.current = slot;
            bulk.dirs[slot].reserve_exact(listing.len());
        }
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
            if let Some(next) =
                self.visit(rel, &DirRef::Open(dir), &base, meta, None, None, ignored)
            {
                stack.push(next);
            }
        }
    }

    /// Records a directory as a lister listed it ([`super::lister`]), its children in name
    /// order, into its slot of the full scan's layout.
    ///
    /// `own` is the directory's own `lstat` when its parent did not take it: its row (recorded
    /// with its parent) gets its mode and identity now.
    pub(super) fn record_listed(
        &mut self,
        parent: &[u8],
        id: (u64, u64),
        own: Option<Lstat>,
        slot: usize,
        names: &[u8],
        children: Vec<Child>,
    ) {
        let mut ignored = false;
        if let Some(bulk) = &mut self.bulk {
            bulk.ensure(slot);
            if let (Some(own), Some((at, i))) = (own, bulk.row_of[slot]) {
                if let Some((_, entry)) = &mut bulk.dirs[at][i].0 {
                    entry.mode = own.mode;
                    entry.dev = own.dev;
                    entry.ino = own.ino;
                }
            }
            bulk.current = slot;
            bulk.dirs[slot].reserve_exact(children.len());
            ignored = bulk.ignored[slot];
        }
        let root = self.root;
        let dir = DirRef::listed(root, parent, id);
        for child in children {
            let name = name_at(names, child.name);
            let mut rel = Vec::with_capacity(parent.len() + 1 + name.len());
            if !parent.is_empty() {
                rel.extend_from_slice(parent);
                rel.push(b'/');
            }
            rel.extend_from_slice(name.as_bytes());
            // A directory to walk comes with its own slot: nothing to walk from here.
            let _ = self.visit(rel, &dir, name, child.meta, child.link, child.sub, ignored);
        }
    }

    /// Records the entry at `rel` (named `base` in `dir`) from its `lstat`; returns the
    /// directory to walk next, if it is one. From a lister: `link` is a symlink's target as it
    /// read it, and `sub` a directory's slot (its listing comes on its own, nothing is returned).
    #[allow(
        clippy::too_many_arguments,
        reason = "one child as listed: its name, lstat, link target and slot, and its parent"
    )]
    pub(super) fn visit(
        &mut self,
        rel: Vec<u8>,
        dir: &DirRef<'_>,
        base: &OsStr,
        meta: io::Result<Lstat>,
        link: Option<io::Result<Vec<u8>>>,
        sub: Option<usize>,
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
            if let (Some(s), Some(bulk)) = (sub, &mut self.bulk) {
                bulk.ensure(s);
                bulk.ignored[s] = ignored;
                self.insert_row(key, entry, Some(s));
                return None;
            }
            let slot = match &mut self.bulk {
                Some(bulk) => {
                    bulk.dirs.push(Vec::new());
                    bulk.dirs.len() - 1
                }
                None => 0,
            };
            let next = Pending {
                rel,
                id: (meta.dev, meta.ino),
                ignored,
                slot,
            };
            self.insert_row(key, entry, Some(slot));
            return Some(next);
        } else if is_file {
            entry.kind = Kind::File {
                exec: meta.mode & 0o100 != 0,
            };
            if !ignored {
                self.hash(&rel, dir, base, &meta, &mut entry);
            }
        } else if file_type == FileType::Symlink {
            let target = match link {
                Some(read) => read.map_err(Unreadable::io),
                None => dir
                    .get()
                    .and_then(|d| d.read_link(base).map_err(Unreadable::io)),
            };
            match target {
                Ok(target) => {
                    match blob_oid(self.opts.hash, &target) {
                        Ok(oid) => entry.oid = Some(oid),
                        Err(why) => entry.unreadable = Some(format!("git blob id: {why}")),
                    }
                    entry.kind = Kind::Symlink { target };
                }
                Err(why) => {
                    entry.kind = Kind::Symlink { target: Vec::new() };
                    entry.unreadable = Some(why.to_string());
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
        self.insert_row(key, entry, None);
    }

    /// Records an entry; in a full scan, `sub` is the slot of a walked directory's children.
    fn insert_row(&mut self, key: String, entry: Entry, sub: Option<usize>) {
        match &mut self.bulk {
            Some(bulk) => {
                let at = bulk.current;
                if let Some(s) = sub {
                    bulk.ensure(s);
                    bulk.row_of[s] = Some((at, bulk.dirs[at].len()));
                }
                bulk.dirs[at].push((Some((key, entry)), sub));
            }
            None => {
                self.fresh.push(key.clone());
                self.entries.insert(key, entry);
            }
        }
    }

    /// Fills in a regular file's hashes: from the cache when it can be trusted, else from one
    /// read of at most the cap.
    pub(super) fn hash(
        &mut self,
        rel: &[u8],
        dir: &DirRef<'_>,
        base: &OsStr,
        meta: &Lstat,
        entry: &mut Entry,
    ) {
        let listed = stat_of(meta);
        let expect = (self.opts.known)(rel);
        // A hit without a SHA-256 was the baseline's blob when read: believed while it still is.
        if let Some(hit) = self.cache.take(rel, &listed).filter(|hit| {
            hit.oid.kind() == self.opts.hash && (hit.sha256.is_some() || expect == Some(hit.oid))
        }) {
            entry.oid = Some(hit.oid);
            entry.sha256 = hit.sha256;
            return;
        }
        let cap = self.opts.cap;
        if listed.size > cap {
            entry.unreadable = Some(over_cap(cap).to_string());
            return;
        }
        self.cache.count_read();
        if let (
            Some(deferred),
            Some(bulk),
            DirRef::Listed {
                rel: parent, id, ..
            },
        ) = (&mut self.deferred, &self.bulk, dir)
        {
            // Its row is the next one of the current slot (the caller records it next).
            let at = (bulk.current, bulk.dirs[bulk.current].len());
            let same = deferred
                .last()
                .is_some_and(|d| d.rel == *parent && d.id == *id && d.files.len() < DEFERRED_CHUNK);
            if !same {
                deferred.push(Deferred {
                    rel: parent.to_vec(),
                    id: *id,
                    files: Vec::new(),
                });
            }
            if let Some(d) = deferred.last_mut() {
                d.files.push(DeferredFile {
                    name: base.to_os_string(),
                    listed,
                    at,
                    expect,
                });
            }
            return;
        }
        let kind = self.opts.hash;
        let read = match dir
            .get()
            .and_then(|d| hash_capped(d, base, &listed, cap, kind, expect))
        {
            Ok(read) => read,
            Err(why) => {
                entry.unreadable = Some(why.to_string());
                return;
            }
        };
        entry.size = read.size;
        entry.oid = Some(read.oid);
        entry.sha256 = read.sha256;
        self.cache.insert(
            rel,
            Cached {
                stat: read.stat,
                at: read.at,
                oid: read.oid,
                sha256: read.sha256,
            },
        );
    }

    /// Reads and hashes the files a full scan deferred, on two threads (the second one when
    /// there is enough to share), and fills in their rows and the cache.
    pub(super) fn read_deferred(&mut self) {
        let Some(jobs) = self.deferred.take() else {
            return;
        };
        if jobs.is_empty() {
            return;
        }
        let (root, hash, cap) = (self.root, self.opts.hash, self.opts.cap);
        let next = std::sync::atomic::AtomicUsize::new(0);
        let work = || {
            let mut out: Vec<(usize, Vec<ReadOutcome>)> = Vec::new();
            loop {
                let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                let Some(job) = jobs.get(i) else {
                    return out;
                };
                out.push((i, read_job(root, job, hash, cap)));
            }
        };
        let files: usize = jobs.iter().map(|j| j.files.len()).sum();
        let results = std::thread::scope(|s| {
            let other = (files >= 16)
                .then(|| {
                    std::thread::Builder::new()
                        .name("referee-hash".into())
                        .spawn_scoped(s, work)
                        .ok()
                })
                .flatten();
            let mut results = work();
            // A thread that died left its jobs unread: those are read here.
            if let Some(Ok(more)) = other.map(|h| h.join()) {
                results.extend(more);
            }
            results
        });
        let mut outcomes: Vec<Option<Vec<ReadOutcome>>> = jobs.iter().map(|_| None).collect();
        for (i, read) in results {
            outcomes[i] = Some(read);
        }
        for (job, read) in jobs.iter().zip(outcomes) {
            // A job the second thread took and did not finish (it died) is read here.
            let read = read.unwrap_or_else(|| read_job(root, job, hash, cap));
            for (file, outcome) in job.files.iter().zip(read) {
                self.fill(&job.rel, &file.name, file.at, outcome);
            }
        }
    }

    /// A deferred file's row filled in with what its read gave, and the cache told.
    fn fill(&mut self, parent: &[u8], name: &OsStr, at: (usize, usize), outcome: ReadOutcome) {
        let Some(bulk) = &mut self.bulk else {
            return;
        };
        let Some((_, entry)) = bulk
            .dirs
            .get_mut(at.0)
            .and_then(|rows| rows.get_mut(at.1))
            .and_then(|row| row.0.as_mut())
        else {
            return;
        };
        match outcome {
            Ok((size, cached)) => {
                entry.size = size;
                entry.oid = Some(cached.oid);
                entry.sha256 = cached.sha256;
                let mut rel = Vec::with_capacity(parent.len() + 1 + name.len());
                if !parent.is_empty() {
                    rel.extend_from_slice(parent);
                    rel.push(b'/');
                }
                rel.extend_from_slice(name.as_bytes());
                self.cache.insert(&rel, cached);
            }
            Err(why) => entry.unreadable = Some(why.to_string()),
        }
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

/// Reads and hashes the files of one deferred job: its directory opened as a walk opens a
/// listed one (checked to be the directory listed), each file read as [`Walker::hash`] reads
/// it (checked to be the file listed, at most `cap` bytes).
fn read_job(root: &Path, job: &Deferred, hash: gix::hash::Kind, cap: u64) -> Vec<ReadOutcome> {
    let dir = DirRef::listed(root, &job.rel, job.id);
    job.files
        .iter()
        .map(|f| {
            let read = dir
                .get()
                .and_then(|d| hash_capped(d, &f.name, &f.listed, cap, hash, f.expect))?;
            Ok((
                read.size,
                Cached {
                    stat: read.stat,
                    at: read.at,
                    oid: read.oid,
                    sha256: read.sha256,
                },
            ))
        })
        .collect()
}
