//! What is on disk: a [`Snapshot`] of the build directory and cached, safe reads of its files.
//!
//! This module owns listing the build directory (each directory listed through its own descriptor,
//! never through a symlink), deciding what each entry is (a symlink counts as its target only when
//! the target is inside the build directory; a symlinked folder inside it is listed under the
//! link's name through the folder's own path, never into a folder that holds it, so loops are
//! impossible), and reading each file at most once per snapshot through [`fsread`]. It also
//! hosts the parsers of the two structured artifacts, the execution tracker ([`tracker`]) and the gate
//! results ([`gates`]), and the markdown block structure they and the checks share ([`markdown`]). It must not write anything, must not open anything but regular files, must not
//! filter entries (not even `OBSERVER-*` files or editor files: callers decide what to ignore,
//! [`ignored`] says what no check reads; only a `.git` folder's contents are not listed), and must not judge
//! artifacts: a missing or unreadable file is reported as data, never as a check result or a panic.
//!
//! Two rules keep "cannot be read" apart from "absent": a directory the walk could not list (or an
//! entry it could not examine: permission denied, a path longer than `PATH_MAX`, …) is kept as an
//! [`Unlisted`] place, so a check whose glob could reach under it knows its listing is incomplete;
//! and every name is made into `rel` by [`escape_name`], an injective escape (invalid UTF-8 bytes
//! as `\xff`, control characters as `\n`/`\x1b`, a backslash as `\\`), so two names never
//! collapse into one and no name can carry a line break into an output file.

mod entry;
mod escape;
pub mod fsread;
pub mod gates;
pub mod ignored;
pub mod json_keys;
pub mod json_prefix;
pub mod markdown;
pub mod normalize;
mod rescan;
mod snapshot;
#[cfg(test)]
mod test_support;
pub mod tracker;
mod walk;

pub use entry::{Entry, Kind, Unlisted};
pub use escape::{escape_name, needs_escape, one_line};
pub use fsread::{FileData, ReadError};
pub use ignored::not_input;
pub use snapshot::{Listing, Snapshot};

/// The largest execution tracker that is parsed. A real one is tens of kilobytes; the parsed form
/// costs up to ~110 bytes per byte of text (a table of one-character rows: each row is a field
/// row and a table row, with their strings), so a 64 MiB tracker of such rows would take ~7 GB.
/// A larger tracker makes every check that reads it INCONCLUSIVE, with this reason.
pub const MAX_TRACKER_BYTES: u64 = 4 << 20;

/// The default per-file read cap: 64 MiB.
pub const DEFAULT_MAX_READ_BYTES: u64 = 64 * 1024 * 1024;

/// Resource limits for reading artifacts.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Files larger than this are refused with [`ReadError::TooLarge`], never read.
    pub max_read_bytes: u64,
    /// Files larger than this are not kept after a read: each reader reads them again. `None`
    /// keeps every file for the snapshot's life, so each is read at most once (`verify`); the
    /// daemon sets it to bound its memory while it watches a large build.
    pub keep_bytes: Option<u64>,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_read_bytes: DEFAULT_MAX_READ_BYTES,
            keep_bytes: None,
        }
    }
}
