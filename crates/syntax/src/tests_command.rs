//! The protocol's syntax commands: pass, fail (with and without a position), not installed,
//! timeout, killed, refused, bounded output, and how they combine with the built-in parsers.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use super::tests::{inconclusive, invalid_at, parsed, rule, sh, Ws};
use super::*;

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
fn a_refused_program_is_a_typed_reason_with_its_path() {
    let ws = Ws::new();
    let inside = ws.path("tools/check.sh");
    assert_eq!(
        command::resolve_for_tests(inside.to_str().unwrap(), Some(ws.dir.path())),
        Err(RefusedProgram::InsideWorkspace(inside.clone()))
    );
    assert_eq!(
        command::resolve_for_tests("./tools/check.sh", Some(ws.dir.path())),
        Err(RefusedProgram::Relative(PathBuf::from("./tools/check.sh")))
    );
    let missing = "referee-no-such-program-anywhere";
    let refused = command::resolve_for_tests(missing, Some(ws.dir.path())).unwrap_err();
    assert_eq!(refused, RefusedProgram::NotInstalled(missing.into()));
    assert_eq!(refused.to_string(), format!("`{missing}` is not installed"));
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
#[cfg(feature = "javascript")]
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
#[cfg(feature = "python")]
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

#[cfg(feature = "python")]
fn resolve_for_test(program: &str) -> Option<PathBuf> {
    command::resolve_for_tests(program, None).ok()
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
