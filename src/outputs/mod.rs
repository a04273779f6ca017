//! What gets written: the referee's own files (`OBSERVER-PASS-N.md`, `OBSERVER-STOP.md`,
//! `OBSERVER-REPORT.md`) and the printed formats. Every write is atomic — a temp file
//! beside the target, then a rename — so a reader never sees half a file. Nothing here
//! writes any other path: the referee never changes a pipeline file.

pub mod json;
pub mod markdown;

use std::io::Write;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::engine::Status;

pub const STOP_FILE: &str = "OBSERVER-STOP.md";
pub const REPORT_FILE: &str = "OBSERVER-REPORT.md";

pub fn pass_file(pass: &str) -> String {
    format!("OBSERVER-PASS-{pass}.md")
}

/// One change of a check's status, as kept in the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Change {
    pub at: DateTime<Utc>,
    pub pass: String,
    pub check: String,
    pub from: Option<Status>,
    pub to: Status,
    /// e.g. `RESOLVED after STOP`, `STOP raised`, `ESCALATED: …`
    pub note: Option<String>,
    /// What was observed when the status changed (the evidence of a failure that was later
    /// resolved is no longer in the current results).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed: Option<String>,
}

/// Something the referee noticed about its own files or itself (tamper, fault, restart).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Incident {
    pub at: DateTime<Utc>,
    pub kind: String,
    pub text: String,
}

/// What the written files say beyond one evaluation: when, why, and what happened before.
#[derive(Debug, Clone, Default)]
pub struct Context {
    pub build_dir: PathBuf,
    pub started: Option<DateTime<Utc>>,
    pub written: Option<DateTime<Utc>>,
    /// Why the referee finished (final report only).
    pub ended: Option<String>,
    pub history: Vec<Change>,
    pub incidents: Vec<Incident>,
    /// Per STOP-raising check (`pass:check`): the escalation reason, if escalated.
    pub escalations: Vec<(String, String)>,
}

/// Writes `contents` to `dir/name` atomically (temp file + fsync + rename).
pub fn write_atomic(dir: &Path, name: &str, contents: &str) -> std::io::Result<()> {
    let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(&tmp)?;
        f.write_all(contents.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&tmp, dir.join(name))
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Removes one of the referee's own files; absent is fine.
pub fn remove_own(dir: &Path, name: &str) -> std::io::Result<()> {
    debug_assert!(name.starts_with("OBSERVER-"));
    match std::fs::remove_file(dir.join(name)) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        write_atomic(dir.path(), "OBSERVER-STOP.md", "one").unwrap();
        write_atomic(dir.path(), "OBSERVER-STOP.md", "two").unwrap();
        assert_eq!(
            std::fs::read_to_string(dir.path().join("OBSERVER-STOP.md")).unwrap(),
            "two"
        );
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1);
        remove_own(dir.path(), "OBSERVER-STOP.md").unwrap();
        remove_own(dir.path(), "OBSERVER-STOP.md").unwrap();
    }
}
