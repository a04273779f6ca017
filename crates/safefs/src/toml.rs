//! The one TOML loader: a file the user names (a protocol, its secret rules, a waiver file,
//! variable overrides, a replay timeline) read through this crate's [`read_named`](crate::read_named) with a size cap, and
//! TOML text parsed into a type with the line and column of the first error.

use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;

use crate::FsError;

/// Why a TOML file could not be read or parsed.
#[derive(Debug, thiserror::Error)]
pub enum TomlError {
    /// Not readable: absent, not a regular file, over the cap, or refused by the system.
    #[error(transparent)]
    Read(#[from] FsError),
    /// The bytes are not UTF-8.
    #[error("`{}` is not valid UTF-8", path.display())]
    NotUtf8 {
        path: PathBuf,
        #[source]
        source: std::string::FromUtf8Error,
    },
    /// Not valid TOML, or not the shape expected.
    #[error("{}:{line}:{column}: {message}", path.display())]
    Syntax {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
}

impl TomlError {
    /// The error as an `io::Error` (the system's own where it refused), for a caller whose
    /// error type names the file itself and keeps an `io::Error` as its cause.
    pub fn into_io(self) -> std::io::Error {
        match self {
            TomlError::Read(e) => e.into_io(),
            TomlError::NotUtf8 { source, .. } => {
                std::io::Error::new(std::io::ErrorKind::InvalidData, source)
            }
            other => std::io::Error::new(std::io::ErrorKind::InvalidData, other.to_string()),
        }
    }
}

/// The text of the TOML file at `path` (a symlink followed), at most `cap` bytes.
pub fn read_text(path: &Path, cap: u64) -> Result<String, TomlError> {
    let bytes = crate::read_named(path, cap)?;
    String::from_utf8(bytes).map_err(|source| TomlError::NotUtf8 {
        path: path.to_path_buf(),
        source,
    })
}

/// Where and why TOML text did not parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Syntax {
    /// Byte offset of the error in the text (0 when the parser gives none).
    pub at: Option<std::ops::Range<usize>>,
    pub line: usize,
    pub column: usize,
    pub message: String,
}

/// `text` parsed as TOML into `T`.
pub fn parse<T: DeserializeOwned>(text: &str) -> Result<T, Syntax> {
    ::toml::from_str(text).map_err(|e: ::toml::de::Error| {
        let (line, column) = line_col(text, e.span().map_or(0, |s| s.start));
        Syntax {
            at: e.span(),
            line,
            column,
            message: e.message().to_string(),
        }
    })
}

/// The file at `path` read ([`read_text`]) and parsed ([`parse`]): a syntax error names the
/// file, line and column.
pub fn load<T: DeserializeOwned>(path: &Path, cap: u64) -> Result<T, TomlError> {
    let text = read_text(path, cap)?;
    parse(&text).map_err(|s| TomlError::Syntax {
        path: path.to_path_buf(),
        line: s.line,
        column: s.column,
        message: s.message,
    })
}

/// The 1-based line and column (in characters) of byte `offset` in `text`.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let mut offset = offset.min(text.len());
    while offset > 0 && !text.is_char_boundary(offset) {
        offset -= 1;
    }
    let before = &text[..offset];
    let line = before.matches('\n').count() + 1;
    let col = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
    (line, col)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Debug)]
    struct Shape {
        #[allow(dead_code, reason = "only its presence is parsed")]
        name: String,
    }

    #[test]
    fn a_syntax_error_names_the_file_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        std::fs::write(&path, "# comment\nname = \n").unwrap();
        let err = load::<Shape>(&path, 1024).unwrap_err();
        match &err {
            TomlError::Syntax { path: p, line, .. } => {
                assert_eq!(p, &path);
                assert_eq!(*line, 2);
            }
            other => panic!("{other:?}"),
        }
        assert!(err.to_string().contains("p.toml:2:"), "{err}");
    }

    #[test]
    fn a_fifo_an_oversized_file_and_bad_utf8_are_typed_errors() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo.toml");
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            &fifo,
            rustix::fs::Mode::from_raw_mode(0o644),
        )
        .unwrap();
        let err = read_text(&fifo, 1024).unwrap_err();
        assert!(
            matches!(&err, TomlError::Read(FsError::NotRegular { path, what: "fifo" }) if path == &fifo),
            "{err:?}"
        );
        let big = dir.path().join("big.toml");
        std::fs::write(&big, "name = \"x\"\n").unwrap();
        let err = read_text(&big, 4).unwrap_err();
        assert!(
            matches!(err, TomlError::Read(FsError::TooLarge { cap: 4, .. })),
            "{err:?}"
        );
        let bad = dir.path().join("bad.toml");
        std::fs::write(&bad, b"name = \"\xff\"\n").unwrap();
        assert!(matches!(
            read_text(&bad, 1024),
            Err(TomlError::NotUtf8 { .. })
        ));
        // A symlink the user made to a file elsewhere is followed.
        let link = dir.path().join("link.toml");
        std::os::unix::fs::symlink(&big, &link).unwrap();
        assert!(load::<Shape>(&link, 1024).is_ok());
    }

    #[test]
    fn line_col_counts_characters() {
        assert_eq!(line_col("ab\ncé d", 7), (2, 4));
        assert_eq!(line_col("", 5), (1, 1));
    }
}
