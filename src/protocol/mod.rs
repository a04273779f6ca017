//! What the protocol says: the TOML protocol format, strict loading and validation, and
//! the embedded protocols. A loaded [`Protocol`] is fully resolved — every check instance
//! of every pass and variant has its predicate, deadline and `when` instantiated and every
//! glob and pattern validated — so nothing after loading fails on a mistake in the protocol
//! (a pattern past the regex size limit is judged INCONCLUSIVE when it is first compiled).
//! This module never looks at a build directory.

pub mod explain;
pub mod glob;
pub mod inputs;
pub mod memo;
pub mod overrides;
pub mod pattern;
pub mod predicate;
pub mod secrets;
pub mod tasks;
pub mod vars;
mod with_secrets;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use sha2::{Digest, Sha256};
use toml::Spanned;

use predicate::{Glob, Pattern, Predicate, TimeRef};
pub use tasks::{Grade, GradeWhen, Guards, Outcome, TaskRules, TasksSpec};
use vars::Vars;

/// The schema version of protocol files this referee reads.
pub const SCHEMA_VERSION: u32 = 1;

/// The protocols compiled into the binary: (id, file name, text).
pub const EMBEDDED: &[(&str, &str, &str)] = &[
    (
        "d10",
        "protocols/d10.toml",
        include_str!("../../protocols/d10.toml"),
    ),
    (
        "code-change",
        "protocols/code-change.toml",
        include_str!("../../protocols/code-change.toml"),
    ),
];

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
    #[error("cannot read protocol file `{path}`")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A path that is no protocol file to read: a directory, a device, a huge file.
    #[error("cannot read protocol file `{path}`: {why}")]
    NotAFile { path: String, why: &'static str },
    /// A relative path where secret rules are named (they must not be read from the workspace).
    #[error("secret rules `{0}`: give `embedded` or an absolute path")]
    SecretsSpec(String),
    /// A `--vars`/`--set`/`--protect` that does not fit the protocol.
    #[error("{0}")]
    Overrides(String),
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

/// How the pipeline's verdict is found (SPEC §2.3).
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
    /// What it judges: a build directory or a workspace's task records.
    pub subject: Subject,
    pub passes: Vec<Pass>,
    /// The variables `--vars`/`--set`/`--protect` changed, as resolved (empty: none).
    pub overrides: Vec<overrides::Resolved>,
}

// ---- the file format -------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProtocol {
    schema_version: Spanned<u32>,
    id: String,
    version: String,
    title: String,
    #[serde(default)]
    description: String,
    #[serde(default)]
    globs: RawGlobs,
    verdict: Option<Spanned<RawVerdict>>,
    tasks: Option<Spanned<TasksSpec>>,
    #[serde(default, rename = "grade")]
    grades: Vec<Spanned<tasks::RawGrade>>,
    guards: Option<Spanned<Guards>>,
    #[serde(default)]
    vars: BTreeMap<String, Spanned<Vars>>,
    #[serde(rename = "pass")]
    passes: Vec<Spanned<RawPass>>,
    #[serde(rename = "check")]
    checks: Vec<Spanned<RawCheck>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawGlobs {
    variant_marker: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawVerdict {
    files: Vec<Glob>,
    pattern: Pattern,
    complete: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPass {
    id: Spanned<String>,
    title: String,
    #[serde(default)]
    optional: bool,
    #[serde(default)]
    vars: Option<Spanned<String>>,
    for_each: Option<ForEach>,
    trigger: Predicate,
    deadline: Option<Predicate>,
    checks: Vec<Spanned<String>>,
    #[serde(default)]
    repeat: Vec<RawRepeat>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRepeat {
    passes: Vec<Spanned<String>>,
    vars: Spanned<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCheck {
    id: Spanned<String>,
    severity: Severity,
    title: String,
    description: String,
    action: String,
    recommendation: String,
    #[serde(default)]
    missing: MissingAs,
    tag: Option<String>,
    #[serde(default)]
    veto: bool,
    deadline: Option<Predicate>,
    when: Option<Predicate>,
    predicate: Predicate,
}

const MAIN_VARIANT: &str = "main";

impl Protocol {
    /// Loads an embedded protocol by id, or a protocol file by path.
    pub fn load(spec: &str) -> Result<Protocol, ProtocolError> {
        if let Some((_, name, text)) = EMBEDDED.iter().find(|(id, _, _)| *id == spec) {
            return Protocol::parse(text, &format!("embedded:{name}"));
        }
        let path = Path::new(spec);
        if !path.exists() && !spec.contains(['/', '.']) {
            return Err(ProtocolError::Unknown(spec.to_string()));
        }
        Protocol::load_file(path)
    }

    pub fn load_file(path: &Path) -> Result<Protocol, ProtocolError> {
        let io = |source: std::io::Error| ProtocolError::Io {
            path: path.display().to_string(),
            source,
        };
        let not_a_file = |why| ProtocolError::NotAFile {
            path: path.display().to_string(),
            why,
        };
        let meta = std::fs::metadata(path).map_err(io)?;
        if !meta.is_file() {
            return Err(not_a_file("not a regular file"));
        }
        if meta.len() > 4 << 20 {
            return Err(not_a_file("larger than 4 MiB"));
        }
        let bytes = std::fs::read(path).map_err(io)?;
        let text = String::from_utf8(bytes).map_err(|_| ProtocolError::Invalid {
            origin: path.display().to_string(),
            line: 1,
            column: 1,
            message: "protocol file is not valid UTF-8".into(),
        })?;
        Protocol::parse(&text, &path.display().to_string())
    }

    /// The default embedded protocol.
    pub fn default_protocol() -> Result<Protocol, ProtocolError> {
        Protocol::load(DEFAULT_ID)
    }

    /// Parses and validates protocol text; `origin` names it in error messages.
    pub fn parse(text: &str, origin: &str) -> Result<Protocol, ProtocolError> {
        Protocol::parse_with(text, origin, &overrides::Overrides::default())
    }

    /// As [`Protocol::parse`], with a project's overrides applied to the variables first.
    pub fn parse_with(
        text: &str,
        origin: &str,
        overrides: &overrides::Overrides,
    ) -> Result<Protocol, ProtocolError> {
        let err_at = |span: Option<Range<usize>>, message: String| {
            let (line, column) = line_col(text, span.map_or(0, |s| s.start));
            ProtocolError::Invalid {
                origin: origin.to_string(),
                line,
                column,
                message,
            }
        };
        let mut raw: RawProtocol = toml::from_str(text)
            .map_err(|e| err_at(within(text, e.span(), e.message()), e.message().to_string()))?;
        let overridden = overrides
            .apply(&mut raw.vars)
            .map_err(ProtocolError::Overrides)?;

        if *raw.schema_version.get_ref() != SCHEMA_VERSION {
            return Err(err_at(
                Some(raw.schema_version.span()),
                format!(
                    "unsupported schema_version `{}` (this referee reads {SCHEMA_VERSION})",
                    raw.schema_version.get_ref()
                ),
            ));
        }
        for (name, vars) in &raw.vars {
            vars::validate(vars.get_ref())
                .map_err(|m| err_at(Some(vars.span()), format!("in [vars.{name}]: {m}")))?;
        }
        let subject = subject(&mut raw, &err_at)?;
        let empty = Vars::new();
        let variant = |name: &Spanned<String>| -> Result<&Vars, ProtocolError> {
            raw.vars
                .get(name.get_ref())
                .map(|v| v.get_ref())
                .ok_or_else(|| {
                    err_at(
                        Some(name.span()),
                        format!(
                            "unknown variant `{}` (no [vars.{}] table)",
                            name.get_ref(),
                            name.get_ref()
                        ),
                    )
                })
        };
        let main_vars = raw.vars.get(MAIN_VARIANT).map_or(&empty, |v| v.get_ref());

        // Check definitions, by id.
        let lines = Lines::new(text);
        let mut defs: BTreeMap<String, (Arc<CheckDef>, &Spanned<RawCheck>)> = BTreeMap::new();
        for spanned in &raw.checks {
            let c = spanned.get_ref();
            let id = c.id.get_ref().trim().to_string();
            if id.is_empty() {
                return Err(err_at(Some(c.id.span()), "empty check id".into()));
            }
            if defs.contains_key(&id) {
                return Err(err_at(
                    Some(c.id.span()),
                    format!("duplicate check id `{id}`"),
                ));
            }
            if c.veto && c.severity != Severity::Blocking {
                return Err(err_at(
                    Some(c.id.span()),
                    format!("check `{id}`: a veto must be `severity = \"blocking\"`"),
                ));
            }
            let def = CheckDef {
                id: id.clone(),
                severity: c.severity,
                title: c.title.clone(),
                description: c.description.clone(),
                action: c.action.clone(),
                recommendation: c.recommendation.clone(),
                missing: c.missing,
                tag: c.tag.clone(),
                veto: c.veto,
                line: lines.line(spanned.span().start),
            };
            defs.insert(id, (Arc::new(def), spanned));
        }

        // Passes: ids, references, instances.
        let mut pass_ids = BTreeSet::new();
        for p in &raw.passes {
            let id = p.get_ref().id.get_ref();
            if !pass_ids.insert(id.clone()) {
                return Err(err_at(
                    Some(p.get_ref().id.span()),
                    format!("duplicate pass id `{id}`"),
                ));
            }
        }
        let mut used: BTreeMap<&str, &str> = BTreeMap::new();
        let mut passes = Vec::new();
        for spanned in &raw.passes {
            let p = spanned.get_ref();
            let pass_id = p.id.get_ref().clone();
            let vars = match &p.vars {
                Some(name) => variant(name)?,
                None => main_vars,
            };
            let variant_name = p
                .vars
                .as_ref()
                .map_or(MAIN_VARIANT, |n| n.get_ref().as_str());
            let at_pass =
                |m: String| err_at(Some(spanned.span()), format!("in pass `{pass_id}`: {m}"));
            if p.for_each.is_some() && matches!(subject, Subject::Build(_)) {
                return Err(at_pass(
                    "`for_each = \"task\"` needs a `[tasks]` table".into(),
                ));
            }
            let trigger = instantiate_checked(&p.trigger, vars).map_err(at_pass)?;
            let deadline = p
                .deadline
                .as_ref()
                .map(|d| instantiate_checked(d, vars))
                .transpose()
                .map_err(at_pass)?;
            let mut checks = Vec::new();
            for r in &p.checks {
                let (def, raw_check) = defs.get(r.get_ref().trim()).ok_or_else(|| {
                    err_at(
                        Some(r.span()),
                        format!("pass `{pass_id}` names unknown check `{}`", r.get_ref()),
                    )
                })?;
                if let Some(other) =
                    used.insert(def.id.as_str(), pass_id_str(&raw.passes, &pass_id))
                {
                    return Err(err_at(
                        Some(r.span()),
                        format!("check `{}` is already in pass `{other}`", def.id),
                    ));
                }
                checks.push(instance(
                    text,
                    def,
                    raw_check,
                    vars,
                    variant_name,
                    deadline.as_ref(),
                    &err_at,
                )?);
            }
            for rep in &p.repeat {
                let rep_vars = variant(&rep.vars)?;
                for rp in &rep.passes {
                    let src = raw
                        .passes
                        .iter()
                        .map(|s| s.get_ref())
                        .find(|s| s.id.get_ref() == rp.get_ref())
                        .ok_or_else(|| {
                            err_at(
                                Some(rp.span()),
                                format!("pass `{pass_id}` repeats unknown pass `{}`", rp.get_ref()),
                            )
                        })?;
                    if src.id.get_ref() == &pass_id {
                        return Err(err_at(
                            Some(rp.span()),
                            format!("pass `{pass_id}` cannot repeat itself"),
                        ));
                    }
                    // A repeat is due at the variant's analogue of the pass's deadline; a
                    // pass due "at once" is due when it runs, so its repeat is due when the
                    // variant's trigger holds.
                    let src_deadline = src
                        .deadline
                        .as_ref()
                        .or(Some(&src.trigger))
                        .map(|d| instantiate_checked(d, rep_vars))
                        .transpose()
                        .map_err(|m| {
                            err_at(
                                Some(rp.span()),
                                format!("in pass `{}`: {m}", src.id.get_ref()),
                            )
                        })?;
                    for r in &src.checks {
                        if let Some((def, raw_check)) = defs.get(r.get_ref().trim()) {
                            checks.push(instance(
                                text,
                                def,
                                raw_check,
                                rep_vars,
                                rep.vars.get_ref(),
                                src_deadline.as_ref(),
                                &err_at,
                            )?);
                        }
                    }
                }
            }
            passes.push(Pass {
                id: pass_id.clone(),
                title: p.title.clone(),
                optional: p.optional,
                trigger,
                deadline,
                for_each: p.for_each,
                checks,
            });
        }
        for (id, (_, spanned)) in &defs {
            if !used.contains_key(id.as_str()) {
                return Err(err_at(
                    Some(spanned.span()),
                    format!("check `{id}` is not in any pass (add it to a pass's `checks`)"),
                ));
            }
        }

        // What a protocol without `[verdict]` or `[tasks]` cannot ask: the pipeline is never
        // known complete (it completes at `--final`, `--exit-with` or the timeout), and there
        // is no task attempt whose changed files `parses` could judge.
        for pass in &passes {
            let preds =
                std::iter::once((&pass.trigger, None)).chain(pass.checks.iter().flat_map(|c| {
                    std::iter::once(&c.predicate)
                        .chain(c.deadline.as_ref())
                        .chain(c.when.as_ref())
                        .map(move |p| (p, Some(c.def.id.as_str())))
                }));
            for (p, check) in preds.chain(pass.deadline.iter().map(|d| (d, None))) {
                let problem = if !matches!(subject, Subject::Build(Some(_)))
                    && any_leaf(p, &|l| matches!(l, Predicate::Complete(_)))
                {
                    Some("`complete` needs a `[verdict]` table (how the pipeline's verdict is read); without one the pipeline completes only at `verify --final`, `watch --exit-with` or `--timeout`")
                } else if matches!(subject, Subject::Build(_))
                    && any_leaf(
                        p,
                        &|l| matches!(l, Predicate::Parses(x) if x.files.is_none()),
                    )
                {
                    Some("`parses` needs `files` (the globs of the files to parse) in a protocol without `[tasks]`")
                } else {
                    None
                };
                if let Some(m) = problem {
                    let span = check.and_then(|id| defs.get(id)).map(|(_, s)| s.span());
                    let place = match check {
                        Some(id) => format!("in check `{id}`"),
                        None => format!("in pass `{}`", pass.id),
                    };
                    return Err(err_at(span, format!("{place}: {m}")));
                }
            }
        }

        let sha256 = hex(&Sha256::digest(text.as_bytes()));
        Ok(Protocol {
            id: raw.id,
            version: raw.version,
            title: raw.title,
            description: raw.description,
            origin: origin.to_string(),
            sha256,
            text: text.to_string(),
            variant_marker: raw.globs.variant_marker.filter(|m| !m.is_empty()),
            subject,
            passes,
            overrides: overridden,
        })
    }

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

    /// Every instance of a check, with the pass it runs in.
    pub fn instances_of(&self, id: &str) -> Vec<(&Pass, &CheckInstance)> {
        self.passes
            .iter()
            .flat_map(|p| p.checks.iter().map(move |c| (p, c)))
            .filter(|(_, c)| c.def.id.eq_ignore_ascii_case(id))
            .collect()
    }
}

/// The kind of protocol the raw tables make, taken out of `raw`: `[verdict]` (or nothing) for
/// a build directory, `[tasks]` with its `[[grade]]`s and `[guards]` for a workspace.
fn subject(
    raw: &mut RawProtocol,
    err_at: &dyn Fn(Option<Range<usize>>, String) -> ProtocolError,
) -> Result<Subject, ProtocolError> {
    let grades = std::mem::take(&mut raw.grades);
    let (verdict, records, guards) = (raw.verdict.take(), raw.tasks.take(), raw.guards.take());
    let Some(records) = records else {
        if let Some(g) = grades.first() {
            return Err(err_at(
                Some(g.span()),
                "`[[grade]]` needs a `[tasks]` table (grades judge task attempts)".into(),
            ));
        }
        if let Some(g) = &guards {
            return Err(err_at(
                Some(g.span()),
                "`[guards]` needs a `[tasks]` table (guards hold across a task's attempts)".into(),
            ));
        }
        let Some(v) = verdict else {
            return Ok(Subject::Build(None));
        };
        let span = v.span();
        let v = v.into_inner();
        if v.files.is_empty() {
            return Err(err_at(
                Some(span),
                "`verdict.files` must name at least one glob".into(),
            ));
        }
        return Ok(Subject::Build(Some(VerdictSpec {
            files: v.files,
            pattern: v.pattern,
            complete: v.complete.iter().map(|s| s.trim().to_uppercase()).collect(),
        })));
    };
    if let Some(v) = verdict {
        return Err(err_at(
            Some(v.span()),
            "a protocol has `[verdict]` (a build directory's pipeline) or `[tasks]` (a workspace's task records), not both: split it into two protocols".into(),
        ));
    }
    let spans: Vec<Range<usize>> = grades.iter().map(|g| g.span()).collect();
    let guards_span = guards.as_ref().map(|g| g.span());
    let tasks_span = records.span();
    let rules = TaskRules::new(
        records.into_inner(),
        grades.into_iter().map(|g| g.into_inner()).collect(),
        guards.map(|g| g.into_inner()),
    )
    .map_err(|(at, m)| {
        let span = match at {
            tasks::At::Tasks => Some(tasks_span),
            tasks::At::Grade(i) => spans.get(i).cloned(),
            tasks::At::Guards => guards_span,
        };
        err_at(span, m)
    })?;
    Ok(Subject::Workspace(rules))
}

fn pass_id_str<'a>(passes: &'a [Spanned<RawPass>], id: &str) -> &'a str {
    passes
        .iter()
        .map(|p| p.get_ref().id.get_ref().as_str())
        .find(|p| *p == id)
        .unwrap_or("")
}

#[allow(
    clippy::too_many_arguments,
    reason = "one check instance is made of this many independent parts of the protocol"
)]
fn instance(
    text: &str,
    def: &Arc<CheckDef>,
    raw: &Spanned<RawCheck>,
    vars: &Vars,
    variant: &str,
    pass_deadline: Option<&Predicate>,
    err_at: &dyn Fn(Option<Range<usize>>, String) -> ProtocolError,
) -> Result<CheckInstance, ProtocolError> {
    let c = raw.get_ref();
    let located = |m: String| {
        // Point at the offending value when it can be found inside the check, else at the check.
        // The check's text runs from its header to the next array-of-tables header.
        let span = raw.span();
        let end = text[span.start + 1..]
            .find("\n[[")
            .map_or(text.len(), |i| span.start + 1 + i)
            .max(span.end);
        let pos = quoted_value(&m)
            .and_then(|needle| {
                text[span.start..end]
                    .find(needle.as_str())
                    .map(|i| span.start + i)
            })
            .map(|p| p..p);
        let suffix = if variant == MAIN_VARIANT {
            String::new()
        } else {
            format!(" (variant `{variant}`)")
        };
        err_at(
            pos.or(Some(span)),
            format!("in check `{}`{suffix}: {m}", def.id),
        )
    };
    let predicate = instantiate_checked(&c.predicate, vars).map_err(located)?;
    let description = vars::prose(&def.description, vars)
        .map_err(|m| located(format!("in `description`: {m}")))?;
    // The pass's deadline comes instantiated for this variant already.
    let deadline = match &c.deadline {
        Some(d) => Some(instantiate_checked(d, vars).map_err(located)?),
        None => pass_deadline.cloned(),
    };
    let when = c
        .when
        .as_ref()
        .map(|w| instantiate_checked(w, vars))
        .transpose()
        .map_err(located)?;
    let mut parts = vec![&predicate];
    parts.extend(deadline.as_ref());
    parts.extend(when.as_ref());
    let inputs = inputs::Inputs::of(&parts);
    Ok(CheckInstance {
        def: def.clone(),
        variant: variant.to_string(),
        description,
        predicate,
        deadline,
        when,
        inputs,
    })
}

/// Where a load error points: toml gives the span of the value being read when a check failed
/// (for a rule in an array, the whole array); when the message starts with the offending value
/// in backticks and that value occurs inside the span, its first occurrence there.
fn within(text: &str, span: Option<Range<usize>>, message: &str) -> Option<Range<usize>> {
    let span = span?;
    let found = message
        .starts_with('`')
        .then(|| quoted_value(message))
        .flatten()
        .and_then(|needle| text.get(span.clone())?.find(needle.as_str()))
        .map(|i| span.start + i);
    Some(found.map_or(span, |p| p..p))
}

/// The first backticked value of an error message (`invalid regex `(`: …` → `(`).
fn quoted_value(message: &str) -> Option<String> {
    let start = message.find('`')? + 1;
    let end = message[start..].find('`')? + start;
    let v = &message[start..end];
    (!v.is_empty()).then(|| v.to_string())
}

fn instantiate_checked(p: &Predicate, vars: &Vars) -> Result<Predicate, String> {
    let p = vars::instantiate(p, vars)?;
    validate(&p)?;
    Ok(p)
}

/// Whether any leaf of `p` (inside `all`, `any`, `not`, `if`, `fail_if_missing`) satisfies `f`.
fn any_leaf(p: &Predicate, f: &dyn Fn(&Predicate) -> bool) -> bool {
    use Predicate as P;
    match p {
        P::All(v) | P::Any(v) => v.iter().any(|q| any_leaf(q, f)),
        P::Not(q) | P::FailIfMissing(q) => any_leaf(q, f),
        P::If(i) => {
            any_leaf(&i.cond, f)
                || any_leaf(&i.then, f)
                || i.otherwise.as_ref().is_some_and(|e| any_leaf(e, f))
        }
        leaf => f(leaf),
    }
}

/// Semantic rules serde cannot express.
fn validate(p: &Predicate) -> Result<(), String> {
    use Predicate as P;
    match p {
        P::All(v) | P::Any(v) => {
            if v.is_empty() {
                return Err("`all` / `any` need at least one predicate".into());
            }
            v.iter().try_for_each(validate)
        }
        P::Not(inner) | P::FailIfMissing(inner) => validate(inner),
        P::If(i) => {
            validate(&i.cond)?;
            validate(&i.then)?;
            i.otherwise.as_ref().map_or(Ok(()), validate)
        }
        P::FileSet(f) => {
            if f.key.captures_len() < 2 {
                return Err(format!(
                    "`file_set.key` `{}` needs a capture group for the key",
                    f.key.as_str()
                ));
            }
            Ok(())
        }
        P::TimeOrder(t) => {
            let n = t.chain.len() + t.fields.len();
            if !t.chain.is_empty() && !t.fields.is_empty() {
                return Err("`time_order` takes `chain` or `fields`, not both".into());
            }
            if n < 2 {
                return Err("`time_order` needs at least two elements".into());
            }
            t.chain.iter().try_for_each(validate_time)
        }
        P::HasTime(t) => validate_time(t),
        P::Text(t) => {
            if t.files.is_empty() && t.fields.is_empty() {
                return Err("`text` needs `files` or `fields`".into());
            }
            if let Some(r) = &t.require {
                let n = r.patterns.len() + r.terms.len();
                if n == 0 || r.at_least == 0 || r.at_least > n {
                    return Err(format!(
                        "`require.at_least` `{}` must be between 1 and the number of patterns and terms ({n})",
                        r.at_least
                    ));
                }
            }
            if t.require.is_none()
                && t.forbid.is_empty()
                && t.forbid_terms.is_empty()
                && t.min_chars.is_none()
                && t.extract.is_none()
            {
                return Err(
                    "`text` needs at least one of `require`, `forbid`, `min_chars`, `extract`"
                        .into(),
                );
            }
            Ok(())
        }
        P::Dissimilar(d) if !(0.0..=1.0).contains(&d.threshold) => Err(format!(
            "`threshold` `{}` must be between 0 and 1",
            d.threshold
        )),
        P::FillRate(f) if !(0.0..=1.0).contains(&f.min) => Err(format!(
            "`fill_rate.min` `{}` must be between 0 and 1",
            f.min
        )),
        P::Heading(h) if !(1..=6).contains(&h.level) => {
            Err(format!("heading level `{}` must be 1 to 6", h.level))
        }
        P::Distinct(v) if v.len() < 2 => Err("`distinct` needs at least two fields".into()),
        P::Parses(p) => p.commands.iter().try_for_each(|c| c.validate()),
        P::Json(j) => j.validate(),
        _ => Ok(()),
    }
}

fn validate_time(t: &TimeRef) -> Result<(), String> {
    match t {
        TimeRef::FirstOf(v) if v.is_empty() => {
            Err("`first_of` needs at least one reference".into())
        }
        TimeRef::FirstOf(v) => v.iter().try_for_each(validate_time),
        TimeRef::Earliest(i) | TimeRef::Latest(i) => validate_time(i),
        _ => Ok(()),
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

/// Lowercase hex of a digest.
pub fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    bytes
        .iter()
        .fold(String::with_capacity(bytes.len() * 2), |mut s, b| {
            let _ = write!(s, "{b:02x}");
            s
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreadable_file_keeps_its_io_error() {
        let path = Path::new("/nonexistent-referee-dir/p.toml");
        let e = Protocol::load_file(path).unwrap_err();
        let ProtocolError::Io { source, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        assert_eq!(
            crate::error::chain(&e),
            "cannot read protocol file `/nonexistent-referee-dir/p.toml`: \
             no such file or directory (os error 2)"
        );
        let dir = Protocol::load_file(Path::new("/")).unwrap_err();
        assert_eq!(
            dir.to_string(),
            "cannot read protocol file `/`: not a regular file"
        );
    }

    /// CC-05's command rules are checked when the protocol loads, each error at the rule
    /// (the line and column of its offending value), like every other predicate field.
    #[test]
    fn syntax_command_rules_are_validated_at_load() {
        let cc = EMBEDDED[1].2;
        let rule = r#"{ ext = ".bash", argv = ["bash", "-n", "{path}"], timeout_seconds = 10 }"#;
        let line = cc.lines().position(|l| l.contains(rule)).unwrap() + 1;
        let cases = [
            (
                r#"{ ext = ".bash", argv = ["bash", "-n", "{path}"], timeout_seconds = 0 }"#,
                53,
                "`timeout_seconds = 0`: a syntax command's timeout must be 1 to 600 seconds",
            ),
            (
                r#"{ ext = ".bash", argv = ["bash", "-n", "{path}"], timeout_seconds = 601 }"#,
                53,
                "`timeout_seconds = 601`",
            ),
            (
                r#"{ ext = ".bash", argv = ["bin/lint", "{path}"] }"#,
                29,
                "`bin/lint`: a syntax command's program must be a name looked up on `PATH`",
            ),
            (
                r#"{ ext = ".bash", argv = ["bash", "-n"] }"#,
                12,
                "`.bash`: the syntax command `bash` needs `{path}` in an argument",
            ),
            (
                r#"{ ext = ".bash", argv = [] }"#,
                12,
                "`.bash`: a syntax command needs `argv` with a program",
            ),
            (
                r#"{ ext = "*.sh", argv = ["bash", "-n", "{path}"] }"#,
                12,
                "`*.sh`: a syntax command's `ext` must be a file extension",
            ),
            (
                r#"{ ext = ".bash", argv = ["bash", "{path}"], timeout = "5s" }"#,
                47,
                "unknown field `timeout`, expected one of `ext`, `argv`, `timeout_seconds`",
            ),
        ];
        for (edit, column, message) in cases {
            let text = cc.replacen(rule, edit, 1);
            let e = Protocol::parse(&text, "p.toml").unwrap_err();
            let ProtocolError::Invalid {
                line: l,
                column: c,
                message: m,
                ..
            } = &e
            else {
                panic!("{e:?}")
            };
            assert_eq!((*l, *c), (line, column), "{edit}: {e}");
            assert!(m.starts_with(message), "{edit}: {e}");
        }
        // `parses = false` is refused; a default timeout is filled in; a rule's strings take
        // variables and are validated once substituted.
        let text = cc.replacen("{ task_record = true }", "{ parses = false }", 1);
        let e = Protocol::parse(&text, "p.toml").unwrap_err().to_string();
        assert!(e.contains("`parses = false` judges nothing"), "{e}");
        let text = cc.replacen(
            rule,
            r#"{ ext = ".bash", argv = ["${shell}", "-n", "{path}"] }"#,
            1,
        );
        let e = Protocol::parse(&text, "p.toml").unwrap_err().to_string();
        assert!(e.contains("undefined variable `${shell}`"), "{e}");
        let with_var = |shell: &str| {
            text.replacen(
                "[vars.main]\n",
                &format!("[vars.main]\nshell = \"{shell}\"\n"),
                1,
            )
        };
        let e = Protocol::parse(&with_var("tools/sh"), "p.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("in check `CC-05`: `tools/sh`: a syntax command's program"),
            "{e}"
        );
        let p = Protocol::parse(&with_var("/bin/bash"), "p.toml").unwrap();
        let (_, cc05) = p.instances_of("CC-05")[0];
        let predicate::Predicate::Parses(parses) = &cc05.predicate else {
            panic!("{:?}", cc05.predicate)
        };
        assert_eq!(parses.commands[1].argv, ["/bin/bash", "-n", "{path}"]);
        assert_eq!(
            parses.commands[1].timeout_seconds,
            predicate::SyntaxCommand::DEFAULT_TIMEOUT_SECONDS
        );
    }

    /// `replaces_builtin = true` on a CC-05 command rule reaches the syntax check; it defaults to
    /// false and must be a boolean.
    #[test]
    fn syntax_command_may_replace_the_builtin_parser() {
        let cc = EMBEDDED[1].2;
        let rule = r#"{ ext = ".bash", argv = ["bash", "-n", "{path}"], timeout_seconds = 10 }"#;
        let edit = |with: &str| {
            let tsc = format!(r#"{{ ext = ".ts", argv = ["tsc", "--noEmit", "{{path}}"]{with} }}"#);
            cc.replacen(rule, &format!("{rule},\n  {tsc}"), 1)
        };
        let rules = |text: &str| {
            let p = Protocol::parse(text, "p.toml").unwrap();
            let (_, cc05) = p.instances_of("CC-05")[0];
            let predicate::Predicate::Parses(parses) = &cc05.predicate else {
                panic!("{:?}", cc05.predicate)
            };
            parses.commands.iter().map(|c| c.rule()).collect::<Vec<_>>()
        };
        let replacing = rules(&edit(", replaces_builtin = true"));
        assert_eq!(replacing.len(), 3);
        assert!(replacing[2].replaces_builtin && replacing[2].ext == ".ts");
        assert!(!replacing[0].replaces_builtin && !replacing[1].replaces_builtin);
        assert!(!rules(&edit(""))[2].replaces_builtin);
        let e = Protocol::parse(&edit(r#", replaces_builtin = "yes""#), "p.toml")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("invalid type: string \"yes\", expected a boolean"),
            "{e}"
        );
    }

    /// A description shows the variables it names (CC-01 lists the protected globs), in
    /// `explain` and in the evidence of a pass that has not run; an undefined one is an error.
    #[test]
    fn descriptions_show_their_variables() {
        let p = Protocol::load("code-change").unwrap();
        let text = explain::explain(&p, "CC-01").unwrap();
        assert!(!text.contains("${"), "{text}");
        assert!(
            text.contains("(the orchestrator's own code: **/grind_spawner*.py, **/orchestrator.py, **/roles.py,"),
            "{text}"
        );
        let (_, cc01) = p.instances_of("CC-01")[0];
        assert!(cc01.def.description.contains("${protected}"));
        assert!(!cc01.description.contains("${"), "{}", cc01.description);
        let text = EMBEDDED[1]
            .2
            .replacen("own code: ${protected}", "own code: ${guarded}", 1);
        let e = Protocol::parse(&text, "p.toml").unwrap_err().to_string();
        assert!(
            e.contains("in check `CC-01`: in `description`: undefined variable `${guarded}`"),
            "{e}"
        );
    }

    #[test]
    fn lines_agree_with_line_col() {
        for text in ["", "a", "\n", "ab\ncd\n\nef", "é\nü\n"] {
            let lines = Lines::new(text);
            for offset in 0..=text.len() {
                assert_eq!(
                    lines.line(offset),
                    line_col(text, offset).0,
                    "{text:?} @ {offset}"
                );
            }
        }
    }

    /// Every predicate an evaluation will judge is fully instantiated: no `${var}` left, so
    /// every glob and regex compiles (an uninstantiated deadline never holds).
    #[test]
    fn every_instance_is_fully_instantiated() {
        let p = Protocol::default_protocol().unwrap();
        for pass in &p.passes {
            let mut preds = vec![&pass.trigger];
            preds.extend(pass.deadline.iter());
            for c in &pass.checks {
                preds.push(&c.predicate);
                preds.extend(c.deadline.iter().chain(c.when.iter()));
            }
            for pred in preds {
                let text = serde_json::to_string(pred).unwrap();
                assert!(!text.contains("${"), "pass {}: {text}", pass.id);
            }
        }
    }

    #[test]
    fn repeats_use_the_variant_and_the_source_pass_deadline() {
        let p = Protocol::default_protocol().unwrap();
        let r = p.passes.iter().find(|x| x.id == "R").unwrap();
        let obs19 = r.checks.iter().find(|c| c.def.id == "OBS-19").unwrap();
        assert_eq!(obs19.variant, "refine");
        let deadline = serde_json::to_string(obs19.deadline.as_ref().unwrap()).unwrap();
        assert!(
            deadline.contains("p3b-pa-integrative-refine.md"),
            "{deadline}"
        );
        // Pass 4 is due "at once"; its repeat is due when the REFINE weaver exists.
        let obs26 = r.checks.iter().find(|c| c.def.id == "OBS-26").unwrap();
        let deadline = serde_json::to_string(obs26.deadline.as_ref().unwrap()).unwrap();
        assert!(deadline.contains("p3c-weaver*-refine*.md"), "{deadline}");
        // The main pass 2 deadline names the main auditor reports.
        let two = p.passes.iter().find(|x| x.id == "2").unwrap();
        let obs01 = two.checks.iter().find(|c| c.def.id == "OBS-01").unwrap();
        let deadline = serde_json::to_string(obs01.deadline.as_ref().unwrap()).unwrap();
        assert!(deadline.contains("p3b-pa-auditor-*.md"), "{deadline}");
    }
}
