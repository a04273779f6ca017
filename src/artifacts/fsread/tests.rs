use super::*;
use std::path::PathBuf;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

fn canonical_tempdir() -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let root = fs::canonicalize(dir.path()).unwrap();
    (dir, root)
}

fn mkfifo(path: &Path) {
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::from_raw_mode(0o644),
    )
    .expect("mkfifo");
}

/// Runs `f` on another thread and fails the test if it does not finish in time.
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .expect("operation hung")
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

#[test]
fn from_bytes_sets_size_and_hash() {
    let data = FileData::from_bytes("a.md", b"abc".to_vec(), None);
    assert_eq!(data.rel, "a.md");
    assert_eq!(data.size, 3);
    assert_eq!(data.sha256, sha256_hex(b"abc"));
    assert_eq!(data.mtime, None);
}

#[test]
fn text_is_lossy_and_utf8_is_detected() {
    let good = FileData::from_bytes("a", "héllo".as_bytes().to_vec(), None);
    assert!(good.is_valid_utf8());
    assert_eq!(good.text(), "héllo");
    let bad = FileData::from_bytes("b", vec![b'a', 0xff, b'b'], None);
    assert!(!bad.is_valid_utf8());
    assert_eq!(bad.text(), "a\u{fffd}b");
    let empty = FileData::from_bytes("c", Vec::new(), None);
    assert!(empty.is_valid_utf8());
    assert_eq!(empty.text(), "");
}

#[test]
fn looks_binary_only_inspects_first_8_kib() {
    let mut bytes = vec![b'x'; 10_000];
    assert!(!FileData::from_bytes("a", bytes.clone(), None).looks_binary());
    bytes[8191] = 0;
    assert!(FileData::from_bytes("a", bytes.clone(), None).looks_binary());
    bytes[8191] = b'x';
    bytes[8192] = 0;
    assert!(!FileData::from_bytes("a", bytes, None).looks_binary());
    assert!(!FileData::from_bytes("a", Vec::new(), None).looks_binary());
    assert!(FileData::from_bytes("a", vec![0], None).looks_binary());
}

#[test]
fn debug_does_not_dump_contents() {
    let data = FileData::from_bytes("a", vec![b'z'; 1000], None);
    let shown = format!("{data:?}");
    assert!(shown.contains("<1000 bytes>"));
    assert!(!shown.contains("zzzz"));
}

#[test]
fn describe_type_names_each_kind() {
    let (_dir, root) = canonical_tempdir();
    fs::write(root.join("f"), "x").unwrap();
    mkfifo(&root.join("p"));
    let _sock = std::os::unix::net::UnixListener::bind(root.join("s")).unwrap();
    std::os::unix::fs::symlink("f", root.join("l")).unwrap();
    let name = |p: &str| describe_type(&fs::symlink_metadata(root.join(p)).unwrap().file_type());
    assert_eq!(name("f"), "regular file");
    assert_eq!(name("."), "directory");
    assert_eq!(name("p"), "fifo");
    assert_eq!(name("s"), "socket");
    assert_eq!(name("l"), "symlink");
    let dev = describe_type(&fs::metadata("/dev/null").unwrap().file_type());
    assert_eq!(dev, "character device");
}

#[test]
fn io_error_maps_kinds() {
    let nf = io::Error::from(io::ErrorKind::NotFound);
    assert_eq!(io_error("x", &nf), ReadError::NotFound("x".into()));
    let denied = io::Error::from_raw_os_error(libc::EACCES);
    match io_error("x", &denied) {
        ReadError::Io {
            rel,
            message,
            source,
        } => {
            assert_eq!(rel, "x");
            assert!(message.starts_with("permission denied"), "{message}");
            let source = source.expect("the system's error is kept");
            assert_eq!(source.0.kind(), io::ErrorKind::PermissionDenied);
        }
        other => panic!("unexpected {other:?}"),
    }
    let looped = io::Error::from_raw_os_error(libc::ELOOP);
    assert_eq!(
        io_error("x", &looped),
        ReadError::NotRegular {
            rel: "x".into(),
            what: "symlink loop".into()
        }
    );
}

#[test]
fn lowercase_message_lowers_first_letter_only() {
    let err = io::Error::other("Boom at `X`");
    assert_eq!(lowercase_message(&err), "boom at `X`");
    let empty = io::Error::other("");
    assert_eq!(lowercase_message(&empty), "");
}

#[test]
fn error_messages_are_lowercase_with_backticks() {
    let errors = [
        ReadError::NotFound("a.md".into()),
        ReadError::NotRegular {
            rel: "a.md".into(),
            what: "fifo".into(),
        },
        ReadError::OutsideRoot {
            rel: "a.md".into(),
            target: "/etc/passwd".into(),
        },
        ReadError::TooLarge {
            rel: "a.md".into(),
            size: 10,
            cap: 5,
        },
        ReadError::Io {
            rel: "a.md".into(),
            message: "permission denied".into(),
            source: None,
        },
    ];
    for err in errors {
        let text = err.to_string();
        assert!(text.contains("`a.md`"), "{text}");
        let first = text.chars().find(|c| c.is_alphabetic()).unwrap();
        assert!(first.is_lowercase(), "{text}");
        assert_eq!(err.rel(), "a.md");
    }
    let outside = ReadError::OutsideRoot {
        rel: "a".into(),
        target: "/etc/passwd".into(),
    };
    assert!(outside.to_string().contains("`/etc/passwd`"));
}

#[test]
fn reads_a_regular_file() {
    let (_dir, root) = canonical_tempdir();
    fs::write(root.join("a.md"), "hello").unwrap();
    let data = read_file(&root, &root.join("a.md"), "a.md", 100).unwrap();
    assert_eq!(data.bytes, b"hello");
    assert_eq!(data.size, 5);
    assert_eq!(data.sha256, sha256_hex(b"hello"));
    assert!(data.mtime.is_some());
}

#[test]
fn a_large_file_reads_into_a_mapping_with_the_same_bytes_and_hash() {
    let (_dir, root) = canonical_tempdir();
    let text: Vec<u8> = (0..(3 << 20) + 5).map(|i| b'a' + (i % 26) as u8).collect();
    fs::write(root.join("big.md"), &text).unwrap();
    let data = read_file(&root, &root.join("big.md"), "big.md", 64 << 20).unwrap();
    assert_eq!(data.bytes.is_mapped(), cfg!(target_os = "linux"));
    assert_eq!(data.bytes, text);
    assert_eq!(data.size, text.len() as u64);
    assert_eq!(data.sha256, sha256_hex(&text));
    // The cap holds for a mapped read as for any: one byte under is refused.
    let cap = text.len() as u64 - 1;
    assert_eq!(
        read_file(&root, &root.join("big.md"), "big.md", cap),
        Err(ReadError::TooLarge {
            rel: "big.md".into(),
            size: text.len() as u64,
            cap
        })
    );
}

#[test]
fn cap_is_inclusive() {
    let (_dir, root) = canonical_tempdir();
    fs::write(root.join("a"), "12345").unwrap();
    assert!(read_file(&root, &root.join("a"), "a", 5).is_ok());
    assert_eq!(
        read_file(&root, &root.join("a"), "a", 4),
        Err(ReadError::TooLarge {
            rel: "a".into(),
            size: 5,
            cap: 4
        })
    );
    fs::write(root.join("empty"), "").unwrap();
    assert_eq!(
        read_file(&root, &root.join("empty"), "empty", 0)
            .unwrap()
            .size,
        0
    );
    assert!(read_file(&root, &root.join("a"), "a", u64::MAX).is_ok());
}

#[cfg(target_os = "linux")]
#[test]
fn file_growing_past_its_reported_size_is_cut_off() {
    // procfs files report size 0 but yield content: the reported size passes the check, so only
    // the cap + 1 read limit stops the read.
    let root = Path::new("/proc");
    let path = Path::new("/proc/self/status");
    let meta = fs::metadata(path).unwrap();
    assert_eq!(meta.len(), 0);
    match read_file(root, path, "status", 8) {
        Err(ReadError::TooLarge { size, cap, .. }) => {
            assert_eq!(cap, 8);
            assert_eq!(size, 9);
        }
        other => panic!("unexpected {other:?}"),
    }
}

#[test]
fn missing_file_is_not_found() {
    let (_dir, root) = canonical_tempdir();
    assert_eq!(
        read_file(&root, &root.join("gone.md"), "gone.md", 100),
        Err(ReadError::NotFound("gone.md".into()))
    );
}

#[test]
fn directory_is_not_regular() {
    let (_dir, root) = canonical_tempdir();
    fs::create_dir(root.join("d")).unwrap();
    assert_eq!(
        read_file(&root, &root.join("d"), "d", 100),
        Err(ReadError::NotRegular {
            rel: "d".into(),
            what: "directory".into()
        })
    );
}

#[test]
fn fifo_is_refused_without_hanging() {
    let (dir, root) = canonical_tempdir();
    let fifo = root.join("p3b-pa-auditor-A.md");
    mkfifo(&fifo);
    let result = within(5, move || {
        let _keep = dir;
        read_file(&root, &fifo, "p3b-pa-auditor-A.md", 100)
    });
    assert_eq!(
        result,
        Err(ReadError::NotRegular {
            rel: "p3b-pa-auditor-A.md".into(),
            what: "fifo".into()
        })
    );
}

#[test]
fn fifo_reaching_open_is_caught_on_the_descriptor() {
    // Simulates the race: the path was a regular file when checked, a FIFO when opened.
    let (dir, root) = canonical_tempdir();
    let fifo = root.join("p");
    mkfifo(&fifo);
    let result = within(5, move || {
        let _keep = dir;
        open_regular(&fifo, "p", 100).map(|_| ())
    });
    assert_eq!(
        result,
        Err(ReadError::NotRegular {
            rel: "p".into(),
            what: "fifo".into()
        })
    );
}

#[test]
fn open_regular_refuses_a_final_symlink() {
    let (_dir, root) = canonical_tempdir();
    fs::write(root.join("t"), "x").unwrap();
    std::os::unix::fs::symlink("t", root.join("l")).unwrap();
    assert!(matches!(
        open_regular(&root.join("l"), "l", 100),
        Err(ReadError::NotRegular { .. }) | Err(ReadError::Io { .. })
    ));
    assert!(open_regular(&root.join("t"), "t", 100).is_ok());
}

#[test]
fn open_regular_rechecks_size() {
    let (_dir, root) = canonical_tempdir();
    fs::write(root.join("t"), "xyz").unwrap();
    assert!(matches!(
        open_regular(&root.join("t"), "t", 2),
        Err(ReadError::TooLarge {
            size: 3,
            cap: 2,
            ..
        })
    ));
}

#[test]
fn socket_and_device_are_refused() {
    let (_dir, root) = canonical_tempdir();
    let _sock = std::os::unix::net::UnixListener::bind(root.join("s")).unwrap();
    assert!(matches!(
        read_file(&root, &root.join("s"), "s", 100),
        Err(ReadError::NotRegular { what, .. }) if what == "socket"
    ));
    // /dev/null read with root "/" so only the type check can refuse it.
    assert!(matches!(
        read_file(Path::new("/"), Path::new("/dev/null"), "null", 100),
        Err(ReadError::NotRegular { what, .. }) if what == "character device"
    ));
}

#[test]
fn symlink_inside_root_is_followed() {
    let (_dir, root) = canonical_tempdir();
    fs::create_dir(root.join("sub")).unwrap();
    fs::write(root.join("sub/t.md"), "target").unwrap();
    std::os::unix::fs::symlink("sub/t.md", root.join("l.md")).unwrap();
    let data = read_file(&root, &root.join("l.md"), "l.md", 100).unwrap();
    assert_eq!(data.bytes, b"target");
    assert_eq!(data.rel, "l.md");
}

#[test]
fn symlink_outside_root_is_refused() {
    let (_outer, outer) = canonical_tempdir();
    let root = outer.join("build");
    fs::create_dir(&root).unwrap();
    fs::write(outer.join("secret"), "s").unwrap();
    std::os::unix::fs::symlink("../secret", root.join("rel")).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", root.join("abs")).unwrap();
    match read_file(&root, &root.join("rel"), "rel", 100) {
        Err(ReadError::OutsideRoot { rel, target }) => {
            assert_eq!(rel, "rel");
            assert_eq!(target, outer.join("secret").display().to_string());
        }
        other => panic!("unexpected {other:?}"),
    }
    assert!(matches!(
        read_file(&root, &root.join("abs"), "abs", 100),
        Err(ReadError::OutsideRoot { .. })
    ));
}

#[test]
fn symlinked_parent_outside_root_is_refused() {
    let (_outer, outer) = canonical_tempdir();
    let root = outer.join("build");
    fs::create_dir(&root).unwrap();
    fs::create_dir(outer.join("elsewhere")).unwrap();
    fs::write(outer.join("elsewhere/f"), "x").unwrap();
    std::os::unix::fs::symlink("../elsewhere", root.join("d")).unwrap();
    assert!(matches!(
        read_file(&root, &root.join("d/f"), "d/f", 100),
        Err(ReadError::OutsideRoot { .. })
    ));
}

#[test]
fn dangling_symlink_and_loop_are_not_regular() {
    let (_dir, root) = canonical_tempdir();
    std::os::unix::fs::symlink("nowhere", root.join("dangling")).unwrap();
    std::os::unix::fs::symlink("loop2", root.join("loop1")).unwrap();
    std::os::unix::fs::symlink("loop1", root.join("loop2")).unwrap();
    assert_eq!(
        read_file(&root, &root.join("dangling"), "dangling", 100),
        Err(ReadError::NotRegular {
            rel: "dangling".into(),
            what: "dangling symlink".into()
        })
    );
    assert_eq!(
        read_file(&root, &root.join("loop1"), "loop1", 100),
        Err(ReadError::NotRegular {
            rel: "loop1".into(),
            what: "symlink loop".into()
        })
    );
}

#[test]
fn symlink_to_fifo_is_refused_without_hanging() {
    let (dir, root) = canonical_tempdir();
    mkfifo(&root.join("p"));
    std::os::unix::fs::symlink("p", root.join("l")).unwrap();
    let result = within(5, move || {
        let _keep = dir;
        read_file(&root, &root.join("l"), "l", 100)
    });
    assert!(matches!(result, Err(ReadError::NotRegular { what, .. }) if what == "fifo"));
}

#[test]
fn permission_denied_is_io() {
    if is_root() {
        // root reads regardless of mode bits; the mapping is covered by `io_error_maps_kinds`.
        return;
    }
    use std::os::unix::fs::PermissionsExt;
    let (_dir, root) = canonical_tempdir();
    let path = root.join("locked");
    fs::write(&path, "x").unwrap();
    fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).unwrap();
    assert!(matches!(
        read_file(&root, &path, "locked", 100),
        Err(ReadError::Io { .. })
    ));
}

#[test]
fn lossy_borrows_valid_text_and_marks_each_invalid_sequence() {
    let valid = "ünïcode ✓\n".as_bytes();
    assert!(matches!(lossy(valid), std::borrow::Cow::Borrowed(t) if t.as_bytes() == valid));
    assert_eq!(lossy(b"a\xffb\xc3"), "a\u{fffd}b\u{fffd}");
    assert_eq!(lossy(b""), "");
}
