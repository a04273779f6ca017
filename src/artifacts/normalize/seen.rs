//! Text as seen: the one reading every check compares, for documents (trackers, weaver
//! verdicts, prompts) and for values (tracker cells, gate keys and values).
//!
//! A document is first decoded the way an editor opens it ([`document`]): UTF-16 or UTF-32
//! by its byte-order mark or by the NUL pattern ASCII leaves without one, invalid UTF-8 as
//! U+FFFD, CR, LF and CRLF line ends alike, NUL bytes and byte-order marks read as nothing.
//! Its structure is then the markdown parser's business; the values it yields are read here
//! ([`value`]): in display order (bidirectional controls resolved by the Unicode Bidirectional
//! Algorithm, so `\u{202e}launam` reads "manual"), then each character as
//! [`super::normalize`] folds it (NFKC, small capitals and other letter-like forms, UTS #39
//! confusables, zero-width and other default-ignorable characters dropped). Two prompts are
//! compared by their words ([`words`]). This module must never panic and must stay linear in
//! the size of its input.

use std::borrow::Cow;

use unicode_bidi::BidiInfo;

use super::{normalize_as, wide, Markup};

/// The text of a document's bytes as an editor shows it (see the module's notes). Borrowed
/// when the bytes are UTF-8 with nothing to change.
pub fn document(bytes: &[u8]) -> Cow<'_, str> {
    let has_nul = memchr::memchr(0, bytes).is_some();
    let text: Cow<'_, str> = match wide::detect(bytes, has_nul) {
        Some((encoding, skip)) => {
            let (decoded, _) = wide::decode(bytes, encoding, skip);
            Cow::Owned(crate::artifacts::fsread::lossy(&decoded).into_owned())
        }
        None => crate::artifacts::fsread::lossy(bytes),
    };
    let needs = |t: &str| {
        memchr::memchr3(b'\r', 0, 0xef, t.as_bytes()).is_some()
            && t.contains(['\r', '\0', '\u{feff}'])
    };
    if !needs(&text) {
        return text;
    }
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' => {
                // CRLF is one line end, a CR alone another.
                if chars.peek() == Some(&'\n') {
                    chars.next();
                }
                out.push('\n');
            }
            '\0' | '\u{feff}' => {}
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// A structured file's bytes (JSON) as UTF-8: decoded from UTF-16 or UTF-32 (by the mark, or
/// by the NUL pattern without one), else without a UTF-8 byte-order mark. Unlike
/// [`document`], nothing else changes: a file that is not valid UTF-8 stays so, for the parser
/// to report where.
pub fn utf8_bytes(bytes: &[u8]) -> Cow<'_, [u8]> {
    let has_nul = memchr::memchr(0, bytes).is_some();
    match wide::detect(bytes, has_nul) {
        Some((encoding, skip)) => Cow::Owned(wide::decode(bytes, encoding, skip).0.to_vec()),
        None => Cow::Borrowed(bytes.strip_prefix(b"\xef\xbb\xbf").unwrap_or(bytes)),
    }
}

/// A key or value written in a structured file (a JSON string) as a human reads it, for
/// comparing: [`value_as`] with its markup read, trimmed. `"sour\u{200b}ce"`, `"ѕource"` and
/// `"ｓｏｕｒｃｅ"` all read `source`.
pub fn key(s: &str) -> String {
    value_as(s, Markup::Read).trim().to_string()
}

/// Whether `c` is a bidirectional formatting character: an embedding, override or isolate
/// (or its end), or an implicit mark.
fn is_bidi_control(c: char) -> bool {
    matches!(
        c,
        '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}'
    )
}

/// Whether the UTF-8 character at `i` is a bidirectional control ([`is_bidi_control`]).
pub(super) fn is_bidi_at(bytes: &[u8], i: usize) -> bool {
    matches!(
        bytes.get(i..),
        Some([0xe2, 0x80, 0xaa..=0xae | 0x8e | 0x8f, ..])
            | Some([0xe2, 0x81, 0xa6..=0xa9, ..])
            | Some([0xd8, 0x9c, ..])
    )
}

/// The lines of UTF-8 `bytes` that hold a bidirectional control, put in display order (each
/// such line an opaque piece of the map: a match inside it quotes the whole line as written);
/// the other bytes as they are.
pub(super) fn visual_lines(bytes: &[u8]) -> (super::Buf, super::Map) {
    let mut b = super::map::Builder::with_capacity(bytes.len());
    let mut start = 0;
    while start < bytes.len() {
        let end = memchr::memchr(b'\n', &bytes[start..]).map_or(bytes.len(), |k| start + k + 1);
        let line = &bytes[start..end];
        if (0..line.len()).any(|k| line[k] >= 0x80 && is_bidi_at(line, k)) {
            let text = String::from_utf8_lossy(line);
            b.push(start, display_order(&text).as_bytes(), 0);
        } else {
            b.push(start, line, 1);
        }
        start = end;
    }
    b.finish(bytes.len())
}

/// `s` in the order it is displayed, line by line, when it holds bidirectional controls
/// (the controls themselves stay, for [`value`] to drop); otherwise `s` itself.
pub fn display_order(s: &str) -> Cow<'_, str> {
    if s.is_ascii() || !s.chars().any(is_bidi_control) {
        return Cow::Borrowed(s);
    }
    let info = BidiInfo::new(s, None);
    let mut out = String::with_capacity(s.len());
    for para in &info.paragraphs {
        out.push_str(&info.reorder_line(para, para.range.clone()));
    }
    Cow::Owned(out)
}

/// A value a markdown parser has rendered (its references and escapes already read), as a
/// human reads it: see the module's notes.
pub fn value(s: &str) -> Cow<'_, str> {
    value_as(s, Markup::Rendered)
}

/// [`value`] for text that may still hold markup to read (`markup`: a JSON string's
/// `H&#65;ND` reads "HAND").
pub fn value_as(s: &str, markup: Markup) -> Cow<'_, str> {
    // Most values are plain ASCII on one line: nothing to read otherwise.
    let plain = |b: &u8| {
        b.is_ascii()
            && *b != 0
            && *b != b'\n'
            && (markup == Markup::Rendered || !matches!(b, b'&' | b'\\'))
    };
    if s.as_bytes().iter().all(plain) {
        return Cow::Borrowed(s);
    }
    let ordered = display_order(s);
    match normalize_as(ordered.as_bytes(), markup) {
        Some((text, _)) => Cow::Owned(String::from_utf8_lossy(&text).into_owned()),
        None => ordered,
    }
}

/// The words of a document as a human reads them, in order: its text as seen, split on
/// whitespace, so that two prompts with the same words compare equal however their lines
/// were wrapped or saved.
pub fn words(bytes: &[u8]) -> Vec<String> {
    let text = document(bytes);
    let read = value_as(&text, Markup::Read);
    read.split_whitespace().map(str::to_string).collect()
}

/// How alike two documents read: difflib's `SequenceMatcher.ratio()` (2*M/T) over their
/// [`words`], computed with the `similar` crate's diff. Two prompts with the same words are
/// the same prompt (1.0) however their lines were wrapped, joined or saved (UTF-16, CRLF).
pub fn similarity(a: &[u8], b: &[u8]) -> f64 {
    let (a, b) = (words(a), words(b));
    if a.is_empty() && b.is_empty() {
        return 1.0;
    }
    let a: Vec<&str> = a.iter().map(String::as_str).collect();
    let b: Vec<&str> = b.iter().map(String::as_str).collect();
    f64::from(similar::TextDiff::configure().diff_slices(&a, &b).ratio())
}

/// The ASCII letter a letter-like character is read as, where NFKC and the confusable
/// skeletons leave it alone: small capitals (`ᴍᴀɴᴜᴀʟ` reads "manual", a small capital being a
/// lowercase letter drawn as a capital) and the squared, circled and negative forms of the
/// enclosed alphanumerics supplement (`🅼🅰🅽` reads "MAN").
pub fn letter_like(c: char) -> Option<u8> {
    let small = match c {
        '\u{1d00}' => b'a',
        '\u{0299}' => b'b',
        '\u{1d04}' => b'c',
        '\u{1d05}' => b'd',
        '\u{1d07}' => b'e',
        '\u{a730}' => b'f',
        '\u{0262}' => b'g',
        '\u{029c}' => b'h',
        '\u{026a}' => b'i',
        '\u{1d0a}' => b'j',
        '\u{1d0b}' => b'k',
        '\u{029f}' => b'l',
        '\u{1d0d}' => b'm',
        '\u{0274}' => b'n',
        '\u{1d0f}' => b'o',
        '\u{1d18}' => b'p',
        '\u{a7af}' => b'q',
        '\u{0280}' => b'r',
        '\u{a731}' => b's',
        '\u{1d1b}' => b't',
        '\u{1d1c}' => b'u',
        '\u{1d20}' => b'v',
        '\u{1d21}' => b'w',
        '\u{028f}' => b'y',
        '\u{1d22}' => b'z',
        _ => 0,
    };
    if small != 0 {
        return Some(small);
    }
    let n = u32::from(c);
    // Squared, negative circled and negative squared Latin capitals, A to Z each.
    let base = [0x1f130, 0x1f150, 0x1f170]
        .into_iter()
        .find(|&b| (b..b + 26).contains(&n))?;
    u8::try_from(n - base).ok().map(|i| b'A' + i)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_document_reads_the_same_in_every_encoding_and_line_end() {
        let text = "## BV Gates\n| BV-01 | FAIL |\n";
        let utf16le: Vec<u8> = [0xff, 0xfe]
            .into_iter()
            .chain(text.encode_utf16().flat_map(u16::to_le_bytes))
            .collect();
        let utf16be: Vec<u8> = text.encode_utf16().flat_map(u16::to_be_bytes).collect();
        assert_eq!(document(&utf16le), text);
        assert_eq!(document(&utf16be), text);
        assert_eq!(document(text.replace('\n', "\r").as_bytes()), text);
        assert_eq!(document(text.replace('\n', "\r\n").as_bytes()), text);
        assert_eq!(
            document("\u{feff}## BV Gates\n| BV-01 | FA\0IL |\n".as_bytes()),
            text
        );
        assert!(matches!(document(text.as_bytes()), Cow::Borrowed(_)));
    }

    #[test]
    fn values_read_in_display_order_and_folded() {
        assert_eq!(value("\u{202e}launam"), "manual");
        assert_eq!(value("source: \u{202e}lau\u{202c}nam"), "source: ualnam");
        // An isolate sets the direction of neutrals, not the order of Latin letters.
        assert_eq!(value("\u{2067}launam\u{2069}"), "launam");
        assert_eq!(value("ᴍᴀɴᴜᴀʟ"), "manual");
        assert_eq!(value("ʜᴀɴᴅ"), "hand");
        assert_eq!(value("🅼🅰🅽🆄🅰🅻"), "MANUAL");
        assert_eq!(value("FA\u{406}L"), "FAIL");
        assert_eq!(value("\u{455}ource"), "source");
        assert_eq!(value("ＦＡＩＬ"), "FAIL");
        assert_eq!(value("FA\u{200b}IL"), "FAIL");
        assert_eq!(value("SHIP\u{a0}WITH FIXES"), "SHIP WITH FIXES");
        // Rendered text keeps what reads as written; raw text reads its markup.
        assert_eq!(value("&#70;AIL"), "&#70;AIL");
        assert_eq!(value_as("&#70;AIL", Markup::Read), "FAIL");
        // Nothing to change is no copy.
        assert!(matches!(value("PASS"), Cow::Borrowed(_)));
    }

    #[test]
    fn a_document_reads_in_display_order() {
        let text = "Notes.\nThe \u{202e}rennur etag\u{202c} was read.\nEnd.\n";
        let r = super::super::utf8(text.as_bytes());
        let read = String::from_utf8_lossy(r.text(text.as_bytes())).into_owned();
        assert_eq!(read, "Notes.\nThe gate runner was read.\nEnd.\n");
        let at = read.find("gate runner").unwrap();
        let (quoted, line) = r.quote(text.as_bytes(), at..at + "gate runner".len());
        assert_eq!(line, 2);
        assert!(quoted.contains("rennur etag"), "{quoted}");
    }

    #[test]
    fn words_ignore_wrapping_and_encoding() {
        let one = "Build the page\nfrom the brief.\n";
        let rewrapped = "Build the\r\npage from\r\nthe brief.";
        let utf16: Vec<u8> = one.encode_utf16().flat_map(u16::to_le_bytes).collect();
        assert_eq!(words(one.as_bytes()), words(rewrapped.as_bytes()));
        assert_eq!(words(one.as_bytes()), words(&utf16));
        assert_ne!(words(one.as_bytes()), words(b"Build another page."));
        assert_eq!(similarity(one.as_bytes(), &utf16), 1.0);
        assert_eq!(
            similarity(one.as_bytes(), b"Build the page from the brief."),
            1.0
        );
        assert_eq!(similarity(b"", b""), 1.0);
        assert!(similarity(b"a b c d", b"a x y z") < 0.5);
    }
}
