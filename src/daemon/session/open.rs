//! Opening a session: the build directory checked, its event log locked and read (resumed, or
//! rotated for a new run: `--fresh`, an emptied directory, a previous run that had completed,
//! with what an earlier run left recorded as its leftovers), a STOP left standing adopted before
//! anything can touch it, and the start (or restart) announced once the loop watches the
//! directory.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use chrono::Utc;
use sha2::{Digest, Sha256};

use crate::checks::is_own_file;
use crate::protocol::{Protocol, Subject};

use super::super::event::{Event, ProtocolInfo, RunOptions, Started};
use super::super::journal::{self, ContextRef, EventLog};
use super::super::rules::ledger::Ledger;
use super::super::rules::settle::Settle;
use super::super::{attach, heartbeat, Config, DaemonError, FaultPolicy};
use super::tasks::Tasks;
use super::{Part, ProtocolFile, Session};
use crate::outputs::OutDir;
use crate::state::leftovers::{self, Leftovers};
use crate::state::live::{Here, LookError};
use crate::state::lock::DirHold;
use crate::state::stop::StopFile;

/// What opening found, said once the event source is known.
pub(super) struct Opening {
    resumed: Option<journal::Resumed>,
    rotated: Option<PathBuf>,
    log_moved: Option<(crate::outputs::Foreign, PathBuf)>,
    damaged: Option<journal::Resumed>,
    adopted: bool,
    /// The log copy found in the watched directory with no memory behind it, moved aside.
    copy_rotated: Option<PathBuf>,
    /// The build directory held no pipeline artifact, or the previous run had completed: a new
    /// run, not the previous one resumed (its log rotated as with `--fresh`, its record of what
    /// it saw moved aside to this).
    new_run: Option<Option<PathBuf>>,
    /// Why this is a new run, when it is one.
    why_new: Option<NewRun>,
    /// How many of the earlier run's entries were set aside ([`super::leftovers`]).
    leftovers: usize,
    /// The record of the leftovers could not be read: why (everything is judged).
    leftovers_lost: Option<String>,
}

/// Why a session begins a new run instead of resuming the previous one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum NewRun {
    /// `--fresh`: what the directory holds is an earlier run's, set aside.
    Fresh,
    /// Nothing of a pipeline's is left in the directory.
    Emptied,
    /// The previous run completed (its log ends with a final verdict): what the directory holds
    /// is that run's, set aside.
    Completed,
}

fn trace_id(dir: &Path) -> String {
    let nanos = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    let seed = format!("{}:{nanos}:{}", std::process::id(), dir.display());
    let mut h = crate::protocol::hex(&Sha256::digest(seed.as_bytes()));
    h.truncate(32);
    h
}

/// Removes temp files a killed referee left beside its own files (`.OBSERVER-*.tmp.*`).
pub(super) fn remove_stale_temps(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with(".OBSERVER-") && name.contains(".tmp.") && is_own_file(&name) {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

/// The directory `here`, held for this session alone ([`crate::state::lock::hold_dir`]).
fn hold(here: &Here) -> DirHold {
    match here.reopen() {
        Ok(fd) => crate::state::lock::hold_dir(fd),
        Err(e) => DirHold::Unsupported(e),
    }
}

/// Takes the directory's lock, which only tells two referees apart: `Ok(Some)` held;
/// `Ok(None)` watched without it (the file system locks no directory, or the lock is held by
/// processes that are no referee: said, naming them); `Err` another referee holds it.
pub(super) fn take_lock(here: &Here, shown: &Path) -> Result<Option<std::fs::File>, HeldByAnother> {
    match hold(here) {
        DirHold::Held(file) => Ok(Some(file)),
        DirHold::Busy(holders) if !crate::state::live::lock_keeps_out(&holders) => {
            tracing::warn!(
                "`{}` is locked by {}, which is no referee: watched without the directory's lock",
                shown.display(),
                crate::state::live::describe(&holders)
            );
            Ok(None)
        }
        DirHold::Busy(_) => Err(HeldByAnother),
        DirHold::Unsupported(_) => Ok(None),
    }
}

/// The directory's lock is another referee's.
pub(super) struct HeldByAnother;

/// The build directory held open for the session's writes, opened from the descriptor the
/// session opened it by (a directory swapped in at its path is never written through); by
/// path when it cannot be opened now (the session then detaches at its next look).
pub(super) fn held(here: &Here, dir: &Path) -> OutDir {
    here.reopen()
        .map(|fd| OutDir::held(here.canon(), fd))
        .unwrap_or_else(|_| OutDir::at(dir))
}

/// The build directory at `dir`, opened once ([`Here`]): a link at its name followed unless
/// `follow` is false (under `--root`, where a link found there is refused). What the session
/// names, checks and holds of the directory at its start is read from this one descriptor.
pub(super) fn open_build(dir: &Path, follow: bool) -> Result<Here, DaemonError> {
    let opened = if follow {
        Here::of(dir)
    } else {
        Here::of_unfollowed(dir)
    };
    opened.map_err(|e| match e {
        LookError::Symlink { .. } => crate::state::dir_id::Gone::Symlink {
            path: dir.to_path_buf(),
        }
        .into(),
        LookError::NotDir { .. } => DaemonError::NotADirectory {
            path: dir.to_path_buf(),
        },
        e => DaemonError::BuildDir {
            path: dir.to_path_buf(),
            source: e.into_io(),
        },
    })
}

pub(super) fn context_ref(canon: &Path, p: &Protocol) -> ContextRef {
    ContextRef {
        app_ctx: canon.display().to_string(),
        motor_ctx: format!("{}@{}+{}", p.id, p.version, p.sha256),
    }
}

impl Session {
    /// Opens a build directory: checks it, locks and reads its event log (resume, or rotate with
    /// `--fresh`), and adopts a STOP left standing before anything can touch it. Nothing is
    /// judged yet; the loop starts watching, then calls [`Session::announce`] and
    /// [`Session::first_evaluation`].
    pub fn open(
        cfg: Config,
        protocol: Arc<Protocol>,
        label: Option<String>,
    ) -> Result<Session, DaemonError> {
        let dir = cfg.build_dir.clone();
        let bad_dir = |source| DaemonError::BuildDir {
            path: dir.to_path_buf(),
            source,
        };
        // Under `--root` a build is a directory: a link found at its name is never followed.
        // A session started on a link (not under `--root`) keeps following it.
        let is_link = std::fs::symlink_metadata(&dir).is_ok_and(|m| m.file_type().is_symlink());
        // Opened once: its identity, canonical path, state directory and the folder its files
        // are written into all come from this descriptor, never from its path looked up again.
        let here = open_build(&dir, label.is_none())?;
        let canon = here.canon().to_path_buf();
        std::fs::read_dir(here.at()).map_err(bad_dir)?;
        let dir_id = here.dir();
        // A second referee on the same build (with a state directory of its own: the event
        // log's lock does not meet it) would fight the first over every `OBSERVER-*` file:
        // refused, said once. The directory's own lock decides even when both start at the same
        // instant; the heartbeat look names the other's pid, and decides alone where the file
        // system locks no directory.
        let dir_hold = take_lock(&here, &dir).map_err(|HeldByAnother| {
            match crate::state::live::rival(&here) {
                Some((pid, heartbeat)) => DaemonError::Rival {
                    path: dir.to_path_buf(),
                    pid,
                    heartbeat: heartbeat.to_path_buf(),
                },
                None => DaemonError::RivalHolds {
                    path: dir.to_path_buf(),
                },
            }
        })?;
        if let Some((pid, heartbeat)) = crate::state::live::rival(&here) {
            return Err(DaemonError::Rival {
                path: dir.to_path_buf(),
                pid,
                heartbeat: heartbeat.to_path_buf(),
            });
        }
        // Under `--root`, `--state-dir` is the folder each build's memory is made in, named
        // from the build opened above.
        let mut cfg = cfg;
        if label.is_some() {
            if let Some(base) = cfg.state_dir.take() {
                cfg.state_dir = Some(base.join(crate::state::name(&here)));
            }
        }
        let state = state_dir(&cfg, &here)?;
        // A protocol of task records writes into the workspace's `.referee/`; any other into
        // the build directory itself.
        let part = match &protocol.subject {
            Subject::Workspace(_) => Part::Workspace(Box::new(Tasks::open(&canon, &state, &cfg)?)),
            Subject::Build(_) if cfg.baseline != crate::workspace::BaselineSpec::Auto => {
                return Err(DaemonError::BaselineWithoutTasks {
                    protocol: protocol.id.clone(),
                })
            }
            Subject::Build(_) => Part::Build,
        };
        let out = match &part {
            Part::Build => held(&here, &dir),
            Part::Workspace(t) => t.out.clone(),
        };

        let now = Utc::now();
        let trace = trace_id(&canon);
        let mut opening = Opening {
            resumed: None,
            rotated: None,
            log_moved: None,
            damaged: None,
            adopted: false,
            copy_rotated: None,
            new_run: None,
            why_new: None,
            leftovers: 0,
            leftovers_lost: None,
        };
        // An emptied build directory (nothing of a pipeline's left in it) starts a new run: an
        // earlier run's memory in the same state directory (same path and inode) is not resumed.
        let emptied = matches!(part, Part::Build)
            && !crate::artifacts::ignored::holds_artifacts(&canon).unwrap_or(true);
        // The event log: lock it (one referee per directory), read it, resume or rotate.
        // The event log is the state directory's (what a restart resumes from); the watched
        // directory gets a copy.
        let log = match journal::open_locked(&state) {
            Ok(journal::Opened {
                file,
                resumed: r,
                torn_tail,
                moved_aside,
            }) => {
                // Holding the lock, no other referee writes here: its temp files are leftovers.
                remove_stale_temps(&state);
                remove_stale_temps(out.path());
                opening.log_moved = moved_aside;
                // A run that completed is over: a referee started on its directory again begins
                // a new run over its files (not under another protocol: that is refused below,
                // as a resume would be, unless `--fresh`).
                let completed = matches!(part, Part::Build)
                    && r.completed
                    && r.protocol_sha256
                        .as_ref()
                        .is_none_or(|logged| *logged == protocol.sha256);
                let (file, torn_tail) = if r.events == 0 && r.skipped == 0 {
                    opening.why_new = cfg.fresh.then_some(NewRun::Fresh);
                    // A new memory: a log left in the watched directory (an older referee's, or
                    // anyone's) is never resumed from; it is moved aside, not deleted.
                    if std::fs::symlink_metadata(out.join(journal::EVENTS_FILE))
                        .is_ok_and(|m| m.is_file() && m.len() > 0)
                    {
                        opening.copy_rotated = journal::rotate(out.path(), &now).ok();
                    }
                    (file, torn_tail)
                } else if cfg.fresh || emptied || completed {
                    opening.why_new = Some(if cfg.fresh {
                        NewRun::Fresh
                    } else if emptied {
                        NewRun::Emptied
                    } else {
                        NewRun::Completed
                    });
                    if !cfg.fresh {
                        opening.new_run = Some(rotate_seen(&state, &now));
                    }
                    let to =
                        journal::rotate(&state, &now).map_err(|source| DaemonError::Rotate {
                            path: state.join(journal::EVENTS_FILE).to_path_buf(),
                            source,
                        })?;
                    opening.rotated = Some(to);
                    let reopened = journal::open_locked(&state)?;
                    drop(file);
                    (reopened.file, reopened.torn_tail)
                } else {
                    // Reported once the new log is open (a log of nothing but garbage too).
                    opening.damaged = (r.skipped > 0).then(|| r.clone());
                    if let Some(logged) = &r.protocol_sha256 {
                        if *logged != protocol.sha256 {
                            return Err(DaemonError::ProtocolChanged {
                                log: state.join(journal::EVENTS_FILE).to_path_buf(),
                                logged: logged.clone(),
                                loaded: protocol.sha256.clone(),
                            });
                        }
                    }
                    if r.events > 0 {
                        opening.resumed = Some(r);
                    }
                    (file, torn_tail)
                };
                let context = context_ref(&canon, &protocol);
                match EventLog::new(&state, file, torn_tail, trace.clone(), context) {
                    Ok(mut log) => {
                        log.set_mirror(Some(out.clone()));
                        Some(log)
                    }
                    Err(e) => own_file_fault(&cfg, &state, journal::EVENTS_FILE, e)?,
                }
            }
            Err(journal::LockError::Busy { path }) => {
                return Err(journal::LockError::Busy { path }.into());
            }
            Err(journal::LockError::Io { source, .. }) => {
                own_file_fault(&cfg, &state, journal::EVENTS_FILE, source)?
            }
        };

        let protocol_file = (!protocol.origin.starts_with("embedded:")).then(|| {
            let path = PathBuf::from(&protocol.origin);
            let seen = std::fs::metadata(&path)
                .ok()
                .and_then(|m| Some((m.modified().ok()?, m.len())));
            ProtocolFile {
                path,
                seen,
                reported: BTreeSet::new(),
            }
        });

        let start = Instant::now();
        let mut stop = StopFile::with_state(&out, &state);
        // A STOP left standing is adopted before anything else can touch it, and stays as it is
        // until the first settled evaluation (no resolve-then-raise gap across a restart).
        opening.adopted = stop.adopt();
        let waivers = cfg.waivers.clone().map(super::waivers::WaiverFile::new);
        // What the referee saw is a fact about the directory, not a judgment under a protocol:
        // `--fresh` starts a new event log but keeps it.
        let seen = match &part {
            Part::Workspace(_) => None,
            Part::Build => Some(Arc::new(
                crate::state::observed::Observed::load(&state)?.unwrap_or_default(),
            )),
        };
        let leftovers = match &part {
            Part::Build if log.is_some() => leftovers_at_start(&cfg, &dir, &state, &mut opening)?,
            _ => Leftovers::default(),
        };
        let syncs = tokens_in(&canon);
        Ok(Session {
            settle: Settle::new(cfg.settle).with_max(cfg.settle_max),
            ledger: Ledger::new(cfg.max_fix_attempts, cfg.settle_max.max(cfg.settle)),
            stop,
            timeout_at: cfg.timeout.map(|t| start + t),
            next_beat: start,
            cfg,
            protocol,
            label,
            dir,
            out,
            state,
            folder_lost: None,
            part,
            canon,
            attached: attach::State::Attached(dir_id),
            vouched: Some(dir_id),
            detached_why: None,
            rival_seen: false,
            dir_hold,
            source: "nothing".into(),
            rewatch: None,
            proc_start: heartbeat::proc_start(std::process::id()),
            wants_stop: false,
            started: now,
            trace_id: trace,
            log,
            incidents: Vec::new(),
            faults: BTreeMap::new(),
            faults_changed: false,
            pass_files: BTreeMap::new(),
            pass_texts: BTreeMap::new(),
            protocol_file,
            waivers,
            pid_by_ticks: false,
            evaluated: false,
            listing: None,
            barrier: None,
            pending: Vec::new(),
            seen,
            // Tokens already there were put by a `status --sync` asked while no referee (or
            // the previous one) watched: acknowledged once this one has judged the directory.
            syncs,
            sync_since: None,
            inputs: Default::default(),
            leftovers,
            follow_link: is_link,
            backoff: super::super::rules::retry::Backoff::default(),
            recheck_at: None,
            finish_at: None,
            last_activity: start,
            complete_since: None,
            end: None,
            opening: Some(opening),
        })
    }

    pub(super) fn run_options(&self) -> RunOptions {
        RunOptions {
            watch: self.source.clone(),
            exit_with: self.cfg.exit_with,
            timeout_secs: self.cfg.timeout.map(|t| t.as_secs_f64()),
            on_fault: self.cfg.on_fault.as_str().into(),
            max_fix_attempts: self.cfg.max_fix_attempts,
            heartbeat_secs: self.cfg.heartbeat.as_secs_f64(),
            settle_ms: self.cfg.settle.as_millis() as u64,
            max_read_bytes: self.cfg.limits.max_read_bytes,
            vars: self.protocol.overrides.clone(),
        }
    }

    /// The start (or restart) event and line; restores the state of a resumed run; tells what
    /// opening found (a log moved aside or damaged, a STOP adopted).
    pub fn announce(&mut self, warning: Option<String>) {
        let Some(opening) = self.opening.take() else {
            return;
        };
        let p = &self.protocol;
        let run = Started {
            protocol: ProtocolInfo {
                id: p.id.clone(),
                version: p.version.clone(),
                sha256: p.sha256.clone(),
                origin: p.origin.clone(),
            },
            started: None,
            pid: std::process::id(),
            build_dir: self.canon.display().to_string(),
            options: self.run_options(),
            warning,
        };
        self.say(&format!(
            "watching `{}` ({}) — protocol {} {} (sha256 {}…), trace {}",
            self.dir.display(),
            self.source,
            p.id,
            p.version,
            &p.sha256[..12.min(p.sha256.len())],
            self.trace_id
        ));
        let resumed_run = opening.resumed.is_some();
        let raised_by_referee = opening
            .resumed
            .as_ref()
            .is_some_and(|r| !r.attempts.is_empty());
        match opening.resumed {
            Some(r) => {
                let text = format!(
                    "restarted: resumed from {} ({} events, {} history entries; the previous run {})",
                    journal::EVENTS_FILE,
                    r.events,
                    r.history.len(),
                    if r.ended { "had finished" } else { "was interrupted" }
                );
                self.started = r.started.unwrap_or(self.started);
                let previous_trace_ids = r.trace_ids.clone();
                let skipped_lines = r.skipped;
                self.incidents = r.incidents.clone();
                if let Part::Workspace(tasks) = &mut self.part {
                    tasks.logged = r.verdicts.clone();
                }
                self.ledger.resume(r);
                self.emit(
                    Event::Restart {
                        run: Started {
                            started: Some(journal::timestamp(&self.started)),
                            ..run
                        },
                        previous_trace_ids,
                        skipped_lines,
                        text,
                    }
                    .into(),
                );
            }
            None => {
                let seen = opening
                    .new_run
                    .as_ref()
                    .and_then(|s| s.as_ref())
                    .map(|s| format!(" and its record of what it saw to `{}`", s.display()))
                    .unwrap_or_default();
                let aside = match opening.leftovers {
                    0 => String::new(),
                    n => format!(
                        "; {n} of the files and folders already in it are set aside until this run writes them"
                    ),
                };
                match (opening.why_new, &opening.rotated) {
                    (Some(NewRun::Emptied), Some(to)) => self.say(&format!(
                        "a new run: `{}` holds no pipeline artifact, so the previous run is not resumed; its event log was moved to `{}`{seen}",
                        self.dir.display(),
                        to.display(),
                    )),
                    (Some(NewRun::Completed), Some(to)) => self.say(&format!(
                        "a new run: the previous run in `{}` had completed, so it is not resumed; its event log was moved to `{}`{seen}{aside}",
                        self.dir.display(),
                        to.display(),
                    )),
                    (Some(NewRun::Fresh), Some(to)) => self.say(&format!(
                        "--fresh: a new run; the previous event log was moved to `{}`{aside}",
                        to.display()
                    )),
                    (Some(NewRun::Fresh), None) if opening.leftovers > 0 => {
                        self.say(&format!("--fresh: a new run{aside}"))
                    }
                    _ => {}
                }
                self.emit(
                    Event::Start {
                        run: Started {
                            started: Some(journal::timestamp(&self.started)),
                            ..run
                        },
                        rotated: opening.rotated.map(|r| r.display().to_string()),
                    }
                    .into(),
                );
            }
        }
        if let Some((found, to)) = opening.log_moved {
            self.log_moved_aside(found, &to);
        }
        if let Some(to) = &opening.copy_rotated {
            self.say(&format!(
                "`{}` in the watched directory is not the referee's memory (that is in `{}`): moved aside to `{}`",
                journal::EVENTS_FILE,
                self.state.display(),
                to.display()
            ));
        }
        // The copy of the log in the watched directory, in line with the state directory's; on
        // a restart, a copy that differs was changed by someone else.
        let fixed = match &mut self.log {
            Some(log) => log.restore_mirror(true).ok().flatten(),
            None => None,
        };
        if let (Some(fix), true) = (fixed, resumed_run) {
            self.log_copy_fixed(fix);
        }
        if let Some(r) = opening.damaged {
            self.log_damaged(&r);
        }
        if let Some(why) = &opening.leftovers_lost {
            self.say(&format!(
                "{why}: every file in `{}` is judged as this run's",
                self.dir.display()
            ));
        }
        if opening.adopted {
            self.stop_adopted(raised_by_referee);
        }
        self.record_start();
    }
}

/// The earlier run's files a build's session sets aside ([`super::leftovers`]): at a new run over
/// a completed run or with `--fresh`, everything the directory holds now (recorded and kept in
/// `state`); on a resumed run, the record it kept; at any other start, none.
fn leftovers_at_start(
    cfg: &Config,
    dir: &Path,
    state: &Path,
    opening: &mut Opening,
) -> Result<Leftovers, DaemonError> {
    let resuming = opening.why_new.is_none() && opening.rotated.is_none();
    match opening.why_new {
        Some(NewRun::Fresh | NewRun::Completed) => {
            let snap = crate::artifacts::Snapshot::scan(dir, cfg.limits).map_err(|source| {
                DaemonError::BuildDir {
                    path: dir.to_path_buf(),
                    source,
                }
            })?;
            let mut left = Leftovers::record(&snap, crate::checks::is_own_file);
            opening.leftovers = left.len();
            if let Err(e) = left.save(state) {
                own_file_fault::<()>(cfg, state, leftovers::LEFTOVERS_FILE, e)?;
            }
            Ok(left)
        }
        None if resuming && (opening.resumed.is_some() || opening.damaged.is_some()) => {
            Ok(Leftovers::load(state).unwrap_or_else(|e| {
                opening.leftovers_lost = Some(crate::error::chain(&e));
                Leftovers::default()
            }))
        }
        _ => {
            if let Err(e) = leftovers::discard(state) {
                tracing::warn!(
                    "cannot remove an earlier run's `{}` from `{}`: {}",
                    leftovers::LEFTOVERS_FILE,
                    state.display(),
                    e.to_string().to_lowercase()
                );
            }
            Ok(Leftovers::default())
        }
    }
}

/// Moves the record of what an earlier run saw aside (kept, beside it), so a new run in the same
/// directory orders only what it sees itself; `None` when there was none or it could not be moved
/// (then it is read as before: a stale order can only hold, never pass, a check).
fn rotate_seen(state: &Path, now: &chrono::DateTime<Utc>) -> Option<PathBuf> {
    let from = state.join(crate::state::observed::SEEN_FILE);
    if !from.is_file() {
        return None;
    }
    let stamp = now.format("%Y%m%dT%H%M%S%.3fZ").to_string();
    let to = state.join(format!("OBSERVER-SEEN-{stamp}.json"));
    std::fs::rename(&from, &to).ok()?;
    Some(to)
}

/// The session's state directory: `--state-dir` or the default for the directory `here`,
/// created 0700 and vetted; noted with what it watches.
fn state_dir(cfg: &Config, here: &Here) -> Result<PathBuf, DaemonError> {
    let dir = crate::state::ensure(&crate::state::locate(here, cfg.state_dir.as_deref())?)?;
    crate::state::note_watched(&dir, here.canon());
    Ok(dir)
}

/// At startup, a file of the referee's own that cannot be written: fatal under `--on-fault stop`,
/// a warning (and no such file) under `continue`.
fn own_file_fault<T>(
    cfg: &Config,
    dir: &Path,
    name: &str,
    e: std::io::Error,
) -> Result<Option<T>, DaemonError> {
    match cfg.on_fault {
        FaultPolicy::Stop => Err(DaemonError::OwnFile {
            path: dir.join(name).to_path_buf(),
            source: e,
        }),
        FaultPolicy::Continue => {
            let message = e.to_string().to_lowercase();
            tracing::warn!(
                "cannot write `{name}` ({message}); continuing without it (--on-fault continue)"
            );
            Ok(None)
        }
    }
}

/// The `status --sync` tokens at the top of `dir` (at most a few hundred are looked at).
pub(super) fn tokens_in(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .flatten()
        .filter_map(|e| {
            let name = e.file_name();
            crate::state::sync::token_of(name.to_str()?).map(str::to_string)
        })
        .take(256)
        .collect()
}
