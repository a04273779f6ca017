//! The coverage gates kept in configuration, scripts and CI files: `fail_under`,
//! `--cov-fail-under`, `--fail-under*`, Jest/Vitest/nyc/c8 thresholds, Codecov's `target` and
//! `threshold`, a `min_coverage` setting. Line rules over the files that hold them (their
//! formats differ too much for one parser); never source code or prose.

use std::collections::BTreeMap;
use std::sync::OnceLock;

use regex::Regex;

use super::code::{self, file_name, lines};
use super::{Finding, Kind, Pair};
// ---- coverage thresholds ---------------------------------------------------------------------

struct Threshold {
    key: &'static str,
    value: f64,
    line: usize,
    path: String,
}

/// `(key, pattern, lower is weaker)`: group 1 of the pattern is the value.
fn threshold_rules() -> &'static [(&'static str, Regex, bool)] {
    static R: OnceLock<Vec<(&'static str, Regex, bool)>> = OnceLock::new();
    R.get_or_init(|| {
        let re = |s: &str| Regex::new(s).unwrap_or_else(|e| panic!("weakened: {s}: {e}"));
        vec![
            ("fail_under", re(r#"(?:^|[^-\w])fail[_-]under\s*[=:]\s*["']?(\d+(?:\.\d+)?)"#), true),
            ("--cov-fail-under", re(r"--cov-fail-under[= ]+(\d+(?:\.\d+)?)"), true),
            (
                "--fail-under",
                re(r"--fail-under(?:-lines|-functions|-regions)?[= ]+(\d+(?:\.\d+)?)"),
                true,
            ),
            (
                "minimum coverage",
                re(r#"(?i)\b(?:min(?:imum)?[_-]?coverage|coverage[_-]?(?:threshold|minimum|min))["']?\s*[=:]\s*["']?(\d+(?:\.\d+)?)"#),
                true,
            ),
        ]
    })
}

/// Jest, Vitest, nyc, c8 and Karma thresholds, in their configuration files only.
fn js_threshold_rule() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(r#"\b(branches|functions|lines|statements)["']?\s*:\s*(\d+(?:\.\d+)?)|--(branches|functions|lines|statements)[= ](\d+(?:\.\d+)?)"#)
            .unwrap_or_else(|e| panic!("weakened: {e}"))
    })
}

fn codecov_rules() -> &'static [(&'static str, Regex, bool)] {
    static R: OnceLock<Vec<(&'static str, Regex, bool)>> = OnceLock::new();
    R.get_or_init(|| {
        let re = |s: &str| Regex::new(s).unwrap_or_else(|e| panic!("weakened: {s}: {e}"));
        vec![
            (
                "codecov target",
                re(r#"^\s*target:\s*["']?(\d+(?:\.\d+)?)%?"#),
                true,
            ),
            (
                "codecov threshold",
                re(r#"^\s*threshold:\s*["']?(\d+(?:\.\d+)?)%?"#),
                false,
            ),
        ]
    })
}

fn is_js_coverage_config(name: &str) -> bool {
    let n = name.to_ascii_lowercase();
    n == "package.json"
        || n.starts_with("jest.config")
        || n.starts_with("vitest.config")
        || n.starts_with("vite.config")
        || n.starts_with("vitest.workspace")
        || n.starts_with(".nycrc")
        || n.starts_with(".c8rc")
        || n.starts_with("karma.conf")
}

fn is_codecov(name: &str) -> bool {
    matches!(
        name,
        "codecov.yml" | ".codecov.yml" | "codecov.yaml" | ".codecov.yaml"
    )
}

/// Whether a file may hold a coverage gate: configuration, scripts, CI files; not source code
/// (a coverage tool's own source names its options), except JavaScript configuration files and
/// nox/invoke task files.
pub fn may_hold_thresholds(path: &str) -> bool {
    let name = file_name(path);
    let lower = name.to_ascii_lowercase();
    let ext = lower.rsplit_once('.').map_or("", |(_, e)| e);
    match code::lang(path) {
        None => {
            matches!(
                ext,
                "toml"
                    | "cfg"
                    | "ini"
                    | "yml"
                    | "yaml"
                    | "json"
                    | "jsonc"
                    | "json5"
                    | "mk"
                    | "coveragerc"
                    | "nycrc"
                    | "c8rc"
            ) || matches!(
                lower.as_str(),
                "makefile" | "gnumakefile" | "justfile" | "taskfile"
            )
        }
        Some(code::Lang::Shell) => true,
        Some(code::Lang::Js) => is_js_coverage_config(name) || name.contains("config"),
        Some(code::Lang::Python) => matches!(name, "noxfile.py" | "tasks.py"),
        Some(_) => false,
    }
}

fn thresholds(path: &str, text: &str, out: &mut BTreeMap<&'static str, (bool, Vec<Threshold>)>) {
    if !may_hold_thresholds(path) {
        return;
    }
    let name = file_name(path);
    let js = is_js_coverage_config(name);
    let codecov = is_codecov(name);
    let mut push = |key: &'static str, lower_weaker: bool, v: &str, n: usize| {
        if let Ok(value) = v.parse::<f64>() {
            out.entry(key)
                .or_insert((lower_weaker, Vec::new()))
                .1
                .push(Threshold {
                    key,
                    value,
                    line: n,
                    path: path.to_string(),
                });
        }
    };
    for (n, line) in lines(text) {
        if line.trim_start().starts_with('#') && !codecov {
            continue;
        }
        for (key, re, lower) in threshold_rules() {
            for c in re.captures_iter(line) {
                if let Some(v) = c.get(1) {
                    push(key, *lower, v.as_str(), n);
                }
            }
        }
        if js {
            for c in js_threshold_rule().captures_iter(line) {
                let key = c.get(1).or(c.get(3)).map(|m| m.as_str());
                let v = c.get(2).or(c.get(4)).map(|m| m.as_str());
                if let (Some(key), Some(v)) = (key, v) {
                    let key: &'static str = match key {
                        "branches" => "coverage branches",
                        "functions" => "coverage functions",
                        "lines" => "coverage lines",
                        _ => "coverage statements",
                    };
                    push(key, true, v, n);
                }
            }
        }
        if codecov {
            for (key, re, lower) in codecov_rules() {
                if let Some(v) = re.captures(line).and_then(|c| c.get(1)) {
                    push(key, *lower, v.as_str(), n);
                }
            }
        }
    }
}

/// A coverage threshold lowered or removed across the scope: per kind of threshold, the values
/// before and after, strictest first, compared pair by pair (a threshold moved from one file
/// to another is not lowered).
pub fn coverage(files: &[Pair<'_>]) -> Vec<Finding> {
    let mut old = BTreeMap::new();
    let mut new = BTreeMap::new();
    for f in files {
        if let Some(t) = f.old {
            thresholds(f.path, t, &mut old);
        }
        if let Some(t) = f.new {
            thresholds(f.path, t, &mut new);
        }
    }
    let mut out = Vec::new();
    for (key, (lower_weaker, mut before)) in old {
        let mut after = new.remove(key).map(|(_, v)| v).unwrap_or_default();
        let strictest = |a: &Threshold, b: &Threshold| {
            let o = b.value.total_cmp(&a.value);
            if lower_weaker {
                o
            } else {
                o.reverse()
            }
        };
        before.sort_by(strictest);
        after.sort_by(strictest);
        for (i, b) in before.iter().enumerate() {
            match after.get(i) {
                Some(a)
                    if (lower_weaker && a.value < b.value)
                        || (!lower_weaker && a.value > b.value) =>
                {
                    out.push(Finding::new(
                        &a.path,
                        a.line,
                        false,
                        Kind::Coverage,
                        format!(
                            "`{}` {} from {} to {}",
                            a.key,
                            if lower_weaker { "lowered" } else { "raised" },
                            num(b.value),
                            num(a.value)
                        ),
                    ))
                }
                Some(_) => {}
                None => out.push(Finding::new(
                    &b.path,
                    b.line,
                    true,
                    Kind::Coverage,
                    format!("`{}` {} removed", b.key, num(b.value)),
                )),
            }
        }
    }
    out
}

fn num(v: f64) -> String {
    if v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v}")
    }
}

// ---- tests deselected by configuration ---------------------------------------------------------

/// Ways a command line in configuration, scripts or CI leaves tests out or relaxes a linter, by
/// name: pytest's `--ignore`/`--deselect`/`-k "not …"` (on a line that runs or configures
/// pytest), `collect_ignore` in a conftest, `norecursedirs`; Jest's `testPathIgnorePatterns`;
/// `go test -skip`; `cargo test --skip`/`--exclude`; a linter run with rules ignored, disabled or
/// allowed (`ruff --ignore`, `clippy -- -A`, `golangci-lint --disable`, `mypy
/// --ignore-missing-imports`, `eslint --no-eslintrc`).
fn deselect_rules() -> &'static [(&'static str, Kind, Regex)] {
    static R: OnceLock<Vec<(&'static str, Kind, Regex)>> = OnceLock::new();
    R.get_or_init(|| {
        let re = |s: &str| Regex::new(s).unwrap_or_else(|e| panic!("weakened: {s}: {e}"));
        let t = Kind::TestSkipped;
        let l = Kind::Lint;
        vec![
            (
                "pytest --ignore/--deselect/-k not",
                t,
                re(r#"(?:pytest|py\.test|addopts).*(?:--ignore(?:-glob)?[= ]\S|--deselect[= ]\S|\s-k[= ]\s*["']?[^"'\n]*\bnot\b)"#),
            ),
            ("collect_ignore", t, re(r"^\s*collect_ignore(?:_glob)?\s*(?:\+?=|\.append|\.extend)")),
            ("norecursedirs", t, re(r"\bnorecursedirs\b")),
            ("testPathIgnorePatterns", t, re(r"\btestPathIgnorePatterns\b")),
            ("go test -skip", t, re(r"\bgo\s+test\b.*\s-skip[= ]")),
            ("cargo test --skip/--exclude", t, re(r"\bcargo\s+(?:test|nextest)\b.*\s--(?:skip|exclude)\b")),
            (
                "a linter's rules ignored on its command line",
                l,
                re(r"\b(?:ruff|flake8|pylint|pycodestyle|pydocstyle)\b.*\s--(?:extend-)?(?:ignore|disable)\b|\bclippy\b.*\s(?:-A\s*\S|--allow[= ])|\bgolangci-lint\b.*\s--(?:disable|exclude|skip-dirs|skip-files)\b|\bmypy\b.*\s--(?:ignore-missing-imports|allow-\w+|no-strict-optional|follow-imports[= ]skip)|\beslint\b.*\s--no-eslintrc\b"),
            ),
        ]
    })
}

/// More lines leaving tests out in a file than before: each added line that does.
pub fn deselected(
    files: &[Pair<'_>],
    added: &dyn Fn(&Pair<'_>) -> Vec<(usize, String)>,
) -> Vec<Finding> {
    let mut out = Vec::new();
    for f in files {
        let name = file_name(f.path);
        if !(may_hold_thresholds(f.path) || name == "conftest.py") {
            continue;
        }
        let count = |text: Option<&str>, re: &Regex| {
            text.map_or(0, |t| lines(t).filter(|(_, l)| re.is_match(l)).count())
        };
        let mut new_lines: Option<Vec<(usize, String)>> = None;
        for (name, kind, re) in deselect_rules() {
            if count(f.new, re) <= count(f.old, re) {
                continue;
            }
            let lines = new_lines.get_or_insert_with(|| added(f));
            for (n, l) in lines.iter().filter(|(_, l)| re.is_match(l)) {
                out.push(Finding::new(
                    f.path,
                    *n,
                    false,
                    *kind,
                    format!("`{name}` added: `{}`", crate::checks::clip(l.trim(), 80)),
                ));
            }
        }
    }
    out
}
