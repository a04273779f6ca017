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
//! the reader stuck: every later read answers "cannot be read" at once (the one flag that says
//! so, [`Reader::is_stuck`]). A read that panics costs that read its answer (`None`), not the
//! thread, and not the reads after it. A
//! thread with nothing to read for [`IDLE`] ends (a daemon under `--root` keeps a baseline per
//! workspace: their threads do not pile up); the next read starts another.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, Weak};
use std::thread::ThreadId;
use std::time::Duration;

use super::GIT_READ_LIMIT;

type Job = Box<dyn FnOnce() + Send>;

/// How long a reading thread waits for work before it ends.
const IDLE: Duration = Duration::from_secs(30);

/// The running thread's queue and id; `None` when none runs.
type Slot = Mutex<Option<(Sender<Job>, ThreadId)>>;

/// A baseline's reading thread: started at a read when none runs, ended when idle for [`IDLE`]
/// or when the reader is dropped (its queue closes).
pub(super) struct Reader {
    thread: Arc<Slot>,
    /// A read did not finish in time: the thread is blocked where it blocked, and whatever is
    /// queued behind it would wait the whole limit again.
    stuck: AtomicBool,
    /// How long its thread waits for work before it ends ([`IDLE`]).
    idle: Duration,
}

impl Default for Reader {
    fn default() -> Reader {
        Reader {
            thread: Arc::default(),
            stuck: AtomicBool::new(false),
            idle: IDLE,
        }
    }
}

impl std::fmt::Debug for Reader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let running = self.thread.lock().map(|t| t.is_some()).unwrap_or(false);
        f.debug_struct("Reader").field("running", &running).finish()
    }
}

impl Reader {
    /// Whether a read did not finish in time: no later read is tried.
    pub(super) fn is_stuck(&self) -> bool {
        self.stuck.load(Ordering::Relaxed)
    }

    /// Runs `f` on the reading thread and waits at most [`GIT_READ_LIMIT`] for its answer;
    /// `None` when it did not finish in time, panicked, or no thread could be started, and at
    /// once for every read after one that did not finish. Asked from the reading thread itself
    /// (a read that reads again), `f` runs there and then.
    pub(super) fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Option<T> {
        if self.is_stuck() {
            return None;
        }
        let (tx, rx) = sync_channel(1);
        {
            // Held while the job is queued: a thread that ends for idleness takes this lock
            // first, so no job is queued to a thread that is ending.
            let mut slot = self.thread.lock().ok()?;
            if slot
                .as_ref()
                .is_some_and(|(_, id)| *id == std::thread::current().id())
            {
                drop(slot);
                return catch_unwind(AssertUnwindSafe(f)).ok();
            }
            let job: Job = Box::new(move || {
                let _ = tx.send(f());
            });
            // A thread that ended (idle) left the slot empty; a queue that refuses the job is
            // one whose thread is gone: a new thread takes it either way.
            let job = match slot.as_ref() {
                Some((queue, _)) => queue.send(job).err().map(|e| e.0),
                None => Some(job),
            };
            if let Some(job) = job {
                let (queue, id) = start(Arc::downgrade(&self.thread), self.idle)?;
                queue.send(job).ok()?;
                *slot = Some((queue, id));
            }
        }
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

/// Starts a reading thread that takes its jobs in turn until its queue closes (the reader is
/// gone) or it has waited `idle` for one.
fn start(slot: Weak<Slot>, idle: Duration) -> Option<(Sender<Job>, ThreadId)> {
    let (tx, rx) = channel::<Job>();
    let handle = std::thread::Builder::new()
        .name("referee-git-read".into())
        .spawn(move || serve(&rx, &slot, idle))
        .ok()?;
    Some((tx, handle.thread().id()))
}

fn serve(rx: &Receiver<Job>, slot: &Weak<Slot>, idle: Duration) {
    loop {
        let job = match rx.recv_timeout(idle) {
            Ok(job) => job,
            Err(RecvTimeoutError::Disconnected) => return,
            Err(RecvTimeoutError::Timeout) => {
                // Idle: leave the slot empty for the next read to start a thread, unless a
                // job came in meanwhile (queued under the same lock).
                let Some(slot) = slot.upgrade() else {
                    return;
                };
                let Ok(mut slot) = slot.lock() else {
                    return;
                };
                match rx.try_recv() {
                    Ok(job) => job,
                    Err(_) => {
                        *slot = None;
                        return;
                    }
                }
            }
        };
        // A panic drops the job's answer channel: its caller gets `None` at once.
        let _ = catch_unwind(AssertUnwindSafe(job));
    }
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
        assert!(!reader.is_stuck(), "a panic costs its read only");
        assert_eq!(reader.run(|| std::thread::current().id()), Some(ids[0]));
    }

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

    /// Waits (up to 10 s) for `n` to reach `want`.
    fn reaches(n: &AtomicUsize, want: usize) -> bool {
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while n.load(Ordering::SeqCst) < want && std::time::Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        n.load(Ordering::SeqCst) == want
    }

    #[test]
    fn an_idle_thread_ends_and_the_next_read_starts_another() {
        let ended = Arc::new(AtomicUsize::new(0));
        let reader = Reader {
            idle: Duration::from_millis(50),
            ..Reader::default()
        };
        let e = ended.clone();
        let first = reader
            .run(move || {
                GUARD.with(|g| *g.borrow_mut() = Some(OnExit(e)));
                std::thread::current().id()
            })
            .unwrap();
        assert!(reaches(&ended, 1), "the idle thread did not end");
        assert!(reader.thread.lock().unwrap().is_none());
        let second = reader.run(|| std::thread::current().id()).unwrap();
        assert_ne!(first, second);
        assert_eq!(reader.run(|| 7), Some(7));
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
        let ended = Arc::new(AtomicUsize::new(0));
        let reader = Reader::default();
        let e = ended.clone();
        reader.run(move || GUARD.with(|g| *g.borrow_mut() = Some(OnExit(e))));
        drop(reader);
        // Its queue closed: it ends, long before its idle wait (30 s) is over.
        assert!(reaches(&ended, 1));
    }
}
