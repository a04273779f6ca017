//! Reading a file the user named (a protocol, secret rules, a replay timeline) as text: whole,
//! at most [`MAX_BYTES`], a symlink followed as a shell would, a directory, FIFO or device
//! refused without blocking, and UTF-8. One reader and one error for all of them, so each says
//! the same thing about the same failure.

use std::io;
use std::path::{Path, PathBuf};

use crate::safefs::{self, FsError};

/// The largest named file read (4 MiB): a protocol or rule file is a few KiB.
pub const MAX_BYTES: u64 = 4 << 20;

/// Why a named file could not be read; `what` names the kind of file (`protocol file`,
/// `timeline`).
#[derive(Debug, thiserror::Error)]
pub enum NamedFileError {
    /// The system's refusal: nothing there, permission denied, a symlink loop.
    #[error("cannot read {what} `{}`", path.display())]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    /// A path that is no file to read (`why`): a directory, a device, a file over
    /// [`MAX_BYTES`].
    #[error("cannot read {what} `{}`: {why}", path.display())]
    NotAFile {
        what: &'static str,
        path: PathBuf,
        why: &'static str,
    },
    /// Not UTF-8, so no text to parse: told as the file's other load errors are, located (at
    /// its start).
    #[error("{}:1:1: {what} is not valid UTF-8", path.display())]
    NotUtf8 { what: &'static str, path: PathBuf },
}

/// The text of the `what` file at `path`.
pub fn read_text(path: &Path, what: &'static str) -> Result<String, NamedFileError> {
    let not_a_file = |why| NamedFileError::NotAFile {
        what,
        path: path.to_path_buf(),
        why,
    };
    let bytes = safefs::read_named(path, MAX_BYTES).map_err(|e| match e {
        FsError::NotRegular { .. } => not_a_file("not a regular file"),
        FsError::TooLarge { .. } => not_a_file("larger than 4 MiB"),
        e => NamedFileError::Io {
            what,
            path: path.to_path_buf(),
            source: e.into_io(),
        },
    })?;
    String::from_utf8(bytes).map_err(|_| NamedFileError::NotUtf8 {
        what,
        path: path.to_path_buf(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_refusal_names_the_file_and_keeps_its_cause() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("missing.toml");
        let e = read_text(&missing, "timeline").unwrap_err();
        assert!(
            matches!(&e, NamedFileError::Io { path, source, .. }
                if path == &missing && source.kind() == io::ErrorKind::NotFound),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            format!("cannot read timeline `{}`", missing.display())
        );
        let e = read_text(dir.path(), "protocol file").unwrap_err();
        assert_eq!(
            e.to_string(),
            format!(
                "cannot read protocol file `{}`: not a regular file",
                dir.path().display()
            )
        );
        let big = dir.path().join("big.toml");
        let file = std::fs::File::create(&big).unwrap();
        file.set_len(MAX_BYTES + 1).unwrap();
        let e = read_text(&big, "protocol file").unwrap_err();
        assert!(
            matches!(&e, NamedFileError::NotAFile { why, .. } if *why == "larger than 4 MiB"),
            "{e:?}"
        );
        let latin1 = dir.path().join("latin1.toml");
        std::fs::write(&latin1, b"title = \"caf\xe9\"\n").unwrap();
        assert_eq!(
            read_text(&latin1, "timeline").unwrap_err().to_string(),
            format!("{}:1:1: timeline is not valid UTF-8", latin1.display())
        );
        let ok = dir.path().join("ok.toml");
        std::fs::write(&ok, "x = 1\n").unwrap();
        assert_eq!(read_text(&ok, "protocol file").unwrap(), "x = 1\n");
    }
}
