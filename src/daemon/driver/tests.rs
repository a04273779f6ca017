use std::path::Path;

use super::*;
use crate::fsevents::{ChangeKind, FsEvent};

#[test]
fn paths_route_to_their_session() {
    let one = Router {
        base: "/b".into(),
        root: false,
    };
    assert_eq!(
        one.route(Path::new("/b/x/y.md")),
        Some((String::new(), "x/y.md".into()))
    );
    assert_eq!(
        one.route(Path::new("/b")),
        Some((String::new(), String::new()))
    );
    assert_eq!(one.route(Path::new("/c/x")), None);
    // The snapshot's escaped form, not a lossy one.
    assert_eq!(
        one.route(Path::new("/b/a\nb.md")),
        Some((String::new(), "a\\nb.md".into()))
    );
    let root = Router {
        base: "/r".into(),
        root: true,
    };
    assert_eq!(
        root.route(Path::new("/r/b7/x/y.md")),
        Some(("b7".into(), "x/y.md".into()))
    );
    assert_eq!(
        root.route(Path::new("/r/b7")),
        Some(("b7".into(), String::new()))
    );
    assert_eq!(root.route(Path::new("/r")), None, "the root itself");
    assert_eq!(root.route(Path::new("/other/b7/x")), None);
}

#[test]
fn the_sink_drops_own_files_and_tells_directory_events() {
    let (tx, rx) = mpsc::channel();
    let inbox = Arc::new(Inbox::default());
    let mut s = sink(
        Router {
            base: "/r".into(),
            root: true,
        },
        3,
        inbox.clone(),
        None,
        tx,
    );
    let change = |p: &str, kind| fsevents::PathChange {
        path: p.into(),
        kind,
    };
    s(FsEvent::Changed(vec![
        change("/r/b1/OBSERVER-HEARTBEAT.json", ChangeKind::RenamedIn),
        change("/r/b1/OBSERVER-STOP.md", ChangeKind::Removed),
        change("/r/b2/gate.json", ChangeKind::Written),
        change("/r/b3", ChangeKind::Removed),
    ]));
    let got: Vec<Msg> = rx.try_iter().collect();
    assert!(
        matches!(&got[0], Msg::Dir { name, lost: true, source: 3 } if name == "b3"),
        "{got:?}"
    );
    let ready: Vec<&str> = got[1..]
        .iter()
        .map(|m| match m {
            Msg::Ready(n) => n.as_str(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(ready, ["b1", "b2"]);
    let b1 = inbox.take("b1").expect("b1 waits");
    assert!(b1.stop_touched && b1.paths.is_empty(), "{b1:?}");
    let b2 = inbox.take("b2").expect("b2 waits");
    assert_eq!(
        b2.paths.into_iter().collect::<Vec<_>>(),
        [("gate.json".to_string(), ChangeKind::Written)]
    );
    s(FsEvent::Changed(vec![change(
        "/r/b1/OBSERVER-PASS-1.md",
        ChangeKind::Written,
    )]));
    // A pass file's event is handed in to be compared with what was written (a forgery is
    // restored at once), as a pass file, never as work to judge.
    let b1 = inbox.take("b1").expect("b1 waits");
    assert!(
        b1.paths.is_empty() && b1.passes_touched.contains("OBSERVER-PASS-1.md"),
        "{b1:?}"
    );
    let _ = rx.try_iter().count();
    s(FsEvent::Changed(vec![change(
        "/r/b1/OBSERVER-REPORT.md",
        ChangeKind::Written,
    )]));
    assert!(
        rx.try_recv().is_err() && !inbox.waits("b1"),
        "the referee's other own writes wake nothing"
    );
    // A storm tells the loop once until the build's turn.
    for i in 0..1000 {
        s(FsEvent::Changed(vec![change(
            &format!("/r/b2/scratch/f{i}"),
            ChangeKind::Written,
        )]));
    }
    let got: Vec<Msg> = rx.try_iter().collect();
    assert!(matches!(&got[..], [Msg::Ready(n)] if n == "b2"), "{got:?}");
    let b2 = inbox.take("b2").expect("b2 waits");
    assert_eq!(
        b2.paths.keys().collect::<Vec<_>>(),
        ["scratch"],
        "coalesced into their folder"
    );
}

/// The barrier on a real inotify source: a file written just before a judgment's barrier is in
/// the build's queue when the barrier passes, every time (one event queue, in order), and the
/// barrier leaves the queue to the build's turn.
#[test]
fn a_change_made_before_the_barrier_is_waiting_when_it_passes() {
    let tmp = tempfile::tempdir().expect("tmp");
    let base = std::fs::canonicalize(tmp.path()).expect("canon");
    let (tx, _rx) = mpsc::channel();
    let inbox = Arc::new(Inbox::default());
    let cookies = barrier::Cookies::new().expect("a cookie folder");
    let s = sink(
        Router {
            base: base.clone(),
            root: false,
        },
        1,
        inbox.clone(),
        Some(cookies.clone()),
        tx,
    );
    let mut source = fsevents::start(&base, Mode::Native, s).expect("a source");
    assert_eq!(source.kind, fsevents::SourceKind::Native, "inotify here");
    cookies.set_active(source.watch_also(cookies.dir()));
    let pass = barrier::for_build(&cookies, &inbox, "");
    for i in 0..200 {
        let rel = format!("tracker-{i}.md");
        std::fs::write(base.join(&rel), "half").expect("write");
        let waiting = pass().expect("the cookie's event came");
        assert!(
            waiting
                .iter()
                .any(|(p, k)| *p == rel && *k == ChangeKind::Written),
            "round {i}: {rel} not waiting: {waiting:?}"
        );
        assert!(inbox.waits(""), "the barrier took nothing");
        assert!(
            !waiting.iter().any(|(p, _)| p.contains("referee-cookies")),
            "a cookie is no build's change: {waiting:?}"
        );
        inbox.take("");
    }
    // Polling orders nothing: no barrier.
    cookies.set_active(false);
    assert!(pass().is_none());
    drop(source);
}
