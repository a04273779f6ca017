//! The barrier a judgment passes before it is published: every change made before the
//! judgment's reads ended has reached the inbox.
//!
//! Events lag behind the files: a judgment started for one change may read a file whose own
//! change (an editor's save begun a moment ago, a writer's next chunk) is still on its way to
//! the inbox. Judged from the settle state as it stood, that half-written file would look
//! complete (renamed in before, or removed: nothing left to wait for), and its half would be
//! published: an honest record REJECTed, an honest tracker STOPped.
//!
//! After its reads, a judgment creates a cookie, a file of its own in a private folder that the
//! event source watches on the same inotify instance as the build (one queue, in order, as
//! watchman does), and waits until the cookie's event has been seen. Every change made before
//! the cookie is then in the inbox; the session looks at what waits there for its directory and
//! holds what it shows still moving, exactly as if the judgment had been started after those
//! events (see [`crate::daemon::session`]). The cookie lives outside every watched directory:
//! nothing of it is in the worker's tree or the build directory.
//!
//! Polling has no barrier (nothing orders a poll's findings with a judgment's reads; a poll
//! reports every change as a write, which settles anyway), nor has a source whose cookie folder
//! cannot be watched; a cookie whose event does not come within [`WAIT`] (a lost event, which a
//! rescan follows) is given up on. Without the barrier a judgment is published as it was read.
//!
//! This module must not judge: it answers "what has arrived for this build meanwhile".

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::Inbox;
use crate::daemon::session::Barrier;
use crate::fsevents::ChangeKind;

/// The longest a judgment waits for its cookie's event.
pub(super) const WAIT: Duration = Duration::from_secs(2);

/// The cookies of one process: their folder, and the newest seen.
#[derive(Debug)]
pub(super) struct Cookies {
    dir: tempfile::TempDir,
    /// The folder as the event source names it (canonical, so the sink recognizes it).
    canon: PathBuf,
    next: AtomicU64,
    seen: Mutex<u64>,
    arrived: Condvar,
    /// The current event source watches the folder (native, and its watch on it was added).
    active: AtomicBool,
    /// The number the cookie file kept between two barriers has now (`None`: none made yet,
    /// or it is gone).
    kept: Mutex<Option<u64>>,
}

impl Cookies {
    /// A private folder for the cookies, in the system's temporary folder; `None` when none can
    /// be made (the judgments then go without a barrier).
    pub(super) fn new() -> Option<Arc<Cookies>> {
        use std::os::unix::fs::PermissionsExt as _;
        let tmp = std::env::temp_dir();
        // What referees killed before they could remove theirs left behind.
        sweep(&tmp);
        // Only this user may put a cookie there (tempfile makes folders with the umask's mode).
        // Named with the pid, so a later referee can tell whose it was.
        let dir = tempfile::Builder::new()
            .prefix(&format!("{PREFIX}{}-", std::process::id()))
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .ok()?;
        let canon = std::fs::canonicalize(dir.path()).ok()?;
        Some(Arc::new(Cookies {
            dir,
            canon,
            next: AtomicU64::new(1),
            seen: Mutex::new(0),
            arrived: Condvar::new(),
            active: AtomicBool::new(false),
            kept: Mutex::new(None),
        }))
    }

    /// The folder to watch beside the build.
    pub(super) fn dir(&self) -> &Path {
        &self.canon
    }

    /// Whether the current event source delivers the cookies' events.
    pub(super) fn set_active(&self, active: bool) {
        self.active.store(active, Ordering::SeqCst);
    }

    /// Whether `path` is in the cookies' folder.
    pub(super) fn holds(&self, path: &Path) -> bool {
        path.starts_with(&self.canon)
    }

    /// Removes the folder and stops the barrier (the loop ends: the source's thread, which
    /// holds the last reference, may outlive the process's exit, so dropping would not do it).
    pub(super) fn close(&self) {
        self.set_active(false);
        let _ = std::fs::remove_dir_all(self.dir.path());
    }

    /// On the source's thread, once every change reported before it is in the inbox: a cookie
    /// at `path` was seen (its removal moves nothing).
    pub(super) fn saw(&self, path: &Path, kind: ChangeKind) {
        let Ok(rel) = path.strip_prefix(&self.canon) else {
            return;
        };
        if kind == ChangeKind::Removed {
            return;
        }
        let n = rel
            .to_str()
            .and_then(|n| n.strip_prefix('c'))
            .and_then(|n| n.parse::<u64>().ok());
        // Only a cookie this process has already made counts: anything else in the folder
        // (`c999999` put there by another process of this user) would pass every later barrier
        // at once.
        if let Some(n) = n.filter(|&n| n < self.next.load(Ordering::SeqCst)) {
            let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
            if n > *seen {
                *seen = n;
                self.arrived.notify_all();
            }
        }
    }

    /// Makes a cookie and waits for its event; whether it came (within [`WAIT`]).
    ///
    /// The cookie is one file, kept between two barriers and renamed to each new number (made
    /// the first time, or when it is gone): a rename makes its event with no file made or
    /// removed. On a file system that keeps freed inodes apart for a while (ext4 without a
    /// journal), every new file costs a search past the recently freed ones, and a new cookie
    /// per judgment was a third of the daemon's time between a violation and its STOP.
    fn pass(&self) -> bool {
        if !self.active.load(Ordering::SeqCst) {
            return false;
        }
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        // Never a name already there: a cookie made in advance by someone else made its event
        // before this one was counted (ignored), and renaming over it would not be ours alone.
        let made = (0..4).find_map(|_| {
            let n = self.next.fetch_add(1, Ordering::SeqCst);
            let to = self.dir.path().join(format!("c{n}"));
            let done = match *kept {
                Some(k) => rustix::fs::renameat_with(
                    rustix::fs::CWD,
                    self.dir.path().join(format!("c{k}")),
                    rustix::fs::CWD,
                    &to,
                    rustix::fs::RenameFlags::NOREPLACE,
                )
                .map_err(std::io::Error::from),
                None => std::fs::File::create_new(&to).map(drop),
            };
            match done {
                Ok(()) => Some(Ok(n)),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => None,
                // The kept cookie is gone (or cannot be renamed): a new one.
                Err(_) if kept.is_some() => {
                    *kept = None;
                    None
                }
                Err(e) => Some(Err(e)),
            }
        });
        let Some(Ok(n)) = made else {
            return false;
        };
        *kept = Some(n);
        drop(kept);
        let until = Instant::now() + WAIT;
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        while *seen < n {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            seen = self
                .arrived
                .wait_timeout(seen, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        let came = *seen >= n;
        if !came {
            // What else can publish a half-written file as it was read: said, as the settle
            // model says a writer held past `--settle-max`.
            tracing::debug!(
                wait_ms = WAIT.as_millis() as u64,
                "still waiting for the barrier's cookie: judged as read"
            );
        }
        came
    }
}

/// The start of a cookie folder's name, before its owner's pid.
const PREFIX: &str = ".referee-cookies-";

/// Removes the cookie folders in `tmp` that a referee killed with `SIGKILL` (or by the kernel
/// for memory) left behind: a folder of this user, a directory (never followed), named for a
/// pid that no longer runs. A recycled pid keeps a stale folder until the next look: it holds
/// a few empty files at most.
fn sweep(tmp: &Path) {
    use std::os::unix::fs::MetadataExt as _;
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    let me = rustix::process::geteuid().as_raw();
    for e in entries.flatten() {
        let name = e.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix(PREFIX))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        let ours = std::fs::symlink_metadata(e.path()).is_ok_and(|m| m.is_dir() && m.uid() == me);
        if ours && pid != std::process::id() && !Path::new(&format!("/proc/{pid}")).exists() {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// One build's barrier: the process's cookies and the build's queue.
pub(super) fn for_build(cookies: &Arc<Cookies>, inbox: &Arc<Inbox>, name: &str) -> Barrier {
    let (cookies, inbox, name) = (cookies.clone(), inbox.clone(), name.to_string());
    Box::new(move || cookies.pass().then(|| inbox.peek(&name)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_folders_of_referees_gone_are_swept_and_no_other() {
        let tmp = tempfile::tempdir().unwrap();
        // A pid above the kernel's largest (4,194,304) never runs.
        let gone = tmp.path().join(format!("{PREFIX}9999999-abc"));
        let mine = tmp
            .path()
            .join(format!("{PREFIX}{}-abc", std::process::id()));
        let parent = tmp.path().join(format!("{PREFIX}1-abc"));
        let unnamed = tmp.path().join(format!("{PREFIX}abcdef"));
        let other = tmp.path().join("something-else-9999999-abc");
        for d in [&gone, &mine, &parent, &unnamed, &other] {
            std::fs::create_dir(d).unwrap();
            std::fs::write(d.join("c1"), "").unwrap();
        }
        // A link named like a folder of a process gone: left alone, never followed.
        let target = tmp.path().join("target");
        std::fs::create_dir(&target).unwrap();
        std::fs::write(target.join("keep"), "").unwrap();
        let link = tmp.path().join(format!("{PREFIX}9999998-abc"));
        std::os::unix::fs::symlink(&target, &link).unwrap();
        sweep(tmp.path());
        assert!(!gone.exists(), "a folder of a pid that no longer runs");
        for kept in [&mine, &parent, &unnamed, &other] {
            assert!(kept.join("c1").exists(), "{}", kept.display());
        }
        assert!(target.join("keep").exists(), "a link is never followed");
    }

    /// The source's thread: reports the cookie `name` as `kind` once it is there.
    fn seer(cookies: &Arc<Cookies>, name: &str, kind: ChangeKind) -> std::thread::JoinHandle<()> {
        let (c, name) = (cookies.clone(), name.to_string());
        std::thread::spawn(move || loop {
            let p = c.dir().join(&name);
            if p.exists() {
                assert!(c.holds(&p));
                c.saw(&p, kind);
                return;
            }
            std::thread::yield_now();
        })
    }

    #[test]
    fn a_cookie_passes_once_its_event_is_seen_and_not_before() {
        let cookies = Cookies::new().expect("a cookie folder");
        // No source watches the folder: no barrier, at once.
        assert!(!cookies.pass());
        cookies.set_active(true);
        let seen = seer(&cookies, "c1", ChangeKind::Written);
        assert!(cookies.pass(), "the cookie's event was seen");
        seen.join().expect("seer");
        assert!(
            cookies.dir().join("c1").exists(),
            "the cookie is kept for the next barrier"
        );
        // Paths outside the folder are no cookies; a cookie's removal moves nothing.
        assert!(!cookies.holds(Path::new("/elsewhere/c9")));
        cookies.saw(&cookies.dir().join("c9"), ChangeKind::Removed);
        assert_eq!(*cookies.seen.lock().unwrap(), 1);
        // A cookie this process never made (another process of the same user writing into the
        // folder) counts for nothing, ahead of its number or at the next one.
        for forged in ["c999999", "c2", "c3"] {
            let p = cookies.dir().join(forged);
            std::fs::write(&p, "planted").unwrap();
            cookies.saw(&p, ChangeKind::Written);
        }
        assert_eq!(
            *cookies.seen.lock().unwrap(),
            1,
            "no forged cookie is believed"
        );
        // The kept cookie is renamed past the names taken (`c2`, `c3`): its own event passes
        // it, and no file is made for it.
        let seen = seer(&cookies, "c4", ChangeKind::RenamedIn);
        assert!(cookies.pass(), "a cookie of its own, past the ones planted");
        seen.join().expect("seer");
        assert_eq!(*cookies.seen.lock().unwrap(), 4);
        assert!(!cookies.dir().join("c1").exists(), "renamed, not copied");
        for planted in ["c2", "c3"] {
            assert_eq!(
                std::fs::read(cookies.dir().join(planted)).unwrap(),
                b"planted",
                "a planted name is never renamed over"
            );
        }
        // Someone removed the kept cookie: a new one is made.
        std::fs::remove_file(cookies.dir().join("c4")).unwrap();
        let seen = seer(&cookies, "c6", ChangeKind::Written);
        assert!(cookies.pass(), "a new cookie once the kept one is gone");
        seen.join().expect("seer");
        assert_eq!(*cookies.seen.lock().unwrap(), 6);
        // A cookie whose event never comes is given up on (a lost event: a rescan follows),
        // and the debug log says the judgment goes out as it was read.
        let at = Instant::now();
        let (passed, log) = crate::logging::captured(|| cookies.pass());
        assert!(!passed);
        assert!(at.elapsed() >= WAIT);
        assert!(
            log.contains("still waiting for the barrier's cookie: judged as read"),
            "{log}"
        );
    }
}
