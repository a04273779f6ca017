//! `referee accept WORKSPACE --task ID`: the orchestrator moves the baseline to a task's judged
//! work, the only way it moves after it is pinned. What is accepted is what the referee judged
//! (the hashes in the task's verdict), never the files as they are by then: a file of the
//! task's scope that changed after the verdict makes the verdict stale, and the accept is
//! refused. So is a verdict that is not a good one, and a scope that touches a protected path
//! (a veto is never accepted). The accepted paths and bytes are kept in the state directory
//! ([`crate::workspace::accepted`]), where every later judgment (`watch`, `verify`, the hooks, MCP)
//! takes them as the baseline of those paths.

use std::collections::BTreeMap;
use std::os::unix::ffi::{OsStrExt, OsStringExt};
use std::path::{Path, PathBuf};

use crate::protocol::predicate::Glob;
use crate::task_verdict::{link_mark, link_target, UNREADABLE};
use crate::workspace::accepted::{self, AcceptedError, AcceptedPath, Entry};
use crate::workspace::gitread::BaseEntry;
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
///
/// A path judged [`UNREADABLE`] (a folder such as a nested repository's `.git`, a link, a file
/// that could not be read) is stale only once it is a readable file or gone: what cannot be
/// read as a file now is what was judged, not a change.
pub fn stale_paths(root: &Path, judged: &BTreeMap<String, Option<String>>) -> Vec<String> {
    judged
        .iter()
        .filter(|(rel, want)| {
            let now = now_at(root, rel).0;
            match want.as_deref() {
                Some(UNREADABLE) => now.as_deref().is_none_or(is_sha256),
                _ => now != **want,
            }
        })
        .map(|(rel, _)| rel.clone())
        .collect()
}

/// Whether `s` is a SHA-256 in hex (what [`now_at`] gives for a readable regular file).
fn is_sha256(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// What `rel` is in `root` now: `None` absent; the SHA-256 of a regular file's bytes and its
/// executable bit; a link's [`link_mark`]; anything else (a folder, unreadable) a hash no
/// verdict holds.
fn now_at(root: &Path, rel: &str) -> (Option<String>, bool) {
    let path = name::to_path(root, rel);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return (None, false),
        // A path too long for one system call (deeper than PATH_MAX), as the referee judged
        // it: through descriptors, one name at a time.
        Err(e) if e.raw_os_error() == Some(libc::ENAMETOOLONG) => return deep_now_at(root, rel),
        Err(_) => return (Some(UNREADABLE.into()), false),
    };
    if meta.is_symlink() {
        return match std::fs::read_link(&path) {
            Ok(t) => {
                let led = led_to(root, &path, rel);
                let mark = link_mark(&sha256(t.as_os_str().as_bytes()), led.as_deref());
                (Some(mark), false)
            }
            Err(_) => (Some(UNREADABLE.into()), false),
        };
    }
    if !meta.is_file() {
        return (Some(format!("not a file: {:?}", meta.file_type())), false);
    }
    let exec = std::os::unix::fs::PermissionsExt::mode(&meta.permissions()) & 0o111 != 0;
    match std::fs::read(&path) {
        Ok(b) => (Some(sha256(&b)), exec),
        Err(_) => (Some(UNREADABLE.into()), exec),
    }
}

/// The SHA-256 of the regular file inside `root` the link at `path` leads to, read as the
/// judgment reads it ([`crate::artifacts::fsread`]: every link followed, never out of `root`);
/// `None` when it leads to no such file.
fn led_to(root: &Path, path: &Path, rel: &str) -> Option<String> {
    let root = std::fs::canonicalize(root).ok()?;
    crate::artifacts::fsread::hash_file(&root, path, rel, u64::MAX)
        .ok()
        .map(|(sha, _)| sha)
}

/// [`now_at`] for a path too long for one system call: looked at beneath `root` through
/// descriptors, no link followed on the way.
fn deep_now_at(root: &Path, rel: &str) -> (Option<String>, bool) {
    match crate::workspace::tree::look_in_tree(root, &name::decode(rel), u64::MAX) {
        Ok(None) => (None, false),
        Ok(Some(l)) if l.kind == "file" => {
            let exec = l.mode & 0o111 != 0;
            match l.bytes {
                Some(b) => (Some(sha256(&b)), exec),
                None => (Some(UNREADABLE.into()), exec),
            }
        }
        Ok(Some(l)) => (Some(format!("not a file: {}", l.kind)), false),
        Err(_) => (Some(UNREADABLE.into()), false),
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
        .and_then(|b| crate::workspace::record::attempt_of(&b));
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
            Some(mark) if link_target(mark).is_some() => {
                // The link read now is the one judged (same mark): its target is kept.
                let target = std::fs::read_link(name::to_path(root, rel))
                    .map(|t| t.into_os_string().into_vec())
                    .unwrap_or_default();
                let sha = sha256(&target);
                if link_target(mark) != Some(sha.as_str()) {
                    stale.push(name::display(rel).to_string());
                    continue;
                }
                blobs.push(target);
                kept.paths
                    .insert(rel.clone(), AcceptedPath::Link { sha256: sha });
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
        commit: None,
        from: None,
        protected: Vec::new(),
        unjudged: Vec::new(),
        start: false,
    });
    accepted::save(state, &kept, &blobs)?;
    Ok(Done {
        task: task.to_string(),
        attempt: v.attempt,
        generation: kept.generation,
        paths: moved,
    })
}

/// What an `accept --commit` moved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DoneCommit {
    pub commit: String,
    pub from: String,
    pub generation: u64,
    /// Each path whose entry differs between the two commits' trees.
    pub paths: Vec<String>,
    /// Those of them that are protected (accepted with `--protected-too`).
    pub protected: Vec<String>,
    /// Those of them whose content no `accept --task` accepted: the orchestrator's own work, or
    /// anything else the commit took along.
    pub unjudged: Vec<String>,
}

/// What an `accept --start` pinned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DoneStart {
    pub generation: u64,
    /// Each path no commit holds that the protected globs see, pinned as it is now.
    pub paths: Vec<String>,
    /// Why the start pinned before dated nothing, when it did not (taken after the work).
    pub was_after_work: Option<String>,
    /// What the veto still names: changes a start does not cover (a protected file the
    /// baseline holds, code in a protected module's place), each with what happened.
    pub still_vetoed: Vec<(String, String)>,
}

/// Takes the start of the workspace `root` anew (state directory `state`): the paths no
/// commit holds that `protocol`'s veto sees (git's hooks and config, ignored protected paths,
/// ignored modules a protected file imports) are pinned as they are now, as a start, whatever
/// records are pending: a human vouches for them (after a STOP saying nothing dates them, or
/// for a hook of their own added since). Logged in the accepts. Refused when the state
/// directory has never been made (no referee has judged here: its first look pins the start).
pub fn accept_start(
    root: &Path,
    state: &Path,
    protocol: &crate::protocol::Protocol,
    cap: u64,
) -> Result<DoneStart, AcceptError> {
    use crate::workspace::{surface, BaselineSpec, Workspace};
    if !crate::state::exists(state) {
        return Err(Refused(format!(
            "no referee has judged this workspace (no state directory `{}`): its first look \
             pins the start; run `referee watch`, or `verify --write`, before the work",
            state.display()
        ))
        .into());
    }
    let was_after_work = surface::Kept::load(state).and_then(|k| k.pin.after_work);
    let spec = if root.join(".git").exists() {
        BaselineSpec::Auto
    } else {
        BaselineSpec::Snapshot(state.to_path_buf())
    };
    let ws = Workspace::open_in(root, &spec, state, None, cap).map_err(|e| {
        Refused(format!(
            "cannot open the workspace: {}",
            crate::error::chain(&e)
        ))
    })?;
    ws.start_now();
    let still_vetoed = crate::decision::veto(protocol, &ws)
        .into_iter()
        .flat_map(|v| v.paths)
        .map(|p| (p.path, p.happened.describe()))
        .collect();
    let Some(kept) = surface::Kept::load(state).filter(|k| k.pin.after_work.is_none()) else {
        return Err(Refused(format!(
            "the start could not be kept in `{}`: nothing was accepted",
            state.display()
        ))
        .into());
    };
    let paths: Vec<String> = kept.pin.paths.keys().cloned().collect();
    let mut log = accepted::load(state)?.unwrap_or_default();
    log.generation += 1;
    log.log.push(Entry {
        generation: log.generation,
        at: chrono::Utc::now().to_rfc3339(),
        task: None,
        attempt: None,
        paths: paths.clone(),
        commit: None,
        from: None,
        protected: Vec::new(),
        unjudged: Vec::new(),
        start: true,
    });
    accepted::save(state, &log, &[])?;
    Ok(DoneStart {
        generation: log.generation,
        paths,
        was_after_work,
        still_vetoed,
    })
}

/// How many commits `accept --commit` walks back from REV looking for the pinned commit.
const HISTORY_LIMIT: usize = 1_000_000;

/// Re-pins the baseline of the workspace `root` (state directory `state`) at the commit `rev`
/// names: refused unless a git baseline is pinned in `state`, `rev` names a commit that
/// descends from it, and (without `protected_too`) no path of `protected` differs between
/// the two. An accepted path that the commit changes takes the commit's content from then on.
pub fn accept_commit(
    root: &Path,
    state: &Path,
    rev: &str,
    protected: &[Glob],
    protected_too: bool,
) -> Result<DoneCommit, AcceptError> {
    use crate::workspace::baseline::{bounded, pinned_commit};
    use crate::workspace::gitread::Repo;

    let Some(from) = pinned_commit(state) else {
        return Err(Refused(format!(
            "no git baseline is pinned in `{}` (no referee has judged this workspace yet, or it \
             had no commit when the referee started): `--commit` re-pins a git baseline; accept \
             the work task by task with `--task`",
            state.display()
        ))
        .into());
    };
    let (root2, rev2) = (root.to_path_buf(), rev.to_string());
    let read = bounded(move || -> Result<_, Refused> {
        let cannot = |e: &dyn std::error::Error| {
            Refused(format!(
                "cannot accept `{rev2}`: {}",
                crate::error::chain(e)
            ))
        };
        let repo = Repo::open(&root2)
            .map_err(|e| cannot(&e))?
            .ok_or_else(|| Refused("the workspace is not a git work tree".into()))?;
        let to = repo
            .resolve(&rev2)
            .map_err(|e| cannot(&e))?
            .ok_or_else(|| Refused(format!("`{rev2}` names no commit")))?;
        let descends = repo
            .descends_from(to, from, HISTORY_LIMIT)
            .map_err(|e| cannot(&e))?;
        let trees = match descends {
            Some(true) => Some((
                repo.tree(from).map_err(|e| cannot(&e))?,
                repo.tree(to).map_err(|e| cannot(&e))?,
            )),
            _ => None,
        };
        // Each link the commit adds or points elsewhere, with where its text leads.
        let mut links = BTreeMap::new();
        if let Some((old, new)) = &trees {
            for (path, e) in new.entries.iter().filter(|(p, e)| {
                e.kind == crate::workspace::gitread::EntryKind::Symlink
                    && old.entries.get(*p) != Some(e)
            }) {
                let target = repo.blob(e.oid).map_err(|e| cannot(&e))?;
                let path = name::encode(path);
                if let Some(to) = crate::workspace::link::resolve(&path, &target) {
                    links.insert(path, to);
                }
            }
        }
        Ok((to, descends, trees, links))
    });
    let (to, descends, trees, links) = match read {
        None => {
            return Err(Refused(format!(
                "the repository could not be read within {} s: nothing was accepted",
                crate::workspace::baseline::GIT_READ_LIMIT.as_secs()
            ))
            .into())
        }
        Some(r) => r?,
    };
    let short = |c: &gix::ObjectId| c.to_string().chars().take(12).collect::<String>();
    let Some((old, new)) = trees else {
        let why = match descends {
            Some(false) => "does not descend from",
            _ => "was not found to descend (within a million commits) from",
        };
        return Err(Refused(format!(
            "`{rev}` ({}) {why} the pinned baseline {}: the baseline only moves forward \
             (a human starts the referee again with another `--baseline` to move it elsewhere)",
            short(&to),
            short(&from)
        ))
        .into());
    };
    // Each changed path, with what the commit holds there now (`None`: removed).
    let mut now: BTreeMap<String, Option<BaseEntry>> = BTreeMap::new();
    for (path, e) in &old.entries {
        let after = new.entries.get(path);
        if after != Some(e) {
            now.insert(name::encode(path), after.copied());
        }
    }
    for (path, e) in new
        .entries
        .iter()
        .filter(|(p, _)| !old.entries.contains_key(*p))
    {
        now.insert(name::encode(path), Some(*e));
    }
    let changed: Vec<String> = now.keys().cloned().collect();
    // A protected path, or a way to one: a link the commit adds (or points elsewhere) whose
    // text leads to a protected path, which the veto holds against any task (`Linked`). Once
    // in the baseline, the link would be no change any more.
    let is_protected = |p: &str| protected.iter().any(|g| g.is_match(p));
    let hit: Vec<String> = changed
        .iter()
        .filter(|p| is_protected(p) || links.get(*p).is_some_and(|to| is_protected(to)))
        .cloned()
        .collect();
    if !hit.is_empty() && !protected_too {
        return Err(Refused(format!(
            "`{rev}` ({}) changes protected path(s) {}: give `--protected-too` if the \
             orchestrator means to move the baseline of those too",
            short(&to),
            hit.iter()
                .map(|p| match links.get(p).filter(|to| is_protected(to)) {
                    Some(to) => format!("{} (a link to {})", name::display(p), name::display(to)),
                    None => name::display(p).to_string(),
                })
                .collect::<Vec<_>>()
                .join(", ")
        ))
        .into());
    }
    let mut kept = accepted::load(state)?.unwrap_or_default();
    // What the commit changed that no task's accepted work accounts for: the orchestrator's own
    // work, or anything else its commit took along (a worker's staged change rides a plain
    // `git commit`). Accepted all the same (that is what `--commit` is for), but named.
    let unjudged: Vec<String> = now
        .iter()
        .filter(|(p, e)| !as_accepted(state, kept.paths.get(*p), e.as_ref(), to.kind()))
        .map(|(p, _)| p.clone())
        .collect();
    // What the commit changed is measured against the commit from now on; what it left alone
    // keeps what was accepted on it (accepted work not committed yet).
    for p in &changed {
        kept.paths.remove(p);
    }
    kept.commit = Some(to.to_string());
    kept.generation += 1;
    kept.log.push(Entry {
        generation: kept.generation,
        at: chrono::Utc::now().to_rfc3339(),
        task: None,
        attempt: None,
        paths: changed.clone(),
        commit: Some(to.to_string()),
        from: Some(from.to_string()),
        protected: hit.clone(),
        unjudged: unjudged.clone(),
        start: false,
    });
    accepted::save(state, &kept, &[])?;
    Ok(DoneCommit {
        commit: to.to_string(),
        from: from.to_string(),
        generation: kept.generation,
        paths: changed,
        protected: hit,
        unjudged,
    })
}

/// Whether the commit's entry `now` at a path is exactly what `accept --task` accepted there
/// (`accepted`): the same bytes and executable bit, or removed as accepted.
fn as_accepted(
    state: &Path,
    accepted: Option<&AcceptedPath>,
    now: Option<&BaseEntry>,
    hash: gix::hash::Kind,
) -> bool {
    use crate::workspace::gitread::{blob_oid_of, EntryKind};
    match (accepted, now) {
        (Some(AcceptedPath::Absent), None) => true,
        (Some(AcceptedPath::Link { sha256 }), Some(e)) => {
            e.kind == EntryKind::Symlink
                && accepted::blob(state, sha256).is_some_and(|b| blob_oid_of(hash, &b) == e.oid)
        }
        (Some(AcceptedPath::File { sha256, exec }), Some(e)) => {
            let kind_ok = match e.kind {
                EntryKind::File => !exec,
                EntryKind::Executable => *exec,
                EntryKind::Symlink | EntryKind::Submodule => false,
            };
            kind_ok && accepted::blob(state, sha256).is_some_and(|b| blob_oid_of(hash, &b) == e.oid)
        }
        _ => false,
    }
}
