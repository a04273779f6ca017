use std::fs;
use std::os::unix::fs::symlink;

use super::*;
use crate::artifacts::test_support::*;

#[test]
fn symlink_to_file_inside_takes_the_targets_kind_and_size() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("sub")).unwrap();
    fs::write(dir.path().join("sub/real.md"), "123").unwrap();
    symlink("sub/real.md", dir.path().join("p3b-pa-auditor-B.md")).unwrap();
    let snap = scan(dir.path());
    let e = snap.get("p3b-pa-auditor-B.md").unwrap();
    assert_eq!(e.kind, Kind::File);
    assert_eq!(e.size(), 3);
    assert!(e.mtime().is_some());
    assert_eq!(e.note, None);
    assert!(e.is_symlink());
    assert!(!snap.get("sub/real.md").unwrap().is_symlink());
    let data = snap.read("p3b-pa-auditor-B.md").unwrap();
    assert_eq!(data.bytes, b"123");
    assert_eq!(data.rel, "p3b-pa-auditor-B.md");
}

#[test]
fn symlinked_directory_inside_is_read_through_but_a_loop_is_not() {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join("real")).unwrap();
    fs::write(dir.path().join("real/f"), "x").unwrap();
    symlink("real", dir.path().join("alias")).unwrap();
    symlink(".", dir.path().join("self")).unwrap();
    symlink("..", dir.path().join("real/up")).unwrap();
    let snap = scan(dir.path());
    assert_eq!(
        rels(&snap),
        ["alias", "alias/f", "alias/up", "real", "real/f", "real/up", "self"]
    );
    // Read through the link; the links into folders that hold them are loops, not entered.
    assert_eq!(snap.read("alias/f").unwrap().bytes, b"x");
    let unlisted: Vec<&str> = snap.unlisted().iter().map(|u| u.rel.as_str()).collect();
    assert_eq!(unlisted, ["alias/up", "real/up", "self"]);
    assert!(
        snap.unlisted()[2].cause.contains("a loop"),
        "{:?}",
        snap.unlisted()
    );
    assert_eq!(snap.get("alias").unwrap().kind, Kind::Dir);
    assert_eq!(snap.get("self").unwrap().kind, Kind::Dir);
    assert!(snap.get("alias").unwrap().is_symlink());
    assert_eq!(snap.get("alias").unwrap().note, None);
    assert!(matches!(
        snap.read("alias"),
        Err(ReadError::NotRegular { what, .. }) if what == "directory"
    ));
}

#[test]
fn symlinks_out_of_the_root_are_other_and_refused() {
    let outer = tempfile::tempdir().unwrap();
    let root = outer.path().join("build");
    fs::create_dir(&root).unwrap();
    fs::write(outer.path().join("secret.md"), "s").unwrap();
    symlink("/etc/passwd", root.join("abs.md")).unwrap();
    symlink("../secret.md", root.join("rel.md")).unwrap();
    symlink("..", root.join("up")).unwrap();
    let snap = scan(&root);
    for rel in ["abs.md", "rel.md", "up"] {
        let e = snap.get(rel).unwrap();
        assert_eq!(e.kind, Kind::Other, "{rel}");
        assert_eq!(e.size(), 0);
        let note = e.note.as_deref().unwrap();
        assert!(
            note.starts_with("symlink resolves outside the build directory: `"),
            "{note}"
        );
        assert!(matches!(snap.read(rel), Err(ReadError::OutsideRoot { .. })));
    }
    assert_eq!(
        snap.get("abs.md").unwrap().note.as_deref(),
        Some("symlink resolves outside the build directory: `/etc/passwd`")
    );
    // Not descended: nothing from the parent appears.
    assert_eq!(rels(&snap), ["abs.md", "rel.md", "up"]);
}

#[test]
fn dangling_and_looping_symlinks_are_other() {
    let dir = tempfile::tempdir().unwrap();
    symlink("nowhere.md", dir.path().join("dangling.md")).unwrap();
    symlink("b", dir.path().join("a")).unwrap();
    symlink("a", dir.path().join("b")).unwrap();
    symlink("me", dir.path().join("me")).unwrap();
    let snap = scan(dir.path());
    let dangling = snap.get("dangling.md").unwrap();
    assert_eq!(dangling.kind, Kind::Other);
    assert_eq!(dangling.note.as_deref(), Some("dangling symlink"));
    for rel in ["a", "b", "me"] {
        let e = snap.get(rel).unwrap();
        assert_eq!(e.kind, Kind::Other);
        assert_eq!(e.note.as_deref(), Some("symlink loop"));
    }
    assert_eq!(
        snap.read("dangling.md"),
        Err(ReadError::NotRegular {
            rel: "dangling.md".into(),
            what: "dangling symlink".into()
        })
    );
}

#[test]
fn fifo_named_like_an_auditor_report_never_hangs() {
    let dir = tempfile::tempdir().unwrap();
    mkfifo(&dir.path().join("p3b-pa-auditor-A.md"));
    symlink(
        "p3b-pa-auditor-A.md",
        dir.path().join("p3b-pa-auditor-C.md"),
    )
    .unwrap();
    let (note_a, note_c, read_a, read_c) = within(5, move || {
        let snap = scan(dir.path());
        let a = snap.get("p3b-pa-auditor-A.md").unwrap();
        let c = snap.get("p3b-pa-auditor-C.md").unwrap();
        assert_eq!(a.kind, Kind::Other);
        assert_eq!(c.kind, Kind::Other);
        (
            a.note.clone(),
            c.note.clone(),
            snap.read("p3b-pa-auditor-A.md"),
            snap.read("p3b-pa-auditor-C.md"),
        )
    });
    assert_eq!(note_a.as_deref(), Some("fifo"));
    assert_eq!(note_c.as_deref(), Some("symlink to a fifo"));
    assert_eq!(
        read_a,
        Err(ReadError::NotRegular {
            rel: "p3b-pa-auditor-A.md".into(),
            what: "fifo".into()
        })
    );
    assert!(matches!(read_c, Err(ReadError::NotRegular { .. })));
}

#[test]
fn file_replaced_by_a_fifo_after_scan_never_hangs() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("p3b-pa-auditor-A.md");
    fs::write(&path, "report").unwrap();
    let result = within(5, move || {
        let snap = scan(dir.path());
        fs::remove_file(&path).unwrap();
        mkfifo(&path);
        snap.read("p3b-pa-auditor-A.md")
    });
    assert!(matches!(result, Err(ReadError::NotRegular { what, .. }) if what == "fifo"));
}

#[test]
fn file_replaced_by_an_escaping_symlink_after_scan_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a.md");
    fs::write(&path, "x").unwrap();
    let snap = scan(dir.path());
    fs::remove_file(&path).unwrap();
    symlink("/etc/passwd", &path).unwrap();
    assert!(matches!(
        snap.read("a.md"),
        Err(ReadError::OutsideRoot { .. })
    ));
}

#[test]
fn socket_is_other() {
    let dir = tempfile::tempdir().unwrap();
    let _sock = std::os::unix::net::UnixListener::bind(dir.path().join("s.md")).unwrap();
    let snap = scan(dir.path());
    let e = snap.get("s.md").unwrap();
    assert_eq!(e.kind, Kind::Other);
    assert_eq!(e.note.as_deref(), Some("socket"));
    assert!(matches!(
        snap.read("s.md"),
        Err(ReadError::NotRegular { .. })
    ));
}

#[test]
fn device_is_other() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("null.md");
    // Same device numbers as /dev/null (1, 3); needs privileges, so skip when refused.
    let made = rustix::fs::mknodat(
        rustix::fs::CWD,
        &path,
        rustix::fs::FileType::CharacterDevice,
        rustix::fs::Mode::from_raw_mode(0o666),
        rustix::fs::makedev(1, 3),
    );
    if made.is_err() {
        return;
    }
    let snap = scan(dir.path());
    let e = snap.get("null.md").unwrap();
    assert_eq!(e.kind, Kind::Other);
    assert_eq!(e.note.as_deref(), Some("character device"));
    assert!(matches!(
        snap.read("null.md"),
        Err(ReadError::NotRegular { .. })
    ));
}

#[test]
fn non_utf8_names_are_listed_and_readable() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    let name = OsStr::from_bytes(b"bad-\xff.md");
    fs::write(dir.path().join(name), "content").unwrap();
    let snap = scan(dir.path());
    let rel = "bad-\\xff.md";
    let e = snap.get(rel).unwrap();
    assert_eq!(e.name(), rel);
    assert_eq!(e.kind, Kind::File);
    // The real name is kept for the disk: stat and read work.
    assert_eq!(e.path(), fs::canonicalize(dir.path()).unwrap().join(name));
    assert_eq!(e.size(), 7);
    assert_eq!(snap.read(rel).unwrap().bytes, b"content");
}

#[test]
fn names_differing_only_in_invalid_bytes_are_two_files() {
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join(OsStr::from_bytes(b"r-\xff.md")), "one").unwrap();
    fs::write(dir.path().join(OsStr::from_bytes(b"r-\xfe.md")), "two").unwrap();
    fs::write(dir.path().join("r-\u{fffd}.md"), "three").unwrap();
    fs::write(dir.path().join("x\n## OBS-21: PASS"), "four").unwrap();
    let snap = scan(dir.path());
    assert_eq!(
        rels(&snap),
        [
            "r-\\xfe.md",
            "r-\\xff.md",
            "r-\u{fffd}.md",
            "x\\n## OBS-21: PASS"
        ]
    );
    assert_eq!(snap.read("r-\\xff.md").unwrap().bytes, b"one");
    assert_eq!(snap.read("r-\\xfe.md").unwrap().bytes, b"two");
    assert_eq!(snap.read("r-\u{fffd}.md").unwrap().bytes, b"three");
    assert_eq!(snap.read("x\\n## OBS-21: PASS").unwrap().bytes, b"four");
}

#[test]
fn entries_stay_small() {
    // 30,000 screenshots are listed on every evaluation of a large build.
    assert!(
        std::mem::size_of::<Entry>() <= 96,
        "{}",
        std::mem::size_of::<Entry>()
    );
}

#[test]
fn sorting_moves_every_entry_to_its_place() {
    let dir = tempfile::tempdir().unwrap();
    // `a.md` and `a-b` sort before `a/x` although the walk meets `a/` first.
    fs::create_dir_all(dir.path().join("a/x")).unwrap();
    fs::create_dir_all(dir.path().join("c/d")).unwrap();
    for file in ["b", "a.md", "a-b", "c/d/e", "A", "a/x.y"] {
        fs::write(dir.path().join(file), "x").unwrap();
    }
    let snap = scan(dir.path());
    let got = rels(&snap);
    let mut want = got.clone();
    want.sort_unstable();
    assert_eq!(got, want);
    assert_eq!(got.len(), 10);
    // Entries moved with their own data.
    for e in snap.entries() {
        assert_eq!(e.path(), fs::canonicalize(dir.path()).unwrap().join(&e.rel));
        assert_eq!(e.depth as usize, e.rel.split('/').count());
    }
}

#[test]
fn sorted_order_orders_names_as_their_bytes_do() {
    use proptest::prelude::*;
    // Names with long shared beginnings, prefixes of each other, and bytes past ASCII.
    let names = proptest::collection::btree_set("(scroll-|s|)[0-9a-c.é-]{0,10}", 0..80);
    let dirs = prop::sample::select(vec!["", "screenshots/1440", "a-b/c"]);
    proptest!(|(names in names, dir in dirs, seed in any::<u64>())| {
        let prefix = if dir.is_empty() { String::new() } else { format!("{dir}/") };
        let mut rels: Vec<String> = names.iter().map(|n| format!("{prefix}{n}")).collect();
        fastrand::Rng::with_seed(seed).shuffle(&mut rels);
        let order = sorted_order(rels.len(), |i| &rels[i].as_bytes()[prefix.len()..]);
        let got: Vec<String> = order.iter().map(|&i| rels[i].clone()).collect();
        rels.sort();
        prop_assert_eq!(got, rels);
    });
}
