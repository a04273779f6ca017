//! A JSON document still being written: one that ends before the document does (a gate runner
//! appending entry after entry, a file caught between its creation and its first write), as
//! opposed to one that is wrong. What has been written so far is a valid beginning of a
//! document, and the parser stops at the end of the input, not at a byte it cannot read.
//!
//! [`closed_prefix`] recovers what is complete in such a file: the text up to the last value
//! that closes inside the document's containers, with those containers closed after it, so the
//! entries written so far can be read (a hand-entered entry among them is already there).

use serde::de::IgnoredAny;

/// Whether `bytes` (a leading UTF-8 byte-order mark aside) are a JSON document that ends early:
/// every byte so far is valid, and the parser ran out of input. Zero bytes (or only white
/// space) are a document not yet written, which ends early too.
pub fn ends_early(bytes: &[u8]) -> bool {
    let bytes = bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes);
    match serde_json::from_slice::<IgnoredAny>(bytes) {
        Ok(_) => false,
        Err(e) => e.classify() == serde_json::error::Category::Eof,
    }
}

/// The complete part of a document that ends early: the bytes up to the last `}` or `]` that
/// closes a value inside the outer containers, followed by the closing brackets of the
/// containers still open there. `None` when no value inside has closed yet, or when `bytes` are
/// not UTF-8 text (a UTF-16 file's brackets are two bytes each: it is not cut).
pub fn closed_prefix(bytes: &[u8]) -> Option<Vec<u8>> {
    if std::str::from_utf8(bytes).is_err() {
        return None;
    }
    let mut open: Vec<u8> = Vec::new();
    let mut in_string = false;
    let mut escaped = false;
    // (where to cut, the containers open there)
    let mut cut: Option<(usize, Vec<u8>)> = None;
    for (i, &b) in bytes.iter().enumerate() {
        if in_string {
            match b {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b'{' | b'[' => open.push(b),
            b'}' | b']' => {
                let want = if b == b'}' { b'{' } else { b'[' };
                if open.pop() != Some(want) {
                    // Not a valid beginning of a document: nothing to recover.
                    return None;
                }
                if !open.is_empty() {
                    cut = Some((i + 1, open.clone()));
                }
            }
            _ => {}
        }
    }
    let (at, still_open) = cut?;
    let mut out = bytes[..at].to_vec();
    for &c in still_open.iter().rev() {
        out.push(if c == b'{' { b'}' } else { b']' });
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_cut_short_ends_early_and_a_wrong_one_does_not() {
        for early in [
            "",
            "  \n",
            "{",
            "{\"gates\": [",
            "{\"gates\": [{\"id\": \"GR-01\", \"result\": \"PA",
            "[{\"id\": \"GR-01\"},",
            "\u{feff}{\"gates\": [",
        ] {
            assert!(ends_early(early.as_bytes()), "{early:?}");
        }
        for whole_or_wrong in [
            "{}",
            "{\"gates\": []}",
            "{\"gates\": [}",
            "{\"gates\": []} trailing",
            "not json",
            "{\"gates\": [{\"id\": 1,,",
        ] {
            assert!(!ends_early(whole_or_wrong.as_bytes()), "{whole_or_wrong:?}");
        }
    }

    #[test]
    fn the_complete_entries_written_so_far_are_recovered() {
        let text = "{\"gates\": [\n  {\"id\": \"GR-01\", \"result\": \"PASS\"},\n  {\"id\": \"GR-02\", \"note\": \"a } in a string\"},\n  {\"id\": \"GR-0";
        let closed = closed_prefix(text.as_bytes()).unwrap();
        let v: serde_json::Value = serde_json::from_slice(&closed).unwrap();
        assert_eq!(v["gates"].as_array().unwrap().len(), 2);
        assert_eq!(v["gates"][1]["note"], "a } in a string");
        let top = "[{\"id\": \"GR-01\"}, {\"id\": \"GR-02\"}, {\"id\"";
        let v: serde_json::Value =
            serde_json::from_slice(&closed_prefix(top.as_bytes()).unwrap()).unwrap();
        assert_eq!(v.as_array().unwrap().len(), 2);
        // Nothing closed inside yet, or brackets that do not pair: nothing to recover.
        assert_eq!(closed_prefix(b"{\"gates\": ["), None);
        assert_eq!(closed_prefix(b"{\"gates\": [}"), None);
    }
}
