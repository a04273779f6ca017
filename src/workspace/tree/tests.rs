//! The walk and the work tree it records.

use super::fsat::{read_capped, stat_of, OpenDir, Unreadable};
use super::*;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{symlink, MetadataExt, PermissionsExt};
use std::time::Duration;

const SKIP: &[&str] = &[".git", ".tasks", ".referee"];

fn no_ignore(_: &[u8], _: bool) -> bool {
    false
}

fn opts(cap: u64) -> Options<'static> {
    Options {
        cap,
        skip_top: SKIP,
        ignored: &no_ignore,
        known: &|_: &[u8]| None,
        hash: gix::hash::Kind::Sha1,
    }
}

fn write(root: &Path, rel: &str, bytes: &[u8]) {
    let path = root.join(rel);
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(path, bytes).expect("write");
}

fn scan(root: &Path, cache: &mut StatCache) -> WorkTree {
    WorkTree::scan(root, &opts(1 << 20), cache).expect("scan")
}

fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// A fresh cache that trusts a file 20 ms after its last change (the tests then wait 60 ms
/// instead of the default 2 s).
fn quick_cache() -> StatCache {
    StatCache::new().with_margin(Duration::from_millis(20))
}

fn settle() {
    std::thread::sleep(Duration::from_millis(60));
}

const HELLO_OID: &str = "ce013625030ba8dba906f756967f9e9ca394464a";
const HELLO_SHA256: &str = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03";

#[test]
fn every_kind() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "a.txt", b"hello\n");
    write(root, "run.sh", b"#!/bin/sh\n");
    fs::set_permissions(root.join("run.sh"), fs::Permissions::from_mode(0o755)).expect("chmod");
    symlink("a.txt", root.join("in")).expect("symlink");
    symlink("/etc/passwd", root.join("out")).expect("symlink");
    symlink("nowhere", root.join("dangling")).expect("symlink");
    fs::create_dir(root.join("empty")).expect("mkdir");
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        root.join("pipe"),
        rustix::fs::Mode::from_raw_mode(0o644),
    )
    .expect("mkfifo");
    write(root, "nested/.git/HEAD", b"ref: refs/heads/main\n");
    write(root, "nested/roles.py", b"x = 1\n");
    write(root, "sub/.git", b"gitdir: ../.git/modules/sub\n");
    write(root, "sub/safety_x.py", b"y\n");

    let tree = scan(root, &mut StatCache::new());
    let e = |k: &str| {
        tree.entries
            .get(k)
            .unwrap_or_else(|| panic!("no entry {k}"))
    };

    let a = e("a.txt");
    assert_eq!(a.kind, Kind::File { exec: false });
    assert_eq!(a.oid.map(|o| o.to_string()).as_deref(), Some(HELLO_OID));
    assert_eq!(a.sha256_hex().as_deref(), Some(HELLO_SHA256));
    assert_eq!(a.size, 6);
    assert_eq!(a.unreadable, None);
    assert_eq!(e("run.sh").kind, Kind::File { exec: true });
    assert_eq!(e("run.sh").mode & 0o777, 0o755);

    assert_eq!(
        e("in").kind,
        Kind::Symlink {
            target: b"a.txt".to_vec()
        }
    );
    assert_eq!(e("in").oid, blob_oid(gix::hash::Kind::Sha1, b"a.txt").ok());
    assert_eq!(e("in").sha256, None);
    assert_eq!(
        e("out").kind,
        Kind::Symlink {
            target: b"/etc/passwd".to_vec()
        }
    );
    assert_eq!(
        e("dangling").kind,
        Kind::Symlink {
            target: b"nowhere".to_vec()
        }
    );
    assert_eq!(e("empty").kind, Kind::Dir);
    assert_eq!(e("empty").size, 0);
    assert_eq!(e("pipe").kind, Kind::Other("fifo"));
    assert_eq!(e("pipe").oid, None);

    assert_eq!(e("nested").kind, Kind::Dir);
    assert_eq!(e("nested/.git").kind, Kind::GitDir);
    assert!(!tree.entries.contains_key("nested/.git/HEAD"));
    assert!(e("nested/roles.py").oid.is_some());
    assert_eq!(e("sub/.git").kind, Kind::GitDir);
    assert_eq!(e("sub/.git").oid, None);
    assert!(e("sub/safety_x.py").oid.is_some());
    assert_eq!(tree.entries.len(), 13);
}

#[test]
fn skipped_top_level_names_are_not_entries() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, ".git/HEAD", b"x");
    write(root, ".tasks/t1.json", b"{}");
    write(root, ".referee/OBSERVER-STOP.md", b"x");
    write(root, "deep/.tasks/t.json", b"{}");
    let tree = scan(root, &mut StatCache::new());
    let keys: Vec<&str> = tree.entries.keys().map(String::as_str).collect();
    assert_eq!(keys, ["deep", "deep/.tasks", "deep/.tasks/t.json"]);
}

#[test]
fn ignored_directories_are_walked_but_not_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "__pycache__/roles.cpython-312.pyc", b"forged");
    write(root, "node_modules/a/b.js", b"12345");
    write(root, "debug.log", b"log");
    write(root, "keep.py", b"k\n");
    let asked = std::cell::RefCell::new(Vec::new());
    let ignored = |path: &[u8], is_dir: bool| {
        asked.borrow_mut().push(path.to_vec());
        (is_dir && (path == b"__pycache__" || path == b"node_modules")) || path.ends_with(b".log")
    };
    let options = Options {
        cap: 1 << 20,
        skip_top: SKIP,
        ignored: &ignored,
        known: &|_: &[u8]| None,
        hash: gix::hash::Kind::Sha1,
    };
    let mut cache = StatCache::new();
    let tree = WorkTree::scan(root, &options, &mut cache).expect("scan");
    let pyc = &tree.entries["__pycache__/roles.cpython-312.pyc"];
    assert!(pyc.ignored);
    assert_eq!((pyc.oid, pyc.sha256, pyc.size), (None, None, 6));
    assert_eq!(pyc.kind, Kind::File { exec: false });
    let js = &tree.entries["node_modules/a/b.js"];
    assert!(js.ignored && js.oid.is_none() && js.size == 5);
    assert!(tree.entries["node_modules/a"].ignored);
    assert!(tree.entries["debug.log"].ignored && tree.entries["debug.log"].oid.is_none());
    assert!(!tree.entries["keep.py"].ignored && tree.entries["keep.py"].oid.is_some());
    // Only keep.py was read; nothing below an ignored directory was asked about.
    assert_eq!(cache.reads(), 1);
    assert!(!asked
        .borrow()
        .iter()
        .any(|p| p.starts_with(b"node_modules/")));
}

#[test]
fn the_read_cap() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "ten", b"0123456789");
    write(root, "eleven", b"0123456789a");
    let tree = WorkTree::scan(root, &opts(10), &mut StatCache::new()).expect("scan");
    assert!(tree.entries["ten"].oid.is_some());
    let big = &tree.entries["eleven"];
    assert_eq!(
        big.unreadable.as_deref(),
        Some("over the read cap of 10 bytes")
    );
    assert_eq!((big.oid, big.size), (None, 11));
}

#[test]
fn unreadable_files_and_directories() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "secret", b"s");
    write(root, "closed/inside", b"i");
    fs::set_permissions(root.join("secret"), fs::Permissions::from_mode(0o000)).expect("chmod");
    fs::set_permissions(root.join("closed"), fs::Permissions::from_mode(0o000)).expect("chmod");
    let tree = scan(root, &mut StatCache::new());
    fs::set_permissions(root.join("closed"), fs::Permissions::from_mode(0o755)).expect("chmod");
    if is_root() {
        // root reads through mode 000: nothing to assert but that the scan went through.
        eprintln!("running as root: chmod 000 does not stop reads, permission checks skipped");
        assert!(tree.entries["secret"].oid.is_some());
        return;
    }
    let secret = &tree.entries["secret"];
    assert_eq!(secret.oid, None);
    assert!(secret
        .unreadable
        .as_deref()
        .is_some_and(|r| r.contains("permission denied")));
    let closed = &tree.entries["closed"];
    assert_eq!(closed.kind, Kind::Dir);
    assert!(closed
        .unreadable
        .as_deref()
        .is_some_and(|r| r.contains("permission denied")));
    assert!(!tree.entries.contains_key("closed/inside"));
}

#[test]
fn names_of_any_bytes_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let raw: &[u8] = b"d\xffir/na\xc3me\nwith space\t\xf4\x8f\xbf\xbf";
    let path = root.join(OsStr::from_bytes(raw));
    fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
    fs::write(&path, b"hello\n").expect("write");
    let tree = scan(root, &mut StatCache::new());
    let key = name::encode(raw);
    let entry = &tree.entries[&key];
    assert_eq!(entry.sha256_hex().as_deref(), Some(HELLO_SHA256));
    assert_eq!(name::to_path(root, &key), path);
    assert_eq!(
        fs::read(name::to_path(root, &key)).expect("read"),
        b"hello\n"
    );
    assert!(tree.entries.contains_key(&name::encode(b"d\xffir")));
}

#[test]
fn deep_trees() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let rel = vec!["d"; 1000].join("/");
    write(root, &format!("{rel}/leaf"), b"x");
    let tree = scan(root, &mut StatCache::new());
    assert_eq!(tree.entries.len(), 1001);
    assert!(tree.entries[&format!("{rel}/leaf")].oid.is_some());
}

#[test]
fn the_cache_is_trusted_until_the_file_changes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "f", b"one\n");
    settle();
    let mut cache = quick_cache();
    let first = scan(root, &mut cache);
    assert_eq!(cache.reads(), 1);
    let again = scan(root, &mut cache);
    assert_eq!(
        cache.reads(),
        1,
        "an unchanged, settled file is not read again"
    );
    assert_eq!(first, again);

    // Same size, mtime put back: ctime still moves, so it is read again.
    let mtime = filetime::FileTime::from_last_modification_time(
        &fs::metadata(root.join("f")).expect("stat"),
    );
    settle();
    fs::write(root.join("f"), b"two\n").expect("write");
    filetime::set_file_mtime(root.join("f"), mtime).expect("mtime");
    let edited = scan(root, &mut cache);
    assert_eq!(cache.reads(), 2);
    assert_ne!(edited.entries["f"].oid, first.entries["f"].oid);
    assert_eq!(
        edited.entries["f"].oid,
        blob_oid(gix::hash::Kind::Sha1, b"two\n").ok()
    );
}

#[test]
fn a_file_changed_within_the_margin_is_read_again() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "f", b"racy");
    // The default margin (2 s): the file was just written, so no read of it is trusted yet.
    let mut cache = StatCache::new();
    scan(root, &mut cache);
    scan(root, &mut cache);
    assert_eq!(cache.reads(), 2);
}

#[test]
fn rescan_follows_the_change() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "src/a.py", b"a\n");
    write(root, "src/b.py", b"b\n");
    write(root, "old/x/y.txt", b"y\n");
    write(root, "old/z.txt", b"z\n");
    settle();
    let mut cache = quick_cache();
    let options = opts(1 << 20);
    let mut tree = WorkTree::scan(root, &options, &mut cache).expect("scan");
    assert_eq!(cache.reads(), 4);

    // A changed file: only it is read.
    settle();
    write(root, "src/a.py", b"A!\n");
    tree.rescan(root, &["src/a.py".to_string()], &options, &mut cache);
    assert_eq!(cache.reads(), 5);
    assert_eq!(
        tree.entries["src/a.py"].oid,
        blob_oid(gix::hash::Kind::Sha1, b"A!\n").ok()
    );

    // A new directory: the event names a deep path, the new ancestor is walked.
    write(root, "new/deeper/n.txt", b"n\n");
    write(root, "new/m.txt", b"m\n");
    tree.rescan(
        root,
        &["new/deeper/n.txt".to_string()],
        &options,
        &mut cache,
    );
    assert_eq!(tree.entries["new"].kind, Kind::Dir);
    assert!(tree.entries["new/m.txt"].oid.is_some());
    assert!(tree.entries["new/deeper/n.txt"].oid.is_some());

    // A removed subtree: its entries and cached hashes go.
    fs::remove_dir_all(root.join("old")).expect("rm");
    let before = cache.len();
    tree.rescan(
        root,
        &["old".to_string(), ".git/index".to_string()],
        &options,
        &mut cache,
    );
    assert!(!tree.entries.keys().any(|k| k.starts_with("old")));
    assert_eq!(cache.len(), before - 2);

    // A file replaced by a directory.
    fs::remove_file(root.join("src/b.py")).expect("rm");
    write(root, "src/b.py/inner", b"i\n");
    tree.rescan(root, &["src/b.py/inner".to_string()], &options, &mut cache);
    assert_eq!(tree.entries["src/b.py"].kind, Kind::Dir);

    // The rescanned tree is the tree a full scan sees.
    assert_eq!(
        tree,
        WorkTree::scan(root, &options, &mut StatCache::new()).expect("scan")
    );
}

#[test]
fn the_cache_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("ws");
    write(&root, "a", b"a\n");
    write(&root, "b", b"b\n");
    settle();
    let state = dir.path().join("stat-cache.json");
    let mut cache = quick_cache();
    scan(&root, &mut cache);
    cache.save(&state).expect("save");

    // A restart: the loaded cache spares the reads.
    let mut loaded = StatCache::load(&state).with_margin(Duration::from_millis(20));
    assert_eq!(loaded.len(), 2);
    scan(&root, &mut loaded);
    assert_eq!(loaded.reads(), 0);

    // A path gone is dropped on save.
    fs::remove_file(root.join("b")).expect("rm");
    scan(&root, &mut loaded);
    loaded.save(&state).expect("save");
    assert_eq!(StatCache::load(&state).len(), 1);

    // Garbage, a wrong version or no file at all: an empty cache.
    fs::write(&state, b"{not json").expect("write");
    assert!(StatCache::load(&state).is_empty());
    fs::write(&state, br#"{"version":99,"entries":{}}"#).expect("write");
    assert!(StatCache::load(&state).is_empty());
    assert!(StatCache::load(&dir.path().join("missing")).is_empty());
}

#[test]
fn an_unlistable_root_is_an_error() {
    let dir = tempfile::tempdir().expect("tempdir");
    let missing = dir.path().join("missing");
    assert!(WorkTree::scan(&missing, &opts(10), &mut StatCache::new()).is_err());
    write(dir.path(), "file", b"x");
    assert!(WorkTree::scan(&dir.path().join("file"), &opts(10), &mut StatCache::new()).is_err());
}

#[test]
fn a_swapped_directory_or_file_is_not_followed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "d/f", b"f\n");
    write(root, "other/f", b"o\n");
    let meta = fs::metadata(root.join("other")).expect("stat");
    let other = (meta.dev(), meta.ino());
    // A directory that is not the one listed is refused, and so is a symlink in its place.
    let err = OpenDir::open(&root.join("d"), Some(other)).expect_err("refused");
    assert_eq!(err.to_string(), "replaced while being read");
    symlink("other", root.join("link")).expect("symlink");
    assert!(OpenDir::open(&root.join("link"), Some(other)).is_err());
    // A file that is not the one listed is not read.
    let d = OpenDir::open(&root.join("d"), None).expect("open d");
    let o = OpenDir::open(&root.join("other"), None).expect("open other");
    let f = OsStr::new("f");
    let listed = stat_of(&o.stat(f).expect("stat"));
    let err = read_capped(&d, f, &listed, 100).err().expect("refused");
    assert_eq!(err, Unreadable::Replaced);
    assert_eq!(err.to_string(), "replaced while being read");
    assert!(read_capped(&o, f, &listed, 100).is_ok());
    // Nor is a symlink put where the file was listed.
    fs::remove_file(root.join("other/f")).expect("rm");
    symlink("../d/f", root.join("other/f")).expect("symlink");
    assert!(read_capped(&o, f, &listed, 100).is_err());
}

#[test]
fn rescan_keeps_ignored_and_nested_repositories_as_a_scan_has_them() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "target/debug/x", b"x");
    write(root, "vendor/lib/.git/HEAD", b"ref\n");
    let ignored = |path: &[u8], is_dir: bool| is_dir && path == b"target";
    let options = Options {
        cap: 1 << 20,
        skip_top: SKIP,
        ignored: &ignored,
        known: &|_: &[u8]| None,
        hash: gix::hash::Kind::Sha1,
    };
    let mut cache = StatCache::new();
    let mut tree = WorkTree::scan(root, &options, &mut cache).expect("scan");
    write(root, "target/debug/y", b"y");
    write(root, "vendor/lib/.git/objects/ab", b"o");
    let paths = [
        "target/debug/y".to_string(),
        "vendor/lib/.git/objects/ab".to_string(),
    ];
    tree.rescan(root, &paths, &options, &mut cache);
    let y = &tree.entries["target/debug/y"];
    assert!(y.ignored && y.oid.is_none());
    assert_eq!(tree.entries["vendor/lib/.git"].kind, Kind::GitDir);
    assert!(!tree.entries.contains_key("vendor/lib/.git/objects"));
    assert_eq!(
        tree,
        WorkTree::scan(root, &options, &mut StatCache::new()).expect("scan")
    );
}

/// Every listing a lister sends for the tree at `root`, drained (the listers have finished).
fn listed_all(root: &Path) -> (Lister, Vec<lister::Listed>) {
    let l = Lister::start(root, SKIP).expect("start");
    let all: Vec<lister::Listed> = std::iter::from_fn(|| l.recv()).collect();
    (l, all)
}

/// The tree recorded at `root` from `all`, the listings `l` sent (no cache, files read up to 1 MiB).
fn recorded(root: &Path, l: &Lister, all: Vec<lister::Listed>) -> WorkTree {
    WorkTree::record_all(
        root,
        l.id,
        all.into_iter(),
        &opts(1 << 20),
        &mut StatCache::new(),
    )
    .expect("recorded")
}

#[test]
fn the_lister_sends_each_directory_once_after_its_parent() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    for i in 0..40 {
        write(root, &format!("a{i:02}/b/c/f"), b"x");
    }
    write(root, "sub/.git/HEAD", b"ref\n");
    write(root, ".git/HEAD", b"ref\n");
    write(root, ".tasks/t.json", b"{}");
    symlink("a00", root.join("link")).expect("symlink");
    let (_, all) = listed_all(root);
    // The root, 40 x (aNN, b, c), `sub`: never `.git` (at the top or below) nor `.tasks`.
    assert_eq!(all.len(), 1 + 40 * 3 + 1);
    let mut seen: BTreeMap<usize, Vec<u8>> = BTreeMap::new();
    for l in &all {
        if l.slot != 0 {
            let parent = l.rel[..l.rel.iter().rposition(|&b| b == b'/').unwrap_or(0)].to_vec();
            assert!(
                seen.values().any(|p| *p == parent),
                "{:?} came before its parent",
                String::from_utf8_lossy(&l.rel)
            );
        }
        assert!(
            seen.insert(l.slot, l.rel.clone()).is_none(),
            "slot sent twice"
        );
        let children = l.children.as_ref().expect("listed");
        for c in children {
            let walked = all.iter().any(|o| Some(o.slot) == c.sub);
            let name = l.name(c).as_bytes();
            assert!(name != b".git" || c.sub.is_none(), ".git is never walked");
            assert!(c.sub.is_none() || walked, "a slot without its listing");
        }
    }
    let top = all[0].children.as_ref().expect("root");
    let names: Vec<&[u8]> = top.iter().map(|c| all[0].name(c).as_bytes()).collect();
    assert_eq!(names.first(), Some(&&b"a00"[..]));
    assert!(!names.contains(&&b".git"[..]) && !names.contains(&&b".tasks"[..]));
    let link = top.iter().find(|c| all[0].name(c) == "link").expect("link");
    assert_eq!(
        link.link.as_ref().map(|r| r.as_ref().ok().cloned()),
        Some(Some(b"a00".to_vec()))
    );
}

#[test]
fn a_directory_swapped_after_its_listing_is_not_read_through() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    write(root, "d/f", b"listed\n");
    write(root, "e/f", b"listed\n");
    write(root, "outside/f", b"the other side\n");
    let (l, all) = listed_all(root);
    // Between the listing and the recording: `d` becomes a symlink to another directory with
    // a file of the same name, and `e` another directory. Neither was read yet (an empty
    // cache), and neither may be read through.
    fs::rename(root.join("d"), root.join("d-old")).expect("mv");
    symlink("outside", root.join("d")).expect("symlink");
    fs::rename(root.join("e"), root.join("e-old")).expect("mv");
    fs::create_dir(root.join("e")).expect("mkdir");
    write(root, "e/f", b"the other side\n");
    let tree = recorded(root, &l, all);
    for rel in ["d/f", "e/f"] {
        let e = &tree.entries[rel];
        assert!(e.oid.is_none(), "{rel} was read through the swap");
        assert!(e.unreadable.is_some(), "{rel}: {e:?}");
    }
    assert_eq!(
        tree.entries["e/f"].unreadable.as_deref(),
        Some("replaced while being read")
    );
    // Unswapped, the same listings are read.
    let dir2 = tempfile::tempdir().expect("tempdir");
    write(dir2.path(), "d/f", b"hello\n");
    let (l, all) = listed_all(dir2.path());
    let tree = recorded(dir2.path(), &l, all);
    assert_eq!(
        tree.entries["d/f"].oid.map(|o| o.to_string()).as_deref(),
        Some(HELLO_OID)
    );
}

#[test]
fn a_root_swapped_after_its_listing_is_not_read_through() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("ws");
    write(&root, "f", b"listed\n");
    write(dir.path(), "other/f", b"the other side\n");
    let (l, all) = listed_all(&root);
    fs::rename(&root, dir.path().join("ws-old")).expect("mv");
    fs::rename(dir.path().join("other"), &root).expect("mv");
    let tree = recorded(&root, &l, all);
    assert_eq!(
        tree.entries["f"].unreadable.as_deref(),
        Some("replaced while being read")
    );
}

#[test]
fn a_scan_from_listings_is_the_walk_of_the_tree() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    for i in 0..30 {
        write(
            root,
            &format!("p{i:02}/m{i}.py"),
            format!("{i}\n").as_bytes(),
        );
        write(root, &format!("p{i:02}/q/r.txt"), b"r\n");
    }
    write(root, "target/debug/x", b"x");
    write(root, "a-b", b"1");
    write(root, "a/x", b"2");
    write(root, "a0", b"3");
    symlink("a/x", root.join("ln")).expect("symlink");
    let ignored = |path: &[u8], is_dir: bool| is_dir && path == b"target";
    let options = Options {
        cap: 1 << 20,
        skip_top: SKIP,
        ignored: &ignored,
        known: &|_: &[u8]| None,
        hash: gix::hash::Kind::Sha1,
    };
    let tree = WorkTree::scan(root, &options, &mut StatCache::new()).expect("scan");
    // The rescan of everything below the root, one path at a time, is the old walk.
    let mut by_walk = WorkTree::default();
    let tops: Vec<String> = fs::read_dir(root)
        .expect("ls")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    by_walk.rescan(root, &tops, &options, &mut StatCache::new());
    assert_eq!(tree, by_walk);
    assert!(tree.entries["target/debug/x"].ignored);
    assert!(tree.entries["target/debug/x"].oid.is_none());
    assert!(tree.entries["p00/q/r.txt"].oid.is_some());
    assert_eq!(
        tree.entries["ln"].kind,
        Kind::Symlink {
            target: b"a/x".to_vec()
        }
    );
}

#[test]
fn a_listed_directory_is_opened_again_only_if_it_is_the_one_listed() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("ws");
    write(&root, "d/f", b"f\n");
    write(dir.path(), "other/f", b"o\n");
    let id_of = |p: &Path| {
        let m = fs::symlink_metadata(p).expect("stat");
        (m.dev(), m.ino())
    };
    let (root_id, d_id) = (id_of(&root), id_of(&root.join("d")));
    assert!(DirRef::listed(&root, b"d", d_id).get().is_ok());
    assert!(DirRef::listed(&root, b"", root_id).get().is_ok());
    // `d` replaced by a symlink to a directory, then by another directory.
    fs::rename(root.join("d"), root.join("d-old")).expect("mv");
    symlink(dir.path().join("other"), root.join("d")).expect("symlink");
    assert!(DirRef::listed(&root, b"d", d_id).get().is_err());
    fs::remove_file(root.join("d")).expect("rm");
    fs::rename(dir.path().join("other"), root.join("d")).expect("mv");
    assert_eq!(
        DirRef::listed(&root, b"d", d_id).get().err(),
        Some(Unreadable::Replaced)
    );
    // The root replaced by another directory.
    fs::rename(&root, dir.path().join("ws-old")).expect("mv");
    fs::create_dir(&root).expect("mkdir");
    assert_eq!(
        DirRef::listed(&root, b"", root_id).get().err(),
        Some(Unreadable::Replaced)
    );
}

#[test]
fn a_directory_opened_under_the_root_is_the_one_listed_or_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("ws");
    write(&root, "a/b/f", b"f\n");
    write(&root, "c/b/f", b"another\n");
    let top = OpenDir::open(&root, None).expect("open root");
    let id_of = |p: &Path| {
        let m = fs::symlink_metadata(p).expect("stat");
        (m.dev(), m.ino())
    };
    let b = id_of(&root.join("a/b"));
    let fd = || top.dir.fd().expect("fd");
    // By path and identity (`open_under`), and with no link followed (`open_beneath`, where
    // the kernel has `openat2`).
    let under = |rel: &str| OpenDir::open_under(fd(), OsStr::new(rel), b);
    let beneath = |rel: &str| OpenDir::open_beneath(fd(), OsStr::new(rel)).transpose();
    let listed = |d: io::Result<OpenDir>| d.expect("opened").names().expect("names");
    assert_eq!(listed(under("a/b")), ["f"]);
    let has_openat2 = beneath("a/b").is_some();
    if let Some(d) = beneath("a/b") {
        assert_eq!(listed(d), ["f"]);
    }
    // `a` replaced by a link to a folder with a `b` of its own (inside the tree): refused by
    // identity, and for the link on the way.
    fs::rename(root.join("a"), root.join("a-old")).expect("mv");
    symlink("c", root.join("a")).expect("symlink");
    let replaced = |d: Option<io::Result<OpenDir>>| d.map(|d| d.err().map(|e| e.to_string()));
    assert_eq!(
        replaced(Some(under("a/b"))),
        Some(Some("replaced while being read".to_string()))
    );
    if has_openat2 {
        assert_eq!(
            replaced(beneath("a/b")),
            Some(Some("replaced while being read".to_string()))
        );
    }
    // A link at the last name is never followed, even to the directory listed.
    fs::remove_file(root.join("a")).expect("rm");
    fs::rename(root.join("a-old"), root.join("a")).expect("mv back");
    fs::rename(root.join("a/b"), root.join("a/b-old")).expect("mv");
    symlink("b-old", root.join("a/b")).expect("symlink");
    assert!(under("a/b").is_err());
    assert!(beneath("a/b").is_none_or(|d| d.is_err()));
    // Another directory in its place: refused by identity; opened beneath, it is what is
    // there now (inside the tree, no link on the way).
    fs::remove_file(root.join("a/b")).expect("rm");
    write(&root, "a/b/g", b"g\n");
    assert!(under("a/b").is_err());
    if let Some(d) = beneath("a/b") {
        assert_eq!(listed(d), ["g"]);
    }
    // The root moved away after it was opened: what is under the open root is still found.
    fs::remove_dir_all(root.join("a/b")).expect("rm");
    fs::rename(root.join("a/b-old"), root.join("a/b")).expect("mv back");
    fs::rename(&root, dir.path().join("moved")).expect("mv root");
    assert_eq!(listed(under("a/b")), ["f"]);
    if let Some(d) = beneath("a/b") {
        assert_eq!(listed(d), ["f"]);
    }
    assert!(
        has_openat2 || !cfg!(target_os = "linux"),
        "openat2 on this kernel"
    );
}
