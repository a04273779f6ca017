//! `OBSERVER-HEARTBEAT.json`: proof of life, so an orchestrator can tell a dead referee from a
//! quiet one. This module owns the file's format, writing it (atomically) and reading it back,
//! and whether a process id is alive. It must not decide when to beat (the daemon's timer does)
//! or what "stale" means (`referee status` does).

use std::path::Path;
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use crate::outputs::write_atomic;

/// The heartbeat's file name in the build directory.
pub const HEARTBEAT_FILE: &str = "OBSERVER-HEARTBEAT.json";

/// The daemon is watching.
pub const WATCHING: &str = "watching";
/// The daemon wrote its final report and exited (or is exiting).
pub const FINISHED: &str = "finished";

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProtocolRef {
    pub id: String,
    pub sha256: String,
}

/// The heartbeat file's contents.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Heartbeat {
    pub pid: u32,
    pub started: DateTime<Utc>,
    pub last_beat: DateTime<Utc>,
    /// Seconds between beats (so a reader can judge staleness).
    pub interval_secs: f64,
    pub protocol: ProtocolRef,
    /// `watching` or `finished`.
    pub state: String,
    /// Whether `OBSERVER-STOP.md` stands.
    pub stop: bool,
    pub build_dir: String,
    #[serde(default)]
    pub trace_id: String,
}

impl Heartbeat {
    /// The beat interval; an absurdly long one (any `f64` up to 1.8e308 parses) saturates
    /// rather than panicking.
    pub fn interval(&self) -> Option<Duration> {
        (self.interval_secs.is_finite() && self.interval_secs > 0.0)
            .then(|| Duration::try_from_secs_f64(self.interval_secs).unwrap_or(Duration::MAX))
    }
}

/// Writes the heartbeat atomically.
pub fn write(dir: &Path, hb: &Heartbeat) -> std::io::Result<()> {
    let mut text = serde_json::to_string_pretty(hb).map_err(std::io::Error::other)?;
    text.push('\n');
    write_atomic(dir, HEARTBEAT_FILE, &text)
}

#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("`{HEARTBEAT_FILE}` is missing (is `referee watch` running on this directory?)")]
    Missing,
    #[error("cannot read `{HEARTBEAT_FILE}`: {0}")]
    Io(String),
    #[error("`{HEARTBEAT_FILE}` cannot be parsed: {0}")]
    Invalid(String),
}

/// Reads the heartbeat of a build directory.
pub fn read(dir: &Path) -> Result<Heartbeat, ReadError> {
    let path = dir.join(HEARTBEAT_FILE);
    let meta = match std::fs::metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Err(ReadError::Missing),
        Err(e) => return Err(ReadError::Io(e.to_string().to_lowercase())),
    };
    if !meta.is_file() || meta.len() > 1 << 20 {
        return Err(ReadError::Invalid("not a small regular file".into()));
    }
    let text = std::fs::read_to_string(&path).map_err(|e| match e.kind() {
        std::io::ErrorKind::NotFound => ReadError::Missing,
        std::io::ErrorKind::InvalidData => ReadError::Invalid("not UTF-8".into()),
        _ => ReadError::Io(e.to_string().to_lowercase()),
    })?;
    serde_json::from_str(&text).map_err(|e| ReadError::Invalid(e.to_string()))
}

/// Whether a process with this id exists and has not exited (a zombie counts as exited).
pub fn pid_alive(pid: u32) -> bool {
    let Ok(raw) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if raw <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for existence and permission.
    let rc = unsafe { libc::kill(raw, 0) };
    let exists = rc == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
    if !exists {
        return false;
    }
    // An exited but unreaped child still answers kill(0); its state in /proc is `Z`.
    match std::fs::read_to_string(format!("/proc/{raw}/stat")) {
        Ok(stat) => stat
            .rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_none_or(|state| state != "Z" && state != "X"),
        Err(_) => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_reports_missing_or_invalid() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(read(dir.path()), Err(ReadError::Missing)));
        let now = Utc::now();
        let hb = Heartbeat {
            pid: std::process::id(),
            started: now,
            last_beat: now,
            interval_secs: 2.0,
            protocol: ProtocolRef {
                id: "d10".into(),
                sha256: "abc".into(),
            },
            state: WATCHING.into(),
            stop: false,
            build_dir: "/b".into(),
            trace_id: "t".into(),
        };
        write(dir.path(), &hb).unwrap();
        assert_eq!(read(dir.path()).unwrap(), hb);
        std::fs::write(dir.path().join(HEARTBEAT_FILE), "{").unwrap();
        assert!(matches!(read(dir.path()), Err(ReadError::Invalid(_))));
    }

    #[test]
    fn pids() {
        assert!(pid_alive(std::process::id()));
        assert!(!pid_alive(0));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        // Exited but not reaped yet, or reaped: either way not alive.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while pid_alive(pid) {
            assert!(std::time::Instant::now() < deadline, "`true` never exited");
            std::thread::sleep(Duration::from_millis(10));
        }
        child.wait().unwrap();
        assert!(!pid_alive(pid));
    }
}
