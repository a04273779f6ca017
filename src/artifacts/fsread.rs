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
use std::fs::{self, File, FileType, Metadata, OpenOptions};
use std::io::{self, Read};
use std::path::Path;
use std::time::SystemTime;

use sha2::{Digest, Sha256};

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
    /// Any other I/O error, e.g. permission denied.
    #[error("cannot read `{rel}`: {message}")]
    Io { rel: String, message: String },
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
    pub bytes: Vec<u8>,
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
    pub fn from_bytes(rel: &str, bytes: Vec<u8>, mtime: Option<SystemTime>) -> FileData {
        let sha256 = sha256_hex(&bytes);
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
        String::from_utf8_lossy(&self.bytes)
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

/// Lowercase hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(digest.len() * 2);
    for byte in digest.iter() {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
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
    }
}

/// Whether `err` is the OS reporting too many levels of symbolic links.
pub(crate) fn is_symlink_loop(err: &io::Error) -> bool {
    #[cfg(unix)]
    {
        err.raw_os_error() == Some(libc::ELOOP)
    }
    #[cfg(not(unix))]
    {
        let _ = err;
        false
    }
}

/// An I/O error's message with its first letter lowercased ("permission denied (os error 13)").
pub(crate) fn lowercase_message(err: &io::Error) -> String {
    let message = err.to_string();
    let mut chars = message.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => message,
    }
}

/// Reads the file at `path`, known to the caller as `rel`, capped at `cap` bytes.
///
/// `root` must be the *canonical* build directory: `path` is canonicalised and refused unless it
/// lies inside `root`. Only regular files are opened. A file larger than `cap` is refused with
/// [`ReadError::TooLarge`] without reading it; a file that grows past `cap` while it is read is
/// refused after reading at most `cap + 1` bytes.
pub fn read_file(root: &Path, path: &Path, rel: &str, cap: u64) -> Result<FileData, ReadError> {
    // What is at the path itself, without following a symlink.
    let link_meta = fs::symlink_metadata(path).map_err(|e| io_error(rel, &e))?;
    let is_symlink = link_meta.file_type().is_symlink();

    // Resolve every symlink on the way (the last component and any parent directory), then insist
    // the result is still inside the build directory.
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

    // Check the type before opening: a FIFO, socket or device is never opened.
    let meta = if is_symlink {
        fs::metadata(&target).map_err(|e| io_error(rel, &e))?
    } else {
        link_meta
    };
    check_regular(rel, &meta, cap)?;

    let (file, meta) = open_regular(&target, rel, cap)?;
    read_capped(file, &meta, rel, cap)
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
    let mut options = OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        // O_NONBLOCK: opening a FIFO for reading returns at once instead of waiting for a writer.
        // O_NOFOLLOW: `path` is canonical, so a symlink here means it was swapped in after the check.
        options.custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW);
    }
    let file = options.open(path).map_err(|e| io_error(rel, &e))?;
    let meta = file.metadata().map_err(|e| io_error(rel, &e))?;
    check_regular(rel, &meta, cap)?;
    Ok((file, meta))
}

/// Reads at most `cap + 1` bytes from an open regular file and hashes them.
fn read_capped(file: File, meta: &Metadata, rel: &str, cap: u64) -> Result<FileData, ReadError> {
    let limit = cap.saturating_add(1);
    // Trust the size only as a capacity hint, never beyond the cap.
    let hint = usize::try_from(meta.len().min(cap)).unwrap_or(0);
    let mut bytes = Vec::with_capacity(hint.saturating_add(1));
    file.take(limit)
        .read_to_end(&mut bytes)
        .map_err(|e| io_error(rel, &e))?;
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

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;
    use std::sync::mpsc;
    use std::thread;
    use std::time::Duration;

    fn canonical_tempdir() -> (tempfile::TempDir, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let root = fs::canonicalize(dir.path()).unwrap();
        (dir, root)
    }

    fn mkfifo(path: &Path) {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
        let rc = unsafe { libc::mkfifo(c.as_ptr(), 0o644) };
        assert_eq!(rc, 0, "mkfifo failed");
    }

    /// Runs `f` on another thread and fails the test if it does not finish in time.
    fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(Duration::from_secs(secs))
            .expect("operation hung")
    }

    fn is_root() -> bool {
        unsafe { libc::geteuid() == 0 }
    }

    #[test]
    fn sha256_hex_known_vectors() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }

    #[test]
    fn from_bytes_sets_size_and_hash() {
        let data = FileData::from_bytes("a.md", b"abc".to_vec(), None);
        assert_eq!(data.rel, "a.md");
        assert_eq!(data.size, 3);
        assert_eq!(data.sha256, sha256_hex(b"abc"));
        assert_eq!(data.mtime, None);
    }

    #[test]
    fn text_is_lossy_and_utf8_is_detected() {
        let good = FileData::from_bytes("a", "héllo".as_bytes().to_vec(), None);
        assert!(good.is_valid_utf8());
        assert_eq!(good.text(), "héllo");
        let bad = FileData::from_bytes("b", vec![b'a', 0xff, b'b'], None);
        assert!(!bad.is_valid_utf8());
        assert_eq!(bad.text(), "a\u{fffd}b");
        let empty = FileData::from_bytes("c", Vec::new(), None);
        assert!(empty.is_valid_utf8());
        assert_eq!(empty.text(), "");
    }

    #[test]
    fn looks_binary_only_inspects_first_8_kib() {
        let mut bytes = vec![b'x'; 10_000];
        assert!(!FileData::from_bytes("a", bytes.clone(), None).looks_binary());
        bytes[8191] = 0;
        assert!(FileData::from_bytes("a", bytes.clone(), None).looks_binary());
        bytes[8191] = b'x';
        bytes[8192] = 0;
        assert!(!FileData::from_bytes("a", bytes, None).looks_binary());
        assert!(!FileData::from_bytes("a", Vec::new(), None).looks_binary());
        assert!(FileData::from_bytes("a", vec![0], None).looks_binary());
    }

    #[test]
    fn debug_does_not_dump_contents() {
        let data = FileData::from_bytes("a", vec![b'z'; 1000], None);
        let shown = format!("{data:?}");
        assert!(shown.contains("<1000 bytes>"));
        assert!(!shown.contains("zzzz"));
    }

    #[test]
    fn describe_type_names_each_kind() {
        let (_dir, root) = canonical_tempdir();
        fs::write(root.join("f"), "x").unwrap();
        mkfifo(&root.join("p"));
        let _sock = std::os::unix::net::UnixListener::bind(root.join("s")).unwrap();
        std::os::unix::fs::symlink("f", root.join("l")).unwrap();
        let name =
            |p: &str| describe_type(&fs::symlink_metadata(root.join(p)).unwrap().file_type());
        assert_eq!(name("f"), "regular file");
        assert_eq!(name("."), "directory");
        assert_eq!(name("p"), "fifo");
        assert_eq!(name("s"), "socket");
        assert_eq!(name("l"), "symlink");
        let dev = describe_type(&fs::metadata("/dev/null").unwrap().file_type());
        assert_eq!(dev, "character device");
    }

    #[test]
    fn io_error_maps_kinds() {
        let nf = io::Error::from(io::ErrorKind::NotFound);
        assert_eq!(io_error("x", &nf), ReadError::NotFound("x".into()));
        let denied = io::Error::from_raw_os_error(libc::EACCES);
        match io_error("x", &denied) {
            ReadError::Io { rel, message } => {
                assert_eq!(rel, "x");
                assert!(message.starts_with("permission denied"), "{message}");
            }
            other => panic!("unexpected {other:?}"),
        }
        let looped = io::Error::from_raw_os_error(libc::ELOOP);
        assert_eq!(
            io_error("x", &looped),
            ReadError::NotRegular {
                rel: "x".into(),
                what: "symlink loop".into()
            }
        );
    }

    #[test]
    fn lowercase_message_lowers_first_letter_only() {
        let err = io::Error::other("Boom at `X`");
        assert_eq!(lowercase_message(&err), "boom at `X`");
        let empty = io::Error::other("");
        assert_eq!(lowercase_message(&empty), "");
    }

    #[test]
    fn error_messages_are_lowercase_with_backticks() {
        let errors = [
            ReadError::NotFound("a.md".into()),
            ReadError::NotRegular {
                rel: "a.md".into(),
                what: "fifo".into(),
            },
            ReadError::OutsideRoot {
                rel: "a.md".into(),
                target: "/etc/passwd".into(),
            },
            ReadError::TooLarge {
                rel: "a.md".into(),
                size: 10,
                cap: 5,
            },
            ReadError::Io {
                rel: "a.md".into(),
                message: "permission denied".into(),
            },
        ];
        for err in errors {
            let text = err.to_string();
            assert!(text.contains("`a.md`"), "{text}");
            let first = text.chars().find(|c| c.is_alphabetic()).unwrap();
            assert!(first.is_lowercase(), "{text}");
            assert_eq!(err.rel(), "a.md");
        }
        let outside = ReadError::OutsideRoot {
            rel: "a".into(),
            target: "/etc/passwd".into(),
        };
        assert!(outside.to_string().contains("`/etc/passwd`"));
    }

    #[test]
    fn reads_a_regular_file() {
        let (_dir, root) = canonical_tempdir();
        fs::write(root.join("a.md"), "hello").unwrap();
        let data = read_file(&root, &root.join("a.md"), "a.md", 100).unwrap();
        assert_eq!(data.bytes, b"hello");
        assert_eq!(data.size, 5);
        assert_eq!(data.sha256, sha256_hex(b"hello"));
        assert!(data.mtime.is_some());
    }

    #[test]
    fn cap_is_inclusive() {
        let (_dir, root) = canonical_tempdir();
        fs::write(root.join("a"), "12345").unwrap();
        assert!(read_file(&root, &root.join("a"), "a", 5).is_ok());
        assert_eq!(
            read_file(&root, &root.join("a"), "a", 4),
            Err(ReadError::TooLarge {
                rel: "a".into(),
                size: 5,
                cap: 4
            })
        );
        fs::write(root.join("empty"), "").unwrap();
        assert_eq!(
            read_file(&root, &root.join("empty"), "empty", 0)
                .unwrap()
                .size,
            0
        );
        assert!(read_file(&root, &root.join("a"), "a", u64::MAX).is_ok());
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn file_growing_past_its_reported_size_is_cut_off() {
        // procfs files report size 0 but yield content: the reported size passes the check, so only
        // the cap + 1 read limit stops the read.
        let root = Path::new("/proc");
        let path = Path::new("/proc/self/status");
        let meta = fs::metadata(path).unwrap();
        assert_eq!(meta.len(), 0);
        match read_file(root, path, "status", 8) {
            Err(ReadError::TooLarge { size, cap, .. }) => {
                assert_eq!(cap, 8);
                assert_eq!(size, 9);
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn missing_file_is_not_found() {
        let (_dir, root) = canonical_tempdir();
        assert_eq!(
            read_file(&root, &root.join("gone.md"), "gone.md", 100),
            Err(ReadError::NotFound("gone.md".into()))
        );
    }

    #[test]
    fn directory_is_not_regular() {
        let (_dir, root) = canonical_tempdir();
        fs::create_dir(root.join("d")).unwrap();
        assert_eq!(
            read_file(&root, &root.join("d"), "d", 100),
            Err(ReadError::NotRegular {
                rel: "d".into(),
                what: "directory".into()
            })
        );
    }

    #[test]
    fn fifo_is_refused_without_hanging() {
        let (dir, root) = canonical_tempdir();
        let fifo = root.join("p3b-pa-auditor-A.md");
        mkfifo(&fifo);
        let result = within(5, move || {
            let _keep = dir;
            read_file(&root, &fifo, "p3b-pa-auditor-A.md", 100)
        });
        assert_eq!(
            result,
            Err(ReadError::NotRegular {
                rel: "p3b-pa-auditor-A.md".into(),
                what: "fifo".into()
            })
        );
    }

    #[test]
    fn fifo_reaching_open_is_caught_on_the_descriptor() {
        // Simulates the race: the path was a regular file when checked, a FIFO when opened.
        let (dir, root) = canonical_tempdir();
        let fifo = root.join("p");
        mkfifo(&fifo);
        let result = within(5, move || {
            let _keep = dir;
            open_regular(&fifo, "p", 100).map(|_| ())
        });
        assert_eq!(
            result,
            Err(ReadError::NotRegular {
                rel: "p".into(),
                what: "fifo".into()
            })
        );
    }

    #[test]
    fn open_regular_refuses_a_final_symlink() {
        let (_dir, root) = canonical_tempdir();
        fs::write(root.join("t"), "x").unwrap();
        std::os::unix::fs::symlink("t", root.join("l")).unwrap();
        assert!(matches!(
            open_regular(&root.join("l"), "l", 100),
            Err(ReadError::NotRegular { .. }) | Err(ReadError::Io { .. })
        ));
        assert!(open_regular(&root.join("t"), "t", 100).is_ok());
    }

    #[test]
    fn open_regular_rechecks_size() {
        let (_dir, root) = canonical_tempdir();
        fs::write(root.join("t"), "xyz").unwrap();
        assert!(matches!(
            open_regular(&root.join("t"), "t", 2),
            Err(ReadError::TooLarge {
                size: 3,
                cap: 2,
                ..
            })
        ));
    }

    #[test]
    fn socket_and_device_are_refused() {
        let (_dir, root) = canonical_tempdir();
        let _sock = std::os::unix::net::UnixListener::bind(root.join("s")).unwrap();
        assert!(matches!(
            read_file(&root, &root.join("s"), "s", 100),
            Err(ReadError::NotRegular { what, .. }) if what == "socket"
        ));
        // /dev/null read with root "/" so only the type check can refuse it.
        assert!(matches!(
            read_file(Path::new("/"), Path::new("/dev/null"), "null", 100),
            Err(ReadError::NotRegular { what, .. }) if what == "character device"
        ));
    }

    #[test]
    fn symlink_inside_root_is_followed() {
        let (_dir, root) = canonical_tempdir();
        fs::create_dir(root.join("sub")).unwrap();
        fs::write(root.join("sub/t.md"), "target").unwrap();
        std::os::unix::fs::symlink("sub/t.md", root.join("l.md")).unwrap();
        let data = read_file(&root, &root.join("l.md"), "l.md", 100).unwrap();
        assert_eq!(data.bytes, b"target");
        assert_eq!(data.rel, "l.md");
    }

    #[test]
    fn symlink_outside_root_is_refused() {
        let (_outer, outer) = canonical_tempdir();
        let root = outer.join("build");
        fs::create_dir(&root).unwrap();
        fs::write(outer.join("secret"), "s").unwrap();
        std::os::unix::fs::symlink("../secret", root.join("rel")).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("abs")).unwrap();
        match read_file(&root, &root.join("rel"), "rel", 100) {
            Err(ReadError::OutsideRoot { rel, target }) => {
                assert_eq!(rel, "rel");
                assert_eq!(target, outer.join("secret").display().to_string());
            }
            other => panic!("unexpected {other:?}"),
        }
        assert!(matches!(
            read_file(&root, &root.join("abs"), "abs", 100),
            Err(ReadError::OutsideRoot { .. })
        ));
    }

    #[test]
    fn symlinked_parent_outside_root_is_refused() {
        let (_outer, outer) = canonical_tempdir();
        let root = outer.join("build");
        fs::create_dir(&root).unwrap();
        fs::create_dir(outer.join("elsewhere")).unwrap();
        fs::write(outer.join("elsewhere/f"), "x").unwrap();
        std::os::unix::fs::symlink("../elsewhere", root.join("d")).unwrap();
        assert!(matches!(
            read_file(&root, &root.join("d/f"), "d/f", 100),
            Err(ReadError::OutsideRoot { .. })
        ));
    }

    #[test]
    fn dangling_symlink_and_loop_are_not_regular() {
        let (_dir, root) = canonical_tempdir();
        std::os::unix::fs::symlink("nowhere", root.join("dangling")).unwrap();
        std::os::unix::fs::symlink("loop2", root.join("loop1")).unwrap();
        std::os::unix::fs::symlink("loop1", root.join("loop2")).unwrap();
        assert_eq!(
            read_file(&root, &root.join("dangling"), "dangling", 100),
            Err(ReadError::NotRegular {
                rel: "dangling".into(),
                what: "dangling symlink".into()
            })
        );
        assert_eq!(
            read_file(&root, &root.join("loop1"), "loop1", 100),
            Err(ReadError::NotRegular {
                rel: "loop1".into(),
                what: "symlink loop".into()
            })
        );
    }

    #[test]
    fn symlink_to_fifo_is_refused_without_hanging() {
        let (dir, root) = canonical_tempdir();
        mkfifo(&root.join("p"));
        std::os::unix::fs::symlink("p", root.join("l")).unwrap();
        let result = within(5, move || {
            let _keep = dir;
            read_file(&root, &root.join("l"), "l", 100)
        });
        assert!(matches!(result, Err(ReadError::NotRegular { what, .. }) if what == "fifo"));
    }

    #[test]
    fn permission_denied_is_io() {
        if is_root() {
            // root reads regardless of mode bits; the mapping is covered by `io_error_maps_kinds`.
            return;
        }
        use std::os::unix::fs::PermissionsExt;
        let (_dir, root) = canonical_tempdir();
        let path = root.join("locked");
        fs::write(&path, "x").unwrap();
        fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).unwrap();
        assert!(matches!(
            read_file(&root, &path, "locked", 100),
            Err(ReadError::Io { .. })
        ));
    }
}
