use super::*;

fn kinds(text: &str) -> Vec<(usize, Kind)> {
    lines(text.as_bytes()).map(|l| (l.number, l.kind)).collect()
}

fn headings(text: &str) -> Vec<(usize, u8, String)> {
    lines(text.as_bytes())
        .filter_map(|l| match l.kind {
            Kind::Heading { level, text, line } => Some((line, level, text)),
            _ => None,
        })
        .collect()
}

fn text(comments: Vec<Range<usize>>) -> Kind {
    Kind::Text { comments }
}

#[test]
fn line_numbers_and_endings() {
    let l: Vec<_> = lines(b"a\r\nb\n\nc").map(|l| (l.number, l.raw)).collect();
    assert_eq!(
        l,
        [
            (1, &b"a"[..]),
            (2, &b"b"[..]),
            (3, &b""[..]),
            (4, &b"c"[..])
        ]
    );
    assert_eq!(lines(b"").count(), 1);
    assert_eq!(lines(b"a\n").count(), 1);
    // Byte-order marks at any line's start (concatenated files) and stray CRs are edges.
    let l: Vec<_> = lines("\u{feff}# A\r\r\n\u{feff}\u{feff}## B\u{feff}\n".as_bytes())
        .map(|l| l.raw)
        .collect();
    assert_eq!(l, [&b"# A"[..], &b"## B"[..]]);
}

#[test]
fn headings_atx_and_setext() {
    let doc = "# One #\n   ## Two ##  \n    ## code\nPhase Timestamps\n================\n\nA long\nheading\n---\n";
    assert_eq!(
        headings(doc),
        [
            (1, 1, "One".into()),
            (2, 2, "Two".into()),
            (4, 1, "Phase Timestamps".into()),
            (7, 2, "A long heading".into())
        ]
    );
    // `---` after a blank line, a list item, a table row or a heading is a thematic break.
    assert!(headings("\n---\n- item\n---\n| A | 1 |\n---\n# H\n---\n")
        .iter()
        .all(|h| h.2 == "H"));
}

#[test]
fn atx_rules() {
    let h = |s: &'static str| {
        atx_heading(s.as_bytes()).map(|(l, t)| (l, std::str::from_utf8(t).unwrap()))
    };
    assert_eq!(h("# A"), Some((1, "A")));
    assert_eq!(h("###### Six"), Some((6, "Six")));
    assert_eq!(h("####### Seven"), None);
    assert_eq!(h("#NoSpace"), None);
    assert_eq!(h("   ## Indented ##  "), Some((2, "Indented")));
    assert_eq!(h("    # code"), None);
    assert_eq!(h("#"), Some((1, "")));
    assert_eq!(h("## ###"), Some((2, "")));
    assert_eq!(h("# C#"), Some((1, "C#")));
    assert_eq!(h("#\tTab"), Some((1, "Tab")));
    assert_eq!(h("text # not"), None);
    assert_eq!(h(""), None);
}

#[test]
fn fence_rules() {
    let f = |ch: u8, len: usize| Fence { ch, len };
    assert_eq!(opens_fence(b"```rust"), Some(f(b'`', 3)));
    assert_eq!(opens_fence(b"  ~~~"), Some(f(b'~', 3)));
    assert_eq!(opens_fence(b"``"), None);
    assert_eq!(opens_fence(b"``` `x` ```"), None);
    assert!(closes_fence(b"````  ", f(b'`', 3)));
    assert!(!closes_fence(b"``", f(b'`', 3)));
    assert!(!closes_fence(b"~~~", f(b'`', 3)));
    assert!(!closes_fence(b"``` x", f(b'`', 3)));
}

#[test]
fn fences_hide_their_content() {
    let doc = "~~~~ text\n# no\n~~~\n# still no\n~~~~~\n```rust\n<!-- not a comment\n```\n# yes\n";
    assert_eq!(headings(doc), [(9, 1, "yes".into())]);
    assert_eq!(kinds("``` `x` ```\n")[0].1, text(vec![]));
}

#[test]
fn comments_hide_their_content() {
    let doc = "<!--\n# no\n| A | 1 |\n-->\n# yes <!-- x -->\n";
    let k = kinds(doc);
    assert_eq!(k[0].1, Kind::Comment);
    assert_eq!(k[1].1, Kind::Comment);
    assert_eq!(k[3].1, Kind::Comment);
    assert_eq!(headings(doc), [(5, 1, "yes".into())]);
    let one: Vec<_> = lines(b"| A | <!-- todo --> |").collect();
    assert_eq!(one[0].visible().as_ref(), b"| A |  |");
    assert_eq!(one[0].hidden(), "<!-- todo -->");
    // A comment that ends mid-line leaves the rest of that line as content.
    let l: Vec<_> = lines(b"x <!-- a\nb --> | B | 2 |").collect();
    assert_eq!(l[0].visible().as_ref(), b"x ");
    assert_eq!(l[1].visible().as_ref(), b" | B | 2 |");
    // Empty comments, as HTML has them.
    assert_eq!(lines(b"<!---->a").next().unwrap().visible().as_ref(), b"a");
    assert_eq!(lines(b"<!-->a").next().unwrap().visible().as_ref(), b"a");
}

#[test]
fn unclosed_comments() {
    // At a line's start: an HTML block to the end of the document.
    assert!(kinds("<!-- open\n# H\n")
        .iter()
        .all(|k| k.1 == Kind::Comment));
    // Inside a line: literal text.
    assert_eq!(headings("a <!-- b\n# H\n"), [(2, 1, "H".into())]);
    // In a code span: literal text.
    assert_eq!(headings("`<!--` x\n# H\n-->\n"), [(2, 1, "H".into())]);
}

#[test]
fn many_unclosed_openers_stay_linear() {
    use std::time::{Duration, Instant};
    let start = Instant::now();
    let doc = "a <!-- b\n".repeat(200_000);
    assert_eq!(lines(doc.as_bytes()).count(), 200_000);
    let doc = format!("{}-->", "<!-- x -->\n".repeat(200_000));
    assert_eq!(lines(doc.as_bytes()).count(), 200_001);
    assert!(start.elapsed() < Duration::from_secs(20));
}

#[test]
fn code_spans_pair_runs_of_equal_length() {
    assert_eq!(code_spans(b"`a`"), [(0, 3)]);
    assert_eq!(code_spans(b"``a`b``"), [(0, 7)]);
    assert_eq!(code_spans(b"` ``"), Vec::<(usize, usize)>::new());
    assert_eq!(code_spans(b"`a` `b`"), [(0, 3), (4, 7)]);
    assert_eq!(code_spans(b""), Vec::<(usize, usize)>::new());
}

#[test]
fn garbage_never_panics() {
    for doc in [
        "",
        "\r",
        "\u{feff}",
        "<!--",
        "-->",
        "<!---->",
        "```",
        "~~~\n",
        "#",
        "=\n=",
        "\n---",
        "\r\n\r\n",
        "<!--\r\n-->\r\n",
    ] {
        let _ = lines(doc.as_bytes())
            .map(|l| l.visible().len())
            .sum::<usize>();
    }
}

/// The prose shortcut classifies every line as the full tests do: headings, setext
/// underlines, fences, comments, tables and lists around and between prose lines.
#[test]
fn the_prose_shortcut_changes_nothing() {
    use proptest::prelude::*;
    let line = "( {0,4}|\t)?(#{1,3} |```|~~~|---|===|\\*\\*\\*|- |1\\. |> |\\| )?[a-zA-Z #|`~<!>-]{0,14}(<!--|-->)?[a-z ]{0,4}";
    let doc = proptest::collection::vec(line, 0..30);
    proptest!(|(doc in doc)| {
        let text = doc.join("\n");
        let fast: Vec<Line<'_>> = lines(text.as_bytes()).collect();
        let mut slow = lines(text.as_bytes());
        slow.shortcut = false;
        prop_assert_eq!(fast, slow.collect::<Vec<_>>());
    });
}

/// Looking for `<!--` a window at a time finds what one look over the whole text finds: with
/// windows of a few bytes, comments are cut at every place a window can end.
#[test]
fn the_comment_window_changes_nothing() {
    use proptest::prelude::*;
    let line = "( {0,4})?(#{1,2} |```|---|- )?[a-zA-Z <!>-]{0,14}(<!--|-->|<!-->)?[a-z <!-]{0,6}";
    let doc = proptest::collection::vec(line, 0..24);
    proptest!(|(doc in doc, window in 0usize..9, shortcut in any::<bool>())| {
        let text = doc.join("\n");
        let mut small = lines(text.as_bytes());
        small.open_window = window;
        small.shortcut = shortcut;
        let mut whole = lines(text.as_bytes());
        whole.open_window = usize::MAX;
        whole.shortcut = false;
        prop_assert_eq!(small.collect::<Vec<_>>(), whole.collect::<Vec<_>>());
    });
}
