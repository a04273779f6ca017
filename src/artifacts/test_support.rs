//! What the artifacts module's tests share: a scan, its names, a FIFO, a time limit.

use std::path::Path;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use super::{Limits, Snapshot};

pub(super) fn mkfifo(path: &Path) {
    rustix::fs::mkfifoat(
        rustix::fs::CWD,
        path,
        rustix::fs::Mode::from_raw_mode(0o644),
    )
    .expect("mkfifo");
}

pub(super) fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

pub(super) fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(Duration::from_secs(secs))
        .expect("operation hung")
}

pub(super) fn scan(dir: &Path) -> Snapshot {
    Snapshot::scan(dir, Limits::default()).unwrap()
}

pub(super) fn rels(snap: &Snapshot) -> Vec<&str> {
    snap.entries().iter().map(|e| e.rel.as_str()).collect()
}
