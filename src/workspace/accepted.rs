//! What the orchestrator accepted (`referee accept`): the only way a workspace's baseline moves
//! after it is pinned. Each accepted path has, from then on, its accepted state as its baseline
//! (the bytes the referee judged, kept here by SHA-256, or "absent" for a removal), for every
//! later judgment in `watch`, `verify`, the hooks and MCP alike; every other path is still
//! measured against the pinned baseline.
//!
//! Layout in the state directory:
//!
//! ```text
//! accepted.json            the accepted paths, a generation number, and the log of accepts
//! accepted-blobs/<sha256>  the accepted bytes of each accepted file
//! ```
//!
//! Only the referee writes here (the state directory is out of the worker's reach); a blob
//! whose bytes do not hash to its name is not believed (the path is then undecided, never
//! taken as accepted).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::sha256;

/// The accepted paths, in the state directory.
pub const FILE: &str = "accepted.json";
/// The accepted bytes, by SHA-256.
pub const BLOBS: &str = "accepted-blobs";
const SCHEMA: &str = "referee.accepted/1";

/// What a path is once accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "state", rename_all = "snake_case")]
pub enum AcceptedPath {
    /// A regular file with these bytes (kept under [`BLOBS`]) and this executable bit.
    File { sha256: String, exec: bool },
    /// A symbolic link whose target is these bytes (kept under [`BLOBS`]).
    Link { sha256: String },
    /// The path does not exist (an accepted removal).
    Absent,
}

/// One `referee accept`, as logged.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Entry {
    /// The generation it made.
    pub generation: u64,
    /// When (RFC 3339).
    pub at: String,
    /// The task accepted (`--task`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task: Option<String>,
    /// Its attempt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempt: Option<u64>,
    /// The paths it accepted.
    pub paths: Vec<String>,
    /// For `accept --commit`: the commit the baseline was re-pinned at.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// For `accept --commit`: the commit the baseline was pinned at before.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// For `accept --commit --protected-too`: the protected paths the commit changed.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub protected: Vec<String>,
    /// For `accept --commit`: the paths it changed to content no `accept --task` accepted.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unjudged: Vec<String>,
    /// For `accept --start`: the paths no commit holds were pinned anew as they were then
    /// (`paths` lists them), a start a human vouched for.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub start: bool,
}

/// Everything accepted in a state directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Accepted {
    pub schema: String,
    /// Counts the accepts: a live referee takes the baseline again when it moves.
    pub generation: u64,
    /// The commit `referee accept --commit` re-pinned the baseline at (hex), when it did: every
    /// path not accepted since is measured against this commit's tree, not the first pin's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Each accepted path (encoded as the workspace names them) and what it is now.
    pub paths: BTreeMap<String, AcceptedPath>,
    /// Every accept, oldest first.
    pub log: Vec<Entry>,
}

impl Default for Accepted {
    fn default() -> Self {
        Accepted {
            schema: SCHEMA.into(),
            generation: 0,
            commit: None,
            paths: BTreeMap::new(),
            log: Vec::new(),
        }
    }
}

/// The accepted paths cannot be read or kept.
#[derive(Debug, thiserror::Error)]
pub enum AcceptedError {
    #[error("cannot read the accepted baseline `{path}`")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the accepted baseline `{path}` is not the referee's (schema or JSON)")]
    Parse {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("cannot keep the accepted baseline in `{path}`")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// What is accepted in `state`; `None` when nothing ever was.
pub fn load(state: &Path) -> Result<Option<Accepted>, AcceptedError> {
    let path = state.join(FILE);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(AcceptedError::Read { path, source }),
    };
    let a: Accepted = serde_json::from_slice(&bytes).map_err(|source| AcceptedError::Parse {
        path: path.clone(),
        source,
    })?;
    if a.schema != SCHEMA {
        return Err(AcceptedError::Parse {
            path,
            source: serde::de::Error::custom(format!("schema `{}`", a.schema)),
        });
    }
    Ok(Some(a))
}

/// The generation of what is accepted in `state` (0: nothing, or unreadable: the next
/// judgment that pins says why).
pub fn generation(state: &Path) -> u64 {
    load(state).ok().flatten().map_or(0, |a| a.generation)
}

/// The accepted bytes whose SHA-256 is `sha`, when kept and intact.
pub fn blob(state: &Path, sha: &str) -> Option<Vec<u8>> {
    if sha.len() != 64 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let bytes = std::fs::read(state.join(BLOBS).join(sha)).ok()?;
    (sha256(&bytes) == sha).then_some(bytes)
}

/// Keeps `a` in `state`, its new blobs first (so no accepted path ever names bytes not kept).
pub fn save(state: &Path, a: &Accepted, blobs: &[Vec<u8>]) -> Result<(), AcceptedError> {
    let dir = state.join(BLOBS);
    let werr = |path: &Path| {
        let path = path.to_path_buf();
        move |source| AcceptedError::Write { path, source }
    };
    std::fs::create_dir_all(&dir).map_err(werr(&dir))?;
    for b in blobs {
        let name = sha256(b);
        if blob(state, &name).is_none() {
            crate::atomic::write_atomic(dir.as_path(), &name, b).map_err(werr(&dir))?;
        }
    }
    let text = serde_json::to_vec_pretty(a).map_err(|e| AcceptedError::Write {
        path: state.join(FILE),
        source: std::io::Error::other(e),
    })?;
    crate::atomic::write_atomic(state, FILE, text).map_err(werr(&state.join(FILE)))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kept_and_read_back_and_a_bad_blob_is_not_believed() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert_eq!(load(dir.path()).expect("read"), None);
        let bytes = b"X = 2\n".to_vec();
        let mut a = Accepted {
            generation: 1,
            ..Accepted::default()
        };
        a.paths.insert(
            "src/a.py".into(),
            AcceptedPath::File {
                sha256: sha256(&bytes),
                exec: false,
            },
        );
        a.paths.insert("src/b.py".into(), AcceptedPath::Absent);
        save(dir.path(), &a, std::slice::from_ref(&bytes)).expect("save");
        assert_eq!(load(dir.path()).expect("read"), Some(a));
        assert_eq!(generation(dir.path()), 1);
        assert_eq!(blob(dir.path(), &sha256(&bytes)), Some(bytes.clone()));
        std::fs::write(dir.path().join(BLOBS).join(sha256(&bytes)), b"other").expect("write");
        assert_eq!(blob(dir.path(), &sha256(&bytes)), None);
        assert_eq!(blob(dir.path(), "../accepted.json"), None);
        std::fs::write(dir.path().join(FILE), b"{").expect("write");
        assert!(load(dir.path()).is_err());
    }
}
