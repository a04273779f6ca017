//! The git baseline read in-process: refs, commits,
//! trees and blobs straight from `.git/`, and the ignore rules of the baseline's own committed
//! `.gitignore` files. The worker can write anything in `.git/`, so this reader trusts none of it:
//!
//! - it runs nothing: no `git` process, hook, `core.fsmonitor`, filter, textconv or pager (gix is
//!   built without its attributes, filter, status and dirwalk features, and opened isolated: no
//!   global, system or user config, no `include.path`, no `GIT_*` variable);
//! - it writes nothing: no index refresh, no lock file, no object;
//! - the index, `refs/replace/*`, grafts, `.git/info/exclude` and `core.excludesFile` mean nothing
//!   here, so none of them can hide an edit or change what a commit contains;
//! - every object it reads is hashed again and must hash to the id it was asked for, so an object
//!   file overwritten in place is an error, never the wrong bytes.
//!
//! It does not compare the work tree with the baseline; the workspace does that with what this
//! module returns ([`BaseTree`], [`Repo::blob`], [`blob_oid`], [`Ignore`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use gix::bstr::ByteSlice;
use gix::objs::Find as _;
use gix::ObjectId;

mod ignore;
mod rev;
mod sparse;

pub use ignore::Ignore;
use rev::{parse_suffix, Op};
pub use sparse::Sparse;

/// The object format of a repository without `extensions.objectFormat`, and of the ids this
/// module makes when no repository says otherwise.
const HASH: gix::hash::Kind = gix::hash::Kind::Sha1;
/// How many symbolic refs (`HEAD` → `refs/heads/main` → …) or tags are followed before giving up:
/// git itself stops at 5 symbolic refs; a longer chain is a loop or an attack.
const MAX_HOPS: usize = 16;
/// The largest single allocation a hostile pack can make the object store ask for.
const ALLOC_LIMIT: usize = 1 << 30;

type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// What went wrong reading the repository: always the referee's to report (it cannot pin or read
/// the baseline), never a judgment about the worker's change.
#[derive(Debug, thiserror::Error)]
pub enum GitReadError {
    #[error(
        "cannot open the git repository at `{path}` (it must be a git directory, or a `gitdir: <path>` file naming one, that the referee's user can read)"
    )]
    Open {
        path: PathBuf,
        #[source]
        source: BoxError,
    },
    #[error(
        "the repository at `{path}` uses the `{format}` object format; the referee reads sha1 \
         and sha256 repositories only"
    )]
    ObjectFormat { path: PathBuf, format: String },
    #[error("cannot read the reference `{name}` in `{git_dir}` (check `.git/HEAD`, `.git/refs/` and `.git/packed-refs`)")]
    Ref {
        name: String,
        git_dir: PathBuf,
        #[source]
        source: BoxError,
    },
    #[error("the reference `{name}` in `{git_dir}` is a chain of more than {MAX_HOPS} symbolic refs or tags (a loop?)")]
    RefLoop { name: String, git_dir: PathBuf },
    #[error("cannot read object `{oid}` from `{git_dir}` (`git fsck` checks the object store)")]
    Object {
        oid: ObjectId,
        git_dir: PathBuf,
        #[source]
        source: BoxError,
    },
    #[error("object `{oid}` is missing from `{git_dir}` (a shallow or damaged clone? `git fsck` lists what is missing)")]
    Missing { oid: ObjectId, git_dir: PathBuf },
    #[error(
        "object `{oid}` in `{git_dir}` is corrupt: what is stored under that id {actual} \
         (the object file was altered after it was written; `git fsck` shows it)"
    )]
    Corrupt {
        oid: ObjectId,
        git_dir: PathBuf,
        /// `hashes to <id>` or why it could not be hashed.
        actual: String,
    },
    #[error("object `{oid}` is a {actual}, where a {expected} was expected (`git fsck` checks the repository)")]
    Kind {
        oid: ObjectId,
        expected: &'static str,
        actual: &'static str,
    },
    #[error("object `{oid}` is not a well-formed {kind} (`git fsck` checks it)")]
    Parse {
        oid: ObjectId,
        kind: &'static str,
        #[source]
        source: BoxError,
    },
    #[error(
        "tree `{oid}` has an entry named `{name}`, which git never writes (`git fsck` reports it)"
    )]
    BadEntry { oid: ObjectId, name: String },
    #[error(
        "revision `{rev}` uses syntax the referee does not read: give a commit id (full or \
         abbreviated), `HEAD`, a branch or tag name, followed by any of `~N`, `^N`, `^{{commit}}`, `^{{}}`"
    )]
    Unsupported { rev: String },
    #[error("cannot look `{rev}` up in the object store of `{git_dir}` (`git fsck` checks it)")]
    Lookup {
        rev: String,
        git_dir: PathBuf,
        #[source]
        source: BoxError,
    },
    #[error("revision `{rev}` is ambiguous: more than one object id starts with it (give more hex digits)")]
    Ambiguous { rev: String },
}

fn boxed(e: impl std::error::Error + Send + Sync + 'static) -> BoxError {
    Box::new(e)
}

/// A git repository opened for reading its objects and refs, and nothing else.
///
/// It holds the object store handle (with its pack indices loaded once) and the paths of the
/// ref store; it is `Send`, so the daemon can move it to the thread that runs a session.
pub struct Repo {
    /// The git directory of the work tree (`.git/`, or `.git/worktrees/<name>/` of a linked
    /// work tree), canonical.
    git_dir: PathBuf,
    /// Where the shared refs and objects are: `git_dir` itself, or the main repository's
    /// `.git/` for a linked work tree.
    common_dir: PathBuf,
    odb: gix::odb::HandleArc,
    /// The repository's object format (SHA-1, or SHA-256 for `--object-format=sha256`).
    hash: gix::hash::Kind,
    /// A sparse checkout's patterns (`core.sparseCheckout` and `info/sparse-checkout`), as
    /// they are when the repository is opened.
    sparse: Option<String>,
}

impl std::fmt::Debug for Repo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Repo")
            .field("git_dir", &self.git_dir)
            .field("common_dir", &self.common_dir)
            .finish_non_exhaustive()
    }
}

/// What a tree entry is, from its mode.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum EntryKind {
    /// `100644` (and the legacy `100664`).
    File,
    /// `100755`.
    Executable,
    /// `120000`: the blob is the link's target.
    Symlink,
    /// `160000`: a gitlink, the id of a commit in another repository.
    Submodule,
}

/// One non-tree entry of a baseline tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BaseEntry {
    pub kind: EntryKind,
    /// The blob (for a symlink: the blob of its target), or for a submodule the commit.
    pub oid: ObjectId,
}

/// Every file, symlink and submodule of a commit's tree, by relative `/`-separated path in bytes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BaseTree {
    pub commit: ObjectId,
    pub entries: BTreeMap<Vec<u8>, BaseEntry>,
}

/// git's blob id of `bytes` (SHA-1 of `blob <len>\0` and the bytes), as `git hash-object` prints
/// it: what a work-tree file's content is compared with a tree entry by.
///
/// Bytes that carry a SHA-1 collision attack (which git itself refuses) get the null id, which no
/// object has, so they never compare equal to a baseline blob.
pub fn blob_oid(bytes: &[u8]) -> ObjectId {
    blob_oid_of(HASH, bytes)
}

/// [`blob_oid`] in the object format `hash` (a SHA-256 repository's blob ids).
pub fn blob_oid_of(hash: gix::hash::Kind, bytes: &[u8]) -> ObjectId {
    gix::objs::compute_hash(hash, gix::objs::Kind::Blob, bytes)
        .unwrap_or_else(|_| ObjectId::null(hash))
}

impl Repo {
    /// The repository whose work tree is `root`: `root/.git` is a directory, or a file
    /// `gitdir: <path>` (a linked work tree or a submodule). `Ok(None)`: `root/.git` does not
    /// exist, so `root` is not a git work tree (a subdirectory of one is not one either).
    ///
    /// Reads the repository's own `config` only to learn its layout and object format (no
    /// global, system or user config, no `include.path`, no `GIT_*` variable), runs nothing,
    /// and writes nothing.
    pub fn open(root: &Path) -> Result<Option<Repo>, GitReadError> {
        let dot_git = root.join(".git");
        match std::fs::symlink_metadata(&dot_git) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(GitReadError::Open {
                    path: dot_git,
                    source: boxed(e),
                })
            }
        }
        let open_err = |source: BoxError| GitReadError::Open {
            path: dot_git.clone(),
            source,
        };
        let options = gix::open::Options::isolated()
            // Whoever owns the files, their config is the worker's: nothing in it is trusted.
            .with(gix::sec::Trust::Reduced)
            // Not even looked up (the store built below has no replacements anyway).
            .config_overrides(["core.useReplaceRefs=false"]);
        let repo = gix::open_opts(&dot_git, options).map_err(|e| open_err(boxed(e)))?;
        let hash = repo.object_hash();
        if !matches!(hash, gix::hash::Kind::Sha1 | gix::hash::Kind::Sha256) {
            return Err(GitReadError::ObjectFormat {
                path: dot_git,
                format: hash.to_string(),
            });
        }
        let sparse = sparse_patterns(&repo);
        let canonical = |p: &Path| std::fs::canonicalize(p).map_err(|e| open_err(boxed(e)));
        let git_dir = canonical(repo.git_dir())?;
        let common_dir = canonical(repo.common_dir())?;
        drop(repo);
        // Our own store, not the repository's: built with no replacement objects at all, so
        // `refs/replace/*` can never stand in for a commit, tree or blob.
        let store = gix::odb::Store::at_opts(
            common_dir.join("objects"),
            hash,
            &mut std::iter::empty(),
            gix::odb::store::init::Options {
                alloc_limit_bytes: Some(ALLOC_LIMIT),
                ..Default::default()
            },
        )
        .map_err(|e| open_err(boxed(e)))?;
        let mut odb = Arc::new(store).to_cache_arc();
        odb.ignore_replacements = true;
        Ok(Some(Repo {
            git_dir,
            common_dir,
            odb,
            hash,
            sparse,
        }))
    }

    /// The work tree's sparse-checkout patterns, when it is a sparse checkout.
    pub fn sparse(&self) -> Option<&str> {
        self.sparse.as_deref()
    }

    /// The repository's object format.
    pub fn hash_kind(&self) -> gix::hash::Kind {
        self.hash
    }

    /// The directory of its shared refs, objects, hooks and config (canonical): the git
    /// directory itself, or the main repository's for a linked work tree (where the objects are,
    /// and Git LFS keeps its own).
    pub fn common_dir(&self) -> &Path {
        &self.common_dir
    }

    /// The git directory actually used (canonical), for the record of what was pinned.
    pub fn git_dir(&self) -> &Path {
        &self.git_dir
    }

    /// `rev` peeled to a commit id: a full or abbreviated (4+ digits) hex id, `HEAD` or `@`, a
    /// ref name as git finds it (`main`, `v1`, `heads/main`, `refs/tags/v1`, `origin/main`),
    /// followed by any of `~N`, `^N`, `^{commit}`, `^{}`. `Ok(None)`: it names nothing, an unborn
    /// HEAD, a parent that does not exist, or an object that is not a commit. Other revision
    /// syntax (reflogs, `:/text`, ranges) is an error. `refs/replace/*` is never honoured, and
    /// every object read on the way is verified.
    pub fn resolve(&self, rev: &str) -> Result<Option<ObjectId>, GitReadError> {
        let unsupported = || GitReadError::Unsupported {
            rev: rev.to_string(),
        };
        let split = rev.find(['~', '^']).unwrap_or(rev.len());
        let (base, suffix) = rev.split_at(split);
        if base.is_empty() || base.contains(':') || base.contains("@{") || base.contains("..") {
            return Err(unsupported());
        }
        let ops = parse_suffix(suffix).ok_or_else(unsupported)?;
        let Some(mut id) = self.base_id(rev, base)? else {
            return Ok(None);
        };
        for op in ops {
            let next = match op {
                Op::Peel => self.peel_tags(id)?.map(|(id, _)| id),
                Op::Parent(0) => self.peel_to_commit(id)?,
                Op::Parent(n) => match self.peel_to_commit(id)? {
                    Some(c) => self.parents(c)?.get(n - 1).copied(),
                    None => None,
                },
                Op::Ancestor(n) => {
                    let mut cur = self.peel_to_commit(id)?;
                    for _ in 0..n {
                        cur = match cur {
                            Some(c) => self.parents(c)?.first().copied(),
                            None => break,
                        };
                    }
                    cur
                }
            };
            match next {
                Some(n) => id = n,
                None => return Ok(None),
            }
        }
        self.peel_to_commit(id)
    }

    /// The commit HEAD points at now (`None`: an unborn HEAD), read like [`Repo::resolve`]`("HEAD")`.
    pub fn head(&self) -> Result<Option<ObjectId>, GitReadError> {
        match self.find_ref("HEAD")? {
            Some(id) => self.peel_to_commit(id),
            None => Ok(None),
        }
    }

    /// Every entry of `commit`'s tree, recursively: path → (kind, id). Trees themselves are not
    /// listed, nor is anything inside a submodule. Every commit and tree read is verified.
    pub fn tree(&self, commit: ObjectId) -> Result<BaseTree, GitReadError> {
        let (kind, data) = self.object(commit)?;
        if kind != gix::objs::Kind::Commit {
            return Err(kind_err(commit, "commit", kind));
        }
        let root = commit_tree(commit, &data, self.hash)?;
        let mut entries = BTreeMap::new();
        // Depth-first with an explicit stack: a hostile repository can nest trees as deep as it
        // likes, and recursion would overflow the stack.
        let mut stack: Vec<(Vec<u8>, ObjectId)> = vec![(Vec::new(), root)];
        while let Some((prefix, tree_id)) = stack.pop() {
            let (kind, data) = self.object(tree_id)?;
            if kind != gix::objs::Kind::Tree {
                return Err(kind_err(tree_id, "tree", kind));
            }
            for entry in gix::objs::TreeRefIter::from_bytes(&data, self.hash) {
                let entry = entry.map_err(|e| GitReadError::Parse {
                    oid: tree_id,
                    kind: "tree",
                    source: boxed(e),
                })?;
                let name: &[u8] = entry.filename;
                if name.is_empty() || name == b"." || name == b".." || name.contains(&b'/') {
                    return Err(GitReadError::BadEntry {
                        oid: tree_id,
                        name: name.to_str_lossy().into_owned(),
                    });
                }
                let mut path = prefix.clone();
                if !path.is_empty() {
                    path.push(b'/');
                }
                path.extend_from_slice(name);
                let oid = entry.oid.to_owned();
                let kind = match entry.mode.kind() {
                    gix::objs::tree::EntryKind::Tree => {
                        stack.push((path, oid));
                        continue;
                    }
                    gix::objs::tree::EntryKind::Blob => EntryKind::File,
                    gix::objs::tree::EntryKind::BlobExecutable => EntryKind::Executable,
                    gix::objs::tree::EntryKind::Link => EntryKind::Symlink,
                    gix::objs::tree::EntryKind::Commit => EntryKind::Submodule,
                };
                entries.insert(path, BaseEntry { kind, oid });
            }
        }
        Ok(BaseTree { commit, entries })
    }

    /// A blob's bytes, verified: they hash to `oid`, or this is an error.
    pub fn blob(&self, oid: ObjectId) -> Result<Vec<u8>, GitReadError> {
        let (kind, data) = self.object(oid)?;
        if kind != gix::objs::Kind::Blob {
            return Err(kind_err(oid, "blob", kind));
        }
        Ok(data)
    }

    /// The size of a blob as the object store records it, without reading it: to decline a
    /// blob over a read cap before [`Repo::blob`] reads it all. Not verified (the header is the
    /// worker's to write); `None` when there is no such object.
    pub fn blob_size(&self, oid: ObjectId) -> Result<Option<u64>, GitReadError> {
        use gix::objs::FindHeader as _;
        let header = self
            .odb
            .try_header(&oid)
            .map_err(|e| GitReadError::Object {
                oid,
                git_dir: self.git_dir.clone(),
                source: boxed(e),
            })?;
        match header {
            None => Ok(None),
            Some(h) if h.kind == gix::objs::Kind::Blob => Ok(Some(h.size)),
            Some(h) => Err(kind_err(oid, "blob", h.kind)),
        }
    }

    /// Any object, verified: its kind and bytes hash to `oid`.
    fn object(&self, oid: ObjectId) -> Result<(gix::objs::Kind, Vec<u8>), GitReadError> {
        self.try_object(oid)?.ok_or_else(|| GitReadError::Missing {
            oid,
            git_dir: self.git_dir.clone(),
        })
    }

    fn try_object(
        &self,
        oid: ObjectId,
    ) -> Result<Option<(gix::objs::Kind, Vec<u8>)>, GitReadError> {
        let mut buf = Vec::new();
        let found = self
            .odb
            .try_find(&oid, &mut buf)
            .map_err(|e| GitReadError::Object {
                oid,
                git_dir: self.git_dir.clone(),
                source: boxed(e),
            })?;
        let Some(data) = found else {
            return Ok(None);
        };
        let kind = data.kind;
        let corrupt = |actual: String| GitReadError::Corrupt {
            oid,
            git_dir: self.git_dir.clone(),
            actual,
        };
        match gix::objs::compute_hash(self.hash, kind, data.data) {
            Ok(actual) if actual == oid => {}
            Ok(actual) => return Err(corrupt(format!("hashes to `{actual}`"))),
            Err(e) => return Err(corrupt(format!("cannot be hashed ({e})"))),
        }
        // A copy (cheap next to the inflate and the hash): `data` is a view into `buf`.
        Ok(Some((kind, data.data.to_vec())))
    }

    /// The object a revision's base names: a ref (as git looks it up), else a hex id.
    fn base_id(&self, rev: &str, base: &str) -> Result<Option<ObjectId>, GitReadError> {
        let base = if base == "@" { "HEAD" } else { base };
        let is_hex = base.bytes().all(|b| b.is_ascii_hexdigit());
        // A full id is an object name before it is a ref name, as in git.
        if is_hex && base.len() == self.hash.len_in_hex() {
            let id =
                ObjectId::from_hex(base.as_bytes()).map_err(|_| GitReadError::Unsupported {
                    rev: rev.to_string(),
                })?;
            return Ok(self.try_object(id)?.map(|_| id));
        }
        if let Some(id) = self.find_ref(base)? {
            return Ok(Some(id));
        }
        if !is_hex || base.len() < gix::hash::Prefix::MIN_HEX_LEN {
            return Ok(None);
        }
        let prefix = gix::hash::Prefix::from_hex(base).map_err(|_| GitReadError::Unsupported {
            rev: rev.to_string(),
        })?;
        match self.odb.lookup_prefix(prefix, None) {
            Ok(None) => Ok(None),
            Ok(Some(Ok(id))) => Ok(Some(id)),
            Ok(Some(Err(()))) => Err(GitReadError::Ambiguous {
                rev: rev.to_string(),
            }),
            Err(e) => Err(GitReadError::Lookup {
                rev: rev.to_string(),
                git_dir: self.git_dir.clone(),
                source: boxed(e),
            }),
        }
    }

    /// The id a ref name leads to, following symbolic refs; `None` when there is no such ref
    /// or it is a symbolic ref to a branch with no commit yet (an unborn HEAD).
    fn find_ref(&self, name: &str) -> Result<Option<ObjectId>, GitReadError> {
        let ref_err = |source: BoxError| GitReadError::Ref {
            name: name.to_string(),
            git_dir: self.git_dir.clone(),
            source,
        };
        // A name that is no valid ref name names no ref (git says the same: unknown revision).
        let Ok(partial) = <&gix::refs::PartialNameRef>::try_from(name) else {
            return Ok(None);
        };
        // Built per call: the ref store is not `Send`, and building it reads nothing (refs are
        // read, packed-refs included, at each lookup, so a moved branch is seen).
        let store = if self.git_dir == self.common_dir {
            gix::refs::file::Store::at(self.git_dir.clone(), self.hash)
        } else {
            gix::refs::file::Store::for_linked_worktree(
                self.git_dir.clone(),
                self.common_dir.clone(),
                self.hash,
            )
        };
        let mut current = store.try_find(partial).map_err(|e| ref_err(boxed(e)))?;
        for _ in 0..MAX_HOPS {
            let Some(r) = current else {
                return Ok(None);
            };
            match r.target {
                gix::refs::Target::Object(id) => return Ok(Some(id)),
                gix::refs::Target::Symbolic(target) => {
                    current = store
                        .try_find(target.as_ref())
                        .map_err(|e| ref_err(boxed(e)))?;
                }
            }
        }
        Err(GitReadError::RefLoop {
            name: name.to_string(),
            git_dir: self.git_dir.clone(),
        })
    }

    /// Follows annotated tags to what they point at (`^{}`), and the kind found there; `None`
    /// if an object on the way is missing.
    fn peel_tags(
        &self,
        mut id: ObjectId,
    ) -> Result<Option<(ObjectId, gix::objs::Kind)>, GitReadError> {
        for _ in 0..MAX_HOPS {
            let Some((kind, data)) = self.try_object(id)? else {
                return Ok(None);
            };
            if kind != gix::objs::Kind::Tag {
                return Ok(Some((id, kind)));
            }
            id = gix::objs::TagRefIter::from_bytes(&data, self.hash)
                .target_id()
                .map_err(|e| GitReadError::Parse {
                    oid: id,
                    kind: "tag",
                    source: boxed(e),
                })?;
        }
        Err(GitReadError::RefLoop {
            name: id.to_string(),
            git_dir: self.git_dir.clone(),
        })
    }

    /// The commit `id` is or its tags lead to; `None` for a tree, a blob or a missing object.
    fn peel_to_commit(&self, id: ObjectId) -> Result<Option<ObjectId>, GitReadError> {
        Ok(match self.peel_tags(id)? {
            Some((id, gix::objs::Kind::Commit)) => Some(id),
            _ => None,
        })
    }

    /// A commit's parents as its object lists them (no grafts, no replacements). A parent that
    /// is not in the store (a shallow clone's boundary) is left out, as git treats it.
    /// Whether `ancestor` is `commit` or one of its ancestors, looking at no more than `limit`
    /// commits (`None`: not decided within them). Every commit read is verified.
    pub fn descends_from(
        &self,
        commit: ObjectId,
        ancestor: ObjectId,
        limit: usize,
    ) -> Result<Option<bool>, GitReadError> {
        let mut seen = std::collections::HashSet::new();
        let mut queue = std::collections::VecDeque::from([commit]);
        while let Some(c) = queue.pop_front() {
            if c == ancestor {
                return Ok(Some(true));
            }
            if !seen.insert(c) {
                continue;
            }
            if seen.len() > limit {
                return Ok(None);
            }
            queue.extend(self.parents(c)?);
        }
        Ok(Some(false))
    }

    fn parents(&self, commit: ObjectId) -> Result<Vec<ObjectId>, GitReadError> {
        let (kind, data) = self.object(commit)?;
        if kind != gix::objs::Kind::Commit {
            return Err(kind_err(commit, "commit", kind));
        }
        let mut out = Vec::new();
        for token in gix::objs::CommitRefIter::from_bytes(&data, self.hash) {
            let token = token.map_err(|e| GitReadError::Parse {
                oid: commit,
                kind: "commit",
                source: boxed(e),
            })?;
            match token {
                gix::objs::commit::ref_iter::Token::Tree { .. } => {}
                gix::objs::commit::ref_iter::Token::Parent { id } => out.push(id),
                _ => break,
            }
        }
        Ok(out)
    }
}

/// The patterns of a sparse checkout (`core.sparseCheckout` set, in the config or the work
/// tree's `config.worktree`), from the git directory's `info/sparse-checkout`; `None` for a
/// full checkout. A sparse checkout without a readable patterns file is git's "nothing but
/// the top-level files" (`/*` and `!/*/`).
fn sparse_patterns(repo: &gix::Repository) -> Option<String> {
    let config = repo.config_snapshot();
    if !config.boolean("core.sparseCheckout").unwrap_or(false) {
        return None;
    }
    let file = repo.git_dir().join("info").join("sparse-checkout");
    let meta = std::fs::symlink_metadata(&file).ok();
    let text = match meta {
        Some(m) if m.is_file() && m.len() <= 16 << 20 => std::fs::read(&file).ok(),
        _ => None,
    };
    Some(match text {
        Some(t) => String::from_utf8_lossy(&t).into_owned(),
        None => "/*\n!/*/\n".to_string(),
    })
}

fn commit_tree(
    commit: ObjectId,
    data: &[u8],
    hash: gix::hash::Kind,
) -> Result<ObjectId, GitReadError> {
    gix::objs::CommitRefIter::from_bytes(data, hash)
        .tree_id()
        .map_err(|e| GitReadError::Parse {
            oid: commit,
            kind: "commit",
            source: boxed(e),
        })
}

fn kind_err(oid: ObjectId, expected: &'static str, actual: gix::objs::Kind) -> GitReadError {
    GitReadError::Kind {
        oid,
        expected,
        actual: match actual {
            gix::objs::Kind::Tree => "tree",
            gix::objs::Kind::Blob => "blob",
            gix::objs::Kind::Commit => "commit",
            gix::objs::Kind::Tag => "tag",
        },
    }
}

#[cfg(test)]
mod tests;
