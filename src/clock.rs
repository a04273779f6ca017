//! The time the referee's timing decisions are made at (settling, heartbeats, retries, finishing):
//! the machine's clocks in production, a clock a test moves by hand.
//!
//! A decision that reads [`Clock::now`] instead of `Instant::now()` is tested by advancing a
//! [`ManualClock`] past its margin, never by sleeping and hoping the machine kept up: a test that
//! sleeps 450 ms against a 400 ms margin fails on a loaded machine, one that advances by 450 ms
//! cannot. Written here rather than taken from a crate: `quanta`'s mock clock has its own
//! `Instant` type (every field and signature would change), and `mock_instant` swaps the type
//! process-wide behind a feature, so one test's time would leak into every other test's; this one
//! keeps `std`'s types and is handed to what needs it.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use chrono::{DateTime, Utc};

/// A source of the current moment: monotonic (`now`) and wall-clock (`wall`, `utc`).
///
/// Cheap to clone; clones of a manual clock share its time.
#[derive(Debug, Clone, Default)]
pub struct Clock(Option<Arc<Manual>>);

/// A manual clock's time: where it started and how far it has been moved.
#[derive(Debug)]
struct Manual {
    start: Instant,
    wall: SystemTime,
    moved: Mutex<Duration>,
}

impl Clock {
    /// The machine's clocks.
    pub fn real() -> Clock {
        Clock(None)
    }

    /// The monotonic time now.
    pub fn now(&self) -> Instant {
        match &self.0 {
            None => Instant::now(),
            Some(m) => m.start + m.moved(),
        }
    }

    /// The wall-clock time now.
    pub fn wall(&self) -> SystemTime {
        match &self.0 {
            None => SystemTime::now(),
            Some(m) => m.wall + m.moved(),
        }
    }

    /// The wall-clock time now, as a UTC date.
    pub fn utc(&self) -> DateTime<Utc> {
        DateTime::<Utc>::from(self.wall())
    }

    /// Whether this is a manual clock (a test's): what waits for real time (a poll, a sleep on
    /// a channel) has nothing to wait for.
    pub fn is_manual(&self) -> bool {
        self.0.is_some()
    }
}

impl Manual {
    fn moved(&self) -> Duration {
        *self.moved.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A clock that stands still until a test moves it: [`clock`](Self::clock) is what the code under
/// test is handed, [`advance`](Self::advance) what the test does instead of sleeping.
#[derive(Debug, Clone)]
pub struct ManualClock(Arc<Manual>);

impl ManualClock {
    /// A clock standing at the machine's current time.
    pub fn new() -> ManualClock {
        ManualClock(Arc::new(Manual {
            start: Instant::now(),
            wall: SystemTime::now(),
            moved: Mutex::new(Duration::ZERO),
        }))
    }

    /// The clock to hand to the code under test (it sees every later `advance`).
    pub fn clock(&self) -> Clock {
        Clock(Some(self.0.clone()))
    }

    /// Moves the time on by `by`.
    pub fn advance(&self, by: Duration) {
        let mut moved = self.0.moved.lock().unwrap_or_else(PoisonError::into_inner);
        *moved = moved.saturating_add(by);
    }
}

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_manual_clock_moves_only_when_advanced_and_its_clones_follow() {
        let manual = ManualClock::new();
        let clock = manual.clock();
        let (t0, w0) = (clock.now(), clock.wall());
        assert_eq!(clock.now(), t0, "stands still");
        manual.advance(Duration::from_millis(450));
        assert_eq!(clock.now() - t0, Duration::from_millis(450));
        assert_eq!(
            clock.wall().duration_since(w0).ok(),
            Some(Duration::from_millis(450))
        );
        assert_eq!(clock.clone().now(), clock.now());
        assert!(clock.is_manual());
        assert_eq!(clock.utc(), DateTime::<Utc>::from(clock.wall()));
    }

    #[test]
    fn the_real_clock_is_the_machines() {
        let clock = Clock::real();
        assert!(!clock.is_manual());
        let before = Instant::now();
        assert!(clock.now() >= before);
        assert!(clock.wall() >= SystemTime::UNIX_EPOCH);
    }
}
