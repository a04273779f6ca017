//! A folder's subfolders are looked at by their own jobs, opened beneath the root with no link
//! followed; what was replaced in between is refused, never followed.

use super::super::{Options, StatCache, WorkTree};
use super::*;
use std::fs;
use std::os::unix::fs::{symlink, MetadataExt};

const SKIP: &[&str] = &[".git", ".tasks", ".referee"];

fn no_ignore(_: &[u8], _: bool) -> bool {
    false
}

/// The root's job, taken from the queue.
fn root_job(shared: &Shared) -> Job {
    lock(&shared.queue)
        .jobs
        .pop_front()
        .expect("the root's job")
}

fn id_of(path: &Path) -> (u64, u64) {
    let m = fs::symlink_metadata(path).expect("stat");
    (m.dev(), m.ino())
}

fn child<'l>(listed: &'l Listed, name: &str) -> &'l Child {
    let children = listed.children.as_ref().expect("listed");
    children
        .iter()
        .find(|c| name_at(&listed.names, c.name) == name)
        .expect(name)
}

#[test]
fn a_directory_is_looked_at_by_its_own_job() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    fs::create_dir_all(root.join("d/e")).expect("mkdir");
    fs::create_dir_all(root.join("sub/.git")).expect("mkdir");
    fs::write(root.join("f"), b"f").expect("write");
    symlink("d", root.join("ln")).expect("symlink");
    let shared = Shared::new(root, SKIP).expect("open");
    assert!(
        shared.beneath.load(Ordering::Relaxed),
        "openat2 on this kernel"
    );
    let (top, subs) = list(&shared, root_job(&shared));
    // `d` and `sub`: their type from the directory entry, nothing else looked at yet.
    for name in ["d", "sub"] {
        let c = child(&top, name);
        let meta = c.meta.as_ref().expect("meta");
        assert_eq!(meta.file_type(), FileType::Directory);
        assert_eq!(
            (meta.dev, meta.ino),
            (0, 0),
            "{name} was looked at by its parent"
        );
        assert!(c.sub.is_some());
    }
    // Anything else is looked at where it is listed, a link never walked.
    let f = child(&top, "f").meta.as_ref().expect("f");
    assert_eq!((f.dev, f.ino), id_of(&root.join("f")));
    assert_eq!(
        child(&top, "ln").meta.as_ref().expect("ln").file_type(),
        FileType::Symlink
    );
    assert!(child(&top, "ln").sub.is_none());
    // Each job opens its directory and brings its own `lstat`.
    let mut below = Vec::new();
    for job in subs {
        let (listed, more) = list(&shared, job);
        let own = listed.own.expect("looked at when opened");
        let real = id_of(&root.join(OsStr::from_bytes(&listed.rel)));
        assert_eq!(((own.dev, own.ino), listed.id), (real, real));
        assert_eq!(own.file_type(), FileType::Directory);
        below.push(listed);
        for job in more {
            below.push(list(&shared, job).0);
        }
    }
    let rels: Vec<&[u8]> = below.iter().map(|l| l.rel.as_slice()).collect();
    assert_eq!(rels, [&b"d"[..], b"d/e", b"sub"]);
    // `sub/.git` is looked at in `sub` and never walked.
    let git = child(&below[2], ".git");
    assert_eq!(
        git.meta.as_ref().expect(".git").ino,
        id_of(&root.join("sub/.git")).1
    );
    assert!(git.sub.is_none());
}

#[test]
fn a_directory_replaced_before_its_own_listing_is_refused_not_followed() {
    for replacement in ["link", "file", "fifo", "gone"] {
        let dir = tempfile::tempdir().expect("tempdir");
        let root = dir.path();
        fs::create_dir_all(root.join("d")).expect("mkdir");
        fs::write(root.join("d/f"), b"listed\n").expect("write");
        fs::create_dir_all(root.join("other")).expect("mkdir");
        fs::write(root.join("other/f"), b"the other side\n").expect("write");
        let shared = Shared::new(root, SKIP).expect("open");
        let (top, subs) = list(&shared, root_job(&shared));
        // Between the root's listing and `d`'s own: `d` becomes a link to another folder
        // (inside the tree), a file, a FIFO, or nothing.
        fs::rename(root.join("d"), root.join("d-old")).expect("mv");
        match replacement {
            "link" => symlink("other", root.join("d")).expect("symlink"),
            "file" => fs::write(root.join("d"), b"not a folder").expect("write"),
            // Opened as a directory it fails at once: a FIFO is never waited on.
            "fifo" => {
                rustix::fs::mkfifoat(
                    rustix::fs::CWD,
                    root.join("d"),
                    rustix::fs::Mode::from_raw_mode(0o644),
                )
                .expect("mkfifo");
            }
            _ => {}
        }
        let job = subs
            .into_iter()
            .find(|j| matches!(j, Job::Dir { rel, .. } if rel == b"d"))
            .expect("d's job");
        let (listed, _) = list(&shared, job);
        assert!(listed.children.is_err(), "{replacement}: listed through");
        assert!(listed.own.is_none());
        // Recorded, `d` is there and cannot be read, and nothing of `other` is taken for it.
        let opts = Options {
            cap: 1 << 20,
            skip_top: SKIP,
            ignored: &no_ignore,
            known: &|_: &[u8]| None,
            hash: gix::hash::Kind::Sha1,
        };
        let tree = WorkTree::record_all(
            root,
            shared.root_id,
            [top, listed].into_iter(),
            &opts,
            &mut StatCache::new(),
        )
        .expect("recorded");
        let d = &tree.entries["d"];
        assert!(d.unreadable.is_some(), "{replacement}: {d:?}");
        assert!(!tree.entries.contains_key("d/f"), "{replacement}");
    }
}
