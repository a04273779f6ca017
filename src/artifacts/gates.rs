//! Gate results (`p3a-gate-results*.json`): the gate runner's verdict per gate.
//!
//! This module owns turning one gate-results file into [`GateEntry`] values, accepting the canonical
//! `{"gates": [...]}` form and a bare top-level array, which gate an id names ([`same_gate`]), and
//! deciding whether a recorded source means the result was entered by hand. It must not read files
//! (callers pass the bytes from a snapshot), must not combine files or judge results (the checks do),
//! and must never panic or overflow the stack on hostile input: malformed JSON, invalid UTF-8 and deep
//! nesting become a [`GateError`] with a position. One bad entry is reported with its index and
//! line:column and never discards the others: a manual source beside it must still be seen. A key
//! written twice in one object (see [`super::json_keys`]) reads two ways: its entry is a bad entry,
//! and outside the entries the file is invalid.

use std::fmt;

use serde_json::Value;

use super::json_keys::{duplicate_keys, line_column, path_text, Duplicate, Step};
use super::normalize::seen;

/// One gate-results file: its entries, and the entries that could not be read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct GateFile {
    pub entries: Vec<GateEntry>,
    /// One error per entry that is not a gate entry (not an object, no id), with its position.
    pub invalid: Vec<GateError>,
}

/// One gate's entry in a gate-results file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateEntry {
    /// From `id`, else `gate`: a string, or a number as written (`61`).
    pub id: String,
    /// From `result`, else `status`; numbers and booleans are stringified, `null` is `None`.
    pub result: Option<String>,
    /// From `source`, when present and not `null`.
    pub source: Option<String>,
    /// The file the entry came from, as given to [`parse_gates`].
    pub file: String,
    /// 0-based position within its file.
    pub index: usize,
}

/// Why a gate-results file could not be used. `line` and `column` are 1-based, or 0 when the problem
/// has no position (e.g. the wrong top-level shape).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GateError {
    pub message: String,
    pub line: usize,
    pub column: usize,
}

impl fmt::Display for GateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.line == 0 {
            write!(f, "{}", self.message)
        } else {
            write!(
                f,
                "{} at line {}, column {}",
                self.message, self.line, self.column
            )
        }
    }
}

impl std::error::Error for GateError {}

const SHAPE: &str = "expected an object with a `gates` array or an array of gate entries";

/// Parses one gate-results file. `file` is recorded in each entry (and is not used otherwise).
///
/// A leading UTF-8 byte-order mark is ignored. An empty array yields no entries. A file that is not
/// JSON, or not one of the two shapes, is an error; an entry that is not an object with a string or
/// number `id` (or `gate`; keys in any case) is reported in [`GateFile::invalid`] with its index and position, and the
/// other entries are kept.
pub fn parse_gates(bytes: &[u8], file: &str) -> Result<GateFile, GateError> {
    // UTF-16 or UTF-32 (PowerShell 5.1's `Out-File` writes UTF-16LE with a mark) is decoded;
    // positions are then the decoded text's (the same lines).
    let decoded = seen::utf8_bytes(bytes);
    let bytes: &[u8] = &decoded;
    let text = std::str::from_utf8(bytes).map_err(|e| {
        let offset = e.valid_up_to();
        let (line, column) = line_column(bytes, offset);
        GateError {
            message: format!("not valid UTF-8 (invalid byte at offset {offset})"),
            line,
            column,
        }
    })?;
    // Python's `json` writes a float that is not finite as `NaN`, `Infinity` or `-Infinity`
    // (its default, `allow_nan=True`) and reads it back: read so, as a number.
    let nonfinite = finite_numbers(text);
    let (text, bytes): (&str, &[u8]) = match &nonfinite {
        Some(t) => (t, t.as_bytes()),
        None => (text, bytes),
    };
    // serde_json stops at a nesting depth of 128, so deep nesting is an error, not a stack overflow.
    let value: Value = serde_json::from_str(text).map_err(|e| syntax_error(&e))?;
    // serde_json kept the last of two equal keys; a human may read the first. Which entry each
    // duplicate is in: the top-level array's elements, or the top-level `gates` array's.
    let in_gates = value.is_object();
    let mut twice: Vec<(usize, GateError)> = Vec::new();
    for d in duplicate_keys(bytes, READ_KEYS).map_err(|e| {
        let (line, column) = line_column(bytes, e.at);
        GateError {
            message: format!("invalid JSON: {}", e.message),
            line,
            column,
        }
    })? {
        let entry = match (in_gates, d.path.as_slice()) {
            (false, [Step::Index(i), ..]) => Some((*i, format!("[{i}]"))),
            (true, [Step::Key(k), Step::Index(i), ..]) if k == "gates" => {
                Some((*i, format!("gates[{i}]")))
            }
            _ => None,
        };
        let err = duplicate_error(bytes, &d, entry.as_ref().map(|(_, p)| p.as_str()));
        match entry {
            // An entry read two ways is not a gate entry; the file's other entries still count.
            Some((i, _)) if !twice.iter().any(|(j, _)| *j == i) => twice.push((i, err)),
            Some(_) => {}
            // Outside the entries (two `gates` arrays): the whole file reads two ways.
            None => return Err(err),
        }
    }
    let (items, prefix) = match value {
        Value::Array(items) => (items, ""),
        Value::Object(mut map) => match map.remove("gates") {
            Some(Value::Array(items)) => (items, "gates"),
            Some(other) => {
                return Err(shape_error(format!(
                    "{SHAPE}, found `gates` as {}",
                    describe(&other)
                )))
            }
            None => {
                return Err(shape_error(format!(
                    "{SHAPE}, found an object without `gates`"
                )))
            }
        },
        other => return Err(shape_error(format!("{SHAPE}, found {}", describe(&other)))),
    };
    let offsets = element_offsets(bytes, !prefix.is_empty());
    let offsets = (offsets.len() == items.len()).then_some(offsets);
    let mut parsed = GateFile::default();
    for (index, item) in items.into_iter().enumerate() {
        if let Some(pos) = twice.iter().position(|(i, _)| *i == index) {
            parsed.invalid.push(twice.swap_remove(pos).1);
            continue;
        }
        match entry(item, index, &format!("{prefix}[{index}]"), file) {
            Ok(e) => parsed.entries.push(e),
            Err(mut err) => {
                if let Some(&offset) = offsets.as_ref().and_then(|o| o.get(index)) {
                    (err.line, err.column) = line_column(bytes, offset);
                }
                parsed.invalid.push(err);
            }
        }
    }
    Ok(parsed)
}

/// The keys this module reads in any case (`Source` is `source`): written twice in one object
/// in any two spellings, they make it read two ways.
const READ_KEYS: &[&str] = &["gates", "id", "gate", "result", "status", "source"];

/// The error for a key written twice, at its second occurrence: in the entry at `entry`
/// (`gates[3]`), or elsewhere in the file.
fn duplicate_error(bytes: &[u8], d: &Duplicate, entry: Option<&str>) -> GateError {
    let (line, column) = line_column(bytes, d.at);
    let (first_line, first_column) = line_column(bytes, d.first_at);
    let first = match d.first == d.key {
        true => String::new(),
        false => format!(" as `{}`", d.first),
    };
    let place = match entry {
        Some(p) => format!("gate entry `{p}` has"),
        None if d.path.is_empty() => "the top-level object has".to_string(),
        None => format!("the object at `{}` has", path_text(&d.path)),
    };
    GateError {
        message: format!(
            "{place} `{}` twice (first{first} at line {first_line}, column {first_column}); \
             a reader could take either",
            d.key
        ),
        line,
        column,
    }
}

/// Whether an entry's id names the gate `wanted`, as a careful reader of a gate-results file
/// would: ignoring case and surrounding space; `GR-61`, `GR61`, `gr_61` and `GR-061` are one
/// gate; and a bare number (`61`, `"61"`) names gate 61 of whatever series is asked for, since a
/// gate-results file numbers its own gates.
pub fn same_gate(id: &str, wanted: &str) -> bool {
    let (id, wanted) = (seen::key(id), seen::key(wanted));
    let (id, wanted) = (id.as_str(), wanted.as_str());
    if id.eq_ignore_ascii_case(wanted) {
        return true;
    }
    match (split_number(id), split_number(wanted)) {
        (Some((prefix, n)), Some((want_prefix, want_n))) => {
            n == want_n && (prefix.is_empty() || prefix.eq_ignore_ascii_case(want_prefix))
        }
        _ => false,
    }
}

/// `GR-061` → (`GR`, `61`): the prefix without a trailing `-`, `_` or space, and the trailing
/// digits without leading zeros. `None` when the id does not end in digits.
fn split_number(id: &str) -> Option<(&str, &str)> {
    let digits = id.len() - id.trim_end_matches(|c: char| c.is_ascii_digit()).len();
    if digits == 0 {
        return None;
    }
    let (prefix, number) = id.split_at(id.len() - digits);
    let number = number.trim_start_matches('0');
    Some((prefix.trim_end_matches(['-', '_', ' ']), number))
}

/// Where each element of the entries array starts (byte offsets): the top-level array's, or
/// the top-level `"gates"` member's (there is one: a second makes the file invalid first).
/// Runs only on text that parsed as JSON, so tracking strings and depth is enough.
fn element_offsets(text: &[u8], in_gates: bool) -> Vec<usize> {
    let want_depth = if in_gates { 2 } else { 1 };
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut collecting = false;
    let mut expect_element = false;
    let mut last_string: Option<(usize, usize)> = None;
    let mut key_is_gates = false;
    let mut i = 0;
    while i < text.len() {
        let b = text[i];
        if b.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        if expect_element && b != b']' {
            out.push(i);
        }
        expect_element = false;
        match b {
            b'"' => {
                let start = i + 1;
                i += 1;
                while i < text.len() && text[i] != b'"' {
                    i += if text[i] == b'\\' { 2 } else { 1 };
                }
                if depth == 1 {
                    last_string = Some((start, i.min(text.len())));
                }
            }
            b':' if depth == 1 => {
                key_is_gates = last_string.and_then(|(s, e)| text.get(s..e)) == Some(b"gates");
            }
            b'[' | b'{' => {
                depth += 1;
                if b == b'[' && depth == want_depth && (!in_gates || key_is_gates) {
                    out.clear();
                    collecting = true;
                    expect_element = true;
                }
            }
            b']' | b'}' => {
                if depth == want_depth {
                    collecting = false;
                }
                depth = depth.saturating_sub(1);
            }
            b',' if collecting && depth == want_depth => expect_element = true,
            _ => {}
        }
        i += 1;
    }
    out
}

/// Whether a source says the result was entered by hand: read as a human reads it (fullwidth or
/// look-alike letters, invisible characters; see [`crate::artifacts::normalize::normalize_str`]), lowercased and trimmed, it
/// contains `manual` or `hand`, or equals `human` or `orchestrator`.
pub fn is_manual_source(source: &str) -> bool {
    let s = crate::artifacts::normalize::normalize_str(source)
        .trim()
        .to_lowercase();
    s.contains("manual") || s.contains("hand") || s == "human" || s == "orchestrator"
}

fn entry(item: Value, index: usize, path: &str, file: &str) -> Result<GateEntry, GateError> {
    let Value::Object(map) = item else {
        return Err(shape_error(format!(
            "gate entry `{path}` is not an object but {}",
            describe(&item)
        )));
    };
    // Keys as they read, in any case: `"Source"`, `"ѕource"` (Cyrillic), `"sour\u200bce"`
    // and a fullwidth `"ｓｏｕｒｃｅ"` all name the source.
    let get = |key: &str| {
        map.get(key).or_else(|| {
            map.iter()
                .find(|(k, _)| seen::key(k).eq_ignore_ascii_case(key))
                .map(|(_, v)| v)
        })
    };
    let id = match (get("id"), get("gate")) {
        (Some(Value::String(id)), _) => id.clone(),
        (Some(Value::Number(n)), _) => n.to_string(),
        (None | Some(Value::Null), Some(Value::String(id))) => id.clone(),
        (None | Some(Value::Null), Some(Value::Number(n))) => n.to_string(),
        _ => {
            return Err(shape_error(format!(
                "gate entry `{path}` has no string or number `id` (or `gate`)"
            )))
        }
    };
    if id.trim().is_empty() {
        return Err(shape_error(format!(
            "gate entry `{path}` has an empty `id`"
        )));
    }
    let result = match get("result") {
        None | Some(Value::Null) => get("status").and_then(scalar_text),
        Some(value) => scalar_text(value),
    };
    Ok(GateEntry {
        id,
        result,
        source: get("source").and_then(scalar_text),
        file: file.to_string(),
        index,
    })
}

/// Strings as-is, numbers and booleans stringified, `null` as `None`; arrays and objects as compact
/// JSON so that the evidence shows what was there.
fn scalar_text(value: &Value) -> Option<String> {
    match value {
        Value::Null => None,
        Value::String(s) => Some(s.clone()),
        Value::Bool(b) => Some(b.to_string()),
        Value::Number(n) => Some(n.to_string()),
        Value::Array(_) | Value::Object(_) => Some(value.to_string()),
    }
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn shape_error(message: String) -> GateError {
    GateError {
        message,
        line: 0,
        column: 0,
    }
}

/// `text` with each `NaN`, `Infinity` and `-Infinity` outside a string (Python's `json` writes
/// them for floats that are not finite) written as `0` padded with spaces to the same length,
/// so every position in the file stays where it was; `None` when there is none. A number is
/// never a gate's id or result, so the value read in its place changes no verdict.
fn finite_numbers(text: &str) -> Option<String> {
    let b = text.as_bytes();
    let mut out: Option<Vec<u8>> = None;
    let (mut i, mut in_string) = (0, false);
    while i < b.len() {
        let c = b[i];
        if in_string {
            match c {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        if c == b'"' {
            in_string = true;
            i += 1;
            continue;
        }
        let word = [&b"-Infinity"[..], b"Infinity", b"NaN"]
            .into_iter()
            .find(|w| b[i..].starts_with(w));
        let starts = i == 0 || !b[i - 1].is_ascii_alphanumeric();
        if let (Some(w), true) = (word, starts) {
            let end = i + w.len();
            if b.get(end).is_none_or(|n| !n.is_ascii_alphanumeric()) {
                let o = out.get_or_insert_with(|| b.to_vec());
                o[i] = b'0';
                o[i + 1..end].fill(b' ');
                i = end;
                continue;
            }
        }
        i += 1;
    }
    // Only ASCII was replaced by ASCII: still UTF-8.
    out.and_then(|o| String::from_utf8(o).ok())
}

/// serde_json's message without its " at line L column C" suffix (the position is kept separately).
fn syntax_error(err: &serde_json::Error) -> GateError {
    let full = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    let message = full.strip_suffix(&suffix).unwrap_or(&full);
    GateError {
        message: format!("invalid JSON: {message}"),
        line: err.line(),
        column: err.column(),
    }
}

#[cfg(test)]
mod tests;
