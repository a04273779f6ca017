//! What a session tells `referee status` beyond the STOP: how it was started
//! ([`crate::state::run`], for `--expect-protocol` / `--expect-waivers`), and which `--sync` tokens
//! it has caught up with ([`crate::state::sync`]). Both live in the state directory.

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

    /// Tokens seen (`status --sync`): acknowledged once everything handed in with or before
    /// them is judged and nothing is held back for settling.
    pub(super) fn ack_syncs(&mut self) {
        if self.syncs.is_empty() || !self.ledger.holds.is_empty() || self.ledger.published.is_none()
        {
            return;
        }
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
