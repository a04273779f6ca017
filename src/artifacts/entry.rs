//! One entry of the build directory: what it is ([`Kind`], a symlink resolved only inside the
//! build directory), its size and mtime on demand, and why a read of it must be refused; and
//! the places a walk could not look into ([`Unlisted`]).

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::SystemTime;

#[cfg(test)]
use super::escape::rel_of;
use super::fsread::{self, ReadError};

/// What an entry is, after resolving a symlink that stays inside the build directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    /// A FIFO, socket or device, or a symlink that dangles, loops or escapes the build directory.
    /// [`Entry::note`] says which.
    Other,
}

/// One entry of the build directory, as listed by [`Snapshot::scan`].
///
/// Kept small (96 bytes besides `rel`'s text): a build directory can hold tens of thousands of
/// screenshots that are only counted. The name is a slice of `rel`, the path on disk is joined on
/// demand, and what only unusual entries need (a refusal, a non-UTF-8 name's real path) is boxed.
#[derive(Debug)]
pub struct Entry {
    /// Path relative to the root, `/`-separated, no leading `./`, each name escaped by
    /// [`escape_name`] (so it is one line of text, and distinct names stay distinct).
    pub rel: String,
    /// Why the entry is [`Kind::Other`] (e.g. `fifo`); `None` for files and directories.
    pub note: Option<Box<str>>,
    /// The canonical root, shared by every entry of the snapshot.
    pub(super) root: Arc<PathBuf>,
    /// Only for unusual entries (see [`Extra`]).
    pub(super) extra: Option<Box<Extra>>,
    /// Size and mtime, looked up on first use: a scan learns each entry's type from the
    /// directory listing alone, so 30,000 screenshots that are only counted cost no `stat`.
    pub(super) meta: OnceLock<(u64, Option<SystemTime>)>,
    /// 1 = directly in the root.
    pub depth: u16,
    pub kind: Kind,
    /// Whether the entry is a symlink (its kind, size and mtime are the target's).
    pub(super) symlink: bool,
}

/// What only a few entries need.
#[derive(Debug)]
pub(super) struct Extra {
    /// Why [`Snapshot::read`] refuses a [`Kind::Other`] entry without touching the disk (a
    /// directory's refusal needs no storing).
    pub(super) refusal: Option<ReadError>,
    /// The real path of an entry whose name [`escape_name`] changed (`rel` is not its path).
    pub(super) raw: Option<PathBuf>,
}

impl Entry {
    /// The last component of `rel`.
    pub fn name(&self) -> &str {
        self.rel.rsplit('/').next().unwrap_or(&self.rel)
    }

    /// Size in bytes for files (the target's for a symlink), 0 for anything else.
    pub fn size(&self) -> u64 {
        self.meta().0
    }

    /// Modification time (the target's for a symlink); `None` if it cannot be had.
    pub fn mtime(&self) -> Option<SystemTime> {
        self.meta().1
    }

    fn meta(&self) -> (u64, Option<SystemTime>) {
        *self
            .meta
            .get_or_init(|| match fs::symlink_metadata(self.path()) {
                Ok(m) => (
                    if self.kind == Kind::File { m.len() } else { 0 },
                    m.modified().ok(),
                ),
                Err(_) => (0, None),
            })
    }

    /// The entry's path on disk (under the canonical root; for a symlink, the link itself).
    pub fn path(&self) -> PathBuf {
        match self.extra.as_ref().and_then(|x| x.raw.as_ref()) {
            Some(raw) => raw.clone(),
            None => self.root.join(&self.rel),
        }
    }

    /// Whether the entry is a regular file (or a symlink to one inside the build directory).
    pub fn is_file(&self) -> bool {
        self.kind == Kind::File
    }

    /// Whether the entry is a symlink (followed or not).
    pub fn is_symlink(&self) -> bool {
        self.symlink
    }

    /// What the entry certainly is when it is not a regular file: `directory`, `symlink to a
    /// directory`, `fifo`, `socket`, `dangling symlink`, `symlink loop`, `symlink resolves
    /// outside the build directory: …`. `None` for a regular file (or a symlink to one inside the
    /// build directory), and for an entry whose type could not be examined (permission denied
    /// on its target): that one is unknown, not known to be wrong.
    pub fn not_a_file(&self) -> Option<String> {
        match self.kind {
            Kind::File => None,
            Kind::Dir if self.symlink => Some("symlink to a directory".to_string()),
            Kind::Dir => Some("directory".to_string()),
            Kind::Other => self.other_kind(),
        }
    }

    /// Like [`Entry::not_a_file`], for a name that must be a directory (a glob ending in `/`).
    pub fn not_a_dir(&self) -> Option<String> {
        match self.kind {
            Kind::Dir => None,
            Kind::File if self.symlink => Some("symlink to a regular file".to_string()),
            Kind::File => Some("regular file".to_string()),
            Kind::Other => self.other_kind(),
        }
    }

    /// What a [`Kind::Other`] entry is, when that is known (its refusal is about its type or
    /// where it leads, not an error examining it).
    fn other_kind(&self) -> Option<String> {
        match self.refusal() {
            Some(ReadError::Io { .. }) => None,
            _ => Some(
                self.note
                    .as_deref()
                    .unwrap_or("not a regular file")
                    .to_string(),
            ),
        }
    }

    /// Why [`Snapshot::read`] must refuse this entry without touching the disk, if it must.
    pub(super) fn refusal(&self) -> Option<ReadError> {
        match self.kind {
            Kind::File => None,
            Kind::Dir => Some(ReadError::NotRegular {
                rel: self.rel.clone(),
                what: "directory".to_string(),
            }),
            Kind::Other => Some(
                self.extra
                    .as_ref()
                    .and_then(|x| x.refusal.clone())
                    .unwrap_or_else(|| ReadError::NotRegular {
                        rel: self.rel.clone(),
                        what: self.note.as_deref().unwrap_or("unknown").to_string(),
                    }),
            ),
        }
    }
}

/// A place the walk could not look into: a directory that could not be listed or an entry that
/// could not be examined (permission denied, a path longer than `PATH_MAX`, a loop, …). What is
/// there is unknown: a check whose glob could reach it must not call it absent or clean.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unlisted {
    /// Escaped path relative to the root (as [`Entry::rel`]); empty when the walk did not say.
    pub rel: String,
    /// Why, lowercase (e.g. `permission denied (os error 13)`).
    pub cause: String,
}

impl Unlisted {
    /// A walkdir error as an unlisted place (the tests' oracle walk).
    #[cfg(test)]
    pub(super) fn from_walk(root: &Path, err: &walkdir::Error) -> Unlisted {
        let rel = err.path().map(|p| rel_of(root, p).0).unwrap_or_default();
        let cause = err
            .io_error()
            .map(fsread::lowercase_message)
            .unwrap_or_else(|| err.to_string());
        Unlisted { rel, cause }
    }

    /// `` `rel` cannot be listed or examined: cause `` for evidence. A path too long to show
    /// (one past `PATH_MAX` is 4 KB) keeps its start and end, so the cause survives the cap on
    /// evidence lines.
    pub fn describe(&self) -> String {
        const KEEP: usize = 60;
        let what = if self.rel.is_empty() {
            "part of the build directory".to_string()
        } else if self.rel.chars().count() > 2 * KEEP {
            let head: String = self.rel.chars().take(KEEP).collect();
            let tail: Vec<char> = self.rel.chars().rev().take(KEEP).collect();
            let tail: String = tail.into_iter().rev().collect();
            format!("{head}…{tail}")
        } else {
            self.rel.clone()
        };
        format!("`{what}` cannot be listed or examined: {}", self.cause)
    }
}

/// The order of `n` names (`tail(i)`, the bytes that decide it) as their bytes sort, eight
/// bytes at a time ([`sort_by_digits`]).
pub(super) fn sorted_order<'t>(n: usize, tail: impl Fn(usize) -> &'t [u8]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    sort_by_digits(&mut order, &tail, 0);
    order
}

/// Sorts `order` by the bytes `tail` gives from `at` on, eight at a time: each name keyed by
/// its next eight bytes as one number, and the names equal there sorted by the eight after
/// (10,000 `scroll-N.png` share `scroll-N`: comparing them whole was most of a listing's
/// sort). A name shorter than a key is padded with zero bytes, which no file name holds, so
/// it sorts before every longer name it begins: the order is the bytes' order.
fn sort_by_digits<'t>(order: &mut [usize], tail: &impl Fn(usize) -> &'t [u8], at: usize) {
    let digit = |i: usize| {
        let rest = tail(i).get(at..).unwrap_or_default();
        let mut k = [0u8; 8];
        let n = rest.len().min(8);
        k[..n].copy_from_slice(&rest[..n]);
        u64::from_be_bytes(k)
    };
    let mut keyed: Vec<(u64, usize)> = order.iter().map(|&i| (digit(i), i)).collect();
    keyed.sort_unstable_by_key(|k| k.0);
    for (slot, &(_, i)) in order.iter_mut().zip(&keyed) {
        *slot = i;
    }
    let mut start = 0;
    while start < keyed.len() {
        let same = keyed[start..].iter().take_while(|k| k.0 == keyed[start].0);
        let end = start + same.count();
        if end - start > 1 && order[start..end].iter().any(|&i| tail(i).len() > at + 8) {
            sort_by_digits(&mut order[start..end], tail, at + 8);
        }
        start = end;
    }
}

/// Puts the entry now at `order[j]` at position `j`, moving each entry once.
pub(super) fn permute(entries: &mut [Entry], mut order: Vec<usize>) {
    // usize::MAX marks a placed position.
    for start in 0..order.len() {
        let mut j = start;
        loop {
            let k = order[j];
            if k == usize::MAX {
                break;
            }
            order[j] = usize::MAX;
            if k == start {
                break;
            }
            entries.swap(j, k);
            j = k;
        }
    }
}

/// What [`make_entry`] learned about an entry's type.
struct Resolved {
    kind: Kind,
    /// Size and mtime when already known (symlink targets).
    meta: Option<(u64, Option<SystemTime>)>,
    note: Option<String>,
    refusal: Option<ReadError>,
}

/// The entry for what the walk found; `base`: the depth of the walk's start below the root (0 for
/// the root itself).
#[cfg(test)]
pub(super) fn make_entry(root: &Arc<PathBuf>, dent: &walkdir::DirEntry, base: usize) -> Entry {
    let path = dent.path();
    let (rel, lossless) = rel_of(root, path);
    let (resolved, symlink) = if dent.path_is_symlink() {
        (resolve_symlink(root, path, &rel), true)
    } else {
        // The type comes from the directory listing (no syscall); size and mtime on demand.
        (classify_type(&rel, &dent.file_type(), false), false)
    };
    let raw = (!lossless).then(|| path.to_path_buf());
    entry(root, rel, raw, resolved, symlink, dent.depth() + base)
}

/// The entry for a name a directory listing gave, of the type the listing said (`d_type`): a
/// file or a directory costs no syscall (size and mtime on demand), a symlink is resolved, and
/// anything else (a special file, or a type the file system does not report) is looked at with
/// `lstat`. `rel` is the escaped path, `lossless` whether it is the path (see
/// [`escape_name`](super::escape::escape_name)); `path` makes the path when one is needed.
/// `Err`: the entry could not be examined.
pub(super) fn listed_entry(
    root: &Arc<PathBuf>,
    path: impl Fn() -> PathBuf,
    rel: String,
    lossless: bool,
    listed: rustix::fs::FileType,
    depth: usize,
) -> Result<Entry, Unlisted> {
    use rustix::fs::FileType as T;
    let plain = |kind| Resolved {
        kind,
        meta: None,
        note: None,
        refusal: None,
    };
    let (resolved, symlink) = match listed {
        T::RegularFile => (plain(Kind::File), false),
        T::Directory => (plain(Kind::Dir), false),
        T::Symlink => (resolve_symlink(root, &path(), &rel), true),
        _ => match fs::symlink_metadata(path()) {
            Ok(m) if m.file_type().is_symlink() => (resolve_symlink(root, &path(), &rel), true),
            Ok(m) => (classify_type(&rel, &m.file_type(), false), false),
            Err(e) => {
                return Err(Unlisted {
                    rel,
                    cause: fsread::lowercase_message(&e),
                })
            }
        },
    };
    let raw = (!lossless).then(path);
    Ok(entry(root, rel, raw, resolved, symlink, depth))
}

fn entry(
    root: &Arc<PathBuf>,
    rel: String,
    raw: Option<PathBuf>,
    resolved: Resolved,
    symlink: bool,
    depth: usize,
) -> Entry {
    let meta = OnceLock::new();
    if let Some(known) = resolved.meta {
        let _ = meta.set(known);
    }
    // A directory's refusal is made on demand; only an odd entry's is kept.
    let refusal = resolved.refusal.filter(|_| resolved.kind == Kind::Other);
    let extra = (refusal.is_some() || raw.is_some()).then(|| Box::new(Extra { refusal, raw }));
    Entry {
        depth: u16::try_from(depth).unwrap_or(u16::MAX),
        kind: resolved.kind,
        note: resolved.note.map(String::into_boxed_str),
        root: Arc::clone(root),
        extra,
        symlink,
        meta,
        rel,
    }
}

/// A symlink entry taken over by [`Snapshot::rescan`], resolved again.
pub(super) fn relisted(root: &Arc<PathBuf>, old: &Entry) -> Entry {
    let path = old.path();
    let resolved = resolve_symlink(root, &path, &old.rel);
    let raw = old.extra.as_ref().and_then(|x| x.raw.clone());
    entry(
        root,
        old.rel.clone(),
        raw,
        resolved,
        true,
        usize::from(old.depth),
    )
}

/// Classifies an entry by its type (a symlink target's when `via_symlink`).
fn classify_type(rel: &str, file_type: &fs::FileType, via_symlink: bool) -> Resolved {
    if file_type.is_file() {
        return Resolved {
            kind: Kind::File,
            meta: None,
            note: None,
            refusal: None,
        };
    }
    if file_type.is_dir() {
        return Resolved {
            kind: Kind::Dir,
            meta: None,
            note: None,
            refusal: Some(ReadError::NotRegular {
                rel: rel.to_string(),
                what: "directory".to_string(),
            }),
        };
    }
    let what = if via_symlink {
        format!("symlink to a {}", fsread::describe_type(file_type))
    } else {
        fsread::describe_type(file_type).to_string()
    };
    Resolved {
        kind: Kind::Other,
        meta: None,
        note: Some(what.clone()),
        refusal: Some(ReadError::NotRegular {
            rel: rel.to_string(),
            what,
        }),
    }
}

/// Classifies a symlink's target from its metadata, which is kept (the link's own path
/// would give the link's size and mtime).
fn classify(rel: &str, meta: &fs::Metadata, via_symlink: bool) -> Resolved {
    let mut r = classify_type(rel, &meta.file_type(), via_symlink);
    let size = if r.kind == Kind::File { meta.len() } else { 0 };
    r.meta = Some((size, meta.modified().ok()));
    r
}

/// Resolves a symlink: it counts as its target only when the canonical target is inside `root`.
fn resolve_symlink(root: &Path, path: &Path, rel: &str) -> Resolved {
    let other = |note: String, refusal: ReadError| Resolved {
        kind: Kind::Other,
        meta: Some((0, None)),
        note: Some(note),
        refusal: Some(refusal),
    };
    let not_regular = |what: &str| {
        other(
            what.to_string(),
            ReadError::NotRegular {
                rel: rel.to_string(),
                what: what.to_string(),
            },
        )
    };
    let target = match fs::canonicalize(path) {
        Ok(target) => target,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return not_regular("dangling symlink"),
        Err(e) if fsread::is_symlink_loop(&e) => return not_regular("symlink loop"),
        Err(e) => {
            let message = format!(
                "symlink cannot be resolved: {}",
                fsread::lowercase_message(&e)
            );
            return other(message.clone(), ReadError::io(rel, message, e));
        }
    };
    if !target.starts_with(root) {
        let shown = target.display().to_string();
        return other(
            format!("symlink resolves outside the build directory: `{shown}`"),
            ReadError::OutsideRoot {
                rel: rel.to_string(),
                target: shown,
            },
        );
    }
    match fs::metadata(&target) {
        Ok(meta) => classify(rel, &meta, true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => not_regular("dangling symlink"),
        Err(e) => {
            let message = format!(
                "symlink target cannot be examined: {}",
                fsread::lowercase_message(&e)
            );
            other(message.clone(), ReadError::io(rel, message, e))
        }
    }
}
#[cfg(test)]
mod tests;
