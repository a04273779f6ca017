//! D10 fails closed (issue 16 §1): a due BLOCKING check the referee cannot decide
//! holds the pipeline like a FAIL. The attack is made for real on a finished build: the gate
//! results padded past the read cap. (A FIFO in their place is no longer undecidable: it is the
//! gate results present and wrong, a FAIL, see `artifact_types`.) Against `verify --final` (exit 1,
//! the headline, the report written with `--write`) and a live `watch` (the STOP saying
//! CANNOT VERIFY and what to make readable, `status` 1, the final exit 1).

use std::fs;
use std::path::Path;

use crate::util::Output;
use crate::watch::{exit_code, read, run, status, Watch, GATES, STOP, WAIT};

/// A finished build whose gate results the referee cannot judge, made so by `attack`.
fn build(attack: fn(&Path)) -> (tempfile::TempDir, std::path::PathBuf) {
    let (tmp, dir) = crate::formats::build("base = \"clean\"\n");
    attack(&dir.join(GATES));
    (tmp, dir)
}

/// JSON whitespace until the file is over the 16 KiB cap the tests give the referee: the same
/// JSON to a parser, and the same entries (`"source": "manual"` among them) to a human.
fn pad_past_the_cap(gates: &Path) {
    let text = fs::read_to_string(gates).expect("gates");
    let manual = text.replacen("\"source\": \"gate-runner\"", "\"source\": \"manual\"", 1);
    fs::write(gates, format!("{}{manual}", " ".repeat(32 << 10))).expect("pad");
}

fn against_verify(attack: fn(&Path)) {
    let (_tmp, dir) = build(attack);
    let d = dir.to_str().expect("utf-8");
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&["verify", d, "--final", "--max-read-bytes", "16KiB"]);
    assert_eq!(code, 1, "cannot decide is not fine: {err}\n{out}");
    let headline = out
        .lines()
        .find(|l| l.starts_with("**"))
        .unwrap_or_default();
    assert!(headline.starts_with("**FAIL: "), "{out}");
    assert!(headline.contains("cannot be verified"), "{out}");
    let Output {
        code, stderr: err, ..
    } = run(&[
        "verify",
        d,
        "--final",
        "--max-read-bytes",
        "16KiB",
        "--write",
    ]);
    assert_eq!(code, 1, "{err}");
    let report = read(&dir.join("OBSERVER-REPORT.md"));
    let headline = report
        .lines()
        .find(|l| l.starts_with("**"))
        .unwrap_or_default();
    assert!(headline.contains("cannot be verified"), "{report}");
}

fn against_watch(attack: fn(&Path)) {
    // A build in progress (the weaver has not written its verdict), so the referee keeps
    // watching.
    let (tmp, dir) = crate::watch::build("audit-done");
    let mut w = Watch::start(&dir, tmp.path(), &["--max-read-bytes", "16KiB"]);
    w.until("the referee is live", || status(&dir, true).code == 0);
    attack(&dir.join(GATES));
    w.until("the STOP stands for what cannot be read", || {
        let stop = read(&dir.join(STOP));
        stop.contains("(CANNOT VERIFY)") && stop.contains("make the evidence above readable")
    });
    assert_eq!(status(&dir, true).code, 1, "{}", w.output());
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    let report = read(&dir.join("OBSERVER-REPORT.md"));
    let headline = report
        .lines()
        .find(|l| l.starts_with("**"))
        .unwrap_or_default();
    assert!(headline.starts_with("**FAIL: "), "{report}");
}

#[test]
fn gate_results_padded_past_the_read_cap_hold_verify() {
    against_verify(pad_past_the_cap);
}

#[test]
fn gate_results_padded_past_the_read_cap_hold_watch() {
    against_watch(pad_past_the_cap);
}
