//! `verify --format sarif`: a SARIF 2.1.0 log for code scanning. The protocol's checks are the
//! rules (with their description, action and recommendation as help); each failing instance of
//! a FAIL is a result (`error` for BLOCKING, `warning` for SIGNIFICANT) and of an INCONCLUSIVE a
//! result of kind `review` (the referee could not judge: a human must); PASS, WAITING and SKIP
//! are not results. An instance is a file and line the evidence names ([`locate::instances`]:
//! OBS-21 failing in nine auditor reports is nine results), located relative to the
//! `BUILD_DIR` base URI, with its own details. A waived FAIL carries an accepted external
//! suppression.
//!
//! Fingerprints come from (protocol id, check id, pass, file path, and the instance's ordinal in
//! that file after the first) only — never from times, lines or evidence text — so a re-run
//! matches the same results.

use percent_encoding::{utf8_percent_encode, AsciiSet, CONTROLS};
use serde_json::{json, Value};

use super::locate;
use super::Context;
use crate::artifacts::fsread::sha256_hex;
use crate::engine::{CheckResult, Evaluation, Status};
use crate::protocol::{Protocol, Severity};

/// The schema the log names.
pub const SCHEMA_URI: &str = "https://json.schemastore.org/sarif-2.1.0.json";

/// The base URI id results are relative to.
pub const BASE_ID: &str = "BUILD_DIR";

/// The fingerprint's name (its version: change it if the inputs ever change).
pub const FINGERPRINT: &str = "refereeCheckInstance/v1";

/// What a path segment of a URI reference must have percent-encoded (RFC 3986: everything
/// but unreserved characters, sub-delims, `:` and `@`; `/` separates segments).
const PATH: &AsciiSet = &CONTROLS
    .add(b' ')
    .add(b'"')
    .add(b'#')
    .add(b'%')
    .add(b'<')
    .add(b'>')
    .add(b'?')
    .add(b'[')
    .add(b'\\')
    .add(b']')
    .add(b'^')
    .add(b'`')
    .add(b'{')
    .add(b'|')
    .add(b'}');

/// A path as a URI reference (each character outside the allowed set percent-encoded).
fn uri_path(path: &str) -> String {
    utf8_percent_encode(path, PATH).to_string()
}

fn level(severity: Severity) -> &'static str {
    match severity {
        Severity::Blocking => "error",
        Severity::Significant => "warning",
    }
}

/// The stable identity of a result: protocol, check, pass and the instance's key (its file;
/// `FILE#n` for the n-th instance in that file after the first), hashed.
pub fn fingerprint(protocol: &str, r: &CheckResult, key: Option<&str>) -> String {
    sha256_hex(
        [protocol, &r.check, &r.pass, key.unwrap_or("")]
            .join("\0")
            .as_bytes(),
    )
}

/// Ends a message with a period, as SARIF asks of message text.
fn sentence(s: &str) -> String {
    let s = s.trim_end();
    if s.ends_with(['.', '!', '?']) {
        s.to_string()
    } else {
        format!("{s}.")
    }
}

fn rules(p: &Protocol) -> Vec<Value> {
    p.checks()
        .iter()
        .map(|c| {
            let mut help = sentence(&c.description);
            for (label, text) in [("Action", &c.action), ("Recommendation", &c.recommendation)] {
                if !text.trim().is_empty() {
                    help.push_str(&format!("\n\n{label}: {}", sentence(text)));
                }
            }
            json!({
                "id": c.id,
                "shortDescription": { "text": sentence(&c.title) },
                "fullDescription": { "text": sentence(&c.description) },
                "help": { "text": help },
                "defaultConfiguration": { "level": level(c.severity) },
                "properties": { "severity": c.severity.as_str(), "protocol": p.id },
            })
        })
        .collect()
}

/// One SARIF result per failing instance of `r` (see [`locate::instances`]).
fn results(p: &Protocol, r: &CheckResult, rule_index: Option<usize>) -> Vec<Value> {
    let instances = locate::instances(r);
    let mut seen: Vec<&str> = Vec::new();
    let mut out = Vec::new();
    for i in &instances {
        let path = i.place.as_ref().map(|x| x.path.as_str());
        // The n-th instance in one file (n > 0) is told apart by its ordinal, not its line,
        // so an edit above it does not make it a new result.
        let n = seen.iter().filter(|s| Some(**s) == path).count();
        seen.extend(path);
        let key = match (path, n) {
            (_, 0) => path.map(str::to_string),
            (Some(p), n) => Some(format!("{p}#{n}")),
            (None, n) => Some(format!("#{n}")),
        };
        out.push(result(p, r, rule_index, i, key.as_deref()));
    }
    out
}

fn result(
    p: &Protocol,
    r: &CheckResult,
    rule_index: Option<usize>,
    instance: &locate::Instance<'_>,
    key: Option<&str>,
) -> Value {
    let fp = fingerprint(&p.id, r, key);
    let (kind, level) = match r.status {
        Status::Fail => ("fail", level(r.severity)),
        _ => ("review", "none"),
    };
    let mut text = format!(
        "{} {} (pass {}): {}: {}",
        r.severity.as_str(),
        r.status.as_str(),
        r.pass,
        r.title,
        locate::evidence_line(r)
    );
    if !instance.details.is_empty() {
        text.push_str(": ");
        text.push_str(&instance.details.join("; "));
    }
    let text = sentence(&text);
    let mut v = json!({
        "ruleId": r.check,
        "kind": kind,
        "level": level,
        "message": { "text": text },
        "partialFingerprints": { FINGERPRINT: fp },
        "properties": {
            "pass": r.pass,
            "status": r.status.as_str(),
            "severity": r.severity.as_str(),
            "details": instance.details,
        },
    });
    if let Some(i) = rule_index {
        v["ruleIndex"] = json!(i);
    }
    if let Some(place) = &instance.place {
        let mut physical = json!({
            "artifactLocation": { "uri": uri_path(&place.path), "uriBaseId": BASE_ID },
        });
        if let Some(line) = place.line {
            physical["region"] = json!({ "startLine": line });
        }
        v["locations"] = json!([{ "physicalLocation": physical }]);
    }
    if let Some(w) = &r.waiver {
        v["suppressions"] = json!([{
            "kind": "external",
            "status": "accepted",
            "justification": format!(
                "{} (approved by {}, expires {}, {})",
                w.reason, w.approved_by, w.expires, w.at
            ),
            "properties": {
                "approved_by": w.approved_by,
                "expires": w.expires,
                "at": w.at,
            },
        }]);
    }
    v
}

/// The evaluation as a SARIF 2.1.0 log (one run).
pub fn render(p: &Protocol, eval: &Evaluation, ctx: &Context) -> String {
    let root = super::json::absolute(&ctx.build_dir);
    let mut base = format!("file://{}", uri_path(&root.display().to_string()));
    if !base.ends_with('/') {
        base.push('/');
    }
    let ids: Vec<String> = p.checks().iter().map(|c| c.id.clone()).collect();
    let results: Vec<Value> = eval
        .results
        .iter()
        .filter(|r| matches!(r.status, Status::Fail | Status::Inconclusive))
        .flat_map(|r| results(p, r, ids.iter().position(|id| *id == r.check)))
        .collect();
    let mut run = json!({
        "tool": { "driver": {
            "name": "referee",
            "version": env!("CARGO_PKG_VERSION"),
            "semanticVersion": env!("CARGO_PKG_VERSION"),
            "rules": rules(p),
        } },
        "originalUriBaseIds": { BASE_ID: { "uri": base } },
        "columnKind": "unicodeCodePoints",
        "results": results,
        "properties": {
            "protocol": { "id": p.id, "version": p.version, "sha256": p.sha256 },
            "stop": eval.stops().next().is_some(),
            "summary": eval.summary(),
        },
    });
    if let Some(w) = &ctx.waivers {
        run["properties"]["waivers"] = json!(w);
    }
    let log = json!({
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [run],
    });
    // Serialising plain data cannot fail; fall back to an error object rather than panic.
    serde_json::to_string_pretty(&log)
        .unwrap_or_else(|e| format!("{{\"error\": \"{}\"}}", e.to_string().replace('"', "'")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_become_uri_references() {
        assert_eq!(uri_path("a b/c#d%.md"), "a%20b/c%23d%25.md");
        assert_eq!(uri_path("screenshots/1440"), "screenshots/1440");
        assert_eq!(uri_path("é.md"), "%C3%A9.md");
    }
}
