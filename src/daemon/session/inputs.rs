//! The files a build's judgments read, compared with the disk ([`InputLedger`]): before a
//! `status --sync` is acknowledged and at each heartbeat, so a write that made no file event (a
//! hard link written from outside the build, `mmap`) is judged all the same.

use std::collections::BTreeSet;

use crate::artifacts::{Kind, Snapshot};
use crate::fsevents::ChangeKind;

use super::super::rules::inputs::Ident;
use super::Session;

/// How many times an acknowledgement compares and judges again before it answers: a file
/// rewritten faster than it can be judged is answered as it was last judged (like a file that
/// never settles, it cannot hold the answer back).
const SYNC_ROUNDS: usize = 3;

fn stat(path: &std::path::Path) -> Option<Ident> {
    std::fs::metadata(path).ok().map(|m| Ident::of(&m))
}

impl Session {
    /// Records the identity of every file the judgment of `snap` read, and forgets the inputs
    /// no longer listed as files.
    pub(super) fn note_inputs(&mut self, snap: &Snapshot) {
        for (entry, data) in snap.read_files() {
            let path = entry.path();
            // A file written between the read and this stat reads otherwise now: recorded as
            // not had, so it is judged again at the next comparison.
            let ident = stat(&path).filter(|i| i.matches_read(data.size, data.mtime));
            self.inputs.record(&entry.rel, path, ident);
        }
        self.inputs
            .retain(|rel| snap.get(rel).is_some_and(|e| e.kind == Kind::File));
    }

    /// The judged inputs that are not, on disk, what was judged, and the earlier run's
    /// leftovers that are no longer as they were (this run's now).
    fn inputs_changed(&mut self) -> BTreeSet<String> {
        if !matches!(self.part, super::Part::Build) || self.detached_why.is_some() {
            return BTreeSet::new();
        }
        let mut changed = self.inputs.differs(stat);
        changed.extend(self.leftovers_changed());
        changed
    }

    /// Judges again the inputs that changed without an event. Whether results are held now
    /// (the caller waits for them).
    pub(super) fn judge_changed_inputs(&mut self, rounds: usize) -> bool {
        for _ in 0..rounds {
            let changed = self.inputs_changed();
            if changed.is_empty() {
                break;
            }
            // Found by a stat, not an event: a write whose end is not known (its events may
            // still be queued: a tracker streamed in chunks is found mid-way). Seen as written
            // now, so a result it breaks is held until it has been quiet for the window, like
            // any write's.
            let now = self.cfg.clock.now();
            for rel in &changed {
                self.settle.saw(rel, ChangeKind::Written, now);
            }
            self.judge(Some(&changed));
            if !self.ledger.holds.is_empty() {
                return true;
            }
        }
        false
    }

    /// At a heartbeat: what changed with no event is judged within a heartbeat.
    pub(super) fn poll_inputs(&mut self) {
        self.judge_changed_inputs(1);
    }

    /// Before a `status --sync` is acknowledged: what was judged is what is on disk (bounded:
    /// see [`SYNC_ROUNDS`]). Whether the answer must wait for held results.
    pub(super) fn confirm_inputs(&mut self) -> bool {
        self.judge_changed_inputs(SYNC_ROUNDS)
    }
}
