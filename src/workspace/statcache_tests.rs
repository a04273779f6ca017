//! The stat cache's file and its trust: it round-trips, is rewritten only when it changed, and
//! a truncated, corrupt, older or foreign one is dropped whole (every file read again); a
//! changed size, mtime, ctime or inode makes a file read again.

use super::*;
use crate::workspace::tree::{Options, WorkTree};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

fn no_ignore(_: &[u8], _: bool) -> bool {
    false
}

fn scan(root: &Path, cache: &mut StatCache) -> WorkTree {
    let opts = Options {
        cap: 1 << 20,
        skip_top: &[".git"],
        ignored: &no_ignore,
        known: &|_: &[u8]| None,
        hash: gix::hash::Kind::Sha1,
    };
    WorkTree::scan(root, &opts, cache).expect("scan")
}

fn quick(cache: StatCache) -> StatCache {
    cache.with_margin(Duration::from_millis(20))
}

/// Lets what was just written age past [`quick`]'s margin. A sleep lasts at least this long, so
/// on a slow machine the files are only older (more settled) than the margin asks: this sleep
/// cannot lose a race. (The kernel's file times cannot be set back: `ctime` is always now.)
fn settle() {
    std::thread::sleep(Duration::from_millis(60));
}

/// A tree of three files (one named by bytes that are not UTF-8), settled, and a saved cache
/// of it: (tempdir, root, cache file).
fn saved() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path().join("ws");
    fs::create_dir_all(root.join("sub")).expect("mkdir");
    fs::write(root.join("a.py"), b"a\n").expect("write");
    fs::write(root.join("sub/b.py"), b"b\n").expect("write");
    fs::write(root.join(OsStr::from_bytes(b"n\xff")), b"n\n").expect("write");
    settle();
    let file = dir.path().join("statcache.bin");
    let mut cache = quick(StatCache::new());
    scan(&root, &mut cache);
    assert_eq!(cache.reads(), 3);
    cache.save(&file).expect("save");
    (dir, root, file)
}

#[test]
fn the_table_round_trips_and_is_written_only_when_it_changed() {
    let (_dir, root, file) = saved();
    let mut loaded = quick(StatCache::load(&file));
    assert_eq!(loaded.len(), 3);
    let tree = scan(&root, &mut loaded);
    assert_eq!(
        loaded.reads(),
        0,
        "a restart reads nothing that did not change"
    );
    assert_eq!(tree, scan(&root, &mut quick(StatCache::new())));
    assert!(!loaded.is_dirty());
    let before = fs::metadata(&file).expect("stat").ino();
    loaded.save(&file).expect("save");
    assert_eq!(
        fs::metadata(&file).expect("stat").ino(),
        before,
        "nothing changed: not written again"
    );

    // A new file and a file gone: written again, holding exactly the tree's files.
    fs::write(root.join("c.py"), b"c\n").expect("write");
    fs::remove_file(root.join("sub/b.py")).expect("rm");
    settle();
    scan(&root, &mut loaded);
    assert_eq!(loaded.reads(), 1);
    assert!(loaded.is_dirty());
    loaded.save(&file).expect("save");
    assert_ne!(fs::metadata(&file).expect("stat").ino(), before);
    let mut again = quick(StatCache::load(&file));
    assert_eq!(again.len(), 3);
    scan(&root, &mut again);
    assert_eq!(again.reads(), 0);
}

/// The checksum of a cache's bytes made right again after they were changed: what is checked
/// then is the table's own consistency.
fn resum(bytes: &mut [u8]) {
    let body = bytes.len() - 4;
    let crc = crc32fast::hash(&bytes[..body]);
    bytes[body..].copy_from_slice(&crc.to_le_bytes());
}

#[test]
fn a_truncated_corrupt_older_or_foreign_cache_is_dropped_whole() {
    let (dir, root, file) = saved();
    let good = fs::read(&file).expect("read");
    let mut bad: Vec<(&str, Vec<u8>)> = vec![
        ("truncated", good[..good.len() - 1].to_vec()),
        ("longer", [good.as_slice(), b"x"].concat()),
        ("empty", Vec::new()),
        ("the previous format", b"REFEREE-STATCACHE-2\n".to_vec()),
        ("JSON", br#"{"version":3,"entries":{}}"#.to_vec()),
    ];
    let mut swapped = good.clone();
    // The first two records' path offsets and lengths swapped: out of order.
    let (a, b) = (HEADER, HEADER + RECORD);
    let first: Vec<u8> = swapped[a..a + 8].to_vec();
    let second: Vec<u8> = swapped[b..b + 8].to_vec();
    swapped[a..a + 8].copy_from_slice(&second);
    swapped[b..b + 8].copy_from_slice(&first);
    resum(&mut swapped);
    bad.push(("records out of order", swapped));
    let mut outside = good.clone();
    outside[HEADER + 4..HEADER + 8].copy_from_slice(&u32::MAX.to_le_bytes());
    resum(&mut outside);
    bad.push(("a path outside the heap", outside));
    let mut count = good.clone();
    count[40..48].copy_from_slice(&u64::MAX.to_le_bytes());
    resum(&mut count);
    bad.push(("a count beyond the file", count));
    // One bit of a record's blob id flipped: well-formed, but not what was written.
    let mut flipped = good.clone();
    flipped[HEADER + 64] ^= 1;
    bad.push(("a bit flipped in a hash", flipped));
    let mut unsummed = good.clone();
    let last = unsummed.len() - 1;
    unsummed[last] ^= 0x80;
    bad.push(("the checksum changed", unsummed));
    for (what, bytes) in bad {
        fs::write(&file, &bytes).expect("write");
        let mut cache = quick(StatCache::load(&file));
        assert!(cache.is_empty(), "{what}: not loaded");
        scan(&root, &mut cache);
        assert_eq!(cache.reads(), 3, "{what}: every file read again");
        assert!(cache.is_dirty(), "{what}: to be written again");
    }

    // Another tree with the same files: the header's root does not match, nothing is used.
    fs::write(&file, &good).expect("write");
    let other = dir.path().join("other");
    fs::create_dir_all(other.join("sub")).expect("mkdir");
    for (rel, bytes) in [("a.py", "a\n"), ("sub/b.py", "b\n")] {
        fs::write(other.join(rel), bytes).expect("write");
    }
    settle();
    let mut cache = quick(StatCache::load(&file));
    assert_eq!(cache.len(), 3);
    scan(&other, &mut cache);
    assert_eq!(cache.reads(), 2);
    assert_eq!(cache.len(), 2, "only the other tree's files");

    // A cache file that is a symlink to a good one is not read.
    let link = dir.path().join("link.bin");
    std::os::unix::fs::symlink(&file, &link).expect("symlink");
    assert!(StatCache::load(&link).is_empty());
}

#[test]
fn a_changed_size_mtime_ctime_or_inode_is_read_again() {
    let (_dir, root, file) = saved();
    let a = root.join("a.py");
    let oid_of = |tree: &WorkTree| tree.entries["a.py"].oid;
    let mtime = filetime::FileTime::from_last_modification_time(&fs::metadata(&a).expect("stat"));

    // The size.
    fs::write(&a, b"longer\n").expect("write");
    filetime::set_file_mtime(&a, mtime).expect("mtime");
    settle();
    let mut cache = quick(StatCache::load(&file));
    let tree = scan(&root, &mut cache);
    assert_eq!(cache.reads(), 1);
    assert_eq!(
        oid_of(&tree),
        Some(crate::workspace::gitread::blob_oid(b"longer\n"))
    );
    cache.save(&file).expect("save");

    // Same size, mtime put back: the ctime moved.
    let mtime = filetime::FileTime::from_last_modification_time(&fs::metadata(&a).expect("stat"));
    fs::write(&a, b"LONGER\n").expect("write");
    filetime::set_file_mtime(&a, mtime).expect("mtime");
    settle();
    let mut cache = quick(StatCache::load(&file));
    let tree = scan(&root, &mut cache);
    assert_eq!(cache.reads(), 1);
    assert_eq!(
        oid_of(&tree),
        Some(crate::workspace::gitread::blob_oid(b"LONGER\n"))
    );
    cache.save(&file).expect("save");

    // Another inode renamed over it, same size and mtime.
    let mtime = filetime::FileTime::from_last_modification_time(&fs::metadata(&a).expect("stat"));
    let ino = fs::metadata(&a).expect("stat").ino();
    let tmp = root.join("a.tmp");
    fs::write(&tmp, b"lOnGeR\n").expect("write");
    filetime::set_file_mtime(&tmp, mtime).expect("mtime");
    fs::rename(&tmp, &a).expect("rename");
    assert_ne!(fs::metadata(&a).expect("stat").ino(), ino);
    settle();
    let mut cache = quick(StatCache::load(&file));
    let tree = scan(&root, &mut cache);
    assert_eq!(cache.reads(), 1);
    assert_eq!(
        oid_of(&tree),
        Some(crate::workspace::gitread::blob_oid(b"lOnGeR\n"))
    );

    // Just the mtime (the bytes as they were): read again, same id.
    cache.save(&file).expect("save");
    filetime::set_file_mtime(&a, filetime::FileTime::from_unix_time(1_000_000, 0)).expect("mtime");
    settle();
    let mut cache = quick(StatCache::load(&file));
    let again = scan(&root, &mut cache);
    assert_eq!(cache.reads(), 1);
    assert_eq!(oid_of(&again), oid_of(&tree));
}

/// A file changed just before it is read (within the margin) is read on every judgment until
/// it settles, and is not kept meanwhile: the cache is written once (the old record dropped),
/// not again per judgment; once settled, its read is kept (one more write) and trusted.
///
/// The decision compares the kernel's file times with the time of the read, and neither can be
/// moved by hand, so the margin is what the test chooses: an hour while the file must be racing
/// (however slow the machine, the reads come within an hour of the write), then [`quick`]'s
/// 20 ms after [`settle`] slept 60 ms (a sleep lasts at least that long, so a slow machine only
/// makes the file older). No step depends on how fast the machine runs.
#[test]
fn a_read_racing_the_files_change_is_not_kept() {
    // Every file in the tree is judged by the margin the test picks, so the tree is one file:
    // no other record is dropped by the racing margin.
    const RACING: Duration = Duration::from_secs(3600);
    let dir = tempfile::tempdir().expect("tempdir");
    let (root, file) = (dir.path().join("ws"), dir.path().join("statcache.bin"));
    fs::create_dir_all(&root).expect("mkdir");
    fs::write(root.join("a.py"), b"a\n").expect("write");
    // Kept: read well after its last change.
    settle();
    let mut cache = quick(StatCache::new());
    scan(&root, &mut cache);
    cache.save(&file).expect("save");
    assert_eq!(StatCache::load(&file).len(), 1);
    let mut cache = StatCache::load(&file).with_margin(RACING);
    fs::write(root.join("a.py"), b"edited\n").expect("write");
    scan(&root, &mut cache);
    assert_eq!(cache.reads(), 1);
    assert!(cache.is_dirty(), "the old record of a.py is dropped");
    cache.save(&file).expect("save");
    assert_eq!(
        StatCache::load(&file).len(),
        0,
        "the racing read is not kept"
    );
    for _ in 0..2 {
        let mut again = StatCache::load(&file).with_margin(RACING);
        scan(&root, &mut again);
        assert_eq!(again.reads(), 1, "still racing: read again");
        assert!(!again.is_dirty(), "nothing to write while it races");
    }
    settle();
    let mut settled = quick(StatCache::load(&file));
    scan(&root, &mut settled);
    assert_eq!(settled.reads(), 1);
    assert!(settled.is_dirty(), "the settled read is kept");
    settled.save(&file).expect("save");
    let mut last = quick(StatCache::load(&file));
    scan(&root, &mut last);
    assert_eq!(last.reads(), 0, "and trusted");
    assert!(!last.is_dirty());
}

fn scan_knowing(
    root: &Path,
    cache: &mut StatCache,
    known: &dyn Fn(&[u8]) -> Option<ObjectId>,
) -> WorkTree {
    let opts = Options {
        cap: 1 << 20,
        skip_top: &[".git"],
        ignored: &no_ignore,
        known,
        hash: gix::hash::Kind::Sha1,
    };
    WorkTree::scan(root, &opts, cache).expect("scan")
}

#[test]
fn a_file_that_is_its_baseline_blob_gets_no_sha256_and_its_hit_is_believed_only_while_it_is() {
    let (_dir, root, file) = saved();
    let blob = |b: &[u8]| crate::workspace::tree::blob_oid(gix::hash::Kind::Sha1, b).expect("oid");
    let a = blob(b"a\n");
    // `a.py` is its baseline blob; `sub/b.py`'s baseline blob is other bytes (it changed).
    let baseline = |p: &[u8]| match p {
        b"a.py" => Some(a),
        b"sub/b.py" => Some(blob(b"old\n")),
        _ => None,
    };
    let mut cache = quick(StatCache::new());
    let tree = scan_knowing(&root, &mut cache, &baseline);
    let entry = |t: &WorkTree, k: &str| t.entries.get(k).cloned().expect(k);
    assert_eq!(entry(&tree, "a.py").oid, Some(a));
    assert_eq!(
        entry(&tree, "a.py").sha256,
        None,
        "unchanged: not hashed twice"
    );
    assert!(
        entry(&tree, "sub/b.py").sha256.is_some(),
        "changed: its SHA-256"
    );
    assert!(
        entry(&tree, &crate::workspace::name::encode(b"n\xff"))
            .sha256
            .is_some(),
        "new: its SHA-256"
    );
    cache.save(&file).expect("save");

    // Kept without it, and believed while the baseline still has that blob there.
    let mut loaded = quick(StatCache::load(&file));
    let again = scan_knowing(&root, &mut loaded, &baseline);
    assert_eq!(loaded.reads(), 0);
    assert_eq!(entry(&again, "a.py").sha256, None);

    // The baseline moved (another blob at `a.py`): the file is read again for its SHA-256.
    let moved = |p: &[u8]| (p == b"a.py").then(|| blob(b"b\n"));
    let mut loaded = quick(StatCache::load(&file));
    let after = scan_knowing(&root, &mut loaded, &moved);
    assert_eq!(
        loaded.reads(),
        1,
        "only the file whose hit lacks what is now asked"
    );
    let sha = crate::workspace::sha256(b"a\n");
    assert_eq!(entry(&after, "a.py").sha256_hex(), Some(sha));
}
