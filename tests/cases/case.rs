//! The case file format (`fixtures/cases/*.toml`, documented in `fixtures/README.md`): a build
//! document (see `builder`) plus the keys that say how to run the referee on it and what it must
//! report. Both `verify` and `agree` read cases through [`load`], so they cannot drift apart.

use std::path::{Path, PathBuf};

use serde::Deserialize;

use crate::builder::{fixtures_dir, Build, BuildDoc};

#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum OneOrMany {
    One(String),
    Many(Vec<String>),
}

impl OneOrMany {
    pub fn options(&self) -> Vec<&str> {
        match self {
            OneOrMany::One(s) => vec![s.as_str()],
            OneOrMany::Many(v) => v.iter().map(String::as_str).collect(),
        }
    }
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    pub check: String,
    /// `"0"`..`"4"` or `"R"`; default: the main (non-R) instance, or R for OBS-05..09.
    pub pass: Option<String>,
    /// One status, or a list of acceptable ones (where the spec leaves room).
    pub status: OneOrMany,
    /// Substrings of the JSON-serialised evidence (case-insensitive); a list item may itself be a
    /// list of alternatives, any one of which is enough.
    #[serde(default)]
    pub evidence: Vec<OneOrMany>,
    /// Substrings that must not appear in the evidence.
    #[serde(default)]
    pub evidence_not: Vec<String>,
    pub due: Option<bool>,
    /// Expected process exit code.
    pub exit: Option<i32>,
    /// Upper bound on the serialised evidence's length (evidence is capped in size).
    pub evidence_max_len: Option<usize>,
}

/// The keys of a case file that are not build contents.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Keys {
    #[serde(rename = "final", default)]
    pub final_: bool,
    /// Extra arguments for `referee verify` (and `referee watch`).
    #[serde(default)]
    pub args: Vec<String>,
    pub exit: Option<i32>,
    pub complete: Option<bool>,
    /// `"null"` for a JSON null.
    pub verdict: Option<String>,
    /// A substring of the top-level `verdict_note` (a verdict file with no readable verdict).
    pub verdict_note: Option<String>,
    #[serde(default)]
    pub expect: Vec<Expect>,
}

/// The names of the fields of [`Keys`]: everything else in a case file is the build document.
const KEYS: &[&str] = &[
    "final",
    "args",
    "exit",
    "complete",
    "verdict",
    "verdict_note",
    "expect",
];

/// One case file, parsed.
#[derive(Debug)]
pub struct Case {
    pub keys: Keys,
    pub doc: BuildDoc,
}

impl Case {
    /// The build directory the case describes (its base with its edits applied).
    pub fn build(&self) -> Result<Build, String> {
        Build::from_doc(&self.doc)
    }
}

/// Reads and checks one case file; every error names the file.
pub fn load(path: &Path) -> Result<Case, String> {
    let name = path
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: {e}"))?;
    let mut table: toml::Table = text.parse().map_err(|e| format!("{name}: {e}"))?;
    let mut keys = toml::Table::new();
    for k in KEYS {
        if let Some(v) = table.remove(*k) {
            keys.insert((*k).to_string(), v);
        }
    }
    let keys: Keys = toml::Value::Table(keys)
        .try_into()
        .map_err(|e| format!("{name}: {e}"))?;
    let doc: BuildDoc = toml::Value::Table(table)
        .try_into()
        .map_err(|e| format!("{name}: {e}"))?;
    if doc.base.is_none() {
        return Err(format!("{name}: a case needs `base = \"<build>\"`"));
    }
    if keys.expect.is_empty() && keys.exit.is_none() {
        return Err(format!(
            "{name}: a case needs at least one [[expect]] or `exit`"
        ));
    }
    Ok(Case { keys, doc })
}

/// Every `fixtures/cases/*.toml`, sorted.
pub fn files() -> Vec<PathBuf> {
    let dir = fixtures_dir().join("cases");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    files
}

/// A case's name: its file name without `.toml` (`obs-07-fail-diagnostic-verb`).
pub fn name(path: &Path) -> String {
    path.file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}
