//! What caused a STOP stays readable after it is resolved: a text rule (OBS-21) broken in a
//! live run, then fixed. The pass file, the report and the event log still say which file,
//! which line and which term raised it, marked resolved; and the STOP names every file that
//! fails, however many.

use std::fs;

use serde_json::Value;

use crate::watch::{build, exit_code, payloads, read, Watch, STOP, WAIT};

const AUDITOR_C: &str = "p3b-pa-auditor-C.md";

/// Line 7 of auditor C, rewritten to carry pipeline vocabulary (`gate runner`).
fn contaminate(text: &str) -> String {
    let mut lines: Vec<&str> = text.lines().collect();
    lines[6] = "The gate runner said the column was fine.";
    lines.join("\n") + "\n"
}

#[test]
fn a_resolved_stop_keeps_its_file_line_and_term() {
    let (root, dir) = build("audit-done");
    let mut w = Watch::start(&dir, root.path(), &[]);
    w.until("pass 3 ran", || dir.join("OBSERVER-PASS-3.md").exists());
    let clean = read(&dir.join(AUDITOR_C));
    fs::write(dir.join(AUDITOR_C), contaminate(&clean)).expect("contaminate");
    w.until("STOP raised for OBS-21", || {
        read(&dir.join(STOP)).contains("OBS-21")
    });
    let stop = read(&dir.join(STOP));
    let cause = format!("{AUDITOR_C}:7");
    assert!(
        stop.contains(&cause) && stop.contains("gate runner"),
        "{stop}"
    );

    fs::write(dir.join(AUDITOR_C), &clean).expect("fix");
    w.until("the STOP is resolved", || !dir.join(STOP).exists());
    let pass = dir.join("OBSERVER-PASS-3.md");
    w.until("the pass file notes the resolution", || {
        read(&pass).contains("OBS-21: RESOLVED after STOP")
    });
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 0, "{}", w.output());

    // The pass file: the resolution says what had raised the STOP.
    let pass = read(&pass);
    let history = pass.split("## History").nth(1).unwrap_or_default();
    assert!(
        history.contains(&cause) && history.contains("gate runner"),
        "the resolved STOP lost its cause in the pass file:\n{pass}"
    );

    // The report: the BLOCKING failure, resolved, with its file, line and term.
    let report = read(&dir.join("OBSERVER-REPORT.md"));
    let row = report
        .lines()
        .find(|l| l.starts_with("| OBS-21 |"))
        .unwrap_or_else(|| panic!("no OBS-21 row:\n{report}"));
    assert!(row.contains("Yes ("), "{row}");
    assert!(
        row.contains(&cause) && row.contains("gate runner"),
        "the resolved STOP lost its cause in the report:\n{row}"
    );

    // The event log: the FAIL event carries the cause.
    let fail: Vec<Value> = payloads(&dir, "result_changed")
        .into_iter()
        .filter(|p| p["check"] == "OBS-21" && p["to"] == "FAIL")
        .collect();
    assert_eq!(fail.len(), 1, "{fail:?}");
    let text = fail[0].to_string();
    assert!(
        text.contains(&cause) && text.contains("gate runner"),
        "the FAIL event lost its cause: {text}"
    );
}
