//! The referee's memory of judged task attempts: per task, each attempt judged
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

/// The store's directory in the referee's state directory `state` (out of the
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
        // Each added line's positions by text, first first: a removed line cancels the first
        // added line equal to it still kept. Indexed, so a hunk of 100,000 lines each side
        // costs linear time, not the 10 billion comparisons of a search per removed line.
        let mut at: std::collections::HashMap<String, std::collections::VecDeque<usize>> =
            std::collections::HashMap::new();
        for (i, a) in kept_added.iter().enumerate() {
            if let Some(a) = a {
                at.entry(a.clone()).or_default().push_back(i);
            }
        }
        for r in removed.drain(..) {
            match at.get_mut(&r).and_then(|q| q.pop_front()) {
                Some(i) => kept_added[i] = None,
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

    /// How many distinct records of a task were judged replays (or records of a task never
    /// opened) and REJECTed: not attempts, so nothing of them is kept, but each is a REJECT the
    /// referee judged, and the REJECT cap counts it. `besides`: the hash of the record being
    /// judged, not counted (a pending replay is judged again on every event; its own REJECT is
    /// counted once, as the one judged now).
    pub fn replays(&self, task_id: &str, besides: Option<&str>) -> usize {
        read_replays(&self.task_dir(task_id))
            .iter()
            .filter(|h| Some(h.as_str()) != besides)
            .count()
    }

    /// Notes a REJECTed replay of a task by its record's hash (once per distinct record: the
    /// daemon judges a pending record again on every event).
    pub fn keep_replay(&self, task_id: &str, record_hash: &str) -> std::io::Result<()> {
        let tdir = self.task_dir(task_id);
        let mut known = read_replays(&tdir);
        if !known.insert(record_hash.to_string()) {
            return Ok(());
        }
        ensure_real_dir(&self.dir)?;
        ensure_real_dir(&tdir)?;
        let text: String = known.iter().map(|h| format!("{h}\n")).collect();
        crate::atomic::write_atomic(&tdir, REPLAYS_FILE, text).map(|_| ())
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

/// The REJECTed replays of a task, by record hash, in its directory (not a `*.json`: never
/// read as an attempt).
const REPLAYS_FILE: &str = "replays";

/// The record hashes in a task directory's [`REPLAYS_FILE`] (a hash is 64 hex digits; a file
/// larger than any the referee writes is not read).
fn read_replays(tdir: &Path) -> std::collections::BTreeSet<String> {
    let path = tdir.join(REPLAYS_FILE);
    let ok = std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_file() && m.len() <= 1 << 20);
    if !ok {
        return Default::default();
    }
    std::fs::read_to_string(&path)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.len() == 64 && l.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(str::to_string)
        .collect()
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
mod tests;
