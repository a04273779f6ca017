//! Protocols a user writes (issue 18 §4): the README's worked protocol (`examples/protocol-score`,
//! "report exists, no TODO, score >= 0.8") judged by `referee verify` and tested with its own
//! fixtures by `referee protocol test`, a protocol without `[verdict]` completing on `--final`
//! and `--exit-with`, and the protocol format's JSON Schema (`schema/protocol.schema.json`)
//! checked against every protocol shipped and against a misspelled key.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde_json::Value;

use crate::util::Output;
use crate::watch::{exit_code, read, run, Watch, WAIT};

fn repo() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

fn example() -> PathBuf {
    repo().join("examples/protocol-score")
}

fn protocol_file() -> String {
    example().join("protocol.toml").display().to_string()
}

/// A copy of one of the example's cases' build directory, in a fresh temporary root.
fn case_build(case: &str) -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().unwrap();
    let dir = root.path().join("build");
    fs::create_dir(&dir).unwrap();
    let from = example().join(case).join("build");
    if from.is_dir() {
        for e in fs::read_dir(from).unwrap() {
            let e = e.unwrap();
            fs::copy(e.path(), dir.join(e.file_name())).unwrap();
        }
    }
    (root, dir)
}

/// `referee verify DIR --protocol examples/protocol-score/protocol.toml [--final] --format json`.
fn verify(dir: &Path, final_: bool) -> (i32, Value) {
    let d = dir.to_str().unwrap();
    let p = protocol_file();
    let mut args = vec!["verify", d, "--protocol", &p, "--format", "json"];
    if final_ {
        args.push("--final");
    }
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&args);
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}\n{err}"));
    (code, v)
}

/// `check → (status, evidence observed and details)` of a `verify --format json` answer.
fn statuses(v: &Value) -> Vec<(String, String, String)> {
    v["results"]
        .as_array()
        .unwrap_or_else(|| panic!("no results: {v}"))
        .iter()
        .map(|r| {
            let ev = &r["evidence"];
            let details: Vec<&str> = ev["details"]
                .as_array()
                .map(|d| d.iter().filter_map(Value::as_str).collect())
                .unwrap_or_default();
            (
                r["check"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
                format!(
                    "{} | {}",
                    ev["observed"].as_str().unwrap_or(""),
                    details.join(" | ")
                ),
            )
        })
        .collect()
}

fn status_of(v: &Value, check: &str) -> (String, String) {
    statuses(v)
        .into_iter()
        .find(|(c, _, _)| c == check)
        .map(|(_, s, e)| (s, e))
        .unwrap_or_else(|| panic!("no {check} in {v}"))
}

#[test]
fn the_worked_protocol_passes_a_good_run_and_holds_a_low_score() {
    let (_root, dir) = case_build("pass");
    let (code, v) = verify(&dir, false);
    assert_eq!(code, 0, "{v}");
    for check in ["REPORT", "NO-TODO", "RESULTS-JSON", "SCORE"] {
        assert_eq!(status_of(&v, check).0, "PASS", "{check}: {v}");
    }
    assert!(
        status_of(&v, "SCORE")
            .1
            .contains("results.json:2:12: `/score` = 0.91"),
        "{v}"
    );

    let (_root, dir) = case_build("low-score");
    let (code, v) = verify(&dir, false);
    assert_eq!(code, 1, "a BLOCKING FAIL exits 1: {v}");
    let (status, evidence) = status_of(&v, "SCORE");
    assert_eq!(status, "FAIL");
    assert!(
        evidence.contains("results.json:2:12: `/score` = 0.5: expected >= 0.8"),
        "{evidence}"
    );

    // A TODO is SIGNIFICANT: reported, the run not held.
    let (_root, dir) = case_build("todo-left");
    let (code, v) = verify(&dir, false);
    assert_eq!(code, 0, "{v}");
    let (status, evidence) = status_of(&v, "NO-TODO");
    assert_eq!(status, "FAIL");
    assert!(evidence.contains("report.md:5"), "{evidence}");
}

/// Without `[verdict]` the run never completes by itself: as it stands, a check whose pass has
/// not run waits (exit 0); `--final` judges it finished, and what is missing FAILs (exit 1).
#[test]
fn a_protocol_without_verdict_completes_on_final() {
    let (_root, dir) = case_build("no-results");
    let (code, v) = verify(&dir, false);
    assert_eq!(code, 0, "{v}");
    assert_eq!(v["complete"], false, "{v}");
    assert!(statuses(&v).iter().all(|(_, s, _)| s == "WAITING"), "{v}");
    let (code, v) = verify(&dir, true);
    assert_eq!(code, 1, "{v}");
    let (status, evidence) = status_of(&v, "SCORE");
    assert_eq!(status, "FAIL");
    assert!(
        evidence.contains("no file matches `results.json`"),
        "{evidence}"
    );
    assert_eq!(status_of(&v, "REPORT").0, "PASS");
    // The report says how such a run finishes, not that a verdict is awaited.
    let (d, p) = (dir.to_str().expect("utf-8"), protocol_file());
    let Output { stdout: md, .. } = run(&["verify", d, "--protocol", &p]);
    assert!(
        md.contains("run in progress (the protocol reads no pipeline verdict"),
        "{md}"
    );
    let Output { stdout: md, .. } = run(&["verify", d, "--protocol", &p, "--final"]);
    assert!(
        md.contains("run judged as finished (the protocol reads no pipeline verdict)"),
        "{md}"
    );
    assert!(!md.contains("no verdict yet"), "{md}");
}

/// `watch --exit-with PID` on a protocol without `[verdict]`: the daemon runs until the
/// pipeline's process ends, then judges the run as final and writes its report.
#[test]
fn a_protocol_without_verdict_completes_when_the_pipeline_exits() {
    let (root, dir) = case_build("no-results");
    // The pipeline ends when the test says so (killed), not after a guessed time.
    let mut pipeline = Command::new("sleep")
        .arg("600")
        .spawn()
        .expect("spawn sleep");
    let pid = pipeline.id().to_string();
    let p = protocol_file();
    let mut w = Watch::start(&dir, root.path(), &["--protocol", &p, "--exit-with", &pid]);
    w.until("the first heartbeat", || {
        dir.join("OBSERVER-HEARTBEAT.json").exists()
    });
    assert!(
        !dir.join("OBSERVER-STOP.md").exists(),
        "nothing is due while the run goes on"
    );
    pipeline.kill().expect("end the pipeline");
    pipeline.wait().expect("sleep exits");
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    let report = read(&dir.join("OBSERVER-REPORT.md"));
    assert!(
        report.contains(&format!("(pid {pid}) exited; judged as final")),
        "{report}"
    );
    assert!(
        read(&dir.join("OBSERVER-STOP.md")).contains("SCORE"),
        "{report}"
    );
}

#[test]
fn protocol_test_runs_the_example_fixtures() {
    let d = example();
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&["protocol", "test", d.to_str().unwrap()]);
    assert_eq!(code, 0, "{out}{err}");
    for case in [
        "broken-json",
        "low-score",
        "no-results",
        "not-yet",
        "pass",
        "score-as-string",
        "score-twice",
        "todo-left",
    ] {
        assert!(
            out.lines()
                .any(|l| l.starts_with("ok ") && l.contains(&format!(" {case} ("))),
            "{case}: {out}"
        );
    }
    assert!(out.ends_with("8 case(s): 8 passed, 0 failed\n"), "{out}");
}

/// A wrong expectation is a failed case with a diff and the evidence; an unknown check id is
/// one too; exit 1. A case without `expect.toml` cannot run (exit 2).
#[test]
fn protocol_test_reports_each_mismatch_as_a_diff() {
    let t = tempfile::tempdir().unwrap();
    for case in ["pass", "low-score"] {
        let to = t.path().join(case).join("build");
        fs::create_dir_all(&to).unwrap();
        for e in fs::read_dir(example().join(case).join("build")).unwrap() {
            let e = e.unwrap();
            fs::copy(e.path(), to.join(e.file_name())).unwrap();
        }
    }
    fs::write(
        t.path().join("pass/expect.toml"),
        "stop = false\n[checks]\nSCORE = \"PASS\"\nREPORTS = \"PASS\"\n",
    )
    .unwrap();
    fs::write(
        t.path().join("low-score/expect.toml"),
        "[checks]\nSCORE = \"PASS\"\n",
    )
    .unwrap();
    let dir = t.path().to_str().unwrap();
    let p = protocol_file();
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&["protocol", "test", dir, "--protocol", &p]);
    assert_eq!(code, 1, "{out}{err}");
    assert!(
        out.contains(
            "FAIL  low-score (1 of 1 expectations differ)\n      - SCORE = \"PASS\"\n      + SCORE = \"FAIL\"  # 1 of 1 file(s) fail; results.json:2:12: `/score` = 0.5: expected >= 0.8\n"
        ),
        "{out}"
    );
    assert!(
        out.contains("      - REPORTS = \"PASS\"\n      + (no check `REPORTS` in the protocol)\n"),
        "{out}"
    );
    assert!(out.ends_with("2 case(s): 0 passed, 2 failed\n"), "{out}");

    fs::create_dir(t.path().join("unasserted")).unwrap();
    let Output {
        code, stderr: err, ..
    } = run(&["protocol", "test", dir, "--protocol", &p]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("unasserted/expect.toml"), "{err}");

    // A status that is no status is the expectations file's error, with its place.
    fs::write(
        t.path().join("unasserted/expect.toml"),
        "[checks]\nSCORE = \"PASSED\"\n",
    )
    .unwrap();
    let Output {
        code, stderr: err, ..
    } = run(&["protocol", "test", dir, "--protocol", &p]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("expect.toml:2:9"), "{err}");
}

/// What a protocol without `[verdict]` cannot ask is refused at load, at the check.
#[test]
fn a_protocol_without_verdict_refuses_complete_and_a_bare_parses() {
    let text = fs::read_to_string(example().join("protocol.toml")).unwrap();
    let t = tempfile::tempdir().unwrap();
    let check = |text: &str| {
        let f = t.path().join("p.toml");
        fs::write(&f, text).unwrap();
        run(&["protocol", "check", f.to_str().unwrap()])
    };
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = check(&text);
    assert_eq!(code, 0, "{out}{err}");
    assert!(
        out.contains("ok: protocol `score` 1.0.0 — 1 passes, 4 checks"),
        "{out}"
    );

    let bad = text.replace(
        "predicate = { exists = \"report.md\" }",
        "predicate = { all = [{ exists = \"report.md\" }, { complete = true }] }",
    );
    let Output {
        code, stderr: err, ..
    } = check(&bad);
    assert_eq!(code, 2);
    assert!(
        err.contains("in check `REPORT`: `complete` and `verdict` need a `[verdict]` table"),
        "{err}"
    );
    let line = bad
        .lines()
        .position(|l| l.starts_with("id = \"REPORT\""))
        .unwrap();
    assert!(err.contains(&format!("p.toml:{line}:")), "{line}: {err}");

    let bad = text.replace("{ parses = { files = \"*.json\" } }", "{ parses = true }");
    let Output {
        code, stderr: err, ..
    } = check(&bad);
    assert_eq!(code, 2);
    assert!(err.contains("`parses` needs `files`"), "{err}");

    let bad = text.replace("path = \"/score\"", "path = \"score\"");
    let Output {
        code, stderr: err, ..
    } = check(&bad);
    assert_eq!(code, 2);
    assert!(err.contains("`path` is a JSON pointer"), "{err}");
}

// ---- the JSON Schema -------------------------------------------------------------------------

fn schema() -> jsonschema::Validator {
    let text = fs::read_to_string(repo().join("schema/protocol.schema.json")).unwrap();
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).expect("the protocol schema compiles")
}

fn errors(v: &jsonschema::Validator, toml_text: &str) -> Vec<String> {
    let doc: Value = toml::from_str(toml_text).expect("TOML");
    v.iter_errors(&doc)
        .map(|e| format!("{e} at {}", e.instance_path()))
        .collect()
}

/// Every protocol shipped (the embedded ones and the example) is valid against the schema, and
/// the example's `#:schema` directive (taplo, Even Better TOML) names the schema file.
#[test]
fn the_schema_accepts_every_shipped_protocol() {
    let v = schema();
    let mut files: Vec<PathBuf> = fs::read_dir(repo().join("protocols"))
        .unwrap()
        .map(|e| e.unwrap().path())
        // secrets.toml holds CC-07's secret rules, not a protocol.
        .filter(|p| p.extension().is_some_and(|e| e == "toml") && !p.ends_with("secrets.toml"))
        .collect();
    files.push(example().join("protocol.toml"));
    assert!(files.len() >= 3, "{files:?}");
    for f in &files {
        let text = fs::read_to_string(f).unwrap();
        let errs = errors(&v, &text);
        assert!(errs.is_empty(), "{}: {errs:#?}", f.display());
    }
    let text = fs::read_to_string(example().join("protocol.toml")).unwrap();
    let directive = text.lines().next().unwrap();
    let target = directive
        .strip_prefix("#:schema ")
        .expect("a #:schema first line");
    assert!(example().join(target).is_file(), "{directive}");
}

/// A misspelled key, a predicate that does not exist, and a wrong value type fail the schema
/// (and the loader, which says where).
#[test]
fn the_schema_refuses_misspelled_keys() {
    let v = schema();
    let text = fs::read_to_string(example().join("protocol.toml")).unwrap();
    for (from, to, needle) in [
        (
            "severity = \"blocking\"",
            "severity = \"blocking\"\nseverty = \"blocking\"",
            "severty",
        ),
        ("\">=\" = 0.8", "\"=>\" = 0.8", "=>"),
        (
            "{ exists = \"report.md\" }",
            "{ exist = \"report.md\" }",
            "exist",
        ),
        (
            "title = \"Outputs written\"",
            "titel = \"Outputs written\"",
            "titel",
        ),
        (
            "schema_version = 1",
            "schema_version = 1\nverdit = 1",
            "verdit",
        ),
        (
            "severity = \"blocking\"",
            "severity = \"critical\"",
            "critical",
        ),
    ] {
        assert!(text.contains(from), "{from}");
        let bad = text.replacen(from, to, 1);
        let errs = errors(&v, &bad);
        assert!(!errs.is_empty(), "`{to}` passed the schema");
        assert!(errs.iter().any(|e| e.contains(needle)), "{to}: {errs:#?}");
        let f = tempfile::NamedTempFile::new().unwrap();
        fs::write(f.path(), &bad).unwrap();
        let Output {
            code, stderr: err, ..
        } = run(&["protocol", "check", f.path().to_str().unwrap()]);
        assert_eq!(code, 2, "`{to}` loaded: {err}");
    }
}

/// The README's "Writing your own protocol" is enough: its protocol, copied as it stands, loads
/// and matches every case of `examples/protocol-score`.
#[test]
fn the_readme_protocol_passes_the_example_fixtures() {
    let readme = fs::read_to_string(repo().join("README.md")).unwrap();
    let section = readme
        .split("\n## Writing your own protocol\n")
        .nth(1)
        .expect("the README section");
    let block = section
        .split("```toml\n")
        .nth(1)
        .and_then(|b| b.split("\n```").next())
        .expect("a TOML block");
    let t = tempfile::tempdir().unwrap();
    let file = t.path().join("protocol.toml");
    fs::write(&file, block).unwrap();
    let d = example();
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&[
        "protocol",
        "test",
        d.to_str().unwrap(),
        "--protocol",
        file.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{block}\n{out}{err}");
    assert!(out.ends_with("8 case(s): 8 passed, 0 failed\n"), "{out}");
}
