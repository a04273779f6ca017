//! CC-10: an attempt must not weaken the tests or the gates that judge it. Against the baseline,
//! over the task's scope: no test removed or skipped, no assertion removed from test code, no
//! coverage threshold lowered, no linter or type checker relaxed (in the code: `# noqa`,
//! `eslint-disable`, `#[allow(...)]`, ...; in its configuration), no CI job or step removed or
//! let fail. A finding stands unless the task record gives a reason for its path in `weakened`
//! (`{"weakened": {"tests/test_io.py": "the feature is removed"}}`): the reason is shown in the
//! evidence for the orchestrator to judge.
//!
//! What is compared is what the files hold before and after, not the diff's lines alone, so a
//! test or marker moved (within a file, to another file of the scope, a file renamed) is not a
//! finding: tests and assertions are counted over the whole scope; skip and suppression markers
//! per file, a new file taking over what a changed or removed one lost. Each language's rules
//! are in `code`, coverage gates in `coverage`, linters' settings in `lint`, CI files (YAML,
//! parsed) in `ci`.

mod ci;
mod code;
mod coverage;
mod lint;
#[cfg(test)]
mod tests;
mod yaml;

use std::collections::BTreeMap;

use super::change::{no_baseline, task, TaskScope};
use super::{Outcome, Verdict};
use crate::workspace::{record, Change, Content};

/// One file of the scope: its baseline and current text (`None`: absent).
#[derive(Debug, Clone, Copy)]
pub struct Pair<'a> {
    pub path: &'a str,
    pub old: Option<&'a str>,
    pub new: Option<&'a str>,
}

/// What a finding weakens.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    TestRemoved,
    TestSkipped,
    AssertionRemoved,
    Suppressed,
    Coverage,
    Lint,
    Ci,
}

impl Kind {
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::TestRemoved => "test removed",
            Kind::TestSkipped => "test skipped",
            Kind::AssertionRemoved => "assertion removed",
            Kind::Suppressed => "check suppressed",
            Kind::Coverage => "coverage gate lowered",
            Kind::Lint => "lint or type check relaxed",
            Kind::Ci => "CI weakened",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub path: String,
    /// 1-based; in the baseline's file when `baseline` (what was removed), else in the current.
    pub line: usize,
    pub baseline: bool,
    pub kind: Kind,
    pub what: String,
}

impl Finding {
    pub fn new(path: &str, line: usize, baseline: bool, kind: Kind, what: String) -> Finding {
        Finding {
            path: path.to_string(),
            line,
            baseline,
            kind,
            what,
        }
    }

    /// `tests/test_a.py:12: test skipped: `pytest.mark.skip` added`, with `(baseline)` after the
    /// line number of a line that is gone.
    pub fn evidence(&self) -> String {
        format!(
            "{}:{}{}: {}: {}",
            crate::workspace::name::display(&self.path),
            self.line,
            if self.baseline { " (baseline)" } else { "" },
            self.kind.as_str(),
            self.what
        )
    }
}

/// Whether a path can hold anything this check compares (the rest is not read).
pub fn relevant(path: &str) -> bool {
    code::lang(path).is_some()
        || ci::is_ci(path)
        || coverage::may_hold_thresholds(path)
        || lint::is_lint_config(path)
}

/// The lines `new` adds to `old`, numbered in `new`.
fn added_lines(p: &Pair<'_>) -> Vec<(usize, String)> {
    let Some(new) = p.new else { return Vec::new() };
    crate::workspace::diff::added_lines(p.old.unwrap_or(""), new)
        .into_iter()
        .map(|(n, l)| (n, l.strip_suffix('\r').unwrap_or(l).to_string()))
        .collect()
}

/// The lines `new` removes from `old`, numbered in `old`.
fn removed_lines(old: &str, new: &str) -> Vec<usize> {
    similar::TextDiff::from_lines(old, new)
        .iter_all_changes()
        .filter(|c| c.tag() == similar::ChangeTag::Delete)
        .filter_map(|c| c.old_index().map(|i| i + 1))
        .collect()
}

/// Every way the scope's files weaken the tests or gates, sorted by path and line.
pub fn findings(files: &[Pair<'_>]) -> Vec<Finding> {
    let mut out = Vec::new();
    let mut scans: Vec<(Pair<'_>, code::Scan, code::Scan)> = files
        .iter()
        .filter_map(|f| {
            let lang = code::lang(f.path)?;
            let scan = |t: Option<&str>| t.map(|t| code::scan(f.path, lang, t)).unwrap_or_default();
            Some((*f, scan(f.old), scan(f.new)))
        })
        .collect();
    helper_calls(&mut scans);
    tests_removed(&scans, &mut out);
    asserts_removed(&scans, &mut out);
    markers(&scans, |s| &s.skips, Kind::TestSkipped, &mut out);
    markers(&scans, |s| &s.suppressions, Kind::Suppressed, &mut out);
    out.extend(coverage::coverage(files));
    out.extend(coverage::deselected(files, &added_lines));
    out.extend(lint::lint(files, &added_lines));
    out.extend(ci::ci(files, &added_lines));
    out.sort_by(|a, b| (&a.path, a.line, a.kind, &a.what).cmp(&(&b.path, b.line, b.kind, &b.what)));
    out.dedup();
    out
}

/// A call to an assertion helper (a function of a test file, not a test, that asserts) is an
/// assertion: assertions moved from the tests into a helper they call are not removed. The
/// helpers are those of the whole scope, before and after (a helper another file of the scope
/// defines, or defined before only).
fn helper_calls(scans: &mut [(Pair<'_>, code::Scan, code::Scan)]) {
    // Each helper with the most assertions any of its definitions holds.
    let mut weight: BTreeMap<String, usize> = BTreeMap::new();
    for (_, o, n) in scans.iter() {
        for (name, k) in o.helpers.iter().chain(&n.helpers) {
            let w = weight.entry(name.clone()).or_default();
            *w = (*w).max(*k);
        }
    }
    if weight.is_empty() {
        return;
    }
    let alternatives: Vec<String> = weight.keys().map(|n| regex::escape(n)).collect();
    let Ok(re) = regex::Regex::new(&format!(r"\b({})\s*\(", alternatives.join("|"))) else {
        return;
    };
    for (f, o, n) in scans.iter_mut() {
        let Some(lang) = code::lang(f.path) else {
            continue;
        };
        for (scan, text) in [(o, f.old), (n, f.new)] {
            let Some(t) = text else { continue };
            for (line, name) in code::helper_calls(f.path, lang, t, &re) {
                if !scan.asserts.contains(&line) {
                    scan.asserts.push(line);
                    scan.helper_weight += weight.get(name).map_or(0, |w| w.saturating_sub(1));
                }
            }
            scan.asserts.sort_unstable();
        }
    }
}

/// Fewer tests defined across the scope: each test no longer there (or, with renames, the count).
fn tests_removed(scans: &[(Pair<'_>, code::Scan, code::Scan)], out: &mut Vec<Finding>) {
    let before: usize = scans.iter().map(|(_, o, _)| o.tests.len()).sum();
    let after: usize = scans.iter().map(|(_, _, n)| n.tests.len()).sum();
    if after >= before {
        return;
    }
    let mut left: Vec<&str> = scans
        .iter()
        .flat_map(|(_, _, n)| n.tests.iter().map(|(t, _)| t.as_str()))
        .collect();
    let mut gone = Vec::new();
    for (f, o, _) in scans {
        for (name, line) in &o.tests {
            match left.iter().position(|t| t == name) {
                Some(i) => {
                    left.swap_remove(i);
                }
                None => gone.push((f, name, *line)),
            }
        }
    }
    let mut whole_files: BTreeMap<&str, Vec<&String>> = BTreeMap::new();
    for (f, name, line) in &gone {
        if f.new.is_none() {
            whole_files.entry(f.path).or_default().push(name);
        } else {
            out.push(Finding::new(
                f.path,
                *line,
                true,
                Kind::TestRemoved,
                format!("`{}`", crate::checks::clip(name, 80)),
            ));
        }
    }
    for (path, names) in whole_files {
        out.push(Finding::new(
            path,
            1,
            true,
            Kind::TestRemoved,
            format!(
                "the file, with {} test(s): {}",
                names.len(),
                names
                    .iter()
                    .take(5)
                    .map(|n| format!("`{}`", crate::checks::clip(n, 60)))
                    .collect::<Vec<_>>()
                    .join(", ")
                    + if names.len() > 5 { ", ..." } else { "" }
            ),
        ));
    }
    if gone.is_empty() {
        // Renamed and removed alike: the count says it.
        if let Some((f, _, _)) = scans.iter().find(|(_, o, n)| n.tests.len() < o.tests.len()) {
            out.push(Finding::new(
                f.path,
                1,
                false,
                Kind::TestRemoved,
                format!(
                    "{} test(s) fewer in the scope ({before} → {after})",
                    before - after
                ),
            ));
        }
    }
}

/// Fewer assertions in test code across the scope: the lines of each file that lost some.
fn asserts_removed(scans: &[(Pair<'_>, code::Scan, code::Scan)], out: &mut Vec<Finding>) {
    let before: usize = scans.iter().map(|(_, o, _)| o.assertions()).sum();
    let after: usize = scans.iter().map(|(_, _, n)| n.assertions()).sum();
    if after >= before {
        return;
    }
    for (f, o, n) in scans
        .iter()
        .filter(|(_, o, n)| n.assertions() < o.assertions())
    {
        let lost = o.assertions() - n.assertions();
        match (f.old, f.new) {
            (Some(old), Some(new)) => {
                let removed = removed_lines(old, new);
                let lines: Vec<usize> = o
                    .asserts
                    .iter()
                    .copied()
                    .filter(|l| removed.contains(l))
                    .collect();
                if lines.is_empty() {
                    out.push(Finding::new(
                        f.path,
                        1,
                        false,
                        Kind::AssertionRemoved,
                        format!("{lost} fewer ({} → {})", o.assertions(), n.assertions()),
                    ));
                }
                let text: Vec<&str> = old.split('\n').collect();
                for l in lines {
                    let t = text.get(l - 1).map_or("", |t| t.trim());
                    out.push(Finding::new(
                        f.path,
                        l,
                        true,
                        Kind::AssertionRemoved,
                        format!("`{}`", crate::checks::clip(t, 100)),
                    ));
                }
            }
            _ => out.push(Finding::new(
                f.path,
                1,
                true,
                Kind::AssertionRemoved,
                format!("the file, with {lost} assertion(s)"),
            )),
        }
    }
}

/// More markers of a kind in a file than before (skips, suppressions): each added line that
/// holds one. A new file takes over the markers changed or removed files lost (a move).
fn markers(
    scans: &[(Pair<'_>, code::Scan, code::Scan)],
    of: impl Fn(&code::Scan) -> &Vec<(&'static str, usize)>,
    kind: Kind,
    out: &mut Vec<Finding>,
) {
    let count = |v: &Vec<(&'static str, usize)>| {
        let mut m: BTreeMap<&'static str, Vec<usize>> = BTreeMap::new();
        for (name, line) in v {
            let lines = m.entry(name).or_default();
            if lines.last() != Some(line) {
                lines.push(*line);
            }
        }
        m
    };
    let counted: Vec<_> = scans
        .iter()
        .map(|(f, o, n)| (f, count(of(o)), count(of(n))))
        .collect();
    let mut credit: BTreeMap<&'static str, usize> = BTreeMap::new();
    for (_, o, n) in &counted {
        for (name, lines) in o {
            let now = n.get(name).map_or(0, Vec::len);
            *credit.entry(name).or_default() += lines.len().saturating_sub(now);
        }
    }
    for (f, o, n) in &counted {
        let mut added: Option<Vec<usize>> = None;
        for (name, lines) in n {
            let was = o.get(name).map_or(0, Vec::len);
            let mut excess = lines.len().saturating_sub(was);
            if excess > 0 && f.old.is_none() {
                let c = credit.entry(name).or_default();
                let used = excess.min(*c);
                *c -= used;
                excess -= used;
            }
            if excess == 0 {
                continue;
            }
            let new_lines =
                added.get_or_insert_with(|| added_lines(f).into_iter().map(|(l, _)| l).collect());
            let mut at: Vec<usize> = lines
                .iter()
                .copied()
                .filter(|l| new_lines.contains(l))
                .collect();
            if at.is_empty() {
                at = lines.clone();
            }
            for l in at {
                out.push(Finding::new(
                    f.path,
                    l,
                    false,
                    kind,
                    format!("`{name}` added"),
                ));
            }
        }
    }
}

/// The record field that gives a reason per path (a key ending in `/` covers a folder).
pub const REASONS_FIELD: &str = "weakened";

/// Why a task record's reasons cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReasonsError {
    #[error("`{REASONS_FIELD}` must be an object of path → reason, e.g. {{\"tests/test_io.py\": \"the feature is removed\"}}")]
    NotAnObject,
    #[error("`{REASONS_FIELD}`: the reason for `{path}` must be a non-empty string")]
    NoReason { path: String },
}

/// The reasons a task record gives, by normalised path; an error when the field is not an
/// object of non-empty strings.
pub fn reasons(
    raw: &serde_json::Map<String, serde_json::Value>,
) -> Result<BTreeMap<String, String>, ReasonsError> {
    let Some(v) = raw.get(REASONS_FIELD) else {
        return Ok(BTreeMap::new());
    };
    if v.is_null() {
        return Ok(BTreeMap::new());
    }
    let Some(obj) = v.as_object() else {
        return Err(ReasonsError::NotAnObject);
    };
    let mut out = BTreeMap::new();
    for (path, reason) in obj {
        match reason.as_str().map(str::trim) {
            Some(r) if !r.is_empty() => {
                out.insert(record::normalize(path), r.to_string());
            }
            _ => return Err(ReasonsError::NoReason { path: path.clone() }),
        }
    }
    Ok(out)
}

fn reason_for<'r>(reasons: &'r BTreeMap<String, String>, path: &str) -> Option<&'r String> {
    reasons.get(path).or_else(|| {
        reasons
            .iter()
            .find(|(k, _)| k.ends_with('/') && path.starts_with(k.as_str()))
            .map(|(_, r)| r)
    })
}

// ---- CC-10 -----------------------------------------------------------------------------------

pub(super) fn weakened(s: &TaskScope<'_>) -> Outcome {
    let expected = "no test removed or skipped, no assertion removed, no coverage threshold lowered, no lint, type-check or CI gate relaxed (or a reason in the record's `weakened`)";
    let t = match task(s) {
        Ok(x) => x,
        Err(o) => return o,
    };
    let Some(scope) = &s.scope else {
        return no_baseline(s, expected);
    };
    let reasons = match reasons(&t.raw) {
        Ok(r) => r,
        Err(why) => {
            return Outcome::new(Verdict::Fail, expected, why.to_string())
                .detail(format!("{}: {why}", s.record.rel))
        }
    };
    let mut unknown = Vec::new();
    let text = |c: Content, p: &str, unknown: &mut Vec<String>| -> Result<Option<String>, ()> {
        match c {
            Content::Absent => Ok(None),
            Content::Bytes(d) if d.looks_binary() => Err(()),
            Content::Bytes(d) => Ok(Some(d.text().into_owned())),
            // Followed before it gets here: a link is only what it leads to.
            Content::Link(d) => {
                unknown.push(format!("{p}: a symbolic link to `{}`", d.text()));
                Err(())
            }
            Content::Unknown(why) => {
                unknown.push(format!("{p}: {why}"));
                Err(())
            }
        }
    };
    let mut texts: Vec<(String, Option<String>, Option<String>)> = Vec::new();
    for (p, c) in scope.iter().filter(|(p, _)| relevant(p)) {
        // A file over its size limit FAILs on size; it is not read.
        if *c != Change::Removed && s.ws.over_limit(p).is_some() {
            continue;
        }
        let old = if *c == Change::Added {
            Ok(None)
        } else {
            // What the test runner read there: a link's target file.
            text(s.ws.base_followed(p), p, &mut unknown)
        };
        let new = if *c == Change::Removed {
            Ok(None)
        } else {
            text(s.ws.followed(p), p, &mut unknown)
        };
        if let (Ok(old), Ok(new)) = (old, new) {
            texts.push((p.clone(), old, new));
        }
    }
    let pairs: Vec<Pair<'_>> = texts
        .iter()
        .map(|(p, o, n)| Pair {
            path: p,
            old: o.as_deref(),
            new: n.as_deref(),
        })
        .collect();
    let mut standing = Vec::new();
    let mut excused = Vec::new();
    for f in findings(&pairs) {
        match reason_for(&reasons, &f.path) {
            Some(r) => excused.push(format!(
                "{} (reason given: {})",
                f.evidence(),
                crate::checks::clip(r, 120)
            )),
            None => standing.push(f.evidence()),
        }
    }
    let excused_note = |o: &mut Outcome| {
        excused
            .iter()
            .for_each(|e| o.push_detail(format!("excused: {e}")));
    };
    if !standing.is_empty() {
        let mut o = Outcome::new(
            Verdict::Fail,
            expected,
            format!(
                "{} finding(s) with no reason in `{REASONS_FIELD}`",
                standing.len()
            ),
        );
        standing.iter().for_each(|f| o.push_detail(f.clone()));
        excused_note(&mut o);
        unknown
            .iter()
            .for_each(|u| o.push_detail(format!("not judged: {u}")));
        return o;
    }
    if !unknown.is_empty() {
        let mut o = Outcome::new(
            Verdict::Inconclusive,
            expected,
            format!("{} file(s) could not be judged", unknown.len()),
        );
        unknown.iter().for_each(|u| o.push_detail(u.clone()));
        excused_note(&mut o);
        return o;
    }
    let observed = if excused.is_empty() {
        format!("{} file(s) compared, nothing weakened", pairs.len())
    } else {
        format!(
            "{} file(s) compared; {} finding(s), each with a reason in `{REASONS_FIELD}`",
            pairs.len(),
            excused.len()
        )
    };
    let mut o = Outcome::pass(expected, observed);
    excused_note(&mut o);
    o
}
