//! Why a judgment could not be made or written: one typed error for the judge API, each
//! failure with its cause and the path it is about (a wrapped error of another layer names
//! its own). The command line turns it into `anyhow::Error` with `?`; the MCP server keeps it.

use std::io;
use std::path::PathBuf;

use super::LiveReferee;
use crate::state::observed::SeenError;
use crate::state::StateError;
use crate::workspace::WorkspaceError;

/// A judge API call that failed.
#[derive(Debug, thiserror::Error)]
pub enum JudgeError {
    /// The protocol (and its waivers) did not load: the loader's own error, as it said it.
    #[error(transparent)]
    Load(anyhow::Error),
    /// The loader ran on a thread that died before it returned.
    #[error("the protocol could not be loaded: its loading thread died")]
    LoaderDied { dir: PathBuf },
    /// The judged directory cannot be read (absent, not a directory, refused).
    #[error("cannot read directory `{}`", path.display())]
    ReadDir {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The state directory cannot be located, made or trusted.
    #[error(transparent)]
    State(#[from] StateError),
    /// The referee's record of what it saw in the build directory cannot be read.
    #[error(transparent)]
    Seen(#[from] SeenError),
    /// The build directory cannot be scanned (the error names the directory).
    #[error(transparent)]
    Scan(io::Error),
    /// A baseline was given for a protocol that judges a build directory.
    #[error(
        "`--baseline` and `--baseline-dir` apply to a protocol of task records (e.g. `--protocol code-change`), not to `{id}`"
    )]
    BaselineForBuild { id: String, dir: PathBuf },
    /// A protocol that judges no task records was asked to judge an attempt.
    #[error(
        "protocol `{id}` judges no task records: agent hooks need a protocol like `code-change`"
    )]
    NoTasks { id: String, dir: PathBuf },
    /// A protocol of task records that judged no workspace (a referee bug).
    #[error("a protocol of task records judged no workspace")]
    NoWorkspace { dir: PathBuf },
    /// `--write` where a live referee owns the outputs.
    #[error(transparent)]
    Live(#[from] LiveReferee),
    /// The start snapshot of a workspace without git could not be kept.
    #[error("cannot keep a start snapshot in `{}`", path.display())]
    Snapshot {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// The workspace or its baseline cannot be opened.
    #[error(transparent)]
    Workspace(#[from] WorkspaceError),
    /// The verdicts, STOP or report of a workspace could not be written.
    #[error("cannot write into `{}`", path.display())]
    WriteInto {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// One of the referee's own files in a build directory could not be written.
    #[error("cannot write {name}")]
    WriteOwn {
        name: String,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}
