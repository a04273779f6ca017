//! The reference model of a code-change session, written from the contract (the protocol's
//! session rules) and never from the referee's own code, so the two can disagree.
//!
//! Input: the pinned start state (every path the protected globs can see, read by the
//! simulator's own walker), the baseline as accepted so far, the files as they are now, the task
//! records on disk, the registered tasks and the model's own memory of earlier judgments.
//! Output: whether the protected-path veto stands, and for each record judged now the set of
//! verdicts the contract allows (one verdict where the contract is exact, several where it
//! leaves room).

use std::collections::{BTreeMap, BTreeSet};

use globset::{GlobSet, GlobSetBuilder};
use serde_json::Value;
use sha2::{Digest, Sha256};

/// One path as the file system has it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Node {
    File { bytes: Vec<u8>, exec: bool },
    Link(Vec<u8>),
    Dir,
    Other,
}

impl Node {
    pub fn bytes(&self) -> Option<&[u8]> {
        match self {
            Node::File { bytes, .. } => Some(bytes),
            _ => None,
        }
    }
}

/// Every path of a workspace the model looks at, with the identity of regular files (for hard
/// links) and where each symbolic link leads (relative to the workspace, when it stays inside).
#[derive(Clone, Debug, Default)]
pub struct Snapshot {
    pub nodes: BTreeMap<String, Node>,
    pub inode: BTreeMap<String, (u64, u64)>,
    pub resolves_to: BTreeMap<String, String>,
}

pub fn sha(bytes: &[u8]) -> String {
    let mut h = Sha256::new();
    h.update(bytes);
    h.finish_hex()
}

trait Hex {
    fn finish_hex(self) -> String;
}
impl Hex for Sha256 {
    fn finish_hex(self) -> String {
        self.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }
}

/// The default protected paths: the orchestrator's own code, and what would make git or an
/// agent run the worker's code.
pub const PROTECTED: &[&str] = &[
    "**/grind_spawner*.py",
    "**/orchestrator.py",
    "**/roles.py",
    "**/safety_*.py",
    "**/groq_code_extractor.py",
    "**/surgical_edit_extractor.py",
    ".git/hooks/**",
    ".git/config",
    ".git/info/attributes",
    ".git/modules/*/hooks/**",
    ".git/modules/*/config",
    ".gitattributes",
    ".gitmodules",
    ".claude/settings*.json",
    ".codex/**",
    ".cursor/hooks.json",
    ".gemini/settings.json",
    ".github/hooks/**",
];

pub fn protected_set() -> GlobSet {
    let mut b = GlobSetBuilder::new();
    for g in PROTECTED {
        b.add(
            globset::GlobBuilder::new(g)
                .literal_separator(true)
                .build()
                .expect("glob"),
        );
    }
    b.build().expect("globset")
}

/// What the baseline's `.gitignore` says (the simulator commits exactly these rules:
/// `build/`, `dist/`, `__pycache__/`, `node_modules/`, `*.log`, `*.so`, `local_settings.py`),
/// and what git ignores besides:
/// the tools' caches `.pytest_cache/` and `.ruff_cache/`, which the simulator only ever writes
/// with a `.gitignore` of `*` inside (`ToolCache`), as pytest and ruff do.
pub fn ignored(path: &str) -> bool {
    let parts: Vec<&str> = path.split('/').collect();
    let dirs = &parts[..parts.len() - 1];
    dirs.iter()
        .any(|d| matches!(*d, "build" | "dist" | "__pycache__" | "node_modules"))
        || parts
            .last()
            .is_some_and(|n| n.ends_with(".log") || n.ends_with(".so") || *n == "local_settings.py")
        || (parts.len() > 1 && matches!(parts[0], ".pytest_cache" | ".ruff_cache"))
}

/// Whether `path` lies in a top-level folder that is never a change: git's, the records', the
/// referee's. A record's listing there claims nothing.
fn never_a_change(path: &str) -> bool {
    matches!(path.split('/').next(), Some(".git" | ".tasks" | ".referee"))
}

/// Paths that are never part of a change: git's, the records', the referee's.
pub fn outside_change(path: &str) -> bool {
    let first = path.split('/').next().unwrap_or("");
    matches!(first, ".git" | ".tasks" | ".referee") || path.split('/').any(|c| c == ".git")
}

/// Which new paths shadow a protected Python module `DIR/STEM.py`: what CPython's path finder
/// loads first (a package of that name with any `__init__` suffix, an extension module, cached
/// bytecode for that stem).
pub fn shadows(protected_py: &str, path: &str) -> bool {
    let (dir, file) = match protected_py.rfind('/') {
        Some(i) => (&protected_py[..=i], &protected_py[i + 1..]),
        None => ("", protected_py),
    };
    let Some(stem) = file.strip_suffix(".py") else {
        return false;
    };
    let Some(rest) = path.strip_prefix(dir) else {
        return false;
    };
    if let Some(init) = rest.strip_prefix(&format!("{stem}/__init__")) {
        return matches!(init, ".py" | ".pyc" | ".so" | ".pyd")
            || (init.starts_with('.') && init.ends_with(".so"));
    }
    if let Some(ext) = rest.strip_prefix(&format!("{stem}.")) {
        return ext == "so" || (ext.ends_with(".so") && !ext.contains('/'));
    }
    if let Some(pyc) = rest.strip_prefix(&format!("__pycache__/{stem}.")) {
        return pyc.ends_with(".pyc") && !pyc.contains('/');
    }
    false
}

/// Whether the new path `path` takes the place of a module that a protected Python file
/// imports: CPython runs the file with its folder first on the path (`python app/x.py`), or the
/// root first (`python -m`), so `DIR/NAME.py`, `DIR/NAME/__init__.py` or an extension module
/// `DIR/NAME….so` is what `import NAME` finds there, when the start has no module NAME in DIR
/// (nor, for an extension, its source `NAME.pyx`, `NAME.c`, … there: built in place, it is the
/// project's own); at the root, only for a file whose folder has no module NAME. Added or
/// ignored alike. The imports are read from the file's text line by line (`import a, b`, `from
/// a import x`).
pub fn import_shadow(protected: &[(&String, &Node)], start: &Snapshot, path: &str) -> bool {
    // (folder, module) of a path, or none.
    let place = |p: &str| -> Option<(String, String)> {
        let (dir, file) = p.rsplit_once('/').unwrap_or(("", p));
        let (dir, name) = match file.strip_prefix("__init__.") {
            Some(_) => dir.rsplit_once('/').unwrap_or(("", dir)),
            None => (dir, file.split('.').next().unwrap_or(file)),
        };
        let module = file.ends_with(".py") || file.ends_with(".so");
        (module && !name.is_empty() && name != "__init__").then(|| (dir.into(), name.into()))
    };
    let Some((dir, name)) = place(path) else {
        return false;
    };
    if start
        .nodes
        .keys()
        .any(|q| !ignored(q) && place(q) == Some((dir.clone(), name.clone())))
    {
        return false;
    }
    let source_of = |ext: &str| {
        if dir.is_empty() {
            format!("{name}.{ext}")
        } else {
            format!("{dir}/{name}.{ext}")
        }
    };
    if path.ends_with(".so")
        && ["pyx", "c", "cc", "cpp", "cxx"]
            .iter()
            .any(|e| start.nodes.contains_key(&source_of(e)))
    {
        return false;
    }
    protected.iter().any(|(pp, node)| {
        let pdir = pp.rsplit_once('/').map_or("", |(d, _)| d);
        let text = node
            .bytes()
            .map(String::from_utf8_lossy)
            .unwrap_or_default();
        let imports = text.lines().any(|l| {
            let l = l.trim();
            let names: Vec<&str> = if let Some(rest) = l.strip_prefix("import ") {
                rest.split(',').collect()
            } else if let Some(rest) = l.strip_prefix("from ") {
                rest.split_whitespace().take(1).collect()
            } else {
                Vec::new()
            };
            names.iter().any(|n| {
                let first = n.split_whitespace().next().unwrap_or("");
                first.split('.').next() == Some(name.as_str())
            })
        });
        // At the root, only for a file whose own folder has no module of that name (one that
        // has runs as a script, where the root is not on the path).
        let pdir_has = start
            .nodes
            .keys()
            .any(|q| !ignored(q) && place(q) == Some((pdir.to_string(), name.clone())));
        let first = dir == pdir || (dir.is_empty() && !pdir_has);
        pp.ends_with(".py") && first && imports
    })
}

/// Three answers where the contract leaves room.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Tri {
    Yes,
    No,
    Maybe,
}

/// Why the veto stands: each protected path and what happened to it.
pub fn veto(start: &Snapshot, now: &Snapshot, prot: &GlobSet) -> (Tri, Vec<String>) {
    let mut why = Vec::new();
    let mut maybe = false;
    // The baseline's protected files (not a copy of one in an ignored folder).
    let protected_files: Vec<(&String, &Node)> = start
        .nodes
        .iter()
        .filter(|(p, n)| {
            prot.is_match(p.as_str())
                && matches!(n, Node::File { .. })
                && !ignored(p)
                && !outside_change(p)
        })
        .collect();
    let file_name = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    // A hard link shares the inode of a protected file as it is now (inode numbers are
    // reused once a file is replaced by a rename, so never the start's numbers).
    let protected_inodes: BTreeSet<(u64, u64)> = protected_files
        .iter()
        .filter(|(p, _)| matches!(now.nodes.get(*p), Some(Node::File { .. })))
        .filter_map(|(p, _)| now.inode.get(*p).copied())
        .collect();
    let all: BTreeSet<&String> = start.nodes.keys().chain(now.nodes.keys()).collect();
    for p in all {
        let (a, b) = (start.nodes.get(p), now.nodes.get(p));
        let is_prot = prot.is_match(p.as_str());
        // An ignored path in a protected module's place (a copy named as a protected file, a
        // shadow) is judged on what it is now, whatever was there at start: a veto unless an
        // unchanged copy of its protected namesake. An ignored module a protected file imports
        // (the user's `local_settings.py`) is judged against the start: a veto when it differs.
        // Gone, either is nothing: nothing runs in the protected code's place.
        if ignored(p) {
            let namesakes: Vec<&Node> = protected_files
                .iter()
                .filter(|(pp, _)| *pp != p && file_name(pp) == file_name(p))
                .map(|(_, n)| *n)
                .collect();
            let copy = is_prot && !namesakes.is_empty();
            let shadow = protected_files
                .iter()
                .any(|(pp, _)| pp.ends_with(".py") && shadows(pp, p));
            if copy || shadow {
                if let Some(b) = b {
                    let unchanged = copy && namesakes.iter().any(|n| n.bytes() == b.bytes());
                    if !unchanged {
                        why.push(format!("{p}: in a protected module's place"));
                    }
                }
                continue;
            }
            if !is_prot && import_shadow(&protected_files, start, p) {
                if b.is_some() && a != b {
                    why.push(format!(
                        "{p}: {} since the start, where a protected file's import finds it",
                        what(a, b)
                    ));
                }
                continue;
            }
        }
        if a == b {
            // Same bytes, type and mode; a path that became a hard link to a protected file
            // is caught below.
            if a.is_some() {
                continue;
            }
        }
        if is_prot {
            why.push(format!("{p}: {}", what(a, b)));
            continue;
        }
        if a.is_none() {
            if let Some(b) = b {
                if protected_files
                    .iter()
                    .any(|(pp, _)| pp.ends_with(".py") && shadows(pp, p))
                {
                    why.push(format!("{p}: shadows a protected module"));
                    continue;
                }
                if !is_prot && import_shadow(&protected_files, start, p) {
                    why.push(format!(
                        "{p}: takes the place of a module a protected file imports"
                    ));
                    continue;
                }
                if let Node::File { .. } = b {
                    if now
                        .inode
                        .get(p)
                        .is_some_and(|i| protected_inodes.contains(i))
                    {
                        why.push(format!("{p}: hard link to a protected file"));
                        continue;
                    }
                }
                if let Node::Link(_) = b {
                    match now.resolves_to.get(p) {
                        Some(t) if prot.is_match(t.as_str()) => {
                            why.push(format!("{p}: symlink to protected {t}"));
                            continue;
                        }
                        Some(t) => {
                            // A link to a folder holding protected files: the contract names
                            // links to protected files only.
                            let pre = format!("{t}/");
                            if protected_files.iter().any(|(pp, _)| pp.starts_with(&pre)) {
                                maybe = true;
                            }
                        }
                        None => {}
                    }
                }
            }
        }
    }
    let tri = if !why.is_empty() {
        Tri::Yes
    } else if maybe {
        Tri::Maybe
    } else {
        Tri::No
    };
    (tri, why)
}

/// The veto when the referee's first look came after the work (`late`): a pin taken then of
/// every path no commit holds (under `.git/`, `.tasks/`, `.referee/`, or ignored) is what those
/// paths are measured against, and the rest against the start. With a task record there at that
/// look (`after_work`), the pin dates nothing: what it held and is gone since is no finding,
/// and what it held, still as it was, blocks when it holds code that will run (a hook git runs,
/// a git config with a key git runs as a command, a protected name among the records or the
/// referee's files, an ignored path a protected glob matches, an ignored module a protected
/// file imports) unless it is in a protected module's place (judged on what it is, as always).
/// Written from the contract (docs/code-change.md, "A start is taken *before* the work").
pub fn veto_late(
    start: &Snapshot,
    pin: &Snapshot,
    after_work: bool,
    now: &Snapshot,
    prot: &GlobSet,
) -> (Tri, Vec<String>) {
    let no_commit = |p: &str| outside_change(p) || ignored(p);
    let mut mixed = start.clone();
    let paths: BTreeSet<String> = start
        .nodes
        .keys()
        .chain(pin.nodes.keys())
        .filter(|p| no_commit(p))
        .cloned()
        .collect();
    for p in &paths {
        match pin.nodes.get(p) {
            Some(n) => mixed.nodes.insert(p.clone(), n.clone()),
            None => mixed.nodes.remove(p),
        };
        match pin.inode.get(p) {
            Some(i) => mixed.inode.insert(p.clone(), *i),
            None => mixed.inode.remove(p),
        };
        match pin.resolves_to.get(p) {
            Some(t) => mixed.resolves_to.insert(p.clone(), t.clone()),
            None => mixed.resolves_to.remove(p),
        };
    }
    let (tri, mut why) = veto(&mixed, now, prot);
    if !after_work {
        return (tri, why);
    }
    let gone = |p: &str| pin.nodes.contains_key(p) && !now.nodes.contains_key(p);
    why.retain(|w| {
        let p = w.split(": ").next().unwrap_or("");
        !(no_commit(p) && gone(p))
    });
    let protected_py: Vec<(&String, &Node)> = start
        .nodes
        .iter()
        .filter(|(p, n)| {
            prot.is_match(p.as_str())
                && p.ends_with(".py")
                && matches!(n, Node::File { .. })
                && !no_commit(p)
        })
        .collect();
    let file_name = |p: &str| p.rsplit('/').next().unwrap_or(p).to_string();
    for (p, was) in &pin.nodes {
        if now.nodes.get(p) != Some(was) || why.iter().any(|w| w.starts_with(&format!("{p}: "))) {
            continue;
        }
        let in_place = ignored(p)
            && (protected_py.iter().any(|(pp, _)| shadows(pp, p))
                || (prot.is_match(p.as_str())
                    && protected_py
                        .iter()
                        .any(|(pp, _)| file_name(pp) == file_name(p))));
        let hook = {
            let parts: Vec<&str> = p.split('/').collect();
            let in_hooks = matches!(parts.as_slice(), [".git", "hooks", _])
                || matches!(parts.as_slice(), [".git", "modules", _, "hooks", _]);
            in_hooks && !p.ends_with(".sample") && matches!(was, Node::File { .. } | Node::Link(_))
        };
        let config = (p == ".git/config"
            || (p.starts_with(".git/modules/") && p.ends_with("/config")))
            && was.bytes().is_some_and(config_runs);
        let channel = p
            .strip_prefix(".tasks/")
            .is_some_and(|n| !n.contains('/') && !n.starts_with('.') && n.ends_with(".json"))
            || p.starts_with(".referee/OBSERVER-");
        let named = (p.starts_with(".tasks/") || p.starts_with(".referee/"))
            && prot.is_match(p.as_str())
            && !channel;
        let hidden =
            ignored(p) && (prot.is_match(p.as_str()) || import_shadow(&protected_py, start, p));
        if !in_place && (hook || config || named || hidden) {
            why.push(format!(
                "{p}: there at a first look after the work, undated"
            ));
        }
    }
    let tri = if !why.is_empty() {
        Tri::Yes
    } else if tri == Tri::Maybe {
        Tri::Maybe
    } else {
        Tri::No
    };
    (tri, why)
}

/// Whether a git config's text has a key git runs as a command (the contract's list: hooks
/// path, an fsmonitor hook, a `!` alias, filter, diff and merge drivers, editors, pagers,
/// credential and signing programs, includes, config hooks).
fn config_runs(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    let mut section = String::new();
    let mut sub = false;
    for line in text.lines() {
        let l = line.trim();
        if let Some(h) = l.strip_prefix('[') {
            let h = h.trim_end_matches(']');
            let mut it = h.splitn(2, char::is_whitespace);
            section = it.next().unwrap_or("").to_lowercase();
            sub = it.next().is_some();
            continue;
        }
        let Some((k, v)) = l.split_once('=') else {
            continue;
        };
        let (k, v) = (k.trim().to_lowercase(), v.trim());
        let boolean = matches!(
            v.to_lowercase().as_str(),
            "true" | "false" | "yes" | "no" | "on" | "off" | "1" | "0" | ""
        );
        let runs = match (section.as_str(), sub, k.as_str()) {
            ("core", false, "hookspath" | "editor" | "pager" | "sshcommand") => true,
            ("core", false, "fsmonitor") => !boolean,
            ("alias", _, _) => v.starts_with('!'),
            ("filter", true, "clean" | "smudge" | "process") => true,
            ("diff", true, "textconv" | "command") | ("merge", true, "driver") => true,
            ("sequence", false, "editor") | ("credential", _, "helper") => true,
            ("gpg", _, "program") | ("include", false, "path") | ("includeif", true, "path") => {
                true
            }
            ("hook", true, "command") => true,
            ("pager", _, _) => !boolean,
            _ => false,
        };
        if runs {
            return true;
        }
    }
    false
}

fn what(a: Option<&Node>, b: Option<&Node>) -> &'static str {
    match (a, b) {
        (None, Some(_)) => "added",
        (Some(_), None) => "removed",
        (Some(Node::File { bytes: x, exec: e }), Some(Node::File { bytes: y, exec: f })) => {
            if x == y && e != f {
                "mode"
            } else {
                "modified"
            }
        }
        (Some(_), Some(_)) => "type",
        (None, None) => "unchanged",
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Added,
    Modified,
    Removed,
}

impl Kind {
    fn key(self) -> &'static str {
        match self {
            Kind::Added => "added",
            Kind::Modified => "modified",
            Kind::Removed => "removed",
        }
    }
}

#[derive(Clone, Debug)]
pub struct Change {
    pub kind: Kind,
    pub before: Option<Node>,
    pub after: Option<Node>,
    /// For a symbolic link now: what it leads to inside the workspace (`None`: out of it, or
    /// nowhere).
    pub leads: Option<Option<Node>>,
}

/// The work tree's changes against the (accepted) baseline: no ignored path, nothing of git's,
/// the records' or the referee's.
pub fn changes(base: &BTreeMap<String, Node>, now: &Snapshot) -> BTreeMap<String, Change> {
    let mut out = BTreeMap::new();
    let keep = |p: &String, n: &Node| !outside_change(p) && !ignored(p) && *n != Node::Dir;
    let now_files: BTreeMap<&String, &Node> =
        now.nodes.iter().filter(|(p, n)| keep(p, n)).collect();
    let leads = |p: &String, n: &Node| {
        matches!(n, Node::Link(_)).then(|| {
            now.resolves_to
                .get(p)
                .and_then(|t| now.nodes.get(t))
                .cloned()
        })
    };
    for (p, b) in base {
        match now_files.get(p) {
            None => {
                out.insert(
                    p.clone(),
                    Change {
                        kind: Kind::Removed,
                        before: Some(b.clone()),
                        after: None,
                        leads: None,
                    },
                );
            }
            Some(n) if *n != b => {
                out.insert(
                    p.clone(),
                    Change {
                        kind: Kind::Modified,
                        before: Some(b.clone()),
                        after: Some((*n).clone()),
                        leads: leads(p, n),
                    },
                );
            }
            _ => {}
        }
    }
    for (p, n) in now_files {
        if !base.contains_key(p) {
            out.insert(
                p.clone(),
                Change {
                    kind: Kind::Added,
                    before: None,
                    after: Some(n.clone()),
                    leads: leads(p, n),
                },
            );
        }
    }
    out
}

/// A task record as read from `.tasks/<id>.json`.
#[derive(Clone, Debug)]
pub struct Record {
    pub file_id: String,
    pub sha: String,
    pub parsed: Result<Parsed, String>,
    /// The record's text as UTF-8 (decoded when it was written in UTF-16), when it is text.
    pub text: Option<String>,
}

#[derive(Clone, Debug)]
pub struct Parsed {
    pub status: String,
    pub attempt: u64,
    pub summary: String,
    pub listed: BTreeMap<String, Kind>,
    pub pre: BTreeMap<String, Option<String>>,
    pub post: BTreeMap<String, Option<String>>,
}

pub fn parse_record(file_id: &str, bytes: &[u8]) -> Record {
    let parsed = (|| -> Result<Parsed, String> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| e.to_string())?;
        let o = v.as_object().ok_or("not an object")?;
        let s = |k: &str| -> Result<String, String> {
            o.get(k)
                .and_then(Value::as_str)
                .map(str::to_string)
                .ok_or(format!("no string `{k}`"))
        };
        let task_id = s("task_id")?;
        if task_id != file_id {
            return Err("task_id is not the file's name".into());
        }
        let status = s("status")?;
        let summary = s("summary")?;
        let attempt = o
            .get("attempt")
            .and_then(Value::as_u64)
            .filter(|a| *a >= 1)
            .ok_or("no attempt")?;
        let ch = o
            .get("changes")
            .and_then(Value::as_object)
            .ok_or("no changes")?;
        let mut listed = BTreeMap::new();
        for k in [Kind::Added, Kind::Modified, Kind::Removed] {
            if let Some(arr) = ch.get(k.key()) {
                for p in arr.as_array().ok_or("changes not arrays")? {
                    let p = p.as_str().ok_or("path not a string")?;
                    // A path in a folder that is never a change claims nothing (its own record).
                    if !never_a_change(p) {
                        listed.insert(p.to_string(), k);
                    }
                }
            }
        }
        let hashes = |k: &str| -> BTreeMap<String, Option<String>> {
            o.get(k)
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter()
                        .filter(|(p, _)| !never_a_change(p))
                        .map(|(p, h)| {
                            (
                                p.clone(),
                                h.as_str().filter(|s| !s.is_empty()).map(str::to_string),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default()
        };
        Ok(Parsed {
            status,
            attempt,
            summary,
            listed,
            pre: hashes("pre_hashes"),
            post: hashes("post_hashes"),
        })
    })();
    Record {
        file_id: file_id.to_string(),
        sha: sha(bytes),
        parsed,
        text: String::from_utf8(bytes.to_vec()).ok(),
    }
}

/// Whether a file parses, as the real tools judge it. The simulator writes broken files only
/// from templates that carry the marker below, each a syntax error in its language; JSON is
/// judged by a JSON parser.
pub fn parses(path: &str, bytes: &[u8]) -> bool {
    if path.ends_with(".json") {
        return serde_json::from_slice::<Value>(bytes).is_ok();
    }
    !bytes.windows(10).any(|w| w == b"<<broken>>")
}

fn text(bytes: &[u8]) -> bool {
    !bytes.contains(&0)
}

fn lines(bytes: &[u8]) -> Vec<&[u8]> {
    bytes
        .split_inclusive(|b| *b == b'\n')
        .map(|l| {
            let l = l.strip_suffix(b"\n").unwrap_or(l);
            l.strip_suffix(b"\r").unwrap_or(l)
        })
        .collect()
}

/// Lines of `after` that `before` does not have (as a multiset): what a diff adds.
fn added_lines<'a>(before: Option<&[u8]>, after: &'a [u8]) -> Vec<&'a [u8]> {
    let mut have: BTreeMap<&[u8], usize> = BTreeMap::new();
    if let Some(b) = before {
        for l in lines(b) {
            *have.entry(l).or_default() += 1;
        }
    }
    let mut out = Vec::new();
    for l in lines(after) {
        match have.get_mut(l) {
            Some(n) if *n > 0 => *n -= 1,
            _ => out.push(l),
        }
    }
    out
}

fn trailing_ws(path: &str, line: &[u8]) -> bool {
    let n = line
        .iter()
        .rev()
        .take_while(|b| matches!(b, b' ' | b'\t' | 0x0b | 0x0c))
        .count();
    if n == 0 {
        return false;
    }
    let md = path.ends_with(".md") || path.ends_with(".markdown");
    let hard_break = md
        && n == 2
        && !line[..line.len() - 2].iter().all(|b| *b == b' ')
        && line[line.len() - 2..] == *b"  ";
    !hard_break
}

/// One failing check of an attempt, as the model sees it.
pub type Findings = Vec<String>;

/// The verdicts the contract allows for one judged attempt.
#[derive(Clone, Debug)]
pub struct Expect {
    pub task: String,
    pub attempt: Option<u64>,
    pub verdicts: BTreeSet<&'static str>,
    pub why: Vec<String>,
    /// The scope's changes (for the guards and for `accept`).
    pub diff: BTreeMap<String, (Option<String>, Option<String>)>,
    /// The same changes compared byte for byte (whitespace and line endings included).
    pub raw_diff: BTreeMap<String, (Option<String>, Option<String>)>,
    pub scope: BTreeSet<String>,
    pub touches_protected: bool,
    /// The verdict before the loop guards.
    pub graded: &'static str,
    /// A record judged before with the same bytes, judged again because its verdict went
    /// stale (a path of its scope changed, or its scope did).
    pub rejudge: bool,
    /// Whether the record is an attempt of its own (not a replay, not a record of a task
    /// never opened).
    pub is_attempt: bool,
}

/// What the model remembers of a judged attempt.
#[derive(Clone, Debug)]
pub struct Judged {
    pub attempt: Option<u64>,
    pub record_sha: String,
    pub verdict: String,
    /// The verdict the attempt was first given (a rejected attempt of another task, for the
    /// guards, is one rejected when first judged).
    pub first_verdict: String,
    /// An attempt of its own (see [`Expect::is_attempt`]).
    pub is_attempt: bool,
    /// The verdict before the loop guards when first judged (the REJECT cap counts these).
    pub graded: String,
    pub diff: BTreeMap<String, (Option<String>, Option<String>)>,
    pub raw_diff: BTreeMap<String, (Option<String>, Option<String>)>,
    pub scope: BTreeSet<String>,
    /// The hash of each scope path when judged (for staleness).
    pub at: BTreeMap<String, Option<String>>,
    /// The model allowed both an escalation and another verdict: the STOP may go either way.
    pub either_escalation: bool,
}

#[derive(Clone, Debug, Default)]
pub struct Memory {
    pub judged: BTreeMap<String, Vec<Judged>>,
    pub registered: Option<BTreeSet<String>>,
}

impl Memory {
    pub fn latest(&self, task: &str) -> Option<&Judged> {
        self.judged.get(task).and_then(|v| v.last())
    }
    /// Keeps a judgment: a record judged again (same attempt, same bytes; its verdict went
    /// stale) replaces its earlier judgment's verdict, scope and hashes, which is what
    /// `status --task` and `accept` go by. What the loop guards compare stays the attempt as
    /// it was first judged (its diff and its grade): an attempt is what the worker handed in,
    /// and a re-judgment sees whatever else has landed in its scope since, the next attempt's
    /// work in progress included, at a moment that depends on when the referee looked (a live
    /// referee at once, a one-shot `verify` whenever it is run).
    pub fn keep(&mut self, task: &str, j: Judged) {
        let v = self.judged.entry(task.to_string()).or_default();
        if let Some(old) = v
            .iter_mut()
            .find(|o| o.attempt == j.attempt && o.record_sha == j.record_sha)
        {
            *old = Judged {
                diff: std::mem::take(&mut old.diff),
                raw_diff: std::mem::take(&mut old.raw_diff),
                graded: std::mem::take(&mut old.graded),
                first_verdict: std::mem::take(&mut old.first_verdict),
                ..j
            };
        } else {
            v.push(j);
        }
    }
}

pub const GOOD: &[&str] = &["APPROVE", "MINOR_ISSUES"];

/// A side of a diff as the loop guards compare it: whitespace-only differences taken out
/// (runs of whitespace as one space, trailing whitespace and blank lines dropped).
fn normalized(n: Option<&Node>) -> Option<String> {
    match n {
        Some(Node::File { bytes, exec }) if text(bytes) => {
            let mut out = Vec::new();
            for l in lines(bytes) {
                let words: Vec<&[u8]> = l
                    .split(|b| b.is_ascii_whitespace())
                    .filter(|w| !w.is_empty())
                    .collect();
                if !words.is_empty() {
                    out.push(words.join(&b' '));
                }
            }
            Some(format!(
                "{}{}",
                sha(&out.join(&b'\n')),
                if *exec { "x" } else { "" }
            ))
        }
        other => node_sha(other),
    }
}

pub fn node_sha(n: Option<&Node>) -> Option<String> {
    match n {
        Some(Node::File { bytes, .. }) => Some(sha(bytes)),
        Some(Node::Link(t)) => Some(format!("link:{}", sha(t))),
        Some(Node::Dir) => Some("dir".into()),
        Some(Node::Other) => Some("other".into()),
        None => None,
    }
}

/// A new folder listed as `git status` shows it (`?? app/pkg/`): listed as added, the
/// baseline holding nothing at or beneath it, with changes beneath it that are all additions,
/// it lists each of them (the folder's own listing and hashes dropped).
fn new_folders(p: &mut Parsed, base: &BTreeMap<String, Node>, ch: &BTreeMap<String, Change>) {
    let folders: Vec<String> = p
        .listed
        .iter()
        .filter(|(_, k)| **k == Kind::Added)
        .map(|(path, _)| path.clone())
        .filter(|path| {
            let dir = path.trim_end_matches('/');
            let prefix = format!("{dir}/");
            let under: Vec<&Change> = ch
                .iter()
                .filter(|(c, _)| c.starts_with(&prefix))
                .map(|(_, c)| c)
                .collect();
            !dir.is_empty()
                && !ch.contains_key(dir)
                && !base.contains_key(dir)
                && !base.keys().any(|b| b.starts_with(&prefix))
                && !under.is_empty()
                && under.iter().all(|c| c.kind == Kind::Added)
        })
        .collect();
    for path in folders {
        let dir = path.trim_end_matches('/').to_string();
        let prefix = format!("{dir}/");
        let same = |q: &String| q.trim_end_matches('/') == dir;
        p.listed.retain(|q, _| !same(q));
        p.pre.retain(|q, _| !same(q));
        p.post.retain(|q, _| !same(q));
        for c in ch.keys().filter(|c| c.starts_with(&prefix)) {
            p.listed.entry(c.clone()).or_insert(Kind::Added);
        }
    }
}

/// A listing of what git ignores claims nothing: an ignored path that is there, or a folder
/// with ignored paths in it and no change beneath it.
fn forget_ignored(p: &mut Parsed, now: &Snapshot, ch: &BTreeMap<String, Change>) {
    let there = |q: &str| {
        let dir = format!("{q}/");
        (now.nodes.get(q).is_some_and(|n| *n != Node::Dir) && ignored(q))
            || (now
                .nodes
                .iter()
                .any(|(k, n)| k.starts_with(&dir) && *n != Node::Dir && ignored(k))
                && !ch.keys().any(|k| k.starts_with(&dir)))
    };
    let gone: Vec<String> = p
        .listed
        .keys()
        .filter(|q| there(q.trim_end_matches('/')))
        .cloned()
        .collect();
    for q in gone {
        p.listed.remove(&q);
        p.pre.remove(&q);
        p.post.remove(&q);
    }
}

/// Judges every record that needs a judgment now. `veto` is this moment's veto.
pub fn judge(
    mem: &Memory,
    base: &BTreeMap<String, Node>,
    now: &Snapshot,
    records: &[Record],
    veto: Tri,
    prot: &GlobSet,
) -> Vec<Expect> {
    let ch = changes(base, now);
    let records: Vec<Record> = records
        .iter()
        .cloned()
        .map(|mut r| {
            if let Ok(p) = &mut r.parsed {
                new_folders(p, base, &ch);
                forget_ignored(p, now, &ch);
            }
            r
        })
        .collect();
    // Which records are judged, and which claim paths.
    let unknown = |id: &str| mem.registered.as_ref().is_some_and(|r| !r.contains(id));
    let pending: Vec<&Record> = records
        .iter()
        .filter(|r| match &r.parsed {
            Ok(p) => p.status == "pending_review",
            Err(_) => true,
        })
        .collect();
    let claimants: Vec<(&str, &Parsed)> = pending
        .iter()
        .filter_map(|r| r.parsed.as_ref().ok().map(|p| (r.file_id.as_str(), p)))
        .filter(|(id, _)| !unknown(id))
        .collect();
    // Records already judged with the very same bytes keep their verdict while it holds: a
    // verdict whose scope changed (a path of it, or which paths it holds) is judged again.
    let all_claims0: Vec<&str> = claimants.iter().map(|(id, _)| *id).collect();
    let fresh: Vec<&Record> = pending
        .iter()
        .copied()
        .filter(|r| {
            let Some(j) = mem
                .judged
                .get(&r.file_id)
                .and_then(|v| v.iter().rev().find(|j| j.record_sha == r.sha))
            else {
                return true;
            };
            if j.at.iter().any(|(p, h)| node_sha(now.nodes.get(p)) != *h) {
                return true;
            }
            let e = judge_one(
                mem,
                base,
                &ch,
                r,
                &claimants,
                &all_claims0,
                veto,
                prot,
                &unknown,
            );
            e.scope != j.scope
        })
        .collect();
    // A claim excuses another task only while its record is not REJECTed: judge with every
    // claim, then with the claims of those not REJECTed; a task whose verdict differs between
    // the two is left open (the contract's rounds do not say which comes first).
    let all_claims: Vec<&str> = claimants.iter().map(|(id, _)| *id).collect();
    let first: BTreeMap<String, Expect> = fresh
        .iter()
        .map(|r| {
            (
                r.file_id.clone(),
                judge_one(
                    mem,
                    base,
                    &ch,
                    r,
                    &claimants,
                    &all_claims,
                    veto,
                    prot,
                    &unknown,
                ),
            )
        })
        .collect();
    let rejected: BTreeSet<&str> = first
        .iter()
        .filter(|(_, e)| {
            e.verdicts
                .iter()
                .all(|v| *v == "REJECT" || v.starts_with("ESCALATE"))
        })
        .map(|(id, _)| id.as_str())
        .chain(claimants.iter().filter_map(|(id, _)| {
            mem.latest(id)
                .filter(|j| {
                    !first.contains_key(*id)
                        && (!GOOD.contains(&j.verdict.as_str())
                            || j.at.iter().any(|(p, h)| node_sha(now.nodes.get(p)) != *h))
                })
                .map(|_| *id)
        }))
        .collect();
    let kept: Vec<&str> = all_claims
        .iter()
        .copied()
        .filter(|id| !rejected.contains(id))
        .collect();
    fresh
        .iter()
        .map(|r| {
            let mut a = first[&r.file_id].clone();
            let b = judge_one(mem, base, &ch, r, &claimants, &kept, veto, prot, &unknown);
            a.verdicts.extend(b.verdicts.iter().copied());
            a
        })
        .collect()
}

#[allow(clippy::too_many_arguments, reason = "the model's inputs, spelled out")]
fn judge_one(
    mem: &Memory,
    base: &BTreeMap<String, Node>,
    ch: &BTreeMap<String, Change>,
    rec: &Record,
    claimants: &[(&str, &Parsed)],
    valid_claims: &[&str],
    veto: Tri,
    prot: &GlobSet,
    unknown: &dyn Fn(&str) -> bool,
) -> Expect {
    let id = rec.file_id.clone();
    let mut why: Findings = Vec::new();
    let mut minor: Findings = Vec::new();
    let mut exp = Expect {
        task: id.clone(),
        attempt: None,
        verdicts: BTreeSet::new(),
        why: Vec::new(),
        diff: BTreeMap::new(),
        raw_diff: BTreeMap::new(),
        scope: BTreeSet::new(),
        touches_protected: false,
        graded: "REJECT",
        rejudge: mem
            .judged
            .get(&id)
            .is_some_and(|v| v.iter().any(|j| j.record_sha == rec.sha)),
        is_attempt: false,
    };
    let p = match &rec.parsed {
        Err(e) => {
            exp.why.push(format!("CC-00 {e}"));
            // No attempt number: it counts toward no guard, and none applies to it.
            exp.verdicts.insert("REJECT");
            return exp;
        }
        Ok(p) => p,
    };
    exp.attempt = Some(p.attempt);
    if unknown(&id) {
        why.push("CC-00 unknown_task".into());
    }
    // A replay: an attempt of the task was judged with a higher number, or with this number
    // and another record. Judged again (its scope changed), it is still one.
    let replay = mem.judged.get(&id).and_then(|v| {
        v.iter()
            .filter(|j| j.is_attempt)
            .filter_map(|j| Some((j.attempt?, j)))
            .find(|(a, j)| *a > p.attempt || (*a == p.attempt && j.record_sha != rec.sha))
            .map(|(a, _)| a)
    });
    if let Some(last) = replay {
        why.push(format!("CC-00 replay: attempt {} <= {last}", p.attempt));
    }
    // Neither a replay nor a record of a task never opened is an attempt: the REJECT cap
    // counts its REJECT, but no guard compares its diff and no later attempt is compared
    // with it.
    exp.is_attempt = replay.is_none() && !unknown(&id);
    // The scope: what this record lists, plus the changes no other (valid) claim covers.
    let claimed_by_others: BTreeSet<&str> = claimants
        .iter()
        .filter(|(cid, _)| *cid != id && valid_claims.contains(cid))
        .flat_map(|(_, cp)| cp.listed.keys().map(String::as_str))
        .collect();
    let scope: BTreeSet<String> = p
        .listed
        .keys()
        .cloned()
        .chain(
            ch.keys()
                .filter(|c| !claimed_by_others.contains(c.as_str()))
                .cloned(),
        )
        .collect();
    exp.touches_protected = scope.iter().any(|s| prot.is_match(s.as_str()));
    match veto {
        Tri::Yes => why.push("CC-01 veto".into()),
        Tri::Maybe => {
            exp.verdicts.insert("REJECT");
        }
        Tri::No => {}
    }
    for s in &scope {
        let c = ch.get(s);
        match (c, p.listed.get(s)) {
            (Some(c), Some(k)) if c.kind == *k => {}
            (Some(c), Some(k)) => why.push(format!("CC-02 {s}: {:?} listed as {k:?}", c.kind)),
            (Some(c), None) => why.push(format!("CC-02 {s}: {:?} not listed", c.kind)),
            (None, Some(k)) => why.push(format!("CC-02 {s}: listed {k:?}, no change")),
            (None, None) => {}
        }
        if let Some(c) = c {
            // A link that leads out or nowhere cannot be read: its side of the diff is that
            // (the same for the same text), never the text of one that could be.
            let unread = |side: Option<String>| match (&c.leads, side) {
                (Some(None), Some(t)) => Some(format!("unread:{t}")),
                (_, side) => side,
            };
            let (a, b) = (
                normalized(c.before.as_ref()),
                unread(normalized(c.after.as_ref())),
            );
            if a != b {
                exp.diff.insert(s.clone(), (a, b));
            }
            let (a, b) = (
                node_sha(c.before.as_ref()),
                unread(node_sha(c.after.as_ref())),
            );
            exp.raw_diff.insert(s.clone(), (a, b));
        }
    }
    for (path, claim) in &p.pre {
        let actual = base.get(path).and_then(Node::bytes).map(sha);
        if *claim != actual {
            why.push(format!("CC-03 pre {path}"));
        }
    }
    for (path, claim) in &p.post {
        let actual = ch
            .get(path)
            .and_then(|c| c.after.as_ref())
            .or_else(|| {
                if ch.contains_key(path) {
                    None
                } else {
                    base.get(path)
                }
            })
            .and_then(Node::bytes)
            .map(sha);
        if *claim != actual {
            why.push(format!("CC-03 post {path}"));
        }
    }
    for s in &scope {
        let Some(c) = ch.get(s) else { continue };
        if c.kind == Kind::Removed && p.listed.get(s) != Some(&Kind::Removed) {
            why.push(format!("CC-04 {s} removed unlisted"));
        }
        if c.kind == Kind::Modified {
            let was = c
                .before
                .as_ref()
                .and_then(Node::bytes)
                .map_or(0, <[u8]>::len);
            let is = c.after.as_ref().and_then(Node::bytes).map(<[u8]>::len);
            if was > 0 && is == Some(0) {
                why.push(format!("CC-04 {s} emptied"));
            }
        }
        // A link is parsed as what a reader meets there; one out of the workspace, or to
        // nothing, cannot be judged.
        match &c.leads {
            Some(Some(Node::File { bytes, .. })) if !parses(s, bytes) => {
                why.push(format!("CC-05 {s} (the file its link leads to)"))
            }
            Some(Some(Node::Other)) => why.push(format!("CC-05 {s} leads to no file")),
            Some(None) => why.push(format!("CC-05 {s} leads out or nowhere")),
            _ => {}
        }
        let Some(bytes) = c.after.as_ref().and_then(Node::bytes) else {
            continue;
        };
        if !parses(s, bytes) {
            why.push(format!("CC-05 {s}"));
        }
        let limit = if s.ends_with(".py") {
            200 * 1024
        } else if s.ends_with(".md") {
            500 * 1024
        } else {
            5 * 1024 * 1024
        };
        if bytes.len() > limit {
            why.push(format!("CC-06 {s}"));
        }
        let before = c.before.as_ref().and_then(Node::bytes);
        let added = added_lines(before, bytes);
        for l in &added {
            if l.starts_with(b"<<<<<<< ")
                || l.starts_with(b">>>>>>> ")
                || *l == b"======="
                || l.starts_with(b"-----BEGIN RSA PRIVATE KEY-----")
                || l.starts_with(b"-----BEGIN OPENSSH PRIVATE KEY-----")
            {
                why.push(format!("CC-07 {s}"));
                break;
            }
        }
        if text(bytes) {
            if !bytes.is_empty() && !matches!(bytes.last(), Some(b'\n' | b'\r')) {
                minor.push(format!("CC-09 {s} no final newline"));
            }
            if added.iter().any(|l| trailing_ws(s, l)) {
                minor.push(format!("CC-09 {s} trailing whitespace"));
            }
        }
    }
    if !p.summary.starts_with("Here's what I did:") {
        minor.push("CC-08 summary".into());
    }
    exp.scope = scope;
    let graded = if !why.is_empty() {
        "REJECT"
    } else if !minor.is_empty() {
        "MINOR_ISSUES"
    } else {
        "APPROVE"
    };
    exp.why = why.into_iter().chain(minor).collect();
    exp.verdicts.insert(graded);
    exp.graded = graded;
    // The loop guards. Whether two diffs are "identical, whitespace aside" depends on what
    // counts as whitespace (line endings, runs of blanks): the model is exact only where
    // the byte-for-byte comparison and the normalized one agree.
    let earlier: Vec<Judged> = mem
        .judged
        .get(&id)
        .map(|v| {
            v.iter()
                .filter(|j| !(j.attempt == exp.attempt && j.record_sha == rec.sha))
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    let rejected_other = |j: &Judged| {
        j.is_attempt && j.first_verdict != "APPROVE" && j.first_verdict != "MINOR_ISSUES"
    };
    let same = |raw: bool| -> bool {
        let mine = if raw { &exp.raw_diff } else { &exp.diff };
        let of = |j: &Judged| {
            if raw {
                j.raw_diff.clone()
            } else {
                j.diff.clone()
            }
        };
        exp.is_attempt
            && !mine.is_empty()
            && (earlier.iter().any(|j| j.is_attempt && of(j) == *mine)
                || mem.judged.iter().any(|(t, v)| {
                    *t != id && v.iter().any(|j| rejected_other(j) && of(j) == *mine)
                }))
    };
    let (same_norm, same_raw) = (same(false), same(true));
    let same_as_earlier = same_norm || same_raw;
    let guard_unsure = same_norm != same_raw || exp.rejudge;
    match graded {
        "REJECT" => {
            exp.verdicts.clear();
            // The cap counts the task's other judged REJECTs (a re-judged attempt replaces
            // its own earlier judgment).
            // A record that could not be read (no attempt number) counts toward no guard.
            let cap = earlier
                .iter()
                .filter(|j| j.graded == "REJECT" && j.attempt.is_some())
                .count()
                + 1
                >= 3;
            if cap || same_as_earlier {
                exp.verdicts.insert("ESCALATE");
                if guard_unsure && (!cap || exp.rejudge) {
                    exp.verdicts.insert("REJECT");
                    exp.verdicts.insert("ESCALATE_CONVERGENCE");
                }
            } else {
                exp.verdicts.insert("REJECT");
                if exp.is_attempt && (p.attempt >= 3 || earlier.len() >= 2) {
                    exp.verdicts.insert("ESCALATE_CONVERGENCE");
                }
            }
            if veto == Tri::Maybe {
                exp.verdicts.insert("APPROVE");
                exp.verdicts.insert("MINOR_ISSUES");
            }
        }
        "MINOR_ISSUES" => {
            if same_as_earlier {
                exp.verdicts.insert("ESCALATE");
                if !guard_unsure {
                    exp.verdicts.remove("MINOR_ISSUES");
                }
            }
            if guard_unsure {
                exp.verdicts.insert("ESCALATE");
            }
            if p.attempt >= 3 || earlier.len() >= 2 {
                exp.verdicts.insert("ESCALATE_CONVERGENCE");
            }
        }
        _ => {}
    }
    // An escalation holds: the attempt judged again (its scope changed) keeps the escalation
    // it was given when first judged, until the task moves on (a new attempt).
    let held = mem.judged.get(&id).and_then(|v| {
        v.iter().find(|j| {
            j.is_attempt
                && exp.is_attempt
                && j.attempt == exp.attempt
                && j.first_verdict.starts_with("ESCALATE")
        })
    });
    if let Some(j) = held {
        exp.verdicts = BTreeSet::from([if j.first_verdict == "ESCALATE_CONVERGENCE" {
            "ESCALATE_CONVERGENCE"
        } else {
            "ESCALATE"
        }]);
    }
    exp
}

/// Where a link at `path` whose text is `target` leads inside the tree, read by its text alone
/// (as a commit holds it): `None` when absolute or out of the tree.
pub fn leads_to(path: &str, target: &str) -> Option<String> {
    if target.starts_with('/') {
        return None;
    }
    let mut at: Vec<&str> = path.split('/').collect();
    at.pop();
    for piece in target.split('/') {
        match piece {
            "" | "." => {}
            ".." => {
                at.pop()?;
            }
            p => at.push(p),
        }
    }
    (!at.is_empty()).then(|| at.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shadow_names_are_what_cpython_loads_first() {
        let p = "app/orchestrator.py";
        for s in [
            "app/orchestrator/__init__.py",
            "app/orchestrator/__init__.so",
            "app/orchestrator/__init__.abi3.so",
            "app/orchestrator.so",
            "app/orchestrator.cpython-311-x86_64-linux-gnu.so",
            "app/__pycache__/orchestrator.cpython-311.pyc",
        ] {
            assert!(shadows(p, s), "{s}");
        }
        for s in [
            "app/orchestrator_x.py",
            "app/other/__init__.py",
            "orchestrator.so",
            "app/__pycache__/util.cpython-311.pyc",
        ] {
            assert!(!shadows(p, s), "{s}");
        }
    }

    #[test]
    fn ignore_rules_are_the_committed_ones() {
        assert!(ignored("build/lib/app/orchestrator.py"));
        assert!(ignored("app/__pycache__/util.cpython-311.pyc"));
        assert!(ignored("x.log"));
        assert!(ignored("app/os.abi3.so"));
        assert!(ignored("app/local_settings.py"));
        assert!(!ignored("app/build.py"));
        assert!(!ignored("build"));
    }

    #[test]
    fn added_lines_are_a_multiset_difference() {
        assert_eq!(
            added_lines(Some(b"a\nb\n"), b"a\nb\nb\nc\n"),
            vec![&b"b"[..], b"c"]
        );
        assert!(trailing_ws("x.py", b"a "));
        assert!(!trailing_ws("x.md", b"text  "));
        assert!(trailing_ws("x.md", b"text   "));
    }
}
