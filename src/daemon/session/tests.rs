use super::*;
use std::time::Duration;

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

/// A session on a manual clock, its settle window `settle`: the test moves the time.
fn session_at(
    dir: &std::path::Path,
    clock: &crate::clock::ManualClock,
    settle: Duration,
) -> Session {
    let mut cfg = Config::new(dir);
    cfg.quiet = true;
    cfg.settle = settle;
    cfg.clock = clock.clock();
    let protocol = Arc::new(Protocol::load(&cfg.protocol).expect("d10"));
    let mut s = Session::open(cfg, protocol, None).expect("open");
    s.source_is(Ok("test".into()));
    s.announce(None);
    s.first_evaluation();
    s
}

/// Writes `bytes` to `path` in place, its mtime the manual clock's time: the file system's clock
/// is the machine's, and a session on a manual clock judges a file it has forgotten by its mtime.
fn write_at(path: &std::path::Path, bytes: &str, clock: &crate::clock::ManualClock) {
    std::fs::write(path, bytes).expect("write");
    let at = filetime::FileTime::from_system_time(clock.clock().wall());
    filetime::set_file_mtime(path, at).expect("mtime");
}

fn written(rel: &str) -> Batch {
    let mut b = Batch::default();
    b.add(rel.into(), ChangeKind::Written);
    b
}

/// The `result_changed` events of the session's log that went to FAIL or INCONCLUSIVE.
fn failures(dir: &std::path::Path) -> Vec<String> {
    let log =
        std::fs::read_to_string(dir.join(super::super::journal::EVENTS_FILE)).expect("the log");
    log.lines()
        .filter(|l| l.contains("\"result_changed\""))
        .filter(|l| l.contains("\"to\":\"FAIL\"") || l.contains("\"to\":\"INCONCLUSIVE\""))
        .map(str::to_string)
        .collect()
}

/// A file written in place is held while it moves: a violation (a hand-entered gate result)
/// replaced within the settle window is never judged, however slow the machine (the time is the
/// test's), and the same content left alone past the window is judged and raises STOP (so the
/// hold is what kept it back).
#[test]
fn a_file_written_in_place_is_held_for_the_window_and_judged_after_it() {
    const W: Duration = Duration::from_secs(1);
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("b");
    pass2(&dir);
    let gates = dir.join("p3a-gate-results.json");
    let good = std::fs::read_to_string(&gates).expect("gates");
    let bad = good.replacen("\"gate-runner\"", "\"manual\"", 1);
    assert_ne!(good, bad);
    let stop = dir.join(crate::outputs::STOP_FILE);

    let clock = crate::clock::ManualClock::new();
    let mut s = session_at(&dir, &clock, W);
    assert!(!stop.exists());
    write_at(&gates, &bad, &clock);
    s.handle(written("p3a-gate-results.json"));
    assert!(!stop.exists(), "held while it moves");
    assert!(
        s.next_deadline() <= clock.clock().now() + W,
        "a re-check within the window"
    );
    clock.advance(W / 2);
    s.timers();
    assert!(!stop.exists(), "still held");
    write_at(&gates, &good, &clock);
    s.handle(written("p3a-gate-results.json"));
    clock.advance(W * 2);
    s.timers();
    assert!(!stop.exists(), "the rewritten file passes");
    assert_eq!(failures(&dir), Vec::<String>::new(), "judged mid-write");
    drop(s);

    // The same violation, left as it is past the window (another build): judged, and STOP.
    let dir = root.path().join("c");
    pass2(&dir);
    let (gates, stop) = (
        dir.join("p3a-gate-results.json"),
        dir.join(crate::outputs::STOP_FILE),
    );
    let clock = crate::clock::ManualClock::new();
    let mut s = session_at(&dir, &clock, W);
    write_at(&gates, &bad, &clock);
    s.handle(written("p3a-gate-results.json"));
    clock.advance(W - Duration::from_millis(1));
    s.timers();
    assert!(!stop.exists(), "held until the window ends");
    clock.advance(Duration::from_millis(2));
    s.timers();
    let text = std::fs::read_to_string(&stop).expect("STOP raised once settled");
    assert!(text.contains("OBS-27"), "{text}");
    assert!(!failures(&dir).is_empty());
}

/// An honest file saved again and again, each save caught half-written, never quiet for the
/// window in between: no look at a half-save is ever published, however long it keeps moving
/// (each complete save reads good and ends the hold), and no STOP is raised.
#[test]
fn a_file_saved_again_and_again_is_never_judged_half_saved() {
    const W: Duration = Duration::from_secs(1);
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("b");
    pass2(&dir);
    let gates = dir.join("p3a-gate-results.json");
    let good = std::fs::read_to_string(&gates).expect("gates");
    let half = &good[..good.len() / 2];
    let stop = dir.join(crate::outputs::STOP_FILE);
    let clock = crate::clock::ManualClock::new();
    let mut s = session_at(&dir, &clock, W);
    let start = clock.clock().now();
    // Ten times `--settle-max` of saves, a new one every 0.3 s (truncate, half, the rest).
    while clock.clock().now() < start + s.cfg.settle_max * 10 {
        write_at(&gates, half, &clock);
        s.handle(written("p3a-gate-results.json"));
        assert!(!stop.exists(), "STOP on a half-saved file");
        assert!(!s.ledger.holds.is_empty(), "a half-saved file reads bad");
        let bad: Vec<_> = s
            .ledger
            .statuses
            .iter()
            .filter(|(_, st)| {
                matches!(
                    st,
                    crate::engine::Status::Fail | crate::engine::Status::Inconclusive
                )
            })
            .collect();
        assert!(bad.is_empty(), "published from a half-save: {bad:?}");
        clock.advance(Duration::from_millis(150));
        s.timers();
        write_at(&gates, &good, &clock);
        s.handle(written("p3a-gate-results.json"));
        clock.advance(Duration::from_millis(150));
        s.timers();
        assert!(!stop.exists(), "STOP on a saved file");
    }
    assert_eq!(failures(&dir), Vec::<String>::new(), "judged mid-save");
}

/// A violation kept on disk by a writer that never stops rewriting it (every look reads it bad)
/// is published as it stands `--settle-max` after it was first read, though its file never
/// settles.
#[test]
fn a_violation_rewritten_forever_stops_within_settle_max() {
    const W: Duration = Duration::from_secs(1);
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("b");
    pass2(&dir);
    let gates = dir.join("p3a-gate-results.json");
    let good = std::fs::read_to_string(&gates).expect("gates");
    let bad = good.replacen("\"gate-runner\"", "\"manual\"", 1);
    let stop = dir.join(crate::outputs::STOP_FILE);
    let clock = crate::clock::ManualClock::new();
    let mut s = session_at(&dir, &clock, W);
    let max = s.cfg.settle_max;
    let start = clock.clock().now();
    let step = Duration::from_millis(200);
    let raised = loop {
        write_at(&gates, &bad, &clock);
        s.handle(written("p3a-gate-results.json"));
        if stop.exists() {
            break clock.clock().now();
        }
        clock.advance(step);
        s.timers();
        if stop.exists() {
            break clock.clock().now();
        }
        assert!(
            clock.clock().now() <= start + max + step * 2,
            "held past --settle-max"
        );
    };
    assert!(raised >= start + max, "published before the bound");
    let text = std::fs::read_to_string(&stop).expect("STOP");
    assert!(text.contains("OBS-27"), "{text}");
}

/// `status --sync`: a token is acknowledged only once the inputs written before it have been
/// quiet for the settle window and judged again, and at the latest `--settle-max` after it was
/// seen when they never are.
#[test]
fn sync_waits_for_inputs_still_being_written() {
    const W: Duration = Duration::from_secs(1);
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("b");
    pass2(&dir);
    let gates = dir.join("p3a-gate-results.json");
    let good = std::fs::read_to_string(&gates).expect("gates");
    let clock = crate::clock::ManualClock::new();
    let mut s = session_at(&dir, &clock, W);
    let token = |b: &mut Batch, t: &str| {
        b.add(
            format!("{}{t}", crate::state::sync::TOKEN_PREFIX),
            ChangeKind::Written,
        );
    };
    // Nothing moving: answered at once.
    let mut b = Batch::default();
    token(&mut b, "a");
    s.handle(b);
    assert!(crate::state::sync::acknowledged(&s.state, "a"));

    // Saved in place just before the token: not yet.
    write_at(&gates, &good, &clock);
    let mut b = written("p3a-gate-results.json");
    token(&mut b, "b");
    s.handle(b);
    assert!(
        !crate::state::sync::acknowledged(&s.state, "b"),
        "answered mid-save"
    );
    assert!(s.next_deadline() <= clock.clock().now() + W);
    clock.advance(W / 2);
    s.timers();
    assert!(!crate::state::sync::acknowledged(&s.state, "b"));
    clock.advance(W / 2);
    s.timers();
    assert!(crate::state::sync::acknowledged(&s.state, "b"), "settled");

    // Rewritten forever: answered `--settle-max` after the token was seen.
    let max = s.cfg.settle_max;
    let mut b = written("p3a-gate-results.json");
    token(&mut b, "c");
    write_at(&gates, &good, &clock);
    s.handle(b);
    let asked = clock.clock().now();
    while !crate::state::sync::acknowledged(&s.state, "c") {
        assert!(clock.clock().now() <= asked + max, "never answered");
        clock.advance(W / 4);
        write_at(&gates, &good, &clock);
        s.handle(written("p3a-gate-results.json"));
        s.timers();
    }
    assert!(clock.clock().now() >= asked + max);
}

/// An editor saving twice in a row: the first save's write is handed in, but by the time the
/// referee looks the second save has removed the file again (its event not handed in yet). The
/// missing file is mid-save, not gone: nothing is published from it.
#[test]
fn a_file_written_then_missing_before_its_removal_is_handled_is_mid_save() {
    const W: Duration = Duration::from_secs(1);
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("b");
    pass2(&dir);
    let tracker = dir.join("EXECUTION-TRACKER.md");
    let text = std::fs::read_to_string(&tracker).expect("tracker");
    let stop = dir.join(crate::outputs::STOP_FILE);
    let clock = crate::clock::ManualClock::new();
    let mut s = session_at(&dir, &clock, W);
    write_at(&tracker, &text, &clock);
    std::fs::remove_file(&tracker).expect("remove");
    s.handle(written("EXECUTION-TRACKER.md"));
    assert!(!stop.exists(), "STOP on a tracker between two saves");
    assert!(!s.ledger.holds.is_empty(), "the missing tracker reads bad");
    clock.advance(W / 4);
    write_at(&tracker, &text, &clock);
    let mut b = Batch::default();
    b.add("EXECUTION-TRACKER.md".into(), ChangeKind::Removed);
    b.add("EXECUTION-TRACKER.md".into(), ChangeKind::Written);
    s.handle(b);
    clock.advance(W * 2);
    s.timers();
    assert!(!stop.exists(), "STOP on a saved tracker");
    assert_eq!(failures(&dir), Vec::<String>::new(), "judged mid-save");
}

/// The build directory swapped for a copy with a violation in it, noticed at a wake-up for an
/// unrelated file: the re-attached session never vouches for the new directory before it has
/// judged all of it, and raises the STOP once the copy's files have settled. A judgment of only
/// what the batch named, against results published for the old directory, kept the old PASS and
/// vouched at once: `status` said go (seen once in `never_go` under load).
#[test]
fn a_directory_swapped_for_a_copy_is_judged_in_full_before_it_is_vouched_for() {
    const W: Duration = Duration::from_secs(1);
    let root = tempfile::tempdir().expect("tempdir");
    let dir = root.path().join("b");
    pass2(&dir);
    let clock = crate::clock::ManualClock::new();
    let mut s = session_at(&dir, &clock, W);
    let old = crate::state::dir_id::DirId::of(&dir).expect("id");
    assert_eq!(s.vouched, Some(old));

    let copy = root.path().join("copy");
    let cp = std::process::Command::new("cp")
        .arg("-a")
        .arg(&dir)
        .arg(&copy)
        .status()
        .expect("cp");
    assert!(cp.success());
    let gates = copy.join("p3a-gate-results.json");
    let good = std::fs::read_to_string(&gates).expect("gates");
    write_at(
        &gates,
        &good.replacen("\"gate-runner\"", "\"manual\"", 1),
        &clock,
    );
    std::fs::rename(&dir, root.path().join("old")).expect("move the original away");
    std::fs::rename(&copy, &dir).expect("the copy in its place");
    write_at(&dir.join("notes.md"), "an unrelated note\n", &clock);
    let new = crate::state::dir_id::DirId::of(&dir).expect("id");
    assert_ne!(old, new);

    let stop = dir.join(crate::outputs::STOP_FILE);
    s.handle(renamed("notes.md"));
    assert!(
        s.vouched != Some(new)
            || std::fs::read_to_string(&stop).is_ok_and(|t| t.contains("OBS-27")),
        "vouched for the new directory with its violation unjudged"
    );
    clock.advance(W * 2);
    s.timers();
    let text = std::fs::read_to_string(&stop).expect("STOP raised once settled");
    assert!(text.contains("OBS-27"), "{text}");
    assert_eq!(s.vouched, Some(new), "vouched for once judged");
}
