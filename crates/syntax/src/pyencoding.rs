//! The text of a Python source file, decoded as CPython decodes it (PEP 263): UTF-8 unless a
//! coding declaration on line 1, or on line 2 below a comment-only or blank line 1, names another
//! encoding. A UTF-8 byte-order mark is skipped; with a declaration of anything but UTF-8 it is
//! CPython's `encoding problem: ... with BOM`. Decoding goes through `encoding_rs`, except
//! Latin-1 (every byte is its code point) and ASCII, which its WHATWG tables map to Windows-1252.
//! An encoding that `encoding_rs` does not know is inconclusive: CPython may know it (`cp437`,
//! `mac-roman`) or not (`unknown encoding`), and the referee cannot tell which.

use std::borrow::Cow;

use encoding_rs::Encoding;

use super::{position, utf8, Outcome};

/// The file's text as UTF-8, or the outcome that stops the check (invalid or inconclusive).
pub(super) fn decode<'a>(bytes: &'a [u8], how: &str) -> Result<Cow<'a, str>, Outcome> {
    // Python reads `\r\n` and a lone `\r` as `\n` (universal newlines): lines are counted so.
    decode_as_declared(bytes, how).map(|text| {
        if memchr::memchr(b'\r', text.as_bytes()).is_none() {
            return text;
        }
        Cow::Owned(text.replace("\r\n", "\n").replace('\r', "\n"))
    })
}

fn decode_as_declared<'a>(bytes: &'a [u8], how: &str) -> Result<Cow<'a, str>, Outcome> {
    let (has_bom, body) = match bytes.strip_prefix(b"\xEF\xBB\xBF") {
        Some(body) => (true, body),
        None => (false, bytes),
    };
    let Some(declared) = declaration(body) else {
        return utf8(bytes, how).map(Cow::Borrowed);
    };
    let name = normal_name(&declared);
    // With a byte-order mark, CPython wants exactly `utf-8` (or `utf-8-*`): even `utf8` is an
    // `encoding problem`.
    if has_bom && name != "utf-8" {
        return Err(Outcome::Invalid {
            line: 1,
            column: 0,
            message: format!("encoding problem: {name} with BOM"),
            how: how.to_owned(),
        });
    }
    let name = match name.as_str() {
        "utf8" | "u8" | "utf" | "cp65001" => "utf-8".to_owned(),
        _ => name,
    };
    if name == "utf-8" {
        return utf8(bytes, how).map(Cow::Borrowed);
    }
    match name.as_str() {
        "iso-8859-1" | "latin1" | "latin" | "l1" | "iso8859-1" | "8859" | "cp819"
        | "iso-ir-100" => {
            return Ok(Cow::Owned(body.iter().map(|&b| char::from(b)).collect()));
        }
        "ascii" | "us-ascii" | "646" | "us" => {
            return match body.iter().position(|b| !b.is_ascii()) {
                None => utf8(bytes, how).map(Cow::Borrowed),
                Some(at) => Err(undecodable(body, at, &declared, how)),
            };
        }
        _ => {}
    }
    let encoding = Encoding::for_label(name.as_bytes())
        .or_else(|| Encoding::for_label(declared.as_bytes()))
        .or_else(|| Encoding::for_label(name.replace('-', "").as_bytes()))
        .filter(|e| {
            // UTF-16 sources and WHATWG's `replacement` are not what a Python file means.
            e.is_ascii_compatible() && *e != encoding_rs::REPLACEMENT
        });
    let Some(encoding) = encoding else {
        if !python_knows(&declared) {
            return Err(Outcome::Invalid {
                line: declaration_line(body),
                column: 0,
                message: format!("unknown encoding: {declared}"),
                how: how.to_owned(),
            });
        }
        return Err(Outcome::Inconclusive {
            why: format!(
                "the file declares the encoding `{declared}`, which the referee cannot decode: not parsed"
            ),
        });
    };
    match encoding.decode_without_bom_handling_and_without_replacement(body) {
        Some(text) => Ok(Cow::Owned(text.into_owned())),
        None => {
            // Find the first byte that does not decode, for the position.
            let mut decoder = encoding.new_decoder_without_bom_handling();
            let mut out = String::with_capacity(body.len() * 3 + 16);
            let (result, read) = decoder.decode_to_string_without_replacement(body, &mut out, true);
            let at = match result {
                encoding_rs::DecoderResult::Malformed(bad, _) => {
                    read.saturating_sub(usize::from(bad))
                }
                _ => read,
            };
            Err(undecodable(body, at, &declared, how))
        }
    }
}

fn undecodable(body: &[u8], at: usize, declared: &str, how: &str) -> Outcome {
    let (line, column) = position(body, at);
    let byte = body.get(at).copied().unwrap_or_default();
    Outcome::Invalid {
        line,
        column,
        message: format!("(unicode error) `{declared}` cannot decode byte 0x{byte:02X}"),
        how: how.to_owned(),
    }
}

/// The encoding named on line 1, or on line 2 when line 1 is blank or only a comment (PEP 263:
/// `^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)`).
fn declaration(body: &[u8]) -> Option<String> {
    let mut lines = body.split(|&b| b == b'\n' || b == b'\r');
    let first = lines.next()?;
    if let Some(name) = coding_spec(first) {
        return Some(name);
    }
    let trimmed = first.trim_ascii_start();
    if !(trimmed.is_empty() || trimmed.starts_with(b"#")) {
        return None;
    }
    // `\r\n` splits into a line and an empty one: skip that empty piece.
    let second = if first.len() < body.len() && body[first.len()] == b'\r' {
        let rest = &body[first.len() + 1..];
        let rest = rest.strip_prefix(b"\n").unwrap_or(rest);
        rest.split(|&b| b == b'\n' || b == b'\r').next()
    } else {
        lines.next()
    };
    second.and_then(coding_spec)
}

fn coding_spec(line: &[u8]) -> Option<String> {
    let start = line
        .iter()
        .position(|&b| !matches!(b, b' ' | b'\t' | b'\x0C'))?;
    if line[start] != b'#' {
        return None;
    }
    let comment = &line[start..];
    let mut from = 0;
    while let Some(at) = memchr::memmem::find(&comment[from..], b"coding") {
        let after = from + at + b"coding".len();
        if let Some(b':' | b'=') = comment.get(after) {
            let rest = &comment[after + 1..];
            let rest = &rest[rest
                .iter()
                .position(|&b| b != b' ' && b != b'\t')
                .unwrap_or(rest.len())..];
            let len = rest
                .iter()
                .position(|&b| !(b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.')))
                .unwrap_or(rest.len());
            if len > 0 {
                return Some(String::from_utf8_lossy(&rest[..len]).into_owned());
            }
        }
        from = after;
    }
    None
}

/// Whether CPython 3.13 has a codec by this name ([`CODECS`]), normalised as
/// `encodings.normalize_encoding` does.
fn python_knows(declared: &str) -> bool {
    let mut name = String::new();
    for c in declared.chars() {
        if c.is_ascii_alphanumeric() || c == '.' {
            name.push(c.to_ascii_lowercase());
        } else if !name.ends_with('_') {
            name.push('_');
        }
    }
    let dotless = name.replace('.', "_");
    CODECS
        .lines()
        .filter(|l| !l.starts_with('#'))
        .flat_map(str::split_ascii_whitespace)
        .any(|known| known == name || known == dotless)
}

/// CPython 3.13's codec names and aliases.
const CODECS: &str = include_str!("pycodecs.txt");

/// The line (1 or 2) of the declaration, for the message's place.
fn declaration_line(body: &[u8]) -> usize {
    let first = body
        .split(|&b| b == b'\n' || b == b'\r')
        .next()
        .unwrap_or_default();
    if coding_spec(first).is_some() {
        1
    } else {
        2
    }
}

/// CPython's `get_normal_name` and the codec registry's normalisation, enough to pick a decoder:
/// lower case, `_` as `-`, `utf-8-*` as `utf-8`, `latin-1-*` and `iso-latin-1-*` as `iso-8859-1`.
fn normal_name(declared: &str) -> String {
    let name = declared.to_ascii_lowercase().replace('_', "-");
    let family = |prefix: &str| name == prefix || name.starts_with(&format!("{prefix}-"));
    if family("utf-8") {
        "utf-8".into()
    } else if family("latin-1") || family("iso-8859-1") || family("iso-latin-1") {
        "iso-8859-1".into()
    } else {
        name
    }
}
