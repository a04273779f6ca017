//! A module added where a protected Python file's imports would find it first: the file runs
//! from its own folder (`python app/orchestrator.py` puts `app/` first on the import path) or
//! from the workspace's root (`python -m`), so `app/json.py`, `app/json/__init__.py` or
//! `app/json.abi3.so` beside an orchestrator that does `import json` changes what the
//! protected code runs without a byte of it changing. Only a name the baseline has no module
//! for in that folder: a module the baseline has there is the project's own, and changing it is
//! an ordinary change; so is an extension module built beside its source (`app/_speedups.pyx`
//! or `.c` in the baseline, `app/_speedups.cpython-312-x86_64-linux-gnu.so` built in place).
//!
//! At the root, only a protected file whose own folder has no module of that name: `python -m`
//! puts the root first, but a file whose `import util` finds its folder's `util.py` runs as a
//! script, where the root is not on the path.
//!
//! Added or hidden by an ignore rule alike (GitHub's Python `.gitignore` ignores `*.so`); the
//! caller measures a hidden one against its state when the referee started.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Arc, Mutex};

use crate::workspace::{Change, Content, Workspace};

/// The module a path is loaded as from its folder's place on the import path, with that
/// folder (`""` for the root): `d/m.py`, `d/m.pyc`, `d/m.pyd`, `d/m.so`, `d/m.TAG.so` and
/// `d/m/__init__.{py,pyc,…}` are `("d", "m")`. `None` for anything else.
pub(super) fn module_place(p: &str) -> Option<(&str, &str)> {
    let (dir, file) = p.rsplit_once('/').unwrap_or(("", p));
    let ext_ok = |f: &str| {
        [".py", ".pyc", ".pyd", ".so"]
            .iter()
            .any(|e| f.ends_with(e))
    };
    if !ext_ok(file) {
        return None;
    }
    let stem = file.split('.').next().unwrap_or(file);
    let (dir, module) = if stem == "__init__" {
        dir.rsplit_once('/').unwrap_or(("", dir))
    } else {
        (dir, stem)
    };
    let ident = module
        .chars()
        .next()
        .is_some_and(|c| c.is_alphabetic() || c == '_')
        && module.chars().all(|c| c.is_alphanumeric() || c == '_');
    (ident && !module.is_empty() && module != "__init__").then_some((dir, module))
}

/// The modules `bytes` (a Python file whose SHA-256 is `key`) imports by absolute name, read
/// once per content.
fn imports_of(key: &str, bytes: &[u8]) -> Option<Arc<BTreeSet<String>>> {
    static SEEN: Mutex<Option<HashMap<String, Arc<BTreeSet<String>>>>> = Mutex::new(None);
    if let Ok(seen) = SEEN.lock() {
        if let Some(names) = seen.as_ref().and_then(|m| m.get(key)) {
            return Some(Arc::clone(names));
        }
    }
    let names = Arc::new(crate::syntax::python_imports(bytes)?);
    if let Ok(mut seen) = SEEN.lock() {
        let map = seen.get_or_insert_with(HashMap::new);
        if map.len() >= 256 {
            map.clear();
        }
        map.insert(key.to_string(), Arc::clone(&names));
    }
    Some(names)
}

/// The module an extension's source builds in place (`d/m.pyx`, `d/m.c`, `d/m.cpp`: `("d",
/// "m")`), as setuptools and Cython name it; `None` for anything else.
fn source_place(p: &str) -> Option<(&str, &str)> {
    let (dir, file) = p.rsplit_once('/').unwrap_or(("", p));
    let (stem, ext) = file.rsplit_once('.')?;
    matches!(ext, "pyx" | "c" | "cc" | "cpp" | "cxx")
        .then_some((dir, stem))
        .filter(|(_, m)| !m.is_empty() && !m.contains('.'))
}

/// Each path added, or present and hidden by an ignore rule, that takes the place of a module
/// a protected Python file (`protected`, whose globs `globs_key` names) imports, with the
/// module's name and that file: `(path, module, importer)`.
pub(super) fn shadows(
    ws: &Workspace,
    protected: &dyn Fn(&str) -> bool,
    globs_key: &str,
) -> Vec<(String, String, String)> {
    let Some(changes) = ws.changes() else {
        return Vec::new();
    };
    let added: Vec<(&String, &str, &str)> = changes
        .iter()
        .filter(|(_, c)| **c == Change::Added)
        .map(|(p, _)| p)
        .chain(ws.ignored())
        .filter(|p| !protected(p))
        .filter_map(|p| module_place(p).map(|(d, m)| (p, d, m)))
        .collect();
    if added.is_empty() {
        return Vec::new();
    }
    // The protected files that run from a folder an added module is in (any, for the root).
    let dirs: BTreeSet<&str> = added.iter().map(|(_, d, _)| *d).collect();
    let runs_from = |p: &str| {
        let dir = p.rsplit_once('/').map_or("", |(d, _)| d);
        dirs.contains("") || dirs.contains(dir)
    };
    let protected_py = ws.baseline_paths_once(&format!("protected .py\n{globs_key}"), |p| {
        p.ends_with(".py") && protected(p)
    });
    let sources: Vec<(&String, Arc<BTreeSet<String>>)> = protected_py
        .iter()
        .filter(|p| runs_from(p))
        .filter_map(|p| match ws.base(p) {
            Content::Bytes(d) => imports_of(&d.sha256, &d.bytes).map(|names| (p, names)),
            _ => None,
        })
        .collect();
    if sources.is_empty() {
        return Vec::new();
    }
    // The modules the baseline has in those folders and the protected files' own, and the
    // extensions it has the source of there: (folder, module).
    let src_dirs: BTreeSet<&str> = sources
        .iter()
        .map(|(src, _)| src.rsplit_once('/').map_or("", |(d, _)| d))
        .collect();
    let modules = ws.baseline_paths_once("python modules", |p| module_place(p).is_some());
    let own: BTreeSet<(&str, &str)> = modules
        .iter()
        .filter_map(|p| module_place(p).filter(|(d, _)| dirs.contains(d) || src_dirs.contains(d)))
        .collect();
    let extensions = ws.baseline_paths_once("extension sources", |p| source_place(p).is_some());
    let built: BTreeSet<(&str, &str)> = extensions
        .iter()
        .filter_map(|p| source_place(p).filter(|(d, _)| dirs.contains(d)))
        .collect();
    let mut out = Vec::new();
    for (p, dir, module) in added {
        let extension = p.ends_with(".so") || p.ends_with(".pyd");
        if own.contains(&(dir, module)) || (extension && built.contains(&(dir, module))) {
            continue;
        }
        // At the root, a module is found first only by `python -m` (the root first on the
        // path): a file whose folder has a module of that name runs as a script (`-m` would
        // not find that module), where its folder's module wins.
        let by = sources.iter().find(|(src, names)| {
            let src_dir = src.rsplit_once('/').map_or("", |(d, _)| d);
            let first = dir == src_dir || (dir.is_empty() && !own.contains(&(src_dir, module)));
            first && names.contains(module)
        });
        if let Some((src, _)) = by {
            out.push((p.clone(), module.to_string(), (*src).clone()));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{module_place, source_place};

    #[test]
    fn the_module_a_path_is_loaded_as() {
        assert_eq!(module_place("app/json.py"), Some(("app", "json")));
        assert_eq!(module_place("json.py"), Some(("", "json")));
        assert_eq!(module_place("app/json/__init__.py"), Some(("app", "json")));
        assert_eq!(module_place("json/__init__.pyc"), Some(("", "json")));
        assert_eq!(
            module_place("app/_json.cpython-312-x86_64-linux-gnu.so"),
            Some(("app", "_json"))
        );
        assert_eq!(module_place("app/yaml.abi3.so"), Some(("app", "yaml")));
        // A package's own `__init__` is the package, from the folder above it.
        assert_eq!(module_place("app/__init__.py"), Some(("", "app")));
        for p in [
            "app/README.md",
            "__init__.py",
            "app/my-mod.py",
            "app/1st.py",
            "app/json.txt",
        ] {
            assert_eq!(module_place(p), None, "{p}");
        }
    }

    #[test]
    fn the_module_an_extension_source_builds_in_place() {
        assert_eq!(
            source_place("app/_speedups.pyx"),
            Some(("app", "_speedups"))
        );
        assert_eq!(source_place("_native.c"), Some(("", "_native")));
        assert_eq!(source_place("app/fast.cpp"), Some(("app", "fast")));
        for p in ["app/json.py", "app/x.h", "app/a.b.c", "app/.c", "README"] {
            assert_eq!(source_place(p), None, "{p}");
        }
    }
}
