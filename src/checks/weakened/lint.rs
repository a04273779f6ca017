//! Linters' and type checkers' settings: ruff, flake8, pylint, mypy, pyright (`pyproject.toml`
//! and `ruff.toml` read as TOML, `setup.cfg`/`tox.ini`/`.flake8`/`.pylintrc`/`mypy.ini` as INI),
//! ESLint, TypeScript, Cargo's `[lints]`, golangci-lint and pre-commit (YAML, parsed).

use std::collections::BTreeMap;
use std::sync::OnceLock;

use regex::Regex;

use super::code::{file_name, lines};
use super::{yaml, Finding, Kind, Pair};
// ---- linters' and type checkers' settings ----------------------------------------------------

/// Lists that exempt code from a linter: an item added relaxes it.
const LOOSE_LISTS: &[&str] = &[
    "ignore",
    "extend-ignore",
    "extend_ignore",
    "per-file-ignores",
    "per_file_ignores",
    "extend-per-file-ignores",
    "disable",
    "exclude",
    "extend-exclude",
    "extend_exclude",
    "ignore-paths",
    "ignore_paths",
    "ignore-patterns",
    "ignore_patterns",
    "ignore-words-list",
    "disable_error_code",
    "disable-error-code",
];

/// Lists of the rules a linter runs: an item removed relaxes it.
const STRICT_LISTS: &[&str] = &[
    "select",
    "extend-select",
    "extend_select",
    "enable",
    "enable_error_code",
];

/// Settings that are strict when true: true → false, or removed, relaxes.
const STRICT_FLAGS: &[&str] = &[
    "strict",
    "check_untyped_defs",
    "disallow_untyped_defs",
    "disallow_incomplete_defs",
    "disallow_untyped_calls",
    "disallow_any_generics",
    "disallow_untyped_decorators",
    "disallow_subclassing_any",
    "no_implicit_optional",
    "no_implicit_reexport",
    "strict_optional",
    "strict_equality",
    "warn_return_any",
    "warn_unused_ignores",
    "warn_redundant_casts",
    "warn_unreachable",
];

/// Settings that are loose when true: absent or false → true relaxes.
const LOOSE_FLAGS: &[&str] = &[
    "ignore_errors",
    "ignore_missing_imports",
    "allow_untyped_defs",
    "allow_untyped_calls",
    "allow_incomplete_defs",
    "disable-all",
    "disable_all",
];

/// Python tools whose settings are compared (tables of pyproject.toml, sections of INI files).
const PY_TOOLS: &[&str] = &[
    "ruff",
    "flake8",
    "pylint",
    "mypy",
    "pyright",
    "pydocstyle",
    "pycodestyle",
    "pep8",
    "bandit",
    "pyflakes",
    "basedpyright",
];

#[derive(Debug, Clone, PartialEq)]
enum Setting {
    /// The items of a list (or of a table of lists: per-file ignores).
    Items(Vec<String>),
    Flag(bool),
    Text(String),
}

/// A configuration's settings by `section.key`, with the line each is on.
type Settings = BTreeMap<String, (Setting, usize)>;

/// The Python tools' settings of every configuration file of the scope, by tool and key, each
/// with the file and line it is in: a setting moved from `setup.cfg` to `.flake8` or
/// `pyproject.toml`, or written `extend-select` instead of `select`, is the same setting.
/// Each with the key as its file writes it (shown in the evidence).
type Located = BTreeMap<String, (Setting, String, usize, String)>;

/// The tool and key a setting is known by, whatever file holds it: `tool.ruff.lint.select`,
/// ruff.toml's `lint.extend-select` and `ruff.select` are all `ruff.select`.
fn canonical(file: &str, key: &str) -> String {
    let key = match file {
        "ruff.toml" | ".ruff.toml" => format!("ruff.{key}"),
        "mypy.toml" => format!("mypy.{key}"),
        _ => key.strip_prefix("tool.").unwrap_or(key).to_string(),
    };
    let key = key.replacen("ruff.lint.", "ruff.", 1);
    let (section, last) = key.rsplit_once('.').unwrap_or(("", key.as_str()));
    let last = match last {
        "extend-select" | "extend_select" => "select",
        "extend-ignore" | "extend_ignore" => "ignore",
        "extend-exclude" | "extend_exclude" => "exclude",
        "extend-per-file-ignores" => "per-file-ignores",
        other => other,
    };
    format!("{section}.{last}")
}

/// Adds one file's settings to the scope's.
fn locate(into: &mut Located, path: &str, settings: Settings) {
    let file = file_name(path).to_ascii_lowercase();
    for (key, (setting, line)) in settings {
        match into.entry(canonical(&file, &key)) {
            std::collections::btree_map::Entry::Vacant(v) => {
                v.insert((setting, path.to_string(), line, key));
            }
            std::collections::btree_map::Entry::Occupied(mut o) => {
                if let (Setting::Items(have), Setting::Items(more)) = (&mut o.get_mut().0, setting)
                {
                    for i in more {
                        if !have.contains(&i) {
                            have.push(i);
                        }
                    }
                }
            }
        }
    }
}

fn toml_items(v: &toml::Value) -> Vec<String> {
    match v {
        toml::Value::Array(a) => a.iter().flat_map(toml_items).collect(),
        toml::Value::Table(t) => t
            .iter()
            .flat_map(|(k, v)| toml_items(v).into_iter().map(move |i| format!("{k}: {i}")))
            .collect(),
        toml::Value::String(s) => s
            .split([',', '\n'])
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        other => vec![other.to_string()],
    }
}

/// The line of `key` (as written at the start of a line) at or after `from`, else `from`.
fn line_of(text: &str, key: &str, from: usize) -> usize {
    lines(text)
        .skip(from.saturating_sub(1))
        .find(|(_, l)| {
            let t = l.trim_start().trim_start_matches(['"', '\'']);
            t.starts_with(key)
                && t[key.len()..]
                    .trim_start()
                    .trim_start_matches(['"', '\''])
                    .trim_start()
                    .starts_with(['=', ':'])
        })
        .map_or(from.max(1), |(n, _)| n)
}

/// The line of a TOML table header `[a.b]` (or 1).
fn header_line(text: &str, header: &str) -> usize {
    let want = format!("[{header}]");
    lines(text)
        .find(|(_, l)| l.trim().replace(' ', "") == want)
        .map_or(1, |(n, _)| n)
}

fn toml_settings(path: &str, text: &str) -> Settings {
    let mut out = Settings::new();
    let Ok(doc) = text.parse::<toml::Table>() else {
        return out;
    };
    let name = file_name(path);
    let mut roots: Vec<(String, &toml::Table)> = Vec::new();
    if name == "pyproject.toml" {
        if let Some(tool) = doc.get("tool").and_then(|t| t.as_table()) {
            for t in PY_TOOLS {
                if let Some(v) = tool.get(*t).and_then(|v| v.as_table()) {
                    roots.push((format!("tool.{t}"), v));
                }
            }
        }
    } else {
        roots.push((String::new(), &doc));
    }
    fn walk(prefix: &str, t: &toml::Table, text: &str, out: &mut Settings) {
        let from = if prefix.is_empty() {
            1
        } else {
            header_line(text, prefix)
        };
        for (k, v) in t {
            let at = if prefix.is_empty() {
                k.clone()
            } else {
                format!("{prefix}.{k}")
            };
            match v {
                toml::Value::Table(inner) if !LOOSE_LISTS.contains(&k.as_str()) => {
                    walk(&at, inner, text, out)
                }
                toml::Value::Boolean(b) => {
                    out.insert(at, (Setting::Flag(*b), line_of(text, k, from)));
                }
                toml::Value::String(s)
                    if !LOOSE_LISTS.contains(&k.as_str())
                        && !STRICT_LISTS.contains(&k.as_str()) =>
                {
                    out.insert(at, (Setting::Text(s.clone()), line_of(text, k, from)));
                }
                v => {
                    out.insert(at, (Setting::Items(toml_items(v)), line_of(text, k, from)));
                }
            }
        }
    }
    for (prefix, t) in roots {
        walk(&prefix, t, text, &mut out);
    }
    out
}

/// INI files (setup.cfg, tox.ini, .flake8, .pylintrc, mypy.ini): the sections of the Python
/// linters, each `key = value` with its continuation lines.
fn ini_settings(text: &str) -> Settings {
    let mut out = Settings::new();
    let mut section = String::new();
    let mut current: Option<(String, String, usize)> = None;
    let flush = |cur: Option<(String, String, usize)>, out: &mut Settings| {
        if let Some((key, value, line)) = cur {
            let k = key.rsplit('.').next().unwrap_or(&key).to_string();
            let v = value.trim();
            let setting = if LOOSE_LISTS.contains(&k.as_str()) || STRICT_LISTS.contains(&k.as_str())
            {
                Setting::Items(
                    v.split([',', '\n'])
                        .map(|s| s.split('#').next().unwrap_or("").trim())
                        .filter(|s| !s.is_empty())
                        .map(str::to_string)
                        .collect(),
                )
            } else {
                match v.to_ascii_lowercase().as_str() {
                    "true" | "yes" | "on" | "1" => Setting::Flag(true),
                    "false" | "no" | "off" | "0" => Setting::Flag(false),
                    _ => Setting::Text(v.to_string()),
                }
            };
            out.insert(key, (setting, line));
        }
    };
    let tool_section = |s: &str| {
        let s = s.to_ascii_lowercase();
        let s = s.strip_prefix("tool:").unwrap_or(&s).to_string();
        PY_TOOLS
            .iter()
            .any(|t| s == *t || s.starts_with(&format!("{t}-")) || s.starts_with(&format!("{t}.")))
            || s == "messages control"
    };
    for (n, line) in lines(text) {
        let t = line.trim();
        if t.starts_with('[') && t.ends_with(']') {
            flush(current.take(), &mut out);
            section = t[1..t.len() - 1].trim().to_string();
            continue;
        }
        if !tool_section(&section) || t.starts_with('#') || t.starts_with(';') {
            continue;
        }
        let continuation = line.starts_with([' ', '\t']) && !t.is_empty();
        match (&mut current, continuation) {
            (Some((_, value, _)), true) => {
                value.push('\n');
                value.push_str(t);
            }
            _ => {
                if let Some((k, v)) = t.split_once(['=', ':']) {
                    flush(current.take(), &mut out);
                    current = Some((format!("{section}.{}", k.trim()), v.to_string(), n));
                }
            }
        }
    }
    flush(current.take(), &mut out);
    out
}

/// Cargo's `[lints]` and `[workspace.lints]`: each lint's level (allow 0 ... forbid 3).
fn cargo_lints(text: &str) -> BTreeMap<String, (u8, usize)> {
    let mut out = BTreeMap::new();
    let Ok(doc) = text.parse::<toml::Table>() else {
        return out;
    };
    let level = |v: &toml::Value| {
        let s = match v {
            toml::Value::String(s) => s.as_str(),
            toml::Value::Table(t) => t.get("level").and_then(|l| l.as_str()).unwrap_or(""),
            _ => "",
        };
        match s {
            "allow" => Some(0),
            "warn" => Some(1),
            "deny" => Some(2),
            "forbid" => Some(3),
            _ => None,
        }
    };
    let tables = [
        ("lints", doc.get("lints")),
        (
            "workspace.lints",
            doc.get("workspace").and_then(|w| w.get("lints")),
        ),
    ];
    for (prefix, t) in tables {
        let Some(t) = t.and_then(|t| t.as_table()) else {
            continue;
        };
        for (tool, lints) in t {
            let Some(lints) = lints.as_table() else {
                continue;
            };
            let from = header_line(text, &format!("{prefix}.{tool}"));
            for (name, v) in lints {
                if let Some(l) = level(v) {
                    out.insert(
                        format!("{prefix}.{tool}.{name}"),
                        (l, line_of(text, name, from)),
                    );
                }
            }
        }
    }
    out
}

fn compare_settings(old: &Located, new: &Located, out: &mut Vec<Finding>) {
    for (id, (before, old_path, line, written)) in old {
        let (section, k) = id.rsplit_once('.').unwrap_or(("", id));
        let after = new.get(id);
        let at = after.map_or((old_path.as_str(), *line, true), |(_, p, l, _)| {
            (p.as_str(), *l, false)
        });
        let key = after.map_or(written, |(_, _, _, w)| w);
        let mut push = |what: String| out.push(Finding::new(at.0, at.1, at.2, Kind::Lint, what));
        // `strict = true` turns on every strict flag: one written out and removed is still on.
        let strict = matches!(
            new.get(&format!("{section}.strict")),
            Some((Setting::Flag(true), _, _, _))
        );
        match (before, after.map(|(s, _, _, _)| s)) {
            (Setting::Items(b), Some(Setting::Items(a))) if LOOSE_LISTS.contains(&k) => {
                let added: Vec<&String> = a.iter().filter(|i| !b.contains(i)).collect();
                if a.len() > b.len() && !added.is_empty() {
                    push(format!("`{key}` exempts more: {}", list(&added)));
                }
            }
            (Setting::Items(b), a) if STRICT_LISTS.contains(&k) => {
                let a: &[String] = match a {
                    Some(Setting::Items(a)) => a,
                    _ => &[],
                };
                let gone: Vec<&String> = b.iter().filter(|i| !a.contains(i)).collect();
                if a.len() < b.len() && !gone.is_empty() {
                    push(format!(
                        "`{key}` runs fewer rules: {} no longer selected",
                        list(&gone)
                    ));
                }
            }
            (Setting::Flag(true), a)
                if STRICT_FLAGS.contains(&k)
                    && a != Some(&Setting::Flag(true))
                    && !(strict && a.is_none()) =>
            {
                push(format!("`{key}` no longer true"));
            }
            (Setting::Text(b), Some(Setting::Text(a)))
                if k == "typeCheckingMode" && rank_mode(a) < rank_mode(b) =>
            {
                push(format!("`{key}` from `{b}` to `{a}`"));
            }
            _ => {}
        }
    }
    for (id, (after, path, line, key)) in new {
        let k = id.rsplit('.').next().unwrap_or(id);
        let before = old.get(id).map(|(s, _, _, _)| s);
        if *after == Setting::Flag(true)
            && LOOSE_FLAGS.contains(&k)
            && before != Some(&Setting::Flag(true))
        {
            out.push(Finding::new(
                path,
                *line,
                false,
                Kind::Lint,
                format!("`{key} = true` added"),
            ));
        }
        // A tool configured for the first time relaxes nothing it had.
        let tool = id.split('.').next().unwrap_or("");
        let configured = old.keys().any(|o| o.split('.').next() == Some(tool));
        if let (Setting::Items(a), None) = (after, before) {
            if LOOSE_LISTS.contains(&k) && !a.is_empty() && configured {
                out.push(Finding::new(
                    path,
                    *line,
                    false,
                    Kind::Lint,
                    format!("`{key}` added: {}", list(&a.iter().collect::<Vec<_>>())),
                ));
            }
        }
    }
}

fn rank_mode(m: &str) -> u8 {
    match m {
        "off" => 0,
        "basic" => 1,
        "standard" => 2,
        "strict" => 3,
        _ => 2,
    }
}

fn list(items: &[&String]) -> String {
    let shown: Vec<String> = items.iter().take(8).map(|i| format!("`{i}`")).collect();
    if items.len() > 8 {
        format!("{} and {} more", shown.join(", "), items.len() - 8)
    } else {
        shown.join(", ")
    }
}

/// ESLint rule settings that switch a rule off or down to a warning.
fn eslint_off() -> &'static Regex {
    static R: OnceLock<Regex> = OnceLock::new();
    R.get_or_init(|| {
        Regex::new(r#"["']?[@\w][\w@/-]*["']?\s*:\s*\[?\s*(?:["'](?:off|warn)["']|[01]\b)"#)
            .unwrap_or_else(|e| panic!("weakened: {e}"))
    })
}

/// Whether a path is a linter's or type checker's configuration this check compares.
pub fn is_lint_config(path: &str) -> bool {
    let lower = file_name(path).to_ascii_lowercase();
    matches!(
        lower.as_str(),
        "pyproject.toml"
            | "ruff.toml"
            | ".ruff.toml"
            | "mypy.toml"
            | "pyrightconfig.toml"
            | "setup.cfg"
            | "tox.ini"
            | ".flake8"
            | ".pylintrc"
            | "pylintrc"
            | "mypy.ini"
            | ".mypy.ini"
            | ".pydocstyle"
            | ".pycodestyle"
            | "cargo.toml"
            | ".golangci.yml"
            | ".golangci.yaml"
            | ".pre-commit-config.yaml"
            | ".pre-commit-config.yml"
            | ".eslintignore"
            | ".stylelintignore"
    ) || is_eslint_config(&lower)
        || ((lower.starts_with("tsconfig") || lower.starts_with("jsconfig"))
            && lower.ends_with(".json"))
}

fn is_eslint_config(name: &str) -> bool {
    name.starts_with(".eslintrc")
        || name.starts_with("eslint.config.")
        || name.starts_with(".oxlintrc")
        || name == "biome.json"
        || name == "biome.jsonc"
}

/// TypeScript's strictness options: true → false, or removed, relaxes.
const TS_STRICT: &[&str] = &[
    "strict",
    "noImplicitAny",
    "strictNullChecks",
    "strictFunctionTypes",
    "strictBindCallApply",
    "strictPropertyInitialization",
    "noImplicitThis",
    "alwaysStrict",
    "useUnknownInCatchVariables",
    "noImplicitReturns",
    "noFallthroughCasesInSwitch",
    "noUncheckedIndexedAccess",
    "noImplicitOverride",
    "exactOptionalPropertyTypes",
    "noUnusedLocals",
    "noUnusedParameters",
    "checkJs",
];

fn ts_flags(text: &str) -> BTreeMap<&'static str, (bool, usize)> {
    let mut out = BTreeMap::new();
    for (n, line) in lines(text) {
        let t = line.trim_start();
        if t.starts_with("//") {
            continue;
        }
        for key in TS_STRICT {
            let quoted = format!("\"{key}\"");
            if let Some(rest) = t.strip_prefix(&quoted) {
                let v = rest.trim_start().trim_start_matches(':').trim_start();
                if v.starts_with("true") {
                    out.insert(*key, (true, n));
                } else if v.starts_with("false") {
                    out.insert(*key, (false, n));
                }
            }
        }
    }
    out
}

/// golangci-lint's lists that exempt code: an item added relaxes.
const GOLANGCI_LISTS: &[&[&str]] = &[
    &["linters", "disable"],
    &["issues", "exclude"],
    &["issues", "exclude-rules"],
    &["issues", "exclude-dirs"],
    &["issues", "exclude-files"],
    &["run", "skip-dirs"],
    &["run", "skip-files"],
    &["linters", "exclusions", "rules"],
    &["linters", "exclusions", "paths"],
];

fn yaml_at<'a>(doc: &'a yaml::Node, path: &[&str]) -> Option<&'a yaml::Node> {
    path.iter().try_fold(doc, |n, k| n.get(k))
}

/// The line of the last key of `path` (or 1).
fn key_line(doc: &yaml::Node, path: &[&str]) -> usize {
    let Some((last, parent)) = path.split_last() else {
        return 1;
    };
    yaml_at(doc, parent)
        .and_then(|p| p.keyed().into_iter().find(|(k, _, _)| k == last))
        .map_or(1, |(_, line, _)| line)
}

fn render(n: &yaml::Node) -> String {
    match n {
        yaml::Node::Scalar { value, .. } => value.clone(),
        yaml::Node::Seq { items, .. } => format!(
            "[{}]",
            items.iter().map(render).collect::<Vec<_>>().join(", ")
        ),
        yaml::Node::Map { entries, .. } => format!(
            "{{{}}}",
            entries
                .iter()
                .map(|(k, v)| format!("{}: {}", render(k), render(v)))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// Linters golangci-lint retired, with what took their place (its deprecation notices and the
/// v2 migration: formatters moved to `formatters.enable`, gosimple and stylecheck merged into
/// staticcheck).
const GOLANGCI_SUCCESSORS: &[(&str, &str)] = &[
    ("gas", "gosec"),
    ("megacheck", "staticcheck"),
    ("deadcode", "unused"),
    ("structcheck", "unused"),
    ("varcheck", "unused"),
    ("golint", "revive"),
    ("scopelint", "exportloopref"),
    ("exportloopref", "copyloopvar"),
    ("maligned", "govet"),
    ("nosnakecase", "revive"),
    ("exhaustivestruct", "exhaustruct"),
    ("ifshort", ""),
    ("interfacer", ""),
    ("gosimple", "staticcheck"),
    ("stylecheck", "staticcheck"),
    ("typecheck", ""),
];

/// The linters and formatters a golangci-lint configuration enables.
fn golangci_enabled(d: &yaml::Node) -> Vec<String> {
    [&["linters", "enable"][..], &["formatters", "enable"][..]]
        .iter()
        .filter_map(|at| yaml_at(d, at))
        .flat_map(|l| l.items().iter().map(render))
        .collect()
}

fn golangci(path: &str, old: &str, new: &str, out: &mut Vec<Finding>) {
    let (Ok(o), Ok(n)) = (yaml::parse(old), yaml::parse(new)) else {
        return;
    };
    let (Some(o), Some(n)) = (o.first(), n.first()) else {
        return;
    };
    let enabled = golangci_enabled(n);
    let gone: Vec<String> = golangci_enabled(o)
        .into_iter()
        .filter(|l| !enabled.contains(l))
        .filter(|l| {
            // Retired with a successor that is enabled (or none to enable): not dropped.
            GOLANGCI_SUCCESSORS
                .iter()
                .find(|(old, _)| old == l)
                .is_none_or(|(_, new)| !new.is_empty() && !enabled.iter().any(|e| e == new))
        })
        .collect();
    if !gone.is_empty() {
        let line = key_line(n, &["linters", "enable"]);
        out.push(Finding::new(
            path,
            line,
            false,
            Kind::Lint,
            format!(
                "no longer enabled (`linters.enable`, `formatters.enable`): {}",
                list(&gone.iter().collect::<Vec<_>>())
            ),
        ));
    }
    for at in GOLANGCI_LISTS {
        let items = |d: &yaml::Node| -> Vec<String> {
            yaml_at(d, at)
                .map(|l| l.items().iter().map(render).collect())
                .unwrap_or_default()
        };
        let (b, a) = (items(o), items(n));
        let added: Vec<&String> = a.iter().filter(|i| !b.contains(i)).collect();
        if a.len() > b.len() && !added.is_empty() {
            out.push(Finding::new(
                path,
                key_line(n, at),
                false,
                Kind::Lint,
                format!("`{}` adds {}", at.join("."), list(&added)),
            ));
        }
    }
    let all_off = |d: &yaml::Node| {
        yaml_at(d, &["linters", "disable-all"]).is_some_and(yaml::Node::is_true)
            || yaml_at(d, &["linters", "default"])
                .and_then(yaml::Node::str)
                .is_some_and(|s| s == "none")
    };
    if all_off(n) && !all_off(o) {
        out.push(Finding::new(
            path,
            1,
            false,
            Kind::Lint,
            "every linter switched off by default (`disable-all` / `default: none`)".into(),
        ));
    }
}

fn pre_commit(path: &str, old: &str, new: &str, out: &mut Vec<Finding>) {
    let hooks = |t: &str| -> Option<Vec<(String, usize)>> {
        let docs = yaml::parse(t).ok()?;
        let d = docs.first()?;
        Some(
            d.get("repos")?
                .items()
                .iter()
                .flat_map(|r| {
                    r.get("hooks")
                        .map(|h| h.items().to_vec())
                        .unwrap_or_default()
                })
                .map(|h| {
                    (
                        h.get("id")
                            .and_then(yaml::Node::str)
                            .unwrap_or("?")
                            .to_string(),
                        h.line(),
                    )
                })
                .collect(),
        )
    };
    let (Some(b), Some(a)) = (hooks(old), hooks(new)) else {
        return;
    };
    if a.len() < b.len() {
        let gone: Vec<&String> = b
            .iter()
            .map(|(id, _)| id)
            .filter(|id| !a.iter().any(|(x, _)| x == *id))
            .collect();
        let line = b
            .iter()
            .find(|(id, _)| gone.first().is_some_and(|g| g == &id))
            .map_or(1, |(_, l)| *l);
        out.push(Finding::new(
            path,
            line,
            true,
            Kind::Lint,
            format!(
                "{} pre-commit hook(s) removed: {}",
                b.len() - a.len(),
                list(&gone)
            ),
        ));
    }
}

/// Lint and type-check settings relaxed, file by file.
pub fn lint(files: &[Pair<'_>], added: &dyn Fn(&Pair<'_>) -> Vec<(usize, String)>) -> Vec<Finding> {
    let mut out = Vec::new();
    // The Python tools' settings, over every file of the scope that holds them (added and
    // removed files too: a setting moved between files is not removed).
    let (mut before, mut after) = (Located::new(), Located::new());
    for f in files {
        let lower = file_name(f.path).to_ascii_lowercase();
        let read: fn(&str, &str) -> Settings = match lower.as_str() {
            "pyproject.toml" | "ruff.toml" | ".ruff.toml" | "mypy.toml" | "pyrightconfig.toml" => {
                toml_settings
            }
            "setup.cfg" | "tox.ini" | ".flake8" | ".pylintrc" | "pylintrc" | "mypy.ini"
            | ".mypy.ini" | ".pydocstyle" | ".pycodestyle" => |_, text| ini_settings(text),
            _ => continue,
        };
        if let Some(t) = f.old {
            locate(&mut before, f.path, read(f.path, t));
        }
        if let Some(t) = f.new {
            locate(&mut after, f.path, read(f.path, t));
        }
    }
    compare_settings(&before, &after, &mut out);
    for f in files {
        let name = file_name(f.path);
        let lower = name.to_ascii_lowercase();
        // A configuration added or removed is compared with nothing: a new linter's settings
        // relax nothing, and a removal is CC-04's to judge (a CI file's jobs are `ci`'s).
        let (Some(old), Some(new)) = (f.old, f.new) else {
            continue;
        };
        match lower.as_str() {
            "cargo.toml" => {
                let (b, a) = (cargo_lints(old), cargo_lints(new));
                for (k, (lb, line)) in &b {
                    match a.get(k) {
                        Some((la, l)) if la < lb => out.push(Finding::new(
                            f.path,
                            *l,
                            false,
                            Kind::Lint,
                            format!("lint `{k}` lowered to `{}`", level_name(*la)),
                        )),
                        None if *lb > 0 => out.push(Finding::new(
                            f.path,
                            *line,
                            true,
                            Kind::Lint,
                            format!("lint `{k}` (`{}`) removed", level_name(*lb)),
                        )),
                        _ => {}
                    }
                }
                for (k, (la, l)) in &a {
                    if *la == 0 && !b.contains_key(k) {
                        out.push(Finding::new(
                            f.path,
                            *l,
                            false,
                            Kind::Lint,
                            format!("lint `{k}` set to `allow`"),
                        ));
                    }
                }
            }
            ".golangci.yml" | ".golangci.yaml" => golangci(f.path, old, new, &mut out),
            ".pre-commit-config.yaml" | ".pre-commit-config.yml" => {
                pre_commit(f.path, old, new, &mut out)
            }
            ".eslintignore" | ".stylelintignore" => {
                for (n, l) in added(f) {
                    let t = l.trim();
                    if !t.is_empty() && !t.starts_with('#') {
                        out.push(Finding::new(
                            f.path,
                            n,
                            false,
                            Kind::Lint,
                            format!("`{t}` no longer linted"),
                        ));
                    }
                }
            }
            _ if is_eslint_config(&lower) => {
                let count = |t: &str| lines(t).filter(|(_, l)| eslint_off().is_match(l)).count();
                if count(new) > count(old) {
                    for (n, l) in added(f)
                        .into_iter()
                        .filter(|(_, l)| eslint_off().is_match(l))
                    {
                        out.push(Finding::new(
                            f.path,
                            n,
                            false,
                            Kind::Lint,
                            format!("rule switched off or down: `{}`", l.trim()),
                        ));
                    }
                }
            }
            _ if (lower.starts_with("tsconfig") || lower.starts_with("jsconfig"))
                && lower.ends_with(".json") =>
            {
                let (b, a) = (ts_flags(old), ts_flags(new));
                for (k, (vb, line)) in &b {
                    if *vb {
                        match a.get(k) {
                            Some((false, l)) => out.push(Finding::new(
                                f.path,
                                *l,
                                false,
                                Kind::Lint,
                                format!("`{k}` set to false"),
                            )),
                            None => out.push(Finding::new(
                                f.path,
                                *line,
                                true,
                                Kind::Lint,
                                format!("`{k}: true` removed"),
                            )),
                            _ => {}
                        }
                    }
                }
            }
            _ => {}
        }
    }
    out
}

fn level_name(l: u8) -> &'static str {
    ["allow", "warn", "deny", "forbid"][usize::from(l.min(3))]
}
