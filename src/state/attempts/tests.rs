use super::*;
use std::os::unix::ffi::OsStrExt;

#[test]
fn file_names_are_the_one_to_one_stems() {
    // The rule and its edge cases are `workspace::name`'s tests; here only the wiring.
    let names = [file_name("t 1"), file_name("t_1"), file_name("t%201")];
    assert_eq!(names, ["t%201", "t_1", "t%25201"]);
}

#[test]
fn whitespace_only_differences_normalise_away() {
    let a = "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n def f():\n-    return 1\n+    return 2\n";
    let b = "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,4 @@\n def f():\n-    return 1\n+    return   2  \n+\n x = 1\n-y = 1\n+y = 1 \n";
    assert_eq!(normalise(a), normalise(b));
    assert_eq!(
        normalise(a),
        "--- a/x.py\n+++ b/x.py\n- return 1\n+ return 2\n"
    );
    assert_ne!(diff_hash(a), diff_hash(&a.replace("return 2", "return 3")));
    assert!(is_empty_change("--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a \n+a\n"));
    assert!(!is_empty_change(a));
}

/// A kept attempt is parsed once while its file stands; a file kept again (by rename) or
/// rewritten in place is read again, and one that no longer parses is not kept.
#[test]
fn a_kept_attempt_rewritten_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("attempts"));
    let kept = |verdict: &str| Kept {
        attempt: 1,
        verdict: verdict.into(),
        graded: verdict.into(),
        escalation: None,
        task_id: "t".into(),
        record_hash: None,
        diff_hash: Some("h".into()),
    };
    store.keep(&kept("REJECT"), "d").unwrap();
    assert_eq!(store.last("t").unwrap().verdict, "REJECT");
    assert_eq!(store.last("t").unwrap().verdict, "REJECT");
    store.keep(&kept("APPROVE"), "d").unwrap();
    assert_eq!(store.last("t").unwrap().verdict, "APPROVE");
    assert_eq!(store.graded_elsewhere("u", "APPROVE").len(), 1);
    // In place, same inode: its size and ctime move.
    let path = dir.path().join("attempts/t/1.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("APPROVE", "ESCALATE")).unwrap();
    assert_eq!(store.last("t").unwrap().verdict, "ESCALATE");
    assert!(store.graded_elsewhere("u", "APPROVE").is_empty());
    std::fs::write(&path, "{ not json").unwrap();
    assert_eq!(store.last("t"), None);
}

/// A task directory's name and its kept attempts.
type ByTask = (Option<String>, Vec<Kept>);

/// Every task's kept attempts read from the directories alone, as [`Store::everyone`] did
/// before the index (the slow path the index is held to), sorted by task for comparing.
fn from_dirs(store: &Store) -> Vec<ByTask> {
    let mut all: Vec<_> = std::fs::read_dir(store.dir())
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| {
            let kept = read_task_dir(&e.path(), false);
            let name = e.file_name().to_str().map(str::to_string);
            (name, kept.into_iter().map(|(k, _)| k).collect())
        })
        .collect();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    all
}

/// [`Store::everyone`], sorted by task, and how many tasks the index answered for.
fn everyone_sorted(store: &Store) -> (Vec<ByTask>, usize) {
    let (Everyone(mut all), known) = store.everyone_counted();
    all.sort_by(|a, b| a.0.cmp(&b.0));
    (all, known)
}

fn kept(task: &str, attempt: u64, graded: &str) -> Kept {
    kept_of(task, attempt, graded, &format!("+{task}{attempt}\n"))
}

/// An attempt of `task` graded `graded`, whose change was `diff`.
fn kept_of(task: &str, attempt: u64, graded: &str, diff: &str) -> Kept {
    Kept {
        attempt,
        verdict: graded.into(),
        graded: graded.into(),
        escalation: None,
        task_id: task.into(),
        record_hash: Some("r".into()),
        diff_hash: Some(diff_hash(diff)),
    }
}

/// The index answers as the directories do, and only for the tasks whose directory and
/// attempt files are as it remembers: an attempt added, a file rewritten in place (same
/// inode), a task added or removed, are all read from the directories.
#[test]
fn the_attempts_index_answers_as_the_directories_do() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("attempts"));
    // No margin: what was read is trusted at once (the racy rule has its own test).
    store.margin_ns = -1_000_000_000;
    assert_eq!(everyone_sorted(&store), (Vec::new(), 0), "no store yet");
    store.keep(&kept("t 1", 1, "REJECT"), "+a\n").unwrap();
    store.keep(&kept("t 1", 2, "MINOR_ISSUES"), "+b\n").unwrap();
    store.keep(&kept("u", 1, "REJECT"), "+c\n").unwrap();
    // A file that is no attempt, and a task directory with a name that is not UTF-8.
    std::fs::write(dir.path().join("attempts/u/7.json"), "{ not json").unwrap();
    let odd = std::ffi::OsStr::from_bytes(b"v\xff");
    std::fs::create_dir(dir.path().join("attempts").join(odd)).unwrap();
    let first = everyone_sorted(&store);
    assert_eq!(first, (from_dirs(&store), 0), "read from the directories");
    assert!(dir.path().join("attempts").join(INDEX_FILE).is_file());
    assert_eq!(first.0.len(), 3);
    assert_eq!(
        first.0[1],
        (
            Some("t%201".into()),
            vec![kept("t 1", 1, "REJECT"), kept("t 1", 2, "MINOR_ISSUES")]
        )
    );
    let second = everyone_sorted(&store);
    assert_eq!(
        second,
        (from_dirs(&store), 2),
        "from the index, but the odd name"
    );

    // A new attempt of a task: that task is read again.
    store.keep(&kept("u", 2, "APPROVE"), "+d\n").unwrap();
    assert_eq!(everyone_sorted(&store), (from_dirs(&store), 1));
    assert_eq!(everyone_sorted(&store), (from_dirs(&store), 2));

    // Rewritten in place (same inode, same directory entry): its size and ctime move.
    let path = dir.path().join("attempts/u/1.json");
    let text = std::fs::read_to_string(&path).unwrap();
    std::fs::write(&path, text.replace("REJECT", "ESCALATE")).unwrap();
    let (now, known) = everyone_sorted(&store);
    assert_eq!((&now, known), (&from_dirs(&store), 1));
    assert!(now
        .iter()
        .flat_map(|(_, k)| k)
        .any(|k| k.graded == "ESCALATE"));
    // The file that was no attempt, now one.
    std::fs::write(
        dir.path().join("attempts/u/7.json"),
        serde_json::to_string(&kept("u", 7, "REJECT")).unwrap(),
    )
    .unwrap();
    let (now, known) = everyone_sorted(&store);
    assert_eq!((&now, known), (&from_dirs(&store), 1));
    assert!(now.iter().flat_map(|(_, k)| k).any(|k| k.attempt == 7));

    // A task added, a task removed.
    store.keep(&kept("w", 1, "REJECT"), "+e\n").unwrap();
    assert_eq!(everyone_sorted(&store), (from_dirs(&store), 2));
    std::fs::remove_dir_all(dir.path().join("attempts/t%201")).unwrap();
    let (now, known) = everyone_sorted(&store);
    assert_eq!((&now, known), (&from_dirs(&store), 2));
    assert!(now.iter().all(|(n, _)| n.as_deref() != Some("t%201")));
    assert_eq!(everyone_sorted(&store).1, 2, "the index forgot it");
}

/// A damaged index (torn, not JSON, another version, a directory or a symlink in its place)
/// and a forged one (entries whose identities are not those of the directories: another
/// store's, or made up to say "no attempts") are never believed: every task is read from
/// its directory, none is ever taken to have no attempts, and the index is written again.
#[test]
fn a_damaged_or_forged_attempts_index_is_not_believed() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = Store::open(&dir.path().join("attempts"));
    store.margin_ns = -1_000_000_000;
    store.keep(&kept("t", 1, "REJECT"), "+a\n").unwrap();
    store.keep(&kept("u", 1, "REJECT"), "+b\n").unwrap();
    let truth = from_dirs(&store);
    assert_eq!(everyone_sorted(&store), (truth.clone(), 0));
    let index_path = dir.path().join("attempts").join(INDEX_FILE);
    let good = std::fs::read(&index_path).unwrap();
    assert_eq!(everyone_sorted(&store), (truth.clone(), 2));

    let mut forged: Index = serde_json::from_slice(&good).unwrap();
    for t in &mut forged.tasks {
        for f in &mut t.files {
            f.kept = None;
        }
    }
    let says_none = serde_json::to_vec(&forged).unwrap();
    let mut moved: Index = serde_json::from_slice(&good).unwrap();
    for t in &mut moved.tasks {
        t.dir.1 += 1;
        t.files.clear();
    }
    let other_dirs = serde_json::to_vec(&moved).unwrap();
    let mut v2: Index = serde_json::from_slice(&good).unwrap();
    v2.version = INDEX_VERSION + 1;
    let other_version = serde_json::to_vec(&v2).unwrap();
    let damaged: Vec<(&str, Vec<u8>)> = vec![
        ("torn", good[..good.len() / 2].to_vec()),
        ("empty", Vec::new()),
        ("not json", b"\xff\x00garbage".to_vec()),
        ("another version", other_version),
        ("other directories, no files", other_dirs),
    ];
    for (what, bytes) in damaged {
        std::fs::write(&index_path, &bytes).unwrap();
        assert_eq!(everyone_sorted(&store), (truth.clone(), 0), "{what}");
        assert_eq!(
            everyone_sorted(&store),
            (truth.clone(), 2),
            "{what}: written again"
        );
    }
    // Made up with the right identities but no attempts in them: taken, as the files
    // themselves would be (the store is the referee's own), but only while every
    // identity holds: the next attempt kept shows the task as it is.
    std::fs::write(&index_path, &says_none).unwrap();
    store.keep(&kept("t", 2, "REJECT"), "+c\n").unwrap();
    store.keep(&kept("u", 2, "REJECT"), "+d\n").unwrap();
    assert_eq!(everyone_sorted(&store), (from_dirs(&store), 0));
    for (what, make) in [
        (
            "a directory",
            (|p: &Path| std::fs::create_dir(p)) as fn(&Path) -> std::io::Result<()>,
        ),
        ("a symlink", |p: &Path| {
            std::os::unix::fs::symlink("/dev/zero", p)
        }),
    ] {
        std::fs::remove_file(&index_path).ok();
        make(&index_path).unwrap();
        assert_eq!(everyone_sorted(&store), (from_dirs(&store), 0), "{what}");
        assert!(std::fs::symlink_metadata(&index_path).unwrap().is_file() || what == "a directory");
        let _ = std::fs::remove_dir(&index_path);
    }
}

/// Git's racy-timestamp rule: a task directory changed less than the margin before the
/// index read it is read again (a change in the same timestamp tick leaves its times as
/// they were), and only then; such a reading alone is not written (it would not be
/// believed either).
#[test]
fn a_task_changed_just_before_the_index_read_it_is_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("attempts"));
    let path = dir.path().join("attempts").join(INDEX_FILE);
    store.keep(&kept("t", 1, "REJECT"), "+a\n").unwrap();
    assert_eq!(everyone_sorted(&store), (from_dirs(&store), 0));
    assert!(!path.exists(), "nothing a later judgment would believe");
    // Written by a reader with no margin: the same readings, with the default margin,
    // are still within it.
    let mut eager = store.clone();
    eager.margin_ns = -1_000_000_000;
    assert_eq!(everyone_sorted(&eager), (from_dirs(&store), 0));
    assert_eq!(everyone_sorted(&eager), (from_dirs(&store), 1));
    assert_eq!(
        everyone_sorted(&store),
        (from_dirs(&store), 0),
        "within the margin"
    );
    // The same index as if written long after the files: believed.
    let mut index: Index = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    index.read_at += 3 * MARGIN_NS;
    std::fs::write(&path, serde_json::to_vec(&index).unwrap()).unwrap();
    assert_eq!(everyone_sorted(&store), (from_dirs(&store), 1));
}

#[test]
fn the_store_keeps_attempts_per_task_and_finds_rejects_elsewhere() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("attempts"));
    assert_eq!(store.last("t 1"), None);
    let kept = |task: &str, attempt: u64, graded: &str| kept_of(task, attempt, graded, "+a\n");
    store.keep(&kept("t 1", 1, "REJECT"), "+a\n").unwrap();
    store.keep(&kept("t 1", 2, "MINOR_ISSUES"), "+b\n").unwrap();
    store.keep(&kept("t_1", 1, "REJECT"), "+c\n").unwrap();
    assert_eq!(store.last("t 1").unwrap().attempt, 2);
    assert!(store.is_kept("t 1", 1) && !store.is_kept("t 1", 3));
    let all = store.attempts("t 1");
    assert_eq!(all.len(), 2);
    assert_eq!(all[1].1.as_deref(), Some("+b\n"));
    assert_eq!(store.attempts("t_1").len(), 1);
    let elsewhere = store.graded_elsewhere("t 1", "REJECT");
    assert_eq!(elsewhere.len(), 1);
    assert_eq!(elsewhere[0].task_id, "t_1");
    // An attempt kept before `diff_hash` and `task_id` existed.
    let old = dir.path().join("attempts").join("old");
    std::fs::create_dir(&old).unwrap();
    std::fs::write(
        old.join("1.json"),
        r#"{"attempt": 1, "verdict": "REJECT", "graded": "REJECT"}"#,
    )
    .unwrap();
    std::fs::write(old.join("1.diff"), "+a \n").unwrap();
    let old_kept = store.attempts("old");
    assert_eq!(old_kept[0].0.diff_hash, Some(diff_hash("+a\n")));
    assert_eq!(old_kept[0].0.task_id, "old");
}
