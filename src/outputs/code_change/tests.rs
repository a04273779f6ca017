use super::*;
use crate::engine::Evidence;
use crate::protocol::Severity;
use crate::workspace::BaselineSpec;

/// The STOP of `verdicts` judged in a workspace where nothing changed, when one stands.
fn stop_of(p: &Protocol, verdicts: &[TaskVerdict]) -> Option<String> {
    let (root, base) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let spec = BaselineSpec::Dir(base.path().to_path_buf());
    let ws = Workspace::open(root.path(), &spec, 1 << 20).unwrap();
    let d = crate::decision::workspace(p, &ws, &Evaluation::default(), verdicts.to_vec());
    d.stops().then(|| stop_md(p, &ws, &d))
}

fn verdict(attempt: Option<u64>) -> TaskVerdict {
    TaskVerdict {
        task_id: "t1".into(),
        attempt,
        verdict: "REJECT".into(),
        outcome: GradeOutcome::Reject,
        graded: "REJECT".into(),
        reasons: vec!["protected_file_modified".into()],
        results: vec![CheckResult {
            pass: "t1".into(),
            check: "CC-01".into(),
            title: "No protected file touched".into(),
            severity: Severity::Blocking,
            status: Status::Fail,
            due: true,
            evidence: Evidence {
                expected: "no protected path".into(),
                observed: "1 finding(s)".into(),
                details: vec!["protected_file_modified: app/orchestrator.py (modified)".into()],
                files: Vec::new(),
            },
            waiver: None,
            stands: false,
        }],
        restore: Vec::new(),
        cleanup_task: None,
        diff_similarity: None,
        escalation: None,
        protected_diffs: vec![("app/orchestrator.py".into(), String::new())],
        record: ".tasks/t1.json".into(),
        judged_files: Default::default(),
        diff: None,
        record_hash: None,
        replay: false,
    }
}

/// A malformed record has no readable attempt: the STOP block and the verdict file say so
/// instead of numbering it 0.
#[test]
fn an_unreadable_attempt_is_not_numbered() {
    let p = Protocol::load("code-change").unwrap();
    let stop = stop_of(&p, &[verdict(None)]).unwrap();
    assert!(
        stop.contains("**Phase:** task `t1` attempt ? (unreadable record)\n"),
        "{stop}"
    );
    assert!(!stop.contains("attempt 0"), "{stop}");
    assert!(
        stop.contains("**Required Action:** restore: `app/orchestrator.py`"),
        "{stop}"
    );
    let stop = stop_of(&p, &[verdict(Some(2))]).unwrap();
    assert!(stop.contains("**Phase:** task `t1` attempt 2\n"), "{stop}");
    let md = verdict_md(&p, &verdict(None));
    assert!(
        md.starts_with("# Verdict: REJECT — task `t1`, attempt ? (unreadable record)\n"),
        "{md}"
    );
}

/// The veto is the protocol's (`veto = true`), not a check id the code knows: a protocol
/// whose CC-01 is not a veto raises no STOP for it, and one that makes another check the
/// veto raises it for that one, with that check's action.
#[test]
fn the_veto_is_protocol_data() {
    let src = crate::protocol::EMBEDDED
        .iter()
        .find(|(id, _, _)| *id == "code-change")
        .map(|(_, _, text)| *text)
        .unwrap();
    let mut v = verdict(Some(1));
    let no_veto = Protocol::parse(&src.replace("veto = true\n", ""), "t.toml").unwrap();
    assert!(!no_veto.is_veto("CC-01"));
    assert_eq!(stop_of(&no_veto, std::slice::from_ref(&v)), None);

    v.results[0].check = "CC-07".into();
    v.protected_diffs.clear();
    let other = Protocol::parse(
        &src.replace("veto = true\n", "").replace(
            "tag = \"forbidden_content\"\n",
            "tag = \"forbidden_content\"\nveto = true\n",
        ),
        "t.toml",
    )
    .unwrap();
    assert!(other.is_veto("CC-07"));
    let stop = stop_of(&other, &[v]).unwrap();
    assert!(stop.contains("**Check:** CC-07"), "{stop}");
    assert!(
        stop.contains("**Description:** forbidden_content"),
        "{stop}"
    );
    let action = &other.check_def("CC-07").unwrap().action;
    assert!(
        stop.contains(&format!("**Required Action:** {action}")),
        "{stop}"
    );

    let err = Protocol::parse(
        &src.replace(
            "tag = \"summary_format\"\n",
            "tag = \"summary_format\"\nveto = true\n",
        ),
        "t.toml",
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("a veto must be `severity = \"blocking\"`"),
        "{err}"
    );
}
