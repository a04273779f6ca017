//! Names as text: [`escape_name`], the injective, one-line escape every `rel` is made with.

#[cfg(test)]
use std::path::Path;

/// Strips any leading `./` so callers may write either form.
pub(super) fn normalize_rel(rel: &str) -> &str {
    let mut rel = rel;
    while let Some(rest) = rel.strip_prefix("./") {
        rel = rest;
    }
    rel
}

/// Escapes one path (or name) for use as a `rel`: valid UTF-8 stays as it is except that a
/// backslash becomes `\\`, control characters become `\n`, `\r`, `\t` or `\xNN` (C1 and
/// the Unicode line, paragraph and bidirectional controls `\u{NNNN}`), and each byte of invalid
/// UTF-8 becomes `\xNN` (always >= 0x80, so never confused with an escaped control). The
/// escape is injective, so distinct names stay distinct, and its output is one line of text
/// that cannot forge a line in a markdown file. Borrowed when nothing needed escaping.
pub fn escape_name(bytes: &[u8]) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    use std::fmt::Write;
    let needs = |c: char| c == '\\' || needs_escape(c);
    // Most names are printable ASCII: tested a byte at a time, without decoding characters
    // (a listing of 30,000 screenshots escapes 30,000 names).
    let printable = |b: &u8| (b' '..=b'~').contains(b) && *b != b'\\';
    if bytes.iter().all(printable) {
        if let Ok(s) = std::str::from_utf8(bytes) {
            return Cow::Borrowed(s);
        }
    }
    if let Ok(s) = std::str::from_utf8(bytes) {
        if !s.chars().any(needs) {
            return Cow::Borrowed(s);
        }
    }
    let mut out = String::with_capacity(bytes.len() + 8);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '\n' => out.push_str("\\n"),
                '\r' => out.push_str("\\r"),
                '\t' => out.push_str("\\t"),
                c if (c as u32) < 0x80 && needs_escape(c) => {
                    let _ = write!(out, "\\x{:02x}", c as u32);
                }
                c if needs_escape(c) => {
                    let _ = write!(out, "\\u{{{:04x}}}", c as u32);
                }
                c => out.push(c),
            }
        }
        for b in chunk.invalid() {
            let _ = write!(out, "\\x{b:02x}");
        }
    }
    Cow::Owned(out)
}

/// `s` with line breaks and other controls (and Unicode line separators and bidirectional
/// overrides) written as visible escapes (`\n`, `\u{…}`), so text from anywhere (evidence,
/// protocol, notes, incidents) stays one line wherever it is printed.
pub fn one_line(s: &str) -> String {
    if !s.chars().any(needs_escape) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if needs_escape(c) => out.extend(c.escape_unicode()),
            c => out.push(c),
        }
    }
    out
}

/// Characters that must not reach output text raw: controls (C0, DEL, C1) and the Unicode
/// line/paragraph separators and bidirectional overrides, which reorder or break a line.
pub fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

/// The path of an entry relative to the root, from the bytes (the walk yields normalised
/// paths under the root, so no component parsing is needed), escaped by [`escape_name`].
/// Also says whether it is lossless (joining it to the root gives the entry's path back).
#[cfg(test)]
pub(super) fn rel_of(root: &Path, path: &Path) -> (String, bool) {
    use std::os::unix::ffi::OsStrExt;
    let bytes = path.as_os_str().as_bytes();
    let root = root.as_os_str().as_bytes();
    let rest = match bytes.strip_prefix(root) {
        Some(rest) => rest.strip_prefix(b"/").unwrap_or(rest),
        // Never for a walk under `root`; keep the whole path rather than guess.
        None => bytes,
    };
    match escape_name(rest) {
        std::borrow::Cow::Borrowed(rel) => (rel.to_string(), true),
        std::borrow::Cow::Owned(rel) => (rel, false),
    }
}
#[cfg(test)]
mod tests;
