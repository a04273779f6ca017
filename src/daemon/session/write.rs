//! What a session writes and says: the STOP file and pass files brought in line with what it
//! published, the heartbeat, the event log, the human lines, and its own faults.
//!
//! Every write goes through [`crate::outputs`] (atomic, never following what was planted at a
//! name); what was found planted is recorded as tamper. A write that fails is a fault, which the
//! heartbeat reports and, under `--on-fault stop`, the STOP file names; it is tried again after
//! a wait that doubles, up to a bound ([`retry`]), and said once until it clears (once more).

use std::io::Write as _;

use chrono::{DateTime, Utc};
use sha2::{Digest, Sha256};

use crate::engine::Evaluation;
use crate::outputs::{self, markdown, Context, Incident, STOP_FILE};

use super::super::event::Event;
use super::super::journal::{self, Record};
use super::super::{attach, heartbeat, rules::retry, FaultPolicy};
use super::{Part, Session};
use crate::state::stop::Synced;

/// The fault areas of the STOP file: the state directory's (authoritative) and its copy.
const STOP_AREA: &str = "write OBSERVER-STOP.md";
const STOP_COPY_AREA: &str = "write OBSERVER-STOP.md (copy in the watched directory)";

impl Session {
    pub(super) fn context(&self, written: Option<DateTime<Utc>>, ended: Option<String>) -> Context {
        Context {
            build_dir: self.dir.clone(),
            started: Some(self.started),
            written,
            ended,
            history: self.ledger.history.clone(),
            incidents: self.incidents.clone(),
            escalations: self.ledger.guard.escalations(),
            waivers: self.waivers.as_ref().map(|w| w.in_use()),
        }
    }

    pub(super) fn fault_list(&self) -> Vec<(String, String)> {
        self.faults
            .iter()
            .map(|(a, m)| (a.clone(), m.clone()))
            .collect()
    }

    /// Brings the STOP file and the pass files in line with the published evaluation. The STOP
    /// comes first: it is what the orchestrator waits on.
    pub(super) fn flush_outputs(&mut self) {
        if self.detached_why.is_some() {
            return;
        }
        if let Part::Workspace(tasks) = &self.part {
            let folder = self.folder_lost.as_deref().map(super::copies::folder_block);
            let checks = match (folder, tasks.stop.clone()) {
                (None, c) => c,
                (Some(f), None) => Some(f),
                (Some(f), Some(c)) => Some(format!("{f}\n---\n\n{c}")),
            };
            self.sync_stop_text(checks, self.ledger.holds.is_empty());
            self.emit_pending();
            return;
        }
        let Some(eval) = self.ledger.published.take() else {
            self.sync_stop(None);
            self.emit_pending();
            return;
        };
        self.sync_stop(Some(&eval));
        self.emit_pending();
        let bare = self.context(None, None);
        let stamped = self.context(Some(Utc::now()), None);
        for pass in eval.passes.iter().filter(|p| p.ran) {
            let key = markdown::pass_file(&self.protocol, &eval, &pass.id, &bare);
            if self.pass_files.get(&pass.id) == Some(&key) {
                continue;
            }
            let name = outputs::pass_file(&pass.id);
            let area = format!("write {name}");
            if !self.write_due(&area) {
                continue;
            }
            let text = markdown::pass_file(&self.protocol, &eval, &pass.id, &stamped);
            // Fsynced in the background: a disk flush must not hold up the next STOP.
            match outputs::write_atomic_as(&self.out, &name, &text, outputs::Durability::Background)
            {
                Ok(w) => {
                    self.pass_files.insert(pass.id.clone(), key);
                    self.pass_texts.insert(pass.id.clone(), text.clone());
                    self.write_ok(&area);
                    if let Some(found) = w.replaced {
                        self.own_file_tampered(&name, found);
                    }
                }
                Err(e) => {
                    let what = format!("cannot write `{name}` in `{}`", self.out.display());
                    self.write_failed(&area, what, &e);
                }
            }
        }
        self.ledger.published = Some(eval);
    }

    fn sync_stop(&mut self, eval: Option<&Evaluation>) {
        let ctx = self.context(None, None);
        // Decided first; the STOP file only renders what was decided.
        let checks = eval.and_then(|e| {
            let decision = crate::decision::build(e);
            decision
                .stops()
                .then(|| markdown::stop_file(&self.protocol, e, &decision, &ctx))
        });
        self.sync_stop_text(checks, eval.is_some() && self.ledger.holds.is_empty());
    }

    /// Brings the STOP file in line with `checks` (the blocks of what fails) and the faults;
    /// `judged`: a settled judgment stands behind it (a STOP adopted at start now follows it).
    fn sync_stop_text(&mut self, checks: Option<String>, judged: bool) {
        let faults = match self.cfg.on_fault {
            FaultPolicy::Stop => self.fault_list(),
            FaultPolicy::Continue => Vec::new(),
        };
        let was = self.stop.standing();
        if judged {
            // Judged with nothing held back: a STOP adopted at start now follows the evaluation.
            self.stop.judged();
        }
        self.faults_changed = false;
        let want = super::fault_stop::compose(checks, &faults);
        self.wants_stop = want.is_some();
        if !self.write_due(STOP_AREA) {
            // The state directory's STOP could not be written: tried again when its wait is
            // over; meanwhile the heartbeat says a STOP is wanted.
            return;
        }
        let copy_now = self.write_due(STOP_COPY_AREA);
        // Lifting a STOP goes in the order a reader can never take for a go too early: the
        // state directory's STOP first, then the heartbeat that no longer wants one, and only
        // then the copy in the watched directory (`status` reads the state directory, then the
        // copy). Raising goes the other way round by itself: the state directory's STOP first.
        let lifting = want.is_none() && was && !self.stop.adopted();
        let synced = self.stop.sync(want, copy_now && !lifting);
        if let Some(t) = self.stop.take_noticed() {
            self.stop_tampered(&t);
        }
        self.stop_copy_tried(copy_now);
        match synced {
            Ok(Synced::Unchanged | Synced::Kept) => self.write_ok(STOP_AREA),
            Ok(Synced::Written) => {
                self.write_ok(STOP_AREA);
                match self.part {
                    Part::Workspace(_) => {
                        // A task protocol has no stop_raised events to tell it: say what holds.
                        let what = if was { "updated" } else { "raised" };
                        self.say(&format!(
                            "STOP {what}: {STOP_FILE} — a protected-file veto or an escalation stands"
                        ));
                    }
                    Part::Build if !was => self.say(&format!("{STOP_FILE} written")),
                    Part::Build => {}
                }
                self.beat(heartbeat::WATCHING);
            }
            Ok(Synced::Removed) => {
                self.write_ok(STOP_AREA);
                self.say(&match self.part {
                    Part::Workspace(_) => {
                        format!("STOP resolved: {STOP_FILE} removed, no veto or escalation stands")
                    }
                    Part::Build => format!("{STOP_FILE} removed: no BLOCKING failure stands"),
                });
                self.beat(heartbeat::WATCHING);
                if copy_now {
                    // The copy, left stale above, is removed now that the heartbeat agrees.
                    self.check_stop();
                }
            }
            Err(e) => self.write_failed(
                STOP_AREA,
                format!(
                    "cannot write `{STOP_FILE}` in the state directory `{}`",
                    self.state.display()
                ),
                &e,
            ),
        }
    }

    /// After the STOP's copy may have been written: its fault said or cleared.
    fn stop_copy_tried(&mut self, tried: bool) {
        if let Some(e) = self.stop.take_copy_failed() {
            let what = format!("cannot write `{STOP_FILE}` in `{}`", self.out.display());
            self.write_failed(STOP_COPY_AREA, what, &e);
        } else if tried && !self.stop.copy_stale() {
            self.write_ok(STOP_COPY_AREA);
        }
    }

    /// Compares the STOP file with what the session wrote; restores it and records tamper.
    pub(super) fn check_stop(&mut self) {
        if self.detached_why.is_some() || !self.write_due(STOP_AREA) {
            return;
        }
        let copy_now = self.write_due(STOP_COPY_AREA);
        let checked = self.stop.check(copy_now);
        self.stop_copy_tried(copy_now);
        match checked {
            Ok(None) => {}
            Ok(Some(t)) => self.stop_tampered(&t),
            Err(e) => self.write_failed(
                STOP_AREA,
                format!(
                    "cannot check or restore `{STOP_FILE}` in the state directory `{}`",
                    self.state.display()
                ),
                &e,
            ),
        }
    }

    /// The directory attached has just been judged with nothing held back and its STOP
    /// written: from now on the heartbeat vouches for it (at once, when that is news).
    pub(super) fn vouch(&mut self) {
        if !self.ledger.holds.is_empty() {
            return;
        }
        if let attach::State::Attached(id) = self.attached {
            if self.vouched != Some(id) {
                self.vouched = Some(id);
                self.beat(heartbeat::WATCHING);
            }
        }
    }

    pub(super) fn beat(&mut self, state: &str) {
        if self.detached_why.is_some() {
            // The path names no directory of ours: a heartbeat written there would vouch for it.
            return;
        }
        let area = format!("write {}", heartbeat::HEARTBEAT_FILE);
        // Every fault standing, the heartbeat's own included: when this write clears it, clearing
        // brings the next beat forward, and that one says `watching`.
        let faults: Vec<String> = self
            .faults
            .values()
            .map(|m| m.chars().take(300).collect())
            .take(8)
            .collect();
        let state = if state == heartbeat::WATCHING && !faults.is_empty() {
            heartbeat::FAULTED
        } else {
            state
        };
        let hb = heartbeat::Heartbeat {
            pid: std::process::id(),
            started: self.started,
            last_beat: Utc::now(),
            interval_secs: self.cfg.heartbeat.as_secs_f64(),
            protocol: heartbeat::ProtocolRef {
                id: self.protocol.id.clone(),
                sha256: self.protocol.sha256.clone(),
            },
            state: state.to_string(),
            stop: self.stop.standing(),
            // The STOP as last composed, and one for a fault since under `--on-fault stop`.
            stop_wanted: self.wants_stop
                || (self.cfg.on_fault == FaultPolicy::Stop && !faults.is_empty()),
            faults,
            // The watched directory (BUILD_DIR, or the workspace itself): `status` is given it.
            build_dir: self.canon.display().to_string(),
            dir: match &self.attached {
                attach::State::Attached(_) => self.vouched,
                attach::State::Detached => None,
            },
            proc_start: self.proc_start,
            trace_id: self.trace_id.clone(),
        };
        // The state directory's heartbeat is the one `status` believes; a failure there is the
        // fault. The copy follows, unless its folder is not the session's.
        // The state directory's is written at every beat whatever failed before (it is what
        // says the referee is alive, and in place it needs no room); the copy waits out its
        // backoff.
        let copy_area = format!("{area} (copy in the watched directory)");
        let copy = self
            .folder_lost
            .is_none()
            .then(|| self.out.clone())
            .filter(|_| self.write_due(&copy_area));
        let written = heartbeat::write(&self.state, &hb);
        if let (Ok(_), Some(out)) = (&written, copy) {
            // A copy that cannot be written is a fault too: the watched directory no longer
            // shows what the referee knows (and, under `--on-fault stop`, a STOP says so).
            match heartbeat::write(&out, &hb) {
                Ok(heartbeat::Written::Atomic(w)) => {
                    self.write_ok(&copy_area);
                    if let Some(found) = w.replaced {
                        self.own_file_tampered(heartbeat::HEARTBEAT_FILE, found);
                    }
                }
                Ok(heartbeat::Written::InPlace(e)) | Err(e) => {
                    let what = format!(
                        "cannot write `{}` in `{}`",
                        heartbeat::HEARTBEAT_FILE,
                        out.display()
                    );
                    self.write_failed(&copy_area, what, &e);
                }
            }
        }
        match written {
            Ok(heartbeat::Written::Atomic(w)) => {
                self.clear_fault(&area);
                if let Some(found) = w.replaced {
                    self.own_file_tampered(heartbeat::HEARTBEAT_FILE, found);
                }
            }
            Ok(heartbeat::Written::InPlace(e)) => self.fault(
                &area,
                format!(
                    "cannot write `{}` atomically in the state directory `{}` ({}); overwrote it in place",
                    heartbeat::HEARTBEAT_FILE,
                    self.state.display(),
                    retry::reason(&e)
                ),
            ),
            Err(e) => self.fault(
                &area,
                format!(
                    "cannot write `{}` in the state directory `{}`: {}",
                    heartbeat::HEARTBEAT_FILE,
                    self.state.display(),
                    retry::reason(&e)
                ),
            ),
        }
    }

    /// Edits to the protocol file mid-run are ignored, and recorded once per new content.
    pub(super) fn check_protocol_file(&mut self) {
        let Some(pf) = &mut self.protocol_file else {
            return;
        };
        let now_seen = std::fs::metadata(&pf.path)
            .ok()
            .and_then(|m| Some((m.modified().ok()?, m.len())));
        if now_seen == pf.seen {
            return;
        }
        pf.seen = now_seen;
        let hash = match std::fs::read(&pf.path) {
            Ok(b) => crate::protocol::hex(&Sha256::digest(&b)),
            Err(_) => "(unreadable or removed)".to_string(),
        };
        if hash == self.protocol.sha256 || !pf.reported.insert(hash.clone()) {
            return;
        }
        let path = pf.path.display().to_string();
        let text = format!(
            "protocol file `{path}` was edited mid-run (now sha256 {hash}); ignored: the referee keeps judging with the protocol it loaded (sha256 {})",
            self.protocol.sha256
        );
        self.emit(
            Event::ProtocolEdit {
                path,
                loaded_sha256: self.protocol.sha256.clone(),
                now_sha256: hash,
                text,
            }
            .into(),
        );
    }

    // ---- faults, events, lines ---------------------------------------------------------------

    /// Whether the write of `area` may be tried now (it did not fail, or its wait is over).
    pub(super) fn write_due(&self, area: &str) -> bool {
        self.backoff.due(area, self.cfg.clock.now())
    }

    /// The write of `area` failed (`what`: `cannot write X in Y`): a fault, said once while it
    /// fails the same way, and tried again after a wait that doubles up to a bound.
    pub(super) fn write_failed(&mut self, area: &str, what: String, e: &std::io::Error) {
        self.backoff.failed(area, self.cfg.clock.now());
        self.fault(
            area,
            format!("{what}: {}; {}", retry::reason(e), retry::retrying()),
        );
    }

    /// The write of `area` succeeded: its fault, if any, cleared (said once).
    pub(super) fn write_ok(&mut self, area: &str) {
        self.backoff.succeeded(area);
        self.clear_fault(area);
    }

    /// Writes whose wait is over are tried again: the STOP (both copies), the pass files, the
    /// heartbeat's copy.
    pub(super) fn retry_writes(&mut self) {
        // Is `.referee` still the session's folder (a link planted while the writes failed is
        // never written through)?
        self.check_folder();
        self.flush_outputs();
        self.check_stop();
        self.beat(heartbeat::WATCHING);
    }

    /// The session's own fault: recorded once per distinct message; under `--on-fault stop` the
    /// STOP file names it (at the next flush).
    pub(super) fn fault(&mut self, area: &str, message: String) {
        if self.faults.get(area) == Some(&message) {
            return;
        }
        self.faults.insert(area.to_string(), message.clone());
        self.faults_changed = true;
        // The heartbeat says `faulted` at once, not at the next tick.
        self.next_beat = self.cfg.clock.now();
        tracing::error!("fault: {message}");
        let event = Event::Fault {
            area: area.to_string(),
            message: message.clone(),
            policy: Some(self.cfg.on_fault.as_str().into()),
            text: Some(message),
            cleared: false,
        };
        if area == "events" {
            // The log cannot take it: said and kept for the report only.
            self.note(&event);
        } else {
            self.emit(event.into());
        }
    }

    pub(super) fn clear_fault(&mut self, area: &str) {
        if let Some(message) = self.faults.remove(area) {
            self.faults_changed = true;
            self.next_beat = self.cfg.clock.now();
            self.emit(
                Event::Fault {
                    area: area.to_string(),
                    message,
                    policy: None,
                    text: None,
                    cleared: true,
                }
                .into(),
            );
        }
    }

    /// Logs the events decided since the last flush, in order.
    fn emit_pending(&mut self) {
        for r in std::mem::take(&mut self.pending) {
            self.emit(r);
        }
    }

    /// Says an event and keeps it for the report when it is an incident, without logging it.
    fn note(&mut self, event: &Event) {
        if let Some((kind, text)) = event.incident() {
            self.incidents.push(Incident {
                at: Utc::now(),
                kind: kind.to_string(),
                text: text.to_string(),
            });
        }
        if let Some(line) = event.line() {
            self.say(&line);
        }
    }

    /// Carries out one event: the report's incidents, the human line, the event log.
    pub(super) fn emit(&mut self, r: Record) {
        self.note(&r.event);
        let Some(log) = &mut self.log else {
            return;
        };
        match log.append(&r, &Utc::now()) {
            Ok(()) => {
                if self.faults.remove("events").is_some() {
                    self.say("fault cleared: the event log is writable again");
                }
            }
            Err(e) => self.log_fault(&e),
        }
    }

    /// The event log cannot take an event: a fault (said, kept for the report, not logged).
    pub(super) fn log_fault(&mut self, e: &std::io::Error) {
        self.fault(
            "events",
            format!(
                "cannot append to `{}`: {}",
                journal::EVENTS_FILE,
                retry::reason(e)
            ),
        );
    }

    /// One human line: stdout (unless `--quiet`) and the configured sink.
    pub(super) fn say(&self, text: &str) {
        let stamp = chrono::Local::now().format("%H:%M:%S%.3f");
        let line = match &self.label {
            Some(l) => format!("[{stamp}] {l}: {text}"),
            None => format!("[{stamp}] {text}"),
        };
        if !self.cfg.quiet {
            let mut out = std::io::stdout().lock();
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
        if let Some(tx) = &self.cfg.lines {
            let _ = tx.send(line);
        }
    }
}
