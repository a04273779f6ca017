use std::fs;
use std::os::unix::fs::symlink;
use std::path::Path;
use std::thread;
use std::time::Duration;

use super::*;
use crate::artifacts::test_support::*;
use crate::artifacts::{Limits, Snapshot};

/// The tracker the D10 protocol names.
const TRACKER: &str = "EXECUTION-TRACKER.md";

#[test]
fn limits_default_is_64_mib() {
    assert_eq!(Limits::default().max_read_bytes, 64 * 1024 * 1024);
}

#[test]
fn snapshot_is_send_and_sync() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Snapshot>();
    assert_send_sync::<Entry>();
}

#[test]
fn scan_lists_everything_sorted_with_depth_and_sizes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::write(root.join("p0-content-map.md"), "12345").unwrap();
    fs::write(root.join("OBSERVER-REPORT.md"), "mine").unwrap();
    fs::create_dir_all(root.join("screenshots/1440")).unwrap();
    fs::write(root.join("screenshots/1440/cold-look.png"), [0u8; 10]).unwrap();
    let snap = scan(root);
    assert_eq!(
        rels(&snap),
        [
            "OBSERVER-REPORT.md",
            "p0-content-map.md",
            "screenshots",
            "screenshots/1440",
            "screenshots/1440/cold-look.png",
        ]
    );
    let map = snap.get("p0-content-map.md").unwrap();
    assert_eq!(map.kind, Kind::File);
    assert_eq!(map.size(), 5);
    assert_eq!(map.depth, 1);
    assert_eq!(map.name(), "p0-content-map.md");
    assert!(map.mtime().is_some());
    assert!(map.note.is_none());
    assert!(map.is_file());
    let png = snap.get("screenshots/1440/cold-look.png").unwrap();
    assert_eq!(png.depth, 3);
    assert_eq!(png.name(), "cold-look.png");
    assert_eq!(png.size(), 10);
    let shots = snap.get("screenshots").unwrap();
    assert_eq!(shots.kind, Kind::Dir);
    assert_eq!(shots.size(), 0);
    assert_eq!(snap.root(), root);
    assert_eq!(snap.canonical_root(), fs::canonicalize(root).unwrap());
    assert!(snap.unlisted().is_empty());
    assert_eq!(snap.files().count(), 3);
    assert!(snap.get("./p0-content-map.md").is_some());
    assert!(snap.get("missing.md").is_none());
}

#[test]
fn empty_directory_scans_to_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let snap = scan(dir.path());
    assert!(snap.entries().is_empty());
    assert!(snap.tracker(TRACKER).is_none());
}

#[test]
fn scan_fails_only_for_a_bad_root() {
    let dir = tempfile::tempdir().unwrap();
    let missing = Snapshot::scan(&dir.path().join("nope"), Limits::default()).unwrap_err();
    assert_eq!(missing.kind(), io::ErrorKind::NotFound);
    assert!(missing.to_string().contains("nope`"), "{missing}");
    fs::write(dir.path().join("file"), "x").unwrap();
    let not_dir = Snapshot::scan(&dir.path().join("file"), Limits::default()).unwrap_err();
    assert_eq!(not_dir.kind(), io::ErrorKind::InvalidInput);
    assert!(not_dir.to_string().contains("is not a directory"));
}

#[test]
fn unreadable_root_is_an_error() {
    if is_root() {
        return; // root lists any directory; nothing to test
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let locked = dir.path().join("locked");
    fs::create_dir(&locked).unwrap();
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o000)).unwrap();
    let result = Snapshot::scan(&locked, Limits::default());
    fs::set_permissions(&locked, fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(result.unwrap_err().kind(), io::ErrorKind::PermissionDenied);
}

#[test]
fn unreadable_subdirectory_is_skipped_not_fatal() {
    if is_root() {
        return; // root lists any directory; nothing to test
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("locked")).unwrap();
    fs::write(dir.path().join("locked/x"), "x").unwrap();
    fs::write(dir.path().join("ok.md"), "x").unwrap();
    fs::set_permissions(dir.path().join("locked"), fs::Permissions::from_mode(0o000)).unwrap();
    let snap = scan(dir.path());
    fs::set_permissions(dir.path().join("locked"), fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(rels(&snap), ["locked", "ok.md"]);
    assert_eq!(snap.unlisted().len(), 1);
    assert_eq!(snap.unlisted()[0].rel, "locked");
    assert!(snap.unlisted_at("locked/x").is_some());
    assert!(snap.unlisted_at("ok.md").is_none());
}

/// Makes `depth` nested directories named `name` under `dir` with `mkdirat`/`openat`, one
/// level at a time (the full path soon exceeds `PATH_MAX`, which only the `*at` calls
/// tolerate); returns the nesting as a relative path.
fn deep_dirs(dir: &Path, name: &str, depth: usize, file: &str) -> String {
    use rustix::fs::{Mode, OFlags};
    let dir_flags = OFlags::DIRECTORY | OFlags::RDONLY;
    let mut fd = rustix::fs::open(dir, dir_flags, Mode::empty()).unwrap();
    for _ in 0..depth {
        rustix::fs::mkdirat(&fd, name, Mode::from_raw_mode(0o755)).unwrap();
        fd = rustix::fs::openat(&fd, name, dir_flags, Mode::empty()).unwrap();
    }
    let flags = OFlags::CREATE | OFlags::WRONLY;
    let file_fd = rustix::fs::openat(&fd, file, flags, Mode::from_raw_mode(0o644)).unwrap();
    assert_eq!(rustix::io::write(&file_fd, b"fix it").unwrap(), 6);
    vec![name; depth].join("/")
}

#[test]
fn a_path_longer_than_path_max_is_unlisted_not_absent() {
    let dir = tempfile::tempdir().unwrap();
    // 40 levels of 200 bytes: about 8 KB, twice PATH_MAX.
    let name = "d".repeat(200);
    let nested = deep_dirs(dir.path(), &name, 40, "deep.md");
    let snap = scan(dir.path());
    assert!(
        !snap.unlisted().is_empty(),
        "the walk must record what it could not list"
    );
    let u = snap.unlisted_at(&format!("{nested}/deep.md")).unwrap();
    assert!(u.cause.contains("too long"), "{u:?}");
    assert!(u.describe().contains("cannot be listed"));
    assert!(snap.get(&format!("{nested}/deep.md")).is_none());
}

#[test]
fn root_given_through_a_symlink_works() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("real")).unwrap();
    fs::write(dir.path().join("real/a.md"), "a").unwrap();
    symlink("real", dir.path().join("link")).unwrap();
    let snap = scan(&dir.path().join("link"));
    assert_eq!(rels(&snap), ["a.md"]);
    assert_eq!(snap.get("a.md").unwrap().kind, Kind::File);
    assert_eq!(snap.read("a.md").unwrap().bytes, b"a");
    assert_eq!(snap.root(), dir.path().join("link"));
}

#[test]
fn read_is_cached_and_hashed_once() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.md"), "first").unwrap();
    let snap = scan(dir.path());
    let one = snap.read("a.md").unwrap();
    assert_eq!(one.sha256, fsread::sha256_hex(b"first"));
    fs::write(dir.path().join("a.md"), "second").unwrap();
    let two = snap.read("./a.md").unwrap();
    assert!(Arc::ptr_eq(&one, &two));
    assert_eq!(two.bytes, b"first");
    // A fresh snapshot sees the new contents.
    assert_eq!(scan(dir.path()).read("a.md").unwrap().bytes, b"second");
}

#[test]
fn large_files_are_not_kept_when_asked() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("big.md"), "0123456789").unwrap();
    fs::write(dir.path().join("small.md"), "01").unwrap();
    let limits = Limits {
        keep_bytes: Some(5),
        ..Limits::default()
    };
    let snap = Snapshot::scan(dir.path(), limits).unwrap();
    let a = snap.read("big.md").unwrap();
    let b = snap.read("big.md").unwrap();
    assert!(!Arc::ptr_eq(&a, &b), "read again, not kept");
    assert_eq!(a.sha256, b.sha256);
    assert!(snap.peek("big.md").is_none());
    let c = snap.read("small.md").unwrap();
    assert!(Arc::ptr_eq(&c, &snap.read("small.md").unwrap()));
}

#[test]
fn errors_are_cached_too() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.md"), "x").unwrap();
    let snap = scan(dir.path());
    fs::remove_file(dir.path().join("a.md")).unwrap();
    assert_eq!(snap.read("a.md"), Err(ReadError::NotFound("a.md".into())));
    fs::write(dir.path().join("a.md"), "back").unwrap();
    assert_eq!(snap.read("a.md"), Err(ReadError::NotFound("a.md".into())));
}

#[test]
fn reading_an_unlisted_path_is_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let snap = scan(dir.path());
    fs::write(dir.path().join("late.md"), "x").unwrap();
    assert_eq!(
        snap.read("late.md"),
        Err(ReadError::NotFound("late.md".into()))
    );
    assert_eq!(snap.read("./x"), Err(ReadError::NotFound("x".into())));
    assert_eq!(
        snap.read("../etc/passwd"),
        Err(ReadError::NotFound("../etc/passwd".into()))
    );
}

#[test]
fn read_respects_the_cap() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("big.html"), vec![b'x'; 11]).unwrap();
    fs::write(dir.path().join("ok.html"), vec![b'x'; 10]).unwrap();
    let snap = Snapshot::scan(
        dir.path(),
        Limits {
            max_read_bytes: 10,
            ..Limits::default()
        },
    )
    .unwrap();
    assert_eq!(snap.limits().max_read_bytes, 10);
    assert_eq!(
        snap.read("big.html"),
        Err(ReadError::TooLarge {
            rel: "big.html".into(),
            size: 11,
            cap: 10
        })
    );
    assert_eq!(snap.read("ok.html").unwrap().size, 10);
}

#[test]
fn file_that_grew_past_the_cap_after_scan_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a"), "small").unwrap();
    let snap = Snapshot::scan(
        dir.path(),
        Limits {
            max_read_bytes: 8,
            ..Limits::default()
        },
    )
    .unwrap();
    fs::write(dir.path().join("a"), "much larger now").unwrap();
    assert!(matches!(
        snap.read("a"),
        Err(ReadError::TooLarge { size: 15, .. })
    ));
}

#[test]
fn permission_denied_is_io() {
    if is_root() {
        return; // root reads regardless of mode bits
    }
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("locked.md");
    fs::write(&path, "x").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).unwrap();
    let snap = scan(dir.path());
    assert!(matches!(snap.read("locked.md"), Err(ReadError::Io { .. })));
}

#[test]
fn peek_sees_only_what_was_read() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.md"), "a").unwrap();
    let snap = scan(dir.path());
    assert!(snap.peek("a.md").is_none());
    let read = snap.read("a.md").unwrap();
    assert!(Arc::ptr_eq(&snap.peek("./a.md").unwrap(), &read));
    assert!(snap.peek("missing").is_none());
}

#[test]
fn concurrent_reads_share_one_result() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("a.md"), "shared").unwrap();
    let snap = Arc::new(scan(dir.path()));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let snap = Arc::clone(&snap);
            thread::spawn(move || snap.read("a.md").unwrap())
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    for r in &results {
        assert!(Arc::ptr_eq(r, &results[0]));
    }
}

#[test]
fn tracker_is_parsed_once() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join(TRACKER),
        "## Phase Timestamps\n| Field | Value |\n|---|---|\n| P0_START | 2026-02-25T10:00:00Z |\n",
    )
    .unwrap();
    let snap = scan(dir.path());
    let one = snap.tracker(TRACKER).unwrap().unwrap();
    assert_eq!(one.field("p0_start").unwrap().value, "2026-02-25T10:00:00Z");
    let two = snap.tracker(TRACKER).unwrap().unwrap();
    assert!(Arc::ptr_eq(&one, &two));
}

#[test]
fn a_tracker_over_the_parse_cap_is_not_parsed() {
    let dir = tempfile::tempdir().unwrap();
    // One-character rows: the costliest text per byte to parse.
    let rows = "| a |\n".repeat(MAX_TRACKER_BYTES as usize / 6 + 1);
    fs::write(dir.path().join(TRACKER), &rows).unwrap();
    let snap = scan(dir.path());
    match snap.tracker(TRACKER) {
        Some(Err(ReadError::TooLargeToParse { size, cap, .. })) => {
            assert_eq!(size, rows.len() as u64);
            assert_eq!(cap, MAX_TRACKER_BYTES);
        }
        other => panic!("want TooLargeToParse, got {other:?}"),
    }
    // At the cap it is parsed.
    fs::write(
        dir.path().join(TRACKER),
        &rows[..MAX_TRACKER_BYTES as usize],
    )
    .unwrap();
    assert!(scan(dir.path()).tracker(TRACKER).unwrap().is_ok());
}

#[test]
fn tracker_with_invalid_utf8_is_read_lossily() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(TRACKER), b"| A\xff | v |\n").unwrap();
    let snap = scan(dir.path());
    let t = snap.tracker(TRACKER).unwrap().unwrap();
    assert_eq!(t.rows[0].name, "A\u{fffd}");
}

#[test]
fn tracker_absent_unreadable_or_nested() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("sub")).unwrap();
    fs::write(dir.path().join("sub").join(TRACKER), "| A | b |\n").unwrap();
    assert!(scan(dir.path()).tracker(TRACKER).is_none());

    let fifo_dir = tempfile::tempdir().unwrap();
    mkfifo(&fifo_dir.path().join(TRACKER));
    let result = within(5, move || scan(fifo_dir.path()).tracker(TRACKER));
    assert!(matches!(result, Some(Err(ReadError::NotRegular { .. }))));

    let big = tempfile::tempdir().unwrap();
    fs::write(big.path().join(TRACKER), "0123456789").unwrap();
    let snap = Snapshot::scan(
        big.path(),
        Limits {
            max_read_bytes: 4,
            ..Limits::default()
        },
    )
    .unwrap();
    assert!(matches!(
        snap.tracker(TRACKER),
        Some(Err(ReadError::TooLarge { .. }))
    ));
}

#[test]
fn scans_thirty_thousand_files_in_one_walk() {
    let dir = tempfile::tempdir().unwrap();
    for d in 0..30 {
        let sub = dir.path().join(format!("d{d:02}"));
        fs::create_dir(&sub).unwrap();
        for f in 0..1000 {
            fs::File::create(sub.join(format!("f{f:04}.md"))).unwrap();
        }
    }
    let start = std::time::Instant::now();
    let snap = scan(dir.path());
    let elapsed = start.elapsed();
    assert_eq!(snap.entries().len(), 30_030);
    assert_eq!(snap.files().count(), 30_000);
    assert!(snap.get("d29/f0999.md").is_some());
    assert!(snap.entries().windows(2).all(|w| w[0].rel < w[1].rel));
    // Generous bound for debug builds on slow CI; a release scan takes tens of milliseconds.
    assert!(elapsed < Duration::from_secs(20), "scan took {elapsed:?}");
}

/// `n` bytes of text, all `fill`.
fn text_of(n: usize, fill: u8) -> Vec<u8> {
    vec![fill; n]
}

#[test]
fn a_file_read_ahead_is_its_one_read_and_no_evidence_until_a_check_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::write(root.join("report.md"), text_of(1 << 20, b'a')).unwrap();
    fs::write(root.join("small.md"), "first").unwrap();
    let wanted = |rel: &str| rel.ends_with(".md");
    let snap = Snapshot::scan_reading(root, Limits::default(), &wanted).unwrap();
    assert!(
        snap.peek("report.md").is_none(),
        "read ahead is not evidence"
    );
    // Written after the read-ahead: the snapshot judges what it read, once.
    fs::write(root.join("report.md"), "changed").unwrap();
    fs::write(root.join("small.md"), "changed").unwrap();
    let report = snap.read("report.md").unwrap();
    assert_eq!(report.bytes, text_of(1 << 20, b'a'));
    assert_eq!(report.sha256, fsread::sha256_hex(&text_of(1 << 20, b'a')));
    assert_eq!(snap.read("small.md").unwrap().bytes, b"first");
    assert!(snap.peek("report.md").is_some());
}

#[test]
fn nothing_is_read_ahead_when_small_unwanted_or_not_kept() {
    let big = |root: &Path| fs::write(root.join("report.md"), text_of(1 << 20, b'a')).unwrap();
    type Wanted<'a> = &'a dyn Fn(&str) -> bool;
    let cases: [(&str, u64, Option<u64>, Wanted<'_>); 3] = [
        // Less than 1 MiB wanted in all: not worth a thread.
        ("small", 1000, None, &|_| true),
        ("unwanted", 1 << 20, None, &|rel| rel != "report.md"),
        // A snapshot that does not keep large files (the daemon's) never reads ahead.
        ("bounded", 1 << 20, Some(1 << 10), &|_| true),
    ];
    for (case, size, keep_bytes, wanted) in cases {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        big(root);
        fs::write(root.join("report.md"), text_of(size as usize, b'a')).unwrap();
        let limits = Limits {
            keep_bytes,
            ..Limits::default()
        };
        let snap = Snapshot::scan_reading(root, limits, wanted).unwrap();
        fs::write(root.join("report.md"), "changed").unwrap();
        assert_eq!(snap.read("report.md").unwrap().bytes, b"changed", "{case}");
    }
}

#[test]
fn a_read_ahead_of_a_name_the_walk_lists_as_a_symlink_is_not_used() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    fs::write(root.join("big.md"), text_of(1 << 20, b'a')).unwrap();
    fs::write(root.join("report.md"), "regular").unwrap();
    fs::write(root.join("target.md"), "target").unwrap();
    // The name is swapped for a link after the read-ahead chose it and before the walk.
    let swap = |rel: &str| {
        if rel == "report.md" {
            fs::remove_file(root.join("report.md")).unwrap();
            symlink("target.md", root.join("report.md")).unwrap();
        }
        rel != "target.md"
    };
    let snap = Snapshot::scan_reading(root, Limits::default(), &swap).unwrap();
    assert!(snap.get("report.md").unwrap().is_symlink());
    fs::write(root.join("target.md"), "target, later").unwrap();
    // Read as the walk listed it (a link), when asked: not the bytes read ahead.
    assert_eq!(snap.read("report.md").unwrap().bytes, b"target, later");
    assert_eq!(snap.read("big.md").unwrap().bytes, text_of(1 << 20, b'a'));
}

/// What the watched side can put at a wanted name beside a megabyte of reports (so the read
/// ahead runs): a FIFO is never opened and never hangs, a dangling symlink and a directory are
/// refused as the walk lists them; none of them reads as a file.
#[test]
fn a_read_ahead_never_opens_a_fifo_nor_takes_a_link_or_directory_for_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().to_path_buf();
    fs::write(root.join("report-A.md"), text_of(1 << 20, b'a')).unwrap();
    mkfifo(&root.join("report-B.md"));
    symlink("nowhere.md", root.join("report-C.md")).unwrap();
    fs::create_dir(root.join("report-D.md")).unwrap();
    let snap = within(10, move || {
        let wanted = |rel: &str| rel.starts_with("report-");
        Snapshot::scan_reading(&root, Limits::default(), &wanted).unwrap()
    });
    assert_eq!(snap.read("report-A.md").unwrap().bytes.len(), 1 << 20);
    for rel in ["report-B.md", "report-C.md", "report-D.md"] {
        let err = snap.read(rel).expect_err(rel);
        assert!(
            matches!(err, ReadError::NotRegular { .. }),
            "{rel}: {err:?}"
        );
    }
}

/// A walk started before the protocol said what to read lists what a scan lists, and its read
/// ahead is the files' one read, as [`Snapshot::scan_reading`]'s is.
#[test]
fn a_listing_started_early_is_the_snapshot_a_scan_makes() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    for shots in ["shots/1440", "shots/768"] {
        fs::create_dir_all(root.join(shots)).unwrap();
        for i in 0..300 {
            fs::write(root.join(format!("{shots}/s-{i}.png")), "png").unwrap();
        }
    }
    fs::write(root.join("report-A.md"), text_of(1 << 20, b'a')).unwrap();
    fs::write(root.join("report-B.md"), text_of(1 << 19, b'b')).unwrap();
    fs::write(root.join("notes.txt"), "not wanted").unwrap();
    let wanted = |rel: &str| rel.ends_with(".md");
    let listing = Listing::start(root);
    let early = Snapshot::scan_reading_from(listing, Limits::default(), &wanted).unwrap();
    let scanned = Snapshot::scan_reading(root, Limits::default(), &wanted).unwrap();
    assert_eq!(rels(&early), rels(&scanned));
    assert_eq!(early.entries().len(), 1 + 2 + 600 + 3);
    // Both reports were read ahead: changed afterwards, the snapshot keeps what it read.
    fs::write(root.join("report-A.md"), "changed").unwrap();
    fs::write(root.join("report-B.md"), "changed").unwrap();
    fs::write(root.join("notes.txt"), "changed").unwrap();
    assert_eq!(
        early.read("report-A.md").unwrap().bytes,
        text_of(1 << 20, b'a')
    );
    assert_eq!(
        early.read("report-B.md").unwrap().bytes,
        text_of(1 << 19, b'b')
    );
    assert_eq!(
        early.read("notes.txt").unwrap().bytes,
        b"changed",
        "never read ahead"
    );
}

/// What makes a root unusable is said when the listing is asked for, as a scan says it.
#[test]
fn a_listing_started_early_on_a_bad_root_fails_when_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let wanted = |_: &str| true;
    let missing = Listing::start(&dir.path().join("nope"));
    let err = Snapshot::scan_reading_from(missing, Limits::default(), &wanted).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::NotFound);
    assert!(err.to_string().contains("nope`"), "{err}");
    fs::write(dir.path().join("file"), "x").unwrap();
    let file = Listing::start(&dir.path().join("file"));
    let err = Snapshot::scan_reading_from(file, Limits::default(), &wanted).unwrap_err();
    assert_eq!(err.kind(), io::ErrorKind::InvalidInput);
}

#[test]
fn a_change_in_a_linked_folder_is_named_under_the_link_too() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir_all(dir.path().join("captures/768")).unwrap();
    fs::write(dir.path().join("captures/768/cold-look.png"), "x").unwrap();
    fs::write(dir.path().join("capturesX"), "x").unwrap();
    symlink("captures", dir.path().join("screenshots")).unwrap();
    let snap = Snapshot::scan(dir.path(), Limits::default()).unwrap();
    assert!(snap.get("screenshots/768/cold-look.png").is_some());
    let changed = |c: &[&str]| {
        let c: Vec<String> = c.iter().map(|s| s.to_string()).collect();
        snap.aliases(&c)
    };
    assert_eq!(
        changed(&["captures/768/cold-look.png"]),
        ["screenshots/768/cold-look.png"]
    );
    assert_eq!(changed(&["captures"]), ["screenshots"]);
    assert!(changed(&["capturesX", "EXECUTION-TRACKER.md"]).is_empty());
    // No link: nothing to add.
    fs::remove_file(dir.path().join("screenshots")).unwrap();
    let plain = Snapshot::scan(dir.path(), Limits::default()).unwrap();
    assert!(plain
        .aliases(&["captures/768/cold-look.png".to_string()])
        .is_empty());
}
