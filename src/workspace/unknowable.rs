//! Why one side of a file cannot be known ([`Content::Unknown`](super::Content)), and why a
//! workspace has no baseline at all ([`NoBaseline`]). The text is what a check says as its
//! evidence (INCONCLUSIVE, blocking); the value keeps what it came from: the error, the path,
//! the sizes and hashes.

use std::path::PathBuf;
use std::sync::Arc;

use super::gitread::GitReadError;
use super::name;
use super::tree::Unreadable;
use crate::artifacts::fsread::{IoCause, ReadError};

/// Why a workspace has no baseline to measure against (not a fault: the checks that need one
/// are INCONCLUSIVE).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NoBaseline {
    /// Not a git work tree, no `--baseline-dir`, no start snapshot.
    #[error(
        "no baseline: the workspace is not a git work tree, no --baseline-dir was given, and no \
         start snapshot is kept in the referee's state directory"
    )]
    NoSnapshot,
    /// A git repository with no commit, and no start snapshot.
    #[error(
        "the git repository has no commit yet (HEAD names none), no --baseline-dir was given, \
         and no start snapshot is kept in the referee's state directory (`watch` or an agent \
         hook takes one when it starts)"
    )]
    Unborn,
}

/// Why one side of a file (`rel`, as stored: see [`name`]) cannot be known.
#[derive(Debug, Clone, thiserror::Error)]
pub enum Unknowable {
    /// The workspace has no baseline.
    #[error("{0}")]
    NoBaseline(NoBaseline),
    /// The file system refused a read of the work tree (the reader's error, with its path).
    #[error("{0}")]
    Read(ReadError),
    /// A read deeper than one system call takes (through directory descriptors) failed.
    #[error("`{}`: {why}", name::display(.rel))]
    InTree {
        rel: String,
        #[source]
        why: Unreadable,
    },
    /// A look at the referee's surface (`.git/` and the like) failed.
    #[error("{0}")]
    Surface(#[source] Unreadable),
    /// A file under `.git/` past what the surface keeps of one.
    #[error("`{}` is over {size} bytes", name::display(.rel))]
    SurfaceOver { rel: String, size: u64 },
    /// Under `.git/`, not a file.
    #[error("`{}` is a {kind}, not a file", name::display(.rel))]
    NotAFile { rel: String, kind: String },
    /// A link that could not be read.
    #[error("`{}`: {}", name::display(.rel), .source.0)]
    Link {
        rel: String,
        #[source]
        source: IoCause,
    },
    /// A link to nothing: where it will lead cannot be judged.
    #[error(
        "`{}` is a symbolic link to `{to}`, which does not exist: where it will lead cannot be judged",
        name::display(.rel)
    )]
    LinkDangles { rel: String, to: String },
    /// A link the system could not resolve.
    #[error(
        "`{}` is a symbolic link to `{to}` that cannot be resolved: {}",
        name::display(.rel),
        .source.0
    )]
    LinkUnresolved {
        rel: String,
        to: String,
        #[source]
        source: IoCause,
    },
    /// A link leading out of the workspace (never followed).
    #[error(
        "`{}` is a symbolic link to `{to}`, out of the workspace (to `{}`); the referee does not follow links out",
        name::display(.rel),
        .leads.display()
    )]
    LinkOut {
        rel: String,
        to: String,
        leads: PathBuf,
    },
    /// A link swapped while it was resolved.
    #[error("`{}` changed while it was read", name::display(.rel))]
    LinkChanged { rel: String },
    /// The baseline's link leads out of the baseline's tree.
    #[error(
        "the baseline's `{}` is a symbolic link to `{to}`, out of the tree",
        name::display(.rel)
    )]
    BaseLinkOut { rel: String, to: String },
    /// The baseline's links lead on and on.
    #[error(
        "the baseline's `{}` leads through more than {max} symbolic links",
        name::display(.rel)
    )]
    BaseLinkLoop { rel: String, max: usize },
    /// A submodule whose repository is not there to read its files from.
    #[error(
        "`{}` is a submodule whose repository is not checked out",
        name::display(.rel)
    )]
    Submodule { rel: String },
    /// The baseline's blob is larger than the read cap.
    #[error(
        "the baseline's `{}` is {size} bytes, over the read cap of {cap} bytes",
        name::display(.rel)
    )]
    BaseOverCap { rel: String, size: u64, cap: u64 },
    /// The git object store did not give the blob (said with its chain of causes).
    #[error("{}", crate::error::chain(.0.as_ref()))]
    Git(Arc<GitReadError>),
    /// An earlier read of the git object store did not finish: no later one is tried.
    #[error(
        "an earlier read of the git object store did not finish (a FIFO, or a hung file system, \
         in `.git/`?): the baseline cannot be read"
    )]
    GitStuckBefore,
    /// Asked of a baseline that is not a commit.
    #[error("not a git baseline")]
    NotGit,
    /// A read of the git object store did not finish within its limit.
    #[error(
        "reading the baseline of `{}` from `.git/` did not finish within {secs} s (a FIFO, or a hung file system, in the object store?)",
        name::display(.rel)
    )]
    GitStuck { rel: String, secs: u64 },
    /// The read of the git object store failed (it panicked: a bug in the reader, said as such).
    #[error(
        "reading the baseline of `{}` from `.git/` failed (its reading thread panicked, or could not be started)",
        name::display(.rel)
    )]
    GitPanicked { rel: String },
    /// The checked-out form of the baseline (line endings, an LFS object) cannot be rebuilt.
    #[error(
        "the baseline of `{}` as checked out (SHA-256 {sha256}: line endings, or a Git LFS object) cannot be rebuilt from its blob or found in `lfs/objects`",
        name::display(.rel)
    )]
    NotRebuilt { rel: String, sha256: String },
    /// Over the size limit a blocking check FAILs it for: not read.
    #[error(
        "`{}` ({size} bytes, over its size limit of {limit} bytes) is not read: the size limit check FAILs it",
        name::display(.rel)
    )]
    OverLimit { rel: String, size: u64, limit: u64 },
    /// A later read of the same judgment found other bytes than the first.
    #[error(
        "`{}` changed while it was judged: first read {size} bytes, sha256 {sha256}; now {now}",
        name::display(.rel)
    )]
    Changed {
        rel: String,
        size: u64,
        sha256: String,
        now: String,
    },
}

impl From<NoBaseline> for Unknowable {
    fn from(why: NoBaseline) -> Unknowable {
        Unknowable::NoBaseline(why)
    }
}

impl From<ReadError> for Unknowable {
    fn from(e: ReadError) -> Unknowable {
        Unknowable::Read(e)
    }
}
