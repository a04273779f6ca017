//! What changed in a workspace (a source tree a coding agent edits) against its baseline
//! (SPEC §7): the baseline itself (a git commit, a pristine directory, or a snapshot the referee
//! took and keeps in `.referee/`), the change set (added, modified, removed paths), the contents
//! on both sides, unified diffs, and the task records. It reads; the only thing it ever writes
//! is a start snapshot in the referee's state directory when asked ([`snapshot::create`]).
//!
//! `.git/`, `.tasks/`, `.referee/` and (in a git work tree) paths an ignore rule excludes are
//! never part of a change. Nothing here judges: a file that cannot be read is data (its reason),
//! for the checks to make INCONCLUSIVE.

pub mod diff;
pub mod git;
pub mod record;
pub mod snapshot;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use crate::artifacts::fsread::{self, sha256_hex, FileData, ReadError};

/// The referee's own folder in a workspace.
pub const OUTPUT_DIR: &str = ".referee";
/// Where task records live.
pub const TASKS_DIR: &str = ".tasks";
/// Top-level names that are never part of a change.
pub const EXCLUDED: &[&str] = &[".git", TASKS_DIR, OUTPUT_DIR];

const NO_SNAPSHOT: &str = "no baseline: the workspace is not a git work tree, no --baseline-dir \
     was given, and no start snapshot is kept in the referee's state directory";

/// Which baseline to measure against.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum BaselineSpec {
    /// A git work tree: `HEAD`; otherwise the snapshot in `.referee/` if there is one; else none.
    #[default]
    Auto,
    /// A git revision (`--baseline REV`).
    Rev(String),
    /// A pristine copy (`--baseline-dir DIR`).
    Dir(PathBuf),
    /// Not a git work tree: the start snapshot kept in this state directory
    /// ([`snapshot::create`]); none there, no baseline.
    Snapshot(PathBuf),
}

/// What the baseline is, for evidence and outputs.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct BaselineInfo {
    /// `git`, `dir` or `snapshot`.
    pub kind: &'static str,
    /// `HEAD (3f2a…)`, the directory, …
    pub describe: String,
}

/// The referee's own faults opening a workspace (exit 2): the workspace itself or the named
/// baseline cannot be used. A file that cannot be read is not one of these.
#[derive(Debug, thiserror::Error)]
pub enum WorkspaceError {
    #[error("workspace `{path}` cannot be opened")]
    Root {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "`--baseline {rev}` names no commit in the repository at `{path}` (try `git log` for one)"
    )]
    NoSuchRev { rev: String, path: String },
    #[error(
        "`--baseline {0}` needs a git work tree; for a plain directory give `--baseline-dir DIR`"
    )]
    NotGit(String),
    #[error("baseline directory `{path}` cannot be opened")]
    BaseDir {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read the git baseline")]
    Git(#[from] git::GitError),
}

/// How a path differs from the baseline.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Change {
    Added,
    Modified,
    Removed,
}

impl Change {
    pub fn as_str(self) -> &'static str {
        match self {
            Change::Added => "added",
            Change::Modified => "modified",
            Change::Removed => "removed",
        }
    }
}

/// A file's content on one side.
#[derive(Debug, Clone)]
pub enum Content {
    Absent,
    Bytes(Arc<FileData>),
    /// It exists (or may) but cannot be read: why.
    Unknown(String),
}

impl Content {
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            Content::Bytes(d) => Some(&d.bytes),
            _ => None,
        }
    }
}

#[derive(Debug)]
enum Source {
    Git { commit: String },
    Dir { root: PathBuf },
}

/// A workspace and its baseline, opened once per evaluation.
#[derive(Debug)]
pub struct Workspace {
    root: PathBuf,
    cap: u64,
    pub git_work_tree: bool,
    pub baseline: Option<BaselineInfo>,
    /// Why there is no baseline (evidence of every INCONCLUSIVE that needs one).
    pub no_baseline: Option<String>,
    source: Option<Source>,
    /// Every changed path, sorted; `None` without a baseline.
    changes: Option<BTreeMap<String, Change>>,
    /// Paths whose change could not be decided (unreadable on a side).
    pub undecided: Vec<(String, String)>,
    /// The task records as read at opening, before the tree: see [`Workspace::records`].
    raw_records: Vec<(String, Content)>,
    base_cache: RefCell<HashMap<String, Content>>,
    cur_cache: RefCell<HashMap<String, Content>>,
}

impl Workspace {
    /// Opens `root` against the baseline `spec`; `cap` bounds every file read.
    pub fn open(root: &Path, spec: &BaselineSpec, cap: u64) -> Result<Workspace, WorkspaceError> {
        Workspace::open_as(root, spec, cap, None)
    }

    /// [`Workspace::open`], told whether `root` is a git work tree (`Some`: a caller that
    /// reopens the same workspace again and again — the daemon — asks git once, not each time).
    pub fn open_as(
        root: &Path,
        spec: &BaselineSpec,
        cap: u64,
        git_work_tree: Option<bool>,
    ) -> Result<Workspace, WorkspaceError> {
        let root = std::fs::canonicalize(root).map_err(|source| WorkspaceError::Root {
            path: root.display().to_string(),
            source,
        })?;
        std::fs::read_dir(&root).map_err(|source| WorkspaceError::Root {
            path: root.display().to_string(),
            source,
        })?;
        let git_work_tree = git_work_tree.unwrap_or_else(|| git::is_work_tree(&root));
        // The records first, then the tree: a worker writes its files before the record that
        // says they are ready, so whatever record is read here has its files in place when
        // the tree is read next. Read the other way round, a record landing in between would
        // be judged against the tree before its change.
        let raw_records = read_records(&root, cap);
        let mut ws = Workspace {
            root,
            cap,
            git_work_tree,
            baseline: None,
            no_baseline: None,
            source: None,
            changes: None,
            undecided: Vec::new(),
            raw_records,
            base_cache: RefCell::new(HashMap::new()),
            cur_cache: RefCell::new(HashMap::new()),
        };
        match spec {
            BaselineSpec::Rev(rev) => {
                if !git_work_tree {
                    return Err(WorkspaceError::NotGit(rev.clone()));
                }
                let commit =
                    git::resolve(&ws.root, rev)?.ok_or_else(|| WorkspaceError::NoSuchRev {
                        rev: rev.clone(),
                        path: ws.root.display().to_string(),
                    })?;
                // The two listings are independent processes: run them side by side (the
                // daemon's reaction time is mostly these waits).
                let (diffed, untracked) = std::thread::scope(|s| {
                    let untracked = s.spawn(|| git::untracked(&ws.root));
                    let diffed = git::diff_names(&ws.root, &commit);
                    (diffed, untracked.join())
                });
                let untracked = match untracked {
                    Ok(u) => u?,
                    Err(_) => git::untracked(&ws.root)?,
                };
                ws.open_git(rev, commit, diffed?, untracked)?;
            }
            BaselineSpec::Dir(dir) => {
                let base =
                    std::fs::canonicalize(dir).map_err(|source| WorkspaceError::BaseDir {
                        path: dir.display().to_string(),
                        source,
                    })?;
                std::fs::read_dir(&base).map_err(|source| WorkspaceError::BaseDir {
                    path: dir.display().to_string(),
                    source,
                })?;
                ws.open_dir(base, "dir")?;
            }
            BaselineSpec::Auto => {
                if git_work_tree {
                    // One `git status`: the commit, the changes against it and the untracked
                    // files in one process and one consistent look.
                    let st = git::head_status(&ws.root)?;
                    match st.head {
                        Some(commit) => ws.open_git("HEAD", commit, st.changes, st.untracked)?,
                        None => {
                            ws.no_baseline = Some(
                                "the git repository has no commit yet (HEAD names none), and no \
                                 --baseline-dir was given"
                                    .into(),
                            )
                        }
                    }
                } else {
                    ws.no_baseline = Some(NO_SNAPSHOT.into());
                }
            }
            BaselineSpec::Snapshot(state) => match snapshot::load(state) {
                Some(dir) => ws.open_dir(dir, "snapshot")?,
                None => ws.no_baseline = Some(NO_SNAPSHOT.into()),
            },
        }
        Ok(ws)
    }

    /// The canonical workspace root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Opens against `commit`, given what differs from it (`diffed`) and the untracked files.
    fn open_git(
        &mut self,
        rev: &str,
        commit: String,
        diffed: Vec<(git::Status, String)>,
        untracked: Vec<String>,
    ) -> Result<(), WorkspaceError> {
        let mut changes = BTreeMap::new();
        for (status, path) in diffed {
            let change = match status {
                git::Status::Added => Change::Added,
                git::Status::Modified => Change::Modified,
                git::Status::Removed => Change::Removed,
            };
            changes.insert(path, change);
        }
        for path in untracked {
            // Tracked in the baseline but dropped from the index and still on disk: the file
            // is there, so it is modified (or not changed at all) rather than removed + added.
            let change = match changes.get(&path) {
                Some(Change::Removed) => Change::Modified,
                _ => Change::Added,
            };
            changes.insert(path, change);
        }
        changes.retain(|p, _| !excluded(p));
        let short: String = commit.chars().take(12).collect();
        self.baseline = Some(BaselineInfo {
            kind: "git",
            describe: format!("git {rev} ({short})"),
        });
        self.source = Some(Source::Git { commit });
        // Preload the baseline side of every change in one `git cat-file` call.
        let wanted: Vec<String> = changes
            .iter()
            .filter(|(_, c)| **c != Change::Added)
            .map(|(p, _)| p.clone())
            .collect();
        self.changes = Some(changes);
        self.load_git_blobs(&wanted)?;
        // An untracked-again file identical to the baseline is no change.
        let same: Vec<String> = self
            .changes
            .iter()
            .flatten()
            .filter(|(_, c)| **c == Change::Modified)
            .filter(|(p, _)| {
                matches!((self.base(p), self.current(p)), (Content::Bytes(a), Content::Bytes(b)) if a.bytes == b.bytes)
            })
            .map(|(p, _)| p.clone())
            .collect();
        if let Some(ch) = self.changes.as_mut() {
            for p in same {
                ch.remove(&p);
            }
        }
        Ok(())
    }

    fn load_git_blobs(&self, paths: &[String]) -> Result<(), WorkspaceError> {
        let Some(Source::Git { commit }) = &self.source else {
            return Ok(());
        };
        let blobs = git::blobs(&self.root, commit, paths)?;
        let mut cache = self.base_cache.borrow_mut();
        for (p, b) in paths.iter().zip(blobs) {
            let content = match b {
                Some(bytes) => Content::Bytes(Arc::new(FileData::from_bytes(p, bytes, None))),
                None => Content::Absent,
            };
            cache.insert(p.clone(), content);
        }
        Ok(())
    }

    fn open_dir(&mut self, base: PathBuf, kind: &'static str) -> Result<(), WorkspaceError> {
        let current: BTreeSet<String> = if self.git_work_tree {
            git::listed(&self.root)?
                .into_iter()
                .filter(|p| !excluded(p))
                .collect()
        } else {
            walk(&self.root).into_iter().collect()
        };
        let mut in_base: BTreeSet<String> = walk(&base).into_iter().collect();
        if self.git_work_tree {
            // A baseline file an ignore rule excludes is not part of the tree either (unless
            // it is tracked, and so listed on the current side).
            let candidates: Vec<String> = in_base.difference(&current).cloned().collect();
            for p in git::ignored(&self.root, &candidates)? {
                in_base.remove(&p);
            }
        }
        self.baseline = Some(BaselineInfo {
            kind,
            describe: format!("{kind} {}", base.display()),
        });
        self.source = Some(Source::Dir { root: base });
        let mut changes = BTreeMap::new();
        for p in current.union(&in_base) {
            match (in_base.contains(p), current.contains(p)) {
                (false, true) => {
                    changes.insert(p.clone(), Change::Added);
                }
                (true, false) => {
                    changes.insert(p.clone(), Change::Removed);
                }
                _ => match (self.base(p), self.current(p)) {
                    (Content::Bytes(a), Content::Bytes(b)) if a.bytes != b.bytes => {
                        changes.insert(p.clone(), Change::Modified);
                    }
                    (Content::Unknown(why), _) | (_, Content::Unknown(why)) => {
                        self.undecided.push((p.clone(), why));
                    }
                    _ => {}
                },
            }
        }
        self.changes = Some(changes);
        Ok(())
    }

    /// Every change against the baseline, by path; `None` without a baseline.
    pub fn changes(&self) -> Option<&BTreeMap<String, Change>> {
        self.changes.as_ref()
    }

    /// The baseline's content of `rel` (`Unknown` without a baseline).
    pub fn base(&self, rel: &str) -> Content {
        if let Some(c) = self.base_cache.borrow().get(rel) {
            return c.clone();
        }
        let content = match &self.source {
            None => Content::Unknown(
                self.no_baseline
                    .clone()
                    .unwrap_or_else(|| "no baseline".into()),
            ),
            Some(Source::Dir { root }) => read(root, rel, self.cap),
            Some(Source::Git { .. }) => {
                // Not changed: the baseline's content is the work tree's.
                let changed = self.changes.as_ref().is_some_and(|c| c.contains_key(rel));
                if !changed && !excluded(rel) {
                    self.current(rel)
                } else if let Err(e) = self.load_git_blobs(&[rel.to_string()]) {
                    Content::Unknown(crate::error::chain(&e))
                } else {
                    return self
                        .base_cache
                        .borrow()
                        .get(rel)
                        .cloned()
                        .unwrap_or(Content::Absent);
                }
            }
        };
        self.base_cache
            .borrow_mut()
            .insert(rel.to_string(), content.clone());
        content
    }

    /// The work tree's content of `rel`.
    pub fn current(&self, rel: &str) -> Content {
        if let Some(c) = self.cur_cache.borrow().get(rel) {
            return c.clone();
        }
        let content = read(&self.root, rel, self.cap);
        self.cur_cache
            .borrow_mut()
            .insert(rel.to_string(), content.clone());
        content
    }

    /// The unified diff of `rel` from the baseline to the work tree ("" when equal).
    pub fn diff(&self, rel: &str) -> Result<String, String> {
        let side = |c: Content| match c {
            Content::Absent => Ok(None),
            Content::Bytes(d) => Ok(Some(d)),
            Content::Unknown(why) => Err(why),
        };
        let old = side(self.base(rel))?;
        let new = side(self.current(rel))?;
        Ok(diff::unified(
            rel,
            old.as_deref().map(|d| &d.bytes[..]),
            new.as_deref().map(|d| &d.bytes[..]),
        ))
    }

    /// The task records under `.tasks/` (`*.json` directly in it), sorted by path, as read
    /// when the workspace was opened; records that cannot be read are records with an error.
    pub fn records(&self, required: &[String]) -> Vec<record::Record> {
        self.raw_records
            .iter()
            .map(|(rel, content)| {
                let failed = |message: String| record::Record {
                    stem: record_stem(rel).to_string(),
                    rel: rel.clone(),
                    parsed: Err(record::RecordError {
                        message,
                        line: 0,
                        column: 0,
                    }),
                };
                match content {
                    Content::Bytes(d) => record::parse(rel, &d.bytes, required),
                    Content::Absent => failed("vanished while being read".into()),
                    Content::Unknown(why) => failed(format!("cannot be read: {why}")),
                }
            })
            .collect()
    }

    /// SHA-256 of a content, for evidence and hash checks.
    pub fn sha256(c: &Content) -> Option<String> {
        match c {
            Content::Bytes(d) => Some(d.sha256.clone()),
            _ => None,
        }
    }
}

/// Whether any task record under `root` asks for a judgment (see [`record::Record::is_judged`]):
/// the cheap look before opening the workspace against its baseline (git processes and all).
pub fn any_judged(root: &Path, cap: u64, required: &[String], judge_status: &[String]) -> bool {
    read_records(root, cap)
        .iter()
        .any(|(rel, content)| match content {
            Content::Bytes(d) => record::parse(rel, &d.bytes, required).is_judged(judge_status),
            // A record that vanished or cannot be read is judged (and shown as such).
            _ => true,
        })
}

/// The task records' paths (`.tasks/*.json`, not hidden) and contents, sorted by path.
fn read_records(root: &Path, cap: u64) -> Vec<(String, Content)> {
    let Ok(rd) = std::fs::read_dir(root.join(TASKS_DIR)) else {
        return Vec::new();
    };
    let mut names: Vec<String> = rd
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.ends_with(".json") && !n.starts_with('.'))
        .collect();
    names.sort();
    names
        .into_iter()
        .map(|n| {
            let rel = format!("{TASKS_DIR}/{n}");
            let content = read(root, &rel, cap.min(16 << 20));
            (rel, content)
        })
        .collect()
}

/// `.tasks/t1.json` → `t1`.
fn record_stem(rel: &str) -> &str {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    name.strip_suffix(".json").unwrap_or(name)
}

/// Whether a path is never part of a change (`.git/`, `.tasks/`, `.referee/`).
pub fn excluded(rel: &str) -> bool {
    let top = rel.split('/').next().unwrap_or(rel);
    EXCLUDED.contains(&top)
}

fn read(root: &Path, rel: &str, cap: u64) -> Content {
    match fsread::read_file(root, &root.join(rel), rel, cap) {
        Ok(d) => Content::Bytes(Arc::new(d)),
        Err(ReadError::NotFound(_)) => Content::Absent,
        Err(e) => Content::Unknown(e.to_string()),
    }
}

/// Every regular file (or symlink) under `root`, relative, sorted, without the excluded
/// top-level names; directories that cannot be listed are skipped.
pub fn walk(root: &Path) -> Vec<String> {
    let mut out = Vec::new();
    let it = walkdir::WalkDir::new(root)
        .min_depth(1)
        .follow_links(false)
        .into_iter()
        .filter_entry(|e| {
            !(e.depth() == 1
                && EXCLUDED
                    .iter()
                    .any(|x| e.file_name() == std::ffi::OsStr::new(x)))
        });
    for e in it.flatten() {
        if e.file_type().is_dir() {
            continue;
        }
        if let Ok(rel) = e.path().strip_prefix(root) {
            if let Some(s) = rel.to_str() {
                out.push(s.replace('\\', "/"));
            }
        }
    }
    out.sort();
    out
}

/// Lowercase hex SHA-256 of bytes.
pub fn sha256(bytes: &[u8]) -> String {
    sha256_hex(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A judgment is of one moment: the records are those read at opening, so a record that
    /// lands after the tree was read is not judged against the tree before its change (the
    /// live referee then judges it at its own event).
    #[test]
    fn records_are_those_read_at_opening_before_the_tree() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let base = tempfile::tempdir().unwrap();
        std::fs::write(base.path().join("a.py"), "x = 1\n").unwrap();
        std::fs::write(root.join("a.py"), "x = 1\n").unwrap();
        std::fs::create_dir(root.join(".tasks")).unwrap();
        std::fs::write(root.join(".tasks/t1.json"), "{}").unwrap();
        std::fs::write(root.join(".tasks/.t2.tmp"), "{}").unwrap();
        let spec = BaselineSpec::Dir(base.path().to_path_buf());
        let ws = Workspace::open(root, &spec, 1 << 20).unwrap();
        assert!(ws.changes().unwrap().is_empty());

        // The worker's next change and its record, after the opening.
        std::fs::write(root.join("a.py"), "x = 2\n").unwrap();
        std::fs::write(root.join(".tasks/t2.json"), "{}").unwrap();
        std::fs::write(root.join(".tasks/t1.json"), "not json").unwrap();
        let records = ws.records(&[]);
        let names: Vec<&str> = records.iter().map(|r| r.rel.as_str()).collect();
        assert_eq!(names, [".tasks/t1.json"]);
        assert_eq!(records[0].stem, "t1");
        assert!(
            records[0].parsed.is_ok(),
            "the record as read at opening: {:?}",
            records[0].parsed
        );

        let again = Workspace::open(root, &spec, 1 << 20).unwrap();
        let records = again.records(&[]);
        assert_eq!(records.len(), 2);
        assert!(records[0].parsed.is_err(), "t1 is not JSON now");
        assert!(again.changes().unwrap().contains_key("a.py"));
    }

    /// The cheap look the live referee takes before opening a workspace: only a record that
    /// is pending (or malformed, or unreadable) asks for a judgment.
    #[test]
    fn any_judged_looks_at_the_records_only() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        let judge = ["pending_review".to_string()];
        assert!(!any_judged(root, 1 << 20, &[], &judge), "no .tasks/");
        std::fs::create_dir(root.join(".tasks")).unwrap();
        let rec =
            |status: &str| format!(r#"{{"task_id": "t1", "status": "{status}", "attempt": 1}}"#);
        std::fs::write(root.join(".tasks/t1.json"), rec("approved")).unwrap();
        std::fs::write(root.join(".tasks/.t2.json"), rec("pending_review")).unwrap();
        assert!(
            !any_judged(root, 1 << 20, &[], &judge),
            "approved, and a hidden temp file"
        );
        std::fs::write(root.join(".tasks/t1.json"), rec("pending_review")).unwrap();
        assert!(any_judged(root, 1 << 20, &[], &judge));
        std::fs::write(root.join(".tasks/t1.json"), "{ not json").unwrap();
        assert!(
            any_judged(root, 1 << 20, &[], &judge),
            "a malformed record is judged"
        );
    }
}
