use super::*;

#[test]
fn batches_keep_the_latest_event_and_note_the_stop_file() {
    let mut b = Batch::default();
    b.add("a.md".into(), ChangeKind::Written);
    b.add(crate::outputs::STOP_FILE.into(), ChangeKind::Written);
    b.add("c.md".into(), ChangeKind::Written);
    b.add("a.md".into(), ChangeKind::RenamedIn);
    b.add("c.md".into(), ChangeKind::Metadata);
    b.add("d.md".into(), ChangeKind::Metadata);
    b.add("d.md".into(), ChangeKind::Removed);
    assert_eq!(b.paths.len(), 3);
    assert_eq!(b.paths["a.md"], ChangeKind::RenamedIn);
    assert_eq!(
        b.paths["c.md"],
        ChangeKind::Written,
        "a touch after a write"
    );
    assert_eq!(b.paths["d.md"], ChangeKind::Removed);
    assert!(b.stop_touched);
}

/// A build at pass 2 (the recorded clean run played up to 50 minutes).
fn pass2(dir: &std::path::Path) {
    let timeline = crate::replay::Timeline::load("clean").expect("the clean timeline");
    let opts = crate::replay::PlayOptions {
        speed: 0.0,
        until: Some(std::time::Duration::from_secs(50 * 60)),
        ..Default::default()
    };
    crate::replay::play(&timeline, dir, &opts, |_| {
        std::ops::ControlFlow::Continue(())
    })
    .expect("play");
}

fn session(dir: &std::path::Path) -> Session {
    let mut cfg = Config::new(dir);
    cfg.quiet = true;
    let protocol = Arc::new(Protocol::load(&cfg.protocol).expect("d10"));
    let mut s = Session::open(cfg, protocol, None).expect("open");
    s.source_is(Ok("test".into()));
    s.announce(None);
    s.first_evaluation();
    s
}

fn renamed(rel: &str) -> Batch {
    let mut b = Batch::default();
    b.add(rel.into(), ChangeKind::RenamedIn);
    b
}

/// A session driven directly, without the loop, an event source or threads: what it is
/// handed decides its files.
#[test]
fn a_session_raises_and_lifts_stop_on_what_it_is_handed() {
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("b");
    pass2(&dir);
    let mut s = session(&dir);
    let stop = dir.join(crate::outputs::STOP_FILE);
    assert!(dir.join("OBSERVER-PASS-2.md").exists());
    assert!(!stop.exists());
    let gates = dir.join("p3a-gate-results.json");
    let good = std::fs::read_to_string(&gates).expect("gates");
    let bad = good.replacen("\"gate-runner\"", "\"manual\"", 1);
    assert_ne!(good, bad);
    std::fs::write(&gates, &bad).expect("write");
    // Not handed anything: nothing judged yet.
    assert!(!stop.exists());
    s.handle(renamed("p3a-gate-results.json"));
    let text = std::fs::read_to_string(&stop).expect("STOP raised");
    assert!(text.contains("OBS-27"), "{text}");
    std::fs::write(&gates, &good).expect("write");
    s.handle(renamed("p3a-gate-results.json"));
    assert!(!stop.exists(), "lifted");
    let outcome = s.finish(EndReason::Shutdown(super::super::Shutdown::Requested(
        "test".into(),
    )));
    assert_eq!(outcome.exit, crate::exit::ExitCode::Ok);
    let log =
        std::fs::read_to_string(dir.join(super::super::journal::EVENTS_FILE)).expect("the log");
    for event in [
        "\"start\"",
        "\"stop_raised\"",
        "\"stop_resolved\"",
        "\"end\"",
    ] {
        assert!(log.contains(event), "{event} missing:\n{log}");
    }
    drop(s);
    // Resumed by the next session: the history is kept.
    let s = session(&dir);
    assert_eq!(s.ledger.history.len(), 2);
    assert!(s.incidents.iter().any(|i| i.kind == "restart"));
}
