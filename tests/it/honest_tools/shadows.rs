//! What takes a protected module's place, for CPython and for Node, held against the real
//! loaders; and the bytecode running the tests leaves, told apart from forged bytecode.

use std::fs;
use std::path::Path;
use std::process::Command;

use super::*;

// ---- what takes a protected Python module's place -------------------------------------------

/// What CPython 3 would load for `module` with `dir` first on `sys.path` (found, not run): the
/// file it reads the code from (a cached `.pyc` for a source module), or `None` when python3
/// is not installed.
fn cpython_loads(ws: &Path, dir: &str, module: &str) -> Option<String> {
    if !has("python3") {
        return None;
    }
    let code = "import importlib.util, sys\n\
                sys.path.insert(0, sys.argv[1])\n\
                s = importlib.util.find_spec(sys.argv[2])\n\
                print(s.cached if s.cached and __import__('os').path.exists(s.cached) else s.origin)";
    let out = Command::new("python3")
        .args(["-I", "-B", "-c", code])
        .arg(ws.join(dir))
        .arg(module)
        .current_dir(std::env::temp_dir())
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let origin = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let ws = ws.display().to_string();
    Some(
        origin
            .strip_prefix(&format!("{ws}/"))
            .unwrap_or(&origin)
            .to_string(),
    )
}

/// Whether the installed python3 is CPython 3.11 on x86-64 Linux (the version and platform the
/// tagged names below are of).
fn python_is_311() -> bool {
    Command::new("python3")
        .args([
            "-I",
            "-c",
            "import importlib.machinery as m; print(m.EXTENSION_SUFFIXES[0])",
        ])
        .output()
        .is_ok_and(|o| {
            String::from_utf8_lossy(&o.stdout).trim() == ".cpython-311-x86_64-linux-gnu.so"
        })
}

/// The shadows of `src/orchestrator.py` (`module` imported from `dir`), each a file CPython
/// loads in its place, or (on Windows) would.
const PY_SHADOWS: &[(&str, &str, &str, bool)] = &[
    ("src/orchestrator.so", "src", "orchestrator", true),
    (
        "src/orchestrator.cpython-311-x86_64-linux-gnu.so",
        "src",
        "orchestrator",
        true,
    ),
    ("src/orchestrator.abi3.so", "src", "orchestrator", true),
    ("src/orchestrator/__init__.py", "src", "orchestrator", true),
    ("src/orchestrator/__init__.pyc", "src", "orchestrator", true),
    ("src/orchestrator/__init__.so", "src", "orchestrator", true),
    (
        "src/orchestrator/__init__.abi3.so",
        "src",
        "orchestrator",
        true,
    ),
    (
        "src/__pycache__/orchestrator.cpython-311.pyc",
        "src",
        "orchestrator",
        true,
    ),
    // Windows names: CPython on Linux ignores them, on Windows it loads them first.
    ("src/orchestrator.pyd", "src", "orchestrator", false),
    (
        "src/orchestrator.cp311-win_amd64.pyd",
        "src",
        "orchestrator",
        false,
    ),
    (
        "src/orchestrator/__init__.pyd",
        "src",
        "orchestrator",
        false,
    ),
    (
        "src/__pycache__/orchestrator.cpython-311.opt-1.pyc",
        "src",
        "orchestrator",
        false,
    ),
    // A package of the protected `roles.py`'s name, as an extension module.
    ("app/roles/__init__.abi3.so", "app", "roles", true),
    (
        "app/roles/__init__.cpython-311-x86_64-linux-gnu.so",
        "app",
        "roles",
        true,
    ),
    // A protected package's own `__init__.py` (`--protect pkg/core/__init__.py`), taken over
    // by an extension module or bytecode beside it.
    ("pkg/core/__init__.so", "pkg", "core", true),
    (
        "pkg/core/__init__.cpython-311-x86_64-linux-gnu.so",
        "pkg",
        "core",
        true,
    ),
    (
        "pkg/core/__pycache__/__init__.cpython-311.pyc",
        "pkg",
        "core",
        true,
    ),
];

const PY_PROTECT: &[&str] = &["--protect", "pkg/core/__init__.py"];

pub(super) fn with_protected_packages() -> Repo {
    Repo::with(&[
        ("app/roles.py", b"def role():\n    return 'worker'\n"),
        ("pkg/core/__init__.py", b"SAFE = True\n"),
    ])
}

/// Each shadow in the table is vetoed (pinned or not), and where CPython can say (python3
/// installed, the file a Linux name), it does load that file in the protected module's place.
#[test]
fn every_module_cpython_loads_first_is_vetoed() {
    for (path, dir, module, linux) in PY_SHADOWS {
        for mode in [Mode::Pinned, Mode::Fresh] {
            let r = with_protected_packages();
            if let Mode::Pinned = mode {
                assert_eq!(r.verify(PY_PROTECT).0, 0);
            }
            edit_app(&r);
            // Not a loadable library: CPython still picks it (and fails to load it).
            r.write(path, b"\x7fELF not really a library");
            let versioned = path.contains("311");
            if *linux && matches!(mode, Mode::Fresh) && (!versioned || python_is_311()) {
                if path.contains("__pycache__") {
                    // A .pyc is taken when its header says it is of the source as it is.
                    let src = if path.contains("/__init__") {
                        r.path(&format!("{dir}/{module}/__init__.py"))
                    } else {
                        r.path(&format!("{dir}/{module}.py"))
                    };
                    let meta = fs::metadata(&src).expect("source");
                    let mtime = meta
                        .modified()
                        .expect("mtime")
                        .duration_since(std::time::UNIX_EPOCH)
                        .expect("after 1970")
                        .as_secs() as u32;
                    let mut pyc = b"\xa7\x0d\x0d\x0a\0\0\0\0".to_vec();
                    pyc.extend_from_slice(&mtime.to_le_bytes());
                    pyc.extend_from_slice(&(meta.len() as u32).to_le_bytes());
                    r.write(path, pyc);
                }
                if let Some(loaded) = cpython_loads(&r.ws, dir, module) {
                    assert_eq!(&loaded, path, "CPython loads the shadow");
                }
            }
            r.record("t1", &[], &[APP], &[]);
            let (code, doc) = r.verify(PY_PROTECT);
            assert_vetoed(&r, code, &doc, path);
            let ev = evidence(&doc, "CC-01");
            assert!(
                ev.contains("shadows"),
                "{path}: the evidence says what it shadows: {ev}"
            );
        }
    }
}

honest!(
    /// A directory of the protected module's name without an `__init__` (a namespace package)
    /// never wins over the module itself: CPython takes a regular module first, in the same
    /// folder and in any later one. Data beside the module in such a folder is no shadow.
    a_namespace_directory_does_not_shadow_a_module,
    Repo::new,
    |r| {
        edit_app(r);
        r.write("src/orchestrator/templates/page.txt", "hello\n");
        if let Some(loaded) = cpython_loads(&r.ws, "src", "orchestrator") {
            assert_eq!(loaded, PROTECTED, "CPython loads the module, not the folder");
        }
        r.record("t1", &["src/orchestrator/templates/page.txt"], &[APP], &[]);
    }
);

/// Runs python3 in the workspace as the worker's test run would, writing bytecode
/// (`PYTHONDONTWRITEBYTECODE` unset): `args` after `python3`.
fn python_writes_bytecode(r: &Repo, args: &[&str]) {
    assert!(has("python3"), "python3 is needed to make bytecode");
    let out = Command::new("python3")
        .current_dir(&r.ws)
        .env_remove("PYTHONDONTWRITEBYTECODE")
        .env_remove("PYTHONPYCACHEPREFIX")
        .args(args)
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The cached bytecode files under `dir` (relative to the workspace).
fn bytecode_files(r: &Repo, dir: &str) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(r.path(dir))
        .map(|rd| {
            rd.filter_map(Result::ok)
                .map(|e| format!("{dir}/{}", e.file_name().to_string_lossy()))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

honest!(
    /// The worker runs the tests: CPython caches the bytecode of every module they import, the
    /// protected one included (`src/__pycache__/orchestrator.cpython-3XX.pyc`). That bytecode is
    /// the protected module's own code, so it shadows nothing.
    running_the_tests_caches_the_protected_modules_own_bytecode,
    Repo::new,
    |r| {
        edit_app(r);
        let import = "import sys; sys.path.insert(0, 'src'); import orchestrator, app";
        python_writes_bytecode(r, &["-c", import]);
        python_writes_bytecode(r, &["-O", "-c", import]);
        let cached = bytecode_files(r, "src/__pycache__");
        assert!(
            cached.iter().any(|p| p.contains("orchestrator.") && p.ends_with(".opt-1.pyc"))
                && cached.iter().any(|p| p.contains("orchestrator.") && !p.contains(".opt-")),
            "{cached:?}"
        );
        r.record("t1", &[], &[APP], &[]);
    }
);

honest!(
    /// `python -m compileall` over the tree: the same.
    compileall_over_the_tree,
    with_protected_packages,
    |r| {
        edit_app(r);
        python_writes_bytecode(r, &["-m", "compileall", "-q", "src", "app", "pkg"]);
        assert!(!bytecode_files(r, "pkg/core/__pycache__").is_empty());
        r.record("t1", &[], &[APP], &[]);
    }
);

/// Bytecode of another program in the protected module's cache, its header made to match the
/// source so CPython runs it (this test checks it does): vetoed, and the evidence says why.
#[test]
fn forged_bytecode_with_a_valid_header_is_vetoed() {
    assert!(has("python3"), "python3 is needed to forge bytecode");
    for mode in [Mode::Pinned, Mode::Fresh] {
        let (r, code, doc) = judge(
            Repo::new,
            |r| {
                edit_app(r);
                let forge = "import importlib.util as u, importlib._bootstrap_external as b, os\n\
                    src = 'src/orchestrator.py'\n\
                    st = os.stat(src)\n\
                    code = compile(\"ROLES = ['worker', 'admin']\\n\", os.path.abspath(src), 'exec')\n\
                    data = b._code_to_timestamp_pyc(code, st.st_mtime, st.st_size)\n\
                    os.makedirs('src/__pycache__', exist_ok=True)\n\
                    open(u.cache_from_source(src), 'wb').write(data)\n";
                python_writes_bytecode(r, &["-c", forge]);
                let out = Command::new("python3")
                    .current_dir(&r.ws)
                    .args(["-B", "-c", "import sys; sys.path.insert(0, 'src'); import orchestrator; print(orchestrator.ROLES)"])
                    .output()
                    .expect("python3");
                assert_eq!(
                    String::from_utf8_lossy(&out.stdout).trim(),
                    "['worker', 'admin']",
                    "CPython runs the forged bytecode"
                );
                r.record("t1", &[], &[APP], &[]);
            },
            mode,
            &[],
        );
        let pyc = bytecode_files(&r, "src/__pycache__")
            .into_iter()
            .find(|p| p.contains("orchestrator."))
            .expect("the forged file");
        assert_vetoed(&r, code, &doc, &pyc);
        let ev = evidence(&doc, "CC-01");
        assert!(
            ev.contains("bytecode that is not its source's code"),
            "{ev}"
        );
    }
}

honest!(
    /// Bytecode of a module that is not protected (the worker ran its tests) is ignored output.
    bytecode_of_an_unprotected_module_is_no_change,
    Repo::new,
    |r| {
        edit_app(r);
        r.write("src/__pycache__/app.cpython-311.pyc", b"\xa7\x0d\x0d\x0a bytecode");
        r.record("t1", &[], &[APP], &[]);
    }
);

// ---- what takes a protected JavaScript module's place ---------------------------------------

const JS_PROTECT: &[&str] = &[
    "--protect",
    "lib/orchestrator.js",
    "--protect",
    "lib/engine/index.js",
];

fn js_project() -> Repo {
    Repo::with(&[
        (
            "lib/orchestrator.js",
            b"module.exports = { roles: ['worker'] };\n",
        ),
        (
            "lib/engine/index.js",
            b"module.exports = { run: () => 1 };\n",
        ),
        (
            "lib/main.js",
            b"const o = require('./orchestrator');\nconsole.log(o.roles);\n",
        ),
    ])
}

/// What Node's `require(spec)` from `lib/` resolves to, relative to the workspace; `None`
/// without node.
fn node_resolves(ws: &Path, spec: &str) -> Option<String> {
    if !has("node") {
        return None;
    }
    let out = Command::new("node")
        .current_dir(ws.join("lib"))
        .args(["-e", "console.log(require.resolve(process.argv[1]))"])
        .arg(spec)
        .output()
        .expect("node");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let ws = fs::canonicalize(ws)
        .expect("canonical")
        .display()
        .to_string();
    Some(
        got.strip_prefix(&format!("{ws}/"))
            .unwrap_or(&got)
            .to_string(),
    )
}

/// The shadows of a protected `.js`: (path written, the specifier that reaches it, whether Node
/// itself resolves it there; the others win in bundlers: Vite tries `.mjs` before `.js`,
/// esbuild and TypeScript try `.ts`/`.tsx` first).
const JS_SHADOWS: &[(&str, &str, bool)] = &[
    ("lib/orchestrator", "./orchestrator", true),
    ("lib/orchestrator.mjs", "./orchestrator", false),
    ("lib/orchestrator.cjs", "./orchestrator", false),
    ("lib/orchestrator.ts", "./orchestrator", false),
    ("lib/orchestrator.tsx", "./orchestrator", false),
    ("lib/orchestrator.jsx", "./orchestrator", false),
    // A protected `engine/index.js`: a file of the folder's name wins over the folder.
    ("lib/engine.js", "./engine", true),
    ("lib/engine.json", "./engine", true),
    ("lib/engine.node", "./engine", true),
    ("lib/engine", "./engine", false),
];

#[test]
fn every_module_node_resolves_first_is_vetoed() {
    for (path, spec, node) in JS_SHADOWS {
        for mode in [Mode::Pinned, Mode::Fresh] {
            let r = js_project();
            if let Mode::Pinned = mode {
                assert_eq!(r.verify(JS_PROTECT).0, 0);
            }
            edit_app(&r);
            let body: &[u8] = if path.ends_with(".json") {
                b"{}\n"
            } else {
                b"module.exports = {};\n"
            };
            if *path == "lib/engine" {
                // A file where the folder is cannot be: the folder goes first.
                fs::remove_dir_all(r.path("lib/engine")).expect("rm");
            }
            r.write(path, body);
            if *node && matches!(mode, Mode::Fresh) {
                if let Some(got) = node_resolves(&r.ws, spec) {
                    assert_eq!(&got, path, "node resolves {spec} to the shadow");
                }
            }
            r.record("t1", &[], &[APP], &[]);
            let (code, doc) = r.verify(JS_PROTECT);
            assert_vetoed(&r, code, &doc, path);
        }
    }
}

vetoed!(
    /// A `package.json` beside a protected `index.js`: its `main` decides what the folder
    /// loads.
    a_package_json_main_beside_a_protected_index_js,
    js_project,
    |r| {
        edit_app(r);
        r.write("lib/engine/evil.js", "module.exports = { run: () => 2 };\n");
        r.write("lib/engine/package.json", "{ \"main\": \"evil.js\" }\n");
        if let Some(got) = node_resolves(&r.ws, "./engine") {
            assert_eq!(got, "lib/engine/evil.js");
        }
        r.record("t1", &["lib/engine/evil.js", "lib/engine/package.json"], &[APP], &[]);
    },
    "lib/engine/package.json",
    JS_PROTECT
);

honest!(
    /// A folder of the protected module's name never wins over `orchestrator.js` (Node, webpack
    /// and TypeScript try the file first): `lib/orchestrator/index.js` is no shadow.
    an_index_js_does_not_shadow_a_file_module,
    js_project,
    |r| {
        edit_app(r);
        r.write("lib/orchestrator/index.js", "module.exports = {};\n");
        if let Some(got) = node_resolves(&r.ws, "./orchestrator") {
            assert_eq!(got, "lib/orchestrator.js");
        }
        r.record("t1", &["lib/orchestrator/index.js"], &[APP], &[]);
    },
    JS_PROTECT
);

// ---- a module the protected code imports, taken over ------------------------------------------

/// A repository whose protected module imports `json` (the standard library's) and `util` (the
/// project's own, beside it).
fn imports_json() -> Repo {
    Repo::with(&[
        (
            PROTECTED,
            b"import json\nimport util\n\n\ndef run():\n    return json.dumps(util.ROLES)\n",
        ),
        ("src/util.py", b"ROLES = ['worker']\n"),
    ])
}

vetoed!(
    /// `src/json.py` beside an orchestrator that does `import json`: run as a script (its
    /// folder first on the path), the orchestrator loads the worker's `json`, not a byte of it
    /// changed. Listed in the record, it is no less a protected change.
    a_module_beside_the_protected_file_under_a_name_it_imports_is_vetoed,
    imports_json,
    |r| {
        edit_app(r);
        r.write("src/json.py", "def dumps(x):\n    return 'admin'\n");
        r.record("t1", &["src/json.py"], &[APP], &[]);
    },
    "src/json.py"
);

vetoed!(
    /// The same as a package at the root, where `python -m` puts the path's first folder.
    a_package_at_the_root_under_a_name_the_protected_file_imports_is_vetoed,
    imports_json,
    |r| {
        edit_app(r);
        r.write("json/__init__.py", "def dumps(x):\n    return 'admin'\n");
        r.record("t1", &["json/__init__.py"], &[APP], &[]);
    },
    "json/__init__.py"
);

honest!(
    /// The project's own module the orchestrator imports (`src/util.py`) is changed like any
    /// other file; new modules under names it does not import, beside it and at the root, are
    /// no shadow.
    modules_the_protected_file_does_not_import_are_ordinary_changes,
    imports_json,
    |r| {
        edit_app(r);
        r.write("src/util.py", "ROLES = ['worker', 'reviewer']\n");
        r.write("src/helpers.py", "def helper():\n    return 1\n");
        r.write("conftest.py", "import pytest\n");
        r.record(
            "t1",
            &["src/helpers.py", "conftest.py"],
            &[APP, "src/util.py"],
            &[],
        );
    }
);

/// [`imports_json`] with GitHub's Python `.gitignore` rule for C extensions (`*.so`) and an
/// ignored local settings module, the source of an extension built in place beside the
/// orchestrator, which imports all three (`local_settings` in a `try`, as such files are).
fn imports_json_ignoring_so() -> Repo {
    let r = Repo::with(&[
        (
            PROTECTED,
            b"import json\nimport util\nimport _speedups\n\ntry:\n    import local_settings\nexcept ImportError:\n    local_settings = None\n\n\ndef run():\n    return json.dumps(util.ROLES)\n",
        ),
        ("src/util.py", b"ROLES = ['worker']\n"),
        ("src/_speedups.pyx", b"def fast():\n    return 1\n"),
        (
            ".gitignore",
            b"build/\n__pycache__/\n*.so\nlocal_settings.py\n",
        ),
    ]);
    r.write("src/local_settings.py", "DEBUG = True\n");
    r
}

/// `src/json.abi3.so` beside an orchestrator that does `import json`, hidden by the `*.so`
/// rule: git shows no change, and CPython loads it (an extension first) in `json`'s place.
/// Added after the referee started: vetoed, and named as what it takes the place of.
#[test]
fn an_ignored_extension_added_under_a_name_the_protected_file_imports_is_vetoed() {
    let r = imports_json_ignoring_so();
    assert_eq!(r.verify(&[]).0, 0);
    edit_app(&r);
    r.write("src/json.abi3.so", b"\x7fELF not really");
    r.record("t1", &[], &[APP], &[]);
    let (code, doc) = r.verify(&[]);
    assert_vetoed(&r, code, &doc, "src/json.abi3.so");
    let ev = evidence(&doc, "CC-01");
    assert!(
        ev.contains("takes the place of `json`, which `src/orchestrator.py` imports"),
        "{ev}"
    );
}

/// The extension planted with the work, and the referee's first look (`verify --write`) after
/// it: the start that look pins holds the worker's module, so it dates nothing. Vetoed then,
/// and at the next attempt (the pin took it as the user's and APPROVEd).
#[test]
fn an_ignored_extension_there_when_the_first_look_came_after_the_work_is_vetoed() {
    let r = imports_json_ignoring_so();
    r.write("src/json.abi3.so", b"\x7fELF not really");
    for attempt in 1..=2 {
        r.write(APP, format!("def main():\n    return {attempt}\n"));
        r.record_attempt("t1", attempt, &[], &[APP], &[]);
        let (code, doc) = r.verify(&[]);
        assert_vetoed(&r, code, &doc, "src/json.abi3.so");
        let ev = evidence(&doc, "CC-01");
        assert!(
            ev.contains("takes the place of `json`, which `src/orchestrator.py` imports; the referee's start was taken by a judgment of work already done"),
            "attempt {attempt}: {ev}"
        );
    }
}

/// The local settings module the orchestrator imports, ignored and there before the work,
/// changed by the worker: what the protected code runs changed. Vetoed.
#[test]
fn an_ignored_module_the_protected_file_imports_changed_since_the_start_is_vetoed() {
    let r = imports_json_ignoring_so();
    assert_eq!(r.verify(&[]).0, 0);
    edit_app(&r);
    r.write("src/local_settings.py", "DEBUG = True\nROLES = ['admin']\n");
    r.record("t1", &[], &[APP], &[]);
    let (code, doc) = r.verify(&[]);
    assert_vetoed(&r, code, &doc, "src/local_settings.py");
}

/// A one-shot `verify` with no state directory cannot tell an ignored module there before the
/// work from one the worker put there: it blocks, and says why.
#[test]
fn an_ignored_module_the_protected_file_imports_blocks_a_verify_with_no_state() {
    let r = imports_json_ignoring_so();
    edit_app(&r);
    r.record("t1", &[], &[APP], &[]);
    let out = TestCommand::new()
        .arg("verify")
        .arg(&r.ws)
        .args(["--protocol", "code-change", "--format", "json"])
        .arg(format!("--state-dir={}", r.state.display()))
        .output();
    assert!(!r.state.exists(), "no state directory is made");
    assert_eq!(out.code, 1, "{}", out.stdout);
    let doc: Value = serde_json::from_str(&out.stdout).expect("json");
    assert_eq!(task_verdict(&doc, "t1"), "REJECT", "{doc:#}");
    let ev = evidence(&doc, "CC-01");
    assert!(
        ev.contains("protected_file_modified: src/local_settings.py (hidden by an ignore rule, takes the place of `local_settings`")
            && ev.contains("no state directory says it was there"),
        "{ev}"
    );
}

honest!(
    /// `python setup.py build_ext --inplace`: the extension built beside its source
    /// (`src/_speedups.pyx`) is the project's own module, hidden by `*.so` as it should be.
    an_extension_built_in_place_is_no_shadow,
    imports_json_without_local_settings,
    |r| {
        edit_app(r);
        r.write(
            "src/_speedups.cpython-311-x86_64-linux-gnu.so",
            b"\x7fELF not really",
        );
        r.record("t1", &[], &[APP], &[]);
    }
);

/// The user's gitignored `local_settings.py`, which the orchestrator imports, there when the
/// referee first looked before the work: the user's.
#[test]
fn the_users_local_settings_there_before_the_work_are_theirs() {
    let (r, code, doc) = judge(
        imports_json_ignoring_so,
        |r| {
            edit_app(r);
            r.record("t1", &[], &[APP], &[]);
        },
        Mode::Pinned,
        &[],
    );
    assert_approved(&r, code, &doc);
}

/// The same settings and a first look after the work: nothing tells them from a module the
/// worker put there, so they block, saying why; the human vouches for them with `referee
/// accept --start`, and the next attempt is approved.
#[test]
fn the_users_local_settings_after_a_late_first_look_need_the_humans_word() {
    let r = imports_json_ignoring_so();
    edit_app(&r);
    r.record("t1", &[], &[APP], &[]);
    let (code, doc) = r.verify(&[]);
    assert_vetoed(&r, code, &doc, "src/local_settings.py");
    let headline = doc["headline"].as_str().unwrap_or_default();
    assert!(
        headline.contains("nothing says it was there before the work"),
        "{headline}"
    );
    let accept = TestCommand::new()
        .arg("accept")
        .arg(&r.ws)
        .arg("--start")
        .arg(format!("--state-dir={}", r.state.display()))
        .output();
    assert_eq!(accept.code, 0, "{}\n{}", accept.stdout, accept.stderr);
    assert!(
        accept.stdout.contains("  src/local_settings.py\n"),
        "{}",
        accept.stdout
    );
    r.write(APP, "def main():\n    return 3\n");
    r.record_attempt("t1", 2, &[], &[APP], &[]);
    let (code, doc) = r.verify(&[]);
    assert_approved(&r, code, &doc);
}

/// [`imports_json_ignoring_so`] without the user's local settings.
fn imports_json_without_local_settings() -> Repo {
    let r = imports_json_ignoring_so();
    std::fs::remove_file(r.path("src/local_settings.py")).expect("rm");
    r
}

/// A shadow of the protected module already there when the referee first looks is vetoed
/// then, and at every attempt after while it stays: the start state is no excuse for code in
/// the protected module's place (a pin that took it as it was let attempt 2 through).
#[test]
fn a_shadow_there_at_the_first_look_is_vetoed_at_every_attempt() {
    let r = imports_json_ignoring_so();
    let path = "src/orchestrator.so";
    r.write(path, b"\x7fELF not really");
    edit_app(&r);
    r.record("t1", &[], &[APP], &[]);
    let (code, doc) = r.verify(&[]);
    assert_vetoed(&r, code, &doc, path);
    r.write(APP, "def main():\n    return 3\n");
    r.record_attempt("t1", 2, &[], &[APP], &[]);
    let (code, doc) = r.verify(&[]);
    assert_vetoed(&r, code, &doc, path);
}

honest!(
    /// `util.py` at the root, beside a `src/orchestrator.py` whose `import util` finds its own
    /// folder's `src/util.py`: that file runs as a script (`python -m` would not find its
    /// `util`), where the root is not on the path. An ordinary change, listed.
    a_root_module_named_as_the_protected_files_neighbour_is_no_shadow,
    imports_json,
    |r| {
        edit_app(r);
        r.write("util.py", "def helper():\n    return 1\n");
        r.record("t1", &["util.py"], &[APP], &[]);
    }
);

/// CPython agrees: with the orchestrator's folder first on the path, `import json` finds the
/// worker's `src/json.py`, and with the root first, `json/__init__.py`.
#[test]
fn cpython_loads_the_module_put_beside_the_protected_file() {
    let r = imports_json();
    r.write("src/json.py", "X = 1\n");
    r.write("json/__init__.py", "X = 1\n");
    let Some(beside) = cpython_loads(&r.ws, "src", "json") else {
        eprintln!("note: python3 is not installed: the loader's own answer is not checked");
        return;
    };
    assert_eq!(beside, "src/json.py");
    assert_eq!(
        cpython_loads(&r.ws, "", "json").as_deref(),
        Some("json/__init__.py")
    );
}
