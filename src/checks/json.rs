//! Predicates over structured files any protocol can use (issue 18 §4): `json` (a value in a
//! JSON file, found by a JSON pointer and compared) and `parses` with `files` (every matching
//! file parses by its type, `crate::syntax`).
//!
//! A JSON file is read as strictly as its meaning: invalid JSON, or a key written twice in one
//! object (`crate::artifacts::json_keys`, which serde_json would read as its last member) is the
//! file present and wrong, a FAIL naming the place. A file the referee cannot read (over the
//! read cap, permission denied) is INCONCLUSIVE with the cause; something at the file's name that
//! is not a regular file is present and wrong (`Ctx::files`). Numbers compare as numbers: two
//! integers exactly, otherwise as 64-bit floats (`1e0 == 1`); a string is never taken for a
//! number. This module must not write anything or run anything but the protocol's own syntax
//! commands.

use std::path::PathBuf;

use serde_json::Value;
use struson::reader::{JsonReader, JsonStreamReader, ReaderSettings, ValueType};

use super::{clip, Ctx, Outcome, Verdict};
use crate::artifacts::json_keys::{duplicate_keys, line_column, path_text, value_kind};
use crate::protocol::predicate::{Json, Parses};

/// How much of a value the evidence quotes.
const QUOTE_CHARS: usize = 120;

/// `json = { file, path, ... }`: every file matching `file` holds a value at `path` that passes
/// every test. No file yet is missing (the check waits); a file that is not strict JSON, lacks
/// the value or whose value fails a test FAILs.
pub(super) fn json(ctx: &Ctx<'_>, j: &Json) -> Outcome {
    let tests = j.tests();
    let expected = format!(
        "`{}` at `{}`{}",
        j.file.as_str(),
        if j.path.is_empty() {
            "(document)"
        } else {
            &j.path
        },
        if tests.is_empty() {
            " is strict JSON".to_string()
        } else {
            format!(": {}", tests.join(", "))
        }
    );
    let tokens = match j.tokens() {
        Ok(t) => t,
        Err(m) => return Outcome::new(Verdict::Inconclusive, expected, m.to_string()),
    };
    let (files, other) = ctx.files(&j.file);
    let hidden = ctx.hidden(&j.file);
    if files.is_empty() && other.is_empty() && hidden.is_empty() {
        return Outcome::new(
            Verdict::Missing,
            expected,
            format!("no file matches `{}`", j.file.as_str()),
        );
    }
    let mut o = Outcome::new(Verdict::Pass, expected, String::new());
    let mut fails = Vec::new();
    let mut unknown = Vec::new();
    let mut passed = Vec::new();
    for e in &files {
        let data = match ctx.read(&e.rel) {
            Ok(d) => d,
            Err(err) => {
                unknown.push(format!("{}: {err}", e.rel));
                continue;
            }
        };
        o.push_file(Ctx::data_ref(&data));
        // UTF-16 or UTF-32 is decoded (by the mark or the NUL pattern), a UTF-8 mark dropped.
        let decoded = crate::artifacts::normalize::seen::utf8_bytes(&data.bytes);
        let bytes: &[u8] = &decoded;
        match strict_json(&e.rel, bytes) {
            Ok(doc) => match judge_value(&e.rel, bytes, &doc, &tokens, j) {
                Judged::Holds(line) => passed.push(line),
                Judged::Fails(line) => fails.push(line),
            },
            // A file that is not strict JSON is present and wrong: `not` or `if` must not read
            // "no such score" into a file that reads two ways (or none).
            Err(why) => {
                o.wrong = true;
                fails.push(why.to_string());
            }
        }
    }
    for e in &other {
        // What certainly is not a file was recorded present and wrong by `Ctx::files`; what
        // could not be examined is unknown.
        unknown.push(format!(
            "{}: cannot be read: {}",
            e.rel,
            e.note.as_deref().unwrap_or("not a regular file")
        ));
    }
    unknown.extend(hidden);
    o.verdict = if !fails.is_empty() {
        Verdict::Fail
    } else if !unknown.is_empty() {
        Verdict::Inconclusive
    } else {
        Verdict::Pass
    };
    o.observed = vec![match o.verdict {
        Verdict::Fail => format!("{} of {} file(s) fail", fails.len(), files.len()),
        Verdict::Inconclusive => format!("{} file(s) could not be read", unknown.len()),
        _ => format!("{} file(s) pass", passed.len()),
    }];
    for d in fails.into_iter().chain(unknown).chain(passed) {
        o.push_detail(d);
    }
    o
}

/// Why a file is not strict JSON; each message starts with `file:line:column:`, and is the
/// evidence line of the check that read it.
#[derive(Debug, thiserror::Error)]
enum NotStrict {
    /// The bytes are not UTF-8.
    #[error("{}:{line}:{column}: not valid UTF-8, so not JSON", path.display())]
    NotUtf8 {
        path: PathBuf,
        line: usize,
        column: usize,
        #[source]
        source: std::str::Utf8Error,
    },
    /// Not valid JSON (serde_json's reading: nesting deeper than 128 is one).
    #[error("{}:{}:{}: invalid JSON: {source}", path.display(), source.line(), source.column())]
    Invalid {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    /// Not valid JSON as the duplicate-key reader found it.
    #[error("{}:{line}:{column}: invalid JSON: {message}", path.display())]
    Unreadable {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// One object holds a key twice: serde_json kept the last, a human may read the first.
    #[error(
        "{}:{line}:{column}: key `{key}` written twice in {object} (first at {}:{first_line}:{first_column}); a reader could take either",
        path.display(),
        path.display()
    )]
    DuplicateKey {
        path: PathBuf,
        key: String,
        object: String,
        line: usize,
        column: usize,
        first_line: usize,
        first_column: usize,
    },
}

/// The document, if the file is strict JSON (UTF-8, valid, no key twice in one object); else
/// why not, at `file:line:column`.
fn strict_json(rel: &str, bytes: &[u8]) -> Result<Value, NotStrict> {
    let path = || PathBuf::from(rel);
    let text = std::str::from_utf8(bytes).map_err(|source| {
        let (line, column) = line_column(bytes, source.valid_up_to());
        NotStrict::NotUtf8 {
            path: path(),
            line,
            column,
            source,
        }
    })?;
    // serde_json stops at a nesting depth of 128: deep nesting is an error, not a stack overflow.
    let doc: Value = serde_json::from_str(text).map_err(|source| NotStrict::Invalid {
        path: path(),
        source,
    })?;
    // serde_json kept the last of two equal keys; a human may read the first.
    match duplicate_keys(bytes, &[]) {
        Ok(d) if d.is_empty() => {}
        Ok(d) => {
            let d = &d[0];
            let (first_line, first_column) = line_column(bytes, d.first_at);
            let (line, column) = line_column(bytes, d.at);
            let object = match d.path.is_empty() {
                true => "the top-level object".to_string(),
                false => format!("the object at `{}`", path_text(&d.path)),
            };
            return Err(NotStrict::DuplicateKey {
                path: path(),
                key: d.key.clone(),
                object,
                line,
                column,
                first_line,
                first_column,
            });
        }
        Err(u) => {
            let (line, column) = line_column(bytes, u.at);
            return Err(NotStrict::Unreadable {
                path: path(),
                line,
                column,
                message: u.message,
            });
        }
    }
    Ok(doc)
}

/// One document judged, as its evidence line (which starts with `file:line:column:` where the
/// value's place is known).
enum Judged {
    /// The value meets the rule: the value quoted.
    Holds(String),
    /// It does not: the value quoted and why.
    Fails(String),
}

/// One document judged against the rule `j`.
fn judge_value(rel: &str, bytes: &[u8], doc: &Value, tokens: &[String], j: &Json) -> Judged {
    let shown = if j.path.is_empty() {
        "(document)"
    } else {
        &j.path
    };
    let value = lookup(doc, tokens);
    let place = match value.and(locate(bytes, tokens)) {
        Some(at) => {
            let (line, col) = line_column(bytes, at);
            format!("{rel}:{line}:{col}")
        }
        None => rel.to_string(),
    };
    let Some(value) = value else {
        return match j.exists {
            Some(false) => Judged::Holds(format!("{rel}: `{shown}` is absent")),
            _ => Judged::Fails(format!("{rel}: no value at `{shown}`")),
        };
    };
    let quoted = clip(&value.to_string(), QUOTE_CHARS);
    if j.exists == Some(false) {
        return Judged::Fails(format!("{place}: `{shown}` = {quoted}, expected absent"));
    }
    let failed = failures(value, j);
    if failed.is_empty() {
        Judged::Holds(format!("{place}: `{shown}` = {quoted}"))
    } else {
        Judged::Fails(format!(
            "{place}: `{shown}` = {quoted}: {}",
            failed.join("; ")
        ))
    }
}

/// The value at the pointer's tokens (an array index is a decimal number without leading zeros).
fn lookup<'v>(doc: &'v Value, tokens: &[String]) -> Option<&'v Value> {
    tokens.iter().try_fold(doc, |v, t| match v {
        Value::Object(m) => m.get(t),
        Value::Array(a) => index(t).and_then(|i| a.get(i)),
        _ => None,
    })
}

fn index(t: &str) -> Option<usize> {
    if t.is_empty() || (t.len() > 1 && t.starts_with('0')) || !t.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    t.parse().ok()
}

/// The byte offset where the value at the pointer starts (the file is known to be valid JSON
/// with no duplicate key, so the first matching member is the only one).
fn locate(bytes: &[u8], tokens: &[String]) -> Option<usize> {
    let settings = ReaderSettings {
        track_path: false,
        restrict_number_values: false,
        ..ReaderSettings::default()
    };
    let mut r = JsonStreamReader::new_custom(bytes, settings);
    for t in tokens {
        match r.peek().ok()? {
            ValueType::Object => {
                r.begin_object().ok()?;
                loop {
                    if !r.has_next().ok()? {
                        return None;
                    }
                    if r.next_name().ok()? == t {
                        break;
                    }
                    r.skip_value().ok()?;
                }
            }
            ValueType::Array => {
                let i = index(t)?;
                r.begin_array().ok()?;
                for _ in 0..i {
                    if !r.has_next().ok()? {
                        return None;
                    }
                    r.skip_value().ok()?;
                }
                if !r.has_next().ok()? {
                    return None;
                }
            }
            _ => return None,
        }
    }
    r.peek().ok()?;
    r.current_position(false)
        .data_pos
        .and_then(|p| usize::try_from(p).ok())
}

/// Every test the value fails, said as `expected >= 0.8`.
fn failures(v: &Value, j: &Json) -> Vec<String> {
    let mut out = Vec::new();
    let kind = value_kind(v);
    for (op, bound) in [(">=", j.ge), ("<=", j.le), (">", j.gt), ("<", j.lt)] {
        let Some(bound) = bound else { continue };
        let Some(n) = v.as_f64().filter(|_| v.is_number()) else {
            out.push(format!("expected {op} {bound}, found {kind}, not a number"));
            continue;
        };
        let ok = match op {
            ">=" => n >= bound,
            "<=" => n <= bound,
            ">" => n > bound,
            _ => n < bound,
        };
        if !ok {
            out.push(format!("expected {op} {bound}"));
        }
    }
    if let Some(want) = &j.eq {
        if !same(v, want) {
            out.push(format!("expected == {want}"));
        }
    }
    if let Some(want) = &j.ne {
        if same(v, want) {
            out.push(format!("expected != {want}"));
        }
    }
    if let Some(list) = &j.one_of {
        if !list.iter().any(|w| same(v, w)) {
            out.push(format!("expected in {}", Value::Array(list.clone())));
        }
    }
    if let Some(p) = &j.matches {
        match v.as_str() {
            Some(s) => {
                let hit = p.regex().map(|re| re.is_match(s.as_bytes()));
                match hit {
                    Some(true) => {}
                    Some(false) => out.push(format!("expected to match `{}`", p.as_str())),
                    None => out.push(format!("the pattern `{}` cannot be compiled", p.as_str())),
                }
            }
            None => out.push(format!(
                "expected a string matching `{}`, found {kind}",
                p.as_str()
            )),
        }
    }
    out
}

/// JSON equality with numbers compared as numbers: two integers exactly, else as floats.
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => {
            if let (Some(a), Some(b)) = (x.as_i64(), y.as_i64()) {
                return a == b;
            }
            if let (Some(a), Some(b)) = (x.as_u64(), y.as_u64()) {
                return a == b;
            }
            // One integer beyond i64 and the other negative are never equal; a float compares
            // as a float.
            (x.is_f64() || y.is_f64()) && x.as_f64() == y.as_f64()
        }
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, a)| y.get(k).is_some_and(|b| same(a, b)))
        }
        _ => a == b,
    }
}

/// `parses = { files = [...] }`: every regular file matching a glob parses by its type (the
/// built-in parsers, plus the protocol's command rules). No file yet is missing; a file of a
/// type no parser applies to is listed, not judged.
pub(super) fn parses_files(ctx: &Ctx<'_>, spec: &Parses) -> Outcome {
    let globs = spec.files.as_ref().map_or(&[][..], |f| f.as_slice());
    let expected = format!(
        "every file matching {} parses",
        globs
            .iter()
            .map(|g| format!("`{}`", g.as_str()))
            .collect::<Vec<_>>()
            .join(", ")
    );
    let commands: Vec<crate::syntax::CommandRule> =
        spec.commands.iter().map(|c| c.rule()).collect();
    let mut fails = Vec::new();
    let mut unknown = Vec::new();
    let mut parsed = Vec::new();
    let mut unjudged = Vec::new();
    let mut o = Outcome::new(Verdict::Pass, expected, String::new());
    let mut seen = std::collections::BTreeSet::new();
    let mut any = false;
    for g in globs {
        let (files, other) = ctx.files(g);
        any |= !files.is_empty() || !other.is_empty();
        for e in other {
            any = true;
            unknown.push(format!(
                "{}: cannot be read: {}",
                e.rel,
                e.note.as_deref().unwrap_or("not a regular file")
            ));
        }
        unknown.extend(ctx.hidden(g));
        for e in files {
            if !seen.insert(e.rel.as_str()) {
                continue;
            }
            let data = match ctx.read(&e.rel) {
                Ok(d) => d,
                Err(err) => {
                    unknown.push(format!("{}: {err}", e.rel));
                    continue;
                }
            };
            o.push_file(Ctx::data_ref(&data));
            let abs = ctx.snap.root().join(&e.rel);
            let outcome = crate::syntax::check(&e.rel, &data.bytes, &abs, &commands);
            match outcome {
                crate::syntax::Outcome::Parsed { .. } => parsed.push(outcome.evidence(&e.rel)),
                crate::syntax::Outcome::Invalid { .. } => fails.push(outcome.evidence(&e.rel)),
                crate::syntax::Outcome::Inconclusive { .. } => {
                    unknown.push(outcome.evidence(&e.rel))
                }
                crate::syntax::Outcome::NotApplicable => unjudged.push(e.rel.clone()),
            }
        }
    }
    if !any && unknown.is_empty() {
        o.verdict = Verdict::Missing;
        o.observed = vec!["no file matches".into()];
        return o;
    }
    (o.verdict, o.observed) = if !fails.is_empty() {
        (
            Verdict::Fail,
            vec![format!("{} file(s) do not parse", fails.len())],
        )
    } else if !unknown.is_empty() {
        (
            Verdict::Inconclusive,
            vec![format!("{} file(s) could not be checked", unknown.len())],
        )
    } else {
        (
            Verdict::Pass,
            vec![format!(
                "{} file(s) parse, {} of a type with no syntax check",
                parsed.len(),
                unjudged.len()
            )],
        )
    };
    for d in fails.into_iter().chain(unknown).chain(parsed) {
        o.push_detail(d);
    }
    if !unjudged.is_empty() {
        o.push_detail(format!(
            "not judged (no syntax check for the type): {}",
            unjudged.join(", ")
        ));
    }
    o
}

#[cfg(test)]
mod tests;
