//! Ignore rules, blob ids, a large tree, an unreadable repository.

use super::*;

#[test]
fn ignore_is_the_committed_gitignores_only() {
    let (_tmp, root) = new_repo();
    write(
        &root,
        b".gitignore",
        b"*.log\n!keep.log\n/build/\ntmp/\n**/gen/*.c\n/out/\n!/out/keep\n",
    );
    write(&root, b"sub/.gitignore", b"!*.log\n/local\n");
    write(&root, b"sub/deep/.gitignore", b"x*\n");
    write(&root, b"tracked.log", b"tracked though ignored\n");
    write(&root, b"build/tracked.c", b"tracked\n");
    write(&root, b"src/main.c", b"int main;\n");
    git(&root, &["add", "-f", "tracked.log", "build/tracked.c"]);
    commit_all(&root, "c1");
    // Rules that are not the baseline's: info/exclude, core.excludesFile, an edited
    // .gitignore on disk.
    write(&root, b".git/info/exclude", b"secret.txt\n");
    write(&root, b"excludes", b"*.bak\n");
    git(
        &root,
        &[
            "config",
            "core.excludesFile",
            root.join("excludes").to_str().unwrap(),
        ],
    );
    write(&root, b".gitignore", b"*\n");
    write(&root, b"src/.gitignore", b"*.c\n");

    let repo = open(&root);
    let tree = repo.tree(repo.head().unwrap().unwrap()).unwrap();
    let ig = Ignore::from_tree(&repo, &tree).unwrap();
    let cases: &[(&[u8], bool, bool)] = &[
        (b"a.log", false, true),
        (b"x/a.log", false, true),
        (b"keep.log", false, false),
        (b"build", true, false), // holds a tracked file: walked into
        (b"build/other.c", false, true),
        (b"build/tracked.c", false, false),
        (b"sub/build", true, false), // anchored to the top
        (b"tmp", true, true),
        (b"tmp", false, false), // dir-only
        (b"sub/tmp/f", false, true),
        (b"sub/a.log", false, false), // re-included deeper
        (b"sub/local", false, true),
        (b"local", false, false),
        (b"sub/x/local", false, false),
        (b"sub/deep/xyz", false, true),
        (b"sub/xyz", false, false),
        (b"a/b/gen/x.c", false, true),
        (b"gen/x.c", false, true),
        (b"gen/x.h", false, false),
        (b"out/keep", false, true), // inside an ignored directory: no re-include
        (b"out", true, true),
        (b"tracked.log", false, false),
        (b"secret.txt", false, false),
        (b"a.bak", false, false),
        (b"new.txt", false, false),
        (b"src/new.c", false, false),
        (b"caf\xe9.log", false, true),
    ];
    for &(path, is_dir, want) in cases {
        assert_eq!(ig.is_ignored(path, is_dir), want, "{}", path.to_str_lossy());
    }
    assert!(!Ignore::empty().is_ignored(b"a.log", false));
}

#[test]
fn blob_oid_is_git_hash_object() {
    let (_tmp, root) = new_repo();
    let big: Vec<u8> = (0..200_000u32).map(|i| (i % 251) as u8).collect();
    let inputs: [&[u8]; 4] = [b"", b"hello\n", b"\x00\xff\r\n no newline", &big];
    for bytes in inputs {
        let want = git_in(&root, &["hash-object", "--stdin"], Some(bytes));
        assert_eq!(blob_oid(bytes).to_string(), want);
    }
}

/// `tree` of a 20,000-file repository, loose and packed (`cargo test --release -- --ignored`
/// for the number that matters; the debug build is several times slower).
#[test]
#[ignore = "timing; run by hand"]
fn lists_a_large_tree_quickly() {
    let (_tmp, root) = new_repo();
    let mut stream = Vec::new();
    for i in 0..200 {
        writeln!(stream, "blob\nmark :{}\ndata 6\nf{i:04}\n", i + 1).unwrap();
    }
    stream.extend_from_slice(b"commit refs/heads/main\ncommitter a <a@b> 0 +0000\ndata 2\nm\n");
    for i in 0..20_000 {
        let dir = i / 100;
        writeln!(
            stream,
            "M 100644 :{} d{:03}/s{}/f{i:05}.txt",
            dir + 1,
            dir,
            i % 3
        )
        .unwrap();
    }
    git_in(&root, &["fast-import", "--quiet"], Some(&stream));
    for packed in [false, true] {
        if packed {
            git(&root, &["gc", "-q", "--prune=now"]);
        }
        let repo = open(&root);
        let head = repo.head().unwrap().unwrap();
        let start = std::time::Instant::now();
        let tree = repo.tree(head).unwrap();
        let took = start.elapsed();
        assert_eq!(tree.entries.len(), 20_000);
        eprintln!(
            "packed={packed}: {} entries in {took:?}",
            tree.entries.len()
        );
    }
}

/// A `.git` that git could not read either is an error (the caller fails closed), never
/// "not a work tree" and never a guess.
#[test]
fn an_unreadable_repository_is_an_error() {
    let (_tmp, root) = new_repo();
    commit_all(&root, "c1");
    std::fs::write(root.join(".git/config"), "[core\n\tnot a config ]]\n").unwrap();
    assert!(matches!(Repo::open(&root), Err(GitReadError::Open { .. })));
    std::fs::write(
        root.join(".git/config"),
        "[extensions]\n\tobjectFormat = sha256\n",
    )
    .unwrap();
    assert!(matches!(Repo::open(&root), Err(GitReadError::Open { .. })));
    let empty = tempfile::tempdir().unwrap();
    std::fs::create_dir(empty.path().join(".git")).unwrap();
    assert!(matches!(
        Repo::open(empty.path()),
        Err(GitReadError::Open { .. })
    ));
}

#[test]
fn repo_is_send() {
    fn send<T: Send>() {}
    send::<Repo>();
    send::<Ignore>();
}
