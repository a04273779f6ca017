//! Materialises a build-directory fixture into a temporary directory.
//!
//! A fixture (`fixtures/builds/*.toml`, or the edit part of a `fixtures/cases/*.toml`) describes a
//! pipeline's build directory as data: files with their contents and mtimes, empty directories,
//! FIFOs and symlinks, optionally derived from another build by edits. The format is documented in
//! `fixtures/README.md`. This module only builds directories; it never runs the referee.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use chrono::{DateTime, Duration, NaiveDateTime, Utc};
// The same path, hex and brace rules as the timelines of `referee replay`.
use referee::replay::{check_rel, expand_braces, parse_hex};
use serde::Deserialize;

/// The default tracker file that `[[field]]` edits rewrite.
pub const TRACKER: &str = "EXECUTION-TRACKER.md";

/// `fixtures/` in the crate root.
pub fn fixtures_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// One build document: an optional base build, an epoch, and edits.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BuildDoc {
    /// What the build or case is; for readers of the fixture only.
    #[allow(dead_code, reason = "read by people, not by the tests")]
    pub description: Option<String>,
    /// Another build in `fixtures/builds/` to start from.
    pub base: Option<String>,
    /// The time that relative mtimes (`+12m30s`) count from; inherited from the base.
    pub epoch: Option<String>,
    #[serde(default)]
    pub remove: Vec<Remove>,
    #[serde(default)]
    pub dir: Vec<DirSpec>,
    #[serde(default)]
    pub file: Vec<FileSpec>,
    #[serde(default)]
    pub files: Vec<FilesSpec>,
    #[serde(default)]
    pub special: Vec<Special>,
    #[serde(default)]
    pub outside: Vec<FileSpec>,
    #[serde(default)]
    pub replace: Vec<Replace>,
    #[serde(default)]
    pub append: Vec<Append>,
    #[serde(default)]
    pub field: Vec<Field>,
    #[serde(default)]
    pub touch: Vec<Touch>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Remove {
    /// A glob (`*` stays within one path component, `**` crosses them); a directory goes with its contents.
    pub path: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DirSpec {
    pub path: String,
    pub mtime: Option<String>,
}

/// Where a file's bytes come from: exactly one of `text`, `from`, `hex`, `chunks`.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Content {
    pub text: Option<String>,
    /// A file under `fixtures/` (e.g. `content/tracker.md`).
    pub from: Option<String>,
    /// Hex bytes; whitespace is ignored.
    pub hex: Option<String>,
    /// Generated content: each chunk's text repeated `times` (default 1), concatenated.
    pub chunks: Option<Vec<Chunk>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Chunk {
    #[serde(default)]
    pub text: String,
    pub hex: Option<String>,
    #[serde(default = "one")]
    pub times: usize,
}

fn one() -> usize {
    1
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSpec {
    pub path: String,
    pub mtime: Option<String>,
    #[serde(flatten)]
    pub content: Content,
}

/// Many files with the same content: `paths`, or a brace `pattern`
/// (`screenshots/{1440,1024,768}/scroll-{1..8}.png`), mtimes `mtime + i * step`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FilesSpec {
    #[serde(default)]
    pub paths: Vec<String>,
    pub pattern: Option<String>,
    pub mtime: Option<String>,
    pub step: Option<String>,
    #[serde(flatten)]
    pub content: Content,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Special {
    pub path: String,
    /// `fifo` or `symlink`.
    pub kind: String,
    /// Symlink target, verbatim (relative targets resolve from the link's directory).
    pub target: Option<String>,
    pub mtime: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Replace {
    pub path: String,
    pub find: String,
    pub with: String,
    /// If given, the number of occurrences `find` must have.
    pub count: Option<usize>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Append {
    pub path: String,
    pub text: String,
}

/// Rewrites a field row of a markdown tracker (see `fixtures/README.md`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Field {
    pub name: String,
    /// New second cell.
    pub value: Option<String>,
    /// New third cell.
    pub time: Option<String>,
    /// Replaces the whole row (all cells).
    pub cells: Option<Vec<String>>,
    /// Only rows under a heading whose text equals this (trimmed, case-insensitive).
    pub section: Option<String>,
    #[serde(default)]
    pub delete: bool,
    /// Add the row at the end of the section's first table instead of rewriting one.
    #[serde(default)]
    pub insert: bool,
    /// The markdown file; default `EXECUTION-TRACKER.md`.
    pub path: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Touch {
    /// A glob, as in `[[remove]]`.
    pub path: String,
    pub mtime: String,
}

impl BuildDoc {
    pub fn parse(text: &str, origin: &str) -> Result<BuildDoc, String> {
        toml::from_str(text).map_err(|e| format!("{origin}: {e}"))
    }
}

#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    File(Vec<u8>),
    Dir,
    Fifo,
    Symlink(String),
}

#[derive(Debug, Clone)]
pub struct Entry {
    pub kind: Kind,
    pub mtime: Option<DateTime<Utc>>,
}

/// A resolved build: every entry of the build directory, plus files placed beside it (`outside`).
#[derive(Debug, Clone)]
pub struct Build {
    pub epoch: DateTime<Utc>,
    pub entries: BTreeMap<String, Entry>,
    pub outside: BTreeMap<String, Entry>,
}

impl Build {
    /// Loads `fixtures/builds/{name}.toml`, resolving its base chain.
    pub fn named(name: &str) -> Result<Build, String> {
        Self::named_depth(name, 0)
    }

    fn named_depth(name: &str, depth: usize) -> Result<Build, String> {
        if depth > 8 {
            return Err(format!("build `{name}`: base chain too deep (a cycle?)"));
        }
        let path = fixtures_dir().join("builds").join(format!("{name}.toml"));
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("build `{name}`: cannot read {}: {e}", path.display()))?;
        let doc = BuildDoc::parse(&text, &format!("builds/{name}.toml"))?;
        Self::from_doc_depth(&doc, depth).map_err(|e| format!("build `{name}`: {e}"))
    }

    /// Resolves a document: its base (if any) with the document's edits applied.
    pub fn from_doc(doc: &BuildDoc) -> Result<Build, String> {
        Self::from_doc_depth(doc, 0)
    }

    fn from_doc_depth(doc: &BuildDoc, depth: usize) -> Result<Build, String> {
        let mut build = match &doc.base {
            Some(base) => Self::named_depth(base, depth + 1)?,
            None => Build {
                epoch: parse_abs_time(doc.epoch.as_deref().unwrap_or("2026-02-25T10:00:00Z"))?,
                entries: BTreeMap::new(),
                outside: BTreeMap::new(),
            },
        };
        if let Some(epoch) = &doc.epoch {
            build.epoch = parse_abs_time(epoch)?;
        }
        build.apply(doc)?;
        Ok(build)
    }

    /// Applies a document's edits in a fixed order: remove; add or override (dir, file, files,
    /// special, outside); text edits (replace, append, field); mtimes (touch).
    pub fn apply(&mut self, doc: &BuildDoc) -> Result<(), String> {
        for r in &doc.remove {
            let matched = self.matching(&r.path)?;
            if matched.is_empty() {
                return Err(format!("[[remove]] `{}` matches nothing", r.path));
            }
            for m in matched {
                let prefix = format!("{m}/");
                self.entries
                    .retain(|p, _| p != &m && !p.starts_with(&prefix));
            }
        }
        for d in &doc.dir {
            let mtime = self.opt_time(d.mtime.as_deref())?;
            self.insert(&d.path, Kind::Dir, mtime)?;
        }
        for f in &doc.file {
            let bytes = f.content.bytes(&f.path)?;
            let mtime = self.opt_time(f.mtime.as_deref())?;
            self.insert(&f.path, Kind::File(bytes), mtime)?;
        }
        for fs in &doc.files {
            let mut paths = fs.paths.clone();
            if let Some(p) = &fs.pattern {
                paths.extend(expand_braces(p).map_err(|e| e.to_string())?);
            }
            if paths.is_empty() {
                return Err("[[files]] lists no paths".into());
            }
            let bytes = fs.content.bytes("[[files]]")?;
            let start = self.opt_time(fs.mtime.as_deref())?;
            let step = match &fs.step {
                Some(s) => parse_duration(s)?,
                None => Duration::zero(),
            };
            for (i, p) in paths.iter().enumerate() {
                let mtime = start.map(|t| t + step * i as i32);
                self.insert(p, Kind::File(bytes.clone()), mtime)?;
            }
        }
        for s in &doc.special {
            let kind = match (s.kind.as_str(), &s.target) {
                ("fifo", None) => Kind::Fifo,
                ("symlink", Some(t)) => Kind::Symlink(t.clone()),
                _ => {
                    return Err(format!(
                    "[[special]] `{}`: kind must be `fifo` (no target) or `symlink` (with target)",
                    s.path
                ))
                }
            };
            let mtime = self.opt_time(s.mtime.as_deref())?;
            self.insert(&s.path, kind, mtime)?;
        }
        for f in &doc.outside {
            check_rel(&f.path).map_err(|e| e.to_string())?;
            let bytes = f.content.bytes(&f.path)?;
            let mtime = self.opt_time(f.mtime.as_deref())?;
            self.outside.insert(
                f.path.clone(),
                Entry {
                    kind: Kind::File(bytes),
                    mtime,
                },
            );
        }
        for r in &doc.replace {
            self.edit_text(&r.path, |text| {
                let n = text.matches(r.find.as_str()).count();
                if n == 0 || r.count.is_some_and(|c| c != n) {
                    return Err(format!(
                        "[[replace]] in `{}`: `{}` occurs {n} times (expected {})",
                        r.path,
                        r.find,
                        r.count.map_or("at least 1".to_string(), |c| c.to_string())
                    ));
                }
                *text = text.replace(r.find.as_str(), &r.with);
                Ok(())
            })?;
        }
        for a in &doc.append {
            self.edit_text(&a.path, |text| {
                text.push_str(&a.text);
                Ok(())
            })?;
        }
        for f in &doc.field {
            let path = f.path.clone().unwrap_or_else(|| TRACKER.to_string());
            self.edit_text(&path, |text| {
                *text = edit_field(text, f)
                    .map_err(|e| format!("[[field]] `{}` in {path}: {e}", f.name))?;
                Ok(())
            })?;
        }
        for t in &doc.touch {
            let mtime = self.time(&t.mtime)?;
            let matched = self.matching(&t.path)?;
            if matched.is_empty() {
                return Err(format!("[[touch]] `{}` matches nothing", t.path));
            }
            for m in matched {
                if let Some(e) = self.entries.get_mut(&m) {
                    e.mtime = Some(mtime);
                }
            }
        }
        Ok(())
    }

    fn insert(
        &mut self,
        path: &str,
        kind: Kind,
        mtime: Option<DateTime<Utc>>,
    ) -> Result<(), String> {
        check_rel(path).map_err(|e| e.to_string())?;
        // A file (or FIFO, or symlink) replacing a directory drops what was below it.
        if kind != Kind::Dir {
            let prefix = format!("{path}/");
            self.entries.retain(|p, _| !p.starts_with(&prefix));
        }
        self.entries.insert(path.to_string(), Entry { kind, mtime });
        Ok(())
    }

    /// Entries (explicit ones, and implicit parent directories) that a glob matches.
    fn matching(&self, pattern: &str) -> Result<Vec<String>, String> {
        let glob = globset::GlobBuilder::new(pattern)
            .literal_separator(true)
            .build()
            .map_err(|e| format!("bad glob `{pattern}`: {e}"))?
            .compile_matcher();
        let mut all: BTreeSet<String> = BTreeSet::new();
        for p in self.entries.keys() {
            all.insert(p.clone());
            let mut cur = Path::new(p.as_str());
            while let Some(parent) = cur.parent() {
                if parent.as_os_str().is_empty() {
                    break;
                }
                all.insert(parent.to_string_lossy().into_owned());
                cur = parent;
            }
        }
        Ok(all.into_iter().filter(|p| glob.is_match(p)).collect())
    }

    /// Runs a text edit on a UTF-8 file of the build.
    fn edit_text(
        &mut self,
        path: &str,
        edit: impl FnOnce(&mut String) -> Result<(), String>,
    ) -> Result<(), String> {
        let entry = self
            .entries
            .get_mut(path)
            .ok_or_else(|| format!("no file `{path}` to edit"))?;
        let Kind::File(bytes) = &mut entry.kind else {
            return Err(format!("`{path}` is not a regular file"));
        };
        let mut text = String::from_utf8(std::mem::take(bytes))
            .map_err(|_| format!("`{path}` is not UTF-8 text; cannot edit it"))?;
        edit(&mut text)?;
        *bytes = text.into_bytes();
        Ok(())
    }

    fn opt_time(&self, s: Option<&str>) -> Result<Option<DateTime<Utc>>, String> {
        s.map(|s| self.time(s)).transpose()
    }

    /// `+12m30s` / `-5s` (from the epoch) or an absolute RFC 3339 / `YYYY-MM-DD HH:MM:SS` time.
    pub fn time(&self, s: &str) -> Result<DateTime<Utc>, String> {
        let s = s.trim();
        if let Some(rest) = s.strip_prefix('+') {
            Ok(self.epoch + parse_duration(rest)?)
        } else if let Some(rest) = s.strip_prefix('-') {
            Ok(self.epoch - parse_duration(rest)?)
        } else {
            parse_abs_time(s)
        }
    }

    /// Writes the build into `root/build` (and `outside` files into `root/outside`), sets every
    /// mtime (directories last, deepest first), and returns the build directory.
    pub fn materialise(&self, root: &Path) -> Result<PathBuf, String> {
        let dir = root.join("build");
        mkdir(&dir)?;
        let mut dirs: BTreeMap<String, Option<DateTime<Utc>>> = BTreeMap::new();
        dirs.insert(String::new(), None);
        for (path, entry) in &self.entries {
            let full = dir.join(path);
            let mut cur = Path::new(path.as_str());
            while let Some(parent) = cur.parent() {
                if parent.as_os_str().is_empty() {
                    break;
                }
                dirs.entry(parent.to_string_lossy().into_owned())
                    .or_insert(None);
                cur = parent;
            }
            if let Some(parent) = full.parent() {
                mkdir(parent)?;
            }
            match &entry.kind {
                Kind::Dir => {
                    mkdir(&full)?;
                    dirs.insert(path.clone(), entry.mtime);
                }
                Kind::File(bytes) => write(&full, bytes)?,
                Kind::Fifo => mkfifo(&full)?,
                Kind::Symlink(target) => std::os::unix::fs::symlink(target, &full)
                    .map_err(|e| format!("symlink {}: {e}", full.display()))?,
            }
        }
        for (path, entry) in &self.outside {
            let full = root.join("outside").join(path);
            if let Some(parent) = full.parent() {
                mkdir(parent)?;
            }
            match &entry.kind {
                Kind::File(bytes) => write(&full, bytes)?,
                _ => return Err(format!("outside entry `{path}` must be a file")),
            }
            set_mtime(&full, entry.mtime.unwrap_or(self.epoch))?;
        }
        // Files, FIFOs and symlinks first; then directories, so writing into them changes nothing.
        let mut newest: BTreeMap<String, DateTime<Utc>> = BTreeMap::new();
        for (path, entry) in &self.entries {
            if entry.kind == Kind::Dir {
                continue;
            }
            let mtime = entry.mtime.unwrap_or(self.epoch);
            set_mtime(&dir.join(path), mtime)?;
            bump_parents(&mut newest, path, mtime);
        }
        // Deepest first: a directory's default mtime is that of its newest child.
        let mut order: Vec<&String> = dirs.keys().collect();
        order.sort_by_key(|p| {
            std::cmp::Reverse(p.matches('/').count() + usize::from(!p.is_empty()))
        });
        for path in order {
            let mtime = dirs[path]
                .or_else(|| newest.get(path.as_str()).copied())
                .unwrap_or(self.epoch);
            set_mtime(&dir.join(path), mtime)?;
            if !path.is_empty() {
                bump_parents(&mut newest, path, mtime);
            }
        }
        Ok(dir)
    }
}

fn bump_parents(newest: &mut BTreeMap<String, DateTime<Utc>>, path: &str, mtime: DateTime<Utc>) {
    let mut cur = Path::new(path);
    while let Some(parent) = cur.parent() {
        let key = parent.to_string_lossy().into_owned();
        let slot = newest.entry(key).or_insert(mtime);
        if *slot < mtime {
            *slot = mtime;
        }
        if parent.as_os_str().is_empty() {
            break;
        }
        cur = parent;
    }
}

impl Content {
    fn bytes(&self, what: &str) -> Result<Vec<u8>, String> {
        let given = [
            self.text.is_some(),
            self.from.is_some(),
            self.hex.is_some(),
            self.chunks.is_some(),
        ]
        .iter()
        .filter(|b| **b)
        .count();
        if given != 1 {
            return Err(format!(
                "`{what}`: give exactly one of text, from, hex, chunks"
            ));
        }
        if let Some(t) = &self.text {
            return Ok(t.as_bytes().to_vec());
        }
        if let Some(f) = &self.from {
            let p = fixtures_dir().join(f);
            return std::fs::read(&p)
                .map_err(|e| format!("`{what}`: cannot read {}: {e}", p.display()));
        }
        if let Some(h) = &self.hex {
            return parse_hex(h).map_err(|e| e.to_string());
        }
        let mut out = Vec::new();
        for c in self.chunks.as_deref().unwrap_or_default() {
            let piece = match &c.hex {
                Some(h) => parse_hex(h).map_err(|e| e.to_string())?,
                None => c.text.as_bytes().to_vec(),
            };
            for _ in 0..c.times {
                out.extend_from_slice(&piece);
            }
        }
        Ok(out)
    }
}

/// `1h2m3s`, `12m30s`, `90s`, `250ms`: the referee's own duration grammar, except that a unit is
/// required (a bare `+12` in a fixture could mean anything).
pub fn parse_duration(s: &str) -> Result<Duration, String> {
    if s.trim().parse::<f64>().is_ok() {
        return Err(format!("bad duration `{s}`: give a unit (e.g. `12m30s`)"));
    }
    let d = referee::duration::parse(s).map_err(|e| e.to_string())?;
    Duration::from_std(d).map_err(|e| format!("bad duration `{s}`: {e}"))
}

pub fn parse_abs_time(s: &str) -> Result<DateTime<Utc>, String> {
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Ok(t.with_timezone(&Utc));
    }
    NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S")
        .map(|t| t.and_utc())
        .map_err(|_| format!("bad time `{s}` (use +12m30s, RFC 3339, or YYYY-MM-DD HH:MM:SS)"))
}

/// Splits a markdown table line into trimmed cells (`| a | b |` → `["a", "b"]`).
pub fn cells(line: &str) -> Option<Vec<String>> {
    let t = line.trim();
    if !t.starts_with('|') {
        return None;
    }
    let inner = t.strip_prefix('|').unwrap_or(t);
    let inner = inner.strip_suffix('|').unwrap_or(inner);
    Some(inner.split('|').map(|c| c.trim().to_string()).collect())
}

fn is_separator(line: &str) -> bool {
    cells(line).is_some_and(|cs| {
        !cs.is_empty()
            && cs.iter().all(|c| {
                let c = c.trim_start_matches(':').trim_end_matches(':');
                !c.is_empty() && c.chars().all(|ch| ch == '-')
            })
    })
}

fn heading(line: &str) -> Option<String> {
    let t = line.trim_start();
    let hashes = t.chars().take_while(|c| *c == '#').count();
    if (1..=6).contains(&hashes) && t[hashes..].starts_with([' ', '\t']) {
        Some(t[hashes..].trim().trim_end_matches('#').trim().to_string())
    } else {
        None
    }
}

fn render(cells: &[String]) -> String {
    format!("| {} |", cells.join(" | "))
}

/// Rewrites (or deletes, or inserts) one field row; see `Field`.
fn edit_field(text: &str, f: &Field) -> Result<String, String> {
    let had_newline = text.ends_with('\n');
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let mut section: Option<String> = None;
    let mut in_section_tables: Vec<usize> = Vec::new(); // table-row indices in the wanted section
    let mut found: Option<usize> = None;
    for i in 0..lines.len() {
        if let Some(h) = heading(&lines[i]) {
            section = Some(h);
            continue;
        }
        let in_wanted = match &f.section {
            Some(want) => section
                .as_deref()
                .is_some_and(|s| s.eq_ignore_ascii_case(want.trim())),
            None => true,
        };
        let Some(cs) = cells(&lines[i]) else { continue };
        if !in_wanted {
            continue;
        }
        in_section_tables.push(i);
        let header = lines.get(i + 1).is_some_and(|n| is_separator(n));
        if header || is_separator(&lines[i]) {
            continue;
        }
        if found.is_none()
            && cs
                .first()
                .is_some_and(|c| !c.is_empty() && c.eq_ignore_ascii_case(f.name.trim()))
        {
            found = Some(i);
        }
    }
    if f.insert {
        if f.section.is_none() {
            return Err("`insert = true` needs a `section`".into());
        }
        // After the last row of the section's first table.
        let first = *in_section_tables
            .first()
            .ok_or("no table in that section")?;
        let mut last = first;
        for &i in &in_section_tables {
            if i == last + 1 || i == first {
                last = i;
            }
        }
        let row = match &f.cells {
            Some(c) => c.clone(),
            None => vec![
                f.name.clone(),
                f.value.clone().unwrap_or_default(),
                f.time.clone().unwrap_or_default(),
            ],
        };
        lines.insert(last + 1, render(&row));
    } else {
        let i = found.ok_or("no such field row")?;
        if f.delete {
            lines.remove(i);
        } else if let Some(c) = &f.cells {
            lines[i] = render(c);
        } else {
            let mut cs = cells(&lines[i]).unwrap_or_default();
            let want = if f.time.is_some() { 3 } else { 2 };
            while cs.len() < want {
                cs.push(String::new());
            }
            if let Some(v) = &f.value {
                cs[1] = v.clone();
            }
            if let Some(t) = &f.time {
                cs[2] = t.clone();
            }
            lines[i] = render(&cs);
        }
    }
    let mut out = lines.join("\n");
    if had_newline {
        out.push('\n');
    }
    Ok(out)
}

fn mkdir(p: &Path) -> Result<(), String> {
    std::fs::create_dir_all(p).map_err(|e| format!("mkdir {}: {e}", p.display()))
}

fn write(p: &Path, bytes: &[u8]) -> Result<(), String> {
    std::fs::write(p, bytes).map_err(|e| format!("write {}: {e}", p.display()))
}

fn mkfifo(p: &Path) -> Result<(), String> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(p.as_os_str().as_bytes()).map_err(|e| e.to_string())?;
    // SAFETY: `c` is a valid NUL-terminated path that outlives the call.
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    if rc != 0 {
        return Err(format!(
            "mkfifo {}: {}",
            p.display(),
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

fn set_mtime(p: &Path, t: DateTime<Utc>) -> Result<(), String> {
    let ft = filetime::FileTime::from_unix_time(t.timestamp(), t.timestamp_subsec_nanos());
    // `utimensat` on the path itself: never opens it (opening a FIFO would block), never follows a
    // symlink (a link's own mtime is set).
    filetime::set_symlink_file_times(p, ft, ft)
        .map_err(|e| format!("set mtime {}: {e}", p.display()))
}

#[cfg(test)]
mod tests {
    #[test]
    fn braces_expand_in_order() {
        assert_eq!(
            super::expand_braces("s/{a,b}/x-{1..2}.png").unwrap(),
            ["s/a/x-1.png", "s/a/x-2.png", "s/b/x-1.png", "s/b/x-2.png"]
        );
    }

    #[test]
    fn durations_parse() {
        assert_eq!(
            super::parse_duration("1h2m3s").unwrap(),
            super::Duration::seconds(3723)
        );
        assert_eq!(
            super::parse_duration("250ms").unwrap(),
            super::Duration::milliseconds(250)
        );
        assert_eq!(
            super::parse_duration("1.5s").unwrap(),
            super::Duration::milliseconds(1500)
        );
        assert!(super::parse_duration("12").is_err());
        assert!(super::parse_duration("12x").is_err());
    }

    #[test]
    fn field_rows_are_rewritten_not_headers() {
        let t = "## S\n\n| Field | Value | Time |\n|---|---|---|\n| A | x | |\n| a | y | |\n";
        let f = super::Field {
            name: "A".into(),
            value: Some("z".into()),
            time: Some("t".into()),
            cells: None,
            section: Some("s".into()),
            delete: false,
            insert: false,
            path: None,
        };
        assert_eq!(
            super::edit_field(t, &f).unwrap(),
            "## S\n\n| Field | Value | Time |\n|---|---|---|\n| A | z | t |\n| a | y | |\n"
        );
    }
}
