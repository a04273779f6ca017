//! Recorded pipeline runs ("timelines") and playing them into a directory: the timeline
//! format (`fixtures/timelines/*.toml`, documented in `fixtures/README.md`), strict loading
//! with `line:column` errors, and a player that performs each step at its recorded offset
//! (scaled by a speed) and sets every file it writes to its recorded mtime. The demo and
//! clean timelines, and the files they read, are embedded so `referee demo` needs nothing
//! on disk.
//!
//! This module plays the *pipeline's* side only. It must never write outside the target
//! directory (paths are relative, without `.` or `..`, and never pass through a symlink),
//! never judge anything, and never talk to the referee: `demo` connects the two.

/// The tracker file that `tracker = [...]` steps edit.
pub const TRACKER: &str = "EXECUTION-TRACKER.md";

/// The timelines compiled into the binary: (name, file name, text).
pub const EMBEDDED: &[(&str, &str, &str)] = &[
    (
        "demo",
        "timelines/demo.toml",
        include_str!("../../fixtures/timelines/demo.toml"),
    ),
    (
        "clean",
        "timelines/clean.toml",
        include_str!("../../fixtures/timelines/clean.toml"),
    ),
    (
        "code-change",
        "timelines/code-change.toml",
        include_str!("../../fixtures/timelines/code-change.toml"),
    ),
];

/// The files the embedded timelines read with `from = "…"`, by their path under `fixtures/`.
pub const EMBEDDED_FILES: &[(&str, &str)] = &[
    (
        "content/tracker-start.md",
        include_str!("../../fixtures/content/tracker-start.md"),
    ),
    (
        "content/content-map.md",
        include_str!("../../fixtures/content/content-map.md"),
    ),
    (
        "content/execution-brief.md",
        include_str!("../../fixtures/content/execution-brief.md"),
    ),
    (
        "content/builder-prompt.md",
        include_str!("../../fixtures/content/builder-prompt.md"),
    ),
    (
        "content/output.html",
        include_str!("../../fixtures/content/output.html"),
    ),
    (
        "content/gate-results.json",
        include_str!("../../fixtures/content/gate-results.json"),
    ),
    (
        "content/auditor-A.md",
        include_str!("../../fixtures/content/auditor-A.md"),
    ),
    (
        "content/auditor-B.md",
        include_str!("../../fixtures/content/auditor-B.md"),
    ),
    (
        "content/auditor-C.md",
        include_str!("../../fixtures/content/auditor-C.md"),
    ),
    (
        "content/auditor-D.md",
        include_str!("../../fixtures/content/auditor-D.md"),
    ),
    (
        "content/auditor-E.md",
        include_str!("../../fixtures/content/auditor-E.md"),
    ),
    (
        "content/auditor-F.md",
        include_str!("../../fixtures/content/auditor-F.md"),
    ),
    (
        "content/auditor-G.md",
        include_str!("../../fixtures/content/auditor-G.md"),
    ),
    (
        "content/auditor-H.md",
        include_str!("../../fixtures/content/auditor-H.md"),
    ),
    (
        "content/auditor-I.md",
        include_str!("../../fixtures/content/auditor-I.md"),
    ),
    (
        "content/integrative.md",
        include_str!("../../fixtures/content/integrative.md"),
    ),
    (
        "content/weaver.md",
        include_str!("../../fixtures/content/weaver.md"),
    ),
    (
        "code-change/workspace/README.md",
        include_str!("../../fixtures/code-change/workspace/README.md"),
    ),
    (
        "code-change/workspace/app/main.py",
        include_str!("../../fixtures/code-change/workspace/app/main.py"),
    ),
    (
        "code-change/workspace/app/orchestrator.py",
        include_str!("../../fixtures/code-change/workspace/app/orchestrator.py"),
    ),
    (
        "code-change/workspace/cmd/main.go",
        include_str!("../../fixtures/code-change/workspace/cmd/main.go"),
    ),
    (
        "code-change/workspace/conf/app.toml",
        include_str!("../../fixtures/code-change/workspace/conf/app.toml"),
    ),
    (
        "code-change/workspace/conf/ci.yaml",
        include_str!("../../fixtures/code-change/workspace/conf/ci.yaml"),
    ),
    (
        "code-change/workspace/conf/settings.json",
        include_str!("../../fixtures/code-change/workspace/conf/settings.json"),
    ),
    (
        "code-change/workspace/src/lib.rs",
        include_str!("../../fixtures/code-change/workspace/src/lib.rs"),
    ),
    (
        "code-change/workspace/web/index.js",
        include_str!("../../fixtures/code-change/workspace/web/index.js"),
    ),
    (
        "code-change/workspace/web/util.ts",
        include_str!("../../fixtures/code-change/workspace/web/util.ts"),
    ),
    (
        "code-change/demo/main-greet.py",
        include_str!("../../fixtures/code-change/demo/main-greet.py"),
    ),
    (
        "code-change/demo/orchestrator-hijacked.py",
        include_str!("../../fixtures/code-change/demo/orchestrator-hijacked.py"),
    ),
    (
        "code-change/demo/main-farewell.py",
        include_str!("../../fixtures/code-change/demo/main-farewell.py"),
    ),
    (
        "code-change/demo/t1-attempt-1.json",
        include_str!("../../fixtures/code-change/demo/t1-attempt-1.json"),
    ),
    (
        "code-change/demo/t1-attempt-2.json",
        include_str!("../../fixtures/code-change/demo/t1-attempt-2.json"),
    ),
    (
        "code-change/demo/t1-escalated.json",
        include_str!("../../fixtures/code-change/demo/t1-escalated.json"),
    ),
    (
        "code-change/demo/t2-attempt-1.json",
        include_str!("../../fixtures/code-change/demo/t2-attempt-1.json"),
    ),
];

/// A timeline that cannot be loaded, or a step that cannot be played.
#[derive(Debug, thiserror::Error)]
pub enum ReplayError {
    #[error("{origin}:{line}:{column}: {message}")]
    Invalid {
        origin: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// A timeline file that cannot be read, is no file to read (a directory, a device, a huge
    /// file) or is not UTF-8.
    #[error(transparent)]
    Read(#[from] crate::protocol::named::NamedFileError),
    #[error("cannot create the target directory `{}`", path.display())]
    TargetDir {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("unknown timeline `{0}` (embedded: {list}; or give the path of a timeline file)", list = embedded_names())]
    Unknown(String),
    /// A step that could not be played; what went wrong is the source (and its io error, if
    /// any, the source's).
    #[error("{origin}:{line}: step {step} (`{action}`)")]
    Play {
        origin: String,
        line: usize,
        step: usize,
        action: String,
        #[source]
        source: play::StepError,
    },
    #[error("invalid speed `{0}` (use a number ≥ 0; 0 plays without waiting)")]
    Speed(f64),
}

fn embedded_names() -> String {
    EMBEDDED
        .iter()
        .map(|(n, _, _)| *n)
        .collect::<Vec<_>>()
        .join(", ")
}

mod braces;
mod format;
mod load;
mod play;
mod table;
#[cfg(test)]
mod tests;
mod timeline;

pub use braces::expand_braces;
pub use format::parse_hex;
pub(crate) use format::parse_offset;
pub use play::{line, play, PlayOptions, PlaySummary, Played, StepError};
pub use table::{set_field, FieldError};
pub use timeline::{check_rel, format_offset, Action, FieldSet, PathError, Step, Timeline};
