//! Waivers (`--waivers FILE`): a signed-off exception for a known FAIL. A waived FAIL stays a
//! FAIL — shown in the report, the JSON, SARIF (as a suppression) and JUnit (as a property) —
//! but raises no STOP and does not count for exit 1. An expired waiver is ignored and reported.
//!
//! The file is TOML, one `[[waiver]]` table per exception:
//!
//! ```toml
//! [[waiver]]
//! check = "OBS-27"          # a check id of the protocol
//! pass = "2"                # optional: only this pass's instance (default: every pass)
//! reason = "gate 17 is re-run by hand until the runner is fixed (JIRA-123)"
//! approved_by = "jane.doe"
//! expires = 2026-12-31      # the last day it applies (UTC)
//! ```
//!
//! Loading is strict: an unknown key, a bad date or an unknown check id is an error at the
//! file's line and column, before anything is judged.

use std::ops::Range;
use std::path::{Path, PathBuf};

use chrono::NaiveDate;
use serde::{Deserialize, Serialize};
use toml::Spanned;

use crate::engine::{Applied, Evaluation, Status};
use crate::protocol::{line_col, Protocol, Subject};

/// A waiver file larger than this is refused (a waiver file is a few hundred bytes).
const MAX_BYTES: u64 = 1 << 20;

/// Why a waiver file cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum WaiverError {
    /// A mistake in the file, at its line and column.
    #[error("{file}:{line}:{column}: {message}")]
    Invalid {
        file: String,
        line: usize,
        column: usize,
        message: String,
    },
    /// The file lies where the watched side could write it ([`crate::inside`]).
    #[error(
        "the waiver file `{}` is inside the watched directory `{}`: the pipeline could waive its own failures; keep the file outside it",
        file.display(),
        dir.display()
    )]
    Inside { file: PathBuf, dir: PathBuf },
    #[error("cannot read waiver file `{}`", .path.display())]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// One `[[waiver]]` as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawWaiver {
    check: Spanned<String>,
    pass: Option<Spanned<String>>,
    reason: Spanned<String>,
    approved_by: Spanned<String>,
    expires: Spanned<toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    #[serde(default)]
    waiver: Vec<Spanned<RawWaiver>>,
}

/// One waiver, validated.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiver {
    pub check: String,
    pub pass: Option<String>,
    pub reason: String,
    pub approved_by: String,
    /// The last day (UTC) it applies.
    pub expires: NaiveDate,
    /// Where it is written: `FILE:LINE`.
    pub at: String,
}

/// The waivers of one file.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Waivers {
    /// The file, absolute where it could be made so.
    pub file: PathBuf,
    pub waivers: Vec<Waiver>,
}

/// A waiver that was not applied because its day has passed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Expired {
    pub check: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pass: Option<String>,
    pub approved_by: String,
    pub expires: String,
    pub at: String,
}

/// The waiver file a run used, as the outputs show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct InUse {
    /// The file, absolute.
    pub file: PathBuf,
    /// How many waivers it holds.
    pub count: usize,
    /// Those not applied because their day has passed.
    pub expired: Vec<Expired>,
}

impl Expired {
    /// One line for stderr and the report.
    pub fn describe(&self) -> String {
        let which = match &self.pass {
            Some(p) => format!("{p}:{}", self.check),
            None => self.check.clone(),
        };
        format!(
            "waiver for {which} ({}, approved by {}) expired on {}; ignored",
            self.at,
            self.approved_by.replace(['\n', '\r'], " "),
            self.expires
        )
    }
}

impl Waiver {
    fn applied(&self) -> Applied {
        Applied {
            pass: self.pass.clone(),
            reason: self.reason.clone(),
            approved_by: self.approved_by.clone(),
            expires: self.expires.to_string(),
            at: self.at.clone(),
        }
    }

    fn expired(&self) -> Expired {
        Expired {
            check: self.check.clone(),
            pass: self.pass.clone(),
            approved_by: self.approved_by.clone(),
            expires: self.expires.to_string(),
            at: self.at.clone(),
        }
    }

    /// Whether it still applies on `today` (it applies through its `expires` day).
    pub fn active(&self, today: NaiveDate) -> bool {
        today <= self.expires
    }

    fn covers(&self, pass: &str, check: &str) -> bool {
        self.check == check && self.pass.as_deref().is_none_or(|p| p == pass)
    }
}

impl Waivers {
    /// Refuses a waiver file inside `dir`, the watched directory or root (nothing
    /// from the watched directory is believed), before it is read.
    pub fn refuse_inside(file: &Path, dir: &Path) -> Result<(), WaiverError> {
        if crate::inside::lies_inside(file, dir) {
            return Err(WaiverError::Inside {
                file: file.to_path_buf(),
                dir: dir.to_path_buf(),
            });
        }
        Ok(())
    }

    /// Reads and validates a waiver file against `protocol`'s check ids.
    pub fn load(path: &Path, protocol: &Protocol) -> Result<Waivers, WaiverError> {
        let read = |source| WaiverError::Read {
            path: path.to_path_buf(),
            source,
        };
        let text = crate::tomlfile::read_text(path, MAX_BYTES).map_err(|e| read(e.into_io()))?;
        let mut w = Waivers::parse(&text, &path.display().to_string(), protocol)?;
        w.file = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
        Ok(w)
    }

    /// Parses waiver text; `origin` names it in error messages and in each waiver's `at`.
    pub fn parse(text: &str, origin: &str, protocol: &Protocol) -> Result<Waivers, WaiverError> {
        let err_at = |span: Option<Range<usize>>, message: String| {
            let (line, column) = line_col(text, span.map_or(0, |s| s.start));
            WaiverError::Invalid {
                file: origin.to_string(),
                line,
                column,
                message,
            }
        };
        let raw: RawFile = crate::tomlfile::parse(text).map_err(|e| err_at(e.at, e.message))?;
        let checks: Vec<&str> = protocol.checks().iter().map(|c| c.id.as_str()).collect();
        // A pass instance of a task protocol is keyed by the task id: any pass name may match.
        let passes: Option<Vec<&str>> = matches!(protocol.subject, Subject::Build(_))
            .then(|| protocol.passes.iter().map(|p| p.id.as_str()).collect());
        let mut waivers = Vec::new();
        for w in raw.waiver {
            let span = w.span();
            let w = w.into_inner();
            let id = w.check.get_ref();
            if !checks.contains(&id.as_str()) {
                return Err(err_at(
                    Some(w.check.span()),
                    format!(
                        "unknown check `{id}` in protocol `{}` (its checks: {})",
                        protocol.id,
                        checks.join(", ")
                    ),
                ));
            }
            if let (Some(pass), Some(passes)) = (&w.pass, &passes) {
                if !passes.contains(&pass.get_ref().as_str()) {
                    return Err(err_at(
                        Some(pass.span()),
                        format!(
                            "unknown pass `{}` in protocol `{}` (its passes: {})",
                            pass.get_ref(),
                            protocol.id,
                            passes.join(", ")
                        ),
                    ));
                }
            }
            for (name, field) in [("reason", &w.reason), ("approved_by", &w.approved_by)] {
                if field.get_ref().trim().is_empty() {
                    return Err(err_at(Some(field.span()), format!("`{name}` is empty")));
                }
            }
            let expires = date(w.expires.get_ref())
                .ok_or_else(|| err_at(Some(w.expires.span()), bad_date(w.expires.get_ref())))?;
            waivers.push(Waiver {
                check: id.clone(),
                pass: w.pass.map(Spanned::into_inner),
                reason: w.reason.into_inner(),
                approved_by: w.approved_by.into_inner(),
                expires,
                at: format!("{origin}:{}", line_col(text, span.start).0),
            });
        }
        Ok(Waivers {
            file: PathBuf::from(origin),
            waivers,
        })
    }

    /// Marks each FAIL of `eval` that an active waiver covers (the first such waiver in the
    /// file), clears any older mark, and returns the waivers that expired before `today`.
    pub fn apply(&self, eval: &mut Evaluation, today: NaiveDate) -> Vec<Expired> {
        for r in &mut eval.results {
            // A FAIL, or a BLOCKING check that cannot be decided (it holds like a FAIL, so a
            // human may accept it like one).
            let holds = r.status == Status::Fail
                || (r.status == Status::Inconclusive
                    && r.severity == crate::protocol::Severity::Blocking);
            r.waiver = if holds {
                self.waivers
                    .iter()
                    .find(|w| w.active(today) && w.covers(&r.pass, &r.check))
                    .map(Waiver::applied)
            } else {
                None
            };
        }
        self.expired(today)
    }

    /// What the outputs show of this file on `today`.
    pub fn in_use(&self, today: NaiveDate) -> InUse {
        InUse {
            file: self.file.clone(),
            count: self.waivers.len(),
            expired: self.expired(today),
        }
    }

    /// The waivers whose day has passed.
    pub fn expired(&self, today: NaiveDate) -> Vec<Expired> {
        self.waivers
            .iter()
            .filter(|w| !w.active(today))
            .map(Waiver::expired)
            .collect()
    }

    /// The first day after `today` on which one of these waivers stops applying (to re-judge
    /// then); `None` when none will.
    pub fn next_expiry(&self, today: NaiveDate) -> Option<NaiveDate> {
        self.waivers
            .iter()
            .filter(|w| w.active(today))
            .filter_map(|w| w.expires.succ_opt())
            .min()
    }
}

/// A TOML date (`2026-12-31`) or a string holding one.
fn date(v: &toml::Value) -> Option<NaiveDate> {
    match v {
        toml::Value::Datetime(d) if d.time.is_none() && d.offset.is_none() => {
            let d = d.date?;
            NaiveDate::from_ymd_opt(i32::from(d.year), u32::from(d.month), u32::from(d.day))
        }
        toml::Value::String(s) => NaiveDate::parse_from_str(s, "%Y-%m-%d").ok(),
        _ => None,
    }
}

fn bad_date(v: &toml::Value) -> String {
    format!("`expires` must be a date like 2026-12-31 (the last day the waiver applies), not `{v}`")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d10() -> Protocol {
        Protocol::default_protocol().unwrap()
    }

    fn err(text: &str) -> String {
        Waivers::parse(text, "w.toml", &d10())
            .unwrap_err()
            .to_string()
    }

    const GOOD: &str = "[[waiver]]\ncheck = \"OBS-27\"\npass = \"2\"\nreason = \"r\"\napproved_by = \"a\"\nexpires = 2026-12-31\n";

    #[test]
    fn a_good_file_loads_with_its_places() {
        let w = Waivers::parse(GOOD, "w.toml", &d10()).unwrap();
        assert_eq!(w.waivers.len(), 1);
        assert_eq!(w.waivers[0].at, "w.toml:1");
        assert_eq!(w.waivers[0].expires.to_string(), "2026-12-31");
        let quoted = GOOD.replace("2026-12-31", "\"2026-12-31\"");
        assert_eq!(Waivers::parse(&quoted, "w.toml", &d10()).unwrap(), w);
    }

    #[test]
    fn mistakes_point_at_line_and_column() {
        let e = err(&GOOD.replace("reason", "reasn"));
        assert!(e.starts_with("w.toml:4:1:"), "{e}");
        assert!(e.contains("reasn"), "{e}");
        let e = err(&GOOD.replace("2026-12-31", "2026-13-01"));
        assert!(e.starts_with("w.toml:6:"), "{e}");
        let e = err(&GOOD.replace("2026-12-31", "\"soon\""));
        assert!(e.starts_with("w.toml:6:11:"), "{e}");
        assert!(e.contains("must be a date"), "{e}");
        let e = err(&GOOD.replace("2026-12-31", "2026-12-31T10:00:00Z"));
        assert!(e.starts_with("w.toml:6:11:"), "{e}");
        let e = err(&GOOD.replace("OBS-27", "OBS-99"));
        assert!(e.starts_with("w.toml:2:9:"), "{e}");
        assert!(e.contains("unknown check `OBS-99`"), "{e}");
        let e = err(&GOOD.replace("pass = \"2\"", "pass = \"9\""));
        assert!(e.starts_with("w.toml:3:8:"), "{e}");
        let e = err(&GOOD.replace("approved_by = \"a\"", "approved_by = \" \""));
        assert!(e.starts_with("w.toml:5:"), "{e}");
        let e = err(&GOOD.replace("approved_by = \"a\"\n", ""));
        assert!(e.contains("approved_by"), "{e}");
        let e = err("[[waiver]\n");
        assert!(e.starts_with("w.toml:1:"), "{e}");
    }

    #[test]
    fn a_waiver_applies_through_its_last_day() {
        let w = Waivers::parse(GOOD, "w.toml", &d10()).unwrap();
        let day = |s| NaiveDate::parse_from_str(s, "%Y-%m-%d").unwrap();
        assert!(w.waivers[0].active(day("2026-12-31")));
        assert!(!w.waivers[0].active(day("2027-01-01")));
        assert_eq!(w.expired(day("2026-12-31")), vec![]);
        assert_eq!(w.expired(day("2027-01-01")).len(), 1);
        assert_eq!(w.next_expiry(day("2026-06-01")), Some(day("2027-01-01")));
        assert_eq!(w.next_expiry(day("2027-01-01")), None);
    }
}
