//! Syntax checks for one file, behind check CC-05 of the code-change protocol: does an added or
//! modified file parse? It owns the choice of parser by file extension, the parsers' messages and
//! positions, and the running of the protocol's syntax commands. It never runs the worker's code,
//! never writes in the workspace, and never reads the file itself: the caller reads it (bounded)
//! and judges the [`Outcome`]. (For a `.rs` file it reads the nearest `Cargo.toml` inside the
//! workspace, a regular file, at most 1 MiB, for the crate's edition.)
//!
//! # API
//!
//! ```text
//! pub struct CommandRule {
//!     pub ext: String, pub argv: Vec<String>, pub timeout: Duration, pub replaces_builtin: bool,
//! }
//! pub enum Outcome {
//!     Parsed { how: String },
//!     Invalid { line: usize, column: usize, message: String, how: String },
//!     Inconclusive { why: String },
//!     NotApplicable,
//! }
//! pub fn check(rel: &str, bytes: &[u8], abs: &Path, commands: &[CommandRule]) -> Outcome;
//! impl Outcome { pub fn evidence(&self, rel: &str) -> String }  // `a.py:3:7: missing `)` (...)`
//! ```
//!
//! # Which parser
//!
//! By the extension of `rel` (ASCII case ignored):
//! - `.json`: `serde_json`; `.jsonc`, and the JSON files whose readers take comments and
//!   trailing commas (`tsconfig.json`, `jsconfig.json`, `.vscode/*.json`, `devcontainer.json`,
//!   … by name: `data::is_jsonc`): `jsonc-parser`, comments and trailing commas allowed;
//!   `.toml`: the `toml` crate; `.yaml`/`.yml`: `saphyr-parser` (every
//!   document of a multi-document stream, anchors resolved). Python tooling's TOML files
//!   (`pyproject.toml`, `Pipfile`, `poetry.lock`, `uv.lock`, … by name: `data::PYTHON_TOML`) as
//!   TOML 1.0, what `tomllib` reads.
//! - `.js` `.mjs` `.cjs` `.jsx`, `.ts` `.mts` `.cts` `.tsx`, and declaration files (`.d.ts`
//!   ...): oxc's parser and its semantic checker's early errors (`let a; let a;`), module or
//!   script by extension (see `js`). The first error in the file is reported, plus how many more.
//! - `.rs`: `syn` (see `rust`: the edition from the nearest `Cargo.toml`).
//! - `.py`: tree-sitter-python. An `ERROR` or `MISSING` node anywhere in the tree makes the file
//!   invalid; the first (in document order) is reported, plus how many more there are. It also
//!   goes through the referee's pass over CPython's tokenizer rules (`python`: INDENT/DEDENT,
//!   strings, brackets) and the Python 2 the grammar still accepts (`pygrammar`).
//! - `.go`: the referee's port of go/parser (`golang`, over go/scanner's tokens in `goscan`):
//!   accepts and rejects what `gofmt -e` does, the first error reported.
//! - any extension a [`CommandRule`] names: its command. A rule whose extension also has a
//!   built-in parser does not replace it: both run, the built-in first, and the stricter outcome
//!   wins (invalid over inconclusive over parsed), so a protocol can add
//!   `python3 -m py_compile {path}` to `.py` for the errors only the compiler sees, but can never
//!   weaken a built-in check. Every matching rule runs, in the protocol's order, until one finds the
//!   file invalid. Unless a matching rule says `replaces_builtin`: then the built-in parser is
//!   switched off for that file and the commands alone judge it (a protocol's explicit choice,
//!   e.g. `tsc` for `.ts`; a type with no built-in parser is unaffected).
//! - anything else: [`Outcome::NotApplicable`].
//!
//! # Positions and text
//!
//! Lines and columns are 1-based, columns counted in characters (Unicode scalar values), as an
//! editor shows them. Column 0 (and line 0) mean "not known": a command's output that names no
//! position. A leading UTF-8 byte-order mark is skipped and not counted. A file that is not valid
//! UTF-8 is [`Outcome::Invalid`] at the first bad byte for the built-in parsers (JSON, TOML and
//! YAML require UTF-8; so do Rust and Go, and it is the default and near-universal encoding of
//! Python, JavaScript and TypeScript sources), except a Python file that declares another encoding
//! (`# -*- coding: latin-1 -*-` on line 1 or 2, PEP 263), which is decoded as declared
//! (`pyencoding`); an encoding CPython knows but the referee cannot decode is
//! [`Outcome::Inconclusive`], one CPython does not know is invalid.
//!
//! # Bounds
//!
//! Parsing is bounded: each tree-sitter parse is cancelled after [`PARSE_BUDGET`] (then
//! inconclusive); nothing recurses per nesting level of the input (JSON is skipped over with an
//! explicit stack, TOML and YAML have nesting limits that are reported as errors, tree-sitter
//! parses with a stack of its own; oxc recurses, so a JavaScript or TypeScript file is measured
//! first by `nesting` and refused past its limit, then parsed on a thread with a large stack; the Go
//! parser counts its depth and stops at `golang::MAX_DEPTH`, on a thread of its own too), so
//! 100,000 nested brackets neither hang nor overflow the stack. The caller bounds the size of what
//! it reads.
//!
//! # Commands
//!
//! A command is run without a shell: `argv[0]` is a bare program name, looked up on `PATH`
//! (relative `PATH` entries and entries inside the workspace are skipped), or an absolute path
//! outside the workspace; any other `argv[0]` is refused (inconclusive), so nothing in the
//! workspace is ever run. `{path}` in any argument becomes the file's absolute path. The command
//! runs in a fresh empty temporary directory (so `python3 -m` cannot import a module the worker
//! left in the workspace), with `PYTHONPYCACHEPREFIX` pointing there too (so `py_compile` writes
//! no `__pycache__` into the workspace), stdin null, in its own process group; stdout and stderr
//! are captured (the first [`OUTPUT_LIMIT`] bytes of each kept). At the rule's timeout the whole
//! process group is killed. Exit 0 is parsed; another exit is invalid, at the first
//! `file:line:column` or `line N` the output names (else line 0, column 0) with the output as the
//! message; a program that is not installed (or exits 126/127, as shells and shims do when the real
//! program is missing), a timeout, or a death by signal is inconclusive.
//!
//! A rule that runs `bash -n` judges a script as bash runs it (`shell`): where the script turns
//! `extglob` on with `shopt -s extglob` as a top-level command, what follows is parsed with it on
//! (bash runs each top-level command before it reads the next; `-n` runs none).

use std::path::Path;
use std::time::Duration;

mod command;
mod data;
mod error;
#[cfg(feature = "go")]
mod golang;
#[cfg(feature = "go")]
mod goscan;
mod js;
#[cfg(feature = "javascript")]
mod nesting;
pub mod pyc;
#[cfg(feature = "python")]
mod pyencoding;
#[cfg(feature = "python")]
mod pygrammar;
#[cfg(feature = "python")]
mod pyimports;
#[cfg(feature = "python")]
mod python;
#[cfg(feature = "rust")]
mod rust;
mod shell;
#[cfg(any(feature = "python", feature = "rust"))]
mod source;
#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_command;
#[cfg(test)]
mod tests_data;
#[cfg(test)]
mod tests_features;
#[cfg(test)]
#[cfg(feature = "go")]
mod tests_go;
#[cfg(test)]
#[cfg(feature = "javascript")]
mod tests_js;
#[cfg(test)]
#[cfg(feature = "python")]
mod tests_python;
#[cfg(test)]
#[cfg(feature = "rust")]
mod tests_rust;

pub use command::OUTPUT_LIMIT;
pub use error::RefusedProgram;
#[cfg(feature = "python")]
pub use pyimports::python_imports;

/// The longest a single tree-sitter parse may take before the check gives up (inconclusive).
/// Wall time, so generous: a 4.7 MB Python file (near CC-06's 5 MB cap) takes ~3 s of CPU in a
/// release build, longer on a busy machine; 200 KB takes a tenth of a second.
pub const PARSE_BUDGET: Duration = Duration::from_secs(30);

/// A command rule from the protocol: files ending in `ext` (with or without the leading dot, e.g.
/// `sh` or `.d.ts`) are checked by running `argv` (`{path}` replaced by the file's absolute path),
/// killed after `timeout`. `replaces_builtin`: the built-in parser does not run on the files the
/// rule matches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommandRule {
    pub ext: String,
    pub argv: Vec<String>,
    pub timeout: Duration,
    pub replaces_builtin: bool,
}

/// What the syntax check found for one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// It parses. `how`: which parser(s) said so, e.g. `JSON (serde_json)`,
    /// `Python (tree-sitter-python 0.25.0)`, `command `python3 -m py_compile {path}``.
    Parsed { how: String },
    /// It does not: where and why (1-based line and column; 0 when not known), the first error,
    /// plus how many more in `message` when the parser knows.
    Invalid {
        line: usize,
        column: usize,
        message: String,
        how: String,
    },
    /// It could not be decided: a command is not installed, timed out or was killed, the file
    /// declares an encoding the parser cannot read, parsing took too long. Fail closed: never a
    /// PASS.
    Inconclusive { why: String },
    /// No parser applies to this file type (e.g. `.png`, `.txt`): nothing to check.
    NotApplicable,
}

impl Outcome {
    /// One line of evidence for the file at `rel`: `src/a.py:3:7: missing `)` (Python
    /// (tree-sitter-python 0.25.0))`; an unknown line or column is left out.
    pub fn evidence(&self, rel: &str) -> String {
        match self {
            Outcome::Parsed { how } => format!("{rel}: parses ({how})"),
            Outcome::Invalid {
                line,
                column,
                message,
                how,
            } => {
                let at = match (line, column) {
                    (0, _) => String::new(),
                    (l, 0) => format!(":{l}"),
                    (l, c) => format!(":{l}:{c}"),
                };
                format!("{rel}{at}: {message} ({how})")
            }
            Outcome::Inconclusive { why } => format!("{rel}: not decided: {why}"),
            Outcome::NotApplicable => format!("{rel}: no syntax check for this file type"),
        }
    }

    /// How strict an outcome is, to combine a built-in parser's with the commands'.
    fn rank(&self) -> u8 {
        match self {
            Outcome::NotApplicable => 0,
            Outcome::Parsed { .. } => 1,
            Outcome::Inconclusive { .. } => 2,
            Outcome::Invalid { .. } => 3,
        }
    }
}

/// The built-in parsers, by extension. Every one is known to every build: a language whose
/// feature was left out of the build is still recognised, and judged [`Outcome::Inconclusive`]
/// (see [`Language`]), never passed over as a file type nobody checks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Builtin {
    Json,
    Jsonc,
    Toml,
    Yaml,
    Python,
    Rust,
    Js(js::Flavor),
    Go,
}

/// The source languages whose parsers are cargo features of this crate (all on by default),
/// so that a smaller build can leave out the heavy ones (oxc, the tree-sitter grammars). JSON,
/// TOML and YAML are always built: their parsers are dependencies of the referee anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Language {
    /// `.py` `.pyi`: tree-sitter-python and the referee's tokenizer (feature `python`).
    Python,
    /// `.rs`: syn, and tree-sitter-rust for what is nested too deep for it (feature `rust`).
    Rust,
    /// `.js` `.mjs` `.cjs` `.jsx` `.ts` `.mts` `.cts` `.tsx` `.d.ts`: oxc (feature `javascript`).
    JavaScript,
    /// `.go`: the referee's port of go/parser (feature `go`).
    Go,
}

impl Language {
    /// Every language, in a fixed order.
    pub const ALL: [Language; 4] = [
        Language::Python,
        Language::Rust,
        Language::JavaScript,
        Language::Go,
    ];

    /// The cargo feature that builds its parser.
    pub fn feature(self) -> &'static str {
        match self {
            Language::Python => "python",
            Language::Rust => "rust",
            Language::JavaScript => "javascript",
            Language::Go => "go",
        }
    }

    /// Its name, as the outcomes and `--version` say it.
    pub fn name(self) -> &'static str {
        match self {
            Language::Python => "Python",
            Language::Rust => "Rust",
            Language::JavaScript => "JavaScript/TypeScript",
            Language::Go => "Go",
        }
    }

    /// Whether this build has its parser.
    pub fn built(self) -> bool {
        match self {
            Language::Python => cfg!(feature = "python"),
            Language::Rust => cfg!(feature = "rust"),
            Language::JavaScript => cfg!(feature = "javascript"),
            Language::Go => cfg!(feature = "go"),
        }
    }

    /// What a file of a language this build has no parser for is: not decided, so it blocks
    /// as any check that cannot run does, with the way to a build that can.
    #[cfg(not(all(
        feature = "python",
        feature = "rust",
        feature = "javascript",
        feature = "go"
    )))]
    fn not_built(self) -> Outcome {
        Outcome::Inconclusive {
            why: format!(
                "this referee was built without {} support (cargo feature `{}`): \
                 rebuild with `--features {}`, or give the protocol a command for the file type \
                 that replaces the built-in parser",
                self.name(),
                self.feature(),
                self.feature()
            ),
        }
    }
}

fn builtin_for(rel: &str, name: &str) -> Option<Builtin> {
    if data::is_python_toml(name) {
        return Some(Builtin::Toml);
    }
    if data::is_jsonc(rel, name) {
        return Some(Builtin::Jsonc);
    }
    if let Some(flavor) = js::Flavor::of(name) {
        return Some(Builtin::Js(flavor));
    }
    let ext = name.rsplit_once('.')?.1.to_ascii_lowercase();
    Some(match ext.as_str() {
        "json" => Builtin::Json,
        "toml" => Builtin::Toml,
        "yaml" | "yml" => Builtin::Yaml,
        "py" | "pyi" => Builtin::Python,
        "rs" => Builtin::Rust,
        "go" => Builtin::Go,
        _ => return None,
    })
}

/// Whether `name` (a file name) ends in the rule's extension, ASCII case ignored.
fn rule_matches(rule: &CommandRule, name: &str) -> bool {
    let ext = rule.ext.trim_start_matches('.');
    if ext.is_empty() || name.len() <= ext.len() {
        return false;
    }
    // Bytes, not chars: a name like `é.py` has no char boundary where a longer extension
    // would start (splitting the str there panicked).
    let (stem, tail) = name.as_bytes().split_at(name.len() - ext.len());
    stem.ends_with(b".") && tail.eq_ignore_ascii_case(ext.as_bytes())
}

/// Checks one file. `rel`: its path relative to the workspace (picks the parser by extension, see
/// the module doc); `bytes`: its contents (already read, bounded by the caller); `abs`: its
/// absolute path, for commands (and to tell where the workspace is: `abs` less `rel`).
pub fn check(rel: &str, bytes: &[u8], abs: &Path, commands: &[CommandRule]) -> Outcome {
    let name = rel.rsplit(['/', '\\']).next().unwrap_or(rel);
    let replaced = commands
        .iter()
        .any(|r| r.replaces_builtin && rule_matches(r, name));
    let builtin = if replaced {
        None
    } else {
        builtin_for(rel, name)
    };
    let mut outcome = match builtin {
        Some(Builtin::Json) => data::json(bytes),
        Some(Builtin::Jsonc) => data::jsonc(bytes),
        Some(Builtin::Toml) => data::toml(name, bytes),
        Some(Builtin::Yaml) => data::yaml(bytes),
        #[cfg(feature = "rust")]
        Some(Builtin::Rust) => rust::check(rel, bytes, abs),
        #[cfg(feature = "python")]
        Some(Builtin::Python) => source::parse(source::Lang::Python, bytes),
        #[cfg(feature = "javascript")]
        Some(Builtin::Js(flavor)) => js::parse(flavor, bytes),
        #[cfg(feature = "go")]
        Some(Builtin::Go) => golang::parse(bytes),
        #[cfg(not(feature = "rust"))]
        Some(Builtin::Rust) => Language::Rust.not_built(),
        #[cfg(not(feature = "python"))]
        Some(Builtin::Python) => Language::Python.not_built(),
        #[cfg(not(feature = "javascript"))]
        Some(Builtin::Js(_)) => Language::JavaScript.not_built(),
        #[cfg(not(feature = "go"))]
        Some(Builtin::Go) => Language::Go.not_built(),
        None => Outcome::NotApplicable,
    };
    for rule in commands.iter().filter(|r| rule_matches(r, name)) {
        if matches!(outcome, Outcome::Invalid { .. }) {
            break;
        }
        let ran = if shell::is_bash_parse(rule) {
            shell::run(rule, rel, abs, bytes)
        } else {
            command::run(rule, rel, abs)
        };
        outcome = combine(outcome, ran);
    }
    outcome
}

/// The stricter of two outcomes; two passes name both parsers.
fn combine(a: Outcome, b: Outcome) -> Outcome {
    match (a, b) {
        (Outcome::Parsed { how: x }, Outcome::Parsed { how: y }) => Outcome::Parsed {
            how: format!("{x} and {y}"),
        },
        (a, b) if b.rank() > a.rank() => b,
        (a, _) => a,
    }
}

/// Text of a file for a parser that needs UTF-8: the bytes less a leading byte-order mark, or the
/// [`Outcome::Invalid`] naming the first bad byte.
fn utf8<'a>(bytes: &'a [u8], how: &str) -> Result<&'a str, Outcome> {
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    std::str::from_utf8(body).map_err(|e| {
        let at = e.valid_up_to();
        let (line, column) = position(body, at);
        let byte = body.get(at).copied().unwrap_or_default();
        Outcome::Invalid {
            line,
            column,
            message: format!("invalid UTF-8 (byte 0x{byte:02X})"),
            how: how.to_owned(),
        }
    })
}

/// The first syntax error at `line:column`, with how many there are in all (`count`).
#[cfg(any(feature = "python", feature = "rust", feature = "javascript"))]
fn first_of(line: usize, column: usize, mut message: String, count: usize, how: String) -> Outcome {
    if count > 1 {
        let more = count - 1;
        message.push_str(&format!(
            " (and {more} more syntax error{})",
            if more == 1 { "" } else { "s" }
        ));
    }
    Outcome::Invalid {
        line,
        column,
        message,
        how,
    }
}

/// The 1-based line and character column of byte `offset` in `text` (clamped to its length).
/// Counts characters as UTF-8 lead bytes, so it is total even on invalid UTF-8.
fn position(text: &[u8], offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line_start = memchr::memrchr(b'\n', before).map_or(0, |i| i + 1);
    let line = memchr::memchr_iter(b'\n', before).count() + 1;
    (line, char_count(&before[line_start..]) + 1)
}

/// The byte offset of 1-based `line`, 1-based byte `column` (the convention of `serde_json` and
/// tree-sitter, whose columns count bytes), clamped to the text.
fn offset_of(text: &[u8], line: usize, byte_column: usize) -> usize {
    let line_start = if line <= 1 {
        0
    } else {
        memchr::memchr_iter(b'\n', text)
            .nth(line - 2)
            .map_or(text.len(), |i| i + 1)
    };
    (line_start + byte_column.saturating_sub(1)).min(text.len())
}

/// Characters in UTF-8 text: the bytes that are not continuation bytes.
fn char_count(bytes: &[u8]) -> usize {
    bytes.iter().filter(|&&b| (b & 0xC0) != 0x80).count()
}
