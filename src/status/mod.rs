//! `referee status BUILD_DIR`: what an orchestrator asks at a phase transition. Prints
//! `OBSERVER-STOP.md` and answers 1 when it exists (or when a live referee holds a STOP it could
//! not write), else prints `go` and answers 0; with `--require-live`, answers 3 unless a live
//! referee is watching this very directory. With `--task ID` (a task protocol), it answers for
//! that task's latest attempt: 0 judged good, 1 judged bad or a STOP stands, 4 not judged yet.
//!
//! Every answer comes from the referee's state directory (SPEC §8, [`crate::state`]), found as
//! `watch` finds it: never from the copies in the watched directory, which the pipeline or worker
//! can delete, replace or forge. No state directory means no referee ever ran there.
//!
//! "Live" is strict, because a wrong "go" lets a pipeline past a failure nobody saw: the
//! heartbeat parses; its interval is sane (more than 0, at most a day); its last beat is neither
//! stale (3 × the interval) nor from the future; it was written for this directory (same device,
//! inode and birth time, same canonical path: not a copy, not a directory re-created or renamed
//! into place); its pid is running and is the process that wrote it (same start time, not a
//! recycled pid), and not stopped (`SIGSTOP`); its state is `watching` (not `finished` or
//! `faulted`); and the state directory's event log is locked (the live daemon holds it).
//!
//! This module owns that decision and its messages. It only reads the referee's own files (never
//! opening anything but a small regular file) and `/proc/PID/stat`, and writes nothing.

mod pinned;

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
    /// `--state-dir` (else the default for the directory, as `watch` finds it).
    pub state_dir: Option<PathBuf>,
    pub require_live: bool,
    /// Override of the staleness threshold (default: 3 × the heartbeat's interval, or 10 s).
    pub stale: Option<Duration>,
    /// `--task ID`: answer for that task's latest attempt.
    pub task: Option<TaskQuery>,
    /// `--expect-protocol SHA`: refuse (1) unless the live referee runs this protocol.
    pub expect_protocol: Option<String>,
    /// `--expect-waivers SHA|none`: refuse (1) unless it runs with this waiver file (or none).
    pub expect_waivers: Option<String>,
    /// `--show-run`: print how the referee was started before the answer.
    pub show_run: bool,
    /// `--sync`: first wait (up to this long) until the referee has judged every file written
    /// before the call.
    pub sync: Option<Duration>,
}

/// `status --task ID [--wait DURATION]`.
#[derive(Debug, Clone)]
pub struct TaskQuery {
    pub id: String,
    /// How long to wait for a verdict to appear.
    pub wait: Duration,
    /// The verdicts that let an attempt through (the protocol's final verdicts and its cleanup
    /// grade's); anything else judged is a 1.
    pub go: Vec<String>,
}

/// The good verdicts of a task protocol: its guards' final verdicts and every cleanup grade's
/// (what `status --task` answers 0 for).
pub fn go_verdicts(p: &crate::protocol::Protocol) -> Vec<String> {
    match &p.subject {
        crate::protocol::Subject::Workspace(rules) => rules.go_verdicts(),
        crate::protocol::Subject::Build(_) => Vec::new(),
    }
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
    /// Worth saying, not worth a warning (`-q` silences it): e.g. no referee ever ran here.
    Info(String),
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
    #[error(transparent)]
    State(#[from] crate::state::StateError),
    #[error("{0}")]
    Sync(String),
    #[error("--sync: cannot put its token `{path}` in the watched directory (the orchestrator must be able to write there)")]
    Token {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// What the heartbeat says, judged.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Liveness {
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
    /// Stopped (`SIGSTOP`, a debugger): it exists but referees nothing.
    Stopped,
}

/// What the directory asked about is, now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Here {
    pub dir: DirId,
    pub canon: PathBuf,
    /// Whether this system shows process start times (`/proc`), so one must match.
    pub proc_times: bool,
}

/// Answers `referee status` (with `--task --wait`, polling until a verdict is there or the
/// wait is over).
pub fn status(cfg: &Config) -> Result<Answer, StatusError> {
    if let Some(wait) = cfg.sync {
        let here = match look(&cfg.build_dir) {
            Ok(h) => h,
            Err(e) => return Ok(no_live(format!("--sync: {}", crate::error::chain(&e)))),
        };
        let state = crate::state::locate(&here.canon, cfg.state_dir.as_deref())?;
        if !crate::state::exists(&state) {
            return Ok(no_live(format!(
                "--sync: no referee has run on `{}` (no state directory `{}`)",
                cfg.build_dir.display(),
                state.display()
            )));
        }
        crate::state::check(&state)?;
        if let Some(answer) = pinned::sync(cfg, &here, &state, wait)? {
            return Ok(answer);
        }
    }
    let deadline = std::time::Instant::now() + cfg.task.as_ref().map_or(Duration::ZERO, |t| t.wait);
    loop {
        let answer = status_once(cfg)?;
        if answer.code != ExitCode::NotJudged || std::time::Instant::now() >= deadline {
            return Ok(answer);
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn no_live(why: String) -> Answer {
    Answer {
        code: ExitCode::NotLive,
        stdout: String::new(),
        note: Some(Note::Error(why)),
    }
}

fn status_once(cfg: &Config) -> Result<Answer, StatusError> {
    let dir = &cfg.build_dir;
    let here = match look(dir) {
        Ok(h) => h,
        // Asked to vouch for a directory that is not there: nobody watches it.
        Err(e) if cfg.require_live => {
            return Ok(no_live(format!(
                "no live referee: {}",
                crate::error::chain(&e)
            )))
        }
        Err(e) => return Err(e),
    };
    let state = crate::state::locate(&here.canon, cfg.state_dir.as_deref())?;
    if !crate::state::exists(&state) {
        let why = format!(
            "no referee has run on `{}` (no state directory `{}`)",
            dir.display(),
            state.display()
        );
        if cfg.require_live {
            return Ok(no_live(why));
        }
        if cfg.task.is_some() {
            return Ok(not_judged(why));
        }
        return Ok(Answer {
            code: ExitCode::Ok,
            stdout: "go\n".into(),
            note: Some(Note::Info(why)),
        });
    }
    crate::state::check(&state)?;
    let mut answer = status_in(cfg, &here, &state)?;
    if cfg.show_run {
        answer.stdout = pinned::show_run(&state) + &answer.stdout;
    }
    Ok(answer)
}

/// [`status_once`] once the state directory is found.
fn status_in(cfg: &Config, here: &Here, state: &Path) -> Result<Answer, StatusError> {
    let (dir, here, state) = (&cfg.build_dir, here.clone(), state.to_path_buf());
    if let Some(refused) = pinned::expectations(cfg, &state) {
        return Ok(refused);
    }
    let verdict = live(&state, &here, cfg.stale);
    let not_live = match &verdict {
        Liveness::NotLive(why) => Some(why.clone()),
        _ => None,
    };
    if let Some(mut text) = read_stop(&state)? {
        if let Some(q) = &cfg.task {
            // The task's own verdict first, then the STOP that stands.
            let a = task_answer(q, &state, dir)?;
            text = format!("{}\n{text}", a.stdout);
        }
        return Ok(Answer {
            code: ExitCode::Violation,
            stdout: text,
            note: not_live
                .filter(|_| cfg.require_live)
                .map(|why| Note::Warning(format!("no live referee: {why}"))),
        });
    }
    if let Liveness::StopWanted(faults) = &verdict {
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
    let task = match &cfg.task {
        Some(q) => Some(task_answer(q, &state, dir)?),
        None => None,
    };
    if let Some(a) = task.as_ref().filter(|a| a.code == ExitCode::Violation) {
        return Ok(a.clone());
    }
    if let Some(why) = not_live.filter(|_| cfg.require_live) {
        return Ok(no_live(format!(
            "no live referee watches `{}`: {why}",
            dir.display()
        )));
    }
    if let Some(a) = task {
        return Ok(a);
    }
    Ok(Answer {
        code: ExitCode::Ok,
        stdout: "go\n".into(),
        note: None,
    })
}

fn not_judged(why: String) -> Answer {
    Answer {
        code: ExitCode::NotJudged,
        stdout: String::new(),
        note: Some(Note::Error(why)),
    }
}

/// The task's latest verdict in the state directory, against the attempt its record asks about.
fn task_answer(q: &TaskQuery, state: &Path, dir: &Path) -> Result<Answer, StatusError> {
    let name = crate::outputs::code_change::verdict_file(&q.id, "json");
    let path = state.join(&name);
    let Some(bytes) = read_small(&path).map_err(|source| StatusError::Stop {
        path: path.display().to_string(),
        source,
    })?
    else {
        return Ok(not_judged(format!("task `{}` is not judged yet", q.id)));
    };
    let doc: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    let verdict = doc["verdict"].as_str().unwrap_or("?").to_string();
    let attempt = doc["attempt"].as_u64();
    // The record names the attempt the orchestrator is about to accept: a verdict for an
    // earlier one does not answer for it.
    let record = dir
        .join(crate::workspace::TASKS_DIR)
        .join(format!("{}.json", q.id));
    let asked = read_small(&record)
        .ok()
        .flatten()
        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
        .and_then(|r| r["attempt"].as_u64());
    if let (Some(asked), Some(judged)) = (asked, attempt) {
        if asked > judged {
            return Ok(not_judged(format!(
                "task `{}` attempt {asked} is not judged yet (the latest verdict is attempt {judged}'s: {verdict})",
                q.id
            )));
        }
    }
    let reasons: Vec<String> = doc["reasons"]
        .as_array()
        .map(|r| {
            r.iter()
                .filter_map(|x| x.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default();
    let mut text = format!(
        "task {} attempt {}: {verdict}\n",
        q.id,
        attempt.map_or("?".to_string(), |a| a.to_string())
    );
    if !reasons.is_empty() {
        text.push_str(&format!("reasons: {}\n", reasons.join(", ")));
    }
    if let Some(e) = doc["escalation"].as_str() {
        text.push_str(&format!("escalation: {e}\n"));
    }
    let code = if q.go.contains(&verdict) {
        ExitCode::Ok
    } else {
        ExitCode::Violation
    };
    Ok(Answer {
        code,
        stdout: text,
        note: None,
    })
}

/// A small regular file's bytes; `None` when absent. Never follows a link or opens a FIFO.
fn read_small(path: &Path) -> std::io::Result<Option<Vec<u8>>> {
    match std::fs::symlink_metadata(path) {
        Ok(m) if m.is_file() && m.len() <= 16 << 20 => {}
        Ok(_) => return Ok(None),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    }
    let mut f = match std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
    {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut b = Vec::new();
    f.by_ref().take(16 << 20).read_to_end(&mut b)?;
    Ok(Some(b))
}

/// Whether a live referee keeps `state` for the directory `here`: its heartbeat judged
/// ([`judge`]) and the event log's lock held by another process.
fn live(state: &Path, here: &Here, stale: Option<Duration>) -> Liveness {
    let verdict = match heartbeat::read(state) {
        Ok(hb) => judge(&hb, here, Utc::now(), stale, &process),
        Err(e) => Liveness::NotLive(crate::error::chain(&e)),
    };
    if !matches!(verdict, Liveness::NotLive(_)) && !crate::daemon::journal::locked_by_other(state) {
        return Liveness::NotLive(format!(
            "no process holds the lock on the event log in the state directory `{}` (the heartbeat was not written by a live referee)",
            state.display()
        ));
    }
    verdict
}

/// Why a live referee watches `dir` now, judged exactly as `status --require-live` judges it;
/// `None` when none does (`verify --write` refuses a directory a live referee owns).
pub fn watched_by(dir: &Path, state: &Path) -> Option<String> {
    let here = look(dir).ok()?;
    let hb = heartbeat::read(state).ok()?;
    match judge(&hb, &here, Utc::now(), None, &process) {
        Liveness::NotLive(_) => None,
        Liveness::Live | Liveness::StopWanted(_) => Some(format!(
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
        if heartbeat::proc_stopped(pid) {
            return Proc::Stopped;
        }
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
) -> Liveness {
    let no = |why: String| Liveness::NotLive(why);
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
        Proc::Stopped => {
            return no(format!(
                "its process (pid {pid}) is stopped (SIGSTOP or a debugger): it referees nothing"
            ))
        }
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
        return Liveness::StopWanted(hb.faults.clone());
    }
    match hb.state.as_str() {
        heartbeat::WATCHING => Liveness::Live,
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
fn read_stop(dir: &Path) -> Result<Option<String>, StatusError> {
    let path = dir.join(STOP_FILE);
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
mod tests;
