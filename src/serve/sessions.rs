//! How long `referee serve` keeps a session's pinned workspace (`hook-sessions/` in its state).
//!
//! Each hook call of a session marks its pin as heard from (the pin file's modification time,
//! set by the daemon: the agent cannot write there). A pin not heard from for
//! `--forget-sessions-after` (30 days by default: as long as Claude Code keeps a session's
//! transcript for `--resume`) is removed when the daemon starts and every hour after. A live
//! session is heard from at each event, so it is never unpinned; a pin is never removed because
//! its workspace is gone (a session that deleted its workspace would otherwise be pinned anew
//! wherever its `cwd` is at its next event, and judged there from scratch). The session's
//! attempts and verdicts stay in its workspace's state directory; only the pin goes.

use std::path::Path;
use std::time::{Duration, SystemTime};

/// How often the daemon looks for pins to forget.
pub const SWEEP_EVERY: Duration = Duration::from_secs(3600);

/// The default `--forget-sessions-after`.
pub const DEFAULT_FORGET_AFTER: &str = "30d";

/// Removes from `dir` the session pins (`*.workspace`) not heard from for `after`, and the
/// pins' temporary files left by a daemon that stopped midway (older than `after` too); returns
/// how many were removed. (A session silent that long whose next event comes at the very
/// moment of the removal is pinned anew, like any session past the lifetime.)
pub fn forget_stale(dir: &Path, after: Duration) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let stale = |path: &Path| {
        std::fs::symlink_metadata(path)
            .ok()
            .filter(|m| m.file_type().is_file())
            .and_then(|m| m.modified().ok())
            .and_then(|t| SystemTime::now().duration_since(t).ok())
            .is_some_and(|age| age > after)
    };
    let mut removed = 0;
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let ours = name.ends_with(".workspace") || name.contains(".tmp");
        if ours && stale(&path) && std::fs::remove_file(&path).is_ok() {
            tracing::info!("forgot the session pin `{}`", path.display());
            removed += 1;
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn aged(path: &Path, days: u64) {
        std::fs::write(path, "/somewhere\n").unwrap();
        let t = SystemTime::now() - Duration::from_secs(days * 86_400);
        std::fs::File::options()
            .append(true)
            .open(path)
            .unwrap()
            .set_modified(t)
            .unwrap();
    }

    #[test]
    fn only_pins_not_heard_from_for_longer_than_the_lifetime_are_forgotten() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        aged(&d.join("claude-code-old.workspace"), 31);
        aged(&d.join("claude-code-live.workspace"), 29);
        aged(&d.join("claude-code-left.tmp123"), 40);
        aged(&d.join("unrelated.json"), 400);
        std::fs::create_dir(d.join("dir.workspace")).unwrap();
        let after = Duration::from_secs(30 * 86_400);
        assert_eq!(forget_stale(d, after), 2);
        assert!(!d.join("claude-code-old.workspace").exists());
        assert!(!d.join("claude-code-left.tmp123").exists());
        assert!(d.join("claude-code-live.workspace").is_file());
        assert!(d.join("unrelated.json").is_file());
        assert!(d.join("dir.workspace").is_dir());
        assert_eq!(forget_stale(d, after), 0);
        assert_eq!(forget_stale(&d.join("missing"), after), 0);
    }
}
