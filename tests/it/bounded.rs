//! Bounded cost whatever the worker writes: a diff of any size is judged in about linear time,
//! so a protected edit made while a rewritten 100,000-line file is being judged is vetoed at
//! once (the Myers diff the referee used before took minutes on such a file, and every event
//! behind it waited). Through the binary, with real git and a live `watch`; the deadlines
//! are the suite's generous waits, not speed targets (those are in `bench/`).

use std::collections::BTreeMap;
use std::fs;

use crate::code_change::{git, git_workspace, judged, record, start, stop, verdict, PROTECTED};
use crate::util::run;

const BIG: &str = "src/big.py";

fn lines(f: impl Fn(usize) -> String) -> String {
    (0..100_000).map(f).collect()
}

/// A task rewrites every line of a 100,000-line file; right after its record, a protected file
/// is edited. The veto stands well within the suite's wait, and the task's verdict comes too
/// (judged, not skipped): REJECT, since the protected edit is a change no record declares.
#[test]
fn a_protected_edit_is_vetoed_while_a_huge_rewrite_is_judged() {
    let (_root, ws, logs) = git_workspace();
    let old = lines(|i| format!("x{i} = {i}\n"));
    fs::write(ws.join(BIG), &old).expect("write");
    git(&ws, &["add", BIG]);
    git(&ws, &["commit", "-q", "-m", "big"]);
    let mut w = start(&ws, &logs, &[]);

    fs::write(ws.join(BIG), lines(|i| format!("y{i} = {}\n", i * 7))).expect("rewrite");
    let base = BTreeMap::from([(BIG, old.as_str())]);
    record(&ws, "t1", 1, &[BIG], &base);
    fs::write(ws.join(PROTECTED), "ROLES = ['worker', 'root']\n").expect("protected edit");

    w.until("the protected edit is vetoed", || stop(&ws).exists());
    assert!(
        fs::read_to_string(stop(&ws))
            .unwrap_or_default()
            .contains(PROTECTED),
        "{}",
        w.output()
    );
    // Judging the rewrite itself takes a while in a debug build on a busy machine: a long
    // wait, as the veto's did not need one.
    crate::watch::wait_until(
        std::time::Duration::from_secs(180),
        "t1 is judged",
        || judged(&ws, "t1", 1),
        || w.output(),
    );
    assert_eq!(verdict(&ws, "t1")["verdict"], "REJECT", "{}", w.output());
    w.signal(libc::SIGTERM);
    w.wait(std::time::Duration::from_secs(180));
}

/// The same rewrite judged one-shot: `verify` answers rather than running for minutes. The
/// record declares the change, so what fails is the file's size alone (REJECT,
/// `file_too_large`), not an undeclared change.
#[test]
fn a_huge_rewrite_is_judged_one_shot() {
    let (_root, ws, _logs) = git_workspace();
    let old = lines(|i| format!("x{i} = {i}\n"));
    fs::write(ws.join(BIG), &old).expect("write");
    git(&ws, &["add", BIG]);
    git(&ws, &["commit", "-q", "-m", "big"]);
    fs::write(ws.join(BIG), lines(|i| format!("y{i} = {}\n", i * 7))).expect("rewrite");
    let base = BTreeMap::from([(BIG, old.as_str())]);
    record(&ws, "t1", 1, &[BIG], &base);
    let out = run(&[
        "verify",
        &ws.display().to_string(),
        "--protocol",
        "code-change",
        "--format",
        "json",
    ]);
    assert_eq!(out.code, 1, "{out:?}");
    let doc: serde_json::Value = serde_json::from_str(&out.stdout).expect("json");
    let text = doc.to_string();
    assert!(text.contains("file_too_large"), "{text}");
    assert!(!text.contains("undeclared_changes"), "{text}");
}
