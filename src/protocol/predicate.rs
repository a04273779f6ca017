//! The predicate language: the generic building blocks a protocol composes into checks,
//! triggers and deadlines. This module only *describes* predicates; judging them against a
//! build directory is `checks`' job.
//!
//! Every string may contain `${var}` references, resolved per variant at load time by
//! `protocol::vars`. Globs and patterns are validated as soon as they hold no reference (so a
//! bad one is reported at its own line and column) and compiled on first use (`glob`,
//! `pattern`).

use std::fmt;

use serde::{Deserialize, Serialize};

pub use super::glob::Glob;
pub use super::pattern::Pattern;

/// One value or a list of them (`exists = "a"` or `exists = ["a", "b"]`).
#[derive(Debug, Clone)]
pub enum OneOrMany<T> {
    One(T),
    Many(Vec<T>),
}

impl<T: Serialize> Serialize for OneOrMany<T> {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            OneOrMany::One(t) => t.serialize(s),
            OneOrMany::Many(v) => v.serialize(s),
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for OneOrMany<T> {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de::{self, IntoDeserializer};
        struct V<T>(std::marker::PhantomData<T>);
        impl<'de, T: Deserialize<'de>> de::Visitor<'de> for V<T> {
            type Value = OneOrMany<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a string or an array of strings")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Self::Value, E> {
                T::deserialize(s.to_string().into_deserializer()).map(OneOrMany::One)
            }
            fn visit_string<E: de::Error>(self, s: String) -> Result<Self::Value, E> {
                T::deserialize(s.into_deserializer()).map(OneOrMany::One)
            }
            fn visit_seq<A: de::SeqAccess<'de>>(self, seq: A) -> Result<Self::Value, A::Error> {
                Vec::<T>::deserialize(de::value::SeqAccessDeserializer::new(seq))
                    .map(OneOrMany::Many)
            }
        }
        d.deserialize_any(V(std::marker::PhantomData))
    }
}

impl<T> OneOrMany<T> {
    pub fn as_slice(&self) -> &[T] {
        match self {
            OneOrMany::One(t) => std::slice::from_ref(t),
            OneOrMany::Many(v) => v,
        }
    }
}

/// A predicate: judged to PASS, FAIL, *missing* (not there yet) or *inconclusive*.
///
/// Used as a condition (trigger, deadline, `when`, `if`) it holds exactly when it PASSes.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum Predicate {
    /// Every part must pass. The worst part decides: FAIL, then missing, then inconclusive.
    All(Vec<Predicate>),
    /// At least one part must pass; otherwise the mildest part decides.
    Any(Vec<Predicate>),
    /// Passes when the inner predicate does not pass (for conditions).
    Not(Box<Predicate>),
    /// `{ cond, then, else }`: `then` when `cond` passes, else `else` (default: pass).
    If(Box<IfThen>),
    /// Something missing inside counts as FAIL at once ("present and wrong").
    FailIfMissing(Box<Predicate>),
    /// `true` always passes; `false` never does.
    Always(bool),
    /// The pipeline is complete (its latest verdict is a completing one).
    Complete(bool),
    /// Every glob matches at least one file or directory.
    Exists(OneOrMany<Glob>),
    /// The number of regular files matching `glob` is within bounds.
    Count(Count),
    /// Files matching `glob` carry exactly the expected keys, each once.
    FileSet(FileSet),
    /// Every listed tracker field is present and non-empty.
    Filled(OneOrMany<String>),
    /// Every field row of a tracker section is non-empty.
    SectionFilled(Section),
    /// Tracker field values match a pattern (any or all of them).
    FieldMatches(FieldMatches),
    /// Every filled cell of a tracker table column matches a pattern.
    Column(ColumnMatches),
    /// A time reference resolves to at least one recorded time.
    HasTime(TimeRef),
    /// Times are in order, optionally with a minimum gap.
    TimeOrder(TimeOrder),
    /// Tracker field values are pairwise different.
    Distinct(Vec<String>),
    /// Two files are not near-identical: FAIL when their line similarity ratio is `>= threshold`.
    Dissimilar(Dissimilar),
    /// Text content rules over files and/or tracker fields.
    Text(Text),
    /// Every matching file has a heading (optionally as its last heading of that level).
    Heading(Heading),
    /// A value in every JSON file matching `file`, found by a JSON pointer, compared
    /// (`json = { file = "results.json", path = "/score", ">=" = 0.8 }`).
    Json(Json),
    /// The tracker's fill rate (non-empty field rows / all field rows) is at least `min`.
    FillRate(FillRate),
    /// Gate results contain an entry (with an optional required result).
    Gate(Gate),
    /// At least `min_files` gate-results files exist and every one parses.
    GateFiles(GateFiles),
    /// At least `min` gate entries exist across all gate-results files.
    GateCount(GateCount),
    /// No gate entry has a forbidden source.
    GateSources(GateSources),
    /// Every path listed in a tracker table column exists.
    PathsListed(PathsListed),
    // ---- workspace predicates: judged in a pass instance of one task record (`for_each`) ----
    /// The pass's task record parses and has the protocol's required fields.
    TaskRecord(bool),
    /// No path matching the globs is added, modified or removed against the baseline.
    Unchanged(Unchanged),
    /// Every change in the task's scope is listed in its record, and every listed change
    /// happened (as listed).
    ChangesListed(bool),
    /// The record's `pre_hashes` match the baseline and its `post_hashes` the files now.
    HashesMatch(bool),
    /// No file removed unless listed in `removed`, and no changed file emptied.
    NoLoss(bool),
    /// Every added or modified file in the task's scope parses: `parses = true`, or
    /// `parses = { commands = [...] }` to add command rules (CC-05, `crate::syntax`). With
    /// `files`, every file matching those globs parses, in any protocol.
    Parses(Parses),
    /// Every added or modified file in the task's scope is within its size limit.
    SizeLimit(SizeLimit),
    /// No added line matches a forbidden pattern.
    AddedLines(AddedLines),
    /// A task record field matches a pattern.
    RecordField(RecordField),
    /// Changed text files end with a newline and add no trailing whitespace.
    Style(Style),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unchanged {
    /// Matched against the whole path relative to the workspace (`**/x.py` matches `x.py`).
    pub globs: Vec<Glob>,
    /// Paths that take a protected file's place for its language (SPEC §8: a module shadowing
    /// a protected one): for each glob whose file name ends in `.EXT`, each template of the
    /// `EXT` entry, with `{dir}` the glob's directory part (with its `/`, or empty) and
    /// `{stem}` its file name without `.EXT`, is protected too.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shadows: Vec<Shadow>,
}

/// The shadow templates of one file extension (see [`Unchanged::shadows`]).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shadow {
    /// The extension, without its dot (`py`).
    pub ext: String,
    /// Path templates with `{dir}` and `{stem}` (`{dir}{stem}/__init__.py`).
    pub paths: Vec<String>,
}

impl Unchanged {
    /// The protected globs and the globs of every path that shadows one, each with the glob it
    /// protects (itself for a protected glob). A template that makes no valid glob is left out
    /// (the protocol check reports it).
    pub fn all_globs(&self) -> Vec<(Glob, Option<String>)> {
        let mut out: Vec<(Glob, Option<String>)> =
            self.globs.iter().map(|g| (g.clone(), None)).collect();
        for g in &self.globs {
            for (shadow, _) in shadow_sources(g.as_str(), &self.shadows) {
                if let Ok(sg) = Glob::try_from(shadow) {
                    out.push((sg, Some(g.as_str().to_string())));
                }
            }
        }
        out
    }
}

/// The shadow patterns of one protected glob: (pattern, the template it came from).
pub fn shadow_sources(glob: &str, shadows: &[Shadow]) -> Vec<(String, String)> {
    let (dir, file) = match glob.rfind('/') {
        Some(i) => (&glob[..=i], &glob[i + 1..]),
        None => ("", glob),
    };
    let mut out = Vec::new();
    for s in shadows {
        let Some(stem) = file.strip_suffix(&format!(".{}", s.ext)) else {
            continue;
        };
        for t in &s.paths {
            out.push((t.replace("{dir}", dir).replace("{stem}", stem), t.clone()));
        }
    }
    out
}

/// The syntax check: the built-in parsers (by extension, see `crate::syntax`) plus `commands`.
/// Written `parses = true` (built-in parsers only) or `parses = { files = [...], commands = [...] }`.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Parses {
    /// The files judged: every regular file matching one of these globs. `None`: the files a
    /// task attempt added or modified (a protocol of task records only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub files: Option<OneOrMany<Glob>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<SyntaxCommand>,
}

impl<'de> Deserialize<'de> for Parses {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use serde::de;
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Table {
            #[serde(default)]
            files: Option<OneOrMany<Glob>>,
            #[serde(default)]
            commands: Vec<SyntaxCommand>,
        }
        struct V;
        impl<'de> de::Visitor<'de> for V {
            type Value = Parses;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("`true` or a table with `commands`")
            }
            fn visit_bool<E: de::Error>(self, b: bool) -> Result<Parses, E> {
                if b {
                    Ok(Parses::default())
                } else {
                    Err(E::custom(
                        "`parses = false` judges nothing: write `parses = true`, or leave the check out of its pass",
                    ))
                }
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<Parses, A::Error> {
                let t = Table::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(Parses {
                    files: t.files,
                    commands: t.commands,
                })
            }
        }
        d.deserialize_any(V)
    }
}

/// A syntax command rule: files ending in `ext` are also checked by running `argv` (no shell;
/// `{path}` becomes the file's absolute path), killed after `timeout_seconds`. Validated when
/// loaded (and again once `${var}` references are substituted): see [`SyntaxCommand::validate`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawSyntaxCommand")]
pub struct SyntaxCommand {
    /// The file extension, with or without its leading dot (`.sh`, `sh`, `.d.ts`).
    pub ext: String,
    /// The program (a name looked up on `PATH`, or an absolute path) and its arguments.
    pub argv: Vec<String>,
    /// Seconds before the command (and its process group) is killed: 1 to
    /// [`SyntaxCommand::MAX_TIMEOUT_SECONDS`]; default [`SyntaxCommand::DEFAULT_TIMEOUT_SECONDS`].
    pub timeout_seconds: u64,
    /// The built-in parser is switched off for the files this rule matches: the command alone
    /// judges them (for a team that trusts its own compiler over the referee's parser, e.g.
    /// `tsc --noEmit` for `.ts`). Default `false`: the command adds to the built-in parser.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub replaces_builtin: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSyntaxCommand {
    ext: String,
    argv: Vec<String>,
    #[serde(default = "default_timeout")]
    timeout_seconds: u64,
    #[serde(default)]
    replaces_builtin: bool,
}

fn default_timeout() -> u64 {
    SyntaxCommand::DEFAULT_TIMEOUT_SECONDS
}

impl TryFrom<RawSyntaxCommand> for SyntaxCommand {
    type Error = String;
    fn try_from(r: RawSyntaxCommand) -> Result<Self, String> {
        let c = SyntaxCommand {
            ext: r.ext,
            argv: r.argv,
            timeout_seconds: r.timeout_seconds,
            replaces_builtin: r.replaces_builtin,
        };
        c.validate()?;
        Ok(c)
    }
}

impl SyntaxCommand {
    pub const DEFAULT_TIMEOUT_SECONDS: u64 = 30;
    /// A syntax check that needs more than ten minutes per file is not a syntax check.
    pub const MAX_TIMEOUT_SECONDS: u64 = 600;

    /// The rules a protocol may not break. A value still holding a `${var}` reference is checked
    /// once it is substituted. Each message starts with the offending value in backticks, so
    /// the load error points at it.
    pub fn validate(&self) -> Result<(), String> {
        let held = |s: &str| s.contains("${");
        let ext = self.ext.strip_prefix('.').unwrap_or(&self.ext);
        if !held(&self.ext)
            && (ext.is_empty()
                || ext.starts_with('.')
                || ext.ends_with('.')
                || ext.contains(['/', '\\', '*', '?', '[', '{'])
                || ext.chars().any(char::is_whitespace))
        {
            return Err(format!(
                "`{}`: a syntax command's `ext` must be a file extension such as `.sh` or `.d.ts` (no path, glob or space)",
                self.ext
            ));
        }
        let Some(program) = self.argv.first() else {
            return Err(format!(
                "`{}`: a syntax command needs `argv` with a program, e.g. `[\"bash\", \"-n\", \"{{path}}\"]`",
                self.ext
            ));
        };
        if !held(program)
            && (program.trim().is_empty() || (program.contains('/') && !program.starts_with('/')))
        {
            return Err(format!(
                "`{program}`: a syntax command's program must be a name looked up on `PATH` (`bash`) or an absolute path (`/usr/bin/bash`): a relative path could run a file from the workspace"
            ));
        }
        if !self
            .argv
            .iter()
            .skip(1)
            .any(|a| a.contains("{path}") || held(a))
        {
            return Err(format!(
                "`{}`: the syntax command `{program}` needs `{{path}}` in an argument (it becomes the checked file's absolute path)",
                self.ext
            ));
        }
        if !(1..=Self::MAX_TIMEOUT_SECONDS).contains(&self.timeout_seconds) {
            return Err(format!(
                "`timeout_seconds = {}`: a syntax command's timeout must be 1 to {} seconds",
                self.timeout_seconds,
                Self::MAX_TIMEOUT_SECONDS
            ));
        }
        Ok(())
    }

    /// The rule as `crate::syntax` runs it.
    pub fn rule(&self) -> crate::syntax::CommandRule {
        crate::syntax::CommandRule {
            ext: self.ext.clone(),
            argv: self.argv.clone(),
            timeout: std::time::Duration::from_secs(self.timeout_seconds),
            replaces_builtin: self.replaces_builtin,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SizeLimit {
    /// Limits by file extension (`{ ext = ".py", max = "200KiB" }`), the first matching wins.
    #[serde(default)]
    pub by_extension: Vec<ExtLimit>,
    /// The limit for every other file.
    pub default: Size,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ExtLimit {
    pub ext: String,
    pub max: Size,
}

/// A size in bytes, as a protocol writes it: a number of bytes (`204800`), a size with a unit
/// (`"200KiB"`, `"5MB"`, as `--max-read-bytes` takes them), or a string holding `${var}` until
/// the variables are substituted (then it must read as a size).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "SizeRaw", into = "SizeRaw")]
pub struct Size {
    bytes: u64,
    /// The text as written when it was a string.
    source: String,
}

#[derive(Serialize, Deserialize)]
#[serde(untagged)]
enum SizeRaw {
    Bytes(u64),
    Text(String),
}

impl Size {
    /// The size in bytes (0 while it still holds a `${var}`: the loader substitutes every one).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    pub fn as_str(&self) -> &str {
        &self.source
    }
}

impl TryFrom<String> for Size {
    type Error = String;

    fn try_from(source: String) -> Result<Self, String> {
        if source.contains("${") {
            return Ok(Size { bytes: 0, source });
        }
        let bytes = crate::size::parse(&source)?;
        Ok(Size { bytes, source })
    }
}

impl TryFrom<SizeRaw> for Size {
    type Error = String;

    fn try_from(raw: SizeRaw) -> Result<Self, String> {
        match raw {
            SizeRaw::Bytes(bytes) => Ok(Size {
                bytes,
                source: bytes.to_string(),
            }),
            SizeRaw::Text(s) => Size::try_from(s),
        }
    }
}

impl From<Size> for SizeRaw {
    fn from(s: Size) -> SizeRaw {
        match s.source.parse::<u64>() {
            Ok(b) if b == s.bytes => SizeRaw::Bytes(b),
            _ => SizeRaw::Text(s.source),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AddedLines {
    /// Each pattern is reported by its `name` when it matches an added line.
    #[serde(default)]
    pub forbid: Vec<Forbid>,
    /// More forbidden patterns, each reported as itself (``forbidden pattern `TODO\(hack\)` ``):
    /// the form a list variable can hold (`forbid_patterns = ["${forbid}"]`, set with
    /// `--set`/`--vars`).
    #[serde(default)]
    pub forbid_patterns: Vec<Pattern>,
    /// The secret rules (`embedded` or an absolute path; `--secrets FILE` replaces them).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secrets: Option<super::secrets::SecretRules>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Forbid {
    pub name: String,
    pub pattern: Pattern,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RecordField {
    pub field: String,
    /// Matched against the field's first line (leading space trimmed).
    pub pattern: Pattern,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Style {
    #[serde(default, skip_serializing_if = "is_false")]
    pub final_newline: bool,
    #[serde(default, skip_serializing_if = "is_false")]
    pub trailing_whitespace: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct IfThen {
    pub cond: Predicate,
    pub then: Predicate,
    #[serde(default, rename = "else", skip_serializing_if = "Option::is_none")]
    pub otherwise: Option<Predicate>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Count {
    pub glob: Glob,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min: Option<usize>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<usize>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSet {
    pub glob: Glob,
    /// Regex over the file name whose first capture group is the key.
    pub key: Pattern,
    pub expect: Vec<String>,
    /// Keys compare ignoring case: `p3b-pa-auditor-a.md` carries the key `A`, and with
    /// `p3b-pa-auditor-A.md` beside it, `A` is there twice.
    #[serde(default, skip_serializing_if = "is_false")]
    pub ignore_case: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Section {
    pub section: String,
    #[serde(default, skip_serializing_if = "is_false")]
    pub exact: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldMatches {
    pub fields: Vec<String>,
    pub pattern: Pattern,
    #[serde(default, skip_serializing_if = "is_false")]
    pub any: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnMatches {
    pub section: String,
    pub column: String,
    pub pattern: Pattern,
}

/// Where times come from.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "snake_case", deny_unknown_fields)]
pub enum TimeRef {
    /// A tracker field whose value is a timestamp.
    Field(String),
    /// The time (third) cell of a tracker field row.
    FieldTime(String),
    /// Every filled cell of a tracker table column.
    Column(ColumnRef),
    /// The modification times of the matching files.
    Mtime(Glob),
    /// The first reference that has anything recorded.
    FirstOf(Vec<TimeRef>),
    /// The earliest of the times.
    Earliest(Box<TimeRef>),
    /// The latest of the times.
    Latest(Box<TimeRef>),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ColumnRef {
    pub section: String,
    pub column: String,
}

/// What an absent element of a time chain means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Absent {
    /// The check waits for it, then FAILs when due.
    #[default]
    Missing,
    /// The check waits for it, then is INCONCLUSIVE when due.
    Inconclusive,
    /// The element is left out of the chain.
    Skip,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeOrder {
    /// The chain, earliest first; shorthand `fields` for field-value timestamps.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<TimeRef>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
    /// Minimum seconds from each element to the next (`>=`); without it the order is strict (`<`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_gap_seconds: Option<i64>,
    #[serde(default)]
    pub absent: Absent,
    /// With `absent = "skip"`: how many elements must be present (else INCONCLUSIVE).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_present: Option<usize>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Dissimilar {
    pub files: [Glob; 2],
    pub threshold: f64,
    /// Result when either file is absent (`pass` judges on the rest of the check alone).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub if_absent: Option<IfAbsent>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IfAbsent {
    Pass,
    Missing,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Text {
    /// Files whose text is judged; binary files (a NUL byte) are skipped.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<Glob>,
    /// Tracker fields whose values are judged.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub fields: Vec<String>,
    /// Judge only the snippets this regex matches (capture group 1 when it has one);
    /// the predicate passes if any snippet satisfies `min_chars` and `require`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extract: Option<Pattern>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_chars: Option<usize>,
    /// At least `at_least` of these patterns occur (over all the text together).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub require: Option<Require>,
    /// None of these patterns occurs anywhere; each hit is reported as `file:line`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forbid: Vec<Pattern>,
    /// None of these literal terms occurs anywhere (ASCII case-insensitive); each hit is
    /// reported as `file:line`. Much faster than the same terms as `(?i)` regexes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forbid_terms: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Require {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patterns: Vec<Pattern>,
    /// Literal terms, matched ASCII-case-insensitively; each found term or pattern counts.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub terms: Vec<String>,
    #[serde(default = "one")]
    pub at_least: usize,
}

fn one() -> usize {
    1
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Heading {
    pub files: Glob,
    pub level: u8,
    /// The heading text, compared ignoring case and surrounding space.
    pub text: String,
    /// It must be the last heading of its level in the file.
    #[serde(default, skip_serializing_if = "is_false")]
    pub last: bool,
}

/// `json = { file, path, <test>... }`: the value at `path` (a JSON pointer, RFC 6901) in every
/// file matching `file` passes every test given. The file is read strictly: invalid JSON or a key
/// written twice in one object FAILs (with both places), never read as its last member. Numbers
/// compare as numbers (`1e0 == 1`); a string is never a number (`"0.8"` is not `>= 0.5`).
/// With no test, the value must exist (`path = ""`, the default, is the whole document: the
/// file must be strict JSON).
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Json {
    pub file: Glob,
    /// A JSON pointer: `""` (the whole document), `/score`, `/runs/0/name`; `~1` is `/` and `~0`
    /// is `~` in a key.
    #[serde(default)]
    pub path: String,
    /// `true`: the value is there (the default without another test); `false`: it is not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exists: Option<bool>,
    #[serde(rename = ">=", default, skip_serializing_if = "Option::is_none")]
    pub ge: Option<f64>,
    #[serde(rename = "<=", default, skip_serializing_if = "Option::is_none")]
    pub le: Option<f64>,
    #[serde(rename = ">", default, skip_serializing_if = "Option::is_none")]
    pub gt: Option<f64>,
    #[serde(rename = "<", default, skip_serializing_if = "Option::is_none")]
    pub lt: Option<f64>,
    /// Equal to this value (numbers as numbers, strings exactly, arrays and tables by content).
    #[serde(rename = "==", default, skip_serializing_if = "Option::is_none")]
    pub eq: Option<serde_json::Value>,
    #[serde(rename = "!=", default, skip_serializing_if = "Option::is_none")]
    pub ne: Option<serde_json::Value>,
    /// Equal to one of these values.
    #[serde(rename = "in", default, skip_serializing_if = "Option::is_none")]
    pub one_of: Option<Vec<serde_json::Value>>,
    /// A string matching this regex (a value of another type FAILs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub matches: Option<Pattern>,
}

impl Json {
    /// The pointer's reference tokens, unescaped; `Err` for a path that is no JSON pointer.
    pub fn tokens(&self) -> Result<Vec<String>, String> {
        if self.path.is_empty() {
            return Ok(Vec::new());
        }
        let Some(rest) = self.path.strip_prefix('/') else {
            return Err(format!(
                "`{}`: `path` is a JSON pointer: `\"\"` (the whole document) or starting with `/` (`/{}`)",
                self.path,
                self.path.replace('.', "/")
            ));
        };
        let mut out = Vec::new();
        for t in rest.split('/') {
            let mut s = String::new();
            let mut chars = t.chars();
            while let Some(c) = chars.next() {
                match c {
                    '~' => match chars.next() {
                        Some('0') => s.push('~'),
                        Some('1') => s.push('/'),
                        _ => {
                            return Err(format!(
                                "`{}`: in a JSON pointer `~` must be followed by `0` (`~`) or `1` (`/`)",
                                self.path
                            ))
                        }
                    },
                    c => s.push(c),
                }
            }
            out.push(s);
        }
        Ok(out)
    }

    /// The tests given, as written (`>= 0.8`), for evidence.
    pub fn tests(&self) -> Vec<String> {
        let mut out = Vec::new();
        let num = |op: &str, v: Option<f64>, out: &mut Vec<String>| {
            if let Some(v) = v {
                out.push(format!("{op} {v}"));
            }
        };
        if let Some(e) = self.exists {
            out.push(if e { "exists" } else { "does not exist" }.into());
        }
        num(">=", self.ge, &mut out);
        num("<=", self.le, &mut out);
        num(">", self.gt, &mut out);
        num("<", self.lt, &mut out);
        if let Some(v) = &self.eq {
            out.push(format!("== {v}"));
        }
        if let Some(v) = &self.ne {
            out.push(format!("!= {v}"));
        }
        if let Some(v) = &self.one_of {
            out.push(format!("in {}", serde_json::Value::Array(v.clone())));
        }
        if let Some(p) = &self.matches {
            out.push(format!("matches `{}`", p.as_str()));
        }
        out
    }

    /// The rules a `json` predicate may not break (checked at load).
    pub fn validate(&self) -> Result<(), String> {
        if !self.path.contains("${") {
            self.tokens()?;
        }
        for (op, v) in [
            (">=", self.ge),
            ("<=", self.le),
            (">", self.gt),
            ("<", self.lt),
        ] {
            if v.is_some_and(|v| !v.is_finite()) {
                return Err(format!("`{op}` must be a finite number"));
            }
        }
        let compared = self.ge.is_some()
            || self.le.is_some()
            || self.gt.is_some()
            || self.lt.is_some()
            || self.eq.is_some()
            || self.ne.is_some()
            || self.one_of.is_some()
            || self.matches.is_some();
        if self.exists == Some(false) && compared {
            return Err("`exists = false` cannot be combined with a comparison".into());
        }
        if self.one_of.as_ref().is_some_and(|v| v.is_empty()) {
            return Err("`in` needs at least one value".into());
        }
        Ok(())
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FillRate {
    pub min: f64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Gate {
    pub files: Glob,
    pub id: String,
    /// Every entry with this id has this result (case-insensitive).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<String>,
    /// An entry with an empty result counts as missing.
    #[serde(default, skip_serializing_if = "is_false")]
    pub require_result: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateFiles {
    pub files: Glob,
    #[serde(default = "one")]
    pub min_files: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateCount {
    pub files: Glob,
    pub min: usize,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GateSources {
    pub files: Glob,
    /// A source containing any of these (lowercased) is forbidden.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forbid_contains: Vec<String>,
    /// A source equal to any of these (lowercased, trimmed) is forbidden.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub forbid_equals: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathsListed {
    pub section: String,
    pub column: String,
    /// Paths whose file name matches one of these globs are not checked.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skip: Vec<Glob>,
}

fn is_false(b: &bool) -> bool {
    !*b
}
