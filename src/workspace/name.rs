//! File names as the referee keys them: a one-to-one codec between a name's raw bytes (anything
//! but NUL, and `/` between components) and a `String`, a display form that cannot forge a line
//! or reorder text, and the file-name component for a task id ("task ids and file names
//! are escaped one-to-one, so two ids never share a verdict file").
//!
//! The codec: valid UTF-8 passes through unchanged, except the 256 code points
//! U+10FF00..=U+10FFFF (private use, never seen in real names); each byte of invalid UTF-8, and
//! each byte of such a code point's own UTF-8 form, becomes the char U+10FF00 + byte. It is
//! Python's `surrogateescape` without surrogates (a Rust `String` cannot hold them); escaping the
//! escape range itself is what makes [`encode`] injective. Nothing here touches the file system.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The first of the 256 escape chars: U+10FF00 + byte stands for that byte.
const ESCAPE_BASE: u32 = 0x10_FF00;

/// The char standing for `byte`.
fn escape_char(byte: u8) -> char {
    // 0x10FF00..=0x10FFFF are valid scalar values, so the fallback is never taken.
    char::from_u32(ESCAPE_BASE + u32::from(byte)).unwrap_or(char::REPLACEMENT_CHARACTER)
}

/// The byte an escape char stands for, or `None` for any other char.
fn escaped_byte(c: char) -> Option<u8> {
    u32::from(c)
        .checked_sub(ESCAPE_BASE)
        .and_then(|b| u8::try_from(b).ok())
}

/// The `String` for a name's raw bytes; [`decode`] gives the bytes back, for every input.
pub fn encode(bytes: &[u8]) -> String {
    // The common case: UTF-8 without the escape range, whose chars all start with 0xF4.
    if !bytes.contains(&0xF4) {
        if let Ok(s) = std::str::from_utf8(bytes) {
            return s.to_owned();
        }
    }
    let mut out = String::with_capacity(bytes.len());
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if escaped_byte(c).is_some() {
                let mut buf = [0; 4];
                for &b in c.encode_utf8(&mut buf).as_bytes() {
                    out.push(escape_char(b));
                }
            } else {
                out.push(c);
            }
        }
        for &b in chunk.invalid() {
            out.push(escape_char(b));
        }
    }
    out
}

/// [`encode`] of bytes that are owned: the common case (UTF-8 without the escape range) keeps
/// their allocation instead of copying it.
pub fn encode_owned(bytes: Vec<u8>) -> String {
    if bytes.contains(&0xF4) {
        return encode(&bytes);
    }
    String::from_utf8(bytes).unwrap_or_else(|e| encode(e.as_bytes()))
}

/// The raw bytes an [`encode`]d `String` stands for. Every string decodes, but only the
/// [canonical](is_canonical) ones come from `encode`: a string that escapes bytes forming valid
/// UTF-8 (as a hand-written path in a task record might) decodes to the same bytes as its
/// canonical form, so compare keys as strings, never after decoding.
pub fn decode(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len());
    for c in s.chars() {
        match escaped_byte(c) {
            Some(b) => out.push(b),
            None => {
                let mut buf = [0; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    out
}

/// Whether `s` is what [`encode`] gives for some bytes (`encode(decode(s)) == s`).
pub fn is_canonical(s: &str) -> bool {
    !s.chars().any(|c| escaped_byte(c).is_some()) || encode(&decode(s)) == s
}

/// The file-system path of `rel` (an encoded, `/`-separated relative path) under `root`.
///
/// Leading `/`s are dropped, so the result never leaves `root` by being absolute; `..` is not
/// resolved: a path taken from a task record must be checked by the caller first.
pub fn to_path(root: &Path, rel: &str) -> PathBuf {
    let bytes = decode(rel);
    let start = bytes.iter().position(|&b| b != b'/').unwrap_or(bytes.len());
    root.join(OsStr::from_bytes(&bytes[start..]))
}

/// The encoded form of a relative path as the OS gives it.
pub fn from_os(rel: &OsStr) -> String {
    encode(rel.as_bytes())
}

/// An encoded path for humans and evidence, one-to-one and on one line: an escaped byte shows as
/// `\xNN`, a backslash as `\\`, newline, tab and CR as `\n`, `\t`, `\r`, and every other control
/// character (C0, DEL, C1), the line and paragraph separators and the bidirectional formatting
/// characters (U+061C, U+200E, U+200F, U+202A..=U+202E, U+2066..=U+2069) as `\u{…}`, so a name
/// can neither start a forged line nor reorder the text around it.
pub fn display(rel: &str) -> String {
    let mut out = String::with_capacity(rel.len());
    for c in rel.chars() {
        if let Some(b) = escaped_byte(c) {
            out.push_str(&format!("\\x{b:02x}"));
            continue;
        }
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\t' => out.push_str("\\t"),
            '\r' => out.push_str("\\r"),
            c if needs_unicode_escape(c) => out.push_str(&format!("\\u{{{:x}}}", u32::from(c))),
            c => out.push(c),
        }
    }
    out
}

/// Control characters and the characters that can break or reorder a line of text.
fn needs_unicode_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{2028}' | '\u{2029}' | '\u{202A}'..='\u{202E}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// The longest file-name component [`file_stem_for`] gives, in bytes (a file system allows
/// 255; this leaves room for a prefix such as `OBSERVER-VERDICT-` and a suffix such as `.json`).
pub const STEM_MAX: usize = 200;

/// A file-name component for a task id, one-to-one, never empty, at most [`STEM_MAX`] bytes.
///
/// `[A-Za-z0-9_-]` and `.` (except a leading one, so never `.` or `..` or a hidden file) are
/// kept; every other byte of the id's UTF-8 is `%XX` (uppercase hex), `%` and `~` included. The
/// empty id is `%` alone, which no other id gives (any other `%` is followed by two hex digits).
/// A longer result is cut (never inside a `%XX`) and ends in `~` and the first 16 hex chars of
/// the SHA-256 of the whole id: no short name holds a `~`, and two long ids share a name only if
/// they share the kept prefix and 64 bits of SHA-256.
pub fn file_stem_for(id: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    if id.is_empty() {
        return "%".to_string();
    }
    let mut out = String::with_capacity(id.len());
    for (i, &b) in id.as_bytes().iter().enumerate() {
        let keep = b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || (b == b'.' && i > 0);
        if keep {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
    }
    if out.len() <= STEM_MAX {
        return out;
    }
    // `~` + 16 hex chars.
    let mut cut = STEM_MAX - 17;
    // Never end inside a `%XX`: back off to its `%`.
    for back in 1..=2 {
        if out.as_bytes()[cut - back] == b'%' {
            cut -= back;
            break;
        }
    }
    out.truncate(cut);
    let digest = Sha256::digest(id.as_bytes());
    out.push('~');
    for byte in &digest[..8] {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashSet;

    #[test]
    fn utf8_passes_through() {
        for s in [
            "",
            "a/b.txt",
            "héllo wörld",
            "日本語/ファイル",
            "with space\nnewline",
            "😀",
        ] {
            assert_eq!(encode(s.as_bytes()), s);
            assert_eq!(encode_owned(s.as_bytes().to_vec()), s);
            assert_eq!(decode(s), s.as_bytes());
        }
    }

    #[test]
    fn invalid_bytes_become_escape_chars() {
        let bytes = b"a\xffb\xc3";
        let s = encode(bytes);
        assert_eq!(encode_owned(bytes.to_vec()), s);
        assert_eq!(s, "a\u{10FFFF}b\u{10FFC3}");
        assert_eq!(decode(&s), bytes);
        assert_eq!(display(&s), "a\\xffb\\xc3");
    }

    #[test]
    fn the_escape_range_escapes_itself() {
        // U+10FF41 is F4 8F BD 81 in UTF-8: as a name it is four escaped bytes, never "A".
        let real = "\u{10FF41}";
        let s = encode(real.as_bytes());
        assert_eq!(s, "\u{10FFF4}\u{10FF8F}\u{10FFBD}\u{10FF81}");
        assert_eq!(decode(&s), real.as_bytes());
        assert_ne!(encode(b"A"), s);
        // A hand-written escape of a valid byte is not canonical.
        assert!(!is_canonical("\u{10FF41}"));
        assert!(is_canonical(&s));
        assert!(is_canonical("plain"));
    }

    #[test]
    fn paths_round_trip_through_the_os() {
        let rel = encode(b"dir/na\xffme\nx");
        let path = to_path(Path::new("/root"), &rel);
        assert_eq!(path.as_os_str().as_bytes(), b"/root/dir/na\xffme\nx");
        assert_eq!(from_os(OsStr::from_bytes(b"dir/na\xffme\nx")), rel);
        // An absolute path stays under the root.
        assert_eq!(
            to_path(Path::new("/root"), "//etc/passwd"),
            Path::new("/root/etc/passwd")
        );
    }

    #[test]
    fn display_cannot_forge_lines_or_reorder() {
        assert_eq!(display("a\nb\tc\rd"), "a\\nb\\tc\\rd");
        assert_eq!(display("x\u{1b}[31m"), "x\\u{1b}[31m");
        assert_eq!(display("\u{202E}gpj.exe"), "\\u{202e}gpj.exe");
        assert_eq!(
            display("a\u{2028}b\u{2069}\u{85}"),
            "a\\u{2028}b\\u{2069}\\u{85}"
        );
        assert_eq!(display("back\\slash"), "back\\\\slash");
        // A literal `\n` (two chars) and a newline differ.
        assert_ne!(display("\\n"), display("\n"));
        assert_eq!(display("plain/é.txt"), "plain/é.txt");
    }

    #[test]
    fn file_stems() {
        assert_eq!(file_stem_for("task-1_a.b"), "task-1_a.b");
        assert_eq!(file_stem_for("t 1"), "t%201");
        assert_ne!(file_stem_for("t 1"), file_stem_for("t_1"));
        assert_eq!(file_stem_for(""), "%");
        assert_eq!(file_stem_for("."), "%2E");
        assert_eq!(file_stem_for(".."), "%2E.");
        assert_eq!(file_stem_for("a/../b"), "a%2F..%2Fb");
        assert_eq!(file_stem_for("%"), "%25");
        assert_eq!(file_stem_for("~"), "%7E");
        assert_eq!(file_stem_for("é"), "%C3%A9");
        assert_eq!(file_stem_for("\n"), "%0A");
    }

    #[test]
    fn long_stems_are_cut_and_hashed() {
        let long = "a".repeat(500);
        let stem = file_stem_for(&long);
        assert_eq!(stem.len(), STEM_MAX);
        assert!(stem.starts_with(&"a".repeat(183)));
        assert_eq!(stem.as_bytes()[183], b'~');
        let other = format!("{}b", "a".repeat(499));
        assert_ne!(file_stem_for(&other), stem);
        // A cut never splits a %XX.
        let spaces = " ".repeat(100);
        let stem = file_stem_for(&spaces);
        assert!(stem.len() <= STEM_MAX);
        let (head, tail) = stem.split_once('~').expect("hash suffix");
        assert_eq!(tail.len(), 16);
        assert!(head.len() % 3 == 0 && head.split('%').skip(1).all(|x| x == "20"));
        // Exactly at the limit: kept whole.
        assert_eq!(file_stem_for(&"b".repeat(STEM_MAX)), "b".repeat(STEM_MAX));
    }

    /// Byte strings biased towards the interesting ones: invalid UTF-8, the escape range.
    fn names() -> impl Strategy<Value = Vec<u8>> {
        let piece = prop_oneof![
            any::<u8>().prop_map(|b| vec![b]),
            any::<char>().prop_map(|c| c.to_string().into_bytes()),
            (0u32..256).prop_map(|b| escape_char(b as u8).to_string().into_bytes()),
            Just(b"\xf4\x8f".to_vec()),
        ];
        prop::collection::vec(piece, 0..12).prop_map(|v| v.concat())
    }

    proptest! {
        #[test]
        fn decode_inverts_encode(bytes in names()) {
            let s = encode(&bytes);
            prop_assert_eq!(decode(&s), bytes);
            prop_assert!(is_canonical(&s));
        }

        #[test]
        fn encode_is_injective(a in names(), b in names()) {
            if a != b {
                prop_assert_ne!(encode(&a), encode(&b));
                prop_assert_ne!(display(&encode(&a)), display(&encode(&b)));
            }
        }

        #[test]
        fn display_is_one_line(bytes in names()) {
            let shown = display(&encode(&bytes));
            prop_assert!(!shown.chars().any(needs_unicode_escape));
        }

        #[test]
        fn stems_are_one_to_one(a in ".{0,80}", b in ".{0,80}") {
            if a != b {
                prop_assert_ne!(file_stem_for(&a), file_stem_for(&b));
            }
            let stem = file_stem_for(&a);
            prop_assert!(!stem.is_empty() && stem.len() <= STEM_MAX && !stem.starts_with('.'));
            prop_assert!(!stem.contains('/'));
        }
    }

    #[test]
    fn stems_of_many_long_ids_differ() {
        let mut seen = HashSet::new();
        for i in 0..2000 {
            assert!(seen.insert(file_stem_for(&format!("{}{i}", "x".repeat(300)))));
        }
    }
}
