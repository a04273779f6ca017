//! What a session tells `referee status` beyond the STOP: how it was started
//! ([`crate::state::run`], for `--expect-protocol` / `--expect-waivers`), and which `--sync` tokens
//! it has caught up with ([`crate::state::sync`]). Both live in the state directory.

use std::time::Instant;

use super::super::rules::settle::reads;
use super::Session;

impl Session {
    /// Writes how this run was started into the state directory (again after a waiver file
    /// reload: the hash `status` compares is the one in force).
    pub(super) fn record_start(&mut self) {
        let mut s =
            crate::state::run::Started::new(std::process::id(), &self.trace_id, self.started);
        let p = &self.protocol;
        s.protocol_id = p.id.clone();
        s.protocol_version = p.version.clone();
        s.protocol_sha256 = p.sha256.clone();
        s.protocol_origin = p.origin.clone();
        s.tasks = matches!(self.part, super::Part::Workspace(_));
        s.fresh = self.cfg.fresh;
        s.options = serde_json::to_value(self.run_options()).unwrap_or_default();
        s.waivers = self
            .cfg
            .waivers
            .as_ref()
            .map(|w| crate::state::run::Hashed {
                file: w.file.display().to_string(),
                // A file that cannot be read now pins nothing: no hash matches this.
                sha256: crate::state::run::sha256_file(&w.file)
                    .unwrap_or_else(|e| format!("unreadable: {e}")),
            });
        let area = format!("write {}", crate::state::run::RUN_FILE);
        match s.write(&self.state) {
            Ok(()) => self.clear_fault(&area),
            Err(e) => self.fault(
                &area,
                format!("cannot record how the referee was started: {e}"),
            ),
        }
    }

    /// Tokens seen (`status --sync`): acknowledged once every input written before them has
    /// settled and been judged, and nothing is held back for settling.
    ///
    /// A file a check reads that changed in place or vanished less than the settle window ago
    /// (an editor's save between its rename and its last write, a stream still growing) is
    /// still being written: what the referee judged of it is not yet what the pipeline said, so
    /// the answer waits until it has been quiet for the window and is judged again (a timer).
    /// The wait is bounded: `--settle-max` after the token was first seen, the files are
    /// judged as they stand (a writer that never stops cannot hold the answer back), and a
    /// result still held then is bounded by its own hold (the same `--settle-max`).
    pub(super) fn ack_syncs(&mut self) {
        if self.syncs.is_empty() {
            self.sync_since = None;
            return;
        }
        let now = self.cfg.clock.now();
        let since = *self.sync_since.get_or_insert(now);
        if !self.ledger.holds.is_empty() || self.ledger.published.is_none() {
            // A held result has its own bound, and its timer asks again.
            return;
        }
        if let Some(at) = self.inputs_quiet_at() {
            if now < since + self.cfg.settle_max {
                // Judged again (and asked again here) once they are quiet, or at the bound.
                self.recheck(at.min(since + self.cfg.settle_max));
                return;
            }
        }
        // The kernel does not report every change (a hard link written from outside the
        // build, `mmap`): what was judged must still be what is on disk, or be judged again.
        if now < since + self.cfg.settle_max && self.confirm_inputs() {
            // Held results have their own bound, and their timer asks again.
            return;
        }
        self.sync_since = None;
        let tokens = std::mem::take(&mut self.syncs);
        match crate::state::sync::acknowledge(&self.state, &tokens) {
            Ok(()) => self.clear_fault("sync"),
            Err(e) => self.fault(
                "sync",
                format!(
                    "cannot acknowledge `status --sync` in `{}`: {e}",
                    crate::state::sync::ACK_FILE
                ),
            ),
        }
    }
}

impl Session {
    /// When the last input of a check that is still being written will have been quiet for the
    /// settle window; `None` when none is (or this is no build directory's session).
    fn inputs_quiet_at(&self) -> Option<Instant> {
        if !matches!(self.part, super::Part::Build) {
            return None;
        }
        let now = self.cfg.clock.now();
        let wall = self.cfg.clock.wall();
        let protocol = &*self.protocol;
        let read = |p: &str| {
            protocol
                .passes
                .iter()
                .flat_map(|pass| &pass.checks)
                .any(|inst| reads(&inst.inputs, p))
        };
        self.settle
            .moving()
            .filter(|p| read(p))
            .filter_map(|p| {
                let entry = self.listing.as_ref().and_then(|l| l.get(p));
                self.settle.quiet_at(p, entry, now, wall)
            })
            .max()
    }
}
