//! `OBSERVER-EVENTS.jsonl`: the daemon's append-only structured log, one JSON object a line in the
//! event envelope of seed 003 §8.1, and how a restarted referee resumes from it.
//!
//! This module owns the envelope (`trace_id`, `timestamp`, `scope`, `signal_type`, `severity`,
//! `payload`, `artifact_ids`, `context_ref`), appending (`O_APPEND`, one `write` per line, a line
//! the disk cut short truncated away so the log never holds a torn line in its middle), the
//! advisory lock that keeps two referees off one build directory (taken through
//! [`crate::state::lock`]), rotating an old log aside
//! (`--fresh`: data is moved, never deleted), and replaying a log into the state a restart needs.
//! The log is only ever opened as a regular file (`O_NOFOLLOW`, `O_NONBLOCK`): a symlink or FIFO
//! planted at its name is moved aside, never followed or read. A damaged log is replayed as far
//! as it can be, and what was skipped (how many lines, which) is handed back to be reported;
//! numbers read from it are bounded.
//! It must not decide what is worth logging or judge anything: sessions hand it events.
//! Replaying a log into what a restart takes over is [`resume`]'s.

mod resume;

pub use resume::{replay, replay_from, Resumed, MAX_LINE_BYTES, MAX_SKIPPED_LISTED};

use std::fs::File;
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use chrono::{DateTime, SecondsFormat, Utc};
use serde::Serialize;

use super::event::{Event, Level, Scope, Signal};

use crate::outputs::Foreign;

use crate::state::lock::Locked;
pub use crate::state::lock::{LockError, EVENTS_FILE};

/// One event to append, with the artifacts it rests on (`path@sha256`). The envelope's scope,
/// signal type and severity follow from the event.
#[derive(Debug, Clone)]
pub struct Record {
    pub event: Event,
    pub artifacts: Vec<String>,
}

impl From<Event> for Record {
    fn from(event: Event) -> Record {
        Record {
            event,
            artifacts: Vec::new(),
        }
    }
}

/// `context_ref`: which build directory and which protocol (`id@version+sha256`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ContextRef {
    pub app_ctx: String,
    pub motor_ctx: String,
}

#[derive(Serialize)]
struct Envelope<'a> {
    trace_id: &'a str,
    timestamp: String,
    scope: Scope,
    signal_type: Signal,
    severity: Level,
    payload: &'a Event,
    artifact_ids: &'a [String],
    context_ref: &'a ContextRef,
}

/// The open, locked log.
#[derive(Debug)]
pub struct EventLog {
    file: File,
    /// A cut-short line could not be taken back: the next append starts with a newline, so the
    /// fragment stays a line of its own (skipped on resume) instead of spoiling the next one.
    torn: bool,
    path: PathBuf,
    trace_id: String,
    context: ContextRef,
    /// The folder of the copy in the watched directory (for people and tools that read it
    /// there), appended to after the authoritative log; `None`: no copy is kept (its folder is
    /// not usable).
    mirror: Option<crate::outputs::OutDir>,
}

/// The largest log copied whole into the watched directory; a larger one's copy is left as is.
const MAX_MIRROR: u64 = 64 << 20;

/// What was wrong with the copy of the log in the watched directory, now put right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MirrorFix {
    Deleted,
    Edited,
    /// An older state of the log: its first lines, the later ones missing (as a copy of the
    /// watched directory made a moment ago holds it). Told apart only by a full comparison.
    Behind,
    /// Something not a regular file was there (replaced, never followed).
    Replaced(Foreign),
}

/// Formats a time as the envelope does: RFC 3339 with milliseconds, UTC.
pub fn timestamp(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// The locked log as [`open_locked`] found it.
#[derive(Debug)]
pub struct Opened {
    pub file: File,
    /// What the earlier contents say (replayed line by line, never held whole in memory).
    pub resumed: Resumed,
    /// The last line has no newline (torn by a crash): [`EventLog::new`] closes it.
    pub torn_tail: bool,
    /// What someone else had put at the log's name (a symlink, FIFO, directory …), and where it
    /// was moved aside to; a new log was started in its place.
    pub moved_aside: Option<(Foreign, PathBuf)>,
}

/// Opens (creating) and locks the log ([`crate::state::lock::lock`]). Returns the log and its
/// previous contents; anything but a regular file found at its name was moved aside, never
/// followed or read, and a new log started (the caller records it as tamper).
pub fn open_locked(dir: &Path) -> Result<Opened, LockError> {
    let Locked {
        mut file,
        moved_aside,
    } = crate::state::lock::lock(dir)?;
    let (resumed, torn_tail) =
        replay_from(io::BufReader::new(&mut file)).map_err(|source| LockError::Io {
            path: dir.join(EVENTS_FILE).to_path_buf(),
            source,
        })?;
    Ok(Opened {
        file,
        resumed,
        torn_tail,
        moved_aside,
    })
}

/// Moves the log aside as `OBSERVER-EVENTS-<timestamp>.jsonl` (never deleting data).
pub fn rotate(dir: &Path, now: &DateTime<Utc>) -> io::Result<PathBuf> {
    let stamp = now.format("%Y%m%dT%H%M%S%.3fZ").to_string();
    let mut target = dir.join(format!("OBSERVER-EVENTS-{stamp}.jsonl"));
    let mut n = 1;
    while target.exists() {
        target = dir.join(format!("OBSERVER-EVENTS-{stamp}-{n}.jsonl"));
        n += 1;
    }
    std::fs::rename(dir.join(EVENTS_FILE), &target)?;
    crate::outputs::sync_dir(dir)?;
    Ok(target)
}

impl EventLog {
    /// Wraps a locked log file; `torn_tail`: its last line has no newline (it is closed off).
    pub fn new(
        dir: &Path,
        mut file: File,
        torn_tail: bool,
        trace_id: String,
        context: ContextRef,
    ) -> io::Result<EventLog> {
        if torn_tail {
            // A line torn by a crash: end it so the next event starts on its own line.
            file.write_all(b"\n")?;
        }
        Ok(EventLog {
            file,
            torn: false,
            path: dir.join(EVENTS_FILE),
            trace_id,
            context,
            mirror: None,
        })
    }

    /// The folder holding the log was renamed to `dir` (the open file and its lock are kept).
    pub fn moved_to(&mut self, dir: &Path) {
        self.path = dir.join(EVENTS_FILE);
    }

    /// Keeps a copy of the log in `dir` (or none). Only the log in the state directory is ever
    /// read back; the copy is rewritten from it when it differs ([`EventLog::restore_mirror`]).
    pub fn set_mirror(&mut self, dir: Option<crate::outputs::OutDir>) {
        self.mirror = dir;
    }

    /// Makes the copy the same as the log (written atomically, never following what was planted
    /// at its name). `full`: compare the bytes (at start, at a re-attach), else only the sizes
    /// (at each tick).
    /// Returns what was wrong with it, if anything: `Ok(None)` when it was in line.
    pub fn restore_mirror(&mut self, full: bool) -> io::Result<Option<MirrorFix>> {
        let Some(dir) = self.mirror.clone() else {
            return Ok(None);
        };
        // Looked at through the folder's handle: the copy is the one in the folder written to.
        let ours = self.file.metadata()?.len();
        let what = match dir.entry(EVENTS_FILE)? {
            None => MirrorFix::Deleted,
            Some((Some(_), _)) => MirrorFix::Edited,
            Some((None, len)) if len > ours || (!full && len != ours) => MirrorFix::Edited,
            Some(_) if !full => return Ok(None),
            Some(_) => {
                let mut mine = Vec::new();
                io::Read::read_to_end(&mut File::open(&self.path)?, &mut mine)?;
                match dir.read_regular(EVENTS_FILE, MAX_MIRROR + 1) {
                    Some(b) if b == mine => return Ok(None),
                    Some(b) if mine.starts_with(&b) => MirrorFix::Behind,
                    _ => MirrorFix::Edited,
                }
            }
        };
        if ours > MAX_MIRROR {
            return Ok(None);
        }
        let mut mine = Vec::new();
        io::Read::read_to_end(&mut File::open(&self.path)?, &mut mine)?;
        let w = crate::outputs::write_atomic_as(
            &dir,
            EVENTS_FILE,
            &mine,
            crate::outputs::Durability::Volatile,
        )?;
        Ok(Some(match w.replaced {
            Some(f) => MirrorFix::Replaced(f),
            None => what,
        }))
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    pub fn trace_id(&self) -> &str {
        &self.trace_id
    }

    /// Appends one event as one line with a single write.
    pub fn append(&mut self, r: &Record, at: &DateTime<Utc>) -> io::Result<()> {
        let env = Envelope {
            trace_id: &self.trace_id,
            timestamp: timestamp(at),
            scope: r.event.scope(),
            signal_type: r.event.signal(),
            severity: r.event.level(),
            payload: &r.event,
            artifact_ids: &r.artifacts,
            context_ref: &self.context,
        };
        let mut line = if self.torn {
            String::from("\n")
        } else {
            String::new()
        };
        line.push_str(&serde_json::to_string(&env).map_err(io::Error::other)?);
        line.push('\n');
        // Where the log ended, so a line the disk cut short (full, quota) can be taken back: a torn
        // fragment left in the middle of the log would glue itself to the next line.
        let end = self.file.metadata()?.len();
        // O_APPEND: the kernel positions each write at the end, so a line is never interleaved.
        let written = self.file.write(line.as_bytes()).and_then(|n| {
            if n < line.len() {
                self.file.write_all(&line.as_bytes()[n..])?;
            }
            self.file.flush()
        });
        if let Err(e) = written {
            // Shrinking needs no space; should it fail too, the next line starts with a newline.
            if self.file.set_len(end).is_err() {
                self.torn = true;
            }
            return Err(e);
        }
        self.torn = false;
        self.append_mirror(line.trim_start_matches('\n'));
        Ok(())
    }

    /// Appends a line to the copy, best effort: O_APPEND, never following a symlink or blocking
    /// on a FIFO, only into a regular file that exists (a missing or foreign copy is put right
    /// from the log at the next tick).
    fn append_mirror(&mut self, line: &str) {
        let Some(dir) = &self.mirror else {
            return;
        };
        let Some(mut f) = dir.append_regular(EVENTS_FILE) else {
            return;
        };
        let Ok(end) = f.metadata().map(|m| m.len()) else {
            return;
        };
        if f.write_all(line.as_bytes()).is_err() {
            // As in the log itself: no torn line left in the copy.
            let _ = f.set_len(end);
        }
    }

    /// Forces the log to stable storage (at the end of a run).
    pub fn sync(&self) -> io::Result<()> {
        self.file.sync_data()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{CheckKey, RunReason, Status};
    use crate::state::lock::locked_by_other;
    use serde_json::{json, Value};

    fn k(s: &str) -> CheckKey {
        let (pass, check) = s.split_once(':').unwrap();
        CheckKey::new(pass, check)
    }

    fn ctx() -> ContextRef {
        ContextRef {
            app_ctx: "/b".into(),
            motor_ctx: "d10@1.0.0+abc".into(),
        }
    }

    fn rec(payload: Value) -> Record {
        Record {
            event: serde_json::from_value(payload).unwrap(),
            artifacts: vec!["p3a-gate-results.json@ff".into()],
        }
    }

    #[test]
    fn appends_envelopes_and_replays_them() {
        let dir = tempfile::tempdir().unwrap();
        let Opened {
            file,
            resumed,
            torn_tail,
            ..
        } = open_locked(dir.path()).unwrap();
        assert_eq!((resumed.events, torn_tail), (0, false));
        let mut log = EventLog::new(dir.path(), file, torn_tail, "t1".into(), ctx()).unwrap();
        let at = Utc::now();
        for p in [
            json!({"event": "start", "protocol": {"id": "d10", "sha256": "abc"}, "started": timestamp(&at)}),
            json!({"event": "pass_run", "pass": "2", "reason": "trigger", "at": timestamp(&at), "results": {"OBS-27": "FAIL", "OBS-10": "PASS"}}),
            json!({"event": "result_changed", "pass": "2", "check": "OBS-27", "from": null, "to": "FAIL", "note": "STOP raised"}),
            json!({"event": "stop_raised", "pass": "2", "check": "OBS-27", "evidence_sha256": "e0"}),
            json!({"event": "fix_attempt", "pass": "2", "check": "OBS-27", "attempt": 1, "evidence_sha256": "e1"}),
            json!({"event": "escalation", "pass": "2", "check": "OBS-27", "reason": "no progress", "text": "OBS-27 escalated"}),
            json!({"event": "tamper", "text": "OBSERVER-STOP.md deleted; restored"}),
        ] {
            log.append(&rec(p), &at).unwrap();
        }
        let text = std::fs::read_to_string(dir.path().join(EVENTS_FILE)).unwrap();
        let first: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
        for k in [
            "trace_id",
            "timestamp",
            "scope",
            "signal_type",
            "severity",
            "payload",
            "artifact_ids",
            "context_ref",
        ] {
            assert!(first.get(k).is_some(), "missing {k}");
        }
        assert_eq!(first["context_ref"]["motor_ctx"], "d10@1.0.0+abc");
        // A torn last line is ignored.
        let r = replay(&format!("{text}{{\"trace_id\": \"t1\", \"payl"));
        assert_eq!(r.skipped, 1);
        assert_eq!(r.skipped_lines, vec![8]);
        assert_eq!(r.protocol_sha256.as_deref(), Some("abc"));
        assert_eq!(r.ran["2"].reason, Some(RunReason::Trigger));
        assert_eq!(r.statuses[&k("2:OBS-27")], Status::Fail);
        assert_eq!(r.statuses[&k("2:OBS-10")], Status::Pass);
        assert_eq!(r.history.len(), 2);
        assert_eq!(r.attempts[&k("2:OBS-27")], (1, "e1".to_string()));
        assert_eq!(r.escalations, vec![(k("2:OBS-27"), "no progress".into())]);
        assert_eq!(r.incidents.len(), 2);
        assert!(!r.ended);
    }

    #[test]
    fn a_second_lock_is_refused_and_a_torn_line_is_closed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(EVENTS_FILE), "{\"torn\": ").unwrap();
        let Opened {
            file,
            resumed,
            torn_tail,
            moved_aside,
        } = open_locked(dir.path()).unwrap();
        assert_eq!((resumed.skipped, torn_tail), (1, true));
        assert!(moved_aside.is_none());
        assert!(locked_by_other(dir.path()));
        assert!(matches!(
            open_locked(dir.path()),
            Err(LockError::Busy { .. })
        ));
        let mut log = EventLog::new(dir.path(), file, torn_tail, "t".into(), ctx()).unwrap();
        log.append(
            &rec(json!({"event": "start", "protocol": {"sha256": "abc"}})),
            &Utc::now(),
        )
        .unwrap();
        let text = std::fs::read_to_string(dir.path().join(EVENTS_FILE)).unwrap();
        assert_eq!(text.lines().count(), 2);
        assert_eq!(replay(&text).skipped, 1);
        drop(log);
        assert!(!locked_by_other(dir.path()));
        let rotated = rotate(dir.path(), &Utc::now()).unwrap();
        assert!(rotated.exists());
        assert!(!dir.path().join(EVENTS_FILE).exists());
    }

    #[test]
    fn a_symlink_or_fifo_at_the_log_is_moved_aside_never_followed() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("b");
        std::fs::create_dir(&dir).unwrap();
        let outside = root.path().join("outside");
        std::fs::write(&outside, "precious\n").unwrap();
        std::os::unix::fs::symlink(&outside, dir.join(EVENTS_FILE)).unwrap();
        let o = open_locked(&dir).unwrap();
        let (found, to) = o.moved_aside.clone().unwrap();
        assert_eq!(found, Foreign::Symlink);
        assert!(std::fs::symlink_metadata(&to)
            .unwrap()
            .file_type()
            .is_symlink());
        assert_eq!(
            o.resumed,
            Resumed::default(),
            "the link's target is never read"
        );
        let mut log = EventLog::new(&dir, o.file, false, "t".into(), ctx()).unwrap();
        log.append(
            &rec(json!({"event": "start", "protocol": {"sha256": "abc"}})),
            &Utc::now(),
        )
        .unwrap();
        assert_eq!(std::fs::read_to_string(&outside).unwrap(), "precious\n");
        drop(log);

        let fifo = dir.join(EVENTS_FILE);
        std::fs::remove_file(&fifo).unwrap();
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
        )
        .expect("mkfifo");
        assert!(
            !locked_by_other(&dir),
            "a FIFO is never opened for the lock test"
        );
        let o = open_locked(&dir).unwrap();
        assert_eq!(o.moved_aside.map(|m| m.0), Some(Foreign::Fifo));
        assert!(std::fs::symlink_metadata(&fifo).unwrap().is_file());
        drop(o.file);

        // A socket cannot even be opened (ENXIO): it is moved aside all the same.
        std::fs::remove_file(&fifo).unwrap();
        let _listener = std::os::unix::net::UnixListener::bind(&fifo).unwrap();
        let o = open_locked(&dir).unwrap();
        assert_eq!(o.moved_aside.map(|m| m.0), Some(Foreign::Socket));
        assert!(std::fs::symlink_metadata(&fifo).unwrap().is_file());
    }
}
