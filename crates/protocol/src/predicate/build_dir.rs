//! The build-directory predicates (D10 and any protocol over a directory of artifacts): counts,
//! tracker fields and tables, times, text rules, headings, JSON values and gate results.
//! Described here; judged in `checks`.

use serde::{Deserialize, Serialize};

use super::{choice, is_default, Glob, Pattern, Predicate};

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
    /// Only files that begin with these bytes count (`signature = "png"`, or hex such as
    /// `"89 50 4E 47"`): an empty or text file named `*.png` is not a screenshot. Only as many
    /// files as `min` needs are opened (their first bytes read), so a folder of 30,000
    /// screenshots is still counted, not read.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signature: Option<Signature>,
}

/// The bytes a file of a format begins with: a named format (`png`, `jpeg`, `gif`, `webp`,
/// `pdf`) or hex bytes (`"89 50 4E 47 0D 0A 1A 0A"`, spaces optional).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Signature {
    /// As written.
    pub name: String,
    /// The leading bytes (`webp` is recognised by more than a prefix: `RIFF`, four size bytes,
    /// `WEBP`; see [`Signature::matches`]).
    pub bytes: Vec<u8>,
}

impl Signature {
    /// How many leading bytes [`Signature::matches`] needs.
    pub fn len(&self) -> usize {
        if self.name.eq_ignore_ascii_case("webp") {
            12
        } else {
            self.bytes.len()
        }
    }

    /// Whether a signature needs no bytes at all (never: [`Signature::try_from`] refuses one).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Whether a file beginning with `head` has this signature.
    pub fn matches(&self, head: &[u8]) -> bool {
        if self.name.eq_ignore_ascii_case("webp") {
            return head.len() >= 12 && head.starts_with(b"RIFF") && &head[8..12] == b"WEBP";
        }
        head.starts_with(&self.bytes)
    }
}

/// A `signature` that is neither a named format nor hex bytes; shown inside a protocol error
/// located at the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "`signature` is a format (png, jpeg, gif, webp, pdf) or hex bytes (`89 50 4E 47`), not `{name}`"
)]
pub struct SignatureError {
    /// As written.
    pub name: String,
}

impl TryFrom<String> for Signature {
    type Error = SignatureError;

    fn try_from(name: String) -> Result<Signature, SignatureError> {
        let named: Option<&[u8]> = match name.to_ascii_lowercase().as_str() {
            "png" => Some(b"\x89PNG\r\n\x1a\n"),
            "jpeg" | "jpg" => Some(b"\xff\xd8\xff"),
            "gif" => Some(b"GIF8"),
            "webp" => Some(b"RIFF"),
            "pdf" => Some(b"%PDF-"),
            _ => None,
        };
        if let Some(bytes) = named {
            return Ok(Signature {
                name,
                bytes: bytes.to_vec(),
            });
        }
        let digits: String = name.chars().filter(|c| !c.is_whitespace()).collect();
        let hex_ok = !digits.is_empty()
            && digits.len().is_multiple_of(2)
            && digits.chars().all(|c| c.is_ascii_hexdigit());
        if !hex_ok {
            return Err(SignatureError { name });
        }
        let bytes = (0..digits.len())
            .step_by(2)
            .filter_map(|i| u8::from_str_radix(&digits[i..i + 2], 16).ok())
            .collect();
        Ok(Signature { name, bytes })
    }
}

impl From<Signature> for String {
    fn from(s: Signature) -> String {
        s.name
    }
}

/// `verdict = { is = ["REFINE"] }`: a verdict of the run (each `[verdict]` file's, each round)
/// is one of these; `verdict = { files = "p3c-weaver*.md" }`: the verdict in these files can
/// be read. Passes when a verdict is read (and is one of `is`, when given); missing when no
/// such file exists; INCONCLUSIVE when one exists but its verdict cannot be read; FAIL when
/// the verdict read is not one of `is`.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VerdictIs {
    /// The verdict files read; default: every glob of the protocol's `[verdict]` table.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub files: Option<Glob>,
    /// The verdicts that pass (compared ignoring case and spacing); empty: any verdict.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub is: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FileSet {
    pub glob: Glob,
    /// Regex over the file name whose first capture group is the key.
    pub key: Pattern,
    pub expect: Vec<String>,
    /// How keys compare (`ignore_case = true`: `p3b-pa-auditor-a.md` carries the key `A`, and
    /// with `p3b-pa-auditor-A.md` beside it, `A` is there twice).
    #[serde(default, skip_serializing_if = "is_default")]
    pub ignore_case: KeyCase,
}

choice! {
    /// How a file set's keys compare with the expected ones (`ignore_case`).
    pub enum KeyCase {
        /// Byte for byte.
        Exact = false,
        /// Ignoring case: `a` is the expected `A`.
        Ignored = true,
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Section {
    pub section: String,
    /// Which headings name the section (`exact = true`: equal to `section`).
    #[serde(default, skip_serializing_if = "is_default")]
    pub exact: SectionMatch,
}

choice! {
    /// Which tracker headings a section name picks out (`exact`); both ignore case.
    pub enum SectionMatch {
        /// Every heading containing the name.
        Contains = false,
        /// The heading equal to the name.
        Exact = true,
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FieldMatches {
    pub fields: Vec<String>,
    pub pattern: Pattern,
    /// How many of the fields must match (`any = true`: one is enough).
    #[serde(default, skip_serializing_if = "is_default")]
    pub any: HowMany,
}

choice! {
    /// How many of the listed values must match (`any`).
    pub enum HowMany {
        /// Every value.
        All = false,
        /// At least one value.
        Any = true,
    }
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
    /// Where in the file the heading must be (`last = true`: the last of its level).
    #[serde(default, skip_serializing_if = "is_default")]
    pub last: HeadingPlace,
}

choice! {
    /// Where a required heading must stand in its file (`last`).
    pub enum HeadingPlace {
        /// Anywhere.
        Anywhere = false,
        /// As the last heading of its level.
        Last = true,
    }
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

/// Why a `json` predicate was refused at load (the pointer) or, for a pointer held in a
/// `${var}`, at judging (then the check is INCONCLUSIVE with this text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JsonPredicateError {
    #[error("`{path}`: `path` is a JSON pointer: `\"\"` (the whole document) or starting with `/` (`/{}`)", path.replace('.', "/"))]
    NotAPointer { path: String },
    #[error("`{path}`: in a JSON pointer `~` must be followed by `0` (`~`) or `1` (`/`)")]
    BadEscape { path: String },
    #[error("`{op}` must be a finite number")]
    NotFinite { op: &'static str },
    #[error("`exists = false` cannot be combined with a comparison")]
    AbsentCompared,
    #[error("`in` needs at least one value")]
    EmptyIn,
}

impl Json {
    /// The pointer's reference tokens, unescaped; `Err` for a path that is no JSON pointer.
    pub fn tokens(&self) -> Result<Vec<String>, JsonPredicateError> {
        if self.path.is_empty() {
            return Ok(Vec::new());
        }
        let Some(rest) = self.path.strip_prefix('/') else {
            return Err(JsonPredicateError::NotAPointer {
                path: self.path.clone(),
            });
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
                            return Err(JsonPredicateError::BadEscape {
                                path: self.path.clone(),
                            })
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
    pub fn validate(&self) -> Result<(), JsonPredicateError> {
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
                return Err(JsonPredicateError::NotFinite { op });
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
            return Err(JsonPredicateError::AbsentCompared);
        }
        if self.one_of.as_ref().is_some_and(|v| v.is_empty()) {
            return Err(JsonPredicateError::EmptyIn);
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
    /// What an entry with an empty result counts as (`require_result = true`: missing).
    #[serde(default, skip_serializing_if = "is_default")]
    pub require_result: EmptyResult,
}

choice! {
    /// What a gate entry with an empty result counts as (`require_result`).
    pub enum EmptyResult {
        /// Present: the gate is there.
        Present = false,
        /// Missing: the gate is there only once it has a result.
        Missing = true,
    }
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

#[cfg(test)]
mod signature_tests {
    use super::Signature;

    #[test]
    fn named_and_hex_signatures_and_what_they_match() {
        let png = Signature::try_from("png".to_string()).unwrap();
        assert!(png.matches(b"\x89PNG\r\n\x1a\n rest"));
        assert!(!png.matches(b""), "an empty file is not a PNG");
        assert!(!png.matches(b"<html>"));
        assert!(!png.matches(b"\x89PNG"), "a cut-off signature is not one");
        let hex = Signature::try_from("89 50 4e 47".to_string()).unwrap();
        assert_eq!(hex.bytes, b"\x89PNG");
        assert_eq!(hex.len(), 4);
        let webp = Signature::try_from("WebP".to_string()).unwrap();
        assert!(webp.matches(b"RIFF\x10\0\0\0WEBPVP8 "));
        assert!(!webp.matches(b"RIFF\x10\0\0\0WAVEfmt "));
        for bad in ["", "bmp", "89 5", "zz"] {
            assert!(Signature::try_from(bad.to_string()).is_err(), "{bad:?}");
        }
    }
}
