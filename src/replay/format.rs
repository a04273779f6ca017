//! A timeline file as written: the TOML tables (`Raw*`, deserialized as they stand, with spans)
//! and the readers of its values (durations, offsets, hex bytes). `load` checks them into a
//! [`Timeline`](super::Timeline); nothing here knows what a step does.

use std::time::Duration;

use serde::Deserialize;
use toml::Spanned;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTimeline {
    #[serde(default)]
    pub(super) description: String,
    pub(super) epoch: Option<Spanned<String>>,
    /// Where `from` paths start, relative to the timeline file's directory (default `..`).
    pub(super) root: Option<String>,
    #[serde(rename = "step", default)]
    pub(super) steps: Vec<Spanned<RawStep>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStep {
    pub(super) at: Option<Spanned<RawDuration>>,
    pub(super) note: Option<String>,
    // The action: exactly one of these.
    pub(super) write: Option<Spanned<String>>,
    pub(super) rename: Option<Spanned<String>>,
    pub(super) tracker: Option<Spanned<Vec<Spanned<RawSet>>>>,
    pub(super) mkdir: Option<Spanned<String>>,
    pub(super) remove: Option<Spanned<String>>,
    pub(super) wait: Option<Spanned<RawDuration>>,
    // Content, for `write`, `rename` (unless `source`) and a `tracker` base.
    pub(super) text: Option<Spanned<String>>,
    pub(super) from: Option<Spanned<String>>,
    pub(super) hex: Option<Spanned<String>>,
    #[serde(default)]
    pub(super) replace: Vec<Spanned<RawReplace>>,
    // Modifiers.
    pub(super) every: Option<Spanned<RawDuration>>,
    pub(super) temp: Option<Spanned<String>>,
    pub(super) source: Option<Spanned<String>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
pub(super) enum RawDuration {
    Seconds(f64),
    Text(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawSet {
    pub(super) field: String,
    pub(super) value: Option<String>,
    pub(super) time: Option<String>,
    pub(super) section: Option<String>,
    pub(super) column: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawReplace {
    pub(super) find: String,
    pub(super) with: String,
}

/// Parses an offset as timelines write them: `1h2m3s`, `12m30s`, `4.5s`, `250ms`, `90`.
pub(crate) fn parse_offset(s: &str) -> Result<Duration, BadDuration> {
    match s.trim().parse::<f64>() {
        Ok(secs) => duration(&RawDuration::Seconds(secs)),
        Err(_) => duration(&RawDuration::Text(s.to_string())),
    }
}

/// `1h2m3s`, `12m30s`, `4.5s`, `250ms`, or a number of seconds (a TOML number; a string needs a
/// unit), read by [`crate::duration::parse`]; at most 10^9 s.
pub(super) fn duration(raw: &RawDuration) -> Result<Duration, BadDuration> {
    let d = match raw {
        RawDuration::Seconds(secs) => {
            if !secs.is_finite() || *secs < 0.0 {
                return Err(BadDuration::Number(*secs));
            }
            Duration::try_from_secs_f64(*secs).map_err(|source| BadDuration::Seconds {
                secs: *secs,
                source,
            })?
        }
        RawDuration::Text(t) => {
            let t = t.trim();
            let t = t.strip_prefix('+').unwrap_or(t);
            // In a timeline a number of seconds is a TOML number: a quoted one is a slip.
            if t.parse::<f64>().is_ok() {
                return Err(BadDuration::NoUnit(t.to_string()));
            }
            crate::duration::parse(t).map_err(BadDuration::Text)?
        }
    };
    if d > Duration::from_secs(1_000_000_000) {
        return Err(BadDuration::TooLong(crate::duration::human(d)));
    }
    Ok(d)
}

/// Why a timeline's duration is refused; its text (the cause included) is the message of the
/// located timeline error.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BadDuration {
    #[error("bad duration `{0}` (use e.g. `4.5s`, `12m30s`, or a number of seconds)")]
    Number(f64),
    #[error("bad duration `{secs}`: {source}")]
    Seconds {
        secs: f64,
        #[source]
        source: std::time::TryFromFloatSecsError,
    },
    #[error("bad duration `{0}`: a string needs a unit (`{0}s`), or write the number {0}")]
    NoUnit(String),
    #[error("bad duration: {0}")]
    Text(#[source] crate::duration::DurationError),
    #[error("bad duration `{0}`: at most 10^9 s")]
    TooLong(String),
}

/// Why hex bytes were refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HexError {
    #[error("odd number of hex digits in `{0}`")]
    Odd(String),
    #[error("bad hex byte `{0}`")]
    Byte(String),
}

/// Hex bytes (`89 50 4e 47`), white space ignored.
pub fn parse_hex(h: &str) -> Result<Vec<u8>, HexError> {
    let digits: Vec<u8> = h.bytes().filter(|c| !c.is_ascii_whitespace()).collect();
    if !digits.len().is_multiple_of(2) {
        return Err(HexError::Odd(h.to_string()));
    }
    digits
        .chunks(2)
        .map(|p| {
            let s = String::from_utf8_lossy(p);
            u8::from_str_radix(&s, 16).map_err(|_| HexError::Byte(s.into_owned()))
        })
        .collect()
}
