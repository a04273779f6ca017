use super::*;
use crate::state::attempts::Store;

/// What a workspace judgment decided, without the moment it was made.
fn decided(j: &Judgment) -> String {
    let Judgment::Workspace(w) = j else {
        panic!("a workspace judgment");
    };
    let verdicts: Vec<_> = w
        .decision
        .verdicts
        .iter()
        .map(|v| (&v.task_id, &v.verdict, &v.graded, &v.reasons, &v.diff))
        .collect();
    let results: Vec<_> = w
        .eval
        .results
        .iter()
        .map(|r| (&r.pass, &r.check, r.status, &r.evidence))
        .collect();
    format!(
        "{verdicts:?}\n{results:?}\n{:?}\n{:?}\n{:?}",
        w.ws.changes(),
        w.decision.stop,
        w.decision.exit
    )
}

/// The protocol loaded while the workspace is opened: the same judgment as loaded first,
/// attempt after attempt (the kept attempts and the loop guards included); a load that fails
/// is the answer, before the workspace's errors; a protocol that judges no records is judged
/// as a build directory.
#[test]
fn judging_while_the_protocol_loads_decides_as_judging_after() {
    let (ws, base, state) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let state = state.path().join("state");
    for d in [ws.path(), base.path()] {
        std::fs::write(d.join("a.py"), "x = 1\n").unwrap();
        std::fs::write(d.join("orchestrator.py"), "run()\n").unwrap();
    }
    std::fs::write(ws.path().join("a.py"), "x = 2\n").unwrap();
    std::fs::create_dir(ws.path().join(".tasks")).unwrap();
    let record = |task: &str, attempt: u64, listed: &str| {
        let doc = serde_json::json!({
            "task_id": task, "status": "pending_review", "description": "a task",
            "attempt": attempt, "summary": "Here's what I did: the change.",
            "changes": {"added": [], "modified": [listed], "removed": []},
            "pre_hashes": {}, "post_hashes": {},
        });
        let path = ws.path().join(format!(".tasks/{task}.json"));
        std::fs::write(path, doc.to_string()).unwrap();
    };
    let req = Request {
        state_dir: Some(&state),
        baseline_dir: Some(base.path()),
        ..Request::new(ws.path())
    };
    let keeping = Request {
        write: true,
        ..req.clone()
    };
    let load = || Ok((Protocol::load("code-change")?, None));
    let first = || loaded((Protocol::load("code-change").unwrap(), None));
    let same = |what: &str| {
        let (_, after) = judge(&req, first()).unwrap();
        let (_, beside) = judge(&req, Source::named("code-change", false, load)).unwrap();
        assert_eq!(decided(&beside), decided(&after), "{what}");
        after.violation()
    };
    // Tasks attempt after attempt, each judgment kept (`--write`) before the next: the loop
    // guards compare each with its history and with the other tasks' REJECTs.
    let everything = Writes {
        copies: true,
        stop: true,
        only_task: None,
    };
    for (attempt, listed) in [(1, "b.py"), (2, "b.py"), (3, "a.py"), (4, "b.py")] {
        record("t1", attempt, listed);
        record("t2", attempt, "b.py");
        // A new task each time, its first attempt the same diff as others' REJECTs.
        record(&format!("n{attempt}"), 1, "b.py");
        assert!(same(&format!("attempt {attempt}")));
        let ((p, _), j) = judge(&keeping, first()).unwrap();
        write(&p, &j, everything).unwrap();
    }
    let kept = Store::open(&crate::state::attempts::dir_for(&state)).everyone();
    assert_eq!(kept.graded_elsewhere("t3", "REJECT").len(), 11, "{kept:?}");
    std::fs::write(ws.path().join("orchestrator.py"), "run(evil)\n").unwrap();
    assert!(same("a protected change"));

    let refused = || -> Result<Loaded> { anyhow::bail!("the protocol is refused") };
    let e = judge(&keeping, Source::named("code-change", false, refused)).unwrap_err();
    assert_eq!(e.to_string(), "the protocol is refused");
    let gone = Request {
        dir: &ws.path().join("no-such-dir"),
        ..req.clone()
    };
    let e = judge(&gone, Source::named("code-change", false, refused)).unwrap_err();
    assert_eq!(
        e.to_string(),
        "the protocol is refused",
        "the protocol's error first"
    );
    assert!(judge(&gone, Source::named("code-change", false, load)).is_err());

    let build = Request {
        state_dir: Some(&state),
        ..Request::new(base.path())
    };
    let d10 = || Ok((Protocol::load("d10")?, None));
    let ((p, _), j) = judge(&build, Source::named("d10", false, d10)).unwrap();
    assert_eq!(p.id, "d10");
    assert!(matches!(j, Judgment::Build(_)));
    // Named as a build protocol, loaded as one of task records: the workspace is judged.
    let ((p, _), j) = judge(&req, Source::named("d10", true, load)).unwrap();
    assert_eq!(p.id, "code-change");
    assert!(matches!(j, Judgment::Workspace(_)));
}

/// Each subject judges the predicates it has: a build directory's predicate in a task's pass
/// of a workspace protocol is INCONCLUSIVE and says why (there is no build directory to read),
/// never judged against an empty directory; the task's own predicates are judged beside it.
#[test]
fn a_build_predicate_in_a_workspace_protocol_says_it_needs_a_build_directory() {
    let (ws, base, state) = (
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
        tempfile::tempdir().unwrap(),
    );
    let state = state.path().join("state");
    for d in [ws.path(), base.path()] {
        std::fs::write(d.join("a.py"), "x = 1\n").unwrap();
    }
    std::fs::write(ws.path().join("a.py"), "x = 2\n").unwrap();
    std::fs::create_dir(ws.path().join(".tasks")).unwrap();
    let doc = serde_json::json!({
        "task_id": "t1", "status": "pending_review", "description": "a task",
        "attempt": 1, "summary": "Here's what I did: the change.",
        "changes": {"added": [], "modified": ["a.py"], "removed": []},
        "pre_hashes": {}, "post_hashes": {},
    });
    std::fs::write(ws.path().join(".tasks/t1.json"), doc.to_string()).unwrap();
    let text = Protocol::load("code-change").unwrap().text.replace(
        r#"predicate = { record_field = { field = "summary", pattern = "^Here's what I did:" } }"#,
        r#"predicate = { exists = "a.py" }"#,
    );
    let protocol = Protocol::parse(&text, "p.toml").unwrap();
    let req = Request {
        state_dir: Some(&state),
        baseline_dir: Some(base.path()),
        ..Request::new(ws.path())
    };
    let (_, j) = judge(&req, loaded((protocol, None))).unwrap();
    let Judgment::Workspace(w) = j else {
        panic!("a workspace judgment");
    };
    let result = |id: &str| {
        w.eval
            .results
            .iter()
            .find(|r| r.check == id)
            .unwrap_or_else(|| panic!("{id} judged"))
    };
    let cc08 = result("CC-08");
    assert_eq!(cc08.status, crate::engine::Status::Inconclusive);
    assert_eq!(cc08.evidence.expected, "a build directory to judge");
    assert!(
        cc08.evidence
            .observed
            .contains("only against a build directory"),
        "{:?}",
        cc08.evidence
    );
    assert_eq!(result("CC-00").status, crate::engine::Status::Pass);
}

/// Each failure of the judge API is a typed error that names its path and keeps its cause, and
/// reads, through `anyhow` as the command line prints it, as it did before it was typed.
#[test]
fn failures_are_typed_with_their_path_and_cause() {
    let tmp = tempfile::tempdir().unwrap();
    let gone = tmp.path().join("no-such-dir");
    let e = state_of(&gone, None).unwrap_err();
    let JudgeError::ReadDir { path, source } = &e else {
        panic!("{e:?}");
    };
    assert_eq!(path, &gone);
    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
    let chain = format!("{:#}", anyhow::Error::from(e));
    assert!(
        chain.starts_with(&format!("cannot read directory `{}`: ", gone.display())),
        "{chain}"
    );

    let req = Request::new(tmp.path());
    let e = attempt(&req, &Protocol::load("d10").unwrap(), &|_| None).unwrap_err();
    assert!(
        matches!(&e, JudgeError::NoTasks { id, dir } if id == "d10" && dir == tmp.path()),
        "{e:?}"
    );
    let with_baseline = Request {
        baseline: Some("HEAD"),
        ..req.clone()
    };
    let d10 = Protocol::load("d10").unwrap();
    let e = judge(&with_baseline, loaded((d10, None))).unwrap_err();
    assert!(
        matches!(&e, JudgeError::BaselineForBuild { id, .. } if id == "d10"),
        "{e:?}"
    );
    assert!(e
        .to_string()
        .starts_with("`--baseline` and `--baseline-dir` apply"));

    let refused = || -> Result<Loaded> { anyhow::bail!("the protocol is refused") };
    let e = judge(&req, Source::named("code-change", false, refused)).unwrap_err();
    assert!(matches!(e, JudgeError::Load(_)), "{e:?}");
}
