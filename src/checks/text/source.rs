//! One text the `text` predicate searches (a file, or a tracker field's value) and its readings
//! as a human reads it ([`crate::artifacts::normalize`]): rules match on a reading, evidence is
//! quoted from the bytes as written.
//!
//! In a file with NUL bytes a hit counts only inside a readable text run (see
//! [`readable_runs`]): compressed image data matches a short pattern such as `\bfix\b` by
//! chance about once per megabyte, and a referee that stops a build on a screenshot's pixels
//! gets switched off. Words planted in such a file sit in runs of text (a PNG `tEXt` chunk, the
//! prose around a planted NUL, ASCII saved as UTF-16 once its NUL bytes read as nothing) and
//! still count. The same holds for `require` and `extract`.

use std::ops::Range;
use std::sync::Arc;

use crate::artifacts::normalize::{self, Encoding, Reading};
use crate::artifacts::FileData;

pub(super) struct Source {
    pub label: String,
    content: Content,
    has_nul: bool,
    wide: Option<(Encoding, usize)>,
}

/// One reading of a source and, for the UTF-8 reading of a file with NUL bytes, its readable
/// text runs (offsets in the reading): only hits inside one count. `None`: every hit counts.
pub(super) struct Read {
    pub reading: Reading,
    pub runs: Option<Vec<Range<usize>>>,
}

enum Content {
    File(Arc<FileData>),
    Field(String),
}

impl Source {
    /// A file as a source. The whole file is tested for NUL (not only its head), so a binary
    /// whose first NUL comes late is not searched as text.
    pub fn file(label: String, d: Arc<FileData>) -> Source {
        let has_nul = d.bytes.has_nul();
        let wide = normalize::detect_wide(&d.bytes, has_nul);
        Source {
            label,
            content: Content::File(d),
            has_nul,
            wide,
        }
    }

    pub fn field(label: String, value: String) -> Source {
        Source {
            label,
            content: Content::Field(value),
            has_nul: false,
            wide: None,
        }
    }

    /// The readings to search: as UTF-8 and, for UTF-16/32 text, decoded. Made afresh on
    /// each call and not kept: a normalised copy of a 2 MB report is dropped as soon as it
    /// has been searched, so the next report's copy reuses its memory instead of faulting in
    /// new pages (the scans on two threads normalise their own halves).
    pub fn readings(&self) -> Vec<Read> {
        let original = self.original();
        normalize::readings(original, self.wide)
            .into_iter()
            .map(|reading| {
                let runs = (self.has_nul && reading.encoding == Encoding::Utf8)
                    .then(|| readable_runs(reading.text(original), MIN_READABLE_RUN));
                Read { reading, runs }
            })
            .collect()
    }

    /// The bytes as written.
    pub fn original(&self) -> &[u8] {
        match &self.content {
            Content::File(d) => &d.bytes,
            Content::Field(s) => s.as_bytes(),
        }
    }

    /// Whether a hit ending at `end` (an offset in the bytes as written) reads the same
    /// whatever the file's writer appends: only in a file (a tracker field's value is the
    /// tracker's to change) with no NUL bytes (an appended NUL makes it binary, where only long
    /// readable runs count), and only when a complete line with text on it follows the hit's:
    /// a reading joins a line's end to the next text (`re-` then `pair` reads `repair`), and the
    /// last line may still grow (an appended combining or direction mark changes how it reads).
    pub fn settled_before(&self, end: usize) -> bool {
        let Content::File(d) = &self.content else {
            return false;
        };
        if self.has_nul {
            return false;
        }
        // A reading may take the line break into the hit (`GR-` then a line break reads as one
        // word's end): the hit's line ends at its last byte at the latest.
        let rest = d.bytes.get(end.saturating_sub(1)..).unwrap_or_default();
        let Some(next) = memchr::memchr(b'\n', rest) else {
            return false;
        };
        let after = &rest[next + 1..];
        let complete = memchr::memrchr(b'\n', after).map_or(&after[..0], |last| &after[..last]);
        complete.iter().any(|b| !b.is_ascii_whitespace())
    }

    /// Whether the UTF-8 reading is limited to readable runs (the file has NUL bytes).
    pub fn binary(&self) -> bool {
        self.has_nul
    }

    /// The wide encoding the file is also read in, if any.
    pub fn wide(&self) -> Option<Encoding> {
        self.wide.map(|(e, _)| e)
    }

    /// The text judged for length and required language: every reading, and of a reading with
    /// runs only its runs, one per line (so a required word never joins across a run's edge).
    pub fn text(&self) -> String {
        let original = self.original();
        self.readings()
            .iter()
            .map(|r| {
                let text = r.reading.text(original);
                match &r.runs {
                    None => crate::artifacts::fsread::lossy(text).into_owned(),
                    Some(runs) => runs
                        .iter()
                        .map(|run| crate::artifacts::fsread::lossy(&text[run.clone()]))
                        .collect::<Vec<_>>()
                        .join("\n"),
                }
            })
            .collect::<Vec<_>>()
            .join("\n")
    }
}

impl Read {
    /// Whether a match at `at` (offsets in the reading) counts: always in text, only inside
    /// one readable run in binary.
    pub fn counts(&self, at: Range<usize>) -> bool {
        match &self.runs {
            None => true,
            Some(runs) => {
                // The last run starting at or before the match is the only one that can hold it.
                let i = runs.partition_point(|r| r.start <= at.start);
                i > 0 && at.end <= runs[i - 1].end
            }
        }
    }
}

/// The shortest readable run, in bytes, in which a hit in a file with NUL bytes counts.
///
/// Why 20 and not `strings(1)`'s 4 or 8: a chance hit's own bytes are readable by construction,
/// so the run length only buys the odds that the bytes *around* it are readable too. In uniformly
/// random bytes (compressed image data is close to it) a byte is readable with p = 98/256 ≈ 0.38;
/// counting complete UTF-8 sequences a readable run grows like r^n with r ≈ 0.465. The D10
/// OBS-07 patterns hit random bytes about 1.5 times per MiB, mostly 3-byte hits like `>=7` or
/// `fix`, so a minimum of m leaves ≈ 1.5/MiB × r^(m-3) × (m-2 - (m-3)·r) chance hits: ≈ 100 per
/// GiB at m = 8 (`(98/256)^8` alone would wrongly promise 1 in 2,000), 0.6 per GiB at 16 and
/// 0.04 per GiB at 20, one per ~25 GiB of screenshots. Measured on this module's 64 MiB of
/// seeded random bytes (118 raw hits): 7 count at m = 8, none at 12, 16 or 20. Text a pipeline
/// plants for a builder to read (a sentence) is longer than 20 bytes. The runs are taken in the
/// reading, where NUL bytes read as nothing: that makes a NUL no longer end a run, which moves
/// the odds above by a factor of 256/255 per byte.
pub(super) const MIN_READABLE_RUN: usize = 20;

/// The maximal runs of readable bytes in `bytes` that are at least `min` bytes long, in order,
/// as `strings(1)` shows them: ASCII printable bytes, tab, CR, LF and complete valid UTF-8
/// multi-byte sequences. Any other byte (NUL, another control, a byte of invalid or cut-off
/// UTF-8) ends a run.
pub(super) fn readable_runs(bytes: &[u8], min: usize) -> Vec<Range<usize>> {
    let mut runs = Vec::new();
    let mut keep = |run: Range<usize>| {
        if run.len() >= min {
            runs.push(run);
        }
    };
    let (mut start, mut pos) = (0, 0);
    for chunk in bytes.utf8_chunks() {
        for (i, c) in chunk.valid().char_indices() {
            // Every unreadable character here is a one-byte ASCII control or DEL.
            if c.is_ascii() && !matches!(c, ' '..='~' | '\t' | '\n' | '\r') {
                keep(start..pos + i);
                start = pos + i + 1;
            }
        }
        pos += chunk.valid().len();
        if !chunk.invalid().is_empty() {
            keep(start..pos);
            pos += chunk.invalid().len();
            start = pos;
        }
    }
    keep(start..pos);
    runs
}
