use proptest::prelude::*;

use super::*;

/// The reading of `s` as a string.
fn read(s: &str) -> String {
    let r = utf8(s.as_bytes());
    String::from_utf8_lossy(r.text(s.as_bytes())).into_owned()
}

/// Where `needle` is in the reading of `s`, quoted from `s` as written, with its line.
fn quote(s: &str, needle: &str) -> (String, usize) {
    let r = utf8(s.as_bytes());
    let text = r.text(s.as_bytes());
    let at = memchr::memmem::find(text, needle.as_bytes()).expect("needle in the reading");
    r.quote(s.as_bytes(), at..at + needle.len())
}

#[test]
fn plain_ascii_reads_as_it_is_without_a_copy() {
    let s = "## Notes\n\n- a list item - with a dash\n\tand a tab, x >= 2\n";
    assert!(utf8(s.as_bytes()).is_plain());
    assert!(normalize(b"").is_none());
    // Non-ASCII that reads as itself is no change either.
    assert!(utf8("Perceptual Audit — Auditor A, café".as_bytes()).is_plain());
}

#[test]
fn nfkc_folds_fullwidth_letters_and_ligatures() {
    assert_eq!(read("ｍａｎｕａｌ"), "manual");
    assert_eq!(read("please ﬁx it"), "please fix it");
    assert_eq!(read("GR－12 ＞＝ 15"), "GR-12 >= 15");
    assert_eq!(read("a\u{a0}b"), "a b", "a no-break space is a space");
    assert_eq!(quote("please ﬁx it", "fix"), ("ﬁx".to_string(), 1));
}

#[test]
fn confusable_letters_read_as_ascii() {
    // Cyrillic а, е, о, р, с; Greek Ο and Ι; a dotless ı.
    assert_eq!(read("m\u{430}nual"), "manual");
    assert_eq!(
        read("\u{420}\u{415}FINE"),
        "PEFINE",
        "Cyrillic Р, Е look like P, E"
    );
    assert_eq!(read("R\u{415}F\u{399}N\u{415}"), "REFINE");
    assert_eq!(read("\u{441}\u{43e}ntent map"), "content map");
    assert_eq!(read("f\u{131}x"), "fix");
    // Hyphen look-alikes: U+2010 hyphen, U+2212 minus.
    assert_eq!(read("GR\u{2010}12 and GR\u{2212}13"), "GR-12 and GR-13");
    // Letters of other scripts that look like nothing ASCII stay.
    assert_eq!(read("日本語 фж ≥ —"), "日本語 фж ≥ —");
    assert_eq!(quote("the m\u{430}nual one", "manual").0, "m\u{430}nual");
}

#[test]
fn invisible_characters_are_dropped() {
    assert_eq!(read("man\u{200b}ual"), "manual");
    assert_eq!(read("re\u{ad}pair"), "repair");
    assert_eq!(read("fi\u{200d}x\u{2060}ed"), "fixed");
    assert_eq!(read("\u{feff}REFINE"), "REFINE");
    assert_eq!(read("x\u{fe0f}\u{202e}y"), "xy");
    assert_eq!(read("G\0R\0-\0"), "GR-", "NUL reads as nothing");
    assert_eq!(quote("a man\u{200b}ual b", "manual").0, "man\\u{200b}ual");
    assert_eq!(quote("re\u{ad}pair", "repair").0, "re\\u{ad}pair");
}

#[test]
fn html_references_decode_once() {
    assert_eq!(read("&gt;= 15"), ">= 15");
    assert_eq!(read("GR&#45;12 GR&#x2D;13 GR&#X2d;14"), "GR-12 GR-13 GR-14");
    assert_eq!(read("a &ge; 3 &amp; b"), "a ≥ 3 & b");
    assert_eq!(read("&amp;gt;"), "&gt;", "decoded once");
    assert_eq!(read("re&shy;pair m&#1072;nual"), "repair manual");
    assert_eq!(
        read("&#0; &#99999999; &#xD800;"),
        "\u{fffd} \u{fffd} \u{fffd}",
        "outside Unicode: U+FFFD"
    );
    // Not references: no semicolon, unknown names, bare ampersands.
    assert_eq!(read("AT&T &gt &nosuch; & ;"), "AT&T &gt &nosuch; & ;");
    assert_eq!(quote("x &gt;= 15", ">= 15"), ("&gt;= 15".to_string(), 1));
}

#[test]
fn markdown_escapes_are_undone() {
    assert_eq!(read(r"GR\-12: PASS"), "GR-12: PASS");
    assert_eq!(read(r"a \> b \\ c \d"), r"a > b \ c \d");
    assert_eq!(quote(r"GR\-12", "GR-12").0, r"GR\-12");
}

#[test]
fn hyphenated_line_breaks_join() {
    assert_eq!(read("please re-\npair it"), "please repair it");
    assert_eq!(read("please re- \r\n   pair it"), "please repair it");
    assert_eq!(read("GR-\n12: PASS"), "GR-12: PASS");
    // A list item, a rule, a table and a trailing hyphen are not broken words.
    let s = "text\n- item\n---\n|---|---|\nend -\nnext-\n";
    assert_eq!(read(s), s);
    assert_eq!(
        quote("x\nre-\npair", "repair"),
        ("re-\npair".to_string(), 2)
    );
}

#[test]
fn quotes_and_lines_come_from_the_original() {
    let s = "line one\nline ｔｗｏ has ﬁx\nthree GR\\-1\n";
    assert_eq!(quote(s, "fix"), ("ﬁx".to_string(), 2));
    assert_eq!(quote(s, "GR-1"), ("GR\\-1".to_string(), 3));
    assert_eq!(quote(s, "two has"), ("ｔｗｏ has".to_string(), 2));
    assert_eq!(quote(s, "line one"), ("line one".to_string(), 1));
}

#[test]
fn invalid_utf8_is_kept_and_never_panics() {
    let bytes = b"ok \xff\xfe fix \xe2\x89 \xc3";
    let r = utf8(bytes);
    assert!(r.is_plain(), "invalid bytes are kept as they are");
    let mut mixed = b"\xff\xe2 m\xd0\xb0nual \xc3".to_vec();
    mixed.extend("ｆｉｘ".as_bytes());
    let r = utf8(&mixed);
    assert_eq!(r.text(&mixed), b"\xff\xe2 manual \xc3fix");
}

fn utf16le(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(u16::to_le_bytes).collect()
}

#[test]
fn utf16_and_utf32_are_read_and_quoted_decoded() {
    let text = "Report\nthe gate runner says GR\u{2010}12: PASS\n";
    let mut bytes = vec![0xff, 0xfe];
    bytes.extend(utf16le(text));
    let rs = readings(&bytes, detect_wide(&bytes, true));
    assert_eq!(rs.len(), 2);
    let wide = &rs[1];
    assert_eq!(wide.encoding, Encoding::Utf16Le);
    let t = wide.text(&bytes);
    assert_eq!(t, b"Report\nthe gate runner says GR-12: PASS\n");
    let at = memchr::memmem::find(t, b"GR-12").unwrap();
    assert_eq!(
        wide.quote(&bytes, at..at + 5),
        ("GR\u{2010}12".to_string(), 2)
    );
    // The UTF-8 reading sees the ASCII with its NUL bytes dropped.
    let plain = &rs[0];
    assert!(memchr::memmem::find(plain.text(&bytes), b"gate runner").is_some());
    // Without a byte-order mark: the NUL pattern.
    let bytes = utf16le(text);
    let rs = readings(&bytes, detect_wide(&bytes, true));
    assert_eq!(rs.len(), 2);
    assert_eq!(rs[1].encoding, Encoding::Utf16Le);
    // UTF-32BE with a mark.
    let mut bytes = vec![0, 0, 0xfe, 0xff];
    bytes.extend(text.chars().flat_map(|c| u32::from(c).to_be_bytes()));
    let rs = readings(&bytes, detect_wide(&bytes, true));
    assert_eq!(rs[1].encoding, Encoding::Utf32Be);
    assert_eq!(
        rs[1].text(&bytes),
        b"Report\nthe gate runner says GR-12: PASS\n"
    );
    // UTF-8 text has one reading.
    assert_eq!(
        readings(text.as_bytes(), detect_wide(text.as_bytes(), false)).len(),
        1
    );
}

#[test]
fn values_read_as_a_human_reads_them() {
    assert_eq!(normalize_str("ｍａｎｕａｌ"), "manual");
    assert_eq!(normalize_str("m\u{430}n\u{200b}ual"), "manual");
    assert_eq!(normalize_str("MANU&#65;L"), "MANUAL");
    assert_eq!(normalize_str("gate-runner"), "gate-runner");
    assert!(matches!(normalize_str("plain"), Cow::Borrowed(_)));
}

proptest! {
    /// Any bytes: no panic, every reading's ranges map inside the file, and a reading's
    /// quote is always computable.
    #[test]
    fn any_bytes_read_without_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300),
                                    a in 0usize..400, b in 0usize..400) {
        let has_nul = bytes.contains(&0);
        for r in readings(&bytes, detect_wide(&bytes, has_nul)) {
            let len = r.text(&bytes).len();
            let (lo, hi) = (a.min(b).min(len), a.max(b).min(len));
            let o = r.original_range(lo..hi);
            prop_assert!(o.start <= o.end && o.end <= bytes.len(), "{o:?} of {}", bytes.len());
            let _ = r.quote(&bytes, lo..hi);
        }
    }

    /// Text made of the pieces the normaliser rewrites: no panic, ranges in order and in bounds.
    #[test]
    fn rewritten_text_maps_back_in_order(parts in proptest::collection::vec(
        prop_oneof![
            Just("a"), Just("-\n"), Just("\\-"), Just("&gt;"), Just("&#45;"), Just("\u{200b}"),
            Just("ｍ"), Just("\u{430}"), Just("e\u{301}"), Just("\0"), Just("ﬁ"), Just(" "),
            Just("\u{fffd}"), Just("&"), Just("\\"),
        ], 0..40)) {
        let s: String = parts.concat();
        let r = utf8(s.as_bytes());
        let len = r.text(s.as_bytes()).len();
        let mut last = 0;
        for n in 0..=len {
            let o = r.original_range(n..len);
            prop_assert!(o.start >= last && o.end <= s.len());
            last = o.start;
        }
    }
}

proptest! {
    /// The word-at-a-time scan finds the same first special byte as a byte-wise one.
    #[test]
    fn next_special_is_the_first_special_byte(
        bytes in proptest::collection::vec(
            prop_oneof![Just(b'a'), Just(b' '), Just(b'-'), Just(b'&'), Just(b'\\'), Just(0u8),
                        Just(0x80u8), Just(0xffu8), Just(0x01u8), Just(b'.')],
            0..64),
        from in 0usize..70,
    ) {
        let naive = bytes
            .get(from..)
            .and_then(|rest| rest.iter().position(|&b| SPECIAL[usize::from(b)]))
            .map(|k| from + k);
        prop_assert_eq!(next_special(&bytes, from), naive);
    }

    /// Asked at rising positions (as `normalize` asks), the cursors that run ahead give what a
    /// fresh byte-wise search from each position gives.
    #[test]
    fn specials_asked_in_order_are_each_the_first_special_byte(
        bytes in proptest::collection::vec(
            prop_oneof![Just(b'a'), Just(b'-'), Just(b'&'), Just(b'\\'), Just(0u8),
                        Just(0x80u8), Just(b'.')],
            0..200),
        mut froms in proptest::collection::vec(0usize..210, 0..20),
    ) {
        froms.sort_unstable();
        let mut specials = Specials::new(&bytes);
        for from in froms {
            let naive = bytes
                .get(from..)
                .and_then(|rest| rest.iter().position(|&b| SPECIAL[usize::from(b)]))
                .map(|k| from + k);
            prop_assert_eq!(specials.next(from), naive, "from {}", from);
        }
    }
}
