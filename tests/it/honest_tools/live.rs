//! The same judgments from a live `referee watch`, started before the work.

use std::fs;

use serde_json::{json, Value};

use super::checkout::{autocrlf_checkout, eol_repo};
use super::tools::{python_build_output, python_package};
use super::*;

// ---- live: the same judgments from `referee watch` ----------------------------------------------

/// What a live referee, started before the work, says of t1: its verdict file, and whether the
/// STOP stands once t1 is judged.
fn live(setup: fn() -> Repo, work: fn(&Repo), args: &[&str]) -> (Repo, Value, bool) {
    let r = setup();
    let logs = r._tmp.path().join("logs");
    fs::create_dir_all(&logs).expect("mkdir");
    let state = format!("--state-dir={}", r.state.display());
    let mut all = vec!["--protocol", "code-change", state.as_str()];
    all.extend_from_slice(args);
    let watch = Watch::start(&r.ws, &logs, &all);
    let hb = r.path(".referee/OBSERVER-HEARTBEAT.json");
    let pid = watch.pid();
    watch.until("the referee is up", || {
        serde_json::from_str::<Value>(&read(&hb)).is_ok_and(|h| h["pid"] == json!(pid))
    });
    work(&r);
    let verdict = r.path(".referee/OBSERVER-VERDICT-t1.json");
    watch.until("t1 is judged", || {
        serde_json::from_str::<Value>(&read(&verdict)).is_ok_and(|v| v["attempt"] == json!(1))
    });
    let v: Value = serde_json::from_str(&read(&verdict)).expect("verdict");
    let stop = r.path(".referee/OBSERVER-STOP.md").is_file();
    drop(watch);
    (r, v, stop)
}

fn live_result<'a>(v: &'a Value, check: &str) -> &'a Value {
    v["results"]
        .as_array()
        .and_then(|r| r.iter().find(|x| x["check"] == json!(check)))
        .unwrap_or_else(|| panic!("no {check} in {v:#}"))
}

#[test]
fn live_python_build_output_is_approved() {
    let (_r, v, stop) = live(
        python_package,
        |r| {
            edit_app(r);
            python_build_output(r);
            r.record("t1", &[], &[APP], &[]);
        },
        &[],
    );
    assert_eq!(v["verdict"], json!("APPROVE"), "{v:#}");
    assert!(!stop, "no STOP: {v:#}");
}

#[test]
fn live_an_extension_module_in_a_protected_modules_place_is_vetoed() {
    let (_r, v, stop) = live(
        Repo::new,
        |r| {
            edit_app(r);
            r.write("src/orchestrator.abi3.so", b"\x7fELF");
            r.record("t1", &["src/orchestrator.abi3.so"], &[APP], &[]);
        },
        &[],
    );
    assert_eq!(v["verdict"], json!("REJECT"), "{v:#}");
    let cc01 = live_result(&v, "CC-01");
    assert_eq!(cc01["status"], json!("FAIL"), "{v:#}");
    assert!(
        cc01.to_string()
            .contains("src/orchestrator.abi3.so (added, shadows `**/orchestrator.py`)"),
        "{cc01:#}"
    );
    assert!(stop, "the STOP stands");
}

#[test]
fn live_a_crlf_checkout_is_no_change_and_one_converted_file_is() {
    let (_r, v, stop) = live(
        autocrlf_checkout,
        |r| {
            r.write(APP, "def main():\r\n    return 2\r\n");
            r.record("t1", &[], &[APP], &[]);
        },
        &[],
    );
    assert_eq!(v["verdict"], json!("APPROVE"), "{v:#}");
    assert!(!stop);
    let (_r, v, stop) = live(
        eol_repo,
        |r| {
            edit_app(r);
            let crlf = String::from_utf8(r.read(PROTECTED))
                .expect("utf-8")
                .replace('\n', "\r\n");
            r.write(PROTECTED, crlf);
            r.record("t1", &[], &[APP], &[]);
        },
        &[],
    );
    assert_eq!(v["verdict"], json!("REJECT"), "{v:#}");
    assert_eq!(live_result(&v, "CC-01")["status"], json!("FAIL"), "{v:#}");
    assert!(stop, "the STOP stands");
}

/// Live, the caches' `.gitignore` files written after the referee has seen the folders' other
/// files (as added: attempt 1, which lists none of them, is REJECTed): each folder is looked at
/// again once its `.gitignore` lands, ignored, and attempt 2 is APPROVEd.
#[test]
fn live_tool_caches_that_come_to_ignore_themselves_are_approved() {
    let r = Repo::new();
    let logs = r._tmp.path().join("logs");
    fs::create_dir_all(&logs).expect("mkdir");
    let state = format!("--state-dir={}", r.state.display());
    let watch = Watch::start(&r.ws, &logs, &["--protocol", "code-change", state.as_str()]);
    let verdict = r.path(".referee/OBSERVER-VERDICT-t1.json");
    let judged = |attempt: u64| {
        serde_json::from_str::<Value>(&read(&verdict)).is_ok_and(|v| v["attempt"] == json!(attempt))
    };
    edit_app(&r);
    super::tools::tool_caches(&r, true);
    for p in [
        ".pytest_cache/.gitignore",
        ".ruff_cache/.gitignore",
        ".venv/.gitignore",
    ] {
        fs::remove_file(r.path(p)).expect("rm");
    }
    r.record("t1", &[], &[APP], &[]);
    watch.until("t1 attempt 1 is judged", || judged(1));
    let v: Value = serde_json::from_str(&read(&verdict)).expect("verdict");
    assert_eq!(
        v["verdict"],
        json!("REJECT"),
        "the caches are unlisted: {v:#}"
    );

    super::tools::tool_caches(&r, true);
    r.record_attempt("t1", 2, &[], &[APP], &[]);
    watch.until("t1 attempt 2 is judged", || judged(2));
    let v: Value = serde_json::from_str(&read(&verdict)).expect("verdict");
    assert_eq!(v["verdict"], json!("APPROVE"), "{v:#}\n{}", watch.output());
    assert!(!r.path(".referee/OBSERVER-STOP.md").is_file(), "no STOP");
}
