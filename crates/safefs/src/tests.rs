use std::fs;
use std::os::unix::fs::symlink;
use std::os::unix::fs::MetadataExt;

use super::*;

fn mkfifo(path: &Path) {
    rustix::fs::mkfifoat(CWD, path, Mode::from_raw_mode(0o644)).unwrap();
}

#[test]
fn a_fifo_is_refused_without_blocking_and_named() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("pipe");
    mkfifo(&fifo);
    let err = read_file(&fifo, 1024).unwrap_err();
    assert!(
        matches!(&err, FsError::NotRegular { path, what: "fifo" } if path == &fifo),
        "{err:?}"
    );
    assert!(err.to_string().contains("pipe"), "{err}");
    assert!(err.to_string().contains("fifo"), "{err}");
}

#[test]
fn a_symlink_is_refused_with_its_cause() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("real"), "x").unwrap();
    let link = dir.path().join("link");
    symlink(dir.path().join("real"), &link).unwrap();
    let err = read_file(&link, 1024).unwrap_err();
    assert!(
        matches!(&err, FsError::Symlink { path, .. } if path == &link),
        "{err:?}"
    );
    let source = std::error::Error::source(&err).expect("the system's error is kept");
    assert!(
        source.to_string().to_lowercase().contains("symbolic links"),
        "{source}"
    );
}

#[test]
fn a_directory_and_an_oversized_file_are_refused_and_absence_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let err = read_file(dir.path(), 1024).unwrap_err();
    assert!(
        matches!(
            err,
            FsError::NotRegular {
                what: "directory",
                ..
            }
        ),
        "{err:?}"
    );
    let big = dir.path().join("big");
    fs::write(&big, vec![b'a'; 100]).unwrap();
    let err = read_file(&big, 99).unwrap_err();
    assert!(
        matches!(&err, FsError::TooLarge { path, size: 100, cap: 99 } if path == &big),
        "{err:?}"
    );
    assert_eq!(read_file(&big, 100).unwrap().unwrap().len(), 100);
    assert!(read_file(&dir.path().join("none"), 10).unwrap().is_none());
}

#[test]
fn an_unreadable_file_keeps_the_permission_error() {
    if rustix::process::geteuid().is_root() {
        // Root reads whatever the mode says.
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let locked = dir.path().join("locked");
    fs::write(&locked, "x").unwrap();
    fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
    let err = read_file(&locked, 10).unwrap_err();
    match &err {
        FsError::Io { path, source } => {
            assert_eq!(path, &locked);
            assert_eq!(source.kind(), io::ErrorKind::PermissionDenied);
        }
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("permission denied"), "{err}");
}

#[test]
fn a_growing_read_stops_at_the_cap() {
    let bytes = [b'x'; 50];
    let err = read_capped(&bytes[..], 10, 20, Path::new("grows")).unwrap_err();
    assert!(
        matches!(
            err,
            FsError::TooLarge {
                size: 21,
                cap: 20,
                ..
            }
        ),
        "{err:?}"
    );
    assert_eq!(
        read_capped(&bytes[..], 50, 50, Path::new("g"))
            .unwrap()
            .len(),
        50
    );
}

#[test]
fn a_directory_swapped_for_a_symlink_is_not_opened() {
    let dir = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let link = dir.path().join("shots");
    symlink(outside.path(), &link).unwrap();
    assert!(open_dir(CWD, &link, false).is_err());
    assert!(open_dir(CWD, &link, true).is_ok());
    let top = OpenDir::open(dir.path(), None).unwrap();
    let err = open_dir_beneath(top.fd().unwrap(), b"shots").unwrap_err();
    let refused = [Some(libc::ELOOP), Some(libc::ENOTDIR)].contains(&err.raw_os_error());
    assert!(is_replaced(&err) || refused, "{err}");
}

#[test]
fn names_are_listed_with_their_types() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(dir.path().join("b"), "x").unwrap();
    fs::create_dir(dir.path().join("a")).unwrap();
    let mut open = OpenDir::open(dir.path(), None).unwrap();
    let mut heap = Vec::new();
    let names = open.names_into(&mut heap).unwrap();
    let got: Vec<_> = names
        .iter()
        .map(|(at, t)| (name_at(&heap, *at).to_os_string(), *t))
        .collect();
    assert_eq!(got.len(), 2);
    assert_eq!(got[0].0, "a");
    assert!(matches!(got[0].1, FileType::Directory | FileType::Unknown));
    assert_eq!(got[1].0, "b");
}

#[test]
fn a_directory_is_opened_within_its_base_links_inside_followed_and_none_out() {
    let top = tempfile::tempdir().unwrap();
    let base = top.path().join("base");
    let outside = top.path().join("outside");
    fs::create_dir_all(base.join("a/b")).unwrap();
    fs::create_dir(&outside).unwrap();
    symlink("a/b", base.join("in")).unwrap();
    symlink("../outside", base.join("up")).unwrap();
    symlink(&outside, base.join("abs")).unwrap();
    let fd = OpenDir::open(&base, None).unwrap();
    let fd = fd.fd().unwrap();
    let ino = |f: &OwnedFd| rustix::fs::fstat(f).unwrap().st_ino;
    let b = open_dir_within(fd, b"a/b").unwrap();
    assert_eq!(ino(&b), fs::metadata(base.join("a/b")).unwrap().ino());
    let via = open_dir_within(fd, b"in").unwrap();
    assert_eq!(ino(&via), ino(&b));
    assert_eq!(
        ino(&open_dir_within(fd, b"").unwrap()),
        fs::metadata(&base).unwrap().ino()
    );
    for bad in [&b"up"[..], b"abs", b"..", b"a/../../outside", b"/tmp"] {
        let err = open_dir_within(fd, bad).unwrap_err();
        assert!(is_replaced(&err), "{}: {err}", String::from_utf8_lossy(bad));
    }
    fs::write(base.join("file"), "x").unwrap();
    let err = open_dir_within(fd, b"file").unwrap_err();
    assert_eq!(err.raw_os_error(), Some(libc::ENOTDIR), "{err}");
}

#[test]
fn read_pieces_hands_over_every_byte_and_stops_one_past_the_cap() {
    let data: Vec<u8> = (0..(600 << 10)).map(|i| (i % 251) as u8).collect();
    let mut seen = Vec::new();
    let n = read_pieces(&data[..], data.len() as u64, |p| seen.extend_from_slice(p)).unwrap();
    assert_eq!(n, data.len() as u64);
    assert_eq!(seen, data, "every piece, in order");
    let mut seen = Vec::new();
    let n = read_pieces(&data[..], 1000, |p| seen.extend_from_slice(p)).unwrap();
    assert_eq!(n, 1001, "over the cap: one byte past it, no more");
    assert_eq!(seen, data[..1001]);
    assert_eq!(read_pieces(&b""[..], 0, |_| panic!("no piece")).unwrap(), 0);
}
