//! Text saved as UTF-16 or UTF-32: recognising it (a byte-order mark, or without one the
//! pattern of NUL bytes that ASCII leaves in it) and decoding it to UTF-8 with a [`Map`] back to
//! the file's bytes. Invalid code units (an unpaired surrogate, a value past U+10FFFF, a cut-off
//! last unit) decode to U+FFFD; nothing panics.

use super::buf::Buf;
use super::map::{Builder, Map};

/// How a file's bytes are read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Utf8,
    Utf16Le,
    Utf16Be,
    Utf32Le,
    Utf32Be,
}

impl Encoding {
    pub fn name(self) -> &'static str {
        match self {
            Encoding::Utf8 => "UTF-8",
            Encoding::Utf16Le => "UTF-16LE",
            Encoding::Utf16Be => "UTF-16BE",
            Encoding::Utf32Le => "UTF-32LE",
            Encoding::Utf32Be => "UTF-32BE",
        }
    }

    fn unit(self) -> usize {
        match self {
            Encoding::Utf8 => 1,
            Encoding::Utf16Le | Encoding::Utf16Be => 2,
            Encoding::Utf32Le | Encoding::Utf32Be => 4,
        }
    }

    /// The code unit at the start of `b` (which holds at least one unit).
    fn read(self, b: &[u8]) -> u32 {
        match self {
            Encoding::Utf8 => u32::from(b[0]),
            Encoding::Utf16Le => u32::from(u16::from_le_bytes([b[0], b[1]])),
            Encoding::Utf16Be => u32::from(u16::from_be_bytes([b[0], b[1]])),
            Encoding::Utf32Le => u32::from_le_bytes([b[0], b[1], b[2], b[3]]),
            Encoding::Utf32Be => u32::from_be_bytes([b[0], b[1], b[2], b[3]]),
        }
    }
}

/// The wide encoding `bytes` are written in, and the length of its byte-order mark: by the
/// mark, else (only when `has_nul`) by the NUL pattern: at least half the code units are
/// printable ASCII or whitespace, as English text saved as UTF-16 or UTF-32 is almost entirely.
/// Random bytes (a PNG) pass that test with odds far below 1 in 10^100.
pub fn detect(bytes: &[u8], has_nul: bool) -> Option<(Encoding, usize)> {
    match bytes {
        [0xff, 0xfe, 0, 0, ..] if bytes.len().is_multiple_of(4) => {
            return Some((Encoding::Utf32Le, 4))
        }
        [0, 0, 0xfe, 0xff, ..] => return Some((Encoding::Utf32Be, 4)),
        [0xff, 0xfe, ..] => return Some((Encoding::Utf16Le, 2)),
        [0xfe, 0xff, ..] => return Some((Encoding::Utf16Be, 2)),
        _ => {}
    }
    if !has_nul {
        return None;
    }
    let textual = |e: Encoding| {
        let units = bytes.len() / e.unit();
        let ascii = bytes
            .chunks_exact(e.unit())
            .filter(|u| matches!(e.read(u), 0x20..=0x7e | 0x09 | 0x0a | 0x0d))
            .count();
        units > 0 && ascii * 2 >= units
    };
    [
        Encoding::Utf32Le,
        Encoding::Utf32Be,
        Encoding::Utf16Le,
        Encoding::Utf16Be,
    ]
    .into_iter()
    .find(|&e| textual(e))
    .map(|e| (e, 0))
}

/// Decodes `bytes` (after a byte-order mark of `skip` bytes) as `e`: UTF-8 text and the map
/// back to `bytes`. ASCII characters map as strides, others as opaque segments.
pub fn decode(bytes: &[u8], e: Encoding, skip: usize) -> (Buf, Map) {
    let unit = e.unit();
    let mut b = Builder::with_capacity(bytes.len() / unit + 8);
    let mut at = skip.min(bytes.len());
    let mut buf = [0u8; 4];
    while at < bytes.len() {
        let Some(u) = bytes.get(at..at + unit).map(|u| e.read(u)) else {
            // A cut-off last unit.
            b.push(at, "\u{fffd}".as_bytes(), 0);
            break;
        };
        let (c, len) = match (e, u) {
            (Encoding::Utf16Le | Encoding::Utf16Be, 0xd800..=0xdbff) => {
                let low = bytes.get(at + 2..at + 4).map(|l| e.read(l));
                match low {
                    Some(low @ 0xdc00..=0xdfff) => {
                        let c = 0x10000 + ((u - 0xd800) << 10) + (low - 0xdc00);
                        (char::from_u32(c).unwrap_or('\u{fffd}'), 4)
                    }
                    _ => ('\u{fffd}', 2),
                }
            }
            _ => (char::from_u32(u).unwrap_or('\u{fffd}'), unit),
        };
        let step = if c.is_ascii() { unit as u8 } else { 0 };
        b.push(at, c.encode_utf8(&mut buf).as_bytes(), step);
        at += len;
    }
    b.finish(bytes.len())
}

/// The text of `bytes` in `e`, for quoting evidence: decoded, invalid units as U+FFFD.
pub fn quote(bytes: &[u8], e: Encoding) -> String {
    match e {
        Encoding::Utf8 => String::from_utf8_lossy(bytes).into_owned(),
        _ => String::from_utf8_lossy(&decode(bytes, e, 0).0).into_owned(),
    }
}

/// How many `\n` code units come before `offset` (which is at a unit boundary).
pub fn newlines_before(bytes: &[u8], e: Encoding, offset: usize) -> usize {
    let head = &bytes[..offset.min(bytes.len())];
    match e {
        Encoding::Utf8 => memchr::memchr_iter(b'\n', head).count(),
        _ => head
            .chunks_exact(e.unit())
            .filter(|u| e.read(u) == 0x0a)
            .count(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn utf16le(s: &str) -> Vec<u8> {
        s.encode_utf16().flat_map(u16::to_le_bytes).collect()
    }

    fn utf16be(s: &str) -> Vec<u8> {
        s.encode_utf16().flat_map(u16::to_be_bytes).collect()
    }

    fn utf32(s: &str, le: bool) -> Vec<u8> {
        s.chars()
            .flat_map(|c| {
                if le {
                    u32::from(c).to_le_bytes()
                } else {
                    u32::from(c).to_be_bytes()
                }
            })
            .collect()
    }

    #[test]
    fn byte_order_marks_name_the_encoding() {
        let text = "GR-12: PASS\n";
        for (bytes, want) in [
            (
                [&[0xff, 0xfe][..], &utf16le(text)].concat(),
                Encoding::Utf16Le,
            ),
            (
                [&[0xfe, 0xff][..], &utf16be(text)].concat(),
                Encoding::Utf16Be,
            ),
            (
                [&[0xff, 0xfe, 0, 0][..], &utf32(text, true)].concat(),
                Encoding::Utf32Le,
            ),
            (
                [&[0, 0, 0xfe, 0xff][..], &utf32(text, false)].concat(),
                Encoding::Utf32Be,
            ),
        ] {
            let (e, skip) = detect(&bytes, true).unwrap();
            assert_eq!(e, want);
            let (out, map) = decode(&bytes, e, skip);
            assert_eq!(out, text.as_bytes(), "{want:?}");
            // `P` of PASS: the 8th character.
            let unit = e.unit();
            assert_eq!(map.range(8..9), skip + 8 * unit..skip + 9 * unit);
            assert_eq!(newlines_before(&bytes, e, bytes.len()), 1);
        }
    }

    #[test]
    fn the_nul_pattern_without_a_mark_names_the_encoding() {
        let text = "please fix the hero\n";
        assert_eq!(detect(&utf16le(text), true), Some((Encoding::Utf16Le, 0)));
        assert_eq!(detect(&utf16be(text), true), Some((Encoding::Utf16Be, 0)));
        assert_eq!(
            detect(&utf32(text, true), true),
            Some((Encoding::Utf32Le, 0))
        );
        assert_eq!(
            detect(&utf32(text, false), true),
            Some((Encoding::Utf32Be, 0))
        );
        // UTF-8 with a NUL, and a PNG header, are not wide text.
        assert_eq!(detect(b"plain text\0 with a NUL", true), None);
        assert_eq!(detect(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR\0\0\x01", true), None);
        assert_eq!(detect(&utf16le(text), false), None, "no NUL: not looked at");
    }

    #[test]
    fn non_ascii_and_surrogate_pairs_decode_with_their_units() {
        let text = "m\u{430}nual 🦀";
        let bytes = utf16le(text);
        let (out, map) = decode(&bytes, Encoding::Utf16Le, 0);
        assert_eq!(String::from_utf8(out.to_vec()).unwrap(), text);
        // `а` (Cyrillic, 2 bytes of UTF-8) is one unit; the crab (4 bytes) is a surrogate pair.
        assert_eq!(map.range(1..3), 2..4);
        assert_eq!(map.range(8..12), 14..18);
    }

    #[test]
    fn invalid_units_decode_to_replacement_characters() {
        // An unpaired high surrogate, a lone low one, a cut-off last byte.
        let bytes = [0x00, 0xd8, b'a', 0, 0x00, 0xdc, b'b'];
        let (out, _) = decode(&bytes, Encoding::Utf16Le, 0);
        assert_eq!(
            String::from_utf8(out.to_vec()).unwrap(),
            "\u{fffd}a\u{fffd}\u{fffd}"
        );
        let bytes = [0xff, 0xff, 0x11, 0x00, b'a', 0, 0, 0];
        let (out, _) = decode(&bytes, Encoding::Utf32Le, 0);
        assert_eq!(String::from_utf8(out.to_vec()).unwrap(), "\u{fffd}a");
        assert_eq!(quote(&[b'a', 0, b'b'], Encoding::Utf16Le), "a\u{fffd}");
    }
}
