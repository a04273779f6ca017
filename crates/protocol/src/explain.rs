//! `referee protocol explain CHECK`: a check in plain words — what it reads, when it runs
//! and is due, and what makes it PASS, FAIL or wait — and, without `--protocol`, which of the
//! protocols has the check. Rendering only; judges nothing.

use std::fmt::Write;

use super::predicate::{
    Absent, Builtin, EmptyResult, HeadingPlace, HowMany, KeyCase, Predicate, TimeRef,
};
use super::{MissingAs, Protocol};

/// Describes a predicate as an indented outline.
pub fn describe(p: &Predicate) -> String {
    let mut out = String::new();
    outline(&mut out, p, 0);
    out
}

fn outline(out: &mut String, p: &Predicate, depth: usize) {
    let pad = "  ".repeat(depth);
    use Predicate as P;
    match p {
        P::All(parts) => {
            let _ = writeln!(out, "{pad}- all of:");
            parts.iter().for_each(|q| outline(out, q, depth + 1));
        }
        P::Any(parts) => {
            let _ = writeln!(out, "{pad}- any of:");
            parts.iter().for_each(|q| outline(out, q, depth + 1));
        }
        P::Not(q) => {
            let _ = writeln!(out, "{pad}- not:");
            outline(out, q, depth + 1);
        }
        P::If(i) => {
            let _ = writeln!(out, "{pad}- if:");
            outline(out, &i.cond, depth + 2);
            let _ = writeln!(out, "{pad}  then:");
            outline(out, &i.then, depth + 2);
            if let Some(e) = &i.otherwise {
                let _ = writeln!(out, "{pad}  else:");
                outline(out, e, depth + 2);
            } else {
                let _ = writeln!(out, "{pad}  else: passes");
            }
        }
        P::FailIfMissing(q) => {
            let _ = writeln!(out, "{pad}- (anything missing here FAILs at once):");
            outline(out, q, depth + 1);
        }
        _ => {
            let _ = writeln!(out, "{pad}- {}", leaf(p));
        }
    }
}

fn leaf(p: &Predicate) -> String {
    use Predicate as P;
    let q = |s: &str| format!("`{s}`");
    match p {
        P::Always(true) => "always (at once)".into(),
        P::Always(false) => "never".into(),
        P::Complete(b) => format!("the pipeline is {}complete", if *b { "" } else { "not " }),
        P::Exists(g) => format!(
            "exists: {}",
            g.as_slice().iter().map(|g| q(g.as_str())).collect::<Vec<_>>().join(", ")
        ),
        P::Count(c) => format!(
            "the number of files matching {}{} is{}{}",
            q(c.glob.as_str()),
            c.signature
                .as_ref()
                .map(|s| format!(" that begin with the {} signature", s.name))
                .unwrap_or_default(),
            c.min.map(|m| format!(" >= {m}")).unwrap_or_default(),
            c.max.map(|m| format!(" <= {m}")).unwrap_or_default()
        ),
        P::Verdict(v) => {
            let files = v
                .files
                .as_ref()
                .map_or_else(|| "the verdict files".to_string(), |g| q(g.as_str()));
            match v.is.as_slice() {
                [] => format!("the verdict in {files} can be read (a file there without one: INCONCLUSIVE)"),
                is => format!("a verdict in {files} is {}", is.join(" or ")),
            }
        }
        P::FileSet(f) => format!(
            "files matching {} carry the keys {} exactly once each (key: {}{}); fewer wait, others FAIL",
            q(f.glob.as_str()),
            f.expect.join(", "),
            q(f.key.as_str()),
            if f.ignore_case == KeyCase::Ignored {
                ", any case"
            } else {
                ""
            }
        ),
        P::Filled(f) => format!("tracker fields non-empty: {}", f.as_slice().join(", ")),
        P::SectionFilled(s) => format!("every field row of tracker section {} is non-empty", q(&s.section)),
        P::FieldMatches(f) => format!(
            "{} of tracker fields {} match {}",
            match f.any {
                HowMany::Any => "any",
                HowMany::All => "all",
            },
            f.fields.join(", "),
            q(f.pattern.as_str())
        ),
        P::Column(c) => format!(
            "every filled {} cell of the {} table matches {}",
            q(&c.column),
            q(&c.section),
            q(c.pattern.as_str())
        ),
        P::HasTime(t) => format!("a time is recorded for {}", time(t)),
        P::TimeOrder(t) => {
            let chain: Vec<String> = if t.chain.is_empty() {
                t.fields.clone()
            } else {
                t.chain.iter().map(time).collect()
            };
            let op = t
                .min_gap_seconds
                .map_or(" < ".to_string(), |g| format!(" then >= {g}s later "));
            let absent = match t.absent {
                Absent::Missing => "an unrecorded time waits, then FAILs when due".to_string(),
                Absent::Inconclusive => "an unrecorded time is INCONCLUSIVE when due".to_string(),
                Absent::Skip => format!(
                    "unrecorded times are left out; fewer than {} recorded is INCONCLUSIVE",
                    t.min_present.unwrap_or(2)
                ),
            };
            format!("in time order: {} ({absent}; an unparseable timestamp is INCONCLUSIVE)", chain.join(&op))
        }
        P::Distinct(f) => format!("tracker values differ: {}", f.join(", ")),
        P::Dissimilar(d) => format!(
            "{} and {} are not near-identical (similarity of their words < {}, however wrapped or saved){}",
            q(d.files[0].as_str()),
            q(d.files[1].as_str()),
            d.threshold,
            if d.if_absent == Some(super::predicate::IfAbsent::Pass) {
                "; passes when either is absent"
            } else {
                ""
            }
        ),
        P::Text(t) => {
            let mut parts = Vec::new();
            let mut src: Vec<String> = t.files.iter().map(|g| q(g.as_str())).collect();
            src.extend(t.fields.iter().map(|f| format!("field {f}")));
            if let Some(x) = &t.extract {
                parts.push(format!("a snippet matching {}", q(x.as_str())));
            }
            if let Some(m) = t.min_chars {
                parts.push(format!("of at least {m} characters"));
            }
            if let Some(r) = &t.require {
                let mut all: Vec<String> =
                    r.terms.iter().map(|w| format!("{} (any case)", q(w))).collect();
                all.extend(r.patterns.iter().map(|p| q(p.as_str())));
                parts.push(format!("containing at least {} of {}", r.at_least, all.join(", ")));
            }
            if !t.forbid.is_empty() || !t.forbid_terms.is_empty() {
                let mut all: Vec<String> = t
                    .forbid_terms
                    .iter()
                    .map(|w| format!("{} (any case)", q(w)))
                    .collect();
                all.extend(t.forbid.iter().map(|p| q(p.as_str())));
                parts.push(format!(
                    "with no match anywhere of {} (every hit reported as file:line)",
                    all.join(", ")
                ));
            }
            format!("text of {}: {}", src.join(", "), parts.join(", "))
        }
        P::Heading(h) => format!(
            "every file matching {} has the heading `{} {}`{} (headings in code fences or HTML comments do not count)",
            q(h.files.as_str()),
            "#".repeat(h.level as usize),
            h.text,
            if h.last == HeadingPlace::Last { " as its last heading of that level" } else { "" }
        ),
        P::Json(j) => {
            let tests = j.tests();
            format!(
                "every file matching {} is strict JSON (a key written twice FAILs){}",
                q(j.file.as_str()),
                match (j.path.as_str(), tests.is_empty()) {
                    ("", true) => String::new(),
                    (path, true) => format!(" with a value at `{path}`"),
                    ("", false) => format!(", and the document {}", tests.join(", ")),
                    (path, false) => format!(", and its value at `{path}` {}", tests.join(", ")),
                }
            )
        }
        P::FillRate(f) => format!("tracker fill rate >= {:.0}%", f.min * 100.0),
        P::Gate(g) => format!(
            "gate results {} include {}{}",
            q(g.files.as_str()),
            g.id,
            match (&g.result, g.require_result == EmptyResult::Missing) {
                (Some(r), _) => format!(" with result {r} (absent waits; another result FAILs)"),
                (None, true) => " with a non-empty result".into(),
                (None, false) => " (any result)".into(),
            }
        ),
        P::GateFiles(g) => format!(
            "at least {} gate results file(s) {} exist and every one parses (invalid FAILs with the parse error)",
            g.min_files,
            q(g.files.as_str())
        ),
        P::GateCount(g) => format!("at least {} gate entries in {}", g.min, q(g.files.as_str())),
        P::GateSources(g) => format!(
            "no gate entry in {} has a source containing {} or equal to {}",
            q(g.files.as_str()),
            g.forbid_contains.join("/"),
            g.forbid_equals.join("/")
        ),
        P::TaskRecord(_) => "the task record parses and has the required fields".into(),
        P::Unchanged(u) => format!(
            "no path matching {} is added, modified or removed against the baseline",
            u.globs.iter().map(|g| q(g.as_str())).collect::<Vec<_>>().join(", ")
        ),
        P::ChangesListed(_) => "every change against the baseline (in the task's scope) is listed in the record's `changes`, and every listed change happened".into(),
        P::HashesMatch(_) => "the record's `pre_hashes` match the baseline and its `post_hashes` the files now".into(),
        P::NoLoss(_) => "no file removed unless listed in `removed`, and no changed file emptied".into(),
        P::Parses(p) => {
            let files = match &p.files {
                Some(f) => format!(
                    "every file matching {}",
                    f.as_slice().iter().map(|g| q(g.as_str())).collect::<Vec<_>>().join(", ")
                ),
                None => "every added or modified file".into(),
            };
            let builtin = format!("{files} parses by its type (JSON, TOML, YAML; JavaScript, TypeScript, TSX and declaration files through oxc, with its early errors; Python through tree-sitter, Rust through syn (tree-sitter-rust for a file nested too deep for it), Go through the referee's port of go/parser; the worker's code is never run)");
            if p.commands.is_empty() {
                format!("{builtin}; other types are not judged")
            } else {
                format!(
                    "{builtin}, and by command: {} (exit 0 parses; not installed, timed out or killed is INCONCLUSIVE; a command adds to a built-in parser, the stricter outcome wins); other types are not judged",
                    p.commands
                        .iter()
                        .map(|c| format!(
                            "`.{}` {} within {}s{}",
                            c.ext.trim_start_matches('.'),
                            q(&c.argv.join(" ")),
                            c.timeout_seconds,
                            if c.replaces_builtin == Builtin::Replaced {
                                " (instead of the built-in parser)"
                            } else {
                                ""
                            }
                        ))
                        .collect::<Vec<_>>()
                        .join(", ")
                )
            }
        }
        P::SizeLimit(s) => format!(
            "every added or modified file is within its size limit ({}; any other file {} bytes)",
            s.by_extension.iter().map(|e| format!("{} {} bytes", e.ext, e.max.bytes())).collect::<Vec<_>>().join(", "),
            s.default.bytes()
        ),
        P::AddedLines(a) => format!(
            "no added line matches: {}{}",
            a.forbid
                .iter()
                .map(|f| format!("{} {}", f.name, q(f.pattern.as_str())))
                .chain(a.forbid_patterns.iter().map(|p| q(p.as_str())))
                .collect::<Vec<_>>()
                .join(", "),
            a.secrets.as_ref().map_or(String::new(), |s| format!(
                "; and none holds a secret by the {} rules of {} (private keys, cloud, VCS, chat, payment, registry and AI tokens, JWTs, secret assignments; the evidence names the rule, never the secret)",
                s.rules().len(),
                s.rules().origin()
            ))
        ),
        P::RecordField(r) => format!("the record's {} (first line) matches {}", q(&r.field), q(r.pattern.as_str())),
        P::Style(s) => {
            let mut parts = Vec::new();
            if s.final_newline {
                parts.push("each changed text file ends with a newline");
            }
            if s.trailing_whitespace {
                parts.push("no added line ends in whitespace");
            }
            parts.join(", and ")
        }
        P::Weakened(_) => "no test removed or skipped, no assertion removed from test code, no coverage threshold lowered, no lint or type check suppressed or relaxed, no CI job or step removed or let fail, against the baseline in the task's scope; a path the record gives a reason for in `weakened` (`{\"weakened\": {\"PATH\": \"why\"}}`) is excused and its reason shown".into(),
        P::PathsListed(p) => format!(
            "every path in the {} column of the {} table exists (skipping {})",
            q(&p.column),
            q(&p.section),
            p.skip.iter().map(|g| g.as_str()).collect::<Vec<_>>().join(", ")
        ),
        _ => String::new(),
    }
}

fn time(t: &TimeRef) -> String {
    match t {
        TimeRef::Field(f) => f.clone(),
        TimeRef::FieldTime(f) => format!("the time cell of {f}"),
        TimeRef::Column(c) => format!("the `{}` column of `{}`", c.column, c.section),
        TimeRef::Mtime(g) => format!("mtimes of `{}`", g.as_str()),
        TimeRef::FirstOf(v) => format!(
            "({})",
            v.iter().map(time).collect::<Vec<_>>().join(", else ")
        ),
        TimeRef::Earliest(i) => format!("the earliest of {}", time(i)),
        TimeRef::Latest(i) => format!("the latest of {}", time(i)),
    }
}

/// The explanation of one check, or `None` when the protocol has no such check.
pub fn explain(p: &Protocol, id: &str) -> Option<String> {
    let instances = p.instances_of(id);
    let (_, first) = instances.first()?;
    let d = &first.def;
    let mut out = String::new();
    let severity = if d.off.is_some() {
        "OFF"
    } else {
        d.severity.as_str()
    };
    let _ = writeln!(out, "{} [{severity}] {}\n", d.id, d.title);
    let _ = writeln!(out, "{}\n", first.description);
    if let Some(why) = &d.off {
        let _ = writeln!(
            out,
            "Switched off by the protocol's variables ({why}): SKIP wherever it runs.\n"
        );
    }
    for (pass, inst) in &instances {
        let variant = if inst.variant == "main" {
            String::new()
        } else {
            format!(" with the `{}` variables", inst.variant)
        };
        let _ = writeln!(out, "In pass {} ({}){variant}:", pass.id, pass.title);
        if inst.description != first.description {
            let _ = writeln!(out, "  {}", inst.description);
        }
        let _ = writeln!(
            out,
            "  Runs when{}:\n{}",
            if pass.optional {
                " (optional pass: only on its trigger)"
            } else {
                " (or at the latest at its deadline or when the pipeline is complete)"
            },
            indent(&describe(&pass.trigger), 4)
        );
        match &inst.deadline {
            Some(dl) => {
                let _ = writeln!(
                    out,
                    "  Due when (or when the pipeline is complete, or with --final):\n{}",
                    indent(&describe(dl), 4)
                );
            }
            None => {
                let _ = writeln!(out, "  Due: as soon as the pass runs");
            }
        }
        if let Some(w) = &inst.when {
            let _ = writeln!(
                out,
                "  Applies only when (else SKIP):\n{}",
                indent(&describe(w), 4)
            );
        }
        let _ = writeln!(
            out,
            "  PASS when:\n{}",
            indent(&describe(&inst.predicate), 4)
        );
    }
    let missing = match d.missing {
        MissingAs::Fail => "FAIL",
        MissingAs::Inconclusive => "INCONCLUSIVE",
    };
    let _ = writeln!(
        out,
        "Statuses: something present and wrong FAILs at once. Something missing is WAITING until the check is due, then {missing}. Undecidable data (unparseable timestamp, unreadable file) is WAITING until due, then INCONCLUSIVE."
    );
    if d.severity == super::Severity::Blocking && d.off.is_none() {
        if matches!(p.subject, super::Subject::Build(_)) {
            let _ = writeln!(out, "A FAIL is BLOCKING: it raises OBSERVER-STOP.md.");
        } else if d.veto {
            let _ = writeln!(
                out,
                "A FAIL is BLOCKING: the task attempt is REJECTed, and it is a veto: OBSERVER-STOP.md stands while the change is in the workspace."
            );
        } else {
            let _ = writeln!(
                out,
                "A FAIL is BLOCKING: the task attempt is REJECTed (OBSERVER-STOP.md is raised only by a veto or an escalation)."
            );
        }
    }
    let _ = writeln!(out, "\nRequired action on FAIL: {}", d.action);
    Some(out)
}

/// `protocol explain CHECK [--protocol SPEC]` (and the MCP server's `explain_check`): the
/// protocol `spec` names, else the one embedded protocol that has the check, and the check
/// explained; an unknown check is an error that lists the protocol's checks.
pub fn lookup(spec: Option<&str>, id: &str) -> Result<(Protocol, String), ExplainError> {
    let p = match spec {
        Some(spec) => Protocol::load(spec)?,
        None => {
            let all = super::EMBEDDED
                .iter()
                .map(|(pid, _, _)| Protocol::load(pid))
                .collect::<Result<Vec<_>, _>>()?;
            find(all, id)?
        }
    };
    match explain(&p, id) {
        Some(text) => Ok((p, text)),
        None => Err(ExplainError::no_check(&p, id)),
    }
}

/// Why a check could not be explained.
#[derive(Debug, thiserror::Error)]
pub enum ExplainError {
    /// The protocol named (or an embedded one) did not load.
    #[error(transparent)]
    Load(#[from] super::ProtocolError),
    #[error("no check `{id}` in protocol `{protocol}` (its checks: {checks})")]
    NoCheck {
        id: String,
        protocol: String,
        checks: String,
    },
    #[error("no check `{id}` in the embedded protocols ({listing})")]
    NotEmbedded { id: String, listing: String },
    #[error("check `{id}` is in several protocols ({protocols}): say which with `--protocol ID`")]
    Several { id: String, protocols: String },
}

impl ExplainError {
    /// `p` has no check `id`: the error lists the checks it has.
    pub fn no_check(p: &Protocol, id: &str) -> ExplainError {
        ExplainError::NoCheck {
            id: id.to_string(),
            protocol: p.id.clone(),
            checks: p
                .checks()
                .iter()
                .map(|c| c.id.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        }
    }
}

/// The one protocol of `protocols` that has check `id` (what `protocol explain` explains
/// without `--protocol`); none, or several, is an error that says which ids there are, or
/// which protocols to choose from.
pub fn find(protocols: Vec<Protocol>, id: &str) -> Result<Protocol, ExplainError> {
    let (mut having, others): (Vec<Protocol>, Vec<Protocol>) = protocols
        .into_iter()
        .partition(|p| !p.instances_of(id).is_empty());
    if having.len() == 1 {
        return Ok(having.remove(0));
    }
    let protocols = others;
    match having.as_slice() {
        [] => Err(ExplainError::NotEmbedded {
            id: id.to_string(),
            listing: protocols
                .iter()
                .map(|p| {
                    let ids: Vec<&str> = p.checks().iter().map(|c| c.id.as_str()).collect();
                    format!("{}: {}", p.id, ids.join(", "))
                })
                .collect::<Vec<_>>()
                .join("; "),
        }),
        several => Err(ExplainError::Several {
            id: id.to_string(),
            protocols: several
                .iter()
                .map(|p| format!("`{}`", p.id))
                .collect::<Vec<_>>()
                .join(", "),
        }),
    }
}

fn indent(s: &str, n: usize) -> String {
    let pad = " ".repeat(n);
    s.lines()
        .map(|l| format!("{pad}{l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::EMBEDDED;

    fn embedded(id: &str) -> Protocol {
        Protocol::load(id).expect("an embedded protocol")
    }

    #[test]
    fn find_names_the_protocol_that_has_the_check_or_says_why_not() {
        let all = || EMBEDDED.iter().map(|(id, _, _)| embedded(id)).collect();
        assert_eq!(find(all(), "CC-01").unwrap().id, "code-change");
        assert_eq!(find(all(), "OBS-07").unwrap().id, "d10");
        let none = find(all(), "XX-01").unwrap_err();
        assert!(matches!(&none, ExplainError::NotEmbedded { id, .. } if id == "XX-01"));
        let none = none.to_string();
        assert!(
            none.starts_with("no check `XX-01` in the embedded protocols (d10: OBS-"),
            "{none}"
        );
        assert!(none.contains("; code-change: CC-00"), "{none}");
        // Two protocols with the same check: ambiguous, never the first one silently.
        let copy = EMBEDDED[0]
            .2
            .replacen("id = \"d10\"", "id = \"d10-copy\"", 1);
        let two = vec![
            embedded("d10"),
            Protocol::parse(&copy, "copy").expect("parses"),
        ];
        let err = find(two, "OBS-07").unwrap_err();
        assert!(matches!(err, ExplainError::Several { .. }));
        assert_eq!(
            err.to_string(),
            "check `OBS-07` is in several protocols (`d10`, `d10-copy`): say which with `--protocol ID`"
        );
    }
}
