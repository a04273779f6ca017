//! `verify --format sarif` and `--format github` place each failing instance at its own file
//! and line: a check that fails in nine auditor reports is nine results and nine annotations,
//! each at the report (and line) that fails, never all at the check's first file.

use std::path::Path;

use serde_json::Value;

use crate::builder::fixtures_dir;
use crate::formats::{build, run, sarif};
use crate::util::Output;

/// A case of `fixtures/cases/` as a build document (its `exit` and `expect` are the case's).
fn case(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let path = fixtures_dir().join("cases").join(format!("{name}.toml"));
    let text = std::fs::read_to_string(&path).expect("case file");
    let mut doc: toml::Table = toml::from_str(&text).expect("case toml");
    doc.remove("exit");
    doc.remove("expect");
    build(&toml::to_string(&doc).expect("toml"))
}

/// Two auditor reports (C and F) without their Completion Manifest: OBS-23 FAIL twice.
const TWO_MANIFESTS_MISSING: &str = "base = \"clean\"\n[[replace]]\npath = \"p3b-pa-auditor-C.md\"\nfind = \"## Completion Manifest\"\nwith = \"## Notes\"\ncount = 1\n[[replace]]\npath = \"p3b-pa-auditor-F.md\"\nfind = \"## Completion Manifest\"\nwith = \"## Notes\"\ncount = 1\n";

/// (uri, line) of every SARIF result of `check`, sorted.
fn sarif_places(dir: &Path, check: &str) -> Vec<(String, Option<u64>)> {
    let Output {
        stdout: text,
        stderr: err,
        ..
    } = run(&["verify", dir.to_str().unwrap(), "--format", "sarif"]);
    let v = sarif(&text);
    let results = v["runs"][0]["results"].as_array().expect("results");
    let mut places: Vec<(String, Option<u64>)> = results
        .iter()
        .filter(|r| r["ruleId"] == check)
        .map(|r| {
            let loc = &r["locations"][0]["physicalLocation"];
            let uri = loc["artifactLocation"]["uri"]
                .as_str()
                .unwrap_or_else(|| panic!("a result without a file: {r}\n{err}"));
            (uri.to_string(), loc["region"]["startLine"].as_u64())
        })
        .collect();
    // Each instance is its own result, told apart by its fingerprint.
    let mut prints: Vec<&Value> = results
        .iter()
        .filter(|r| r["ruleId"] == check)
        .map(|r| &r["partialFingerprints"]["refereeCheckInstance/v1"])
        .collect();
    prints.sort_by_key(|p| p.to_string());
    prints.dedup();
    assert_eq!(prints.len(), places.len(), "fingerprints repeat: {text}");
    places.sort();
    places
}

/// (file relative to `dir`, line) of every GitHub annotation of `check`, sorted.
fn github_places(dir: &Path, check: &str) -> Vec<(String, Option<u64>)> {
    let Output { stdout: out, .. } = run(&["verify", dir.to_str().unwrap(), "--format", "github"]);
    let prefix = format!("{}/", dir.display());
    let mut places: Vec<(String, Option<u64>)> = out
        .lines()
        .filter(|l| l.starts_with("::") && l.contains(&format!(" {check} ")))
        .map(|l| {
            let props = l.split_once(' ').unwrap().1.split_once("::").unwrap().0;
            let mut file = None;
            let mut line = None;
            for p in props.split(',') {
                if let Some(f) = p.strip_prefix("file=") {
                    file = Some(f.strip_prefix(&prefix).unwrap_or(f).to_string());
                }
                if let Some(n) = p.strip_prefix("line=") {
                    line = Some(n.parse().unwrap());
                }
            }
            (file.unwrap_or_else(|| panic!("no file: {l}")), line)
        })
        .collect();
    places.sort();
    places
}

fn auditors(letters: &str, line: Option<u64>) -> Vec<(String, Option<u64>)> {
    letters
        .chars()
        .map(|c| (format!("p3b-pa-auditor-{c}.md"), line))
        .collect()
}

#[test]
fn every_failing_report_is_its_own_result_at_its_line() {
    let (_tmp, dir) = case("obs-21-fail-every-term");
    let want = auditors("ABCDEFGHI", Some(4));
    assert_eq!(sarif_places(&dir, "OBS-21"), want);
    assert_eq!(github_places(&dir, "OBS-21"), want);
}

#[test]
fn a_missing_manifest_is_placed_at_the_report_that_lacks_it() {
    let (_tmp, dir) = build(TWO_MANIFESTS_MISSING);
    let want = auditors("CF", None);
    assert_eq!(sarif_places(&dir, "OBS-23"), want);
    assert_eq!(github_places(&dir, "OBS-23"), want);
}

#[test]
fn a_report_newer_than_the_integrative_is_placed_at_that_report() {
    let (_tmp, dir) = case("obs-20-fail-auditor-newer");
    let want = auditors("E", None);
    assert_eq!(sarif_places(&dir, "OBS-20"), want);
    assert_eq!(github_places(&dir, "OBS-20"), want);
}

#[test]
fn an_unexpected_report_is_placed_at_that_report() {
    let (_tmp, dir) = case("obs-19-fail-tenth-report");
    let want = auditors("J", None);
    assert_eq!(sarif_places(&dir, "OBS-19"), want);
    assert_eq!(github_places(&dir, "OBS-19"), want);
}
