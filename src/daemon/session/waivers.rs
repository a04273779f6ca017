//! A session's waiver file (`watch --waivers FILE`): applied to every evaluation, looked at
//! again at each heartbeat tick, reloaded when it changes (an `waivers_reloaded` event), and
//! re-applied when a waiver's last day has passed. A change re-judges the directory, so a STOP
//! held only by a now-waived FAIL is resolved, and one whose waiver expired or was removed is
//! raised again. A file that no longer parses keeps the waivers last loaded (said in the event,
//! and again at each change); a file removed waives nothing.

use std::path::PathBuf;
use std::time::SystemTime;

use chrono::{NaiveDate, Utc};

use crate::engine::Evaluation;
use crate::protocol::Protocol;
use crate::waivers::{InUse, Waivers};

use super::super::event::Event;
use super::Session;

/// The waiver file as the session last saw it.
#[derive(Debug)]
pub(super) struct WaiverFile {
    path: PathBuf,
    seen: Option<(SystemTime, u64)>,
    current: Waivers,
    /// The day the waivers were last applied on (a new day may expire one).
    applied_on: Option<NaiveDate>,
}

fn look(path: &std::path::Path) -> Option<(SystemTime, u64)> {
    std::fs::metadata(path)
        .ok()
        .and_then(|m| Some((m.modified().ok()?, m.len())))
}

impl WaiverFile {
    /// The waivers loaded at start (by the command line, which refused a bad file).
    pub(super) fn new(loaded: Waivers) -> WaiverFile {
        WaiverFile {
            seen: look(&loaded.file),
            path: loaded.file.clone(),
            current: loaded,
            applied_on: None,
        }
    }

    /// Marks the FAILs the waivers cover, as of today.
    pub(super) fn apply(&mut self, eval: &mut Evaluation) {
        let today = Utc::now().date_naive();
        self.current.apply(eval, today);
        self.applied_on = Some(today);
    }

    /// What the report shows.
    pub(super) fn in_use(&self) -> InUse {
        self.current.in_use(Utc::now().date_naive())
    }

    /// Whether a waiver applied on the last evaluation's day has expired since.
    fn expired_since(&self, today: NaiveDate) -> bool {
        self.applied_on
            .and_then(|d| self.current.next_expiry(d))
            .is_some_and(|day| day <= today)
    }

    /// Looks at the file; on a change, reloads it and returns the event that says so.
    fn reload(&mut self, protocol: &Protocol) -> Option<Event> {
        let now_seen = look(&self.path);
        if now_seen == self.seen {
            return None;
        }
        self.seen = now_seen;
        let file = self.path.display().to_string();
        let (why, error) = if now_seen.is_none() {
            self.current = Waivers {
                file: self.path.clone(),
                waivers: Vec::new(),
            };
            ("removed", None)
        } else {
            match Waivers::load(&self.path, protocol) {
                Ok(w) => {
                    self.current = w;
                    ("changed", None)
                }
                Err(e) => ("invalid", Some(crate::error::chain(&e))),
            }
        };
        let today = Utc::now().date_naive();
        let expired: Vec<String> = self
            .current
            .expired(today)
            .iter()
            .map(|e| e.describe())
            .collect();
        let count = self.current.waivers.len();
        let text = match &error {
            Some(e) => format!(
                "waiver file `{file}` changed but cannot be used ({e}); the {count} waiver(s) loaded before still apply"
            ),
            None if why == "removed" => {
                format!("waiver file `{file}` removed: nothing is waived now")
            }
            None => format!(
                "waiver file `{file}` reloaded: {count} waiver(s), {} expired",
                expired.len()
            ),
        };
        Some(Event::WaiversReloaded {
            file,
            why: why.into(),
            count,
            expired,
            error,
            text,
        })
    }
}

impl Session {
    /// At a tick: reload a changed waiver file, or notice a waiver whose day has passed, and
    /// judge again with what now applies.
    pub(super) fn check_waivers(&mut self) {
        let protocol = self.protocol.clone();
        let Some(wf) = &mut self.waivers else {
            return;
        };
        let today = Utc::now().date_naive();
        let event = match wf.reload(&protocol) {
            Some(e) => Some(e),
            None if wf.expired_since(today) => {
                let expired: Vec<String> = wf
                    .current
                    .expired(today)
                    .iter()
                    .map(|e| e.describe())
                    .collect();
                let text = format!(
                    "a waiver expired: {}",
                    expired.last().map_or("", String::as_str)
                );
                Some(Event::WaiversReloaded {
                    file: wf.path.display().to_string(),
                    why: "expired".into(),
                    count: wf.current.waivers.len(),
                    expired,
                    error: None,
                    text,
                })
            }
            None => None,
        };
        if let Some(event) = event {
            // Applied on the next evaluation, which is now.
            if let Some(wf) = &mut self.waivers {
                wf.applied_on = Some(today);
            }
            self.emit(event.into());
            self.record_start();
            self.judge(None);
        }
    }
}
