//! The one thread that reads a git baseline's object store, for as long as the baseline lives.
//!
//! The object store is the worker's to write: a FIFO (or a hung network mount) put at a ref or
//! a loose object blocks a read forever. So every read runs on a thread the judgment does not
//! wait on for longer than [`GIT_READ_LIMIT`]. A thread per read did that too, but a live
//! judgment reads a blob per changed file: a 10-file change started 26 threads, each a stack
//! mapped, guarded, advised away and unmapped, and each a malloc arena to touch afresh. One
//! thread per baseline, started at its first read, serves them all in turn (they were taken in
//! turn anyway: the repository is behind a lock).
//!
//! A read that does not finish in time leaves that thread blocked where the read blocked, and
//! the baseline is marked stuck by its caller: every later read answers "cannot be read" at
//! once, as before. A read that panics costs that read its answer (`None`), not the thread.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, sync_channel, RecvTimeoutError, Sender};
use std::sync::{Mutex, OnceLock};
use std::thread::ThreadId;

use super::GIT_READ_LIMIT;

type Job = Box<dyn FnOnce() + Send>;

/// A baseline's reading thread: started at the first [`Reader::run`], ended when the reader is
/// dropped (its queue closes).
#[derive(Default)]
pub(super) struct Reader {
    /// The queue of the thread and its id; `None` when it could not be started.
    thread: OnceLock<Option<(Mutex<Sender<Job>>, ThreadId)>>,
    /// A read did not finish in time: the thread is blocked where it blocked, and whatever is
    /// queued behind it would wait the whole limit again.
    stuck: AtomicBool,
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reader")
            .field("started", &self.thread.get().is_some())
            .finish()
    }
}

impl Reader {
    /// Runs `f` on the reading thread and waits at most [`GIT_READ_LIMIT`] for its answer;
    /// `None` when it did not finish in time, panicked, or no thread could be started, and at
    /// once for every read after one that did not finish. Asked from the reading thread itself
    /// (a read that reads again), `f` runs there and then.
    pub(super) fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        if self.stuck.load(Ordering::Relaxed) {
            return None;
        }
        let (queue, id) = self.thread.get_or_init(start).as_ref()?;
        if std::thread::current().id() == *id {
            return catch_unwind(AssertUnwindSafe(f)).ok();
        }
        let (tx, rx) = sync_channel(1);
        let job: Job = Box::new(move || {
            let _ = tx.send(f());
        });
        queue.lock().ok()?.send(job).ok()?;
        match rx.recv_timeout(GIT_READ_LIMIT) {
            Ok(answer) => Some(answer),
            Err(RecvTimeoutError::Timeout) => {
                self.stuck.store(true, Ordering::Relaxed);
                None
            }
            // It panicked: that read has no answer; the thread goes on.
            Err(RecvTimeoutError::Disconnected) => None,
        }
    }
}

fn start() -> Option<(Mutex<Sender<Job>>, ThreadId)> {
    let (tx, rx) = channel::<Job>();
    let handle = std::thread::Builder::new()
        .name("referee-git-read".into())
        .spawn(move || {
            for job in rx {
                // A panic drops the job's answer channel: its caller gets `None` at once.
                let _ = catch_unwind(AssertUnwindSafe(job));
            }
        })
        .ok()?;
    Some((Mutex::new(tx), handle.thread().id()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use std::sync::Arc;

    #[test]
    fn every_read_runs_on_one_thread_that_outlives_a_panic() {
        let reader = Reader::default();
        let ids: Vec<ThreadId> = (0..5)
            .map(|_| reader.run(|| std::thread::current().id()).unwrap())
            .collect();
        assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
        assert_ne!(ids[0], std::thread::current().id());
        assert_eq!(reader.run(|| -> u8 { panic!("a read that panics") }), None);
        assert_eq!(reader.run(|| std::thread::current().id()), Some(ids[0]));
    }

    #[test]
    fn a_read_that_reads_again_runs_in_place() {
        let reader = Arc::new(Reader::default());
        let inner = reader.clone();
        let got = reader.run(move || inner.run(|| 7)).flatten();
        assert_eq!(got, Some(7));
    }

    #[test]
    fn the_thread_ends_with_its_reader() {
        /// Set when the thread that holds it ends (thread-local destructors run at its exit).
        struct OnExit(Arc<AtomicUsize>);
        impl Drop for OnExit {
            fn drop(&mut self) {
                self.0.fetch_add(1, Ordering::SeqCst);
            }
        }
        thread_local! {
            static GUARD: std::cell::RefCell<Option<OnExit>> = const { std::cell::RefCell::new(None) };
        }
        let ended = Arc::new(AtomicUsize::new(0));
        let reader = Reader::default();
        let e = ended.clone();
        reader.run(move || GUARD.with(|g| *g.borrow_mut() = Some(OnExit(e))));
        assert_eq!(
            ended.load(Ordering::SeqCst),
            0,
            "the thread stays while its reader lives"
        );
        drop(reader);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        while ended.load(Ordering::SeqCst) == 0 && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert_eq!(ended.load(Ordering::SeqCst), 1);
    }
}
