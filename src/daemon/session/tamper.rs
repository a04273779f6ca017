//! Recording what someone else did to the referee's own files, and what a damaged event log cost
//! a restart: each becomes an incident (in the report) and an event, never a silent repair.
//!
//! This module owns the wording and the event payloads of those records. It does no I/O of its
//! own: the writers (`outputs::write_atomic`, [`crate::state::stop`], [`super::super::journal::open_locked`]) find
//! and neutralise what was planted, and hand it here; its own looks are a `lstat` of the pass
//! files at each heartbeat and, when a pass file's event arrives, a read of it compared with
//! what was written. It must not judge checks.

use std::path::Path;

use crate::outputs::{Foreign, STOP_FILE};

use super::super::event::Event;
use super::super::journal;
use super::Session;
use crate::state::stop::{Tamper, Tampered};

impl Session {
    /// At each heartbeat: a pass file replaced by a symlink or FIFO (which an orchestrator would
    /// read through) is rewritten at once, and the write records the tamper. Its own writes
    /// trigger no file events, so this lstat per pass file is how the daemon notices.
    pub(super) fn check_own_files(&mut self) {
        let planted: Vec<String> = self
            .pass_files
            .keys()
            .filter(|id| {
                crate::outputs::foreign_at(&self.out, &crate::outputs::pass_file(id))
                    .is_ok_and(|f| f.is_some())
            })
            .cloned()
            .collect();
        if planted.is_empty() {
            return;
        }
        for id in &planted {
            self.pass_files.remove(id);
        }
        self.flush_outputs();
    }

    /// Pass files someone touched (their events, the referee's own writes included): one that
    /// no longer reads as the referee wrote it (edited, forged, deleted, replaced) is written
    /// again at once, and the tamper recorded. A pass the referee has not written is left alone.
    pub(super) fn check_pass_files(&mut self, names: &std::collections::BTreeSet<String>) {
        for name in names {
            let Some(id) = super::pass_id(name) else {
                continue;
            };
            let Some(want) = self.pass_texts.get(id).cloned() else {
                continue;
            };
            let what = match read_regular(&self.out.path().join(name)) {
                Ok(Some(bytes)) if bytes == want.as_bytes() => continue,
                Ok(Some(_)) => "edited",
                Ok(None) => "deleted",
                // Not a regular file: the write below replaces it (never followed).
                Err(_) => "replaced",
            };
            // Written by a rival referee started at the same instant? Then the younger yields
            // now, at the first file they disagree on, not at its next heartbeat: on a loaded
            // machine a heartbeat is long enough for dozens of restores back and forth.
            self.check_rival();
            if self.detached_why.is_some() {
                return;
            }
            let area = format!("write {name}");
            match crate::outputs::write_atomic_as(
                &self.out,
                name,
                &want,
                crate::outputs::Durability::Background,
            ) {
                Ok(w) => {
                    self.write_ok(&area);
                    let text = format!(
                        "`{name}` was {what} by someone else; restored as the referee wrote it"
                    );
                    self.emit(
                        Event::Tamper {
                            file: name.clone(),
                            what: what.into(),
                            found: w.replaced.map(|f| f.describe().into()),
                            action: "restored".into(),
                            moved_to: None,
                            failing: Vec::new(),
                            text,
                        }
                        .into(),
                    );
                }
                Err(e) => {
                    // Rewritten by the next flush once the write can be made.
                    self.pass_files.remove(id);
                    let what = format!("cannot write `{name}` in `{}`", self.out.display());
                    self.write_failed(&area, what, &e);
                }
            }
        }
    }

    /// Something that was not a regular file sat at one of the referee's own names and was
    /// replaced (a symlink or FIFO: the rename replaces the entry itself, never what it points to).
    pub(super) fn own_file_tampered(&mut self, name: &str, found: Foreign) {
        let text = format!(
            "`{name}` was {} put there by someone else; replaced without being followed or opened",
            found.describe()
        );
        self.emit(
            Event::Tamper {
                file: name.to_string(),
                what: "replaced".into(),
                found: Some(found.describe().into()),
                action: "replaced".into(),
                moved_to: None,
                failing: Vec::new(),
                text,
            }
            .into(),
        );
    }

    /// The event log's name held something else at start: moved aside, and a new log started.
    pub(super) fn log_moved_aside(&mut self, found: Foreign, to: &Path) {
        let text = format!(
            "`{}` was {} put there by someone else; never followed or read, moved aside to `{}` and a new log started (nothing resumed from it)",
            journal::EVENTS_FILE,
            found.describe(),
            to.display()
        );
        self.emit(
            Event::Tamper {
                file: journal::EVENTS_FILE.into(),
                what: "replaced".into(),
                found: Some(found.describe().into()),
                action: "moved aside".into(),
                moved_to: Some(to.display().to_string()),
                failing: Vec::new(),
                text,
            }
            .into(),
        );
    }

    /// Lines of the event log that could not be read on resume: reported, with their numbers.
    pub(super) fn log_damaged(&mut self, r: &journal::Resumed) {
        let Some(text) = r.damage() else {
            return;
        };
        self.emit(
            Event::LogDamaged {
                file: journal::EVENTS_FILE.into(),
                skipped: r.skipped,
                lines: r.skipped_lines.clone(),
                events: r.events,
                text,
            }
            .into(),
        );
    }

    /// A STOP left by an earlier run (or by anyone) found at start: adopted as it stands, kept
    /// until the directory has been judged.
    pub(super) fn stop_adopted(&mut self, raised_by_referee: bool) {
        let text = format!(
            "{STOP_FILE} found at start ({}); kept as it stands until the first settled evaluation judges the directory",
            if raised_by_referee {
                "the event log says the referee raised it"
            } else {
                "the event log does not say the referee raised it"
            }
        );
        self.emit(
            Event::StopAdopted {
                raised_by_referee,
                text,
            }
            .into(),
        );
    }

    /// Tamper with the STOP file (found by a check or while writing): incident and event.
    pub(super) fn stop_tampered(&mut self, t: &Tampered) {
        let failing: Vec<String> = self
            .ledger
            .published
            .iter()
            .flat_map(|e| e.stops())
            .map(|r| format!("{} (pass {})", r.check, r.pass))
            .collect();
        let text = if failing.is_empty() {
            format!("{STOP_FILE} {}", t.describe())
        } else {
            format!("{STOP_FILE} {} ({})", t.describe(), failing.join(", "))
        };
        let action = match (t.what, &t.moved_to) {
            (_, Some(_)) if t.what == Tamper::Created => "moved aside",
            (_, Some(_)) => "moved aside and restored",
            (Tamper::Created, None) => "removed",
            _ => "restored",
        };
        self.emit(
            Event::Tamper {
                file: STOP_FILE.into(),
                what: t.what.as_str().into(),
                found: t.found.map(|f| f.describe().to_string()),
                action: action.into(),
                moved_to: t.moved_to.as_ref().map(|p| p.display().to_string()),
                failing,
                text,
            }
            .into(),
        );
    }
}

/// A small regular file's bytes (`None`: nothing there); anything else at the name (a link, a
/// FIFO, a directory, an oversized file) is an error, never followed or opened.
fn read_regular(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    use std::io::Read;
    const MAX: u64 = 16 << 20;
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() && m.len() <= MAX => {}
        Ok(_) => return Err(std::io::Error::other("not a small regular file")),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    }
    let f = match crate::safefs::open(path, crate::safefs::Access::READ) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    f.take(MAX).read_to_end(&mut bytes)?;
    Ok(Some(bytes))
}
