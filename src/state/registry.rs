//! The tasks the orchestrator opened (`referee task open WORKSPACE ID…`), kept in the state
//! directory as `tasks.json`. Once any task is registered, a record whose task was never
//! opened is not an attempt (CC-00 FAILs with `unknown_task`): it claims no change, so it
//! excuses no other task's, and it counts toward no guard. Without a registry every record's
//! task counts. Only the referee's commands write here; a registry that cannot be read makes
//! every record not an attempt (fail closed), never "nothing registered".

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The registry's file in the state directory.
pub const FILE: &str = "tasks.json";
const SCHEMA: &str = "referee.tasks/1";
/// A registry larger than this is not the referee's.
const MAX_BYTES: u64 = 16 << 20;

/// One `referee task open`, as logged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Opened {
    /// When (RFC 3339).
    pub at: String,
    /// The tasks it opened (those already open included).
    pub tasks: Vec<String>,
}

/// The registered tasks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Registry {
    pub schema: String,
    pub tasks: BTreeSet<String>,
    /// Every `task open`, oldest first.
    pub log: Vec<Opened>,
}

impl Default for Registry {
    fn default() -> Self {
        Registry {
            schema: SCHEMA.into(),
            tasks: BTreeSet::new(),
            log: Vec::new(),
        }
    }
}

/// The registry cannot be read or kept.
#[derive(Debug, thiserror::Error)]
pub enum RegistryError {
    #[error("cannot read the registered tasks `{path}`")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the registered tasks `{path}` are not the referee's (schema, size or JSON)")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot keep the registered tasks in `{path}`")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{task}` is not a task id (1-128 characters, no `/`, no control character, not `.` or `..`)")]
    BadId { task: String },
}

/// The registry in `state`; `None` when no task was ever opened there.
pub fn load(state: &Path) -> Result<Option<Registry>, RegistryError> {
    let path = state.join(FILE);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(RegistryError::Read { path, source }),
    };
    let parse = |path: PathBuf, why: String| RegistryError::Parse {
        path,
        source: serde::de::Error::custom(why),
    };
    if !meta.is_file() || meta.len() > MAX_BYTES {
        return Err(parse(path, "not a regular file of at most 16 MiB".into()));
    }
    let bytes = std::fs::read(&path).map_err(|source| RegistryError::Read {
        path: path.clone(),
        source,
    })?;
    let r: Registry = serde_json::from_slice(&bytes).map_err(|source| RegistryError::Parse {
        path: path.clone(),
        source,
    })?;
    if r.schema != SCHEMA {
        return Err(parse(path, format!("schema `{}`", r.schema)));
    }
    Ok(Some(r))
}

/// Registers `tasks` in `state` (those already open stay open); the registry as it is now.
pub fn open(state: &Path, tasks: &[String]) -> Result<Registry, RegistryError> {
    for t in tasks {
        let bad = t.is_empty()
            || t.len() > 128
            || t == "."
            || t == ".."
            || t.contains('/')
            || t.chars().any(char::is_control);
        if bad {
            return Err(RegistryError::BadId { task: t.clone() });
        }
    }
    let mut r = load(state)?.unwrap_or_default();
    r.tasks.extend(tasks.iter().cloned());
    r.log.push(Opened {
        at: chrono::Utc::now().to_rfc3339(),
        tasks: tasks.to_vec(),
    });
    let path = state.join(FILE);
    let text = serde_json::to_vec_pretty(&r).map_err(|e| RegistryError::Write {
        path: path.clone(),
        source: std::io::Error::other(e),
    })?;
    crate::atomic::write_atomic(state, FILE, text)
        .map_err(|source| RegistryError::Write { path, source })?;
    Ok(r)
}

/// What the registry says of records: whether a task was opened.
#[derive(Debug, Clone)]
pub enum Known {
    /// No task was ever opened: every record's task counts.
    Everyone,
    /// These tasks are open.
    Only(BTreeSet<String>),
    /// The registry cannot be read: no record's task is known (fail closed).
    Unreadable(String),
}

impl Known {
    /// The registry in `state` (`None`: no state directory, every task counts).
    pub fn of(state: Option<&Path>) -> Known {
        let Some(state) = state else {
            return Known::Everyone;
        };
        match load(state) {
            Ok(None) => Known::Everyone,
            Ok(Some(r)) => Known::Only(r.tasks),
            Err(e) => Known::Unreadable(crate::error::chain(&e)),
        }
    }

    /// Why `task` is not a task the orchestrator opened; `None` when it is (or when none was).
    pub fn unknown(&self, task: &str) -> Option<String> {
        match self {
            Known::Everyone => None,
            Known::Only(open) if open.contains(task) => None,
            Known::Only(open) => Some(format!(
                "unknown_task: task `{task}` was never opened (`referee task open`); the open \
                 tasks are {}",
                open.iter()
                    .map(|t| format!("`{t}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
            Known::Unreadable(why) => Some(format!(
                "unknown_task: the registered tasks cannot be read, so task `{task}` is not \
                 known to be open: {why}"
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opened_tasks_are_known_and_others_are_not() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(
            Known::of(Some(dir.path())).unknown("t9").is_none(),
            "none opened"
        );
        open(dir.path(), &["t1".into(), "t2".into()]).expect("open");
        open(dir.path(), &["t3".into()]).expect("open");
        let k = Known::of(Some(dir.path()));
        assert!(k.unknown("t1").is_none());
        assert!(k.unknown("t3").is_none());
        let why = k.unknown("t1-retry").expect("unknown");
        assert!(why.starts_with("unknown_task"), "{why}");
        assert!(why.contains("`t2`"), "{why}");
        assert_eq!(load(dir.path()).expect("load").expect("some").log.len(), 2);
    }

    #[test]
    fn a_damaged_registry_knows_no_task_and_bad_ids_are_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        std::fs::write(dir.path().join(FILE), b"{").expect("write");
        let why = Known::of(Some(dir.path()))
            .unknown("t1")
            .expect("fail closed");
        assert!(why.contains("cannot be read"), "{why}");
        let empty = tempfile::tempdir().expect("tempdir");
        for bad in ["", "..", "a/b", "a\nb"] {
            assert!(
                matches!(
                    open(empty.path(), &[bad.into()]),
                    Err(RegistryError::BadId { .. })
                ),
                "{bad:?}"
            );
        }
        assert!(load(empty.path()).expect("load").is_none(), "nothing kept");
    }
}
