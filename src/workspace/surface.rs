//! What a protected glob sees outside the baseline: the paths no commit holds.
//!
//! Protected globs are matched against every path, `.git/`, `.tasks/` and `.referee/` included.
//! Those folders are never part of a change (no commit holds them), so what a protected path
//! there is measured against is its state when the referee started: the first judgment with a
//! state directory pins, in that directory, each protected path found outside the baseline (its
//! type, mode, SHA-256 and, when small, a copy of its bytes for the diffs). The same pin holds
//! a protected path of the work tree that the baseline does not have (an untracked or ignored
//! `.claude/settings.local.json` present at start), so what was there at start is no veto, and
//! what changes there since is.
//!
//! The git directory is read as the file system has it, never through git: its names are
//! listed (git's index, locks and logs are names like any other, never read unless a protected
//! glob names them), and only the files a protected glob matches are looked at. For a linked
//! work tree or a submodule (`.git` is a file), the directory listed as `.git/` is the one git
//! takes its hooks and config from: the common directory the `gitdir:` line leads to. `.git`
//! itself (the directory, or the pointer file) is a path too.
//!
//! What git itself writes when the orchestrator commits (`index`, `logs/`, `ORIG_HEAD`,
//! objects, refs) is matched by no default glob, so an honest commit changes nothing here; the
//! default globs name what makes git or an agent run code (`.git/hooks/**`, `.git/config`,
//! `.git/info/attributes`, the agents' hook settings).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use super::tree::{self, Looked};
use super::{name, Change, Content};
use crate::artifacts::fsread::{sha256_hex, FileData};

/// The pin in the state directory.
pub const PIN_FILE: &str = "surface.json";
/// Where the pinned bytes are kept (by SHA-256), for diffs.
pub const COPIES: &str = "surface-copies";
const SCHEMA: &str = "referee.surface/1";
/// Files up to this size are hashed and their bytes kept; a larger one is compared by its
/// identity (inode, size, times: its bytes cannot change without its `ctime` moving).
pub const SMALL: u64 = 1 << 20;
/// The most paths listed under the three folders; past that the veto cannot be decided.
const MAX_PATHS: usize = 1_000_000;

/// The top-level folders whose paths no commit holds.
pub const TOPS: [&str; 3] = [".git", super::TASKS_DIR, super::OUTPUT_DIR];

/// One path's state, as pinned and as found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct State {
    /// `file`, `symlink`, `directory`, `fifo`, …
    pub kind: String,
    /// The permission bits (an executable bit added to a hook makes git run it).
    pub mode: u32,
    pub size: u64,
    /// A regular file's SHA-256 (at most [`SMALL`] bytes), or a link's target's.
    #[serde(default)]
    pub sha256: Option<String>,
    /// A large file's identity: inode and `ctime` (ns).
    #[serde(default)]
    pub ino: u64,
    #[serde(default)]
    pub ctime_ns: i128,
}

impl State {
    fn of(l: &Looked) -> State {
        let big = l.kind == "file" && l.bytes.is_none();
        State {
            kind: l.kind.to_string(),
            mode: l.mode & 0o7777,
            // A directory's size follows its entries (what git adds to `.git/` on a commit).
            size: if l.kind == "directory" { 0 } else { l.size },
            sha256: l.bytes.as_deref().map(sha256_hex),
            ino: if big { l.ino } else { 0 },
            ctime_ns: if big {
                i128::from(l.ctime.0) * 1_000_000_000 + i128::from(l.ctime.1)
            } else {
                0
            },
        }
    }

    /// How `now` differs from `self` (the pinned state), if it does.
    fn differs(&self, now: &State) -> Option<String> {
        if self.kind != now.kind {
            return Some(format!("modified, type: {} → {}", self.kind, now.kind));
        }
        if self.mode != now.mode {
            return Some(format!("modified, mode: {:o} → {:o}", self.mode, now.mode));
        }
        let same = match (&self.sha256, &now.sha256) {
            (Some(a), Some(b)) => a == b,
            // A large file: the same inode, size and ctime are the same bytes.
            _ => self.size == now.size && self.ino == now.ino && self.ctime_ns == now.ctime_ns,
        };
        (!same).then(|| "modified".to_string())
    }
}

/// The pin kept in the state directory.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Pin {
    pub schema: String,
    pub pinned_at: String,
    /// The protected globs it was taken for (a glob first used later is pinned then).
    pub globs: Vec<String>,
    /// Each protected path outside the baseline present then, by its path.
    pub paths: BTreeMap<String, State>,
    /// Why this pin is no start: it was taken by a judgment of work already done (a task
    /// record was there then), so what it holds may be the worker's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_work: Option<String>,
}

/// The three folders as found on disk: where each is listed from.
#[derive(Debug)]
pub struct Listing {
    /// Per top: the logical name (`.git`, `.tasks`, `.referee`) and the directory listed.
    tops: Vec<(&'static str, PathBuf)>,
    /// Every path found (logical, encoded), sorted, with its top's index and its path there.
    paths: Vec<(String, usize, Vec<u8>)>,
    /// What could not be listed (logical, why).
    pub unlisted: Vec<(String, String)>,
    /// The symbolic links under `.git/` (logical): git makes none there, and a folder swapped
    /// for one leads git's hooks or config elsewhere, whatever its name.
    links: BTreeSet<String>,
    /// The workspace root (for `.git` itself).
    root: PathBuf,
}

impl Listing {
    /// Lists `.git/` (the directory git takes hooks and config from), `.tasks/` and
    /// `.referee/` of the workspace at `root`: names only.
    pub fn of(root: &Path) -> Listing {
        let _span = tracing::debug_span!("surface_listing").entered();
        let mut tops = Vec::new();
        if let Some(git) = git_top(root) {
            tops.push((".git", git));
        }
        for top in [super::TASKS_DIR, super::OUTPUT_DIR] {
            let dir = root.join(top);
            if std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
                tops.push((top, dir));
            }
        }
        let mut listing = Listing {
            tops: Vec::new(),
            paths: Vec::new(),
            unlisted: Vec::new(),
            links: BTreeSet::new(),
            root: root.to_path_buf(),
        };
        let mut budget = MAX_PATHS;
        for (i, (logical, dir)) in tops.iter().enumerate() {
            let descend = |p: &[u8]| *logical != ".git" || !is_object_fan_out(p);
            match tree::names_in_tree(dir, budget, &descend) {
                Ok(found) => {
                    budget = budget.saturating_sub(found.paths.len());
                    if *logical == ".git" {
                        for p in &found.links {
                            listing
                                .links
                                .insert(format!("{logical}/{}", name::encode(p)));
                        }
                    }
                    for p in found.paths {
                        let key = format!("{logical}/{}", name::encode(&p));
                        listing.paths.push((key, i, p));
                    }
                    for (p, why) in found.unlisted {
                        let key = format!("{logical}/{}", name::encode(&p));
                        listing.unlisted.push((key, why));
                    }
                }
                Err(e) => listing.unlisted.push((
                    (*logical).to_string(),
                    crate::artifacts::fsread::lowercase_message(&e),
                )),
            }
        }
        listing.paths.sort_by(|a, b| a.0.cmp(&b.0));
        listing.tops = tops;
        listing
    }

    /// Every path found and `.git` itself, logical.
    fn names(&self) -> impl Iterator<Item = &str> {
        std::iter::once(".git").chain(self.paths.iter().map(|(p, _, _)| p.as_str()))
    }

    /// Where a logical path is on disk: its directory and its path there. `None` for a path
    /// under none of the three folders.
    pub fn locate(&self, rel: &str) -> Option<(PathBuf, Vec<u8>)> {
        if rel == ".git" {
            return Some((self.root.clone(), b".git".to_vec()));
        }
        let (top, rest) = rel.split_once('/')?;
        let (_, dir) = self.tops.iter().find(|(t, _)| *t == top)?;
        Some((dir.clone(), name::decode(rest)))
    }

    /// Looks at the logical path `rel` now.
    pub(crate) fn look(&self, rel: &str) -> Result<Option<Looked>, tree::Unreadable> {
        match self.locate(rel) {
            Some((dir, sub)) => tree::look_in_tree(&dir, &sub, SMALL),
            None => Ok(None),
        }
    }
}

/// Whether `rel` (under a git directory) is one of the object store's fan-out folders:
/// `objects/3f` (loose objects), `lfs/objects/3f` and `lfs/objects/3f/a2` (Git LFS), in the
/// repository or a submodule's. Git reads only content-addressed names there (the hex of each
/// object's hash, which it verifies) and runs nothing from them, and a repository can have 256
/// of them: they are not listed at each judgment.
fn is_object_fan_out(rel: &[u8]) -> bool {
    let parts: Vec<&[u8]> = rel.split(|&b| b == b'/').collect();
    let hex2 = |p: &[u8]| p.len() == 2 && p.iter().all(|b| b.is_ascii_hexdigit());
    match parts.as_slice() {
        [.., objects, last] if *objects == b"objects" && hex2(last) => true,
        [.., lfs, objects, a, last] if *lfs == b"lfs" && *objects == b"objects" && hex2(a) => {
            hex2(last)
        }
        _ => false,
    }
}

/// The folder of the work tree that git runs hooks from when the config `config` (a
/// `.git/config` or `config.worktree`) sets `core.hooksPath` to a path inside the work tree at
/// `root` (as husky does: `.husky/_`): relative (to the work tree, as git takes it), or
/// absolute under `root`. Encoded, without a trailing `/`; `None` when it is not set, lies
/// outside, or the config does not parse. Read in-process, no include followed.
pub fn hooks_dir_in(config: &[u8], root: &Path) -> Option<String> {
    let file = gix::config::File::from_bytes_no_includes(
        config,
        gix::config::file::Metadata::api(),
        gix::config::file::init::Options::default(),
    )
    .ok()?;
    let value = file.string("core.hooksPath")?;
    let raw: &[u8] = value.as_ref();
    if raw.is_empty() || raw.starts_with(b"~") {
        return None;
    }
    let rel: &[u8] = if raw.starts_with(b"/") {
        let root = root.as_os_str().as_encoded_bytes();
        let rest = raw.strip_prefix(root)?;
        rest.strip_prefix(b"/")
            .or((rest.is_empty()).then_some(rest))?
    } else {
        raw
    };
    // Resolved by its names alone: `..` that leaves the work tree is outside.
    let mut parts: Vec<&[u8]> = Vec::new();
    for part in rel.split(|&b| b == b'/') {
        match part {
            b"" | b"." => {}
            b".." => {
                parts.pop()?;
            }
            p => parts.push(p),
        }
    }
    (!parts.is_empty()).then(|| name::encode(&parts.join(&b'/')))
}

/// Whether a path lies in one of the three folders (or is `.git` itself).
pub fn is_surface(rel: &str) -> bool {
    rel == ".git"
        || TOPS
            .iter()
            .any(|t| rel.strip_prefix(t).is_some_and(|r| r.starts_with('/')))
}

/// The directory git takes a work tree's hooks and config from: `root/.git` when it is a
/// directory (or a link to one), else the common directory of the `gitdir:` its `.git` file
/// names (a linked work tree's main `.git/`, a submodule's `.git/modules/NAME/`).
fn git_top(root: &Path) -> Option<PathBuf> {
    let dot_git = root.join(".git");
    let meta = std::fs::metadata(&dot_git).ok()?;
    if meta.is_dir() {
        return Some(dot_git);
    }
    if !meta.is_file() || meta.len() > 64 << 10 {
        return None;
    }
    let text = std::fs::read_to_string(&dot_git).ok()?;
    let line = text.lines().next()?.strip_prefix("gitdir:")?.trim();
    let gitdir = root.join(line);
    let common = match std::fs::read_to_string(gitdir.join("commondir")) {
        Ok(c) => gitdir.join(c.trim()),
        Err(_) => gitdir,
    };
    std::fs::canonicalize(common).ok().filter(|d| d.is_dir())
}

/// The protected paths outside the baseline, against their pinned state.
#[derive(Debug, Default, Clone)]
pub struct Findings {
    /// Path, how it changed, and the words for what happened to it (`added, …`,
    /// `modified, mode: …`, `removed, …`).
    pub changed: Vec<(String, Change, String)>,
    /// Paths whose state could not be had (path, why).
    pub undecided: Vec<(String, String)>,
    /// When the pin was taken after the work: why, and the protected paths present now as
    /// they were pinned then (nothing says they were there before the work).
    pub undated: Option<(String, Vec<String>)>,
}

/// A pin as loaded, and where it is kept (none: pinned now, in memory).
#[derive(Debug, Clone, Default)]
pub struct Kept {
    pub pin: Pin,
    pub state: Option<PathBuf>,
}

impl Kept {
    /// The pin under `state`, or `None` when there is none yet.
    pub fn load(state: &Path) -> Option<Kept> {
        let path = state.join(PIN_FILE);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        if !meta.is_file() || meta.len() > 256 << 20 {
            return None;
        }
        let bytes = std::fs::read(&path).ok()?;
        let pin: Pin = serde_json::from_slice(&bytes).ok()?;
        (pin.schema == SCHEMA).then(|| Kept {
            pin,
            state: Some(state.to_path_buf()),
        })
    }

    /// Keeps the pin (and the bytes of its small files) under its state directory; a pin that
    /// cannot be kept is pinned again next time (and said so in the log).
    fn save(&self, copies: &BTreeMap<String, Vec<u8>>) {
        let Some(state) = &self.state else {
            return;
        };
        let dir = state.join(COPIES);
        if !copies.is_empty() && std::fs::create_dir_all(&dir).is_err() {
            tracing::warn!(
                "cannot keep the surface pin's copies in `{}`",
                dir.display()
            );
        }
        for (sha, bytes) in copies {
            let path = dir.join(sha);
            if !path.is_file() {
                let _ = crate::atomic::write_atomic(&dir, sha, bytes);
            }
        }
        let text = serde_json::to_string_pretty(&self.pin).unwrap_or_default();
        if let Err(e) = crate::atomic::write_atomic(state, PIN_FILE, &text) {
            tracing::warn!("cannot keep the surface pin in `{}`: {e}", state.display());
        }
    }

    /// The pinned bytes of `rel`, when kept.
    pub fn copy(&self, rel: &str) -> Option<Content> {
        let s = self.pin.paths.get(rel)?;
        if s.kind != "file" {
            return None;
        }
        let sha = s.sha256.as_ref()?;
        let bytes = std::fs::read(self.state.as_ref()?.join(COPIES).join(sha)).ok()?;
        (sha256_hex(&bytes) == *sha)
            .then(|| Content::Bytes(Arc::new(FileData::from_bytes(rel, bytes, None))))
    }
}

/// Whether `rel` names a hook git runs: an entry directly in `.git/hooks/` (or a submodule's
/// `.git/modules/**/hooks/`) other than the `*.sample` files `git init` writes, which git never
/// runs.
pub fn is_hook(rel: &str) -> bool {
    let Some((dir, name)) = rel.rsplit_once('/') else {
        return false;
    };
    !name.ends_with(".sample")
        && (dir == ".git/hooks" || (dir.starts_with(".git/modules/") && dir.ends_with("/hooks")))
}

/// The work tree's side: a protected path the baseline does not have, present now (added, or
/// hidden by an ignore rule), and how to look at it.
pub(crate) type Outside<'a> = &'a dyn Fn(&str) -> Result<Option<Looked>, tree::Unreadable>;

/// Decides the protected paths outside the baseline against the pin under `state` (taken now
/// when there is none, or for globs it was not taken for).
///
/// `protected` says whether a path is protected; `globs` names the glob set (for the pin);
/// `outside` lists the work tree's protected paths the baseline does not have, present now,
/// with a way to look at them.
pub(crate) fn judge(
    listing: &Listing,
    kept: Option<Kept>,
    (state, after_work): (Option<&Path>, Option<String>),
    globs: &[String],
    protected: &dyn Fn(&str) -> bool,
    outside: (&[String], Outside<'_>),
) -> (Findings, Kept) {
    let (outside_now, look_outside) = outside;
    let look = |rel: &str| -> Result<Option<Looked>, tree::Unreadable> {
        if is_surface(rel) {
            listing.look(rel)
        } else {
            look_outside(rel)
        }
    };
    // What is protected now: under the three folders, and in the work tree outside the
    // baseline.
    let mut now: BTreeSet<String> = listing
        .names()
        .filter(|p| protected(p) || listing.links.contains(*p))
        .map(str::to_string)
        .collect();
    now.extend(outside_now.iter().cloned());
    let mut findings = Findings::default();
    // A folder that cannot be listed may hold a protected path: undecided, whatever its name.
    for (p, why) in &listing.unlisted {
        findings
            .undecided
            .push((p.clone(), format!("cannot be listed: {why}")));
    }
    let mut looked: BTreeMap<String, Option<State>> = BTreeMap::new();
    let mut copies = BTreeMap::new();
    let mut state_of = |rel: &str, findings: &mut Findings| -> Option<Option<State>> {
        if let Some(s) = looked.get(rel) {
            return Some(s.clone());
        }
        match look(rel) {
            Ok(l) => {
                let s = l.as_ref().map(State::of);
                if let (Some(l), Some(s)) = (&l, &s) {
                    if let (Some(bytes), Some(sha), "file") = (&l.bytes, &s.sha256, l.kind) {
                        copies.insert(sha.clone(), bytes.clone());
                    }
                }
                looked.insert(rel.to_string(), s.clone());
                Some(s)
            }
            Err(why) => {
                findings.undecided.push((rel.to_string(), why.to_string()));
                None
            }
        }
    };
    let (mut kept, fresh) = match kept {
        Some(k) => (k, false),
        None => (
            Kept {
                pin: Pin {
                    schema: SCHEMA.into(),
                    pinned_at: chrono::Utc::now().to_rfc3339(),
                    globs: Vec::new(),
                    paths: BTreeMap::new(),
                    after_work,
                },
                state: state.map(Path::to_path_buf),
            },
            true,
        ),
    };
    // Globs the pin was not taken for: what they match now is pinned now.
    let new_globs: Vec<&String> = globs
        .iter()
        .filter(|g| !kept.pin.globs.contains(g))
        .collect();
    let mut changed_pin = false;
    if fresh || !new_globs.is_empty() {
        for p in &now {
            if kept.pin.paths.contains_key(p) {
                continue;
            }
            if let Some(Some(s)) = state_of(p, &mut findings) {
                kept.pin.paths.insert(p.clone(), s);
            }
        }
        kept.pin.globs.extend(new_globs.into_iter().cloned());
        changed_pin = true;
    }
    if !fresh {
        // Every protected path present now or pinned, against its pinned state.
        let pinned: Vec<String> = kept
            .pin
            .paths
            .iter()
            .filter(|(p, was)| protected(p) || (was.kind == "symlink" && p.starts_with(".git/")))
            .map(|(p, _)| p.clone())
            .collect();
        let all: BTreeSet<&String> = now.iter().chain(pinned.iter()).collect();
        for p in all {
            let Some(current) = state_of(p, &mut findings) else {
                continue;
            };
            let what = match (kept.pin.paths.get(p.as_str()), &current) {
                (None, None) => None,
                (None, Some(_)) => Some((Change::Added, "added".to_string())),
                // Pinned after the work, what was there may have been the worker's (the hook
                // it planted, removed as the STOP asked): gone, it is no finding.
                (Some(_), None) if kept.pin.after_work.is_some() => None,
                (Some(_), None) => Some((Change::Removed, "removed".to_string())),
                (Some(was), Some(now)) => was.differs(now).map(|d| (Change::Modified, d)),
            };
            if let Some((change, what)) = what {
                let since = if is_surface(p) {
                    "in no commit: against its state when the referee started"
                } else {
                    "not in the baseline: against its state when the referee started"
                };
                findings
                    .changed
                    .push((p.clone(), change, format!("{what}, {since}")));
            }
        }
    }
    if let Some(why) = &kept.pin.after_work {
        let changed: BTreeSet<&String> = findings.changed.iter().map(|(p, ..)| p).collect();
        let paths = now
            .iter()
            .filter(|p| kept.pin.paths.contains_key(*p) && !changed.contains(p))
            .cloned()
            .collect();
        findings.undated = Some((why.clone(), paths));
    }
    if changed_pin {
        kept.save(&copies);
    }
    (findings, kept)
}

impl super::Workspace {
    /// `.git/`, `.tasks/` and `.referee/`, listed at the first call.
    pub(super) fn surface(&self) -> &Listing {
        self.surface.get_or_init(|| Listing::of(&self.root))
    }

    /// The hooks git runs found under `.git/` (see [`is_hook`]): files and links, not folders.
    pub fn hooks(&self) -> Vec<String> {
        let listing = self.surface();
        listing
            .names()
            .filter(|p| is_hook(p))
            .filter(|p| matches!(listing.look(p), Ok(Some(l)) if l.kind != "directory"))
            .map(str::to_string)
            .collect()
    }

    /// The paths under `.tasks/` and `.referee/`, as listed.
    pub fn records_and_outputs(&self) -> impl Iterator<Item = String> + '_ {
        self.surface()
            .names()
            .filter(|p| p.starts_with(".tasks/") || p.starts_with(".referee/"))
            .map(str::to_string)
    }

    /// The git config files under `.git/` (see [`super::gitconfig::is_git_config`]), each
    /// with the keys in it that make git run a command, or why it cannot be read.
    pub fn git_configs(&self) -> Vec<(String, super::gitconfig::Runs)> {
        use super::gitconfig::{is_git_config, running_keys, Runs};
        let listing = self.surface();
        listing
            .names()
            .filter(|p| is_git_config(p))
            .filter_map(|p| {
                let runs = match listing.look(p) {
                    Ok(Some(l)) if l.kind == "file" => match l.bytes {
                        Some(b) => running_keys(&b),
                        None => Runs::Unreadable(format!("larger than {SMALL} bytes")),
                    },
                    Ok(Some(l)) => Runs::Unreadable(format!("a {}, not a file", l.kind)),
                    Ok(None) => return None,
                    Err(why) => Runs::Unreadable(why.to_string()),
                };
                Some((p.to_string(), runs))
            })
            .collect()
    }

    /// Whether `rel` lies in the folder of the work tree that git runs hooks from, when
    /// `core.hooksPath` (in `.git/config` or `config.worktree`, read in-process) names one
    /// inside the work tree (husky's `.husky/_`, a project's `githooks/`): a file there runs as
    /// the orchestrator at its next commit, so it is protected like `.git/hooks/`.
    pub fn in_hooks_dir(&self, rel: &str) -> bool {
        let dir = self.hooks_dir.get_or_init(|| {
            [".git/config.worktree", ".git/config"]
                .iter()
                .find_map(|c| match self.surface().look(c) {
                    Ok(Some(l)) => l.bytes.and_then(|b| hooks_dir_in(&b, &self.root)),
                    _ => None,
                })
        });
        dir.as_deref().is_some_and(|d| {
            rel.strip_prefix(d)
                .is_some_and(|r| r.is_empty() || r.starts_with('/'))
        })
    }

    /// The protected paths no baseline holds (under `.git/`, `.tasks/`, `.referee/`, and the
    /// work tree's ignored paths the baseline does not have), each against its state when the
    /// referee started, as pinned in the state directory (see [`surface`]); the first call
    /// with a state directory pins it. `None` without a state directory: nothing is known of
    /// the start. `globs` names the protected glob set, `protected` matches it.
    pub fn outside_baseline(
        &self,
        globs: &[String],
        protected: &dyn Fn(&str) -> bool,
    ) -> Option<Findings> {
        let _span = tracing::debug_span!("outside_baseline").entered();
        let state = self.state.as_deref().filter(|s| s.is_dir())?;
        if let Some((g, f)) = self.outside.borrow().as_ref() {
            if g.as_slice() == globs {
                return Some(f.clone());
            }
        }
        let ignored: Vec<String> = self
            .ignored
            .iter()
            .filter(|p| protected(p))
            .cloned()
            .collect();
        let root = self.root.clone();
        let look = move |rel: &str| tree::look_in_tree(&root, &name::decode(rel), SMALL);
        // Taken anew when a human vouched for the paths as they are (`accept --start`).
        let start_now = self.start_now.take();
        let kept = if start_now { None } else { Kept::load(state) };
        let after_work = (kept.is_none() && !start_now)
            .then(|| self.pending_record())
            .flatten();
        let (findings, kept) = judge(
            self.surface(),
            kept,
            (Some(state), after_work),
            globs,
            protected,
            (&ignored, &look),
        );
        *self.pinned_outside.borrow_mut() = Some(kept);
        *self.outside.borrow_mut() = Some((globs.to_vec(), findings.clone()));
        Some(findings)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_differs_by_type_mode_and_bytes_and_a_large_file_by_its_identity() {
        let file = |sha: &str, mode| State {
            kind: "file".into(),
            mode,
            size: 3,
            sha256: Some(sha.into()),
            ino: 0,
            ctime_ns: 0,
        };
        assert_eq!(file("a", 0o644).differs(&file("a", 0o644)), None);
        assert_eq!(
            file("a", 0o644).differs(&file("b", 0o644)).as_deref(),
            Some("modified")
        );
        assert!(file("a", 0o644)
            .differs(&file("a", 0o755))
            .is_some_and(|d| d.contains("mode: 644 → 755")));
        let mut link = file("a", 0o777);
        link.kind = "symlink".into();
        assert!(file("a", 0o644)
            .differs(&link)
            .is_some_and(|d| d.contains("type: file → symlink")));
        let big = |ino, ctime_ns| State {
            kind: "file".into(),
            mode: 0o644,
            size: 5 << 20,
            sha256: None,
            ino,
            ctime_ns,
        };
        assert_eq!(big(1, 2).differs(&big(1, 2)), None);
        assert!(big(1, 2).differs(&big(1, 3)).is_some());
        assert!(big(1, 2).differs(&big(7, 2)).is_some());
    }

    #[test]
    fn only_the_object_stores_fan_out_folders_are_left_unlisted() {
        for p in [
            "objects/3f",
            "modules/lib/objects/00",
            "lfs/objects/ab",
            "lfs/objects/ab/cd",
        ] {
            assert!(is_object_fan_out(p.as_bytes()), "{p}");
        }
        for p in [
            "objects",
            "objects/pack",
            "objects/info",
            "hooks/3f",
            "objects/3f/x",
            "3f",
        ] {
            assert!(!is_object_fan_out(p.as_bytes()), "{p}");
        }
    }

    #[test]
    fn a_hooks_path_inside_the_work_tree_is_found() {
        let root = Path::new("/w/ws");
        let cfg = |v: &str| format!("[core]\n\tbare = false\n\thooksPath = {v}\n");
        for (v, want) in [
            (".husky/_", Some(".husky/_")),
            ("./tools//hooks/", Some("tools/hooks")),
            ("/w/ws/githooks", Some("githooks")),
            ("/w/other", None),
            ("../outside", None),
            ("~/hooks", None),
            ("a/../..", None),
        ] {
            assert_eq!(
                hooks_dir_in(cfg(v).as_bytes(), root).as_deref(),
                want,
                "{v}"
            );
        }
        assert_eq!(hooks_dir_in(b"[core]\n\tbare = false\n", root), None);
        // The last value wins, as in git.
        let two = "[core]\n\thooksPath = a\n[core]\n\thooksPath = b\n";
        assert_eq!(hooks_dir_in(two.as_bytes(), root).as_deref(), Some("b"));
    }

    #[test]
    fn surface_paths_are_the_three_folders_and_git_itself() {
        for p in [".git", ".git/config", ".tasks/t.json", ".referee/x"] {
            assert!(is_surface(p), "{p}");
        }
        for p in [
            ".gitignore",
            ".github/hooks/x",
            "src/.git",
            ".tasksx/a",
            ".git2/config",
        ] {
            assert!(!is_surface(p), "{p}");
        }
    }
}
