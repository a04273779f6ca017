//! Where a result's evidence points: each failing instance's artifact file and, where the
//! evidence names one, its line. For the printed CI formats (a SARIF result and a GitHub
//! annotation per instance, the JUnit testcase's file).

use crate::engine::CheckResult;

/// A place in the build directory: a path relative to it, and a line (1-based) if known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    pub path: String,
    pub line: Option<u64>,
}

/// One failing instance of a result: where it is, and the evidence details that say so. A
/// check that fails in nine files is nine instances; two hits on one line are one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Instance<'r> {
    pub place: Option<Place>,
    pub details: Vec<&'r str>,
}

/// The place a detail names at its start: one of the result's files (the longest that fits)
/// followed by `:LINE:` (then with its line), `:`, a space, `[` or nothing.
fn named(files: &[crate::checks::FileRef], detail: &str) -> Option<Place> {
    let mut best: Option<Place> = None;
    for f in files {
        let Some(rest) = detail.strip_prefix(f.path.as_str()) else {
            continue;
        };
        if !(rest.is_empty() || rest.starts_with([':', ' ', '['])) {
            continue;
        }
        if best.as_ref().is_some_and(|b| b.path.len() >= f.path.len()) {
            continue;
        }
        let after = rest.strip_prefix(':').unwrap_or_default();
        let digits: String = after.chars().take_while(char::is_ascii_digit).collect();
        let line = (after[digits.len()..].starts_with(':'))
            .then(|| digits.parse::<u64>().ok())
            .flatten()
            .filter(|n| *n > 0);
        best = Some(Place {
            path: f.path.clone(),
            line,
        });
    }
    best
}

/// The result's failing instances, in the order of its details: one per place (file and
/// line) its details name at their start. Details that name no file go with the first
/// instance. When no detail names a file, one instance holds them all, at the file the
/// observation names (`unexpected: p3b-pa-auditor-J.md`), else at the result's first file,
/// else nowhere.
pub fn instances(r: &CheckResult) -> Vec<Instance<'_>> {
    let files = &r.evidence.files;
    let mut out: Vec<Instance<'_>> = Vec::new();
    let mut loose: Vec<&str> = Vec::new();
    for d in &r.evidence.details {
        match named(files, d) {
            Some(place) => match out.iter_mut().find(|i| i.place.as_ref() == Some(&place)) {
                Some(i) => i.details.push(d),
                None => out.push(Instance {
                    place: Some(place),
                    details: vec![d],
                }),
            },
            None => loose.push(d),
        }
    }
    match out.first_mut() {
        Some(first) => first.details.extend(loose),
        None => {
            let observed = &r.evidence.observed;
            let file = files
                .iter()
                .filter(|f| observed.contains(f.path.as_str()))
                .max_by_key(|f| f.path.len())
                .or(files.first());
            out.push(Instance {
                place: file.map(|f| Place {
                    path: f.path.clone(),
                    line: None,
                }),
                details: loose,
            });
        }
    }
    out
}

/// The place of the result's first failing instance (see [`instances`]).
pub fn place(r: &CheckResult) -> Option<Place> {
    instances(r).into_iter().next().and_then(|i| i.place)
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
            stands: false,
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

    fn at(path: &str, line: Option<u64>) -> Option<Place> {
        Some(Place {
            path: path.into(),
            line,
        })
    }

    #[test]
    fn each_file_and_line_named_is_an_instance() {
        let r = result(
            &[
                "b.md:4: `GR-` matched",
                "a.md: no manifest",
                "b.md:4: `BV-` matched",
                "b.md:9: `GR-` matched",
                "… 3 more",
                "a.md.bak: not this one",
            ],
            &["a.md", "b.md", "c.md"],
        );
        let got: Vec<(Option<Place>, usize)> = instances(&r)
            .into_iter()
            .map(|i| (i.place, i.details.len()))
            .collect();
        assert_eq!(
            got,
            vec![
                (at("b.md", Some(4)), 4),
                (at("a.md", None), 1),
                (at("b.md", Some(9)), 1)
            ]
        );
    }

    #[test]
    fn without_a_named_file_the_observation_or_the_first_file_places_it() {
        let mut r = result(&[], &["a.md", "j.md"]);
        r.evidence.observed = "2 files; unexpected: j.md".into();
        assert_eq!(instances(&r)[0].place, at("j.md", None));
        r.evidence.observed = "2 files".into();
        assert_eq!(instances(&r)[0].place, at("a.md", None));
        let r = result(&["x"], &[]);
        assert_eq!(
            instances(&r),
            vec![Instance {
                place: None,
                details: vec!["x"]
            }]
        );
    }
}
