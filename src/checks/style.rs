//! CC-09: changed text files end with a line ending and add no trailing whitespace, judged as
//! pre-commit's `end-of-file-fixer` and `trailing-whitespace` hooks judge them: a final `\r`
//! is a line ending; every ASCII whitespace byte before the line ending (space, tab, vertical
//! tab, form feed, a stray `\r`) is trailing whitespace; in Markdown (`.md`, `.markdown`), a
//! non-blank line may end in exactly two spaces, a hard line break.

use super::change::{added, conclude, task, TaskScope};
use super::Outcome;
use crate::protocol::predicate::Style;
use crate::workspace::Content;

pub(super) fn style(s: &TaskScope<'_>, st: &Style) -> Outcome {
    let expected = "changed text files end with a newline and add no trailing whitespace";
    if let Err(o) = task(s) {
        return o;
    }
    let mut fails = Vec::new();
    let mut unknown = Vec::new();
    if st.final_newline {
        for p in s.present_files() {
            if s.ws.over_limit(&p).is_some() {
                // FAILed on size; not read.
                continue;
            }
            match s.ws.current(&p) {
                Content::Bytes(d)
                    if !d.looks_binary()
                        && !d.bytes.is_empty()
                        && !d.bytes.ends_with(b"\n")
                        && !d.bytes.ends_with(b"\r") =>
                {
                    let lines = d.bytes.iter().filter(|b| **b == b'\n').count() + 1;
                    fails.push(format!("{p}:{lines}: no newline at end of file"));
                }
                Content::Unknown(why) => unknown.push(format!("{p}: {why}")),
                _ => {}
            }
        }
    }
    if st.trailing_whitespace {
        if s.scope.is_none() {
            unknown.push(s.ws.why_no_baseline().to_string());
        } else {
            for (p, lines) in added(s) {
                let markdown = is_markdown(&p);
                match lines {
                    Ok(lines) => {
                        for (n, l) in lines {
                            if trailing_whitespace(&l, markdown) {
                                fails.push(format!("{p}:{n}: trailing whitespace"));
                            }
                        }
                    }
                    Err(why) => unknown.push(format!("{p}: {why}")),
                }
            }
        }
    }
    fails.sort();
    fails.dedup();
    conclude(expected, fails, unknown, "clean".into())
}

fn is_markdown(path: &str) -> bool {
    let lower = path.to_ascii_lowercase();
    lower.ends_with(".md") || lower.ends_with(".markdown")
}

/// The whitespace `trailing-whitespace` strips (Python's `bytes.rstrip()`), line ending aside.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\x0b' | '\x0c' | '\r')
}

/// Whether a line (without its `\n`) ends in whitespace, its `\r\n` line ending aside.
fn trailing_whitespace(line: &str, markdown: bool) -> bool {
    let line = line.strip_suffix('\r').unwrap_or(line);
    if markdown && !line.chars().all(is_space) {
        if let Some(body) = line.strip_suffix("  ") {
            // A hard line break: exactly two spaces after the text.
            return body.ends_with(is_space);
        }
    }
    line.ends_with(is_space)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whitespace_as_pre_commit_strips_it() {
        for (line, markdown, trailing) in [
            ("x", false, false),
            ("x ", false, true),
            ("x\t", false, true),
            ("x\x0c", false, true),
            ("x\x0b", false, true),
            ("x\r", false, false),
            ("x \r", false, true),
            ("x\r\r", false, true),
            ("", false, false),
            ("  ", false, true),
            // Markdown: a hard break is exactly two spaces after text.
            ("x  ", true, false),
            ("x  \r", true, false),
            ("x  ", false, true),
            ("x ", true, true),
            ("x   ", true, true),
            ("x\t  ", true, true),
            ("  ", true, true),
            ("\x0c", true, true),
        ] {
            assert_eq!(
                trailing_whitespace(line, markdown),
                trailing,
                "{line:?} markdown={markdown}"
            );
        }
        assert!(is_markdown("docs/README.MD"));
        assert!(is_markdown("a.markdown"));
        assert!(!is_markdown("a.mdx"));
        assert!(!is_markdown("md"));
    }
}
