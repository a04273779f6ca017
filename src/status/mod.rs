//! `referee status BUILD_DIR`: what an orchestrator asks at a phase transition. Prints
//! `OBSERVER-STOP.md` and answers 1 when it exists (or when a live referee holds a STOP it could
//! not write), else prints `go` and answers 0; with `--require-live`, answers 3 unless a live
//! referee is watching this very directory. With `--task ID` (a task protocol), it answers for
//! that task's latest attempt: 0 judged good, 1 judged bad or a STOP stands, 4 not judged yet.
//!
//! Every answer comes from the referee's state directory ([`crate::state`]), found as
//! `watch` finds it: never from the copies in the watched directory, which the pipeline or worker
//! can delete, replace or forge. No state directory means no referee ever ran there.
//!
//! "Live" is strict, because a wrong "go" lets a pipeline past a failure nobody saw: what it takes
//! is [`crate::state::live`]'s. This module owns the answer and its messages. It only reads the
//! referee's own files (never opening anything but a small regular file), and writes nothing but
//! the `--sync` token.

mod pinned;

use std::io::Read;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use crate::exit::ExitCode;
use crate::outputs::STOP_FILE;
use crate::state::live::{live, Here, Liveness};

#[derive(Debug, Clone)]
pub struct Config {
    /// The directory asked about (it names it in every message).
    pub build_dir: PathBuf,
    /// The directory, already opened by the caller (MCP opens it beneath its `--root`): the
    /// answer is about this one, and `build_dir` only names it. `None`: `status` opens
    /// `build_dir` itself, once.
    pub held: Option<Arc<OwnedFd>>,
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
    #[error(transparent)]
    Look(#[from] crate::state::live::LookError),
    #[error("cannot read `{path}`")]
    Stop {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    State(#[from] crate::state::StateError),
    #[error("no state directory `{path}`: no referee has run with it, or it was moved or removed (`--state-dir` must name the folder the referee was started with)")]
    Missing { path: String },
    #[error("{0}")]
    Sync(String),
    #[error("--sync: cannot put its token `{path}` in the watched directory (the orchestrator must be able to write there)")]
    Token {
        path: String,
        #[source]
        source: std::io::Error,
    },
}

/// Answers `referee status` (with `--task --wait`, polling until a verdict is there or the
/// wait is over).
///
/// A STOP file in the watched directory is never answered with go, whatever the state
/// directory says or cannot say (none found, an unreadable heartbeat, the memory of another
/// directory, an error): the referee's own STOP answers first, and the copy is read after it,
/// so a STOP the referee raised is seen in one place or the other at every instant (it writes
/// its own first and removes it first).
pub fn status(cfg: &Config) -> Result<Answer, StatusError> {
    let asked = Asked::open(cfg);
    let answer = answer(cfg, &asked);
    if matches!(&answer, Ok(a) if a.code == ExitCode::Violation) {
        return answer;
    }
    let Some((name, text)) = stop_in_watched(&asked.at) else {
        return answer;
    };
    let why = match &answer {
        Ok(a) => match &a.note {
            Some(Note::Info(t) | Note::Warning(t) | Note::Error(t)) => t.clone(),
            None => "the referee's state directory holds no STOP".to_string(),
        },
        Err(e) => crate::error::chain(e),
    };
    Ok(Answer {
        code: ExitCode::Violation,
        stdout: text,
        note: Some(Note::Warning(format!(
            "`{}` stands in the watched directory, so the answer is STOP whatever the referee's memory says ({why})",
            asked.shown.join(name).display()
        ))),
    })
}

/// The directory asked about, opened once: every later look (its identity, the STOP copy in
/// it, its task records, the `--sync` token) goes through the one descriptor, by the path
/// `/proc/self/fd/N` names it with, so a link on the way swapped while `status` runs cannot
/// make the answer, or a part of it, about another directory.
pub(crate) struct Asked {
    /// Kept open while `at` is used.
    _held: Option<Arc<OwnedFd>>,
    /// Where to look: `/proc/self/fd/N`, or the path as given when it could not be opened (the
    /// looks then fail as they would have).
    pub(crate) at: PathBuf,
    /// What messages call it: the path the caller gave.
    pub(crate) shown: PathBuf,
}

impl Asked {
    fn open(cfg: &Config) -> Asked {
        let held = cfg.held.clone().or_else(|| {
            crate::safefs::open_dir(crate::safefs::CWD, &cfg.build_dir, true)
                .ok()
                .map(Arc::new)
        });
        let at = held.as_ref().map_or_else(
            || cfg.build_dir.clone(),
            |fd| PathBuf::from(format!("/proc/self/fd/{}", fd.as_raw_fd())),
        );
        Asked {
            _held: held,
            at,
            shown: cfg.build_dir.clone(),
        }
    }
}

/// The STOP file a referee keeps in the watched directory (`OBSERVER-STOP.md` in a build
/// directory, `.referee/OBSERVER-STOP.md` in a workspace): its path and text, when one is there
/// in any form, named relative to `dir`. Never opens anything but a regular file; one that cannot be read still stands.
fn stop_in_watched(dir: &Path) -> Option<(PathBuf, String)> {
    [PathBuf::new(), PathBuf::from(crate::workspace::OUTPUT_DIR)]
        .into_iter()
        .find_map(|d| {
            let name = d.join(STOP_FILE);
            match read_stop(&dir.join(&d)) {
                Ok(Some(text)) => Some((name, text)),
                Ok(None) => None,
                Err(e) => Some((
                    name,
                    format!(
                        "{STOP_FILE} exists but cannot be read ({}); treat it as a STOP\n",
                        crate::error::chain(&e)
                    ),
                )),
            }
        })
}

/// Where the referee's memory of the directory `here` is: the state directory `watch` would
/// use, else (no `--state-dir` given) the one of a live referee that watches this directory
/// under another name or watched another directory at its path ([`crate::state::live::keeper`]);
/// `None` when there is none.
///
/// A failure to look (a folder on the way this user may not search, say) is an error, never
/// "none"; and a `--state-dir` named but not there is an error too: the orchestrator was told
/// where the referee keeps its memory, so a missing one was moved or removed, or the referee
/// never started, and neither is a go.
fn find_state(cfg: &Config, asked: &Asked, here: &Here) -> Result<Option<PathBuf>, StatusError> {
    let state = crate::state::locate(here, cfg.state_dir.as_deref())?;
    if crate::state::lookup(&state)? {
        return Ok(Some(state));
    }
    if cfg.state_dir.is_some() {
        return Err(StatusError::Missing {
            path: state.display().to_string(),
        });
    }
    let found = crate::state::default_base()
        .ok()
        .and_then(|base| crate::state::live::keeper(&base, here, &asked.shown));
    // A referee re-attaching renames its memory to the new name: a rename between the first
    // look and the scan is caught by looking at the new name once more.
    match found {
        Some(found) => Ok(Some(found)),
        None => Ok(crate::state::lookup(&state)?.then_some(state)),
    }
}

/// [`find_state`], vetted for reading ([`crate::state::check_readable`]).
fn find_readable_state(
    cfg: &Config,
    asked: &Asked,
    here: &Here,
) -> Result<Option<PathBuf>, StatusError> {
    let state = find_state(cfg, asked, here)?;
    if let Some(state) = &state {
        crate::state::check_readable(state)?;
    }
    Ok(state)
}

/// [`status`] before the copy in the watched directory is looked at.
fn answer(cfg: &Config, asked: &Asked) -> Result<Answer, StatusError> {
    if let Some(wait) = cfg.sync {
        let here = match Here::of(&asked.at) {
            Ok(h) => h,
            Err(e) => return Ok(no_live(format!("--sync: {}", crate::error::chain(&e)))),
        };
        let state = match find_readable_state(cfg, asked, &here) {
            Ok(state) => state,
            Err(e) => return Ok(no_live(format!("--sync: {}", crate::error::chain(&e)))),
        };
        let Some(state) = state else {
            return Ok(no_live(format!(
                "--sync: no referee has run on `{}` (no state directory `{}`)",
                asked.shown.display(),
                crate::state::locate(&here, cfg.state_dir.as_deref())?.display()
            )));
        };
        if let Some(answer) = pinned::sync(cfg, asked, &here, &state, wait)? {
            return Ok(answer);
        }
    }
    let deadline = std::time::Instant::now() + cfg.task.as_ref().map_or(Duration::ZERO, |t| t.wait);
    loop {
        let answer = status_once(cfg, asked)?;
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

fn status_once(cfg: &Config, asked: &Asked) -> Result<Answer, StatusError> {
    let dir = &asked.shown;
    let here = match Here::of(&asked.at) {
        Ok(h) => h,
        // Asked to vouch for a directory that is not there: nobody watches it.
        Err(e) if cfg.require_live => {
            return Ok(no_live(format!(
                "no live referee: {}",
                crate::error::chain(&e)
            )))
        }
        Err(e) => return Err(e.into()),
    };
    let state = match find_readable_state(cfg, asked, &here) {
        Ok(state) => state,
        // Whatever keeps this process from the referee's memory, no live referee can be
        // vouched for, and no verdict can be read.
        Err(e) if cfg.require_live => {
            return Ok(no_live(format!(
                "no live referee can be vouched for: {}",
                crate::error::chain(&e)
            )))
        }
        Err(e @ StatusError::Missing { .. }) if cfg.task.is_some() => {
            return Ok(not_judged(crate::error::chain(&e)))
        }
        Err(e) => return Err(e),
    };
    let Some(state) = state else {
        let why = format!(
            "no referee has run on `{}` (no state directory `{}`)",
            dir.display(),
            crate::state::locate(&here, cfg.state_dir.as_deref())?.display()
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
    };
    let mut answer = status_in(cfg, asked, &here, &state)?;
    if cfg.show_run {
        answer.stdout = pinned::show_run(&state) + &answer.stdout;
    }
    Ok(answer)
}

/// [`status_once`] once the state directory is found.
fn status_in(
    cfg: &Config,
    asked: &Asked,
    here: &Here,
    state: &Path,
) -> Result<Answer, StatusError> {
    let (dir, here, state) = (&asked.at, here.clone(), state.to_path_buf());
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
            // The task's own verdict first (or why there is none to give), then the STOP that
            // stands.
            let a = task_answer(q, &state, dir)?;
            let head = match (&a.stdout, a.note) {
                (out, _) if !out.is_empty() => out.clone(),
                (_, Some(Note::Info(why) | Note::Warning(why) | Note::Error(why))) => {
                    format!("{why}\n")
                }
                _ => String::new(),
            };
            text = format!("{head}\n{text}");
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
    if let Some(why) = crate::state::live::watches_another(&state, &here) {
        // Not a directory this referee judged: no go, even without `--require-live`.
        return Ok(no_live(why));
    }
    if let Some(why) = not_live.filter(|_| cfg.require_live) {
        return Ok(no_live(format!(
            "no live referee watches `{}`: {why}",
            asked.shown.display()
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
        .and_then(|b| crate::workspace::record::attempt_of(&b));
    if let (Some(asked), Some(judged)) = (asked, attempt) {
        if asked > judged {
            return Ok(not_judged(format!(
                "task `{}` attempt {asked} is not judged yet (the latest verdict is attempt {judged}'s: {verdict})",
                q.id
            )));
        }
    }
    // A verdict holds for the files it judged: one changed since makes it stale (not judged).
    // An escalation holds whatever its files do, until the task moves on (a new attempt): the
    // referee publishes nothing new under it, so it is answered as it stands.
    let escalated = doc["escalation"].is_string();
    let judged_files = doc
        .get("judged_files")
        .filter(|_| !escalated)
        .and_then(|j| {
            serde_json::from_value::<std::collections::BTreeMap<String, Option<String>>>(j.clone())
                .ok()
        });
    if let Some(judged) = judged_files {
        let stale = crate::accept::stale_paths(dir, &judged);
        if !stale.is_empty() {
            return Ok(not_judged(format!(
                "task `{}`'s verdict ({verdict}) is stale: {} changed after it was judged",
                q.id,
                stale.join(", ")
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
    let mut f = match crate::safefs::open(path, crate::safefs::Access::READ) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(e),
    };
    let mut b = Vec::new();
    f.by_ref().take(16 << 20).read_to_end(&mut b)?;
    Ok(Some(b))
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
    let mut f = match crate::safefs::open(&path, crate::safefs::Access::READ) {
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
