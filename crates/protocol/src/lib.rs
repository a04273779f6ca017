//! What the protocol says: the TOML protocol format, strict loading and validation, and
//! the embedded protocols. A loaded [`Protocol`] is fully resolved — every check instance
//! of every pass and variant has its predicate, deadline and `when` instantiated and every
//! glob and pattern validated — so nothing after loading fails on a mistake in the protocol
//! (a pattern past the regex size limit is judged INCONCLUSIVE when it is first compiled).
//! This crate never looks at a build directory.
//!
//! The referee's protocol model as a library of its own, the workspace crate `referee-protocol`
//! (re-exported by the referee as `protocol`): it is built over the file-system layer
//! (`referee-safefs`) and CC-05's command rules (`referee-syntax`) and imports nothing of the
//! referee above it, so the compiler keeps the model from reaching into the checks, the engine
//! or the daemon. With it go what it needs and what sits below it: sizes with units ([`size`]),
//! whether a believed file lies inside the watched directory ([`inside`]), which names are no
//! check's input ([`ignored`]) and the one hex encoder ([`hex`], [`sha256_hex`]).

// The file-system layer and the TOML loader under the names the referee gives them.
use referee_safefs as safefs;
use referee_safefs::toml as tomlfile;
use referee_syntax as syntax;

mod digest;
pub mod explain;
pub mod glob;
pub mod ignored;
pub mod inputs;
pub mod inside;
mod instance;
mod load;
pub mod memo;
pub mod named;
pub mod overrides;
pub mod pattern;
pub mod predicate;
mod prepare;
mod raw;
pub mod secrets;
pub mod size;
pub mod tasks;
pub mod vars;
mod with_secrets;

use std::collections::BTreeSet;
use std::sync::Arc;

use serde::Deserialize;

use predicate::{Glob, Pattern, Predicate};
pub use tasks::{Grade, GradeOutcome, GradeWhen, Guards, TaskRules, TasksSpec};

/// The schema version of protocol files this referee reads.
pub const SCHEMA_VERSION: u32 = 1;

/// The protocols compiled into the binary: (id, file name, text).
pub const EMBEDDED: &[(&str, &str, &str)] = &[
    (
        "d10",
        "protocols/d10.toml",
        include_str!("../../../protocols/d10.toml"),
    ),
    (
        "code-change",
        "protocols/code-change.toml",
        include_str!("../../../protocols/code-change.toml"),
    ),
];

/// The variables of a pass that names none (`[vars.main]`).
const MAIN_VARIANT: &str = "main";

/// The protocol used when none is named.
pub const DEFAULT_ID: &str = "d10";

#[derive(Debug, thiserror::Error)]
pub enum ProtocolError {
    #[error("{origin}:{line}:{column}: {message}")]
    Invalid {
        origin: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// A protocol or secret rules file that cannot be read, is no file to read (a directory, a
    /// device, a huge file) or is not UTF-8.
    #[error(transparent)]
    Read(#[from] named::NamedFileError),
    /// A relative path where secret rules are named (they must not be read from the workspace).
    #[error("secret rules `{0}`: give `embedded` or an absolute path")]
    SecretsSpec(String),
    /// A `--vars`/`--set`/`--protect` that does not fit the protocol.
    #[error(transparent)]
    Overrides(overrides::OverrideError),
    #[error("unknown protocol `{0}` (embedded: {list}; or give the path of a protocol file)", list = embedded_ids())]
    Unknown(String),
}

fn embedded_ids() -> String {
    EMBEDDED
        .iter()
        .map(|(id, _, _)| *id)
        .collect::<Vec<_>>()
        .join(", ")
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Deserialize, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    Blocking,
    Significant,
}

impl Severity {
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Blocking => "BLOCKING",
            Severity::Significant => "SIGNIFICANT",
        }
    }
}

/// What a check reports, once due, when something it needs is missing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MissingAs {
    #[default]
    Fail,
    Inconclusive,
}

/// One check as the protocol file defines it.
#[derive(Debug)]
pub struct CheckDef {
    pub id: String,
    pub severity: Severity,
    pub title: String,
    pub description: String,
    pub action: String,
    pub recommendation: String,
    pub missing: MissingAs,
    /// Switched off by the protocol's variables (its severity a `${var}` set to `off`): why,
    /// `` `weakened_severity = "off"` ``. The check is SKIP wherever it runs.
    pub off: Option<String>,
    /// The reason tag a failure of this check gives a task verdict (`protected_file_modified`).
    pub tag: Option<String>,
    /// A task protocol's veto: a FAIL raises OBSERVER-STOP.md while it stands, beyond
    /// REJECTing the attempt (in a build protocol every BLOCKING FAIL does already).
    pub veto: bool,
    pub line: usize,
}

/// One check as it runs in one pass with one variant's variables.
#[derive(Debug)]
pub struct CheckInstance {
    pub def: Arc<CheckDef>,
    pub variant: String,
    /// The definition's description with this variant's variables substituted (what is shown).
    pub description: String,
    pub predicate: Predicate,
    /// When the check becomes due; `None`: as soon as its pass runs.
    pub deadline: Option<Predicate>,
    /// When false, the check is SKIP.
    pub when: Option<Predicate>,
    /// What the predicate, deadline and `when` read.
    pub inputs: inputs::Inputs,
}

#[derive(Debug)]
pub struct Pass {
    pub id: String,
    pub title: String,
    /// An optional pass runs only on its trigger (never at a deadline or completion).
    pub optional: bool,
    pub trigger: Predicate,
    pub deadline: Option<Predicate>,
    /// `Some`: one instance of the pass per judged task record, keyed by its `task_id`.
    pub for_each: Option<ForEach>,
    pub checks: Vec<CheckInstance>,
}

/// What a pass is instantiated over.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ForEach {
    /// Every task record (`.tasks/*.json`) the protocol's `[tasks]` table judges.
    Task,
}

/// How the pipeline's verdict is found.
#[derive(Debug)]
pub struct VerdictSpec {
    /// In order of precedence: the first glob whose files carry a verdict decides.
    pub files: Vec<Glob>,
    pub pattern: Pattern,
    pub complete: Vec<String>,
}

/// What a protocol judges, and what only that kind of protocol has: a protocol is one kind,
/// never both or neither (`[verdict]` and `[tasks]` together are a load error).
#[derive(Debug)]
pub enum Subject {
    /// A pipeline's build directory (D10): its passes, and how its verdict is read when the
    /// protocol has a `[verdict]` table (without one the run completes at `--final`,
    /// `--exit-with` or `--timeout`).
    Build(Option<VerdictSpec>),
    /// A coding agent's workspace (code-change): its task records judged one attempt at a
    /// time against the baseline, graded, and guarded across attempts.
    Workspace(TaskRules),
}

/// The execution tracker's file name when a protocol names none (`[tracker] file`): the D10
/// pipeline's, which protocols written for it before the option existed read.
pub const DEFAULT_TRACKER: &str = "EXECUTION-TRACKER.md";

#[derive(Debug)]
pub struct Protocol {
    pub id: String,
    pub version: String,
    pub title: String,
    pub description: String,
    /// Where it came from: `embedded:d10` or a path.
    pub origin: String,
    pub sha256: String,
    pub text: String,
    /// A glob that does not contain the marker never matches a name that does.
    pub variant_marker: Option<String>,
    /// The file name of the build directory's execution tracker, which the tracker predicates
    /// read (`[tracker] file`; default [`DEFAULT_TRACKER`]).
    pub tracker: String,
    /// What it judges: a build directory or a workspace's task records.
    pub subject: Subject,
    pub passes: Vec<Pass>,
    /// The variables `--vars`/`--set`/`--protect` changed, as resolved (empty: none).
    pub overrides: Vec<overrides::Resolved>,
}

impl Protocol {
    /// How the pipeline's verdict is read (a build protocol with `[verdict]`).
    pub fn verdict_spec(&self) -> Option<&VerdictSpec> {
        match &self.subject {
            Subject::Build(v) => v.as_ref(),
            Subject::Workspace(_) => None,
        }
    }

    /// The loop guards of a task protocol.
    pub fn guards(&self) -> Option<&Guards> {
        match &self.subject {
            Subject::Workspace(t) => t.guards.as_ref(),
            Subject::Build(_) => None,
        }
    }

    /// Every check definition, in protocol order of first appearance.
    pub fn checks(&self) -> Vec<&Arc<CheckDef>> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for p in &self.passes {
            for c in &p.checks {
                if seen.insert(c.def.id.clone()) {
                    out.push(&c.def);
                }
            }
        }
        out
    }

    /// The definition of the check `id` (exact id).
    pub fn check_def(&self, id: &str) -> Option<&CheckDef> {
        self.passes
            .iter()
            .flat_map(|p| &p.checks)
            .map(|c| &*c.def)
            .find(|d| d.id == id)
    }

    /// Whether a FAIL of check `id` is a veto (see [`CheckDef::veto`]).
    pub fn is_veto(&self, id: &str) -> bool {
        self.check_def(id).is_some_and(|d| d.veto)
    }

    /// Whether a judgment by this protocol may read the file at `rel` (a path relative to the
    /// build directory): a check reads it, it is a verdict file, or it is the tracker a check
    /// reads. Conservative (the checks of every pass, due or not): for reading ahead, never
    /// for deciding what was read.
    pub fn may_read(&self, rel: &str) -> bool {
        let instances = || self.passes.iter().flat_map(|p| &p.checks);
        instances().any(|c| c.inputs.reads_tracker(rel))
            || instances().any(|c| c.inputs.reads.iter().any(|g| g.is_match(rel)))
            || self
                .verdict_spec()
                .is_some_and(|v| v.files.iter().any(|g| g.is_match(rel)))
    }

    /// Every instance of a check, with the pass it runs in.
    pub fn instances_of(&self, id: &str) -> Vec<(&Pass, &CheckInstance)> {
        self.passes
            .iter()
            .flat_map(|p| p.checks.iter().map(move |c| (p, c)))
            .filter(|(_, c)| c.def.id.eq_ignore_ascii_case(id))
            .collect()
    }
}

/// The 1-based line numbers of byte offsets in one text, for callers that ask many times
/// (a line per check or per timeline step); `line_col` rescans the text on every call.
#[derive(Debug)]
pub struct Lines(Vec<usize>);

impl Lines {
    pub fn new(text: &str) -> Lines {
        let starts = memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1);
        Lines(std::iter::once(0).chain(starts).collect())
    }

    pub fn line(&self, offset: usize) -> usize {
        self.0.partition_point(|&start| start <= offset)
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let before = &text[..floor_char_boundary(text, offset)];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

fn floor_char_boundary(s: &str, mut i: usize) -> usize {
    while i > 0 && !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

pub use digest::{hex, sha256_hex};

#[cfg(test)]
mod tests;
