//! The fsyncs behind [`super::write_atomic`]: one background thread (`referee-sync`) that
//! fsyncs a file that already has its name and then its directory, so the daemon never waits
//! on the disk for a STOP or pass file; and the plain directory fsync.

use std::io;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::sync::Arc;

use super::AsOutDir;

/// A directory handle the background thread may keep.
pub(super) enum DirFd {
    Shared(Arc<OwnedFd>),
    Own(OwnedFd),
}

impl AsFd for DirFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            DirFd::Shared(fd) => fd.as_fd(),
            DirFd::Own(fd) => fd.as_fd(),
        }
    }
}

/// One fsync job: a file that has its name already, and the directory holding the name.
struct SyncJob {
    file: std::fs::File,
    dir: DirFd,
}

/// Hands a file and its directory to the one background thread that fsyncs them (started on
/// first use; jobs drained in batches). Should the thread be gone, the caller fsyncs itself.
pub(super) fn sync_in_background(file: std::fs::File, dir: DirFd) {
    use std::sync::mpsc::{self, Sender};
    use std::sync::{Mutex, OnceLock};
    static QUEUE: OnceLock<Mutex<Option<Sender<SyncJob>>>> = OnceLock::new();
    let queue = QUEUE.get_or_init(|| {
        let (tx, rx) = mpsc::channel::<SyncJob>();
        let spawned = std::thread::Builder::new()
            .name("referee-sync".into())
            .spawn(move || {
                while let Ok(first) = rx.recv() {
                    let jobs: Vec<SyncJob> = std::iter::once(first).chain(rx.try_iter()).collect();
                    for job in &jobs {
                        let _ = job.file.sync_all();
                    }
                    // Each directory once a batch.
                    let mut seen = std::collections::BTreeSet::new();
                    for job in &jobs {
                        let id = rustix::fs::fstat(&job.dir).map(|s| (s.st_dev, s.st_ino));
                        if id.map_or(true, |id| seen.insert(id)) {
                            let _ = sync_fd(&job.dir);
                        }
                    }
                }
            });
        Mutex::new(spawned.ok().map(|_| tx))
    });
    let job = SyncJob { file, dir };
    let sent = match queue.lock() {
        Ok(q) => match q.as_ref() {
            Some(tx) => tx.send(job).map_err(|e| e.0),
            None => Err(job),
        },
        Err(_) => Err(job),
    };
    if let Err(job) = sent {
        let _ = job.file.sync_all();
        let _ = sync_fd(&job.dir);
    }
}

/// fsyncs a directory, so a rename or unlink in it is on disk.
pub fn sync_dir(dir: &(impl AsOutDir + ?Sized)) -> io::Result<()> {
    let dir = dir.out_dir();
    let fd = dir.handle()?;
    sync_fd(&fd)
}

pub(super) fn sync_fd(fd: &impl AsFd) -> io::Result<()> {
    match rustix::fs::fsync(fd) {
        // Some file systems cannot sync a directory; the rename happened all the same.
        Err(rustix::io::Errno::INVAL) => Ok(()),
        r => Ok(r?),
    }
}
