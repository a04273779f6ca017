//! `--root`: finding the build directories under the root, and what is known of those without
//! a running session.

use std::os::unix::ffi::OsStrExt;
use std::time::Instant;

use super::Driver;
use crate::artifacts::escape_name;

use crate::daemon::session::Session;

/// A build directory under `--root` that has no running session.
#[derive(Debug)]
pub(super) enum Known {
    /// Its session finished (the pipeline completed); a new directory at the name starts anew.
    Finished(Option<crate::state::dir_id::DirId>),
    /// It could not be opened (another referee holds it, its log is under another protocol …):
    /// said once per reason, tried again at each look.
    Refused(String),
}

impl Driver {
    /// `--root`: lists the root; every subdirectory without a session gets one (hidden ones and
    /// symlinks excepted), unless its session finished and it is still the same directory.
    pub(super) fn look(&mut self) {
        let Some((template, protocol)) = &self.template else {
            return;
        };
        self.next_look = Some(Instant::now() + template.heartbeat);
        let root = template.build_dir.clone();
        let entries = match std::fs::read_dir(&root) {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!(
                    "cannot list the root `{}`: {}",
                    root.display(),
                    e.to_string().to_lowercase()
                );
                return;
            }
        };
        let mut found = Vec::new();
        for e in entries.flatten() {
            let os = e.file_name();
            let name = escape_name(os.as_bytes()).into_owned();
            if name.starts_with('.') || self.sessions.contains_key(&name) {
                continue;
            }
            if !e.file_type().is_ok_and(|t| t.is_dir()) {
                continue;
            }
            let path = root.join(&os);
            if let Some(Known::Finished(id)) = self.known.get(&name) {
                let now = crate::state::dir_id::DirId::of(&path).ok();
                if now.is_none() || matches!((id, now), (Some(a), Some(b)) if a.same(&b)) {
                    continue;
                }
            }
            found.push((name, path));
        }
        let (template, protocol) = (template.clone(), protocol.clone());
        let source = self.source_name();
        for (name, path) in found {
            // What arrived meanwhile goes first: the rest are found again at once.
            if let Ok(m) = self.rx.try_recv() {
                self.carry.push(m);
                self.next_look = Some(Instant::now());
                break;
            }
            let mut cfg = template.clone();
            // Each build its own memory: under `--state-dir` when given, else the default,
            // named by the session from the build as it opens it (never from this path looked
            // up a second time: a link swapped in meanwhile would name another's memory).
            cfg.build_dir = path;
            match Session::open(cfg, protocol.clone(), Some(name.clone())) {
                Ok(mut s) => {
                    self.known.remove(&name);
                    s.source_is(Ok(source.clone()));
                    s.barrier = self.barrier(&name);
                    s.announce(None);
                    // Judged among the timers, which look at the channel between two sessions:
                    // 500 builds found at once do not hold up a violation in one of them.
                    s.first_evaluation_due();
                    self.sessions.insert(name, s);
                }
                Err(e) => {
                    let why = crate::error::chain(&e);
                    if !matches!(self.known.get(&name), Some(Known::Refused(w)) if *w == why) {
                        tracing::warn!("`{name}` is not refereed: {why}");
                    }
                    self.known.insert(name, Known::Refused(why));
                }
            }
        }
    }
}
