//! Files as git checks them out: CRLF line endings and Git LFS objects.

use std::fs;

use super::tools::png;
use super::*;

// ---- line endings ------------------------------------------------------------------------------

/// A repository with more text files, committed with LF endings, a script `.gitattributes`
/// keeps LF, and a binary asset.
pub(super) fn eol_repo() -> Repo {
    Repo::with(&[
        (".gitattributes", b"*.sh text eol=lf\n*.png binary\n"),
        ("scripts/deploy.sh", b"#!/bin/bash\necho deploy\n"),
        ("docs/guide.txt", b"one\ntwo\n"),
        ("assets/logo.png", &png(0)),
    ])
}

/// [`eol_repo`] checked out as git for Windows does (`core.autocrlf=true`): every text file
/// with CRLF endings, but the script (`eol=lf`) and the asset (`binary`).
pub(super) fn autocrlf_checkout() -> Repo {
    let mut r = eol_repo();
    r.git(&["config", "core.autocrlf", "true"]);
    for p in r.git(&["ls-files"]).lines() {
        fs::remove_file(r.path(p)).expect("rm");
    }
    r.git(&["checkout", "--", "."]);
    assert_eq!(r.read(APP), b"def main():\r\n    return 1\r\n");
    assert_eq!(r.read("scripts/deploy.sh"), b"#!/bin/bash\necho deploy\n");
    assert_eq!(r.read("assets/logo.png"), png(0));
    r.refound();
    r
}

vetoed!(
    /// The protected module converted to CRLF, and left out of the record: a change.
    a_protected_file_converted_to_crlf_is_a_change,
    eol_repo,
    |r| {
        edit_app(r);
        let crlf = String::from_utf8(r.read(PROTECTED)).expect("utf-8").replace('\n', "\r\n");
        r.write(PROTECTED, crlf);
        r.record("t1", &[], &[APP], &[]);
    },
    PROTECTED
);

honest!(
    /// A file converted to CRLF on purpose and listed: APPROVEd.
    an_honest_crlf_conversion_that_is_listed,
    eol_repo,
    |r| {
        let crlf = String::from_utf8(r.read("docs/guide.txt")).expect("utf-8").replace('\n', "\r\n");
        r.write("docs/guide.txt", crlf);
        r.record("t1", &[], &["docs/guide.txt"], &[]);
    }
);

/// The same conversion, not listed: CC-02 names it.
#[test]
fn an_unlisted_crlf_conversion_is_an_undeclared_change() {
    for mode in [Mode::Pinned, Mode::Fresh] {
        let (_r, code, doc) = judge(
            eol_repo,
            |r| {
                edit_app(r);
                let crlf = String::from_utf8(r.read("docs/guide.txt"))
                    .expect("utf-8")
                    .replace('\n', "\r\n");
                r.write("docs/guide.txt", crlf);
                r.record("t1", &[], &[APP], &[]);
            },
            mode,
            &[],
        );
        assert_rejected_by(code, &doc, "CC-02", "unlisted: docs/guide.txt (modified)");
    }
}

honest!(
    /// A checkout whose every text file has CRLF endings (core.autocrlf on Windows) is not a
    /// change: the worker's edit, listed with the hashes of the files as it found them, is
    /// APPROVEd.
    a_crlf_checkout_of_the_whole_tree_is_not_a_change,
    autocrlf_checkout,
    |r| {
        r.write(APP, "def main():\r\n    return 2\r\n");
        r.record("t1", &[], &[APP], &[]);
    }
);

vetoed!(
    /// In that checkout, the protected module alone converted back to LF: a change.
    in_a_crlf_checkout_a_protected_file_converted_to_lf_is_a_change,
    autocrlf_checkout,
    |r| {
        r.write(APP, "def main():\r\n    return 2\r\n");
        let lf = String::from_utf8(r.read(PROTECTED)).expect("utf-8").replace("\r\n", "\n");
        r.write(PROTECTED, lf);
        r.record("t1", &[], &[APP], &[]);
    },
    PROTECTED
);

/// An LF checkout with 40 text files first in path order (`a/`) and 60 after the protected
/// module (`z/`).
fn lf_checkout_with_many_files() -> Repo {
    let names: Vec<(String, Vec<u8>)> = (0..40)
        .map(|i| {
            (
                format!("a/lf{i:02}.txt"),
                format!("line {i}\nmore\n").into_bytes(),
            )
        })
        .chain((0..60).map(|i| {
            (
                format!("z/cr{i:02}.txt"),
                format!("row {i}\nnext\n").into_bytes(),
            )
        }))
        .collect();
    let files: Vec<(&str, &[u8])> = names
        .iter()
        .map(|(p, b)| (p.as_str(), b.as_slice()))
        .collect();
    Repo::with(&files)
}

vetoed!(
    /// Most of the tree converted to CRLF behind 40 files left LF, the protected module among
    /// the converted, and left out of the record: a change, even for a `verify` that first looks
    /// after the work (git converts every file of a class or none, so an LF file is evidence the
    /// checkout is LF, whatever the count of converted ones).
    a_protected_file_converted_with_most_of_the_tree_is_a_change,
    lf_checkout_with_many_files,
    |r| {
        edit_app(r);
        let mut paths: Vec<String> = (0..60).map(|i| format!("z/cr{i:02}.txt")).collect();
        paths.push(PROTECTED.to_string());
        for p in &paths {
            let crlf = String::from_utf8(r.read(p)).expect("utf-8").replace('\n', "\r\n");
            r.write(p, crlf);
        }
        r.record("t1", &[], &[APP], &[]);
    },
    PROTECTED
);

/// Files `.gitattributes` checks out with CRLF (`eol=crlf`), in an otherwise LF checkout.
fn eol_crlf_attribute_checkout() -> Repo {
    let mut r = Repo::with(&[
        (".gitattributes", b"*.bat text eol=crlf\n"),
        ("scripts/build.bat", b"@echo off\necho build\n"),
    ]);
    fs::remove_file(r.path("scripts/build.bat")).expect("rm");
    r.git(&["checkout", "--", "scripts/build.bat"]);
    assert_eq!(r.read("scripts/build.bat"), b"@echo off\r\necho build\r\n");
    r.refound();
    r
}

honest!(
    /// A `.bat` file `eol=crlf` checked out with CRLF: not a change; the edit of another file is
    /// APPROVEd.
    eol_crlf_files_in_an_lf_checkout_are_the_baseline,
    eol_crlf_attribute_checkout,
    |r| {
        edit_app(r);
        r.record("t1", &[], &[APP], &[]);
    }
);

vetoed!(
    /// A protected file the attributes do not convert, converted anyway: a change, beside
    /// `eol=crlf` files that are not.
    a_protected_file_converted_beside_eol_crlf_files_is_a_change,
    eol_crlf_attribute_checkout,
    |r| {
        edit_app(r);
        let crlf = String::from_utf8(r.read(PROTECTED)).expect("utf-8").replace('\n', "\r\n");
        r.write(PROTECTED, crlf);
        r.record("t1", &[], &[APP], &[]);
    },
    PROTECTED
);

// ---- Git LFS ----------------------------------------------------------------------------------

/// The content of a file Git LFS tracks, and its pointer (what the commit holds).
const LFS_CONTENT: &[u8] = b"\x00\x01model weights\x00\xff";

fn lfs_pointer(content: &[u8]) -> String {
    format!(
        "version https://git-lfs.github.com/spec/v1\noid sha256:{}\nsize {}\n",
        sha(content),
        content.len()
    )
}

/// A repository whose `assets/model.bin` Git LFS tracks, checked out as git-lfs does: the
/// commit holds the pointer, the work tree the object (also in `.git/lfs/objects/`).
fn lfs_checkout() -> Repo {
    let pointer = lfs_pointer(LFS_CONTENT);
    let mut r = Repo::with(&[
        (
            ".gitattributes",
            b"*.bin filter=lfs diff=lfs merge=lfs -text\n",
        ),
        ("assets/model.bin", pointer.as_bytes()),
    ]);
    let oid = sha(LFS_CONTENT);
    let store = r.path(".git/lfs/objects").join(&oid[..2]).join(&oid[2..4]);
    fs::create_dir_all(&store).expect("mkdir");
    fs::write(store.join(&oid), LFS_CONTENT).expect("write");
    r.write("assets/model.bin", LFS_CONTENT);
    r.refound();
    r
}

honest!(
    /// The object git-lfs checked out where the commit holds its pointer is not a change.
    an_lfs_object_checked_out_in_place_of_its_pointer_is_no_change,
    lfs_checkout,
    |r| {
        edit_app(r);
        r.record("t1", &[], &[APP], &[]);
    }
);

honest!(
    /// A new version of the LFS-tracked asset, listed with the hash of the object it replaced.
    a_new_version_of_an_lfs_asset_is_an_ordinary_modification,
    lfs_checkout,
    |r| {
        r.write("assets/model.bin", b"\x00\x02new weights\x00");
        r.record("t1", &[], &["assets/model.bin"], &[]);
    }
);

honest!(
    /// A checkout without git-lfs (or with `GIT_LFS_SKIP_SMUDGE=1`) leaves the pointer: no change
    /// either.
    an_lfs_pointer_left_as_checked_out_is_no_change,
    || {
        let pointer = lfs_pointer(LFS_CONTENT);
        Repo::with(&[
            (".gitattributes", b"*.bin filter=lfs diff=lfs merge=lfs -text\n"),
            ("assets/model.bin", pointer.as_bytes()),
        ])
    },
    |r| {
        edit_app(r);
        r.record("t1", &[], &[APP], &[]);
    }
);
