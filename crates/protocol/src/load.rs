//! Loading a protocol: the TOML file format as written (`Raw*`), strict parsing with located
//! errors, and the resolution of every pass and check instance (variables substituted,
//! predicates validated), so nothing after loading fails on a mistake in the protocol.

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::path::Path;
use std::sync::Arc;

use sha2::{Digest, Sha256};
use toml::Spanned;

use super::instance::{any_leaf, instance, instantiate_checked, within, PredicateError};
use super::predicate::Predicate;
use super::raw::{RawCheck, RawPass, RawProtocol};
use super::vars::{self, Vars};
use super::{
    hex, line_col, overrides, tasks, CheckDef, Lines, Pass, Protocol, ProtocolError, Severity,
    Subject, TaskRules, VerdictSpec, DEFAULT_ID, EMBEDDED, MAIN_VARIANT, SCHEMA_VERSION,
};

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

    /// Whether `spec` names an embedded protocol that judges task records (a `[tasks]` table),
    /// known without parsing it: a caller can start opening the workspace while the protocol
    /// loads.
    pub fn embedded_judges_records(spec: &str) -> bool {
        embedded_judges_records(spec) == Some(true)
    }

    /// Whether `spec` names an embedded protocol that judges a build directory (no `[tasks]`
    /// table), known without parsing it: a caller can start listing the directory while the
    /// protocol loads.
    pub fn embedded_lists_build(spec: &str) -> bool {
        embedded_judges_records(spec) == Some(false)
    }

    pub fn load_file(path: &Path) -> Result<Protocol, ProtocolError> {
        let text = crate::named::read_text(path, "protocol file")?;
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
        let tracker = tracker(&raw, &err_at)?;
        let defs = check_defs(&raw, text, &err_at)?;
        let passes = passes(&raw, text, (&subject, &tracker), &defs, &err_at)?;
        kind_needs(&passes, &subject, &defs, &err_at)?;

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
            tracker,
            subject,
            passes,
            overrides: overridden,
        })
    }
}

/// What `err_at` makes: a protocol error at a span of the text.
type ErrAt<'a> = dyn Fn(Option<Range<usize>>, String) -> ProtocolError + 'a;

/// The check definitions, by id, each with its table as written.
type Defs<'r> = BTreeMap<String, (Arc<CheckDef>, &'r Spanned<RawCheck>)>;

/// The check definitions: ids unique and not empty, a veto only on a BLOCKING check.
fn check_defs<'r>(
    raw: &'r RawProtocol,
    text: &str,
    err_at: &ErrAt<'_>,
) -> Result<Defs<'r>, ProtocolError> {
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
        let (severity, off) = severity(&c.severity, &id, raw, err_at)?;
        if c.veto && (severity != Severity::Blocking || off.is_some()) {
            return Err(err_at(
                Some(c.id.span()),
                format!("check `{id}`: a veto must be `severity = \"blocking\"`"),
            ));
        }
        let def = CheckDef {
            id: id.clone(),
            severity,
            off,
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
    Ok(defs)
}

/// A check's severity as written, or as the main variables say when it is a `${var}`:
/// `blocking`, `significant`, or (through a variable only) `off`, which makes the check SKIP
/// with the variable named as why.
fn severity(
    written: &Spanned<String>,
    id: &str,
    raw: &RawProtocol,
    err_at: &ErrAt<'_>,
) -> Result<(Severity, Option<String>), ProtocolError> {
    let text = written.get_ref().trim();
    let var = text
        .strip_prefix("${")
        .and_then(|s| s.strip_suffix('}'))
        .filter(|n| !n.is_empty() && !n.contains(['$', '{', '}']));
    let value = match var {
        Some(name) => raw
            .vars
            .get(MAIN_VARIANT)
            .and_then(|v| v.get_ref().get(name))
            .and_then(|v| v.as_str())
            .ok_or_else(|| {
                err_at(
                    Some(written.span()),
                    format!("check `{id}`: severity `{text}` names no string variable of [vars.{MAIN_VARIANT}]"),
                )
            })?,
        None => text,
    };
    match (value, var) {
        ("blocking", _) => Ok((Severity::Blocking, None)),
        ("significant", _) => Ok((Severity::Significant, None)),
        ("off", Some(name)) => Ok((Severity::Significant, Some(format!("`{name} = \"off\"`")))),
        _ => Err(err_at(
            Some(written.span()),
            match var {
                Some(name) => format!("check `{id}`: `{name} = \"{value}\"`: a severity is \"blocking\", \"significant\" or \"off\""),
                None => format!("check `{id}`: severity `{value}`: write \"blocking\" or \"significant\" (or a `${{var}}` of [vars.{MAIN_VARIANT}] holding one of them or \"off\")"),
            },
        )),
    }
}

/// The passes: ids unique, every reference known, each check in exactly one pass, and every
/// check instance made (its variant's variables substituted; a `repeat` adds the repeated
/// passes' checks under another variant).
fn passes(
    raw: &RawProtocol,
    text: &str,
    (subject, tracker): (&Subject, &str),
    defs: &Defs<'_>,
    err_at: &ErrAt<'_>,
) -> Result<Vec<Pass>, ProtocolError> {
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
        let at_pass = |m: String| err_at(Some(spanned.span()), format!("in pass `{pass_id}`: {m}"));
        if p.for_each.is_some() && matches!(subject, Subject::Build(_)) {
            return Err(at_pass(
                "`for_each = \"task\"` needs a `[tasks]` table".into(),
            ));
        }
        let invalid = |e: PredicateError| at_pass(e.to_string());
        let trigger = instantiate_checked(&p.trigger, vars).map_err(invalid)?;
        let deadline = p
            .deadline
            .as_ref()
            .map(|d| instantiate_checked(d, vars))
            .transpose()
            .map_err(invalid)?;
        let mut checks = Vec::new();
        for r in &p.checks {
            let (def, raw_check) = defs.get(r.get_ref().trim()).ok_or_else(|| {
                err_at(
                    Some(r.span()),
                    format!("pass `{pass_id}` names unknown check `{}`", r.get_ref()),
                )
            })?;
            if let Some(other) = used.insert(def.id.as_str(), pass_id_str(&raw.passes, &pass_id)) {
                return Err(err_at(
                    Some(r.span()),
                    format!("check `{}` is already in pass `{other}`", def.id),
                ));
            }
            checks.push(instance(
                text,
                def,
                raw_check,
                (vars, variant_name),
                (deadline.as_ref(), tracker),
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
                            (rep_vars, rep.vars.get_ref()),
                            (src_deadline.as_ref(), tracker),
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
    for (id, (_, spanned)) in defs {
        if !used.contains_key(id.as_str()) {
            return Err(err_at(
                Some(spanned.span()),
                format!("check `{id}` is not in any pass (add it to a pass's `checks`)"),
            ));
        }
    }
    Ok(passes)
}

/// What a protocol of one kind cannot ask: without `[verdict]` the pipeline is never known
/// complete (it completes at `--final`, `--exit-with` or the timeout); without `[tasks]` there
/// is no task attempt whose changed files `parses` could judge.
fn kind_needs(
    passes: &[Pass],
    subject: &Subject,
    defs: &Defs<'_>,
    err_at: &ErrAt<'_>,
) -> Result<(), ProtocolError> {
    // What a protocol without `[verdict]` or `[tasks]` cannot ask: the pipeline is never
    // known complete (it completes at `--final`, `--exit-with` or the timeout), and there
    // is no task attempt whose changed files `parses` could judge.
    for pass in passes {
        let preds =
            std::iter::once((&pass.trigger, None)).chain(pass.checks.iter().flat_map(|c| {
                std::iter::once(&c.predicate)
                    .chain(c.deadline.as_ref())
                    .chain(c.when.as_ref())
                    .map(move |p| (p, Some(c.def.id.as_str())))
            }));
        for (p, check) in preds.chain(pass.deadline.iter().map(|d| (d, None))) {
            let problem = if !matches!(subject, Subject::Build(Some(_)))
                && any_leaf(p, &|l| {
                    matches!(l, Predicate::Complete(_) | Predicate::Verdict(_))
                }) {
                Some("`complete` and `verdict` need a `[verdict]` table (how the pipeline's verdict is read); without one the pipeline completes only at `verify --final`, `watch --exit-with` or `--timeout`")
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
    Ok(())
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

/// The file name of the build directory's execution tracker (what the tracker predicates read):
/// `[tracker] file`, else [`super::DEFAULT_TRACKER`]. A name at the top of the build directory:
/// no path, and none of the referee's own `OBSERVER-*` files.
fn tracker(raw: &RawProtocol, err_at: &ErrAt<'_>) -> Result<String, ProtocolError> {
    let Some(t) = &raw.tracker else {
        return Ok(super::DEFAULT_TRACKER.to_string());
    };
    let file = &t.get_ref().file;
    let plain = !file.trim().is_empty()
        && file.trim() == file
        && !file.contains(['/', '\\'])
        && file != "."
        && file != ".."
        // The referee's own files (`OBSERVER-*`, and the temp files renamed into place).
        && !file.starts_with("OBSERVER-")
        && !file.starts_with(".OBSERVER-");
    if !plain {
        return Err(err_at(
            Some(t.span()),
            format!("`tracker.file = {file:?}` must be the name of a file at the top of the build directory, such as `EXECUTION-TRACKER.md` (no path, not an `OBSERVER-*` name)"),
        ));
    }
    Ok(file.clone())
}

fn pass_id_str<'a>(passes: &'a [Spanned<RawPass>], id: &str) -> &'a str {
    passes
        .iter()
        .map(|p| p.get_ref().id.get_ref().as_str())
        .find(|p| *p == id)
        .unwrap_or("")
}

/// Whether the embedded protocol `spec` names judges task records, from its text alone
/// (`None`: no embedded protocol has that id). `tests::embedded_subjects_as_parsed` holds it
/// to each embedded protocol's parsed subject.
fn embedded_judges_records(spec: &str) -> Option<bool> {
    EMBEDDED
        .iter()
        .find(|(id, _, _)| *id == spec)
        .map(|(_, _, text)| text.lines().any(|l| l.trim_end() == "[tasks]"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The shortcuts say what parsing says, for every embedded protocol; never for a file.
    #[test]
    fn embedded_subjects_as_parsed() {
        let mut records = 0;
        for (id, name, _) in EMBEDDED {
            let parsed = Protocol::load(id).expect("embedded protocols load");
            let judges = matches!(parsed.subject, Subject::Workspace(_));
            let lists = matches!(parsed.subject, Subject::Build(_));
            assert_eq!(Protocol::embedded_judges_records(id), judges, "{id}");
            assert_eq!(Protocol::embedded_lists_build(id), lists, "{id}");
            for file in [*name, &format!("./{name}")] {
                assert!(!Protocol::embedded_judges_records(file), "{file}: a file");
                assert!(!Protocol::embedded_lists_build(file), "{file}: a file");
            }
            records += usize::from(judges);
        }
        assert!(
            records > 0 && records < EMBEDDED.len(),
            "both kinds are embedded"
        );
        assert!(!Protocol::embedded_judges_records("no-such-protocol"));
        assert!(!Protocol::embedded_lists_build("no-such-protocol"));
    }
}
