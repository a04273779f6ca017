//! What gets written: the referee's own files (`OBSERVER-PASS-N.md`, `OBSERVER-STOP.md`,
//! `OBSERVER-REPORT.md`) and the printed formats. Every write is atomic — a temp file
//! beside the target, then a rename — so a reader never sees half a file; what it must survive
//! besides readers (a power cut) is the caller's [`Durability`]: the pass files and the report
//! are on disk before their rename, the STOP file is renamed into place first (an orchestrator
//! sees it at once) and on disk right after. Nothing here writes any other path: the referee
//! never changes a pipeline file.
//!
//! The referee's own names cannot be turned against it: temp files are created exclusively
//! under random names (a symlink or FIFO planted in advance is never opened or followed), and
//! what someone else put at a target (a symlink, FIFO, directory) is reported as [`Foreign`] to
//! the caller, which records it as tamper. Nothing here deletes a directory.

pub mod blocks;
pub mod code_change;
pub mod escape;
pub mod github;
pub mod history;
pub mod json;
pub mod junit;
pub mod locate;
pub mod markdown;
pub mod sarif;

use std::path::PathBuf;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::engine::{CheckKey, Status};

// The referee's own files are written by [`crate::atomic`]; outputs reach it through here.
pub use crate::atomic::{
    foreign_at, move_aside, remove_own, sync_dir, temp_prefix, write_atomic, write_atomic_as,
    write_over_dir, AsOutDir, Durability, Foreign, OutDir, Written,
};

pub use crate::state::stop::STOP_FILE;
pub const REPORT_FILE: &str = "OBSERVER-REPORT.md";

pub fn pass_file(pass: &str) -> String {
    format!("OBSERVER-PASS-{pass}.md")
}

/// One change of a check's status, as kept in the history.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StatusChange {
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
    /// The evidence's details when the status became FAIL or INCONCLUSIVE (file:line, term,
    /// value; at most [`StatusChange::KEPT_DETAILS`] and a count of the rest), so what raised a STOP
    /// stays readable after it is resolved.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub details: Vec<String>,
}

impl StatusChange {
    /// How many evidence details a change keeps (the STOP file shows as many).
    pub const KEPT_DETAILS: usize = 12;

    /// The details a change to `to` keeps: none for a good status, else the first
    /// [`StatusChange::KEPT_DETAILS`] and a line counting the rest.
    pub fn kept_details(to: Status, details: &[String]) -> Vec<String> {
        if !matches!(to, Status::Fail | Status::Inconclusive) {
            return Vec::new();
        }
        let mut kept: Vec<String> = details.iter().take(Self::KEPT_DETAILS).cloned().collect();
        if details.len() > Self::KEPT_DETAILS {
            kept.push(format!("… {} more", details.len() - Self::KEPT_DETAILS));
        }
        kept
    }
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
    pub history: Vec<StatusChange>,
    pub incidents: Vec<Incident>,
    /// Per STOP-raising check (`pass:check`): the escalation reason, if escalated.
    pub escalations: Vec<(CheckKey, String)>,
    /// The waiver file in use (`--waivers`) and its expired waivers.
    pub waivers: Option<crate::waivers::InUse>,
}
