//! Predicates over gate results: entries across every matching file combined,
//! each file parsed once per evaluation. A gate results file that cannot be read (over the
//! cap, a FIFO, permission denied, or where the walk could not look) may hold any entry, so a
//! result it could change is INCONCLUSIVE, never "absent" and never a clean pass.

use std::rc::Rc;

use super::{Ctx, Outcome, Verdict};
use crate::artifacts::gates::{same_gate, GateEntry, GateError, GateFile};
use crate::artifacts::json_prefix;
use crate::artifacts::normalize::{normalize_str, visible};
use crate::protocol::predicate::{EmptyResult, Gate, GateCount, GateFiles, GateSources, Glob};

struct Loaded {
    /// Each parsed file, shared with the evaluation's cache (never copied per predicate).
    parsed: Vec<Rc<Result<GateFile, GateError>>>,
    files: usize,
    /// Files that are not gate results, and entries that are not gate entries (whose files'
    /// other entries still count).
    errors: Vec<(String, GateError)>,
    unreadable: Vec<String>,
    /// How many of `unreadable` are files still being written (their JSON ends early).
    incomplete: usize,
}

fn load(ctx: &Ctx<'_>, glob: &Glob, o: &mut Outcome) -> Loaded {
    let (files, other) = ctx.files(glob);
    let mut loaded = Loaded {
        parsed: Vec::new(),
        files: files.len(),
        errors: Vec::new(),
        unreadable: other
            .iter()
            .map(|e| {
                format!(
                    "{}: {}",
                    e.rel,
                    e.note.as_deref().unwrap_or("not a regular file")
                )
            })
            .collect(),
        incomplete: 0,
    };
    loaded.unreadable.extend(ctx.hidden(glob));
    for e in files {
        // A file that cannot be read (over the cap, vanished) is undecidable, not invalid.
        let data = match ctx.read(&e.rel) {
            Ok(data) => data,
            Err(err) => {
                loaded.unreadable.push(format!("{}: {err}", e.rel));
                loaded.files -= 1;
                continue;
            }
        };
        o.push_file(ctx.file_ref(e));
        let parsed = ctx.gate_file(&e.rel);
        match parsed.as_ref() {
            Ok(file) => {
                for err in &file.invalid {
                    loaded.errors.push((e.rel.clone(), err.clone()));
                }
                loaded.parsed.push(parsed);
            }
            // A document that ends before it does is still being written (a runner streaming
            // its entries), not wrong: its complete entries count, the rest is not known yet.
            Err(err) if json_prefix::ends_early(&data.bytes) => {
                let so_far = json_prefix::closed_prefix(&data.bytes)
                    .and_then(|closed| crate::artifacts::gates::parse_gates(&closed, &e.rel).ok());
                let n = so_far.as_ref().map_or(0, |f| f.entries.len());
                loaded.unreadable.push(format!(
                    "{} is still being written: its JSON ends before the document does ({}); {n} complete entries so far",
                    e.rel,
                    error_line(&e.rel, err)
                ));
                loaded.incomplete += 1;
                if let Some(file) = so_far {
                    for err in &file.invalid {
                        loaded.errors.push((e.rel.clone(), err.clone()));
                    }
                    loaded.parsed.push(Rc::new(Ok(file)));
                }
            }
            Err(err) => loaded.errors.push((e.rel.clone(), err.clone())),
        }
    }
    loaded
}

impl Loaded {
    /// Every entry of every file that parsed, in file order.
    fn entries(&self) -> impl Iterator<Item = &GateEntry> {
        self.parsed
            .iter()
            .filter_map(|p| p.as_ref().as_ref().ok())
            .flat_map(|f| &f.entries)
    }

    /// How many files have an error (the whole file, or an entry of it).
    fn invalid_files(&self) -> usize {
        let mut files: Vec<&str> = self.errors.iter().map(|(f, _)| f.as_str()).collect();
        files.dedup();
        files.len()
    }
}

/// A gate value as a human reads it, for comparing: normalised (fullwidth, look-alike letters,
/// invisible characters, HTML references; see [`normalize_str`]), trimmed and lowercased.
fn read_as(value: &str) -> String {
    normalize_str(value).trim().to_lowercase()
}

/// A gate's result as a human reads its verdict: [`read_as`], past a leading mark (`✅ PASS`),
/// its first word when a note follows it (`PASS (3/3)`, `FAIL: 2 issues`), and a verb's forms
/// as the verb (`PASSED`, `passes`, `Passing` read `pass`; `FAILED` reads `fail`). A first word
/// run into more letters, digits or `_` is the whole value (`PASS_BUT_FLAKY` is no `pass`).
fn verdict_word(value: &str) -> String {
    let read = read_as(value);
    let start = read.trim_start_matches(|c: char| !c.is_alphanumeric());
    let end = start
        .find(|c: char| !c.is_alphabetic())
        .unwrap_or(start.len());
    let (word, rest) = start.split_at(end);
    if word.is_empty() || rest.starts_with(|c: char| c.is_alphanumeric() || c == '_') {
        return read;
    }
    let stem = ["ed", "es", "ing"]
        .iter()
        .find_map(|suffix| word.strip_suffix(suffix))
        .filter(|stem| matches!(*stem, "pass" | "fail"))
        .unwrap_or(word);
    stem.to_string()
}

/// A value as written, and what it reads as when that differs (`ｍａｎｕａｌ (reads "manual")`).
fn as_written(value: &str) -> String {
    let reads = normalize_str(value);
    if reads == value {
        visible(value)
    } else {
        format!("{} (reads \"{reads}\")", visible(value))
    }
}

fn describe(e: &GateEntry) -> String {
    format!(
        "{}[{}]: {} = {}{}",
        e.file,
        e.index,
        e.id,
        e.result
            .as_deref()
            .map_or_else(|| "(no result)".to_string(), as_written),
        e.source
            .as_deref()
            .map(|s| format!(", source {}", as_written(s)))
            .unwrap_or_default()
    )
}

fn error_line(file: &str, e: &GateError) -> String {
    if e.line > 0 {
        format!("{file}:{}:{}: {}", e.line, e.column, e.message)
    } else {
        format!("{file}: {}", e.message)
    }
}

pub(super) fn gate(ctx: &Ctx<'_>, g: &Gate) -> Outcome {
    let expected = match &g.result {
        Some(r) => format!("gate {} with result {r}", g.id),
        None if g.require_result == EmptyResult::Missing => format!("gate {} with a result", g.id),
        None => format!("gate {} present", g.id),
    };
    let mut o = Outcome::new(Verdict::Pass, expected, String::new());
    let loaded = load(ctx, &g.files, &mut o);
    let found: Vec<&GateEntry> = loaded
        .entries()
        .filter(|e| same_gate(&e.id, &g.id))
        .collect();
    for e in &found {
        o.push_detail(describe(e));
    }
    for u in &loaded.unreadable {
        o.push_detail(format!("cannot be read: {u}"));
    }
    if found.is_empty() && !loaded.unreadable.is_empty() {
        // The entry may be in the file that cannot be read.
        o.verdict = Verdict::Inconclusive;
        o.observed = vec![format!(
            "{} absent from {} gate entries in {} readable files; {} cannot be read",
            g.id,
            loaded.entries().count(),
            loaded.files,
            loaded.unreadable.len()
        )];
        return o;
    }
    if found.is_empty() {
        // An unparseable file may hide the entry; OBS-24 judges the file itself.
        o.verdict = Verdict::Missing;
        o.observed = vec![format!(
            "{} absent from {} gate entries in {} files{}",
            g.id,
            loaded.entries().count(),
            loaded.files,
            if loaded.errors.is_empty() {
                String::new()
            } else {
                format!(
                    " ({} files unparseable or with invalid entries)",
                    loaded.invalid_files()
                )
            }
        )];
        return o;
    }
    /// The result as read, for comparing ("" when there is none).
    fn result_of(e: &GateEntry) -> String {
        e.result.as_deref().map(verdict_word).unwrap_or_default()
    }
    /// The result as written, for the evidence.
    fn written(e: &GateEntry) -> &str {
        e.result.as_deref().map(str::trim).unwrap_or("")
    }
    if let Some(want) = &g.result {
        let wrong: Vec<&&GateEntry> = found
            .iter()
            .filter(|e| result_of(e) != verdict_word(want))
            .collect();
        if !wrong.is_empty() {
            let empty_only = wrong.iter().all(|e| result_of(e).is_empty());
            // A complete entry with another result: later entries for the gate add to
            // `found`, they cannot take this one back.
            o.stands = !empty_only;
            o.verdict = if !empty_only {
                Verdict::Fail
            } else if loaded.unreadable.is_empty() {
                Verdict::Missing
            } else {
                Verdict::Inconclusive
            };
            o.observed = vec![format!(
                "{}: {}",
                g.id,
                wrong
                    .iter()
                    .map(|e| written(e).to_string())
                    .map(|r| if r.is_empty() {
                        "(no result)".into()
                    } else {
                        r
                    })
                    .collect::<Vec<_>>()
                    .join(", ")
            )];
            return o;
        }
    } else if g.require_result == EmptyResult::Missing
        && found.iter().all(|e| result_of(e).is_empty())
    {
        o.verdict = if loaded.unreadable.is_empty() {
            Verdict::Missing
        } else {
            Verdict::Inconclusive
        };
        o.observed = vec![format!("{} has no result", g.id)];
        return o;
    }
    o.observed = vec![format!(
        "{} = {}",
        g.id,
        found
            .iter()
            .map(|e| written(e))
            .collect::<Vec<_>>()
            .join(", ")
    )];
    if !loaded.unreadable.is_empty() {
        // A file that cannot be read may hold another entry for the gate with another result.
        o.verdict = Verdict::Inconclusive;
        o.observed.push(format!(
            "{} gate results files cannot be read",
            loaded.unreadable.len()
        ));
    }
    o
}

pub(super) fn gate_files(ctx: &Ctx<'_>, g: &GateFiles) -> Outcome {
    let expected = format!(
        ">= {} gate results files matching `{}`, each valid",
        g.min_files,
        g.files.as_str()
    );
    let mut o = Outcome::new(Verdict::Pass, expected, String::new());
    let loaded = load(ctx, &g.files, &mut o);
    for u in &loaded.unreadable {
        o.push_detail(format!("cannot be read: {u}"));
    }
    for (file, err) in &loaded.errors {
        o.push_detail(error_line(file, err));
    }
    if !loaded.errors.is_empty() {
        o.verdict = Verdict::Fail;
        o.observed = vec![format!(
            "{} of {} files invalid",
            loaded.invalid_files(),
            loaded.files
        )];
    } else if loaded.unreadable.len() == loaded.incomplete && loaded.incomplete > 0 {
        // Still being written: waits, and FAILs only once due.
        o.verdict = Verdict::Missing;
        o.observed = vec![format!(
            "{} of {} files still being written (their JSON ends early)",
            loaded.incomplete, loaded.files
        )];
    } else if !loaded.unreadable.is_empty() {
        // Every one must parse; one that cannot be read cannot be judged.
        o.verdict = Verdict::Inconclusive;
        o.observed = vec![format!(
            "{} files readable, {} cannot be read",
            loaded.files,
            loaded.unreadable.len()
        )];
    } else if loaded.files < g.min_files {
        o.verdict = Verdict::Missing;
        o.observed = vec![format!("{} files", loaded.files)];
    } else {
        o.observed = vec![format!(
            "{} files, {} entries",
            loaded.files,
            loaded.entries().count()
        )];
    }
    o
}

pub(super) fn gate_count(ctx: &Ctx<'_>, g: &GateCount) -> Outcome {
    let expected = format!(">= {} gate entries", g.min);
    let mut o = Outcome::new(Verdict::Pass, expected, String::new());
    let loaded = load(ctx, &g.files, &mut o);
    let n = loaded.entries().count();
    o.observed = vec![format!("{n} entries in {} files", loaded.files)];
    if n < g.min {
        // Entries only add up: too few is unknown while a file cannot be read.
        o.verdict = if loaded.unreadable.is_empty() {
            Verdict::Missing
        } else {
            Verdict::Inconclusive
        };
        for u in &loaded.unreadable {
            o.push_detail(format!("cannot be read: {u}"));
        }
        for (file, err) in &loaded.errors {
            o.push_detail(error_line(file, err));
        }
    }
    o
}

pub(super) fn gate_sources(ctx: &Ctx<'_>, g: &GateSources) -> Outcome {
    let mut expected = String::from("no gate entry with a source");
    if !g.forbid_contains.is_empty() {
        expected.push_str(&format!(" containing {}", g.forbid_contains.join(" / ")));
    }
    if !g.forbid_equals.is_empty() {
        expected.push_str(&format!(" or equal to {}", g.forbid_equals.join(" / ")));
    }
    let mut o = Outcome::new(Verdict::Pass, expected, String::new());
    let loaded = load(ctx, &g.files, &mut o);
    for u in &loaded.unreadable {
        o.push_detail(format!("cannot be read: {u}"));
    }
    if loaded.files == 0 && !loaded.unreadable.is_empty() {
        o.verdict = Verdict::Inconclusive;
        o.observed = vec![format!(
            "no readable file matches `{}`; {} cannot be read",
            g.files.as_str(),
            loaded.unreadable.len()
        )];
        return o;
    }
    if loaded.files == 0 {
        o.verdict = Verdict::Missing;
        o.observed = vec![format!("no file matches `{}`", g.files.as_str())];
        return o;
    }
    let forbidden = |s: &str| {
        let l = read_as(s);
        g.forbid_contains
            .iter()
            .any(|c| l.contains(&c.to_lowercase()))
            || g.forbid_equals.iter().any(|e| l == e.to_lowercase())
    };
    let bad: Vec<&GateEntry> = loaded
        .entries()
        .filter(|e| e.source.as_deref().is_some_and(forbidden))
        .collect();
    o.observed = vec![format!(
        "{} of {} entries have a forbidden source",
        bad.len(),
        loaded.entries().count()
    )];
    if !bad.is_empty() {
        o.verdict = Verdict::Fail;
        // Each is a complete entry (a file still being written counts only the entries that
        // have closed): what its writer appends adds entries, it cannot take one back.
        o.stands = true;
        for e in bad {
            o.push_detail(describe(e));
        }
    } else if !loaded.errors.is_empty() && loaded.entries().next().is_none() {
        o.verdict = Verdict::Inconclusive;
        for (file, err) in &loaded.errors {
            o.push_detail(error_line(file, err));
        }
    } else if !loaded.unreadable.is_empty() {
        // No manual source among what was read; the unread file is not known to be clean.
        o.verdict = Verdict::Inconclusive;
        o.observed.push(format!(
            "{} gate results files cannot be read",
            loaded.unreadable.len()
        ));
    }
    o
}

#[cfg(test)]
mod tests {
    use super::verdict_word;

    #[test]
    fn a_result_reads_as_its_verdict_word() {
        for pass in [
            "PASS",
            "pass",
            " Passed ",
            "PASSES",
            "passing",
            "✅ PASS",
            "PASS (3/3)",
            "PASSED: DPR 2.0",
        ] {
            assert_eq!(verdict_word(pass), "pass", "{pass:?}");
        }
        for fail in ["FAILED", "❌ FAIL", "fail: 2 issues", "Failing"] {
            assert_eq!(verdict_word(fail), "fail", "{fail:?}");
        }
        for other in [
            "PASS_BUT_FLAKY",
            "PASS2",
            "passport",
            "not PASS",
            "",
            "—",
            "N/A",
        ] {
            assert_ne!(verdict_word(other), "pass", "{other:?}");
        }
    }
}
