//! A folder that ignores itself. The tools an agent runs keep their caches in a folder with a
//! `.gitignore` of `*` inside (pytest's `.pytest_cache/`, ruff's `.ruff_cache/`, mypy's
//! `.mypy_cache/`, a virtual environment made by uv, virtualenv or Python 3.13's `venv`), so
//! `git status` never shows them, and an honest record never lists them. The referee takes such
//! a folder as git does, ignored, when the baseline tracks nothing beneath it. Only this one form
//! is honoured: any other `.gitignore` a worker adds is a change its record lists, never a rule.
//! Ignored is not unseen: protected globs and the shadow checks see ignored paths as before.
//!
//! A worker writes that `.gitignore` as easily as a tool does, so the form is honoured only
//! where it cannot hide code that an `import` reaches by name: a folder whose name starts with
//! `.` (every tool cache above, `.venv`, `.tox`, `.nox`), or a virtual environment (a
//! `pyvenv.cfg` inside, as `python3 -m venv venv` makes) with no `__init__` of its own. A
//! `json/` with a `.gitignore` of `*` and an `__init__.py` beside the orchestrator's code would
//! change what that code runs without a line in `git status`: it is a change the record lists.

use std::os::fd::AsFd;
use std::path::Path;

use super::baseline::Baseline;
use crate::safefs;

/// The most bytes of a folder's own `.gitignore` read: a cache's is one or two lines.
const CAP: u64 = 64 << 10;

/// Whether the path `rel` (raw bytes, relative to the canonical `root`) is ignored: by the
/// baseline's committed rules, or, a folder the baseline tracks nothing beneath, by a
/// `.gitignore` of its own that ignores everything in it ([`ignores_everything`]). Nothing is
/// ignored without a baseline.
pub fn ignored(base: Option<&Baseline>, root: &Path, rel: &[u8], is_dir: bool) -> bool {
    let Some(b) = base else {
        return false;
    };
    b.is_ignored(rel, is_dir)
        || (is_dir && !rel.is_empty() && !b.tracks(&super::name::encode(rel)) && {
            let _span = tracing::trace_span!("self_ignore").entered();
            ignores_itself(root, rel)
        })
}

/// Whether the folder `rel` beneath `root` holds a regular file `.gitignore` that ignores
/// everything in it. Read through descriptors, no link followed on the way or at the end; what
/// cannot be read ignores nothing.
fn ignores_itself(root: &Path, rel: &[u8]) -> bool {
    let name = rel.rsplit(|&b| b == b'/').next().unwrap_or(rel);
    let hidden = name.starts_with(b".");
    let Ok(top) = safefs::open_dir(safefs::CWD, root, true) else {
        return false;
    };
    let Ok(dir) = safefs::open_dir_beneath(top.as_fd(), rel) else {
        return false;
    };
    let name = Path::new(".gitignore");
    let all = match safefs::read_regular(dir.as_fd(), name, name, CAP) {
        Ok(Some(text)) => ignores_everything(&text),
        _ => false,
    };
    all && (hidden || is_environment(dir.as_fd()))
}

/// Whether the open folder `dir` is a virtual environment and no package: it holds a regular
/// `pyvenv.cfg` and no entry named `__init__` or `__init__.*` (a module CPython would load for
/// the folder's name). What cannot be listed is no environment.
fn is_environment(dir: std::os::fd::BorrowedFd<'_>) -> bool {
    let cfg = Path::new("pyvenv.cfg");
    if !matches!(safefs::read_regular(dir, cfg, cfg, CAP), Ok(Some(_))) {
        return false;
    }
    let (mut heap, mut names) = (Vec::new(), Vec::new());
    if safefs::read_names(dir, &mut heap, &mut names).is_err() {
        return false;
    }
    !names.iter().any(|&(at, _)| {
        let name = safefs::name_at(&heap, at).as_encoded_bytes();
        name == b"__init__" || name.starts_with(b"__init__.")
    })
}

/// Whether the rules of a `.gitignore` ignore every path of its folder, itself included: one
/// of them is `*`, `/*`, `**` or `/**`, and none re-includes anything (`!…`). Comments and blank
/// lines are no rules.
pub fn ignores_everything(text: &[u8]) -> bool {
    let text = text.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(text);
    let mut all = false;
    for line in text.split(|&b| b == b'\n') {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let rule = line.trim_ascii();
        if rule.is_empty() || rule.starts_with(b"#") {
            continue;
        }
        if rule.starts_with(b"!") {
            return false;
        }
        all |= matches!(rule, b"*" | b"/*" | b"**" | b"/**");
    }
    all
}

#[cfg(test)]
mod tests {
    use super::ignores_everything;

    #[test]
    fn a_caches_gitignore_ignores_everything_and_no_other_does() {
        for text in [
            "# Created by pytest automatically.\n*\n",
            "*",
            "# Created by venv; see https://docs.python.org/3/library/venv.html\r\n*\r\n",
            "\u{feff}/**\n",
        ] {
            assert!(ignores_everything(text.as_bytes()), "{text:?}");
        }
        for text in [
            "",
            "# only a comment\n",
            "*.pyc\n",
            "*\n!keep.py\n",
            "build/\n",
            "\\*\n",
        ] {
            assert!(!ignores_everything(text.as_bytes()), "{text:?}");
        }
    }
}
