//! Settling: a file being written is not judged half-written, and a file renamed into
//! place is judged at once.
//!
//! This module remembers the last thing that happened to each path the watcher reported and
//! answers "is this path still moving, and until when?":
//!
//! - renamed into place (after its last write): complete — a writer's atomic replace; never held;
//! - removed or renamed away: gone, and moving for the window like a write: an editor saves by
//!   renaming the file to its backup (or removing it) and writing it anew, so a file that
//!   vanished a moment ago may be back in a moment. A writer's temp file after its rename is gone
//!   too, but it is no check's input, so it holds nothing;
//! - only its metadata changed: as settled as it was before;
//! - written in place (created, modified, or closed after writing): moving until it has been quiet
//!   for the settle window. Closing is not the end: a writer may close and write again (the
//!   half-written file is exactly that), so a failure on such a file is re-tried once
//!   it is quiet. With `--poll` every change but a removal is of this kind;
//! - written through a handle its writer still holds (a write seen, its close not yet): moving
//!   however long the writer pauses, until its close and a quiet window after it, and at the
//!   latest `max` after its run of writes started. A writer descheduled between two writes
//!   on a loaded machine, or `dd` between two blocks, is one write, not two judged apart;
//! - nothing seen since the daemon started (or since it forgot): its mtime is the only clue, so a
//!   young mtime counts as a recent write.
//!
//! Two measures of "still moving", for two kinds of waiting:
//!
//! - [`Settle::fresh_until`] and [`Settle::being_written_until`]: moving for at most `max`
//!   (`--settle-max`) from the write that started its run of writes (none quiet for the
//!   window), then judged as it stands. What waits per *file* uses this (a task record, a fix
//!   attempt), so a churning file cannot hold it back.
//! - [`Settle::quiet_at`]: moving until quiet for the window, however long that takes. A D10
//!   result held on a file waits on this, and its wait is bounded per *result* instead (the
//!   ledger's `max_hold`, also `--settle-max`): a result read bad at every look for that long is
//!   published, and one read good at a look (a file between two saves) is not held at all. An
//!   honest tracker saved again and again, never quiet for the window in between, is therefore
//!   never judged half-saved however long it keeps moving, while a violation kept on disk by a
//!   writer that never stops still STOPs within `--settle-max`.
//!
//! Only a check's *inputs* may hold its result: [`reads`] is the strict test (a glob that could not
//! be compiled matches nothing here, and "any path may matter" does not make a writer's temp file
//! an input). The daemon holds a result that would newly become FAIL or INCONCLUSIVE (or would lift
//! a standing STOP) while any of its inputs is moving, and re-judges it when the answer runs out (a
//! timer, never a sleep). This module must not judge, read files or keep time itself.

use std::collections::HashMap;
use std::time::{Duration, Instant, SystemTime};

use crate::artifacts::Entry;
use crate::fsevents::ChangeKind;
use crate::protocol::inputs::Inputs;

/// Whether the writer of a file written in place still holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Handle {
    /// A write was seen and its close not yet: more may come however long the writer pauses.
    Open,
    /// The writer closed it (or the platform reports no closes).
    Closed,
}

/// Which part of a write in place holds a result back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Holds {
    /// The writes and the writer's open handle: anything the writer adds may change the result.
    All,
    /// The writes alone: the result rests on what is complete in the file, which nothing the
    /// writer appends can undo ([`crate::engine::CheckResult::stands`]).
    Writes,
}

/// How long a path written in place can stay unsettled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Bound {
    /// At most `--settle-max` from the start of its run of writes: what holds a judgment back.
    Max,
    /// Until it has been quiet for the window, however long it churns: whoever waits bounds the
    /// wait by something else (a held result by `Ledger::max_hold`, `status --sync` by its own).
    Quiet,
}

/// The last thing known to have happened to a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Written in place at `.0`, in a run of writes (none quiet for the window, or made while
    /// the writer held the file open) that started at `.1`, through a handle the writer may
    /// still hold (`.2`). Moving until quiet for the window after the close, or until `max`
    /// after the run started.
    Written(Instant, Instant, Handle),
    /// Renamed into place, or only its metadata changed: complete.
    Complete(Instant),
    /// Removed or renamed away at `.0`, in a run of changes that started at `.1`: moving (it may
    /// come back: an editor's save) until the window has passed, or `max` after the run started.
    Gone(Instant, Instant),
}

impl State {
    fn at(self) -> Instant {
        match self {
            State::Written(t, ..) | State::Complete(t) | State::Gone(t, _) => t,
        }
    }

    /// When the run of changes this one continues started, if it continues one: `at` is within
    /// the window of it, or the writer held the file open in between (for at most `max`).
    fn run_since(self, at: Instant, window: Duration, max: Duration) -> Option<Instant> {
        match self {
            State::Written(t, since, _) | State::Gone(t, since)
                if at.saturating_duration_since(t) < window =>
            {
                Some(since)
            }
            State::Written(_, since, Handle::Open) if at < since + max => Some(since),
            _ => None,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Settle {
    window: Duration,
    /// The longest a path stays moving (at least the window).
    max: Duration,
    paths: HashMap<String, State>,
}

/// `--settle-max`'s default.
pub const DEFAULT_MAX: Duration = Duration::from_secs(2);

impl Settle {
    pub fn new(window: Duration) -> Settle {
        Settle {
            window,
            max: DEFAULT_MAX.max(window),
            paths: HashMap::new(),
        }
    }

    /// The longest a path stays moving (`--settle-max`; never below the window).
    pub fn with_max(mut self, max: Duration) -> Settle {
        self.max = max.max(self.window);
        self
    }

    /// Until when a path written at `at` in a run started at `since` is moving (a handle its
    /// writer still holds makes the run last its whole bound).
    fn moving_until(&self, at: Instant, since: Instant, handle: Handle) -> Instant {
        match handle {
            Handle::Open => since + self.max,
            Handle::Closed => (at + self.window).min(since + self.max),
        }
    }

    pub fn window(&self) -> Duration {
        self.window
    }

    /// `rel` changed (`kind`) at `at`.
    pub fn saw(&mut self, rel: &str, kind: ChangeKind, at: Instant) {
        // A write or a removal within the window of the last one continues its run (a removal
        // then a write is one save).
        let since = self
            .paths
            .get(rel)
            .and_then(|s| s.run_since(at, self.window, self.max))
            .unwrap_or(at);
        let state = match kind {
            ChangeKind::Written => State::Written(at, since, Handle::Closed),
            ChangeKind::Writing => State::Written(at, since, Handle::Open),
            ChangeKind::RenamedIn => State::Complete(at),
            ChangeKind::Removed => State::Gone(at, since),
            // The contents did not change: whatever was known stands (a `touch` after a write
            // does not make the write complete, nor a chmod a complete file moving).
            ChangeKind::Metadata => match self.paths.get(rel) {
                Some(&s) => s,
                None => State::Complete(at),
            },
        };
        self.paths.insert(rel.to_string(), state);
    }

    /// Forgets what is older than the window, and a file still held open once its bound has
    /// passed (a forgotten path falls back to its mtime, which is no younger than the event that
    /// was forgotten).
    pub fn prune(&mut self, now: Instant) {
        let (w, max) = (self.window, self.max);
        self.paths.retain(|rel, s| match *s {
            State::Written(_, since, Handle::Open) if now < since + max => true,
            State::Written(_, since, Handle::Open) => {
                // What a STOP raised on a file still being written comes down to: said, so
                // that a writer slower than `--settle-max` can be told from a violation.
                tracing::debug!(
                    path = %rel,
                    open_ms = now.saturating_duration_since(since).as_millis() as u64,
                    "still open by its writer at --settle-max: judged as it stands"
                );
                false
            }
            s => now.saturating_duration_since(s.at()) < w,
        });
    }

    /// Paths written in place or removed within the window: the only ones that can hold a
    /// result besides the result's own evidence.
    pub fn moving(&self) -> impl Iterator<Item = &str> {
        self.paths.iter().filter_map(|(p, s)| match s {
            State::Written(..) | State::Gone(..) => Some(p.as_str()),
            State::Complete(_) => None,
        })
    }

    /// Until when `rel`, written in place, is still being written; `None` when it is not being
    /// written (complete, never seen, or removed: a removed file is no half-written one), or
    /// has been for `max` already.
    pub fn being_written_until(&self, rel: &str, now: Instant) -> Option<Instant> {
        match self.paths.get(rel) {
            Some(&State::Written(t, since, handle)) => {
                Some(self.moving_until(t, since, handle)).filter(|&end| end > now)
            }
            _ => None,
        }
    }

    /// Until when `rel` is unsettled; `None` when it is settled now, or has been moving for
    /// `max` (a run of writes started that long ago is judged as it stands).
    ///
    /// `entry`: the path in the snapshot being judged; `None` when it is not there. A path seen
    /// removed is unsettled for the window whether or not it is back yet (an editor's save); one
    /// not there that nothing was seen happen to has nothing half-written. Its mtime is looked
    /// at only when nothing is known about the path.
    pub fn fresh_until(
        &self,
        rel: &str,
        entry: Option<&Entry>,
        now: Instant,
        wall: SystemTime,
    ) -> Option<Instant> {
        self.until(rel, entry, now, wall, Bound::Max, Holds::All)
    }

    /// Until when `rel` is unsettled, however long it has been moving: `None` only once it has
    /// been quiet for the window. A file saved again and again (an honest tracker rewritten
    /// every few hundred milliseconds for a whole run) never settles by this measure, so whoever
    /// waits on it bounds the wait by something else: a result held on it is bounded per result
    /// (`Ledger::max_hold`), a `status --sync` by the time its token has waited. A path written
    /// a moment ago and missing from the snapshot is unsettled too: the caller asks only about
    /// checks' inputs, and one missing right after a write is being saved again.
    pub fn quiet_at(
        &self,
        rel: &str,
        entry: Option<&Entry>,
        now: Instant,
        wall: SystemTime,
    ) -> Option<Instant> {
        self.until(rel, entry, now, wall, Bound::Quiet, Holds::All)
    }

    /// [`Settle::quiet_at`] for a result that rests on what is complete in its files (a
    /// forbidden gate entry whose object has closed): its writes hold it for the window after
    /// the last one, as any write does (a writer may truncate and write again), but a handle the
    /// writer keeps open does not: what it appends cannot undo the finding, and a worker that
    /// plants an entry and keeps the file open would otherwise hold its STOP to `max`.
    pub fn quiet_after_writes(
        &self,
        rel: &str,
        entry: Option<&Entry>,
        now: Instant,
        wall: SystemTime,
    ) -> Option<Instant> {
        self.until(rel, entry, now, wall, Bound::Quiet, Holds::Writes)
    }

    fn until(
        &self,
        rel: &str,
        entry: Option<&Entry>,
        now: Instant,
        wall: SystemTime,
        bound: Bound,
        holds: Holds,
    ) -> Option<Instant> {
        let end = |t: Instant, since: Instant, handle: Handle| {
            let handle = match holds {
                Holds::All => handle,
                Holds::Writes => Handle::Closed,
            };
            let end = match handle {
                _ if bound == Bound::Max => self.moving_until(t, since, handle),
                // However long it churns while open, and at least its bound while it pauses.
                Handle::Open => (t + self.window).max(since + self.max),
                Handle::Closed => t + self.window,
            };
            Some(end).filter(|&end| end > now)
        };
        if let Some(&State::Gone(t, since)) = self.paths.get(rel) {
            return end(t, since, Handle::Closed);
        }
        let Some(entry) = entry else {
            // Written a moment ago and not there now: for a check's input (all `quiet_at` is
            // asked about) that is the next save's removal, its event not handled yet (an
            // editor saving twice in a row): as unsettled as a removal. A writer's temp file
            // gone after its rename is no input, and `fresh_until` keeps it holding nothing.
            return match self.paths.get(rel) {
                Some(&State::Written(t, since, handle)) if bound == Bound::Quiet => {
                    end(t, since, handle)
                }
                _ => None,
            };
        };
        match self.paths.get(rel) {
            Some(&State::Written(t, since, handle)) => end(t, since, handle),
            Some(State::Complete(_) | State::Gone(..)) => None,
            None => {
                let age = wall.duration_since(entry.mtime()?).ok()?;
                (age < self.window).then(|| now + (self.window - age))
            }
        }
    }
}

/// Whether a change to `rel` can change what a check with these inputs read — strictly: a glob
/// that was never compiled matches nothing here, and a check that "any path may matter" to
/// (paths listed in the tracker) reads its evidence and the tracker, not every file written.
/// [`Inputs::touched_by`] is the conservative test for re-judging; this one decides what may
/// hold a result back or count as a fix attempt.
pub fn reads(inputs: &Inputs, rel: &str) -> bool {
    // An editor's lock or swap file beside an input is not one (Emacs's `.#notes.md` in
    // `refine-inputs/` holds nothing, and is no fix attempt).
    if crate::artifacts::not_input(rel) {
        return false;
    }
    if inputs.reads_tracker(rel) {
        return true;
    }
    inputs
        .globs
        .iter()
        .any(|g| crate::protocol::inputs::touches(g, rel))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::artifacts::{Limits, Snapshot};
    use crate::protocol::predicate::Glob;

    const W: Duration = Duration::from_millis(300);

    /// A snapshot with `a` (mtime `age` ago) and nothing else.
    fn snap(age: Duration) -> (tempfile::TempDir, Snapshot, SystemTime) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a");
        std::fs::write(&path, "x").unwrap();
        let wall = SystemTime::now();
        filetime::set_file_mtime(&path, filetime::FileTime::from_system_time(wall - age)).unwrap();
        let snap = Snapshot::scan(dir.path(), Limits::default()).unwrap();
        (dir, snap, wall)
    }

    #[test]
    fn writes_in_place_settle_after_the_window() {
        let (_d, snap, wall) = snap(Duration::from_secs(3600));
        let a = snap.get("a");
        let mut s = Settle::new(W);
        let now = Instant::now();
        s.saw("a", ChangeKind::Written, now);
        assert_eq!(s.fresh_until("a", a, now, wall), Some(now + W));
        assert_eq!(s.fresh_until("a", a, now + W, wall), None);
        assert_eq!(s.moving().collect::<Vec<_>>(), ["a"]);
        // A later write restarts the window; a metadata change (a `touch`) does not end it.
        s.saw("a", ChangeKind::Written, now + W / 2);
        s.saw("a", ChangeKind::Metadata, now + W / 2);
        assert_eq!(s.fresh_until("a", a, now + W, wall), Some(now + W / 2 + W));
        s.prune(now + W / 2 + W);
        assert_eq!(s.moving().count(), 0);
    }

    /// A writer that holds its file open past `--settle-max` has it judged as it stands, and
    /// the debug log says so once (the simulator's disagreements are read with it).
    #[test]
    fn a_file_held_open_past_max_is_said_when_it_is_let_go() {
        let max = W * 3;
        let mut s = Settle::new(W).with_max(max);
        let start = Instant::now();
        let ((), text) = crate::logging::captured(|| {
            s.saw("tracker.md", ChangeKind::Writing, start);
            s.saw("closed.md", ChangeKind::Written, start);
            s.prune(start + max - W / 10);
            assert_eq!(
                s.being_written_until("tracker.md", start + W),
                Some(start + max)
            );
            s.prune(start + max);
            s.prune(start + max * 2);
        });
        assert_eq!(s.being_written_until("tracker.md", start + max), None);
        let said: Vec<&str> = text.lines().filter(|l| l.contains("still open")).collect();
        assert_eq!(said.len(), 1, "{text}");
        assert!(
            said[0].contains("path=tracker.md") && said[0].contains("open_ms=900"),
            "{text}"
        );
        assert!(!text.contains("closed.md"), "{text}");
    }

    #[test]
    fn a_churning_file_is_moving_for_at_most_max() {
        let (_d, snap, wall) = snap(Duration::from_secs(3600));
        let a = snap.get("a");
        let max = W * 3;
        let mut s = Settle::new(W).with_max(max);
        let start = Instant::now();
        // Rewritten every half window: without the bound it would never settle.
        let mut t = start;
        while t < start + max * 2 {
            s.saw("a", ChangeKind::Written, t);
            let until = s.being_written_until("a", t);
            if t + W <= start + max {
                assert_eq!(until, Some(t + W));
            } else {
                assert!(until.is_none_or(|u| u <= start + max), "{t:?}");
            }
            assert!(s
                .fresh_until("a", a, t, wall)
                .is_none_or(|u| u <= start + max));
            t += W / 2;
        }
        assert_eq!(s.being_written_until("a", start + max), None);
        // A quiet window ends the run: the next write starts a new one.
        let later = t + W * 2;
        s.saw("a", ChangeKind::Written, later);
        assert_eq!(s.being_written_until("a", later), Some(later + W));
        // The bound is never below the window.
        assert_eq!(Settle::new(W).with_max(W / 10).max, W);
    }

    #[test]
    fn quiet_at_waits_for_a_quiet_window_however_long_a_file_churns() {
        let (_d, snap, wall) = snap(Duration::from_secs(3600));
        let a = snap.get("a");
        let max = W * 3;
        let mut s = Settle::new(W).with_max(max);
        let start = Instant::now();
        let mut t = start;
        // Saved every half window for ten times the bound: never quiet, so never settled by
        // this measure (the bounded one gave up at `max`).
        while t < start + max * 10 {
            s.saw("a", ChangeKind::Written, t);
            assert_eq!(s.quiet_at("a", a, t, wall), Some(t + W));
            t += W / 2;
        }
        assert!(s.fresh_until("a", a, t, wall).is_none());
        // Written, then gone before the removal's event was handled: still moving (the bounded
        // measure, for temp files too, holds nothing).
        assert_eq!(s.quiet_at("a", None, t, wall), Some(t + W / 2));
        assert_eq!(s.fresh_until("a", None, t, wall), None);
        // Removed mid-save (an editor's rename to the backup): still moving.
        s.saw("a", ChangeKind::Removed, t);
        assert_eq!(s.quiet_at("a", None, t, wall), Some(t + W));
        // Quiet for the window: settled by both measures; a rename into place: at once.
        assert_eq!(s.quiet_at("a", a, t + W, wall), None);
        s.saw("a", ChangeKind::Written, t + W * 2);
        s.saw("a", ChangeKind::RenamedIn, t + W * 2);
        assert_eq!(s.quiet_at("a", a, t + W * 2, wall), None);
    }

    #[test]
    fn a_removed_file_is_moving_but_not_being_written() {
        let mut s = Settle::new(W);
        let t = Instant::now();
        s.saw("a", ChangeKind::Removed, t);
        // It may come back (an editor's save), so it is moving for the window ...
        assert_eq!(s.moving().collect::<Vec<_>>(), ["a"]);
        // ... but nothing of it is half-written.
        assert_eq!(s.being_written_until("a", t), None);
        // Written again, it is.
        s.saw("a", ChangeKind::Written, t + W / 2);
        assert_eq!(s.being_written_until("a", t + W / 2), Some(t + W / 2 + W));
    }

    #[test]
    fn a_file_its_writer_holds_open_is_moving_however_long_it_pauses_up_to_max() {
        let (_d, snap, wall) = snap(Duration::from_secs(3600));
        let a = snap.get("a");
        let max = W * 10;
        let mut s = Settle::new(W).with_max(max);
        let start = Instant::now();
        // Half written, then the writer is descheduled for three windows with the file open.
        s.saw("a", ChangeKind::Writing, start);
        let paused = start + W * 3;
        s.prune(paused);
        assert_eq!(s.moving().collect::<Vec<_>>(), ["a"], "kept while open");
        assert_eq!(s.quiet_at("a", a, paused, wall), Some(start + max));
        assert_eq!(s.fresh_until("a", a, paused, wall), Some(start + max));
        assert_eq!(s.being_written_until("a", paused), Some(start + max));
        // A result that rests on what is complete in it waits for its writes alone: the window
        // after the last one, the open handle aside.
        assert_eq!(s.quiet_after_writes("a", a, start, wall), Some(start + W));
        assert_eq!(s.quiet_after_writes("a", a, paused, wall), None);
        // The rest written after the pause continues the same run (the bound does not move).
        s.saw("a", ChangeKind::Writing, paused);
        assert_eq!(s.being_written_until("a", paused), Some(start + max));
        // Closed: quiet for the window after the close, as any write in place.
        s.saw("a", ChangeKind::Written, paused + W / 10);
        assert_eq!(
            s.quiet_at("a", a, paused + W / 10, wall),
            Some(paused + W / 10 + W)
        );
        assert_eq!(s.quiet_at("a", a, paused + W / 10 + W, wall), None);
        // The same pause after a close is the end of the run: the file is judged as it stands.
        let later = start + max * 2;
        s.saw("a", ChangeKind::Written, later);
        assert_eq!(s.quiet_at("a", a, later + W * 3, wall), None);
        assert_eq!(s.being_written_until("a", later + W * 3), None);
        // Held open and never closed: moving until `max` after it started, then judged (a
        // writer that keeps its file open cannot hold a result back forever).
        let again = later + W * 10;
        s.saw("a", ChangeKind::Writing, again);
        assert_eq!(s.fresh_until("a", a, again + max, wall), None);
        assert_eq!(s.quiet_at("a", a, again + max, wall), None);
        s.prune(again + max);
        assert_eq!(s.moving().count(), 0);
        // A metadata change while open leaves it open.
        s.saw("b", ChangeKind::Writing, again);
        s.saw("b", ChangeKind::Metadata, again + W * 2);
        assert_eq!(s.being_written_until("b", again + W * 2), Some(again + max));
    }

    #[test]
    fn a_rename_into_place_is_complete_whatever_the_mtime() {
        let (_d, snap, wall) = snap(Duration::ZERO);
        let a = snap.get("a");
        let mut s = Settle::new(W);
        let now = Instant::now();
        s.saw("a", ChangeKind::Written, now);
        s.saw("a", ChangeKind::RenamedIn, now);
        assert_eq!(s.fresh_until("a", a, now, wall), None);
        assert_eq!(s.moving().count(), 0);
        // A metadata change keeps it complete.
        s.saw("a", ChangeKind::Metadata, now);
        assert_eq!(s.fresh_until("a", a, now, wall), None);
    }

    #[test]
    fn a_path_written_and_gone_from_the_snapshot_never_holds() {
        let (_d, snap, wall) = snap(Duration::ZERO);
        let mut s = Settle::new(W);
        let now = Instant::now();
        s.saw(".a.tmp", ChangeKind::Written, now);
        assert_eq!(s.fresh_until(".a.tmp", snap.get(".a.tmp"), now, wall), None);
    }

    #[test]
    fn a_removed_path_is_moving_for_the_window_it_may_come_back_in() {
        let (_d, snap, wall) = snap(Duration::from_secs(3600));
        let mut s = Settle::new(W);
        let now = Instant::now();
        // An editor's save: the file renamed to its backup (gone), then written anew.
        s.saw("a", ChangeKind::Removed, now);
        assert_eq!(s.fresh_until("a", None, now, wall), Some(now + W));
        assert_eq!(s.fresh_until("a", snap.get("a"), now, wall), Some(now + W));
        assert_eq!(s.moving().collect::<Vec<_>>(), ["a"]);
        assert_eq!(
            s.fresh_until("a", None, now + W, wall),
            None,
            "gone for good"
        );
        // The write that follows continues the run: the bound counts from the removal.
        let max = W * 3;
        let mut s = Settle::new(W).with_max(max);
        let mut t = now;
        while t < now + max * 2 {
            s.saw("a", ChangeKind::Removed, t);
            s.saw("a", ChangeKind::Written, t + W / 4);
            assert!(s
                .fresh_until("a", snap.get("a"), t + W / 4, wall)
                .is_none_or(|u| u <= now + max));
            t += W / 2;
        }
        // A rename into place ends it at once.
        s.saw("a", ChangeKind::RenamedIn, t);
        assert_eq!(s.fresh_until("a", snap.get("a"), t, wall), None);
    }

    #[test]
    fn without_events_a_young_mtime_is_a_recent_write() {
        let (_d, young, wall) = snap(Duration::from_millis(100));
        let s = Settle::new(W);
        let now = Instant::now();
        let until = s.fresh_until("a", young.get("a"), now, wall);
        assert_eq!(until, Some(now + Duration::from_millis(200)));
        let (_d, old, wall) = snap(Duration::from_secs(3600));
        assert_eq!(s.fresh_until("a", old.get("a"), now, wall), None);
        // A metadata change on a path nothing was known about: complete.
        let mut s = s;
        s.saw("a", ChangeKind::Metadata, now);
        assert_eq!(s.fresh_until("a", young.get("a"), now, wall), None);
    }

    #[test]
    fn reads_is_strict_about_globs_and_the_tracker() {
        let glob = |g: &str| Glob::try_from(g.to_string()).unwrap();
        let inputs = Inputs {
            globs: vec![
                glob("p3a-gate-results*.json"),
                glob("screenshots"),
                glob("${auditors}"),
            ],
            tracker: Some("EXECUTION-TRACKER.md".into()),
            verdict: false,
            everything: true,
            timed: Vec::new(),
            reads: Vec::new(),
        };
        assert!(reads(&inputs, "p3a-gate-results.json"));
        assert!(reads(&inputs, "screenshots/1440/a.png"));
        assert!(reads(&inputs, "EXECUTION-TRACKER.md"));
        assert!(!reads(&inputs, ".p3a-gate-results.json.tmp"));
        assert!(!reads(&inputs, "notes.md"));
        // The conservative test counts both (an uncompiled glob, "everything").
        assert!(inputs.touched_by(".p3a-gate-results.json.tmp"));
    }
}
