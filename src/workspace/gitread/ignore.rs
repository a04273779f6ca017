//! The ignore rules of the baseline's own committed `.gitignore` files (never
//! `.git/info/exclude` or `core.excludesFile`).

use std::collections::{BTreeSet, HashSet};
use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use gix::bstr::BStr;

use super::{BaseEntry, BaseTree, EntryKind, GitReadError, Repo};

/// The ignore rules of the baseline: its committed `.gitignore` files and nothing else.
#[derive(Debug, Clone, Default)]
pub struct Ignore {
    search: gix::ignore::Search,
    /// Every path the baseline tracks, which no rule can ignore.
    tracked: BTreeSet<Vec<u8>>,
    /// Every directory holding a tracked path: never ignored as a whole, so a walk goes into it
    /// (what it holds untracked is still ignored when a rule says so).
    tracked_dirs: HashSet<Vec<u8>>,
}

impl Ignore {
    /// The rules of the `.gitignore` files committed in `tree`, at any depth, each relative to
    /// its directory, a deeper one overriding a shallower one. A `.gitignore` that is a symlink
    /// is not read (git does not follow one either).
    pub fn from_tree(repo: &Repo, tree: &BaseTree) -> Result<Ignore, GitReadError> {
        let mut files = Vec::new();
        for (path, entry) in Ignore::files_of(tree) {
            files.push((path.clone(), repo.blob(entry.oid)?));
        }
        Ok(Ignore::from_files(&files, tree))
    }

    /// The `.gitignore` files committed in `tree` (regular files, not links), to read.
    pub fn files_of(tree: &BaseTree) -> Vec<(&Vec<u8>, &BaseEntry)> {
        tree.entries
            .iter()
            .filter(|(path, e)| {
                matches!(e.kind, EntryKind::File | EntryKind::Executable)
                    && (path.as_slice() == b".gitignore" || path.ends_with(b"/.gitignore"))
            })
            .collect()
    }

    /// The rules of `files` (each `.gitignore`'s path and bytes, as read from `tree`), each
    /// relative to its directory, a deeper one overriding a shallower one.
    pub fn from_files(files: &[(Vec<u8>, Vec<u8>)], tree: &BaseTree) -> Ignore {
        let mut ignore = Ignore::rules(files);
        if ignore.search.patterns.is_empty() {
            // No rules: nothing is ignored, and the tracked paths are never asked about (a set
            // of every path and directory costs a one-shot `verify` of a large tree dearly).
            return ignore;
        }
        let tracked: BTreeSet<Vec<u8>> = tree.entries.keys().cloned().collect();
        let mut tracked_dirs = HashSet::new();
        for path in &tracked {
            for (i, b) in path.iter().enumerate() {
                if *b == b'/' {
                    tracked_dirs.insert(path[..i].to_vec());
                }
            }
        }
        ignore.tracked = tracked;
        ignore.tracked_dirs = tracked_dirs;
        ignore
    }

    /// The rules of `files` alone, without the tracked paths: for a caller that keeps the
    /// baseline's listing itself and asks [`is_ignored_untracked`](Self::is_ignored_untracked)
    /// only about paths it does not track (no copy of every path per `verify`).
    pub fn rules(files: &[(Vec<u8>, Vec<u8>)]) -> Ignore {
        let mut files: Vec<&(Vec<u8>, Vec<u8>)> = files.iter().collect();
        // gix matches the lists last to first: the user's excludes file first, then the
        // repository's `info/exclude`, then the `.gitignore` files, shallow first (a deeper
        // file wins), as git ranks them.
        files.sort_by_key(|(path, _)| {
            let rank = match path.as_slice() {
                EXCLUDES_FILE => 0,
                INFO_EXCLUDE => 1,
                _ => 2,
            };
            (rank, path.iter().filter(|&&b| b == b'/').count())
        });
        let mut search = gix::ignore::Search::default();
        let parse = gix::ignore::search::Ignore::default();
        for (path, bytes) in files {
            let dir: &[u8] = if path.ends_with(b".gitignore") {
                &path[..path.len() - b".gitignore".len()]
            } else {
                // An excludes file's rules are relative to the top of the work tree.
                b""
            };
            let patterns = gix::glob::search::Pattern::bytes_to_patterns(
                &parse,
                bytes,
                Path::new(OsStr::from_bytes(path)),
            );
            if patterns.is_empty() {
                // Comments and blank lines only: no rule.
                continue;
            }
            search.patterns.push(gix::glob::search::pattern::List {
                patterns,
                source: Some(PathBuf::from(OsStr::from_bytes(path))),
                // `a/b/` for `a/b/.gitignore`; none for the top one.
                base: (!dir.is_empty()).then(|| dir.into()),
            });
        }
        Ignore {
            search,
            ..Ignore::default()
        }
    }

    /// The excludes git reads besides the committed `.gitignore` files, as they stand now (the
    /// caller pins them with the baseline's listing, so a worker's later edit of them moves
    /// nothing): the repository's `info/exclude` (a regular file in its common directory, no
    /// link followed) and the user's excludes file (`core.excludesFile` of the repository's
    /// config or the user's, else `$XDG_CONFIG_HOME/git/ignore` or `~/.config/git/ignore`; the
    /// user's own file, a link to it followed). Named [`INFO_EXCLUDE`] and [`EXCLUDES_FILE`],
    /// paths no `.gitignore` has. What cannot be read excludes nothing.
    pub fn local_excludes(repo: &Repo) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut out = Vec::new();
        let info = repo.common_dir().join("info/exclude");
        if let Ok(Some(bytes)) = crate::safefs::read_file(&info, EXCLUDES_CAP) {
            out.push((INFO_EXCLUDE.to_vec(), bytes));
        }
        if let Some(path) = excludes_file(repo.common_dir()) {
            if let Ok(bytes) = crate::safefs::read_named(&path, EXCLUDES_CAP) {
                out.push((EXCLUDES_FILE.to_vec(), bytes));
            }
        }
        out
    }

    /// Whether there is any rule at all.
    pub fn has_rules(&self) -> bool {
        !self.search.patterns.is_empty()
    }

    /// No rules: nothing is ignored.
    pub fn empty() -> Ignore {
        Ignore::default()
    }

    /// Whether `path` (relative, `/`-separated bytes) is ignored; `is_dir` for directory-only
    /// patterns (`build/`). A path inside an ignored directory is ignored (git never looks inside
    /// one), and a path the baseline tracks (or a directory holding one) never is.
    pub fn is_ignored(&self, path: &[u8], is_dir: bool) -> bool {
        if self.search.patterns.is_empty() {
            return false;
        }
        let path = path.strip_suffix(b"/").unwrap_or(path);
        if self.tracked.contains(path) || self.tracked_dirs.contains(path) {
            return false;
        }
        self.is_ignored_untracked(path, is_dir)
    }

    /// [`is_ignored`](Self::is_ignored) for a path the caller knows the baseline does not track
    /// (neither a tracked path nor a directory holding one).
    pub fn is_ignored_untracked(&self, path: &[u8], is_dir: bool) -> bool {
        if self.search.patterns.is_empty() {
            return false;
        }
        let path = path.strip_suffix(b"/").unwrap_or(path);
        if path.is_empty() {
            return false;
        }
        // Each enclosing directory first: once one is ignored, no rule inside can re-include.
        for (i, b) in path.iter().enumerate() {
            if *b == b'/' && self.matches(&path[..i], true) {
                return true;
            }
        }
        self.matches(path, is_dir)
    }

    fn matches(&self, path: &[u8], is_dir: bool) -> bool {
        self.search
            .pattern_matching_relative_path(
                BStr::new(path),
                Some(is_dir),
                gix::glob::pattern::Case::Sensitive,
            )
            .is_some_and(|m| !m.pattern.is_negative())
    }
}

/// The name [`Ignore::local_excludes`] gives the repository's `info/exclude`.
pub const INFO_EXCLUDE: &[u8] = b":info/exclude";

/// The name [`Ignore::local_excludes`] gives the user's excludes file.
pub const EXCLUDES_FILE: &[u8] = b":core.excludesFile";

/// The most bytes of an excludes file read.
const EXCLUDES_CAP: u64 = 1 << 20;

/// The user's excludes file as git finds it: `core.excludesFile` of the repository's config
/// (in `common_dir`), else of the user's (`$GIT_CONFIG_GLOBAL`, or `~/.gitconfig`, then
/// `$XDG_CONFIG_HOME/git/config`),
/// else `$XDG_CONFIG_HOME/git/ignore` (`~/.config/git/ignore`). Configs read in-process, no
/// include followed; a leading `~/` is the home directory.
fn excludes_file(common_dir: &Path) -> Option<PathBuf> {
    let home = std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from);
    let xdg = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|x| !x.is_empty())
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".config")));
    // `GIT_CONFIG_GLOBAL` stands for the user's config files when set (as git takes it).
    let global = std::env::var_os("GIT_CONFIG_GLOBAL").filter(|g| !g.is_empty());
    let configs = match global {
        Some(g) => [
            Some(common_dir.join("config")),
            Some(PathBuf::from(g)),
            None,
        ],
        None => [
            Some(common_dir.join("config")),
            home.as_ref().map(|h| h.join(".gitconfig")),
            xdg.as_ref().map(|x| x.join("git/config")),
        ],
    };
    for config in configs.into_iter().flatten() {
        let Ok(bytes) = crate::safefs::read_named(&config, EXCLUDES_CAP) else {
            continue;
        };
        let Ok(file) = gix::config::File::from_bytes_no_includes(
            &bytes,
            gix::config::file::Metadata::api(),
            gix::config::file::init::Options::default(),
        ) else {
            continue;
        };
        if let Some(value) = file.string("core.excludesFile") {
            let raw: &[u8] = value.as_ref();
            let raw = OsStr::from_bytes(raw);
            return match (Path::new(raw).strip_prefix("~"), &home) {
                (Ok(rest), Some(h)) => Some(h.join(rest)),
                (Ok(_), None) => None,
                (Err(_), _) => Some(PathBuf::from(raw)),
            };
        }
    }
    xdg.map(|x| x.join("git/ignore"))
}
