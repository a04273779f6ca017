//! The referee's memory of judged task attempts (SPEC §7, §8): per task, each attempt judged
//! (its number, verdict, grade, escalation, the hash of the record judged, its diff and the
//! hash of its whitespace-normalised diff), and across tasks the REJECTed diffs, so the loop
//! guards and the replay check hold across restarts and new task ids. It owns the directory
//! layout and the one-to-one file names made from task ids ([`file_name`]); it judges nothing.
//!
//! Where the store lives is decided in one place, [`dir_for`]: today `WORKSPACE/.referee/attempts`.
//!
//! Layout: `DIR/<file_name(task_id)>/<attempt>.json` ([`Kept`]) with `<attempt>.diff` beside it.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::workspace::sha256;

/// The store's directory in the referee's state directory `state` (SPEC §8: out of the
/// worker's reach): the one place that says where the attempts live.
pub fn dir_for(state: &Path) -> PathBuf {
    state.join("attempts")
}

/// The store of a workspace being judged: in its state directory; `None` for a workspace
/// opened without one (a library caller), which then has no memory of attempts (never one
/// kept inside the workspace, where the worker could edit it).
pub fn dir_for_workspace(ws: &crate::workspace::Workspace) -> Option<PathBuf> {
    ws.state().map(dir_for)
}

/// What is kept of an attempt in `<task>/<attempt>.json` (its diff beside it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Kept {
    pub attempt: u64,
    pub verdict: String,
    pub graded: String,
    /// Why the attempt was escalated (absent in attempts kept before this field).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub escalation: Option<String>,
    /// The task id (absent in attempts kept before this field: then the directory's).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub task_id: String,
    /// [`record_hash`] of the record judged: the same record judged again is not a replay.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_hash: Option<String>,
    /// [`diff_hash`] of the attempt's diff.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff_hash: Option<String>,
}

/// A kept attempt and its diff (`None` when the diff is missing or unreadable).
pub type KeptAttempt = (Kept, Option<String>);

/// A file or directory name made from a task id, one-to-one ([`name::file_stem_for`]: the one
/// escaping every name made from a task id goes through; `t 1` is `t%201`, `t_1` stays).
///
/// [`name::file_stem_for`]: crate::workspace::name::file_stem_for
pub fn file_name(task_id: &str) -> String {
    crate::workspace::name::file_stem_for(task_id)
}

/// The hash of a task record as judged: of its parsed fields (so rewriting it with the same
/// content is the same record).
pub fn record_hash(raw: &serde_json::Map<String, serde_json::Value>) -> String {
    sha256(&serde_json::to_vec(raw).unwrap_or_default())
}

/// A diff with whitespace-only differences taken out, for the loop guards. The rule, line by
/// line of the unified diff:
/// - file headers (`--- `, `+++ `) are kept; hunk headers (`@@`) and context lines are dropped
///   (their numbers and neighbours move when blank lines come and go);
/// - in each added or removed line, every run of whitespace becomes one space, and trailing
///   whitespace is dropped;
/// - a line then blank (a blank line added or removed) is dropped;
/// - within a hunk, a removed line and an added line equal after this are both dropped (a
///   whitespace-only edit of a line).
pub fn normalise(diff: &str) -> String {
    let mut out = String::new();
    let mut removed: Vec<String> = Vec::new();
    let mut added: Vec<String> = Vec::new();
    let flush = |out: &mut String, removed: &mut Vec<String>, added: &mut Vec<String>| {
        let mut kept_added: Vec<Option<String>> = added.drain(..).map(Some).collect();
        for r in removed.drain(..) {
            match kept_added.iter_mut().find(|a| a.as_deref() == Some(&r)) {
                Some(a) => *a = None,
                None => {
                    out.push('-');
                    out.push_str(&r);
                    out.push('\n');
                }
            }
        }
        for a in kept_added.into_iter().flatten() {
            out.push('+');
            out.push_str(&a);
            out.push('\n');
        }
    };
    for line in diff.lines() {
        if line.starts_with("--- ") || line.starts_with("+++ ") || line.starts_with("@@") {
            flush(&mut out, &mut removed, &mut added);
            if !line.starts_with("@@") {
                out.push_str(line.trim_end());
                out.push('\n');
            }
            continue;
        }
        let (side, rest) = match line.as_bytes().first() {
            Some(b'+') => (&mut added, &line[1..]),
            Some(b'-') => (&mut removed, &line[1..]),
            Some(b' ') | None => continue,
            // `\ No newline at end of file`, a `??` unreadable note: kept as they are.
            Some(_) => {
                flush(&mut out, &mut removed, &mut added);
                out.push_str(line.trim_end());
                out.push('\n');
                continue;
            }
        };
        let words: Vec<&str> = rest.split_whitespace().collect();
        if words.is_empty() {
            continue;
        }
        let lead = if rest.starts_with(char::is_whitespace) {
            " "
        } else {
            ""
        };
        side.push(format!("{lead}{}", words.join(" ")));
    }
    flush(&mut out, &mut removed, &mut added);
    out
}

/// The hash of a diff's [`normalise`]d form.
pub fn diff_hash(diff: &str) -> String {
    sha256(normalise(diff).as_bytes())
}

/// Whether a diff says nothing once normalised (only file headers, or nothing).
pub fn is_empty_change(diff: &str) -> bool {
    normalise(diff)
        .lines()
        .all(|l| l.starts_with("--- ") || l.starts_with("+++ "))
}

/// The kept attempts of a workspace.
#[derive(Debug, Clone)]
pub struct Store {
    dir: PathBuf,
}

/// Every task's kept attempts (without their diffs) as read at one moment, by the name of the
/// task's directory: what one judgment compares each of its tasks with.
#[derive(Debug, Clone, Default)]
pub struct Everyone(Vec<(Option<String>, Vec<Kept>)>);

impl Everyone {
    /// Every kept attempt of every task but `task_id` whose grade is `graded` (the REJECTed
    /// diffs another task may not resubmit).
    pub fn graded_elsewhere(&self, task_id: &str, graded: &str) -> Vec<Kept> {
        let own = file_name(task_id);
        self.0
            .iter()
            .filter(|(name, _)| name.as_deref() != Some(own.as_str()))
            .flat_map(|(_, kept)| kept)
            .filter(|k| k.graded == graded && k.task_id != task_id)
            .cloned()
            .collect()
    }
}

impl Store {
    /// The store in `dir` (see [`dir_for`]); nothing is read or created until used.
    pub fn open(dir: &Path) -> Store {
        Store {
            dir: dir.to_path_buf(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn task_dir(&self, task_id: &str) -> PathBuf {
        self.dir.join(file_name(task_id))
    }

    /// The kept attempts of a task, sorted by attempt number (unreadable ones are skipped).
    pub fn attempts(&self, task_id: &str) -> Vec<KeptAttempt> {
        let mut out = read_task_dir(&self.task_dir(task_id), true);
        for (k, _) in &mut out {
            if k.task_id.is_empty() {
                k.task_id = task_id.to_string();
            }
        }
        out
    }

    /// The last attempt judged for a task.
    pub fn last(&self, task_id: &str) -> Option<Kept> {
        read_task_dir(&self.task_dir(task_id), false)
            .pop()
            .map(|(k, _)| k)
    }

    /// Whether an attempt of a task is kept already (judged before, maybe by an earlier run).
    pub fn is_kept(&self, task_id: &str, attempt: u64) -> bool {
        std::fs::symlink_metadata(self.task_dir(task_id).join(format!("{attempt}.json")))
            .is_ok_and(|m| m.is_file())
    }

    /// Every kept attempt of every task but `task_id` whose grade is `graded` (the REJECTed
    /// diffs another task may not resubmit), without their diffs.
    pub fn graded_elsewhere(&self, task_id: &str, graded: &str) -> Vec<Kept> {
        self.everyone().graded_elsewhere(task_id, graded)
    }

    /// Every task's kept attempts, read now.
    pub fn everyone(&self) -> Everyone {
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return Everyone::default();
        };
        Everyone(
            rd.flatten()
                .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
                .map(|e| {
                    let kept = read_task_dir(&e.path(), false);
                    let name = e.file_name().to_str().map(str::to_string);
                    (name, kept.into_iter().map(|(k, _)| k).collect())
                })
                .collect(),
        )
    }

    /// Keeps an attempt: its diff, then its [`Kept`] (fsynced, so a kept attempt always has its
    /// diff), creating the directories as real directories (never through a symlink).
    pub fn keep(&self, kept: &Kept, diff: &str) -> std::io::Result<()> {
        ensure_real_dir(&self.dir)?;
        let tdir = self.task_dir(&kept.task_id);
        ensure_real_dir(&tdir)?;
        crate::atomic::write_atomic(&tdir, &format!("{}.diff", kept.attempt), diff)?;
        let text = serde_json::to_string_pretty(kept).unwrap_or_default();
        crate::atomic::write_atomic(&tdir, &format!("{}.json", kept.attempt), &text)?;
        Ok(())
    }
}

/// The kept attempts in one task's directory, sorted; their diffs only when `diffs`. An
/// attempt kept before diff hashes were has its hash computed from its diff here.
fn read_task_dir(dir: &Path, diffs: bool) -> Vec<KeptAttempt> {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for e in rd.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".json") else {
            continue;
        };
        let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
            continue;
        };
        if !meta.is_file() || meta.len() > 1 << 20 {
            continue;
        }
        let Some(mut kept) = parsed(&e.path(), &meta) else {
            continue;
        };
        if stem != kept.attempt.to_string() {
            continue;
        }
        let diff = (diffs || kept.diff_hash.is_none())
            .then(|| {
                let diff_path = dir.join(format!("{stem}.diff"));
                std::fs::symlink_metadata(&diff_path)
                    .ok()
                    .filter(|m| m.is_file())
                    .and_then(|_| std::fs::read_to_string(&diff_path).ok())
            })
            .flatten();
        if kept.diff_hash.is_none() {
            kept.diff_hash = diff.as_deref().map(diff_hash);
        }
        out.push((kept, diff.filter(|_| diffs)));
    }
    out.sort_by_key(|(k, _)| k.attempt);
    out
}

/// A kept attempt's file as it was when parsed: device, inode, size, mtime and ctime (ns).
type FileId = (u64, u64, u64, i128, i128);

fn file_id(meta: &std::fs::Metadata) -> FileId {
    use std::os::unix::fs::MetadataExt;
    let ns = |s: i64, n: i64| i128::from(s) * 1_000_000_000 + i128::from(n);
    (
        meta.dev(),
        meta.ino(),
        meta.len(),
        ns(meta.mtime(), meta.mtime_nsec()),
        ns(meta.ctime(), meta.ctime_nsec()),
    )
}

/// The attempt files of this process's stores as parsed, by path, with their [`FileId`]: the
/// store is in the referee's own state directory and written by rename, so a file still with
/// that id has those bytes. A live referee judging every event then parses each kept attempt
/// once, not at every judgment (the loop guards read every task's, so that cost grew with
/// the session's history).
static PARSED: std::sync::Mutex<Option<std::collections::HashMap<PathBuf, (FileId, Kept)>>> =
    std::sync::Mutex::new(None);

/// The [`Kept`] in the file at `path`, whose metadata is `meta`; `None` if it cannot be read or
/// parsed.
fn parsed(path: &Path, meta: &std::fs::Metadata) -> Option<Kept> {
    let id = file_id(meta);
    let mut memo = PARSED.lock().ok();
    if let Some(Some((at, kept))) = memo.as_mut().map(|m| m.get_or_insert_default().get(path)) {
        if *at == id {
            return Some(kept.clone());
        }
    }
    let kept = serde_json::from_slice::<Kept>(&std::fs::read(path).ok()?).ok()?;
    if let Some(m) = memo.as_mut() {
        m.get_or_insert_default()
            .insert(path.to_path_buf(), (id, kept.clone()));
    }
    Some(kept)
}

fn ensure_real_dir(d: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(d) {
        Ok(m) if m.is_dir() => Ok(()),
        Ok(_) => Err(std::io::Error::other(format!(
            "`{}` is not a directory",
            d.display()
        ))),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => std::fs::create_dir(d),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_are_the_one_to_one_stems() {
        // The rule and its edge cases are `workspace::name`'s tests; here only the wiring.
        let names = [file_name("t 1"), file_name("t_1"), file_name("t%201")];
        assert_eq!(names, ["t%201", "t_1", "t%25201"]);
    }

    #[test]
    fn whitespace_only_differences_normalise_away() {
        let a =
            "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n";
        let b = "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,4 @@\n def f():\n-    return 1\n+    return   2  \n+\n x = 1\n-y = 1\n+y = 1 \n";
        assert_eq!(normalise(a), normalise(b));
        assert_eq!(
            normalise(a),
            "--- a/x.py\n+++ b/x.py\n- return 1\n+ return 2\n"
        );
        assert_ne!(diff_hash(a), diff_hash(&a.replace("return 2", "return 3")));
        assert!(is_empty_change("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a \n+a\n"));
        assert!(!is_empty_change(a));
    }

    /// A kept attempt is parsed once while its file stands; a file kept again (by rename) or
    /// rewritten in place is read again, and one that no longer parses is not kept.
    #[test]
    fn a_kept_attempt_rewritten_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("attempts"));
        let kept = |verdict: &str| Kept {
            attempt: 1,
            verdict: verdict.into(),
            graded: verdict.into(),
            escalation: None,
            task_id: "t".into(),
            record_hash: None,
            diff_hash: Some("h".into()),
        };
        store.keep(&kept("REJECT"), "d").unwrap();
        assert_eq!(store.last("t").unwrap().verdict, "REJECT");
        assert_eq!(store.last("t").unwrap().verdict, "REJECT");
        store.keep(&kept("APPROVE"), "d").unwrap();
        assert_eq!(store.last("t").unwrap().verdict, "APPROVE");
        assert_eq!(store.graded_elsewhere("u", "APPROVE").len(), 1);
        // In place, same inode: its size and ctime move.
        let path = dir.path().join("attempts/t/1.json");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("APPROVE", "ESCALATE")).unwrap();
        assert_eq!(store.last("t").unwrap().verdict, "ESCALATE");
        assert!(store.graded_elsewhere("u", "APPROVE").is_empty());
        std::fs::write(&path, "{ not json").unwrap();
        assert_eq!(store.last("t"), None);
    }

    #[test]
    fn the_store_keeps_attempts_per_task_and_finds_rejects_elsewhere() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("attempts"));
        assert_eq!(store.last("t 1"), None);
        let kept = |task: &str, attempt: u64, graded: &str| Kept {
            attempt,
            verdict: graded.into(),
            graded: graded.into(),
            escalation: None,
            task_id: task.into(),
            record_hash: Some("r".into()),
            diff_hash: Some(diff_hash("+a\n")),
        };
        store.keep(&kept("t 1", 1, "REJECT"), "+a\n").unwrap();
        store.keep(&kept("t 1", 2, "MINOR_ISSUES"), "+b\n").unwrap();
        store.keep(&kept("t_1", 1, "REJECT"), "+c\n").unwrap();
        assert_eq!(store.last("t 1").unwrap().attempt, 2);
        assert!(store.is_kept("t 1", 1) && !store.is_kept("t 1", 3));
        let all = store.attempts("t 1");
        assert_eq!(all.len(), 2);
        assert_eq!(all[1].1.as_deref(), Some("+b\n"));
        assert_eq!(store.attempts("t_1").len(), 1);
        let elsewhere = store.graded_elsewhere("t 1", "REJECT");
        assert_eq!(elsewhere.len(), 1);
        assert_eq!(elsewhere[0].task_id, "t_1");
        // An attempt kept before `diff_hash` and `task_id` existed.
        let old = dir.path().join("attempts").join("old");
        std::fs::create_dir(&old).unwrap();
        std::fs::write(
            old.join("1.json"),
            r#"{"attempt": 1, "verdict": "REJECT", "graded": "REJECT"}"#,
        )
        .unwrap();
        std::fs::write(old.join("1.diff"), "+a \n").unwrap();
        let old_kept = store.attempts("old");
        assert_eq!(old_kept[0].0.diff_hash, Some(diff_hash("+a\n")));
        assert_eq!(old_kept[0].0.task_id, "old");
    }
}
