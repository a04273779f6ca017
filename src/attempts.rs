//! The referee's memory of judged task attempts (SPEC §7, §8): per task, each attempt judged
//! (its number, verdict, grade, escalation, the hash of the record judged, its diff and the
//! hash of its whitespace-normalised diff), and across tasks the REJECTed diffs, so the loop
//! guards and the replay check hold across restarts and new task ids. It owns the directory
//! layout and the one-to-one file names made from task ids ([`file_name`]); it judges nothing.
//!
//! Where the store lives is decided in one place, [`dir_for`]: today `WORKSPACE/.referee/attempts`.
//!
//! Layout: `DIR/<file_name(task_id)>/<attempt>.json` ([`Kept`]) with `<attempt>.diff` beside it,
//! and `DIR/.index` ([`INDEX_FILE`]): what each task's directory held when last read, a shortcut
//! that is written by whoever reads the store and believed only where it still holds.

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
    /// The index's racy-timestamp margin, ns ([`MARGIN_NS`]; tests shorten it).
    margin_ns: i128,
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
            margin_ns: MARGIN_NS,
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

    /// Every task's kept attempts, read now: each task's directory as [`INDEX_FILE`] remembers
    /// it while that directory and each of its attempt files are as they were then (see
    /// [`Index`]), else read from the directory (and the index written again).
    pub fn everyone(&self) -> Everyone {
        self.everyone_counted().0
    }

    /// [`Store::everyone`], and how many tasks' attempts the index answered for.
    fn everyone_counted(&self) -> (Everyone, usize) {
        // Taken before anything is read: what changes after it is never taken as known.
        let read_at = now_ns();
        let Ok(rd) = std::fs::read_dir(&self.dir) else {
            return (Everyone::default(), 0);
        };
        let index = Index::load(&self.dir.join(INDEX_FILE));
        let mut fresh = Index {
            version: INDEX_VERSION,
            read_at,
            tasks: Vec::new(),
        };
        // Tasks read from their directories whose reading a later judgment may believe.
        let (mut known, mut learnt, mut named) = (0, 0, 0);
        let mut all = Vec::new();
        for e in rd.flatten() {
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let path = e.path();
            let name = e.file_name().to_str().map(str::to_string);
            let remembered = index.as_ref().and_then(|i| {
                let t = i.task(name.as_deref()?)?;
                named += 1;
                i.stands(t, &path, self.margin_ns).then_some(t)
            });
            let kept = match remembered {
                Some(t) => {
                    known += 1;
                    fresh.tasks.push(t.clone());
                    t.files.iter().filter_map(|f| f.kept.clone()).collect()
                }
                None => {
                    let (kept, seen) = read_task_dir_seen(&path, false);
                    if let (Some(name), Some((dir, files))) = (&name, seen) {
                        let t = IndexedTask {
                            name: name.clone(),
                            dir,
                            files,
                        };
                        learnt += usize::from(!t.racy(read_at, self.margin_ns));
                        fresh.tasks.push(t);
                    }
                    kept.into_iter().map(|(k, _)| k).collect()
                }
            };
            all.push((name, kept));
        }
        // Entries of tasks whose directory is gone.
        let forgotten = index.as_ref().map_or(0, |i| i.tasks.len()) != named;
        // Not for a task changed just now (a live referee keeps an attempt, then judges the
        // next event within the margin): written again, it would not be believed either.
        if learnt > 0 || forgotten {
            fresh.tasks.sort_by(|a, b| a.name.cmp(&b.name));
            // Only a shortcut: one that cannot be written costs the next read its directories.
            let _ = fresh.save(&self.dir.join(INDEX_FILE));
        }
        (Everyone(all), known)
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
    read_task_dir_seen(dir, diffs).0
}

/// [`read_task_dir`], and what the [`Index`] may remember of it: the directory's identity taken
/// before it was listed, and each `*.json` entry looked at with what it gave. `None` when the
/// answer also rests on something it does not hold (an entry that could not be looked at, a
/// diff read for an attempt kept before diff hashes, a name that is not UTF-8, a directory
/// that moved while it was read).
fn read_task_dir_seen(
    dir: &Path,
    diffs: bool,
) -> (Vec<KeptAttempt>, Option<(FileId, Vec<IndexedFile>)>) {
    let before = std::fs::symlink_metadata(dir).ok().map(|m| file_id(&m));
    let Ok(rd) = std::fs::read_dir(dir) else {
        return (Vec::new(), None);
    };
    let mut out = Vec::new();
    let mut seen = Some(Vec::new());
    for e in rd.flatten() {
        let Some(name) = e.file_name().to_str().map(str::to_string) else {
            // Not a `<n>.json` (those are UTF-8); the directory's identity covers it.
            continue;
        };
        let Some(stem) = name.strip_suffix(".json") else {
            continue;
        };
        let Ok(meta) = std::fs::symlink_metadata(e.path()) else {
            seen = None;
            continue;
        };
        let mut remember = |kept: Option<&Kept>| {
            if let Some(s) = seen.as_mut() {
                s.push(IndexedFile {
                    name: name.clone(),
                    id: file_id(&meta),
                    kept: kept.cloned(),
                });
            }
        };
        if !meta.is_file() || meta.len() > 1 << 20 {
            remember(None);
            continue;
        }
        let Some(mut kept) = parsed(&e.path(), &meta) else {
            remember(None);
            continue;
        };
        if stem != kept.attempt.to_string() {
            remember(None);
            continue;
        }
        if kept.diff_hash.is_none() {
            seen = None;
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
        if let Some(s) = seen.as_mut() {
            s.push(IndexedFile {
                name,
                id: file_id(&meta),
                kept: Some(kept.clone()),
            });
        }
        out.push((kept, diff.filter(|_| diffs)));
    }
    out.sort_by_key(|(k, _)| k.attempt);
    let after = std::fs::symlink_metadata(dir).ok().map(|m| file_id(&m));
    let seen = match (before, seen) {
        (Some(b), Some(mut files)) if after == Some(b) => {
            files.sort_by(|x, y| x.name.cmp(&y.name));
            Some((b, files))
        }
        _ => None,
    };
    (out, seen)
}

/// A kept attempt's file (or a task's directory) as it was when read: device, inode, size, mtime
/// and ctime (ns).
type FileId = (u64, u64, u64, i128, i128);

/// The file in the store's directory remembering what each task's directory held
/// ([`Index`]); a name no task's directory takes ([`file_name`] never starts with a `.`).
pub const INDEX_FILE: &str = ".index";

/// [`Index`]'s layout version: an index of another version is not read.
const INDEX_VERSION: u32 = 1;

/// The kept attempts as read from each task's directory, so that one judgment does not list and
/// parse every task's directory (the loop guards compare each task with every other one: a
/// cost that grew with the session's history). The persistent form of [`PARSED`], trusted on
/// the same terms: the store is the referee's own and written by rename, so a directory and
/// each of its attempt files still with the identity taken when they were read hold what was
/// read then. One more rule, git's racy-timestamp one (as in the stat cache): a directory or
/// file last changed less than the margin before the read is never taken from the index (a
/// change in the same timestamp tick would leave its times as they were).
///
/// Not part of the store's contract: a missing, torn, unparsable or foreign index (any
/// version but [`INDEX_VERSION`]), or one whose entry for a task does not match its directory,
/// only means that task's directory is read; never that it has no attempts. A task directory
/// the index does not name is read; a task the index names that has no directory is not there.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Index {
    version: u32,
    /// The wall clock (ns since the epoch) before the reads it remembers.
    read_at: i128,
    tasks: Vec<IndexedTask>,
}

/// One task's directory as read.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct IndexedTask {
    name: String,
    /// The directory's identity, the same before and after it was listed.
    dir: FileId,
    /// Every `*.json` entry looked at, sorted by name, with the attempt it gave (`None`: not
    /// one, as [`read_task_dir`] skips it).
    files: Vec<IndexedFile>,
}

impl IndexedTask {
    /// Whether the directory or one of its files was changed within `margin` ns before
    /// `read_at`: then what was read is not believed later.
    fn racy(&self, read_at: i128, margin: i128) -> bool {
        let racy = |id: &FileId| id.3.max(id.4) >= read_at.saturating_sub(margin);
        racy(&self.dir) || self.files.iter().any(|f| racy(&f.id))
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct IndexedFile {
    name: String,
    id: FileId,
    kept: Option<Kept>,
}

/// An index larger than this is not read (a damaged one).
const INDEX_MAX: u64 = 64 << 20;

/// The racy-timestamp margin: 2 s, FAT's timestamp granularity, as the stat cache's.
const MARGIN_NS: i128 = 2_000_000_000;

fn now_ns() -> i128 {
    match std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
        Ok(d) => i128::try_from(d.as_nanos()).unwrap_or(i128::MAX),
        // A clock before 1970: nothing read now is ever trusted later.
        Err(_) => i128::MIN,
    }
}

impl Index {
    /// The index at `path`; `None` when it is missing, not a regular file, too large, or not
    /// an index of this version.
    fn load(path: &Path) -> Option<Index> {
        let meta = std::fs::symlink_metadata(path).ok()?;
        if !meta.is_file() || meta.len() > INDEX_MAX {
            return None;
        }
        let index: Index = serde_json::from_slice(&std::fs::read(path).ok()?).ok()?;
        (index.version == INDEX_VERSION).then_some(index)
    }

    /// The entry of the task whose directory is `name` (the entries are kept sorted by name:
    /// in an index that is not, an entry may not be found, and its directory is read).
    fn task(&self, name: &str) -> Option<&IndexedTask> {
        let i = self
            .tasks
            .binary_search_by(|t| t.name.as_str().cmp(name))
            .ok()?;
        self.tasks.get(i)
    }

    /// Whether the task's directory at `dir` still holds what `t`, one of this index's
    /// entries, remembers: the directory and each remembered file with the identity taken
    /// then, none of them changed within `margin` ns before the read.
    fn stands(&self, t: &IndexedTask, dir: &Path, margin: i128) -> bool {
        if t.racy(self.read_at, margin) {
            return false;
        }
        let same =
            |p: &Path, id: &FileId| std::fs::symlink_metadata(p).is_ok_and(|m| file_id(&m) == *id);
        same(dir, &t.dir) && t.files.iter().all(|f| same(&dir.join(&f.name), &f.id))
    }

    /// Writes the index at `path` by rename, without fsync: one lost to a crash, or torn, only
    /// costs the next judgment a read of each directory.
    fn save(&self, path: &Path) -> std::io::Result<()> {
        let dir = path.parent().unwrap_or(Path::new("."));
        let text = serde_json::to_vec(self).map_err(std::io::Error::other)?;
        let mut tmp = tempfile::Builder::new()
            .prefix(&crate::atomic::temp_prefix(INDEX_FILE))
            .tempfile_in(dir)?;
        std::io::Write::write_all(&mut tmp, &text)?;
        tmp.persist(path).map_err(|e| e.error)?;
        Ok(())
    }
}

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
    use std::os::unix::ffi::OsStrExt;

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

    /// A task directory's name and its kept attempts.
    type ByTask = (Option<String>, Vec<Kept>);

    /// Every task's kept attempts read from the directories alone, as [`Store::everyone`] did
    /// before the index (the slow path the index is held to), sorted by task for comparing.
    fn from_dirs(store: &Store) -> Vec<ByTask> {
        let mut all: Vec<_> = std::fs::read_dir(store.dir())
            .unwrap()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
            .map(|e| {
                let kept = read_task_dir(&e.path(), false);
                let name = e.file_name().to_str().map(str::to_string);
                (name, kept.into_iter().map(|(k, _)| k).collect())
            })
            .collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    /// [`Store::everyone`], sorted by task, and how many tasks the index answered for.
    fn everyone_sorted(store: &Store) -> (Vec<ByTask>, usize) {
        let (Everyone(mut all), known) = store.everyone_counted();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        (all, known)
    }

    fn kept(task: &str, attempt: u64, graded: &str) -> Kept {
        kept_of(task, attempt, graded, &format!("+{task}{attempt}\n"))
    }

    /// An attempt of `task` graded `graded`, whose change was `diff`.
    fn kept_of(task: &str, attempt: u64, graded: &str, diff: &str) -> Kept {
        Kept {
            attempt,
            verdict: graded.into(),
            graded: graded.into(),
            escalation: None,
            task_id: task.into(),
            record_hash: Some("r".into()),
            diff_hash: Some(diff_hash(diff)),
        }
    }

    /// The index answers as the directories do, and only for the tasks whose directory and
    /// attempt files are as it remembers: an attempt added, a file rewritten in place (same
    /// inode), a task added or removed, are all read from the directories.
    #[test]
    fn the_attempts_index_answers_as_the_directories_do() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("attempts"));
        // No margin: what was read is trusted at once (the racy rule has its own test).
        store.margin_ns = -1_000_000_000;
        assert_eq!(everyone_sorted(&store), (Vec::new(), 0), "no store yet");
        store.keep(&kept("t 1", 1, "REJECT"), "+a\n").unwrap();
        store.keep(&kept("t 1", 2, "MINOR_ISSUES"), "+b\n").unwrap();
        store.keep(&kept("u", 1, "REJECT"), "+c\n").unwrap();
        // A file that is no attempt, and a task directory with a name that is not UTF-8.
        std::fs::write(dir.path().join("attempts/u/7.json"), "{ not json").unwrap();
        let odd = std::ffi::OsStr::from_bytes(b"v\xff");
        std::fs::create_dir(dir.path().join("attempts").join(odd)).unwrap();
        let first = everyone_sorted(&store);
        assert_eq!(first, (from_dirs(&store), 0), "read from the directories");
        assert!(dir.path().join("attempts").join(INDEX_FILE).is_file());
        assert_eq!(first.0.len(), 3);
        assert_eq!(
            first.0[1],
            (
                Some("t%201".into()),
                vec![kept("t 1", 1, "REJECT"), kept("t 1", 2, "MINOR_ISSUES")]
            )
        );
        let second = everyone_sorted(&store);
        assert_eq!(
            second,
            (from_dirs(&store), 2),
            "from the index, but the odd name"
        );

        // A new attempt of a task: that task is read again.
        store.keep(&kept("u", 2, "APPROVE"), "+d\n").unwrap();
        assert_eq!(everyone_sorted(&store), (from_dirs(&store), 1));
        assert_eq!(everyone_sorted(&store), (from_dirs(&store), 2));

        // Rewritten in place (same inode, same directory entry): its size and ctime move.
        let path = dir.path().join("attempts/u/1.json");
        let text = std::fs::read_to_string(&path).unwrap();
        std::fs::write(&path, text.replace("REJECT", "ESCALATE")).unwrap();
        let (now, known) = everyone_sorted(&store);
        assert_eq!((&now, known), (&from_dirs(&store), 1));
        assert!(now
            .iter()
            .flat_map(|(_, k)| k)
            .any(|k| k.graded == "ESCALATE"));
        // The file that was no attempt, now one.
        std::fs::write(
            dir.path().join("attempts/u/7.json"),
            serde_json::to_string(&kept("u", 7, "REJECT")).unwrap(),
        )
        .unwrap();
        let (now, known) = everyone_sorted(&store);
        assert_eq!((&now, known), (&from_dirs(&store), 1));
        assert!(now.iter().flat_map(|(_, k)| k).any(|k| k.attempt == 7));

        // A task added, a task removed.
        store.keep(&kept("w", 1, "REJECT"), "+e\n").unwrap();
        assert_eq!(everyone_sorted(&store), (from_dirs(&store), 2));
        std::fs::remove_dir_all(dir.path().join("attempts/t%201")).unwrap();
        let (now, known) = everyone_sorted(&store);
        assert_eq!((&now, known), (&from_dirs(&store), 2));
        assert!(now.iter().all(|(n, _)| n.as_deref() != Some("t%201")));
        assert_eq!(everyone_sorted(&store).1, 2, "the index forgot it");
    }

    /// A damaged index (torn, not JSON, another version, a directory or a symlink in its place)
    /// and a forged one (entries whose identities are not those of the directories: another
    /// store's, or made up to say "no attempts") are never believed: every task is read from
    /// its directory, none is ever taken to have no attempts, and the index is written again.
    #[test]
    fn a_damaged_or_forged_attempts_index_is_not_believed() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(&dir.path().join("attempts"));
        store.margin_ns = -1_000_000_000;
        store.keep(&kept("t", 1, "REJECT"), "+a\n").unwrap();
        store.keep(&kept("u", 1, "REJECT"), "+b\n").unwrap();
        let truth = from_dirs(&store);
        assert_eq!(everyone_sorted(&store), (truth.clone(), 0));
        let index_path = dir.path().join("attempts").join(INDEX_FILE);
        let good = std::fs::read(&index_path).unwrap();
        assert_eq!(everyone_sorted(&store), (truth.clone(), 2));

        let mut forged: Index = serde_json::from_slice(&good).unwrap();
        for t in &mut forged.tasks {
            for f in &mut t.files {
                f.kept = None;
            }
        }
        let says_none = serde_json::to_vec(&forged).unwrap();
        let mut moved: Index = serde_json::from_slice(&good).unwrap();
        for t in &mut moved.tasks {
            t.dir.1 += 1;
            t.files.clear();
        }
        let other_dirs = serde_json::to_vec(&moved).unwrap();
        let mut v2: Index = serde_json::from_slice(&good).unwrap();
        v2.version = INDEX_VERSION + 1;
        let other_version = serde_json::to_vec(&v2).unwrap();
        let damaged: Vec<(&str, Vec<u8>)> = vec![
            ("torn", good[..good.len() / 2].to_vec()),
            ("empty", Vec::new()),
            ("not json", b"\xff\x00garbage".to_vec()),
            ("another version", other_version),
            ("other directories, no files", other_dirs),
        ];
        for (what, bytes) in damaged {
            std::fs::write(&index_path, &bytes).unwrap();
            assert_eq!(everyone_sorted(&store), (truth.clone(), 0), "{what}");
            assert_eq!(
                everyone_sorted(&store),
                (truth.clone(), 2),
                "{what}: written again"
            );
        }
        // Made up with the right identities but no attempts in them: taken, as the files
        // themselves would be (the store is the referee's own, SPEC §8), but only while every
        // identity holds: the next attempt kept shows the task as it is.
        std::fs::write(&index_path, &says_none).unwrap();
        store.keep(&kept("t", 2, "REJECT"), "+c\n").unwrap();
        store.keep(&kept("u", 2, "REJECT"), "+d\n").unwrap();
        assert_eq!(everyone_sorted(&store), (from_dirs(&store), 0));
        for (what, make) in [
            (
                "a directory",
                (|p: &Path| std::fs::create_dir(p)) as fn(&Path) -> std::io::Result<()>,
            ),
            ("a symlink", |p: &Path| {
                std::os::unix::fs::symlink("/dev/zero", p)
            }),
        ] {
            std::fs::remove_file(&index_path).ok();
            make(&index_path).unwrap();
            assert_eq!(everyone_sorted(&store), (from_dirs(&store), 0), "{what}");
            assert!(
                std::fs::symlink_metadata(&index_path).unwrap().is_file() || what == "a directory"
            );
            let _ = std::fs::remove_dir(&index_path);
        }
    }

    /// Git's racy-timestamp rule: a task directory changed less than the margin before the
    /// index read it is read again (a change in the same timestamp tick leaves its times as
    /// they were), and only then; such a reading alone is not written (it would not be
    /// believed either).
    #[test]
    fn a_task_changed_just_before_the_index_read_it_is_read_again() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("attempts"));
        let path = dir.path().join("attempts").join(INDEX_FILE);
        store.keep(&kept("t", 1, "REJECT"), "+a\n").unwrap();
        assert_eq!(everyone_sorted(&store), (from_dirs(&store), 0));
        assert!(!path.exists(), "nothing a later judgment would believe");
        // Written by a reader with no margin: the same readings, with the default margin,
        // are still within it.
        let mut eager = store.clone();
        eager.margin_ns = -1_000_000_000;
        assert_eq!(everyone_sorted(&eager), (from_dirs(&store), 0));
        assert_eq!(everyone_sorted(&eager), (from_dirs(&store), 1));
        assert_eq!(
            everyone_sorted(&store),
            (from_dirs(&store), 0),
            "within the margin"
        );
        // The same index as if written long after the files: believed.
        let mut index: Index = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
        index.read_at += 3 * MARGIN_NS;
        std::fs::write(&path, serde_json::to_vec(&index).unwrap()).unwrap();
        assert_eq!(everyone_sorted(&store), (from_dirs(&store), 1));
    }

    #[test]
    fn the_store_keeps_attempts_per_task_and_finds_rejects_elsewhere() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("attempts"));
        assert_eq!(store.last("t 1"), None);
        let kept = |task: &str, attempt: u64, graded: &str| kept_of(task, attempt, graded, "+a\n");
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
