//! `referee status BUILD_DIR`: what an orchestrator asks at a phase transition. Prints
//! `OBSERVER-STOP.md` and answers 1 when it exists, else prints `go` and answers 0; with
//! `--require-live`, answers 3 when no live referee watches the directory (heartbeat missing,
//! unparsable, stale, finished, or its process gone).
//!
//! This module owns that decision and its messages. It only reads the referee's own files (never
//! opening anything but a small regular file) and writes nothing.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;
use std::time::Duration;

use chrono::Utc;

use crate::daemon::heartbeat::{self, Heartbeat};
use crate::exit::ExitCode;
use crate::outputs::STOP_FILE;

/// The staleness threshold when the heartbeat does not say its interval.
pub const DEFAULT_STALE: Duration = Duration::from_secs(10);

/// How many intervals without a beat make a heartbeat stale.
pub const STALE_INTERVALS: u32 = 3;

#[derive(Debug, Clone)]
pub struct Config {
    pub build_dir: PathBuf,
    pub require_live: bool,
    /// Override of the staleness threshold (default: 3 × the heartbeat's interval, or 10 s).
    pub stale: Option<Duration>,
}

/// The answer: the exit code, what to print on stdout, and a note for stderr.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub code: ExitCode,
    pub stdout: String,
    pub stderr: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error("cannot read build directory `{path}`: {message}")]
    BuildDir { path: String, message: String },
    #[error("cannot read `{path}`: {message}")]
    Stop { path: String, message: String },
}

/// Answers `referee status`.
pub fn status(cfg: &Config) -> Result<Answer, StatusError> {
    let dir = &cfg.build_dir;
    match std::fs::metadata(dir) {
        Ok(m) if m.is_dir() => {}
        Ok(_) => {
            return Err(StatusError::BuildDir {
                path: dir.display().to_string(),
                message: "not a directory".into(),
            })
        }
        Err(e) => {
            return Err(StatusError::BuildDir {
                path: dir.display().to_string(),
                message: e.to_string().to_lowercase(),
            })
        }
    }
    let live = if cfg.require_live {
        liveness(cfg).err()
    } else {
        None
    };
    if let Some(text) = read_stop(cfg)? {
        return Ok(Answer {
            code: ExitCode::Violation,
            stdout: text,
            stderr: live.map(|why| format!("referee: warning: no live referee: {why}")),
        });
    }
    if let Some(why) = live {
        return Ok(Answer {
            code: ExitCode::NotLive,
            stdout: String::new(),
            stderr: Some(format!(
                "referee: no live referee watches `{}`: {why}",
                dir.display()
            )),
        });
    }
    Ok(Answer {
        code: ExitCode::Ok,
        stdout: "go\n".into(),
        stderr: None,
    })
}

/// The live referee's heartbeat, or why there is none.
pub fn liveness(cfg: &Config) -> Result<Heartbeat, String> {
    let hb = heartbeat::read(&cfg.build_dir).map_err(|e| e.to_string())?;
    if hb.state == heartbeat::FINISHED {
        return Err(format!(
            "the referee (pid {}) finished at {}",
            hb.pid,
            hb.last_beat
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ));
    }
    let threshold = cfg.stale.unwrap_or_else(|| {
        hb.interval()
            .map_or(DEFAULT_STALE, |i| i.saturating_mul(STALE_INTERVALS))
    });
    let age = (Utc::now() - hb.last_beat)
        .to_std()
        .unwrap_or(Duration::ZERO);
    if age > threshold {
        return Err(format!(
            "the last heartbeat is {:.1} s old (stale after {:.1} s; pid {})",
            age.as_secs_f64(),
            threshold.as_secs_f64(),
            hb.pid
        ));
    }
    if !heartbeat::pid_alive(hb.pid) {
        return Err(format!("its process (pid {}) is not running", hb.pid));
    }
    Ok(hb)
}

/// The STOP file's text, if it exists (never opening a FIFO or device in its place).
fn read_stop(cfg: &Config) -> Result<Option<String>, StatusError> {
    let path = cfg.build_dir.join(STOP_FILE);
    let err = |message: String| StatusError::Stop {
        path: path.display().to_string(),
        message,
    };
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(err(e.to_string().to_lowercase())),
    };
    if !meta.is_file() {
        return Ok(Some(format!(
            "{STOP_FILE} exists but is not a regular file; treat it as a STOP\n"
        )));
    }
    let mut f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
        .open(&path)
    {
        Ok(f) => f,
        // Removed between the check and the open: the referee resolved it.
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(err(e.to_string().to_lowercase())),
    };
    let mut bytes = Vec::new();
    f.by_ref()
        .take(4 << 20)
        .read_to_end(&mut bytes)
        .map_err(|e| err(e.to_string().to_lowercase()))?;
    let mut text = String::from_utf8_lossy(&bytes).into_owned();
    if !text.ends_with('\n') {
        text.push('\n');
    }
    Ok(Some(text))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::daemon::heartbeat::{write, ProtocolRef};

    fn cfg(dir: &std::path::Path, live: bool) -> Config {
        Config {
            build_dir: dir.to_path_buf(),
            require_live: live,
            stale: None,
        }
    }

    fn beat(dir: &std::path::Path, pid: u32, age: Duration, state: &str) {
        let now = Utc::now();
        let last = now - chrono::Duration::from_std(age).unwrap();
        write(
            dir,
            &Heartbeat {
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
                build_dir: dir.display().to_string(),
                trace_id: String::new(),
            },
        )
        .unwrap();
    }

    #[test]
    fn go_stop_and_liveness() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert_eq!(status(&cfg(d, false)).unwrap().code, ExitCode::Ok);
        assert_eq!(status(&cfg(d, false)).unwrap().stdout, "go\n");
        let missing = status(&cfg(d, true)).unwrap();
        assert_eq!(missing.code, ExitCode::NotLive);
        assert!(missing.stderr.unwrap().contains("missing"));
        let me = std::process::id();
        beat(d, me, Duration::ZERO, heartbeat::WATCHING);
        assert_eq!(status(&cfg(d, true)).unwrap().code, ExitCode::Ok);
        beat(d, me, Duration::from_secs(60), heartbeat::WATCHING);
        let stale = status(&cfg(d, true)).unwrap();
        assert_eq!(stale.code, ExitCode::NotLive);
        assert!(stale.stderr.unwrap().contains("stale"));
        beat(d, me, Duration::ZERO, heartbeat::FINISHED);
        assert_eq!(status(&cfg(d, true)).unwrap().code, ExitCode::NotLive);
        std::fs::write(d.join(STOP_FILE), "# OBSERVER STOP\n").unwrap();
        let stop = status(&cfg(d, false)).unwrap();
        assert_eq!(stop.code, ExitCode::Violation);
        assert!(stop.stdout.starts_with("# OBSERVER STOP"));
    }

    /// Found by fuzzing: an interval too long for a `Duration`, or one that overflows when
    /// multiplied, panicked; it now means "never stale".
    #[test]
    fn an_absurd_interval_is_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        for interval in ["1e300", "6.2e18"] {
            let text = format!(
                r#"{{"pid": {}, "started": "{now}", "last_beat": "2000-01-01T00:00:00Z",
                "interval_secs": {interval}, "protocol": {{"id": "d10", "sha256": "x"}},
                "state": "watching", "stop": false, "build_dir": "/b"}}"#,
                std::process::id(),
                now = Utc::now().to_rfc3339()
            );
            std::fs::write(d.join(heartbeat::HEARTBEAT_FILE), text).unwrap();
            assert_eq!(
                status(&cfg(d, true)).unwrap().code,
                ExitCode::Ok,
                "{interval}"
            );
        }
    }
}
