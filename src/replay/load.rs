//! Loading a timeline: the TOML format as read (`format`'s `Raw*`), checked step by step into a
//! [`Timeline`] with `line:column` errors; every path, `from` file and tracker edit is
//! validated before anything is played.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use toml::Spanned;

use crate::artifacts::tracker;
use crate::protocol::{line_col, Lines};

use super::braces::expand_braces;
use super::format::{duration, parse_hex, RawStep, RawTimeline};
use super::table::set_field;
use super::timeline::{check_rel, default_temp, format_offset, Action, FieldSet, Step, Timeline};
use super::{ReplayError, EMBEDDED, EMBEDDED_FILES, TRACKER};

/// Where `from = "…"` content comes from.
enum Contents<'a> {
    Dir(PathBuf),
    Embedded(&'a [(&'a str, &'a str)]),
}

/// Why a step's `from = "…"` content could not be had.
#[derive(Debug, thiserror::Error)]
enum ContentsError {
    #[error("cannot read `{}`: {source}", path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("`{0}` is not among the embedded files")]
    NotEmbedded(String),
}

impl Contents<'_> {
    fn read(&self, rel: &str) -> Result<Vec<u8>, ContentsError> {
        match self {
            Contents::Dir(root) => {
                let path = root.join(rel);
                std::fs::read(&path).map_err(|source| ContentsError::Read { path, source })
            }
            Contents::Embedded(files) => files
                .iter()
                .find(|(name, _)| *name == rel)
                .map(|(_, text)| text.as_bytes().to_vec())
                .ok_or_else(|| ContentsError::NotEmbedded(rel.to_string())),
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
        let text = crate::protocol::named::read_text(path, "timeline")?;
        let origin = path.display().to_string();
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
        let raw: RawTimeline = crate::tomlfile::parse(text).map_err(|e| err_at(e.at, e.message))?;
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
                    let d = duration(at.get_ref())
                        .map_err(|m| err_at(Some(at.span()), m.to_string()))?;
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
        check_rel(p.get_ref()).map_err(|m| err_at(Some(p.span()), m.to_string()))?;
        Ok(p.get_ref().clone())
    };
    Ok(if let Some(w) = &s.write {
        {
            let paths =
                expand_braces(w.get_ref()).map_err(|m| err_at(Some(w.span()), m.to_string()))?;
            for p in &paths {
                check_rel(p).map_err(|m| err_at(Some(w.span()), m.to_string()))?;
            }
            let every = match &s.every {
                Some(e) => {
                    let d =
                        duration(e.get_ref()).map_err(|m| err_at(Some(e.span()), m.to_string()))?;
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
            duration: duration(w.get_ref()).map_err(|m| err_at(Some(w.span()), m.to_string()))?,
        }
    } else {
        return Err(at_step("give one action".into()));
    })
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
            .map_err(|m| err_at(Some(f.span()), m.to_string()))?
    } else if let Some(h) = &s.hex {
        parse_hex(h.get_ref()).map_err(|m| err_at(Some(h.span()), m.to_string()))?
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
                text =
                    set_field(&text, set).map_err(|m| err_at(Some(raw.span()), m.to_string()))?;
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
