//! What judging a predicate gives: an [`Outcome`] (its [`Verdict`], what was expected and
//! found, the files it rests on), with the caps that keep evidence small.

use serde::Serialize;

/// How far a predicate got.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Pass,
    /// The artifacts cannot decide it (unparseable, unreadable, not recorded).
    Inconclusive,
    /// Something it needs is not there (yet).
    Missing,
    /// Present and wrong.
    Fail,
}

/// A file an outcome rests on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
pub struct FileRef {
    pub path: String,
    pub size: u64,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub sha256: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub mtime: Option<String>,
}

/// A judgment with its evidence.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    pub verdict: Verdict,
    /// What would have made it pass.
    pub expected: Vec<String>,
    /// What was found.
    pub observed: Vec<String>,
    /// Matched lines and values: `file:line: text`.
    pub details: Vec<String>,
    pub files: Vec<FileRef>,
    /// Something at an artifact's name is not what the name must be (a directory, FIFO,
    /// dangling symlink … where a regular file belongs): present and wrong. The verdict is FAIL,
    /// and neither `not` nor `if` ever turns it into a pass.
    pub wrong: bool,
    /// The FAIL rests on what is already complete in its files (a forbidden gate entry whose
    /// object has closed, a forbidden word with a complete line after it): no write appended
    /// to them can undo it, so a writer that keeps them
    /// open does not hold it back (only a composite of one such leaf keeps it; `not`, `if`,
    /// `all` and `any` drop it).
    pub stands: bool,
}

/// Caps on evidence, so a huge artifact cannot make a huge report.
pub const MAX_DETAILS: usize = 40;
pub const MAX_DETAIL_CHARS: usize = 240;

impl Outcome {
    pub fn new(verdict: Verdict, expected: impl Into<String>, observed: impl Into<String>) -> Self {
        Outcome {
            verdict,
            expected: vec![expected.into()],
            observed: vec![observed.into()],
            details: Vec::new(),
            files: Vec::new(),
            wrong: false,
            stands: false,
        }
    }

    pub fn pass(expected: impl Into<String>, observed: impl Into<String>) -> Self {
        Outcome::new(Verdict::Pass, expected, observed)
    }

    pub fn detail(mut self, d: impl Into<String>) -> Self {
        self.push_detail(d);
        self
    }

    pub fn push_detail(&mut self, d: impl Into<String>) {
        if self.details.len() < MAX_DETAILS {
            self.details.push(clip(&d.into(), MAX_DETAIL_CHARS));
        } else if self.details.len() == MAX_DETAILS {
            self.details.push("… (more not shown)".into());
        }
    }

    pub fn file(mut self, f: FileRef) -> Self {
        self.push_file(f);
        self
    }

    pub fn push_file(&mut self, f: FileRef) {
        if let Some(existing) = self.files.iter_mut().find(|e| e.path == f.path) {
            if existing.sha256.is_none() {
                *existing = f;
            }
        } else {
            self.files.push(f);
        }
    }

    /// Merges the evidence of parts into one outcome with the given verdict.
    pub(super) fn combine(verdict: Verdict, parts: Vec<Outcome>) -> Outcome {
        let mut out = Outcome {
            verdict,
            expected: Vec::new(),
            observed: Vec::new(),
            details: Vec::new(),
            files: Vec::new(),
            wrong: false,
            stands: false,
        };
        for p in parts {
            out.wrong |= p.wrong;
            out.expected.extend(p.expected);
            out.observed.extend(p.observed);
            for d in p.details {
                out.push_detail(d);
            }
            for f in p.files {
                out.push_file(f);
            }
        }
        out
    }
}

/// Shortens `s` to at most `max` characters, marking the cut.
pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}
