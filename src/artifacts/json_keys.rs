//! Duplicate keys in a JSON text (issue 16 §3): a reader that sees what serde_json hides.
//!
//! `{"source": "manual", "source": "gate-runner"}` is valid JSON that a parser reads as its last
//! member and a human as either; so is `{"Source": …, "source": …}` to a reader that takes keys
//! in any case. This module owns finding every such key, with the byte offsets of both
//! occurrences and the path to the object holding them, in one streaming pass (`struson`, no
//! recursion, nesting capped like serde_json's). It must not decide what a duplicate means (the
//! caller makes it a FAIL of the file or of the entry it is in), must not build values, and must
//! never panic: a text it cannot read is an [`Unreadable`] with an offset.

use std::collections::HashMap;

use struson::reader::{JsonReader, JsonStreamReader, ReaderSettings, ValueType};

use super::normalize::seen;

/// One step from the top of the document down to a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// An array element, 0-based.
    Index(usize),
    /// An object member, by its (decoded) key.
    Key(String),
}

/// A key written a second time in one object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    /// The path to the object holding the key (empty for the top-level object).
    pub path: Vec<Step>,
    /// The key as written the first time and the second time (decoded; they differ in case
    /// when only the case-folded form repeats).
    pub first: String,
    pub key: String,
    /// Byte offsets of the opening quote of each.
    pub first_at: usize,
    pub at: usize,
}

/// The text is not JSON the reader accepts (the caller has usually parsed it already, so this
/// is rare): why, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unreadable {
    pub message: String,
    pub at: usize,
}

/// Every duplicate key in `text`, in document order. Keys repeat when they read the same
/// after decoding escapes (`"sou\u0072ce"` is `source`), as a human reads them
/// ([`seen::key`]: `"sour\u200bce"`, a Cyrillic `"ѕource"` and a fullwidth `"ｓｏｕｒｃｅ"` are
/// `source`); a key whose reading, lowercased, is in `folded` also repeats one of another
/// case (`Source` after `source`).
pub fn duplicate_keys(text: &[u8], folded: &[&str]) -> Result<Vec<Duplicate>, Unreadable> {
    let settings = ReaderSettings {
        track_path: false,
        // Numbers are skipped, never parsed: whatever serde_json took is taken.
        restrict_number_values: false,
        ..ReaderSettings::default()
    };
    let mut reader = JsonStreamReader::new_custom(text, settings);
    let mut scan = Scan {
        folded,
        stack: Vec::new(),
        path: Vec::new(),
        found: Vec::new(),
    };
    if let Err(e) = scan.run(&mut reader) {
        return Err(Unreadable {
            message: e.to_string(),
            at: offset(&reader),
        });
    }
    let at = offset(&reader);
    reader
        .consume_trailing_whitespace()
        .map_err(|e| Unreadable {
            message: e.to_string(),
            at,
        })?;
    Ok(scan.found)
}

/// 1-based line and column (in bytes) of a byte offset, for evidence.
pub fn line_column(bytes: &[u8], offset: usize) -> (usize, usize) {
    let before = &bytes[..offset.min(bytes.len())];
    let line = 1 + before.iter().filter(|&&b| b == b'\n').count();
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    (line, before.len() - line_start + 1)
}

/// A path as evidence shows it: `gates[2].notes`.
pub fn path_text(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Index(i) => out.push_str(&format!("[{i}]")),
            Step::Key(k) if out.is_empty() => out.push_str(k),
            Step::Key(k) => out.push_str(&format!(".{k}")),
        }
    }
    out
}

/// What a JSON value is, for evidence: `a string`, `an array`, `null`.
pub fn value_kind(v: &serde_json::Value) -> &'static str {
    use serde_json::Value;
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// An object or array being read, and whether a step of `path` leads to it.
enum Frame {
    Object {
        /// Key as read → (as written, offset), and case-folded.
        exact: HashMap<String, (String, usize)>,
        folded: HashMap<String, (String, usize)>,
        stepped: bool,
    },
    Array {
        next: usize,
        stepped: bool,
    },
}

struct Scan<'f> {
    folded: &'f [&'f str],
    stack: Vec<Frame>,
    path: Vec<Step>,
    found: Vec<Duplicate>,
}

impl Scan<'_> {
    fn run(&mut self, r: &mut JsonStreamReader<&[u8]>) -> Result<(), struson::reader::ReaderError> {
        self.value(r, false)?;
        while let Some(top) = self.stack.last_mut() {
            match top {
                Frame::Object { .. } if r.has_next()? => {
                    let at = offset(r);
                    let key = r.next_name_owned()?;
                    self.key(key.clone(), at);
                    self.path.push(Step::Key(key));
                    self.value(r, true)?;
                }
                Frame::Array { next, .. } if r.has_next()? => {
                    self.path.push(Step::Index(*next));
                    *next += 1;
                    self.value(r, true)?;
                }
                Frame::Object { stepped, .. } => {
                    let stepped = *stepped;
                    r.end_object()?;
                    self.close(stepped);
                }
                Frame::Array { stepped, .. } => {
                    let stepped = *stepped;
                    r.end_array()?;
                    self.close(stepped);
                }
            }
        }
        Ok(())
    }

    /// Starts reading a value: a container is opened (and read by `run`'s loop), anything else
    /// skipped. `stepped`: a step of `path` leads to it.
    fn value(
        &mut self,
        r: &mut JsonStreamReader<&[u8]>,
        stepped: bool,
    ) -> Result<(), struson::reader::ReaderError> {
        match r.peek()? {
            ValueType::Object => {
                r.begin_object()?;
                self.stack.push(Frame::Object {
                    exact: HashMap::new(),
                    folded: HashMap::new(),
                    stepped,
                });
            }
            ValueType::Array => {
                r.begin_array()?;
                self.stack.push(Frame::Array { next: 0, stepped });
            }
            _ => {
                r.skip_value()?;
                if stepped {
                    self.path.pop();
                }
            }
        }
        Ok(())
    }

    fn close(&mut self, stepped: bool) {
        self.stack.pop();
        if stepped {
            self.path.pop();
        }
    }

    /// Records `key` (at byte `at`) in the object being read, and a duplicate if it repeats.
    fn key(&mut self, key: String, at: usize) {
        let Some(Frame::Object { exact, folded, .. }) = self.stack.last_mut() else {
            return;
        };
        let read = seen::key(&key);
        let lower = read.to_lowercase();
        let first = match exact.get(&read) {
            Some((first, first_at)) => Some((first.clone(), *first_at)),
            None if self.folded.contains(&lower.as_str()) => folded.get(&lower).cloned(),
            None => None,
        };
        match first {
            Some((first, first_at)) => self.found.push(Duplicate {
                path: self.path.clone(),
                first,
                key,
                first_at,
                at,
            }),
            None => {
                if self.folded.contains(&lower.as_str()) {
                    folded.insert(lower, (key.clone(), at));
                }
                exact.insert(read, (key, at));
            }
        }
    }
}

/// The reader's byte offset (0 if it cannot say, which a reader of a byte slice always can).
fn offset(r: &JsonStreamReader<&[u8]>) -> usize {
    r.current_position(false)
        .data_pos
        .and_then(|p| usize::try_from(p).ok())
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FOLDED: &[&str] = &["gates", "source"];

    #[test]
    fn line_column_counts_lines_and_columns() {
        assert_eq!(line_column(b"abc", 0), (1, 1));
        assert_eq!(line_column(b"abc", 2), (1, 3));
        assert_eq!(line_column(b"a\nbc", 3), (2, 2));
        assert_eq!(line_column(b"a\n", 2), (2, 1));
        assert_eq!(line_column(b"", 5), (1, 1));
    }

    #[test]
    fn path_text_reads_like_a_path() {
        let p = [
            Step::Key("gates".into()),
            Step::Index(2),
            Step::Key("notes".into()),
        ];
        assert_eq!(path_text(&p), "gates[2].notes");
        assert_eq!(path_text(&[]), "");
    }

    fn dups(text: &str) -> Vec<(Vec<Step>, String, String, usize, usize)> {
        duplicate_keys(text.as_bytes(), FOLDED)
            .unwrap()
            .into_iter()
            .map(|d| (d.path, d.first, d.key, d.first_at, d.at))
            .collect()
    }

    fn key(k: &str) -> Step {
        Step::Key(k.to_string())
    }

    #[test]
    fn no_duplicates_in_ordinary_json() {
        assert!(dups(r#"{"gates": [{"id": "a", "source": "x"}, {"id": "b"}]}"#).is_empty());
        assert!(dups(r#"[1, "two", null, true, {"a": {"a": {"a": 1}}}, []]"#).is_empty());
        assert!(dups("42").is_empty());
        // Equal keys in different objects are not duplicates.
        assert!(dups(r#"[{"source": 1}, {"source": 2}]"#).is_empty());
    }

    #[test]
    fn an_exact_duplicate_has_both_offsets_and_its_path() {
        let text = r#"{"gates": [{"id": "a"}, {"source": "manual", "source": "gate-runner"}]}"#;
        let first = text.find(r#""source""#).unwrap();
        let second = text.rfind(r#""source""#).unwrap();
        assert_eq!(
            dups(text),
            [(
                vec![key("gates"), Step::Index(1)],
                "source".to_string(),
                "source".to_string(),
                first,
                second
            )]
        );
    }

    #[test]
    fn case_folds_only_the_keys_asked_for() {
        let text = r#"{"Source": "manual", "source": "x", "Id": 1, "id": 2}"#;
        let found = dups(text);
        assert_eq!(found.len(), 1, "{found:?}");
        assert_eq!(
            (found[0].1.as_str(), found[0].2.as_str()),
            ("Source", "source")
        );
        assert_eq!(found[0].3, 1);
        assert_eq!(found[0].4, text.find(r#""source""#).unwrap());
        // Exact duplicates count whatever the key.
        assert_eq!(dups(r#"{"Id": 1, "Id": 2}"#).len(), 1);
    }

    #[test]
    fn two_arrays_under_one_key_and_nested_objects() {
        let text = "{\"gates\": [1],\n \"x\": {\"y\": {\"z\": 1, \"z\": 2}},\n \"gates\": []}";
        let found = dups(text);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].0, vec![key("x"), key("y")]);
        assert_eq!(found[1].0, Vec::<Step>::new());
        assert_eq!(found[1].4, text.rfind("\"gates\"").unwrap());
        // Three times is two duplicates of the first.
        let found = dups(r#"{"a": 1, "a": 2, "a": 3}"#);
        assert_eq!(found.len(), 2);
        assert!(found.iter().all(|d| d.3 == 1));
    }

    #[test]
    fn escaped_keys_are_compared_decoded() {
        let found = dups(r#"{"source": 1, "sou\u0072ce": 2, "\u0053ource": 3}"#);
        assert_eq!(found.len(), 2, "{found:?}");
        assert_eq!(found[0].2, "source");
        assert_eq!(found[1].2, "Source");
    }

    #[test]
    fn paths_count_array_elements_and_pop_after_scalars() {
        let text = r#"[[0, {"a": 1}], {"k": [1, 2, {"b": 1, "b": 2}]}]"#;
        let found = dups(text);
        assert_eq!(
            found[0].0,
            vec![Step::Index(1), key("k"), Step::Index(2)],
            "{found:?}"
        );
    }

    #[test]
    fn bad_json_is_unreadable_never_a_panic() {
        for text in ["", "{", r#"{"a" 1}"#, "[1,]", "[] []", "{'a': 1}"] {
            assert!(duplicate_keys(text.as_bytes(), FOLDED).is_err(), "{text:?}");
        }
        let deep = "[".repeat(100_000);
        let err = duplicate_keys(deep.as_bytes(), FOLDED).unwrap_err();
        assert!(err.at > 0 && err.at <= 200, "{err:?}");
        let closed = format!("{}{}", "[".repeat(100), "]".repeat(100));
        assert!(duplicate_keys(closed.as_bytes(), FOLDED).is_ok());
        // Large numbers serde_json takes are taken.
        assert!(duplicate_keys(b"[1e400, 123456789012345678901234567890]", FOLDED).is_ok());
    }
}
