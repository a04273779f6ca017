//! The copies in the watched directory: a workspace's `.referee/` folder and the
//! verdict files and event log copied into it (or into BUILD_DIR). The state directory holds
//! what counts; these are for the people and tools that read them there. When someone else
//! deletes or edits a copy, it is restored from the state directory and recorded as tamper (the
//! same [`Event::Tamper`] as the STOP file's); a `.referee` replaced by a symlink, a file or a
//! FIFO is never followed or written through: the session keeps working from its state
//! directory and its STOP says the folder was replaced, until a real folder is there again.
//!
//! It must not judge anything; the STOP file itself stays [`crate::state::stop`]'s.

use crate::outputs::{code_change, Foreign};
use crate::workspace::OUTPUT_DIR;

use super::super::event::Event;
use super::super::heartbeat;
use super::super::journal::{MirrorFix, EVENTS_FILE};
use super::{Part, Session};
use crate::state::dir_id::DirId;

/// The most verdict files [`published`] takes back from a state directory.
const PUBLISHED_MAX: usize = 100_000;

/// The verdict files a previous run left in the state directory `state`, by name, each read as
/// a regular file of at most `cap` bytes: what was last published. A restarted referee starts
/// from them as if it had written them itself, so an attempt judged again is published again
/// when its verdict or its files changed (as within one run: otherwise `status --task` finds
/// the verdict stale for good), and the copies in `.referee/` are restored from them.
pub(super) fn published(
    state: &std::path::Path,
    cap: u64,
) -> std::collections::BTreeMap<String, String> {
    let Ok(entries) = std::fs::read_dir(state) else {
        return Default::default();
    };
    entries
        .flatten()
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| {
            n.starts_with(code_change::VERDICT_PREFIX)
                && (n.ends_with(".json") || n.ends_with(".md"))
        })
        .take(PUBLISHED_MAX)
        .filter_map(|n| {
            let bytes = crate::safefs::read_file(&state.join(&n), cap).ok()??;
            Some((n, String::from_utf8(bytes).ok()?))
        })
        .collect()
}

/// The STOP block that stands while `.referee` is not the session's folder.
pub(super) fn folder_block(found: &str) -> String {
    use crate::outputs::escape::text;
    format!(
        "# OBSERVER STOP — REFEREE FOLDER REPLACED\n\n\
**Check:** REFEREE-FOLDER — the referee's folder `{OUTPUT_DIR}` was replaced\n\n\
**Severity:** BLOCKING\n\n\
**Phase:** referee (not a task check)\n\n\
**Description:** someone replaced the referee's folder `{OUTPUT_DIR}/` in the workspace; the referee never follows or writes through it, keeps judging from its state directory, and no copy of its verdicts can be read in the workspace meanwhile\n\n\
**Evidence:** `{OUTPUT_DIR}` is now {}\n\n\
**Required Action:** A human must find out who replaced it, remove what is there now and let the referee make the folder again; treat every verdict read from the workspace since as forged.\n",
        text(found)
    )
}

impl Session {
    /// At each tick and on events under `.referee/`: is the workspace's `.referee` still the
    /// session's folder? A deleted one is made again (and its copies restored); one replaced by
    /// anything but a directory is tamper: no copy is written through it, and the STOP says so.
    pub(super) fn check_folder(&mut self) {
        let Part::Workspace(tasks) = &self.part else {
            return;
        };
        if self.detached_why.is_some() {
            return;
        }
        let known = tasks.out_id;
        let path = self.canon.join(OUTPUT_DIR);
        let (what, found) = match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_dir() => {
                let id = DirId::from_meta(&m);
                if id.same(&known) && self.folder_lost.is_none() {
                    return;
                }
                // Another folder: the session writes into it from now on, held as the first was.
                match crate::outputs::OutDir::hold(&path) {
                    Ok(out) => self.set_out(out),
                    Err(_) => return,
                }
                if let Part::Workspace(t) = &mut self.part {
                    t.out_id = id;
                }
                ("replaced", "another directory")
            }
            Ok(m) => {
                if self.folder_lost.is_some() {
                    return;
                }
                let found = Foreign::of(&m).map_or("a regular file", |f| f.describe());
                self.folder_lost = Some(found.to_string());
                self.stop.set_copy(false);
                if let Some(log) = &mut self.log {
                    log.set_mirror(None);
                }
                let text = format!(
                    "`{OUTPUT_DIR}` was replaced by {found}; never followed or written through: the referee keeps its state in `{}` and raises STOP",
                    self.state.display()
                );
                self.tamper_event(OUTPUT_DIR, "replaced", Some(found), "STOP raised", text);
                self.flush_outputs();
                return;
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                match code_change::ensure_dir(&self.canon) {
                    Ok(out) => {
                        if let Ok(m) = std::fs::symlink_metadata(out.path()) {
                            if let Part::Workspace(t) = &mut self.part {
                                t.out_id = DirId::from_meta(&m);
                            }
                        }
                        self.set_out(out);
                    }
                    Err(_) => return,
                }
                ("deleted", "nothing")
            }
            Err(_) => return,
        };
        let text = format!(
            "`{OUTPUT_DIR}` was {what} by someone else (found {found}); its copies restored from the state directory"
        );
        self.tamper_event(OUTPUT_DIR, what, None, "restored", text);
        self.folder_back();
    }

    /// The folder the session's copies go into from now on (held open:).
    pub(super) fn set_out(&mut self, out: crate::outputs::OutDir) {
        self.stop.set_dir(&out);
        if let Part::Workspace(t) = &mut self.part {
            t.out = out.clone();
        }
        self.out = out;
    }

    /// `.referee` is a real folder again: copies are written into it again, all restored now.
    pub(super) fn folder_back(&mut self) {
        let Part::Workspace(tasks) = &mut self.part else {
            return;
        };
        self.folder_lost = None;
        tasks.copies_dirty = true;
        // A real folder again: what could not be written into it is tried at once.
        self.backoff = super::super::rules::retry::Backoff::default();
        self.stop.set_copy(true);
        if let Some(log) = &mut self.log {
            log.set_mirror(Some(self.out.clone()));
        }
        if let Ok(out) = crate::outputs::code_change::ensure_dir(&self.canon) {
            if !out.is_at(self.out.path()) || !self.out.is_at(out.path()) {
                self.set_out(out);
            }
        }
        self.flush_outputs();
        self.check_stop();
        self.check_copies(true);
        self.beat(heartbeat::WATCHING);
    }

    /// Restores a verdict copy or the event log's copy that someone else deleted or edited.
    /// `quiet`: after the folder itself was restored (its tamper is recorded already).
    pub(super) fn check_copies(&mut self, quiet: bool) {
        // Detached: the path names nothing of the session's (a link swapped in would take the
        // copies wherever it points).
        if self.folder_lost.is_some() || self.detached_why.is_some() {
            return;
        }
        let mut restored = Vec::new();
        if let Part::Workspace(tasks) = &mut self.part {
            tasks.copies_dirty = false;
            for (name, text) in &tasks.copies {
                let what = match tasks.out.read_regular(name, 8 << 20) {
                    Some(b) if b == text.as_bytes() => continue,
                    Some(_) => "edited",
                    None if !tasks.out.has(name) => "deleted",
                    None => "replaced",
                };
                if crate::outputs::write_atomic(&tasks.out, name, text).is_ok() {
                    restored.push((name.clone(), what));
                }
            }
        }
        // Rewriting the copy reads the whole log: while the disk refuses it, tried only as
        // often as its backoff says (the log in the state directory is what counts).
        let area = "write OBSERVER-EVENTS.jsonl (copy in the watched directory)";
        let mirror = match &mut self.log {
            Some(log) if self.backoff.due(area, self.cfg.clock.now()) => {
                Some(log.restore_mirror(quiet))
            }
            _ => None,
        };
        let mirror = match mirror {
            Some(Ok(fix)) => {
                self.backoff.succeeded(area);
                fix
            }
            Some(Err(_)) => {
                self.backoff.failed(area, self.cfg.clock.now());
                None
            }
            None => None,
        };
        if let (Some(fix), false) = (mirror, quiet) {
            self.log_copy_fixed(fix);
        }
        if quiet {
            return;
        }
        for (name, what) in restored {
            let text =
                format!("`{name}` was {what} by someone else; restored from the state directory");
            self.tamper_event(&name, what, None, "restored", text);
        }
    }

    /// The copy of the event log was put right: tamper.
    pub(super) fn log_copy_fixed(&mut self, fix: MirrorFix) {
        let (what, found) = match fix {
            MirrorFix::Deleted => ("deleted", None),
            MirrorFix::Edited | MirrorFix::Behind => ("edited", None),
            MirrorFix::Replaced(f) => ("replaced", Some(f.describe())),
        };
        let text = format!(
            "`{EVENTS_FILE}` (the copy in the watched directory) was {what} by someone else; rewritten from the state directory's log"
        );
        self.tamper_event(EVENTS_FILE, what, found, "restored", text);
    }

    fn tamper_event(
        &mut self,
        file: &str,
        what: &str,
        found: Option<&str>,
        action: &str,
        text: String,
    ) {
        self.emit(
            Event::Tamper {
                file: file.to_string(),
                what: what.into(),
                found: found.map(str::to_string),
                action: action.into(),
                moved_to: None,
                failing: Vec::new(),
                text,
            }
            .into(),
        );
    }
}
