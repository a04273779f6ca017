//! The referee's own writes that fail (a full disk, a directory made read-only or immutable, a
//! state directory it lost the right to write): when to try each again, and the one stable
//! reason to say about it.
//!
//! A write that failed is tried again after 0.5 s, then after twice as long each time it fails
//! again, up to [`MAX`]: a disk that stays full costs a few failed syscalls a minute, never a
//! core. The reason drops what changes from one try to the next (the random name of the temp
//! file the write would have renamed), so a fault that goes on is one fault, said once, and one
//! that clears is said once more. This module decides nothing about what a fault means (the
//! session raises STOP for it) and writes nothing.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

/// The first wait after a failed write.
pub const FIRST: Duration = Duration::from_millis(500);
/// The longest wait between two tries: what a write that can succeed again waits at most.
pub const MAX: Duration = Duration::from_secs(8);

/// What the fault line adds to a failed write's reason: how it is retried.
pub fn retrying() -> String {
    format!(
        "retrying after {} s, backing off to every {} s",
        FIRST.as_secs_f64(),
        MAX.as_secs()
    )
}

/// Why an io error happened, in one stable lowercase phrase: the operating system's words for
/// its error number (`no space left on device (os error 28)`), never the path a wrapper added
/// (`tempfile` says `… at path "DIR/.name.tmp.RANDOM"`, and a new random name at each try would
/// make every try a new fault).
pub fn reason(e: &std::io::Error) -> String {
    if let Some(code) = e.raw_os_error() {
        return std::io::Error::from_raw_os_error(code)
            .to_string()
            .to_lowercase();
    }
    let text = e.to_string();
    let text = text.split(" at path \"").next().unwrap_or(&text);
    text.to_lowercase()
}

#[derive(Debug, Clone, Copy)]
struct Wait {
    next: Instant,
    delay: Duration,
}

/// Per area (a fault area: `write OBSERVER-STOP.md`, …): when its write may be tried again.
#[derive(Debug, Default)]
pub struct Backoff {
    waits: BTreeMap<String, Wait>,
}

impl Backoff {
    /// Whether `area`'s write may be tried at `now` (always, unless it failed and its wait is
    /// not over).
    pub fn due(&self, area: &str, now: Instant) -> bool {
        self.waits.get(area).is_none_or(|w| w.next <= now)
    }

    /// `area`'s write failed at `now`: it waits [`FIRST`], or twice its last wait, at most
    /// [`MAX`]. Returns the wait.
    pub fn failed(&mut self, area: &str, now: Instant) -> Duration {
        let delay = self
            .waits
            .get(area)
            .map_or(FIRST, |w| (w.delay * 2).min(MAX));
        self.waits.insert(
            area.to_string(),
            Wait {
                next: now + delay,
                delay,
            },
        );
        delay
    }

    /// `area`'s write succeeded: no wait. Returns whether it had failed.
    pub fn succeeded(&mut self, area: &str) -> bool {
        self.waits.remove(area).is_some()
    }

    /// Whether `area`'s last write failed.
    pub fn failing(&self, area: &str) -> bool {
        self.waits.contains_key(area)
    }

    /// When the next retry is due, if any write is waiting.
    pub fn next(&self) -> Option<Instant> {
        self.waits.values().map(|w| w.next).min()
    }

    /// After the retries at `now`: a wait still over (nothing tried that write: the file is no
    /// longer wanted, its folder is gone) starts again as long, so an untaken retry never keeps
    /// the loop awake.
    pub fn rearm(&mut self, now: Instant) {
        for w in self.waits.values_mut() {
            if w.next <= now {
                w.next = now + w.delay;
            }
        }
    }

    /// Whether any retry is due at `now`.
    pub fn any_due(&self, now: Instant) -> bool {
        self.next().is_some_and(|t| t <= now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_double_up_to_the_bound_and_end_on_success() {
        let mut b = Backoff::default();
        let t0 = Instant::now();
        assert!(b.due("w", t0));
        assert_eq!(b.next(), None);
        let mut waits = Vec::new();
        let mut now = t0;
        for _ in 0..8 {
            let d = b.failed("w", now);
            assert!(!b.due("w", now), "not again at once");
            assert!(b.due("w", now + d));
            assert_eq!(b.next(), Some(now + d));
            waits.push(d.as_millis());
            now += d;
        }
        assert_eq!(
            waits,
            [500, 1000, 2000, 4000, 8000, 8000, 8000, 8000],
            "exponential, bounded"
        );
        assert!(b.due("other", t0), "areas wait apart");
        b.rearm(now);
        assert!(!b.due("w", now), "a retry not taken waits again");
        assert_eq!(b.next(), Some(now + MAX));
        assert!(b.failing("w"));
        assert!(b.succeeded("w"));
        assert!(!b.succeeded("w"), "said once");
        assert!(b.due("w", t0));
        assert_eq!(b.failed("w", now), FIRST, "a new failure starts over");
    }

    #[test]
    fn the_reason_is_the_errors_not_the_temp_files_name() {
        // What `tempfile` gives when it cannot create its file: the path in the message.
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("gone");
        let a = tempfile::Builder::new()
            .tempfile_in(&missing)
            .map(|_| ())
            .unwrap_err();
        let b = tempfile::Builder::new()
            .tempfile_in(&missing)
            .map(|_| ())
            .unwrap_err();
        assert!(a.to_string().contains("gone"), "{a}");
        assert_eq!(reason(&a), reason(&b));
        assert_eq!(reason(&a), "no such file or directory (os error 2)");
        assert!(!reason(&a).contains("gone"));
        let enospc = std::io::Error::from_raw_os_error(libc::ENOSPC);
        assert_eq!(reason(&enospc), "no space left on device (os error 28)");
        assert_eq!(reason(&std::io::Error::other("Odd")), "odd");
    }
}
