//! `referee init [DIR]`: a starting `--vars` file for a repository. It looks at the files in
//! DIR (names only: nothing is read or run), names the languages it finds by extension, and
//! suggests protected paths that exist there: CI configuration, lock files, build files, and
//! the referee's own configuration if the team keeps a copy in the repository. The protocol's
//! own protected globs are kept at the top of the list.
//!
//! Whatever it finds, it protects what wires the referee into the agents and what would switch
//! it off: the agents' hook and MCP settings (`.claude/settings*.json`, `.codex/**`,
//! `.cursor/hooks.json`, `.gemini/settings.json`, `.github/hooks/**`, `.mcp.json`, ...) and the
//! git hooks, present or not (an agent could add `.claude/settings.local.json` with
//! `disableAllHooks`).
//!
//! The file is printed (stdout) or written to `--output FILE`, which is refused inside DIR (the
//! worker must not be able to edit the rules it is judged by) and never overwritten without
//! `--force`. The commands that use it are printed with it: `referee watch …`, the agents' hook
//! commands and the MCP server's.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};

use crate::protocol::{overrides, predicate::Glob, Protocol};

/// At most this many entries are looked at (a huge tree is sampled, not walked whole).
const MAX_ENTRIES: usize = 200_000;

/// Directories never descended into: tools' caches and dependencies, not the project's code.
const SKIP_DIRS: &[&str] = &[
    ".git",
    "node_modules",
    "target",
    ".venv",
    "venv",
    "__pycache__",
    ".tox",
    ".mypy_cache",
    ".pytest_cache",
    "dist",
    "build",
    ".next",
    "vendor",
];

/// Languages by file extension.
const LANGUAGES: &[(&str, &[&str])] = &[
    ("Python", &["py", "pyi"]),
    ("TypeScript", &["ts", "tsx", "mts", "cts"]),
    ("JavaScript", &["js", "jsx", "mjs", "cjs"]),
    ("Rust", &["rs"]),
    ("Go", &["go"]),
    ("Java", &["java"]),
    ("Kotlin", &["kt", "kts"]),
    ("C", &["c", "h"]),
    ("C++", &["cc", "cpp", "cxx", "hpp", "hh"]),
    ("C#", &["cs"]),
    ("Ruby", &["rb"]),
    ("PHP", &["php"]),
    ("Shell", &["sh", "bash"]),
    ("Swift", &["swift"]),
];

/// A suggested path: the glob, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    pub glob: String,
    pub why: &'static str,
}

/// What `init` found in a directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Survey {
    /// Language name and how many files, most first.
    pub languages: Vec<(String, usize)>,
    pub suggestions: Vec<Suggestion>,
}

/// Files whose presence (anywhere) makes a suggestion: (file name, why).
const FILES: &[(&str, &str)] = &[
    (".gitlab-ci.yml", "CI configuration"),
    (".travis.yml", "CI configuration"),
    ("azure-pipelines.yml", "CI configuration"),
    ("Jenkinsfile", "CI configuration"),
    ("bitbucket-pipelines.yml", "CI configuration"),
    (".pre-commit-config.yaml", "commit hooks"),
    ("Cargo.lock", "lock file"),
    ("package-lock.json", "lock file"),
    ("yarn.lock", "lock file"),
    ("pnpm-lock.yaml", "lock file"),
    ("bun.lockb", "lock file"),
    ("poetry.lock", "lock file"),
    ("Pipfile.lock", "lock file"),
    ("uv.lock", "lock file"),
    ("go.sum", "lock file"),
    ("Gemfile.lock", "lock file"),
    ("composer.lock", "lock file"),
    ("Makefile", "build file"),
    ("CODEOWNERS", "review rules"),
];

/// Protected in every repository, present or not: what wires the referee into the agents (their
/// hook and MCP settings) and what runs code at git's events. An agent that edits one of these
/// can switch the referee off for every later session.
const WIRING: &[(&str, &str)] = &[
    (".claude/settings*.json", "agent hooks (Claude Code)"),
    (".codex/**", "agent hooks (Codex)"),
    (".cursor/hooks.json", "agent hooks (Cursor)"),
    (".gemini/settings.json", "agent hooks (Gemini CLI)"),
    (".github/hooks/**", "agent hooks (GitHub Copilot)"),
    (".mcp.json", "MCP servers (Claude Code)"),
    (".cursor/mcp.json", "MCP servers (Cursor)"),
    (".git/hooks/**", "git hooks"),
];

/// Directories whose presence (at the top) makes a suggestion of everything under them.
const DIRS: &[(&str, &str)] = &[
    (".github/workflows", "CI configuration"),
    (".circleci", "CI configuration"),
    (".buildkite", "CI configuration"),
];

/// In a virtual environment of the repository (a folder with `pyvenv.cfg` in it, as
/// `python -m venv`, virtualenv and uv make), what its Python runs at every start, whatever the
/// program imports: its interpreter and `home`, a `.pth` file's `import` lines, and
/// `sitecustomize`/`usercustomize`. Not protected by default (an honest `pip install -e .` or
/// `pip install setuptools` adds a `.pth`, and would be vetoed until accepted): suggested where an
/// orchestrator may run from the repository's own environment.
const VENV: &[(&str, &str)] = &[
    (
        "pyvenv.cfg",
        "virtual environment: the interpreter it runs (`home`)",
    ),
    ("bin/python*", "virtual environment: its interpreter"),
    (
        "lib/*/site-packages/*.pth",
        "virtual environment: run at every start of its Python (an honest `pip install -e .` adding one is vetoed until accepted)",
    ),
    (
        "lib/*/site-packages/*customize.py",
        "virtual environment: run at every start of its Python",
    ),
];

/// The folders a virtual environment keeps its interpreter and installed packages in (POSIX and
/// Windows layouts): not the project's code, so not walked. The rest of the environment's folder
/// is: a `pyvenv.cfg` planted in `web/` must not hide `web/package-lock.json`.
const VENV_PACKAGE_DIRS: &[&str] = &[
    "bin", "lib", "lib64", "include", "share", "Lib", "Scripts", "Include",
];

/// Whether `dir` is a virtual environment: a directory (not a link) with a regular file
/// `pyvenv.cfg` in it.
fn is_venv(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir.join("pyvenv.cfg")).is_ok_and(|m| m.is_file())
}

/// Looks at the names under `dir` (no file is opened; symlinks are not followed).
pub fn survey(dir: &Path) -> Result<Survey> {
    let meta =
        std::fs::metadata(dir).with_context(|| format!("cannot read `{}`", dir.display()))?;
    if !meta.is_dir() {
        bail!("`{}` is not a directory", dir.display());
    }
    let mut counts: BTreeMap<&'static str, usize> = BTreeMap::new();
    // File name → the relative paths it was found at.
    let mut found: BTreeMap<&'static str, Vec<PathBuf>> = BTreeMap::new();
    let mut referee_configs = false;
    // Virtual environments found on the way (at any depth: `backend/.venv`). Their package
    // folders are not walked (not the project's code); the rest of them is, by name as any
    // folder, so that a `pyvenv.cfg` put anywhere hides nothing of the project's.
    let mut venvs: Vec<String> = Vec::new();
    let walk = walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .filter_entry(|e| {
            if e.depth() == 0 || !e.file_type().is_dir() {
                return true;
            }
            let name = e.file_name().to_str().unwrap_or("");
            if VENV_PACKAGE_DIRS.contains(&name) && e.path().parent().is_some_and(is_venv) {
                return false;
            }
            if is_venv(e.path()) {
                if let Some(rel) = e.path().strip_prefix(dir).ok().and_then(Path::to_str) {
                    venvs.push(rel.to_string());
                }
                // `.venv` and `venv` hold nothing of the project's but their start-up files.
                return !SKIP_DIRS.contains(&name);
            }
            !SKIP_DIRS.contains(&name)
        })
        .take(MAX_ENTRIES);
    // An unreadable subdirectory is skipped: this is a suggestion, not a judgment.
    for entry in walk.flatten() {
        if !entry.file_type().is_file() {
            continue;
        }
        let Some(name) = entry.file_name().to_str() else {
            continue;
        };
        let rel = entry.path().strip_prefix(dir).unwrap_or(entry.path());
        if let Some((file, _)) = FILES.iter().find(|(f, _)| *f == name) {
            found.entry(file).or_default().push(rel.to_path_buf());
        }
        if name.starts_with("referee") && name.ends_with(".toml") {
            referee_configs = true;
        }
        let ext = Path::new(name)
            .extension()
            .and_then(|e| e.to_str())
            .unwrap_or("");
        if let Some((lang, _)) = LANGUAGES.iter().find(|(_, exts)| exts.contains(&ext)) {
            *counts.entry(lang).or_default() += 1;
        }
    }
    let mut suggestions = Vec::new();
    for (d, why) in DIRS {
        if dir.join(d).is_dir() {
            suggestions.push(Suggestion {
                glob: format!("{d}/**"),
                why,
            });
        }
    }
    venvs.sort();
    for venv in venvs {
        suggestions.extend(VENV.iter().map(|(glob, why)| Suggestion {
            glob: format!("{venv}/{glob}"),
            why,
        }));
    }
    for (file, why) in FILES {
        let Some(paths) = found.get(file) else {
            continue;
        };
        // At the top: that file; deeper too: every file of that name.
        let glob = if paths.iter().all(|p| p == Path::new(file)) {
            (*file).to_string()
        } else {
            format!("**/{file}")
        };
        suggestions.push(Suggestion { glob, why });
    }
    if referee_configs {
        suggestions.push(Suggestion {
            glob: "**/referee*.toml".into(),
            why: "the referee's own configuration",
        });
    }
    suggestions.extend(WIRING.iter().map(|(glob, why)| Suggestion {
        glob: (*glob).to_string(),
        why,
    }));
    let mut languages: Vec<(String, usize)> = counts
        .into_iter()
        .map(|(l, n)| (l.to_string(), n))
        .collect();
    languages.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    Ok(Survey {
        languages,
        suggestions,
    })
}

/// A TOML string literal.
fn quoted(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

/// The `--vars` file for `dir`: the protocol's protected globs, then the suggested ones.
/// `vars_path` is where it will be (shown in the command to run).
pub fn vars_file(dir: &Path, survey: &Survey, protocol: &Protocol, vars_path: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(
        s,
        "# Project rules for `{}`, written by `referee init` (referee {}).",
        dir.display(),
        env!("CARGO_PKG_VERSION")
    );
    let langs = if survey.languages.is_empty() {
        "none recognised".to_string()
    } else {
        survey
            .languages
            .iter()
            .map(|(l, n)| format!("{l} ({n} file{})", if *n == 1 { "" } else { "s" }))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let _ = writeln!(s, "# Languages found: {langs}.");
    let _ = writeln!(
        s,
        "# Keep this file OUTSIDE the repository (the referee refuses it inside: the worker must"
    );
    let _ = writeln!(
        s,
        "# not be able to edit the rules it is judged by). Use it with:"
    );
    for line in setup(dir, vars_path) {
        let _ = writeln!(s, "#   {line}");
    }
    let _ = writeln!(
        s,
        "# A worker's change to a file matching `protected` is CC-01: REJECT, and a STOP."
    );
    s.push_str("protected = [\n");
    let own: Vec<String> = protocol
        .text
        .parse::<toml::Table>()
        .ok()
        .and_then(|t| {
            t.get("vars")?
                .get("main")?
                .get(overrides::PROTECTED)?
                .as_array()
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
        })
        .unwrap_or_default();
    if !own.is_empty() {
        let _ = writeln!(s, "  # the {} protocol's own", protocol.id);
        for g in &own {
            let _ = writeln!(s, "  {},", quoted(g));
        }
    }
    let found: Vec<&Suggestion> = survey
        .suggestions
        .iter()
        .filter(|sug| !own.contains(&sug.glob) && !WIRING.iter().any(|(g, _)| *g == sug.glob))
        .collect();
    if found.is_empty() {
        s.push_str("  # nothing else found: add this repository's own, e.g. \"ci/**\"\n");
    } else {
        s.push_str("  # found in this repository\n");
        for sug in found {
            let _ = writeln!(s, "  {},  # {}", quoted(&sug.glob), sug.why);
        }
    }
    let wiring: Vec<&Suggestion> = survey
        .suggestions
        .iter()
        .filter(|sug| !own.contains(&sug.glob) && WIRING.iter().any(|(g, _)| *g == sug.glob))
        .collect();
    if !wiring.is_empty() {
        s.push_str("  # what wires the referee into the agents, or would switch it off\n");
        for sug in wiring {
            let _ = writeln!(s, "  {},  # {}", quoted(&sug.glob), sug.why);
        }
    }
    s.push_str("]\n");
    s
}

/// The command that watches `dir` with the file.
pub fn command(dir: &Path, vars_path: &str) -> String {
    format!(
        "referee watch {} --protocol code-change --vars {}",
        shell_word(&dir.display().to_string()),
        shell_word(vars_path)
    )
}

/// The commands that use the file: `watch` (an orchestrator's worker), the agents' hooks (each
/// stop judged, writes to protected paths denied) and the MCP server.
pub fn setup(dir: &Path, vars_path: &str) -> Vec<String> {
    let d = shell_word(&dir.display().to_string());
    let v = shell_word(vars_path);
    vec![
        command(dir, vars_path),
        "Agent hooks (examples/claude-code/settings.json, examples/codex/hooks.json), each hook's command:".into(),
        format!("  Claude Code, .claude/settings.json: referee hook claude-code --vars {v}"),
        format!("  Codex, .codex/hooks.json:           referee hook codex --vars {v}"),
        "MCP server (the agent asks for verdicts, checks and protected paths):".into(),
        format!("  claude mcp add referee -- referee mcp --protocol code-change --root {d}"),
    ]
}

/// `s` as one shell word (single-quoted when it holds anything but plain characters).
fn shell_word(s: &str) -> String {
    if !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+=:,@".contains(c))
    {
        s.to_string()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Where `init` puts the file.
#[derive(Debug)]
pub struct Options {
    pub dir: PathBuf,
    /// `None`: stdout.
    pub output: Option<PathBuf>,
    pub force: bool,
}

/// What `init` prints on stdout.
pub fn run(o: &Options) -> Result<String> {
    let dir = std::fs::canonicalize(&o.dir)
        .with_context(|| format!("cannot read `{}`", o.dir.display()))?;
    let survey = survey(&dir)?;
    let protocol = Protocol::load("code-change")?;
    for sug in &survey.suggestions {
        // What is written must load: a glob the referee refuses is a bug here, not later.
        Glob::try_from(sug.glob.clone()).map_err(anyhow::Error::msg)?;
    }
    let Some(output) = &o.output else {
        return Ok(vars_file(&dir, &survey, &protocol, "VARS_FILE"));
    };
    let target = outside(output, &dir)?;
    let shown = target.display().to_string();
    let text = vars_file(&dir, &survey, &protocol, &shown);
    let mut open = std::fs::OpenOptions::new();
    open.write(true);
    if o.force {
        open.create(true).truncate(true);
    } else {
        open.create_new(true);
    }
    let mut f = open.open(&target).map_err(|e| {
        if e.kind() == std::io::ErrorKind::AlreadyExists {
            anyhow::anyhow!("`{shown}` exists: give --force to overwrite it")
        } else {
            anyhow::Error::new(e).context(format!("cannot write `{shown}`"))
        }
    })?;
    std::io::Write::write_all(&mut f, text.as_bytes())
        .with_context(|| format!("cannot write `{shown}`"))?;
    // The file must load as the run will load it.
    Protocol::load_with(
        "code-change",
        None,
        &overrides::Overrides {
            file: Some(target.clone()),
            ..Default::default()
        },
    )
    .with_context(|| format!("the file written, `{shown}`, does not load"))?;
    Ok(format!(
        "wrote {shown}\n{}\n",
        setup(&dir, &shown).join("\n")
    ))
}

/// `output` as an absolute path with its directory resolved (the file may not exist yet);
/// refused when it lies inside `dir` (canonical).
fn outside(output: &Path, dir: &Path) -> Result<PathBuf> {
    let abs = std::path::absolute(output).context("cannot resolve the `--output` path")?;
    let name = abs
        .file_name()
        .with_context(|| format!("`{}` names no file", output.display()))?;
    let parent = abs.parent().unwrap_or(Path::new("/"));
    let parent = std::fs::canonicalize(parent)
        .with_context(|| format!("cannot read `{}`", parent.display()))?;
    // A symlink at the name is resolved too: writing through it would land where it points.
    let target = std::fs::canonicalize(parent.join(name)).unwrap_or(parent.join(name));
    if target.starts_with(dir) {
        bail!(
            "`{}` is inside `{}`: the worker could edit the rules it is judged by; write the file outside the repository",
            output.display(),
            dir.display()
        );
    }
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggests_what_exists_only() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir_all(root.join(".github/workflows")).unwrap();
        std::fs::create_dir_all(root.join("web/node_modules/x")).unwrap();
        std::fs::write(root.join("a.py"), "").unwrap();
        std::fs::write(root.join("b.py"), "").unwrap();
        std::fs::write(root.join("web/c.ts"), "").unwrap();
        std::fs::write(root.join("web/package-lock.json"), "").unwrap();
        std::fs::write(root.join("web/node_modules/x/d.js"), "").unwrap();
        std::fs::write(root.join("Makefile"), "").unwrap();
        let s = survey(root).unwrap();
        assert_eq!(
            s.languages,
            vec![("Python".to_string(), 2), ("TypeScript".to_string(), 1)]
        );
        let globs: Vec<&str> = s.suggestions.iter().map(|s| s.glob.as_str()).collect();
        let wiring: Vec<&str> = WIRING.iter().map(|(g, _)| *g).collect();
        assert_eq!(
            globs,
            [
                &[".github/workflows/**", "**/package-lock.json", "Makefile"][..],
                &wiring[..]
            ]
            .concat()
        );
        // Each protects what it says, the settings an agent could add included.
        for path in [
            ".claude/settings.json",
            ".claude/settings.local.json",
            ".codex/hooks.json",
            ".codex/config.toml",
            ".cursor/hooks.json",
            ".gemini/settings.json",
            ".github/hooks/hooks.json",
            ".mcp.json",
            ".git/hooks/pre-commit",
        ] {
            assert!(
                wiring
                    .iter()
                    .any(|g| Glob::try_from(g.to_string()).unwrap().is_match(path)),
                "{path}"
            );
        }
    }

    /// A virtual environment (by its `pyvenv.cfg`, whatever its name, at any depth) gets what
    /// its Python runs at every start suggested, and its package folders are not walked (not
    /// the project's Python), but the rest of it is: a `pyvenv.cfg` planted in `web/` hides
    /// nothing of the project's. A folder named `.venv` without one, and a link to a virtual
    /// environment, get nothing.
    #[test]
    fn suggests_a_virtual_environments_start_up_files() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        for v in ["env", ".venv", "backend/.venv"] {
            std::fs::create_dir_all(root.join(v).join("lib/python3.12/site-packages")).unwrap();
        }
        for v in ["env", "backend/.venv"] {
            std::fs::write(root.join(v).join("pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        }
        std::fs::write(root.join("env/lib/python3.12/site-packages/six.py"), "").unwrap();
        std::fs::write(root.join("backend/app.py"), "").unwrap();
        std::os::unix::fs::symlink(root.join("env"), root.join("linked")).unwrap();
        // A `pyvenv.cfg` planted in a folder of the project's hides none of its files, and its
        // package folders are still not the project's.
        std::fs::create_dir_all(root.join("web/lib/python3.12/site-packages")).unwrap();
        std::fs::write(root.join("web/pyvenv.cfg"), "home = /usr/bin\n").unwrap();
        std::fs::write(root.join("web/package-lock.json"), "{}").unwrap();
        std::fs::write(root.join("web/lib/python3.12/site-packages/x.py"), "").unwrap();
        let s = survey(root).unwrap();
        assert_eq!(
            s.languages,
            vec![("Python".to_string(), 1)],
            "the project's own"
        );
        let globs: Vec<&str> = s.suggestions.iter().map(|s| s.glob.as_str()).collect();
        assert_eq!(
            globs[..3 * VENV.len()],
            [
                "backend/.venv/pyvenv.cfg",
                "backend/.venv/bin/python*",
                "backend/.venv/lib/*/site-packages/*.pth",
                "backend/.venv/lib/*/site-packages/*customize.py",
                "env/pyvenv.cfg",
                "env/bin/python*",
                "env/lib/*/site-packages/*.pth",
                "env/lib/*/site-packages/*customize.py",
                "web/pyvenv.cfg",
                "web/bin/python*",
                "web/lib/*/site-packages/*.pth",
                "web/lib/*/site-packages/*customize.py"
            ]
        );
        assert!(
            globs.contains(&"**/package-lock.json"),
            "a planted pyvenv.cfg hid the project's lock file: {globs:?}"
        );
        assert!(!globs
            .iter()
            .any(|g| g.starts_with(".venv/") || g.starts_with("linked/")));
        for (path, protected) in [
            ("env/pyvenv.cfg", true),
            ("env/bin/python3.12", true),
            ("env/lib/python3.12/site-packages/_virtualenv.pth", true),
            ("env/lib/python3.12/site-packages/sitecustomize.py", true),
            ("env/lib/python3.12/site-packages/usercustomize.py", true),
            ("backend/.venv/lib/python3.12/site-packages/evil.pth", true),
            (
                "env/lib/python3.12/site-packages/requests/__init__.py",
                false,
            ),
            ("env/bin/pytest", false),
        ] {
            assert_eq!(
                globs
                    .iter()
                    .any(|g| Glob::try_from(g.to_string()).unwrap().is_match(path)),
                protected,
                "{path}"
            );
        }
    }

    #[test]
    fn shell_words_are_quoted() {
        assert_eq!(shell_word("/a/b"), "/a/b");
        assert_eq!(shell_word("/a b/it's"), r"'/a b/it'\''s'");
    }
}
