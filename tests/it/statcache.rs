//! The stat cache a one-shot `verify --protocol code-change` keeps: kept with no state directory
//! made (in a folder of its own under the state home, 0700), believed only while a file's
//! `lstat` (size, mtime, ctime, inode, device) is what it was and the file had settled when it
//! was read; never changing a verdict. A file rewritten with its size kept and its mtime put
//! back (`touch -d`) is still seen (its ctime moved), and a cache that is truncated, garbage or
//! not a file is ignored, never a panic.

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use crate::code_change::{git, record, APP, PROTECTED};
use crate::state_home;
use crate::util::{run, Output};

/// The racy margin the cache keeps (a file changed within it of its read is not believed
/// later), and a little more.
const SETTLED: Duration = Duration::from_millis(2600);

/// `root/<name>`: a git workspace with `APP`, `PROTECTED` and a few more files, committed.
fn workspace(root: &Path, name: &str) -> PathBuf {
    let ws = root.join(name);
    fs::create_dir_all(ws.join("src/lib")).expect("mkdir");
    fs::write(ws.join(APP), "def main():\n    return 1\n").expect("write");
    fs::write(ws.join(PROTECTED), "ROLES = ['worker']\n").expect("write");
    for i in 0..20 {
        fs::write(
            ws.join(format!("src/lib/m{i:02}.py")),
            format!("X = {i:03}\n"),
        )
        .expect("write");
    }
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-q", "-m", "init"]);
    ws
}

/// Waits until every file under `ws/src` was last changed (mtime and ctime) more than the racy
/// margin ago, so that a read now is one the cache will believe later.
fn settle(ws: &Path) {
    let newest = || {
        let mut newest = 0i64;
        let mut stack = vec![ws.join("src")];
        while let Some(dir) = stack.pop() {
            for e in fs::read_dir(&dir).expect("read_dir").flatten() {
                let m = fs::symlink_metadata(e.path()).expect("lstat");
                if m.is_dir() {
                    stack.push(e.path());
                }
                newest = newest.max(m.ctime()).max(m.mtime());
            }
        }
        newest
    };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let now = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .expect("clock")
            .as_secs_f64();
        // Seconds are what ctime() gives: one more than the margin covers the fraction.
        if now - (newest() as f64) > SETTLED.as_secs_f64() + 1.0 {
            return;
        }
        assert!(Instant::now() < deadline, "the files never settled");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// `referee verify WS --protocol code-change --format json`: exit code and JSON.
fn verify(ws: &Path) -> (i32, Value) {
    let Output {
        code,
        stdout,
        stderr,
        ..
    } = run(&[
        "verify",
        ws.to_str().expect("utf-8"),
        "--protocol",
        "code-change",
        "--format",
        "json",
    ]);
    let doc = serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"));
    (code, doc)
}

fn verdict(doc: &Value, task: &str) -> String {
    doc["verdicts"]
        .as_array()
        .and_then(|v| v.iter().find(|v| v["task_id"] == task))
        .and_then(|v| v["verdict"].as_str())
        .unwrap_or_else(|| panic!("no verdict for {task}: {doc}"))
        .to_string()
}

/// The stat cache `verify` keeps for the workspace named `name` (a state home folder of its
/// own, since no state directory was made), if there is one.
fn cache_of(name: &str) -> Option<PathBuf> {
    let dir = state_home().join("referee/statcache");
    fs::read_dir(dir)
        .ok()?
        .flatten()
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{name}-"))
        })
        .map(|e| e.path().join("statcache.bin"))
        .filter(|p| p.is_file())
}

/// The state directory `watch` would use for `ws`: `verify` must not make it.
fn state_dir_of(ws: &Path) -> PathBuf {
    let here = referee::state::live::Here::of(ws).expect("the workspace opened");
    state_home()
        .join("referee")
        .join(referee::state::name(&here))
}

#[test]
fn verify_keeps_a_stat_cache_and_still_sees_an_edit_with_size_and_mtime_kept() {
    let root = tempfile::tempdir().expect("tempdir");
    let name = "ws-statcache-touch";
    let ws = workspace(root.path(), name);
    let base = std::collections::BTreeMap::from([(APP, "def main():\n    return 1\n")]);
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    record(&ws, "t1", 1, &[APP], &base);
    settle(&ws);

    // First run: every file read, the cache kept (no state directory made for it).
    let (code, doc) = verify(&ws);
    assert_eq!(
        (code, verdict(&doc, "t1").as_str()),
        (0, "APPROVE"),
        "{doc}"
    );
    let cache = cache_of(name).expect("verify kept a stat cache");
    assert!(
        !state_dir_of(&ws).exists(),
        "verify made no state directory"
    );
    let dir_mode = fs::metadata(cache.parent().expect("a folder"))
        .expect("stat")
        .permissions()
        .mode();
    assert_eq!(dir_mode & 0o077, 0, "the cache's folder is the user's only");
    let first = fs::metadata(&cache).expect("stat").ino();

    // Second run: every file believed from the cache, so it is not written again.
    let (code, doc) = verify(&ws);
    assert_eq!(
        (code, verdict(&doc, "t1").as_str()),
        (0, "APPROVE"),
        "{doc}"
    );
    assert_eq!(
        fs::metadata(&cache).expect("stat").ino(),
        first,
        "nothing new to keep: the cache was not rewritten"
    );

    // The protected file and an unlisted one rewritten in place with their sizes kept and their
    // mtimes put back: only their ctimes moved. Both are seen.
    for (rel, text) in [
        (PROTECTED, "ROLES = ['admin_']\n"),
        ("src/lib/m07.py", "X = 999\n"),
    ] {
        let path = ws.join(rel);
        let before = fs::metadata(&path).expect("stat");
        assert_eq!(before.len(), text.len() as u64, "{rel}: same size");
        let mtime = before.modified().expect("mtime");
        fs::write(&path, text).expect("rewrite");
        let f = fs::File::options().write(true).open(&path).expect("open");
        f.set_modified(mtime).expect("touch -d");
        drop(f);
        let after = fs::metadata(&path).expect("stat");
        assert_eq!(
            (after.len(), after.modified().expect("mtime"), after.ino()),
            (before.len(), mtime, before.ino()),
            "{rel}: size, mtime and inode as they were"
        );
    }
    let (code, doc) = verify(&ws);
    assert_ne!(code, 0, "{doc}");
    assert_eq!(verdict(&doc, "t1"), "REJECT", "{doc}");
    let text = doc.to_string();
    assert!(text.contains("CC-01"), "the veto: {doc}");
    assert!(text.contains(PROTECTED), "{doc}");
    assert!(
        text.contains("src/lib/m07.py"),
        "the unlisted change: {doc}"
    );

    // Put back as committed (content, size and mtime): approved again, from the files.
    git(&ws, &["checkout", "-q", "--", PROTECTED, "src/lib/m07.py"]);
    let (code, doc) = verify(&ws);
    assert_eq!(
        (code, verdict(&doc, "t1").as_str()),
        (0, "APPROVE"),
        "{doc}"
    );
}

#[test]
fn a_corrupt_stat_cache_is_ignored_and_changes_no_verdict() {
    let root = tempfile::tempdir().expect("tempdir");
    let name = "ws-statcache-corrupt";
    let ws = workspace(root.path(), name);
    let base = std::collections::BTreeMap::from([(APP, "def main():\n    return 1\n")]);
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    record(&ws, "t1", 1, &[APP], &base);
    settle(&ws);
    let (code, doc) = verify(&ws);
    assert_eq!(
        (code, verdict(&doc, "t1").as_str()),
        (0, "APPROVE"),
        "{doc}"
    );
    let cache = cache_of(name).expect("verify kept a stat cache");
    let good = fs::read(&cache).expect("read the cache");
    assert!(good.len() > 100, "{} bytes", good.len());
    // A protected edit the cache knows nothing of, judged through each broken cache.
    fs::write(ws.join(PROTECTED), "ROLES = ['worker', 'admin']\n").expect("write");

    let mut flipped = good.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0xff;
    let broken: Vec<(&str, Vec<u8>)> = vec![
        ("empty", Vec::new()),
        ("truncated", good[..good.len() / 2].to_vec()),
        ("one byte short", good[..good.len() - 1].to_vec()),
        ("a byte flipped", flipped),
        ("garbage", vec![0xa5; good.len()]),
        ("longer", [good.as_slice(), b"more"].concat()),
    ];
    for (what, bytes) in broken {
        fs::write(&cache, &bytes).expect("write the cache");
        let (code, doc) = verify(&ws);
        assert_ne!(code, 0, "{what}: {doc}");
        assert_eq!(verdict(&doc, "t1"), "REJECT", "{what}: {doc}");
        assert!(doc.to_string().contains(PROTECTED), "{what}: {doc}");
    }
    // Not a file at all: a folder, or a link to one the user does not mean.
    fs::remove_file(&cache).expect("rm");
    fs::create_dir(&cache).expect("mkdir");
    let (code, doc) = verify(&ws);
    assert_ne!(code, 0, "a folder: {doc}");
    assert_eq!(verdict(&doc, "t1"), "REJECT", "a folder: {doc}");
    fs::remove_dir(&cache).expect("rmdir");
    let elsewhere = root.path().join("elsewhere.bin");
    fs::write(&elsewhere, &good).expect("write");
    std::os::unix::fs::symlink(&elsewhere, &cache).expect("symlink");
    let (code, doc) = verify(&ws);
    assert_ne!(code, 0, "a link: {doc}");
    assert_eq!(verdict(&doc, "t1"), "REJECT", "a link: {doc}");
    assert_eq!(
        fs::read(&elsewhere).expect("read"),
        good,
        "a link is never written through"
    );
}

/// A `verify` with no state directory keeps the baseline commit's listing beside its stat
/// cache (read from the object store once, not per run), and the next task after a commit is
/// measured against the new HEAD: the old commit's listing is not believed for it.
#[test]
fn verify_keeps_the_commits_listing_beside_its_cache_and_follows_head() {
    let root = tempfile::tempdir().expect("tempdir");
    let name = "ws-statcache-listing";
    let ws = workspace(root.path(), name);
    let base = std::collections::BTreeMap::from([(APP, "def main():\n    return 1\n")]);
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    record(&ws, "t1", 1, &[APP], &base);
    let (code, doc) = verify(&ws);
    assert_eq!(
        (code, verdict(&doc, "t1").as_str()),
        (0, "APPROVE"),
        "{doc}"
    );
    // The folder of its own the stat cache is kept in (the files are too new for the cache to
    // believe yet: the listing is kept all the same).
    let listing = fs::read_dir(state_home().join("referee/statcache"))
        .expect("the stat caches' folder")
        .flatten()
        .find(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{name}-"))
        })
        .expect("the workspace's folder")
        .path()
        .join("baseline-tree.bin");
    let kept_commit = |listing: &Path| {
        let bytes = fs::read(listing).expect("the listing is kept");
        let magic = b"REFEREE-BASELINE-TREE-1\n".len();
        bytes[magic..magic + 20]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect::<String>()
    };
    let head = |ws: &Path| {
        let o = std::process::Command::new("git")
            .args(["rev-parse", "HEAD"])
            .current_dir(ws)
            .output()
            .expect("git rev-parse");
        String::from_utf8(o.stdout)
            .expect("utf-8")
            .trim()
            .to_string()
    };
    assert_eq!(
        kept_commit(&listing),
        head(&ws),
        "the pinned commit's listing"
    );
    assert!(
        !state_dir_of(&ws).exists(),
        "verify made no state directory"
    );

    // t1 committed (its record gone), then t2 changes another file.
    fs::remove_file(ws.join(".tasks/t1.json")).expect("t1's record done");
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-q", "-m", "t1"]);
    let m03 = "src/lib/m03.py";
    fs::write(ws.join(m03), "X = 333\n").expect("write");
    record(
        &ws,
        "t2",
        1,
        &[m03],
        &std::collections::BTreeMap::from([(m03, "X = 003\n")]),
    );
    let (code, doc) = verify(&ws);
    assert_eq!(
        (code, verdict(&doc, "t2").as_str()),
        (0, "APPROVE"),
        "t1's committed change is not t2's: {doc}"
    );
    assert_eq!(kept_commit(&listing), head(&ws), "the new commit's listing");
}
