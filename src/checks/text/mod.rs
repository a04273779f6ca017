//! The `text` predicate: required and forbidden language in files and tracker fields, with
//! every forbidden hit reported as `file:line`. Each file is scanned once by a single
//! combined regex, so checking every report costs one pass over its bytes.
//!
//! Every byte of every file in scope is searched, whatever it holds: NUL bytes, invalid UTF-8 or
//! a whole PNG (the patterns are byte patterns). A NUL byte planted in a report must not hide
//! the words after it, so no file is skipped as "binary"; a text check never passes on content
//! it did not search. A file or place that cannot be read leaves the check INCONCLUSIVE unless a
//! forbidden hit elsewhere already decides it.
//!
//! Text is judged as a human reads it ([`crate::artifacts::normalize`]): UTF-16/32 decoded,
//! NFKC, look-alike letters as ASCII, invisible characters dropped, HTML references and
//! markdown escapes undone, words broken over a line joined. Every hit is reported with the
//! line and the text as written in the file, and what it reads as when that differs. The
//! readings of a file and its readable runs (in a file with NUL bytes) are [`source`]'s.

mod source;
mod terms;

use regex_automata::meta::Regex;

use std::ops::Range;

use source::{Source, MIN_READABLE_RUN};
use terms::{terms, Terms};

use super::{with_tracker, Ctx, Outcome, Verdict};
use crate::artifacts::normalize::Encoding;
use crate::artifacts::tracker::is_empty_value;
use crate::protocol::pattern;
use crate::protocol::predicate::{Pattern, Text};

pub(super) fn text(ctx: &Ctx<'_>, t: &Text) -> Outcome {
    let mut what: Vec<String> = t
        .files
        .iter()
        .map(|g| format!("`{}`", g.as_str()))
        .collect();
    what.extend(t.fields.iter().cloned());
    let mut rules = Vec::new();
    if let Some(x) = &t.extract {
        rules.push(format!("a snippet matching `{}`", x.as_str()));
    }
    if let Some(n) = t.min_chars {
        rules.push(format!("at least {n} characters"));
    }
    if let Some(r) = &t.require {
        let mut all: Vec<String> = r.terms.iter().map(|w| format!("`{w}`")).collect();
        if !r.patterns.is_empty() {
            all.push(list(&r.patterns));
        }
        rules.push(format!("at least {} of {}", r.at_least, all.join(", ")));
    }
    if !t.forbid.is_empty() || !t.forbid_terms.is_empty() {
        let mut all: Vec<String> = t.forbid_terms.iter().map(|w| format!("`{w}`")).collect();
        if !t.forbid.is_empty() {
            all.push(list(&t.forbid));
        }
        rules.push(format!("none of {}", all.join(", ")));
    }
    let expected = format!("{}: {}", what.join(", "), rules.join("; "));
    let mut o = Outcome::new(Verdict::Pass, expected, String::new());

    // Patterns valid at load can still be too large to compile; nothing is judged by them.
    let uncompiled = (!t.forbid.is_empty() && pattern::search(&t.forbid).is_none())
        || t.extract
            .as_ref()
            .is_some_and(|x| pattern::search(std::slice::from_ref(x)).is_none())
        || t.require
            .as_ref()
            .is_some_and(|r| !r.patterns.is_empty() && pattern::overlapping(&r.patterns).is_none());
    if uncompiled {
        o.verdict = Verdict::Inconclusive;
        o.observed = vec!["a pattern cannot be compiled (past the regex size limit)".into()];
        return o;
    }

    // Gather the sources. When the snapshot does not keep large files (the daemon, bounding
    // its memory), a forbid-only check scans each file as it reads it and lets it go.
    let streaming = ctx.snap.limits().keep_bytes.is_some()
        && t.require.is_none()
        && t.extract.is_none()
        && t.min_chars.is_none();
    if !streaming {
        prefetch(ctx, &t.files);
    }
    let mut streamed_hits = Vec::new();
    let mut streamed = 0;
    let mut sources = Vec::new();
    let mut unreadable = Vec::new();
    let mut binary = 0;
    for g in &t.files {
        let (files, other) = ctx.files(g);
        unreadable.extend(ctx.hidden(g));
        for e in files {
            match ctx.read(&e.rel) {
                Ok(d) => {
                    o.push_file(Ctx::data_ref(&d));
                    let source = Source::file(e.rel.clone(), d);
                    // A file also read as UTF-16/32 says so in each of its hits.
                    if source.binary() && source.wide().is_none() {
                        binary += 1;
                        o.push_detail(format!(
                            "{}: has NUL bytes; searched, but only readable text runs of \
                             ≥ {MIN_READABLE_RUN} bytes count",
                            e.rel
                        ));
                    }
                    if streaming {
                        streamed += 1;
                        let one = std::slice::from_ref(&source);
                        streamed_hits.extend(forbidden(&t.forbid, &t.forbid_terms, one));
                    } else {
                        sources.push(source);
                    }
                }
                Err(err) => unreadable.push(format!("{}: {err}", e.rel)),
            }
        }
        for e in other {
            unreadable.push(format!(
                "{}: {}",
                e.rel,
                e.note.as_deref().unwrap_or("not a regular file")
            ));
        }
    }
    if !t.fields.is_empty() {
        match with_tracker(ctx) {
            Ok(tracker) => {
                let name = ctx.tracker_file();
                if let Ok(d) = ctx.read(name) {
                    o.push_file(Ctx::data_ref(&d));
                }
                for f in &t.fields {
                    if let Some(row) = tracker.field(f) {
                        // A comment on the row is no part of the value, but a term hidden in
                        // it is still written there.
                        let text = match (is_empty_value(&row.value), row.comments.is_empty()) {
                            (false, true) => row.value.clone(),
                            (false, false) => format!("{} {}", row.value, row.comments),
                            (true, false) => row.comments.clone(),
                            (true, true) => continue,
                        };
                        sources.push(Source::field(
                            format!("{name}:{} ({})", row.line, row.name),
                            text,
                        ));
                    }
                }
            }
            Err(e) if e.verdict == Verdict::Missing => {}
            Err(e) => unreadable.push(e.observed.join("; ")),
        }
    }
    for u in &unreadable {
        o.push_detail(format!("cannot be read: {u}"));
    }
    if sources.is_empty() && streamed == 0 {
        o.verdict = if unreadable.is_empty() {
            Verdict::Missing
        } else {
            Verdict::Inconclusive
        };
        o.observed = vec!["no text to judge".to_string()];
        return o;
    }

    let mut observed = Vec::new();
    let mut verdict = Verdict::Pass;

    // Forbidden language: every hit, with its line.
    if !t.forbid.is_empty() || !t.forbid_terms.is_empty() {
        let mut hits = std::mem::take(&mut streamed_hits);
        hits.extend(forbidden(&t.forbid, &t.forbid_terms, &sources));
        if hits.is_empty() {
            observed.push(format!(
                "no forbidden language in {} sources{}",
                sources.len() + streamed,
                if binary > 0 {
                    format!(" ({binary} with NUL bytes: only readable text runs count)")
                } else {
                    String::new()
                }
            ));
        } else {
            verdict = Verdict::Fail;
            // One match no appended text can change is enough: a worker that writes it and
            // keeps the file open does not hold the FAIL back (see `Outcome::stands`).
            o.stands = hits.iter().any(|h| h.settled);
            observed.push(format!("{} forbidden matches", hits.len()));
            for h in hits {
                o.push_detail(h.line);
            }
        }
    }

    // Extraction, length and required language: over snippets, or all the text together.
    if t.extract.is_some() || t.min_chars.is_some() || t.require.is_some() {
        let extract = t
            .extract
            .as_ref()
            .and_then(|x| pattern::search(std::slice::from_ref(x)));
        let snippets: Vec<(String, String)> = match extract {
            Some(re) => sources.iter().flat_map(|s| snippets(s, &re)).collect(),
            None => vec![(
                match sources.as_slice() {
                    [one] => one.label.clone(),
                    many => format!("the text of {} sources", many.len()),
                },
                sources
                    .iter()
                    .map(Source::text)
                    .collect::<Vec<_>>()
                    .join("\n"),
            )],
        };
        if snippets.is_empty() {
            verdict = Verdict::Fail;
            observed.push(format!(
                "no snippet matches `{}`",
                t.extract.as_ref().map_or("", |x| x.as_str())
            ));
        } else {
            let mut best: Option<(bool, String)> = None;
            for (at, snippet) in &snippets {
                let (ok, why) = judge_snippet(t, snippet);
                if ok || best.is_none() {
                    best = Some((ok, format!("{at}: {why}")));
                }
                if ok {
                    break;
                }
            }
            if let Some((ok, why)) = best {
                if !ok {
                    verdict = Verdict::Fail;
                }
                observed.push(why);
            }
        }
    }
    if verdict == Verdict::Pass && !unreadable.is_empty() {
        verdict = Verdict::Inconclusive;
        observed.push(format!("{} sources could not be read", unreadable.len()));
    }
    o.verdict = verdict;
    o.observed = observed;
    o
}

fn list(patterns: &[Pattern]) -> String {
    patterns
        .iter()
        .map(|p| format!("`{}`", p.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Judges one snippet for length and required language: (ok, what was seen).
fn judge_snippet(t: &Text, snippet: &str) -> (bool, String) {
    let trimmed = snippet.trim();
    let chars = trimmed.chars().count();
    let mut ok = true;
    let mut seen = Vec::new();
    if let Some(min) = t.min_chars {
        seen.push(format!("{chars} characters"));
        if chars < min {
            ok = false;
        }
    }
    if let Some(r) = &t.require {
        let mut found: Vec<&str> = pattern::which(&r.patterns, trimmed.as_bytes())
            .unwrap_or_default()
            .into_iter()
            .map(|i| r.patterns[i].as_str())
            .collect();
        found.extend(
            r.terms
                .iter()
                .filter(|term| terms::contains(trimmed, term))
                .map(String::as_str),
        );
        let wanted = r.patterns.len() + r.terms.len();
        seen.push(if found.is_empty() {
            format!("none of the required {wanted}")
        } else {
            format!("{} of the required: {}", found.len(), found.join(", "))
        });
        if found.len() < r.at_least {
            ok = false;
        }
    }
    (ok, seen.join(", "))
}

/// Reads (and hashes) the files matching `globs` on two threads when they are large, so
/// hashing megabytes of reports uses both halves of the machine. The snapshot caches each
/// read, so the judging that follows reads nothing twice.
fn prefetch(ctx: &Ctx<'_>, globs: &[crate::protocol::predicate::Glob]) {
    let files: Vec<&str> = globs
        .iter()
        .flat_map(|g| ctx.files(g).0)
        .map(|e| e.rel.as_str())
        .collect();
    let total: u64 = files
        .iter()
        .filter_map(|f| ctx.snap.get(f))
        .map(|e| e.size())
        .sum();
    let big = total >= super::SPLIT_BYTES as u64;
    if big {
        let snap = ctx.snap;
        super::on_two_threads(&files, big, |part| {
            part.iter().for_each(|f| drop(snap.read(f)));
            Vec::<()>::new()
        });
    }
}

/// The snippets `re` extracts from a source's readings (its group 1, else the whole match),
/// each with `label:line` of where it is written.
fn snippets(s: &Source, re: &Regex) -> Vec<(String, String)> {
    let original = s.original();
    let mut out = Vec::new();
    for r in &s.readings() {
        let text = r.reading.text(original);
        for c in re.captures_iter(text) {
            let Some(m) = c.get_group(1).or_else(|| c.get_group(0)) else {
                continue;
            };
            if !r.counts(m.range()) {
                continue;
            }
            let (_, line) = r.reading.quote(original, m.range());
            out.push((
                format!("{}:{line}", s.label),
                String::from_utf8_lossy(&text[m.range()]).into_owned(),
            ));
        }
    }
    out
}

/// A forbidden match as evidence (`source:line: `what` matched "text"`), and whether it reads
/// the same whatever the file's writer appends ([`Source::settled_before`]).
#[derive(Debug, PartialEq)]
struct Found {
    line: String,
    settled: bool,
}

/// Every forbidden match (regex or literal term), in the order they occur. One scan per source for the regexes together and one for the
/// terms; only a regex hit compiles the individual patterns, to say which one matched.
fn forbidden(patterns: &[Pattern], literal: &[String], sources: &[Source]) -> Vec<Found> {
    let combined = pattern::search(patterns);
    let automaton = if literal.is_empty() {
        None
    } else {
        terms(literal)
    };
    let scan = |part: &[Source]| {
        forbidden_in(
            patterns,
            literal,
            combined.as_ref(),
            automaton.as_ref(),
            part,
        )
    };
    // Every report is read in full; with megabytes of them, use both halves of the machine.
    let total: usize = sources.iter().map(|s| s.original().len()).sum();
    super::on_two_threads(sources, total >= super::SPLIT_BYTES, scan)
}

/// One forbidden match in one reading of a source.
struct Hit {
    /// Where it is written in the file.
    at: Range<usize>,
    /// Which pattern or term.
    which: String,
    /// Which reading found it, and where in that reading.
    reading: usize,
    norm: Range<usize>,
}

fn forbidden_in(
    patterns: &[Pattern],
    literal: &[String],
    combined: Option<&Regex>,
    automaton: Option<&Terms>,
    sources: &[Source],
) -> Vec<Found> {
    let mut hits = Vec::new();
    for s in sources {
        let original = s.original();
        let mut found: Vec<Hit> = Vec::new();
        let readings = s.readings();
        for (ri, r) in readings.iter().enumerate() {
            let text = r.reading.text(original);
            let mut push = |norm: Range<usize>, which: &str| {
                if r.counts(norm.clone()) {
                    found.push(Hit {
                        at: r.reading.original_range(norm.clone()),
                        which: which.to_string(),
                        reading: ri,
                        norm,
                    });
                }
            };
            if let Some(t) = automaton {
                for (start, end, which) in t.find(text) {
                    push(start..end, &literal[which]);
                }
            }
            if let Some(all) = combined {
                for m in all.find_iter(text) {
                    push(m.range(), patterns[m.pattern().as_usize()].as_str());
                }
            }
        }
        // A hit both readings find (ASCII in a UTF-16 file) is reported once, as decoded.
        found.sort_by(|a, b| {
            (a.at.start, &a.which, std::cmp::Reverse(a.reading)).cmp(&(
                b.at.start,
                &b.which,
                std::cmp::Reverse(b.reading),
            ))
        });
        found.dedup_by(|b, a| a.at.start == b.at.start && a.which == b.which);
        // Lines are counted in each reading's encoding, from its previous hit on.
        let mut lines = vec![(1usize, 0usize); readings.len()];
        for h in found {
            let r = &readings[h.reading].reading;
            let (line, counted_to) = &mut lines[h.reading];
            let from = (*counted_to).min(h.at.start);
            *line += r.newlines(&original[from..h.at.start.min(original.len())]);
            *counted_to = h.at.start;
            let written = r.written(original, h.at.clone());
            let reads = String::from_utf8_lossy(&r.text(original)[h.norm]).into_owned();
            let mut notes = Vec::new();
            if r.encoding != Encoding::Utf8 {
                notes.push(r.encoding.name().to_string());
            }
            if reads.trim() != written.trim() {
                notes.push(format!("reads \"{}\"", reads.trim()));
            }
            let line = format!(
                "{}:{line}: `{}` matched \"{}\"{}",
                s.label,
                h.which,
                written.trim(),
                if notes.is_empty() {
                    String::new()
                } else {
                    format!(" ({})", notes.join(", "))
                }
            );
            hits.push(Found {
                line,
                settled: s.settled_before(h.at.end),
            });
        }
    }
    hits
}

#[cfg(test)]
#[allow(
    clippy::single_range_in_vec_init,
    reason = "`vec![a..b]` here is a list of one run, not the run's indices"
)]
mod tests;
