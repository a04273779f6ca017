//! The JSON form of an evaluation (`verify --format json`), schema `referee.verify/1`,
//! documented in README.md. Adding a field is compatible; renaming or removing one bumps
//! the schema version.

use serde::Serialize;

use super::Context;
use crate::checks::FileRef;
use crate::engine::{CheckResult, Evaluation, PassState, Summary};
use crate::protocol::Protocol;

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
    results: &'a [CheckResult],
    artifacts: Vec<FileRef>,
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

/// The evaluation as one pretty-printed JSON object.
pub fn render(p: &Protocol, eval: &Evaluation, ctx: &Context) -> String {
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
        build_dir: ctx.build_dir.display().to_string(),
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
        results: &eval.results,
        artifacts: super::markdown::artifacts(eval),
    };
    // Serialising plain data cannot fail; fall back to an error object rather than panic.
    serde_json::to_string_pretty(&doc)
        .unwrap_or_else(|e| format!("{{\"error\": \"{}\"}}", e.to_string().replace('"', "'")))
}
