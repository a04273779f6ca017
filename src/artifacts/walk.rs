//! Listing the build directory: every directory listed once, on two threads once the tree is
//! large enough to be worth it.
//!
//! A symlink to a directory inside the build directory (a `screenshots` link to the capture
//! tool's folder) is read through: its folder is listed under the link's name, through the
//! folder's own path, never the link's. A link is not followed into a folder that holds the
//! place it is listed from (a loop: `shots/self -> ..`), nor deeper than [`MAX_LINKS`] links on
//! one path; such a place is reported as not listable, so a check that would look there is
//! INCONCLUSIVE, never clean. A `.git` folder is listed but not entered.
//!
//! A directory is listed on its own, through its own descriptor (opened without following a
//! symlink, so a directory swapped for a link after its parent was listed is not entered but
//! reported as not listable), with each entry's type from the listing itself (`d_type`: no
//! `stat` per entry), and the directories it holds go on a shared stack; the calling thread lists alone until the stack holds a few directories and a
//! few hundred entries have been listed, then a second thread takes directories from the same
//! stack. The entries and unlisted places of both are returned unsorted: the caller sorts them,
//! so the order the threads ran in changes nothing. A small build (the clean fixture) never
//! starts the second thread, whose start costs more than its listing would save.

use std::ffi::OsStr;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};

use super::entry::{listed_entry, permute, sorted_order, Entry, Kind, Unlisted};
use super::escape::escape_name;
use super::fsread;
use crate::safefs;

/// Entries listed on one thread before a second one may start.
const PARALLEL_AFTER_ENTRIES: usize = 256;
/// Directories waiting before a second thread may start (one would leave it nothing to take
/// once the first thread is done with its own).
const PARALLEL_AFTER_DIRS: usize = 2;
/// The most symlinks to folders followed on one path (a chain of links is a maze, not a build).
pub(super) const MAX_LINKS: usize = 8;

/// Directories still to list, and how many threads are listing one now (the walk is over when
/// the stack is empty and none is).
struct Queue {
    dirs: Vec<ToList>,
    busy: usize,
}

/// A directory to list: its real path (no symlink in it: the root is canonical, and a linked
/// folder is listed through its target), its depth below the root (0: the root), its `rel`,
/// whether that `rel` is its path (no name on the way needed escaping, and no link followed),
/// and the folders that links followed on the way led to.
struct ToList {
    path: PathBuf,
    depth: usize,
    rel: String,
    lossless: bool,
    links: Option<Arc<Vec<PathBuf>>>,
}

impl ToList {
    fn root(root: &Path) -> ToList {
        ToList {
            path: root.to_path_buf(),
            depth: 0,
            rel: String::new(),
            lossless: true,
            links: None,
        }
    }

    /// The folder a symlink in this directory named `name` leads to, to be listed under the
    /// link's `rel`; `Err` with why it is not followed (a loop, too many links, or it cannot be
    /// resolved any more).
    fn through_link(&self, name: &OsStr, rel: &str, depth: usize) -> Result<ToList, NotFollowed> {
        let target = std::fs::canonicalize(self.path.join(name))
            .map_err(|e| NotFollowed::Unresolved(safefs::IoCause::new(e)))?;
        let trail = self.links.as_deref().map_or(&[][..], Vec::as_slice);
        let holds_us = |p: &Path| p.starts_with(&target);
        if holds_us(&self.path) || trail.iter().any(|p| holds_us(p)) {
            return Err(NotFollowed::Loop { target });
        }
        if trail.len() >= MAX_LINKS {
            return Err(NotFollowed::TooDeep);
        }
        let mut links = trail.to_vec();
        links.push(target.clone());
        Ok(ToList {
            path: target,
            depth,
            rel: rel.to_string(),
            lossless: false,
            links: Some(Arc::new(links)),
        })
    }
}

/// Why a symlink to a folder is not read through; its text is the unlisted place's cause.
#[derive(Debug, thiserror::Error)]
enum NotFollowed {
    #[error("the folder it links to cannot be resolved: {}", safefs::lowercase_message(&(.0).0))]
    Unresolved(#[source] safefs::IoCause),
    #[error("a symlink to `{}`, a folder it is already inside (a loop); not followed", target.display())]
    Loop { target: PathBuf },
    #[error("a symlink to a folder below {MAX_LINKS} other linked folders; not followed")]
    TooDeep,
}

struct Shared {
    queue: Mutex<Queue>,
    wake: Condvar,
}

/// What one thread listed, and the thread's own handle on the root: every entry holds one, and
/// two threads counting references on one `Arc` would contend for it 30,000 times.
struct Listed {
    /// Each directory's entries together, sorted by `rel` within the directory.
    entries: Vec<Entry>,
    /// Where each directory's entries start in `entries`.
    runs: Vec<usize>,
    unlisted: Vec<Unlisted>,
    root: Arc<PathBuf>,
}

impl Listed {
    fn new(root: Arc<PathBuf>) -> Listed {
        Listed {
            entries: Vec::new(),
            runs: Vec::new(),
            unlisted: Vec::new(),
            root,
        }
    }

    /// The entries sorted by `rel`: the directories' sorted runs merged (a directory's entries
    /// were sorted on the thread that listed it, among names in one place in memory).
    fn into_sorted(mut self) -> (Vec<Entry>, Vec<Unlisted>) {
        merge_runs(&mut self.entries, &self.runs);
        (self.entries, self.unlisted)
    }

    /// Appends `other`'s entries and runs.
    fn append(&mut self, other: Listed) {
        let base = self.entries.len();
        self.runs.extend(other.runs.iter().map(|r| r + base));
        self.entries.extend(other.entries);
        self.unlisted.extend(other.unlisted);
    }
}

/// What a walk lists: every entry, sorted by `rel`, and the places it could not look into.
pub(super) type Walked = (Vec<Entry>, Vec<Unlisted>);

/// Every entry under `root` (the canonical root, already known to be a listable directory),
/// sorted by `rel`, and the places that could not be listed or examined, unsorted.
pub(super) fn walk(root: &Arc<PathBuf>) -> (Vec<Entry>, Vec<Unlisted>) {
    let shared = Shared {
        queue: Mutex::new(Queue {
            dirs: vec![ToList::root(root)],
            busy: 0,
        }),
        wake: Condvar::new(),
    };
    let mut mine = Listed::new(Arc::clone(root));
    // Alone until the tree shows it is large.
    loop {
        let Some(dir) = shared.take(false) else {
            return mine.into_sorted();
        };
        shared.list(&dir, &mut mine);
        let q = shared.lock();
        if q.dirs.len() >= PARALLEL_AFTER_DIRS && mine.entries.len() >= PARALLEL_AFTER_ENTRIES {
            break;
        }
    }
    let theirs = std::thread::scope(|scope| {
        let helper = scope.spawn(|| {
            let mut theirs = Listed::new(Arc::new(root.to_path_buf()));
            shared.run(&mut theirs);
            theirs
        });
        shared.run(&mut mine);
        helper.join()
    });
    match theirs {
        Ok(mut theirs) => {
            // The smaller listing is copied onto the end of the larger (into fresh memory, on
            // one thread, before the judging can start).
            if theirs.entries.len() > mine.entries.len() {
                std::mem::swap(&mut mine, &mut theirs);
            }
            mine.append(theirs);
        }
        // A panic in the helper is a bug; what it had taken is unknown, so list the whole tree
        // again on this thread rather than return a listing with a hole in it.
        Err(_) => {
            let again = Shared {
                queue: Mutex::new(Queue {
                    dirs: vec![ToList::root(root)],
                    busy: 0,
                }),
                wake: Condvar::new(),
            };
            let mut all = Listed::new(Arc::clone(root));
            again.run(&mut all);
            return all.into_sorted();
        }
    }
    mine.into_sorted()
}

/// The entry at `rel` (a path that maps back to the disk unescaped) and, when it is a directory,
/// everything below it, sorted by `rel`, listed on this thread the way [`walk`] lists: for
/// bringing a listing up to date where something changed. Nothing when `rel` does not exist.
pub(super) fn walk_from(root: &Arc<PathBuf>, rel: &str) -> (Vec<Entry>, Vec<Unlisted>) {
    use std::os::unix::fs::MetadataExt;
    let path = root.join(rel);
    let meta = match std::fs::symlink_metadata(&path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return (Vec::new(), Vec::new()),
        Err(e) => {
            let cause = fsread::lowercase_message(&e);
            let rel = rel.to_string();
            return (Vec::new(), vec![Unlisted { rel, cause }]);
        }
    };
    let depth = rel.split('/').count();
    let listed = rustix::fs::FileType::from_raw_mode(meta.mode());
    let entry = match listed_entry(root, || path.clone(), rel.to_string(), true, listed, depth) {
        Ok(entry) => entry,
        Err(unlisted) => return (Vec::new(), vec![unlisted]),
    };
    if entry.kind != Kind::Dir || entry.name() == ".git" {
        return (vec![entry], Vec::new());
    }
    let start = if entry.is_symlink() {
        // A linked folder is read through, as the full walk reads it (the caller lists under a
        // link no path that is already listed: a snapshot with one is scanned whole).
        let (parent, name) = match rel.rsplit_once('/') {
            Some((parent, name)) => (root.join(parent), name),
            None => (root.to_path_buf(), rel),
        };
        let here = ToList {
            path: parent,
            depth: depth - 1,
            rel: String::new(),
            lossless: true,
            links: None,
        };
        match here.through_link(OsStr::new(name), rel, depth) {
            Ok(linked) => linked,
            Err(why) => {
                let rel = rel.to_string();
                let cause = why.to_string();
                return (vec![entry], vec![Unlisted { rel, cause }]);
            }
        }
    } else {
        ToList {
            path,
            depth,
            rel: rel.to_string(),
            lossless: true,
            links: None,
        }
    };
    let shared = Shared {
        queue: Mutex::new(Queue {
            dirs: vec![start],
            busy: 0,
        }),
        wake: Condvar::new(),
    };
    let mut below = Listed::new(Arc::clone(root));
    shared.run(&mut below);
    let (below, unlisted) = below.into_sorted();
    // The directory sorts before everything below it.
    let mut entries = Vec::with_capacity(below.len() + 1);
    entries.push(entry);
    entries.extend(below);
    (entries, unlisted)
}

/// Sorts `entries` by `rel`, given that each run (starting at each offset of `runs`, in order)
/// is sorted already: a merge of the runs, moving each entry once.
fn merge_runs(entries: &mut [Entry], runs: &[usize]) {
    let bounds: Vec<(usize, usize)> = runs
        .iter()
        .zip(runs.iter().skip(1).chain(std::iter::once(&entries.len())))
        .map(|(&a, &b)| (a, b))
        .filter(|(a, b)| a < b)
        .collect();
    if bounds.len() < 2 {
        return;
    }
    let order = merge_order(|i| entries[i].rel.as_str(), &bounds, entries.len());
    permute(entries, order);
}

/// The order that merges sorted runs of distinct keys (`key(i)` for `i` in each of `bounds`),
/// a block at a time: the run with the smallest head gives, at once, everything it holds
/// below the next smallest head (found by binary search). Runs that do not interleave (the
/// 10,000 screenshots of one folder, after those of the folder before it) cost a few
/// comparisons each instead of a heap operation per entry.
fn merge_order<'k>(
    key: impl Fn(usize) -> &'k str,
    bounds: &[(usize, usize)],
    len: usize,
) -> Vec<usize> {
    use std::cmp::Reverse;
    use std::collections::BinaryHeap;
    let mut heap: BinaryHeap<Reverse<(&str, usize, usize)>> = bounds
        .iter()
        .filter(|(a, b)| a < b)
        .map(|&(a, b)| Reverse((key(a), a, b)))
        .collect();
    let mut order = Vec::with_capacity(len);
    while let Some(Reverse((_, at, end))) = heap.pop() {
        let Some(&Reverse((next, ..))) = heap.peek() else {
            order.extend(at..end);
            break;
        };
        // The head is below `next`; so may be more of the run.
        let (mut lo, mut hi) = (at + 1, end);
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            if key(mid) < next {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        order.extend(at..lo);
        if lo < end {
            heap.push(Reverse((key(lo), lo, end)));
        }
    }
    order
}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The next directory to list, marking this thread busy; `None` when the walk is over.
    /// With `wait`, waits for another thread's directories rather than give up while one is
    /// still listing.
    fn take(&self, wait: bool) -> Option<ToList> {
        let mut q = self.lock();
        loop {
            if let Some(dir) = q.dirs.pop() {
                q.busy += 1;
                return Some(dir);
            }
            if q.busy == 0 || !wait {
                return None;
            }
            q = self.wake.wait(q).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Lists directories until the walk is over.
    fn run(&self, out: &mut Listed) {
        while let Some(dir) = self.take(true) {
            self.list(&dir, out);
        }
        // Whoever sees the end wakes whoever still waits for work.
        self.wake.notify_all();
    }

    /// Lists one directory into `out`, puts the directories it holds (not symlinks to one) on
    /// the stack, and marks this thread idle (also if the listing panics, so the other thread
    /// never waits for it forever).
    fn list(&self, dir: &ToList, out: &mut Listed) {
        let mut done = Done {
            shared: self,
            found: Vec::new(),
        };
        if let Err(e) = self.list_into(dir, out, &mut done.found) {
            out.unlisted.push(Unlisted {
                rel: dir.rel.clone(),
                cause: fsread::lowercase_message(&e),
            });
        }
    }

    fn list_into(&self, dir: &ToList, out: &mut Listed, found: &mut Vec<ToList>) -> io::Result<()> {
        // Below the root a directory was listed as one, but it may have been swapped for a link
        // since: not followed.
        let fd = safefs::open_dir(safefs::CWD, &dir.path, dir.depth == 0)?;
        out.runs.push(out.entries.len());
        Self::read_dir(&fd, dir, out, found)
    }

    /// Lists one directory's names into `out` as entries sorted by `rel`. The names are
    /// gathered side by side in one buffer and sorted there, and only then made into entries:
    /// each entry is made once, in order, so a directory's paths lie in memory in the order
    /// every later pass reads them (the globs of a check count 30,000 screenshots), instead of
    /// in the order the file system hands the names out. A listing cut short by an error keeps
    /// what it listed before, and the error is returned.
    fn read_dir(
        fd: &rustix::fd::OwnedFd,
        dir: &ToList,
        out: &mut Listed,
        found: &mut Vec<ToList>,
    ) -> io::Result<()> {
        use std::os::fd::AsFd;
        let mut names = Names::default();
        let mut heap = Vec::new();
        let mut raw = Vec::new();
        let listed = safefs::read_names(fd.as_fd(), &mut heap, &mut raw);
        for (at, file_type) in raw {
            names.push(safefs::name_at(&heap, at).as_bytes(), file_type);
        }
        out.entries.reserve(names.len());
        for i in sorted_order(names.len(), |i| names.escaped(i)) {
            let (name, escaped, same, file_type) = names.get(i);
            let lossless = dir.lossless && same;
            let rel = if dir.rel.is_empty() {
                escaped.to_owned()
            } else {
                let mut rel = String::with_capacity(dir.rel.len() + 1 + escaped.len());
                rel.push_str(&dir.rel);
                rel.push('/');
                rel.push_str(escaped);
                rel
            };
            let path = || dir.path.join(OsStr::from_bytes(name));
            match listed_entry(&out.root, path, rel, lossless, file_type, dir.depth + 1) {
                Ok(entry) => {
                    // A `.git` folder is listed, not entered: nothing in it is an input.
                    let folder = entry.kind == Kind::Dir && entry.name() != ".git";
                    if folder && !entry.is_symlink() {
                        found.push(ToList {
                            path: dir.path.join(OsStr::from_bytes(name)),
                            depth: dir.depth + 1,
                            rel: entry.rel.clone(),
                            lossless,
                            links: dir.links.clone(),
                        });
                    } else if folder {
                        // A linked folder inside the build directory is read through.
                        match dir.through_link(OsStr::from_bytes(name), &entry.rel, dir.depth + 1) {
                            Ok(linked) => found.push(linked),
                            Err(why) => out.unlisted.push(Unlisted {
                                rel: entry.rel.clone(),
                                cause: why.to_string(),
                            }),
                        }
                    }
                    out.entries.push(entry);
                }
                Err(unlisted) => out.unlisted.push(unlisted),
            }
        }
        listed
    }
}

/// One directory's names as listed (`.` and `..` left out), each by its escaped form
/// ([`escape_name`]) with the type the listing gave, side by side in one buffer.
#[derive(Default)]
struct Names {
    /// Every name's escaped form, one after another.
    escaped: String,
    /// The listed bytes of the names whose escaped form differs from them.
    raw: Vec<u8>,
    at: Vec<Name>,
}

/// Where one name of [`Names`] is.
struct Name {
    /// Its escaped form in [`Names::escaped`].
    escaped: std::ops::Range<usize>,
    /// Its listed bytes in [`Names::raw`], when they differ from the escaped form.
    raw: Option<std::ops::Range<usize>>,
    file_type: rustix::fs::FileType,
}

impl Names {
    fn push(&mut self, name: &[u8], file_type: rustix::fs::FileType) {
        if name == b"." || name == b".." {
            return;
        }
        let start = self.escaped.len();
        let raw = match escape_name(name) {
            std::borrow::Cow::Borrowed(same) => {
                self.escaped.push_str(same);
                None
            }
            std::borrow::Cow::Owned(escaped) => {
                self.escaped.push_str(&escaped);
                let at = self.raw.len();
                self.raw.extend_from_slice(name);
                Some(at..self.raw.len())
            }
        };
        self.at.push(Name {
            escaped: start..self.escaped.len(),
            raw,
            file_type,
        });
    }

    fn len(&self) -> usize {
        self.at.len()
    }

    /// The escaped form of name `i`: what its `rel` ends with, and what decides its order.
    fn escaped(&self, i: usize) -> &[u8] {
        &self.escaped.as_bytes()[self.at[i].escaped.clone()]
    }

    /// Name `i` as listed, its escaped form, whether the two are the same, and its type.
    fn get(&self, i: usize) -> (&[u8], &str, bool, rustix::fs::FileType) {
        let name = &self.at[i];
        let escaped = &self.escaped[name.escaped.clone()];
        match &name.raw {
            None => (escaped.as_bytes(), escaped, true, name.file_type),
            Some(raw) => (&self.raw[raw.clone()], escaped, false, name.file_type),
        }
    }
}

/// Hands a listing's directories to the stack and marks its thread idle when dropped.
struct Done<'s> {
    shared: &'s Shared,
    found: Vec<ToList>,
}

impl Drop for Done<'_> {
    fn drop(&mut self) {
        let mut q = self.shared.lock();
        let wake = !self.found.is_empty() || q.busy == 1;
        q.dirs.append(&mut self.found);
        q.busy -= 1;
        drop(q);
        if wake {
            self.shared.wake.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::os::unix::fs::symlink;

    use walkdir::WalkDir;

    use super::super::entry::make_entry;
    use super::*;

    /// (rel, depth, kind, symlink) of every entry, sorted, and the unlisted places.
    type Shape = (Vec<(String, u16, Kind, bool)>, Vec<String>);

    fn shape(list: (Vec<Entry>, Vec<Unlisted>)) -> Shape {
        let mut e: Vec<_> = list
            .0
            .iter()
            .map(|e| (e.rel.clone(), e.depth, e.kind, e.is_symlink()))
            .collect();
        e.sort_by(|a, b| a.0.cmp(&b.0));
        let mut u: Vec<String> = list.1.iter().map(|u| u.rel.clone()).collect();
        u.sort();
        (e, u)
    }

    /// The listing of one `walkdir` walk of the whole tree (following links to folders, as
    /// the scan reads a linked folder through; the tree holds no link that leaves it or loops).
    fn one_walk(root: &Arc<PathBuf>) -> (Vec<Entry>, Vec<Unlisted>) {
        let (mut entries, mut unlisted) = (Vec::new(), Vec::new());
        for item in WalkDir::new(root.as_path()).min_depth(1).follow_links(true) {
            match item {
                Ok(dent) => entries.push(make_entry(root, &dent, 0)),
                Err(e) => unlisted.push(Unlisted::from_walk(root, &e)),
            }
        }
        (entries, unlisted)
    }

    #[test]
    fn two_threads_list_what_one_walk_lists() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Arc::new(fs::canonicalize(tmp.path()).unwrap());
        for d in ["a", "b", "c", "c/deep/er", "e"] {
            fs::create_dir_all(root.join(d)).unwrap();
        }
        for d in ["a", "b", "c", "c/deep/er"] {
            for i in 0..150 {
                fs::write(root.join(format!("{d}/f{i}.md")), "x").unwrap();
            }
        }
        symlink(root.join("c"), root.join("link-to-c")).unwrap();
        symlink(root.join("a/f1.md"), root.join("b/link-to-file")).unwrap();
        // A directory that cannot be listed (as root, permissions do not stop the listing: both
        // walks then list it alike).
        let locked = root.join("e/locked");
        fs::create_dir(&locked).unwrap();
        fs::write(locked.join("inside.md"), "x").unwrap();
        fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o000)).unwrap();
        let listed = walk(&root);
        assert!(
            listed.0.windows(2).all(|w| w[0].rel < w[1].rel),
            "the walk returns its entries sorted by rel"
        );
        let both = shape(listed);
        let one = shape(one_walk(&root));
        fs::set_permissions(&locked, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        assert_eq!(both, one);
        // Big enough that the second thread ran; the symlinked directory is read through.
        assert!(
            both.0.len() > PARALLEL_AFTER_ENTRIES * 2,
            "{}",
            both.0.len()
        );
        assert!(both
            .0
            .iter()
            .any(|e| e.0 == "link-to-c" && e.2 == Kind::Dir && e.3));
        assert!(both
            .0
            .iter()
            .any(|e| e.0 == "link-to-c/deep/er/f149.md" && e.1 == 4 && !e.3));
        assert!(both
            .0
            .iter()
            .any(|e| e.0 == "c/deep/er/f149.md" && e.1 == 4));
    }

    #[test]
    fn names_that_need_escaping_sort_by_their_escaped_form_and_keep_their_own_bytes() {
        use std::os::unix::ffi::OsStrExt;
        let tmp = tempfile::tempdir().unwrap();
        let root = Arc::new(fs::canonicalize(tmp.path()).unwrap());
        // A byte that is not UTF-8, a backslash and a newline are escaped in `rel`; the escaped
        // form, not the listed bytes, decides the order (`\\` sorts before letters, 0xff after).
        let names: [&[u8]; 6] = [b"b", b"a\\z", b"\xffx", b"a\ny", b"A", b"sub"];
        for name in names {
            fs::write(root.join(OsStr::from_bytes(name)), name).unwrap();
        }
        fs::remove_file(root.join("sub")).unwrap();
        fs::create_dir(root.join("sub")).unwrap();
        let odd: &[u8] = b"in\xfe";
        fs::write(root.join("sub").join(OsStr::from_bytes(odd)), odd).unwrap();
        let (entries, unlisted) = walk(&root);
        assert!(unlisted.is_empty(), "{unlisted:?}");
        let rels: Vec<&str> = entries.iter().map(|e| e.rel.as_str()).collect();
        let mut sorted = rels.clone();
        sorted.sort_unstable();
        assert_eq!(rels, sorted, "sorted by the escaped rel");
        assert_eq!(shape(walk(&root)), shape(one_walk(&root)));
        // Each entry still names its own file on disk, escaped or not.
        for e in entries.iter().filter(|e| e.kind == Kind::File) {
            let bytes = fs::read(e.path()).unwrap();
            assert!(
                names.contains(&bytes.as_slice()) || bytes == odd,
                "{}",
                e.rel
            );
        }
        assert_eq!(entries.len(), 7);
        // Four of them needed escaping (the one below `sub/` too).
        let escaped = entries.iter().filter(|e| e.rel.contains('\\')).count();
        assert_eq!(escaped, 4, "{rels:?}");
    }

    #[test]
    fn merge_order_merges_sorted_runs() {
        use proptest::prelude::*;
        let keys = proptest::collection::btree_set("[a-c/.-]{0,6}", 0..60);
        let cuts = proptest::collection::vec(any::<prop::sample::Index>(), 0..8);
        proptest!(|(keys in keys, cuts in cuts, seed in any::<u64>())| {
            // The keys dealt into runs at random, each run sorted, the runs laid end to end.
            let keys: Vec<String> = keys.into_iter().collect();
            let mut rng = fastrand::Rng::with_seed(seed);
            let n = cuts.len() + 1;
            let mut runs = vec![Vec::new(); n];
            for k in &keys {
                runs[rng.usize(..n)].push(k.clone());
            }
            let mut flat = Vec::new();
            let mut bounds = Vec::new();
            for run in runs {
                bounds.push((flat.len(), flat.len() + run.len()));
                flat.extend(run);
            }
            let order = super::merge_order(|i| flat[i].as_str(), &bounds, flat.len());
            let merged: Vec<&String> = order.iter().map(|&i| &flat[i]).collect();
            prop_assert_eq!(merged, keys.iter().collect::<Vec<_>>());
        });
    }

    #[test]
    fn a_small_tree_is_listed_alike() {
        let tmp = tempfile::tempdir().unwrap();
        let root = Arc::new(fs::canonicalize(tmp.path()).unwrap());
        fs::create_dir_all(root.join("s/1440")).unwrap();
        fs::write(root.join("s/1440/a.png"), "x").unwrap();
        fs::write(root.join("top.md"), "x").unwrap();
        assert_eq!(shape(walk(&root)), shape(one_walk(&root)));
        let empty = tempfile::tempdir().unwrap();
        let root = Arc::new(fs::canonicalize(empty.path()).unwrap());
        assert_eq!(shape(walk(&root)), (Vec::new(), Vec::new()));
    }

    #[test]
    fn a_directory_swapped_for_a_symlink_is_not_entered_but_unlisted() {
        // What the walk sees when `shots/` was listed as a directory and then replaced by a
        // link to a directory outside the build: it refuses to follow it and says so.
        let tmp = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        fs::write(outside.path().join("secret.md"), "x").unwrap();
        let root = Arc::new(fs::canonicalize(tmp.path()).unwrap());
        symlink(outside.path(), root.join("shots")).unwrap();
        let shared = Shared {
            queue: Mutex::new(Queue {
                dirs: Vec::new(),
                busy: 1,
            }),
            wake: Condvar::new(),
        };
        let mut out = Listed::new(Arc::clone(&root));
        let swapped = ToList {
            path: root.join("shots"),
            depth: 1,
            rel: "shots".to_string(),
            lossless: true,
            links: None,
        };
        shared.list(&swapped, &mut out);
        assert!(out.entries.is_empty(), "nothing listed through the link");
        assert_eq!(out.unlisted.len(), 1);
        assert_eq!(out.unlisted[0].rel, "shots");
        assert!(
            out.unlisted[0].cause.contains("symbolic links")
                || out.unlisted[0].cause.contains("not a directory"),
            "{}",
            out.unlisted[0].cause
        );
    }
}
