//! Predicates about files on disk: existence, counts, expected sets of names, headings,
//! similarity of two files, and paths listed in the tracker. Where the walk could not look
//! ([`Ctx::hidden`]) a glob's matches are a lower bound: "none found" there is INCONCLUSIVE,
//! never missing, and a pass that an unseen entry could overturn is INCONCLUSIVE too.

use std::collections::BTreeMap;

use super::{unreadable, with_tracker, Ctx, Outcome, Verdict};
use crate::artifacts::{Entry, Kind as EntryKind, ReadError};
use crate::protocol::predicate::{
    Count, Dissimilar, FileSet, Glob, Heading, HeadingPlace, IfAbsent, KeyCase, PathsListed,
    Signature,
};

pub(super) fn exists(ctx: &Ctx<'_>, globs: &[Glob]) -> Outcome {
    let mut missing = Vec::new();
    let mut hidden = Vec::new();
    // A glob with no match and nowhere unseen to match decides "missing" for all of them.
    let mut surely_missing = false;
    let mut found = Vec::new();
    let mut refs = Vec::new();
    // Entries at a glob's names that are not what it names: present and wrong ([`Ctx::files`]
    // recorded them, so the check FAILs), or of a type that could not be examined (unknown).
    let mut others = Vec::new();
    for g in globs {
        let (hits, other) = ctx.files(g);
        refs.extend(hits.iter().take(20).map(|e| ctx.entry_ref(e)));
        match hits.first() {
            Some(e) => found.push(if hits.len() == 1 {
                e.rel.clone()
            } else {
                format!("{} (+{} more)", e.rel, hits.len() - 1)
            }),
            None if !other.is_empty() => {
                missing.push(format!("`{}`", g.as_str()));
                others.extend(other);
            }
            None => {
                missing.push(format!("`{}`", g.as_str()));
                let h = ctx.hidden(g);
                surely_missing |= h.is_empty();
                hidden.extend(h);
            }
        }
    }
    let expected = format!(
        "exists: {}",
        globs
            .iter()
            .map(|g| g.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    );
    if missing.is_empty() {
        let mut o = Outcome::pass(expected, format!("found {}", found.join(", ")));
        for r in refs {
            o.push_file(r);
        }
        o
    } else if !others.is_empty() && !surely_missing {
        let mut o = Outcome::new(
            Verdict::Inconclusive,
            expected,
            format!("what matches {} is not what it names", missing.join(", ")),
        );
        note_unreadable(&mut o, &others);
        for h in hidden {
            o.push_detail(h);
        }
        o
    } else if !surely_missing {
        // Nothing seen, but the walk could not look everywhere the glob reaches.
        let mut o = Outcome::new(
            Verdict::Inconclusive,
            expected,
            format!(
                "nothing seen matches {}, but part of the build directory cannot be listed",
                missing.join(", ")
            ),
        );
        for h in hidden {
            o.push_detail(h);
        }
        o
    } else {
        Outcome::new(
            Verdict::Missing,
            expected,
            format!("nothing matches {}", missing.join(", ")),
        )
    }
}

pub(super) fn count(ctx: &Ctx<'_>, c: &Count) -> Outcome {
    let (files, other) = ctx.files(&c.glob);
    let of_format = c
        .signature
        .as_ref()
        .map(|s| format!(" that are {} files", s.name))
        .unwrap_or_default();
    let expected = match (c.min, c.max) {
        (Some(min), Some(max)) => format!(
            "{min} to {max} files matching `{}`{of_format}",
            c.glob.as_str()
        ),
        (Some(min), None) => format!(">= {min} files matching `{}`{of_format}", c.glob.as_str()),
        (None, Some(max)) => format!("<= {max} files matching `{}`{of_format}", c.glob.as_str()),
        (None, None) => format!("files matching `{}`{of_format}", c.glob.as_str()),
    };
    let Signed {
        good: n,
        wrong,
        gone,
        observed,
        checked,
    } = match &c.signature {
        None => Signed {
            good: files.len(),
            wrong: Vec::new(),
            gone: Vec::new(),
            observed: format!("{} files match `{}`", files.len(), c.glob.as_str()),
            checked: 0,
        },
        Some(sig) => of_signature(ctx, &files, sig, c),
    };
    let checked = &files[..checked];
    let verdict = if c.max.is_some_and(|max| n > max) {
        Verdict::Fail
    } else if c.min.is_some_and(|min| n < min) {
        // Too few, and files are there that are not of the format: present and wrong.
        if wrong.is_empty() {
            Verdict::Missing
        } else {
            Verdict::Fail
        }
    } else {
        Verdict::Pass
    };
    let mut o = Outcome::new(verdict, expected, observed);
    for w in wrong.into_iter().chain(gone) {
        o.push_detail(w);
    }
    // The files whose first bytes were looked at (never hashed: only their heads were read).
    for e in checked {
        o.push_file(ctx.entry_ref(e));
    }
    note_unreadable(&mut o, &other);
    if verdict == Verdict::Missing && !other.is_empty() {
        // Too few files, but something that cannot be read sits where one is looked for.
        o.verdict = Verdict::Inconclusive;
    }
    // Unseen entries can only add: too many stands, too few (or a maximum) cannot be decided.
    let hidden = ctx.hidden(&c.glob);
    if !hidden.is_empty()
        && (verdict == Verdict::Missing || (verdict == Verdict::Pass && c.max.is_some()))
    {
        o.verdict = Verdict::Inconclusive;
        o.observed = vec![format!(
            "{n} files seen matching `{}`; part of the build directory cannot be listed",
            c.glob.as_str()
        )];
        for h in hidden {
            o.push_detail(h);
        }
    }
    o
}

/// What the first bytes of the files a count looked at said.
struct Signed {
    /// Files that begin with the signature.
    good: usize,
    /// Files there that do not (or cannot be read): present and wrong.
    wrong: Vec<String>,
    /// Files removed since the listing: not there, neither counted nor wrong.
    gone: Vec<String>,
    observed: String,
    /// How many of the files, in order, were looked at.
    checked: usize,
}

/// The first bytes of `files` against the signature ([`Signed`]). Only as many heads are read
/// as the bounds need: with a minimum and no maximum, the count stops at the minimum (30,000
/// screenshots are not opened to find that 24 are PNG files). A file whose head cannot be read
/// is neither good nor gone: it is wrong, and named.
fn of_signature(ctx: &Ctx<'_>, files: &[&Entry], sig: &Signature, c: &Count) -> Signed {
    let enough = match (c.min, c.max) {
        (Some(min), None) => min,
        _ => usize::MAX,
    };
    let mut good = 0;
    let mut checked = 0;
    let mut wrong = Vec::new();
    let mut gone = Vec::new();
    for e in files {
        if good >= enough {
            break;
        }
        checked += 1;
        match ctx.snap.head(&e.rel, sig.len()) {
            Ok(head) if sig.matches(&head) => good += 1,
            Ok(head) => wrong.push(format!(
                "{}: not a {} file: {}",
                e.rel,
                sig.name,
                describe_head(&head)
            )),
            // Removed since the listing (an editor's save, extra files cleared away): not there,
            // so neither counted nor of the wrong format. Its removal's event judges it again.
            Err(ReadError::NotFound(_)) => gone.push(format!(
                "{}: removed after the build directory was listed; not counted",
                e.rel
            )),
            Err(err) => wrong.push(format!("{}: cannot be read: {err}", e.rel)),
        }
    }
    let observed = if checked < files.len() {
        format!(
            "{} files match `{}`; the first {checked} checked, {good} begin with the {} signature",
            files.len(),
            c.glob.as_str(),
            sig.name
        )
    } else {
        format!(
            "{} files match `{}`, {good} begin with the {} signature",
            files.len(),
            c.glob.as_str(),
            sig.name
        )
    };
    Signed {
        good,
        wrong,
        gone,
        observed,
        checked,
    }
}

/// What a file begins with, for evidence: `0 bytes`, or its first bytes in hex and as text.
fn describe_head(head: &[u8]) -> String {
    if head.is_empty() {
        return "0 bytes".to_string();
    }
    let hex: Vec<String> = head.iter().map(|b| format!("{b:02X}")).collect();
    let text: String = head
        .iter()
        .map(|&b| {
            if (b.is_ascii_graphic() && b != b'`') || b == b' ' {
                b as char
            } else {
                '.'
            }
        })
        .collect();
    format!("begins with {} (`{text}`)", hex.join(" "))
}

fn note_unreadable(o: &mut Outcome, other: &[&Entry]) {
    for e in other {
        o.push_detail(format!(
            "{}: not counted: {}",
            e.rel,
            e.note.as_deref().unwrap_or("not a regular file")
        ));
    }
}

pub(super) fn file_set(ctx: &Ctx<'_>, f: &FileSet) -> Outcome {
    let (files, other) = ctx.files(&f.glob);
    if f.key.regex().is_none() {
        return Outcome::new(Verdict::Inconclusive, "file set", "uncompiled key pattern");
    }
    let mut keys: BTreeMap<String, Vec<&Entry>> = BTreeMap::new();
    let mut unkeyed = Vec::new();
    for e in &files {
        let name = e.name();
        match f.key.capture(name.as_bytes(), 1, false) {
            // Bytes, not `name[k]`: a byte-mode group may split a character.
            Some(k) => {
                let key = String::from_utf8_lossy(&name.as_bytes()[k]).into_owned();
                // With `ignore_case`, `a` is the expected `A`: one key, so both files are a
                // duplicate rather than one expected and one unexpected.
                let key = match f.ignore_case {
                    KeyCase::Ignored => f
                        .expect
                        .iter()
                        .find(|x| x.to_lowercase() == key.to_lowercase())
                        .cloned()
                        .unwrap_or(key),
                    KeyCase::Exact => key,
                };
                keys.entry(key).or_default().push(e)
            }
            None => unkeyed.push(e.rel.clone()),
        }
    }
    let expected_keys: Vec<&str> = f.expect.iter().map(|s| s.as_str()).collect();
    let missing: Vec<&str> = expected_keys
        .iter()
        .copied()
        .filter(|k| !keys.contains_key(*k))
        .collect();
    let unexpected: Vec<String> = keys
        .iter()
        .filter(|(k, _)| !expected_keys.contains(&k.as_str()))
        .flat_map(|(_, es)| es.iter().map(|e| e.rel.clone()))
        .chain(unkeyed)
        .collect();
    let duplicated: Vec<String> = keys
        .iter()
        .filter(|(k, es)| es.len() > 1 && expected_keys.contains(&k.as_str()))
        .map(|(k, es)| {
            format!(
                "{k}: {}",
                es.iter()
                    .map(|e| e.rel.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        })
        .collect();
    let expected = format!(
        "exactly one file matching `{}` for each of {}",
        f.glob.as_str(),
        expected_keys.join(", ")
    );
    let verdict = if !unexpected.is_empty() || !duplicated.is_empty() {
        Verdict::Fail
    } else if !missing.is_empty() {
        Verdict::Missing
    } else {
        Verdict::Pass
    };
    let mut observed = format!("{} files", files.len());
    if !missing.is_empty() {
        observed.push_str(&format!("; missing: {}", missing.join(", ")));
    }
    if !unexpected.is_empty() {
        observed.push_str(&format!("; unexpected: {}", unexpected.join(", ")));
    }
    if !duplicated.is_empty() {
        observed.push_str(&format!("; more than one for {}", duplicated.join("; ")));
    }
    let mut o = Outcome::new(verdict, expected, observed);
    for e in &files {
        o.push_file(ctx.entry_ref(e));
    }
    note_unreadable(&mut o, &other);
    if verdict == Verdict::Missing && !other.is_empty() {
        // A member is missing, but something that cannot be read matches where it is looked for.
        o.verdict = Verdict::Inconclusive;
    }
    // An unexpected or duplicated file stands; a full or short set may hide another one.
    let hidden = ctx.hidden(&f.glob);
    if !hidden.is_empty() && verdict != Verdict::Fail {
        o.verdict = Verdict::Inconclusive;
        o.observed
            .push("part of the build directory cannot be listed".to_string());
        for h in hidden {
            o.push_detail(h);
        }
    }
    o
}

pub(super) fn heading(ctx: &Ctx<'_>, h: &Heading) -> Outcome {
    let (files, other) = ctx.files(&h.files);
    let hashes = "#".repeat(h.level as usize);
    let expected = format!(
        "every `{}` has `{hashes} {}`{}",
        h.files.as_str(),
        h.text,
        if h.last == HeadingPlace::Last {
            " as its last level-2 heading".replace('2', &h.level.to_string())
        } else {
            String::new()
        }
    );
    let hidden = ctx.hidden(&h.files);
    if files.is_empty() && other.is_empty() && hidden.is_empty() {
        return Outcome::new(
            Verdict::Missing,
            expected,
            format!("no file matches `{}`", h.files.as_str()),
        );
    }
    let mut bad = Vec::new();
    let mut worst = Verdict::Pass;
    let mut o = Outcome::new(Verdict::Pass, expected, String::new());
    let want = h.text.trim().to_lowercase();
    // What is wrong with one file's headings, if anything.
    let judged = |e: &Entry, headings: Vec<(usize, String)>| {
        let mut found: Option<usize> = None;
        let mut last: Option<(usize, String)> = None;
        for (line, heading) in headings {
            if heading.trim().to_lowercase() == want && found.is_none() {
                found = Some(line);
            }
            last = Some((line, heading));
        }
        match (found, h.last == HeadingPlace::Last, last) {
            (None, _, _) => Some(format!("{}: no `{hashes} {}` heading", e.rel, h.text)),
            (Some(_), true, Some((line, l))) if l.trim().to_lowercase() != want => Some(format!(
                "{}:{line}: last level-{} heading is `{}`",
                e.rel,
                h.level,
                l.trim()
            )),
            _ => None,
        }
    };
    // A snapshot that bounds its memory (the daemon's) has each file judged as it is read and
    // let go; one that keeps them has megabytes of reports walked on two threads.
    let bounded = ctx.snap.limits().keep_bytes.is_some();
    let mut kept = Vec::new();
    for e in &files {
        let data = match ctx.read(&e.rel) {
            Ok(d) => d,
            Err(err) => {
                worst = worst.max(Verdict::Inconclusive);
                o.push_detail(format!("{}: {err}", e.rel));
                continue;
            }
        };
        o.push_file(Ctx::data_ref(&data));
        if bounded {
            bad.extend(judged(e, headings(&data.bytes, h.level)));
        } else {
            kept.push((*e, data));
        }
    }
    let bytes: usize = kept.iter().map(|(_, d)| d.bytes.len()).sum();
    let walked = super::on_two_threads(&kept, bytes >= super::SPLIT_BYTES, |part| {
        part.iter()
            .map(|(_, d)| headings(&d.bytes, h.level))
            .collect()
    });
    for ((e, _), headings) in kept.iter().zip(walked) {
        bad.extend(judged(e, headings));
    }
    for e in &other {
        worst = worst.max(Verdict::Inconclusive);
        o.push_detail(format!(
            "{}: cannot be read: {}",
            e.rel,
            e.note.as_deref().unwrap_or("not a regular file")
        ));
    }
    for u in hidden {
        worst = worst.max(Verdict::Inconclusive);
        o.push_detail(u);
    }
    if !bad.is_empty() {
        worst = Verdict::Fail;
    }
    o.verdict = worst;
    o.observed = vec![if bad.is_empty() {
        format!("{} files checked", files.len())
    } else {
        format!("{} of {} files lack it", bad.len(), files.len())
    }];
    for b in bad {
        o.push_detail(b);
    }
    o
}

/// Headings of one level (ATX or setext) outside code and HTML blocks, read as seen:
/// (line, text).
fn headings(text: &[u8], level: u8) -> Vec<(usize, String)> {
    crate::artifacts::markdown::headings(text)
        .into_iter()
        .filter(|h| h.level == level)
        .map(|h| (h.at.line, h.text))
        .collect()
}

pub(super) fn dissimilar(ctx: &Ctx<'_>, d: &Dissimilar) -> Outcome {
    let expected = format!(
        "`{}` and `{}` not near-identical (word similarity < {})",
        d.files[0].as_str(),
        d.files[1].as_str(),
        d.threshold
    );
    let mut texts = Vec::new();
    let mut o = Outcome::new(Verdict::Pass, expected, String::new());
    for g in &d.files {
        let (files, other) = ctx.files(g);
        match (files.first(), other.first()) {
            (Some(e), _) => match ctx.read(&e.rel) {
                Ok(data) => {
                    o.push_file(Ctx::data_ref(&data));
                    texts.push(data);
                }
                Err(err) => {
                    let mut u = unreadable(&e.rel, &err);
                    u.expected = o.expected.clone();
                    return u;
                }
            },
            (None, Some(e)) => {
                return Outcome::new(
                    Verdict::Inconclusive,
                    o.expected[0].clone(),
                    format!(
                        "{}: {}",
                        e.rel,
                        e.note.as_deref().unwrap_or("not a regular file")
                    ),
                )
            }
            (None, None) if !ctx.hidden(g).is_empty() => {
                let mut u = Outcome::new(
                    Verdict::Inconclusive,
                    o.expected[0].clone(),
                    format!(
                        "`{}` not seen: part of the build directory cannot be listed",
                        g.as_str()
                    ),
                );
                for h in ctx.hidden(g) {
                    u.push_detail(h);
                }
                return u;
            }
            (None, None) => {
                let verdict = match d.if_absent {
                    Some(IfAbsent::Pass) => Verdict::Pass,
                    _ => Verdict::Missing,
                };
                o.verdict = verdict;
                o.observed = vec![format!("`{}` absent: not compared", g.as_str())];
                return o;
            }
        }
    }
    // Compared by their words as read: a prompt re-wrapped, joined or saved as UTF-16 is
    // the same prompt.
    let ratio = crate::artifacts::normalize::seen::similarity(&texts[0].bytes, &texts[1].bytes);
    o.observed = vec![format!("word similarity {ratio:.3}")];
    if ratio >= d.threshold {
        o.verdict = Verdict::Fail;
    }
    o
}

pub(super) fn paths_listed(ctx: &Ctx<'_>, p: &PathsListed) -> Outcome {
    let expected = format!(
        "every path in the `{}` table's `{}` column exists",
        p.section, p.column
    );
    let tracker = match with_tracker(ctx) {
        Ok(t) => t,
        Err(mut o) => {
            o.expected = vec![expected];
            return o;
        }
    };
    let tracker_file = ctx.tracker_file();
    let filter = crate::artifacts::tracker::SectionFilter {
        text: p.section.clone(),
        exact: false,
    };
    let Some(table) = tracker.table_in(&filter, &p.column) else {
        return Outcome::new(
            Verdict::Missing,
            expected,
            format!(
                "no `{}` table with a `{}` column in {tracker_file}",
                p.section, p.column
            ),
        );
    };
    let root = ctx.snap.root();
    let mut missing = Vec::new();
    let mut unknown = Vec::new();
    let mut checked = 0;
    let mut skipped = 0;
    let mut o = Outcome::new(Verdict::Pass, expected, String::new());
    for (line, cell) in tracker.column(table, &p.column) {
        let raw = cell.trim().trim_matches('`').trim();
        if crate::artifacts::tracker::is_empty_value(raw) {
            continue;
        }
        let replaced = raw.replace("{BUILD_DIR}", "");
        let rel =
            if std::path::Path::new(&replaced).is_absolute() && !raw.starts_with("{BUILD_DIR}") {
                match std::path::Path::new(&replaced).strip_prefix(root) {
                    Ok(r) => r.to_string_lossy().into_owned(),
                    Err(_) => {
                        missing.push(format!(
                            "{tracker_file}:{line}: `{raw}` is outside the build directory"
                        ));
                        continue;
                    }
                }
            } else {
                replaced
                    .trim_start_matches("./")
                    .trim_start_matches('/')
                    .to_string()
            };
        // Listed paths are looked up in the same escaped form as the snapshot's names.
        let rel = crate::artifacts::escape_name(rel.trim_end_matches('/').as_bytes()).into_owned();
        let name = rel.rsplit('/').next().unwrap_or(&rel);
        if p.skip.iter().any(|g| g.is_match(name)) {
            skipped += 1;
            continue;
        }
        if rel.split('/').any(|c| c == "..") {
            missing.push(format!(
                "{tracker_file}:{line}: `{raw}` leaves the build directory"
            ));
            continue;
        }
        checked += 1;
        match ctx.snap.get(&rel) {
            Some(e) if e.kind != EntryKind::Other => o.push_file(ctx.entry_ref(e)),
            Some(e) => missing.push(format!(
                "{tracker_file}:{line}: `{raw}`: {}",
                e.note.as_deref().unwrap_or("not a regular file")
            )),
            None if rel.is_empty() => {}
            None => match ctx.snap.unlisted_at(&rel) {
                // It may well exist where the walk could not look: unknown, not missing.
                Some(u) => {
                    unknown.push(format!("{tracker_file}:{line}: `{raw}`: {}", u.describe()))
                }
                None => missing.push(format!("{tracker_file}:{line}: `{raw}` does not exist")),
            },
        }
    }
    o.observed = vec![format!(
        "{checked} paths checked, {} missing, {skipped} referee files skipped",
        missing.len()
    )];
    if !missing.is_empty() {
        o.verdict = Verdict::Fail;
    } else if !unknown.is_empty() {
        o.verdict = Verdict::Inconclusive;
        o.observed.push(format!(
            "{} cannot be looked for (part of the build directory cannot be listed)",
            unknown.len()
        ));
    }
    for m in missing.into_iter().chain(unknown) {
        o.push_detail(m);
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn headings_skip_comments_and_read_setext() {
        let text = "## A\n<!--\n## Hidden\n-->\nCompletion Manifest\n---\n~~~md\n## Example\n~~~\n";
        let h = headings(text.as_bytes(), 2);
        assert_eq!(h, vec![(1, "A".into()), (5, "Completion Manifest".into())]);
    }

    #[test]
    fn headings_skip_fences_and_other_levels() {
        let text = "# T\n## A\n```\n## Not\n```\n### Sub\n## Completion Manifest ##\n";
        let h = headings(text.as_bytes(), 2);
        assert_eq!(h, vec![(2, "A".into()), (7, "Completion Manifest".into())]);
    }

    /// Megabytes of reports (past the split into two threads), one without the heading, one
    /// with it but not last, judged alike whether the snapshot keeps them or not.
    #[test]
    fn heading_rules_read_megabytes_of_reports_alike_kept_or_bounded() {
        use crate::artifacts::{Limits, Snapshot};
        use crate::protocol::Protocol;
        let d = tempfile::tempdir().unwrap();
        let body = "A line of prose about what the auditor saw at this width.\n".repeat(25_000);
        let report = |name: &str, tail: &str| {
            let text = format!("# Audit\n\n## Findings\n{body}{tail}");
            std::fs::write(d.path().join(name), text).unwrap();
        };
        report("p3b-pa-auditor-A.md", "## Completion Manifest\ndone\n");
        report("p3b-pa-auditor-B.md", "## Notes\nnone\n");
        report(
            "p3b-pa-auditor-C.md",
            "## Completion Manifest\ndone\n## Notes\n",
        );
        report("p3b-pa-auditor-D.md", "```\n## Completion Manifest\n```\n");
        let rule = r#"{ heading = { files = "p3b-pa-auditor-*.md", level = 2, text = "Completion Manifest", last = true } }"#;
        let p: crate::protocol::predicate::Predicate =
            toml::from_str::<toml::Table>(&format!("p = {rule}")).unwrap()["p"]
                .clone()
                .try_into()
                .unwrap();
        let protocol = Protocol::load("d10").unwrap();
        let judged = |keep_bytes| {
            let limits = Limits {
                keep_bytes,
                ..Limits::default()
            };
            let snap = Snapshot::scan(d.path(), limits).unwrap();
            let o = super::super::judge(&Ctx::new(&protocol, &snap), &p);
            (o.verdict, o.observed, o.details, o.files.len())
        };
        let kept = judged(None);
        assert_eq!(kept.0, Verdict::Fail);
        assert_eq!(kept.1, ["3 of 4 files lack it"]);
        assert_eq!(
            kept.2,
            [
                "p3b-pa-auditor-B.md: no `## Completion Manifest` heading",
                "p3b-pa-auditor-C.md:25006: last level-2 heading is `Notes`",
                "p3b-pa-auditor-D.md: no `## Completion Manifest` heading",
            ]
        );
        assert_eq!(kept.3, 4);
        assert_eq!(judged(Some(1 << 10)), kept);
    }

    #[test]
    fn on_two_threads_keeps_the_order_and_hands_out_one_item_at_a_time() {
        use std::sync::atomic::{AtomicUsize, Ordering};
        let items: Vec<u32> = (0..101).collect();
        let twice = |part: &[u32]| part.iter().map(|x| x * 2).collect::<Vec<_>>();
        let want: Vec<u32> = (0..101).map(|x| x * 2).collect();
        assert_eq!(super::super::on_two_threads(&items, true, twice), want);
        assert_eq!(super::super::on_two_threads(&items, false, twice), want);
        // On two threads each item is its own call; on one, a single call.
        let calls = AtomicUsize::new(0);
        let count = |part: &[u32]| {
            calls.fetch_add(1, Ordering::Relaxed);
            part.to_vec()
        };
        super::super::on_two_threads(&items, true, count);
        assert_eq!(calls.swap(0, Ordering::Relaxed), items.len());
        super::super::on_two_threads(&items, false, count);
        assert_eq!(calls.load(Ordering::Relaxed), 1);
    }

    #[test]
    fn on_two_threads_does_again_what_a_panicking_second_thread_took() {
        let items: Vec<u32> = (0..64).collect();
        let main = std::thread::current().id();
        // Slow enough that the second thread takes some items, and it panics on every one.
        let f = |part: &[u32]| {
            std::thread::sleep(std::time::Duration::from_micros(300));
            assert_eq!(std::thread::current().id(), main, "the second thread fails");
            part.iter().map(|x| x + 1).collect::<Vec<_>>()
        };
        let got = super::super::on_two_threads(&items, true, f);
        assert_eq!(got, (1..65).collect::<Vec<u32>>());
    }
}
