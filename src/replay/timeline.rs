//! A loaded, validated timeline: its steps and their actions, how a step reads when printed,
//! and what a valid step path is.

use std::path::{Component, Path};
use std::sync::Arc;
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::TRACKER;

// ---- the loaded form -------------------------------------------------------------------

/// A loaded, validated timeline: every path checked, every `from` read, every tracker edit
/// known to find its field (where the timeline itself wrote the tracker).
#[derive(Debug, Clone)]
pub struct Timeline {
    /// Where it came from: `embedded:timelines/demo.toml` or a path.
    pub origin: String,
    pub description: String,
    /// Recorded time zero; `None`: the moment playing starts.
    pub epoch: Option<DateTime<Utc>>,
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone)]
pub struct Step {
    /// Recorded offset from time zero.
    pub at: Duration,
    /// 1-based line of the step in the timeline file.
    pub line: usize,
    pub note: Option<String>,
    pub action: Action,
}

#[derive(Debug, Clone)]
pub enum Action {
    /// Writes files in place (not atomically: a reader may see them half-written). With
    /// `every`, the i-th file is written at `at + i * every`.
    Write {
        paths: Vec<String>,
        label: String,
        content: Arc<Vec<u8>>,
        every: Duration,
    },
    /// Writes `content` to `temp`, then renames it to `to`; or renames `source` to `to`.
    Rename {
        to: String,
        temp: String,
        content: Option<Arc<Vec<u8>>>,
        source: Option<String>,
    },
    /// Rewrites the tracker atomically (temp + rename): its current text (or `base`) with
    /// field rows set.
    Tracker {
        base: Option<Arc<Vec<u8>>>,
        sets: Vec<FieldSet>,
    },
    Mkdir {
        path: String,
    },
    /// Removes a file, or a directory with everything in it.
    Remove {
        path: String,
    },
    /// Nothing happens for a while.
    Wait {
        duration: Duration,
    },
}

/// One tracker edit: the field row named `field` (first occurrence, ignoring case, in
/// `section` if given) gets a new second cell (`value`) and/or third cell (`time`); with
/// `column`, `value` goes into the cell under that column of the row's table instead.
#[derive(Debug, Clone)]
pub struct FieldSet {
    pub field: String,
    pub value: Option<String>,
    pub time: Option<String>,
    pub section: Option<String>,
    pub column: Option<String>,
}

impl Step {
    /// When the step is over, in recorded time (a multi-file write spans `every` gaps).
    pub fn end(&self) -> Duration {
        match &self.action {
            Action::Write { paths, every, .. } => {
                self.at + every.saturating_mul(paths.len().saturating_sub(1) as u32)
            }
            Action::Wait { duration } => self.at + *duration,
            _ => self.at,
        }
    }

    /// A one-line description, e.g. `write p0-content-map.md`.
    pub fn describe(&self) -> String {
        match &self.action {
            Action::Write { paths, label, .. } if paths.len() > 1 => {
                format!("write {label} ({} files)", paths.len())
            }
            Action::Write { label, .. } => format!("write {label}"),
            Action::Rename {
                to, temp, source, ..
            } => {
                format!("rename {} → {to}", source.as_deref().unwrap_or(temp))
            }
            Action::Tracker { base, sets } => {
                let mut parts: Vec<String> = sets
                    .iter()
                    .map(|s| {
                        let mut p = s.field.clone();
                        if let Some(v) = &s.value {
                            p.push_str(&format!(" = {}", clip(v, 32)));
                        }
                        if let Some(t) = &s.time {
                            p.push_str(&format!(" @ {}", clip(t, 32)));
                        }
                        p
                    })
                    .collect();
                if parts.len() > 4 {
                    let more = parts.len() - 3;
                    parts.truncate(3);
                    parts.push(format!("… {more} more"));
                }
                let what = if base.is_some() { "write" } else { "update" };
                if parts.is_empty() {
                    format!("tracker: {what} {TRACKER}")
                } else {
                    format!("tracker: {}", parts.join(", "))
                }
            }
            Action::Mkdir { path } => format!("mkdir {path}"),
            Action::Remove { path } => format!("remove {path}"),
            Action::Wait { duration } => format!("wait {}", format_offset(*duration)),
        }
    }

    /// The action's keyword: `write`, `rename`, `tracker`, `mkdir`, `remove` or `wait`.
    pub fn kind(&self) -> &'static str {
        match self.action {
            Action::Write { .. } => "write",
            Action::Rename { .. } => "rename",
            Action::Tracker { .. } => "tracker",
            Action::Mkdir { .. } => "mkdir",
            Action::Remove { .. } => "remove",
            Action::Wait { .. } => "wait",
        }
    }
}

/// `1m30.0s`, `4.5s`, `1h02m00.0s`: an offset for printing.
pub fn format_offset(d: Duration) -> String {
    let ms = d.as_millis();
    let (h, rest) = (ms / 3_600_000, ms % 3_600_000);
    let (m, rest) = (rest / 60_000, rest % 60_000);
    let (s, tenths) = (rest / 1000, (rest % 1000) / 100);
    if h > 0 {
        format!("{h}h{m:02}m{s:02}.{tenths}s")
    } else if m > 0 {
        format!("{m}m{s:02}.{tenths}s")
    } else {
        format!("{s}.{tenths}s")
    }
}

pub(super) fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(max.saturating_sub(1)).collect();
        c.push('…');
        c
    }
}

/// Why a timeline path was refused (`path`: as written in the timeline).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PathError {
    #[error("empty path")]
    Empty,
    #[error("path `{path}` is absolute; timeline paths are relative to DIR")]
    Absolute { path: String },
    #[error("path `{path}` must stay inside DIR: relative, without `.` or `..` components")]
    Outside { path: String },
}

/// A relative path of normal components only: no root, no `.`, no `..`.
pub fn check_rel(path: &str) -> Result<(), PathError> {
    let p = Path::new(path);
    if path.is_empty() {
        return Err(PathError::Empty);
    }
    if p.is_absolute() {
        return Err(PathError::Absolute {
            path: path.to_string(),
        });
    }
    if path.contains('\0') || p.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(PathError::Outside {
            path: path.to_string(),
        });
    }
    Ok(())
}

pub(super) fn default_temp(to: &str) -> String {
    match to.rsplit_once('/') {
        Some((dir, name)) => format!("{dir}/.{name}.tmp"),
        None => format!(".{to}.tmp"),
    }
}
