//! The protocol file as written: the TOML tables serde reads, before anything is resolved.

use std::collections::BTreeMap;

use serde::Deserialize;
use toml::Spanned;

use super::predicate::{Glob, Pattern, Predicate};
use super::vars::Vars;
use super::{tasks, ForEach, Guards, MissingAs, TasksSpec};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProtocol {
    pub(super) schema_version: Spanned<u32>,
    pub(super) id: String,
    pub(super) version: String,
    pub(super) title: String,
    #[serde(default)]
    pub(super) description: String,
    #[serde(default)]
    pub(super) globs: RawGlobs,
    pub(super) tracker: Option<Spanned<RawTracker>>,
    pub(super) verdict: Option<Spanned<RawVerdict>>,
    pub(super) tasks: Option<Spanned<TasksSpec>>,
    #[serde(default, rename = "grade")]
    pub(super) grades: Vec<Spanned<tasks::RawGrade>>,
    pub(super) guards: Option<Spanned<Guards>>,
    #[serde(default)]
    pub(super) vars: BTreeMap<String, Spanned<Vars>>,
    #[serde(rename = "pass")]
    pub(super) passes: Vec<Spanned<RawPass>>,
    #[serde(rename = "check")]
    pub(super) checks: Vec<Spanned<RawCheck>>,
}

/// `[tracker]`: the build directory's execution tracker.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTracker {
    pub(super) file: String,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGlobs {
    pub(super) variant_marker: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawVerdict {
    pub(super) files: Vec<Glob>,
    pub(super) pattern: Pattern,
    pub(super) complete: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPass {
    pub(super) id: Spanned<String>,
    pub(super) title: String,
    #[serde(default)]
    pub(super) optional: bool,
    #[serde(default)]
    pub(super) vars: Option<Spanned<String>>,
    pub(super) for_each: Option<ForEach>,
    pub(super) trigger: Predicate,
    pub(super) deadline: Option<Predicate>,
    pub(super) checks: Vec<Spanned<String>>,
    #[serde(default)]
    pub(super) repeat: Vec<RawRepeat>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawRepeat {
    pub(super) passes: Vec<Spanned<String>>,
    pub(super) vars: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCheck {
    pub(super) id: Spanned<String>,
    /// `blocking`, `significant`, or a `${var}` of the main variables holding one of them or
    /// `off` (the check is SKIP).
    pub(super) severity: Spanned<String>,
    pub(super) title: String,
    pub(super) description: String,
    pub(super) action: String,
    pub(super) recommendation: String,
    #[serde(default)]
    pub(super) missing: MissingAs,
    pub(super) tag: Option<String>,
    #[serde(default)]
    pub(super) veto: bool,
    pub(super) deadline: Option<Predicate>,
    pub(super) when: Option<Predicate>,
    pub(super) predicate: Predicate,
}
