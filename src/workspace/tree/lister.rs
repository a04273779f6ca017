//! A full scan's listing, started early and run on threads of its own: each directory opened
//! by its path under the root's descriptor with no link followed on the way (`openat2`; where
//! the kernel has none, without following its last name and then checked by device and inode
//! to be the one its parent listed), its names read and
//! each child looked at (`fstatat`) and, for a symlink, its target read (`readlinkat`), all
//! through that directory's descriptor. What a walk costs is mostly these system calls; they
//! do not depend on the baseline's ignore rules nor on the stat cache, so a one-shot judgment
//! starts them before pinning the baseline and loading the cache, and records what is listed
//! as it arrives ([`super::WorkTree::scan_listed`]).
//!
//! A child that its directory entry says is a directory is not looked at where it is listed:
//! its own job opens it (beneath the root, no link on the way) and takes its `lstat` on the
//! descriptor, which its listing brings to the recorder ([`Listed::own`]). A folder of 1,000
//! folders is then 1,000 jobs for both threads, not 1,000 `fstatat` calls on one before any of
//! them can start. Where the kernel has no `openat2`, every child is looked at where it is
//! listed, and a directory opened later is checked to be the one looked at.
//!
//! Every directory is a job for whichever lister thread is free; each directory to walk gets
//! its slot in the scan's layout ([`super::walk::Bulk`]) when its parent is listed, so the
//! listings can be recorded in any order. A directory's listing is sent before the jobs of its
//! subdirectories are queued, so the recorder always has a parent before its children.

use std::collections::VecDeque;
use std::ffi::OsStr;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use rustix::fs::FileType;

use super::fsat::{name_at, Lstat, OpenDir};

/// How many threads list at once: two cores is what the machines this runs on have at least,
/// and the listing is system calls, which do not scale much further on one file system.
const LISTERS: usize = 2;

/// One child of a listed directory.
pub(super) struct Child {
    /// Its name: offset and length in [`Listed::names`].
    pub(super) name: (u32, u32),
    /// Its `lstat`; for a directory to walk that its entry says is one, only that type (see
    /// [`Listed::own`]).
    pub(super) meta: io::Result<Lstat>,
    /// A symlink's target (read through the directory's descriptor when it was listed).
    pub(super) link: Option<io::Result<Vec<u8>>>,
    /// A directory to walk: the slot its own listing comes with.
    pub(super) sub: Option<usize>,
}

/// One directory as listed, or why it could not be.
pub(super) struct Listed {
    pub(super) rel: Vec<u8>,
    /// Its device and inode (as its parent listed it, or as it was opened; the root's own).
    pub(super) id: (u64, u64),
    /// Its own `lstat`, taken on the descriptor it was listed through, when its parent did not
    /// look at it (the rest of its row in its parent's listing).
    pub(super) own: Option<Lstat>,
    pub(super) slot: usize,
    /// Its children in name order (the root's without the skipped top-level names).
    pub(super) children: io::Result<Vec<Child>>,
    /// The children's names, one after another.
    pub(super) names: Vec<u8>,
}

#[cfg(test)]
impl Listed {
    /// The name of `child`, one of its children.
    pub(super) fn name(&self, child: &Child) -> &OsStr {
        name_at(&self.names, child.name)
    }
}

/// A directory to list: the root (already open), or one its parent listed.
enum Job {
    Root(OpenDir),
    Dir {
        rel: Vec<u8>,
        /// Its identity as its parent looked at it; `None`: not looked at (opened beneath the
        /// root, with no link on the way, and looked at then).
        id: Option<(u64, u64)>,
        slot: usize,
    },
}

struct Queue {
    jobs: VecDeque<Job>,
    /// Jobs taken and not finished: while any is, more may come.
    busy: usize,
    /// Threads waiting for a job (only they need waking when a job ends).
    waiting: usize,
}

struct Shared {
    /// The root, open: every other directory is opened by its path under it.
    root: OwnedFd,
    /// The root's device and inode.
    root_id: (u64, u64),
    skip_top: Vec<Vec<u8>>,
    queue: Mutex<Queue>,
    more: Condvar,
    /// The next slot to give a directory (0 is the root's).
    slots: AtomicUsize,
    /// Whether the kernel opens paths beneath a directory without links (`openat2`).
    beneath: AtomicBool,
}

/// A listing under way: its directories arrive on [`Lister::recv`] until every one is listed.
pub(crate) struct Lister {
    pub(super) root: PathBuf,
    /// The root's device and inode.
    pub(super) id: (u64, u64),
    rx: Receiver<Listed>,
}

impl std::fmt::Debug for Lister {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Lister")
            .field("root", &self.root)
            .finish_non_exhaustive()
    }
}

impl Lister {
    /// Opens `root` (an `Err` when it cannot be opened as a directory) and starts listing the
    /// tree under it, leaving out the top-level names in `skip_top`.
    pub(crate) fn start(root: &Path, skip_top: &[&str]) -> io::Result<Lister> {
        let shared = Arc::new(Shared::new(root, skip_top)?);
        let id = shared.root_id;
        let (tx, rx) = channel();
        let mut started = 0;
        for _ in 0..LISTERS {
            let (shared, tx) = (shared.clone(), tx.clone());
            let spawned = std::thread::Builder::new()
                .name("referee-walk".into())
                .spawn(move || run(&shared, &tx));
            if spawned.is_ok() {
                started += 1;
            }
        }
        if started == 0 {
            // No thread to be had: the whole listing here, now.
            run(&shared, &tx);
        }
        Ok(Lister {
            root: root.to_path_buf(),
            id,
            rx,
        })
    }

    /// The next directory listed; `None` once every one has been.
    pub(super) fn recv(&self) -> Option<Listed> {
        self.rx.recv().ok()
    }
}

impl Shared {
    /// Opens `root` and queues it as the first job.
    fn new(root: &Path, skip_top: &[&str]) -> io::Result<Shared> {
        let top = OpenDir::open(root, None)?;
        // Whether the kernel has `openat2`: one try, on the root itself.
        let beneath = matches!(
            OpenDir::open_beneath(top.dir.fd()?, OsStr::new(".")),
            Ok(Some(_))
        );
        Ok(Shared {
            // A second descriptor of the directory opened: the same one, whatever the path
            // names by now.
            root: rustix::io::fcntl_dupfd_cloexec(top.dir.fd()?, 0)?,
            root_id: top.id()?,
            skip_top: skip_top.iter().map(|s| s.as_bytes().to_vec()).collect(),
            queue: Mutex::new(Queue {
                jobs: VecDeque::from([Job::Root(top)]),
                busy: 0,
                waiting: 0,
            }),
            more: Condvar::new(),
            slots: AtomicUsize::new(1),
            beneath: AtomicBool::new(beneath),
        })
    }
}

/// A lister thread: takes jobs until none is left and none is being worked on.
///
/// The listing of a directory without subdirectories is held and sent with a few others:
/// every send to a recorder that waits wakes it (a `futex` call each way), and a tree of
/// 1,000 one-file folders took 3,839 of them. A directory with subdirectories is sent at once,
/// before their jobs are queued (the recorder meets a parent first). What is held is sent
/// before the thread waits for work or ends, also when it unwinds.
fn run(shared: &Shared, tx: &Sender<Listed>) {
    let mut held = Held {
        tx,
        listings: Vec::new(),
    };
    loop {
        let job = {
            let mut q = lock(&shared.queue);
            loop {
                if let Some(job) = q.jobs.pop_front() {
                    q.busy += 1;
                    break job;
                }
                if q.busy == 0 {
                    shared.more.notify_all();
                    return;
                }
                held.send();
                q.waiting += 1;
                q = shared.more.wait(q).unwrap_or_else(PoisonError::into_inner);
                q.waiting -= 1;
            }
        };
        let what = match &job {
            Job::Root(_) => (Vec::new(), shared.root_id, 0),
            Job::Dir { rel, id, slot } => (rel.clone(), id.unwrap_or_default(), *slot),
        };
        let mut taken = Taken {
            shared,
            tx,
            what: Some(what),
        };
        let (listed, subs) = list(shared, job);
        taken.what = None;
        if subs.is_empty() {
            held.listings.push(listed);
            if held.listings.len() >= HELD {
                held.send();
            }
        } else {
            held.send();
            // Sent before its subdirectories are queued: the recorder meets a parent first.
            if tx.send(listed).is_ok() {
                lock(&shared.queue).jobs.extend(subs);
            }
        }
    }
}

/// Listings held at most before they are sent.
const HELD: usize = 32;

/// Listings of directories without subdirectories, held to be sent together; sent when
/// dropped, so a thread that unwinds loses none.
struct Held<'s> {
    tx: &'s Sender<Listed>,
    listings: Vec<Listed>,
}

impl Held<'_> {
    fn send(&mut self) {
        for listed in self.listings.drain(..) {
            let _ = self.tx.send(listed);
        }
    }
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        self.send();
    }
}

fn lock(queue: &Mutex<Queue>) -> std::sync::MutexGuard<'_, Queue> {
    queue.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A job being worked on: when it ends, the others are told (and none waits forever); a job
/// that did not finish (a panic) is sent as a directory that could not be listed, so what it
/// would have listed is never taken for empty (fail closed).
struct Taken<'s> {
    shared: &'s Shared,
    tx: &'s Sender<Listed>,
    what: Option<(Vec<u8>, (u64, u64), usize)>,
}

impl Drop for Taken<'_> {
    fn drop(&mut self) {
        if let Some((rel, id, slot)) = self.what.take() {
            let _ = self.tx.send(Listed {
                rel,
                id,
                own: None,
                slot,
                children: Err(io::Error::other("its listing failed")),
                names: Vec::new(),
            });
        }
        let mut q = lock(&self.shared.queue);
        q.busy -= 1;
        if q.waiting > 0 {
            self.shared.more.notify_all();
        }
    }
}

/// Lists one directory: its children, and the jobs of the subdirectories to walk.
fn list(shared: &Shared, job: Job) -> (Listed, Vec<Job>) {
    let (rel, mut id, slot, opened) = match job {
        Job::Root(dir) => {
            let id = dir.id().unwrap_or((0, 0));
            (Vec::new(), id, 0, Ok((dir, None)))
        }
        Job::Dir { rel, id, slot } => {
            let opened = open_dir(shared, OsStr::from_bytes(&rel), id);
            (rel, id.unwrap_or_default(), slot, opened)
        }
    };
    let mut own = None;
    // Deferred: a directory whose entry says it is one is looked at when its own job opens it,
    // not here: a folder of 1,000 folders is then not 1,000 `fstatat` calls on one thread.
    let defer = shared.beneath.load(Ordering::Relaxed);
    let mut subs = Vec::new();
    let mut heap = Vec::new();
    let children = opened.and_then(|(mut dir, looked)| {
        if let Some(m) = looked {
            id = (m.dev, m.ino);
            own = Some(m);
        }
        let names = dir.names_into(&mut heap)?;
        let mut children = Vec::with_capacity(names.len());
        for (at, hint) in names {
            let name = name_at(&heap, at);
            if rel.is_empty() && shared.skip_top.iter().any(|s| s == name.as_bytes()) {
                continue;
            }
            let walked = name.as_bytes() != b".git";
            let deferred = defer && walked && hint == FileType::Directory;
            let meta = if deferred {
                Ok(Lstat::directory())
            } else {
                dir.stat(name)
            };
            let (mut link, mut sub) = (None, None);
            if let Ok(m) = &meta {
                let t = m.file_type();
                if t == FileType::Symlink {
                    link = Some(dir.read_link(name));
                } else if t == FileType::Directory && walked {
                    let s = shared.slots.fetch_add(1, Ordering::Relaxed);
                    let mut child = Vec::with_capacity(rel.len() + 1 + name.len());
                    if !rel.is_empty() {
                        child.extend_from_slice(&rel);
                        child.push(b'/');
                    }
                    child.extend_from_slice(name.as_bytes());
                    subs.push(Job::Dir {
                        rel: child,
                        id: (!deferred).then_some((m.dev, m.ino)),
                        slot: s,
                    });
                    sub = Some(s);
                }
            }
            children.push(Child {
                name: at,
                meta,
                link,
                sub,
            });
        }
        Ok(children)
    });
    (
        Listed {
            rel,
            id,
            own,
            slot,
            children,
            names: heap,
        },
        subs,
    )
}

/// Opens the directory `rel`: one its parent did not look at (`id` is `None`) by its path under
/// the root with no link followed on the way, and looked at then (its `lstat` comes with it);
/// one its parent looked at (with the identity `id`) the same way where the kernel can, or else
/// by its path and then checked to be the directory listed.
fn open_dir(
    shared: &Shared,
    rel: &OsStr,
    id: Option<(u64, u64)>,
) -> io::Result<(OpenDir, Option<Lstat>)> {
    if super::fsat::is_long(rel.len()) {
        // Too long for one system call: a piece at a time, each beneath the last.
        let dir = OpenDir::open_long(shared.root.as_fd(), rel.as_bytes(), id)?;
        let own = match id {
            Some(_) => None,
            None => Some(dir.own()?),
        };
        return Ok((dir, own));
    }
    let Some(id) = id else {
        return match OpenDir::open_beneath(shared.root.as_fd(), rel)? {
            Some(dir) => {
                let own = dir.own()?;
                Ok((dir, Some(own)))
            }
            None => Err(io::Error::other(
                "cannot be opened without following a link",
            )),
        };
    };
    if shared.beneath.load(Ordering::Relaxed) {
        match OpenDir::open_beneath(shared.root.as_fd(), rel) {
            Ok(Some(dir)) => return Ok((dir, None)),
            Ok(None) => shared.beneath.store(false, Ordering::Relaxed),
            Err(e) => return Err(e),
        }
    }
    Ok((OpenDir::open_under(shared.root.as_fd(), rel, id)?, None))
}

#[cfg(test)]
mod tests;
