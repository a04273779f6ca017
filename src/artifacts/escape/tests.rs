use super::*;

#[test]
fn normalize_rel_strips_dot_slash() {
    assert_eq!(normalize_rel("./a/b"), "a/b");
    assert_eq!(normalize_rel("././a"), "a");
    assert_eq!(normalize_rel("a"), "a");
    assert_eq!(normalize_rel(""), "");
}

#[test]
fn escape_name_is_injective_and_one_line() {
    assert!(matches!(
        escape_name(b"a/b c.md"),
        std::borrow::Cow::Borrowed("a/b c.md")
    ));
    assert_eq!(escape_name("é.md".as_bytes()), "é.md");
    assert_eq!(escape_name(b"bad-\xff.md"), "bad-\\xff.md");
    assert_eq!(escape_name(b"bad-\\xff.md"), "bad-\\\\xff.md");
    assert_eq!(
        escape_name(b"x\n## OBS-21: PASS\r\t\x1b[0m\x7f"),
        "x\\n## OBS-21: PASS\\r\\t\\x1b[0m\\x7f"
    );
    assert_eq!(
        escape_name("a\u{2028}b\u{202e}c\u{85}".as_bytes()),
        "a\\u{2028}b\\u{202e}c\\u{0085}"
    );
    // Names that differ only in invalid bytes stay apart, and apart from U+FFFD.
    let names: [&[u8]; 5] = [
        b"a\xff",
        b"a\xfe",
        "a\u{fffd}".as_bytes(),
        b"a\\xff",
        b"a\xc3",
    ];
    let escaped: std::collections::BTreeSet<String> =
        names.iter().map(|n| escape_name(n).into_owned()).collect();
    assert_eq!(escaped.len(), names.len());
    for e in &escaped {
        assert!(!e.chars().any(needs_escape), "{e:?}");
    }
}
