//! The kept listing and the CRLF conversion.

use super::listing::{parse_listing, LISTING_FILE, LISTING_MAGIC};
use super::*;

#[test]
fn the_kept_listing_round_trips_and_refuses_what_does_not_parse() {
    let state = tempfile::tempdir().unwrap();
    let commit = gix::ObjectId::from_hex(b"e11c2d6d94ef0000000000000000000000000000").unwrap();
    let blob = gix::ObjectId::from_hex(b"0123456789abcdef0123456789abcdef01234567").unwrap();
    let mut entries = BTreeMap::new();
    for (p, kind) in [
        (&b"a b/\xff.py"[..], EntryKind::File),
        (b"bin/run", EntryKind::Executable),
        (b"link", EntryKind::Symlink),
        (b"sub", EntryKind::Submodule),
    ] {
        entries.insert(p.to_vec(), gitread::BaseEntry { kind, oid: blob });
    }
    let tree = gitread::BaseTree { commit, entries };
    let ignore = vec![(b".gitignore".to_vec(), b"*.pyc\n".to_vec())];
    save_listing(state.path(), &tree, &ignore);
    let (back, back_ignore) = load_listing(state.path(), commit).unwrap();
    assert_eq!(back, tree.entries.clone().into_iter().collect::<Vec<_>>());
    assert_eq!(back_ignore, ignore);
    // Another commit, a cut-short file or another format: not used (read from the store).
    assert!(load_listing(state.path(), blob).is_none());
    let bytes = std::fs::read(state.path().join(LISTING_FILE)).unwrap();
    for cut in [
        0,
        10,
        LISTING_MAGIC.len() + 20,
        bytes.len() - 30,
        bytes.len() - 3,
    ] {
        assert!(
            parse_listing(&bytes[..cut], commit).is_none(),
            "cut at {cut}"
        );
    }
    assert!(parse_listing(b"{\"schema\": 1}", commit).is_none());
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(parse_listing(&longer, commit).is_none());
}

fn row(k: &str) -> (String, BaseEntry) {
    let oid = gix::ObjectId::null(gix::hash::Kind::Sha1);
    (
        k.to_string(),
        BaseEntry {
            kind: BaseKind::File { exec: false },
            oid,
        },
    )
}

#[test]
fn the_sorted_table_finds_paths_and_directories() {
    let keys = ["a", "a-b", "a.c", "a/x", "a0", "b/c/d", "é"];
    let table = BaseEntries::from_rows(keys.iter().map(|k| row(k)).collect());
    assert_eq!(table.len(), keys.len());
    for k in keys {
        assert!(table.contains_key(k), "{k}");
    }
    assert!(!table.contains_key("a/"));
    assert!(!table.contains_key("b/c"));
    // A directory holds a path when some key starts with `dir/`, whatever sorts between.
    assert!(table.has_under("a"));
    assert!(table.has_under("b"));
    assert!(table.has_under("b/c"));
    assert!(!table.has_under("a-b"));
    assert!(!table.has_under("a.c"));
    assert!(!table.has_under("b/c/d"));
    assert!(!table.has_under("c"));
    assert!(!table.has_under(""));

    // Out of order and with a repeated key: sorted, the later row kept.
    let mut rows: Vec<(String, BaseEntry)> = keys.iter().rev().map(|k| row(k)).collect();
    let mut last = row("a0");
    last.1.kind = BaseKind::Symlink;
    rows.push(last);
    let table = BaseEntries::from_rows(rows);
    let back: Vec<&str> = table.keys().map(String::as_str).collect();
    assert_eq!(back, keys);
    assert_eq!(table.get("a0").map(|e| &e.kind), Some(&BaseKind::Symlink));
}

fn git(dir: &Path, args: &[&str]) {
    let ok = std::process::Command::new("git")
        .args(["-c", "user.name=t", "-c", "user.email=t@t"])
        .args(args)
        .current_dir(dir)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("HOME", dir)
        .stdout(std::process::Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "git {args:?}");
}

/// The kept listing is only a shortcut: one that does not parse, is cut short, has a byte too
/// many or is of another commit is not used; the baseline is read from the object store again
/// (the same paths, the same ignore rules) and the listing written anew.
#[test]
fn a_corrupt_or_foreign_listing_is_rebuilt_from_the_store() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("ws");
    std::fs::create_dir_all(root.join("src/a")).unwrap();
    std::fs::write(root.join("src/a/m.py"), "x = 1\n").unwrap();
    std::fs::write(root.join("src/a-b.py"), "y = 1\n").unwrap();
    std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
    git(&root, &["init", "-q"]);
    git(&root, &["add", "-A"]);
    git(&root, &["commit", "-q", "-m", "base"]);
    let state = tmp.path().join("state");
    std::fs::create_dir(&state).unwrap();
    let pin = || {
        Baseline::pin(&root, &BaselineSpec::Auto, Some(&state), 1 << 20)
            .unwrap()
            .unwrap()
    };
    let first = pin();
    let want: Vec<String> = first.entries.keys().cloned().collect();
    assert_eq!(want, [".gitignore", "src/a-b.py", "src/a/m.py"]);
    let kept = std::fs::read(state.join(LISTING_FILE)).unwrap();
    assert!(kept.starts_with(LISTING_MAGIC));

    let mut other_commit = kept.clone();
    other_commit[LISTING_MAGIC.len()] ^= 0xff;
    let mut longer = kept.clone();
    longer.push(0);
    let mut bad_kind = kept.clone();
    // The first entry's kind byte: after the magic, the commit, the count and the path.
    let at = LISTING_MAGIC.len() + 20 + 8 + 4 + b".gitignore".len();
    assert_eq!(bad_kind[at], b'f');
    bad_kind[at] = b'?';
    for (what, bytes) in [
        ("garbage", b"not a listing".to_vec()),
        ("cut short", kept[..kept.len() - 7].to_vec()),
        ("a byte too many", longer),
        ("another commit", other_commit),
        ("an unknown kind", bad_kind),
    ] {
        std::fs::write(state.join(LISTING_FILE), &bytes).unwrap();
        let again = pin();
        let keys: Vec<String> = again.entries.keys().cloned().collect();
        assert_eq!(keys, want, "{what}");
        assert!(again.is_ignored(b"src/debug.log", false), "{what}");
        assert!(!again.is_ignored(b"src/a/m.py", false), "{what}");
        assert_eq!(
            std::fs::read(state.join(LISTING_FILE)).unwrap(),
            kept,
            "{what}: the listing is written anew"
        );
    }
}
