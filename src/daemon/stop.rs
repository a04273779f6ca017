//! `OBSERVER-STOP.md` as the daemon owns it: the file exists exactly while a BLOCKING check fails
//! (or, under `--on-fault stop`, while the referee itself has a fault), says what the daemon last
//! wrote, and is restored when someone else deletes or edits it (tamper).
//!
//! This module owns the bytes last written, writing or removing the file, comparing the disk with
//! them, and the STOP block that names a referee fault. It never opens anything but a regular file
//! (a FIFO put in its place is removed, not read). The check blocks themselves come from
//! `outputs::markdown::stop_file`; this module must not judge checks or decide when to stop.

use std::fs::OpenOptions;
use std::io::{self, Read};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use crate::outputs::{remove_own, write_atomic, STOP_FILE};

/// What someone else did to the STOP file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tamper {
    /// Deleted while a failure stands (restored).
    Deleted,
    /// Changed while a failure stands (restored).
    Edited,
    /// Created while there is no failure (removed).
    Created,
}

impl Tamper {
    pub fn describe(self) -> &'static str {
        match self {
            Tamper::Deleted => "deleted by someone else while a BLOCKING failure stands; restored",
            Tamper::Edited => "edited by someone else while a BLOCKING failure stands; restored",
            Tamper::Created => "created by someone else while no BLOCKING failure stands; removed",
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Tamper::Deleted => "deleted",
            Tamper::Edited => "edited",
            Tamper::Created => "created",
        }
    }
}

/// What [`StopFile::sync`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Synced {
    Unchanged,
    Written,
    Removed,
}

/// What is on disk at the STOP path.
#[derive(Debug, PartialEq, Eq)]
enum OnDisk {
    Absent,
    File(Vec<u8>),
    /// Not a regular file (FIFO, directory, symlink …) or too large: never ours.
    Foreign,
}

/// The largest STOP file the daemon reads back; anything larger is not what it wrote.
const MAX_STOP_BYTES: u64 = 4 << 20;

#[derive(Debug)]
pub struct StopFile {
    dir: PathBuf,
    /// What the file should contain; `None`: it should not exist.
    expected: Option<String>,
}

impl StopFile {
    pub fn new(dir: &Path) -> StopFile {
        StopFile {
            dir: dir.to_path_buf(),
            expected: None,
        }
    }

    /// Whether a STOP stands (as far as the daemon wrote it).
    pub fn standing(&self) -> bool {
        self.expected.is_some()
    }

    /// Takes what is on disk as the current state (at start: a STOP left by an earlier run).
    pub fn adopt(&mut self) {
        self.expected = match self.read() {
            Ok(OnDisk::File(b)) => Some(String::from_utf8_lossy(&b).into_owned()),
            Ok(OnDisk::Foreign) => Some(String::new()),
            _ => None,
        };
    }

    /// Makes the file say `want` (or not exist) unless it already does.
    pub fn sync(&mut self, want: Option<String>) -> io::Result<Synced> {
        if want == self.expected {
            return Ok(Synced::Unchanged);
        }
        match want {
            Some(text) => {
                self.replace_foreign()?;
                write_atomic(&self.dir, STOP_FILE, &text)?;
                self.expected = Some(text);
                Ok(Synced::Written)
            }
            None => {
                remove_own(&self.dir, STOP_FILE)?;
                self.expected = None;
                Ok(Synced::Removed)
            }
        }
    }

    /// Compares the disk with what the daemon wrote; puts it right and says what happened.
    pub fn check(&mut self) -> io::Result<Option<Tamper>> {
        let disk = self.read()?;
        let tamper = match (&self.expected, &disk) {
            (Some(e), OnDisk::File(d)) if d.as_slice() == e.as_bytes() => None,
            (Some(_), OnDisk::Absent) => Some(Tamper::Deleted),
            (Some(_), _) => Some(Tamper::Edited),
            (None, OnDisk::Absent) => None,
            (None, _) => Some(Tamper::Created),
        };
        if let Some(t) = tamper {
            match &self.expected {
                Some(text) => {
                    self.replace_foreign()?;
                    write_atomic(&self.dir, STOP_FILE, text)?;
                }
                None => remove_own(&self.dir, STOP_FILE)?,
            }
            return Ok(Some(t));
        }
        Ok(None)
    }

    /// A directory cannot be renamed over; anything that is not a regular file goes first.
    fn replace_foreign(&self) -> io::Result<()> {
        let path = self.dir.join(STOP_FILE);
        match std::fs::symlink_metadata(&path) {
            Ok(m) if m.is_dir() => std::fs::remove_dir_all(&path),
            Ok(m) if !m.is_file() => std::fs::remove_file(&path),
            _ => Ok(()),
        }
    }

    fn read(&self) -> io::Result<OnDisk> {
        let path = self.dir.join(STOP_FILE);
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(m) => m,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(OnDisk::Absent),
            Err(e) => return Err(e),
        };
        if !meta.is_file() || meta.len() > MAX_STOP_BYTES {
            return Ok(OnDisk::Foreign);
        }
        // O_NONBLOCK | O_NOFOLLOW: a FIFO or symlink swapped in after the check cannot hang or
        // redirect the read.
        let mut f = match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_NOFOLLOW)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(OnDisk::Absent),
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => return Ok(OnDisk::Foreign),
            Err(e) => return Err(e),
        };
        if !f.metadata()?.is_file() {
            return Ok(OnDisk::Foreign);
        }
        let mut bytes = Vec::new();
        f.by_ref()
            .take(MAX_STOP_BYTES + 1)
            .read_to_end(&mut bytes)?;
        if bytes.len() as u64 > MAX_STOP_BYTES {
            return Ok(OnDisk::Foreign);
        }
        Ok(OnDisk::File(bytes))
    }
}

/// The STOP blocks for the referee's own faults (`--on-fault stop`), in the seed's block format.
pub fn fault_blocks(faults: &[(String, String)]) -> String {
    let mut out = String::new();
    for (i, (area, message)) in faults.iter().enumerate() {
        if i > 0 {
            out.push_str("\n---\n\n");
        }
        out.push_str("**Check:** REFEREE-FAULT — the referee cannot do its job\n");
        out.push_str("**Severity:** BLOCKING\n");
        out.push_str("**Phase:** referee (not a pipeline check)\n");
        out.push_str(&format!(
            "**Description:** the referee's own fault ({area}); until it is cleared no verdict can be trusted\n"
        ));
        out.push_str(&format!("**Evidence:** {}\n", message.replace('\n', " ")));
        out.push_str(
            "**Required Action:** A human must look at the referee (permissions, disk space, the build directory) \
and restart it if needed; the referee removes this block when the fault clears.\n",
        );
    }
    out
}

/// The whole STOP file: the check blocks (if any) and the fault blocks (if any).
pub fn compose(checks: Option<String>, faults: &[(String, String)]) -> Option<String> {
    match (checks, faults.is_empty()) {
        (None, true) => None,
        (Some(c), true) => Some(c),
        (None, false) => Some(format!(
            "# OBSERVER STOP — REFEREE FAULT\n\nThe referee itself cannot do its job. The orchestrator must not make the next phase transition until this file is gone.\n\n{}",
            fault_blocks(faults)
        )),
        (Some(c), false) => Some(format!(
            "{}\n---\n\n{}",
            c.trim_end_matches('\n').to_string() + "\n",
            fault_blocks(faults)
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sync_and_tamper() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(STOP_FILE);
        let mut s = StopFile::new(dir.path());
        assert_eq!(s.sync(None).unwrap(), Synced::Unchanged);
        assert_eq!(s.sync(Some("stop".into())).unwrap(), Synced::Written);
        assert_eq!(s.check().unwrap(), None);
        std::fs::remove_file(&path).unwrap();
        assert_eq!(s.check().unwrap(), Some(Tamper::Deleted));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "stop");
        std::fs::write(&path, "go on").unwrap();
        assert_eq!(s.check().unwrap(), Some(Tamper::Edited));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "stop");
        assert_eq!(s.sync(None).unwrap(), Synced::Removed);
        assert!(!path.exists());
        std::fs::write(&path, "fake").unwrap();
        assert_eq!(s.check().unwrap(), Some(Tamper::Created));
        assert!(!path.exists());
    }

    #[test]
    fn a_fifo_in_its_place_is_never_opened() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(STOP_FILE);
        let mut s = StopFile::new(dir.path());
        s.sync(Some("stop".into())).unwrap();
        std::fs::remove_file(&path).unwrap();
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
        assert_eq!(s.check().unwrap(), Some(Tamper::Edited));
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "stop");
    }

    #[test]
    fn faults_make_their_own_blocks() {
        let f = vec![(
            "write".to_string(),
            "cannot write `OBSERVER-PASS-2.md`".to_string(),
        )];
        let only = compose(None, &f).unwrap();
        assert!(only.starts_with("# OBSERVER STOP"));
        assert!(only.contains("**Check:** REFEREE-FAULT"));
        let both = compose(Some("# OBSERVER STOP\n\n**Check:** OBS-27\n".into()), &f).unwrap();
        assert!(both.contains("OBS-27") && both.contains("REFEREE-FAULT"));
        assert_eq!(compose(None, &[]), None);
    }
}
