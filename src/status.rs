//! `referee status BUILD_DIR`: what an orchestrator asks at a phase transition. Prints
//! `OBSERVER-STOP.md` and answers 1 when it exists (or when a live referee holds a STOP it could
//! not write), else prints `go` and answers 0; with `--require-live`, answers 3 unless a live
//! referee is watching this very directory.
//!
//! "Live" is strict, because a wrong "go" lets a pipeline past a failure nobody saw: the
//! heartbeat parses; its interval is sane (more than 0, at most a day); its last beat is neither
//! stale (3 × the interval) nor from the future; it was written for this directory (same device,
//! inode and birth time, same canonical path: not a copy, not a directory re-created or renamed
//! into place); its pid is running and is the process that wrote it (same start time, not a
//! recycled pid); and its state is `watching` (not `finished` or `faulted`).
//!
//! This module owns that decision and its messages. It only reads the referee's own files (never
//! opening anything but a small regular file) and `/proc/PID/stat`, and writes nothing.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};

use crate::daemon::attach::DirId;
use crate::daemon::heartbeat::{self, Heartbeat};
use crate::exit::ExitCode;
use crate::outputs::STOP_FILE;

/// The staleness threshold when the heartbeat does not say its interval.
pub const DEFAULT_STALE: Duration = Duration::from_secs(10);

/// How many intervals without a beat make a heartbeat stale.
pub const STALE_INTERVALS: u32 = 3;

/// The shortest heartbeat interval believed, and the shortest `watch --heartbeat` takes: a
/// shorter one would make a heartbeat stale between two reads of the clock.
pub const MIN_INTERVAL: Duration = Duration::from_millis(50);

/// The longest heartbeat interval believed: a beat a day proves nothing about the last hour.
pub const MAX_INTERVAL: Duration = Duration::from_secs(86_400);

/// How far in the future a beat may be stamped (the writer and this reader share a clock unless
/// the directory is on a network file system; beyond this it is skew or a forgery).
pub const FUTURE_TOLERANCE: Duration = Duration::from_secs(2);

#[derive(Debug, Clone)]
pub struct Config {
    pub build_dir: PathBuf,
    pub require_live: bool,
    /// Override of the staleness threshold (default: 3 × the heartbeat's interval, or 10 s).
    pub stale: Option<Duration>,
}

/// The answer: the exit code, what to print on stdout, and a note for the log (stderr).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Answer {
    pub code: ExitCode,
    pub stdout: String,
    pub note: Option<Note>,
}

/// A note beside the answer: why no live referee vouches for the directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Note {
    /// The answer stands (a STOP is on disk) but no referee is live.
    Warning(String),
    /// The answer is "no live referee" (exit 3).
    Error(String),
}

#[derive(Debug, thiserror::Error)]
pub enum StatusError {
    #[error("cannot read build directory `{path}`")]
    BuildDir {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{path}` is not a directory")]
    NotDir { path: String },
    #[error("cannot read `{path}`")]
    Stop {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// What the heartbeat says, judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// A live referee watches this directory and holds no STOP.
    Live,
    /// A live referee holds a STOP it could not write (its faults, for the message).
    StopWanted(Vec<String>),
    /// No live referee watches this directory: why.
    NotLive(String),
}

/// The process a heartbeat names, as this system sees it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Proc {
    /// Not running (or a zombie).
    Gone,
    /// Running; its start time in clock ticks after boot, when `/proc` shows it.
    Running(Option<u64>),
}

/// What the directory asked about is, now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Here {
    pub dir: DirId,
    pub canon: PathBuf,
    /// Whether this system shows process start times (`/proc`), so one must match.
    pub proc_times: bool,
}

/// Answers `referee status`.
pub fn status(cfg: &Config) -> Result<Answer, StatusError> {
    let dir = &cfg.build_dir;
    let here = match look(dir) {
        Ok(h) => h,
        // Asked to vouch for a directory that is not there: nobody watches it.
        Err(e) if cfg.require_live => {
            return Ok(Answer {
                code: ExitCode::NotLive,
                stdout: String::new(),
                note: Some(Note::Error(format!(
                    "no live referee: {}",
                    crate::error::chain(&e)
                ))),
            })
        }
        Err(e) => return Err(e),
    };
    let verdict = match heartbeat::read(dir) {
        Ok(hb) => judge(&hb, &here, Utc::now(), cfg.stale, &process),
        Err(e) => Verdict::NotLive(e.to_string()),
    };
    let not_live = match &verdict {
        Verdict::NotLive(why) => Some(why.clone()),
        _ => None,
    };
    if let Some(text) = read_stop(cfg)? {
        return Ok(Answer {
            code: ExitCode::Violation,
            stdout: text,
            note: not_live
                .filter(|_| cfg.require_live)
                .map(|why| Note::Warning(format!("no live referee: {why}"))),
        });
    }
    if let Verdict::StopWanted(faults) = &verdict {
        let mut text = format!(
            "# OBSERVER STOP (not on disk)\n\nThe live referee holds a STOP but could not write `{STOP_FILE}`.\n"
        );
        for f in faults {
            text.push_str(&format!("- fault: {f}\n"));
        }
        return Ok(Answer {
            code: ExitCode::Violation,
            stdout: text,
            note: None,
        });
    }
    if let Some(why) = not_live.filter(|_| cfg.require_live) {
        return Ok(Answer {
            code: ExitCode::NotLive,
            stdout: String::new(),
            note: Some(Note::Error(format!(
                "no live referee watches `{}`: {why}",
                dir.display()
            ))),
        });
    }
    Ok(Answer {
        code: ExitCode::Ok,
        stdout: "go\n".into(),
        note: None,
    })
}

/// Why a live referee watches `dir` now, judged exactly as `status --require-live` judges it;
/// `None` when none does (`verify --write` refuses a directory a live referee owns).
pub fn watched_by(dir: &Path) -> Option<String> {
    let here = look(dir).ok()?;
    let hb = heartbeat::read(dir).ok()?;
    match judge(&hb, &here, Utc::now(), None, &process) {
        Verdict::NotLive(_) => None,
        Verdict::Live | Verdict::StopWanted(_) => Some(format!(
            "`{}` is fresh and pid {} runs",
            heartbeat::HEARTBEAT_FILE,
            hb.pid
        )),
    }
}

/// The directory's identity and canonical path.
fn look(dir: &Path) -> Result<Here, StatusError> {
    let path = dir.display().to_string();
    let meta = std::fs::metadata(dir).map_err(|source| StatusError::BuildDir {
        path: path.clone(),
        source,
    })?;
    if !meta.is_dir() {
        return Err(StatusError::NotDir { path });
    }
    let canon =
        std::fs::canonicalize(dir).map_err(|source| StatusError::BuildDir { path, source })?;
    Ok(Here {
        dir: DirId::from_meta(&meta),
        canon,
        proc_times: heartbeat::has_proc(),
    })
}

/// The running process with this pid, as `/proc` shows it.
pub fn process(pid: u32) -> Proc {
    if heartbeat::pid_alive(pid) {
        Proc::Running(heartbeat::proc_start(pid))
    } else {
        Proc::Gone
    }
}

fn secs(d: chrono::TimeDelta) -> f64 {
    d.num_milliseconds() as f64 / 1000.0
}

/// Judges a heartbeat against the directory it was found in, the clock and the process table.
/// Pure apart from `procs`, so every way of not being live is tested without processes.
pub fn judge(
    hb: &Heartbeat,
    here: &Here,
    now: DateTime<Utc>,
    stale: Option<Duration>,
    procs: &dyn Fn(u32) -> Proc,
) -> Verdict {
    let no = |why: String| Verdict::NotLive(why);
    let pid = hb.pid;
    // Said first: a referee that finished has no process left to check.
    if hb.state == heartbeat::FINISHED {
        return no(format!(
            "the referee (pid {pid}) finished at {}",
            hb.last_beat
                .to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
        ));
    }
    let Some(interval) = hb.interval().filter(|i| {
        (MIN_INTERVAL..=MAX_INTERVAL).contains(i) && hb.interval_secs <= MAX_INTERVAL.as_secs_f64()
    }) else {
        return no(format!(
            "its heartbeat interval `{}` s is not believable (from 0.05 s to a day; pid {pid})",
            hb.interval_secs
        ));
    };
    let tolerance = chrono::TimeDelta::from_std(FUTURE_TOLERANCE).unwrap_or_default();
    if hb.last_beat > now + tolerance {
        return no(format!(
            "its last beat is stamped {:.1} s in the future (clock skew or a forged heartbeat; pid {pid})",
            secs(hb.last_beat - now)
        ));
    }
    if hb.started > hb.last_beat + tolerance {
        return no(format!(
            "it says the referee started after its last beat (a forged or damaged heartbeat; pid {pid})"
        ));
    }
    let threshold = stale.unwrap_or(interval * STALE_INTERVALS);
    let age = (now - hb.last_beat).to_std().unwrap_or(Duration::ZERO);
    if age > threshold {
        return no(format!(
            "the last heartbeat is {:.1} s old (stale after {:.1} s; pid {pid})",
            age.as_secs_f64(),
            threshold.as_secs_f64(),
        ));
    }
    match &hb.dir {
        None => {
            return no(format!(
                "its heartbeat records no directory identity (written by an older referee?; pid {pid})"
            ))
        }
        Some(id) if !id.same(&here.dir) => {
            return no(format!(
                "its heartbeat was written for another directory ({id}), not the one now at `{}` ({}): \
the directory was re-created, copied or replaced, and the referee is not watching it",
                here.canon.display(),
                here.dir
            ))
        }
        Some(_) => {}
    }
    // Compared as the heartbeat records it (a non-UTF-8 name is lossy on both sides alike).
    if hb.build_dir != here.canon.display().to_string() {
        return no(format!(
            "the referee watches `{}`, not `{}` (the directory was renamed or moved)",
            hb.build_dir,
            here.canon.display()
        ));
    }
    match procs(pid) {
        Proc::Gone => return no(format!("its process (pid {pid}) is not running")),
        Proc::Running(now_start) if here.proc_times => match (hb.proc_start, now_start) {
            (None, _) => {
                return no(format!(
                    "its heartbeat records no process start time, so pid {pid} cannot be told from a recycled pid"
                ))
            }
            (Some(_), None) => {
                return no(format!(
                    "pid {pid} runs but its start time cannot be read, so it cannot be told from a recycled pid"
                ))
            }
            (Some(want), Some(got)) if want != got => {
                return no(format!(
                    "pid {pid} runs but is another process (started at tick {got}, the referee at tick {want}): a recycled pid"
                ))
            }
            _ => {}
        },
        Proc::Running(_) => {}
    }
    if hb.stop_wanted {
        return Verdict::StopWanted(hb.faults.clone());
    }
    match hb.state.as_str() {
        heartbeat::WATCHING => Verdict::Live,
        heartbeat::FAULTED => no(format!(
            "the referee (pid {pid}) is faulted: {}",
            if hb.faults.is_empty() {
                "(no detail)".to_string()
            } else {
                hb.faults.join("; ")
            }
        )),
        other => no(format!("unknown heartbeat state `{other}` (pid {pid})")),
    }
}

/// The STOP file's text, if it exists (never opening a FIFO or device in its place).
fn read_stop(cfg: &Config) -> Result<Option<String>, StatusError> {
    let path = cfg.build_dir.join(STOP_FILE);
    let err = |source: std::io::Error| StatusError::Stop {
        path: path.display().to_string(),
        source,
    };
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(err(e)),
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
        Err(e) => return Err(err(e)),
    };
    let mut bytes = Vec::new();
    f.by_ref()
        .take(4 << 20)
        .read_to_end(&mut bytes)
        .map_err(err)?;
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

    fn cfg(dir: &Path, live: bool) -> Config {
        Config {
            build_dir: dir.to_path_buf(),
            require_live: live,
            stale: None,
        }
    }

    /// A heartbeat as this process's own referee would write it for `dir`.
    fn hb(dir: &Path, age: Duration, state: &str) -> Heartbeat {
        let last = Utc::now() - chrono::Duration::from_std(age).unwrap();
        Heartbeat {
            pid: std::process::id(),
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
            build_dir: std::fs::canonicalize(dir).unwrap().display().to_string(),
            dir: Some(DirId::of(dir).unwrap()),
            proc_start: heartbeat::proc_start(std::process::id()),
            trace_id: String::new(),
        }
    }

    fn beat(dir: &Path, age: Duration, state: &str) {
        write(dir, &hb(dir, age, state)).unwrap();
    }

    #[test]
    fn go_stop_and_liveness() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        assert_eq!(status(&cfg(d, false)).unwrap().code, ExitCode::Ok);
        assert_eq!(status(&cfg(d, false)).unwrap().stdout, "go\n");
        let missing = status(&cfg(d, true)).unwrap();
        assert_eq!(missing.code, ExitCode::NotLive);
        assert!(matches!(missing.note, Some(Note::Error(t)) if t.contains("missing")));
        beat(d, Duration::ZERO, heartbeat::WATCHING);
        assert_eq!(status(&cfg(d, true)).unwrap().code, ExitCode::Ok);
        beat(d, Duration::from_secs(60), heartbeat::WATCHING);
        let stale = status(&cfg(d, true)).unwrap();
        assert_eq!(stale.code, ExitCode::NotLive);
        assert!(matches!(stale.note, Some(Note::Error(t)) if t.contains("stale")));
        beat(d, Duration::ZERO, heartbeat::FINISHED);
        assert_eq!(status(&cfg(d, true)).unwrap().code, ExitCode::NotLive);
        std::fs::write(d.join(STOP_FILE), "# OBSERVER STOP\n").unwrap();
        let stop = status(&cfg(d, false)).unwrap();
        assert_eq!(stop.code, ExitCode::Violation);
        assert!(stop.stdout.starts_with("# OBSERVER STOP"));
    }

    #[test]
    fn a_missing_directory_has_no_live_referee() {
        let root = tempfile::tempdir().unwrap();
        let gone = root.path().join("gone");
        assert_eq!(status(&cfg(&gone, true)).unwrap().code, ExitCode::NotLive);
        assert!(status(&cfg(&gone, false)).is_err());
    }

    #[test]
    fn a_stop_the_disk_refused_still_stops() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let mut h = hb(d, Duration::ZERO, heartbeat::FAULTED);
        h.stop_wanted = true;
        h.faults = vec!["cannot write `OBSERVER-STOP.md`: no space left on device".into()];
        write(d, &h).unwrap();
        for live in [false, true] {
            let a = status(&cfg(d, live)).unwrap();
            assert_eq!(a.code, ExitCode::Violation);
            assert!(a.stdout.contains("no space left"), "{}", a.stdout);
        }
        h.stop_wanted = false;
        write(d, &h).unwrap();
        let a = status(&cfg(d, true)).unwrap();
        assert_eq!(a.code, ExitCode::NotLive);
        assert!(matches!(a.note, Some(Note::Error(t)) if t.contains("faulted")));
        assert_eq!(status(&cfg(d, false)).unwrap().code, ExitCode::Ok);
    }

    fn verdict(h: &Heartbeat, here: &Here, procs: &dyn Fn(u32) -> Proc) -> String {
        match judge(h, here, Utc::now(), None, procs) {
            Verdict::Live => "live".into(),
            Verdict::StopWanted(_) => "stop".into(),
            Verdict::NotLive(why) => why,
        }
    }

    #[test]
    fn only_a_sane_heartbeat_from_this_directory_and_this_process_is_live() {
        let root = tempfile::tempdir().unwrap();
        let d = root.path().join("b");
        std::fs::create_dir(&d).unwrap();
        let here = look(&d).unwrap();
        let good = hb(&d, Duration::ZERO, heartbeat::WATCHING);
        let start = good.proc_start;
        let running = move |_| Proc::Running(start);
        assert_eq!(verdict(&good, &here, &running), "live");

        let bad = |f: &dyn Fn(&mut Heartbeat)| {
            let mut h = good.clone();
            f(&mut h);
            verdict(&h, &here, &running)
        };
        let future = Utc::now() + chrono::Duration::seconds(3600);
        assert!(bad(&|h| h.last_beat = future).contains("future"));
        assert!(bad(&|h| h.started = future).contains("started after its last beat"));
        for absurd in [
            0.0,
            -2.0,
            f64::NAN,
            f64::INFINITY,
            86_401.0,
            1e300,
            5e-324,
            0.049,
        ] {
            assert!(
                bad(&|h| h.interval_secs = absurd).contains("not believable"),
                "interval {absurd}"
            );
        }
        // A day is the most believed: then a beat 2 days old is stale.
        assert!(bad(&|h| {
            h.interval_secs = 86_400.0;
            h.last_beat = Utc::now() - chrono::Duration::days(4);
            h.started = h.last_beat;
        })
        .contains("stale"));
        assert!(bad(&|h| h.dir = None).contains("no directory identity"));
        assert!(bad(&|h| {
            if let Some(id) = &mut h.dir {
                id.ino += 1;
            }
        })
        .contains("another directory"));
        assert!(bad(&|h| h.build_dir = "/elsewhere".into()).contains("renamed"));
        assert!(bad(&|h| h.state = heartbeat::FINISHED.into()).contains("finished"));
        assert!(bad(&|h| h.state = "detached".into()).contains("unknown"));
        assert!(bad(&|h| h.state = "sleeping".into()).contains("unknown"));
        assert!(bad(&|h| {
            h.state = heartbeat::FAULTED.into();
            h.faults = vec!["cannot write `OBSERVER-PASS-2.md`".into()];
        })
        .contains("OBSERVER-PASS-2.md"));
        assert_eq!(
            bad(&|h| {
                h.state = heartbeat::FAULTED.into();
                h.stop_wanted = true;
            }),
            "stop"
        );

        // The process: gone, recycled (alive, another start time), or unverifiable.
        assert!(verdict(&good, &here, &|_| Proc::Gone).contains("not running"));
        if here.proc_times {
            let other = |_| Proc::Running(Some(start.unwrap_or(0) + 1));
            assert!(verdict(&good, &here, &other).contains("recycled pid"));
            assert!(verdict(&good, &here, &|_| Proc::Running(None)).contains("cannot be told"));
            assert!(bad(&|h| h.proc_start = None).contains("no process start time"));
            // The real process table: pid 1 is alive but is not this process.
            let mut init = good.clone();
            init.pid = 1;
            assert!(verdict(&init, &here, &process).contains("recycled pid"));
        }
        assert_eq!(verdict(&good, &here, &process), "live");

        // The same heartbeat found in a copy of the directory, or after it was re-created.
        let copy = root.path().join("copy");
        std::fs::create_dir(&copy).unwrap();
        let there = look(&copy).unwrap();
        assert!(verdict(&good, &there, &running).contains("another directory"));
        std::fs::remove_dir(&d).unwrap();
        std::fs::create_dir(&d).unwrap();
        let recreated = look(&d).unwrap();
        if recreated.dir.born_ns.is_some() || recreated.dir.ino != here.dir.ino {
            assert!(verdict(&good, &recreated, &running).contains("another directory"));
        }
    }
}
