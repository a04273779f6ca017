//! `referee protocol test DIR`: a protocol's own fixtures, run like `conftest verify` (issue 18
//! §4). DIR holds one sub-directory per case; a case is `expect.toml` (the statuses its checks
//! must have) beside `build/` (the build directory's files, judged as `verify` judges them; a
//! case without `build/` judges an empty directory). Every case is judged, and every mismatch is
//! reported as a diff of `expect.toml` lines (`- SCORE = "PASS"`, `+ SCORE = "FAIL"`, with the
//! evidence). Nothing is written into DIR, nothing in it is run.
//!
//! `expect.toml`:
//! ```toml
//! final = true          # judge as `verify --final` (default); `false`: as `verify`
//! stop = true           # whether a BLOCKING failure stands (verify's exit 1); optional
//! verdict = "SHIP"      # the pipeline verdict read (`[verdict]` protocols); optional
//! [checks]              # CHECK-ID, or PASS-ID:CHECK-ID for one instance, = a status
//! REPORT = "PASS"
//! SCORE = "FAIL"
//! ```
//! A check not listed is not compared; a listed id the protocol does not have is a mismatch.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use serde::Deserialize;

use crate::artifacts::{Limits, Snapshot};
use crate::engine::{self, Evaluation, Options, Status};
use crate::protocol::Protocol;

/// The expectations file of a case, and its build directory.
pub const EXPECT_FILE: &str = "expect.toml";
pub const BUILD_DIR: &str = "build";

/// What a case expects.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Expect {
    /// Judge as a finished run (`verify --final`).
    #[serde(default = "yes", rename = "final")]
    pub final_: bool,
    /// Whether a BLOCKING failure stands.
    pub stop: Option<bool>,
    /// The pipeline verdict read.
    pub verdict: Option<String>,
    /// Check id (or `pass:check`) → status.
    #[serde(default)]
    pub checks: BTreeMap<String, Status>,
}

fn yes() -> bool {
    true
}

/// One case judged.
#[derive(Debug)]
pub struct CaseResult {
    pub name: String,
    /// How many expectations were compared.
    pub compared: usize,
    /// Each mismatch as diff lines (`- expected`, `+ found  # evidence`).
    pub mismatches: Vec<String>,
}

impl CaseResult {
    pub fn ok(&self) -> bool {
        self.mismatches.is_empty()
    }
}

/// The cases of `dir`: every sub-directory, in name order. A sub-directory without
/// `expect.toml` is an error (a case that asserts nothing would pass silently).
pub fn cases(dir: &Path) -> Result<Vec<(String, PathBuf)>> {
    let mut out = Vec::new();
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot list `{}`", dir.display()))?;
    for e in entries {
        let e = e.with_context(|| format!("cannot list `{}`", dir.display()))?;
        if !e.file_type()?.is_dir() {
            continue;
        }
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with('.') {
            continue;
        }
        out.push((name, e.path()));
    }
    out.sort();
    if out.is_empty() {
        bail!(
            "no cases in `{}`: each case is a sub-directory with `{EXPECT_FILE}` and `{BUILD_DIR}/`",
            dir.display()
        );
    }
    Ok(out)
}

/// Reads a case's `expect.toml`.
pub fn load_expect(case: &Path) -> Result<Expect> {
    let path = case.join(EXPECT_FILE);
    let text = std::fs::read_to_string(&path).with_context(|| {
        format!(
            "cannot read `{}` (each case states its expected statuses there)",
            path.display()
        )
    })?;
    toml::from_str(&text).map_err(|e| {
        let at = e
            .span()
            .map(|s| {
                let before = &text[..s.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let col = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                format!(":{line}:{col}")
            })
            .unwrap_or_default();
        anyhow::anyhow!("{}{at}: {}", path.display(), e.message())
    })
}

/// Judges one case's build directory with `protocol`.
pub fn judge_case(protocol: &Protocol, case: &Path, expect: &Expect) -> Result<Evaluation> {
    let build = case.join(BUILD_DIR);
    let empty;
    let root = if build.is_dir() {
        build
    } else {
        empty = tempfile::tempdir().context("cannot create an empty build directory")?;
        empty.path().to_path_buf()
    };
    let snap = Snapshot::scan(&root, Limits::default())
        .with_context(|| format!("cannot list `{}`", root.display()))?;
    let opts = Options {
        final_: expect.final_,
        ..Options::default()
    };
    Ok(engine::evaluate(protocol, &snap, &opts))
}

/// Compares a judged case with what it expects.
pub fn compare(name: &str, eval: &Evaluation, expect: &Expect) -> CaseResult {
    let mut mismatches = Vec::new();
    let mut compared = 0;
    for (key, want) in &expect.checks {
        compared += 1;
        let (pass, check) = match key.split_once(':') {
            Some((p, c)) => (Some(p), c),
            None => (None, key.as_str()),
        };
        let found: Vec<_> = eval
            .results
            .iter()
            .filter(|r| r.check == check && pass.is_none_or(|p| r.pass == p))
            .collect();
        if found.is_empty() {
            mismatches.push(format!(
                "- {key} = \"{}\"\n+ (no check `{key}` in the protocol)",
                want.as_str()
            ));
            continue;
        }
        for r in found.into_iter().filter(|r| r.status != *want) {
            let shown =
                if pass.is_some() || eval.results.iter().filter(|x| x.check == check).count() > 1 {
                    format!("{}:{}", r.pass, r.check)
                } else {
                    key.clone()
                };
            let mut why = r.evidence.observed.clone();
            if let Some(d) = r.evidence.details.first() {
                why.push_str(&format!("; {d}"));
            }
            mismatches.push(format!(
                "- {shown} = \"{}\"\n+ {shown} = \"{}\"  # {}",
                want.as_str(),
                r.status.as_str(),
                crate::checks::clip(&why, 300)
            ));
        }
    }
    if let Some(want) = expect.stop {
        compared += 1;
        let stops: Vec<String> = eval.stops().map(|r| r.key().to_string()).collect();
        if want == stops.is_empty() {
            mismatches.push(format!(
                "- stop = {want}\n+ stop = {}  # {}",
                !want,
                if stops.is_empty() {
                    "no BLOCKING check FAILs or is INCONCLUSIVE".to_string()
                } else {
                    format!("held by {}", stops.join(", "))
                }
            ));
        }
    }
    if let Some(want) = &expect.verdict {
        compared += 1;
        let found = eval.verdict.as_deref();
        if !found.is_some_and(|v| v.eq_ignore_ascii_case(want.trim())) {
            mismatches.push(format!(
                "- verdict = \"{want}\"\n+ verdict = {}",
                match found {
                    Some(v) => format!("\"{v}\"  # {}", eval.verdict_at.as_deref().unwrap_or("")),
                    None => "(none read)".to_string(),
                }
            ));
        }
    }
    CaseResult {
        name: name.to_string(),
        compared,
        mismatches,
    }
}

/// Runs every case of `dir`.
pub fn run(protocol: &Protocol, dir: &Path) -> Result<Vec<CaseResult>> {
    if matches!(protocol.subject, crate::protocol::Subject::Workspace(_)) {
        bail!(
            "`protocol test` runs build-directory protocols; `{}` judges task records in a workspace (test it with `verify` on a workspace)",
            protocol.id
        );
    }
    let mut out = Vec::new();
    for (name, path) in cases(dir)? {
        let expect = load_expect(&path)?;
        let eval = judge_case(protocol, &path, &expect)?;
        out.push(compare(&name, &eval, &expect));
    }
    Ok(out)
}

/// The printed result: a line per case, its mismatches indented under it, then a summary.
pub fn render(results: &[CaseResult]) -> String {
    let mut s = String::new();
    for r in results {
        if r.ok() {
            s.push_str(&format!("ok    {} ({} expectations)\n", r.name, r.compared));
        } else {
            s.push_str(&format!(
                "FAIL  {} ({} of {} expectations differ)\n",
                r.name,
                r.mismatches.len(),
                r.compared
            ));
            for m in &r.mismatches {
                for line in m.lines() {
                    s.push_str(&format!("      {line}\n"));
                }
            }
        }
    }
    let failed = results.iter().filter(|r| !r.ok()).count();
    s.push_str(&format!(
        "{} case(s): {} passed, {failed} failed\n",
        results.len(),
        results.len() - failed
    ));
    s
}
