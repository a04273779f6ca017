//! Why a syntax command was not run.

use std::path::PathBuf;

/// A command rule's program that the referee will not run, or cannot find: the check is then
/// inconclusive, with this as its reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RefusedProgram {
    /// A path that is neither a bare name (looked up on `PATH`) nor absolute.
    #[error("refusing to run `{}`: a program is a name on PATH or an absolute path", .0.display())]
    Relative(PathBuf),
    /// An absolute path inside the workspace: the worker's own code.
    #[error("refusing to run `{}`: it is inside the workspace", .0.display())]
    InsideWorkspace(PathBuf),
    /// A bare name found in no absolute `PATH` directory outside the workspace.
    #[error("`{0}` is not installed")]
    NotInstalled(String),
}
