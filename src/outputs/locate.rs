//! Where a result's evidence points: the artifact file and, where the evidence names one, the
//! line. For the printed CI formats (SARIF locations, GitHub annotations, JUnit messages).

use crate::engine::CheckResult;

/// A place in the build directory: a path relative to it, and a line (1-based) if known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub path: String,
    pub line: Option<u64>,
}

/// The first evidence detail of the form `FILE:LINE: …` whose FILE is one of the result's
/// files gives the place; otherwise the first file, without a line; `None` without files.
pub fn place(r: &CheckResult) -> Option<Place> {
    let files = &r.evidence.files;
    for d in &r.evidence.details {
        for f in files {
            let Some(rest) = d
                .strip_prefix(f.path.as_str())
                .and_then(|s| s.strip_prefix(':'))
            else {
                continue;
            };
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if rest[digits.len()..].starts_with(':') {
                if let Ok(line) = digits.parse::<u64>() {
                    if line > 0 {
                        return Some(Place {
                            path: f.path.clone(),
                            line: Some(line),
                        });
                    }
                }
            }
        }
    }
    files.first().map(|f| Place {
        path: f.path.clone(),
        line: None,
    })
}

/// The evidence as one line: `expected …; observed …`.
pub fn evidence_line(r: &CheckResult) -> String {
    format!(
        "expected: {}; observed: {}",
        r.evidence.expected, r.evidence.observed
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::FileRef;
    use crate::engine::{Evidence, Status};
    use crate::protocol::Severity;

    fn result(details: &[&str], files: &[&str]) -> CheckResult {
        CheckResult {
            pass: "2".into(),
            check: "OBS-27".into(),
            title: "t".into(),
            severity: Severity::Blocking,
            status: Status::Fail,
            due: true,
            evidence: Evidence {
                expected: "e".into(),
                observed: "o".into(),
                details: details.iter().map(|s| s.to_string()).collect(),
                files: files
                    .iter()
                    .map(|p| FileRef {
                        path: p.to_string(),
                        size: 1,
                        sha256: None,
                        mtime: None,
                    })
                    .collect(),
            },
            waiver: None,
        }
    }

    #[test]
    fn the_line_comes_from_a_detail_naming_a_file_of_the_result() {
        let r = result(&["other.md:3: x", "T.md:41: BV-06 = PASS"], &["T.md"]);
        assert_eq!(
            place(&r),
            Some(Place {
                path: "T.md".into(),
                line: Some(41)
            })
        );
        let r = result(
            &["g.json[0]: GR-1 = FAIL", "T.md:x: no"],
            &["g.json", "T.md"],
        );
        assert_eq!(
            place(&r),
            Some(Place {
                path: "g.json".into(),
                line: None
            })
        );
        assert_eq!(place(&result(&["a:1: b"], &[])), None);
        let r = result(&["T.md:0: zero"], &["T.md"]);
        assert_eq!(place(&r).unwrap().line, None);
    }
}
