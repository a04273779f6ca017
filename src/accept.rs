//! `referee accept WORKSPACE --task ID`: the orchestrator moves the baseline to a task's judged
//! work, the only way it moves after it is pinned. What is accepted is what the referee judged
//! (the hashes in the task's verdict), never the files as they are by then: a file of the
//! task's scope that changed after the verdict makes the verdict stale, and the accept is
//! refused. So is a verdict that is not a good one, and a scope that touches a protected path
//! (a veto is never accepted). The accepted paths and bytes are kept in the state directory
//! ([`crate::workspace::accepted`]), where every later judgment (`watch`, `verify`, the hooks, MCP)
//! takes them as the baseline of those paths.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::protocol::predicate::Glob;
use crate::task_verdict::UNREADABLE;
use crate::workspace::accepted::{self, AcceptedError, AcceptedPath, Entry};
use crate::workspace::{name, sha256};

/// Why an accept is refused (exit 1): the baseline did not move.
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct Refused(pub String);

/// The referee could not accept (exit 2): its own files could not be read or kept.
#[derive(Debug, thiserror::Error)]
pub enum AcceptError {
    #[error(transparent)]
    Refused(#[from] Refused),
    #[error("cannot read the verdict `{path}`")]
    Verdict {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Kept(#[from] AcceptedError),
}

/// What an accept moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Done {
    pub task: String,
    pub attempt: Option<u64>,
    pub generation: u64,
    /// Each path accepted and what it is now (`None`: removed).
    pub paths: BTreeMap<String, Option<String>>,
}

/// A task's verdict as the state directory keeps it: what accepting needs of it.
#[derive(Debug, Clone)]
pub struct KeptVerdict {
    pub attempt: Option<u64>,
    pub verdict: String,
    /// The files judged, with their hashes; `None` for a verdict that does not say (an older
    /// referee's).
    pub judged_files: Option<BTreeMap<String, Option<String>>>,
}

/// The latest verdict of `task` in `state`; `None` when it was never judged.
pub fn kept_verdict(state: &Path, task: &str) -> Result<Option<KeptVerdict>, AcceptError> {
    let path = state.join(crate::outputs::code_change::verdict_file(task, "json"));
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(AcceptError::Verdict { path, source }),
    };
    let doc: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    let judged_files = doc
        .get("judged_files")
        .and_then(|j| serde_json::from_value::<BTreeMap<String, Option<String>>>(j.clone()).ok());
    Ok(Some(KeptVerdict {
        attempt: doc["attempt"].as_u64(),
        verdict: doc["verdict"].as_str().unwrap_or("?").to_string(),
        judged_files,
    }))
}

/// The paths of `judged` whose file in the workspace `root` is no longer what was judged:
/// other bytes, another type, there when judged removed or gone when judged present.
pub fn stale_paths(root: &Path, judged: &BTreeMap<String, Option<String>>) -> Vec<String> {
    judged
        .iter()
        .filter(|(rel, want)| now_at(root, rel).0 != **want)
        .map(|(rel, _)| rel.clone())
        .collect()
}

/// What `rel` is in `root` now: `None` absent; the SHA-256 of a regular file's bytes and its
/// executable bit; anything else (a link, a folder, unreadable) a hash no verdict holds.
fn now_at(root: &Path, rel: &str) -> (Option<String>, bool) {
    let path = name::to_path(root, rel);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (None, false),
        Err(_) => return (Some(UNREADABLE.into()), false),
    };
    if !meta.is_file() {
        return (Some(format!("not a file: {:?}", meta.file_type())), false);
    }
    let exec = std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0;
    match std::fs::read(&path) {
        Ok(b) => (Some(sha256(&b)), exec),
        Err(_) => (Some(UNREADABLE.into()), exec),
    }
}

/// Accepts the latest judged attempt of `task` in the workspace `root` (state directory
/// `state`): refused unless its verdict is one of `go`, every file it judged is still as
/// judged, and none of them matches a glob of `protected`.
pub fn accept_task(
    root: &Path,
    state: &Path,
    task: &str,
    go: &[String],
    protected: &[Glob],
) -> Result<Done, AcceptError> {
    let Some(v) = kept_verdict(state, task)? else {
        return Err(Refused(format!(
            "task `{task}` is not judged (no verdict in `{}`): nothing to accept",
            state.display()
        ))
        .into());
    };
    let which = match v.attempt {
        Some(a) => format!("task `{task}` attempt {a}"),
        None => format!("task `{task}`"),
    };
    if !go.contains(&v.verdict) {
        return Err(Refused(format!(
            "{which} is {}: only an attempt judged good ({}) moves the baseline",
            v.verdict,
            go.join(", ")
        ))
        .into());
    }
    // A newer attempt than the one judged is not accepted on the older one's verdict.
    let record = root
        .join(crate::workspace::TASKS_DIR)
        .join(format!("{}.json", name::file_stem_for(task)));
    let asked = std::fs::read(&record)
        .ok()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|r| r["attempt"].as_u64());
    if let (Some(asked), Some(judged)) = (asked, v.attempt) {
        if asked > judged {
            return Err(Refused(format!(
                "task `{task}` attempt {asked} is not judged yet (the verdict is attempt \
                 {judged}'s): wait for its verdict"
            ))
            .into());
        }
    }
    let Some(judged) = v.judged_files else {
        return Err(Refused(format!(
            "the verdict of {which} does not say which files it judged (a referee older than \
             `accept` wrote it): have it judged again"
        ))
        .into());
    };
    let protected_hit: Vec<String> = judged
        .keys()
        .filter(|p| protected.iter().any(|g| g.is_match(p)))
        .map(|p| name::display(p).to_string())
        .collect();
    if !protected_hit.is_empty() {
        return Err(Refused(format!(
            "{which} changes protected path(s) {}: a veto is never accepted (a human starts \
             the referee again with another `--baseline`)",
            protected_hit.join(", ")
        ))
        .into());
    }
    let mut kept = accepted::load(state)?.unwrap_or_default();
    let mut blobs = Vec::new();
    let mut moved = BTreeMap::new();
    let mut stale = Vec::new();
    for (rel, want) in &judged {
        let (now, exec) = now_at(root, rel);
        if now != *want {
            stale.push(name::display(rel).to_string());
            continue;
        }
        match want {
            None => {
                kept.paths.insert(rel.clone(), AcceptedPath::Absent);
            }
            Some(sha) => {
                // The bytes read now are those judged (same hash); read once more to keep them.
                let bytes = std::fs::read(name::to_path(root, rel)).unwrap_or_default();
                if sha256(&bytes) != *sha {
                    stale.push(name::display(rel).to_string());
                    continue;
                }
                blobs.push(bytes);
                kept.paths.insert(
                    rel.clone(),
                    AcceptedPath::File {
                        sha256: sha.clone(),
                        exec,
                    },
                );
            }
        }
        moved.insert(rel.clone(), want.clone());
    }
    if !stale.is_empty() {
        return Err(Refused(format!(
            "{which}: {} changed after it was judged: the verdict is stale, judge it again \
             (a new attempt) before accepting",
            stale.join(", ")
        ))
        .into());
    }
    kept.generation += 1;
    kept.log.push(Entry {
        generation: kept.generation,
        at: chrono::Utc::now().to_rfc3339(),
        task: Some(task.to_string()),
        attempt: v.attempt,
        paths: moved.keys().cloned().collect(),
    });
    accepted::save(state, &kept, &blobs)?;
    Ok(Done {
        task: task.to_string(),
        attempt: v.attempt,
        generation: kept.generation,
        paths: moved,
    })
}
