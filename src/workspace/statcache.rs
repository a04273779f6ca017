//! The referee's own stat cache of a work tree (never git's index or stat cache): a
//! regular file's git blob id and SHA-256, trusted again only while its `lstat` is unchanged and
//! it was last changed clearly before it was read.
//!
//! Kept in the state directory as one compact table laid out like git's index, so loading it is
//! one read, not a deserialisation into a map: a header, then one fixed-size record per file
//! sorted by the path's bytes, then the paths. A look-up is a binary search over the records
//! (paths compared as bytes where they lie); what a walk learns goes into a small overlay, and
//! the table is written again (atomically) only when something changed.

use std::collections::BTreeMap;
use std::fs;
use std::io;
use std::path::Path;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use gix::ObjectId;

/// A wall-clock moment or file time: seconds and nanoseconds since the epoch.
pub(super) type Stamp = (i64, i64);

pub(super) fn now() -> Stamp {
    match SystemTime::now().duration_since(UNIX_EPOCH) {
        Ok(d) => (
            i64::try_from(d.as_secs()).unwrap_or(i64::MAX),
            i64::from(d.subsec_nanos()),
        ),
        // A clock before 1970: nothing recorded now is ever trusted.
        Err(_) => (i64::MIN, 0),
    }
}

fn nanos(stamp: Stamp) -> i128 {
    i128::from(stamp.0) * 1_000_000_000 + i128::from(stamp.1)
}

/// A stamp as nanoseconds in an `i64` (1677 to 2262), as the table keeps it; `None` outside.
fn to_ns(stamp: Stamp) -> Option<i64> {
    i64::try_from(nanos(stamp)).ok()
}

fn from_ns(ns: i64) -> Stamp {
    (ns.div_euclid(1_000_000_000), ns.rem_euclid(1_000_000_000))
}

/// What the cache compares: everything a change to a file's bytes moves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Stat {
    pub dev: u64,
    pub ino: u64,
    pub mode: u32,
    pub size: u64,
    pub mtime: Stamp,
    pub ctime: Stamp,
}

/// One file's cached hashes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Cached {
    pub stat: Stat,
    /// The wall clock just before the read.
    pub at: Stamp,
    pub oid: ObjectId,
    /// The SHA-256 of the bytes read; none when they were the baseline's blob (nothing asks an
    /// unchanged file's SHA-256, and a first scan of a large tree spends a fifth of its time on
    /// it): a hit without it is believed only for a path whose baseline blob it still is.
    pub sha256: Option<[u8; 32]>,
}

/// The file's layout (all integers little-endian):
///
/// - the header, [`HEADER`] bytes: the magic `REFEREE-STATCACHE-6\n` (20 bytes), 4 zero bytes,
///   the work tree root's device and inode (u64 each: a cache of another tree is not used),
///   the number of records and the length of the path heap (u64 each);
/// - the records, [`RECORD`] bytes each, sorted by path bytes, each path once: the path's
///   offset in the heap and length (u32 each), `dev`, `ino`, `size` (u64), `mtime`, `ctime` and
///   the time of the read (i64 nanoseconds since the epoch), `mode` (u32), 4 zero bytes, the
///   blob id in 32 bytes (a SHA-1 id in the first 20, the rest zero), the 32 bytes of the
///   SHA-256 (all zero: not computed, see [`Cached::sha256`]), the blob id's kind (1: SHA-1, 2: SHA-256, as a SHA-256 repository names its
///   blobs) in one byte and 3 zero bytes;
/// - the heap: the paths' bytes;
/// - the CRC-32 (IEEE) of everything before it (u32), and nothing after.
///
/// A file whose checksum does not match, that is shorter or longer than its header says, a
/// path outside the heap, records out of order or a header for another root: the whole cache
/// is dropped (it is only a shortcut; every file is read again).
const MAGIC: &[u8; 20] = b"REFEREE-STATCACHE-6\n";
const CHECKSUM: usize = 4;
const HEADER: usize = 56;
const RECORD: usize = 132;

fn u32_at(b: &[u8], at: usize) -> u32 {
    let mut a = [0; 4];
    a.copy_from_slice(&b[at..at + 4]);
    u32::from_le_bytes(a)
}

fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

fn i64_at(b: &[u8], at: usize) -> i64 {
    let mut a = [0; 8];
    a.copy_from_slice(&b[at..at + 8]);
    i64::from_le_bytes(a)
}

/// The loaded table: the file's bytes as read, checked once, never turned into a map.
#[derive(Debug, Default)]
struct Table {
    bytes: Vec<u8>,
    count: usize,
    heap: usize,
}

impl Table {
    /// Checks `bytes` as a whole; `None` if anything is off (see [`MAGIC`]).
    fn parse(bytes: Vec<u8>) -> Option<(Table, (u64, u64))> {
        if bytes.len() < HEADER + CHECKSUM || &bytes[..20] != MAGIC || bytes[20..24] != [0; 4] {
            return None;
        }
        let body = bytes.len() - CHECKSUM;
        if crc32fast::hash(&bytes[..body]) != u32_at(&bytes, body) {
            return None;
        }
        let root = (u64_at(&bytes, 24), u64_at(&bytes, 32));
        let count = usize::try_from(u64_at(&bytes, 40)).ok()?;
        let heap_len = usize::try_from(u64_at(&bytes, 48)).ok()?;
        let heap = count.checked_mul(RECORD)?.checked_add(HEADER)?;
        if heap.checked_add(heap_len)? != body {
            return None;
        }
        let table = Table { bytes, count, heap };
        let mut previous: Option<&[u8]> = None;
        for i in 0..count {
            let r = HEADER + i * RECORD;
            let off = usize::try_from(u32_at(&table.bytes, r)).ok()?;
            let len = usize::try_from(u32_at(&table.bytes, r + 4)).ok()?;
            let pads = table.bytes[r + 60..r + 64] == [0; 4]
                && table.bytes[r + 129..r + 132] == [0; 3]
                && match table.bytes[r + 128] {
                    1 => table.bytes[r + 84..r + 96] == [0; 12],
                    2 => true,
                    _ => false,
                };
            if off.checked_add(len)? > heap_len || !pads {
                return None;
            }
            let path = &table.bytes[heap + off..heap + off + len];
            if previous.is_some_and(|p| p >= path) {
                return None;
            }
            previous = Some(path);
        }
        Some((table, root))
    }

    fn path(&self, i: usize) -> &[u8] {
        let r = HEADER + i * RECORD;
        let off = u32_at(&self.bytes, r) as usize;
        let len = u32_at(&self.bytes, r + 4) as usize;
        &self.bytes[self.heap + off..self.heap + off + len]
    }

    fn record(&self, i: usize) -> Cached {
        let b = &self.bytes[HEADER + i * RECORD..HEADER + (i + 1) * RECORD];
        let mut sha256 = [0; 32];
        sha256.copy_from_slice(&b[96..128]);
        let sha256 = (sha256 != [0; 32]).then_some(sha256);
        // The kind byte was checked when the table was parsed.
        let oid = if b[128] == 2 {
            ObjectId::from_bytes_or_panic(&b[64..96])
        } else {
            ObjectId::from_bytes_or_panic(&b[64..84])
        };
        Cached {
            stat: Stat {
                dev: u64_at(b, 8),
                ino: u64_at(b, 16),
                size: u64_at(b, 24),
                mtime: from_ns(i64_at(b, 32)),
                ctime: from_ns(i64_at(b, 40)),
                mode: u32_at(b, 56),
            },
            at: from_ns(i64_at(b, 48)),
            oid,
            sha256,
        }
    }

    /// The record of `path`: `hint` when it is that one (a walk in path order meets the
    /// records one after another), else by binary search.
    fn find_near(&self, path: &[u8], hint: usize) -> Option<usize> {
        if hint < self.count && self.path(hint) == path {
            return Some(hint);
        }
        self.find(path)
    }

    /// The record of `path`, by binary search.
    fn find(&self, path: &[u8]) -> Option<usize> {
        let (mut lo, mut hi) = (0, self.count);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            match self.path(mid).cmp(path) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Some(mid),
            }
        }
        None
    }
}

/// The referee's own stat cache: a file's hashes, trusted again only while its `lstat` is
/// unchanged and it was last changed clearly before it was read.
///
/// The second condition is git's racy-timestamp rule: a file rewritten within the timestamp
/// tick of the read would otherwise keep its stat and a stale hash. `mtime` and `ctime` must
/// both be older than the read by more than the margin (default 2 s: FAT's timestamp
/// granularity, and the kernel's coarse clock lagging the wall clock). `ctime` cannot be set by
/// a user, so an edit with the size and `mtime` put back (`touch -d`) is still read again.
/// The margin assumes the file system's clock is the referee's (not a skewed NFS server).
#[derive(Debug)]
pub struct StatCache {
    table: Table,
    /// Per record of the table: still part of the cache (not dropped by a walk).
    live: Vec<bool>,
    /// During a full walk, per record of the table: seen (trusted) by it.
    seen: Option<Vec<bool>>,
    /// What was learnt or dropped since the table was loaded, by path bytes (`None`: dropped).
    overlay: BTreeMap<Vec<u8>, Option<Cached>>,
    /// The root (device, inode) the cache is of; `None` until known.
    root: Option<(u64, u64)>,
    margin: Duration,
    reads: u64,
    /// Something changed since it was loaded or saved.
    dirty: bool,
    /// The record after the last one found: where the next look-up of a walk starts.
    next: usize,
}

impl Default for StatCache {
    fn default() -> Self {
        StatCache {
            table: Table::default(),
            live: Vec::new(),
            seen: None,
            overlay: BTreeMap::new(),
            root: None,
            margin: Duration::from_secs(2),
            reads: 0,
            dirty: false,
            next: 0,
        }
    }
}

impl StatCache {
    pub fn new() -> StatCache {
        StatCache::default()
    }

    /// The same cache with another racy margin (tests, or a file system known to be precise).
    #[must_use]
    pub fn with_margin(mut self, margin: Duration) -> StatCache {
        self.margin = margin;
        self
    }

    /// The cache saved at `path`: one read, checked as a whole; an empty cache if there is none,
    /// it cannot be read, or anything in it is off (a cache is only ever a shortcut).
    pub fn load(path: &Path) -> StatCache {
        let mut cache = StatCache::default();
        match fs::symlink_metadata(path) {
            Ok(meta) if meta.is_file() => {}
            _ => return cache,
        }
        let Ok(bytes) = fs::read(path) else {
            return cache;
        };
        if let Some((table, root)) = Table::parse(bytes) {
            cache.live = vec![true; table.count];
            cache.table = table;
            cache.root = Some(root);
        }
        cache
    }

    /// Writes the cache to `path` atomically (a temp file in the same directory, renamed), when
    /// something changed since it was loaded or last saved; nothing otherwise.
    pub fn save(&mut self, path: &Path) -> io::Result<()> {
        if !self.dirty && path.is_file() {
            return Ok(());
        }
        let _span = tracing::debug_span!("stat_cache_write", files = self.table.count).entered();
        let out = self.encode();
        let dir = match path.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        let mut tmp = tempfile::NamedTempFile::new_in(dir)?;
        io::Write::write_all(&mut tmp, &out)?;
        // No fsync: a cache lost to a crash costs one read of each file, and a torn one is
        // dropped whole; a judgment must not wait on the disk for it.
        tmp.persist(path).map_err(|e| e.error)?;
        self.dirty = false;
        Ok(())
    }

    /// The table as the file holds it: the live records and the overlay, merged in path order.
    fn encode(&self) -> Vec<u8> {
        let mut rows: Vec<(&[u8], Cached)> = Vec::with_capacity(self.len());
        let mut over = self.overlay.iter().peekable();
        for i in 0..self.table.count {
            let p = self.table.path(i);
            while let Some((q, c)) = over.peek() {
                if q.as_slice() >= p {
                    break;
                }
                if let Some(c) = c {
                    rows.push((q.as_slice(), *c));
                }
                over.next();
            }
            if over.peek().is_some_and(|(q, _)| q.as_slice() == p) {
                continue;
            }
            if self.live[i] {
                rows.push((p, self.table.record(i)));
            }
        }
        for (q, c) in over {
            if let Some(c) = c {
                rows.push((q.as_slice(), *c));
            }
        }
        let heap_len: usize = rows.iter().map(|(p, _)| p.len()).sum();
        let mut out = Vec::with_capacity(HEADER + rows.len() * RECORD + heap_len + CHECKSUM);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&[0; 4]);
        let (dev, ino) = self.root.unwrap_or((0, 0));
        for v in [dev, ino, rows.len() as u64, heap_len as u64] {
            out.extend_from_slice(&v.to_le_bytes());
        }
        let mut off = 0usize;
        for (p, c) in &rows {
            out.extend_from_slice(&(off as u32).to_le_bytes());
            out.extend_from_slice(&(p.len() as u32).to_le_bytes());
            for v in [c.stat.dev, c.stat.ino, c.stat.size] {
                out.extend_from_slice(&v.to_le_bytes());
            }
            for t in [c.stat.mtime, c.stat.ctime, c.at] {
                // Only stamps that fit are ever inserted (see `insert`).
                out.extend_from_slice(&to_ns(t).unwrap_or(i64::MIN).to_le_bytes());
            }
            out.extend_from_slice(&c.stat.mode.to_le_bytes());
            out.extend_from_slice(&[0; 4]);
            let mut oid = [0; 32];
            oid[..c.oid.as_bytes().len()].copy_from_slice(c.oid.as_bytes());
            out.extend_from_slice(&oid);
            out.extend_from_slice(&c.sha256.unwrap_or([0; 32]));
            let kind: u8 = match c.oid.kind() {
                gix::hash::Kind::Sha256 => 2,
                _ => 1,
            };
            out.push(kind);
            out.extend_from_slice(&[0; 3]);
            off += p.len();
        }
        for (p, _) in &rows {
            out.extend_from_slice(p);
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// How many files it holds.
    pub fn len(&self) -> usize {
        let in_table = (0..self.table.count)
            .filter(|&i| self.live[i] && !self.overlay.contains_key(self.table.path(i)))
            .count();
        in_table + self.overlay.values().filter(|c| c.is_some()).count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// How many files were read (not found in the cache) through it since it was made.
    pub fn reads(&self) -> u64 {
        self.reads
    }

    /// Whether it changed since it was loaded or saved (what [`save`](Self::save) would write).
    pub fn is_dirty(&self) -> bool {
        self.dirty
    }

    pub(super) fn count_read(&mut self) {
        self.reads += 1;
    }

    /// A full walk of the tree rooted at the directory `root` (device, inode) begins: a cache
    /// of another root is dropped, and every entry not [`take`](Self::take)n or inserted
    /// before [`end_scan`](Self::end_scan) is dropped then.
    pub(super) fn begin_scan(&mut self, root: (u64, u64)) {
        if self.root.is_some_and(|r| r != root) {
            *self = StatCache {
                margin: self.margin,
                reads: self.reads,
                dirty: true,
                ..StatCache::default()
            };
        }
        self.root = Some(root);
        // What was learnt since the load is folded into the table first (the daemon's
        // rescans), so that "seen" is one flag per record.
        if !self.overlay.is_empty() {
            if let Some((table, _)) = Table::parse(self.encode()) {
                self.live = vec![true; table.count];
                self.table = table;
                self.overlay.clear();
            }
        }
        self.seen = Some(vec![false; self.table.count]);
    }

    /// The end of a full walk: the entries it did not see are dropped.
    pub(super) fn end_scan(&mut self) {
        let Some(seen) = self.seen.take() else {
            return;
        };
        for (live, seen) in self.live.iter_mut().zip(seen) {
            if *live && !seen {
                *live = false;
                self.dirty = true;
            }
        }
    }

    /// The cached hashes of `path` if they still hold for a file whose `lstat` is `stat`; the
    /// entry is kept (seen) when they do, dropped when they do not.
    pub(super) fn take(&mut self, path: &[u8], stat: &Stat) -> Option<Cached> {
        let hit = match self.overlay.get(path) {
            Some(c) => *c,
            None => match self.table.find_near(path, self.next) {
                Some(i) if self.live[i] => {
                    self.next = i + 1;
                    let c = self.table.record(i);
                    if self.trusts(&c, stat) {
                        if let Some(seen) = &mut self.seen {
                            seen[i] = true;
                        }
                        return Some(c);
                    }
                    Some(c)
                }
                _ => None,
            },
        };
        match hit {
            Some(c) if self.trusts(&c, stat) => Some(c),
            Some(_) => {
                self.remove(path);
                None
            }
            None => None,
        }
    }

    /// Records what a read of `path` found.
    pub(super) fn insert(&mut self, path: &[u8], c: Cached) {
        // A stamp the table cannot hold is not kept: the file is read again next time.
        if to_ns(c.stat.mtime).is_none() || to_ns(c.stat.ctime).is_none() || to_ns(c.at).is_none() {
            self.remove(path);
            return;
        }
        // A read racing the file's last change (within the margin before it) is never trusted
        // later either (the time of the read is what is kept): not kept, or every judgment
        // until the file settles would write the whole cache again for it.
        if !self.trusts(&c, &c.stat) {
            self.remove(path);
            return;
        }
        self.overlay.insert(path.to_vec(), Some(c));
        self.dirty = true;
    }

    /// Drops `path`.
    pub(super) fn remove(&mut self, path: &[u8]) {
        let in_table = self.table.find(path).is_some_and(|i| self.live[i]);
        let was = if in_table {
            self.overlay.insert(path.to_vec(), None)
        } else {
            self.overlay.remove(path)
        };
        if in_table || was.flatten().is_some() {
            self.dirty = true;
        }
    }

    /// Whether `cached` still holds for a file whose `lstat` is `stat`.
    fn trusts(&self, cached: &Cached, stat: &Stat) -> bool {
        let margin = i128::try_from(self.margin.as_nanos()).unwrap_or(i128::MAX);
        let at = nanos(cached.at);
        let settled = |t: Stamp| nanos(t).saturating_add(margin) < at;
        cached.stat == *stat && settled(stat.mtime) && settled(stat.ctime)
    }
}

#[cfg(test)]
#[path = "statcache_tests.rs"]
mod tests;
