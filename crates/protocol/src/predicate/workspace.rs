//! The workspace predicates of a task protocol (`code-change`): judged in a pass instance of one
//! task record against the baseline (protected paths, syntax, sizes, added lines, the record's
//! fields, style). Described here; judged in `checks::change`.

use std::fmt;
use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

use super::{choice, is_default, Glob, OneOrMany, Pattern};
use crate::memo::{memo, Memo};

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Unchanged {
    /// Matched against the whole path relative to the workspace (`**/x.py` matches `x.py`).
    pub globs: Vec<Glob>,
    /// Paths that take a protected file's place for its language (a module shadowing a
    /// protected one: what the language's loader would load instead): for each glob whose
    /// file name ends in `.EXT` (and, when the entry names a `stem`, is `STEM.EXT`), each
    /// template of the entry is protected too. See [`Shadow`] for the placeholders.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shadows: Vec<Shadow>,
}

/// The shadow templates of one file extension (see [`Unchanged::shadows`]): one row of a
/// language's table of what its loader takes in a module's place.
///
/// Placeholders, for a protected glob `src/engine/index.js`: `{dir}` its directory part with
/// its `/` (`src/engine/`, or empty), `{stem}` its file name without `.EXT` (`index`),
/// `{parent}` the directory part of `{dir}` (`src/`) and `{dirname}` the last component of
/// `{dir}` (`engine`). A template that uses `{parent}` or `{dirname}` makes no pattern for a
/// glob whose directory part does not end in a name (`index.js`, `**/index.js`): the folder is
/// not known there.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Shadow {
    /// The extension, without its dot (`py`).
    pub ext: String,
    /// Only for protected files of this stem (`index` for `index.js`); any stem when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stem: Option<String>,
    /// Path templates (`{dir}{stem}/__init__.py`, `{parent}{dirname}.js`).
    pub paths: Vec<String>,
}

impl Unchanged {
    /// The protected globs and the globs of every path that shadows one, each with the glob it
    /// protects (itself for a protected glob). A template that makes no valid glob is left out
    /// (the protocol check reports it).
    ///
    /// Made once per process for the same globs and shadows (a judgment asks for them in each
    /// check and verdict that protects paths; each glob made is parsed).
    pub fn all_globs(&self) -> Vec<(Glob, Option<String>)> {
        static MEMO: Memo<Vec<(Glob, Option<String>)>> = OnceLock::new();
        // Each list with its count and each part with its length: no two make the same key.
        let mut key = String::new();
        let mut part = |p: &str| key.push_str(&format!("{}:{p}", p.len()));
        part(&self.globs.len().to_string());
        self.globs.iter().for_each(|g| part(g.as_str()));
        for s in &self.shadows {
            part(&s.ext);
            part(s.stem.as_deref().unwrap_or("*"));
            part(&s.paths.len().to_string());
            s.paths.iter().for_each(|p| part(p));
        }
        memo(&MEMO, &key, || {
            let mut out: Vec<(Glob, Option<String>)> =
                self.globs.iter().map(|g| (g.clone(), None)).collect();
            // A protected folder protects what is in it: `ci`, `ci/` (a folder, as a trailing `/`
            // says) and `ci/**` all protect `ci/deploy.sh`, as git's pathspecs and ignore rules
            // read a folder's name. A name with an extension or a wildcard (`*.lock`,
            // `**/roles.py`) is taken for a file's unless written with its `/`. `.git` is the
            // exception: it protects the git directory's place (a `gitdir:` file put there), and
            // what in it runs code is protected by name (`.git/hooks/**`, `.git/config`), for
            // git rewrites the rest (`index`, `logs/`, objects) on every honest commit.
            for g in &self.globs {
                let body = g.as_str().trim_end_matches('/');
                let last = body.rsplit('/').next().unwrap_or(body);
                if last == ".git" && !g.dirs_only() {
                    continue;
                }
                let folder = g.dirs_only()
                    || !(last.contains(['*', '?', '[', '{'])
                        || last.chars().skip(1).any(|c| c == '.'));
                if !folder || body.ends_with("**") {
                    continue;
                }
                if let Ok(inner) = Glob::try_from(format!("{body}/**")) {
                    if !out.iter().any(|(o, _)| o.as_str() == inner.as_str()) {
                        out.push((inner, None));
                    }
                }
            }
            for g in &self.globs {
                for (shadow, _) in shadow_sources(g.as_str(), &self.shadows) {
                    if let Ok(sg) = Glob::try_from(shadow) {
                        out.push((sg, Some(g.as_str().to_string())));
                    }
                }
            }
            out
        })
    }
}

/// The shadow patterns of one protected glob: (pattern, the template it came from).
pub fn shadow_sources(glob: &str, shadows: &[Shadow]) -> Vec<(String, String)> {
    let (dir, file) = match glob.rfind('/') {
        Some(i) => (&glob[..=i], &glob[i + 1..]),
        None => ("", glob),
    };
    // `{dir}` less its `/`, cut at its last `/`: `{parent}` keeps that `/`.
    let (parent, dirname) = match dir.strip_suffix('/') {
        Some(d) => match d.rfind('/') {
            Some(i) => (&d[..=i], &d[i + 1..]),
            None => ("", d),
        },
        None => ("", ""),
    };
    let folder_known = !dirname.is_empty() && dirname != "**";
    let mut out = Vec::new();
    for s in shadows {
        let Some(stem) = file.strip_suffix(&format!(".{}", s.ext)) else {
            continue;
        };
        if s.stem.as_deref().is_some_and(|want| want != stem) {
            continue;
        }
        for t in &s.paths {
            if !folder_known && (t.contains("{parent}") || t.contains("{dirname}")) {
                continue;
            }
            let pattern = t
                .replace("{dir}", dir)
                .replace("{stem}", stem)
                .replace("{parent}", parent)
                .replace("{dirname}", dirname);
            out.push((pattern, t.clone()));
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
    /// Whether the built-in parser still judges the files this rule matches
    /// (`replaces_builtin = true`: the command alone judges them, for a team that trusts its
    /// own compiler over the referee's parser, e.g. `tsc --noEmit` for `.ts`). Default: the
    /// command adds to the built-in parser.
    #[serde(default, skip_serializing_if = "is_default")]
    pub replaces_builtin: Builtin,
}

choice! {
    /// What a syntax command does to the built-in parser for its files (`replaces_builtin`).
    pub enum Builtin {
        /// The built-in parser judges them too; the command adds its own judgment.
        Kept = false,
        /// The command alone judges them.
        Replaced = true,
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSyntaxCommand {
    ext: String,
    argv: Vec<String>,
    #[serde(default = "default_timeout")]
    timeout_seconds: u64,
    #[serde(default)]
    replaces_builtin: Builtin,
}

fn default_timeout() -> u64 {
    SyntaxCommand::DEFAULT_TIMEOUT_SECONDS
}

/// Why a `parses` command rule was refused at load: each names the field at fault and what a
/// valid one looks like (a relative program path is refused: it could run a workspace file).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SyntaxCommandError {
    #[error("`{ext}`: a syntax command's `ext` must be a file extension such as `.sh` or `.d.ts` (no path, glob or space)")]
    Ext { ext: String },
    #[error("`{ext}`: a syntax command needs `argv` with a program, e.g. `[\"bash\", \"-n\", \"{{path}}\"]`")]
    NoProgram { ext: String },
    #[error("`{program}`: a syntax command's program must be a name looked up on `PATH` (`bash`) or an absolute path (`/usr/bin/bash`): a relative path could run a file from the workspace")]
    RelativeProgram { program: String },
    #[error("`{ext}`: the syntax command `{program}` needs `{{path}}` in an argument (it becomes the checked file's absolute path)")]
    NoPath { ext: String, program: String },
    #[error("`timeout_seconds = {seconds}`: a syntax command's timeout must be 1 to {max} seconds", max = SyntaxCommand::MAX_TIMEOUT_SECONDS)]
    Timeout { seconds: u64 },
}

impl TryFrom<RawSyntaxCommand> for SyntaxCommand {
    type Error = SyntaxCommandError;
    fn try_from(r: RawSyntaxCommand) -> Result<Self, SyntaxCommandError> {
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
    pub fn validate(&self) -> Result<(), SyntaxCommandError> {
        let held = |s: &str| s.contains("${");
        let ext = self.ext.strip_prefix('.').unwrap_or(&self.ext);
        if !held(&self.ext)
            && (ext.is_empty()
                || ext.starts_with('.')
                || ext.ends_with('.')
                || ext.contains(['/', '\\', '*', '?', '[', '{'])
                || ext.chars().any(char::is_whitespace))
        {
            return Err(SyntaxCommandError::Ext {
                ext: self.ext.clone(),
            });
        }
        let Some(program) = self.argv.first() else {
            return Err(SyntaxCommandError::NoProgram {
                ext: self.ext.clone(),
            });
        };
        if !held(program)
            && (program.trim().is_empty() || (program.contains('/') && !program.starts_with('/')))
        {
            return Err(SyntaxCommandError::RelativeProgram {
                program: program.clone(),
            });
        }
        if !self
            .argv
            .iter()
            .skip(1)
            .any(|a| a.contains("{path}") || held(a))
        {
            return Err(SyntaxCommandError::NoPath {
                ext: self.ext.clone(),
                program: program.clone(),
            });
        }
        if !(1..=Self::MAX_TIMEOUT_SECONDS).contains(&self.timeout_seconds) {
            return Err(SyntaxCommandError::Timeout {
                seconds: self.timeout_seconds,
            });
        }
        Ok(())
    }

    /// The rule as `crate::syntax` runs it.
    pub fn rule(&self) -> crate::syntax::CommandRule {
        crate::syntax::CommandRule {
            ext: self.ext.clone(),
            argv: self.argv.clone(),
            timeout: std::time::Duration::from_secs(self.timeout_seconds),
            replaces_builtin: self.replaces_builtin == Builtin::Replaced,
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
    type Error = crate::size::SizeError;

    fn try_from(source: String) -> Result<Self, Self::Error> {
        if source.contains("${") {
            return Ok(Size { bytes: 0, source });
        }
        let bytes = crate::size::parse(&source)?;
        Ok(Size { bytes, source })
    }
}

impl TryFrom<SizeRaw> for Size {
    type Error = crate::size::SizeError;

    fn try_from(raw: SizeRaw) -> Result<Self, Self::Error> {
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
    pub secrets: Option<crate::secrets::SecretRules>,
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
    #[serde(default, skip_serializing_if = "is_default")]
    pub final_newline: bool,
    #[serde(default, skip_serializing_if = "is_default")]
    pub trailing_whitespace: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unchanged(globs: &[&str], shadows: &[(&str, &[&str])]) -> Unchanged {
        Unchanged {
            globs: globs
                .iter()
                .map(|g| Glob::try_from(g.to_string()).expect("glob"))
                .collect(),
            shadows: shadows
                .iter()
                .map(|(ext, paths)| Shadow {
                    ext: ext.to_string(),
                    stem: None,
                    paths: paths.iter().map(|p| p.to_string()).collect(),
                })
                .collect(),
        }
    }

    fn names(u: &Unchanged) -> Vec<(String, Option<String>)> {
        u.all_globs()
            .into_iter()
            .map(|(g, of)| (g.as_str().to_string(), of))
            .collect()
    }

    #[test]
    fn all_globs_are_made_for_each_protocols_own_globs_and_shadows() {
        let py: &[&str] = &["{dir}{stem}/__init__.py", "{dir}__pycache__/{stem}.*.pyc"];
        let a = unchanged(&["**/roles.py"], &[("py", py)]);
        let want = [
            ("**/roles.py", None),
            ("**/roles/__init__.py", Some("**/roles.py")),
            ("**/__pycache__/roles.*.pyc", Some("**/roles.py")),
        ]
        .map(|(g, of)| (g.to_string(), of.map(str::to_string)));
        assert_eq!(names(&a), want);
        assert_eq!(names(&a), want, "the same again, from the memo");
        // Other globs, other shadows, or the same parts cut otherwise: each its own answer.
        let b = unchanged(&["src/roles.py"], &[("py", py)]);
        assert_eq!(names(&b)[1].0, "src/roles/__init__.py");
        let c = unchanged(&["**/roles.py"], &[("py", &py[..1])]);
        assert_eq!(names(&c).len(), 2);
        let d = unchanged(&["**/roles.py"], &[("pyc", py)]);
        assert_eq!(names(&d).len(), 1);
        let e = unchanged(&["**/roles.py"], &[("py", &[]), ("py", &py[..1])]);
        assert_eq!(names(&e).len(), 2);
    }

    #[test]
    fn a_protected_folder_protects_what_is_in_it() {
        for written in ["ci", "ci/", "ci/**", "./ci", "./ci/"] {
            let u = unchanged(&[written], &[]);
            let globs = u.all_globs();
            let hit = |p: &str| globs.iter().any(|(g, _)| g.is_match(p));
            assert!(
                hit("ci/deploy.sh") && hit("ci/a/b.yml"),
                "{written}: {:?}",
                names(&u)
            );
            assert!(!hit("cid/x") && !hit("src/ci/x"), "{written}");
        }
        // `.git` protects the git directory's place, not what git writes in it.
        let git = unchanged(&[".git"], &[]);
        let globs = git.all_globs();
        assert!(globs.iter().any(|(g, _)| g.is_match(".git")));
        assert!(!globs.iter().any(|(g, _)| g.is_match(".git/index")));
        let u = unchanged(
            &[".claude", "Makefile", "*.lock", "docs/conf.py", "web.d/"],
            &[],
        );
        let globs = names(&u);
        let shown: Vec<&str> = globs.iter().map(|(g, _)| g.as_str()).collect();
        assert_eq!(
            shown,
            [
                ".claude",
                "Makefile",
                "*.lock",
                "docs/conf.py",
                "web.d/",
                ".claude/**",
                "Makefile/**",
                "web.d/**"
            ]
        );
    }

    fn sources(glob: &str, shadow: Shadow) -> Vec<String> {
        shadow_sources(glob, &[shadow])
            .into_iter()
            .map(|(p, _)| p)
            .collect()
    }

    #[test]
    fn the_folder_placeholders_and_the_stem_filter() {
        let index = || Shadow {
            ext: "js".into(),
            stem: Some("index".into()),
            paths: vec!["{dir}package.json".into(), "{parent}{dirname}.js".into()],
        };
        assert_eq!(
            sources("src/engine/index.js", index()),
            ["src/engine/package.json", "src/engine.js"]
        );
        assert_eq!(
            sources("**/engine/index.js", index()),
            ["**/engine/package.json", "**/engine.js"]
        );
        assert_eq!(sources("engine/index.js", index())[1], "engine.js");
        // No folder name to put a sibling file beside: those templates make nothing.
        assert_eq!(sources("index.js", index()), ["package.json"]);
        assert_eq!(sources("**/index.js", index()), ["**/package.json"]);
        // Another stem: the row does not apply.
        assert!(sources("src/engine/main.js", index()).is_empty());
    }
}
