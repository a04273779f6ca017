//! The JSON form of an evaluation (`verify --format json`), schema `referee.verify/1`,
//! documented in docs/GUIDE.md. Adding a field is compatible; renaming or removing one bumps
//! the schema version.
//!
//! `build_dir` is absolute (symlinks resolved). Every file reference keeps `path`, relative to
//! `build_dir` as before, and adds `abs_path`, the same file as an absolute path.

use std::path::{Path, PathBuf};

use serde::Serialize;

use super::Context;
use crate::checks::FileRef;
use crate::engine::Applied;
use crate::engine::{CheckResult, Evaluation, PassState, Status, Summary};
use crate::protocol::Protocol;
use crate::protocol::Severity;
use crate::waivers::InUse;

pub const SCHEMA: &str = "referee.verify/1";

#[derive(Serialize)]
struct Doc<'a> {
    schema: &'static str,
    referee: RefereeInfo,
    protocol: ProtocolInfo<'a>,
    build_dir: String,
    evaluated_at: Option<String>,
    #[serde(rename = "final")]
    final_: bool,
    complete: bool,
    verdict: Option<&'a str>,
    verdict_at: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    verdict_note: Option<&'a str>,
    stop: bool,
    summary: Summary,
    passes: &'a [PassState],
    results: Vec<ResultOut<'a>>,
    artifacts: Vec<FileOut<'a>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    waivers: Option<&'a InUse>,
}

#[derive(Serialize)]
struct RefereeInfo {
    version: &'static str,
}

#[derive(Serialize)]
struct ProtocolInfo<'a> {
    id: &'a str,
    version: &'a str,
    sha256: &'a str,
    origin: &'a str,
}

/// A file reference with its absolute path beside the relative one.
#[derive(Debug, Serialize)]
pub struct FileOut<'a> {
    #[serde(flatten)]
    file: &'a FileRef,
    abs_path: String,
}

/// A check result as printed: [`CheckResult`]'s fields, file references with `abs_path`.
#[derive(Debug, Serialize)]
pub struct ResultOut<'a> {
    pass: &'a str,
    check: &'a str,
    title: &'a str,
    severity: Severity,
    status: Status,
    due: bool,
    evidence: EvidenceOut<'a>,
    #[serde(skip_serializing_if = "Option::is_none")]
    waiver: Option<&'a Applied>,
}

#[derive(Debug, Serialize)]
struct EvidenceOut<'a> {
    expected: &'a str,
    observed: &'a str,
    details: &'a [String],
    files: Vec<FileOut<'a>>,
}

/// `dir` as an absolute path: symlinks resolved where it exists, else joined to the current
/// directory; as given if neither can be done.
pub fn absolute(dir: &Path) -> PathBuf {
    std::fs::canonicalize(dir)
        .or_else(|_| std::path::absolute(dir))
        .unwrap_or_else(|_| dir.to_path_buf())
}

fn files<'a>(files: impl IntoIterator<Item = &'a FileRef>, root: &Path) -> Vec<FileOut<'a>> {
    files
        .into_iter()
        .map(|file| FileOut {
            file,
            abs_path: root.join(&file.path).display().to_string(),
        })
        .collect()
}

/// The results as printed, file references made absolute against `root` (absolute).
pub fn results<'a>(results: &'a [CheckResult], root: &Path) -> Vec<ResultOut<'a>> {
    results
        .iter()
        .map(|r| ResultOut {
            pass: &r.pass,
            check: &r.check,
            title: &r.title,
            severity: r.severity,
            status: r.status,
            due: r.due,
            evidence: EvidenceOut {
                expected: &r.evidence.expected,
                observed: &r.evidence.observed,
                details: &r.evidence.details,
                files: files(&r.evidence.files, root),
            },
            waiver: r.waiver.as_ref(),
        })
        .collect()
}

/// The evaluation as one pretty-printed JSON object.
pub fn render(p: &Protocol, eval: &Evaluation, ctx: &Context) -> String {
    let root = absolute(&ctx.build_dir);
    let artifacts = super::markdown::artifacts(eval);
    let doc = Doc {
        schema: SCHEMA,
        referee: RefereeInfo {
            version: env!("CARGO_PKG_VERSION"),
        },
        protocol: ProtocolInfo {
            id: &p.id,
            version: &p.version,
            sha256: &p.sha256,
            origin: &p.origin,
        },
        build_dir: root.display().to_string(),
        evaluated_at: ctx
            .written
            .map(|t| t.to_rfc3339_opts(chrono::SecondsFormat::Millis, true)),
        final_: eval.final_,
        complete: eval.complete,
        verdict: eval.verdict.as_deref(),
        verdict_at: eval.verdict_at.as_deref(),
        verdict_note: eval.verdict_note.as_deref(),
        stop: eval.stops().next().is_some(),
        summary: eval.summary(),
        passes: &eval.passes,
        results: results(&eval.results, &root),
        artifacts: files(&artifacts, &root),
        waivers: ctx.waivers.as_ref(),
    };
    // Serialising plain data cannot fail; fall back to an error object rather than panic.
    serde_json::to_string_pretty(&doc)
        .unwrap_or_else(|e| format!("{{\"error\": \"{}\"}}", e.to_string().replace('"', "'")))
}
