//! Settling (SPEC §5): a file being written is not judged half-written.
//!
//! This module remembers when each path last changed and answers "is this path still moving, and
//! until when?": a path is unsettled while its last change event, or its mtime, is younger than
//! the settle window — unless its last event was a rename into place (a renamed file is complete;
//! its mtime is when it was written, which is usually old). The daemon holds a result that would
//! newly become FAIL or INCONCLUSIVE (or would lift a standing STOP) while any of its files is
//! unsettled, and re-judges it when the answer runs out (a timer, never a sleep). It must not
//! judge, read files or keep time itself.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};

#[derive(Debug, Clone)]
pub struct Settle {
    window: Duration,
    recent: HashMap<String, (Instant, bool)>,
}

impl Settle {
    pub fn new(window: Duration) -> Settle {
        Settle {
            window,
            recent: HashMap::new(),
        }
    }

    pub fn window(&self) -> Duration {
        self.window
    }

    /// `rel` changed at `at`; `renamed_in`: it arrived complete, by a rename.
    pub fn saw(&mut self, rel: &str, renamed_in: bool, at: Instant) {
        self.recent.insert(rel.to_string(), (at, renamed_in));
    }

    /// Forgets changes older than the window.
    pub fn prune(&mut self, now: Instant) {
        let w = self.window;
        self.recent
            .retain(|_, (t, _)| now.saturating_duration_since(*t) < w);
    }

    /// Paths that changed within the window.
    pub fn recent(&self) -> impl Iterator<Item = &String> {
        self.recent.keys()
    }

    /// Until when `rel` (with this mtime) is unsettled; `None` when it is settled now.
    pub fn fresh_until(
        &self,
        rel: &str,
        mtime: Option<SystemTime>,
        now: Instant,
        wall: SystemTime,
    ) -> Option<Instant> {
        let mut until = None;
        if let Some(&(t, renamed_in)) = self.recent.get(rel) {
            if renamed_in {
                return None;
            }
            let end = t + self.window;
            if end > now {
                until = Some(end);
            }
        }
        if let Some(age) = mtime.and_then(|m| wall.duration_since(m).ok()) {
            if age < self.window {
                let end = now + (self.window - age);
                until = until.max(Some(end));
            }
        }
        until
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_mtimes_and_renames() {
        let w = Duration::from_millis(300);
        let mut s = Settle::new(w);
        let now = Instant::now();
        let wall = SystemTime::now();
        let old = wall - Duration::from_secs(3600);
        // Nothing known, old mtime: settled.
        assert_eq!(s.fresh_until("a", Some(old), now, wall), None);
        // Young mtime: unsettled for the rest of the window.
        let young = s.fresh_until("a", Some(wall - Duration::from_millis(100)), now, wall);
        assert_eq!(young, Some(now + Duration::from_millis(200)));
        // A recent write event: unsettled even with an old mtime.
        s.saw("a", false, now);
        assert_eq!(s.fresh_until("a", Some(old), now, wall), Some(now + w));
        // A rename into place: settled at once, whatever the mtime.
        s.saw("a", true, now);
        assert_eq!(s.fresh_until("a", Some(wall), now, wall), None);
        s.prune(now + w);
        assert_eq!(s.recent().count(), 0);
    }
}
