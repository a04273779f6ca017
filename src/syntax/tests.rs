//! Every language valid and invalid (exact positions), the commands (pass, fail, not installed,
//! timeout, refused), and hostile inputs that must neither hang nor overflow the stack.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use super::*;

/// A workspace in a tempdir: files are written to it, then checked through [`check`].
struct Ws {
    dir: tempfile::TempDir,
}

impl Ws {
    fn new() -> Self {
        Ws {
            dir: tempfile::tempdir().unwrap(),
        }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    #[track_caller]
    fn check_with(&self, rel: &str, text: impl AsRef<[u8]>, rules: &[CommandRule]) -> Outcome {
        let abs = self.path(rel);
        if let Some(parent) = abs.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&abs, text.as_ref()).unwrap();
        check(rel, text.as_ref(), &abs, rules)
    }

    #[track_caller]
    fn check(&self, rel: &str, text: impl AsRef<[u8]>) -> Outcome {
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

fn rule(ext: &str, argv: &[&str], timeout: Duration) -> CommandRule {
    CommandRule {
        ext: ext.into(),
        argv: argv.iter().map(|s| (*s).to_owned()).collect(),
        timeout,
        replaces_builtin: false,
    }
}

fn sh(ext: &str, script: &str) -> CommandRule {
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

// --- JSON ---

#[test]
fn json_valid() {
    let ws = Ws::new();
    assert_eq!(
        parsed(&ws.check("a.json", "{\"a\": [1, 2, {\"b\": null}]}\n")),
        "JSON (serde_json)"
    );
}

#[test]
fn json_invalid_at_the_offending_character() {
    let ws = Ws::new();
    invalid_at(
        &ws.check("cfg/a.json", "{\n  \"a\": 1,\n  \"b\": }\n"),
        3,
        8,
        "expected value",
    );
    invalid_at(
        &ws.check("b.json", "{\"a\": 1,}"),
        1,
        9,
        "key must be a string",
    );
    // An unexpected end is reported at the end.
    invalid_at(
        &ws.check("c.json", "{\"a\": [1,\n"),
        2,
        1,
        "EOF while parsing",
    );
}

#[test]
fn json_columns_count_characters_not_bytes() {
    let ws = Ws::new();
    // "é" is two bytes; serde_json says byte column 10, the editor shows character 9.
    invalid_at(
        &ws.check("a.json", "{\"é\": 1 x}"),
        1,
        9,
        "expected `,` or `}`",
    );
}

#[test]
fn json_message_has_no_duplicate_position() {
    let ws = Ws::new();
    let o = ws.check("a.json", "[1 2]");
    invalid_at(&o, 1, 4, "expected `,` or `]`");
    let Outcome::Invalid { message, .. } = o else {
        unreachable!()
    };
    assert!(!message.contains("line"), "{message}");
}

#[test]
fn json_with_a_byte_order_mark_is_valid() {
    let ws = Ws::new();
    parsed(&ws.check("a.json", b"\xEF\xBB\xBF{}"));
}

#[test]
fn json_not_utf8_is_invalid_at_the_bad_byte() {
    let ws = Ws::new();
    invalid_at(
        &ws.check("a.json", b"{\n \"a\": \"\xFF\"}"),
        2,
        8,
        "invalid UTF-8 (byte 0xFF)",
    );
}

// --- TOML ---

#[test]
fn toml_valid() {
    let ws = Ws::new();
    assert_eq!(
        parsed(&ws.check(
            "Cargo.toml",
            "[package]\nname = \"x\"\n[[bin]]\nname = \"y\"\n"
        )),
        "TOML (toml)"
    );
}

#[test]
fn toml_invalid_at_the_span() {
    let ws = Ws::new();
    invalid_at(&ws.check("a.toml", "[a]\nb = 1\nc = \n"), 3, 5, "");
    invalid_at(&ws.check("b.toml", "a = 1\na = 2\n"), 2, 1, "duplicate key");
}

// --- YAML ---

#[test]
fn yaml_valid() {
    let ws = Ws::new();
    let how = parsed(&ws.check("a.yaml", "a: 1\nb: [x, y]\nc: &anchor {d: 2}\ne: *anchor\n"));
    assert_eq!(how, "YAML (saphyr-parser)");
    parsed(&ws.check("b.yml", "- 1\n- two\n"));
}

#[test]
fn yaml_multi_document_is_valid() {
    let ws = Ws::new();
    parsed(&ws.check("k8s.yaml", "---\nkind: A\n---\nkind: B\n...\n---\n- 1\n"));
}

#[test]
fn yaml_invalid() {
    let ws = Ws::new();
    invalid_at(
        &ws.check("a.yaml", "a: 1\nb: [1, 2\nc: 3\n"),
        3,
        2,
        "illegal placement of ':' indicator",
    );
    invalid_at(
        &ws.check("b.yaml", "a: 1\n  b: 2\n"),
        2,
        4,
        "mapping values are not allowed",
    );
    invalid_at(&ws.check("c.yaml", "a: *nowhere\n"), 1, 4, "unknown anchor");
    // An error in the second document of a stream: at the opening quote.
    invalid_at(
        &ws.check("d.yaml", "a: 1\n---\nb: \"open\n"),
        3,
        4,
        "found unexpected end of stream",
    );
}

// --- tree-sitter languages ---

#[test]
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
fn a_source_file_at_the_size_limit_parses_in_bounded_time() {
    let ws = Ws::new();
    // ~200 KB, CC-06's default limit for `.py`; well under the budget even unoptimised.
    let body = "def f(x):\n    return [x, x + 1, {'k': (x, x)}]\n".repeat(4_200);
    let started = Instant::now();
    parsed(&ws.check("big.py", &body));
    assert!(started.elapsed() < PARSE_BUDGET, "{:?}", started.elapsed());
}

#[test]
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

// --- commands ---

#[test]
fn command_that_passes() {
    let ws = Ws::new();
    let o = ws.check_with(
        "run.sh",
        "echo hi\n",
        &[rule("sh", &["sh", "-n", "{path}"], Duration::from_secs(10))],
    );
    assert_eq!(parsed(&o), "command `sh -n {path}`");
}

#[test]
fn command_that_fails_with_file_line_column() {
    let ws = Ws::new();
    let r = sh(
        ".lua",
        "echo \"note: checking\"; echo \"$1:3:7: error: unexpected symbol\" >&2; exit 1",
    );
    let o = ws.check_with("src/x.lua", "x = = 1\n", &[r]);
    invalid_at(&o, 3, 7, "error: unexpected symbol");
    // stdout is kept too, after stderr.
    invalid_at(&o, 3, 7, "note: checking");
}

#[test]
fn command_that_fails_with_line_n() {
    let ws = Ws::new();
    let r = sh(
        "cfg",
        "echo 'File \"x.cfg\", line 4' >&2; echo 'SyntaxError: bad' >&2; exit 1",
    );
    invalid_at(&ws.check_with("x.cfg", "", &[r]), 4, 0, "SyntaxError: bad");
    let r = sh("cfg", "echo 'error on line 2, column 5' >&2; exit 2");
    invalid_at(&ws.check_with("y.cfg", "", &[r]), 2, 5, "line 2");
}

#[test]
fn command_that_fails_without_position() {
    let ws = Ws::new();
    invalid_at(
        &ws.check_with("x.cfg", "", &[sh("cfg", "echo nope; exit 3")]),
        0,
        0,
        "nope",
    );
    invalid_at(
        &ws.check_with("y.cfg", "", &[sh("cfg", "exit 3")]),
        0,
        0,
        "exited with 3 and printed nothing",
    );
}

#[test]
fn evidence_lines() {
    let invalid = |line, column| Outcome::Invalid {
        line,
        column,
        message: "missing `)`".into(),
        how: "P".into(),
    };
    assert_eq!(invalid(3, 7).evidence("a.py"), "a.py:3:7: missing `)` (P)");
    assert_eq!(invalid(3, 0).evidence("a.py"), "a.py:3: missing `)` (P)");
    assert_eq!(invalid(0, 0).evidence("a.py"), "a.py: missing `)` (P)");
    let o = Outcome::Inconclusive {
        why: "`x` is not installed".into(),
    };
    assert_eq!(o.evidence("a.x"), "a.x: not decided: `x` is not installed");
}

#[test]
fn command_not_found_by_a_shim_is_inconclusive() {
    let ws = Ws::new();
    let r = sh(
        "lua",
        "echo 'pyenv: python3: command not found' >&2; exit 127",
    );
    inconclusive(
        &ws.check_with("x.lua", "", &[r]),
        "exited with 127 (program not found",
    );
}

#[test]
fn command_not_installed_is_inconclusive() {
    let ws = Ws::new();
    let r = rule(
        "lua",
        &["referee-no-such-checker", "{path}"],
        Duration::from_secs(5),
    );
    inconclusive(
        &ws.check_with("x.lua", "x = 1\n", &[r]),
        "`referee-no-such-checker` is not installed",
    );
    let r = rule(
        "lua",
        &["/nonexistent/bin/luac", "{path}"],
        Duration::from_secs(5),
    );
    inconclusive(
        &ws.check_with("x.lua", "x = 1\n", &[r]),
        "`/nonexistent/bin/luac` is not installed",
    );
}

fn gone(pid: &str) -> bool {
    // Gone, or a zombie waiting for a reaper that is not ours.
    std::fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |stat| {
        stat.rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z')
    })
}

#[test]
fn command_that_times_out_is_killed_with_its_group() {
    let ws = Ws::new();
    let pids = ws.path("pids");
    let script = format!("sleep 5 & echo $$ $! > {}; wait", pids.display());
    let r = rule("lua", &["sh", "-c", &script], Duration::from_millis(200));
    let started = Instant::now();
    let o = ws.check_with("x.lua", "x = 1\n", &[r]);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    inconclusive(&o, "did not finish within 200ms: killed");
    let pids = std::fs::read_to_string(&pids).unwrap();
    let deadline = Instant::now() + Duration::from_secs(3);
    for pid in pids.split_whitespace() {
        while !gone(pid) && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert!(gone(pid), "process {pid} still runs");
    }
}

#[test]
fn command_killed_by_a_signal_is_inconclusive() {
    let ws = Ws::new();
    inconclusive(
        &ws.check_with("x.lua", "", &[sh("lua", "kill -9 $$")]),
        "killed by signal 9",
    );
}

#[test]
fn command_from_the_workspace_is_refused() {
    let ws = Ws::new();
    let tool = ws.path("tools/check.sh");
    std::fs::create_dir_all(tool.parent().unwrap()).unwrap();
    std::fs::write(&tool, "#!/bin/sh\nexit 0\n").unwrap();
    let r = rule(
        "lua",
        &[tool.to_str().unwrap(), "{path}"],
        Duration::from_secs(5),
    );
    inconclusive(
        &ws.check_with("src/x.lua", "", &[r]),
        "inside the workspace",
    );
    let r = rule(
        "lua",
        &["./tools/check.sh", "{path}"],
        Duration::from_secs(5),
    );
    inconclusive(
        &ws.check_with("src/x.lua", "", &[r]),
        "a name on PATH or an absolute path",
    );
    let r = rule("lua", &[], Duration::from_secs(5));
    inconclusive(&ws.check_with("src/x.lua", "", &[r]), "has no program");
}

#[test]
fn command_output_names_the_file_by_its_workspace_path() {
    let ws = Ws::new();
    let o = ws.check_with(
        "scripts/x.lua",
        "",
        &[sh("lua", "echo \"$1: line 2: unexpected end\" >&2; exit 1")],
    );
    invalid_at(&o, 2, 0, "scripts/x.lua: line 2: unexpected end");
    let Outcome::Invalid { message, .. } = &o else {
        panic!("{o:?}")
    };
    let abs = ws.path("scripts/x.lua");
    assert!(!message.contains(abs.to_str().unwrap()), "{message}");
}

#[test]
fn command_runs_outside_the_workspace() {
    let ws = Ws::new();
    let o = ws.check_with("x.lua", "", &[sh("lua", "pwd; exit 1")]);
    let Outcome::Invalid { message, .. } = o else {
        panic!("{o:?}")
    };
    assert!(
        !Path::new(message.trim()).starts_with(ws.dir.path()),
        "{message}"
    );
}

#[test]
fn command_output_is_bounded() {
    let ws = Ws::new();
    let o = ws.check_with(
        "x.lua",
        "",
        &[sh("lua", "yes error | head -c 1000000 >&2; exit 1")],
    );
    let Outcome::Invalid { message, .. } = o else {
        panic!("{o:?}")
    };
    assert!(message.len() <= OUTPUT_LIMIT, "{}", message.len());
}

#[test]
fn rule_extension_forms() {
    let ws = Ws::new();
    let fail = sh(".d.ts", "exit 1");
    // `.d.ts` matches `x.d.ts`, not `xd.ts`.
    invalid_at(
        &ws.check_with("x.d.ts", "export {};\n", std::slice::from_ref(&fail)),
        0,
        0,
        "exited with 1",
    );
    parsed(&ws.check_with("xd.ts", "export {};\n", &[fail]));
    invalid_at(
        &ws.check_with("A.LUA", "", &[sh("lua", "exit 1")]),
        0,
        0,
        "",
    );
}

#[test]
fn a_rule_on_a_builtin_type_adds_to_it() {
    let ws = Ws::new();
    // Both pass: both named.
    let o = ws.check_with("a.json", "{}", &[sh("json", "exit 0")]);
    assert_eq!(
        parsed(&o),
        "JSON (serde_json) and command `sh -c 'exit 0' sh {path}`"
    );
    // The command fails where the parser passed: invalid.
    invalid_at(
        &ws.check_with("b.json", "{}", &[sh("json", "echo \"$1:1:2: no\"; exit 1")]),
        1,
        2,
        "no",
    );
    // The parser fails: the command is not run, the parser's error stands.
    let marker = ws.path("ran");
    let o = ws.check_with(
        "c.json",
        "{",
        &[sh("json", &format!("touch {}", marker.display()))],
    );
    invalid_at(&o, 1, 2, "EOF");
    assert!(!marker.exists());
    // A command that cannot run makes a parsed file inconclusive, never a pass.
    let r = rule("json", &["referee-no-such-checker"], Duration::from_secs(5));
    inconclusive(&ws.check_with("d.json", "{}", &[r]), "not installed");
}

#[test]
fn python_py_compile_writes_nothing_in_the_workspace() {
    if resolve_for_test("python3").is_none() {
        eprintln!("python3 not installed: skipped");
        return;
    }
    let ws = Ws::new();
    let r = rule(
        "py",
        &["python3", "-m", "py_compile", "{path}"],
        Duration::from_secs(30),
    );
    let o = ws.check_with("pkg/ok.py", "x = 1\n", std::slice::from_ref(&r));
    assert!(
        parsed(&o).ends_with("and command `python3 -m py_compile {path}`"),
        "{o:?}"
    );
    // An error only the compiler sees: tree-sitter parses it.
    let o = ws.check_with(
        "pkg/bad.py",
        "def f():\n    x = 1\n    return\nreturn 2\nx = (yield)\n",
        &[r],
    );
    let Outcome::Invalid { line, message, .. } = &o else {
        panic!("{o:?}")
    };
    assert_eq!(*line, 4, "{o:?}");
    assert!(message.contains("'return' outside function"), "{o:?}");
    let mut found: Vec<_> = walkdir::WalkDir::new(ws.dir.path())
        .into_iter()
        .map(|e| {
            e.unwrap()
                .path()
                .strip_prefix(ws.dir.path())
                .unwrap()
                .display()
                .to_string()
        })
        .collect();
    found.sort();
    assert_eq!(found, ["", "pkg", "pkg/bad.py", "pkg/ok.py"]);
}

fn resolve_for_test(program: &str) -> Option<PathBuf> {
    command::resolve_for_tests(program)
}

/// A non-ASCII name shorter than a rule's extension has no char boundary where the extension
/// would start: matching it once panicked the referee (`é.py` against `.bash`).
#[test]
fn a_non_ascii_name_never_panics_the_rule_match() {
    let rules = [rule(
        ".bash",
        &["bash", "-n", "{path}"],
        Duration::from_secs(5),
    )];
    for name in ["é.py", "é", "ßé.sh", "日本.bash", "x.BASH"] {
        let _ = rules
            .iter()
            .filter(|r| super::rule_matches(r, name))
            .count();
    }
    assert!(super::rule_matches(&rules[0], "日本.bash"));
    assert!(!super::rule_matches(&rules[0], "é.py"));
}
