//! Opening a workspace: the records read before the tree.

use super::*;

/// A judgment is of one moment: the records are those read at opening, so a record that
/// lands after the tree was read is not judged against the tree before its change (the
/// live referee then judges it at its own event).
#[test]
fn records_are_those_read_at_opening_before_the_tree() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let base = tempfile::tempdir().unwrap();
    std::fs::write(base.path().join("a.py"), "x = 1\n").unwrap();
    std::fs::write(root.join("a.py"), "x = 1\n").unwrap();
    std::fs::create_dir(root.join(".tasks")).unwrap();
    std::fs::write(root.join(".tasks/t1.json"), "{}").unwrap();
    std::fs::write(root.join(".tasks/.t2.tmp"), "{}").unwrap();
    let spec = BaselineSpec::Dir(base.path().to_path_buf());
    let ws = Workspace::open(root, &spec, 1 << 20).unwrap();
    assert!(ws.changes().unwrap().is_empty());

    // The worker's next change and its record, after the opening.
    std::fs::write(root.join("a.py"), "x = 2\n").unwrap();
    std::fs::write(root.join(".tasks/t2.json"), "{}").unwrap();
    std::fs::write(root.join(".tasks/t1.json"), "not json").unwrap();
    let records = ws.records(&[]);
    let names: Vec<&str> = records.iter().map(|r| r.rel.as_str()).collect();
    assert_eq!(names, [".tasks/t1.json"]);
    assert_eq!(records[0].stem, "t1");
    assert!(
        records[0].parsed.is_ok(),
        "the record as read at opening: {:?}",
        records[0].parsed
    );

    let again = Workspace::open(root, &spec, 1 << 20).unwrap();
    let records = again.records(&[]);
    assert_eq!(records.len(), 2);
    assert!(records[0].parsed.is_err(), "t1 is not JSON now");
    assert!(again.changes().unwrap().contains_key("a.py"));
}

/// The cheap look the live referee takes before opening a workspace: only a record that
/// is pending (or malformed, or unreadable) asks for a judgment.
#[test]
fn any_judged_looks_at_the_records_only() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path();
    let judge = ["pending_review".to_string()];
    assert!(!any_judged(root, 1 << 20, &[], &judge), "no .tasks/");
    std::fs::create_dir(root.join(".tasks")).unwrap();
    let rec = |status: &str| format!(r#"{{"task_id": "t1", "status": "{status}", "attempt": 1}}"#);
    std::fs::write(root.join(".tasks/t1.json"), rec("approved")).unwrap();
    std::fs::write(root.join(".tasks/.t2.json"), rec("pending_review")).unwrap();
    assert!(
        !any_judged(root, 1 << 20, &[], &judge),
        "approved, and a hidden temp file"
    );
    std::fs::write(root.join(".tasks/t1.json"), rec("pending_review")).unwrap();
    assert!(any_judged(root, 1 << 20, &[], &judge));
    std::fs::write(root.join(".tasks/t1.json"), "{ not json").unwrap();
    assert!(
        any_judged(root, 1 << 20, &[], &judge),
        "a malformed record is judged"
    );
}

mod sorted {
    //! The one-shot path's sorted tables (the walk laid out in key order, the baseline's
    //! listing as a sorted table, one merge over them) against a naive reading of both sides.

    use super::*;
    use proptest::prelude::*;
    use std::collections::{BTreeMap, BTreeSet};
    use std::ffi::OsStr;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;

    /// Names that sort differently as components and as whole paths (`a`, `a-b`, `a.c`, `a/x`,
    /// `a0`), a space, non-ASCII, a byte that is not UTF-8 and one in the escape range.
    const NAMES: &[&[u8]] = &[
        b"a",
        b"a-b",
        b"a.c",
        b"a0",
        b"b",
        b"x y",
        "é".as_bytes(),
        b"\xff",
        b"\xf4\x8f\xbc\x80",
    ];

    /// Up to three components each.
    fn paths() -> impl Strategy<Value = Vec<Vec<u8>>> {
        let component = prop::sample::select(NAMES.to_vec());
        let path = prop::collection::vec(component, 1..4).prop_map(|parts| parts.join(&b'/'));
        prop::collection::vec(path, 0..14)
    }

    /// File paths only at the leaves: a path that is an ancestor of another is a directory.
    fn leaves(paths: &[Vec<u8>]) -> BTreeSet<Vec<u8>> {
        let all: BTreeSet<Vec<u8>> = paths.iter().cloned().collect();
        all.iter()
            .filter(|p| {
                !all.iter()
                    .any(|q| q.len() > p.len() && q.starts_with(p) && q[p.len()] == b'/')
            })
            .cloned()
            .collect()
    }

    fn build(root: &Path, files: &Files) {
        for (rel, (content, exec)) in files {
            let path = root.join(OsStr::from_bytes(rel));
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, [b'v', *content, b'\n']).unwrap();
            let mode = if *exec { 0o755 } else { 0o644 };
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        }
    }

    /// Every path and its ancestors, encoded.
    fn with_dirs(files: &Files) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for rel in files.keys() {
            for (i, b) in rel.iter().enumerate() {
                if *b == b'/' {
                    out.insert(name::encode(&rel[..i]));
                }
            }
            out.insert(name::encode(rel));
        }
        out
    }

    /// A tree's files: content byte and executable bit, by path.
    type Files = BTreeMap<Vec<u8>, (u8, bool)>;

    fn sides() -> impl Strategy<Value = (Files, Files)> {
        (paths(), paths(), any::<u64>()).prop_map(|(a, b, seed)| {
            let base: BTreeMap<Vec<u8>, (u8, bool)> = leaves(&a)
                .into_iter()
                .enumerate()
                .map(|(i, p)| (p, (b'0' + (i % 3) as u8, (seed >> (i % 64)) & 1 == 1)))
                .collect();
            // The work tree: the baseline with some files edited, chmodded or removed, and
            // new ones, as long as no path is a file on one side and a directory above a
            // file on the other (a type change, not what this compares).
            let mut now = BTreeMap::new();
            for (i, (p, (c, x))) in base.iter().enumerate() {
                match (seed >> ((i * 2) % 64)) & 3 {
                    0 => {}
                    1 => {
                        now.insert(p.clone(), (b'9', *x));
                    }
                    2 => {
                        now.insert(p.clone(), (*c, !*x));
                    }
                    _ => {
                        now.insert(p.clone(), (*c, *x));
                    }
                }
            }
            for p in leaves(&b) {
                now.entry(p).or_insert((b'n', false));
            }
            let mut keep: BTreeMap<Vec<u8>, (u8, bool)> = BTreeMap::new();
            let all: Vec<Vec<u8>> = base.keys().chain(now.keys()).cloned().collect();
            let leaf = leaves(&all);
            for (p, v) in now {
                if leaf.contains(&p) {
                    keep.insert(p, v);
                }
            }
            let base = base.into_iter().filter(|(p, _)| leaf.contains(p)).collect();
            (base, keep)
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

        /// The walk keeps every path once, in key order, whatever the names.
        #[test]
        fn the_walk_lists_every_path_once(a in paths()) {
            let files: BTreeMap<Vec<u8>, (u8, bool)> =
                leaves(&a).into_iter().map(|p| (p, (b'1', false))).collect();
            let tmp = tempfile::tempdir().unwrap();
            build(tmp.path(), &files);
            let tree = scan(tmp.path(), None, &mut StatCache::default(), 1 << 20).unwrap();
            let keys: BTreeSet<String> = tree.entries.keys().cloned().collect();
            prop_assert_eq!(keys, with_dirs(&files));
        }

        /// What changed, from the sorted tables and the one merge, is what a naive reading
        /// of both sides finds: bytes or mode differ, a path on one side only.
        #[test]
        fn the_merge_finds_what_a_naive_comparison_finds((base, now) in sides()) {
            let b = tempfile::tempdir().unwrap();
            let w = tempfile::tempdir().unwrap();
            build(b.path(), &base);
            build(w.path(), &now);
            let spec = BaselineSpec::Dir(b.path().to_path_buf());
            let ws = Workspace::open(w.path(), &spec, 1 << 20).unwrap();
            let mut want = BTreeMap::new();
            for (p, v) in &base {
                match now.get(p) {
                    None => {
                        want.insert(name::encode(p), Change::Removed);
                    }
                    Some(n) if n != v => {
                        want.insert(name::encode(p), Change::Modified);
                    }
                    Some(_) => {}
                }
            }
            for p in now.keys().filter(|p| !base.contains_key(*p)) {
                want.insert(name::encode(p), Change::Added);
            }
            prop_assert_eq!(ws.changes().unwrap(), &want);
            prop_assert!(ws.undecided.is_empty(), "{:?}", ws.undecided);
        }

        /// A live referee's comparison, kept with its work tree and brought up to date at
        /// the paths that changed, is the comparison a fresh reading makes.
        #[test]
        fn the_kept_comparison_follows_the_change((base, now) in sides()) {
            let b = tempfile::tempdir().unwrap();
            let w = tempfile::tempdir().unwrap();
            build(b.path(), &base);
            build(w.path(), &base);
            let spec = BaselineSpec::Dir(b.path().to_path_buf());
            let root = std::fs::canonicalize(w.path()).unwrap();
            let pinned: Pinned = Baseline::pin(&root, &spec, None, 1 << 20)
                .unwrap()
                .map(Arc::new);
            let (mut tree, mut cache) = (None, StatCache::default());
            let first = Workspace::judge_live(&root, &pinned, &mut tree, None, &mut cache, 1 << 20)
                .unwrap();
            prop_assert!(first.changes().unwrap().is_empty());

            // The worker's change: files removed, edited, chmodded, added.
            let mut touched = BTreeSet::new();
            for p in base.keys().filter(|p| !now.contains_key(*p)) {
                std::fs::remove_file(root.join(OsStr::from_bytes(p))).unwrap();
                touched.insert(name::encode(p));
            }
            let changed: Files = now
                .iter()
                .filter(|(p, v)| base.get(*p) != Some(*v))
                .map(|(p, v)| (p.clone(), *v))
                .collect();
            build(&root, &changed);
            for p in changed.keys() {
                touched.insert(name::encode(p));
            }
            let touched: Vec<String> = touched.into_iter().collect();
            let live = Workspace::judge_live(
                &root,
                &pinned,
                &mut tree,
                Some(&touched),
                &mut cache,
                1 << 20,
            )
            .unwrap();
            let fresh = Workspace::open(&root, &spec, 1 << 20).unwrap();
            prop_assert_eq!(live.changes(), fresh.changes());
            prop_assert_eq!(live.ignored(), fresh.ignored());
            prop_assert_eq!(&live.undecided, &fresh.undecided);
            prop_assert_eq!(live.aliases(), fresh.aliases());
            for p in live.changes().unwrap().keys() {
                prop_assert_eq!(live.detail(p), fresh.detail(p));
            }
        }
    }
}

/// A one-shot judgment reads the walk's sorted entries where a live one reads its map: the
/// same look-ups, the same aliases (a symlink and a hard link to a baseline file).
#[test]
fn sorted_entries_answer_as_the_map_does() {
    use std::os::unix::fs::symlink;
    let b = tempfile::tempdir().expect("tempdir");
    let w = tempfile::tempdir().expect("tempdir");
    for root in [b.path(), w.path()] {
        std::fs::create_dir_all(root.join("src")).expect("mkdir");
        std::fs::write(root.join("src/orchestrator.py"), b"ROLES = []\n").expect("write");
        std::fs::write(root.join("src/a.py"), b"a\n").expect("write");
    }
    std::fs::hard_link(w.path().join("src/a.py"), w.path().join("src/hard.py")).expect("link");
    symlink("orchestrator.py", w.path().join("src/soft.py")).expect("symlink");
    let root = std::fs::canonicalize(w.path()).expect("canonical");
    let opts = tree::Options {
        cap: 1 << 20,
        skip_top: EXCLUDED,
        ignored: &|_: &[u8], _: bool| false,
        known: &|_: &[u8]| None,
        hash: gix::hash::Kind::Sha1,
    };
    let sorted = WorkTree::scan_listed_sorted(
        tree::Lister::start(&root, EXCLUDED).expect("start"),
        &opts,
        &mut StatCache::new(),
    )
    .expect("scan");
    let map: BTreeMap<String, tree::Entry> = sorted.iter().cloned().collect();
    let (s, m) = (
        compare::Entries::Sorted(&sorted),
        compare::Entries::Map(&map),
    );
    for key in [
        "src",
        "src/a.py",
        "src/hard.py",
        "src/soft.py",
        "src/zz",
        "",
        "a",
    ] {
        assert_eq!(s.get(key), m.get(key), "{key}");
    }
    assert!(s.get("src/soft.py").is_some() && s.get("src/zz").is_none());
    let spec = BaselineSpec::Dir(b.path().to_path_buf());
    let ws = Workspace::open(&root, &spec, 1 << 20).expect("open");
    assert_eq!(
        ws.aliases(),
        &[
            ("src/hard.py".to_string(), "src/a.py".to_string()),
            ("src/soft.py".to_string(), "src/orchestrator.py".to_string()),
        ]
    );
}

/// A workspace whose baseline (a directory) has `keep.txt` and whose work tree adds `names`,
/// each `size` bytes, opened with the read cap (and so the budget) `cap`.
fn with_added(
    names: &[&str],
    size: usize,
    cap: u64,
) -> (tempfile::TempDir, tempfile::TempDir, Workspace) {
    let tmp = tempfile::tempdir().unwrap();
    let base = tempfile::tempdir().unwrap();
    std::fs::write(base.path().join("keep.txt"), "k\n").unwrap();
    std::fs::write(tmp.path().join("keep.txt"), "k\n").unwrap();
    for (i, n) in names.iter().enumerate() {
        std::fs::write(tmp.path().join(n), vec![b'a' + i as u8; size]).unwrap();
    }
    let spec = BaselineSpec::Dir(base.path().to_path_buf());
    let ws = Workspace::open(tmp.path(), &spec, cap).unwrap();
    (tmp, base, ws)
}

/// What one judgment holds of file contents stays within its budget (the read cap when
/// smaller than [`HOLD_BUDGET`]); past it a file is known by its first read's hash, and a read
/// again that finds other bytes is "changed while it was judged", never the new bytes.
#[test]
fn past_the_budget_a_file_is_held_by_its_hash_and_a_change_is_seen() {
    let (tmp, _base, ws) = with_added(&["a.bin", "b.bin", "c.bin"], 600, 1000);
    assert_eq!(ws.hold_budget(), 1000);
    let a = ws.current("a.bin");
    assert_eq!(a.bytes().map(<[u8]>::len), Some(600));
    assert_eq!(ws.held_bytes(), 600, "a.bin is held");
    let b = ws.current("b.bin");
    assert_eq!(
        b.bytes().map(<[u8]>::len),
        Some(600),
        "read in full for the check"
    );
    assert_eq!(ws.held_bytes(), 600, "b.bin is past the budget: not held");
    let b_hash = Workspace::sha256(&b).unwrap();
    drop(b);

    // Both change on disk while the judgment goes on.
    std::fs::write(tmp.path().join("a.bin"), vec![b'z'; 600]).unwrap();
    std::fs::write(tmp.path().join("b.bin"), vec![b'z'; 600]).unwrap();
    // a.bin is held: every check sees what was first read.
    assert_eq!(ws.current("a.bin").bytes(), a.bytes());
    // b.bin was let go: read again, it differs from its first read's hash.
    match ws.current("b.bin") {
        Content::Unknown(why @ Unknowable::Changed { .. }) => {
            let text = why.to_string();
            assert!(text.contains("changed while it was judged"), "{text}");
            assert!(
                text.contains(&b_hash),
                "the first read's hash as evidence: {text}"
            );
        }
        other => panic!("a changed file must not be read as its new bytes: {other:?}"),
    }
    // Its digest is the first read's, without a read.
    assert_eq!(ws.current_digest("b.bin").unwrap().unwrap().sha256, b_hash);
    assert!(ws.held_bytes() <= ws.hold_budget());
}

/// The scan that decided what changed is the first read: a file rewritten between the scan
/// and a check's read is "changed while it was judged" (its hash, meanwhile, needs no read).
#[test]
fn a_file_changed_after_the_scan_is_not_judged_as_its_new_bytes() {
    let (tmp, _base, ws) = with_added(&["a.txt"], 10, 1 << 20);
    let scanned = ws.current_digest("a.txt").unwrap().unwrap();
    assert_eq!(scanned.size, 10);
    assert_eq!(ws.held_bytes(), 0, "known by the scan's hash, nothing read");
    std::fs::write(tmp.path().join("a.txt"), "other bytes\n").unwrap();
    match ws.current("a.txt") {
        Content::Unknown(Unknowable::Changed { sha256, .. }) => assert_eq!(sha256, scanned.sha256),
        other => panic!("{other:?}"),
    }
    match ws.diff("a.txt") {
        Err(e) => assert_eq!(e.side, Side::WorkTree),
        Ok(d) => panic!("a diff of the new bytes: {d}"),
    }
}

/// A file over the diff's limit is diffed as its two hashes and sizes, without holding it.
#[test]
fn a_large_file_is_diffed_by_its_hashes() {
    let size = MAX_DIFF_BYTES as usize + 1;
    let (_tmp, _base, ws) = with_added(&["big.txt"], size, 64 << 20);
    let d = ws.diff("big.txt").unwrap();
    assert!(d.contains("too large to diff"), "{d}");
    assert!(
        d.contains(&format!("absent -> {size} bytes, sha256 ")),
        "{d}"
    );
    assert_eq!(ws.held_bytes(), 0);
}

/// "No commit" (a start snapshot, the baseline for good) is believed only when HEAD read
/// beneath the root says so too: a branch that exists loose or packed, or a detached HEAD,
/// names a commit whatever `git` made of it; a plain folder and a branch with no commit yet
/// name none.
#[test]
fn head_names_a_commit_loose_packed_or_detached_and_none_only_when_unborn() {
    let tmp = tempfile::tempdir().expect("tmp");
    let root = tmp.path();
    assert!(!head_may_name_a_commit(root), "a plain folder");
    assert!(needs_snapshot(root), "a plain folder has a start snapshot");
    let git = root.join(".git");
    std::fs::create_dir_all(git.join("refs/heads")).expect("mkdir");
    std::fs::write(git.join("HEAD"), "ref: refs/heads/main\n").expect("HEAD");
    assert!(!head_may_name_a_commit(root), "an unborn branch");
    let id = "0123456789abcdef0123456789abcdef01234567";
    std::fs::write(
        git.join("packed-refs"),
        format!("# pack-refs\n{id} refs/heads/mainline\n"),
    )
    .expect("packed");
    assert!(
        !head_may_name_a_commit(root),
        "another branch packed, not this one"
    );
    std::fs::write(git.join("packed-refs"), format!("{id} refs/heads/main\n")).expect("packed");
    assert!(head_may_name_a_commit(root), "packed");
    std::fs::remove_file(git.join("packed-refs")).expect("rm");
    std::fs::write(git.join("refs/heads/main"), format!("{id}\n")).expect("loose");
    assert!(head_may_name_a_commit(root), "loose");
    std::fs::remove_file(git.join("refs/heads/main")).expect("rm");
    std::fs::write(git.join("HEAD"), format!("{id}\n")).expect("detached");
    assert!(head_may_name_a_commit(root), "detached");
    std::fs::write(git.join("HEAD"), "ref: refs/heads/../../x\n").expect("odd");
    assert!(
        head_may_name_a_commit(root),
        "a name this cannot follow: not believed unborn"
    );
    std::fs::remove_file(git.join("HEAD")).expect("rm");
    assert!(
        head_may_name_a_commit(root),
        "no HEAD to read: not believed unborn"
    );
}

#[test]
fn a_record_is_a_json_file_directly_in_tasks_not_hidden() {
    assert!(is_record(".tasks/t1.json"));
    assert!(!is_record(".tasks/.t1.tmp"));
    assert!(
        !is_record(".tasks/.t1.json"),
        "a hidden file beside the records"
    );
    assert!(!is_record(".tasks/sub/t1.json"));
    assert!(!is_record(".tasksx/t1.json"));
    assert!(!is_record("src/.tasks/t1.json"));
    assert!(is_record_name("t1.json") && !is_record_name("t1.json~"));
}
