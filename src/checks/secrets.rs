//! CC-07: no added line holds a merge-conflict marker or another forbidden pattern of the
//! protocol, nor a secret by its secret rules ([`crate::protocol::secrets`]), alone or after
//! the line above it (a name on one line, its value on the next). The evidence names the file,
//! the line and the rule, never the matched text; at most
//! [`MAX_FINDINGS_PER_FILE`] findings are listed per file, the rest are counted.

use super::change::{added_in_context, conclude, no_baseline, task, TaskScope};
use super::Outcome;
use crate::protocol::predicate::AddedLines;
use crate::protocol::secrets::Keyed;

/// A file of generated or pasted data must not flood the verdict.
pub(super) const MAX_FINDINGS_PER_FILE: usize = 20;

pub(super) fn added_lines(s: &TaskScope<'_>, a: &AddedLines) -> Outcome {
    // The named patterns, then the patterns reported as themselves (`forbid_patterns`).
    let named: Vec<(String, &crate::protocol::pattern::Pattern)> = a
        .forbid
        .iter()
        .map(|f| (f.name.clone(), &f.pattern))
        .chain(
            a.forbid_patterns
                .iter()
                .map(|p| (format!("forbidden pattern `{}`", p.as_str()), p)),
        )
        .collect();
    let names = named
        .iter()
        .map(|(name, _)| name.as_str())
        .collect::<Vec<_>>()
        .join(", ");
    let expected = match &a.secrets {
        Some(sec) => format!(
            "no added line matches a forbidden pattern ({names}) or holds a secret ({} rules from {})",
            sec.rules().len(),
            sec.rules().origin()
        ),
        None => format!("no added line matches a forbidden pattern ({names})"),
    };
    if let Err(o) = task(s) {
        return o;
    }
    if s.scope.is_none() {
        return no_baseline(s, &expected);
    }
    let mut fails = Vec::new();
    let mut unknown = Vec::new();
    let mut forbid = Vec::new();
    for (name, pattern) in &named {
        match pattern.regex() {
            Some(re) => forbid.push((name.as_str(), re)),
            None => unknown.push(format!("pattern `{}` cannot be compiled", pattern.as_str())),
        }
    }
    let rules = a.secrets.as_ref().map(|s| s.rules());
    let mut n = 0;
    for (p, lines) in added_in_context(s) {
        let lines = match lines {
            Ok(l) => l,
            Err(why) => {
                unknown.push(format!("{p}: {why}"));
                continue;
            }
        };
        n += lines.len();
        let mut listed = 0;
        let mut more = 0;
        // The keywords of the last line scanned: the next line, scanned after it, needs them.
        let mut last: Option<(usize, Keyed)> = None;
        for (line_no, line, above) in &lines {
            let line = line.as_bytes();
            let secret = match rules {
                Some(r) => {
                    let fresh;
                    let above = match (above, &last) {
                        (None, _) => None,
                        (Some(a), Some((n, keyed))) if n + 1 == *line_no => {
                            Some((a.as_bytes(), keyed))
                        }
                        (Some(a), _) => {
                            fresh = r.keyed(a.as_bytes());
                            Some((a.as_bytes(), &fresh))
                        }
                    };
                    let (hit, keyed) = r.scan_keyed(above, line);
                    last = Some((*line_no, keyed));
                    hit.map(|h| h.name)
                }
                None => None,
            };
            let hits = forbid
                .iter()
                .filter(|(_, re)| re.is_match(line))
                .map(|(name, _)| *name)
                .chain(secret);
            for name in hits {
                if listed < MAX_FINDINGS_PER_FILE {
                    // The matched text of a secret is never repeated in the evidence.
                    fails.push(format!("{p}:{line_no}: {name}"));
                    listed += 1;
                } else {
                    more += 1;
                }
            }
        }
        if more > 0 {
            fails.push(format!("{p}: {more} more finding(s), not listed"));
        }
    }
    conclude(
        &expected,
        fails,
        unknown,
        format!("{n} added line(s), none forbidden"),
    )
}
