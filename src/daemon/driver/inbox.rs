//! Per-build queues: what the event source saw in each build since that build's last turn.
//!
//! The event source's thread puts each change into its build's [`Batch`] here (a short lock, no
//! I/O, never a wait on the loop), and tells the loop a build is waiting only when it was not
//! already (so the loop's channel holds at most a few messages per build, however many events a
//! build makes). The loop takes one build's batch at a time, in turn. What a build piles up
//! between two turns is coalesced, not queued: the latest change per path, and past
//! [`MAX_PATHS`] paths their folders instead (each re-listed whole), or past that a rescan of the
//! build. A storm of events in one build therefore costs a bounded amount of memory and one
//! evaluation per turn, and never holds up another build's turn.
//!
//! This module must not judge, read files or keep time: the loop ([`super`]) decides whose turn
//! it is.

use std::collections::{BTreeSet, HashMap};
use std::sync::{Mutex, PoisonError};

use crate::daemon::session::Batch;
use crate::fsevents::ChangeKind;

/// The most paths one build keeps between two turns before they are coalesced into their folders.
pub(super) const MAX_PATHS: usize = 4096;

/// The most paths of one folder a batch keeps by name: past it the folder stands for them all
/// (re-listed whole at the build's turn: one walk of the folder instead of a look at each path,
/// and nothing more is kept for it). A writer renaming a few files into place is far below it;
/// a storm in one folder is coalesced into one entry. The files of a folded folder are judged
/// as recent writes by their mtime until they settle (see [`crate::daemon::rules::settle`]).
pub(super) const MAX_PER_FOLDER: usize = 64;

/// One build's waiting work.
#[derive(Debug, Default)]
struct Pending {
    batch: Batch,
    /// The loop has been told this build waits (and has not taken its batch yet).
    told: bool,
    /// The batch holds more than a rescan (a path, a directory event, a STOP touched, a token):
    /// work someone is waiting on, served before builds that only need a rescan.
    events: bool,
    /// How many of the batch's paths each folder holds directly (see [`MAX_PER_FOLDER`]).
    per_folder: HashMap<String, usize>,
    /// Folders that stand for every path under them in this batch.
    folded: BTreeSet<String>,
}

/// Every build's waiting work; shared by the event source's thread and the loop.
#[derive(Debug, Default)]
pub(super) struct Inbox {
    builds: Mutex<HashMap<String, Pending>>,
}

impl Inbox {
    fn with<T>(&self, name: &str, f: impl FnOnce(&mut Pending) -> T) -> T {
        let mut builds = self.builds.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(p) = builds.get_mut(name) {
            return f(p);
        }
        f(builds.entry(name.to_string()).or_default())
    }

    /// Adds changes of one build. Returns whether the loop must be told the build waits (it was
    /// not told yet, or it waited only for a rescan so far).
    pub fn add(&self, name: &str, changes: impl IntoIterator<Item = (String, ChangeKind)>) -> bool {
        self.with(name, |p| {
            for (rel, kind) in changes {
                p.add(rel, kind);
                if p.batch.paths.len() > MAX_PATHS {
                    coalesce(&mut p.batch);
                    // What is left is folders and top-level names: count afresh.
                    p.per_folder.clear();
                    p.folded.clear();
                }
            }
            p.tell(true)
        })
    }

    /// An event on the build directory itself (`lost`: its watch is gone).
    pub fn dir(&self, name: &str, lost: bool) -> bool {
        self.with(name, |p| {
            p.batch.root_lost |= lost;
            p.tell(true)
        })
    }

    /// Events may have been lost: the build looks at everything again.
    pub fn rescan(&self, name: &str, why: &str) -> bool {
        self.with(name, |p| {
            if !p.batch.rescan.iter().any(|w| w == why) {
                p.batch.rescan.push(why.to_string());
            }
            p.tell(false)
        })
    }

    /// Takes a build's batch (its turn); `None` if nothing waits.
    pub fn take(&self, name: &str) -> Option<Batch> {
        let mut builds = self.builds.lock().unwrap_or_else(PoisonError::into_inner);
        builds.remove(name).map(|p| p.batch)
    }

    /// What waits for the build, by path, without taking it (the barrier's look: the build's
    /// turn still comes, and judges it).
    pub fn peek(&self, name: &str) -> Vec<(String, ChangeKind)> {
        let builds = self.builds.lock().unwrap_or_else(PoisonError::into_inner);
        builds.get(name).map_or_else(Vec::new, |p| {
            p.batch
                .paths
                .iter()
                .map(|(rel, kind)| (rel.clone(), *kind))
                .collect()
        })
    }

    /// Whether anything waits for the build.
    pub fn waits(&self, name: &str) -> bool {
        let builds = self.builds.lock().unwrap_or_else(PoisonError::into_inner);
        builds.contains_key(name)
    }

    /// Whether the build waits only for a rescan (no event anyone is waiting on).
    pub fn only_rescan(&self, name: &str) -> bool {
        let builds = self.builds.lock().unwrap_or_else(PoisonError::into_inner);
        builds.get(name).is_some_and(|p| !p.events)
    }

    /// How many paths wait, over all builds (for tests and the bound).
    #[cfg(test)]
    pub fn paths(&self) -> usize {
        let builds = self.builds.lock().unwrap_or_else(PoisonError::into_inner);
        builds.values().map(|p| p.batch.paths.len()).sum()
    }
}

impl Pending {
    /// One path change: kept by name, unless a folder above it stands for it or its folder has
    /// too many (then the folder stands for them all).
    fn add(&mut self, rel: String, kind: ChangeKind) {
        if self.is_folded(&rel) {
            return;
        }
        let new = !self.batch.paths.contains_key(&rel);
        self.batch.add(rel.clone(), kind);
        if !new || !self.batch.paths.contains_key(&rel) {
            // Known already, or not a path to judge (the STOP file, a sync token).
            return;
        }
        if let Some(up) = parent(&rel) {
            let n = self.per_folder.entry(up.to_string()).or_default();
            *n += 1;
            if *n > MAX_PER_FOLDER {
                self.fold(up.to_string());
            }
        }
    }

    /// Whether a folder above `rel` stands for it.
    fn is_folded(&self, rel: &str) -> bool {
        !self.folded.is_empty()
            && rel
                .match_indices('/')
                .any(|(i, _)| self.folded.contains(&rel[..i]))
    }

    /// `up` stands for every path under it from now on.
    fn fold(&mut self, up: String) {
        let prefix = format!("{up}/");
        let under: Vec<String> = self
            .batch
            .paths
            .range::<String, _>(&prefix..)
            .map(|(k, _)| k)
            .take_while(|k| k.starts_with(&prefix))
            .cloned()
            .collect();
        for k in under {
            self.batch.paths.remove(&k);
        }
        self.per_folder
            .retain(|k, _| *k != up && !k.starts_with(&prefix));
        self.folded.retain(|k| !k.starts_with(&prefix));
        let new = self
            .batch
            .paths
            .insert(up.clone(), ChangeKind::Written)
            .is_none();
        if new {
            if let Some(pp) = parent(&up) {
                *self.per_folder.entry(pp.to_string()).or_default() += 1;
            }
        }
        self.folded.insert(up);
    }

    /// Marks the build as waiting; whether the loop must be told (see [`Inbox::add`]).
    fn tell(&mut self, event: bool) -> bool {
        let news = !self.told || (event && !self.events);
        self.told = true;
        self.events |= event;
        news
    }
}

/// Too many paths wait for one build: each is replaced by its folder (re-listed whole at the
/// build's turn, which finds whatever changed under it), one level at a time from the deepest,
/// until they fit; if even the top-level names do not, the build is rescanned. A path directly
/// under `.git/` is kept as it is (a workspace reads `.git/HEAD` and its refs by name, and
/// `.git` as a whole is not work).
fn coalesce(batch: &mut Batch) {
    if !batch.rescan.is_empty() {
        // Everything is looked at anyway.
        batch.paths.clear();
        return;
    }
    while batch.paths.len() > MAX_PATHS / 2 {
        let deepest = batch
            .paths
            .keys()
            .filter_map(|p| parent(p).map(|_| p.matches('/').count()))
            .max();
        let Some(depth) = deepest else {
            break;
        };
        let paths = std::mem::take(&mut batch.paths);
        for (rel, kind) in paths {
            match parent(&rel) {
                Some(up) if rel.matches('/').count() == depth => {
                    // A folder re-listed: whatever happened under it, treat it as written.
                    batch.paths.insert(up.to_string(), ChangeKind::Written);
                }
                _ => {
                    batch.paths.entry(rel).or_insert(kind);
                }
            }
        }
    }
    if batch.paths.len() > MAX_PATHS / 2 {
        batch.paths.clear();
        batch.rescan.push(format!(
            "more than {MAX_PATHS} paths changed between two turns of the build: looked at everything"
        ));
    }
}

/// The folder a path is coalesced into: its parent, except that nothing is coalesced into `.git`
/// itself (nor into the build directory).
fn parent(rel: &str) -> Option<&str> {
    let (up, _) = rel.rsplit_once('/')?;
    (up != ".git").then_some(up)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(names: impl IntoIterator<Item = String>) -> Vec<(String, ChangeKind)> {
        names
            .into_iter()
            .map(|n| (n, ChangeKind::Written))
            .collect()
    }

    #[test]
    fn a_build_is_told_once_until_its_turn() {
        let inbox = Inbox::default();
        assert!(inbox.add("b1", written(["a.md".to_string()])));
        assert!(
            !inbox.add("b1", written(["b.md".to_string()])),
            "already told"
        );
        assert!(
            inbox.add("b2", written(["a.md".to_string()])),
            "another build"
        );
        let b = inbox.take("b1").expect("b1 waits");
        assert_eq!(b.paths.keys().collect::<Vec<_>>(), ["a.md", "b.md"]);
        assert!(inbox.take("b1").is_none());
        assert!(
            inbox.add("b1", written(["a.md".to_string()])),
            "told again after its turn"
        );
    }

    #[test]
    fn a_rescan_waits_behind_events_and_an_event_tells_again() {
        let inbox = Inbox::default();
        assert!(inbox.rescan("b1", "overflow"));
        assert!(inbox.only_rescan("b1"));
        assert!(!inbox.rescan("b1", "overflow"));
        assert!(
            inbox.add("b1", written(["a.md".to_string()])),
            "an event on a build waiting for a rescan is news"
        );
        assert!(!inbox.only_rescan("b1"));
        let b = inbox.take("b1").expect("b1 waits");
        assert_eq!(b.rescan, ["overflow"]);
        assert_eq!(b.paths.len(), 1, "kept for settling");
        assert!(inbox.dir("b2", true));
        assert!(inbox.take("b2").expect("b2 waits").root_lost);
    }

    #[test]
    fn a_folder_with_many_changes_stands_for_them_and_others_keep_their_names() {
        let inbox = Inbox::default();
        inbox.add("b", written(["p3a-gate-results.json".to_string()]));
        inbox.add(
            "b",
            written((0..MAX_PER_FOLDER).map(|i| format!("screens/s{i}.png"))),
        );
        assert_eq!(
            inbox.paths(),
            MAX_PER_FOLDER + 1,
            "at the bound: kept by name"
        );
        inbox.add(
            "b",
            written((0..10_000).map(|i| format!("scratch/storm/f{}", i % 500))),
        );
        inbox.add("b", written(["scratch/storm/deeper/x".to_string()]));
        inbox.add("b", written(["scratch/notes.md".to_string()]));
        let b = inbox.take("b").expect("b waits");
        let keys: Vec<&str> = b.paths.keys().map(String::as_str).collect();
        assert_eq!(keys.len(), MAX_PER_FOLDER + 3, "{:?}", &keys[..5]);
        assert!(keys.contains(&"scratch/storm") && keys.contains(&"scratch/notes.md"));
        assert!(keys.contains(&"p3a-gate-results.json") && keys.contains(&"screens/s0.png"));
        assert_eq!(b.paths["scratch/storm"], ChangeKind::Written);
        assert!(!keys.iter().any(|k| k.starts_with("scratch/storm/")));
        // The next batch starts afresh.
        inbox.add("b", written(["scratch/storm/f1".to_string()]));
        let b = inbox.take("b").expect("b waits");
        assert_eq!(b.paths.keys().collect::<Vec<_>>(), ["scratch/storm/f1"]);
    }

    #[test]
    fn a_storm_is_coalesced_into_folders_and_memory_stays_bounded() {
        let inbox = Inbox::default();
        for round in 0..5 {
            inbox.add(
                "storm",
                written((0..10_000).map(|i| format!("scratch/storm/r{round}/f{i}"))),
            );
            assert!(inbox.paths() <= MAX_PATHS, "{} paths", inbox.paths());
        }
        inbox.add("storm", written(["p3a-gate-results.json".to_string()]));
        inbox.add("storm", written([".git/HEAD".to_string()]));
        let b = inbox.take("storm").expect("the storm build waits");
        assert!(b.rescan.is_empty());
        // The storm's files are in their folders; the files outside it are kept by name.
        assert!(
            b.paths.keys().all(|p| p.starts_with("scratch/storm/r")
                || p == "p3a-gate-results.json"
                || p == ".git/HEAD"),
            "{:?}",
            b.paths.keys().take(10).collect::<Vec<_>>()
        );
        assert!(b.paths.contains_key("scratch/storm/r4"));
        assert!(b.paths.contains_key("p3a-gate-results.json"));

        // More top-level names than fit: a rescan, and nothing more is kept.
        inbox.add("flat", written((0..10_000).map(|i| format!("f{i}"))));
        inbox.add("flat", written((0..10_000).map(|i| format!("g{i}"))));
        assert!(inbox.paths() <= MAX_PATHS);
        let b = inbox.take("flat").expect("flat waits");
        assert_eq!(b.rescan.len(), 1, "{:?}", b.rescan);
        assert!(b.rescan[0].contains("more than 4096 paths"));
        assert!(b.paths.len() <= MAX_PATHS);

        // Under `.git`, nothing is coalesced into `.git` itself.
        inbox.add(
            "ws",
            written((0..10_000).map(|i| format!(".git/objects/{i}"))),
        );
        inbox.add("ws", written([".git/HEAD".to_string()]));
        let b = inbox.take("ws").expect("ws waits");
        assert!(b.rescan.is_empty());
        assert!(b.paths.len() <= MAX_PATHS);
        assert!(b.paths.contains_key(".git/HEAD") && b.paths.contains_key(".git/objects"));
        assert!(
            b.paths.keys().all(|p| p.starts_with(".git/")),
            "nothing coalesced into `.git`"
        );
    }
}
