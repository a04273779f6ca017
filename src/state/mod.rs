//! The referee's own memory, kept outside the directory it watches: whatever the
//! pipeline or worker can write is hostile, so what the referee must be able to trust lives in a
//! state directory it alone can write. Both the one-shot commands (`verify`, `status`, the hooks,
//! MCP) and the daemon read and write it through this module and its rooms, one writer for each
//! thing kept: the daemon is one of its users, never its owner.
//!
//! Where: `--state-dir DIR` (with `watch --root`, `DIR/<name>` per build); by default
//! `$XDG_STATE_HOME/referee/<name>`, else `$HOME/.local/state/referee/<name>`. `<name>` is the
//! watched directory's last path component (sanitized, readable) and 16 hex digits of the SHA-256
//! of its canonical path, device and inode: a directory deleted and re-created at the same path
//! gets a new memory, never the old one's.
//!
//! Layout (the same names as in the watched directory, so a person finds their way), and the
//! room that owns each:
//!
//! ```text
//! <state dir>/                        mode 0700, owned by the referee's euid (this module)
//!   WATCHED                           the canonical path watched (for people; never read back)
//!   OBSERVER-EVENTS.jsonl             the event log a restart resumes from; `flock`ed while live ([`lock`])
//!   OBSERVER-HEARTBEAT.json           the heartbeat `status --require-live` believes ([`heartbeat`], [`live`])
//!   OBSERVER-STOP.md                  exists exactly while a STOP stands; its one writer ([`stop`])
//!   OBSERVER-SEEN.json                D10: what the referee saw, by round ([`observed`])
//!   OBSERVER-LEFTOVERS.json           D10: an earlier run's files, set aside ([`leftovers`])
//!   OBSERVER-RUN.json                 how the live run was started ([`run`])
//!   OBSERVER-SYNCED.json              `status --sync` tokens acknowledged ([`sync`])
//!   OBSERVER-VERDICT-<task>.json/.md  code-change: each task's latest verdict
//!   attempts/<task>/<n>.json, .diff   code-change: every judged attempt, the loop guards' memory ([`attempts`])
//!   attempts/.index                   a shortcut to reading them all ([`attempts::INDEX_FILE`])
//!   baseline/tree/…, baseline/COMPLETE  code-change: the start snapshot of a non-git workspace
//!   accepted.json, accepted-blobs/    code-change: what `referee accept` moved the baseline to (`workspace::accepted`)
//!   tasks.json                        code-change: the tasks `referee task open` registered ([`registry`])
//! ```
//!
//! The copies in the watched directory (`OBSERVER-*` in BUILD_DIR, `WORKSPACE/.referee/`) are for
//! the people and tools that read them there; the daemon restores them when someone else touches
//! them. This module finds, creates and vets the directory; what is kept in it is its rooms'.

pub mod attempts;
pub mod dir_id;
pub mod heartbeat;
pub mod ident;
pub mod kept_json;
pub mod leftovers;
pub mod live;
pub mod lock;
pub mod observed;
pub mod registry;
pub mod run;
pub mod stop;
pub mod sync;

use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

/// The file naming what a state directory watches (for people; never trusted).
pub const WATCHED_FILE: &str = "WATCHED";

#[derive(Debug, thiserror::Error)]
pub enum StateError {
    #[error("no state directory: neither `XDG_STATE_HOME` nor `HOME` is set to an absolute path (give `--state-dir DIR`)")]
    NoHome,
    #[error("cannot use the state directory `{path}`")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot reach the state directory `{path}` (hint: run this as the referee's user, or as a member of the group its state directory is readable by, and make every folder above it searchable by that group; see docs/deployment.md)")]
    Unreachable {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("refusing the state directory `{path}`: {why} (hint: {hint})")]
    Unsafe {
        path: String,
        why: String,
        hint: String,
    },
}

/// The base under which default state directories are made: `$XDG_STATE_HOME/referee`, else
/// `$HOME/.local/state/referee` (a relative value is ignored, as the XDG spec says).
pub fn default_base() -> Result<PathBuf, StateError> {
    let abs = |var: &str| {
        std::env::var_os(var)
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
    };
    if let Some(x) = abs("XDG_STATE_HOME") {
        return Ok(x.join("referee"));
    }
    abs("HOME")
        .map(|h| h.join(".local/state/referee"))
        .ok_or(StateError::NoHome)
}

/// The name of a watched directory's state directory: readable last component, `-`, and 16 hex
/// digits of SHA-256 over (canonical path, device, inode), all three read from the directory
/// as it was opened ([`live::Here`]): never from looking its path up again, where a link
/// swapped in on the way meanwhile would name another directory's memory.
pub fn name(here: &live::Here) -> String {
    let id = here.dir();
    name_of(here.canon(), id.dev, id.ino)
}

fn name_of(canon: &Path, dev: u64, ino: u64) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut h = Sha256::new();
    h.update(canon.as_os_str().as_bytes());
    h.update([0]);
    h.update(dev.to_le_bytes());
    h.update(ino.to_le_bytes());
    let hash = crate::protocol::hex(&h.finalize());
    let last = canon
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let mut readable: String = last
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                c
            } else {
                '_'
            }
        })
        .take(40)
        .collect();
    if readable.is_empty() || readable.starts_with('.') {
        readable.insert(0, '_');
    }
    format!("{readable}-{}", &hash[..16])
}

/// Where the state directory of the directory `here` is: `explicit` itself when given, else
/// the default base joined with its [`name`].
pub fn locate(here: &live::Here, explicit: Option<&Path>) -> Result<PathBuf, StateError> {
    match explicit {
        Some(dir) => Ok(dir.to_path_buf()),
        None => Ok(default_base()?.join(name(here))),
    }
}

/// Creates the state directory (parents too; the directory itself mode 0700) unless it exists,
/// then vets it ([`check`]).
pub fn ensure(dir: &Path) -> Result<PathBuf, StateError> {
    let io = |source| StateError::Io {
        path: dir.display().to_string(),
        source,
    };
    match std::fs::symlink_metadata(dir) {
        Ok(_) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            if let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(parent)
                    .map_err(io)?;
            }
            match std::fs::DirBuilder::new().mode(0o700).create(dir) {
                Ok(()) => share_with_readers(dir).map_err(io)?,
                // Made by a concurrent start: vetted below like any other.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
                Err(e) => return Err(io(e)),
            }
        }
        Err(e) => return Err(io(e)),
    }
    check(dir)?;
    Ok(dir.to_path_buf())
}

/// Gives a state directory just made in a set-group-ID folder that folder's group read and
/// search bits, and nothing more. The set-group-ID bit is the operator's word that the folder's
/// group may read what is made in it (the kernel already gives the new directory that group):
/// `install -d -m 2750 -o referee -g referee-readers /var/lib/referee` lets that group's
/// orchestrators read every state directory the referee makes in it (`watch --root` makes one
/// per build), while nobody but the referee can ever write one. A folder without the bit (a
/// plain 0755 one, whose group may be everybody's) gives nothing: the state directory stays
/// 0700. The bits are set with `chmod`, so a umask cannot take them away.
fn share_with_readers(dir: &Path) -> std::io::Result<()> {
    let Some(parent) = dir.parent().filter(|p| !p.as_os_str().is_empty()) else {
        return Ok(());
    };
    let folder = std::fs::metadata(parent)?.permissions().mode();
    let group = folder & 0o050;
    if folder & 0o2000 == 0 || group == 0 {
        return Ok(());
    }
    let mode = std::fs::symlink_metadata(dir)?.permissions().mode() & 0o7777;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(mode | group))
}

/// Whether a state directory exists at `dir` (a symlink there counts: [`check`] refuses it).
/// For a memory that is optional (`verify`); `status` asks [`lookup`], which tells a failure to
/// look from absence.
pub fn exists(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir).is_ok()
}

/// Whether a state directory is at `dir`: `Ok(false)` only when nothing is there (`ENOENT`);
/// any other failure to look (a folder on the way this user may not search, as under systemd's
/// `DynamicUser=`, whose `/var/lib/private` is 0700; a file where a folder should be; a loop of
/// links) is an error, never "no referee has run here".
pub fn lookup(dir: &Path) -> Result<bool, StateError> {
    match std::fs::symlink_metadata(dir) {
        Ok(_) => Ok(true),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(StateError::Unreachable {
            path: dir.display().to_string(),
            source,
        }),
    }
}

/// Vets an existing state directory for the referee that writes it: a real directory (not a
/// symlink), owned by this process's effective uid, writable by nobody else.
pub fn check(dir: &Path) -> Result<(), StateError> {
    vet(dir, Role::Writer)
}

/// Vets an existing state directory for a reader (`referee status`, an orchestrator in the
/// referee's readers group): a real directory (not a symlink) writable by its owner alone, which
/// this process can list. Whose it is is not asked: it is the referee's, and the reader trusts
/// it because nobody but the referee can write there.
pub fn check_readable(dir: &Path) -> Result<(), StateError> {
    vet(dir, Role::Reader)?;
    std::fs::read_dir(dir)
        .map(drop)
        .map_err(|source| StateError::Unreachable {
            path: dir.display().to_string(),
            source,
        })
}

/// Who vets a state directory: the referee that writes it, or a process that only reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Writer,
    Reader,
}

fn vet(dir: &Path, role: Role) -> Result<(), StateError> {
    let path = dir.display().to_string();
    let meta = std::fs::symlink_metadata(dir).map_err(|source| match role {
        Role::Writer => StateError::Io {
            path: path.clone(),
            source,
        },
        Role::Reader => StateError::Unreachable {
            path: path.clone(),
            source,
        },
    })?;
    let unsafe_ = |why: String, hint: &str| StateError::Unsafe {
        path: path.clone(),
        why,
        hint: hint.to_string(),
    };
    if meta.file_type().is_symlink() {
        return Err(unsafe_(
            "it is a symbolic link".into(),
            "give `--state-dir` a real directory; a link could hand the referee's memory to whoever controls its target",
        ));
    }
    if !meta.is_dir() {
        return Err(unsafe_(
            "it is not a directory".into(),
            "remove it or give another `--state-dir`",
        ));
    }
    let euid = rustix::process::geteuid().as_raw();
    if role == Role::Writer && meta.uid() != euid {
        return Err(unsafe_(
            format!(
                "it is owned by uid {}, not by this process (euid {euid})",
                meta.uid()
            ),
            "run the referee as the directory's owner, or give it a `--state-dir` of its own",
        ));
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode & 0o022 != 0 {
        return Err(unsafe_(
            format!("it is writable by group or others (mode {mode:04o})"),
            "`chmod 700` it: whoever can write there can forge the referee's memory",
        ));
    }
    Ok(())
}

/// Notes in the state directory which directory it is the memory of (for people only).
pub fn note_watched(dir: &Path, watched: &Path) {
    let _ = crate::atomic::write_atomic_as(
        dir,
        WATCHED_FILE,
        format!("{}\n", watched.display()),
        crate::atomic::Durability::Volatile,
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_readable_and_tell_directories_apart() {
        let a = name_of(Path::new("/srv/builds/page 1"), 1, 2);
        assert!(a.starts_with("page_1-"), "{a}");
        assert_eq!(a.len(), "page_1-".len() + 16);
        assert_ne!(
            a,
            name_of(Path::new("/srv/builds/page 1"), 1, 3),
            "re-created"
        );
        assert_ne!(a, name_of(Path::new("/srv/other/page 1"), 1, 2), "moved");
        assert!(name_of(Path::new("/"), 1, 2).starts_with("_-"));
        assert!(name_of(Path::new("/x/.hidden"), 1, 2).starts_with("_.hidden-"));
    }

    /// The name as it was computed before a state directory could be named only from an
    /// opened directory: the path canonicalized, then looked up again for its device and inode.
    fn name_the_old_way(watched: &Path) -> String {
        use std::os::unix::ffi::OsStrExt;
        let canon = std::fs::canonicalize(watched).unwrap();
        let meta = std::fs::metadata(&canon).unwrap();
        let mut h = Sha256::new();
        h.update(canon.as_os_str().as_bytes());
        h.update([0]);
        h.update(meta.dev().to_le_bytes());
        h.update(meta.ino().to_le_bytes());
        let hash = crate::protocol::hex(&h.finalize());
        let last = canon.file_name().unwrap().to_string_lossy().into_owned();
        let readable: String = last
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-') {
                    c
                } else {
                    '_'
                }
            })
            .take(40)
            .collect();
        format!("{readable}-{}", &hash[..16])
    }

    #[test]
    fn an_existing_users_state_directory_keeps_its_name() {
        let root = tempfile::tempdir().unwrap();
        for called in ["build", "page 1", "a.b-c_d"] {
            let dir = root.path().join(called);
            std::fs::create_dir(&dir).unwrap();
            let here = live::Here::of(&dir).unwrap();
            assert_eq!(name(&here), name_the_old_way(&dir), "{called}");
            // Reached through a link, it is the same directory and the same memory.
            let link = root.path().join(format!("link to {called}"));
            std::os::unix::fs::symlink(&dir, &link).unwrap();
            assert_eq!(
                name(&live::Here::of(&link).unwrap()),
                name_the_old_way(&dir)
            );
        }
    }

    /// The race the naming is built against: the caller opens a directory through a link, the
    /// link is swapped to another directory, and then the state directory is named. It is the
    /// one opened's, never the other's, whatever the path names by then.
    #[test]
    fn a_link_swapped_after_the_open_never_names_another_directorys_state() {
        let root = tempfile::tempdir().unwrap();
        let (mine, other) = (root.path().join("mine"), root.path().join("other"));
        std::fs::create_dir(&mine).unwrap();
        std::fs::create_dir(&other).unwrap();
        let link = root.path().join("build");
        std::os::unix::fs::symlink(&mine, &link).unwrap();
        let here = live::Here::of(&link).unwrap();
        // Swapped between the caller's open and the naming.
        std::fs::remove_file(&link).unwrap();
        std::os::unix::fs::symlink(&other, &link).unwrap();
        let base = root.path().join("state");
        let named = locate(&here, None).map(|p| p.file_name().unwrap().to_owned());
        let want = name_the_old_way(&mine);
        assert_eq!(name(&here), want);
        assert_ne!(name(&here), name_the_old_way(&other));
        assert_ne!(
            name(&here),
            name_the_old_way(&link),
            "the path names the other now"
        );
        if let Ok(named) = named {
            assert_eq!(named.to_string_lossy(), want);
        }
        assert_eq!(
            locate(&here, Some(&base)).unwrap(),
            base,
            "an explicit one is itself"
        );
        // What is read through it is the opened directory's too.
        std::fs::write(mine.join("mine.txt"), "").unwrap();
        assert!(here.at().join("mine.txt").exists());
        std::fs::write(other.join("other.txt"), "").unwrap();
        assert!(!here.at().join("other.txt").exists());
        // And a link where a directory must be is refused, never followed, when asked so.
        let e = live::Here::of_unfollowed(&link).unwrap_err();
        assert!(matches!(e, live::LookError::Symlink { .. }), "{e:?}");
        assert_eq!(name(&live::Here::of_unfollowed(&mine).unwrap()), want);
    }

    #[test]
    fn made_in_a_set_group_id_folder_it_is_readable_by_that_group_alone() {
        let root = tempfile::tempdir().unwrap();
        let shared = root.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o2750)).unwrap();
        let dir = ensure(&shared.join("build-1")).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o7777;
        assert_eq!(
            mode, 0o2750,
            "{mode:o}: group r-x and the set-group-ID bit passed on"
        );
        // A set-group-ID folder that group may write passes on its read bits only, never write.
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o2777)).unwrap();
        let dir = ensure(&shared.join("build-2")).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o750, "{mode:o}");
        check(&dir).unwrap();
        // A plain folder, readable by its group but without the bit: nothing is passed on.
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o755)).unwrap();
        let dir = ensure(&shared.join("build-3")).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o7777;
        assert_eq!(mode, 0o700, "{mode:o}");
        let private = root.path().join("private");
        std::fs::create_dir(&private).unwrap();
        std::fs::set_permissions(&private, std::fs::Permissions::from_mode(0o700)).unwrap();
        let dir = ensure(&private.join("build-4")).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700, "{mode:o}");
    }

    #[test]
    fn a_failure_to_look_is_never_absence() {
        let root = tempfile::tempdir().unwrap();
        assert!(!lookup(&root.path().join("never")).unwrap());
        let file = root.path().join("file");
        std::fs::write(&file, "").unwrap();
        // A file where a folder should be: ENOTDIR, not "no referee has run".
        let e = lookup(&file.join("state")).unwrap_err();
        assert!(matches!(e, StateError::Unreachable { .. }), "{e:?}");
        assert!(lookup(root.path()).unwrap());
    }

    #[test]
    fn a_reader_is_not_asked_to_own_it_but_the_writer_is() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("state");
        ensure(&dir).unwrap();
        check_readable(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o750)).unwrap();
        check_readable(&dir).unwrap();
        check(&dir).unwrap();
        if rustix::process::geteuid().is_root() {
            // Another user's (the referee's, as an orchestrator sees it).
            std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
            let e = check(&dir).unwrap_err().to_string();
            assert!(e.contains("owned by uid 65534"), "{e}");
            check_readable(&dir).unwrap();
        }
        // What the writer refuses besides ownership, the reader refuses too.
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o770)).unwrap();
        let e = check_readable(&dir).unwrap_err().to_string();
        assert!(e.contains("writable by group"), "{e}");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o702)).unwrap();
        let e = check_readable(&dir).unwrap_err().to_string();
        assert!(e.contains("writable by group or others"), "{e}");
        let link = root.path().join("link");
        std::os::unix::fs::symlink(&dir, &link).unwrap();
        let e = check_readable(&link).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        let e = check_readable(&root.path().join("gone")).unwrap_err();
        assert!(matches!(e, StateError::Unreachable { .. }), "{e:?}");
    }

    #[test]
    fn created_private_and_refused_when_others_could_write() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("a/b/state");
        ensure(&dir).unwrap();
        let mode = std::fs::metadata(&dir).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o700);
        ensure(&dir).unwrap();
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o770)).unwrap();
        let e = ensure(&dir).unwrap_err().to_string();
        assert!(e.contains("writable by group"), "{e}");
        let link = root.path().join("link");
        std::os::unix::fs::symlink(root.path().join("a"), &link).unwrap();
        let e = ensure(&link).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        let file = root.path().join("file");
        std::fs::write(&file, "").unwrap();
        assert!(ensure(&file)
            .unwrap_err()
            .to_string()
            .contains("not a directory"));
    }
}
