//! Whether the build directory's path still names the directory the daemon is attached to. A
//! watch is on an inode, not on a path: when the build directory is deleted and re-created,
//! renamed away, or replaced by a mount, the path names another directory (or nothing) while the
//! old watches go on reporting the old one, or nothing at all. A daemon that kept beating then
//! would say "live" while blind.
//!
//! This module owns the pure decision ([`decide`]) of what to do with what the path names now
//! (its identity is a [`DirId`]): stay, detach, or re-attach. It must not watch, scan or write:
//! the daemon does that with the decision.

use crate::state::dir_id::DirId;

/// Where the daemon stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum State {
    /// Watching this directory (the one the path named when it attached).
    Attached(DirId),
    /// The path names no directory the daemon can watch; it looks again at every heartbeat.
    Detached,
}

/// What the daemon must do about what the path names now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Action {
    /// Nothing changed.
    Stay,
    /// The path names nothing usable: stop watching, stop writing, say so.
    Detach,
    /// The path names a directory the daemon is not watching: new watches, a full scan, and its
    /// files written there.
    Reattach(DirId),
}

/// The transition. `now`: what the path names (or `None` when nothing usable); `watch_lost`: the
/// event source reported the root itself deleted or moved, so its watch is gone even if the
/// identity looks the same (an inode number reused at once, or a directory renamed away and back).
pub fn decide(state: &State, now: Option<DirId>, watch_lost: bool) -> Action {
    match (state, now) {
        (State::Attached(_), None) => Action::Detach,
        (State::Attached(was), Some(id)) if was.same(&id) && !watch_lost => Action::Stay,
        (_, Some(id)) => Action::Reattach(id),
        (State::Detached, None) => Action::Stay,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(ino: u64, born: Option<u64>) -> DirId {
        DirId {
            dev: 1,
            ino,
            born_ns: born,
        }
    }

    #[test]
    fn transitions() {
        let a = id(10, Some(5));
        let attached = State::Attached(a);
        assert_eq!(decide(&attached, Some(a), false), Action::Stay);
        assert_eq!(decide(&attached, Some(a), true), Action::Reattach(a));
        assert_eq!(decide(&attached, None, false), Action::Detach);
        assert_eq!(decide(&attached, None, true), Action::Detach);
        let b = id(11, Some(6));
        assert_eq!(decide(&attached, Some(b), false), Action::Reattach(b));
        // The inode number came back, but the directory was born later: another directory.
        let reused = id(10, Some(7));
        assert_eq!(
            decide(&attached, Some(reused), false),
            Action::Reattach(reused)
        );
        assert_eq!(decide(&State::Detached, None, false), Action::Stay);
        assert_eq!(
            decide(&State::Detached, Some(b), false),
            Action::Reattach(b)
        );
    }
}
