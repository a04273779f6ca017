//! Whether a live referee keeps a directory: what `status --require-live` answers, what
//! `verify --write` and the agents' hooks refuse to write under, and what a heartbeat must prove.
//!
//! "Live" is strict, because a wrong "go" lets a pipeline past a failure nobody saw: the
//! heartbeat parses; its interval is sane (more than 0, at most a day); its last beat is neither
//! stale (3 × the interval) nor from the future; it was written for this directory (same device,
//! inode and birth time, same canonical path: not a copy, not a directory re-created or renamed
//! into place); its pid is running and is the process that wrote it (same start time, not a
//! recycled pid), and not stopped (`SIGSTOP`); its state is `watching` (not `finished` or
//! `faulted`); and the state directory's event log is locked (the live daemon holds it,
//! [`super::lock`]).
//!
//! This module owns that decision and its reasons. It only reads the referee's own files (never
//! opening anything but a small regular file) and `/proc/PID/stat`, and writes nothing.

use std::path::{Path, PathBuf};
use std::time::Duration;

use chrono::{DateTime, Utc};

use super::dir_id::DirId;
use super::heartbeat::{self, Heartbeat};

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

/// A directory opened once, and what it is: its identity and its canonical path, both read from
/// the one descriptor it is held by. The referee's memory of a directory is named from this and
/// nothing else ([`crate::state::name`], [`crate::state::locate`]), so no caller can name a
/// state directory from a second lookup of a path (a link swapped in on the way between two
/// lookups would name another directory's memory). Made only by [`Here::of`],
/// [`Here::of_unfollowed`] and [`Here::of_fd`]; whoever holds one reads the directory through
/// it ([`Here::at`], [`Here::reopen`]) rather than by its path again.
#[derive(Debug, Clone)]
pub struct Here {
    dir: DirId,
    canon: PathBuf,
    /// Whether this system shows process start times (`/proc`), so one must match.
    proc_times: bool,
    /// The directory, held (`O_PATH`): kept open as long as any clone of this lives.
    fd: std::sync::Arc<std::os::fd::OwnedFd>,
    /// Whether `/proc/self/fd/N` names the descriptor (see [`Here::at`]).
    by_proc: bool,
}

/// Why the directory `here` (kept in the state directory `state`) has a live referee, if it has
/// one: the event log's lock is held, or the heartbeat is fresh (not finished) and its pid runs.
pub fn referee(here: &Here, state: &Path) -> Option<String> {
    if super::lock::locked_by_other(state) {
        return Some(format!(
            "another process holds the lock on `{}`",
            state.join(super::lock::EVENTS_FILE).display()
        ));
    }
    watched_by(here, state)
}

/// Whether a live referee keeps `state` for the directory `here`: its heartbeat judged
/// ([`judge`]) and the event log's lock held by another process.
pub fn live(state: &Path, here: &Here, stale: Option<Duration>) -> Liveness {
    let verdict = match heartbeat::read(state) {
        Ok(hb) => judge(&hb, here, Utc::now(), stale, &process),
        Err(e) => Liveness::NotLive(crate::error::chain(&e)),
    };
    if !matches!(verdict, Liveness::NotLive(_)) && !super::lock::locked_by_other(state) {
        return Liveness::NotLive(format!(
            "no process holds the lock on the event log in the state directory `{}` (the heartbeat was not written by a live referee)",
            state.display()
        ));
    }
    verdict
}

/// Why a live referee watches the directory `here` now, judged exactly as `status
/// --require-live` judges it; `None` when none does (`verify --write` refuses a directory a
/// live referee owns).
pub fn watched_by(here: &Here, state: &Path) -> Option<String> {
    let hb = heartbeat::read(state).ok()?;
    match judge(&hb, here, Utc::now(), None, &process) {
        Liveness::NotLive(_) => None,
        Liveness::Live | Liveness::StopWanted(_) => Some(format!(
            "`{}` is fresh and pid {} runs",
            heartbeat::HEARTBEAT_FILE,
            hb.pid
        )),
    }
}

/// Why the live referee whose memory is `state` does not vouch for the directory `here`
/// although it runs: its heartbeat (fresh enough to be believed or not) names another directory
/// identity or another path, and its event log is locked by a live process. The directory at the
/// path was swapped for a copy, re-created, renamed or mounted over, and the referee has not
/// judged what is there now: `status` answers "no live referee" (3), never go.
pub fn watches_another(state: &Path, here: &Here) -> Option<String> {
    let hb = heartbeat::read(state).ok()?;
    if hb.state == heartbeat::FINISHED {
        return None;
    }
    let same_dir = hb.dir.is_some_and(|id| id.same(&here.dir));
    let same_path = hb.build_dir == here.canon.display().to_string();
    if (same_dir && same_path) || !super::lock::locked_by_other(state) {
        return None;
    }
    Some(if same_dir {
        format!(
            "the live referee (pid {}) watches this directory at `{}`, not at `{}`: it was renamed, moved or reached through a link, and the referee has not judged it there",
            hb.pid,
            hb.build_dir,
            here.canon.display()
        )
    } else {
        format!(
            "the live referee (pid {}) watches another directory at `{}` ({}), not the one there now ({}): it was swapped for a copy, re-created or mounted over, and the referee has not judged it yet",
            hb.pid,
            hb.build_dir,
            hb.dir.map_or_else(|| "no identity".to_string(), |d| d.to_string()),
            here.dir
        )
    })
}

/// Whether the live referee whose memory is `state` is about to judge `here` without being
/// asked: it watches the directory that was at this very path until it was swapped for a copy
/// or re-created, and is live in every other way (judged as [`live`] judges it, with the
/// identity its heartbeat names). Such a referee looks at its path again at every heartbeat and
/// re-attaches to what is there (a full rescan), so `status --sync` waits for it rather than
/// answering "no live referee" to an honest `cp -a` and rename. A rename or a move (another
/// path) is not this: the referee does not follow a directory to its new name.
pub fn reattaching(state: &Path, here: &Here, stale: Option<Duration>) -> bool {
    let Ok(hb) = heartbeat::read(state) else {
        return false;
    };
    let Some(was) = hb.dir.filter(|id| !id.same(&here.dir)) else {
        return false;
    };
    if hb.build_dir != here.canon.display().to_string() {
        return false;
    }
    let before = Here {
        dir: was,
        ..here.clone()
    };
    let verdict = judge(&hb, &before, Utc::now(), stale, &process);
    !matches!(verdict, Liveness::NotLive(_)) && super::lock::locked_by_other(state)
}

/// Another referee that watches the directory `here` now, as the heartbeat copy it keeps in the
/// watched directory says (`OBSERVER-HEARTBEAT.json` there, or in `.referee/`): that heartbeat
/// judged live for this very directory, its pid not this process, and that pid running the same
/// program as this one (so a heartbeat forged by the watched side, naming some live process,
/// cannot keep a referee from starting). Its pid and the heartbeat's path.
pub fn rival(here: &Here) -> Option<(u32, PathBuf)> {
    let me = std::process::id();
    [
        here.canon.clone(),
        here.canon.join(crate::workspace::OUTPUT_DIR),
    ]
    .into_iter()
    .find_map(|d| {
        let hb = heartbeat::read(&d).ok()?;
        if hb.pid == me || !same_program(hb.pid) {
            return None;
        }
        match judge(&hb, here, Utc::now(), None, &process) {
            Liveness::Live | Liveness::StopWanted(_) => {
                Some((hb.pid, d.join(heartbeat::HEARTBEAT_FILE)))
            }
            Liveness::NotLive(_) => None,
        }
    })
}

/// Whether a lock on the watched directory, held by `holders` (what
/// [`super::lock::hold_dir`] found), keeps this referee out: yes when one of them is a referee
/// (this process too: two sessions on one directory), or when the kernel named none (the
/// holder cannot be told apart). A lock held only by processes that are no referee (a worker's
/// `flock(1)` on its build) keeps no one out: the lock is there to tell two referees apart,
/// not to let whoever takes it first switch the referee off.
pub fn lock_keeps_out(holders: &[u32]) -> bool {
    holders.is_empty() || holders.iter().any(|&pid| same_program(pid))
}

/// What to say of the processes `holders`: `pid 12 (flock)`.
pub fn describe(holders: &[u32]) -> String {
    holders
        .iter()
        .map(|pid| {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            match comm.trim() {
                "" => format!("pid {pid}"),
                // A name of the process's own choosing: no control character reaches a line.
                name => {
                    let name: String = name
                        .chars()
                        .map(|c| if c.is_control() { '?' } else { c })
                        .collect();
                    format!("pid {pid} ({name})")
                }
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// Whether the process `pid` is a referee: it runs the same executable as this one
/// (`/proc/PID/exe`, an upgraded binary's ` (deleted)` aside), or it runs as this process's
/// user under the same command name (another build of the referee). A process of another user
/// is no referee by its name alone: any process can name itself `referee` (`prctl`), and under
/// the other-user deployment the worker's processes are exactly those.
fn same_program(pid: u32) -> bool {
    let exe = |p: &str| {
        std::fs::read_link(format!("/proc/{p}/exe")).ok().map(|t| {
            let t = t.into_os_string().into_string().unwrap_or_default();
            t.strip_suffix(" (deleted)")
                .map(str::to_string)
                .unwrap_or(t)
        })
    };
    if let (Some(theirs), Some(mine)) = (exe(&pid.to_string()), exe("self")) {
        if theirs == mine {
            return true;
        }
    }
    let same_user = process_uid(pid) == Some(rustix::process::geteuid().as_raw());
    let comm = |p: &str| std::fs::read_to_string(format!("/proc/{p}/comm")).ok();
    same_user && matches!((comm(&pid.to_string()), comm("self")), (Some(a), Some(b)) if a == b)
}

/// The effective user id of the process `pid` (`/proc/PID/status`, readable by every user).
fn process_uid(pid: u32) -> Option<u32> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("Uid:"))?;
    line.split_whitespace().nth(2)?.parse().ok()
}

/// The most state directories [`keeper`] looks through.
const KEEPER_SCAN_MAX: usize = 4096;

/// The state directory under `base` of a live referee that watches the directory `here` (asked
/// about as `given`) although its default name says otherwise: the directory was renamed, moved,
/// swapped for a copy or re-created since the referee started, and the referee has not (yet)
/// moved its memory to the new name. Only a referee whose event log is locked by a live process
/// counts: the memory of a referee that finished or died says nothing about a new directory.
pub fn keeper(base: &Path, here: &Here, given: &Path) -> Option<PathBuf> {
    let given = std::path::absolute(given).ok();
    let canon = here.canon.display().to_string();
    std::fs::read_dir(base)
        .ok()?
        .take(KEEPER_SCAN_MAX)
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .map(|e| e.path())
        .find(|state| {
            let Ok(hb) = heartbeat::read(state) else {
                return false;
            };
            let names_it = hb.dir.is_some_and(|id| id.same(&here.dir))
                || hb.build_dir == canon
                || given
                    .as_ref()
                    .is_some_and(|g| hb.build_dir == g.display().to_string());
            names_it && hb.state != heartbeat::FINISHED && super::lock::locked_by_other(state)
        })
}

impl Here {
    /// What `dir` names now, looked at once: the directory is opened (a link on the way is
    /// followed, as a path given on the command line is) and its identity and canonical path
    /// are both read from that one descriptor, so they are the same directory's even while a
    /// link on the way is swapped.
    pub fn of(dir: &Path) -> Result<Here, LookError> {
        Here::open(dir, true)
    }

    /// [`Here::of`], except that a symbolic link at `dir` itself is never followed: it is
    /// [`LookError::Symlink`] (a build under `--root` is a directory; a link found at its
    /// name would take the referee's memory wherever it points). Links above it are followed.
    pub fn of_unfollowed(dir: &Path) -> Result<Here, LookError> {
        Here::open(dir, false)
    }

    fn open(dir: &Path, follow: bool) -> Result<Here, LookError> {
        use rustix::fs::OFlags;
        let path = dir.display().to_string();
        // Without `O_DIRECTORY` when a link is not to be followed: the link itself is opened
        // then, and told apart from a directory by what the descriptor is.
        let flags = if follow {
            OFlags::PATH | OFlags::DIRECTORY | OFlags::CLOEXEC
        } else {
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC
        };
        let fd = rustix::fs::open(dir, flags, rustix::fs::Mode::empty()).map_err(|e| match e {
            rustix::io::Errno::NOTDIR => LookError::NotDir { path: path.clone() },
            e => LookError::Io {
                path: path.clone(),
                source: e.into(),
            },
        })?;
        Here::held(fd, dir)
    }

    /// What the directory open at `fd` is (`shown` names it in errors): its identity, and its
    /// path as the kernel has it for the descriptor (no link followed again). A directory moved
    /// or replaced while it was looked at (the path no longer names it) is an error, never
    /// another directory's answer. The descriptor is duplicated and held.
    pub fn of_fd(fd: std::os::fd::BorrowedFd<'_>, shown: &Path) -> Result<Here, LookError> {
        let own = fd.try_clone_to_owned().map_err(|source| LookError::Io {
            path: shown.display().to_string(),
            source,
        })?;
        Here::held(own, shown)
    }

    fn held(fd: std::os::fd::OwnedFd, shown: &Path) -> Result<Here, LookError> {
        use std::os::fd::AsRawFd;
        let path = shown.display().to_string();
        let io = |source: std::io::Error| LookError::Io {
            path: path.clone(),
            source,
        };
        let file = std::fs::File::from(fd);
        let meta = file.metadata().map_err(io)?;
        if meta.file_type().is_symlink() {
            return Err(LookError::Symlink { path });
        }
        if !meta.is_dir() {
            return Err(LookError::NotDir { path });
        }
        let dir = DirId::from_meta(&meta);
        let (canon, by_proc) =
            match std::fs::read_link(format!("/proc/self/fd/{}", file.as_raw_fd())) {
                Ok(canon) if canon.is_absolute() => (canon, true),
                // No `/proc`: the path is resolved again, and must lead to the same directory.
                _ => (std::fs::canonicalize(shown).map_err(io)?, false),
            };
        match DirId::of(&canon) {
            Ok(now) if now.same(&dir) => {}
            _ => return Err(LookError::Replaced { path }),
        }
        Ok(Here {
            dir,
            canon,
            proc_times: heartbeat::has_proc(),
            fd: std::sync::Arc::new(file.into()),
            by_proc,
        })
    }

    /// The directory's identity, read from its descriptor.
    pub fn dir(&self) -> DirId {
        self.dir
    }

    /// Its canonical path, as the kernel had it for the descriptor when it was opened.
    pub fn canon(&self) -> &Path {
        &self.canon
    }

    /// Whether this system shows process start times, so a heartbeat's must match.
    pub fn proc_times(&self) -> bool {
        self.proc_times
    }

    /// The held descriptor (`O_PATH`: for `*at` calls and `fstat`, not for reading).
    pub fn fd(&self) -> std::os::fd::BorrowedFd<'_> {
        std::os::fd::AsFd::as_fd(&*self.fd)
    }

    /// A path that leads to this very directory while `self` lives, whatever is put at its
    /// path meanwhile: `/proc/self/fd/N`, which the kernel resolves to the descriptor's
    /// directory without reading a path again (what is joined to it is looked up beneath that
    /// directory). Where there is no `/proc`, its canonical path (looked up again: the best
    /// there is). Only for this process (a child has its own `/proc/self`), and never to be
    /// canonicalized (`realpath` would resolve the path it reads back, a second lookup).
    pub fn at(&self) -> PathBuf {
        use std::os::fd::AsRawFd;
        if self.by_proc {
            PathBuf::from(format!("/proc/self/fd/{}", self.fd.as_raw_fd()))
        } else {
            self.canon.clone()
        }
    }

    /// A descriptor of the directory opened for reading (to list it, or to write beneath it),
    /// opened from the held one: the same directory, wherever it has been moved since.
    pub fn reopen(&self) -> std::io::Result<std::os::fd::OwnedFd> {
        use rustix::fs::OFlags;
        Ok(rustix::fs::openat(
            self.fd(),
            ".",
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC,
            rustix::fs::Mode::empty(),
        )?)
    }
}

/// Why the directory asked about cannot be looked at.
#[derive(Debug, thiserror::Error)]
pub enum LookError {
    #[error("cannot read build directory `{path}`")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("`{path}` is not a directory")]
    NotDir { path: String },
    #[error("`{path}` is a symbolic link (never followed here: a link could lead anywhere)")]
    Symlink { path: String },
    #[error("`{path}` was moved or replaced while it was looked at")]
    Replaced { path: String },
}

impl LookError {
    /// The cause as an I/O error, for a caller whose error keeps one (`ENOTDIR` for what is
    /// no directory, `ELOOP` for a link not followed, `ESTALE` for a directory replaced).
    pub fn into_io(self) -> std::io::Error {
        match self {
            LookError::Io { source, .. } => source,
            LookError::NotDir { .. } => std::io::Error::from_raw_os_error(libc::ENOTDIR),
            LookError::Symlink { .. } => std::io::Error::from_raw_os_error(libc::ELOOP),
            LookError::Replaced { .. } => std::io::Error::from_raw_os_error(libc::ESTALE),
        }
    }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::state::heartbeat::write;

    #[test]
    fn a_stopped_process_is_not_live() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let h = heartbeat::of_this_process(d, Duration::ZERO, heartbeat::WATCHING);
        let here = Here::of(d).unwrap();
        assert!(verdict(&h, &here, &|_| Proc::Stopped).contains("stopped"));
    }

    fn verdict(h: &Heartbeat, here: &Here, procs: &dyn Fn(u32) -> Proc) -> String {
        match judge(h, here, Utc::now(), None, procs) {
            Liveness::Live => "live".into(),
            Liveness::StopWanted(_) => "stop".into(),
            Liveness::NotLive(why) => why,
        }
    }

    #[test]
    fn only_a_sane_heartbeat_from_this_directory_and_this_process_is_live() {
        let root = tempfile::tempdir().unwrap();
        let d = root.path().join("b");
        std::fs::create_dir(&d).unwrap();
        let here = Here::of(&d).unwrap();
        let good = heartbeat::of_this_process(&d, Duration::ZERO, heartbeat::WATCHING);
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
        let there = Here::of(&copy).unwrap();
        assert!(verdict(&good, &there, &running).contains("another directory"));
        std::fs::remove_dir(&d).unwrap();
        std::fs::create_dir(&d).unwrap();
        let recreated = Here::of(&d).unwrap();
        if recreated.dir.born_ns.is_some() || recreated.dir.ino != here.dir.ino {
            assert!(verdict(&good, &recreated, &running).contains("another directory"));
        }
    }

    #[test]
    fn a_live_referee_is_a_fresh_heartbeat_of_a_running_pid_or_a_held_log_lock() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let here = Here::of(d).unwrap();
        let beat = |pid: u32, state: &str, age: u64| {
            let mut h = heartbeat::of_this_process(d, Duration::from_secs(age), state);
            h.pid = pid;
            write(d, &h).unwrap();
        };
        assert_eq!(referee(&here, d), None, "nothing there");
        beat(std::process::id(), heartbeat::WATCHING, 0);
        let why = referee(&here, d).unwrap();
        assert!(why.contains("is fresh and pid"), "{why}");
        beat(std::process::id(), heartbeat::FINISHED, 0);
        assert_eq!(referee(&here, d), None, "finished");
        beat(std::process::id(), heartbeat::WATCHING, 60);
        assert_eq!(referee(&here, d), None, "stale");
        beat(0, heartbeat::WATCHING, 0);
        assert_eq!(referee(&here, d), None, "no such pid");
        let log = super::super::lock::lock(d).unwrap();
        let why = referee(&here, d).unwrap();
        assert!(why.contains("holds the lock"), "{why}");
        drop(log);
        assert_eq!(referee(&here, d), None);
    }
}
