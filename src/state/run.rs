//! How the live referee was started (issue 16 §7): the protocol (its id and SHA-256), the waiver
//! file (its SHA-256), `--fresh` and the options, written by `watch` into its state directory
//! ([`RUN_FILE`]) when it starts and again when its waiver file is reloaded. `referee status
//! --expect-protocol SHA --expect-waivers SHA|none` compares the live run against what the
//! orchestrator pinned, so a pipeline that restarts the referee with its own rules (a permissive
//! protocol, its own waivers, `--fresh`) is refused, not believed. The record is the state
//! directory's: the watched side cannot write it, and it names the run's pid and
//! trace id so a record left by an earlier run never vouches for a later one.
//!
//! This module owns the record's format, writing and reading it; it decides nothing.

use std::io::{self, Read};
use std::path::Path;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The record's name in the state directory.
pub const RUN_FILE: &str = "OBSERVER-RUN.json";
const SCHEMA: &str = "referee.run/1";

/// A hash of a file's bytes, as `sha256sum` prints it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Hashed {
    pub file: String,
    pub sha256: String,
}

/// How a run was started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Started {
    pub schema: String,
    pub pid: u32,
    pub trace_id: String,
    pub started: DateTime<Utc>,
    pub protocol_id: String,
    pub protocol_version: String,
    /// The SHA-256 of the protocol's text (`referee protocol hash ID|FILE` prints it).
    pub protocol_sha256: String,
    pub protocol_origin: String,
    /// Whether the protocol judges task records (code-change) rather than a build directory.
    pub tasks: bool,
    /// `--waivers`: the file and the SHA-256 of its bytes as last loaded; `None`: no waivers.
    pub waivers: Option<Hashed>,
    /// Started with `--fresh` (the event log before it moved aside).
    pub fresh: bool,
    /// The options it runs with, as its `start` event records them.
    pub options: serde_json::Value,
}

impl Started {
    pub fn new(pid: u32, trace_id: &str, started: DateTime<Utc>) -> Started {
        Started {
            schema: SCHEMA.into(),
            pid,
            trace_id: trace_id.into(),
            started,
            protocol_id: String::new(),
            protocol_version: String::new(),
            protocol_sha256: String::new(),
            protocol_origin: String::new(),
            tasks: false,
            waivers: None,
            fresh: false,
            options: serde_json::Value::Null,
        }
    }

    /// Writes the record into `state` (temp file and rename).
    pub fn write(&self, state: &Path) -> io::Result<()> {
        let text = serde_json::to_string_pretty(self).map_err(io::Error::other)? + "\n";
        let tmp = state.join(format!(".{RUN_FILE}.tmp.{}", std::process::id()));
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, state.join(RUN_FILE))
    }

    /// The record in `state`; `None` when there is none or it is not one.
    pub fn read(state: &Path) -> Option<Started> {
        let path = state.join(RUN_FILE);
        let meta = std::fs::symlink_metadata(&path).ok()?;
        if !meta.is_file() || meta.len() > 1 << 20 {
            return None;
        }
        let mut text = String::new();
        std::fs::File::open(&path)
            .ok()?
            .take(1 << 20)
            .read_to_string(&mut text)
            .ok()?;
        serde_json::from_str::<Started>(&text)
            .ok()
            .filter(|s| s.schema == SCHEMA)
    }

    /// What `status --show-run` prints: one `key value` line each.
    pub fn describe(&self) -> String {
        format!(
            "run: pid {} trace {}\nprotocol: {} {} sha256 {} ({})\nwaivers: {}\nfresh: {}\n",
            self.pid,
            self.trace_id,
            self.protocol_id,
            self.protocol_version,
            self.protocol_sha256,
            self.protocol_origin,
            match &self.waivers {
                Some(w) => format!("{} sha256 {}", w.file, w.sha256),
                None => "none".into(),
            },
            self.fresh
        )
    }
}

/// The SHA-256 of a file's bytes (lowercase hex, as `sha256sum` prints it).
pub fn sha256_file(path: &Path) -> io::Result<String> {
    let mut f = std::fs::File::open(path)?;
    let mut h = Sha256::new();
    io::copy(&mut f, &mut h)?;
    Ok(crate::protocol::hex(&h.finalize()))
}

/// Whether `got` is the hash `want` pins: equal ignoring case, or (for a prefix of at least 12
/// hex digits) the start of it.
pub fn pins(want: &str, got: &str) -> bool {
    let want = want.trim().to_ascii_lowercase();
    want.len() >= 12 && got.to_ascii_lowercase().starts_with(&want)
}

/// Why the run does not match what the orchestrator pinned, if it does not. `waivers`:
/// `Some("none")` pins "no waiver file".
pub fn mismatch(run: &Started, protocol: Option<&str>, waivers: Option<&str>) -> Option<String> {
    let mut why = Vec::new();
    if let Some(want) = protocol {
        if !pins(want, &run.protocol_sha256) {
            why.push(format!(
                "it runs protocol `{}` with sha256 `{}`, not the expected `{}`",
                run.protocol_id,
                run.protocol_sha256,
                want.trim()
            ));
        }
    }
    if let Some(want) = waivers {
        let none = want.trim().eq_ignore_ascii_case("none");
        match (&run.waivers, none) {
            (None, true) => {}
            (Some(w), true) => why.push(format!(
                "it runs with the waiver file `{}` (sha256 `{}`), not without waivers",
                w.file, w.sha256
            )),
            (None, false) => why.push(format!(
                "it runs without a waiver file, not with the expected `{}`",
                want.trim()
            )),
            (Some(w), false) if !pins(want, &w.sha256) => why.push(format!(
                "it runs with the waiver file `{}` with sha256 `{}`, not the expected `{}`",
                w.file,
                w.sha256,
                want.trim()
            )),
            _ => {}
        }
    }
    (!why.is_empty()).then(|| why.join("; "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run() -> Started {
        let mut s = Started::new(7, "t", Utc::now());
        s.protocol_id = "d10".into();
        s.protocol_sha256 = "ab".repeat(32);
        s
    }

    #[test]
    fn pins_compare_hashes_and_say_what_differs() {
        let r = run();
        assert_eq!(mismatch(&r, Some(&"AB".repeat(32)), Some("none")), None);
        assert_eq!(mismatch(&r, Some(&"ab".repeat(6)), None), None, "a prefix");
        assert!(mismatch(&r, Some("ab"), None).is_some(), "too short to pin");
        let why = mismatch(&r, Some(&"cd".repeat(32)), None).expect("another protocol");
        assert!(
            why.contains("d10") && why.contains(&"ab".repeat(32)),
            "{why}"
        );
        let mut w = run();
        w.waivers = Some(Hashed {
            file: "/w.toml".into(),
            sha256: "ef".repeat(32),
        });
        assert!(mismatch(&w, None, Some("none")).is_some());
        assert!(mismatch(&w, None, Some(&"12".repeat(32))).is_some());
        assert_eq!(mismatch(&w, None, Some(&"ef".repeat(32))), None);
        assert!(mismatch(&r, None, Some(&"ef".repeat(32))).is_some());
    }

    #[test]
    fn the_record_reads_back_and_garbage_is_no_record() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(Started::read(dir.path()).is_none());
        run().write(dir.path()).expect("write");
        assert_eq!(
            Started::read(dir.path()),
            Some(run()).map(|mut r| {
                r.started = Started::read(dir.path()).expect("read").started;
                r
            })
        );
        std::fs::write(dir.path().join(RUN_FILE), "{").expect("write");
        assert!(Started::read(dir.path()).is_none());
    }
}
