//! `verify --format github`: GitHub Actions workflow commands, one annotation per failing
//! instance (each file and line the evidence names: OBS-21 failing in nine auditor reports is
//! nine annotations, each at its report and line).
//! A BLOCKING FAIL is `::error`, a SIGNIFICANT FAIL and an INCONCLUSIVE result `::warning`, a
//! waived FAIL and an expired waiver `::notice`; PASS, WAITING and SKIP print nothing. The
//! file is the artifact the evidence names (under the build directory as given on the command
//! line, so relative to the job's working directory), with its line where the evidence has
//! one. Everything that comes from file contents is escaped as the Actions toolkit does, so no
//! evidence can end an annotation early or forge another command.

use std::path::Path;

use super::locate;
use super::Context;
use crate::engine::{CheckResult, Evaluation, Status};
use crate::protocol::{Protocol, Severity};

/// The evaluation as workflow commands; `base` is the build directory as the user named it.
pub fn render(p: &Protocol, eval: &Evaluation, ctx: &Context, base: &Path) -> String {
    let mut out = String::new();
    for r in &eval.results {
        for line in annotations(p, r, base) {
            out.push_str(&line);
            out.push('\n');
        }
    }
    for e in ctx.waivers.iter().flat_map(|w| &w.expired) {
        out.push_str(&format!(
            "::notice title={}::{}\n",
            property("referee: expired waiver"),
            data(&e.describe())
        ));
    }
    let s = eval.summary();
    out.push_str(&format!(
        "referee {}: {} checks, {} PASS, {} FAIL ({} BLOCKING, {} SIGNIFICANT, {} waived), {} INCONCLUSIVE, {} WAITING, {} SKIP\n",
        p.id, s.checks, s.pass, s.fail, s.fail_blocking, s.fail_significant, s.waived,
        s.inconclusive, s.waiting, s.skip
    ));
    out
}

/// One annotation per failing instance of `r` (see [`locate::instances`]).
fn annotations(p: &Protocol, r: &CheckResult, base: &Path) -> Vec<String> {
    let command = match (r.status, r.severity) {
        (Status::Fail, _) if r.waiver.is_some() => "notice",
        (Status::Fail, Severity::Blocking) => "error",
        (Status::Fail, Severity::Significant) | (Status::Inconclusive, _) => "warning",
        _ => return Vec::new(),
    };
    let waived = if r.waiver.is_some() { " waived" } else { "" };
    let title = format!(
        "title={}",
        property(&format!(
            "{} {} {}{waived} (pass {}, {}): {}",
            p.id,
            r.check,
            r.status.as_str(),
            r.pass,
            r.severity.as_str(),
            r.title
        ))
    );
    let mut head = locate::evidence_line(r);
    if let Some(w) = &r.waiver {
        head.push_str(&format!(
            "\nwaived: {} (approved by {}, expires {}, {})",
            w.reason, w.approved_by, w.expires, w.at
        ));
    }
    locate::instances(r)
        .into_iter()
        .map(|i| {
            let mut props = Vec::new();
            if let Some(place) = &i.place {
                props.push(format!(
                    "file={}",
                    property(&base.join(&place.path).display().to_string())
                ));
                if let Some(line) = place.line {
                    props.push(format!("line={line}"));
                }
            }
            props.push(title.clone());
            let mut message = head.clone();
            for d in &i.details {
                message.push('\n');
                message.push_str(d);
            }
            format!("::{command} {}::{}", props.join(","), data(&message))
        })
        .collect()
}

/// A message, escaped as `escapeData` of @actions/core: `%`, CR, LF.
pub fn data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A property value, escaped as `escapeProperty` of @actions/core: also `:` and `,`.
pub fn property(s: &str) -> String {
    data(s).replace(':', "%3A").replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_follows_the_actions_toolkit() {
        assert_eq!(data("50% done\r\n::error::x"), "50%25 done%0D%0A::error::x");
        assert_eq!(
            property("a,b:c%\nd"),
            "a%2Cb%3Ac%25%0Ad",
            "a property cannot end early"
        );
    }
}
