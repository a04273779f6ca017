//! What the artifacts module's tests share: a scan, its names, a FIFO, a time limit.

use std::path::Path;
use std::sync::mpsc;
use std::thread;
use std::time::Duration;

use super::{Limits, Snapshot};

pub(super) fn mkfifo(path: &Path) {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
    assert_eq!(rc, 0, "mkfifo failed");
}

pub(super) fn is_root() -> bool {
    unsafe { libc::geteuid() == 0 }
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
