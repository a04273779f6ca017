//! Symbolic links the worker adds, judged as git records them (a link's content is its target)
//! and as a reader meets them (a parser reads the file a link leads to): an honest link inside
//! the workspace is a change like a file's; a link out of it, or to nothing, cannot be judged
//! and blocks; a link to a file that does not parse, or a hash that names neither the link nor
//! what it leads to, FAILs.

use std::os::unix::fs::symlink;

use super::*;

/// Writes `.tasks/t1.json` with the changes as listed and the post-hashes given (a path left
/// out of `post` has none, as a worker that cannot hash a link to a folder writes it).
fn record_with(
    r: &Repo,
    added: &[&str],
    modified: &[&str],
    pre: &[(&str, String)],
    post: &[(&str, String)],
) {
    let map = |m: &[(&str, String)]| -> serde_json::Map<String, Value> {
        m.iter()
            .map(|(p, h)| ((*p).to_string(), json!(h)))
            .collect()
    };
    let doc = json!({
        "task_id": "t1",
        "status": "pending_review",
        "description": "a task",
        "attempt": 1,
        "summary": "Here's what I did: the change.",
        "changes": {"added": added, "modified": modified, "removed": []},
        "pre_hashes": map(pre),
        "post_hashes": map(post),
    });
    r.write(
        ".tasks/t1.json",
        serde_json::to_string_pretty(&doc).expect("json"),
    );
}

/// What `sha256sum PATH` prints for the work tree's `rel` (a link followed).
fn sha_followed(r: &Repo, rel: &str) -> String {
    sha(&r.read(rel))
}

/// A repository whose first commit also holds a link `src/current.py -> app.py`.
fn with_a_committed_link() -> Repo {
    let mut r = Repo::with(&[("src/v2.py", b"def main():\n    return 2\n")]);
    symlink("app.py", r.path("src/current.py")).expect("link");
    r.git(&["add", "-A"]);
    r.git(&["commit", "-q", "-m", "a link"]);
    r.refound();
    r
}

honest!(
    /// `ln -s src appx` and `ln -s app.py src/app2.py`, both listed, the file link's hash as
    /// `sha256sum` prints it (the file it leads to), the folder link with none.
    links_inside_the_workspace_are_changes_like_files,
    Repo::new,
    |r| {
        edit_app(r);
        symlink("src", r.path("appx")).expect("link");
        symlink("app.py", r.path("src/app2.py")).expect("link");
        record_with(
            r,
            &["appx", "src/app2.py"],
            &[APP],
            &[(APP, sha(&r.found[APP]))],
            &[(APP, sha(&r.read(APP))), ("src/app2.py", sha_followed(r, "src/app2.py"))],
        );
    }
);

honest!(
    /// A link's hash may also be git's: the SHA-256 of its target text.
    a_links_hash_may_be_that_of_its_target_text,
    Repo::new,
    |r| {
        symlink("app.py", r.path("src/app2.py")).expect("link");
        record_with(r, &["src/app2.py"], &[], &[], &[("src/app2.py", sha(b"app.py"))]);
    }
);

honest!(
    /// A committed link pointed at another file: its old hash is that of the file it led to.
    a_committed_link_pointed_elsewhere,
    with_a_committed_link,
    |r| {
        std::fs::remove_file(r.path("src/current.py")).expect("rm");
        symlink("v2.py", r.path("src/current.py")).expect("link");
        record_with(
            r,
            &[],
            &["src/current.py"],
            &[("src/current.py", sha(&r.found[APP]))],
            &[("src/current.py", sha_followed(r, "src/current.py"))],
        );
    }
);

/// t1 REJECTed because `check` could not be judged, its evidence holding `needle`; exit 1.
fn assert_cannot_judge(code: i32, doc: &Value, check: &str, needle: &str) {
    assert_eq!(task_verdict(doc, "t1"), "REJECT", "{doc:#}");
    assert_eq!(
        result(doc, check)["status"],
        json!("INCONCLUSIVE"),
        "{doc:#}"
    );
    let ev = evidence(doc, check);
    assert!(ev.contains(needle), "{check} says {needle:?}: {ev}");
    assert_eq!(code, 1, "{doc:#}");
}

#[test]
fn a_link_out_of_the_workspace_cannot_be_judged() {
    for mode in [Mode::Pinned, Mode::Fresh] {
        let (_r, code, doc) = judge(
            Repo::new,
            |r| {
                let outside = r._tmp.path().join("outside.py");
                std::fs::write(&outside, "def main(:\n").expect("write");
                symlink(&outside, r.path("src/extra.py")).expect("link");
                record_with(r, &["src/extra.py"], &[], &[], &[]);
            },
            mode,
            &[],
        );
        assert_cannot_judge(code, &doc, "CC-05", "out of the workspace");
    }
}

#[test]
fn a_dangling_link_cannot_be_judged() {
    for mode in [Mode::Pinned, Mode::Fresh] {
        let (_r, code, doc) = judge(
            Repo::new,
            |r| {
                symlink("later.py", r.path("src/extra.py")).expect("link");
                record_with(r, &["src/extra.py"], &[], &[], &[]);
            },
            mode,
            &[],
        );
        assert_cannot_judge(code, &doc, "CC-05", "which does not exist");
    }
}

rejected!(
    a_link_to_an_ignored_file_that_does_not_parse_fails_as_that_file,
    Repo::new,
    |r| {
        r.write("build/gen.py", "def main(:\n");
        symlink("../build/gen.py", r.path("src/gen.py")).expect("link");
        let post = sha_followed(r, "src/gen.py");
        record_with(r, &["src/gen.py"], &[], &[], &[("src/gen.py", post)]);
    },
    "CC-05",
    ["src/gen.py"]
);

rejected!(
    a_hash_that_names_neither_the_link_nor_its_file_fails,
    Repo::new,
    |r| {
        symlink("app.py", r.path("src/app2.py")).expect("link");
        let lie = sha(b"something else");
        record_with(r, &["src/app2.py"], &[], &[], &[("src/app2.py", lie)]);
    },
    "CC-03",
    ["post_hashes src/app2.py: claimed"]
);

vetoed!(
    /// A link to the protected module, at a name of its own, is a way to it.
    a_link_to_the_protected_module,
    Repo::new,
    |r| {
        symlink("orchestrator.py", r.path("src/entry.py")).expect("link");
        record_with(r, &["src/entry.py"], &[], &[], &[]);
    },
    "src/entry.py"
);

/// `referee status WS --task t1` through the state directory the judgment wrote.
fn task_status(r: &Repo) -> crate::util::Output {
    crate::util::run(&[
        "status",
        &r.ws.display().to_string(),
        &format!("--state-dir={}", r.state.display()),
        "--task",
        "t1",
    ])
}

/// A verdict over a link holds for the file the link leads to as well: CC-05 judged that file,
/// so a rewrite of it (an ignored file no record lists) makes the verdict stale, for
/// `status --task` and for `accept`, where it used to answer the APPROVE of the file as it was.
#[test]
fn a_verdict_over_a_link_is_stale_once_the_file_it_leads_to_changes() {
    let (r, code, doc) = judge(
        Repo::new,
        |r| {
            r.write("build/gen.py", "def main():\n    return 1\n");
            symlink("../build/gen.py", r.path("src/gen.py")).expect("link");
            let post = sha_followed(r, "src/gen.py");
            record_with(r, &["src/gen.py"], &[], &[], &[("src/gen.py", post)]);
        },
        Mode::Pinned,
        &[],
    );
    assert_eq!(task_verdict(&doc, "t1"), "APPROVE", "{doc:#}");
    assert_eq!(code, 0, "{doc:#}");
    let before = task_status(&r);
    assert_eq!(before.code, 0, "{before:?}");

    r.write("build/gen.py", "def main(:\n");
    let after = task_status(&r);
    assert_eq!(after.code, 4, "not judged: {after:?}");
    assert!(
        after.stderr.contains("stale") && after.stderr.contains("src/gen.py"),
        "{after:?}"
    );
    let accepted = crate::util::run(&[
        "accept",
        &r.ws.display().to_string(),
        &format!("--state-dir={}", r.state.display()),
        "--task",
        "t1",
    ]);
    assert_eq!(accepted.code, 1, "refused: {accepted:?}");
    assert!(accepted.stderr.contains("stale"), "{accepted:?}");

    // Judged again, it is what the file is now.
    let (code, doc) = r.verify(&[]);
    assert_rejected_by(code, &doc, "CC-05", "src/gen.py");
}
