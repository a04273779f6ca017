//! What a STOP rests on stays readable: a text rule (OBS-21) broken in a live run, then
//! fixed, still says in the pass file, the report and the event log which file, line and term
//! raised it, marked resolved; and the STOP lists the files its check read (every one up to
//! 50, then the first 50 and how many more, all of them in the pass file).

use std::fs;

use serde_json::Value;

use crate::util::Output;
use crate::watch::{build, exit_code, payloads, read, run, Watch, STOP, WAIT};

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

/// The `**Evidence:**` bullets of the STOP block of `check`.
fn stop_evidence(stop: &str, check: &str) -> Vec<String> {
    let block = stop
        .split("\n---\n")
        .find(|b| b.contains(&format!("**Check:** {check} ")))
        .unwrap_or_else(|| panic!("no {check} block:\n{stop}"));
    let evidence = block.split("**Evidence:**").nth(1).unwrap_or_default();
    let evidence = evidence
        .split("**Required Action:**")
        .next()
        .unwrap_or_default();
    evidence
        .lines()
        .filter_map(|l| l.strip_prefix("- "))
        .map(String::from)
        .collect()
}

/// OBS-21 reads all nine auditor reports: the STOP a finished run leaves lists the nine (it
/// stopped at six).
#[test]
fn the_stop_lists_every_file_its_check_read() {
    let (_root, dir) = build("clean");
    let clean = read(&dir.join(AUDITOR_C));
    fs::write(dir.join(AUDITOR_C), contaminate(&clean)).expect("contaminate");
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&["watch", dir.to_str().unwrap(), "--timeout", "50"]);
    assert_eq!(code, 1, "{out}{err}");
    let stop = read(&dir.join(STOP));
    let evidence = stop_evidence(&stop, "OBS-21");
    for letter in 'A'..='I' {
        let name = format!("`p3b-pa-auditor-{letter}.md` (");
        assert!(
            evidence.iter().any(|e| e.starts_with(&name)),
            "{name} not in the STOP's evidence:\n{stop}"
        );
    }
}

/// Past 50 files the STOP lists the first 50 and says how many more there are, and where.
#[test]
fn a_very_long_file_list_is_cut_with_a_count() {
    let (_root, dir) = build("clean");
    let clean = read(&dir.join(AUDITOR_C));
    fs::write(dir.join(AUDITOR_C), contaminate(&clean)).expect("contaminate");
    for n in 0..60 {
        fs::write(dir.join(format!("p3b-pa-auditor-X{n:02}.md")), &clean).expect("extra");
    }
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&["watch", dir.to_str().unwrap(), "--timeout", "50"]);
    assert_eq!(code, 1, "{out}{err}");
    let stop = read(&dir.join(STOP));
    let evidence = stop_evidence(&stop, "OBS-21");
    let files = evidence
        .iter()
        .filter(|e| e.starts_with("`p3b-pa-auditor-"))
        .count();
    assert_eq!(files, 50, "{stop}");
    assert!(
        evidence
            .iter()
            .any(|e| e == "… 19 more files (69 in all), every one in `OBSERVER-PASS-3.md`"),
        "{stop}"
    );
    let pass = read(&dir.join("OBSERVER-PASS-3.md"));
    let section = pass
        .split("\n## ")
        .find(|s| s.starts_with("OBS-21: "))
        .unwrap_or_else(|| panic!("no OBS-21 section:\n{pass}"));
    assert_eq!(
        section.matches("- `p3b-pa-auditor-").count(),
        69,
        "{section}"
    );
}
