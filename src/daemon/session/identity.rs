//! Never blind while saying live: whether the build directory's path still names the directory
//! the session watches, and what to do when it does not (detach, or re-attach to a new one).
//!
//! At every wake-up and every heartbeat the session compares what the path names with the
//! directory it attached to ([`attach::decide`]). A directory deleted, re-created, renamed or
//! replaced is re-attached (the loop watches it anew, its own event log is opened, a full scan
//! follows, its files are written there); while the path names nothing usable, the session is
//! detached and writes nothing.

use super::super::attach;
use super::super::event::Event;
use super::super::heartbeat;
use super::super::journal::{self, EventLog};
use super::open::{context_ref, held, open_build, remove_stale_temps, take_lock};
use super::{Part, Rewatch, Session};
use crate::daemon::DaemonError;
use crate::state::live::Here;
use crate::state::stop::StopFile;

impl Session {
    /// Compares what the build directory's path names with the directory watched, and detaches
    /// or re-attaches. `watch_lost`: the event source said the directory's own watch is gone.
    pub(super) fn check_dir(&mut self, watch_lost: bool) {
        let id = if self.follow_link {
            crate::state::dir_id::DirId::of(&self.dir)
        } else {
            crate::state::dir_id::DirId::of_unfollowed(&self.dir)
        };
        let (now, why) = match id {
            Ok(id) => (Some(id), None),
            Err(e) => (None, Some(e.describe())),
        };
        match attach::decide(&self.attached, now, watch_lost) {
            attach::Action::Stay => {
                if let (Some(why), Some(_)) = (why, &self.detached_why) {
                    // Still detached, maybe for another reason now (gone, then a link in its
                    // place): said once per reason.
                    self.detach(why);
                }
            }
            attach::Action::Detach => {
                self.detach(why.unwrap_or_else(|| "the build directory is gone".into()))
            }
            attach::Action::Reattach(id) => self.reattach(id),
        }
    }

    /// Stops watching and writing: the path names nothing the session can watch. Said and
    /// recorded once per reason (in the old event log, whose file moved with a renamed directory).
    fn detach(&mut self, why: String) {
        if self.attached != attach::State::Detached {
            self.rewatch = Some(Rewatch::Drop);
        }
        // Writes nothing while detached: the held folder may have been moved anywhere.
        if let Some(log) = &mut self.log {
            log.set_mirror(None);
        }
        self.attached = attach::State::Detached;
        // Whatever is at the name now, or wherever the directory went, another referee may
        // take it.
        self.dir_hold = None;
        self.listing = None;
        // Not even the event log's copy is written through the path meanwhile.
        if let Some(log) = &mut self.log {
            log.set_mirror(None);
        }
        if self.detached_why.as_deref() == Some(why.as_str()) {
            return;
        }
        self.detached_why = Some(why.clone());
        let text = format!(
            "detached: {why}; watching and writing nothing until a directory is at `{}` again (checked every heartbeat)",
            self.dir.display()
        );
        tracing::warn!("{text}");
        self.emit(
            Event::Detached {
                build_dir: self.dir.display().to_string(),
                why,
                text,
            }
            .into(),
        );
    }

    /// The directory at the path is another one now, whose default state directory has another
    /// name (named from the directory's identity). The session's memory follows the
    /// directory it re-attaches to: its state directory is renamed to the new name (the log
    /// stays open and locked through the rename), so `status` finds it there. With
    /// `--state-dir`, or when the new name is taken, it stays where it is.
    fn rehome(&mut self, here: &Here) {
        if self.cfg.state_dir.is_some() {
            return;
        }
        let Ok(to) = crate::state::locate(here, None) else {
            return;
        };
        let canon = here.canon();
        if to == self.state || crate::state::exists(&to) {
            return;
        }
        if std::fs::rename(&self.state, &to).is_err() {
            return;
        }
        crate::state::note_watched(&to, canon);
        self.state = to.clone();
        if let Some(log) = &mut self.log {
            log.moved_to(&to);
        }
        if let Part::Workspace(t) = &mut self.part {
            t.state = to;
        }
    }

    /// The path names a directory the session is not watching (re-created, replaced, or back
    /// after a detach): the loop watches it anew, its own event log is opened, and a full scan
    /// follows at once (after the watch, so nothing written in between is missed). What the
    /// session knows (passes run, history, fix attempts) is kept: re-creating the directory must
    /// not wipe a STOP.
    fn reattach(&mut self, id: crate::state::dir_id::DirId) {
        // The path may have changed since it was looked at (the directory renamed away and a
        // link put in its place): re-attach only to the very directory looked at, opened once
        // (never through a link the session was not started on), and name its memory, check
        // it and hold it from that one descriptor. Its memory (and its heartbeat, which
        // `status` believes) must not follow a link to wherever it points.
        let here = match open_build(&self.dir, self.follow_link) {
            Ok(here) if here.dir() == id => here,
            Ok(_) => {
                self.detach(format!(
                    "`{}` changed again while the referee looked at it",
                    self.dir.display()
                ));
                return;
            }
            Err(DaemonError::Gone(e)) => {
                self.detach(e.describe());
                return;
            }
            Err(e) => {
                let why = match &e {
                    DaemonError::BuildDir { source, .. } => source.to_string().to_lowercase(),
                    DaemonError::NotADirectory { .. } => "not a directory".to_string(),
                    e => e.to_string(),
                };
                self.detach(format!("cannot resolve `{}`: {why}", self.dir.display()));
                return;
            }
        };
        self.dir_hold = match take_lock(&here, &self.dir) {
            Ok(file) => file,
            Err(super::open::HeldByAnother) => {
                self.detach(format!(
                    "another referee holds `{}` (the directory's lock)",
                    self.dir.display()
                ));
                return;
            }
        };
        let canon = here.canon().to_path_buf();
        // The event log is the state directory's: it stays open and locked across the
        // directory's replacement (its copy is rewritten into the new directory at the next
        // tick). Only a log that could not be opened at all is tried again.
        let old_log: Option<std::path::PathBuf> = None;
        self.rehome(&here);
        let previous_events = 0;
        if let Part::Workspace(_) = self.part {
            // A re-created workspace: its `.referee/` again (refused as a symlink or a file).
            match crate::outputs::code_change::ensure_dir(&self.dir) {
                Ok(out) => {
                    self.set_out(out);
                    self.folder_back()
                }
                Err(e) => self.fault(
                    "events",
                    format!(
                        "cannot use `{}`: {}",
                        self.out.display(),
                        e.to_string().to_lowercase()
                    ),
                ),
            }
        }
        if self.log.is_none() {
            match journal::open_locked(&self.state) {
                Ok(journal::Opened {
                    file, torn_tail, ..
                }) => {
                    let context = context_ref(&canon, &self.protocol);
                    match EventLog::new(
                        &self.state,
                        file,
                        torn_tail,
                        self.trace_id.clone(),
                        context,
                    ) {
                        Ok(mut log) => {
                            log.set_mirror(Some(self.out.clone()));
                            self.log = Some(log);
                        }
                        Err(e) => self.log_fault(&e),
                    }
                }
                Err(journal::LockError::Busy { path }) => {
                    self.detach(format!(
                        "another referee holds the lock on `{}`",
                        path.display()
                    ));
                    return;
                }
                Err(journal::LockError::Io { path, source }) => self.fault(
                    "events",
                    format!(
                        "cannot open `{}`: {}",
                        path.display(),
                        source.to_string().to_lowercase()
                    ),
                ),
            }
        }
        if self.folder_lost.is_none() {
            if let Some(log) = &mut self.log {
                log.set_mirror(Some(self.out.clone()));
            }
        }
        let was = std::mem::replace(&mut self.attached, attach::State::Attached(id));
        self.detached_why = None;
        if let Part::Build = self.part {
            // A build directory's own files go into the directory itself.
            self.out = held(&here, &self.dir);
            if let Some(log) = &mut self.log {
                log.set_mirror(Some(self.out.clone()));
            }
        }
        // The copy of the log that came with the directory, put in line before anything is
        // appended to it. A directory restored from a copy of itself made a moment ago holds
        // the log as it was then (its first lines): that is no one's edit. Anything else there
        // was changed by someone else, and is said so.
        let copy_fixed = match &mut self.log {
            Some(log) if self.folder_lost.is_none() => log.restore_mirror(true).ok().flatten(),
            _ => None,
        }
        .filter(|fix| *fix != journal::MirrorFix::Behind);
        self.canon = canon;
        remove_stale_temps(self.out.path());
        self.stop = StopFile::with_state(&self.out, &self.state);
        self.stop.adopt();
        self.pass_files.clear();
        self.pass_texts.clear();
        self.listing = None;
        // A new directory: nothing has failed to be written into it yet.
        self.backoff = super::super::rules::retry::Backoff::default();
        self.rewatch = Some(Rewatch::Start);
        let text = format!(
            "build directory `{}` re-created or replaced ({}); re-attached: new watches, a full rescan, its files written there",
            self.dir.display(),
            match was {
                attach::State::Attached(old) => format!("was {old}, now {id}"),
                attach::State::Detached => format!("now {id}"),
            },
        );
        self.emit(
            Event::Reattach {
                build_dir: self.canon.display().to_string(),
                dev: id.dev,
                ino: id.ino,
                previous_log: old_log.map(|p| p.display().to_string()),
                previous_lines: previous_events,
                text,
            }
            .into(),
        );
        if let Some(fix) = copy_fixed {
            self.log_copy_fixed(fix);
        }
        self.beat(heartbeat::WATCHING);
        // Judged as soon as the loop has watched it.
        self.recheck(self.cfg.clock.now());
    }

    /// The loop watches the re-attached directory now. What was written into it between the
    /// look that re-attached and the new watch made no event: the `status --sync` tokens put
    /// there meanwhile (and before) are taken up, and the directory is judged again from here,
    /// so a token is acknowledged only by a judgment that began after it was watched.
    pub fn watched_anew(&mut self) {
        for t in super::open::tokens_in(&self.canon) {
            if !self.syncs.contains(&t) {
                self.syncs.push(t);
            }
        }
        self.recheck(self.cfg.clock.now());
    }
}
