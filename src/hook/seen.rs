//! What each tool call changed. After a tool call the referee keeps, per session, the
//! workspace's difference from its baseline as it saw it (each changed path and its content's
//! hash) in the state directory (`hook-<task>.seen.json`); the next call's changes are the
//! paths whose hash differs from that view. PostToolUse names only the findings on those paths:
//! an earlier shell write is the earlier call's, never the next edit's.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::workspace::Workspace;

/// Each changed path and its content's SHA-256 (`None`: removed).
pub(super) type Snapshot = BTreeMap<String, Option<String>>;

pub(super) fn snapshot(ws: &Workspace) -> Snapshot {
    ws.changes()
        .into_iter()
        .flatten()
        .map(|(path, _)| {
            let hash = ws.current_digest(path).ok().flatten().map(|d| d.sha256);
            (path.clone(), hash)
        })
        .collect()
}

fn file_name(task: &str) -> String {
    format!(
        "hook-{}.seen.json",
        crate::workspace::name::file_stem_for(task)
    )
}

/// The view kept by the session's last tool call, if any (and readable).
pub(super) fn load(state: &Path, task: &str) -> Option<Snapshot> {
    use std::io::Read as _;
    let f = std::fs::File::open(state.join(file_name(task))).ok()?;
    let mut bytes = Vec::new();
    f.take(64 << 20).read_to_end(&mut bytes).ok()?;
    serde_json::from_slice(&bytes).ok()
}

/// Keeps `s` as the session's view; a failure only costs the next call its attribution.
pub(super) fn store(state: &Path, task: &str, s: &Snapshot) {
    let Ok(text) = serde_json::to_string(s) else {
        return;
    };
    if let Err(e) =
        crate::outputs::write_atomic(&crate::outputs::OutDir::at(state), &file_name(task), text)
    {
        tracing::warn!("cannot keep what the hook saw: {e}");
    }
}

/// The paths whose state differs between two views.
pub(super) fn changed(before: &Snapshot, now: &Snapshot) -> BTreeSet<String> {
    before
        .keys()
        .chain(now.keys())
        .filter(|p| before.get(*p) != now.get(*p))
        .cloned()
        .collect()
}
