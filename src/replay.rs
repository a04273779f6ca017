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

use std::ops::{ControlFlow, Range};
use std::path::{Component, Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use chrono::{DateTime, Utc};
use serde::Deserialize;
use toml::Spanned;

use crate::artifacts::tracker::{self, SectionFilter, Tracker};
use crate::protocol::{line_col, Lines};

/// The tracker file that `tracker = [...]` steps edit.
pub const TRACKER: &str = "EXECUTION-TRACKER.md";

/// The timelines compiled into the binary: (name, file name, text).
pub const EMBEDDED: &[(&str, &str, &str)] = &[
    (
        "demo",
        "timelines/demo.toml",
        include_str!("../fixtures/timelines/demo.toml"),
    ),
    (
        "clean",
        "timelines/clean.toml",
        include_str!("../fixtures/timelines/clean.toml"),
    ),
    (
        "code-change",
        "timelines/code-change.toml",
        include_str!("../fixtures/timelines/code-change.toml"),
    ),
];

/// The files the embedded timelines read with `from = "…"`, by their path under `fixtures/`.
pub const EMBEDDED_FILES: &[(&str, &str)] = &[
    (
        "content/tracker-start.md",
        include_str!("../fixtures/content/tracker-start.md"),
    ),
    (
        "content/content-map.md",
        include_str!("../fixtures/content/content-map.md"),
    ),
    (
        "content/execution-brief.md",
        include_str!("../fixtures/content/execution-brief.md"),
    ),
    (
        "content/builder-prompt.md",
        include_str!("../fixtures/content/builder-prompt.md"),
    ),
    (
        "content/output.html",
        include_str!("../fixtures/content/output.html"),
    ),
    (
        "content/gate-results.json",
        include_str!("../fixtures/content/gate-results.json"),
    ),
    (
        "content/auditor-A.md",
        include_str!("../fixtures/content/auditor-A.md"),
    ),
    (
        "content/auditor-B.md",
        include_str!("../fixtures/content/auditor-B.md"),
    ),
    (
        "content/auditor-C.md",
        include_str!("../fixtures/content/auditor-C.md"),
    ),
    (
        "content/auditor-D.md",
        include_str!("../fixtures/content/auditor-D.md"),
    ),
    (
        "content/auditor-E.md",
        include_str!("../fixtures/content/auditor-E.md"),
    ),
    (
        "content/auditor-F.md",
        include_str!("../fixtures/content/auditor-F.md"),
    ),
    (
        "content/auditor-G.md",
        include_str!("../fixtures/content/auditor-G.md"),
    ),
    (
        "content/auditor-H.md",
        include_str!("../fixtures/content/auditor-H.md"),
    ),
    (
        "content/auditor-I.md",
        include_str!("../fixtures/content/auditor-I.md"),
    ),
    (
        "content/integrative.md",
        include_str!("../fixtures/content/integrative.md"),
    ),
    (
        "content/weaver.md",
        include_str!("../fixtures/content/weaver.md"),
    ),
    (
        "code-change/workspace/README.md",
        include_str!("../fixtures/code-change/workspace/README.md"),
    ),
    (
        "code-change/workspace/app/main.py",
        include_str!("../fixtures/code-change/workspace/app/main.py"),
    ),
    (
        "code-change/workspace/app/orchestrator.py",
        include_str!("../fixtures/code-change/workspace/app/orchestrator.py"),
    ),
    (
        "code-change/workspace/cmd/main.go",
        include_str!("../fixtures/code-change/workspace/cmd/main.go"),
    ),
    (
        "code-change/workspace/conf/app.toml",
        include_str!("../fixtures/code-change/workspace/conf/app.toml"),
    ),
    (
        "code-change/workspace/conf/ci.yaml",
        include_str!("../fixtures/code-change/workspace/conf/ci.yaml"),
    ),
    (
        "code-change/workspace/conf/settings.json",
        include_str!("../fixtures/code-change/workspace/conf/settings.json"),
    ),
    (
        "code-change/workspace/src/lib.rs",
        include_str!("../fixtures/code-change/workspace/src/lib.rs"),
    ),
    (
        "code-change/workspace/web/index.js",
        include_str!("../fixtures/code-change/workspace/web/index.js"),
    ),
    (
        "code-change/workspace/web/util.ts",
        include_str!("../fixtures/code-change/workspace/web/util.ts"),
    ),
    (
        "code-change/demo/main-greet.py",
        include_str!("../fixtures/code-change/demo/main-greet.py"),
    ),
    (
        "code-change/demo/orchestrator-hijacked.py",
        include_str!("../fixtures/code-change/demo/orchestrator-hijacked.py"),
    ),
    (
        "code-change/demo/main-farewell.py",
        include_str!("../fixtures/code-change/demo/main-farewell.py"),
    ),
    (
        "code-change/demo/t1-attempt-1.json",
        include_str!("../fixtures/code-change/demo/t1-attempt-1.json"),
    ),
    (
        "code-change/demo/t1-attempt-2.json",
        include_str!("../fixtures/code-change/demo/t1-attempt-2.json"),
    ),
    (
        "code-change/demo/t1-escalated.json",
        include_str!("../fixtures/code-change/demo/t1-escalated.json"),
    ),
    (
        "code-change/demo/t2-attempt-1.json",
        include_str!("../fixtures/code-change/demo/t2-attempt-1.json"),
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
    #[error("cannot read timeline `{path}`")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// A path that is no timeline file to read: a directory, a device, a huge file.
    #[error("cannot read timeline `{path}`: {why}")]
    NotAFile { path: String, why: &'static str },
    #[error("cannot create the target directory `{path}`")]
    TargetDir {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("unknown timeline `{0}` (embedded: {list}; or give the path of a timeline file)", list = embedded_names())]
    Unknown(String),
    #[error("{origin}:{line}: step {step} (`{action}`): {message}")]
    Play {
        origin: String,
        line: usize,
        step: usize,
        action: String,
        message: String,
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

// ---- the file format -------------------------------------------------------------------

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTimeline {
    #[serde(default)]
    description: String,
    epoch: Option<Spanned<String>>,
    /// Where `from` paths start, relative to the timeline file's directory (default `..`).
    root: Option<String>,
    #[serde(rename = "step", default)]
    steps: Vec<Spanned<RawStep>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawStep {
    at: Option<Spanned<RawDuration>>,
    note: Option<String>,
    // The action: exactly one of these.
    write: Option<Spanned<String>>,
    rename: Option<Spanned<String>>,
    tracker: Option<Spanned<Vec<Spanned<RawSet>>>>,
    mkdir: Option<Spanned<String>>,
    remove: Option<Spanned<String>>,
    wait: Option<Spanned<RawDuration>>,
    // Content, for `write`, `rename` (unless `source`) and a `tracker` base.
    text: Option<Spanned<String>>,
    from: Option<Spanned<String>>,
    hex: Option<Spanned<String>>,
    #[serde(default)]
    replace: Vec<Spanned<RawReplace>>,
    // Modifiers.
    every: Option<Spanned<RawDuration>>,
    temp: Option<Spanned<String>>,
    source: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawDuration {
    Seconds(f64),
    Text(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSet {
    field: String,
    value: Option<String>,
    time: Option<String>,
    section: Option<String>,
    column: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReplace {
    find: String,
    with: String,
}

// ---- the loaded form -------------------------------------------------------------------

/// A loaded, validated timeline: every path checked, every `from` read, every tracker edit
/// known to find its field (where the timeline itself wrote the tracker).
#[derive(Debug, Clone)]
pub struct Timeline {
    /// Where it came from: `embedded:timelines/demo.toml` or a path.
    pub origin: String,
    pub description: String,
    /// Recorded time zero; `None`: the moment playing starts.
    pub epoch: Option<DateTime<Utc>>,
    pub steps: Vec<Step>,
}

#[derive(Debug, Clone)]
pub struct Step {
    /// Recorded offset from time zero.
    pub at: Duration,
    /// 1-based line of the step in the timeline file.
    pub line: usize,
    pub note: Option<String>,
    pub action: Action,
}

#[derive(Debug, Clone)]
pub enum Action {
    /// Writes files in place (not atomically: a reader may see them half-written). With
    /// `every`, the i-th file is written at `at + i * every`.
    Write {
        paths: Vec<String>,
        label: String,
        content: Arc<Vec<u8>>,
        every: Duration,
    },
    /// Writes `content` to `temp`, then renames it to `to`; or renames `source` to `to`.
    Rename {
        to: String,
        temp: String,
        content: Option<Arc<Vec<u8>>>,
        source: Option<String>,
    },
    /// Rewrites the tracker atomically (temp + rename): its current text (or `base`) with
    /// field rows set.
    Tracker {
        base: Option<Arc<Vec<u8>>>,
        sets: Vec<FieldSet>,
    },
    Mkdir {
        path: String,
    },
    /// Removes a file, or a directory with everything in it.
    Remove {
        path: String,
    },
    /// Nothing happens for a while.
    Wait {
        duration: Duration,
    },
}

/// One tracker edit: the field row named `field` (first occurrence, ignoring case, in
/// `section` if given) gets a new second cell (`value`) and/or third cell (`time`); with
/// `column`, `value` goes into the cell under that column of the row's table instead.
#[derive(Debug, Clone)]
pub struct FieldSet {
    pub field: String,
    pub value: Option<String>,
    pub time: Option<String>,
    pub section: Option<String>,
    pub column: Option<String>,
}

impl Step {
    /// When the step is over, in recorded time (a multi-file write spans `every` gaps).
    pub fn end(&self) -> Duration {
        match &self.action {
            Action::Write { paths, every, .. } => {
                self.at + every.saturating_mul(paths.len().saturating_sub(1) as u32)
            }
            Action::Wait { duration } => self.at + *duration,
            _ => self.at,
        }
    }

    /// A one-line description, e.g. `write p0-content-map.md`.
    pub fn describe(&self) -> String {
        match &self.action {
            Action::Write { paths, label, .. } if paths.len() > 1 => {
                format!("write {label} ({} files)", paths.len())
            }
            Action::Write { label, .. } => format!("write {label}"),
            Action::Rename {
                to, temp, source, ..
            } => {
                format!("rename {} → {to}", source.as_deref().unwrap_or(temp))
            }
            Action::Tracker { base, sets } => {
                let mut parts: Vec<String> = sets
                    .iter()
                    .map(|s| {
                        let mut p = s.field.clone();
                        if let Some(v) = &s.value {
                            p.push_str(&format!(" = {}", clip(v, 32)));
                        }
                        if let Some(t) = &s.time {
                            p.push_str(&format!(" @ {}", clip(t, 32)));
                        }
                        p
                    })
                    .collect();
                if parts.len() > 4 {
                    let more = parts.len() - 3;
                    parts.truncate(3);
                    parts.push(format!("… {more} more"));
                }
                let what = if base.is_some() { "write" } else { "update" };
                if parts.is_empty() {
                    format!("tracker: {what} {TRACKER}")
                } else {
                    format!("tracker: {}", parts.join(", "))
                }
            }
            Action::Mkdir { path } => format!("mkdir {path}"),
            Action::Remove { path } => format!("remove {path}"),
            Action::Wait { duration } => format!("wait {}", format_offset(*duration)),
        }
    }

    /// The action's keyword: `write`, `rename`, `tracker`, `mkdir`, `remove` or `wait`.
    pub fn kind(&self) -> &'static str {
        match self.action {
            Action::Write { .. } => "write",
            Action::Rename { .. } => "rename",
            Action::Tracker { .. } => "tracker",
            Action::Mkdir { .. } => "mkdir",
            Action::Remove { .. } => "remove",
            Action::Wait { .. } => "wait",
        }
    }
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(max.saturating_sub(1)).collect();
        c.push('…');
        c
    }
}

/// A played step as one line: `+   6.2s  rename … → p3a-gate-results.json  — the note`.
pub fn line(p: &Played<'_>) -> String {
    let mut s = format!("+{:>9}  {}", format_offset(p.step.at), p.step.describe());
    if let Some(n) = &p.step.note {
        s.push_str("  — ");
        s.push_str(n);
    }
    s
}

/// `1m30.0s`, `4.5s`, `1h02m00.0s`: an offset for printing.
pub fn format_offset(d: Duration) -> String {
    let ms = d.as_millis();
    let (h, rest) = (ms / 3_600_000, ms % 3_600_000);
    let (m, rest) = (rest / 60_000, rest % 60_000);
    let (s, tenths) = (rest / 1000, (rest % 1000) / 100);
    if h > 0 {
        format!("{h}h{m:02}m{s:02}.{tenths}s")
    } else if m > 0 {
        format!("{m}m{s:02}.{tenths}s")
    } else {
        format!("{s}.{tenths}s")
    }
}

/// Where `from = "…"` content comes from.
enum Contents<'a> {
    Dir(PathBuf),
    Embedded(&'a [(&'a str, &'a str)]),
}

impl Contents<'_> {
    fn read(&self, rel: &str) -> Result<Vec<u8>, String> {
        match self {
            Contents::Dir(root) => {
                let p = root.join(rel);
                std::fs::read(&p).map_err(|e| format!("cannot read `{}`: {e}", p.display()))
            }
            Contents::Embedded(files) => files
                .iter()
                .find(|(name, _)| *name == rel)
                .map(|(_, text)| text.as_bytes().to_vec())
                .ok_or_else(|| format!("`{rel}` is not among the embedded files")),
        }
    }
}

/// What the loader knows about the tracker while checking the steps in order.
enum Known {
    /// Not written by the timeline so far: whatever the directory holds.
    Unknown,
    Absent,
    Text(String),
}

impl Timeline {
    /// Loads an embedded timeline by name, or a timeline file by path.
    pub fn load(spec: &str) -> Result<Timeline, ReplayError> {
        let path = Path::new(spec);
        // A file of that name wins; a bare name that is not a file is an embedded timeline.
        if !path.is_file() {
            if let Some((_, name, text)) = EMBEDDED.iter().find(|(n, _, _)| *n == spec) {
                return Timeline::parse_embedded(text, name);
            }
            if !path.exists() && !spec.contains(['/', '.']) {
                return Err(ReplayError::Unknown(spec.to_string()));
            }
        }
        Timeline::load_file(path)
    }

    /// The embedded demo timeline.
    pub fn demo() -> Result<Timeline, ReplayError> {
        Timeline::load_embedded("demo")
    }

    /// An embedded timeline by name.
    pub fn load_embedded(name: &str) -> Result<Timeline, ReplayError> {
        let (_, file, text) = EMBEDDED
            .iter()
            .find(|(n, _, _)| *n == name)
            .ok_or_else(|| ReplayError::Unknown(name.to_string()))?;
        Timeline::parse_embedded(text, file)
    }

    fn parse_embedded(text: &str, file: &str) -> Result<Timeline, ReplayError> {
        Timeline::parse_with(text, &format!("embedded:{file}"), |_| {
            Contents::Embedded(EMBEDDED_FILES)
        })
    }

    /// Loads a timeline file; `from` paths are relative to its `root` (default: the parent
    /// of the file's directory, so `fixtures/timelines/x.toml` reads from `fixtures/`).
    pub fn load_file(path: &Path) -> Result<Timeline, ReplayError> {
        let io = |source: std::io::Error| ReplayError::Io {
            path: path.display().to_string(),
            source,
        };
        let not_a_file = |why| ReplayError::NotAFile {
            path: path.display().to_string(),
            why,
        };
        let meta = std::fs::metadata(path).map_err(io)?;
        if !meta.is_file() {
            return Err(not_a_file("not a regular file"));
        }
        if meta.len() > 4 << 20 {
            return Err(not_a_file("larger than 4 MiB"));
        }
        let bytes = std::fs::read(path).map_err(io)?;
        let origin = path.display().to_string();
        let text = String::from_utf8(bytes).map_err(|_| ReplayError::Invalid {
            origin: origin.clone(),
            line: 1,
            column: 1,
            message: "timeline is not valid UTF-8".into(),
        })?;
        let dir = path.parent().unwrap_or(Path::new("."));
        Timeline::parse_with(&text, &origin, |root| {
            Contents::Dir(dir.join(root.unwrap_or("..")))
        })
    }

    /// Parses timeline text whose `from` paths are relative to `root` (or to the timeline's
    /// own `root`, taken as relative to this one).
    pub fn parse(text: &str, origin: &str, root: &Path) -> Result<Timeline, ReplayError> {
        Timeline::parse_with(text, origin, |r| Contents::Dir(root.join(r.unwrap_or(""))))
    }

    fn parse_with<'c>(
        text: &str,
        origin: &str,
        contents: impl FnOnce(Option<&str>) -> Contents<'c>,
    ) -> Result<Timeline, ReplayError> {
        let err_at = |span: Option<Range<usize>>, message: String| {
            let (line, column) = line_col(text, span.map_or(0, |s| s.start));
            ReplayError::Invalid {
                origin: origin.to_string(),
                line,
                column,
                message,
            }
        };
        let raw: RawTimeline =
            toml::from_str(text).map_err(|e| err_at(e.span(), e.message().to_string()))?;
        let contents = &contents(raw.root.as_deref());
        let lines = Lines::new(text);
        let epoch = raw
            .epoch
            .as_ref()
            .map(|e| {
                tracker::parse_timestamp(e.get_ref()).ok_or_else(|| {
                    err_at(
                        Some(e.span()),
                        format!(
                            "bad epoch `{}` (use RFC 3339, e.g. 2026-02-25T10:00:00Z)",
                            e.get_ref()
                        ),
                    )
                })
            })
            .transpose()?;
        if raw.steps.is_empty() {
            return Err(err_at(
                None,
                "a timeline needs at least one [[step]]".into(),
            ));
        }
        let mut clock = Duration::ZERO;
        let mut known = Known::Unknown;
        let mut steps = Vec::with_capacity(raw.steps.len());
        for (i, spanned) in raw.steps.iter().enumerate() {
            let s = spanned.get_ref();
            let step_span = spanned.span();
            let at_step =
                |m: String| err_at(Some(step_span.clone()), format!("step {}: {m}", i + 1));
            let at = match &s.at {
                Some(at) => {
                    let d = duration(at.get_ref()).map_err(|m| err_at(Some(at.span()), m))?;
                    if d < clock {
                        return Err(err_at(
                            Some(at.span()),
                            format!(
                                "step {} is at {} but the previous step ends at {} (steps are in recorded order)",
                                i + 1,
                                format_offset(d),
                                format_offset(clock)
                            ),
                        ));
                    }
                    d
                }
                None => clock,
            };
            let action = step_action(s, contents, &err_at, &at_step)?;
            check_tracker(&action, &mut known, s, &err_at)?;
            let step = Step {
                at,
                line: lines.line(step_span.start),
                note: s.note.clone(),
                action,
            };
            clock = step.end();
            steps.push(step);
        }
        Ok(Timeline {
            origin: origin.to_string(),
            description: raw.description,
            epoch,
            steps,
        })
    }

    /// The recorded length of the run.
    pub fn duration(&self) -> Duration {
        self.steps.iter().map(Step::end).max().unwrap_or_default()
    }
}

type ErrAt<'a> = dyn Fn(Option<Range<usize>>, String) -> ReplayError + 'a;

fn step_action(
    s: &RawStep,
    contents: &Contents<'_>,
    err_at: &ErrAt<'_>,
    at_step: &dyn Fn(String) -> ReplayError,
) -> Result<Action, ReplayError> {
    let named: Vec<&str> = [
        ("write", s.write.is_some()),
        ("rename", s.rename.is_some()),
        ("tracker", s.tracker.is_some()),
        ("mkdir", s.mkdir.is_some()),
        ("remove", s.remove.is_some()),
        ("wait", s.wait.is_some()),
    ]
    .iter()
    .filter(|(_, on)| *on)
    .map(|(n, _)| *n)
    .collect();
    if named.len() != 1 {
        return Err(at_step(format!(
            "give exactly one action (write, rename, tracker, mkdir, remove, wait); found {}",
            if named.is_empty() {
                "none".to_string()
            } else {
                named.join(", ")
            }
        )));
    }
    let has_content =
        s.text.is_some() || s.from.is_some() || s.hex.is_some() || !s.replace.is_empty();
    // Keys that only some actions take.
    let refuse = |key: &str, span: Option<Range<usize>>, action: &str| {
        err_at(span, format!("`{key}` does not apply to a `{action}` step"))
    };
    let action = named[0];
    if action != "write" {
        if let Some(e) = &s.every {
            return Err(refuse("every", Some(e.span()), action));
        }
    }
    if action != "rename" {
        if let Some(t) = &s.temp {
            return Err(refuse("temp", Some(t.span()), action));
        }
        if let Some(t) = &s.source {
            return Err(refuse("source", Some(t.span()), action));
        }
    }
    if matches!(action, "mkdir" | "remove" | "wait") && has_content {
        let span = s
            .text
            .as_ref()
            .map(|t| t.span())
            .or_else(|| s.from.as_ref().map(|t| t.span()))
            .or_else(|| s.hex.as_ref().map(|t| t.span()))
            .or_else(|| s.replace.first().map(|t| t.span()));
        return Err(refuse("text/from/hex/replace", span, action));
    }
    let rel = |p: &Spanned<String>| -> Result<String, ReplayError> {
        check_rel(p.get_ref()).map_err(|m| err_at(Some(p.span()), m))?;
        Ok(p.get_ref().clone())
    };
    Ok(if let Some(w) = &s.write {
        {
            let paths = expand_braces(w.get_ref()).map_err(|m| err_at(Some(w.span()), m))?;
            for p in &paths {
                check_rel(p).map_err(|m| err_at(Some(w.span()), m))?;
            }
            let every = match &s.every {
                Some(e) => {
                    let d = duration(e.get_ref()).map_err(|m| err_at(Some(e.span()), m))?;
                    if paths.len() < 2 {
                        return Err(err_at(
                            Some(e.span()),
                            "`every` needs a write of several files (a `{a,b}` or `{1..8}` pattern)"
                                .into(),
                        ));
                    }
                    d
                }
                None => Duration::ZERO,
            };
            let content = content(s, contents, err_at)?
                .ok_or_else(|| at_step("a `write` step needs `text`, `from` or `hex`".into()))?;
            Action::Write {
                paths,
                label: w.get_ref().clone(),
                content: Arc::new(content),
                every,
            }
        }
    } else if let Some(r) = &s.rename {
        {
            let to = rel(r)?;
            let content = content(s, contents, err_at)?;
            let source = s.source.as_ref().map(&rel).transpose()?;
            match (&content, &source) {
                (Some(_), Some(src)) => {
                    return Err(err_at(
                        s.source.as_ref().map(|x| x.span()),
                        format!("give either content or `source = \"{src}\"`, not both"),
                    ))
                }
                (None, None) => {
                    return Err(at_step(
                        "a `rename` step needs content (`text`, `from`, `hex`) written to a temp file first, or `source` (a file already in DIR)"
                            .into(),
                    ))
                }
                _ => {}
            }
            let temp = match &s.temp {
                Some(t) => {
                    let t = rel(t)?;
                    if source.is_some() {
                        return Err(refuse(
                            "temp",
                            s.temp.as_ref().map(|x| x.span()),
                            "rename … source",
                        ));
                    }
                    t
                }
                None => default_temp(&to),
            };
            if temp == to {
                return Err(at_step(format!(
                    "the temp file and the target are both `{to}`"
                )));
            }
            Action::Rename {
                to,
                temp,
                content: content.map(Arc::new),
                source,
            }
        }
    } else if let Some(t) = &s.tracker {
        {
            let mut sets = Vec::new();
            for set in t.get_ref() {
                let r = set.get_ref();
                if r.field.trim().is_empty() {
                    return Err(err_at(Some(set.span()), "empty `field` name".into()));
                }
                if r.value.is_none() && r.time.is_none() {
                    return Err(err_at(
                        Some(set.span()),
                        format!("set `{}`: give `value`, `time` or both", r.field),
                    ));
                }
                if r.column.is_some() && (r.time.is_some() || r.value.is_none()) {
                    return Err(err_at(
                        Some(set.span()),
                        format!(
                            "set `{}`: with `column`, give `value` (and no `time`)",
                            r.field
                        ),
                    ));
                }
                sets.push(FieldSet {
                    field: r.field.clone(),
                    value: r.value.clone(),
                    time: r.time.clone(),
                    section: r.section.clone(),
                    column: r.column.clone(),
                });
            }
            let base = content(s, contents, err_at)?;
            if sets.is_empty() && base.is_none() {
                return Err(err_at(
                    Some(t.span()),
                    "an empty `tracker = []` needs a base (`text`, `from`) to write".into(),
                ));
            }
            if let Some(b) = &base {
                if std::str::from_utf8(b).is_err() {
                    return Err(at_step("the tracker base is not UTF-8 text".into()));
                }
            }
            Action::Tracker {
                base: base.map(Arc::new),
                sets,
            }
        }
    } else if let Some(p) = &s.mkdir {
        Action::Mkdir { path: rel(p)? }
    } else if let Some(p) = &s.remove {
        Action::Remove { path: rel(p)? }
    } else if let Some(w) = &s.wait {
        Action::Wait {
            duration: duration(w.get_ref()).map_err(|m| err_at(Some(w.span()), m))?,
        }
    } else {
        return Err(at_step("give one action".into()));
    })
}

fn default_temp(to: &str) -> String {
    match to.rsplit_once('/') {
        Some((dir, name)) => format!("{dir}/.{name}.tmp"),
        None => format!(".{to}.tmp"),
    }
}

/// A step's content: `text`, `from` or `hex` (at most one), with `replace` edits applied.
fn content(
    s: &RawStep,
    contents: &Contents<'_>,
    err_at: &ErrAt<'_>,
) -> Result<Option<Vec<u8>>, ReplayError> {
    let given = [s.text.is_some(), s.from.is_some(), s.hex.is_some()]
        .iter()
        .filter(|b| **b)
        .count();
    if given > 1 {
        let span = s.hex.as_ref().or(s.from.as_ref()).map(|x| x.span());
        return Err(err_at(
            span,
            "give only one of `text`, `from`, `hex`".into(),
        ));
    }
    let mut bytes = if let Some(t) = &s.text {
        t.get_ref().as_bytes().to_vec()
    } else if let Some(f) = &s.from {
        contents
            .read(f.get_ref())
            .map_err(|m| err_at(Some(f.span()), m))?
    } else if let Some(h) = &s.hex {
        parse_hex(h.get_ref()).map_err(|m| err_at(Some(h.span()), m))?
    } else {
        if let Some(r) = s.replace.first() {
            return Err(err_at(
                Some(r.span()),
                "`replace` edits content: give `text` or `from` too".into(),
            ));
        }
        return Ok(None);
    };
    for r in &s.replace {
        let rr = r.get_ref();
        let text = String::from_utf8(bytes)
            .map_err(|_| err_at(Some(r.span()), "`replace` needs UTF-8 content".into()))?;
        if rr.find.is_empty() || !text.contains(&rr.find) {
            return Err(err_at(
                Some(r.span()),
                format!("`replace`: `{}` does not occur in the content", rr.find),
            ));
        }
        bytes = text.replace(&rr.find, &rr.with).into_bytes();
    }
    Ok(Some(bytes))
}

/// Follows the tracker's text through the steps, so a field that a `tracker` step sets but
/// the tracker does not have is an error at load time, with the set's position.
fn check_tracker(
    action: &Action,
    known: &mut Known,
    s: &RawStep,
    err_at: &ErrAt<'_>,
) -> Result<(), ReplayError> {
    match action {
        Action::Write { paths, content, .. } if paths.iter().any(|p| p == TRACKER) => {
            *known = utf8(content);
        }
        Action::Rename { to, content, .. } if to == TRACKER => {
            *known = content.as_ref().map_or(Known::Unknown, |c| utf8(c));
        }
        Action::Rename {
            source: Some(src), ..
        } if src == TRACKER => *known = Known::Absent,
        Action::Remove { path } if path == TRACKER => *known = Known::Absent,
        Action::Tracker { base, sets } => {
            let mut text = match (base, &*known) {
                (Some(b), _) => String::from_utf8_lossy(b).into_owned(),
                (None, Known::Text(t)) => t.clone(),
                (None, Known::Absent) => {
                    return Err(err_at(
                        s.tracker.as_ref().map(|t| t.span()),
                        format!(
                        "the timeline removed `{TRACKER}`; give a base (`from`) to write it anew"
                    ),
                    ))
                }
                (None, Known::Unknown) => {
                    *known = Known::Unknown;
                    return Ok(());
                }
            };
            let spans = s
                .tracker
                .as_ref()
                .map(|t| t.get_ref().as_slice())
                .unwrap_or_default();
            for (set, raw) in sets.iter().zip(spans) {
                text = set_field(&text, set).map_err(|m| err_at(Some(raw.span()), m))?;
            }
            *known = Known::Text(text);
        }
        _ => {}
    }
    Ok(())
}

fn utf8(bytes: &[u8]) -> Known {
    match std::str::from_utf8(bytes) {
        Ok(t) => Known::Text(t.to_string()),
        Err(_) => Known::Unknown,
    }
}

/// Parses an offset as timelines write them: `1h2m3s`, `12m30s`, `4.5s`, `250ms`, `90`.
pub(crate) fn parse_offset(s: &str) -> Result<Duration, String> {
    match s.trim().parse::<f64>() {
        Ok(secs) => duration(&RawDuration::Seconds(secs)),
        Err(_) => duration(&RawDuration::Text(s.to_string())),
    }
}

/// `1h2m3s`, `12m30s`, `4.5s`, `250ms`, or a number of seconds (a TOML number; a string needs a
/// unit), read by [`crate::duration::parse`]; at most 10^9 s.
fn duration(raw: &RawDuration) -> Result<Duration, String> {
    let d = match raw {
        RawDuration::Seconds(secs) => {
            if !secs.is_finite() || *secs < 0.0 {
                return Err(format!(
                    "bad duration `{secs}` (use e.g. `4.5s`, `12m30s`, or a number of seconds)"
                ));
            }
            Duration::try_from_secs_f64(*secs).map_err(|e| format!("bad duration `{secs}`: {e}"))?
        }
        RawDuration::Text(t) => {
            let t = t.trim();
            let t = t.strip_prefix('+').unwrap_or(t);
            // In a timeline a number of seconds is a TOML number: a quoted one is a slip.
            if t.parse::<f64>().is_ok() {
                return Err(format!(
                    "bad duration `{t}`: a string needs a unit (`{t}s`), or write the number {t}"
                ));
            }
            crate::duration::parse(t).map_err(|e| format!("bad duration: {e}"))?
        }
    };
    if d > Duration::from_secs(1_000_000_000) {
        return Err(format!(
            "bad duration `{}`: at most 10^9 s",
            crate::duration::human(d)
        ));
    }
    Ok(d)
}

/// A relative path of normal components only: no root, no `.`, no `..`.
pub fn check_rel(path: &str) -> Result<(), String> {
    let p = Path::new(path);
    if path.is_empty() {
        return Err("empty path".into());
    }
    if p.is_absolute() {
        return Err(format!(
            "path `{path}` is absolute; timeline paths are relative to DIR"
        ));
    }
    if path.contains('\0') || p.components().any(|c| !matches!(c, Component::Normal(_))) {
        return Err(format!(
            "path `{path}` must stay inside DIR: relative, without `.` or `..` components"
        ));
    }
    Ok(())
}

/// Hex bytes (`89 50 4e 47`), white space ignored.
pub fn parse_hex(h: &str) -> Result<Vec<u8>, String> {
    let digits: Vec<u8> = h.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err(format!("odd number of hex digits in `{h}`"));
    }
    digits
        .chunks(2)
        .map(|p| {
            let s = String::from_utf8_lossy(p);
            u8::from_str_radix(&s, 16).map_err(|_| format!("bad hex byte `{s}`"))
        })
        .collect()
}

/// The most paths one brace pattern may expand to, and the most bytes they may hold together:
/// `{0..99999}{0..99999}` would otherwise ask for 10^10 paths (a 240 GB allocation).
const MAX_EXPANDED_PATHS: usize = 100_000;
const MAX_EXPANDED_BYTES: usize = 16 << 20;

/// Expands `{a,b,c}` alternatives and `{1..8}` ranges, left to right (iteratively: a pattern of
/// a million braces must not recurse a million deep).
pub fn expand_braces(pattern: &str) -> Result<Vec<String>, String> {
    let mut out = vec![String::new()];
    let mut rest = pattern;
    while let Some(open) = rest.find('{') {
        let close = rest[open..]
            .find('}')
            .map(|i| open + i)
            .ok_or_else(|| format!("unclosed `{{` in `{pattern}`"))?;
        let (literal, inner) = (&rest[..open], &rest[open + 1..close]);
        let options: Vec<String> = match inner.split_once("..") {
            Some((a, b)) if !inner.contains(',') => {
                let range = |x: &str| {
                    x.trim()
                        .parse::<u32>()
                        .map_err(|_| format!("bad range `{{{inner}}}` in `{pattern}`"))
                };
                let (a, b) = (range(a)?, range(b)?);
                if b < a || b - a > 100_000 {
                    return Err(format!("bad range `{{{inner}}}` in `{pattern}`"));
                }
                (a..=b).map(|n| n.to_string()).collect()
            }
            _ => inner.split(',').map(str::to_string).collect(),
        };
        let count = out.len().saturating_mul(options.len());
        let held: usize = out.iter().map(String::len).sum();
        let added: usize = options.iter().map(|o| literal.len() + o.len()).sum();
        let bytes = held
            .saturating_mul(options.len())
            .saturating_add(out.len().saturating_mul(added));
        if count > MAX_EXPANDED_PATHS || bytes > MAX_EXPANDED_BYTES {
            return Err(format!(
                "`{pattern}` expands to too many paths (at most {MAX_EXPANDED_PATHS}, 16 MiB in all)"
            ));
        }
        let mut next = Vec::with_capacity(count);
        for p in &out {
            for o in &options {
                next.push(format!("{p}{literal}{o}"));
            }
        }
        out = next;
        rest = &rest[close + 1..];
    }
    if rest.contains('}') {
        return Err(format!("unmatched `}}` in `{pattern}`"));
    }
    let bytes: usize = out.iter().map(|p| p.len() + rest.len()).sum();
    if bytes > MAX_EXPANDED_BYTES {
        return Err(format!(
            "`{pattern}` expands to too many paths (at most {MAX_EXPANDED_PATHS}, 16 MiB in all)"
        ));
    }
    for p in &mut out {
        p.push_str(rest);
    }
    Ok(out)
}

// ---- tracker edits ---------------------------------------------------------------------

/// Splits a table line into cells at unescaped `|` (outer pipes dropped, cells trimmed).
fn split_cells(line: &str) -> Vec<String> {
    let t = line.trim();
    let t = t.strip_prefix('|').unwrap_or(t);
    let mut cells = Vec::new();
    let mut cur = String::new();
    let mut chars = t.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' if chars.peek() == Some(&'|') => {
                cur.push('\\');
                cur.push('|');
                chars.next();
            }
            '|' => cells.push(std::mem::take(&mut cur).trim().to_string()),
            _ => cur.push(c),
        }
    }
    if !cur.trim().is_empty() {
        cells.push(cur.trim().to_string());
    }
    cells
}

fn render_row(cells: &[String]) -> String {
    let mut s = String::from("|");
    for c in cells {
        if c.is_empty() {
            s.push_str(" |");
        } else {
            s.push(' ');
            s.push_str(c);
            s.push_str(" |");
        }
    }
    s
}

/// Sets one field row's value and/or time, found the way the referee finds it (SPEC §2.1).
pub fn set_field(text: &str, set: &FieldSet) -> Result<String, String> {
    let parsed = Tracker::parse(text);
    let row = match &set.section {
        Some(sec) => parsed.field_in(&SectionFilter::contains(sec), &set.field),
        None => parsed.field(&set.field),
    }
    .ok_or_else(|| match &set.section {
        Some(sec) => format!(
            "no field row `{}` in a section `{sec}` of the tracker",
            set.field
        ),
        None => format!("no field row `{}` in the tracker", set.field),
    })?;
    let escape = |v: &str| v.replace('\n', " ").replace('|', "\\|");
    let column = match &set.column {
        Some(col) => {
            let table = parsed
                .tables
                .iter()
                .find(|t| t.rows.iter().any(|r| r.line == row.line))
                .ok_or_else(|| format!("field row `{}` is not in a table", set.field))?;
            Some(table.column_index(col).ok_or_else(|| {
                format!(
                    "the table of field row `{}` has no column `{col}`",
                    set.field
                )
            })?)
        }
        None => None,
    };
    let bom = usize::from(text.starts_with('\u{feff}'));
    let mut out = String::with_capacity(text.len() + 64);
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if i + 1 != row.line {
            out.push_str(line);
            continue;
        }
        let (body, eol) = match line.strip_suffix("\r\n") {
            Some(b) => (b, "\r\n"),
            None => match line.strip_suffix('\n') {
                Some(b) => (b, "\n"),
                None => (line, ""),
            },
        };
        let body = if i == 0 && bom == 1 {
            out.push('\u{feff}');
            body.trim_start_matches('\u{feff}')
        } else {
            body
        };
        let mut cells = split_cells(body);
        let value_at = column.unwrap_or(1);
        let want = if set.time.is_some() { 3 } else { value_at + 1 };
        while cells.len() < want {
            cells.push(String::new());
        }
        if let Some(v) = &set.value {
            cells[value_at] = escape(v);
        }
        if let Some(t) = &set.time {
            cells[2] = escape(t);
        }
        out.push_str(&render_row(&cells));
        out.push_str(eol);
    }
    Ok(out)
}

// ---- playing ---------------------------------------------------------------------------

/// How to play a timeline.
#[derive(Debug, Clone, Default)]
pub struct PlayOptions {
    /// Recorded time runs this many times faster; 0 plays without waiting.
    pub speed: f64,
    /// Recorded time zero; overrides the timeline's `epoch`. Default: the timeline's, else now.
    pub epoch: Option<DateTime<Utc>>,
    /// Set it to stop playing (checked between steps and while waiting).
    pub cancel: Option<Arc<AtomicBool>>,
    /// Play only the steps recorded at or after this offset (waiting counts from it).
    pub from: Option<Duration>,
    /// Play only the steps recorded before this offset.
    pub until: Option<Duration>,
}

/// A step that has just been played.
#[derive(Debug)]
pub struct Played<'a> {
    /// 1-based.
    pub index: usize,
    pub total: usize,
    pub step: &'a Step,
    /// The recorded time of the step (its files' mtime).
    pub recorded: DateTime<Utc>,
    /// Real time since playing started.
    pub elapsed: Duration,
}

/// What playing did.
#[derive(Debug, Clone)]
pub struct PlaySummary {
    pub steps: usize,
    pub epoch: DateTime<Utc>,
    pub elapsed: Duration,
    /// Stopped by the callback or `cancel` before the last step.
    pub stopped: bool,
}

/// Plays `timeline` into `dir` (created if missing): each step at `start + at / speed`, each
/// written file's mtime set to `epoch + at`. `on_step` runs after each step; `Break` stops.
pub fn play(
    timeline: &Timeline,
    dir: &Path,
    opts: &PlayOptions,
    mut on_step: impl FnMut(&Played<'_>) -> ControlFlow<()>,
) -> Result<PlaySummary, ReplayError> {
    if !opts.speed.is_finite() || opts.speed < 0.0 {
        return Err(ReplayError::Speed(opts.speed));
    }
    let fail = |step: &Step, index: usize, message: String| ReplayError::Play {
        origin: timeline.origin.clone(),
        line: step.line,
        step: index,
        action: step.describe(),
        message,
    };
    std::fs::create_dir_all(dir).map_err(|source| ReplayError::TargetDir {
        path: dir.display().to_string(),
        source,
    })?;
    let epoch = opts.epoch.or(timeline.epoch).unwrap_or_else(Utc::now);
    let start = Instant::now();
    let cancelled = || {
        opts.cancel
            .as_ref()
            .is_some_and(|c| c.load(Ordering::Relaxed))
    };
    let total = timeline.steps.len();
    let origin = opts.from.unwrap_or_default();
    let mut played_steps = 0;
    for (i, step) in timeline.steps.iter().enumerate() {
        let index = i + 1;
        if step.at < origin {
            continue;
        }
        if opts.until.is_some_and(|u| step.at >= u) {
            break;
        }
        played_steps += 1;
        let i = played_steps - 1;
        let stopped = |start: Instant| PlaySummary {
            steps: i,
            epoch,
            elapsed: start.elapsed(),
            stopped: true,
        };
        let at = |offset: Duration| epoch + chrono::Duration::from_std(offset).unwrap_or_default();
        if !wait_until(start, step.at - origin, opts.speed, &cancelled)
            .map_err(|m| fail(step, index, m))?
        {
            return Ok(stopped(start));
        }
        match &step.action {
            Action::Write {
                paths,
                content,
                every,
                ..
            } => {
                for (n, p) in paths.iter().enumerate() {
                    let offset = step.at + every.saturating_mul(n as u32);
                    if n > 0
                        && !wait_until(start, offset - origin, opts.speed, &cancelled)
                            .map_err(|m| fail(step, index, m))?
                    {
                        return Ok(stopped(start));
                    }
                    write_file(dir, p, content, at(offset)).map_err(|m| fail(step, index, m))?;
                }
            }
            Action::Rename {
                to,
                temp,
                content,
                source,
            } => {
                let target = safe_path(dir, to, true).map_err(|m| fail(step, index, m))?;
                let from = match (content, source) {
                    (Some(c), _) => {
                        write_file(dir, temp, c, at(step.at)).map_err(|m| fail(step, index, m))?;
                        safe_path(dir, temp, false).map_err(|m| fail(step, index, m))?
                    }
                    (None, Some(src)) => {
                        safe_path(dir, src, false).map_err(|m| fail(step, index, m))?
                    }
                    (None, None) => return Err(fail(step, index, "nothing to rename".into())),
                };
                std::fs::rename(&from, &target)
                    .map_err(|e| fail(step, index, format!("rename to `{to}`: {e}")))?;
            }
            Action::Tracker { base, sets } => {
                let current = match base {
                    Some(b) => String::from_utf8_lossy(b).into_owned(),
                    None => {
                        let p = safe_path(dir, TRACKER, false).map_err(|m| fail(step, index, m))?;
                        std::fs::read_to_string(&p).map_err(|e| {
                            fail(step, index, format!("cannot read `{TRACKER}`: {e}"))
                        })?
                    }
                };
                let mut text = current;
                for set in sets {
                    text = set_field(&text, set).map_err(|m| fail(step, index, m))?;
                }
                let temp = default_temp(TRACKER);
                write_file(dir, &temp, text.as_bytes(), at(step.at))
                    .map_err(|m| fail(step, index, m))?;
                let from = safe_path(dir, &temp, false).map_err(|m| fail(step, index, m))?;
                let target = safe_path(dir, TRACKER, true).map_err(|m| fail(step, index, m))?;
                std::fs::rename(&from, &target)
                    .map_err(|e| fail(step, index, format!("rename to `{TRACKER}`: {e}")))?;
            }
            Action::Mkdir { path } => {
                let created = make_parents(dir, path, true).map_err(|m| fail(step, index, m))?;
                for d in created {
                    set_mtime(&d, at(step.at)).map_err(|m| fail(step, index, m))?;
                }
            }
            Action::Remove { path } => {
                let p = safe_path(dir, path, true).map_err(|m| fail(step, index, m))?;
                let meta = std::fs::symlink_metadata(&p)
                    .map_err(|e| fail(step, index, format!("cannot remove `{path}`: {e}")))?;
                let r = if meta.is_dir() {
                    std::fs::remove_dir_all(&p)
                } else {
                    std::fs::remove_file(&p)
                };
                r.map_err(|e| fail(step, index, format!("cannot remove `{path}`: {e}")))?;
            }
            Action::Wait { duration } => {
                if !wait_until(start, step.at + *duration - origin, opts.speed, &cancelled)
                    .map_err(|m| fail(step, index, m))?
                {
                    return Ok(stopped(start));
                }
            }
        }
        let played = Played {
            index,
            total,
            step,
            recorded: at(step.at),
            elapsed: start.elapsed(),
        };
        if on_step(&played).is_break() {
            return Ok(PlaySummary {
                steps: played_steps,
                epoch,
                elapsed: start.elapsed(),
                stopped: index < total,
            });
        }
    }
    Ok(PlaySummary {
        steps: played_steps,
        epoch,
        elapsed: start.elapsed(),
        stopped: false,
    })
}

/// Sleeps until `offset / speed` after `start`; `false` when cancelled first.
fn wait_until(
    start: Instant,
    offset: Duration,
    speed: f64,
    cancelled: &dyn Fn() -> bool,
) -> Result<bool, String> {
    if cancelled() {
        return Ok(false);
    }
    if speed == 0.0 {
        return Ok(true);
    }
    let real = Duration::try_from_secs_f64(offset.as_secs_f64() / speed).map_err(|_| {
        format!(
            "speed `{speed}` is too small for an offset of {}",
            format_offset(offset)
        )
    })?;
    let target = start
        .checked_add(real)
        .ok_or_else(|| "the wait is too long".to_string())?;
    loop {
        let now = Instant::now();
        if now >= target {
            return Ok(true);
        }
        std::thread::sleep((target - now).min(Duration::from_millis(50)));
        if cancelled() {
            return Ok(false);
        }
    }
}

/// `dir/rel`, refusing any existing component (or, unless `last_may_link`, the last one)
/// that is a symlink, so that no write can leave `dir`.
fn safe_path(dir: &Path, rel: &str, last_may_link: bool) -> Result<PathBuf, String> {
    check_rel(rel)?;
    let comps: Vec<_> = Path::new(rel).components().collect();
    let mut cur = dir.to_path_buf();
    for (i, c) in comps.iter().enumerate() {
        cur.push(c);
        let last = i + 1 == comps.len();
        match std::fs::symlink_metadata(&cur) {
            Ok(m) if m.file_type().is_symlink() && !(last && last_may_link) => {
                return Err(format!(
                    "`{}` is a symlink; the replay never writes through one",
                    cur.strip_prefix(dir).unwrap_or(&cur).display()
                ))
            }
            Ok(m) if !last && !m.is_dir() => {
                return Err(format!(
                    "`{}` is not a directory",
                    cur.strip_prefix(dir).unwrap_or(&cur).display()
                ))
            }
            _ => {}
        }
    }
    Ok(cur)
}

/// Creates the missing directories on the way to `dir/rel` (and `rel` itself when
/// `include_last`); returns the ones it created, outermost first.
fn make_parents(dir: &Path, rel: &str, include_last: bool) -> Result<Vec<PathBuf>, String> {
    safe_path(dir, rel, false)?;
    let comps: Vec<_> = Path::new(rel).components().collect();
    let upto = if include_last {
        comps.len()
    } else {
        comps.len().saturating_sub(1)
    };
    let mut created = Vec::new();
    let mut cur = dir.to_path_buf();
    for c in &comps[..upto] {
        cur.push(c);
        match std::fs::create_dir(&cur) {
            Ok(()) => created.push(cur.clone()),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists && cur.is_dir() => {}
            Err(e) => return Err(format!("cannot create directory `{}`: {e}", cur.display())),
        }
    }
    Ok(created)
}

fn write_file(dir: &Path, rel: &str, bytes: &[u8], mtime: DateTime<Utc>) -> Result<(), String> {
    let created = make_parents(dir, rel, false)?;
    let p = safe_path(dir, rel, false)?;
    std::fs::write(&p, bytes).map_err(|e| format!("cannot write `{rel}`: {e}"))?;
    set_mtime(&p, mtime)?;
    // Directories this write created get the same recorded time (deepest first, so setting
    // one does not disturb the next).
    for d in created.iter().rev() {
        set_mtime(d, mtime)?;
    }
    Ok(())
}

fn set_mtime(p: &Path, t: DateTime<Utc>) -> Result<(), String> {
    let ft = filetime::FileTime::from_unix_time(t.timestamp(), t.timestamp_subsec_nanos());
    filetime::set_file_mtime(p, ft)
        .map_err(|e| format!("cannot set the mtime of `{}`: {e}", p.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_errors_keep_their_cause() {
        let e = Timeline::load_file(Path::new("/nonexistent-referee-dir/t.toml")).unwrap_err();
        let ReplayError::Io { source, .. } = &e else {
            panic!("{e:?}")
        };
        assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
        let t = Timeline::load_embedded("demo").unwrap();
        let target = Path::new("/proc/nonexistent-referee-dir/build");
        let e = play(&t, target, &PlayOptions::default(), |_| {
            ControlFlow::Continue(())
        })
        .unwrap_err();
        assert!(
            crate::error::chain(&e).starts_with(
                "cannot create the target directory `/proc/nonexistent-referee-dir/build`: "
            ),
            "{e:?}"
        );
        assert!(matches!(e, ReplayError::TargetDir { .. }), "{e:?}");
    }

    fn parse(text: &str) -> Result<Timeline, ReplayError> {
        Timeline::parse(text, "t.toml", Path::new("/nonexistent"))
    }

    fn invalid(text: &str) -> (usize, usize, String) {
        match parse(text) {
            Err(ReplayError::Invalid {
                line,
                column,
                message,
                ..
            }) => (line, column, message),
            other => panic!("expected an invalid timeline, got {other:?}"),
        }
    }

    #[test]
    fn durations_parse() {
        let d = |s: &str| duration(&RawDuration::Text(s.into())).unwrap();
        assert_eq!(d("1h2m3s"), Duration::from_secs(3723));
        assert_eq!(d("+12m30s"), Duration::from_secs(750));
        assert_eq!(d("4.5s"), Duration::from_millis(4500));
        assert_eq!(d("250ms"), Duration::from_millis(250));
        assert_eq!(d("1h 30m"), Duration::from_secs(5400));
        assert_eq!(d("5 minutes"), Duration::from_secs(300));
        assert_eq!(
            duration(&RawDuration::Seconds(2.0)).unwrap(),
            Duration::from_secs(2)
        );
        for bad in ["", "12", "s", "1x", "-1s", "1.2.3s", "30M", "2000000000s"] {
            let e = duration(&RawDuration::Text(bad.into())).unwrap_err();
            assert!(e.starts_with("bad duration"), "{bad}: {e}");
        }
        assert_eq!(parse_offset("90").unwrap(), Duration::from_secs(90));
        assert_eq!(parse_offset("+49m").unwrap(), Duration::from_secs(2940));
        assert!(duration(&RawDuration::Seconds(-1.0)).is_err());
        assert!(duration(&RawDuration::Seconds(f64::NAN)).is_err());
    }

    #[test]
    fn braces_expand_in_order() {
        assert_eq!(
            expand_braces("s/{a,b}/x-{1..2}.png").unwrap(),
            ["s/a/x-1.png", "s/a/x-2.png", "s/b/x-1.png", "s/b/x-2.png"]
        );
        assert!(expand_braces("a{1..").is_err());
        assert!(expand_braces("a{3..1}").is_err());
        assert!(expand_braces("a}b").is_err());
        assert_eq!(expand_braces("x-{0..99999}.png").unwrap().len(), 100_000);
    }

    /// Found by fuzzing: the product of several braces, or a million of them, is refused or
    /// expanded without recursion, never attempted (a 240 GB allocation) or a stack overflow.
    #[test]
    fn brace_expansion_is_bounded() {
        let err = expand_braces("x-{0..99999}-{0..99999}.png").unwrap_err();
        assert!(err.contains("too many paths"), "{err}");
        assert!(expand_braces(&"{a,b}".repeat(40)).is_err());
        assert!(expand_braces(&format!("{}{{1..99999}}", "a".repeat(1000))).is_err());
        assert_eq!(expand_braces(&"{}".repeat(1_000_000)).unwrap(), [""]);
    }

    #[test]
    fn unknown_keys_point_at_their_line_and_column() {
        let (line, col, msg) = invalid("[[step]]\nwrite = \"a\"\ntext = \"x\"\ncolour = \"red\"\n");
        assert_eq!((line, col), (4, 1), "{msg}");
        assert!(msg.contains("colour"), "{msg}");
        let (line, _, msg) = invalid("[[step]]\ntracker = [{ field = \"A\", vaule = \"x\" }]\n");
        assert_eq!(line, 2, "{msg}");
        assert!(msg.contains("vaule"), "{msg}");
    }

    #[test]
    fn paths_may_not_leave_the_directory() {
        for p in ["/etc/passwd", "../x", "a/../../x", "./a", ""] {
            let text = format!("[[step]]\nwrite = \"{p}\"\ntext = \"x\"\n");
            let (line, col, msg) = invalid(&text);
            assert_eq!((line, col), (2, 9), "{p}: {msg}");
            assert!(msg.contains("path") || msg.contains("inside"), "{p}: {msg}");
        }
        let (line, _, _) = invalid("[[step]]\nrename = \"a\"\nsource = \"../b\"\n");
        assert_eq!(line, 3);
    }

    #[test]
    fn steps_need_exactly_one_action_in_order() {
        let (line, _, msg) = invalid("[[step]]\nwrite = \"a\"\nmkdir = \"b\"\ntext = \"x\"\n");
        assert_eq!(line, 1, "{msg}");
        assert!(msg.contains("exactly one action"), "{msg}");
        let (line, _, msg) = invalid(
            "[[step]]\nat = \"5s\"\nmkdir = \"a\"\n\n[[step]]\nat = \"4s\"\nmkdir = \"b\"\n",
        );
        assert_eq!(line, 6, "{msg}");
        let (line, _, msg) = invalid("[[step]]\nmkdir = \"a\"\nevery = \"1s\"\n");
        assert_eq!(line, 3, "{msg}");
    }

    #[test]
    fn tracker_sets_are_checked_against_the_tracker_the_timeline_wrote() {
        let head = "[[step]]\nrename = \"EXECUTION-TRACKER.md\"\ntext = \"## T\\n\\n| F | V | T |\\n|---|---|---|\\n| P0_START | ___ | |\\n\"\n\n";
        let ok = format!("{head}[[step]]\ntracker = [{{ field = \"p0_start\", value = \"x\" }}]\n");
        assert!(parse(&ok).is_ok());
        let bad = format!(
            "{head}[[step]]\ntracker = [\n  {{ field = \"P1_START\", value = \"x\" }},\n]\n"
        );
        let (line, _, msg) = invalid(&bad);
        assert_eq!(line, 7, "{msg}");
        assert!(msg.contains("P1_START"), "{msg}");
    }

    #[test]
    fn set_field_rewrites_value_and_time_only() {
        let t = "# X\n\n| Field | Value | Time |\n|---|---|---|\n| A | ___ | |\n| a\\|b | y | |\n";
        let set = |field: &str, value: Option<&str>, time: Option<&str>| FieldSet {
            field: field.into(),
            value: value.map(Into::into),
            time: time.map(Into::into),
            section: None,
            column: None,
        };
        assert_eq!(
            set_field(t, &set("a", Some("v|w"), Some("2026-02-25T10:00:00Z"))).unwrap(),
            "# X\n\n| Field | Value | Time |\n|---|---|---|\n| A | v\\|w | 2026-02-25T10:00:00Z |\n| a\\|b | y | |\n"
        );
        // The header row is not a field.
        assert!(set_field(t, &set("Field", Some("x"), None)).is_err());
    }

    #[test]
    fn embedded_timelines_load_with_embedded_files() {
        for (name, _, _) in EMBEDDED {
            let t = Timeline::load_embedded(name).unwrap();
            assert!(!t.steps.is_empty(), "{name}");
        }
        let demo = Timeline::demo().unwrap();
        let secs = demo.duration().as_secs_f64();
        assert!(
            (8.0..=25.0).contains(&secs),
            "the demo lasts {secs}s at speed 1"
        );
    }

    #[test]
    fn plays_steps_with_mtimes_and_refuses_symlinks() {
        let dir = tempfile::tempdir().unwrap();
        let t = parse(
            "epoch = \"2026-02-25T10:00:00Z\"\n\
             [[step]]\nat = \"1s\"\nwrite = \"a/{x,y}.txt\"\ntext = \"hi\"\nevery = \"1s\"\n\
             [[step]]\nrename = \"b.json\"\ntext = \"{}\"\n\
             [[step]]\nremove = \"a/x.txt\"\n",
        )
        .unwrap();
        let mut seen = Vec::new();
        play(&t, dir.path(), &PlayOptions::default(), |p| {
            seen.push(p.step.describe());
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(
            seen,
            [
                "write a/{x,y}.txt (2 files)",
                "rename .b.json.tmp → b.json",
                "remove a/x.txt"
            ]
        );
        let mtime = |p: &str| {
            filetime::FileTime::from_last_modification_time(
                &std::fs::metadata(dir.path().join(p)).unwrap(),
            )
            .unix_seconds()
        };
        let epoch = DateTime::parse_from_rfc3339("2026-02-25T10:00:00Z")
            .unwrap()
            .timestamp();
        assert_eq!(mtime("a/y.txt"), epoch + 2);
        assert_eq!(mtime("b.json"), epoch + 2);
        assert!(!dir.path().join("a/x.txt").exists());
        assert!(!dir.path().join(".b.json.tmp").exists());

        let outside = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(outside.path(), dir.path().join("link")).unwrap();
        let t = parse("[[step]]\nwrite = \"link/evil.txt\"\ntext = \"x\"\n").unwrap();
        let err = play(&t, dir.path(), &PlayOptions::default(), |_| {
            ControlFlow::Continue(())
        })
        .unwrap_err()
        .to_string();
        assert!(err.contains("symlink"), "{err}");
        assert!(!outside.path().join("evil.txt").exists());
    }
}
