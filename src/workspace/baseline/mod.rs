//! The baseline a workspace is measured against, pinned once: what "changed" means,
//! decided by the referee and nothing the worker can write.
//!
//! - A git work tree: `--baseline REV` or `HEAD`, resolved ONCE to a commit id, read in-process
//!   from the object store ([`super::gitread`]: no `git` process, no config, hook, filter or
//!   fsmonitor, `refs/replace` ignored, every object verified against its id). The pin is kept
//!   in the referee's state directory, so a restart measures against the same commit whatever
//!   `HEAD` says by then (a `git commit`, amend, reset or checkout changes nothing).
//! - A pristine copy (`--baseline-dir DIR`), or the start snapshot a `watch` of a plain folder
//!   keeps in its state directory.
//!
//! Ignore rules come from the baseline's own committed `.gitignore` files only. A file that
//! the checkout writes with CRLF line endings (`eol=crlf`, `core.autocrlf`: decided at pinning
//! as [`super::eol`] says) has, as its baseline bytes, its blob so converted: the SHA-256 of
//! those bytes is kept with the pin, so honest `pre_hashes` of the file as found match, while a
//! line-ending-only change of one file is a change.
//!
//! This module reads; the only thing it writes is the pin under the state directory.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::gitread::{self, EntryKind, Ignore, Repo};
use super::tree::{self, Kind, StatCache, WorkTree};
use super::{name, BaselineInfo, BaselineSpec, Content, WorkspaceError};
use crate::artifacts::fsread::{sha256_hex, FileData};
use crate::workspace::accepted::{self, AcceptedPath};

mod entries;
mod listing;
mod reader;
pub use entries::BaseEntries;
use listing::{load_listing, save_listing};

/// Where pinning keeps what it learns: the pin in the state directory, the commit's listing in
/// `listing` (the state directory, or the folder a one-shot `verify` keeps its stat cache in).
#[derive(Debug, Clone, Copy)]
struct Keep<'a> {
    state: Option<&'a Path>,
    listing: Option<&'a Path>,
}

/// What a path is on the baseline side.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BaseKind {
    File {
        exec: bool,
    },
    Symlink,
    /// A git submodule (a gitlink) whose own repository could not be read: only its commit.
    Submodule,
}

impl BaseKind {
    pub fn describe(&self) -> &'static str {
        match self {
            BaseKind::File { exec: false } => "file (100644)",
            BaseKind::File { exec: true } => "executable file (100755)",
            BaseKind::Symlink => "symlink",
            BaseKind::Submodule => "submodule",
        }
    }
}

/// One baseline path: its kind and git blob id (a link's: of its target; a submodule's: its
/// commit).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseEntry {
    pub kind: BaseKind,
    pub oid: gix::ObjectId,
}

#[derive(Debug)]
enum Source {
    /// The object stores: the workspace's, and each checked-out submodule's by its path.
    Git {
        /// Behind a lock so the baseline can be shared with the reading thread ([`bounded`]).
        repo: Box<std::sync::Mutex<Repo>>,
        subs: std::sync::Mutex<BTreeMap<String, Repo>>,
    },
    Dir {
        root: PathBuf,
    },
}

/// The pin as kept in the state directory (`baseline.json`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pin {
    pub schema: String,
    /// The revision as asked (`HEAD`, or `--baseline REV`).
    pub rev: String,
    /// The commit it named when pinned.
    pub commit: String,
    pub git_dir: String,
    pub pinned_at: String,
    /// Paths whose baseline bytes are their blob as the checkout converts it (line endings),
    /// by SHA-256 of those bytes. (Pins of earlier versions kept the bytes themselves, under
    /// `baseline-checkout/<sha256>`: still read.)
    #[serde(default)]
    pub checked_out: BTreeMap<String, String>,
    /// A sparse checkout's patterns when pinned (`None`: a full checkout): what the worker
    /// writes to `.git/info/sparse-checkout` afterwards changes nothing.
    #[serde(default)]
    pub sparse: Option<String>,
}

const PIN_SCHEMA: &str = "referee.baseline/1";
const PIN_FILE: &str = "baseline.json";
const CHECKOUT_DIR: &str = "baseline-checkout";

/// What pinning keeps in the state directory, files and folders: the baseline's pin and
/// listing, the protected surface's pin and copies, a start snapshot. A caller that finds the
/// workspace was replaced while it judged forgets each of them that the judgment made (see
/// `hook::judged`): what it read by path may have been another directory's.
pub const PINNED: [&str; 5] = [
    PIN_FILE,
    listing::LISTING_FILE,
    super::surface::PIN_FILE,
    super::surface::COPIES,
    super::snapshot::DIR,
];

/// A pinned baseline, shared by every judgment of a session.
#[derive(Debug)]
pub struct Baseline {
    pub info: BaselineInfo,
    /// Every baseline path (encoded, see [`name`]), files and links; no directories.
    pub entries: BaseEntries,
    source: Source,
    ignore: Ignore,
    /// Baseline files the checkout converts (line endings): the SHA-256 of the bytes so
    /// converted, by path.
    checked_out: BTreeMap<String, String>,
    /// Where a pin of an earlier version kept converted bytes (`baseline-checkout/`).
    legacy_checkout: Option<PathBuf>,
    /// The bytes `referee accept` made the baseline of its paths (kept in the state directory,
    /// verified by their hash when loaded), by path.
    accepted: BTreeMap<String, Arc<FileData>>,
    /// The commit pinned (git only).
    pub commit: Option<gix::ObjectId>,
    /// The thread its object store is read on, in time-bounded reads (after one that did not
    /// finish, none is tried again: see [`reader`]).
    reader: reader::Reader,
    /// Where the last [`Baseline::is_ignored`] look-up ended in the listing: the next starts
    /// there (a walk asks in nearly the listing's order).
    near: std::sync::atomic::AtomicUsize,
    /// The kind of blob id its entries have (the repository's object format; SHA-1 for a
    /// directory).
    hash: gix::hash::Kind,
    /// A sparse checkout's set as pinned: a baseline path outside it is not in the work tree
    /// by design (never "removed").
    sparse: Option<gitread::Sparse>,
    /// The paths of the baseline's submodules (checked out or not).
    submodules: std::collections::BTreeSet<String>,
}

pub use super::unknowable::NoBaseline;
use super::unknowable::Unknowable;

impl Baseline {
    /// Pins the baseline of the workspace `root` as `spec` says, keeping (and on a restart
    /// reusing) the pin under `state` when given; a plain folder's start snapshot is
    /// [`BaselineSpec::Snapshot`]. `Ok(Err(why))`: there is no baseline (not a
    /// fault: every check that needs one is INCONCLUSIVE with `why`).
    pub fn pin(
        root: &Path,
        spec: &BaselineSpec,
        state: Option<&Path>,
        cap: u64,
    ) -> Result<Result<Baseline, NoBaseline>, WorkspaceError> {
        Baseline::pin_keeping(root, spec, state, state, cap)
    }

    /// [`Baseline::pin`], with the commit's listing kept in `listing` (a folder of the
    /// referee's own) rather than in the state directory: a one-shot `verify` with no state
    /// directory keeps it beside its stat cache. The listing of a commit is the commit's alone
    /// (it is refused for any other), so it says nothing about which commit is pinned.
    pub fn pin_keeping(
        root: &Path,
        spec: &BaselineSpec,
        state: Option<&Path>,
        listing: Option<&Path>,
        cap: u64,
    ) -> Result<Result<Baseline, NoBaseline>, WorkspaceError> {
        let (root, spec, state, listing) = (
            root.to_path_buf(),
            spec.clone(),
            state.map(Path::to_path_buf),
            listing.map(Path::to_path_buf),
        );
        let shown = root.display().to_string();
        bounded(move || {
            let keep = Keep {
                state: state.as_deref(),
                listing: listing.as_deref(),
            };
            let mut pinned = Baseline::pin_now(&root, &spec, keep, cap);
            // What the orchestrator accepted since is the baseline of those paths.
            if let (Ok(Ok(base)), Some(state)) = (&mut pinned, state.as_deref()) {
                base.apply_accepted(state)?;
            }
            pinned
        })
        .unwrap_or_else(|| {
            Err(WorkspaceError::Pin(format!(
                "reading the git repository of `{shown}` did not finish within {} s (a FIFO, \
                     or a hung file system, in `.git/`?): the baseline cannot be pinned",
                GIT_READ_LIMIT.as_secs()
            )))
        })
    }

    fn pin_now(
        root: &Path,
        spec: &BaselineSpec,
        keep: Keep<'_>,
        cap: u64,
    ) -> Result<Result<Baseline, NoBaseline>, WorkspaceError> {
        let repo = Repo::open(root)?;
        let state = keep.state;
        match spec {
            BaselineSpec::Dir(dir) => {
                let base =
                    std::fs::canonicalize(dir).map_err(|source| WorkspaceError::BaseDir {
                        path: dir.to_path_buf(),
                        source,
                    })?;
                std::fs::read_dir(&base).map_err(|source| WorkspaceError::BaseDir {
                    path: dir.to_path_buf(),
                    source,
                })?;
                Baseline::from_dir(base, "dir", repo.as_ref(), cap).map(Ok)
            }
            BaselineSpec::Snapshot(state) => match super::snapshot::load(state) {
                Some(dir) => Baseline::from_dir(dir, "snapshot", repo.as_ref(), cap).map(Ok),
                None => Ok(Err(NoBaseline::NoSnapshot)),
            },
            BaselineSpec::Rev(rev) => {
                let Some(repo) = repo else {
                    return Err(WorkspaceError::NotGit(rev.clone()));
                };
                let commit = match repinned(state) {
                    Some(c) => c,
                    None => repo
                        .resolve(rev)?
                        .ok_or_else(|| WorkspaceError::NoSuchRev {
                            rev: rev.clone(),
                            path: root.to_path_buf(),
                        })?,
                };
                let kept = state
                    .and_then(load_pin)
                    .filter(|p| p.commit.parse::<gix::ObjectId>().ok() == Some(commit));
                Baseline::from_git(root, repo, rev, commit, kept, keep, cap).map(Ok)
            }
            BaselineSpec::Auto => match repo {
                Some(repo) => {
                    // `accept --commit` re-pinned the baseline: that commit, whatever HEAD says.
                    if let Some(c) = repinned(state) {
                        let kept = state
                            .and_then(load_pin)
                            .filter(|p| p.commit.parse::<gix::ObjectId>().ok() == Some(c));
                        return Baseline::from_git(root, repo, "HEAD", c, kept, keep, cap).map(Ok);
                    }
                    // A restart measures against the commit pinned first, whatever HEAD says now.
                    let kept = state.and_then(load_pin).filter(|p| p.rev == "HEAD");
                    if kept.is_none() {
                        // A repository with no commit when the referee started is a directory
                        // without git: its start snapshot, whatever is committed since.
                        if let Some(dir) = state.and_then(super::snapshot::load) {
                            return Baseline::from_dir(dir, "snapshot", Some(&repo), cap).map(Ok);
                        }
                    }
                    let commit = match &kept {
                        Some(p) => Some(p.commit.parse::<gix::ObjectId>().map_err(|_| {
                            WorkspaceError::Pin(format!(
                                "the pinned baseline commit `{}` is not a commit id",
                                p.commit
                            ))
                        })?),
                        None => repo.resolve("HEAD")?,
                    };
                    match commit {
                        Some(c) => {
                            Baseline::from_git(root, repo, "HEAD", c, kept, keep, cap).map(Ok)
                        }
                        None => Ok(Err(NoBaseline::Unborn)),
                    }
                }
                None => Ok(Err(NoBaseline::NoSnapshot)),
            },
        }
    }

    fn from_git(
        root: &Path,
        repo: Repo,
        rev: &str,
        commit: gix::ObjectId,
        kept: Option<Pin>,
        Keep { state, listing }: Keep<'_>,
        cap: u64,
    ) -> Result<Baseline, WorkspaceError> {
        // The listing of a pinned commit never changes: read from the object store once and
        // kept in the state directory (the referee's own), so a later `verify` or restart
        // does not decompress and verify every tree object again.
        let (rows, ignore_files) = match listing.and_then(|s| load_listing(s, commit)) {
            Some(kept) => kept,
            None => {
                let tree = repo.tree(commit)?;
                let mut files = Vec::new();
                for (path, entry) in Ignore::files_of(&tree) {
                    files.push((path.clone(), repo.blob(entry.oid)?));
                }
                // git's other excludes, pinned with the listing as they are now.
                files.extend(Ignore::local_excludes(&repo));
                if let Some(listing) = listing {
                    save_listing(listing, &tree, &files);
                }
                (tree.entries.into_iter().collect(), files)
            }
        };
        // The rules only: whether a path is tracked is a look-up in the listing itself (see
        // `is_ignored`), not a set of copies of every path.
        let ignore = Ignore::rules(&ignore_files);
        // One `String` per path, taking over the listing's bytes, laid out as one sorted table
        // (it is kept sorted: one look over it, no sort, no map).
        let mut entries = Vec::with_capacity(rows.len());
        let mut subs = BTreeMap::new();
        let mut submodules = std::collections::BTreeSet::new();
        for (path, e) in rows {
            let rel = name::encode_owned(path);
            let kind = match e.kind {
                EntryKind::File => BaseKind::File { exec: false },
                EntryKind::Executable => BaseKind::File { exec: true },
                EntryKind::Symlink => BaseKind::Symlink,
                EntryKind::Submodule => {
                    submodules.insert(rel.clone());
                    // A checked-out submodule is read from its own object store at the commit
                    // the baseline records, so its files are judged (and protected) like any.
                    if let Some(sub) = Repo::open(&name::to_path(root, &rel)).ok().flatten() {
                        if let Ok(t) = sub.tree(e.oid) {
                            for (p, se) in &t.entries {
                                let srel = format!("{rel}/{}", name::encode(p));
                                entries.push((srel, sub_entry(se)));
                            }
                            subs.insert(rel, sub);
                            continue;
                        }
                    }
                    BaseKind::Submodule
                }
            };
            entries.push((rel, BaseEntry { kind, oid: e.oid }));
        }
        let entries = BaseEntries::from_rows(entries);
        let short: String = commit.to_string().chars().take(12).collect();
        let hash = repo.hash_kind();
        // The sparse set as pinned first (the worker can rewrite `info/sparse-checkout`).
        let sparse = match &kept {
            Some(pin) => pin.sparse.clone(),
            None => repo.sparse().map(str::to_string),
        };
        let sparse = sparse.as_deref().map(gitread::Sparse::from_patterns);
        let mut base = Baseline {
            info: BaselineInfo {
                kind: "git",
                describe: format!("git {rev} ({short}), pinned"),
            },
            entries,
            source: Source::Git {
                repo: Box::new(std::sync::Mutex::new(repo)),
                subs: std::sync::Mutex::new(subs),
            },
            ignore,
            checked_out: BTreeMap::new(),
            legacy_checkout: None,
            accepted: BTreeMap::new(),
            commit: Some(commit),
            reader: reader::Reader::default(),
            near: std::sync::atomic::AtomicUsize::new(0),
            hash,
            sparse,
            submodules,
        };
        match kept {
            Some(pin) => {
                // The conversions decided when first pinned, never from the work tree as it
                // is now.
                base.checked_out = pin.checked_out;
                base.legacy_checkout = state.map(|s| s.join(CHECKOUT_DIR));
            }
            None => {
                base.find_checked_out(root, cap);
                if let Some(state) = state {
                    base.save_pin(state, rev)?;
                }
            }
        }
        Ok(base)
    }

    /// A directory baseline: its files, by the same reading as the work tree's.
    fn from_dir(
        root: PathBuf,
        kind: &'static str,
        repo: Option<&Repo>,
        cap: u64,
    ) -> Result<Baseline, WorkspaceError> {
        // The work tree's ignore rules when it is a git work tree (its HEAD's committed
        // `.gitignore` files), else none.
        let ignore = repo
            .and_then(|r| {
                let head = r.resolve("HEAD").ok().flatten()?;
                let t = r.tree(head).ok()?;
                Ignore::from_tree(r, &t).ok()
            })
            .unwrap_or_else(Ignore::empty);
        let skip = super::EXCLUDED;
        let ig = |p: &[u8], d: bool| ignore.is_ignored(p, d);
        let opts = tree::Options {
            cap,
            skip_top: skip,
            ignored: &ig,
            known: &|_: &[u8]| None,
            hash: gix::hash::Kind::Sha1,
        };
        let mut cache = StatCache::default();
        let wt =
            WorkTree::scan(&root, &opts, &mut cache).map_err(|source| WorkspaceError::BaseDir {
                path: root.to_path_buf(),
                source,
            })?;
        let mut entries = Vec::with_capacity(wt.entries.len());
        for (rel, e) in wt.entries {
            if e.ignored {
                continue;
            }
            let kind = match e.kind {
                Kind::File { exec } => BaseKind::File { exec },
                Kind::Symlink { .. } => BaseKind::Symlink,
                _ => continue,
            };
            // A baseline file that cannot be read has no id: every comparison with it is
            // undecided (never "unchanged").
            let oid = e
                .oid
                .unwrap_or_else(|| gix::ObjectId::null(gix::hash::Kind::Sha1));
            entries.push((rel, BaseEntry { kind, oid }));
        }
        let entries = BaseEntries::from_rows(entries);
        Ok(Baseline {
            info: BaselineInfo {
                kind,
                describe: format!("{kind} {}", root.display()),
            },
            entries,
            source: Source::Dir { root },
            ignore,
            checked_out: BTreeMap::new(),
            legacy_checkout: None,
            accepted: BTreeMap::new(),
            commit: None,
            reader: reader::Reader::default(),
            near: std::sync::atomic::AtomicUsize::new(0),
            hash: gix::hash::Kind::Sha1,
            sparse: None,
            submodules: std::collections::BTreeSet::new(),
        })
    }

    /// Takes the accepted content of `rel` (SHA-256 `sha256`, kept in `state`) as the baseline's,
    /// of kind `kind` (`what` it is, for the error): the entry it stands for.
    fn take_accepted(
        &mut self,
        state: &Path,
        rel: &str,
        sha256: &str,
        kind: BaseKind,
        what: &str,
    ) -> Result<BaseEntry, WorkspaceError> {
        let bytes = accepted::blob(state, sha256).ok_or_else(|| {
            WorkspaceError::Pin(format!(
                "the accepted {what} of `{}` (SHA-256 {sha256}) is missing or damaged in the \
                 state directory `{}`",
                name::display(rel),
                state.display()
            ))
        })?;
        let oid = gitread::blob_oid_of(self.hash, &bytes);
        self.checked_out.remove(rel);
        self.accepted.insert(
            rel.to_string(),
            Arc::new(FileData::from_bytes(rel, bytes, None)),
        );
        Ok(BaseEntry { kind, oid })
    }

    /// Takes what `referee accept` kept in `state` as the baseline of the accepted paths: an
    /// accepted file's bytes (from the state directory, verified by their hash) and mode; an
    /// accepted removal takes the path out. Every other path keeps its pinned baseline.
    fn apply_accepted(&mut self, state: &Path) -> Result<(), WorkspaceError> {
        let pin_err = |e: &dyn std::error::Error| WorkspaceError::Pin(crate::error::chain(e));
        let Some(accepted) = accepted::load(state).map_err(|e| pin_err(&e))? else {
            return Ok(());
        };
        if accepted.paths.is_empty() {
            return Ok(());
        }
        let mut now: BTreeMap<String, Option<BaseEntry>> = BTreeMap::new();
        for (rel, a) in &accepted.paths {
            match a {
                AcceptedPath::Absent => {
                    self.checked_out.remove(rel);
                    self.accepted.remove(rel);
                    now.insert(rel.clone(), None);
                }
                AcceptedPath::File { sha256, exec } => {
                    let kind = BaseKind::File { exec: *exec };
                    let entry = self.take_accepted(state, rel, sha256, kind, "content")?;
                    now.insert(rel.clone(), Some(entry));
                }
                AcceptedPath::Link { sha256 } => {
                    let kind = BaseKind::Symlink;
                    let entry = self.take_accepted(state, rel, sha256, kind, "link target")?;
                    now.insert(rel.clone(), Some(entry));
                }
            }
        }
        let mut rows: Vec<(String, BaseEntry)> = self
            .entries
            .as_slice()
            .iter()
            .filter(|(k, _)| !now.contains_key(k))
            .cloned()
            .collect();
        rows.extend(now.into_iter().filter_map(|(k, e)| e.map(|e| (k, e))));
        self.entries = BaseEntries::from_rows(rows);
        self.info.describe = format!(
            "{}, {} path(s) accepted since (accept {})",
            self.info.describe,
            accepted.paths.len(),
            accepted.generation
        );
        Ok(())
    }

    /// The baseline files the checkout at `root` converts (line endings), decided from the
    /// work tree as it is now and the baseline's committed `.gitattributes` files.
    fn find_checked_out(&mut self, root: &Path, cap: u64) {
        let mut files = Vec::new();
        for (rel, e) in self.entries.iter() {
            let is_attributes = rel == ".gitattributes" || rel.ends_with("/.gitattributes");
            if is_attributes && matches!(e.kind, BaseKind::File { .. }) {
                if let Ok(bytes) = self.blob(rel, e.oid) {
                    files.push((rel.clone(), bytes));
                }
            }
        }
        let attrs = super::eol::Attributes::parse(&files);
        let files = self
            .entries
            .iter()
            .filter(|(_, e)| matches!(e.kind, BaseKind::File { .. }))
            .map(|(p, e)| (p, e.oid));
        let converted = super::eol::checked_out(files, &attrs, root, cap, &|rel, oid| {
            self.blob(rel, oid).ok()
        });
        self.checked_out = converted;
    }

    fn save_pin(&self, state: &Path, rev: &str) -> Result<(), WorkspaceError> {
        let (Some(commit), Source::Git { repo, .. }) = (self.commit, &self.source) else {
            return Ok(());
        };
        let io = |e: std::io::Error| WorkspaceError::Pin(format!("cannot keep the pin: {e}"));
        let checked_out = self.checked_out.clone();
        let pin = Pin {
            schema: PIN_SCHEMA.into(),
            rev: rev.into(),
            commit: commit.to_string(),
            git_dir: repo
                .lock()
                .map(|r| r.git_dir().display().to_string())
                .unwrap_or_default(),
            pinned_at: chrono::Utc::now().to_rfc3339(),
            checked_out,
            sparse: self.sparse.as_ref().map(|s| s.text.clone()),
        };
        let text = serde_json::to_string_pretty(&pin).unwrap_or_default();
        crate::atomic::write_atomic(state, PIN_FILE, &text).map_err(io)?;
        Ok(())
    }

    /// The SHA-256 of `rel`'s baseline bytes when they are those checked out (line endings).
    pub fn checked_out_sha256(&self, rel: &str) -> Option<&str> {
        self.checked_out.get(rel).map(String::as_str)
    }

    /// The blob id of `rel` (raw bytes) when the baseline has a regular file there whose
    /// checkout is its blob's bytes (none where the checkout converts line endings: that file
    /// is compared by its SHA-256).
    pub fn blob_of(&self, rel: &[u8]) -> Option<gix::ObjectId> {
        let key = match std::str::from_utf8(rel) {
            Ok(s) if !rel.contains(&0xF4) => std::borrow::Cow::Borrowed(s),
            _ => std::borrow::Cow::Owned(name::encode(rel)),
        };
        if self.checked_out.contains_key(key.as_ref()) {
            return None;
        }
        self.entries
            .get(&key)
            .filter(|e| matches!(e.kind, BaseKind::File { .. }))
            .map(|e| e.oid)
    }

    /// Whether `rel` (encoded) is ignored by the baseline's committed rules (a baseline path
    /// never is).
    pub fn is_ignored(&self, rel: &[u8], is_dir: bool) -> bool {
        if !self.ignore.has_rules() {
            return false;
        }
        if !self.is_git() {
            // A directory baseline's rules carry the tracked paths of the commit they come
            // from (see `from_dir`).
            return self.ignore.is_ignored(rel, is_dir);
        }
        let rel = rel.strip_suffix(b"/").unwrap_or(rel);
        // The listing's keys are encoded: valid UTF-8 is its own key.
        let key = match std::str::from_utf8(rel) {
            Ok(s) if !rel.contains(&0xF4) => std::borrow::Cow::Borrowed(s),
            _ => std::borrow::Cow::Owned(name::encode(rel)),
        };
        if self.entries.contains_near(&key, &self.near) || self.entries.has_under(&key) {
            return false;
        }
        self.ignore.is_ignored_untracked(rel, is_dir)
    }

    /// Whether the baseline holds `rel` (encoded) or any path beneath it.
    pub fn tracks(&self, rel: &str) -> bool {
        let rel = rel.strip_suffix('/').unwrap_or(rel);
        self.entries.contains_near(rel, &self.near) || self.entries.has_under(rel)
    }

    /// The baseline's content of `rel`.
    pub fn content(&self, rel: &str, cap: u64) -> Content {
        let Some(e) = self.entries.get(rel) else {
            return Content::Absent;
        };
        if let Some(data) = self.accepted.get(rel) {
            return match e.kind {
                BaseKind::Symlink => Content::Link(Arc::clone(data)),
                _ => Content::Bytes(Arc::clone(data)),
            };
        }
        if let Some(sha) = self.checked_out.get(rel) {
            return self.converted(rel, e.oid, sha, cap);
        }
        match &self.source {
            Source::Dir { root } => match e.kind {
                BaseKind::Symlink => super::link::as_stored(rel, &name::to_path(root, rel)),
                _ => super::read(root, rel, cap, false),
            },
            Source::Git { .. } => match e.kind {
                BaseKind::Submodule => Content::Unknown(Unknowable::Submodule {
                    rel: rel.to_string(),
                }),
                _ => match self.blob(rel, e.oid) {
                    Ok(b) if b.len() as u64 > cap => Content::Unknown(Unknowable::BaseOverCap {
                        rel: rel.to_string(),
                        size: b.len() as u64,
                        cap,
                    }),
                    Ok(b) if e.kind == BaseKind::Symlink => super::link::stored(rel, &b),
                    Ok(b) => Content::Bytes(Arc::new(FileData::from_bytes(rel, b, None))),
                    Err(e) => Content::Unknown(e),
                },
            },
        }
    }

    /// The baseline bytes of `rel`, converted by the checkout (see [`super::eol`]): its blob
    /// with CRLF line endings, or the Git LFS object its pointer names, which must hash to `sha`
    /// (or, from a pin of an earlier version, the bytes it kept).
    fn converted(&self, rel: &str, oid: gix::ObjectId, sha: &str, cap: u64) -> Content {
        if let Ok(blob) = self.blob(rel, oid) {
            let bytes = super::eol::to_crlf(&blob);
            if sha256_hex(&bytes) == sha {
                return Content::Bytes(Arc::new(FileData::from_bytes(rel, bytes, None)));
            }
        }
        // A Git LFS object (its pointer is the blob) where git-lfs keeps it, or converted bytes
        // a pin of an earlier version kept: named by their SHA-256, and verified against it.
        let lfs = match &self.source {
            Source::Git { repo, .. } if sha.len() == 64 => repo.lock().ok().map(|r| {
                r.common_dir()
                    .join("lfs/objects")
                    .join(&sha[..2])
                    .join(&sha[2..4])
                    .join(sha)
            }),
            _ => None,
        };
        let kept = lfs
            .into_iter()
            .chain(self.legacy_checkout.as_ref().map(|dir| dir.join(sha)))
            .filter_map(|path| {
                let meta = std::fs::symlink_metadata(&path).ok()?;
                (meta.is_file() && meta.len() <= cap).then_some(path)
            })
            .filter_map(|path| std::fs::read(path).ok())
            .find(|b| sha256_hex(b) == sha);
        match kept {
            Some(bytes) => Content::Bytes(Arc::new(FileData::from_bytes(rel, bytes, None))),
            None => Content::Unknown(Unknowable::NotRebuilt {
                rel: rel.to_string(),
                sha256: sha.to_string(),
            }),
        }
    }

    fn blob(&self, rel: &str, oid: gix::ObjectId) -> Result<Vec<u8>, Unknowable> {
        let Source::Git { repo, subs } = &self.source else {
            return Err(Unknowable::NotGit);
        };
        if self.reader.is_stuck() {
            return Err(Unknowable::GitStuckBefore);
        }
        let repo = repo.lock().map_err(|_| Unknowable::GitStuckBefore)?;
        let subs = subs.lock().map_err(|_| Unknowable::GitStuckBefore)?;
        // A submodule's file is in the submodule's object store.
        let owner = subs
            .iter()
            .rev()
            .find(|(p, _)| {
                rel.strip_prefix(p.as_str())
                    .is_some_and(|r| r.starts_with('/'))
            })
            .map_or(&*repo, |(_, r)| r);
        owner
            .blob(oid)
            .map_err(|e| Unknowable::Git(std::sync::Arc::new(e)))
    }

    /// Whether `rel` is the path of one of the baseline's submodules.
    pub fn is_submodule(&self, rel: &str) -> bool {
        self.submodules.contains(rel)
    }

    /// Whether the baseline path `rel` lies outside the pinned sparse-checkout set (absent from
    /// the work tree by design).
    pub fn outside_checkout(&self, rel: &str) -> bool {
        self.sparse
            .as_ref()
            .is_some_and(|s| !s.contains(&name::decode(rel)))
    }

    /// The kind of git blob id the work tree's files are compared with its entries by.
    pub fn hash_kind(&self) -> gix::hash::Kind {
        self.hash
    }

    /// Whether the baseline is read from a git object store (whose reads are bounded in time:
    /// the worker can put a FIFO there).
    pub fn is_git(&self) -> bool {
        matches!(self.source, Source::Git { .. })
    }

    /// The commit `HEAD` names now, when it is not the pinned one (a `head_moved` fact); not
    /// asked again once a read of it did not finish.
    pub fn head_moved(self: &Arc<Self>) -> Option<String> {
        let me = self.clone();
        self.read_bounded(move || me.head_moved_now()).flatten()
    }

    /// Runs `f` (a read of the object store) on the baseline's reading thread and waits at most
    /// [`GIT_READ_LIMIT`] for it; `None` when it did not finish or panicked, and at once after
    /// a read that did not finish (see [`reader`]). One thread for every read of this baseline,
    /// not one per read.
    pub fn read_bounded<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        self.reader.run(f)
    }

    /// Whether a read of the object store did not finish: every later one answers "cannot be
    /// read" at once, instead of another read blocked behind the first.
    pub fn is_stuck(&self) -> bool {
        self.reader.is_stuck()
    }

    /// What a commit made since the pin changed against it: when `HEAD` names another commit
    /// than the pinned one, that commit and each path whose entry differs between the two trees
    /// (`added`, `removed`, `modified` for its bytes, `mode` or type), outside submodules. A
    /// change committed is a change, even when the work tree matches the new commit (`git
    /// update-index --chmod=+x` and a commit leave the file as it was). `None`: `HEAD` is the
    /// pin, or no git baseline, or its tree cannot be read in time.
    pub fn committed(self: &Arc<Self>) -> Option<Committed> {
        let me = self.clone();
        self.read_bounded(move || me.committed_now()).flatten()
    }

    fn committed_now(&self) -> Option<Committed> {
        let (Source::Git { repo, .. }, Some(pinned)) = (&self.source, self.commit) else {
            return None;
        };
        let repo = repo.lock().ok()?;
        // A HEAD, or a commit's tree, that cannot be read is no "nothing committed": what it
        // changed is unknown, and the caller blocks on it.
        let unreadable = |commit: String, why: String| Committed {
            commit,
            paths: Vec::new(),
            unreadable: Some(why),
        };
        let head = match repo.head() {
            Ok(Some(head)) => head,
            Ok(None) => return Some(unreadable("(none)".into(), "HEAD names no commit".into())),
            Err(e) => {
                return Some(unreadable(
                    "(unknown)".into(),
                    format!("HEAD cannot be read: {}", crate::error::chain(&e)),
                ))
            }
        };
        if head == pinned {
            return None;
        }
        let tree = match repo.tree(head) {
            Ok(tree) => tree,
            Err(e) => {
                return Some(unreadable(
                    head.to_string(),
                    format!("its tree cannot be read: {}", crate::error::chain(&e)),
                ))
            }
        };
        let in_sub = |rel: &str| {
            self.submodules.iter().any(|s| {
                rel.strip_prefix(s.as_str())
                    .is_some_and(|r| r.starts_with('/'))
            })
        };
        let kind = |k: &EntryKind| match k {
            EntryKind::File => BaseKind::File { exec: false },
            EntryKind::Executable => BaseKind::File { exec: true },
            EntryKind::Symlink => BaseKind::Symlink,
            EntryKind::Submodule => BaseKind::Submodule,
        };
        let now: BTreeMap<String, BaseEntry> = tree
            .entries
            .iter()
            .map(|(p, e)| {
                let entry = BaseEntry {
                    kind: kind(&e.kind),
                    oid: e.oid,
                };
                (name::encode(p), entry)
            })
            .collect();
        let mut paths = Vec::new();
        for (rel, was) in self.entries.iter().filter(|(r, _)| !in_sub(r)) {
            match now.get(rel) {
                None => paths.push((rel.clone(), "removed")),
                Some(e) if e.kind != was.kind => {
                    paths.push((rel.clone(), "modified, type or mode"))
                }
                Some(e) if e.oid != was.oid => paths.push((rel.clone(), "modified")),
                Some(_) => {}
            }
        }
        for rel in now.keys() {
            if !self.entries.contains_key(rel) && !self.submodules.contains(rel) {
                paths.push((rel.clone(), "added"));
            }
        }
        Some(Committed {
            commit: head.to_string(),
            paths,
            unreadable: None,
        })
    }

    fn head_moved_now(&self) -> Option<String> {
        let (Source::Git { repo, .. }, Some(pinned)) = (&self.source, self.commit) else {
            return None;
        };
        let head = repo.lock().ok()?.head();
        match head {
            Ok(Some(now)) if now != pinned => Some(now.to_string()),
            _ => None,
        }
    }
}

/// What commits made since the pin changed (see [`Baseline::committed`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    /// The commit `HEAD` names.
    pub commit: String,
    /// Each path whose tree entry differs from the pinned one, and how.
    pub paths: Vec<(String, &'static str)>,
    /// Why what was committed cannot be told (`HEAD` or its tree unreadable): a veto.
    pub unreadable: Option<String>,
}

/// Whether `spec` names another baseline than the one pinned first in `state`: `Some(what it
/// names)`, for the refusal to say; `None` when it is the same, when nothing is pinned there
/// yet, or when the revision cannot be resolved (pinning then says why). A restart measuring
/// against another baseline would lift the veto of every change that baseline holds (a worker
/// restarting the referee on its own commit), so the caller refuses it unless a human asked
/// for a new pin (`--fresh`).
pub fn other_than_pinned(root: &Path, spec: &BaselineSpec, state: &Path) -> Option<String> {
    let pin = load_pin(state)?;
    let pinned = format!(
        "git {} ({}), pinned {}",
        pin.rev,
        pin.commit.get(..12).unwrap_or(&pin.commit),
        pin.pinned_at
    );
    let now = match spec {
        BaselineSpec::Auto if pin.rev == "HEAD" => return None,
        BaselineSpec::Auto => "no `--baseline` (HEAD)".to_string(),
        BaselineSpec::Rev(rev) => {
            let (root, rev2) = (root.to_path_buf(), rev.clone());
            let commit = bounded(move || Repo::open(&root).ok().flatten()?.resolve(&rev2).ok()?)
                .flatten()?;
            // The first pin, or one `accept --commit` moved on from, is the same baseline.
            let moved_from = accepted::load(state)
                .ok()
                .flatten()
                .map(|a| a.log.into_iter().filter_map(|e| e.from).collect::<Vec<_>>())
                .unwrap_or_default();
            let same = |c: &str| c.parse::<gix::ObjectId>().ok() == Some(commit);
            if same(&pin.commit) || moved_from.iter().any(|c| same(c)) {
                return None;
            }
            format!("`--baseline {rev}` ({})", &commit.to_string()[..12])
        }
        BaselineSpec::Dir(d) => format!("`--baseline-dir {}`", d.display()),
        BaselineSpec::Snapshot(_) => return None,
    };
    Some(format!(
        "it keeps {pinned}; this referee was started with {now}"
    ))
}

/// How long one read of the git object store may take. The store is the worker's to write: a
/// FIFO (or a hung network mount) put at `HEAD`, a ref or a loose object would block a read
/// forever, silencing the referee. A read that does not finish in time is abandoned on its
/// thread and its answer is "cannot be read" (fail closed).
pub const GIT_READ_LIMIT: std::time::Duration = std::time::Duration::from_secs(5);

/// One read of a git object store outside any baseline (the pin itself, a revision, whether
/// `HEAD` names a commit), on a reading thread of its own ([`reader::Reader`]), waited for at
/// most [`GIT_READ_LIMIT`]; `None` when it did not finish (its thread is left behind, blocked
/// where the read blocked, and ends when it is unblocked) or panicked.
pub fn bounded<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    reader::Reader::default().run(f)
}

fn sub_entry(e: &gitread::BaseEntry) -> BaseEntry {
    let kind = match e.kind {
        EntryKind::File => BaseKind::File { exec: false },
        EntryKind::Executable => BaseKind::File { exec: true },
        EntryKind::Symlink => BaseKind::Symlink,
        EntryKind::Submodule => BaseKind::Submodule,
    };
    BaseEntry { kind, oid: e.oid }
}

/// The commit `referee accept --commit` re-pinned the baseline at in `state`, if it did.
fn repinned(state: Option<&Path>) -> Option<gix::ObjectId> {
    accepted::load(state?).ok().flatten()?.commit?.parse().ok()
}

/// The commit the baseline kept in `state` is pinned at: the one `accept --commit` moved it to,
/// or else the first pin's; `None` when no git baseline is pinned there.
pub fn pinned_commit(state: &Path) -> Option<gix::ObjectId> {
    repinned(Some(state)).or_else(|| load_pin(state)?.commit.parse().ok())
}

fn load_pin(state: &Path) -> Option<Pin> {
    let meta = std::fs::symlink_metadata(state.join(PIN_FILE)).ok()?;
    if !meta.is_file() || meta.len() > 64 << 20 {
        return None;
    }
    let bytes = std::fs::read(state.join(PIN_FILE)).ok()?;
    serde_json::from_slice::<Pin>(&bytes)
        .ok()
        .filter(|p| p.schema == PIN_SCHEMA)
}

#[cfg(test)]
mod tests;
