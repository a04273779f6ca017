//! Durations as a person types them on the command line or in a timeline: `90s`, `30m`, `2h`,
//! `1h30m` (or `1h 30m`), `500ms`, `1.5h`, or plain seconds (`45`, `1.5`); and back to text.
//!
//! The grammar is `humantime`'s, with two changes: a bare number is seconds, and the calendar
//! units (months, years) are refused, since they have no fixed length and `30M` (months) reads
//! as minutes. Every error names the text and shows what would be accepted. This module only
//! converts: the bounds of a particular option (a heartbeat's shortest interval, a timeline's
//! longest offset) belong to its caller. [`parse_millis`] reads the options that take bare
//! milliseconds.

use std::time::Duration;

/// What an accepted duration looks like, for error messages.
const EXAMPLES: &str = "e.g. `90s`, `30m`, `2h`, `1h30m`, `500ms`, or seconds: `45`, `1.5`";

/// The units in brief, for error messages.
const UNIT_HINT: &str = "ms, s, m, h, d";

/// The unit spellings accepted: humantime's, less months and years.
const UNITS: &[&str] = &[
    "ns", "nsec", "nanos", "us", "µs", "usec", "ms", "msec", "millis", "s", "sec", "secs",
    "second", "seconds", "m", "min", "mins", "minute", "minutes", "h", "hr", "hrs", "hour",
    "hours", "d", "day", "days", "w", "wk", "wks", "week", "weeks",
];

/// Why a duration was refused. Each message names the text (`text`: as given) and says what
/// would be accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DurationError {
    #[error("empty duration ({EXAMPLES})")]
    Empty,
    #[error("duration `{text}` is negative ({EXAMPLES})")]
    Negative { text: String },
    #[error("invalid duration `{text}` ({EXAMPLES})")]
    Invalid { text: String },
    #[error("invalid duration `{text}`: unexpected `{found}` ({EXAMPLES})")]
    Unexpected { text: String, found: char },
    #[error("invalid duration `{text}`: a number must come before `{rest}` ({EXAMPLES})")]
    NumberExpected { text: String, rest: String },
    #[error("duration `{text}` is too long ({EXAMPLES})")]
    TooLong { text: String },
    #[error(
        "duration `{text}` is too long or too precise (at most ~584 billion years, at least 1ns)"
    )]
    Overflow { text: String },
    #[error("unknown unit `{unit}` in duration `{text}` ({UNIT_HINT})")]
    UnknownUnit { text: String, unit: String },
    #[error("duration `{text}` needs a unit after `{number}` ({UNIT_HINT})")]
    NeedsUnit { text: String, number: String },
}

/// Parses `90s`, `30m`, `2h`, `1h30m`, `1h 30m`, `500ms`, or plain seconds (`45`, `1.5`).
pub fn parse(s: &str) -> Result<Duration, DurationError> {
    let text = || s.to_string();
    let t = s.trim();
    if t.is_empty() {
        return Err(DurationError::Empty);
    }
    if t.starts_with('-') {
        return Err(DurationError::Negative { text: text() });
    }
    // Plain seconds. `f64` also reads `inf` and `NaN`, which are refused here, and `1e3`.
    if let Ok(secs) = t.parse::<f64>() {
        if !secs.is_finite() {
            return Err(DurationError::Invalid { text: text() });
        }
        return Duration::try_from_secs_f64(secs)
            .map_err(|_| DurationError::TooLong { text: text() });
    }
    if let Some(unit) = t
        .split(|c: char| !c.is_alphabetic())
        .find(|u| !u.is_empty() && !UNITS.contains(u))
    {
        return Err(DurationError::UnknownUnit {
            text: text(),
            unit: unit.to_string(),
        });
    }
    humantime::parse_duration(t).map_err(|e| match e {
        humantime::DurationError::UnknownUnit { unit, start, .. } if unit.is_empty() => {
            // `start` is where the unit should have begun: the number is just before it.
            let head = t.get(..start).unwrap_or(t).trim_end();
            let number = head
                .rsplit(|c: char| !(c.is_ascii_digit() || c == '.'))
                .next()
                .unwrap_or(head);
            DurationError::NeedsUnit {
                text: text(),
                number: number.to_string(),
            }
        }
        humantime::DurationError::UnknownUnit { unit, .. } => {
            DurationError::UnknownUnit { text: text(), unit }
        }
        humantime::DurationError::InvalidCharacter(at) => {
            match t.get(at..).and_then(|r| r.chars().next()) {
                Some(found) => DurationError::Unexpected {
                    text: text(),
                    found,
                },
                None => DurationError::Invalid { text: text() },
            }
        }
        humantime::DurationError::NumberExpected(at) => DurationError::NumberExpected {
            text: text(),
            rest: t.get(at..).unwrap_or(t).to_string(),
        },
        humantime::DurationError::NumberOverflow => DurationError::Overflow { text: text() },
        humantime::DurationError::Empty => DurationError::Empty,
    })
}

/// Like [`parse`], but a bare number is milliseconds (`300` is `300ms`), for the options that
/// have always been given in milliseconds (`watch --poll`, `--settle`); `1s`, `1.5s`, `250ms`
/// are read as [`parse`] reads them.
pub fn parse_millis(s: &str) -> Result<Duration, DurationError> {
    let t = s.trim();
    match t.parse::<f64>() {
        Ok(ms) if ms.is_finite() && !t.starts_with('-') => Duration::try_from_secs_f64(ms / 1000.0)
            .map_err(|_| DurationError::TooLong {
                text: s.to_string(),
            }),
        _ => parse(s),
    }
}

/// `90s`, `30m`, `2h`, `1500ms`: one unit, the largest that states `d` exactly to the
/// millisecond (what [`parse`] reads back). Below a millisecond is not shown.
pub fn human(d: Duration) -> String {
    let ms = d.as_millis();
    if !ms.is_multiple_of(1000) {
        return format!("{ms}ms");
    }
    let s = d.as_secs();
    if s >= 3600 && s.is_multiple_of(3600) {
        format!("{}h", s / 3600)
    } else if s >= 60 && s.is_multiple_of(60) {
        format!("{}m", s / 60)
    } else {
        format!("{s}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepted_forms() {
        let ok = |s: &str| parse(s).unwrap_or_else(|e| panic!("`{s}`: {e}"));
        assert_eq!(ok("90s"), Duration::from_secs(90));
        assert_eq!(ok("30m"), Duration::from_secs(1800));
        assert_eq!(ok("2h"), Duration::from_secs(7200));
        assert_eq!(ok("1d"), Duration::from_secs(86_400));
        assert_eq!(ok("1h30m"), Duration::from_secs(5400));
        assert_eq!(ok("1h 30m"), Duration::from_secs(5400));
        assert_eq!(ok("1h2m3s"), Duration::from_secs(3723));
        assert_eq!(ok("500ms"), Duration::from_millis(500));
        assert_eq!(ok("1.5h"), Duration::from_secs(5400));
        assert_eq!(ok("4.5s"), Duration::from_millis(4500));
        assert_eq!(ok("2 minutes"), Duration::from_secs(120));
        assert_eq!(ok("  90s\n"), Duration::from_secs(90));
        // Plain seconds.
        assert_eq!(ok("45"), Duration::from_secs(45));
        assert_eq!(ok("1.5"), Duration::from_millis(1500));
        assert_eq!(ok("0"), Duration::ZERO);
        assert_eq!(ok("0.05"), Duration::from_millis(50));
    }

    #[test]
    fn refused_forms_say_why() {
        let err = |s: &str| match parse(s) {
            Ok(d) => panic!("`{s}` parsed as {d:?}"),
            Err(e) => e.to_string(),
        };
        assert_eq!(parse(""), Err(DurationError::Empty));
        assert_eq!(
            parse("1h30"),
            Err(DurationError::NeedsUnit {
                text: "1h30".into(),
                number: "30".into()
            })
        );
        assert!(err("").starts_with("empty duration (e.g. `90s`"));
        assert!(err("   ").starts_with("empty duration"));
        assert!(err("-3").contains("`-3` is negative"), "{}", err("-3"));
        assert!(err("-3s").contains("is negative"));
        assert_eq!(
            err("5x"),
            "unknown unit `x` in duration `5x` (ms, s, m, h, d)"
        );
        // Calendar units have no fixed length, and `M` would read as minutes.
        assert!(err("30M").contains("unknown unit `M`"));
        assert!(err("1y").contains("unknown unit `y`"));
        assert!(err("2H").contains("unknown unit `H`"));
        assert!(
            err("m").contains("a number must come before `m`"),
            "{}",
            err("m")
        );
        assert!(
            err("1h30").contains("needs a unit after `30`"),
            "{}",
            err("1h30")
        );
        assert!(
            err("1.2.3s").contains("invalid duration"),
            "{}",
            err("1.2.3s")
        );
        assert!(
            err("1h,30m").contains("unexpected `,`"),
            "{}",
            err("1h,30m")
        );
        for s in ["inf", "NaN", "1e300", "99999999999999999999999h"] {
            let e = err(s);
            assert!(e.contains(&format!("`{s}`")), "{s}: {e}");
        }
        // Every message shows what would do.
        for s in ["", "m", "-1", "inf"] {
            assert!(err(s).contains("e.g. `90s`"), "{s}: {}", err(s));
        }
    }

    #[test]
    fn bare_numbers_are_milliseconds_for_parse_millis() {
        assert_eq!(parse_millis("300"), Ok(Duration::from_millis(300)));
        assert_eq!(parse_millis("0.5"), Ok(Duration::from_micros(500)));
        assert_eq!(parse_millis("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_millis("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(parse_millis("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_millis("-3")
            .unwrap_err()
            .to_string()
            .contains("is negative"));
        assert!(parse_millis("inf")
            .unwrap_err()
            .to_string()
            .contains("`inf`"));
        assert!(parse_millis("1e300")
            .unwrap_err()
            .to_string()
            .contains("too long"));
        assert!(parse_millis("5x")
            .unwrap_err()
            .to_string()
            .contains("unknown unit `x`"));
    }

    #[test]
    fn human_names_one_exact_unit() {
        assert_eq!(human(Duration::from_secs(90)), "90s");
        assert_eq!(human(Duration::from_secs(1800)), "30m");
        assert_eq!(human(Duration::from_secs(7200)), "2h");
        assert_eq!(human(Duration::from_secs(5400)), "90m");
        assert_eq!(human(Duration::from_millis(1500)), "1500ms");
        assert_eq!(human(Duration::from_secs(59)), "59s");
        assert_eq!(human(Duration::ZERO), "0s");
    }

    #[test]
    fn human_reads_back() {
        for ms in [
            0, 1, 999, 1000, 1500, 59_000, 60_000, 90_000, 3_600_000, 5_400_000, 86_400_000,
        ] {
            let d = Duration::from_millis(ms);
            assert_eq!(parse(&human(d)), Ok(d), "{}", human(d));
        }
    }
}
