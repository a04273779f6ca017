//! The referee's memory of what it saw and in which order (issue 16 §5): a time written by the
//! watched side (a file's mtime, a tracker timestamp) is a claim; the order in which the
//! referee saw things appear is evidence. A check that orders times (the checks'
//! `time_order`) also orders what the referee saw, and an order it saw the other way round
//! fails the check whatever the claims say: `touch -d` on an auditor report, or a back-dated
//! `EXPERIENTIAL_SCAN` filled in after the auditors were spawned, does not lift a STOP.
//!
//! What is remembered is *content*, by round: the first round of looking in which the referee
//! saw a given file content at a path, or a given tracker value under a field or column. Round
//! 0 is everything present at the first look (its order unknown: equal rounds order nothing);
//! each later round that saw something new is one more. Content is never forgotten, so moving a
//! file away and back, or re-keying a table, does not make old bytes look new; a changed file
//! or value is new (a real re-run, or a re-recorded time, is judged anew).
//!
//! The record lives in the state directory ([`SEEN_FILE`]), so a restart keeps it and
//! the watched side cannot edit it. `watch` keeps it (the daemon notes what it looks at
//! before each judgment); `verify` reads it, read-only, when the state directory holds one —
//! so a human re-running the checks agrees with the referee that watched — and judges by the
//! claims alone when there is none. This module only keeps the record; it must not judge, scan
//! or read the watched directory.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The record's name in the state directory.
pub const SEEN_FILE: &str = "OBSERVER-SEEN.json";
const SCHEMA: &str = "referee.seen/1";
/// A record larger than this is not the referee's (it is refused, not read).
const MAX_BYTES: u64 = 64 << 20;

/// When the referee first saw something.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Seen {
    /// The round of looking (0: there at the first look).
    pub round: u64,
    /// The referee's clock then; `None`: not in the record (seen after its last look).
    pub at: Option<DateTime<Utc>>,
}

impl Seen {
    /// `first seen 2026-…Z` / `there when the referee started` / `not seen by the referee`.
    pub fn describe(&self) -> String {
        match (self.round, self.at) {
            (_, None) => "not seen by the referee while it watched (newer)".into(),
            (0, Some(at)) => format!("there when the referee first looked ({})", stamp(&at)),
            (_, Some(at)) => format!("first seen by the referee {}", stamp(&at)),
        }
    }
}

fn stamp(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Item {
    round: u64,
    at: DateTime<Utc>,
}

/// What the referee saw, by round.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Observed {
    schema: String,
    /// The round that what is seen next belongs to.
    next: u64,
    /// `kind:name:hash` → when first seen.
    items: BTreeMap<String, Item>,
    /// Something new was noted in the round `next` (not yet closed).
    #[serde(skip)]
    open: bool,
    /// Changed since the last save.
    #[serde(skip)]
    dirty: bool,
}

impl Default for Observed {
    fn default() -> Self {
        Observed {
            schema: SCHEMA.into(),
            next: 0,
            items: BTreeMap::new(),
            open: false,
            dirty: false,
        }
    }
}

/// The record cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum SeenError {
    #[error("cannot read `{}`", path.display())]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("`{}` is not the referee's record of what it saw ({why}); move it aside to start a new one", path.display())]
    Invalid { path: PathBuf, why: String },
}

impl super::kept_json::Schema for Observed {
    fn schema(&self) -> &str {
        &self.schema
    }
}

/// The key of a file content at a path.
pub fn file_key(rel: &str, sha256: &str) -> String {
    format!("file:{rel}:{sha256}")
}

/// The key of a tracker field's value and time cell.
pub fn field_key(name: &str, value: &str, time: Option<&str>) -> String {
    let text = format!("{}\u{1f}{}", value.trim(), time.unwrap_or("").trim());
    format!("field:{}:{}", name.trim().to_lowercase(), text_hash(&text))
}

/// The key of a cell in a column of a tracker table (by the table's section heading).
pub fn cell_key(section: &str, column: &str, cell: &str) -> String {
    format!(
        "cell:{}\u{1f}{}:{}",
        section.trim().to_lowercase(),
        column.trim().to_lowercase(),
        text_hash(cell.trim())
    )
}

fn text_hash(s: &str) -> String {
    let mut h = crate::protocol::hex(&Sha256::digest(s.as_bytes()));
    h.truncate(32);
    h
}

impl Observed {
    /// The record in `state`, if there is one.
    pub fn load(state: &Path) -> Result<Option<Observed>, SeenError> {
        use super::kept_json::{read, Unread};
        let path = state.join(SEEN_FILE);
        read(&path, MAX_BYTES, SCHEMA).map_err(|e| match e {
            Unread::Io(source) => SeenError::Io { path, source },
            Unread::Invalid(why) => SeenError::Invalid { path, why },
        })
    }

    /// Writes the record into `state` (atomically), when it changed.
    pub fn save(&mut self, state: &Path) -> io::Result<()> {
        if !self.dirty {
            return Ok(());
        }
        let text = serde_json::to_string(self).map_err(io::Error::other)?;
        let tmp = state.join(format!(".{SEEN_FILE}.tmp.{}", std::process::id()));
        std::fs::write(&tmp, text)?;
        std::fs::rename(&tmp, state.join(SEEN_FILE))?;
        self.dirty = false;
        Ok(())
    }

    /// When `key` was first seen; what the record does not hold is newer than everything in it.
    pub fn seen(&self, key: &str) -> Seen {
        match self.items.get(key) {
            Some(i) => Seen {
                round: i.round,
                at: Some(i.at),
            },
            None => Seen {
                round: self.next,
                at: None,
            },
        }
    }

    /// Notes `key` as seen now, unless it was seen before.
    pub fn note(&mut self, key: String, at: DateTime<Utc>) {
        if self.items.contains_key(&key) {
            return;
        }
        self.items.insert(
            key,
            Item {
                round: self.next,
                at,
            },
        );
        self.open = true;
        self.dirty = true;
    }

    /// Ends a round of looking: what is noted next is later than what was noted so far.
    pub fn end_round(&mut self) {
        if std::mem::take(&mut self.open) {
            self.next += 1;
            self.dirty = true;
        }
    }

    /// How many things it remembers.
    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_order_what_was_seen_and_equal_rounds_order_nothing() {
        let mut o = Observed::default();
        let t = Utc::now();
        o.note(file_key("a.md", "1"), t);
        o.note(file_key("b.md", "2"), t);
        o.end_round();
        o.note(file_key("a.md", "3"), t);
        o.note(file_key("a.md", "1"), t);
        o.end_round();
        o.end_round();
        assert_eq!(o.seen(&file_key("a.md", "1")).round, 0);
        assert_eq!(o.seen(&file_key("b.md", "2")).round, 0);
        assert_eq!(o.seen(&file_key("a.md", "3")).round, 1);
        let unseen = o.seen(&file_key("c.md", "4"));
        assert_eq!(unseen.round, 2, "newer than everything seen");
        assert_eq!(unseen.at, None);
    }

    #[test]
    fn the_record_survives_a_save_and_refuses_what_is_not_it() {
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(Observed::load(dir.path()).expect("no record").is_none());
        let mut o = Observed::default();
        o.note(
            field_key("EXPERIENTIAL_SCAN", "I see", Some("10:49")),
            Utc::now(),
        );
        o.end_round();
        o.save(dir.path()).expect("save");
        let back = Observed::load(dir.path()).expect("load").expect("a record");
        assert_eq!(back.len(), 1);
        assert_eq!(
            back.seen(&field_key("experiential_scan ", "I see ", Some("10:49")))
                .round,
            0,
            "names ignore case, values surrounding blanks"
        );
        std::fs::write(dir.path().join(SEEN_FILE), "{\"schema\":\"x\"").expect("write");
        assert!(matches!(
            Observed::load(dir.path()),
            Err(SeenError::Invalid { .. })
        ));
    }
}
