//! `OBSERVER-HEARTBEAT.json`: proof of life, so an orchestrator can tell a dead referee from a
//! quiet one, a blind one (its directory replaced under it) or a faulted one (it cannot write its
//! files). This module owns the file's format, writing it (atomically, or in place when the disk
//! has no room for a temp file) and reading it back, whether a process id is alive, and which
//! process it is (its start time). It must not decide when to beat (the daemon's timer does) or
//! what "live" means ([`super::live`] does).

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::dir_id::DirId;
use crate::atomic::{write_atomic_as, Durability};

/// The heartbeat's file name in the build directory.
pub const HEARTBEAT_FILE: &str = "OBSERVER-HEARTBEAT.json";

/// The daemon is watching.
pub const WATCHING: &str = "watching";
/// The daemon wrote its final report and exited (or is exiting).
pub const FINISHED: &str = "finished";
/// The daemon runs but cannot do its whole job: some of its own files cannot be written, or the
/// build directory cannot be scanned (see `faults`).
pub const FAULTED: &str = "faulted";

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
    /// `watching`, `faulted` or `finished`. A detached daemon (its directory's path names
    /// nothing it can watch) writes no heartbeat: there is nowhere that is its directory.
    pub state: String,
    /// Whether `OBSERVER-STOP.md` stands (as the daemon last wrote it).
    pub stop: bool,
    /// Whether a STOP should stand (a BLOCKING failure, or a fault under `--on-fault stop`),
    /// written or not: a STOP the disk refused is still a STOP.
    #[serde(default)]
    pub stop_wanted: bool,
    /// The referee's own faults standing, one message each.
    #[serde(default)]
    pub faults: Vec<String>,
    /// The canonical path of the directory the daemon watches.
    pub build_dir: String,
    /// The identity of that directory when the daemon attached to it: a heartbeat found in a
    /// directory with another identity (a copy, or a directory re-created at its path) is not
    /// this daemon's word about it.
    #[serde(default)]
    pub dir: Option<DirId>,
    /// The writer's start time in clock ticks after boot (`/proc/PID/stat` field 22): a pid that
    /// is alive but started at another time is a recycled pid, not the referee.
    #[serde(default)]
    pub proc_start: Option<u64>,
    #[serde(default)]
    pub trace_id: String,
}

impl Heartbeat {
    /// The interval, when it is a positive finite number of seconds that fits a `Duration`
    /// (a forged `1e300` must not panic the reader).
    pub fn interval(&self) -> Option<Duration> {
        // NaN, zero and negatives all fail here; infinity and 1e300 fail the conversion.
        if self.interval_secs.is_nan() || self.interval_secs <= 0.0 {
            return None;
        }
        Duration::try_from_secs_f64(self.interval_secs).ok()
    }
}

/// How a heartbeat reached the disk.
#[derive(Debug)]
pub enum Written {
    /// Temp file and rename, as every file of the referee's; says what someone else had put at
    /// its name (tamper).
    Atomic(crate::atomic::Written),
    /// The atomic write failed (its cause here), typically a full disk with no room for the temp
    /// file; the existing heartbeat was overwritten in place, which needs no new block. A reader
    /// catching it half-written cannot parse it, and an unparsable heartbeat is not live.
    InPlace(std::io::Error),
}

/// The longest heartbeat written in place: one block, so overwriting needs no allocation.
const IN_PLACE_MAX: usize = 4096;

/// Writes the heartbeat: atomically, or failing that in place over the previous one.
pub fn write(
    dir: &(impl crate::atomic::AsOutDir + ?Sized),
    hb: &Heartbeat,
) -> std::io::Result<Written> {
    let mut text = serde_json::to_string_pretty(hb).map_err(std::io::Error::other)?;
    text.push('\n');
    // Not fsynced: a heartbeat means nothing after a power cut (its process is gone, and an old,
    // empty or unparsable heartbeat is not live), and two fsyncs per beat would put the disk's
    // latency in the loop after every STOP change and every tick.
    let cause = match write_atomic_as(dir, HEARTBEAT_FILE, &text, Durability::Volatile) {
        Ok(w) => return Ok(Written::Atomic(w)),
        Err(e) => e,
    };
    if text.len() > IN_PLACE_MAX {
        return Err(cause);
    }
    match overwrite(&dir.out_dir().join(HEARTBEAT_FILE), text.as_bytes()) {
        Ok(()) => Ok(Written::InPlace(cause)),
        // The atomic write's error is the one that says what is wrong.
        Err(_) => Err(cause),
    }
}

/// Overwrites an existing regular file from its start (never creating it, never following a
/// symlink). Shorter text is padded with spaces to the old length rather than cut, so a reader
/// never meets the old text's tail after the new JSON (trailing whitespace parses).
fn overwrite(path: &Path, text: &[u8]) -> std::io::Result<()> {
    let mut f = crate::safefs::open(path, crate::safefs::Access::WRITE)?;
    let meta = f.metadata()?;
    if !meta.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let old = usize::try_from(meta.len()).unwrap_or(usize::MAX);
    let mut bytes = text.to_vec();
    if bytes.len() < old && old <= IN_PLACE_MAX {
        bytes.resize(old, b' ');
    }
    f.write_all(&bytes)?;
    f.set_len(bytes.len() as u64)?;
    f.flush()
}

/// The start time of a process in clock ticks after boot (`/proc/PID/stat` field 22), if this
/// system has `/proc` and the process exists.
pub fn proc_start(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_start(&stat)
}

/// Field 22 of a `/proc/PID/stat` line. The command name (field 2) is in parentheses and may hold
/// spaces and parentheses itself, so fields are counted after its last `)`.
fn parse_start(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    // After the name: field 3 (state) is the first; 22 is the 20th.
    rest.split_whitespace().nth(19)?.parse().ok()
}

/// Whether the process is stopped (`T`/`t` in `/proc/PID/stat`: SIGSTOP, a tracer).
pub fn proc_stopped(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|s| {
            let (_, rest) = s.rsplit_once(')')?;
            rest.split_whitespace()
                .next()
                .map(|st| st == "T" || st == "t")
        })
        .unwrap_or(false)
}

/// Whether this system has `/proc` process entries (so a start time can be checked at all).
pub fn has_proc() -> bool {
    proc_start(std::process::id()).is_some()
}

/// Why a heartbeat cannot be read; each variant keeps the file's path, and an io or JSON
/// error its cause. Every one means "not live" to `status`.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    #[error("`{HEARTBEAT_FILE}` is missing (is `referee watch` running on this directory?)")]
    Missing { path: PathBuf },
    #[error("cannot read `{HEARTBEAT_FILE}`")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// A symlink, FIFO, directory or oversized file at the name: never followed or opened.
    #[error("`{HEARTBEAT_FILE}` cannot be parsed: not a small regular file")]
    NotRegular { path: PathBuf },
    #[error("`{HEARTBEAT_FILE}` cannot be parsed: not UTF-8")]
    NotUtf8 { path: PathBuf },
    #[error("`{HEARTBEAT_FILE}` cannot be parsed")]
    Json {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// Reads the heartbeat of a build directory.
///
/// Only a small regular file counts: a symlink planted at the name is not followed (it could
/// point at another directory's live heartbeat), and a FIFO is never opened.
pub fn read(dir: &Path) -> Result<Heartbeat, ReadError> {
    use std::io::Read;
    let path = dir.join(HEARTBEAT_FILE);
    let io = |source: std::io::Error| match source.kind() {
        std::io::ErrorKind::NotFound => ReadError::Missing { path: path.clone() },
        _ => ReadError::Io {
            path: path.clone(),
            source,
        },
    };
    let meta = std::fs::symlink_metadata(&path).map_err(io)?;
    if !meta.is_file() || meta.len() > MAX_READ {
        return Err(ReadError::NotRegular { path });
    }
    let f = crate::safefs::open(&path, crate::safefs::Access::READ).map_err(io)?;
    let mut bytes = Vec::new();
    f.take(MAX_READ).read_to_end(&mut bytes).map_err(io)?;
    let Ok(text) = String::from_utf8(bytes) else {
        return Err(ReadError::NotUtf8 { path });
    };
    serde_json::from_str(&text).map_err(|source| ReadError::Json { path, source })
}

/// The largest heartbeat [`read`] takes; the daemon writes a few hundred bytes.
const MAX_READ: u64 = 1 << 20;

/// Whether a process with this id exists and has not exited (a zombie counts as exited).
pub fn pid_alive(pid: u32) -> bool {
    let Ok(raw) = libc::pid_t::try_from(pid) else {
        return false;
    };
    if raw <= 0 {
        return false;
    }
    // Signal 0 only checks for existence and permission.
    let exists = match rustix::process::Pid::from_raw(raw) {
        Some(pid) => matches!(
            rustix::process::test_kill_process(pid),
            Ok(()) | Err(rustix::io::Errno::PERM)
        ),
        None => false,
    };
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

/// A heartbeat as this process's own referee would write it for `dir`, its last beat `age` ago
/// (the one builder of the tests that judge heartbeats: `state::live`'s and `status`'s).
#[cfg(test)]
pub(crate) fn of_this_process(dir: &Path, age: Duration, state: &str) -> Heartbeat {
    let last = Utc::now() - chrono::Duration::from_std(age).expect("a test's age");
    let pid = std::process::id();
    Heartbeat {
        pid,
        started: last,
        last_beat: last,
        interval_secs: 2.0,
        protocol: ProtocolRef {
            id: "d10".into(),
            sha256: "x".into(),
        },
        state: state.into(),
        stop: false,
        stop_wanted: false,
        faults: Vec::new(),
        build_dir: std::fs::canonicalize(dir)
            .expect("the test's directory")
            .display()
            .to_string(),
        dir: Some(DirId::of(dir).expect("the test's directory")),
        proc_start: proc_start(pid),
        trace_id: String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_reports_missing_or_invalid() {
        let dir = tempfile::tempdir().unwrap();
        assert!(matches!(read(dir.path()), Err(ReadError::Missing { .. })));
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
            stop_wanted: true,
            faults: vec!["cannot write `OBSERVER-STOP.md`".into()],
            build_dir: "/b".into(),
            dir: Some(DirId::of(dir.path()).unwrap()),
            proc_start: proc_start(std::process::id()),
            trace_id: "t".into(),
        };
        assert!(matches!(
            write(dir.path(), &hb).unwrap(),
            Written::Atomic(_)
        ));
        assert_eq!(read(dir.path()).unwrap(), hb);
        std::fs::write(dir.path().join(HEARTBEAT_FILE), "{").unwrap();
        let e = read(dir.path()).unwrap_err();
        assert!(
            matches!(&e, ReadError::Json { path, .. } if path == &dir.path().join(HEARTBEAT_FILE)),
            "{e:?}"
        );
        assert_eq!(
            crate::error::chain(&e),
            "`OBSERVER-HEARTBEAT.json` cannot be parsed: eof while parsing an object at line 1 column 1"
        );
        std::fs::write(dir.path().join(HEARTBEAT_FILE), b"\xff").unwrap();
        assert!(matches!(read(dir.path()), Err(ReadError::NotUtf8 { .. })));
        // A heartbeat of an older referee (no identity, no start time) still parses.
        std::fs::write(
            dir.path().join(HEARTBEAT_FILE),
            r#"{"pid":1,"started":"2026-01-01T00:00:00Z","last_beat":"2026-01-01T00:00:00Z",
               "interval_secs":2.0,"protocol":{"id":"d10","sha256":"x"},"state":"watching",
               "stop":false,"build_dir":"/b"}"#,
        )
        .unwrap();
        let old = read(dir.path()).unwrap();
        assert_eq!(
            (old.dir, old.proc_start, old.stop_wanted),
            (None, None, false)
        );
    }

    #[test]
    fn start_time_is_field_22_after_the_last_parenthesis() {
        let line = "4242 (a (b) c) S 1 4242 4242 0 -1 4194560 100 0 0 0 1 2 0 0 20 0 1 0 987654 1000 10 18446744073709551615";
        assert_eq!(parse_start(line), Some(987654));
        assert_eq!(parse_start("4242 (x) S 1"), None);
        assert_eq!(parse_start("garbage"), None);
        if has_proc() {
            let mine = proc_start(std::process::id()).unwrap();
            assert_eq!(proc_start(std::process::id()), Some(mine));
            assert_eq!(proc_start(u32::MAX), None);
        }
    }

    #[test]
    fn a_heartbeat_is_written_over_in_place() {
        // The atomic write fails when the temp file cannot be created (here: a directory squats
        // on its name); the existing heartbeat is overwritten instead.
        let dir = tempfile::tempdir().unwrap();
        let mut hb = Heartbeat {
            pid: 1,
            started: Utc::now(),
            last_beat: Utc::now(),
            interval_secs: 2.0,
            protocol: ProtocolRef {
                id: "d10".into(),
                sha256: "abc".into(),
            },
            state: WATCHING.into(),
            stop: false,
            stop_wanted: false,
            faults: Vec::new(),
            build_dir: "/b".into(),
            dir: None,
            proc_start: None,
            trace_id: "t".into(),
        };
        // A full disk is exercised for real in tests/it/liveness.rs (tmpfs); here the fallback
        // itself: nothing to overwrite is an error, never a create.
        let path = dir.path().join(HEARTBEAT_FILE);
        let text = |hb: &Heartbeat| serde_json::to_string_pretty(hb).unwrap() + "\n";
        assert!(overwrite(&path, text(&hb).as_bytes()).is_err());
        assert!(!path.exists());
        std::fs::write(&path, "x".repeat(3000)).unwrap();
        hb.state = FAULTED.into();
        overwrite(&path, text(&hb).as_bytes()).unwrap();
        assert_eq!(read(dir.path()).unwrap(), hb, "cut to its new length");
    }

    #[test]
    fn a_symlink_or_fifo_at_the_heartbeat_is_not_read() {
        let elsewhere = tempfile::tempdir().unwrap();
        std::fs::write(elsewhere.path().join(HEARTBEAT_FILE), "{}").unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(HEARTBEAT_FILE);
        std::os::unix::fs::symlink(elsewhere.path().join(HEARTBEAT_FILE), &path).unwrap();
        assert!(matches!(
            read(dir.path()),
            Err(ReadError::NotRegular { .. })
        ));
        std::fs::remove_file(&path).unwrap();
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &path,
            rustix::fs::Mode::from_raw_mode(0o644),
        )
        .expect("mkfifo");
        // Never opened: a FIFO with no writer would block the reader forever.
        assert!(matches!(
            read(dir.path()),
            Err(ReadError::NotRegular { .. })
        ));
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
