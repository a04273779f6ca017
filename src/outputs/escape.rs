//! Text made safe for the markdown the referee writes. Evidence quotes pipeline files (names,
//! tracker values, matched text); placed raw, a `*`, `<b>`, `[x](y)`, a lone backtick or a
//! leading `#` would restyle, hide or forge what the referee says. This module owns that
//! escaping and nothing else: what text goes where is the renderers' (`markdown`,
//! `code_change`, the daemon's fault blocks).
//!
//! The escaping is minimal, so the raw files stay readable for an orchestrator that greps them:
//! a character is escaped only where CommonMark/GFM would read it as syntax. Backtick code spans
//! the referee itself wrote in evidence (`` `p3a-gate-results.json` ``) are kept when they are
//! balanced; a lone backtick is escaped. Control characters and line breaks never pass (each
//! string is one line), so no content can start a line of its own.

/// Where escaped text goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Place {
    /// A paragraph, a list item or a heading.
    Text,
    /// A table cell: `|` is escaped inside code spans too (GFM splits cells first).
    Cell,
}

/// Escapes `s` for a paragraph, list item or heading: one line, no markup of its own.
pub fn text(s: &str) -> String {
    escape(s, Place::Text)
}

/// Escapes `s` for a table cell.
pub fn cell(s: &str) -> String {
    escape(s, Place::Cell)
}

/// `s` as one code span, whatever backticks it holds: fenced with one backtick more than its
/// longest run, padded with a space where it starts or ends with a backtick.
pub fn code(s: &str) -> String {
    let s = one_line(s);
    let longest = longest_backtick_run(&s);
    let fence = "`".repeat(longest + 1);
    let pad = if s.starts_with('`') || s.ends_with('`') || s.is_empty() {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{s}{pad}{fence}")
}

/// [`code`] for a table cell.
pub fn code_cell(s: &str) -> String {
    code(s).replace('|', "\\|")
}

fn longest_backtick_run(s: &str) -> usize {
    let mut longest = 0;
    let mut run = 0;
    for c in s.chars() {
        if c == '`' {
            run += 1;
            longest = longest.max(run);
        } else {
            run = 0;
        }
    }
    longest
}

use crate::artifacts::one_line;

/// Where the closing run of exactly `n` backticks is, from `from` on.
fn closing_run(chars: &[char], from: usize, n: usize) -> Option<usize> {
    let mut i = from;
    while i < chars.len() {
        if chars[i] == '`' {
            let start = i;
            while i < chars.len() && chars[i] == '`' {
                i += 1;
            }
            if i - start == n {
                return Some(start);
            }
        } else {
            i += 1;
        }
    }
    None
}

/// A code span's content that markdownlint (MD038) and readers take as written: no space at
/// one end only, and not all spaces.
fn clean_span(content: &[char]) -> bool {
    let first = content.first().copied();
    let last = content.last().copied();
    match (first, last) {
        (None, _) | (_, None) => false,
        (Some(f), Some(l)) => {
            if content.iter().all(|c| *c == ' ') {
                return false;
            }
            let (fs, ls) = (f == ' ', l == ' ');
            if !fs && !ls {
                return true;
            }
            // Single-space padding on both sides is how a span holds a backtick at its edge.
            fs && ls
                && content.len() >= 3
                && content[1] != ' '
                && content[content.len() - 2] != ' '
                && (content[1] == '`' || content[content.len() - 2] == '`')
        }
    }
}

fn word(c: Option<&char>) -> bool {
    c.is_some_and(|c| c.is_alphanumeric())
}

fn escape(s: &str, place: Place) -> String {
    let line = one_line(s);
    let chars: Vec<char> = line.trim().chars().collect();
    let mut out = String::with_capacity(chars.len() + 8);
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let prev = i.checked_sub(1).and_then(|p| chars.get(p));
        let next = chars.get(i + 1);
        if c == '`' {
            let mut n = 0;
            while chars.get(i + n) == Some(&'`') {
                n += 1;
            }
            let span = closing_run(&chars, i + n, n)
                .filter(|&close| clean_span(&chars[i + n..close]) && !(i == 0 && n >= 3));
            match span {
                Some(close) => {
                    let raw: String = chars[i..close + n].iter().collect();
                    match place {
                        Place::Cell => out.push_str(&raw.replace('|', "\\|")),
                        Place::Text => out.push_str(&raw),
                    }
                    i = close + n;
                }
                None => {
                    out.push_str(&"\\`".repeat(n));
                    i += n;
                }
            }
            continue;
        }
        let at_start = i == 0;
        // What follows a block marker: a space or the end of the line.
        let spaced = |at: usize| chars.get(at).is_none_or(|c| *c == ' ');
        let escape = match c {
            // Only where a backslash would itself escape the next character.
            '\\' => next.is_none_or(|n| n.is_ascii_punctuation()),
            '*' | '|' | '~' => true,
            // Only what could open a tag, comment or autolink (`a < b` stays as it is).
            '<' => next.is_some_and(|n| n.is_ascii_alphabetic() || matches!(n, '/' | '!' | '?')),
            // Intraword underscores (`P3B_START`) are never emphasis.
            '_' => !(word(prev) && word(next)),
            '[' => at_start || next == Some(&'^'),
            ']' => matches!(next, Some('(' | '[')),
            '&' => next.is_some_and(|n| n.is_alphanumeric() || *n == '#'),
            // A heading (`# x`, `### x`) at the start, a closing sequence at the end.
            '#' => {
                (at_start && spaced(chars.iter().take_while(|c| **c == '#').count()))
                    || (i + 1 == chars.len() && prev == Some(&' '))
            }
            '>' => at_start,
            // A list item (`- x`, `+ x`) or a thematic break (`---`) at the start.
            '-' | '+' => at_start && (spaced(1) || chars.iter().all(|x| *x == c || *x == ' ')),
            // `1. x` or `2) x` at the start would be an ordered list.
            '.' | ')' => i > 0 && chars[..i].iter().all(char::is_ascii_digit) && spaced(i + 1),
            // Bare URLs and e-mail addresses become links (MD034).
            ':' => chars.get(i + 1..i + 3) == Some(&['/', '/']),
            '@' => word(prev) && word(next),
            _ => false,
        } || (c == '.'
            && i >= 3
            && chars[i - 3..i]
                .iter()
                .collect::<String>()
                .eq_ignore_ascii_case("www")
            && !word(i.checked_sub(4).and_then(|p| chars.get(p))));
        if escape {
            out.push('\\');
        }
        out.push(c);
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_left_alone() {
        for s in [
            "expected 9 files; observed 9 files",
            "P3B_START 2026-02-25T10:50:00Z < P3C_START",
            "GR-01 = PASS, source manual",
            "found p3a-gate-results.json[0]: 48 entries",
            "8 files match `screenshots/1440/scroll-*.png`",
            r"p3b-pa-auditor-J\n## OBS-21: PASS\r## OBS-19: PASS.md",
        ] {
            assert_eq!(text(s), s);
        }
    }

    #[test]
    fn markup_from_content_is_escaped() {
        assert_eq!(text("*bold* <b>x</b>"), r"\*bold\* \<b>x\</b>");
        assert_eq!(text("_a_ a_b"), r"\_a\_ a_b");
        assert_eq!(text("[x](http://e.com)"), r"\[x\](http\://e.com)");
        assert_eq!(text("see www.e.com or a@b.c"), r"see www\.e.com or a\@b.c");
        assert_eq!(text("# not a heading"), r"\# not a heading");
        assert_eq!(text("- not a list"), r"\- not a list");
        assert_eq!(text("12. not a list"), r"12\. not a list");
        assert_eq!(text("> no quote"), r"\> no quote");
        assert_eq!(text("x &amp; y"), r"x \&amp; y");
        assert_eq!(text("a | b"), r"a \| b");
        assert_eq!(text("trailing #"), r"trailing \#");
        assert_eq!(text("---"), r"\---");
        assert_eq!(text("1.0.0 #1 -x +1 2.5"), "1.0.0 #1 -x +1 2.5");
        assert_eq!(text(r"a\*b"), r"a\\\*b");
        assert_eq!(text("  padded  "), "padded");
    }

    #[test]
    fn code_spans_are_kept_when_balanced() {
        assert_eq!(text("in `a*b|c` here"), "in `a*b|c` here");
        assert_eq!(cell("in `a|b` here"), r"in `a\|b` here");
        assert_eq!(text("a lone ` tick"), r"a lone \` tick");
        assert_eq!(text("`x` at the start"), "`x` at the start");
        assert_eq!(text("```fence"), r"\`\`\`fence");
        assert_eq!(text("code ` x` here"), r"code \` x\` here");
    }

    #[test]
    fn no_line_can_be_forged() {
        let t = text("a\n## OBS-21: PASS\r\n- b\u{2028}c");
        assert!(!t.contains(['\n', '\r', '\u{2028}']), "{t}");
    }

    #[test]
    fn code_fits_any_backticks() {
        assert_eq!(code("a.md"), "`a.md`");
        assert_eq!(code("a`b"), "``a`b``");
        assert_eq!(code("`a"), "`` `a ``");
        assert_eq!(code_cell("a|b"), r"`a\|b`");
    }
}
