//! The process exit codes, with their documented meanings (SPEC §1).

/// What the process reports to its caller.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitCode {
    /// Report written, no unresolved BLOCKING failure; or "go" for `status`.
    Ok = 0,
    /// An unresolved BLOCKING failure; or "STOP present" for `status`.
    Violation = 1,
    /// The referee could not run: usage, protocol, or I/O on its own files.
    Error = 2,
    /// `status --require-live`: no live referee (heartbeat missing or stale).
    NotLive = 3,
    /// `status --task`: the task's latest attempt is not judged yet (after `--wait`).
    NotJudged = 4,
}

impl From<ExitCode> for std::process::ExitCode {
    fn from(c: ExitCode) -> Self {
        std::process::ExitCode::from(c as u8)
    }
}
