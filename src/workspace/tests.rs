//! Opening a workspace: the records read before the tree.

use super::*;

/// A judgment is of one moment: the records are those read at opening, so a record that
/// lands after the tree was read is not judged against the tree before its change (the
/// live referee then judges it at its own event).
#[test]
fn records_are_those_read_at_opening_before_the_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let base = tempfile::tempdir().unwrap();
    std::fs::write(base.path().join("a.py"), "x = 1\n").unwrap();
    std::fs::write(root.join("a.py"), "x = 1\n").unwrap();
    std::fs::create_dir(root.join(".tasks")).unwrap();
    std::fs::write(root.join(".tasks/t1.json"), "{}").unwrap();
    std::fs::write(root.join(".tasks/.t2.tmp"), "{}").unwrap();
    let spec = BaselineSpec::Dir(base.path().to_path_buf());
    let ws = Workspace::open(root, &spec, 1 << 20).unwrap();
    assert!(ws.changes().unwrap().is_empty());

    // The worker's next change and its record, after the opening.
    std::fs::write(root.join("a.py"), "x = 2\n").unwrap();
    std::fs::write(root.join(".tasks/t2.json"), "{}").unwrap();
    std::fs::write(root.join(".tasks/t1.json"), "not json").unwrap();
    let records = ws.records(&[]);
    let names: Vec<&str> = records.iter().map(|r| r.rel.as_str()).collect();
    assert_eq!(names, [".tasks/t1.json"]);
    assert_eq!(records[0].stem, "t1");
    assert!(
        records[0].parsed.is_ok(),
        "the record as read at opening: {:?}",
        records[0].parsed
    );

    let again = Workspace::open(root, &spec, 1 << 20).unwrap();
    let records = again.records(&[]);
    assert_eq!(records.len(), 2);
    assert!(records[0].parsed.is_err(), "t1 is not JSON now");
    assert!(again.changes().unwrap().contains_key("a.py"));
}

/// The cheap look the live referee takes before opening a workspace: only a record that
/// is pending (or malformed, or unreadable) asks for a judgment.
#[test]
fn any_judged_looks_at_the_records_only() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let judge = ["pending_review".to_string()];
    assert!(!any_judged(root, 1 << 20, &[], &judge), "no .tasks/");
    std::fs::create_dir(root.join(".tasks")).unwrap();
    let rec = |status: &str| format!(r#"{{"task_id": "t1", "status": "{status}", "attempt": 1}}"#);
    std::fs::write(root.join(".tasks/t1.json"), rec("approved")).unwrap();
    std::fs::write(root.join(".tasks/.t2.json"), rec("pending_review")).unwrap();
    assert!(
        !any_judged(root, 1 << 20, &[], &judge),
        "approved, and a hidden temp file"
    );
    std::fs::write(root.join(".tasks/t1.json"), rec("pending_review")).unwrap();
    assert!(any_judged(root, 1 << 20, &[], &judge));
    std::fs::write(root.join(".tasks/t1.json"), "{ not json").unwrap();
    assert!(
        any_judged(root, 1 << 20, &[], &judge),
        "a malformed record is judged"
    );
}
