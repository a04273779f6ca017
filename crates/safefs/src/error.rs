//! The typed error of the file-system layer: which path, what was found there, and the
//! system's own error where there was one.

use std::io;
use std::path::{Path, PathBuf};

/// Why a file could not be opened or read. Each names the path (as the caller showed it) and,
/// where the system refused, keeps that error as its source.
#[derive(Debug, thiserror::Error)]
pub enum FsError {
    /// Nothing at the path (or it vanished between a listing and the open).
    #[error("`{}` does not exist", path.display())]
    NotFound {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A symlink at a name that is never followed.
    #[error("`{}` is a symlink; it is not followed", path.display())]
    Symlink {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A directory, FIFO, socket or device where a regular file was wanted (opened without
    /// blocking and refused on its descriptor).
    #[error("`{}` is not a regular file ({what})", path.display())]
    NotRegular { path: PathBuf, what: &'static str },
    /// Larger than the cap; at most `cap + 1` bytes were read.
    #[error("`{}` is {size} bytes, over the read cap of {cap} bytes", path.display())]
    TooLarge { path: PathBuf, size: u64, cap: u64 },
    /// Any other refusal by the system, e.g. permission denied.
    #[error("cannot read `{}`: {}", path.display(), lowercase_message(source))]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
}

impl FsError {
    /// The error the system gave for `path`, sorted: nothing there, a symlink where none is
    /// followed (`ELOOP` from an `O_NOFOLLOW` open), or anything else.
    pub fn from_io(path: &Path, source: io::Error) -> FsError {
        let path = path.to_path_buf();
        if source.kind() == io::ErrorKind::NotFound {
            return FsError::NotFound { path, source };
        }
        if source.raw_os_error() == Some(libc::ELOOP) {
            return FsError::Symlink { path, source };
        }
        FsError::Io { path, source }
    }

    /// The path the error is about.
    pub fn path(&self) -> &Path {
        match self {
            FsError::NotFound { path, .. }
            | FsError::Symlink { path, .. }
            | FsError::NotRegular { path, .. }
            | FsError::TooLarge { path, .. }
            | FsError::Io { path, .. } => path,
        }
    }

    /// The error as an `io::Error`: the system's own where it refused, else one of kind
    /// `InvalidInput` that says what was found.
    pub fn into_io(self) -> io::Error {
        match self {
            FsError::NotFound { source, .. }
            | FsError::Symlink { source, .. }
            | FsError::Io { source, .. } => source,
            other => io::Error::new(io::ErrorKind::InvalidInput, other.to_string()),
        }
    }

    /// The system's error, when the system refused.
    pub fn io(&self) -> Option<&io::Error> {
        match self {
            FsError::NotFound { source, .. }
            | FsError::Symlink { source, .. }
            | FsError::Io { source, .. } => Some(source),
            FsError::NotRegular { .. } | FsError::TooLarge { .. } => None,
        }
    }
}

/// The system's error kept as the cause of an error that must stay `Clone` (shared), compared
/// by what it says (its kind and OS error number).
#[derive(Debug, Clone, thiserror::Error)]
#[error("{0}")]
pub struct IoCause(pub std::sync::Arc<io::Error>);

impl IoCause {
    pub fn new(err: io::Error) -> IoCause {
        IoCause(std::sync::Arc::new(err))
    }
}

impl PartialEq for IoCause {
    fn eq(&self, other: &IoCause) -> bool {
        self.0.kind() == other.0.kind() && self.0.raw_os_error() == other.0.raw_os_error()
    }
}

impl Eq for IoCause {}

/// An I/O error's message with its first letter lowercased ("permission denied (os error 13)").
pub fn lowercase_message(err: &io::Error) -> String {
    let message = err.to_string();
    let mut chars = message.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => message,
    }
}
