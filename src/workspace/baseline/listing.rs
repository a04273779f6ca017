//! The kept listing of a pinned commit in the state directory (`baseline-tree.bin`).

use std::path::Path;

use super::super::gitread::{self, EntryKind};

pub(super) const LISTING_FILE: &str = "baseline-tree.bin";

/// The kept listing of a pinned commit (every entry, and the bytes of its `.gitignore` files),
/// so a restart or a one-shot `verify` does not walk the object store again. A compact binary
/// record (parsing 20,000 entries of JSON cost a one-shot `verify` an eighth of its time): the
/// magic `REFEREE-BASELINE-TREE-1\n`, the commit's id (20 bytes, or 32 in a SHA-256
/// repository: every id of the listing has the commit's length), the number of entries (u64
/// LE), then per entry the path's length (u32 LE) and bytes, its kind (`f` `x` `l` `s`) and the
/// object's id; then the number of `.gitignore` files (u64 LE) and per file the path's
/// length and bytes and the contents' length (u64 LE) and bytes, and nothing after. Anything
/// that does not parse, or another commit, is not used.
pub(super) const LISTING_MAGIC: &[u8] = b"REFEREE-BASELINE-TREE-1\n";

pub(super) fn save_listing(state: &Path, tree: &gitread::BaseTree, ignore: &[(Vec<u8>, Vec<u8>)]) {
    let mut out = Vec::with_capacity(64 + tree.entries.len() * 64);
    out.extend_from_slice(LISTING_MAGIC);
    out.extend_from_slice(tree.commit.as_bytes());
    out.extend_from_slice(&(tree.entries.len() as u64).to_le_bytes());
    for (p, e) in &tree.entries {
        let Ok(len) = u32::try_from(p.len()) else {
            // No path is that long; a listing that cannot be kept is read from the store.
            return;
        };
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(p);
        out.push(match e.kind {
            EntryKind::File => b'f',
            EntryKind::Executable => b'x',
            EntryKind::Symlink => b'l',
            EntryKind::Submodule => b's',
        });
        out.extend_from_slice(e.oid.as_bytes());
    }
    out.extend_from_slice(&(ignore.len() as u64).to_le_bytes());
    for (p, b) in ignore {
        let Ok(len) = u32::try_from(p.len()) else {
            return;
        };
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(p);
        out.extend_from_slice(&(b.len() as u64).to_le_bytes());
        out.extend_from_slice(b);
    }
    // A listing that cannot be kept is read from the object store next time: no fault.
    let _ = crate::atomic::write_atomic(state, LISTING_FILE, &out);
}

/// A kept listing: its entries in the order kept (sorted by path bytes) and its `.gitignore`
/// files (path, bytes).
pub(super) type Kept = (Vec<(Vec<u8>, gitread::BaseEntry)>, Vec<(Vec<u8>, Vec<u8>)>);

/// A cursor over a kept listing.
pub(super) struct Cursor<'b>(&'b [u8], usize);

impl<'b> Cursor<'b> {
    fn take(&mut self, n: usize) -> Option<&'b [u8]> {
        if self.0.len() < n {
            return None;
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Some(head)
    }

    fn u32(&mut self) -> Option<usize> {
        usize::try_from(u32::from_le_bytes(self.take(4)?.try_into().ok()?)).ok()
    }

    fn u64(&mut self) -> Option<usize> {
        usize::try_from(u64::from_le_bytes(self.take(8)?.try_into().ok()?)).ok()
    }

    fn oid(&mut self) -> Option<gix::ObjectId> {
        gix::ObjectId::try_from(self.take(self.1)?).ok()
    }
}

pub(super) fn load_listing(state: &Path, commit: gix::ObjectId) -> Option<Kept> {
    let path = state.join(LISTING_FILE);
    let meta = std::fs::symlink_metadata(&path).ok()?;
    if !meta.is_file() {
        return None;
    }
    let bytes = std::fs::read(&path).ok()?;
    parse_listing(&bytes, commit)
}

pub(super) fn parse_listing(bytes: &[u8], commit: gix::ObjectId) -> Option<Kept> {
    let mut c = Cursor(bytes.strip_prefix(LISTING_MAGIC)?, commit.as_bytes().len());
    if c.oid()? != commit {
        return None;
    }
    let count = c.u64()?;
    // At most one entry per 25 bytes left (a length, a kind, an id): a count that says more is
    // not believed for the allocation.
    let mut entries = Vec::with_capacity(count.min(c.0.len() / 25));
    for _ in 0..count {
        let len = c.u32()?;
        let p = c.take(len)?.to_vec();
        let kind = match c.take(1)?[0] {
            b'f' => EntryKind::File,
            b'x' => EntryKind::Executable,
            b'l' => EntryKind::Symlink,
            b's' => EntryKind::Submodule,
            _ => return None,
        };
        let oid = c.oid()?;
        entries.push((p, gitread::BaseEntry { kind, oid }));
    }
    let count = c.u64()?;
    let mut ignore = Vec::new();
    for _ in 0..count {
        let len = c.u32()?;
        let p = c.take(len)?.to_vec();
        let len = c.u64()?;
        ignore.push((p, c.take(len)?.to_vec()));
    }
    if !c.0.is_empty() {
        return None;
    }
    Some((entries, ignore))
}
