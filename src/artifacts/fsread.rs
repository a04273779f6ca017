//! Safe reading of one file from the build directory.
//!
//! This module owns the only code path that opens a pipeline artifact. It opens regular files only,
//! follows a symlink only when its canonical target lies inside the canonical build directory, caps how
//! many bytes it reads, and hashes what it read. It must never block on a FIFO, socket or device (the
//! type is checked before opening, the file is opened with `O_NONBLOCK`, and the type is checked again
//! on the open descriptor to close the race), never read past the cap (a file that grows while it is
//! read is cut off at cap + 1 bytes and refused), never write anything and never panic: every problem
//! becomes a [`ReadError`] that a check can turn into evidence.

use std::borrow::Cow;
use std::fmt;
use std::fs::{self, File, FileType, Metadata};
use std::io;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use crate::safefs;

mod bytes;

/// The one hex encoder and the SHA-256 in it: the protocol crate's (it hashes protocol files
/// too), named here for the readers of artifacts.
pub use crate::protocol::{hex, sha256_hex};
pub use bytes::Bytes;
pub(crate) use bytes::{huge_map, HUGE_MIN};

/// Why a file could not be read. Messages are lowercase and name the offending path in backticks.
#[derive(Debug, Clone, thiserror::Error, PartialEq)]
pub enum ReadError {
    /// The file does not exist (or vanished after the directory was listed).
    #[error(
        "`{0}` does not exist (it may have been removed after the build directory was listed)"
    )]
    NotFound(String),
    /// Not a regular file: a directory, FIFO, socket, device, dangling symlink or symlink loop.
    #[error("`{rel}` is not a regular file ({what}); only regular files are read")]
    NotRegular { rel: String, what: String },
    /// A symlink whose canonical target lies outside the build directory.
    #[error("`{rel}` is a symlink that resolves outside the build directory, to `{target}`; it is not followed")]
    OutsideRoot { rel: String, target: String },
    /// Larger than the per-file read cap; the file was not read.
    #[error("`{rel}` is {size} bytes, over the per-file read cap of {cap} bytes (raise the read cap to judge it)")]
    TooLarge { rel: String, size: u64, cap: u64 },
    /// A structured document over the size its parser takes (see
    /// [`MAX_TRACKER_BYTES`](crate::artifacts::MAX_TRACKER_BYTES)).
    #[error(
        "`{rel}` is {size} bytes, over the {cap} bytes a {what} is parsed up to; it was not parsed"
    )]
    TooLargeToParse {
        rel: String,
        what: &'static str,
        size: u64,
        cap: u64,
    },
    /// Any other I/O error, e.g. permission denied: `message` says what was being done and
    /// the cause, `source` keeps the system's error where there was one.
    #[error("cannot read `{rel}`: {message}")]
    Io {
        rel: String,
        message: String,
        #[source]
        source: Option<IoCause>,
    },
}

pub use crate::safefs::IoCause;

impl ReadError {
    /// An I/O error about `rel` whose message is `message` (it says what was being done).
    pub fn io(rel: &str, message: String, source: io::Error) -> ReadError {
        ReadError::Io {
            rel: rel.to_string(),
            message,
            source: Some(IoCause::new(source)),
        }
    }
}

impl ReadError {
    /// The path (relative to the build directory) the error is about.
    pub fn rel(&self) -> &str {
        match self {
            ReadError::NotFound(rel)
            | ReadError::NotRegular { rel, .. }
            | ReadError::OutsideRoot { rel, .. }
            | ReadError::TooLarge { rel, .. }
            | ReadError::TooLargeToParse { rel, .. }
            | ReadError::Io { rel, .. } => rel,
        }
    }
}

/// The contents of one file, read once, with its hash.
#[derive(PartialEq, Eq)]
pub struct FileData {
    /// Path relative to the build directory, `/`-separated.
    pub rel: String,
    /// The contents (a huge-page mapping for a large file, see [`Bytes`]).
    pub bytes: Bytes,
    /// Number of bytes read (`bytes.len()`).
    pub size: u64,
    /// SHA-256 of `bytes`, lowercase hex.
    pub sha256: String,
    /// Modification time of the file that was read (from the open descriptor).
    pub mtime: Option<SystemTime>,
}

/// How many leading bytes [`FileData::looks_binary`] inspects.
const BINARY_SNIFF_BYTES: usize = 8 * 1024;

impl FileData {
    /// Builds a `FileData` from bytes already in memory, hashing them.
    pub fn from_bytes(rel: &str, bytes: impl Into<Bytes>, mtime: Option<SystemTime>) -> FileData {
        let bytes: Bytes = bytes.into();
        let sha256 = hex(&bytes.sha256_noting_nul());
        FileData {
            rel: rel.to_string(),
            size: bytes.len() as u64,
            bytes,
            sha256,
            mtime,
        }
    }

    /// The contents as text; invalid UTF-8 sequences become U+FFFD.
    pub fn text(&self) -> Cow<'_, str> {
        lossy(&self.bytes)
    }

    /// Whether the contents are entirely valid UTF-8.
    pub fn is_valid_utf8(&self) -> bool {
        std::str::from_utf8(&self.bytes).is_ok()
    }

    /// Whether the contents look binary: a NUL byte within the first 8 KiB.
    pub fn looks_binary(&self) -> bool {
        let end = self.bytes.len().min(BINARY_SNIFF_BYTES);
        self.bytes[..end].contains(&0)
    }
}

// Hand-written so that logging an entry does not dump megabytes of file contents.
impl fmt::Debug for FileData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FileData")
            .field("rel", &self.rel)
            .field("bytes", &format_args!("<{} bytes>", self.bytes.len()))
            .field("size", &self.size)
            .field("sha256", &self.sha256)
            .field("mtime", &self.mtime)
            .finish()
    }
}

/// A short human name for a file type: `regular file`, `directory`, `symlink`, `fifo`, `socket`,
/// `character device`, `block device`, or `unknown file type`.
pub fn describe_type(file_type: &FileType) -> &'static str {
    if file_type.is_file() {
        return "regular file";
    }
    if file_type.is_dir() {
        return "directory";
    }
    if file_type.is_symlink() {
        return "symlink";
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if file_type.is_fifo() {
            return "fifo";
        }
        if file_type.is_socket() {
            return "socket";
        }
        if file_type.is_char_device() {
            return "character device";
        }
        if file_type.is_block_device() {
            return "block device";
        }
    }
    "unknown file type"
}

/// Maps an I/O error about `rel` to a [`ReadError`]: "not found" stays distinct, anything else
/// (permission denied included) is [`ReadError::Io`].
pub fn io_error(rel: &str, err: &io::Error) -> ReadError {
    if err.kind() == io::ErrorKind::NotFound {
        return ReadError::NotFound(rel.to_string());
    }
    if is_symlink_loop(err) {
        return ReadError::NotRegular {
            rel: rel.to_string(),
            what: "symlink loop".to_string(),
        };
    }
    ReadError::Io {
        rel: rel.to_string(),
        message: lowercase_message(err),
        source: Some(IoCause::new(copy_io(err))),
    }
}

/// A copy of `err` that keeps its kind, OS error number and message (an `io::Error` is not
/// `Clone`).
fn copy_io(err: &io::Error) -> io::Error {
    match err.raw_os_error() {
        Some(code) => io::Error::from_raw_os_error(code),
        None => io::Error::new(err.kind(), err.to_string()),
    }
}

/// Whether `err` is the OS reporting too many levels of symbolic links.
pub(crate) fn is_symlink_loop(err: &io::Error) -> bool {
    safefs::is_symlink_loop(err)
}

pub(crate) use safefs::lowercase_message;

/// Reads the file at `path`, known to the caller as `rel`, capped at `cap` bytes.
///
/// `root` must be the *canonical* build directory: `path` is canonicalised and refused unless it
/// lies inside `root`. Only regular files are opened. A file larger than `cap` is refused with
/// [`ReadError::TooLarge`] without reading it; a file that grows past `cap` while it is read is
/// refused after reading at most `cap + 1` bytes.
pub fn read_file(root: &Path, path: &Path, rel: &str, cap: u64) -> Result<FileData, ReadError> {
    let (target, meta) = resolve_inside(root, path, rel)?;
    check_regular(rel, &meta, cap)?;
    let (file, meta) = open_regular(&target, rel, cap)?;
    read_capped(file, &meta, rel, cap)
}

/// The SHA-256 (lowercase hex) and size of the file at `path`, read as [`read_file`] reads it
/// (the same checks, the same cap) but a piece at a time, never held whole: what a file too
/// large to keep in memory is known by.
pub fn hash_file(
    root: &Path,
    path: &Path,
    rel: &str,
    cap: u64,
) -> Result<(String, u64), ReadError> {
    use sha2::Digest as _;
    let (target, meta) = resolve_inside(root, path, rel)?;
    check_regular(rel, &meta, cap)?;
    let (file, meta) = open_regular(&target, rel, cap)?;
    let mut hash = sha2::Sha256::new();
    let read = safefs::read_pieces(file, cap, |piece| hash.update(piece))
        .map_err(|e| io_error(rel, &e))?;
    if read > cap {
        return Err(ReadError::TooLarge {
            rel: rel.to_string(),
            size: read.max(meta.len()),
            cap,
        });
    }
    Ok((hex(&hash.finalize()), read))
}

/// What `path` (known to the caller as `rel`) resolves to, every symlink on the way followed
/// (the last component and any parent directory), with its metadata; refused when the result
/// lies outside `root` or the link dangles. Nothing is opened: the caller checks the type first,
/// so a FIFO, socket or device is never opened.
fn resolve_inside(root: &Path, path: &Path, rel: &str) -> Result<(PathBuf, Metadata), ReadError> {
    // What is at the path itself, without following a symlink.
    let link_meta = fs::symlink_metadata(path).map_err(|e| io_error(rel, &e))?;
    let is_symlink = link_meta.file_type().is_symlink();
    let target = match fs::canonicalize(path) {
        Ok(target) => target,
        Err(e) if is_symlink && e.kind() == io::ErrorKind::NotFound => {
            return Err(ReadError::NotRegular {
                rel: rel.to_string(),
                what: "dangling symlink".to_string(),
            });
        }
        Err(e) => return Err(io_error(rel, &e)),
    };
    if !target.starts_with(root) {
        return Err(ReadError::OutsideRoot {
            rel: rel.to_string(),
            target: target.display().to_string(),
        });
    }
    let meta = if is_symlink {
        fs::metadata(&target).map_err(|e| io_error(rel, &e))?
    } else {
        link_meta
    };
    Ok((target, meta))
}

/// The first `n` bytes (fewer when the file is shorter) of the file at `path`, known to the
/// caller as `rel`, with the same safety as [`read_file`]: canonicalised and refused outside
/// `root`, only a regular file opened, never blocking. What a format's signature is checked
/// against: a screenshot is recognised without reading it whole.
pub fn read_head(root: &Path, path: &Path, rel: &str, n: usize) -> Result<Vec<u8>, ReadError> {
    use std::io::Read;
    let (target, meta) = resolve_inside(root, path, rel)?;
    // The head is all that is read, whatever the file's size.
    check_regular(rel, &meta, u64::MAX)?;
    let (file, _) = open_regular(&target, rel, u64::MAX)?;
    let mut head = Vec::with_capacity(n);
    file.take(n as u64)
        .read_to_end(&mut head)
        .map_err(|e| io_error(rel, &e))?;
    Ok(head)
}

/// Refuses anything but a regular file no larger than `cap`.
fn check_regular(rel: &str, meta: &Metadata, cap: u64) -> Result<(), ReadError> {
    if !meta.file_type().is_file() {
        return Err(ReadError::NotRegular {
            rel: rel.to_string(),
            what: describe_type(&meta.file_type()).to_string(),
        });
    }
    if meta.len() > cap {
        return Err(ReadError::TooLarge {
            rel: rel.to_string(),
            size: meta.len(),
            cap,
        });
    }
    Ok(())
}

/// Opens `path` without blocking and without following a final symlink, then re-checks on the
/// descriptor that it is a regular file within the cap: the path may have been replaced by a FIFO
/// or a symlink after the caller looked at it.
fn open_regular(path: &Path, rel: &str, cap: u64) -> Result<(File, Metadata), ReadError> {
    // Not blocking: opening a FIFO for reading returns at once instead of waiting for a writer.
    // Not following: `path` is canonical, so a symlink here means it was swapped in after the
    // check.
    let file = safefs::open(path, safefs::Access::READ).map_err(|e| io_error(rel, &e))?;
    let meta = file.metadata().map_err(|e| io_error(rel, &e))?;
    check_regular(rel, &meta, cap)?;
    Ok((file, meta))
}

/// Reads at most `cap + 1` bytes from an open regular file and hashes them.
fn read_capped(file: File, meta: &Metadata, rel: &str, cap: u64) -> Result<FileData, ReadError> {
    let limit = cap.saturating_add(1);
    // Trust the size only as a capacity hint, never beyond the cap.
    let hint = usize::try_from(meta.len().min(cap)).unwrap_or(0);
    let bytes = Bytes::read_from(file, hint, limit).map_err(|e| io_error(rel, &e))?;
    let read = bytes.len() as u64;
    if read > cap {
        return Err(ReadError::TooLarge {
            rel: rel.to_string(),
            size: read.max(meta.len()),
            cap,
        });
    }
    Ok(FileData::from_bytes(rel, bytes, meta.modified().ok()))
}

/// `bytes` as text, each invalid sequence a U+FFFD. Valid UTF-8 (nearly every file) is checked
/// by `str::from_utf8`, which validates a word at a time; `String::from_utf8_lossy` walks it
/// byte by byte, several times slower on a build with megabytes of reports.
pub fn lossy(bytes: &[u8]) -> Cow<'_, str> {
    match std::str::from_utf8(bytes) {
        Ok(text) => Cow::Borrowed(text),
        Err(_) => String::from_utf8_lossy(bytes),
    }
}

#[cfg(test)]
mod tests;
