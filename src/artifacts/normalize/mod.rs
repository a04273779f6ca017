//! Text as a human reads it: the bytes the text rules and the gate values are judged on.
//!
//! A person (or a model) reading a report does not see the bytes: `ｍａｎｕａｌ`, `mаnual` with a
//! Cyrillic `а`, `man\u{200b}ual`, `GR\-12`, `GR&#45;12`, `&gt;= 15`, `re\u{ad}pair`, `ﬁx`,
//! `re-⏎pair` and a report saved as UTF-16 all read as the plain words. This module owns turning
//! bytes into that reading and mapping every offset of it back to the bytes as written, so a rule
//! matches on the reading and the evidence quotes the file. In order:
//!
//! - UTF-16 and UTF-32 are decoded (a byte-order mark, or the NUL pattern without one); a NUL
//!   byte otherwise reads as nothing, as a terminal shows it.
//! - Each character with its combining marks is put in NFKC (fullwidth letters, ligatures,
//!   compatibility forms), then a non-ASCII character whose UTS #39 confusable skeleton is ASCII
//!   reads as that ASCII (`а` → `a`, `‐` → `-`), and default-ignorable characters (zero-width
//!   spaces and joiners, soft hyphens, bidi controls, variation selectors, a BOM) are dropped.
//! - HTML character references (`&gt;`, `&#45;`, `&#x2d;`) are decoded (once: `&amp;gt;` reads
//!   `&gt;`), and markdown backslash escapes of ASCII punctuation (`\-`) are undone.
//! - A hyphen at the end of a line joins the next line: between letters it is a broken word
//!   (`re-⏎pair` → `repair`), otherwise it stays (`GR-⏎12` → `GR-12`).
//!
//! A term split over a line break or runs of spaces is the matcher's business (whitespace is
//! kept, so line numbers and `(?m)` patterns keep their meaning). Plain ASCII without `\`, `&`,
//! NUL or a hyphen before a line break is read as it is, without a copy. This module must not
//! judge anything, must stay linear in the size of the text, and must never panic on any bytes.

mod buf;
mod map;
pub mod seen;
mod wide;

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;
use std::sync::OnceLock;

use unicode_normalization::char::canonical_combining_class;
use unicode_normalization::UnicodeNormalization;
use unicode_security::confusable_detection::skeleton;

pub use buf::Buf;
pub use map::Map;
pub use wide::Encoding;

use map::Builder;

/// One reading of a file: the normalised text (or the bytes as they are) and the way back to the
/// bytes as written.
#[derive(Debug, Clone)]
pub struct Reading {
    pub encoding: Encoding,
    /// `None`: the file's bytes read as they are.
    text: Option<Buf>,
    /// Normalised text → the text in display order (`visual`); `None` is the identity.
    map: Option<Map>,
    /// For a text with bidirectional controls: its lines in display order → the decoded text
    /// (or the file's bytes).
    visual: Option<Map>,
    /// For UTF-16/32: decoded text → the file's bytes.
    decoded: Option<Map>,
}

impl Reading {
    /// The text to match on: the normalised text, or `original` itself.
    pub fn text<'a>(&'a self, original: &'a [u8]) -> &'a [u8] {
        self.text.as_deref().unwrap_or(original)
    }

    /// Whether the reading is the file's bytes unchanged.
    pub fn is_plain(&self) -> bool {
        self.text.is_none()
    }

    /// The range of the file's bytes that the normalised range `r` was read from.
    pub fn original_range(&self, r: Range<usize>) -> Range<usize> {
        let r = match &self.map {
            Some(m) => m.range(r),
            None => r,
        };
        let r = match &self.visual {
            Some(m) => m.range(r),
            None => r,
        };
        match &self.decoded {
            Some(m) => m.range(r),
            None => r,
        }
    }

    /// The normalised range `r` as written in the file (see [`Reading::written`]), and the
    /// 1-based line it starts on.
    pub fn quote(&self, original: &[u8], r: Range<usize>) -> (String, usize) {
        let o = self.original_range(r);
        let line = 1 + self.newlines(&original[..o.start.min(original.len())]);
        (self.written(original, o), line)
    }

    /// The file's bytes `o` (a range from [`Reading::original_range`]) as written: decoded in
    /// the reading's encoding, with invisible characters shown as `\u{200b}` so evidence shows
    /// what hid the word.
    pub fn written(&self, original: &[u8], o: Range<usize>) -> String {
        let o = o.start.min(original.len())..o.end.min(original.len());
        visible(&wide::quote(&original[o], self.encoding))
    }

    /// How many line breaks `bytes` (a part of the file starting at a character) hold, in the
    /// reading's encoding.
    pub fn newlines(&self, bytes: &[u8]) -> usize {
        wide::newlines_before(bytes, self.encoding, bytes.len())
    }
}

/// `s` with each default-ignorable character (zero-width, soft hyphen, bidi control, BOM)
/// written as `\u{…}`.
pub fn visible(s: &str) -> String {
    if s.is_ascii() {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        let mut buf = [0; 4];
        if !c.is_ascii() && skeleton(c.encode_utf8(&mut buf)).next().is_none() {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    out
}

/// The UTF-16/32 encoding `bytes` are written in and the length of its byte-order mark, by the
/// mark or (only when `has_nul`) by the NUL pattern ASCII leaves in it.
pub fn detect_wide(bytes: &[u8], has_nul: bool) -> Option<(Encoding, usize)> {
    wide::detect(bytes, has_nul)
}

/// The readings of a file's bytes: first as UTF-8 (NUL bytes read as nothing), then, when
/// `wide` (from [`detect_wide`]) names an encoding, as that encoding. Both are searched: a
/// file that mixes the two hides nothing in either part.
pub fn readings(bytes: &[u8], wide: Option<(Encoding, usize)>) -> Vec<Reading> {
    let mut out = vec![utf8(bytes)];
    if let Some((encoding, skip)) = wide {
        let (decoded, dmap) = wide::decode(bytes, encoding, skip);
        let (text, map, visual) = match read(&decoded) {
            (Some(text), map, visual) => (text, map, visual),
            (None, _, _) => (decoded, None, None),
        };
        out.push(Reading {
            encoding,
            text: Some(text),
            map,
            visual,
            decoded: Some(dmap),
        });
    }
    out
}

/// `bytes` read as UTF-8 (invalid bytes kept as they are).
pub fn utf8(bytes: &[u8]) -> Reading {
    let (text, map, visual) = read(bytes);
    Reading {
        encoding: Encoding::Utf8,
        text,
        map,
        visual,
        decoded: None,
    }
}

/// The reading of UTF-8 `bytes`: normalised, and first put in display order where a line holds
/// bidirectional controls (`\u{202e}rennur etag` is shown, and read, as "gate runner"). The
/// text (`None`: the bytes as they are), its map to the text in display order, and that
/// text's map to `bytes`.
fn read(bytes: &[u8]) -> (Option<Buf>, Option<Map>, Option<Map>) {
    let (normalized, bidi) = normalize_seen(bytes, Markup::Read);
    if !bidi {
        return match normalized {
            Some((text, map)) => (Some(text), Some(map), None),
            None => (None, None, None),
        };
    }
    drop(normalized);
    let (visual, vmap) = seen::visual_lines(bytes);
    match normalize(&visual) {
        Some((text, map)) => (Some(text), Some(map), Some(vmap)),
        None => (Some(visual), None, Some(vmap)),
    }
}

/// The most a thread keeps of a normalised text it let go of, for its next one.
const SPARE_MAX: usize = 4 << 20;

thread_local! {
    /// The last normalised text this thread dropped (up to [`SPARE_MAX`] bytes of capacity):
    /// searching reports one after another, each copy reuses the memory of the one before
    /// instead of faulting in fresh pages (a 2 MB report with one en dash is copied whole).
    static SPARE: std::cell::RefCell<Buf> = const { std::cell::RefCell::new(Buf::new()) };
}

/// Frees this thread's spare normalised text: at the end of an evaluation, so a long-lived
/// thread (the daemon's) does not hold a report's worth of memory while idle.
pub fn release_spare() {
    let _ = SPARE.try_with(|s| drop(std::mem::take(&mut *s.borrow_mut())));
}

/// A buffer for a normalised text of about `n` bytes: the thread's spare, grown to `n` if
/// need be.
fn spare(n: usize) -> Buf {
    if n < 64 << 10 {
        // A small text (a field, a short file) leaves the spare to the reports.
        return Buf::with_capacity(n);
    }
    let mut kept = SPARE.with(|s| std::mem::take(&mut *s.borrow_mut()));
    kept.clear();
    // Reports differ in size by a few bytes: growing the spare keeps its pages.
    kept.reserve(n);
    kept
}

impl Drop for Reading {
    fn drop(&mut self) {
        let Some(text) = self.text.take() else { return };
        if text.capacity() <= SPARE_MAX {
            // A thread being torn down has no spare to keep: the text is freed with it.
            let _ = SPARE.try_with(|s| {
                let mut s = s.borrow_mut();
                if text.capacity() > s.capacity() {
                    *s = text;
                }
            });
        }
    }
}

/// A value written as raw text (a gate's `source`, a JSON key) as a human reads it: markup
/// read ([`Markup::Read`]) and the rest as [`seen::value`] reads it.
pub fn normalize_str(s: &str) -> Cow<'_, str> {
    seen::value_as(s, Markup::Read)
}

/// Bytes that may start a change: NUL, `\`, `&`, `-` and every non-ASCII byte (what
/// [`Specials`] finds; the tests' byte-wise oracle).
#[cfg(test)]
const SPECIAL: [bool; 256] = {
    let mut t = [false; 256];
    t[0] = true;
    t[b'\\' as usize] = true;
    t[b'&' as usize] = true;
    t[b'-' as usize] = true;
    let mut i = 0x80;
    while i < 256 {
        t[i] = true;
        i += 1;
    }
    t
};

/// The first byte at or after `from` that is [`SPECIAL`].
#[cfg(test)]
fn next_special(bytes: &[u8], from: usize) -> Option<usize> {
    Specials::new(bytes).next(from)
}

/// The [`SPECIAL`] bytes of a text in order, by two searches that each run ahead and are asked
/// again only once passed: the ASCII ones (`\`, `&`, `-`) by `memchr3` (vectorised), and NUL or
/// non-ASCII a word at a time. These scans run over every byte of every report, so they are
/// kept near memory speed.
struct Specials<'a> {
    bytes: &'a [u8],
    /// The next `\`, `&` or `-` found (the text's length: none), from a search that began at or
    /// before every position asked since; `None` before the first search.
    ascii: Option<usize>,
    /// Likewise, the next NUL or non-ASCII byte.
    other: Option<usize>,
}

impl<'a> Specials<'a> {
    fn new(bytes: &'a [u8]) -> Specials<'a> {
        Specials {
            bytes,
            ascii: None,
            other: None,
        }
    }

    /// The first special byte at or after `from`; `from` never decreases between calls.
    fn next(&mut self, from: usize) -> Option<usize> {
        let len = self.bytes.len();
        let rest = self.bytes.get(from..)?;
        let ascii = match self.ascii {
            Some(at) if at >= from => at,
            _ => memchr::memchr3(b'\\', b'&', b'-', rest).map_or(len, |k| from + k),
        };
        let other = match self.other {
            Some(at) if at >= from => at,
            _ => nul_or_high(rest).map_or(len, |k| from + k),
        };
        (self.ascii, self.other) = (Some(ascii), Some(other));
        let at = ascii.min(other);
        (at < len).then_some(at)
    }
}

/// The first NUL or non-ASCII byte of `bytes`, eight bytes at a time while there is none.
fn nul_or_high(bytes: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let (words, _) = bytes.as_chunks::<8>();
    // A word with a NUL (`w - LO` borrows into its high bit) or a high bit set; the word is then
    // searched byte by byte, so a false positive above the first such byte does not matter.
    let first = words
        .iter()
        .position(|w| {
            let w = u64::from_le_bytes(*w);
            (w.wrapping_sub(LO) & !w & HI) | (w & HI) != 0
        })
        .unwrap_or(words.len());
    bytes[first * 8..]
        .iter()
        .position(|&b| b == 0 || b >= 0x80)
        .map(|k| first * 8 + k)
}

/// What one special position reads as.
enum Step {
    /// Nothing to change in the next `n` bytes.
    Keep(usize),
    /// The bytes up to `end` read as `text`.
    Replace(usize, Vec<u8>),
}

/// The normalised text of UTF-8 `bytes` and its map, or `None` when it reads as it is written.
/// Nothing is copied until the first change.
pub fn normalize(bytes: &[u8]) -> Option<(Buf, Map)> {
    normalize_as(bytes, Markup::Read)
}

/// Whether HTML character references and backslash escapes are still to be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Markup {
    /// Raw text (a file's bytes, a JSON string): `&#70;` and `\-` read as `F` and `-`.
    Read,
    /// Text a markdown parser has already rendered: its references and escapes were read
    /// once, and reading them again would see `&amp;#70;` (shown as `&#70;`) as `F`.
    Rendered,
}

/// [`normalize`], reading markup or not.
pub fn normalize_as(bytes: &[u8], markup: Markup) -> Option<(Buf, Map)> {
    normalize_seen(bytes, markup).0
}

/// [`normalize_as`], and whether the text holds a bidirectional control (the normalised text
/// has dropped it; the order it changes is [`seen::visual_lines`]'s business). The controls are
/// found where the text changes anyway, so a text without one pays nothing more.
fn normalize_seen(bytes: &[u8], markup: Markup) -> (Option<(Buf, Map)>, bool) {
    let mut bidi = false;
    let mut built: Option<Builder> = None;
    let mut copied_to = 0;
    let mut i = 0;
    let mut specials = Specials::new(bytes);
    while i < bytes.len() {
        match specials.next(i) {
            Some(k) => i = k,
            None => break,
        }
        let rendered = markup == Markup::Rendered && matches!(bytes[i], b'\\' | b'&');
        match if rendered {
            Step::Keep(1)
        } else {
            step(bytes, i)
        } {
            Step::Keep(n) => i += n.max(1),
            Step::Replace(end, text) => {
                bidi = bidi || (bytes[i] >= 0x80 && seen::is_bidi_at(bytes, i));
                let b = built.get_or_insert_with(|| Builder::with_buffer(spare(bytes.len())));
                b.push(copied_to, &bytes[copied_to..i], 1);
                b.push(i, &text, 0);
                copied_to = end;
                i = end;
            }
        }
    }
    let Some(mut b) = built else {
        return (None, bidi);
    };
    b.push(copied_to, &bytes[copied_to..], 1);
    (Some(b.finish(bytes.len())), bidi)
}

fn step(bytes: &[u8], i: usize) -> Step {
    match bytes[i] {
        0 => Step::Replace(i + 1, Vec::new()),
        b'\\' => match bytes.get(i + 1) {
            Some(&p) if p.is_ascii_punctuation() => Step::Replace(i + 2, vec![p]),
            _ => Step::Keep(1),
        },
        b'&' => match reference(bytes, i) {
            Some((end, c)) => {
                let mut text = Vec::new();
                fold(c.encode_utf8(&mut [0; 4]), &mut text);
                Step::Replace(end, text)
            }
            None => Step::Keep(1),
        },
        b'-' => hyphen_break(bytes, i),
        _ => non_ascii(bytes, i),
    }
}

/// A hyphen, optional spaces, a line break and the next line's indent: a word broken over the
/// line (letters on both sides) reads joined; otherwise the hyphen stays and the break goes.
fn hyphen_break(bytes: &[u8], i: usize) -> Step {
    let blank = |j: &mut usize| {
        while bytes.get(*j).is_some_and(|&b| b == b' ' || b == b'\t') {
            *j += 1;
        }
    };
    let mut j = i + 1;
    blank(&mut j);
    if bytes.get(j) == Some(&b'\r') {
        j += 1;
    }
    if bytes.get(j) != Some(&b'\n') {
        return Step::Keep(1);
    }
    j += 1;
    blank(&mut j);
    let before = i.checked_sub(1).map(|k| bytes[k]);
    let after = bytes.get(j).copied();
    match (before, after) {
        (Some(a), Some(b)) if a.is_ascii_alphabetic() && b.is_ascii_alphabetic() => {
            Step::Replace(j, Vec::new())
        }
        (Some(a), Some(b)) if a.is_ascii_alphanumeric() && b.is_ascii_alphanumeric() => {
            Step::Replace(j, b"-".to_vec())
        }
        _ => Step::Keep(1),
    }
}

/// An HTML character reference at `i` (`&name;`, `&#45;`, `&#x2D;`): its end and character.
/// Numeric references outside Unicode, and `&#0;`, are U+FFFD as HTML says.
fn reference(bytes: &[u8], i: usize) -> Option<(usize, char)> {
    // The longest named reference is 31 bytes with its `&` and `;`.
    let window = &bytes[i + 1..bytes.len().min(i + 40)];
    let semi = window.iter().position(|&b| b == b';')?;
    let name = &window[..semi];
    let end = i + 1 + semi + 1;
    let c = match name {
        [b'#', b'x' | b'X', hex @ ..] => number(hex, 16)?,
        [b'#', dec @ ..] => number(dec, 10)?,
        _ if !name.is_empty() && name.iter().all(u8::is_ascii_alphanumeric) => {
            let entity = std::str::from_utf8(&bytes[i..end]).ok()?;
            let decoded = html_escape::decode_html_entities(entity);
            let mut chars = decoded.chars();
            // A few named references are two characters (`&NotEqualTilde;`): keep the first.
            match (decoded.as_ref() == entity, chars.next()) {
                (false, Some(c)) => c,
                _ => return None,
            }
        }
        _ => return None,
    };
    Some((end, c))
}

fn number(digits: &[u8], radix: u32) -> Option<char> {
    if digits.is_empty() || digits.len() > 8 {
        return None;
    }
    let s = std::str::from_utf8(digits).ok()?;
    let n = u32::from_str_radix(s, radix).ok()?;
    Some(match n {
        0 => '\u{fffd}',
        _ => char::from_u32(n).unwrap_or('\u{fffd}'),
    })
}

/// A non-ASCII character and the combining marks after it, folded; or an invalid byte, kept.
fn non_ascii(bytes: &[u8], i: usize) -> Step {
    let Some((_, mut end)) = char_at(bytes, i) else {
        return Step::Keep(1);
    };
    while let Some((c, next)) = char_at(bytes, end) {
        if canonical_combining_class(c) == 0 {
            break;
        }
        end = next;
    }
    let Ok(cluster) = std::str::from_utf8(&bytes[i..end]) else {
        return Step::Keep(end - i);
    };
    let mut text = Vec::with_capacity(cluster.len());
    for c in cluster.nfkc() {
        fold(c.encode_utf8(&mut [0; 4]), &mut text);
    }
    if text == cluster.as_bytes() {
        Step::Keep(end - i)
    } else {
        Step::Replace(end, text)
    }
}

/// The UTF-8 character starting at `i`, and where it ends.
fn char_at(bytes: &[u8], i: usize) -> Option<(char, usize)> {
    let width = match *bytes.get(i)? {
        b if b < 0x80 => 1,
        b if b >= 0xf0 => 4,
        b if b >= 0xe0 => 3,
        b if b >= 0xc0 => 2,
        _ => return None,
    };
    let s = std::str::from_utf8(bytes.get(i..i + width)?).ok()?;
    s.chars().next().map(|c| (c, i + width))
}

/// Appends one character (given as its UTF-8) as it reads: ASCII as it is (NUL dropped); a
/// default-ignorable character (empty skeleton) not at all; a character whose confusable
/// skeleton is all ASCII as the ASCII character with that skeleton ([`look_alike`]); anything
/// else as it is.
fn fold(c: &str, out: &mut Vec<u8>) {
    if c.len() == 1 {
        if c != "\0" {
            out.extend_from_slice(c.as_bytes());
        }
        return;
    }
    if let Some(a) = c.chars().next().and_then(seen::letter_like) {
        out.push(a);
        return;
    }
    let mut sk = String::new();
    for k in skeleton(c) {
        if !k.is_ascii() {
            out.extend_from_slice(c.as_bytes());
            return;
        }
        sk.push(k);
    }
    match c.chars().next().and_then(|c| look_alike(c, &sk)) {
        Some(a) => out.push(a),
        None => out.extend(sk.bytes().filter(|&b| b != 0)),
    }
}

/// The ASCII character a reader takes `c` for, given its skeleton `sk`. A skeleton is a
/// prototype, not a letter: `I`, `l`, `1` and `|` all have the skeleton `l`, and `m` has `rn`.
/// So the ASCII characters that share the skeleton are the candidates, and `c`'s case picks
/// among them: Greek `Ι` reads as `I`, Cyrillic `ӏ` as `l`.
fn look_alike(c: char, sk: &str) -> Option<u8> {
    static BY_SKELETON: OnceLock<HashMap<String, Vec<u8>>> = OnceLock::new();
    let table = BY_SKELETON.get_or_init(|| {
        let mut t: HashMap<String, Vec<u8>> = HashMap::new();
        for a in (0x21u8..0x7f).chain([b' ']) {
            let s: String = skeleton(&char::from(a).to_string()).collect();
            t.entry(s).or_default().push(a);
        }
        t
    });
    let candidates = table.get(sk)?;
    let pick = |f: fn(&u8) -> bool| candidates.iter().copied().find(f);
    if c.is_uppercase() {
        pick(u8::is_ascii_uppercase)
    } else if c.is_lowercase() {
        pick(u8::is_ascii_lowercase)
    } else if c.is_numeric() {
        pick(u8::is_ascii_digit)
    } else {
        None
    }
    .or_else(|| candidates.first().copied())
}

#[cfg(test)]
mod tests;
