//! What makes one directory this directory and not another at the same path: its device, inode
//! and, where the file system records it, its birth time (a freed inode number is soon reused
//! on ext4). The daemon attaches to a directory by it, the heartbeat records it, and `status`
//! holds a heartbeat against it, so a copy or a directory re-created at the same path is never
//! taken for the one the referee watched. It only looks at the directory; it decides nothing.

use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::path::PathBuf;
use std::time::UNIX_EPOCH;

use serde::{Deserialize, Serialize};

/// What makes one directory this directory and not another at the same path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirId {
    pub dev: u64,
    pub ino: u64,
    /// Nanoseconds since the epoch at which the directory was created, when the file system
    /// records it (`statx` birth time): a re-created directory that got the freed inode number
    /// back still differs here.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub born_ns: Option<u64>,
}

impl DirId {
    /// The identity of the directory `path` names now (symlinks followed).
    pub fn of(path: &Path) -> Result<DirId, Gone> {
        let m = std::fs::metadata(path).map_err(|source| Gone::Io {
            path: path.to_path_buf(),
            source,
        })?;
        if !m.is_dir() {
            return Err(Gone::NotDir {
                path: path.to_path_buf(),
            });
        }
        Ok(DirId::from_meta(&m))
    }

    /// [`DirId::of`], except that a symlink at `path` is never followed: it is
    /// [`Gone::Symlink`]. A build under `--root` (and a build directory that was no link when
    /// the referee started) is a directory: a link swapped in for it would take the referee's
    /// writes out of the root.
    pub fn of_unfollowed(path: &Path) -> Result<DirId, Gone> {
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.file_type().is_symlink() => Err(Gone::Symlink {
                path: path.to_path_buf(),
            }),
            _ => DirId::of(path),
        }
    }

    pub fn from_meta(m: &std::fs::Metadata) -> DirId {
        let born_ns = m
            .created()
            .ok()
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .and_then(|d| u64::try_from(d.as_nanos()).ok());
        DirId {
            dev: m.dev(),
            ino: m.ino(),
            born_ns,
        }
    }

    /// Whether two identities name the same directory. A birth time known on one side only
    /// (another kernel or file system) is not held against it; device and inode must agree.
    pub fn same(&self, other: &DirId) -> bool {
        self.dev == other.dev
            && self.ino == other.ino
            && match (self.born_ns, other.born_ns) {
                (Some(a), Some(b)) => a == b,
                _ => true,
            }
    }
}

impl std::fmt::Display for DirId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "dev {} inode {}", self.dev, self.ino)
    }
}

/// Why the path names no directory the daemon can attach to.
#[derive(Debug, thiserror::Error)]
pub enum Gone {
    #[error("cannot look at the build directory `{}`", .path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the build directory `{}` is no longer a directory", .path.display())]
    NotDir { path: PathBuf },
    #[error("the build directory `{}` is a symbolic link now (never followed: its files would be written wherever it points)", .path.display())]
    Symlink { path: PathBuf },
}

impl Gone {
    /// The message with its cause, for a line or an event (the error itself keeps the cause as
    /// its source, so a `{:#}` chain does not say it twice).
    pub fn describe(&self) -> String {
        match self {
            Gone::Io { source, .. } => format!("{self}: {}", source.to_string().to_lowercase()),
            Gone::NotDir { .. } | Gone::Symlink { .. } => self.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identity_of_real_directories() {
        let root = tempfile::tempdir().unwrap();
        let d = root.path().join("b");
        std::fs::create_dir(&d).unwrap();
        let first = DirId::of(&d).unwrap();
        assert!(first.same(&DirId::of(&d).unwrap()));
        // A birth time known on one side only does not decide.
        assert!(first.same(&DirId {
            born_ns: None,
            ..first
        }));
        std::fs::remove_dir(&d).unwrap();
        assert!(matches!(DirId::of(&d), Err(Gone::Io { .. })));
        std::fs::create_dir(&d).unwrap();
        let second = DirId::of(&d).unwrap();
        assert!(
            !first.same(&second) || first.born_ns.is_none(),
            "a re-created directory is another one: {first:?} {second:?}"
        );
        std::fs::remove_dir(&d).unwrap();
        std::fs::write(&d, "x").unwrap();
        assert!(matches!(DirId::of(&d), Err(Gone::NotDir { .. })));
        // A link to a directory: followed by `of`, never by `of_unfollowed`.
        std::fs::remove_file(&d).unwrap();
        let elsewhere = root.path().join("elsewhere");
        std::fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, &d).unwrap();
        assert!(DirId::of(&d).is_ok());
        assert!(matches!(
            DirId::of_unfollowed(&d),
            Err(Gone::Symlink { .. })
        ));
        assert!(DirId::of_unfollowed(&elsewhere).is_ok());
    }
}
