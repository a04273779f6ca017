//! The reader against the real `git`: every kind of entry and name, revisions, what the
//! repository configures never runs, replace refs, objects overwritten in place.

use super::*;
use std::ffi::OsStr;
use std::io::Write as _;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::ffi::OsStringExt as _;
use std::os::unix::fs::PermissionsExt as _;
use std::process::{Command, Stdio};

/// Runs the real `git` in `dir`, independent of the machine's config; panics with what git said.
#[track_caller]
fn git(dir: &Path, args: &[&str]) -> String {
    git_in(dir, args, None)
}

#[track_caller]
fn git_in(dir: &Path, args: &[&str], stdin: Option<&[u8]>) -> String {
    let mut child = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args([
            "-c",
            "user.name=referee",
            "-c",
            "user.email=referee@example.invalid",
            "-c",
            "init.defaultBranch=main",
            "-c",
            "protocol.file.allow=always",
            "-c",
            "gc.auto=0",
        ])
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_OBJECT_DIRECTORY")
        .env_remove("GIT_NO_REPLACE_OBJECTS")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("git runs");
    let mut input = child.stdin.take().unwrap();
    input.write_all(stdin.unwrap_or_default()).unwrap();
    drop(input);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?} in {}: {}",
        dir.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim_end().to_string()
}

fn oid(hex: &str) -> ObjectId {
    ObjectId::from_hex(hex.as_bytes()).unwrap()
}

/// `git rev-parse --verify REV^{commit}`, `None` when git names no commit.
fn git_resolve(dir: &Path, rev: &str) -> Option<ObjectId> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(["rev-parse", "--verify", "--quiet", "--end-of-options"])
        .arg(format!("{rev}^{{commit}}"))
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    out.status
        .success()
        .then(|| oid(String::from_utf8_lossy(&out.stdout).trim()))
}

/// A new repository at `<tmp>/w`.
fn new_repo() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().join("w");
    std::fs::create_dir(&root).unwrap();
    git(&root, &["init", "-q"]);
    (tmp, root)
}

fn write(root: &Path, rel: &[u8], bytes: &[u8]) {
    let path = root.join(OsStr::from_bytes(rel));
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

#[track_caller]
fn commit_all(root: &Path, msg: &str) -> ObjectId {
    git(root, &["add", "-A"]);
    git(root, &["commit", "-q", "--allow-empty", "-m", msg]);
    oid(&git(root, &["rev-parse", "HEAD"]))
}

/// `git ls-tree -r` of `rev`, the oracle for [`Repo::tree`].
fn git_tree(root: &Path, rev: &str) -> BTreeMap<Vec<u8>, BaseEntry> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["ls-tree", "-r", "-z", "--full-tree", rev])
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .unwrap();
    assert!(out.status.success());
    let mut map = BTreeMap::new();
    for rec in out.stdout.split(|&b| b == 0).filter(|r| !r.is_empty()) {
        let tab = rec.iter().position(|&b| b == b'\t').unwrap();
        let meta: Vec<&[u8]> = rec[..tab].split(|&b| b == b' ').collect();
        let kind = match meta[0] {
            b"100644" => EntryKind::File,
            b"100755" => EntryKind::Executable,
            b"120000" => EntryKind::Symlink,
            b"160000" => EntryKind::Submodule,
            m => panic!("mode {}", m.to_str_lossy()),
        };
        let id = oid(std::str::from_utf8(meta[2]).unwrap());
        map.insert(rec[tab + 1..].to_vec(), BaseEntry { kind, oid: id });
    }
    map
}

fn open(root: &Path) -> Repo {
    Repo::open(root).unwrap().expect("a git work tree")
}

/// A repository with every kind of entry and awkward names; returns the tree's oracle.
fn populate(root: &Path) -> ObjectId {
    write(root, b"a.txt", b"one\n");
    write(root, b"dir/sub/deep.txt", b"deep\n");
    write(root, b"with space.txt", b"space\n");
    write(root, b"new\nline.txt", b"newline\n");
    write(root, b"caf\xe9/\xff\xfe.bin", b"\x00\x01 not utf-8\n");
    write(root, b"run.sh", b"#!/bin/sh\necho hi\n");
    let exe = root.join("run.sh");
    std::fs::set_permissions(&exe, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::os::unix::fs::symlink("dir/sub/deep.txt", root.join("link")).unwrap();
    let c1 = commit_all(root, "first");
    // A gitlink (submodule entry) to the first commit, without a nested clone.
    let cacheinfo = format!("160000,{c1},vendor/sub");
    git(root, &["update-index", "--add", "--cacheinfo", &cacheinfo]);
    git(root, &["commit", "-q", "-m", "second"]);
    oid(&git(root, &["rev-parse", "HEAD"]))
}

#[test]
fn reads_every_kind_of_entry_and_any_name_like_git() {
    let (_tmp, root) = new_repo();
    let head = populate(&root);
    let repo = open(&root);
    assert_eq!(
        repo.git_dir(),
        std::fs::canonicalize(root.join(".git")).unwrap()
    );
    assert_eq!(repo.head().unwrap(), Some(head));
    assert_eq!(repo.resolve("HEAD").unwrap(), Some(head));
    let tree = repo.tree(head).unwrap();
    assert_eq!(tree.commit, head);
    assert_eq!(tree.entries, git_tree(&root, "HEAD"));
    let kind = |p: &[u8]| tree.entries[p].kind;
    assert_eq!(kind(b"run.sh"), EntryKind::Executable);
    assert_eq!(kind(b"link"), EntryKind::Symlink);
    assert_eq!(kind(b"vendor/sub"), EntryKind::Submodule);
    assert_eq!(kind(b"new\nline.txt"), EntryKind::File);
    assert_eq!(
        tree.entries[&b"vendor/sub"[..]].oid,
        repo.resolve("HEAD~1").unwrap().unwrap()
    );
    for (path, entry) in &tree.entries {
        let want: Vec<u8> = match entry.kind {
            EntryKind::Submodule => continue,
            EntryKind::Symlink => std::fs::read_link(root.join(OsStr::from_bytes(path)))
                .unwrap()
                .into_os_string()
                .into_vec(),
            _ => std::fs::read(root.join(OsStr::from_bytes(path))).unwrap(),
        };
        assert_eq!(
            repo.blob(entry.oid).unwrap(),
            want,
            "{}",
            path.to_str_lossy()
        );
        assert_eq!(blob_oid(&want), entry.oid);
        assert_eq!(repo.blob_size(entry.oid).unwrap(), Some(want.len() as u64));
    }
    // A tree or commit is not a blob.
    assert!(matches!(repo.blob(head), Err(GitReadError::Kind { .. })));
    let blob = tree.entries[&b"a.txt"[..]].oid;
    assert!(matches!(repo.tree(blob), Err(GitReadError::Kind { .. })));
}

#[test]
fn resolves_revisions_as_git_does_loose_and_packed() {
    let (_tmp, root) = new_repo();
    write(&root, b"a", b"1");
    commit_all(&root, "c1");
    git(&root, &["tag", "-a", "v1", "-m", "annotated"]);
    git(&root, &["tag", "-a", "v1b", "-m", "tag of a tag", "v1"]);
    write(&root, b"a", b"2");
    commit_all(&root, "c2");
    git(&root, &["tag", "light"]);
    git(&root, &["checkout", "-q", "-b", "feature", "HEAD~1"]);
    write(&root, b"b", b"f");
    commit_all(&root, "f1");
    git(&root, &["checkout", "-q", "main"]);
    git(&root, &["merge", "-q", "--no-ff", "-m", "merge", "feature"]);
    let blob = git(&root, &["rev-parse", "HEAD:a"]);
    let short = git(&root, &["rev-parse", "--short=7", "HEAD~1"]);
    let full = git(&root, &["rev-parse", "v1^{commit}"]);
    let revs = [
        "HEAD",
        "@",
        "main",
        "heads/main",
        "refs/heads/main",
        "feature",
        "v1",
        "v1b",
        "tags/v1",
        "light",
        "HEAD~1",
        "HEAD~2",
        "HEAD~",
        "HEAD^",
        "HEAD^2",
        "HEAD^^",
        "HEAD^2~1",
        "HEAD~1^0",
        "v1^{}",
        "v1^{commit}",
        "v1b^{}",
        "HEAD^{commit}~1",
        &short,
        &full,
        "HEAD~10",
        "HEAD^3",
        "nope",
        "refs/heads/nope",
        &blob,
    ];
    let check = |repo: &Repo| {
        for rev in revs {
            assert_eq!(repo.resolve(rev).unwrap(), git_resolve(&root, rev), "{rev}");
        }
        assert_eq!(repo.resolve("nope").unwrap(), None);
        for rev in [
            "HEAD@{1}",
            "main..feature",
            ":/c1",
            "HEAD^{tree}",
            "^HEAD",
            "HEAD:a",
            "HEAD~é",
            "HEAD^{",
            "HEAD~1x",
        ] {
            assert!(
                matches!(repo.resolve(rev), Err(GitReadError::Unsupported { .. })),
                "{rev}"
            );
        }
    };
    check(&open(&root));
    // Everything packed: objects into a pack, refs into packed-refs.
    git(&root, &["gc", "-q", "--prune=now"]);
    assert!(!root.join(".git/refs/tags/v1").exists());
    let loose = std::fs::read_dir(root.join(".git/objects"))
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().len() == 2)
        .count();
    assert_eq!(loose, 0, "gc left loose objects");
    let repo = open(&root);
    check(&repo);
    let head = repo.head().unwrap().unwrap();
    assert_eq!(repo.tree(head).unwrap().entries, git_tree(&root, "HEAD"));
}

#[test]
fn unborn_detached_and_not_a_work_tree() {
    let (tmp, root) = new_repo();
    let repo = open(&root);
    assert_eq!(repo.head().unwrap(), None, "unborn HEAD");
    assert_eq!(repo.resolve("HEAD").unwrap(), None);
    assert_eq!(repo.resolve("main").unwrap(), None);

    write(&root, b"a", b"1");
    let c1 = commit_all(&root, "c1");
    write(&root, b"a", b"2");
    let c2 = commit_all(&root, "c2");
    assert_eq!(
        repo.head().unwrap(),
        Some(c2),
        "the same Repo sees HEAD move"
    );
    git(&root, &["checkout", "-q", "--detach", "HEAD~1"]);
    assert_eq!(repo.head().unwrap(), Some(c1), "detached");
    assert_eq!(repo.resolve("main").unwrap(), Some(c2));

    assert!(Repo::open(tmp.path()).unwrap().is_none(), "no .git");
    std::fs::create_dir(root.join("sub")).unwrap();
    assert!(
        Repo::open(&root.join("sub")).unwrap().is_none(),
        "a subdirectory of a work tree is not one"
    );
}

#[test]
fn a_dot_git_file_points_at_the_repository() {
    let (tmp, root) = new_repo();
    write(&root, b"a", b"1");
    let c1 = commit_all(&root, "c1");
    // A linked work tree: `.git` is a file, HEAD is its own, objects and refs shared.
    let wt = tmp.path().join("wt");
    git(
        &root,
        &["worktree", "add", "-q", "-b", "other", wt.to_str().unwrap()],
    );
    assert!(wt.join(".git").is_file());
    write(&wt, b"a", b"in the worktree");
    let c2 = commit_all(&wt, "c2");
    let linked = open(&wt);
    assert!(
        linked.git_dir().ends_with(".git/worktrees/wt"),
        "{:?}",
        linked.git_dir()
    );
    assert_eq!(linked.head().unwrap(), Some(c2));
    assert_eq!(linked.resolve("main").unwrap(), Some(c1));
    assert_eq!(open(&root).head().unwrap(), Some(c1));
    assert_eq!(open(&root).resolve("other").unwrap(), Some(c2));
    let tree = linked.tree(c2).unwrap();
    assert_eq!(
        linked.blob(tree.entries[&b"a"[..]].oid).unwrap(),
        b"in the worktree"
    );
    // A hand-made `gitdir:` file, as a submodule's work tree has.
    let other = tmp.path().join("other");
    std::fs::create_dir(&other).unwrap();
    let pointer = format!("gitdir: {}\n", root.join(".git").display());
    std::fs::write(other.join(".git"), pointer).unwrap();
    let repo = open(&other);
    assert_eq!(repo.head().unwrap(), Some(c1));
    assert_eq!(
        repo.git_dir(),
        std::fs::canonicalize(root.join(".git")).unwrap()
    );
}

/// Every file under `dir` with its size and modification time: what a write would change.
fn listing(dir: &Path) -> BTreeMap<PathBuf, (u64, std::time::SystemTime)> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .map(|e| {
            let e = e.unwrap();
            let meta = e.metadata().unwrap();
            (e.into_path(), (meta.len(), meta.modified().unwrap()))
        })
        .collect()
}

/// Every way a repository can make git run a program: none of them runs here, and the
/// answers are still the baseline's.
#[test]
fn runs_nothing_the_repository_configures() {
    let (tmp, root) = new_repo();
    write(&root, b".gitattributes", b"* filter=x diff=x\n");
    write(&root, b"a.txt", b"one\n");
    let c1 = commit_all(&root, "c1");
    write(&root, b"a.txt", b"two\n");
    let c2 = commit_all(&root, "c2");
    let want = git_tree(&root, "HEAD");

    let marker = tmp.path().join("MARKER");
    let script = tmp.path().join("evil.sh");
    std::fs::write(
        &script,
        format!("#!/bin/sh\necho \"$0 $*\" >> '{}'\ncat\n", marker.display()),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o755)).unwrap();
    let hooks = tmp.path().join("hooks");
    std::fs::create_dir(&hooks).unwrap();
    for hook in [
        "post-checkout",
        "pre-commit",
        "post-index-change",
        "reference-transaction",
    ] {
        std::os::unix::fs::symlink(&script, hooks.join(hook)).unwrap();
    }
    let s = script.display();
    let included = tmp.path().join("included.config");
    std::fs::write(
        &included,
        format!("[core]\n\tfsmonitor = {s}\n\tpager = {s}\n[diff \"x\"]\n\ttextconv = {s}\n"),
    )
    .unwrap();
    let mut config = std::fs::OpenOptions::new()
        .append(true)
        .open(root.join(".git/config"))
        .unwrap();
    write!(
        config,
        "[include]\n\tpath = {}\n[filter \"x\"]\n\tclean = {s}\n\tsmudge = {s}\n\t\
         required = true\n[core]\n\thooksPath = {}\n[diff]\n\texternal = {s}\n",
        included.display(),
        hooks.display()
    )
    .unwrap();
    drop(config);

    let before = listing(&root.join(".git"));
    let repo = open(&root);
    assert_eq!(repo.head().unwrap(), Some(c2));
    assert_eq!(repo.resolve("HEAD~1").unwrap(), Some(c1));
    let tree = repo.tree(c2).unwrap();
    assert_eq!(tree.entries, want);
    assert_eq!(
        repo.blob(tree.entries[&b"a.txt"[..]].oid).unwrap(),
        b"two\n"
    );
    Ignore::from_tree(&repo, &tree).unwrap();
    drop(repo);
    assert!(!marker.exists(), "the reader ran the repository's program");
    assert_eq!(
        listing(&root.join(".git")),
        before,
        "the reader wrote in .git/"
    );

    // The trap is live: git itself runs it.
    write(&root, b"a.txt", b"three\n");
    git(&root, &["status", "--porcelain"]);
    assert!(
        marker.exists(),
        "git did not run the script: the test proves nothing"
    );
}

#[test]
fn replace_refs_are_never_honoured() {
    let (_tmp, root) = new_repo();
    write(&root, b"a.txt", b"one\n");
    let c1 = commit_all(&root, "c1");
    write(&root, b"a.txt", b"two\n");
    let c2 = commit_all(&root, "c2");
    let one = oid(&git(&root, &["rev-parse", "HEAD~1:a.txt"]));
    let two = oid(&git(&root, &["rev-parse", "HEAD:a.txt"]));
    // HEAD now "contains" c1, and the blob `two` "is" `one`, for git.
    git(&root, &["replace", &c2.to_string(), &c1.to_string()]);
    git(&root, &["replace", &two.to_string(), &one.to_string()]);
    assert_eq!(git(&root, &["cat-file", "blob", &two.to_string()]), "one");
    assert_eq!(
        git_resolve(&root, "HEAD~1"),
        None,
        "git follows the replacement"
    );
    // And a graft that gives c1 a parent it does not have.
    write(
        &root,
        b".git/info/grafts",
        format!("{c1} {c2}\n").as_bytes(),
    );

    let repo = open(&root);
    assert_eq!(repo.resolve("HEAD").unwrap(), Some(c2));
    assert_eq!(repo.resolve("HEAD~1").unwrap(), Some(c1));
    assert_eq!(repo.resolve("HEAD~2").unwrap(), None, "no grafted parent");
    let tree = repo.tree(c2).unwrap();
    assert_eq!(tree.entries[&b"a.txt"[..]].oid, two);
    assert_eq!(repo.blob(two).unwrap(), b"two\n");
    // Packed, the same.
    git(&root, &["gc", "-q", "--prune=now"]);
    let repo = open(&root);
    assert_eq!(repo.resolve("HEAD~1").unwrap(), Some(c1));
    assert_eq!(repo.blob(two).unwrap(), b"two\n");
}

fn loose_path(root: &Path, id: ObjectId) -> PathBuf {
    let hex = id.to_string();
    root.join(".git/objects").join(&hex[..2]).join(&hex[2..])
}

/// Puts `from`'s object file where `to`'s is: a well-formed object under the wrong name.
fn overwrite_object(root: &Path, to: ObjectId, from: ObjectId) {
    let dst = loose_path(root, to);
    std::fs::remove_file(&dst).unwrap();
    std::fs::copy(loose_path(root, from), &dst).unwrap();
}

#[test]
fn an_object_file_overwritten_in_place_is_an_error() {
    let (_tmp, root) = new_repo();
    write(&root, b"a.txt", b"one\n");
    let c1 = commit_all(&root, "c1");
    write(&root, b"a.txt", b"two\n");
    let c2 = commit_all(&root, "c2");
    let one = oid(&git(&root, &["rev-parse", "HEAD~1:a.txt"]));
    let two = oid(&git(&root, &["rev-parse", "HEAD:a.txt"]));
    let tree1 = oid(&git(&root, &["rev-parse", "HEAD~1^{tree}"]));
    let tree2 = oid(&git(&root, &["rev-parse", "HEAD^{tree}"]));

    overwrite_object(&root, one, two);
    let repo = open(&root);
    match repo.blob(one) {
        Err(GitReadError::Corrupt { oid, .. }) => assert_eq!(oid, one),
        other => panic!("expected Corrupt, got {other:?}"),
    }
    assert_eq!(repo.blob(two).unwrap(), b"two\n");

    // The tip commit replaced by the one before it: HEAD cannot be read, not misread.
    overwrite_object(&root, c2, c1);
    let repo = open(&root);
    assert!(matches!(
        repo.resolve("HEAD"),
        Err(GitReadError::Corrupt { .. })
    ));
    assert!(matches!(repo.head(), Err(GitReadError::Corrupt { .. })));
    assert!(matches!(repo.tree(c2), Err(GitReadError::Corrupt { .. })));
    overwrite_object(&root, tree1, tree2);
    assert!(matches!(repo.tree(c1), Err(GitReadError::Corrupt { .. })));
}

mod more;
