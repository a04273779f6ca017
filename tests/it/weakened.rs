//! CC-10 through the binary (issue 32 part 6): a real git workspace in a tempdir, a worker's
//! attempt that skips a test, removes an assertion, lowers a coverage gate or weakens CI, and
//! `referee verify --protocol code-change --write`: the verdict file's status, evidence and the
//! exit code; a reason in the record's `weakened` excuses the path; `weakened_severity` turns
//! the check down or off.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde_json::{json, Value};

use crate::code_change::{git, git_workspace, put_record, record, verdict};
use crate::util::Output;
use crate::watch::{read, run};

const TEST: &str = "tests/test_app.py";
const TEST_V1: &str = "from src.app import main\n\n\ndef test_main():\n    assert main() == 1\n\n\ndef test_again():\n    assert main() != 2\n";
const CI: &str = ".github/workflows/ci.yml";
const CI_V1: &str = "name: CI\non: [push, pull_request]\njobs:\n  test:\n    runs-on: ubuntu-latest\n    steps:\n      - uses: actions/checkout@v4\n      - name: Lint\n        run: ruff check .\n      - name: Test\n        run: pytest --cov=src --cov-fail-under=90\n";

/// A git workspace with `TEST` and `CI` committed beside the app.
fn workspace() -> (tempfile::TempDir, std::path::PathBuf) {
    let (root, ws, _logs) = git_workspace();
    for (p, text) in [(TEST, TEST_V1), (CI, CI_V1)] {
        fs::create_dir_all(ws.join(p).parent().expect("parent")).expect("mkdir");
        fs::write(ws.join(p), text).expect("write");
    }
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-q", "-m", "tests and CI"]);
    (root, ws)
}

/// The worker writes `edits`, and records them as task `t1` attempt 1, with `extra` fields.
fn attempt(ws: &Path, edits: &[(&str, &str)], extra: Value) {
    let base = BTreeMap::from([(TEST, TEST_V1), (CI, CI_V1)]);
    for (p, text) in edits {
        fs::write(ws.join(p), text).expect("write");
    }
    let paths: Vec<&str> = edits.iter().map(|(p, _)| *p).collect();
    record(ws, "t1", 1, &paths, &base);
    let path = ws.join(".tasks/t1.json");
    let mut doc: Value = serde_json::from_str(&read(&path)).expect("record");
    if let (Some(d), Some(e)) = (doc.as_object_mut(), extra.as_object()) {
        d.extend(e.clone());
    }
    put_record(ws, "t1", &doc.to_string());
}

fn verify(ws: &Path, extra: &[&str]) -> (i32, Value, String) {
    let mut args = vec![
        "verify",
        ws.to_str().expect("utf-8"),
        "--protocol",
        "code-change",
        "--write",
    ];
    args.extend_from_slice(extra);
    let Output {
        code,
        stdout,
        stderr,
        ..
    } = run(&args);
    (code, verdict(ws, "t1"), format!("{stdout}{stderr}"))
}

fn cc10(v: &Value) -> Value {
    v["results"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["check"] == "CC-10"))
        .cloned()
        .unwrap_or(Value::Null)
}

#[test]
fn a_skipped_test_is_a_blocking_fail_with_its_line() {
    let (_root, ws) = workspace();
    let skipped = TEST_V1.replace(
        "def test_again",
        "@pytest.mark.skip(reason=\"flaky\")\ndef test_again",
    );
    attempt(&ws, &[(TEST, &skipped)], json!({}));
    let (code, v, out) = verify(&ws, &[]);
    assert_eq!(code, 1, "{out}");
    assert_eq!(v["verdict"], "REJECT", "{v}");
    assert!(
        v["reasons"].to_string().contains("weakened_tests_or_gates"),
        "{v}"
    );
    let r = cc10(&v);
    assert_eq!(r["status"], "FAIL", "{r}");
    assert_eq!(r["severity"], "BLOCKING", "{r}");
    let ev = r["evidence"].to_string();
    assert!(
        ev.contains("tests/test_app.py:8: test skipped: `pytest.mark.skip` added"),
        "{ev}"
    );
    // The Markdown verdict shows it too.
    let md = read(&ws.join(".referee/OBSERVER-VERDICT-t1.md"));
    assert!(
        md.contains("CC-10") && md.contains("tests/test_app.py:8"),
        "{md}"
    );
}

#[test]
fn a_reason_in_the_record_excuses_the_path_and_is_shown() {
    let (_root, ws) = workspace();
    let fewer = "from src.app import main\n\n\ndef test_main():\n    assert main() == 1\n";
    attempt(
        &ws,
        &[(TEST, fewer)],
        json!({"weakened": {"tests/test_app.py": "test_again tested a removed feature"}}),
    );
    let (code, v, out) = verify(&ws, &[]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(v["verdict"], "APPROVE", "{v}");
    let r = cc10(&v);
    assert_eq!(r["status"], "PASS", "{r}");
    let ev = r["evidence"].to_string();
    assert!(
        ev.contains("excused: tests/test_app.py:8 (baseline): test removed: `test_again`"),
        "{ev}"
    );
    assert!(ev.contains("test_again tested a removed feature"), "{ev}");

    // A reason for another path excuses nothing; a malformed field is a FAIL that says why.
    attempt(
        &ws,
        &[(TEST, fewer)],
        json!({"weakened": {"tests/other.py": "no"}}),
    );
    let (code, v, _) = verify(&ws, &[]);
    assert_eq!(
        (code, cc10(&v)["status"].clone()),
        (1, json!("FAIL")),
        "{v}"
    );
    attempt(&ws, &[(TEST, fewer)], json!({"weakened": "because"}));
    let (code, v, _) = verify(&ws, &[]);
    assert_eq!(code, 1);
    assert!(
        cc10(&v)["evidence"]
            .to_string()
            .contains("must be an object of path"),
        "{v}"
    );
}

#[test]
fn ci_and_coverage_gates_weakened() {
    let (_root, ws) = workspace();
    let weaker = CI_V1
        .replace("      - name: Lint\n        run: ruff check .\n", "")
        .replace("--cov-fail-under=90", "--cov-fail-under=50")
        .replace(
            "        run: pytest",
            "        continue-on-error: true\n        run: pytest",
        );
    attempt(&ws, &[(CI, &weaker)], json!({}));
    let (code, v, out) = verify(&ws, &[]);
    assert_eq!(code, 1, "{out}");
    let ev = cc10(&v)["evidence"].to_string();
    for want in [
        ".github/workflows/ci.yml:4: CI weakened: job `test`: 1 step(s) removed: `Lint`",
        ".github/workflows/ci.yml:9: CI weakened: `continue-on-error: true` added",
        ".github/workflows/ci.yml:10: coverage gate lowered: `--cov-fail-under` lowered from 90 to 50",
    ] {
        assert!(ev.contains(want), "{want}\n{ev}");
    }
}

#[test]
fn the_severity_is_a_protocol_variable() {
    let (_root, ws) = workspace();
    let skipped = TEST_V1.replace("    assert main() != 2\n", "    pytest.skip(\"later\")\n");
    attempt(&ws, &[(TEST, &skipped)], json!({}));
    let (code, v, out) = verify(&ws, &["--set", "weakened_severity=significant"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(v["verdict"], "MINOR_ISSUES", "{v}");
    assert_eq!(cc10(&v)["status"], "FAIL");
    assert_eq!(cc10(&v)["severity"], "SIGNIFICANT");
    let (code, v, out) = verify(&ws, &["--set", "weakened_severity=off"]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(v["verdict"], "APPROVE", "{v}");
    assert_eq!(cc10(&v)["status"], "SKIP");
    assert!(
        cc10(&v)["evidence"]
            .to_string()
            .contains("weakened_severity = \\\"off\\\""),
        "{v}"
    );
    let Output { code, stderr, .. } = run(&[
        "verify",
        ws.to_str().expect("utf-8"),
        "--protocol",
        "code-change",
        "--set",
        "weakened_severity=lenient",
    ]);
    assert_eq!(code, 2);
    assert!(stderr.contains("`weakened_severity = \"lenient\"`: a severity is \"blocking\", \"significant\" or \"off\""), "{stderr}");
}

#[test]
fn honest_work_on_tests_is_approved() {
    let (_root, ws) = workspace();
    // A test added, one renamed, an assertion rewritten, a CI step added, an action bumped.
    let more = TEST_V1.replace("def test_again", "def test_not_two")
        + "\n\ndef test_type():\n    assert isinstance(main(), int)\n";
    let ci = CI_V1.replace("checkout@v4", "checkout@v5") + "      - run: mypy src\n";
    attempt(&ws, &[(TEST, &more), (CI, &ci)], json!({}));
    let (code, v, out) = verify(&ws, &[]);
    assert_eq!(code, 0, "{out}");
    assert_eq!(v["verdict"], "APPROVE", "{v}");
    assert_eq!(cc10(&v)["status"], "PASS", "{v}");
}

/// Commits of real repositories (fixtures/weakened/real-commits.jsonl, labelled by review),
/// each replayed as an attempt: its files before committed in a git workspace, its files after
/// in the work tree. CC-10 FAILs exactly the commits that weaken tests or gates.
#[test]
fn real_commits_are_judged_as_reviewed() {
    let text =
        read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/weakened/real-commits.jsonl"));
    let mut seen = 0;
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        let c: Value = serde_json::from_str(line).expect("fixture line");
        let id = format!(
            "{} {}",
            c["repo"].as_str().unwrap_or("?"),
            c["commit"].as_str().unwrap_or("?")
        );
        let root = tempfile::tempdir().expect("tempdir");
        let ws = root.path().join("ws");
        fs::create_dir_all(&ws).expect("mkdir");
        git(&ws, &["init", "-q"]);
        let files = c["files"].as_array().expect("files");
        let put = |side: &str| {
            for f in files {
                let p = ws.join(f["path"].as_str().expect("path"));
                match f[side].as_str() {
                    Some(t) => {
                        fs::create_dir_all(p.parent().expect("parent")).expect("mkdir");
                        fs::write(&p, t).expect("write");
                    }
                    None => {
                        let _ = fs::remove_file(&p);
                    }
                }
            }
        };
        put("old");
        fs::write(ws.join(".keep"), "").expect("write");
        git(&ws, &["add", "-A"]);
        git(&ws, &["commit", "-q", "-m", "before"]);
        put("new");
        let list = |side: &str, absent: &str| -> Vec<&str> {
            files
                .iter()
                .filter(|f| f[side].is_string() && f[absent].is_null())
                .filter_map(|f| f["path"].as_str())
                .collect()
        };
        let modified: Vec<&str> = files
            .iter()
            .filter(|f| f["old"].is_string() && f["new"].is_string())
            .filter_map(|f| f["path"].as_str())
            .collect();
        let doc = json!({
            "task_id": "t1", "status": "pending_review", "attempt": 1,
            "summary": "Here's what I did: the commit.",
            "changes": {"added": list("new", "old"), "modified": modified, "removed": list("old", "new")},
        });
        put_record(&ws, "t1", &doc.to_string());
        let (_, v, out) = verify(&ws, &[]);
        let r = cc10(&v);
        let want = if c["weakens"] == "true" {
            "FAIL"
        } else {
            "PASS"
        };
        assert_eq!(r["status"], want, "{id}: {}\n{out}", r["evidence"]);
        seen += 1;
    }
    assert!(seen >= 20, "the sample holds {seen} commits");
}
