//! `verify --format junit | sarif | github | json` as CI meets them: each status maps as the
//! README says, exit codes are those of the markdown report, SARIF passes the SARIF 2.1.0 schema
//! and its fingerprints match across runs, and evidence cannot break out of an annotation.

use std::path::{Path, PathBuf};

use crate::util::{Output, TestCommand};
use quick_junit::{NonSuccessKind, Report, TestCaseStatus};
use serde_json::Value;

use crate::builder::{Build, BuildDoc};

pub(crate) use crate::util::run;

/// A D10 build from a build document (`base = …` plus edits).
#[track_caller]
pub fn build(doc: &str) -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    // A match, not a closure: the panic then points at the caller's line.
    match BuildDoc::parse(doc, "test")
        .and_then(|d| Build::from_doc(&d))
        .and_then(|b| b.materialise(tmp.path()))
    {
        Ok(dir) => (tmp, dir),
        Err(e) => panic!("build: {e}"),
    }
}

/// The clean build with a hand-entered gate result (OBS-27 FAIL, BLOCKING, at
/// `p3a-gate-results.json`) whose source is `source`, and a scan recorded without a time (OBS-01
/// INCONCLUSIVE); pass R is SKIP.
pub fn mixed(source: &str) -> (tempfile::TempDir, PathBuf) {
    let (tmp, dir) =
        build("base = \"clean\"\n[[field]]\nname = \"EXPERIENTIAL_SCAN\"\ntime = \"\"\n");
    let gates = dir.join("p3a-gate-results.json");
    let text = std::fs::read_to_string(&gates).unwrap();
    let source = serde_json::to_string(source).unwrap();
    std::fs::write(&gates, text.replacen("\"gate-runner\"", &source, 1)).unwrap();
    (tmp, dir)
}

fn verify(dir: &Path, format: &str) -> Output {
    run(&["verify", dir.to_str().unwrap(), "--format", format])
}

/// (status, message, type) of each testcase, by `pass:check`.
fn junit_cases(xml: &str) -> Vec<(String, String, Option<String>)> {
    let report = Report::deserialize_from_str(xml).expect("valid JUnit XML");
    let mut out = Vec::new();
    for suite in &report.test_suites {
        for case in &suite.test_cases {
            let class = case.classname.as_ref().map(|c| c.as_str()).unwrap_or("");
            let check = case.name.as_str().split(':').next().unwrap_or("");
            let key = format!("{}:{check}", class.rsplit("pass-").next().unwrap_or(""));
            let (what, message) = match &case.status {
                TestCaseStatus::Success { .. } => ("success", None),
                TestCaseStatus::NonSuccess { kind, message, .. } => (
                    match kind {
                        NonSuccessKind::Failure => "failure",
                        NonSuccessKind::Error => "error",
                    },
                    message.as_ref(),
                ),
                TestCaseStatus::Skipped { message, .. } => ("skipped", message.as_ref()),
            };
            out.push((
                key,
                what.to_string(),
                message.map(|m| m.as_str().to_string()),
            ));
        }
    }
    out
}

fn case<'a>(
    cases: &'a [(String, String, Option<String>)],
    key: &str,
) -> &'a (String, String, Option<String>) {
    cases
        .iter()
        .find(|c| c.0 == key)
        .unwrap_or_else(|| panic!("no testcase {key} in {cases:?}"))
}

#[test]
fn junit_maps_fail_to_failure_waiting_and_skip_to_skipped_inconclusive_to_error() {
    let (_tmp, dir) = mixed("manual");
    let Output {
        code,
        stdout: xml,
        stderr: err,
        ..
    } = verify(&dir, "junit");
    assert_eq!(code, 1, "an unwaived BLOCKING FAIL exits 1: {err}");
    let cases = junit_cases(&xml);
    assert_eq!(cases.len(), 53, "one testcase per check instance");
    let fail = case(&cases, "2:OBS-27");
    assert_eq!(fail.1, "failure");
    let msg = fail.2.as_deref().unwrap();
    assert!(msg.starts_with("BLOCKING FAIL: expected: "), "{msg}");
    assert!(
        msg.contains("1 of 48 entries have a forbidden source"),
        "{msg}"
    );
    let inconclusive = case(&cases, "2:OBS-01");
    assert_eq!(inconclusive.1, "error", "{inconclusive:?}");
    assert!(inconclusive.2.as_deref().unwrap().contains("INCONCLUSIVE"));
    assert_eq!(
        case(&cases, "R:OBS-13").1,
        "skipped",
        "pass R never ran: SKIP"
    );
    assert_eq!(case(&cases, "0:OBS-16").1, "success");
    assert!(
        xml.contains("<property name=\"file\" value=\"p3a-gate-results.json\"/>"),
        "{xml}"
    );

    let tmp = tempfile::tempdir().unwrap();
    let dir = Build::named("in-progress")
        .unwrap()
        .materialise(tmp.path())
        .unwrap();
    let Output {
        code, stdout: xml, ..
    } = verify(&dir, "junit");
    assert_eq!(code, 0, "nothing failed");
    let cases = junit_cases(&xml);
    let waiting = case(&cases, "2:OBS-01");
    assert_eq!(waiting.1, "skipped");
    assert!(
        waiting.2.as_deref().unwrap().contains("WAITING"),
        "{waiting:?}"
    );
    assert!(
        cases.iter().all(|c| c.1 == "success" || c.1 == "skipped"),
        "{cases:?}"
    );
}

#[test]
fn github_annotations_map_statuses_and_escape_hostile_evidence() {
    let hostile = "manual 100% ::error::forged,x:y\r\nsecond";
    let (_tmp, dir) = mixed(hostile);
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = verify(&dir, "github");
    assert_eq!(code, 1, "{err}");
    let lines: Vec<&str> = out.lines().collect();
    let error: Vec<&&str> = lines.iter().filter(|l| l.starts_with("::error ")).collect();
    assert_eq!(error.len(), 1, "{out}");
    let (props, message) = error[0]["::error ".len()..].split_once("::").unwrap();
    let gates = dir.join("p3a-gate-results.json");
    assert!(
        props.starts_with(&format!("file={}", gates.display())),
        "{props}"
    );
    assert!(
        props.contains("title=d10 OBS-27 FAIL (pass 2%2C BLOCKING)%3A "),
        "a property escapes , and : — {props}"
    );
    // The evidence escapes the percent sign; the record's CR LF arrive escaped already.
    assert!(
        message.contains("manual 100%25 ::error::forged,x:y"),
        "{message}"
    );
    assert!(!message.contains("100% "), "{message}");
    assert!(
        lines
            .iter()
            .all(|l| l.starts_with("::") || l.starts_with("referee d10: ")),
        "no evidence starts a line of its own: {out}"
    );
    let warning = lines
        .iter()
        .find(|l| l.starts_with("::warning ") && l.contains("OBS-01"))
        .unwrap_or_else(|| panic!("INCONCLUSIVE is a warning: {out}"));
    assert!(warning.contains("file="), "{warning}");
    assert!(!out.contains("OBS-13"), "SKIP prints nothing: {out}");
    assert!(
        lines.last().unwrap().contains("1 FAIL (1 BLOCKING"),
        "{out}"
    );
}

/// The clean build with pipeline vocabulary in auditor report G, line 4: OBS-21 FAIL (BLOCKING).
const VOCABULARY: &str = "base = \"clean\"\n[[replace]]\npath = \"p3b-pa-auditor-G.md\"\nfind = \"**Viewports examined:**\"\nwith = \"**Context:** the content map says seven sections.\\n**Viewports examined:**\"\ncount = 1\n";

/// The clean build with an empty BV-06 row: OBS-16 FAIL (SIGNIFICANT), at the tracker.
const EMPTY_BV06: &str = "base = \"clean\"\n[[field]]\nname = \"BV-06\"\nvalue = \"\"\n";

#[test]
fn github_points_at_the_line_the_evidence_names() {
    let (_tmp, dir) = build(VOCABULARY);
    let Output {
        code, stdout: out, ..
    } = verify(&dir, "github");
    assert_eq!(code, 1, "{out}");
    let line = out
        .lines()
        .find(|l| l.contains("OBS-21"))
        .unwrap_or_else(|| panic!("{out}"));
    let report = dir.join("p3b-pa-auditor-G.md");
    assert!(
        line.starts_with(&format!("::error file={},line=4,", report.display())),
        "{line}"
    );

    let (_tmp, dir) = build(EMPTY_BV06);
    let Output {
        code, stdout: out, ..
    } = verify(&dir, "github");
    assert_eq!(code, 0, "a SIGNIFICANT FAIL does not exit 1: {out}");
    let line = out
        .lines()
        .find(|l| l.contains("OBS-16"))
        .unwrap_or_else(|| panic!("{out}"));
    assert!(line.starts_with("::warning file="), "{line}");
    assert!(
        line.contains("EXECUTION-TRACKER.md,title="),
        "no line in this evidence: {line}"
    );
}

fn schema() -> jsonschema::Validator {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/schemas/sarif-2.1.0-rtm.5.json"),
    )
    .unwrap();
    // The rtm.5 schema's `run.language` pattern has a stray `]` that the crate's meta-validation
    // rejects as a regex; it is the pattern the final 2.1.0 schema has (the referee never writes
    // `language`).
    let bad = r#""^[a-zA-Z]{2}|^[a-zA-Z]{2}-[a-zA-Z]{2}]?$""#;
    assert!(text.contains(bad), "the vendored schema changed");
    let text = text.replace(bad, r#""^[a-zA-Z]{2}(-[a-zA-Z]{2})?$""#);
    let schema: Value = serde_json::from_str(&text).unwrap();
    jsonschema::validator_for(&schema).expect("the SARIF schema compiles")
}

/// Parses SARIF output and checks it against the SARIF 2.1.0 schema.
pub fn sarif(text: &str) -> Value {
    let v: Value = serde_json::from_str(text).expect("valid JSON");
    let errors: Vec<String> = schema()
        .iter_errors(&v)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "SARIF schema errors: {errors:#?}");
    v
}

fn sarif_result<'a>(v: &'a Value, pass: &str, check: &str) -> &'a Value {
    v["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ruleId"] == check && r["properties"]["pass"] == pass)
        .unwrap_or_else(|| panic!("no result {pass}:{check}"))
}

#[test]
fn sarif_is_schema_valid_with_rules_levels_and_locations() {
    let (_tmp, dir) = mixed("manual");
    let Output {
        code, stdout: text, ..
    } = verify(&dir, "sarif");
    assert_eq!(code, 1);
    let v = sarif(&text);
    assert_eq!(v["version"], "2.1.0");
    let run = &v["runs"][0];
    let rules = run["tool"]["driver"]["rules"].as_array().unwrap();
    let obs27 = rules.iter().find(|r| r["id"] == "OBS-27").unwrap();
    assert_eq!(obs27["defaultConfiguration"]["level"], "error");
    assert!(!obs27["help"]["text"].as_str().unwrap().is_empty());
    let fail = sarif_result(&v, "2", "OBS-27");
    assert_eq!(fail["level"], "error");
    assert_eq!(fail["kind"], "fail");
    assert_eq!(
        fail["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "p3a-gate-results.json"
    );
    assert_eq!(
        rules[fail["ruleIndex"].as_u64().unwrap() as usize]["id"],
        "OBS-27"
    );
    let base = run["originalUriBaseIds"]["BUILD_DIR"]["uri"]
        .as_str()
        .unwrap();
    let canon = std::fs::canonicalize(&dir).unwrap();
    assert_eq!(base, format!("file://{}/", canon.display()));
    let inconclusive = sarif_result(&v, "2", "OBS-01");
    assert_eq!(inconclusive["kind"], "review");
    assert_eq!(inconclusive["level"], "none");
    let results = run["results"].as_array().unwrap();
    assert!(
        results
            .iter()
            .all(|r| r["properties"]["status"] != "PASS" && r["properties"]["status"] != "SKIP"),
        "only FAIL and INCONCLUSIVE are results"
    );

    // A SIGNIFICANT FAIL is a warning.
    let (_tmp, dir) = build(EMPTY_BV06);
    let Output {
        code, stdout: text, ..
    } = verify(&dir, "sarif");
    assert_eq!(code, 0);
    let v = sarif(&text);
    let r = sarif_result(&v, "0", "OBS-16");
    assert_eq!(r["level"], "warning");
    let loc = &r["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "EXECUTION-TRACKER.md");

    // Located at the line the evidence names.
    let (_tmp, dir) = build(VOCABULARY);
    let v = sarif(&verify(&dir, "sarif").stdout);
    let loc = &sarif_result(&v, "3", "OBS-21")["locations"][0]["physicalLocation"];
    assert_eq!(loc["artifactLocation"]["uri"], "p3b-pa-auditor-G.md");
    assert_eq!(loc["region"]["startLine"], 4);
}

#[test]
fn sarif_fingerprints_match_across_runs_and_differ_between_results() {
    let (_tmp, dir) = mixed("manual");
    let prints = |text: &str| -> Vec<(String, String)> {
        let v = sarif(text);
        v["runs"][0]["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| {
                (
                    format!("{}:{}", r["properties"]["pass"], r["ruleId"]),
                    r["partialFingerprints"]["refereeCheckInstance/v1"]
                        .as_str()
                        .unwrap()
                        .to_string(),
                )
            })
            .collect()
    };
    let first = prints(&verify(&dir, "sarif").stdout);
    // The evidence text changes (another hand-entered source); the identity does not.
    let gates = dir.join("p3a-gate-results.json");
    let text = std::fs::read_to_string(&gates).unwrap();
    std::fs::write(&gates, text.replacen("\"manual\"", "\"by hand\"", 1)).unwrap();
    let second = prints(&verify(&dir, "sarif").stdout);
    assert!(first.len() >= 2, "{first:?}");
    assert_eq!(first, second);
    let mut distinct: Vec<&String> = first.iter().map(|p| &p.1).collect();
    distinct.sort();
    distinct.dedup();
    assert_eq!(distinct.len(), first.len(), "{first:?}");
}

#[test]
fn json_build_dir_and_paths_are_absolute() {
    let (tmp, dir) = mixed("manual");
    let rel = dir.strip_prefix(tmp.path()).unwrap();
    let out = TestCommand::new()
        .current_dir(tmp.path())
        .args(["verify", rel.to_str().unwrap(), "--format", "json"])
        .assert_exit(1);
    let v: Value = serde_json::from_str(&out.stdout).unwrap();
    let canon = std::fs::canonicalize(&dir).unwrap();
    assert_eq!(v["build_dir"], canon.display().to_string());
    let r = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["check"] == "OBS-27")
        .unwrap();
    let f = &r["evidence"]["files"][0];
    assert_eq!(f["path"], "p3a-gate-results.json", "path stays relative");
    assert_eq!(
        f["abs_path"],
        canon.join("p3a-gate-results.json").display().to_string()
    );
    for a in v["artifacts"].as_array().unwrap() {
        let abs = a["abs_path"].as_str().unwrap();
        assert!(Path::new(abs).is_absolute() && abs.ends_with(a["path"].as_str().unwrap()));
    }
}

/// A code-change workspace (plain directory with a pristine copy) whose one task touches a
/// protected file: CC-01 FAIL (BLOCKING) and CC-08 FAIL (SIGNIFICANT summary).
pub fn workspace() -> (tempfile::TempDir, PathBuf, PathBuf) {
    use referee::artifacts::fsread::sha256_hex as sha256;
    let tmp = tempfile::tempdir().unwrap();
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/code-change/workspace");
    let base = tmp.path().join("base");
    let ws = tmp.path().join("ws");
    for d in [&base, &ws] {
        copy_tree(&src, d);
    }
    let file = "app/orchestrator.py";
    let before = std::fs::read(ws.join(file)).unwrap();
    std::fs::write(ws.join(file), "def next_task(queue):\n    return None\n").unwrap();
    let after = std::fs::read(ws.join(file)).unwrap();
    let record = serde_json::json!({
        "task_id": "t1", "status": "pending_review", "description": "a task", "attempt": 1,
        "summary": "did it",
        "changes": {"added": [], "modified": [file], "removed": []},
        "pre_hashes": {file: sha256(&before)}, "post_hashes": {file: sha256(&after)},
    });
    std::fs::create_dir(ws.join(".tasks")).unwrap();
    std::fs::write(ws.join(".tasks/t1.json"), record.to_string()).unwrap();
    (tmp, ws, base)
}

fn copy_tree(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from) {
        let e = e.unwrap();
        let dest = to.join(e.path().strip_prefix(from).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

#[test]
fn every_format_works_for_the_code_change_protocol() {
    let (_tmp, ws, base) = workspace();
    let args = |f: &'static str| {
        vec![
            "verify".to_string(),
            ws.display().to_string(),
            "--protocol".into(),
            "code-change".into(),
            "--baseline-dir".into(),
            base.display().to_string(),
            "--format".into(),
            f.into(),
        ]
    };
    let go = |f| {
        let a = args(f);
        run(&a.iter().map(String::as_str).collect::<Vec<_>>())
    };
    let Output {
        code,
        stdout: text,
        stderr: err,
        ..
    } = go("sarif");
    assert_eq!(code, 1, "{err}");
    let v = sarif(&text);
    let cc01 = sarif_result(&v, "t1", "CC-01");
    assert_eq!(cc01["level"], "error");
    assert_eq!(
        cc01["locations"][0]["physicalLocation"]["artifactLocation"]["uri"],
        "app/orchestrator.py"
    );
    assert_eq!(sarif_result(&v, "t1", "CC-08")["level"], "warning");

    let Output {
        code, stdout: xml, ..
    } = go("junit");
    assert_eq!(code, 1);
    let cases = junit_cases(&xml);
    assert_eq!(case(&cases, "t1:CC-01").1, "failure");

    let Output {
        code, stdout: out, ..
    } = go("github");
    assert_eq!(code, 1);
    assert!(
        out.lines()
            .any(|l| l.starts_with("::error file=") && l.contains("CC-01")),
        "{out}"
    );

    let Output {
        code, stdout: json, ..
    } = go("json");
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&json).unwrap();
    let canon = std::fs::canonicalize(&ws).unwrap();
    assert_eq!(v["build_dir"], canon.display().to_string());
    let r = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["check"] == "CC-01")
        .unwrap();
    assert_eq!(
        r["pass"], "t1",
        "a task attempt's results are keyed by its task id"
    );
}

#[test]
fn the_schema_check_rejects_a_broken_log() {
    let (_tmp, dir) = mixed("manual");
    let mut v = sarif(&verify(&dir, "sarif").stdout);
    assert!(schema().is_valid(&v));
    v["runs"][0]["results"][0]["level"] = "fatal".into();
    assert!(!schema().is_valid(&v), "an unknown level is not SARIF");
    v["runs"][0]["results"][0]["level"] = "error".into();
    v["version"] = "2.0.0".into();
    assert!(!schema().is_valid(&v), "only version 2.1.0");
}
