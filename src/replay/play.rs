//! Playing a timeline into a directory: each step at its recorded offset (scaled by a
//! speed), every file written with its recorded mtime, never outside the directory.

use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};

use super::table::{set_field, FieldError};
use super::timeline::{check_rel, default_temp, format_offset, Action, PathError, Step, Timeline};
use super::{ReplayError, TRACKER};

/// A played step as one line: `+   6.2s  rename … → p3a-gate-results.json  — the note`.
pub fn line(p: &Played<'_>) -> String {
    let mut s = format!("+{:>9}  {}", format_offset(p.step.at), p.step.describe());
    if let Some(n) = &p.step.note {
        s.push_str("  — ");
        s.push_str(n);
    }
    s
}

/// How to play a timeline.
#[derive(Debug, Clone, Default)]
pub struct PlayOptions {
    /// Recorded time runs this many times faster; 0 plays without waiting.
    pub speed: f64,
    /// Recorded time zero; overrides the timeline's `epoch`. Default: the timeline's, else now.
    pub epoch: Option<DateTime<Utc>>,
    /// Set it to stop playing (checked between steps and while waiting).
    pub cancel: Option<Arc<AtomicBool>>,
    /// Play only the steps recorded at or after this offset (waiting counts from it).
    pub from: Option<Duration>,
    /// Play only the steps recorded before this offset.
    pub until: Option<Duration>,
}

/// A step that has just been played.
#[derive(Debug)]
pub struct Played<'a> {
    /// 1-based.
    pub index: usize,
    pub total: usize,
    pub step: &'a Step,
    /// The recorded time of the step (its files' mtime).
    pub recorded: DateTime<Utc>,
    /// Real time since playing started.
    pub elapsed: Duration,
}

/// What playing did.
#[derive(Debug, Clone)]
pub struct PlaySummary {
    pub steps: usize,
    pub epoch: DateTime<Utc>,
    pub elapsed: Duration,
    /// Stopped by the callback or `cancel` before the last step.
    pub stopped: bool,
}

/// Plays `timeline` into `dir` (created if missing): each step at `start + at / speed`, each
/// written file's mtime set to `epoch + at`. `on_step` runs after each step; `Break` stops.
pub fn play(
    timeline: &Timeline,
    dir: &Path,
    opts: &PlayOptions,
    mut on_step: impl FnMut(&Played<'_>) -> ControlFlow<()>,
) -> Result<PlaySummary, ReplayError> {
    if !opts.speed.is_finite() || opts.speed < 0.0 {
        return Err(ReplayError::Speed(opts.speed));
    }
    let fail = |step: &Step, index: usize, source: StepError| ReplayError::Play {
        origin: timeline.origin.clone(),
        line: step.line,
        step: index,
        action: step.describe(),
        source,
    };
    std::fs::create_dir_all(dir).map_err(|source| ReplayError::TargetDir {
        path: dir.to_path_buf(),
        source,
    })?;
    let epoch = opts.epoch.or(timeline.epoch).unwrap_or_else(Utc::now);
    let start = Instant::now();
    let cancelled = || {
        opts.cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
    };
    let total = timeline.steps.len();
    let origin = opts.from.unwrap_or_default();
    let mut played_steps = 0;
    for (i, step) in timeline.steps.iter().enumerate() {
        let index = i + 1;
        if step.at < origin {
            continue;
        }
        if opts.until.is_some_and(|u| step.at >= u) {
            break;
        }
        played_steps += 1;
        let i = played_steps - 1;
        let stopped = |start: Instant| PlaySummary {
            steps: i,
            epoch,
            elapsed: start.elapsed(),
            stopped: true,
        };
        let at = |offset: Duration| epoch + chrono::Duration::from_std(offset).unwrap_or_default();
        if !wait_until(start, step.at - origin, opts.speed, &cancelled)
            .map_err(|m| fail(step, index, m))?
        {
            return Ok(stopped(start));
        }
        match &step.action {
            Action::Write {
                paths,
                content,
                every,
                ..
            } => {
                for (n, p) in paths.iter().enumerate() {
                    let offset = step.at + every.saturating_mul(n as u32);
                    if n > 0
                        && !wait_until(start, offset - origin, opts.speed, &cancelled)
                            .map_err(|m| fail(step, index, m))?
                    {
                        return Ok(stopped(start));
                    }
                    write_file(dir, p, content, at(offset)).map_err(|m| fail(step, index, m))?;
                }
            }
            Action::Rename {
                to,
                temp,
                content,
                source,
            } => {
                let target = safe_path(dir, to, true).map_err(|m| fail(step, index, m))?;
                let from = match (content, source) {
                    (Some(c), _) => {
                        write_file(dir, temp, c, at(step.at)).map_err(|m| fail(step, index, m))?;
                        safe_path(dir, temp, false).map_err(|m| fail(step, index, m))?
                    }
                    (None, Some(src)) => {
                        safe_path(dir, src, false).map_err(|m| fail(step, index, m))?
                    }
                    (None, None) => return Err(fail(step, index, StepError::NothingToRename)),
                };
                std::fs::rename(&from, &target).map_err(|source| {
                    fail(
                        step,
                        index,
                        StepError::Rename {
                            to: to.into(),
                            source,
                        },
                    )
                })?;
            }
            Action::Tracker { base, sets } => {
                let current = match base {
                    Some(b) => String::from_utf8_lossy(b).into_owned(),
                    None => {
                        let p = safe_path(dir, TRACKER, false).map_err(|m| fail(step, index, m))?;
                        std::fs::read_to_string(&p).map_err(|source| {
                            fail(step, index, StepError::ReadTracker { path: p, source })
                        })?
                    }
                };
                let mut text = current;
                for set in sets {
                    text = set_field(&text, set).map_err(|m| fail(step, index, m.into()))?;
                }
                let temp = default_temp(TRACKER);
                write_file(dir, &temp, text.as_bytes(), at(step.at))
                    .map_err(|m| fail(step, index, m))?;
                let from = safe_path(dir, &temp, false).map_err(|m| fail(step, index, m))?;
                let target = safe_path(dir, TRACKER, true).map_err(|m| fail(step, index, m))?;
                std::fs::rename(&from, &target).map_err(|source| {
                    fail(
                        step,
                        index,
                        StepError::Rename {
                            to: TRACKER.into(),
                            source,
                        },
                    )
                })?;
            }
            Action::Mkdir { path } => {
                let created = make_parents(dir, path, true).map_err(|m| fail(step, index, m))?;
                for d in created {
                    set_mtime(&d, at(step.at)).map_err(|m| fail(step, index, m))?;
                }
            }
            Action::Remove { path } => {
                let p = safe_path(dir, path, true).map_err(|m| fail(step, index, m))?;
                let remove = |source| StepError::Remove {
                    path: path.into(),
                    source,
                };
                let meta =
                    std::fs::symlink_metadata(&p).map_err(|e| fail(step, index, remove(e)))?;
                let r = if meta.is_dir() {
                    std::fs::remove_dir_all(&p)
                } else {
                    std::fs::remove_file(&p)
                };
                r.map_err(|e| fail(step, index, remove(e)))?;
            }
            Action::Wait { duration } => {
                if !wait_until(start, step.at + *duration - origin, opts.speed, &cancelled)
                    .map_err(|m| fail(step, index, m))?
                {
                    return Ok(stopped(start));
                }
            }
        }
        let played = Played {
            index,
            total,
            step,
            recorded: at(step.at),
            elapsed: start.elapsed(),
        };
        if on_step(&played).is_break() {
            return Ok(PlaySummary {
                steps: played_steps,
                epoch,
                elapsed: start.elapsed(),
                stopped: index < total,
            });
        }
    }
    Ok(PlaySummary {
        steps: played_steps,
        epoch,
        elapsed: start.elapsed(),
        stopped: false,
    })
}

/// Why one step could not be played. Paths are as the timeline names them (relative to DIR);
/// io failures keep their error as the source.
#[derive(Debug, thiserror::Error)]
pub enum StepError {
    #[error("speed `{speed}` is too small for an offset of {offset}")]
    SpeedTooSmall { speed: f64, offset: String },
    #[error("the wait is too long")]
    WaitTooLong,
    #[error(transparent)]
    Path(#[from] PathError),
    #[error("`{}` is a symlink; the replay never writes through one", .0.display())]
    Symlink(PathBuf),
    #[error("`{}` is not a directory", .0.display())]
    NotADirectory(PathBuf),
    #[error("cannot create directory `{}`", path.display())]
    CreateDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write `{}`", path.display())]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot set the mtime of `{}`", path.display())]
    Mtime {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("nothing to rename")]
    NothingToRename,
    #[error("rename to `{}`", to.display())]
    Rename {
        to: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot read `{TRACKER}`")]
    ReadTracker {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot remove `{}`", path.display())]
    Remove {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Field(#[from] FieldError),
}

/// Sleeps until `offset / speed` after `start`; `false` when cancelled first.
fn wait_until(
    start: Instant,
    offset: Duration,
    speed: f64,
    cancelled: &dyn Fn() -> bool,
) -> Result<bool, StepError> {
    if cancelled() {
        return Ok(false);
    }
    if speed == 0.0 {
        return Ok(true);
    }
    let real = Duration::try_from_secs_f64(offset.as_secs_f64() / speed).map_err(|_| {
        StepError::SpeedTooSmall {
            speed,
            offset: format_offset(offset),
        }
    })?;
    let target = start.checked_add(real).ok_or(StepError::WaitTooLong)?;
    loop {
        let now = Instant::now();
        if now >= target {
            return Ok(true);
        }
        std::thread::sleep((target - now).min(Duration::from_millis(50)));
        if cancelled() {
            return Ok(false);
        }
    }
}

/// `dir/rel`, refusing any existing component (or, unless `last_may_link`, the last one)
/// that is a symlink, so that no write can leave `dir`.
fn safe_path(dir: &Path, rel: &str, last_may_link: bool) -> Result<PathBuf, StepError> {
    check_rel(rel)?;
    let comps: Vec<_> = Path::new(rel).components().collect();
    let mut cur = dir.to_path_buf();
    for (i, c) in comps.iter().enumerate() {
        cur.push(c);
        let last = i + 1 == comps.len();
        match std::fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_symlink() && !(last && last_may_link) => {
                return Err(StepError::Symlink(
                    cur.strip_prefix(dir).unwrap_or(&cur).to_path_buf(),
                ))
            }
            Ok(m) if !last && !m.is_dir() => {
                return Err(StepError::NotADirectory(
                    cur.strip_prefix(dir).unwrap_or(&cur).to_path_buf(),
                ))
            }
            _ => {}
        }
    }
    Ok(cur)
}

/// Creates the missing directories on the way to `dir/rel` (and `rel` itself when
/// `include_last`); returns the ones it created, outermost first.
fn make_parents(dir: &Path, rel: &str, include_last: bool) -> Result<Vec<PathBuf>, StepError> {
    safe_path(dir, rel, false)?;
    let comps: Vec<_> = Path::new(rel).components().collect();
    let upto = if include_last {
        comps.len()
    } else {
        comps.len().saturating_sub(1)
    };
    let mut created = Vec::new();
    let mut cur = dir.to_path_buf();
    for c in &comps[..upto] {
        cur.push(c);
        match std::fs::create_dir(&cur) {
            Ok(()) => created.push(cur.clone()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && cur.is_dir() => {}
            Err(source) => return Err(StepError::CreateDir { path: cur, source }),
        }
    }
    Ok(created)
}

fn write_file(dir: &Path, rel: &str, bytes: &[u8], mtime: DateTime<Utc>) -> Result<(), StepError> {
    let created = make_parents(dir, rel, false)?;
    let p = safe_path(dir, rel, false)?;
    std::fs::write(&p, bytes).map_err(|source| StepError::Write {
        path: rel.into(),
        source,
    })?;
    set_mtime(&p, mtime)?;
    // Directories this write created get the same recorded time (deepest first, so setting
    // one does not disturb the next).
    for d in created.iter().rev() {
        set_mtime(d, mtime)?;
    }
    Ok(())
}

fn set_mtime(p: &Path, t: DateTime<Utc>) -> Result<(), StepError> {
    let ft = filetime::FileTime::from_unix_time(t.timestamp(), t.timestamp_subsec_nanos());
    filetime::set_file_mtime(p, ft).map_err(|source| StepError::Mtime {
        path: p.to_path_buf(),
        source,
    })
}
