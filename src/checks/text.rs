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
//! In a file with NUL bytes, though, a hit counts only inside a readable text run (see
//! [`readable_runs`]): compressed image data matches a short pattern such as `\bfix\b` by
//! chance about once per megabyte, and a referee that stops a build on a screenshot's pixels
//! gets switched off. Words planted in such a file sit in runs of text (a PNG `tEXt` chunk, the
//! prose around a planted NUL) and still count. The same holds for `require` and `extract`: a
//! required word inside a binary file counts only in a readable run.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::{Arc, Mutex, OnceLock};

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind};
use regex_automata::meta::Regex;

use super::{with_tracker, Ctx, Outcome, Verdict};
use crate::artifacts::tracker::is_empty_value;
use crate::artifacts::FileData;
use crate::protocol::pattern;
use crate::protocol::predicate::{Pattern, Text};

struct Source {
    label: String,
    content: Content,
    /// For a file with NUL bytes, its readable text runs: only hits inside one count. `None`
    /// for text, where every hit counts.
    runs: Option<Vec<Range<usize>>>,
}

enum Content {
    File(Arc<FileData>),
    Field(String),
}

impl Source {
    /// A file as a source. The whole file is tested for NUL (not only its head), so a binary
    /// whose first NUL comes late is not searched as text.
    fn file(label: String, d: Arc<FileData>) -> Source {
        let runs = d
            .bytes
            .contains(&0)
            .then(|| readable_runs(&d.bytes, MIN_READABLE_RUN));
        Source {
            label,
            content: Content::File(d),
            runs,
        }
    }

    fn field(label: String, value: String) -> Source {
        Source {
            label,
            content: Content::Field(value),
            runs: None,
        }
    }

    fn bytes(&self) -> &[u8] {
        match &self.content {
            Content::File(d) => &d.bytes,
            Content::Field(s) => s.as_bytes(),
        }
    }

    /// Whether a match at `at` counts: always in text, only inside one readable run in binary.
    fn counts(&self, at: Range<usize>) -> bool {
        match &self.runs {
            None => true,
            Some(runs) => {
                // The last run starting at or before the match is the only one that can hold it.
                let i = runs.partition_point(|r| r.start <= at.start);
                i > 0 && at.end <= runs[i - 1].end
            }
        }
    }

    /// The text judged for length and required language: all of it, or for a binary file its
    /// readable runs one per line (so a required word never joins across a run's edge).
    fn text(&self) -> Cow<'_, str> {
        match &self.runs {
            None => String::from_utf8_lossy(self.bytes()),
            Some(runs) => Cow::Owned(
                runs.iter()
                    .map(|r| String::from_utf8_lossy(&self.bytes()[r.clone()]))
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
        }
    }
}

/// The shortest readable run, in bytes, in which a hit in a file with NUL bytes counts.
///
/// Why 20 and not `strings(1)`'s 4 or 8: a chance hit's own bytes are readable by construction,
/// so the run length only buys the odds that the bytes *around* it are readable too. In uniformly
/// random bytes (compressed image data is close to it) a byte is readable with p = 98/256 ≈ 0.38;
/// counting complete UTF-8 sequences a readable run grows like r^n with r ≈ 0.465. The D10
/// OBS-07 patterns hit random bytes about 1.5 times per MiB, mostly 3-byte hits like `>=7` or
/// `fix`, so a minimum of m leaves ≈ 1.5/MiB × r^(m-3) × (m-2 - (m-3)·r) chance hits: ≈ 100 per
/// GiB at m = 8 (`(98/256)^8` alone would wrongly promise 1 in 2,000), 0.6 per GiB at 16 and
/// 0.04 per GiB at 20, one per ~25 GiB of screenshots. Measured on this module's 64 MiB of
/// seeded random bytes (118 raw hits): 7 count at m = 8, none at 12, 16 or 20. Text a pipeline
/// plants for a builder to read (a sentence) is longer than 20 bytes.
const MIN_READABLE_RUN: usize = 20;

/// The maximal runs of readable bytes in `bytes` that are at least `min` bytes long, in order,
/// as `strings(1)` shows them: ASCII printable bytes, tab, CR, LF and complete valid UTF-8
/// multi-byte sequences. Any other byte (NUL, another control, a byte of invalid or cut-off
/// UTF-8) ends a run.
fn readable_runs(bytes: &[u8], min: usize) -> Vec<Range<usize>> {
    let mut runs = Vec::new();
    let mut keep = |run: Range<usize>| {
        if run.len() >= min {
            runs.push(run);
        }
    };
    let (mut start, mut pos) = (0, 0);
    for chunk in bytes.utf8_chunks() {
        for (i, c) in chunk.valid().char_indices() {
            // Every unreadable character here is a one-byte ASCII control or DEL.
            if c.is_ascii() && !matches!(c, ' '..='~' | '\t' | '\n' | '\r') {
                keep(start..pos + i);
                start = pos + i + 1;
            }
        }
        pos += chunk.valid().len();
        if !chunk.invalid().is_empty() {
            keep(start..pos);
            pos += chunk.invalid().len();
            start = pos;
        }
    }
    keep(start..pos);
    runs
}

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
                    if source.runs.is_some() {
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
                if let Ok(d) = ctx.read("EXECUTION-TRACKER.md") {
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
                            format!("EXECUTION-TRACKER.md:{} ({})", row.line, row.name),
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
            observed.push(format!("{} forbidden matches", hits.len()));
            for h in hits {
                o.push_detail(h);
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
            Some(re) => sources
                .iter()
                .flat_map(|s| {
                    re.captures_iter(s.bytes())
                        .filter_map(|c| c.get_group(1).or_else(|| c.get_group(0)))
                        .filter(|m| s.counts(m.range()))
                        .map(|m| {
                            let line = line_of(s.bytes(), m.start);
                            (
                                format!("{}:{line}", s.label),
                                String::from_utf8_lossy(&s.bytes()[m.range()]).into_owned(),
                            )
                        })
                        .collect::<Vec<_>>()
                })
                .collect(),
            None => vec![(
                match sources.as_slice() {
                    [one] => one.label.clone(),
                    many => format!("the text of {} sources", many.len()),
                },
                sources
                    .iter()
                    .map(|s| s.text().into_owned())
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
        let lower = trimmed.to_ascii_lowercase();
        found.extend(
            r.terms
                .iter()
                .filter(|term| lower.contains(&term.to_ascii_lowercase()))
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
    if files.len() < 2 || total < 4 << 20 {
        return;
    }
    let snap = ctx.snap;
    let (a, b) = files.split_at(files.len() / 2);
    std::thread::scope(|scope| {
        scope.spawn(|| b.iter().for_each(|f| drop(snap.read(f))));
        a.iter().for_each(|f| drop(snap.read(f)));
    });
}

/// Literal terms (lowercased) as one automaton, built once per process. Matching runs on
/// lowercased text, so the fast SIMD searcher applies where an ASCII-case-insensitive
/// automaton would have to step through every byte of prose.
fn terms(terms: &[String]) -> Option<(AhoCorasick, usize)> {
    type Cache = OnceLock<Mutex<HashMap<String, Option<(AhoCorasick, usize)>>>>;
    static CACHE: Cache = OnceLock::new();
    let cache = CACHE.get_or_init(|| Mutex::new(HashMap::new()));
    let mut cache = cache.lock().unwrap_or_else(|e| e.into_inner());
    cache
        .entry(terms.join("\u{0}"))
        .or_insert_with(|| {
            let lower: Vec<String> = terms.iter().map(|t| t.to_ascii_lowercase()).collect();
            let longest = lower.iter().map(String::len).max().unwrap_or(0);
            // A contiguous NFA builds in a fraction of a DFA's time (which would cost more
            // than a small build's whole scan) and searches nearly as fast behind the
            // prefilter.
            AhoCorasick::builder()
                .match_kind(MatchKind::LeftmostFirst)
                .kind(Some(AhoCorasickKind::ContiguousNFA))
                .build(&lower)
                .ok()
                .map(|ac| (ac, longest))
        })
        .clone()
}

/// Finds the terms in `bytes` ASCII-case-insensitively: lowercases a cache-sized chunk at a
/// time (with an overlap of the longest term) and searches it.
fn find_terms(ac: &AhoCorasick, longest: usize, bytes: &[u8]) -> Vec<(usize, usize, usize)> {
    const CHUNK: usize = 64 * 1024;
    let mut out = Vec::new();
    let mut buf = Vec::with_capacity(CHUNK + longest);
    let mut pos = 0;
    while pos < bytes.len() {
        let end = (pos + CHUNK + longest).min(bytes.len());
        buf.clear();
        buf.extend(bytes[pos..end].iter().map(u8::to_ascii_lowercase));
        for m in ac.find_iter(&buf) {
            // A match starting in the overlap belongs to the next chunk.
            if m.start() < CHUNK {
                out.push((pos + m.start(), pos + m.end(), m.pattern().as_usize()));
            }
        }
        pos += CHUNK;
    }
    out
}

/// Every forbidden match (regex or literal term), as `source:line: `what` matched "text"`,
/// in the order they occur. One scan per source for the regexes together and one for the
/// terms; only a regex hit compiles the individual patterns, to say which one matched.
fn forbidden(patterns: &[Pattern], literal: &[String], sources: &[Source]) -> Vec<String> {
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
    let total: usize = sources.iter().map(|s| s.bytes().len()).sum();
    if total < 4 << 20 || sources.len() < 2 {
        return scan(sources);
    }
    let (a, b) = sources.split_at(sources.len() / 2);
    std::thread::scope(|scope| {
        let second = scope.spawn(|| scan(b));
        let mut hits = scan(a);
        match second.join() {
            Ok(more) => hits.extend(more),
            // A panic in the scan is a bug; scan again here rather than lose the hits.
            Err(_) => hits.extend(scan(b)),
        }
        hits
    })
}

fn forbidden_in(
    patterns: &[Pattern],
    literal: &[String],
    combined: Option<&Regex>,
    automaton: Option<&(AhoCorasick, usize)>,
    sources: &[Source],
) -> Vec<String> {
    let mut hits = Vec::new();
    for s in sources {
        let bytes = s.bytes();
        let mut found: Vec<(usize, usize, String)> = Vec::new();
        if let Some((ac, longest)) = automaton {
            for (start, end, which) in find_terms(ac, *longest, bytes) {
                found.push((start, end, literal[which].clone()));
            }
        }
        if let Some(all) = combined {
            for m in all.find_iter(bytes) {
                let which = patterns[m.pattern().as_usize()].as_str();
                found.push((m.start(), m.end(), which.to_string()));
            }
        }
        found.retain(|(start, end, _)| s.counts(*start..*end));
        found.sort();
        let (mut line, mut counted_to) = (1, 0);
        for (start, end, which) in found {
            line += bytecount(&bytes[counted_to..start]);
            counted_to = start;
            let text = String::from_utf8_lossy(&bytes[start..end]);
            hits.push(format!(
                "{}:{line}: `{which}` matched \"{}\"",
                s.label,
                text.trim()
            ));
        }
    }
    hits
}

fn bytecount(b: &[u8]) -> usize {
    b.iter().filter(|&&c| c == b'\n').count()
}

fn line_of(b: &[u8], offset: usize) -> usize {
    bytecount(&b[..offset.min(b.len())]) + 1
}

#[cfg(test)]
#[allow(
    clippy::single_range_in_vec_init,
    reason = "`vec![a..b]` here is a list of one run, not the run's indices"
)]
mod tests {
    use super::*;

    fn field(label: &str, text: &str) -> Source {
        Source::field(label.into(), text.into())
    }

    #[test]
    fn terms_match_any_ascii_case_across_chunks() {
        let list = vec!["Gate Runner".to_string(), "BV-".to_string()];
        let (ac, longest) = terms(&list).unwrap();
        // Put one hit across the 64 KiB chunk boundary and one at the very end.
        let mut text = vec![b'x'; 64 * 1024 - 4];
        text.extend_from_slice(b"gATE rUNNER and bv-");
        let hits = find_terms(&ac, longest, &text);
        assert_eq!(
            hits,
            vec![
                (64 * 1024 - 4, 64 * 1024 + 7, 0),
                (64 * 1024 + 12, 64 * 1024 + 15, 1)
            ]
        );
    }

    #[test]
    fn forbidden_reports_lines_in_order_for_terms_and_patterns() {
        let patterns = vec![Pattern::try_from(r"(?-u:\b)REFINE(?-u:\b)".to_string()).unwrap()];
        let list = vec!["content map".to_string()];
        let src = field(
            "r.md",
            "fine\nthe Content Map says\nREFINED is ok\nbut REFINE is not\n",
        );
        let hits = forbidden(&patterns, &list, &[src]);
        assert_eq!(
            hits,
            vec![
                "r.md:2: `content map` matched \"Content Map\"".to_string(),
                "r.md:4: `(?-u:\\b)REFINE(?-u:\\b)` matched \"REFINE\"".to_string(),
            ]
        );
        assert!(forbidden(&patterns, &list, &[field("ok.md", "nothing here")]).is_empty());
    }

    #[test]
    fn snippets_need_length_and_required_language() {
        let t: Text = toml::from_str(
            r#"fields = ["X"]
               min_chars = 10
               require = { patterns = ['(?i)preserved', '(?i)changed', '(?i)next'], at_least = 2 }"#,
        )
        .unwrap();
        assert!(judge_snippet(&t, "we preserved the hero and changed the grid").0);
        let (ok, why) = judge_snippet(&t, "preserved everything");
        assert!(!ok);
        assert!(why.contains("1 of the required: (?i)preserved"), "{why}");
        assert!(!judge_snippet(&t, "changed").0, "too short");
    }

    fn binary(label: &str, bytes: Vec<u8>) -> Source {
        // Built by hand: hashing 64 MiB in a debug build would cost more than the search.
        let d = FileData {
            rel: label.into(),
            size: bytes.len() as u64,
            bytes,
            sha256: String::new(),
            mtime: None,
        };
        Source::file(label.into(), Arc::new(d))
    }

    /// OBS-07's forbid list, as in protocols/d10.toml.
    fn obs07() -> Vec<Pattern> {
        [
            r"(?i-u)GR-\d+\s*[:=]\s*(PASS|FAIL)",
            r"(?-u)(>=|<=|≥|≤)\s*\d",
            r"(?i-u)\b(fix|fixes|fixed|fixing|repair|repairs|repaired|repairing|address|addresses|addressed|addressing|correct|corrects|corrected|correcting|resolve|resolves|resolved|resolving)\b",
        ]
        .into_iter()
        .map(|p| Pattern::try_from(p.to_string()).unwrap())
        .collect()
    }

    #[test]
    fn readable_runs_are_maximal_and_at_least_min_long() {
        let min = MIN_READABLE_RUN;
        let text = |n: usize| vec![b'a'; n];
        // A run exactly `min` long counts, at the very start and at the very end; one byte
        // shorter does not.
        let mut b = text(min);
        b.push(0);
        b.extend(text(min - 1));
        b.push(0x01);
        b.extend(text(min));
        let end = b.len();
        assert_eq!(
            readable_runs(&b, min),
            vec![0..min, end - min..end],
            "runs of {min} count, {} does not",
            min - 1
        );
        // Tab, CR, LF and complete UTF-8 sequences (2, 3 and 4 bytes) continue a run; DEL, a
        // cut-off sequence and a lone continuation byte end one.
        let mut b = vec![0xff];
        b.extend("é\t≥ 7\r\n🦀 ok".as_bytes()); // 17 bytes
        b.push(0x7f);
        b.extend(b"ab");
        b.extend([0xe2, 0x89]); // ≥ cut short
        b.extend(b"cd");
        b.push(0x80);
        assert_eq!(readable_runs(&b, 17), vec![1..18]);
        assert_eq!(readable_runs(&b, 2), vec![1..18, 19..21, 23..25]);
        assert!(readable_runs(&b, 18).is_empty());
        assert!(readable_runs(b"", 1).is_empty());
    }

    #[test]
    fn a_hit_in_binary_counts_only_inside_one_readable_run() {
        let mut b = b"\x89PNG\r\n\x1a\n\x00\x00".to_vec();
        let text_at = b.len();
        b.extend(b"Comment: please fix it"); // 22 bytes, one run
        let text_end = b.len();
        b.extend(b"\x00\x89\x01fix\x02\xff\x00>=7\x00");
        let s = binary("a.png", b);
        assert_eq!(s.runs.as_deref(), Some(&vec![text_at..text_end][..]));
        assert!(s.counts(text_at + 16..text_at + 19), "`fix` inside the run");
        assert!(s.counts(text_at..text_end), "the whole run");
        assert!(
            !s.counts(text_at - 1..text_at + 3),
            "straddles the run's start"
        );
        assert!(
            !s.counts(text_end - 2..text_end + 1),
            "straddles the run's end"
        );
        let hits = forbidden(&obs07(), &[], &[s]);
        assert_eq!(
            hits,
            vec!["a.png:3: `(?i-u)\\b(fix|fixes|fixed|fixing|repair|repairs|repaired|repairing|address|addresses|addressed|addressing|correct|corrects|corrected|correcting|resolve|resolves|resolved|resolving)\\b` matched \"fix\"".to_string()],
            "only the planted sentence, with its line; not the chance `fix` or `>=7`"
        );
        // The same bytes without the NUL bytes are text: every hit counts.
        let text = field("a.txt", "\u{1}fix\u{2} >=7 ");
        assert_eq!(forbidden(&obs07(), &[], &[text]).len(), 2);
    }

    #[test]
    fn required_language_in_binary_counts_only_in_readable_runs() {
        let t: Text = toml::from_str(
            r#"files = ["a.bin"]
               require = { terms = ["preserved", "changed"], at_least = 2 }"#,
        )
        .unwrap();
        // `preserved` between NUL bytes is 9 bytes: no run, so no required word.
        let s = binary(
            "a.bin",
            b"\x00preserved\x00 we changed the grid and kept the rest\x00".to_vec(),
        );
        assert_eq!(s.text(), " we changed the grid and kept the rest");
        let (ok, why) = judge_snippet(&t, &s.text());
        assert!(!ok);
        assert!(why.contains("1 of the required: changed"), "{why}");
        // In a run it counts.
        let s = binary(
            "a.bin",
            b"\x00we preserved the hero, changed the grid\x00".to_vec(),
        );
        assert!(judge_snippet(&t, &s.text()).0);
    }

    /// Pseudo-random bytes from a fixed seed (SplitMix64), standing in for compressed image data.
    fn noise(len: usize) -> Vec<u8> {
        let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut out = Vec::with_capacity(len + 8);
        while out.len() < len {
            x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
            out.extend((z ^ (z >> 31)).to_le_bytes());
        }
        out.truncate(len);
        out
    }

    /// Searches `len` random bytes with OBS-07's patterns: (raw hits, hits that count).
    fn chance_hits(len: usize) -> (usize, usize) {
        let mut bytes = noise(len);
        bytes[0] = 0; // binary whatever the seed gives
        let raw = pattern::search(&obs07()).unwrap().find_iter(&bytes).count();
        (
            raw,
            forbidden(&obs07(), &[], &[binary("noise.png", bytes)]).len(),
        )
    }

    #[test]
    fn random_bytes_give_no_chance_hits() {
        let (raw, counted) = chance_hits(4 << 20);
        assert!(raw > 0, "the raw search does find chance hits in 4 MiB");
        assert_eq!(counted, 0, "{raw} raw chance hits");
    }

    /// The measurement behind [`MIN_READABLE_RUN`] (about 16 s in a debug build): `cargo test
    /// --lib chance_hits_in_64_mib -- --ignored --nocapture`.
    #[test]
    #[ignore = "64 MiB: slow in a debug build"]
    fn chance_hits_in_64_mib() {
        let (raw, counted) = chance_hits(64 << 20);
        println!("64 MiB of random bytes: {raw} raw OBS-07 hits, {counted} in readable runs");
        assert_eq!(counted, 0);
    }
}
