//! The dispatcher: positions, a smoke test per source language, extensions, and hostile inputs
//! that must neither hang nor overflow the stack; and the helpers the sibling test files share
//! (the data formats in `tests_data`, the commands in `tests_command`, each language in its own).

use std::path::PathBuf;
use std::time::Duration;
#[cfg(feature = "python")]
use std::time::Instant;

use super::*;

/// A workspace in a tempdir: files are written to it, then checked through [`check`].
pub(super) struct Ws {
    pub(super) dir: tempfile::TempDir,
}

impl Ws {
    pub(super) fn new() -> Self {
        Ws {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    pub(super) fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    #[track_caller]
    pub(super) fn check_with(
        &self,
        rel: &str,
        text: impl AsRef<[u8]>,
        rules: &[CommandRule],
    ) -> Outcome {
        let abs = self.path(rel);
        if let Some(parent) = abs.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&abs, text.as_ref()).unwrap();
        check(rel, text.as_ref(), &abs, rules)
    }

    #[track_caller]
    pub(super) fn check(&self, rel: &str, text: impl AsRef<[u8]>) -> Outcome {
        self.check_with(rel, text, &[])
    }
}

#[track_caller]
pub(super) fn parsed(o: &Outcome) -> String {
    match o {
        Outcome::Parsed { how } => how.clone(),
        other => panic!("expected Parsed, got {other:?}"),
    }
}

/// Asserts an Invalid outcome at `line:column` whose message contains `needle`.
#[track_caller]
pub(super) fn invalid_at(o: &Outcome, line: usize, column: usize, needle: &str) {
    match o {
        Outcome::Invalid {
            line: l,
            column: c,
            message,
            ..
        } => {
            assert_eq!((*l, *c), (line, column), "position of {o:?}");
            assert!(message.contains(needle), "`{needle}` not in {o:?}");
        }
        other => panic!("expected Invalid at {line}:{column}, got {other:?}"),
    }
}

#[track_caller]
pub(super) fn inconclusive(o: &Outcome, needle: &str) {
    match o {
        Outcome::Inconclusive { why } => assert!(why.contains(needle), "`{needle}` not in {why:?}"),
        other => panic!("expected Inconclusive, got {other:?}"),
    }
}

pub(super) fn rule(ext: &str, argv: &[&str], timeout: Duration) -> CommandRule {
    CommandRule {
        ext: ext.into(),
        argv: argv.iter().map(|s| (*s).to_owned()).collect(),
        timeout,
        replaces_builtin: false,
    }
}

pub(super) fn sh(ext: &str, script: &str) -> CommandRule {
    rule(
        ext,
        &["sh", "-c", script, "sh", "{path}"],
        Duration::from_secs(10),
    )
}

// --- positions ---

#[test]
fn positions_count_lines_and_characters_from_one() {
    let text = "ab\nçé x\n".as_bytes();
    assert_eq!(position(text, 0), (1, 1));
    assert_eq!(position(text, 3), (2, 1));
    // `x` is byte 8: ç and é are two bytes each, so it is the 4th character of line 2.
    assert_eq!(position(text, 8), (2, 4));
    assert_eq!(position(text, 999), (3, 1));
    assert_eq!(offset_of(text, 2, 6), 8);
}

// --- tree-sitter languages ---

#[test]
#[cfg(feature = "python")]
fn python() {
    let ws = Ws::new();
    let how = parsed(&ws.check("pkg/m.py", "def f(x):\n    return [x, {'a': 1}]\n"));
    assert!(how.starts_with("Python (tree-sitter-python"), "{how}");
    invalid_at(
        &ws.check("pkg/bad.py", "x = 1\ndef f(:\n    pass\n"),
        2,
        7,
        "missing `)`",
    );
    invalid_at(
        &ws.check("pkg/bad2.py", "x = 1 +* 2\n"),
        1,
        1,
        "syntax error: unexpected `x = 1 +* 2`",
    );
    invalid_at(
        &ws.check("pkg/unclosed.py", "def f(x):\n    return (x\n"),
        2,
        5,
        "syntax error: unexpected `return (x`",
    );
}

#[test]
#[cfg(feature = "python")]
fn python_encodings() {
    let ws = Ws::new();
    invalid_at(
        &ws.check("a.py", b"x = 1\ns = '\xE9'\n"),
        2,
        6,
        "invalid UTF-8 (byte 0xE9)",
    );
    // Decoded as declared (PEP 263); more in tests_python.
    parsed(&ws.check("b.py", b"# -*- coding: latin-1 -*-\ns = '\xE9'\n"));
    // Declared, but plain ASCII: parsed as it is.
    parsed(&ws.check("c.py", "# coding: latin-1\ns = 'e'\n"));
    parsed(&ws.check("d.py", "# -*- coding: utf-8 -*-\ns = 'é'\n"));
}

// JavaScript and TypeScript: `tests_js.rs`.

#[test]
#[cfg(feature = "rust")]
fn rust() {
    // syn judges (more in tests_rust).
    let ws = Ws::new();
    let how = parsed(&ws.check("src/lib.rs", "pub fn f(x: u8) -> u8 {\n    x + 1\n}\n"));
    assert!(how.starts_with("Rust 2021 (syn 2"), "{how}");
    invalid_at(
        &ws.check("src/bad.rs", "fn f() {\n    let x = ;\n}\n"),
        2,
        13,
        "expected an expression",
    );
    invalid_at(
        &ws.check("src/missing.rs", "fn f() {\n    g(1\n}\n"),
        3,
        1,
        "",
    );
}

#[test]
#[cfg(feature = "go")]
fn go() {
    let ws = Ws::new();
    let how = parsed(&ws.check(
        "main.go",
        "package main\n\nfunc main() {\n\tprintln(1)\n}\n",
    ));
    assert_eq!(how, golang::HOW);
    invalid_at(
        &ws.check("bad.go", "package main\n\nfunc main() {\n\tx := \n}\n"),
        5,
        1,
        "expected operand, found '}'",
    );
}

#[test]
#[cfg(feature = "python")]
fn further_errors_are_counted() {
    let ws = Ws::new();
    let o = ws.check(
        "a.py",
        "def f(:\n    pass\n\ndef g(:\n    pass\n\ndef h(:\n    pass\n",
    );
    invalid_at(&o, 1, 7, "and 2 more syntax errors");
}

#[test]
fn not_applicable() {
    let ws = Ws::new();
    assert_eq!(
        ws.check("logo.png", b"\x89PNG\r\n\x1a\n"),
        Outcome::NotApplicable
    );
    assert_eq!(ws.check("notes.txt", "hello"), Outcome::NotApplicable);
    assert_eq!(ws.check("Makefile", "all:\n"), Outcome::NotApplicable);
    // A rule for another extension changes nothing.
    let o = ws.check_with("logo.png", b"\x89PNG", &[sh("sh", "exit 1")]);
    assert_eq!(o, Outcome::NotApplicable);
}

#[test]
fn extensions_ignore_ascii_case() {
    let ws = Ws::new();
    invalid_at(&ws.check("A.JSON", "{"), 1, 2, "EOF");
    assert_eq!(parsed(&ws.check("b.Yml", "a: 1\n")), "YAML (saphyr-parser)");
}

// --- hostile input ---

#[test]
#[cfg(all(feature = "python", feature = "javascript"))]
fn deep_nesting_neither_hangs_nor_overflows() {
    let ws = Ws::new();
    let depth = 100_000;
    let brackets = "[".repeat(depth) + &"]".repeat(depth);
    let started = Instant::now();
    parsed(&ws.check("deep.json", &brackets));
    // oxc recurses: past `nesting::LIMIT` levels it is an error, not a stack overflow.
    assert!(matches!(
        ws.check("deep.js", format!("x = {brackets};\n")),
        Outcome::Invalid { message, .. } if message.contains("nested deeper than")
    ));
    // CPython allows 200 nested brackets (more in tests_python).
    invalid_at(
        &ws.check("deep.py", format!("x = {brackets}\n")),
        1,
        205,
        "too many nested parentheses",
    );
    // An unclosed hundred thousand.
    assert!(matches!(
        ws.check("open.js", "[".repeat(depth)),
        Outcome::Invalid { .. }
    ));
    assert!(matches!(
        ws.check("deep.yaml", &brackets),
        Outcome::Invalid { .. }
    ));
    assert!(matches!(
        ws.check("deep.toml", format!("a = {brackets}\n")),
        Outcome::Invalid { .. } | Outcome::Parsed { .. }
    ));
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "{:?}",
        started.elapsed()
    );
}

#[test]
#[cfg(feature = "python")]
fn a_source_file_at_the_size_limit_parses_in_bounded_time() {
    let ws = Ws::new();
    // ~200 KB, CC-06's default limit for `.py`; well under the budget even unoptimised.
    let body = "def f(x):\n    return [x, x + 1, {'k': (x, x)}]\n".repeat(4_200);
    let started = Instant::now();
    parsed(&ws.check("big.py", &body));
    assert!(started.elapsed() < PARSE_BUDGET, "{:?}", started.elapsed());
}

#[test]
#[cfg(feature = "python")]
fn a_parse_over_its_budget_is_cancelled_and_inconclusive() {
    let body = "x = [1, 2, 3]\n".repeat(100_000);
    let started = Instant::now();
    let o = source::parse_within(
        source::Lang::Python,
        body.as_bytes(),
        Duration::from_millis(1),
    );
    inconclusive(&o, "took longer than 1ms: cancelled");
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}
