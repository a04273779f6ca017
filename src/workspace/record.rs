//! Task records (`.tasks/<task_id>.json`): parsed leniently enough never to fail on bad
//! input, strictly enough to say exactly what is wrong (the JSON error's line:column, a missing
//! or mistyped field). A record that cannot be parsed is data for CC-00, never an error.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

use crate::artifacts::json_keys::{duplicate_keys, line_column, path_text, value_kind};

/// The record keys the referee reads: one written again in another case is a second copy
/// (`Status` beside `status`), as a reader that ignores case would take it.
const READ_KEYS: &[&str] = &[
    "task_id",
    "status",
    "description",
    "attempt",
    "summary",
    "changes",
    "added",
    "modified",
    "removed",
    "pre_hashes",
    "post_hashes",
];

/// One task record as the worker wrote it.
#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    /// The record's path relative to the workspace (`.tasks/t1.json`).
    pub rel: String,
    /// The file name without `.json`: the key of a record that has no readable `task_id`.
    pub stem: String,
    pub parsed: Result<Task, RecordError>,
}

impl Record {
    /// Whether the record asks for a judgment: its status is one of `judge_status`, or it is
    /// malformed (a FAIL of the record check, never skipped).
    pub fn is_judged(&self, judge_status: &[String]) -> bool {
        match &self.parsed {
            Ok(t) => judge_status.iter().any(|s| s == &t.status),
            Err(_) => true,
        }
    }
}

/// Why a record cannot be judged as a task.
#[derive(Debug, Clone, PartialEq)]
pub struct RecordError {
    pub message: String,
    /// 1-based; 0 when the problem is not at a position (a missing field).
    pub line: usize,
    pub column: usize,
}

impl std::fmt::Display for RecordError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.line > 0 {
            write!(f, "{}:{}: {}", self.line, self.column, self.message)
        } else {
            f.write_str(&self.message)
        }
    }
}

/// A well-formed task record.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Task {
    pub task_id: String,
    pub status: String,
    pub description: String,
    pub attempt: u64,
    pub summary: String,
    pub added: Vec<String>,
    pub modified: Vec<String>,
    pub removed: Vec<String>,
    pub pre_hashes: BTreeMap<String, Option<String>>,
    pub post_hashes: BTreeMap<String, Option<String>>,
    /// The raw object, for predicates over other fields.
    pub raw: serde_json::Map<String, Value>,
}

impl Task {
    /// Every path the record lists as changed, with how.
    pub fn listed(&self) -> impl Iterator<Item = (&str, &'static str)> {
        self.added
            .iter()
            .map(|p| (p.as_str(), "added"))
            .chain(self.modified.iter().map(|p| (p.as_str(), "modified")))
            .chain(self.removed.iter().map(|p| (p.as_str(), "removed")))
    }

    pub fn lists(&self, path: &str) -> bool {
        self.listed().any(|(p, _)| p == path)
    }

    /// Takes each absolute path the record lists inside the canonical workspace `root` as the
    /// workspace's own relative path: a worker that hashes and lists the files it edited by
    /// their absolute paths (`str(path)` of an absolute `pathlib.Path`) names the same files.
    /// The folder a path names is resolved (a link on the way to the workspace included), its
    /// last name never. A path outside the workspace stays as written (a phantom change).
    pub fn relative_to(&mut self, root: &Path) {
        let fix = |p: &mut String| {
            if let Some(rel) = inside(root, p) {
                *p = rel;
            }
        };
        self.added.iter_mut().for_each(fix);
        self.modified.iter_mut().for_each(fix);
        self.removed.iter_mut().for_each(fix);
        for hashes in [&mut self.pre_hashes, &mut self.post_hashes] {
            if hashes.keys().any(|k| k.starts_with('/')) {
                *hashes = std::mem::take(hashes)
                    .into_iter()
                    .map(|(k, v)| (inside(root, &k).unwrap_or(k), v))
                    .collect();
            }
        }
    }
}

impl Task {
    /// Forgets what the record lists (and hashes) in a folder that is never a change
    /// (`excluded`: git's `.git/`, the records' `.tasks/`, the referee's `.referee/`): a worker
    /// that lists every file it wrote, its own record among them, claims nothing there (the
    /// veto over a protected path there stands whatever a record says).
    pub fn forget_unchangeable(&mut self, excluded: impl Fn(&str) -> bool) {
        for list in [&mut self.added, &mut self.modified, &mut self.removed] {
            list.retain(|p| !excluded(p));
        }
        for hashes in [&mut self.pre_hashes, &mut self.post_hashes] {
            hashes.retain(|p, _| !excluded(p));
        }
    }

    /// Takes each listed path that names a folder as `git status` names it as the changes
    /// beneath it, each listed as it changed (unless the record lists it already), with any hash
    /// given for the folder itself dropped:
    /// - one of the baseline's submodules (`submodule`), listed under any kind: `git status`
    ///   shows a submodule moved to another commit as one modified path (`M vendor/lib`), while
    ///   the referee reads a checked-out submodule's files one by one;
    /// - a folder the baseline tracks nothing in (`new_folder`), listed as added, with only
    ///   additions beneath it: `git status` shows a new folder as one untracked path
    ///   (`?? src/newpkg/`) until each file in it is added to the index.
    ///
    /// A folder with nothing changed beneath it stays listed as written (a phantom).
    pub fn expand_folders(
        &mut self,
        submodule: impl Fn(&str) -> bool,
        new_folder: impl Fn(&str) -> bool,
        changes: &BTreeMap<String, super::Change>,
    ) {
        let beneath = |dir: &str| -> Vec<(String, super::Change)> {
            let prefix = format!("{dir}/");
            changes
                .range(prefix.clone()..)
                .take_while(|(p, _)| p.starts_with(&prefix))
                .map(|(p, c)| (p.clone(), *c))
                .collect()
        };
        let folder = |p: &String| p.trim_end_matches('/').to_string();
        let mut named: Vec<(String, Vec<(String, super::Change)>)> = Vec::new();
        for dir in self.listed().map(|(p, _)| p.trim_end_matches('/')) {
            if dir.is_empty() || named.iter().any(|(d, _)| d == dir) {
                continue;
            }
            let under = beneath(dir);
            let whole = if submodule(dir) {
                true
            } else {
                !changes.contains_key(dir)
                    && self.added.iter().any(|p| folder(p) == dir)
                    && under.iter().all(|(_, c)| *c == super::Change::Added)
                    && new_folder(dir)
            };
            if whole && !under.is_empty() {
                named.push((dir.to_string(), under));
            }
        }
        for (dir, under) in named {
            let is_dir = |p: &String| folder(p) == dir;
            for list in [&mut self.added, &mut self.modified, &mut self.removed] {
                list.retain(|p| !is_dir(p));
            }
            for hashes in [&mut self.pre_hashes, &mut self.post_hashes] {
                hashes.retain(|p, _| !is_dir(p));
            }
            for (p, c) in under {
                if self.lists(&p) {
                    continue;
                }
                match c {
                    super::Change::Added => self.added.push(p),
                    super::Change::Modified => self.modified.push(p),
                    super::Change::Removed => self.removed.push(p),
                }
            }
        }
    }
}

/// The workspace-relative path of the absolute `p` when it lies inside `root` (canonical):
/// its folder canonicalised (the nearest one that exists), its last name kept.
fn inside(root: &Path, p: &str) -> Option<String> {
    let path = Path::new(p);
    if !path.is_absolute() {
        return None;
    }
    let name = path.file_name()?;
    let mut folder = path.parent()?;
    let mut rest: Vec<&std::ffi::OsStr> = vec![name];
    let real = loop {
        if let Ok(real) = std::fs::canonicalize(folder) {
            break real;
        }
        rest.push(folder.file_name()?);
        folder = folder.parent()?;
    };
    let full = rest.iter().rev().fold(real, |acc, n| acc.join(n));
    let rel = full.strip_prefix(root).ok()?.to_str()?;
    (!rel.is_empty()).then(|| normalize(rel))
}

impl Record {
    /// The key of the pass instance judging this record: its `task_id`, else its file stem.
    pub fn key(&self) -> &str {
        match &self.parsed {
            Ok(t) => &t.task_id,
            Err(_) => &self.stem,
        }
    }
}

/// Parses a record's bytes. `required` names the top-level fields that must be present
/// (`task_id`, `status`, `attempt`, `summary`, `changes` by default, from the protocol).
pub fn parse(rel: &str, bytes: &[u8], required: &[String]) -> Record {
    let stem = rel
        .rsplit('/')
        .next()
        .unwrap_or(rel)
        .trim_end_matches(".json")
        .to_string();
    Record {
        rel: rel.to_string(),
        stem: stem.clone(),
        // As a reader of JSON on Windows takes it: UTF-16 (PowerShell 5.1's `Out-File` and
        // `>`) decoded, a UTF-8 byte-order mark (its `-Encoding utf8`) dropped.
        parsed: parse_task(
            &crate::artifacts::normalize::seen::utf8_bytes(bytes),
            &stem,
            required,
        ),
    }
}

fn at(message: impl Into<String>) -> RecordError {
    RecordError {
        message: message.into(),
        line: 0,
        column: 0,
    }
}

fn parse_task(bytes: &[u8], stem: &str, required: &[String]) -> Result<Task, RecordError> {
    let value: Value = serde_json::from_slice(bytes).map_err(|e| RecordError {
        message: format!("invalid JSON: {}", strip_position(&e.to_string())),
        line: e.line(),
        column: e.column(),
    })?;
    // A key written twice reads two ways (serde_json keeps the last copy, a human or another
    // reader may take the first): the record is no declaration to hold the worker to.
    if let Some(d) = duplicate_keys(bytes, READ_KEYS)
        .map_err(|e| {
            let (line, column) = line_column(bytes, e.at);
            RecordError {
                message: format!("invalid JSON: {}", e.message),
                line,
                column,
            }
        })?
        .into_iter()
        .next()
    {
        let (line, column) = line_column(bytes, d.at);
        let (first_line, first_column) = line_column(bytes, d.first_at);
        let place = match d.path.is_empty() {
            true => "the record".to_string(),
            false => format!("`{}`", path_text(&d.path)),
        };
        let first = match d.first == d.key {
            true => String::new(),
            false => format!(" as `{}`", d.first),
        };
        return Err(RecordError {
            message: format!(
                "{place} has `{}` twice (first{first} at line {first_line}, column {first_column}); \
                 a reader could take either",
                d.key
            ),
            line,
            column,
        });
    }
    let Value::Object(obj) = value else {
        return Err(at("a task record must be a JSON object"));
    };
    let missing: Vec<&str> = required
        .iter()
        .filter(|f| obj.get(f.as_str()).is_none_or(Value::is_null))
        .map(String::as_str)
        .collect();
    if !missing.is_empty() {
        return Err(at(format!(
            "missing required field(s): {}",
            missing
                .iter()
                .map(|m| format!("`{m}`"))
                .collect::<Vec<_>>()
                .join(", ")
        )));
    }
    let string = |k: &str| -> Result<String, RecordError> {
        match obj.get(k) {
            None | Some(Value::Null) => Ok(String::new()),
            Some(Value::String(s)) => Ok(s.clone()),
            Some(other) => Err(at(format!(
                "`{k}` must be a string, not {}",
                value_kind(other)
            ))),
        }
    };
    let task_id = string("task_id")?;
    if obj.contains_key("task_id") {
        if task_id.trim().is_empty() {
            return Err(at("`task_id` is empty"));
        }
        // The file is named by the id itself, or (an id no file name can hold, like one
        // with a `/`) by its one-to-one escaped form.
        if task_id != stem && super::name::file_stem_for(&task_id) != stem {
            return Err(at(format!(
                "`task_id` `{task_id}` does not match the file name `{stem}.json` (name it `{}.json`)",
                super::name::file_stem_for(&task_id)
            )));
        }
    }
    let attempt = match obj.get("attempt") {
        None | Some(Value::Null) => 1,
        Some(v) => match attempt_number(v) {
            Some(a) if a >= 1 => a,
            _ if matches!(v, Value::Number(_) | Value::String(_)) => {
                return Err(at(format!("`attempt` must be 1, 2, …, not `{v}`")))
            }
            _ => {
                return Err(at(format!(
                    "`attempt` must be a whole number, not {}",
                    value_kind(v)
                )))
            }
        },
    };
    let mut task = Task {
        task_id: if task_id.is_empty() {
            stem.to_string()
        } else {
            task_id
        },
        status: string("status")?,
        description: string("description")?,
        attempt,
        summary: string("summary")?,
        ..Task::default()
    };
    match obj.get("changes") {
        None | Some(Value::Null) => {}
        Some(Value::Object(ch)) => {
            for (k, v) in ch {
                let list = match k.as_str() {
                    "added" => &mut task.added,
                    "modified" => &mut task.modified,
                    "removed" => &mut task.removed,
                    "renamed" => {
                        for (from, to) in renames(v)? {
                            task.removed.push(from);
                            task.added.push(to);
                        }
                        continue;
                    }
                    other => {
                        return Err(at(format!(
                            "unknown key `changes.{other}` (expected `added`, `modified`, \
                             `removed`, `renamed`)"
                        )))
                    }
                };
                list.extend(paths(v, &format!("changes.{k}"))?);
            }
        }
        Some(other) => {
            return Err(at(format!(
                "`changes` must be an object, not {}",
                value_kind(other)
            )))
        }
    }
    task.pre_hashes = hashes(obj.get("pre_hashes"), "pre_hashes")?;
    task.post_hashes = hashes(obj.get("post_hashes"), "post_hashes")?;
    task.raw = obj;
    Ok(task)
}

/// `changes.renamed`: each rename as a worker writes it, `{"from": A, "to": B}` (or `old` and
/// `new`), `"A -> B"` (git's way of showing one, or with `→`) or `[A, B]`; each is the removal of
/// A and the addition of B, which is what a rename is to the referee.
fn renames(v: &Value) -> Result<Vec<(String, String)>, RecordError> {
    let what = "changes.renamed";
    let Value::Array(items) = v else {
        return Err(at(format!(
            "`{what}` must be an array of renames, not {}",
            value_kind(v)
        )));
    };
    let pair = |a: &str, b: &str| {
        let (a, b) = (a.trim(), b.trim());
        (!a.is_empty() && !b.is_empty()).then(|| (normalize(a), normalize(b)))
    };
    items
        .iter()
        .map(|i| {
            let found = match i {
                Value::Object(o) => {
                    let get = |k: &str| o.get(k).and_then(Value::as_str);
                    match (get("from").or(get("old")), get("to").or(get("new"))) {
                        (Some(a), Some(b)) if o.len() == 2 => pair(a, b),
                        _ => None,
                    }
                }
                Value::String(s) => s
                    .split_once(" -> ")
                    .or_else(|| s.split_once(" → "))
                    .and_then(|(a, b)| pair(a, b)),
                Value::Array(ab) => match ab.as_slice() {
                    [Value::String(a), Value::String(b)] => pair(a, b),
                    _ => None,
                },
                _ => None,
            };
            found.ok_or_else(|| {
                at(format!(
                    "`{what}` must hold renames (`{{\"from\": \"a.py\", \"to\": \"b.py\"}}`, \
                     `\"a.py -> b.py\"` or `[\"a.py\", \"b.py\"]`), not `{i}`"
                ))
            })
        })
        .collect()
}

fn paths(v: &Value, what: &str) -> Result<Vec<String>, RecordError> {
    let Value::Array(items) = v else {
        return Err(at(format!(
            "`{what}` must be an array of paths, not {}",
            value_kind(v)
        )));
    };
    items
        .iter()
        .map(|i| match i {
            Value::String(s) => Ok(normalize(s)),
            other => Err(at(format!(
                "`{what}` must hold paths (strings), not {}",
                value_kind(other)
            ))),
        })
        .collect()
}

fn hashes(v: Option<&Value>, what: &str) -> Result<BTreeMap<String, Option<String>>, RecordError> {
    match v {
        None | Some(Value::Null) => Ok(BTreeMap::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) if s.is_empty() => Ok((normalize(k), None)),
                Value::String(s) => Ok((normalize(k), Some(digest_hex(s)))),
                Value::Null => Ok((normalize(k), None)),
                other => Err(at(format!(
                    "`{what}.{k}` must be a SHA-256 hex string or null, not {}",
                    value_kind(other)
                ))),
            })
            .collect(),
        Some(other) => Err(at(format!(
            "`{what}` must be an object {{path: sha256}}, not {}",
            value_kind(other)
        ))),
    }
}

/// A claimed SHA-256 as it is compared: hex, whatever the case, with the algorithm's name in
/// front read past as a human reads it (`sha256:67f9…`, the form of OCI digests and `git
/// lfs`).
fn digest_hex(s: &str) -> String {
    let s = s.trim().to_ascii_lowercase();
    match s.strip_prefix("sha256:") {
        Some(hex) => hex.trim().to_string(),
        None => s,
    }
}

/// The `attempt` a record's bytes name, read as [`parse`] reads them (`None`: it names none,
/// or does not parse): what `status --task` and `accept` hold a verdict's attempt against.
pub fn attempt_of(bytes: &[u8]) -> Option<u64> {
    let text = crate::artifacts::normalize::seen::utf8_bytes(bytes);
    attempt_number(&serde_json::from_slice::<Value>(&text).ok()?["attempt"])
}

/// The whole number an `attempt` value names, as a typed reader (pydantic, a Python `int()`)
/// takes it: `2`, `2.0` or the string `"2"` (digits only, spaces around read past).
fn attempt_number(v: &Value) -> Option<u64> {
    match v {
        Value::Number(n) => n.as_u64().or_else(|| {
            let f = n.as_f64()?;
            // A whole value, exactly representable: `2.0`, never `2.5` or `1e30`.
            (f.fract() == 0.0 && (0.0..=9.0e15).contains(&f)).then_some(f as u64)
        }),
        Value::String(s) => {
            let s = s.trim();
            (!s.is_empty() && s.len() <= 19 && s.bytes().all(|b| b.is_ascii_digit()))
                .then(|| s.parse().ok())
                .flatten()
        }
        _ => None,
    }
}

/// A listed path as the referee compares it: `/`-separated, no leading `./`.
pub fn normalize(p: &str) -> String {
    let p = p.trim().replace('\\', "/");
    let mut s = p.as_str();
    while let Some(rest) = s.strip_prefix("./") {
        s = rest;
    }
    s.to_string()
}

/// serde_json's message without its trailing " at line L column C" (given separately).
fn strip_position(m: &str) -> String {
    match m.rfind(" at line ") {
        Some(i) => m[..i].to_string(),
        None => m.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_listed_submodule_is_the_changes_beneath_it() {
        use crate::workspace::Change;
        let mut t = Task {
            modified: vec!["lib".into(), "lib/b.py".into(), "other".into()],
            post_hashes: BTreeMap::from([
                ("lib".into(), Some("c0ffee".into())),
                ("lib/b.py".into(), Some("beef".into())),
            ]),
            ..Task::default()
        };
        let changes = BTreeMap::from([
            ("lib/a.py".to_string(), Change::Added),
            ("lib/b.py".to_string(), Change::Modified),
            ("lib/c.py".to_string(), Change::Removed),
            ("lib2/x.py".to_string(), Change::Added),
            ("other/d.py".to_string(), Change::Modified),
        ]);
        // `other` is no submodule: a folder stays listed as written.
        t.expand_folders(|p| p == "lib" || p == "empty", |_| false, &changes);
        assert_eq!(t.added, ["lib/a.py"]);
        assert_eq!(t.modified, ["lib/b.py", "other"]);
        assert_eq!(t.removed, ["lib/c.py"]);
        assert_eq!(
            t.post_hashes,
            BTreeMap::from([("lib/b.py".into(), Some("beef".into()))])
        );
        // A submodule with nothing changed beneath it stays listed: a phantom.
        let mut t = Task {
            modified: vec!["empty/".into()],
            ..Task::default()
        };
        t.expand_folders(|p| p == "empty", |_| false, &changes);
        assert_eq!(t.modified, ["empty/"]);
    }

    #[test]
    fn a_listed_new_folder_is_the_additions_beneath_it() {
        use crate::workspace::Change;
        let changes = BTreeMap::from([
            ("new/a.py".to_string(), Change::Added),
            ("new/sub/b.py".to_string(), Change::Added),
            ("mixed/c.py".to_string(), Change::Added),
            ("mixed/d.py".to_string(), Change::Modified),
            ("old/e.py".to_string(), Change::Added),
        ]);
        let new = |p: &str| p == "new" || p == "mixed";
        let mut t = Task {
            added: vec!["new/".into(), "mixed/".into(), "old".into()],
            modified: vec!["mixed/d.py".into()],
            post_hashes: BTreeMap::from([("new/".into(), Some("x".into()))]),
            ..Task::default()
        };
        t.expand_folders(|_| false, new, &changes);
        // `new/` names its additions; `mixed/` has a modification beneath it (git would list
        // each file), `old` is a folder the baseline tracks: both stay as written (phantoms).
        assert_eq!(t.added, ["mixed/", "old", "new/a.py", "new/sub/b.py"]);
        assert!(t.post_hashes.is_empty());
        // Listed as modified, a new folder names nothing either.
        let mut t = Task {
            modified: vec!["new/".into()],
            ..Task::default()
        };
        t.expand_folders(|_| false, new, &changes);
        assert_eq!(t.modified, ["new/"]);
    }

    #[test]
    fn an_attempt_is_read_as_a_typed_reader_reads_it() {
        let of = |v: &str| {
            let text = format!(
                r#"{{"task_id":"t1","status":"pending_review","attempt":{v},"summary":"s",
                    "changes":{{}}}}"#
            );
            (
                parse(".tasks/t1.json", text.as_bytes(), &req())
                    .parsed
                    .map(|t| t.attempt)
                    .map_err(|e| e.message),
                attempt_of(text.as_bytes()),
            )
        };
        for (v, n) in [("2", 2), ("\"2\"", 2), ("\" 3 \"", 3), ("2.0", 2)] {
            assert_eq!(of(v), (Ok(n), Some(n)), "{v}");
        }
        for v in [
            "0", "\"0\"", "2.5", "\"2.0\"", "\"two\"", "\"-1\"", "-1", "1e30", "\"\"",
        ] {
            let (parsed, named) = of(v);
            assert!(parsed.is_err(), "{v}: {parsed:?}");
            assert!(named.is_none_or(|n| n == 0), "{v}: {named:?}");
        }
        assert!(of("[1]").0.unwrap_err().contains("whole number"));
    }

    #[test]
    fn a_rename_is_a_removal_and_an_addition() {
        let text = r#"{"task_id":"t1","status":"pending_review","attempt":1,"summary":"s",
            "changes":{"added":["n.py"],"removed":[],"renamed":[
                {"from":"a.py","to":"b.py"}, {"old":"c.py","new":"./d.py"},
                "e.py -> f.py", "g.py → h.py", ["i.py","j.py"]]}}"#;
        let t = parse(".tasks/t1.json", text.as_bytes(), &req())
            .parsed
            .expect("parses");
        let mut added = t.added.clone();
        added.sort();
        assert_eq!(added, ["b.py", "d.py", "f.py", "h.py", "j.py", "n.py"]);
        let mut removed = t.removed.clone();
        removed.sort();
        assert_eq!(removed, ["a.py", "c.py", "e.py", "g.py", "i.py"]);
        for bad in [
            r#"["a.py"]"#,
            r#"[{"from":"a.py"}]"#,
            r#"[{"from":"a.py","to":"b.py","why":"x"}]"#,
            r#"["a.py b.py"]"#,
            r#"[["a.py"]]"#,
            r#"[" -> b.py"]"#,
            r#""a.py -> b.py""#,
        ] {
            let text = format!(
                r#"{{"task_id":"t1","status":"pending_review","attempt":1,"summary":"s",
                    "changes":{{"renamed":{bad}}}}}"#
            );
            let e = parse(".tasks/t1.json", text.as_bytes(), &req())
                .parsed
                .expect_err(bad);
            assert!(e.message.contains("changes.renamed"), "{bad}: {e}");
        }
    }

    #[test]
    fn a_record_written_by_powershell_parses() {
        let text = r#"{"task_id":"t1","status":"pending_review","attempt":1,"summary":"s",
            "changes":{"added":["a.py"],"modified":[],"removed":[]}}"#;
        let mut bom = vec![0xef, 0xbb, 0xbf];
        bom.extend_from_slice(text.as_bytes());
        let mut utf16 = vec![0xff, 0xfe];
        utf16.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
        for bytes in [bom, utf16] {
            let r = parse(".tasks/t1.json", &bytes, &req());
            let t = r.parsed.expect("parses");
            assert_eq!(
                (t.task_id.as_str(), t.added.as_slice()),
                ("t1", &["a.py".to_string()][..])
            );
        }
    }

    #[test]
    fn an_absolute_path_inside_the_workspace_is_its_relative_path_and_no_other() {
        let tmp = tempfile::tempdir().expect("tempdir");
        let root = std::fs::canonicalize(tmp.path())
            .expect("canonical")
            .join("ws");
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        let link = root.with_file_name("ws-link");
        std::os::unix::fs::symlink(&root, &link).expect("link");
        let at = |p: std::path::PathBuf| inside(&root, p.to_str().expect("utf-8"));
        assert_eq!(at(root.join("src/a.py")).as_deref(), Some("src/a.py"));
        // A folder not made yet, and a way in through a link.
        assert_eq!(
            at(root.join("new/deep/b.py")).as_deref(),
            Some("new/deep/b.py")
        );
        assert_eq!(at(link.join("src/a.py")).as_deref(), Some("src/a.py"));
        // The last name is never resolved: a link in the workspace is listed as itself.
        std::os::unix::fs::symlink("/etc/passwd", root.join("src/out")).expect("link");
        assert_eq!(at(root.join("src/out")).as_deref(), Some("src/out"));
        // Outside the workspace, the workspace itself, a relative path: left as written.
        assert_eq!(at(root.with_file_name("other/a.py")), None);
        assert_eq!(at(root.clone()), None);
        assert_eq!(inside(&root, "src/a.py"), None);
    }

    fn req() -> Vec<String> {
        ["task_id", "status", "attempt", "summary", "changes"]
            .map(String::from)
            .to_vec()
    }

    #[test]
    fn a_valid_record() {
        let r = parse(
            ".tasks/t1.json",
            br#"{"task_id":"t1","status":"pending_review","attempt":2,"summary":"s",
                "changes":{"added":["./a.py"],"modified":["b.py"],"removed":[]},
                "pre_hashes":{"b.py":"AB","c.py":"SHA256:EF"},"post_hashes":{"a.py":"cd","gone":null}}"#,
            &req(),
        );
        let t = r.parsed.unwrap();
        assert_eq!(t.attempt, 2);
        assert_eq!(t.added, vec!["a.py"]);
        assert_eq!(t.pre_hashes["b.py"].as_deref(), Some("ab"));
        assert_eq!(t.pre_hashes["c.py"].as_deref(), Some("ef"));
        assert_eq!(t.post_hashes["gone"], None);
    }

    #[test]
    fn a_key_written_twice_is_malformed_with_both_places() {
        let r = parse(
            ".tasks/t1.json",
            b"{\"task_id\":\"t1\",\"status\":\"pending_review\",\"attempt\":1,\"summary\":\"s\",\n\
              \"changes\":{\"added\":[],\"added\":[\"a.py\"]}}",
            &req(),
        );
        let e = r.parsed.unwrap_err();
        assert_eq!(e.line, 2, "{e}");
        assert!(
            e.message
                .starts_with("`changes` has `added` twice (first at line 2"),
            "{e}"
        );
        let r = parse(
            ".tasks/t1.json",
            br#"{"task_id":"t1","STATUS":"approved","status":"pending_review","attempt":1,"summary":"s","changes":{}}"#,
            &req(),
        );
        let e = r.parsed.unwrap_err();
        assert!(
            e.message.contains("`status` twice (first as `STATUS`"),
            "{e}"
        );
        // A key the referee does not read may differ in case: no second copy.
        let r = parse(
            ".tasks/t1.json",
            br#"{"task_id":"t1","status":"pending_review","attempt":1,"summary":"s","changes":{},"Note":1,"note":2}"#,
            &req(),
        );
        assert!(r.parsed.is_ok(), "{r:?}");
    }

    #[test]
    fn malformed_records_say_where_and_what() {
        let r = parse(
            ".tasks/t2.json",
            b"{\n  \"task_id\": \"t2\",\n  oops\n}",
            &req(),
        );
        let e = r.parsed.unwrap_err();
        assert_eq!((e.line, e.column), (3, 3), "{e}");
        assert_eq!(r.stem, "t2");
        let e = parse(".tasks/t3.json", br#"{"task_id":"t3"}"#, &req())
            .parsed
            .unwrap_err();
        assert!(
            e.message.contains("`status`") && e.message.contains("`changes`"),
            "{e}"
        );
        let e = parse(
            ".tasks/t4.json",
            br#"{"task_id":"other","status":"x","attempt":1,"summary":"","changes":{}}"#,
            &req(),
        )
        .parsed
        .unwrap_err();
        assert!(e.message.contains("does not match"), "{e}");
        let e = parse(
            ".tasks/t5.json",
            br#"{"task_id":"t5","status":"x","attempt":0,"summary":"","changes":{}}"#,
            &req(),
        )
        .parsed
        .unwrap_err();
        assert!(e.message.contains("attempt"), "{e}");
        let e = parse(".tasks/t6.json", br#"[1]"#, &req())
            .parsed
            .unwrap_err();
        assert!(e.message.contains("object"), "{e}");
        let e = parse(".tasks/t7.json", b"\xff\xfe", &req())
            .parsed
            .unwrap_err();
        assert!(e.line >= 1, "{e}");
    }
}
