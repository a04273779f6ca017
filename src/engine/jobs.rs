//! Judging many check instances on both halves of the machine (`verify`: a snapshot that keeps
//! what it reads; the daemon, which bounds its memory, judges on one thread).
//!
//! The instances of one evaluation are independent: each reads the same snapshot (whose reads
//! are shared, one per file) and writes nothing. On a large build one instance can cost tens
//! of milliseconds (the auditor reports' text rules read megabytes) while the rest cost
//! microseconds, so the instances are handed out one at a time from a shared counter to a
//! second thread beside the caller's: whichever thread is free takes the next. Each thread
//! judges with its own [`Ctx`] (its own glob and gate caches, its own record of what is present
//! and wrong), so no judgment can see another's; the results come back in the order of `jobs`,
//! whatever order the threads ran in.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::checks::Ctx;

/// Fewer jobs than this are judged on the calling thread alone: starting a thread costs more
/// than a small evaluation (the daemon re-judging the few instances a change touched).
const PARALLEL_FROM_JOBS: usize = 8;

/// The processors this process may use, asked once: the standard library reads the cgroup's
/// quota files each time (five system calls in the daemon's every judgment otherwise).
fn cpus() -> usize {
    static CPUS: OnceLock<usize> = OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// `judge` applied to every job, as `(index in jobs, result)` in index order.
pub(super) fn run<T, R, F>(ctx: &Ctx<'_>, jobs: &[T], judge: F) -> Vec<(usize, R)>
where
    T: Sync,
    R: Send,
    F: Fn(&Ctx<'_>, &T) -> R + Sync,
{
    // A snapshot that bounds its memory (the daemon's, `keep_bytes`) reads one large file at a
    // time: two threads would read two.
    let unbounded = ctx.snap.limits().keep_bytes.is_none();
    if jobs.len() < PARALLEL_FROM_JOBS || !unbounded || cpus() < 2 {
        return jobs.iter().map(|j| judge(ctx, j)).enumerate().collect();
    }
    let seed = ctx.seed();
    let next = AtomicUsize::new(0);
    let work = |ctx: &Ctx<'_>| {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(job) = jobs.get(i) else {
                return done;
            };
            done.push((i, judge(ctx, job)));
        }
    };
    let work = &work;
    let mut out = std::thread::scope(|scope| {
        let helper = scope.spawn(move || work(&seed.ctx()));
        let mut mine = work(ctx);
        match helper.join() {
            Ok(theirs) => mine.extend(theirs),
            // A panicking check is a bug; let it reach the caller as the panic it is (the
            // daemon turns it into a fault), rather than lose the jobs that thread took.
            Err(panic) => std::panic::resume_unwind(panic),
        }
        mine
    });
    out.sort_unstable_by_key(|(i, _)| *i);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifacts::{Limits, Snapshot};
    use crate::protocol::Protocol;

    #[test]
    fn every_job_is_judged_once_and_results_keep_the_jobs_order() {
        let dir = tempfile::tempdir().unwrap();
        let snap = Snapshot::scan(dir.path(), Limits::default()).unwrap();
        let protocol = Protocol::default_protocol().unwrap();
        let ctx = Ctx::new(&protocol, &snap);
        for n in [0, 1, PARALLEL_FROM_JOBS - 1, PARALLEL_FROM_JOBS, 1000] {
            let jobs: Vec<usize> = (0..n).collect();
            let calls = AtomicUsize::new(0);
            let out = run(&ctx, &jobs, |_, &j| {
                calls.fetch_add(1, Ordering::Relaxed);
                j * 2
            });
            assert_eq!(calls.load(Ordering::Relaxed), n, "{n} jobs");
            let want: Vec<(usize, usize)> = (0..n).map(|i| (i, i * 2)).collect();
            assert_eq!(out, want, "{n} jobs");
        }
    }

    #[test]
    fn a_panicking_job_panics_the_caller() {
        let dir = tempfile::tempdir().unwrap();
        let snap = Snapshot::scan(dir.path(), Limits::default()).unwrap();
        let protocol = Protocol::default_protocol().unwrap();
        let ctx = Ctx::new(&protocol, &snap);
        let jobs: Vec<usize> = (0..64).collect();
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            run(&ctx, &jobs, |_, &j| {
                assert!(j != 40, "job 40 panics");
                j
            })
        }));
        assert!(caught.is_err());
    }

    #[test]
    fn a_snapshot_that_bounds_its_memory_is_judged_on_one_thread() {
        let dir = tempfile::tempdir().unwrap();
        let protocol = Protocol::default_protocol().unwrap();
        let jobs: Vec<usize> = (0..256).collect();
        let threads_used = |limits: Limits| {
            let snap = Snapshot::scan(dir.path(), limits).unwrap();
            let ctx = Ctx::new(&protocol, &snap);
            let ids = run(&ctx, &jobs, |_, _| {
                // Long enough that a second thread, if any, takes some of the jobs.
                std::thread::sleep(std::time::Duration::from_micros(200));
                format!("{:?}", std::thread::current().id())
            });
            let mut ids: Vec<String> = ids.into_iter().map(|(_, id)| id).collect();
            ids.sort_unstable();
            ids.dedup();
            ids.len()
        };
        let bounded = Limits {
            keep_bytes: Some(1 << 20),
            ..Limits::default()
        };
        assert_eq!(threads_used(bounded), 1);
        if cpus() >= 2 {
            assert_eq!(threads_used(Limits::default()), 2);
        }
    }
}
