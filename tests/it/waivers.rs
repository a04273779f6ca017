//! `--waivers FILE`: a waived FAIL raises no STOP and does not count for exit 1 but stays
//! visible in every format; an expired waiver is ignored and reported; a malformed file exits 2
//! at its line and column before anything runs; `watch` reloads a changed file, logs it, and
//! resolves or raises the STOP it decides.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::formats::{mixed, run, sarif, workspace};
use crate::util::Output;

/// OBS-01 cannot be verified in [`mixed`]'s build: accepted by a human.
const WAIVE_OBS01: &str = r#"
[[waiver]]
check = "OBS-01"
reason = "scan time lost with the old tracker (INC-43)"
approved_by = "jane.doe"
expires = 2099-12-31
"#;

const WAIVE_OBS27: &str = r#"# the gate runner is down this week
[[waiver]]
check = "OBS-27"
pass = "2"
reason = "gate runner down, gates re-run by hand (INC-42)"
approved_by = "jane.doe"
expires = 2099-12-31
"#;

const EXPIRED_OBS27: &str = r#"[[waiver]]
check = "OBS-27"
reason = "old exception"
approved_by = "bob"
expires = 2020-01-01
"#;

fn waiver_file(dir: &Path, text: &str) -> PathBuf {
    let path = dir.join("waivers.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn verify(dir: &Path, waivers: &Path, format: &str) -> Output {
    run(&[
        "verify",
        dir.to_str().unwrap(),
        "--waivers",
        waivers.to_str().unwrap(),
        "--format",
        format,
    ])
}

fn result<'a>(v: &'a Value, pass: &str, check: &str) -> &'a Value {
    v["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["pass"] == pass && r["check"] == check)
        .unwrap()
}

#[test]
fn a_waived_blocking_fail_exits_0_and_stays_visible_in_every_format() {
    let (tmp, dir) = mixed("manual");
    let w = waiver_file(tmp.path(), WAIVE_OBS27);
    let Output { code, .. } = run(&["verify", dir.to_str().unwrap()]);
    assert_eq!(code, 1, "unwaived");

    // OBS-01 cannot be verified in this build (no EXPERIENTIAL_SCAN time): a due BLOCKING
    // check the referee cannot decide holds like a FAIL , so waiving OBS-27 alone is
    // not enough; a human accepts OBS-01 too.
    let Output {
        code, stdout: json, ..
    } = verify(&dir, &w, "json");
    assert_eq!(code, 1, "OBS-01 cannot be verified");
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["summary"]["cannot_verify"], 1, "{}", v["summary"]);
    assert_eq!(v["stop"], true);
    let w = waiver_file(tmp.path(), &format!("{WAIVE_OBS27}{WAIVE_OBS01}"));
    let Output {
        code,
        stdout: json,
        stderr: err,
        ..
    } = verify(&dir, &w, "json");
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["summary"]["cannot_verify"], 0);
    assert_eq!(v["stop"], false);
    assert_eq!(v["summary"]["fail"], 1);
    assert_eq!(v["summary"]["fail_blocking"], 0);
    assert_eq!(v["summary"]["waived"], 1);
    let r = result(&v, "2", "OBS-27");
    assert_eq!(r["status"], "FAIL", "a waived FAIL stays a FAIL");
    assert_eq!(r["waiver"]["approved_by"], "jane.doe");
    assert_eq!(r["waiver"]["expires"], "2099-12-31");
    assert_eq!(r["waiver"]["at"], format!("{}:2", w.display()));
    assert_eq!(v["waivers"]["file"], w.display().to_string());
    assert_eq!(v["waivers"]["count"], 2);
    assert!(
        result(&v, "R", "OBS-27").get("waiver").is_none(),
        "only FAILs"
    );

    let Output {
        code, stdout: md, ..
    } = verify(&dir, &w, "md");
    assert_eq!(code, 0);
    assert!(md.contains("### Waivers"), "{md}");
    assert!(
        md.contains("| 2 | OBS-27 | BLOCKING | gate runner down, gates re-run by hand (INC-42) | jane.doe | 2099-12-31 |"),
        "{md}"
    );

    let Output {
        code, stdout: text, ..
    } = verify(&dir, &w, "sarif");
    assert_eq!(code, 0);
    let v = sarif(&text);
    let r = v["runs"][0]["results"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["ruleId"] == "OBS-27")
        .unwrap();
    assert_eq!(r["level"], "error", "still the FAIL it is");
    assert_eq!(r["suppressions"][0]["kind"], "external");
    assert_eq!(r["suppressions"][0]["status"], "accepted");
    assert!(r["suppressions"][0]["justification"]
        .as_str()
        .unwrap()
        .contains("INC-42"));

    let Output {
        code, stdout: xml, ..
    } = verify(&dir, &w, "junit");
    assert_eq!(code, 0);
    assert!(
        xml.contains("<property name=\"waiver.approved_by\" value=\"jane.doe\"/>"),
        "{xml}"
    );
    assert!(
        !xml.contains("<failure"),
        "a waived FAIL fails no CI job: {xml}"
    );

    let Output {
        code, stdout: out, ..
    } = verify(&dir, &w, "github");
    assert_eq!(code, 0);
    assert!(
        out.lines()
            .any(|l| l.starts_with("::notice file=") && l.contains("OBS-27 FAIL waived")),
        "{out}"
    );
    assert!(!out.contains("::error"), "{out}");
}

#[test]
fn a_waiver_for_another_pass_or_an_expired_one_does_not_apply() {
    let (tmp, dir) = mixed("manual");
    let w = waiver_file(
        tmp.path(),
        &WAIVE_OBS27.replace("pass = \"2\"", "pass = \"R\""),
    );
    let Output {
        code, stdout: json, ..
    } = verify(&dir, &w, "json");
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert!(result(&v, "2", "OBS-27").get("waiver").is_none());

    let w = waiver_file(tmp.path(), EXPIRED_OBS27);
    let Output {
        code,
        stdout: json,
        stderr: err,
        ..
    } = verify(&dir, &w, "json");
    assert_eq!(code, 1, "an expired waiver is ignored");
    assert!(
        err.contains("referee: warning: waiver for OBS-27")
            && err.contains("expired on 2020-01-01; ignored"),
        "{err}"
    );
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["stop"], true);
    assert!(result(&v, "2", "OBS-27").get("waiver").is_none());
    assert_eq!(v["waivers"]["expired"][0]["check"], "OBS-27");
    assert_eq!(
        v["waivers"]["expired"][0]["at"],
        format!("{}:1", w.display())
    );
    let Output {
        code, stdout: md, ..
    } = verify(&dir, &w, "md");
    assert_eq!(code, 1);
    assert!(md.contains("Expired waivers (ignored):"), "{md}");
}

#[test]
fn a_malformed_waiver_file_exits_2_at_its_place_before_anything_runs() {
    let (tmp, dir) = mixed("manual");
    let cases = [
        (
            WAIVE_OBS27.replace("approved_by", "approver"),
            ":6:1:",
            "approver",
        ),
        (
            WAIVE_OBS27.replace("2099-12-31", "2099-02-30"),
            ":7:",
            "date",
        ),
        (
            WAIVE_OBS27.replace("2099-12-31", "\"next week\""),
            ":7:11:",
            "must be a date",
        ),
        (
            WAIVE_OBS27.replace("\"OBS-27\"", "\"OBS-99\""),
            ":3:9:",
            "unknown check `OBS-99`",
        ),
    ];
    for (text, place, what) in cases {
        let w = waiver_file(tmp.path(), &text);
        let before = std::fs::read_dir(&dir).unwrap().count();
        let out = run(&[
            "verify",
            dir.to_str().unwrap(),
            "--write",
            "--waivers",
            w.to_str().unwrap(),
        ]);
        assert_eq!(out.code, 2, "{text}: {out}");
        let expected = format!("referee: {}{place}", w.display());
        assert!(
            out.stderr.starts_with(&expected),
            "{expected} in {}",
            out.stderr
        );
        assert!(out.stderr.contains(what), "{what} in {}", out.stderr);
        assert!(out.stdout.is_empty(), "nothing printed: {}", out.stdout);
        assert_eq!(
            std::fs::read_dir(&dir).unwrap().count(),
            before,
            "nothing written"
        );
    }
    let Output {
        code, stderr: err, ..
    } = verify(&dir, &tmp.path().join("missing.toml"), "md");
    assert_eq!(code, 2);
    assert!(err.contains("cannot read waiver file"), "{err}");
}

#[test]
fn a_waiver_in_a_code_change_workspace_keeps_the_attempt_from_rejection() {
    let (tmp, ws, base) = workspace();
    let w = waiver_file(
        tmp.path(),
        "[[waiver]]\ncheck = \"CC-01\"\npass = \"t1\"\nreason = \"the task is the orchestrator fix\"\napproved_by = \"lead\"\nexpires = 2099-01-01\n",
    );
    let args = |w: Option<&Path>| {
        let mut a = vec![
            "verify".to_string(),
            ws.display().to_string(),
            "--protocol".into(),
            "code-change".into(),
            "--baseline-dir".into(),
            base.display().to_string(),
            "--format".into(),
            "json".into(),
        ];
        if let Some(w) = w {
            a.extend(["--waivers".into(), w.display().to_string()]);
        }
        a
    };
    let go = |a: Vec<String>| run(&a.iter().map(String::as_str).collect::<Vec<_>>());
    let Output {
        code, stdout: json, ..
    } = go(args(None));
    assert_eq!(code, 1);
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["verdicts"][0]["verdict"], "REJECT");

    let Output {
        code,
        stdout: json,
        stderr: err,
        ..
    } = go(args(Some(&w)));
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&json).unwrap();
    assert_eq!(
        v["verdicts"][0]["verdict"], "MINOR_ISSUES",
        "only the SIGNIFICANT summary FAIL grades it"
    );
    assert_eq!(result(&v, "t1", "CC-01")["status"], "FAIL");
    assert_eq!(result(&v, "t1", "CC-01")["waiver"]["approved_by"], "lead");
}

/// Writes `text` to `path` the way an editor saving atomically would.
fn save(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

#[test]
fn watch_reloads_a_changed_waiver_file_and_resolves_or_raises_the_stop() {
    use crate::watch::{build, count, manual_gates, payloads, Watch, GATES, STOP};
    let (root, dir) = build("audit-done");
    let logs = root.path().join("logs");
    std::fs::create_dir(&logs).unwrap();
    let w = root.path().join("waivers.toml");
    save(&w, "# nothing waived yet\n");
    std::fs::write(dir.join(GATES), manual_gates(1)).unwrap();
    let stop = dir.join(STOP);

    let mut watch = Watch::start(&dir, &logs, &["--waivers", w.to_str().unwrap()]);
    watch.until("the STOP is raised", || stop.exists());

    save(&w, WAIVE_OBS27);
    watch.until("the waived FAIL's STOP is resolved", || !stop.exists());
    watch.until("the resolution is logged", || {
        count(&dir, "stop_resolved", "OBS-27") == 1
    });
    let reloads = payloads(&dir, "waivers_reloaded");
    let reload = &reloads[0];
    assert_eq!(reload["why"], "changed");
    assert_eq!(reload["count"], 1);
    assert_eq!(reload["file"], w.display().to_string());

    // A file that no longer parses keeps the waivers loaded before.
    save(&w, "[[waiver]]\ncheck = \"OBS-27\"\nfrobnicate = 1\n");
    watch.until("the bad file is logged", || {
        payloads(&dir, "waivers_reloaded")
            .iter()
            .any(|e| e["why"] == "invalid")
    });
    let invalid = payloads(&dir, "waivers_reloaded")
        .into_iter()
        .find(|e| e["why"] == "invalid")
        .unwrap();
    assert!(
        invalid["error"].as_str().unwrap().contains(":3:1:"),
        "{invalid}"
    );
    assert!(!stop.exists(), "the previous waivers still apply");

    // The waiver expired (as if its day had passed): ignored, the STOP stands again.
    save(&w, EXPIRED_OBS27);
    watch.until("the STOP is raised again", || stop.exists());
    watch.until("raising it is logged", || {
        count(&dir, "stop_raised", "OBS-27") == 2
    });
    let reloads = payloads(&dir, "waivers_reloaded");
    let expired = reloads.last().unwrap();
    assert_eq!(expired["why"], "changed");
    assert!(
        expired["expired"][0]
            .as_str()
            .unwrap()
            .contains("expired on 2020-01-01"),
        "{expired}"
    );

    watch.signal(libc::SIGTERM);
    let status = watch.wait(crate::watch::WAIT);
    assert_eq!(status.code(), Some(1), "{}", watch.output());
    let report = std::fs::read_to_string(dir.join("OBSERVER-REPORT.md")).unwrap();
    assert!(report.contains("### Waivers"), "{report}");
    assert!(report.contains("Expired waivers (ignored):"), "{report}");
    assert!(
        report.contains("WAIVED ("),
        "the history shows the waiver: {report}"
    );
    assert!(report.contains("waiver gone: STOP raised"), "{report}");
}

#[test]
fn watch_refuses_a_malformed_waiver_file_before_anything_runs() {
    use crate::watch::build;
    let (root, dir) = build("audit-done");
    let w = waiver_file(
        root.path(),
        &WAIVE_OBS27.replace("2099-12-31", "2099-99-01"),
    );
    let before = std::fs::read_dir(&dir).unwrap().count();
    let Output {
        code, stderr: err, ..
    } = run(&[
        "watch",
        dir.to_str().unwrap(),
        "--waivers",
        w.to_str().unwrap(),
        "--timeout",
        "5s",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.starts_with(&format!("referee: {}:7:", w.display())),
        "{err}"
    );
    assert_eq!(
        std::fs::read_dir(&dir).unwrap().count(),
        before,
        "nothing written"
    );
}

/// A waiver file the pipeline can write is the pipeline waiving its own failures: inside the
/// build directory, or a link there pointing at a file outside (the pipeline could repoint it,
/// and `watch` reads its waivers again at every heartbeat), `verify` and `watch` refuse it
/// before anything runs (exit 2, no report, no verdict) and the FAIL still stands without it.
#[test]
fn a_waiver_file_inside_the_watched_directory_is_refused() {
    let (tmp, dir) = mixed("manual");
    let inside = waiver_file(&dir, WAIVE_OBS27);
    let outside = waiver_file(tmp.path(), WAIVE_OBS27);
    let link = dir.join("waivers-link.toml");
    std::os::unix::fs::symlink(&outside, &link).unwrap();
    for w in [&inside, &link] {
        let out = run(&[
            "verify",
            dir.to_str().unwrap(),
            "--waivers",
            w.to_str().unwrap(),
        ]);
        assert_eq!(out.code, 2, "{out}");
        assert!(
            out.stderr.contains("inside the watched directory")
                && out.stderr.contains("could waive its own failures"),
            "{out}"
        );
        assert!(!dir.join("OBSERVER-REPORT.md").exists(), "{out}");
        let watch = run(&[
            "watch",
            dir.to_str().unwrap(),
            "--waivers",
            w.to_str().unwrap(),
            "--timeout",
            "5s",
        ]);
        assert_eq!(watch.code, 2, "{watch}");
        assert!(
            watch.stderr.contains("inside the watched directory"),
            "{watch}"
        );
    }
    // The same waivers outside are believed: the FAILs are waived.
    std::fs::remove_file(&inside).unwrap();
    std::fs::remove_file(&link).unwrap();
    let outside = waiver_file(tmp.path(), &format!("{WAIVE_OBS27}{WAIVE_OBS01}"));
    let ok = run(&[
        "verify",
        dir.to_str().unwrap(),
        "--waivers",
        outside.to_str().unwrap(),
    ]);
    assert_eq!(ok.code, 0, "{ok}");
    let unwaived = run(&["verify", dir.to_str().unwrap()]);
    assert_eq!(unwaived.code, 1, "{unwaived}");
}
