//! Predicates about the content of an attempt's changed files: they parse (CC-05), they keep
//! within their size limits (CC-06), and the lines they add (what CC-07 and CC-09 scan).

use super::{conclude, task, TaskScope};
use crate::checks::{Outcome, Verdict};
use crate::protocol::predicate::{Parses, SizeLimit};
use crate::syntax;
use crate::workspace::{diff, Content, Unknowable};

// ---- CC-05 ----------------------------------------------------------------------------------

pub(in crate::checks) fn parses(s: &TaskScope<'_>, spec: &Parses) -> Outcome {
    let expected = "every added or modified file parses";
    if let Err(o) = task(s) {
        return o;
    }
    let commands: Vec<syntax::CommandRule> = spec.commands.iter().map(|c| c.rule()).collect();
    let mut fails = Vec::new();
    let mut unknown = Vec::new();
    let mut parsed = Vec::new();
    let mut unjudged = Vec::new();
    let mut links = Vec::new();
    let files = s.present_files();
    let mut unread = Vec::new();
    for p in &files {
        if let Some((len, limit)) = s.ws.over_limit(p) {
            unread.push(
                crate::workspace::Unknowable::OverLimit {
                    rel: p.clone(),
                    size: len,
                    limit,
                }
                .to_string(),
            );
            continue;
        }
        let data = match s.ws.current(p) {
            Content::Bytes(d) => d,
            // A link inside the workspace: what a reader meets there is parsed; a link to a
            // folder has nothing to parse.
            Content::Link(l) => match s.ws.followed(p) {
                Content::Bytes(d) => d,
                _ if s.ws.root().join(p).is_dir() => {
                    links.push(format!("{p} -> {}", l.text()));
                    continue;
                }
                Content::Unknown(why) => {
                    unknown.push(format!("{p}: {why}"));
                    continue;
                }
                _ => {
                    fails.push(format!("{p}: listed as present but leads to nothing"));
                    continue;
                }
            },
            Content::Absent => {
                fails.push(format!("{p}: listed as present but does not exist"));
                continue;
            }
            Content::Unknown(why) => {
                unknown.push(format!("{p}: {why}"));
                continue;
            }
        };
        let outcome = syntax::check(p, &data.bytes, &s.ws.root().join(p), &commands);
        match outcome {
            syntax::Outcome::Parsed { .. } => parsed.push(outcome.evidence(p)),
            syntax::Outcome::Invalid { .. } => fails.push(outcome.evidence(p)),
            syntax::Outcome::Inconclusive { .. } => unknown.push(outcome.evidence(p)),
            syntax::Outcome::NotApplicable => unjudged.push(p.as_str()),
        }
    }
    // The evidence names every file and how it was checked: the findings first (they decide),
    // then what parsed, then the files no parser applies to (not judged).
    let (verdict, observed) = if !fails.is_empty() {
        (
            Verdict::Fail,
            format!("{} file(s) do not parse", fails.len()),
        )
    } else if !unknown.is_empty() {
        (
            Verdict::Inconclusive,
            format!("{} file(s) could not be checked", unknown.len()),
        )
    } else {
        (
            Verdict::Pass,
            format!(
                "{} file(s) parse, {} of a type with no syntax check",
                parsed.len(),
                unjudged.len()
            ),
        )
    };
    let mut o = Outcome::new(verdict, expected, observed);
    fails
        .into_iter()
        .chain(unknown)
        .chain(parsed)
        .for_each(|d| o.push_detail(d));
    if !unjudged.is_empty() {
        o.push_detail(format!(
            "not judged (no syntax check for the type): {}",
            unjudged.join(", ")
        ));
    }
    if !links.is_empty() {
        o.push_detail(format!(
            "not parsed (symbolic links to folders): {}",
            links.join(", ")
        ));
    }
    unread.into_iter().for_each(|d| o.push_detail(d));
    o
}

// ---- CC-06 ----------------------------------------------------------------------------------

pub(in crate::checks) fn size_limit(s: &TaskScope<'_>, l: &SizeLimit) -> Outcome {
    let expected = "every changed file within its size limit";
    if let Err(o) = task(s) {
        return o;
    }
    let limit = |p: &str| {
        l.by_extension
            .iter()
            .find(|e| {
                p.to_ascii_lowercase()
                    .ends_with(&e.ext.to_ascii_lowercase())
            })
            .map_or(l.default.bytes(), |e| e.max.bytes())
    };
    let mut fails = Vec::new();
    let mut unknown = Vec::new();
    let files = s.present_files();
    for p in &files {
        // The size on disk: a file over the read cap is still measured.
        match s.ws.size_on_disk(p) {
            Ok((true, len)) => {
                let max = limit(p);
                if len > max {
                    fails.push(format!("{p}: {len} bytes, limit {max} bytes"));
                }
            }
            Ok(_) => unknown.push(format!("{p}: not a regular file")),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => unknown.push(format!("{p}: {e}")),
        }
    }
    conclude(
        expected,
        fails,
        unknown,
        format!("{} file(s) within their limits", files.len()),
    )
}

// ---- the added lines (CC-07, CC-09) ------------------------------------------------------

/// The added lines of each present text file of the scope: `Err` for a file that cannot be
/// read; binary files are left out.
pub(in crate::checks) type Added = Vec<(String, Result<Vec<(usize, String)>, Unknowable>)>;

pub(in crate::checks) fn added(s: &TaskScope<'_>) -> Added {
    added_as(s, |_, lines| {
        lines.into_iter().map(|(n, l)| (n, l.to_string())).collect()
    })
}

/// An added line's number and text, and the line above it in the new file (`None` for the
/// first line): a name and its value can lie on two lines.
pub(in crate::checks) type AddedLine = (usize, String, Option<String>);

/// [`added`], each line with the line above it.
pub(in crate::checks) fn added_in_context(
    s: &TaskScope<'_>,
) -> Vec<(String, Result<Vec<AddedLine>, Unknowable>)> {
    added_as(s, |new, lines| {
        // Indexed once: looking each line up by number would be quadratic in a large file.
        let all: Vec<&str> = new
            .split_inclusive('\n')
            .map(|l| l.strip_suffix('\n').unwrap_or(l))
            .collect();
        lines
            .into_iter()
            .map(|(n, l)| {
                let above = n.checked_sub(2).and_then(|i| all.get(i));
                (n, l.to_string(), above.map(|a| a.to_string()))
            })
            .collect()
    })
}

/// The added lines of each present text file, as `f` makes them of the new text and its added
/// lines.
fn added_as<T>(
    s: &TaskScope<'_>,
    f: impl Fn(&str, Vec<(usize, &str)>) -> Vec<T>,
) -> Vec<(String, Result<Vec<T>, Unknowable>)> {
    let mut out = Vec::new();
    for p in s.present_files() {
        // A file over its size limit FAILs on size; its lines are not read.
        if s.ws.over_limit(&p).is_some() {
            continue;
        }
        // A link's line is its target, as git records it.
        let new = match s.ws.current(&p) {
            Content::Bytes(d) | Content::Link(d) => d,
            Content::Absent => continue,
            Content::Unknown(why) => {
                out.push((p, Err(why)));
                continue;
            }
        };
        let old = match s.ws.base(&p) {
            Content::Bytes(d) | Content::Link(d) => Some(d),
            Content::Absent => None,
            Content::Unknown(why) => {
                out.push((p, Err(why)));
                continue;
            }
        };
        if new.looks_binary() || old.as_ref().is_some_and(|o| o.looks_binary()) {
            continue;
        }
        let new_text = new.text();
        let old_text = old.as_ref().map(|o| o.text()).unwrap_or_default();
        let lines = f(&new_text, diff::added_lines(&old_text, &new_text));
        out.push((p, Ok(lines)));
    }
    out
}
