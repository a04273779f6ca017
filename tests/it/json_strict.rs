//! JSON read as strictly as its meaning (issue 16 §3): a key written twice in the gate results
//! is read two ways (serde_json keeps the last, a human may read the first), so it is a FAIL of
//! the entry or the file with line:column, never a silent last-wins. Each attack is made for
//! real: `"source": "manual"` then `"source": "gate-runner"` in one entry, `"Source"` beside
//! `"source"`, and two `gates` arrays (the first with a manual entry). Against `verify --final`
//! (OBS-24 FAILs with the position, exit 1, a FAIL headline) and a live `watch` (the STOP names
//! OBS-24 and the key, `status` 1, the final exit 1, the report's headline FAIL).

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::util::Output;
use crate::watch::{exit_code, gates_text, read, run, status, Watch, GATES, STOP, WAIT};

const HONEST: &str = r#"{"id": "GR-48", "result": "PASS", "source": "gate-runner"}"#;

/// The fixture's gate results with GR-48's entry written as `entry`.
fn with_entry(entry: &str) -> String {
    let text = gates_text();
    assert!(text.contains(HONEST), "the fixture has GR-48 as expected");
    text.replacen(HONEST, entry, 1)
}

/// One attack: the gate results as written, and what the evidence must quote.
struct Attack {
    text: fn() -> String,
    /// `key` twice, at `line:column` of the second.
    key: &'static str,
    at: &'static str,
}

fn source_twice() -> Attack {
    Attack {
        text: || {
            with_entry(
                r#"{"id": "GR-48", "result": "PASS", "source": "manual", "source": "gate-runner"}"#,
            )
        },
        key: "`source` twice",
        at: "p3a-gate-results.json:47:59",
    }
}

fn source_in_two_cases() -> Attack {
    Attack {
        text: || {
            with_entry(
                r#"{"id": "GR-48", "result": "PASS", "Source": "manual", "source": "gate-runner"}"#,
            )
        },
        key: "`source` twice (first as `Source`",
        at: "p3a-gate-results.json:47:59",
    }
}

fn two_gates_arrays() -> Attack {
    Attack {
        // A hand-made array first, the runner's second: serde_json would read only the second.
        text: || {
            let honest = gates_text();
            let body = honest.trim_start().strip_prefix('{').expect("an object");
            format!("{{\n  \"gates\": [{{\"id\": \"GR-48\", \"result\": \"PASS\", \"source\": \"manual\"}}],{body}")
        },
        key: "`gates` twice",
        at: "p3a-gate-results.json:3:3",
    }
}

/// OBS-24's result (main pass) from `verify --final --format json`.
fn obs_24(dir: &Path) -> Value {
    let d = dir.to_str().expect("utf-8");
    let Output {
        stdout: out,
        stderr: err,
        ..
    } = run(&["verify", d, "--final", "--format", "json"]);
    let doc: Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("verify json: {e}\n{err}"));
    doc["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|r| r["check"] == "OBS-24" && r["pass"] == "2")
        .unwrap_or_else(|| panic!("no OBS-24 in {out}"))
        .clone()
}

fn headline(text: &str) -> &str {
    text.lines()
        .find(|l| l.starts_with("**"))
        .unwrap_or_default()
}

fn against_verify(a: &Attack) {
    let (_tmp, dir) = crate::formats::build("base = \"clean\"\n");
    assert_eq!(obs_24(&dir)["status"], "PASS");
    fs::write(dir.join(GATES), (a.text)()).expect("write gates");
    let r = obs_24(&dir);
    assert_eq!(
        r["status"], "FAIL",
        "a key read two ways is not valid: {r:#}"
    );
    let evidence = r["evidence"].to_string();
    assert!(evidence.contains(a.key), "{r:#}");
    assert!(evidence.contains(a.at), "{r:#}");
    let d = dir.to_str().expect("utf-8");
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&["verify", d, "--final"]);
    assert_eq!(code, 1, "{err}\n{out}");
    assert!(headline(&out).starts_with("**FAIL: "), "{out}");
}

fn against_watch(a: &Attack) {
    let (tmp, dir) = crate::watch::build("audit-done");
    let mut w = Watch::start(&dir, tmp.path(), &[]);
    w.until("the referee is live and content", || {
        status(&dir, true).code == 0
    });
    fs::write(dir.join(GATES), (a.text)()).expect("write gates");
    w.until("the STOP names the key read two ways", || {
        let stop = read(&dir.join(STOP));
        stop.contains("OBS-24") && stop.contains(a.key) && stop.contains(a.at)
    });
    assert_eq!(status(&dir, true).code, 1, "{}", w.output());
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    let report = read(&dir.join("OBSERVER-REPORT.md"));
    assert!(headline(&report).starts_with("**FAIL: "), "{report}");
}

#[test]
fn a_source_written_twice_fails_verify() {
    against_verify(&source_twice());
}

#[test]
fn a_source_written_twice_stops_watch() {
    against_watch(&source_twice());
}

#[test]
fn a_source_in_two_cases_fails_verify() {
    against_verify(&source_in_two_cases());
}

#[test]
fn a_source_in_two_cases_stops_watch() {
    against_watch(&source_in_two_cases());
}

#[test]
fn two_gates_arrays_fail_verify() {
    against_verify(&two_gates_arrays());
}

#[test]
fn two_gates_arrays_stop_watch() {
    against_watch(&two_gates_arrays());
}
