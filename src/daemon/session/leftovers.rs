//! An earlier run's leftovers in a session: set aside from every snapshot it judges, and their
//! record kept in the state directory ([`crate::state::leftovers`] decides and keeps it).

use std::collections::BTreeSet;

use crate::artifacts::Snapshot;
use crate::state::leftovers::LEFTOVERS_FILE;

use super::Session;

impl Session {
    /// Sets the leftovers aside from `snap` (see [`crate::state::leftovers::Leftovers::set_aside`]) and keeps the record.
    pub(super) fn set_aside_leftovers(&mut self, snap: &mut Snapshot, full: bool) -> Vec<String> {
        let shown = self.leftovers.set_aside(snap, full);
        self.keep_leftovers();
        shown
    }

    /// The leftovers that changed with no event (see [`crate::state::leftovers::Leftovers::take_changed`]), this run's
    /// now: judged with the inputs that did.
    pub(super) fn leftovers_changed(&mut self) -> BTreeSet<String> {
        let changed = self.leftovers.take_changed(&self.canon);
        self.keep_leftovers();
        changed
    }

    fn keep_leftovers(&mut self) {
        match self.leftovers.save(&self.state) {
            Ok(()) => self.clear_fault("leftovers"),
            Err(e) => self.fault(
                "leftovers",
                format!(
                    "cannot keep `{LEFTOVERS_FILE}` (the earlier run's files set aside): {}",
                    e.to_string().to_lowercase()
                ),
            ),
        }
    }
}
