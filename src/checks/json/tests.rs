use std::fs;
use std::path::Path;

use super::super::{judge, Ctx, Verdict};
use crate::artifacts::{Limits, Snapshot};
use crate::protocol::predicate::Predicate;
use crate::protocol::Protocol;

fn predicate(toml: &str) -> Predicate {
    toml::from_str::<toml::Table>(&format!("p = {toml}")).unwrap()["p"]
        .clone()
        .try_into()
        .unwrap()
}

/// (verdict, observed, details) of `toml` judged against `dir`.
fn judged_with(dir: &Path, toml: &str, limits: Limits) -> (Verdict, String, String) {
    let protocol = Protocol::load("d10").unwrap();
    let snap = Snapshot::scan(dir, limits).unwrap();
    let ctx = Ctx::new(&protocol, &snap);
    let p = predicate(toml);
    if let Predicate::Json(j) = &p {
        j.validate().unwrap();
    }
    let o = judge(&ctx, &p);
    (o.verdict, o.observed.join("; "), o.details.join("\n"))
}

fn judged(dir: &Path, toml: &str) -> (Verdict, String, String) {
    judged_with(dir, toml, Limits::default())
}

fn dir_with(name: &str, text: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join(name), text).unwrap();
    d
}

#[test]
fn numbers_compare_as_numbers_with_the_value_and_its_place() {
    let d = dir_with(
        "results.json",
        "{\n  \"name\": \"run\",\n  \"score\": 0.85\n}\n",
    );
    let (v, _, details) = judged(
        d.path(),
        r#"{ json = { file = "results.json", path = "/score", ">=" = 0.8 } }"#,
    );
    assert_eq!(v, Verdict::Pass, "{details}");
    assert_eq!(details, "results.json:3:12: `/score` = 0.85");
    let (v, observed, details) = judged(
        d.path(),
        r#"{ json = { file = "results.json", path = "/score", ">=" = 0.9 } }"#,
    );
    assert_eq!(v, Verdict::Fail);
    assert_eq!(observed, "1 of 1 file(s) fail");
    assert_eq!(
        details,
        "results.json:3:12: `/score` = 0.85: expected >= 0.9"
    );
    // A value that fails a test is a FAIL `not` turns into a pass ("below 0.9").
    let (v, _, _) = judged(
        d.path(),
        r#"{ not = { json = { file = "results.json", path = "/score", ">=" = 0.9 } } }"#,
    );
    assert_eq!(v, Verdict::Pass);
    // 1e0 == 1, an integer bound against a float, `in` and `<`.
    let d = dir_with(
        "r.json",
        r#"{"n": 1e0, "k": 3, "big": 18446744073709551615}"#,
    );
    for (toml, want) in [
        (
            r#"{ json = { file = "r.json", path = "/n", "==" = 1 } }"#,
            Verdict::Pass,
        ),
        (
            r#"{ json = { file = "r.json", path = "/n", "==" = 1.0 } }"#,
            Verdict::Pass,
        ),
        (
            r#"{ json = { file = "r.json", path = "/n", "!=" = 1 } }"#,
            Verdict::Fail,
        ),
        (
            r#"{ json = { file = "r.json", path = "/k", in = [1, 2, 3] } }"#,
            Verdict::Pass,
        ),
        (
            r#"{ json = { file = "r.json", path = "/k", in = [1, "3"] } }"#,
            Verdict::Fail,
        ),
        (
            r#"{ json = { file = "r.json", path = "/k", "<" = 3 } }"#,
            Verdict::Fail,
        ),
        (
            r#"{ json = { file = "r.json", path = "/k", ">" = 2, "<=" = 3 } }"#,
            Verdict::Pass,
        ),
        (
            r#"{ json = { file = "r.json", path = "/big", "==" = -1 } }"#,
            Verdict::Fail,
        ),
    ] {
        assert_eq!(judged(d.path(), toml).0, want, "{toml}");
    }
}

#[test]
fn a_string_is_never_a_number() {
    let d = dir_with("r.json", r#"{"score": "0.9", "id": "run-42", "n": 5}"#);
    let (v, _, details) = judged(
        d.path(),
        r#"{ json = { file = "r.json", path = "/score", ">=" = 0.8 } }"#,
    );
    assert_eq!(v, Verdict::Fail);
    assert!(
        details.ends_with("expected >= 0.8, found a string, not a number"),
        "{details}"
    );
    assert_eq!(
        judged(
            d.path(),
            r#"{ json = { file = "r.json", path = "/score", "==" = 0.9 } }"#
        )
        .0,
        Verdict::Fail
    );
    assert_eq!(
        judged(
            d.path(),
            r#"{ json = { file = "r.json", path = "/id", matches = '^run-\d+$' } }"#
        )
        .0,
        Verdict::Pass
    );
    let (v, _, details) = judged(
        d.path(),
        r#"{ json = { file = "r.json", path = "/n", matches = '^5$' } }"#,
    );
    assert_eq!(v, Verdict::Fail);
    assert!(details.contains("found a number"), "{details}");
}

#[test]
fn a_missing_value_fails_and_a_missing_file_waits() {
    let d = dir_with("r.json", r#"{"runs": [{"score": 1}], "a/b": {"~": 2}}"#);
    let (v, _, details) = judged(
        d.path(),
        r#"{ json = { file = "r.json", path = "/score", ">=" = 0.8 } }"#,
    );
    assert_eq!(
        (v, details.as_str()),
        (Verdict::Fail, "r.json: no value at `/score`")
    );
    for (path, want) in [
        ("/runs/0/score", Verdict::Pass),
        ("/runs/1/score", Verdict::Fail),
        ("/runs/00/score", Verdict::Fail),
        ("/a~1b/~0", Verdict::Pass),
    ] {
        let toml = format!(r#"{{ json = {{ file = "r.json", path = "{path}" }} }}"#);
        assert_eq!(judged(d.path(), &toml).0, want, "{path}");
    }
    let (v, _, _) = judged(
        d.path(),
        r#"{ json = { file = "r.json", path = "/gone", exists = false } }"#,
    );
    assert_eq!(v, Verdict::Pass);
    let (v, observed, _) = judged(
        d.path(),
        r#"{ json = { file = "other.json", path = "/score", ">=" = 0.8 } }"#,
    );
    assert_eq!(
        (v, observed.as_str()),
        (Verdict::Missing, "no file matches `other.json`")
    );
}

#[test]
fn a_duplicate_key_anywhere_fails_with_its_object() {
    let d = dir_with(
        "r.json",
        r#"{"score": 0.9, "runs": [{"ok": true, "ok": false}]}"#,
    );
    let (v, _, details) = judged(
        d.path(),
        r#"{ json = { file = "r.json", path = "/score", ">=" = 0.8 } }"#,
    );
    assert_eq!(v, Verdict::Fail);
    assert!(
        details.contains("key `ok` written twice in the object at `runs[0]`"),
        "{details}"
    );
}

#[test]
fn a_duplicate_key_fails_with_both_places() {
    let d = dir_with("r.json", "{\"score\": 0.9,\n \"score\": 0.1}");
    for toml in [
        r#"{ json = { file = "r.json", path = "/score", ">=" = 0.8 } }"#,
        r#"{ json = { file = "r.json", path = "/score", "<=" = 0.2 } }"#,
    ] {
        let (v, _, details) = judged(d.path(), toml);
        assert_eq!(v, Verdict::Fail, "{toml}");
        assert_eq!(
                details,
                "r.json:2:2: key `score` written twice in the top-level object (first at r.json:1:2); a reader could take either"
            );
    }
}

#[test]
fn invalid_json_and_bytes_that_are_not_utf8_fail_with_a_place() {
    let d = dir_with("r.json", "{\"score\": 0.9,\n}");
    let (v, _, details) = judged(d.path(), r#"{ json = { file = "r.json" } }"#);
    assert_eq!(v, Verdict::Fail);
    assert!(
        details.starts_with("r.json:2:1: invalid JSON: trailing comma"),
        "{details}"
    );
    // Never a pass under `not`: a file that is not JSON is not "a file without the value".
    let (v, _, _) = judged(
        d.path(),
        r#"{ not = { json = { file = "r.json", path = "/score", ">=" = 0.95 } } }"#,
    );
    assert_eq!(v, Verdict::Fail);
    fs::write(d.path().join("r.json"), b"{\"s\": \"\xff\"}").unwrap();
    let (v, _, details) = judged(d.path(), r#"{ json = { file = "r.json" } }"#);
    assert_eq!(
        (v, details.as_str()),
        (Verdict::Fail, "r.json:1:8: not valid UTF-8, so not JSON")
    );
}

#[test]
fn a_directory_or_fifo_at_the_name_is_present_and_wrong() {
    let d = tempfile::tempdir().unwrap();
    fs::create_dir(d.path().join("r.json")).unwrap();
    let (v, observed, _) = judged(d.path(), r#"{ json = { file = "r.json", path = "/s" } }"#);
    assert_eq!(v, Verdict::Fail);
    assert!(
        observed.starts_with("present and wrong: `r.json`: directory, not a regular file"),
        "{observed}"
    );
    // `not` never makes it a pass.
    let (v, _, _) = judged(
        d.path(),
        r#"{ not = { json = { file = "r.json", path = "/s" } } }"#,
    );
    assert_eq!(v, Verdict::Fail);
}

#[test]
fn a_file_over_the_read_cap_is_inconclusive_never_read() {
    let big = format!("{{\"score\": 0.9, \"pad\": \"{}\"}}", "x".repeat(4096));
    let d = dir_with("r.json", &big);
    let limits = Limits {
        max_read_bytes: 1024,
        ..Limits::default()
    };
    let (v, observed, details) = judged_with(
        d.path(),
        r#"{ json = { file = "r.json", path = "/score", ">=" = 0.8 } }"#,
        limits,
    );
    assert_eq!(v, Verdict::Inconclusive, "{observed}");
    assert!(
        details.contains("over the per-file read cap of 1024 bytes"),
        "{details}"
    );
}

#[test]
fn deep_nesting_is_an_error_not_a_crash() {
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let d = dir_with("r.json", &deep);
    let (v, _, details) = judged(d.path(), r#"{ json = { file = "r.json", path = "/0" } }"#);
    assert_eq!(v, Verdict::Fail);
    assert!(details.contains("recursion limit exceeded"), "{details}");
}

#[test]
fn pointers_and_bounds_are_checked_at_load() {
    let bad = |toml: &str| match predicate(toml) {
        Predicate::Json(j) => j.validate().unwrap_err().to_string(),
        _ => unreachable!(),
    };
    assert!(bad(r#"{ json = { file = "r.json", path = "score" } }"#).contains("`/score`"));
    assert!(bad(r#"{ json = { file = "r.json", path = "/a~2" } }"#).contains("`~`"));
    assert!(bad(r#"{ json = { file = "r.json", ">=" = nan } }"#).contains("finite"));
    assert!(bad(r#"{ json = { file = "r.json", exists = false, "==" = 1 } }"#).contains("exists"));
    let e = toml::from_str::<toml::Table>(r#"p = { json = { file = "r.json", ">==" = 1 } }"#)
        .unwrap()["p"]
        .clone()
        .try_into::<Predicate>()
        .unwrap_err()
        .to_string();
    assert!(e.contains("unknown field `>==`"), "{e}");
}

#[test]
fn parses_judges_the_files_of_a_glob() {
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join("a.json"), "{\"a\": 1}").unwrap();
    fs::write(d.path().join("b.yaml"), "a: [1, 2\n").unwrap();
    fs::write(d.path().join("c.toml"), "a = 1\n").unwrap();
    let (v, observed, details) =
        judged(d.path(), r#"{ parses = { files = ["*.json", "*.toml"] } }"#);
    assert_eq!(
        (v, observed.as_str()),
        (
            Verdict::Pass,
            "2 file(s) parse, 0 of a type with no syntax check"
        ),
        "{details}"
    );
    let (v, observed, details) = judged(d.path(), r#"{ parses = { files = "*" } }"#);
    assert_eq!(
        (v, observed.as_str()),
        (Verdict::Fail, "1 file(s) do not parse"),
        "{details}"
    );
    assert!(details.starts_with("b.yaml:"), "{details}");
    let (v, _, _) = judged(d.path(), r#"{ parses = { files = "*.py" } }"#);
    assert_eq!(v, Verdict::Missing);
}
