//! From the event source's thread to the loop: which session a path belongs to ([`Router`]), and
//! the callback that turns the source's events into work ([`sink`]).

use std::collections::BTreeMap;
use std::os::unix::ffi::OsStrExt;
use std::path::{Component, Path, PathBuf};
use std::sync::mpsc::Sender;
use std::sync::Arc;

use super::barrier::Cookies;
use super::{Inbox, Msg};
use crate::artifacts::escape_name;
use crate::checks::is_own_file;
use crate::fsevents::{ChangeKind, FsEvent};
use crate::outputs::STOP_FILE;

/// Which session a path belongs to: one build directory (every path is the one session's, named
/// `""`), or a root whose immediate subdirectories are the sessions.
#[derive(Debug, Clone)]
pub(super) struct Router {
    pub(super) base: PathBuf,
    pub(super) root: bool,
}

impl Router {
    /// `(session, relative path)` in the snapshot's escaped form (so a change and the entry it
    /// touched agree even for a name with invalid UTF-8 or a newline); `None` outside, or the
    /// root itself under `--root`.
    pub(super) fn route(&self, path: &Path) -> Option<(String, String)> {
        let rel = path.strip_prefix(&self.base).ok()?;
        if !self.root {
            return Some((String::new(), escape(rel)));
        }
        let mut parts = rel.components();
        let Some(Component::Normal(first)) = parts.next() else {
            return None;
        };
        Some((
            escape_name(first.as_bytes()).into_owned(),
            escape(parts.as_path()),
        ))
    }
}

fn escape(rel: &Path) -> String {
    escape_name(rel.as_os_str().as_bytes()).into_owned()
}

/// Turns the source's events into work, on the source's thread (no blocking but a short lock, no
/// I/O): changes go into their build's queue in the [`Inbox`], and the loop is told of a build
/// only when it was not waiting yet.
pub(super) fn sink(
    router: Router,
    source: u64,
    inbox: Arc<Inbox>,
    cookies: Option<Arc<Cookies>>,
    tx: Sender<Msg>,
) -> impl FnMut(FsEvent) + Send + Clone {
    move |ev: FsEvent| match ev {
        FsEvent::Changed(changes) => {
            let mut per: BTreeMap<String, Vec<(String, ChangeKind)>> = BTreeMap::new();
            let mut cookie = Vec::new();
            for c in changes {
                if let Some(k) = cookies.as_ref().filter(|k| k.holds(&c.path)) {
                    // A judgment's barrier (see `barrier`): no build's change. Seen once what
                    // came before it is in the inbox.
                    cookie.push((k, c));
                    continue;
                }
                let Some((name, rel)) = router.route(&c.path) else {
                    continue;
                };
                if rel.is_empty() {
                    // A build directory itself: the session checks what its path names now
                    // (deleted, moved: the watch on it is gone); under --root it may be new.
                    let lost = c.kind == ChangeKind::Removed;
                    let _ = tx.send(Msg::Dir { name, lost, source });
                } else if rel == STOP_FILE
                    || crate::daemon::session::pass_id(&rel).is_some()
                    || !is_own_file(&rel)
                    || crate::state::sync::token_of(&rel).is_some()
                {
                    // The referee's own writes are no work; the STOP file is checked for
                    // tampering; a `status --sync` token is a barrier to acknowledge.
                    per.entry(name).or_default().push((rel, c.kind));
                }
            }
            for (name, changes) in per {
                if inbox.add(&name, changes) {
                    let _ = tx.send(Msg::Ready(name));
                }
            }
            for (k, c) in cookie {
                k.saw(&c.path, c.kind);
            }
        }
        FsEvent::Rescan { why } => {
            let _ = tx.send(Msg::Rescan(why));
        }
        FsEvent::Limit { message, .. } => {
            let _ = tx.send(Msg::Limit(message));
        }
    }
}
