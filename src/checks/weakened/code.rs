//! What a source file holds that a weakened test suite changes: its test definitions, its
//! assertions (in test code), the markers that skip tests, and the comments and attributes that
//! switch a linter or type checker off. Each language's rules are line rules over code lines
//! (a line that is only a comment holds no test, skip or assertion); Rust's test code is found
//! with syn (`#[cfg(test)]` modules and `#[test]` functions), its parser for CC-05 too.

use std::ops::RangeInclusive;
use std::sync::OnceLock;

use regex::Regex;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Lang {
    Python,
    Js,
    Rust,
    Go,
    Jvm,
    Shell,
    Ruby,
}

/// The language of a path, by extension.
pub fn lang(path: &str) -> Option<Lang> {
    let name = file_name(path);
    let ext = name.rsplit_once('.').map(|(_, e)| e.to_ascii_lowercase())?;
    Some(match ext.as_str() {
        "py" | "pyi" => Lang::Python,
        "js" | "jsx" | "mjs" | "cjs" | "ts" | "tsx" | "mts" | "cts" | "vue" | "svelte" => Lang::Js,
        "rs" => Lang::Rust,
        "go" => Lang::Go,
        "java" | "kt" | "kts" | "scala" => Lang::Jvm,
        "sh" | "bash" => Lang::Shell,
        "rb" => Lang::Ruby,
        _ => return None,
    })
}

pub fn file_name(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

fn in_dir(path: &str, dirs: &[&str]) -> bool {
    let mut parts: Vec<&str> = path.split('/').collect();
    parts.pop();
    parts.iter().any(|p| dirs.contains(p))
}

/// Whether a source file is test code as the language's test runners find it.
pub fn is_test_file(path: &str, lang: Lang) -> bool {
    let name = file_name(path);
    let lower = name.to_ascii_lowercase();
    match lang {
        Lang::Python => {
            lower.starts_with("test_")
                || lower.ends_with("_test.py")
                || lower == "conftest.py"
                || in_dir(path, &["tests", "test", "testing"])
        }
        Lang::Js => {
            lower.contains(".test.")
                || lower.contains(".spec.")
                || lower.contains("-test.")
                || in_dir(path, &["__tests__", "test", "tests", "spec", "e2e"])
        }
        Lang::Rust => in_dir(path, &["tests"]),
        Lang::Go => lower.ends_with("_test.go"),
        Lang::Jvm => {
            path.contains("src/test/")
                || lower.ends_with("test.java")
                || lower.ends_with("tests.java")
                || lower.ends_with("test.kt")
                || lower.ends_with("tests.kt")
        }
        Lang::Ruby => lower.ends_with("_spec.rb") || lower.ends_with("_test.rb"),
        Lang::Shell => lower.ends_with(".bats"),
    }
}

/// What one version of a source file holds.
#[derive(Debug, Default)]
pub struct Scan {
    /// Each test defined: its name (or the line's text) and line.
    pub tests: Vec<(String, usize)>,
    /// The lines of test code holding an assertion.
    pub asserts: Vec<usize>,
    /// Each skip marker (by its name) and its line.
    pub skips: Vec<(&'static str, usize)>,
    /// Each lint or type-check suppression (by its name) and its line.
    pub suppressions: Vec<(&'static str, usize)>,
    /// The functions of a test file that are not tests and hold assertions (`def check(r):
    /// assert r.ok`), each with how many: a call to one counts as that many (see
    /// [`helper_calls`]).
    pub helpers: Vec<(String, usize)>,
    /// The assertions calls to helpers stand for beyond one per line.
    pub helper_weight: usize,
}

impl Scan {
    /// How many assertions the file's test code holds, helper calls counted by their helpers'.
    pub fn assertions(&self) -> usize {
        self.asserts.len() + self.helper_weight
    }
}

/// A function definition that may be an assertion helper: Python `def name(` (any indent),
/// Go `func name(` or `func (r T) name(` and JavaScript `function name(` at the start of a line.
fn function_def(lang: Lang) -> Option<&'static Regex> {
    static PY: OnceLock<Regex> = OnceLock::new();
    static GO: OnceLock<Regex> = OnceLock::new();
    static JS: OnceLock<Regex> = OnceLock::new();
    Some(match lang {
        Lang::Python => PY.get_or_init(|| re(r"^(\s*)(?:async\s+)?def\s+(\w+)\s*\(")),
        Lang::Go => GO.get_or_init(|| re(r"^()func\s+(?:\([^)]*\)\s*)?(\w+)\s*[\[(]")),
        Lang::Js => {
            JS.get_or_init(|| re(r"^()(?:export\s+)?(?:async\s+)?function\s*\*?\s*(\w+)\s*\("))
        }
        _ => return None,
    })
}

/// Whether a function's name makes it a test (never a helper).
fn test_name(lang: Lang, name: &str) -> bool {
    match lang {
        Lang::Python => name.starts_with("test"),
        Lang::Go => ["Test", "Benchmark", "Fuzz", "Example"]
            .iter()
            .any(|p| name.starts_with(p)),
        _ => false,
    }
}

/// The lines of a test file that call one of the assertion helpers `names` matches (group 1:
/// the helper's name), outside the helpers' own definitions, each with the name it calls.
pub fn helper_calls<'t>(
    path: &str,
    lang: Lang,
    text: &'t str,
    names: &Regex,
) -> Vec<(usize, &'t str)> {
    if !is_test_file(path, lang) {
        return Vec::new();
    }
    let r = rules(lang);
    let def = function_def(lang);
    lines(text)
        .filter(|(_, l)| {
            let t = l.trim_start();
            !r.comment.iter().any(|c| t.starts_with(c)) && !def.is_some_and(|d| d.is_match(l))
        })
        .filter_map(|(n, l)| Some((n, names.captures(l)?.get(1)?.as_str())))
        .collect()
}

struct Rules {
    /// Whether a (trimmed) line is only a comment.
    comment: &'static [&'static str],
    /// A test definition; group 1 (when present) is its name.
    test: Option<Regex>,
    assert: Option<Regex>,
    skips: Vec<(&'static str, Regex)>,
    suppressions: Vec<(&'static str, Regex)>,
}

fn re(s: &str) -> Regex {
    // The patterns are this module's own constants; a bad one is caught by its tests.
    Regex::new(s).unwrap_or_else(|e| panic!("weakened: bad pattern {s}: {e}"))
}

fn rules(lang: Lang) -> &'static Rules {
    static PY: OnceLock<Rules> = OnceLock::new();
    static JS: OnceLock<Rules> = OnceLock::new();
    static RS: OnceLock<Rules> = OnceLock::new();
    static GO: OnceLock<Rules> = OnceLock::new();
    static JVM: OnceLock<Rules> = OnceLock::new();
    static SH: OnceLock<Rules> = OnceLock::new();
    static RB: OnceLock<Rules> = OnceLock::new();
    match lang {
        Lang::Python => PY.get_or_init(|| Rules {
            comment: &["#"],
            test: Some(re(r"^\s*(?:async\s+)?def\s+(test\w*)\s*\(")),
            assert: Some(re(
                r"^\s*assert\b|\bself\.(?:assert\w*|fail\w*)\s*\(|\bpytest\.(?:raises|warns|approx|fail)\b|\bassert_\w+\s*\(|\.assert_\w+\s*\(",
            )),
            skips: vec![
                ("pytest.mark.skip", re(r"\bpytest\.mark\.skip\b")),
                ("pytest.mark.skipif", re(r"\bpytest\.mark\.skipif\b")),
                ("pytest.mark.xfail", re(r"\bpytest\.mark\.xfail\b")),
                ("pytest.skip(", re(r"\bpytest\.skip\s*\(")),
                ("pytest.xfail(", re(r"\bpytest\.xfail\s*\(")),
                ("pytest.importorskip(", re(r"\bpytest\.importorskip\s*\(")),
                ("@unittest.skip", re(r"@(?:unittest\.)?skip(?:If|Unless)?\b")),
                ("@unittest.expectedFailure", re(r"@(?:unittest\.)?expectedFailure\b")),
                ("self.skipTest(", re(r"\.skipTest\s*\(")),
                ("raise SkipTest", re(r"\braise\s+(?:unittest\.)?SkipTest\b")),
            ],
            suppressions: vec![
                ("# noqa", re(r"#\s*noqa\b")),
                ("# type: ignore", re(r"#\s*type:\s*ignore\b")),
                ("# pyright: ignore", re(r"#\s*pyright:\s*(?:ignore|basic)\b")),
                ("# pylint: disable", re(r"#\s*pylint:\s*disable")),
                ("# mypy: ignore-errors", re(r"#\s*mypy:\s*ignore-errors")),
                ("# pragma: no cover", re(r"#\s*pragma:\s*no\s*cover")),
                ("# nosec", re(r"#\s*nosec\b")),
            ],
        }),
        Lang::Js => JS.get_or_init(|| Rules {
            comment: &["//", "/*", "*"],
            test: Some(re(
                // `it(`/`test(` and their forms, or a project's own wrapper named `...Test`
                // called with the test's name (`browserTest('aborts', ...)`).
                r#"(?:^|[^.\w$])(?:(?:x|f)?(?:it|test)(?:\.\w+)*\s*\(\s*(?:['"`]([^'"`]*)['"`])?|[a-z]\w*Test(?:\.\w+)*\s*\(\s*(?:['"`]([^'"`]*)['"`]|$))"#,
            )),
            assert: Some(re(
                r"(?:^|[^.\w$])(?:expect|assert)\s*[.(]|\.should\.|\bt\.(?:is|not|deepEqual|notDeepEqual|true|false|truthy|falsy|throws|throwsAsync|equal|same|match|ok|notOk|assert)\s*\(",
            )),
            skips: vec![
                ("describe/it/test.skip", re(r"(?:^|[^.\w$])(?:describe|context|suite|it|test|specify)\.skip\b")),
                ("describe/it/test.only", re(r"(?:^|[^.\w$])(?:describe|context|suite|it|test|specify)\.only\b")),
                ("xit/xdescribe/xtest", re(r"(?:^|[^.\w$])(?:xit|xtest|xdescribe|xcontext|xspecify)\s*\(")),
                ("fit/fdescribe", re(r"(?:^|[^.\w$])(?:fit|fdescribe)\s*\(")),
                ("this.skip()", re(r"\bthis\.skip\s*\(")),
            ],
            suppressions: vec![
                ("eslint-disable", re(r"eslint-disable")),
                ("@ts-ignore", re(r"@ts-ignore\b")),
                ("@ts-nocheck", re(r"@ts-nocheck\b")),
                ("@ts-expect-error", re(r"@ts-expect-error\b")),
                ("istanbul/c8 ignore", re(r"\b(?:istanbul|c8|v8)\s+ignore\b")),
                ("biome-ignore", re(r"biome-ignore\b")),
                ("oxlint-disable", re(r"oxlint-disable")),
            ],
        }),
        Lang::Rust => RS.get_or_init(|| Rules {
            comment: &["//", "/*", "*"],
            test: Some(re(
                r"^\s*#\[\s*((?:\w+::)*test|rstest|test_case|quickcheck|proptest)\b",
            )),
            assert: Some(re(r"\b(?:debug_)?(?:prop_)?assert(?:_eq|_ne|_matches)?!")),
            skips: vec![(
                "#[ignore]",
                re(r"#\[\s*(?:ignore\b|cfg_attr\s*\(.*\bignore\b)"),
            )],
            suppressions: vec![
                ("#[allow(...)]", re(r"#!?\[\s*(?:allow|expect)\s*\(|#!?\[\s*cfg_attr\s*\(.*\b(?:allow|expect)\s*\(")),
                ("#[coverage(off)]", re(r"#!?\[\s*coverage\s*\(\s*off")),
            ],
        }),
        Lang::Go => GO.get_or_init(|| Rules {
            comment: &["//", "/*", "*"],
            test: Some(re(r"^func\s+((?:Test|Benchmark|Fuzz|Example)\w*)\s*\(")),
            assert: Some(re(
                r"\b(?:t|b|f|tb|s|suite)\.(?:Error|Errorf|Fatal|Fatalf|Fail|FailNow)\s*\(|\b(?:assert|require)\.\w+\s*\(",
            )),
            skips: vec![("t.Skip", re(r"\b(?:t|b|f|tb|s|suite)\.(?:Skip|Skipf|SkipNow)\s*\("))],
            suppressions: vec![
                ("//nolint", re(r"//\s*nolint\b")),
                ("//lint:ignore", re(r"//\s*lint:(?:ignore|file-ignore)\b")),
                ("#nosec", re(r"#nosec\b")),
            ],
        }),
        Lang::Jvm => JVM.get_or_init(|| Rules {
            comment: &["//", "/*", "*"],
            test: Some(re(r"@(Test|ParameterizedTest|RepeatedTest|TestFactory)\b")),
            assert: Some(re(r"\b(?:assert\w*|fail|verify)\s*\(")),
            skips: vec![("@Disabled/@Ignore", re(r"@(?:Disabled|Ignore)\b"))],
            suppressions: vec![
                ("@SuppressWarnings", re(r"@Suppress(?:Warnings)?\b")),
                ("NOSONAR", re(r"NOSONAR\b")),
                ("CHECKSTYLE:OFF", re(r"CHECKSTYLE:OFF|CHECKSTYLE\.OFF")),
            ],
        }),
        Lang::Shell => SH.get_or_init(|| Rules {
            comment: &[],
            test: Some(re(r"^\s*@test\s+(.*)\{")),
            assert: None,
            skips: vec![("skip", re(r"^\s*skip\b"))],
            suppressions: vec![("# shellcheck disable", re(r"#\s*shellcheck\s+disable"))],
        }),
        Lang::Ruby => RB.get_or_init(|| Rules {
            comment: &["#"],
            test: Some(re(r#"^\s*(?:it|specify|test)\s+['"]([^'"]*)['"]|^\s*def\s+(test_\w+)"#)),
            assert: Some(re(r"\bexpect\s*[({]|\bassert\w*\b|\.to\s+(?:eq|be|include|raise_error)\b")),
            skips: vec![
                ("skip/pending/xit", re(r"^\s*(?:skip|pending|xit|xdescribe|xcontext)\b")),
            ],
            suppressions: vec![("# rubocop:disable", re(r"#\s*rubocop:\s*disable"))],
        }),
    }
}

/// The lines of a text (without their line endings), numbered from 1.
pub fn lines(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .enumerate()
        .map(|(i, l)| (i + 1, l))
}

/// Scans one version of a source file.
pub fn scan(path: &str, lang: Lang, text: &str) -> Scan {
    let r = rules(lang);
    let test_file = is_test_file(path, lang);
    // Test code: the whole of a test file; in a Rust source, its test modules and functions.
    let rust_tests = if lang == Lang::Rust && !test_file {
        Some(rust_test_code(text))
    } else {
        None
    };
    let in_test_code = |n: usize| match &rust_tests {
        Some(ranges) => ranges.iter().any(|r| r.contains(&n)),
        None => test_file,
    };
    // Test definitions count where the runner collects them: any Rust file, test files elsewhere.
    let collects = test_file || matches!(lang, Lang::Rust | Lang::Jvm);
    let mut s = Scan::default();
    // The function of a test file the line is in, when it is not a test: (name, its indent, the
    // line it starts on). Python's ends at a line indented no deeper; Go's and JavaScript's at a
    // `}` at the start of a line.
    let def = function_def(lang).filter(|_| test_file);
    let mut helper: Option<(String, usize)> = None;
    for (n, line) in lines(text) {
        if let Some(d) = def {
            let indent = line.len() - line.trim_start().len();
            if let Some(c) = d.captures(line) {
                let name = c.get(2).map_or("", |m| m.as_str());
                let at = c.get(1).map_or(0, |m| m.as_str().len());
                helper = (!test_name(lang, name)).then(|| (name.to_string(), at));
            } else if let Some((_, at)) = &helper {
                let ended = match lang {
                    Lang::Python => !line.trim().is_empty() && indent <= *at,
                    _ => line.starts_with('}'),
                };
                if ended {
                    helper = None;
                }
            }
        }
        let trimmed = line.trim_start();
        let comment = r.comment.iter().any(|c| trimmed.starts_with(c));
        for (name, re) in &r.suppressions {
            // In a test, `@ts-expect-error` asserts that a call does not type-check: a test of
            // the types, not a suppression.
            if test_file && *name == "@ts-expect-error" {
                continue;
            }
            if re.is_match(line) {
                s.suppressions.push((name, n));
            }
        }
        if comment || trimmed.is_empty() {
            continue;
        }
        if collects {
            if let Some(re) = &r.test {
                if let Some(c) = re.captures(line) {
                    let name = c
                        .iter()
                        .skip(1)
                        .flatten()
                        .next()
                        .map_or(trimmed, |m| m.as_str());
                    s.tests.push((name.trim().to_string(), n));
                }
            }
        }
        if lang == Lang::Go && !test_file {
            continue;
        }
        for (name, re) in &r.skips {
            if re.is_match(line) {
                s.skips.push((name, n));
            }
        }
        if in_test_code(n) {
            if let Some(re) = &r.assert {
                if re.is_match(line) {
                    s.asserts.push(n);
                    if let Some((name, _)) = &helper {
                        match s.helpers.iter_mut().find(|(h, _)| h == name) {
                            Some((_, k)) => *k += 1,
                            None => s.helpers.push((name.clone(), 1)),
                        }
                    }
                }
            }
        }
    }
    s
}

/// The line ranges of a Rust file's test code: each item under `#[cfg(test)]` and each
/// function with a test attribute, found by syn. A file syn cannot parse: from its first
/// `#[cfg(test)]` line to its end (the convention), or nothing.
pub fn rust_test_code(text: &str) -> Vec<RangeInclusive<usize>> {
    let Ok(file) = syn::parse_file(text) else {
        return lines(text)
            .find(|(_, l)| l.trim_start().starts_with("#[cfg(test)]"))
            .map(|(n, _)| vec![n..=usize::MAX])
            .unwrap_or_default();
    };
    let mut out = Vec::new();
    items(&file.items, &mut out);
    out
}

fn is_test_attr(a: &syn::Attribute) -> bool {
    let path = a.path();
    let last = path.segments.last().map(|s| s.ident.to_string());
    if path.is_ident("cfg") {
        // `#[cfg(test)]`, `#[cfg(all(test, ...))]`.
        let mut test = false;
        let _ = a.parse_nested_meta(|m| {
            if m.path.is_ident("test") {
                test = true;
            } else if m.path.is_ident("all") {
                let _ = m.parse_nested_meta(|inner| {
                    test |= inner.path.is_ident("test");
                    Ok(())
                });
            }
            Ok(())
        });
        return test;
    }
    matches!(
        last.as_deref(),
        Some("test" | "rstest" | "test_case" | "quickcheck" | "proptest")
    )
}

fn items(list: &[syn::Item], out: &mut Vec<RangeInclusive<usize>>) {
    for item in list {
        match item {
            syn::Item::Mod(m) => {
                if let Some((brace, inner)) = &m.content {
                    if m.attrs.iter().any(is_test_attr) {
                        let span = brace.span.join();
                        out.push(span.start().line..=span.end().line);
                    } else {
                        items(inner, out);
                    }
                }
            }
            syn::Item::Fn(f) if f.attrs.iter().any(is_test_attr) => {
                let span = f.block.brace_token.span.join();
                out.push(span.start().line..=span.end().line);
            }
            syn::Item::Impl(i) if i.attrs.iter().any(is_test_attr) => {
                let span = i.brace_token.span.join();
                out.push(span.start().line..=span.end().line);
            }
            _ => {}
        }
    }
}
