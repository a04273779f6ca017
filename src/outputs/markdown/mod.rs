//! The markdown the referee writes and prints, in the formats of the D10 seed: the per-pass
//! files, the STOP file (one block per failing BLOCKING check) and the final report (in
//! [`report`], with the helpers it shares with the pass and STOP files here).

use std::collections::BTreeMap;
use std::fmt::Write;

use super::blocks::{table_head, tidy, ts};
use super::escape::{code, text};
use super::{history, Context, StatusChange};
use crate::checks::FileRef;
use crate::decision::{Cause, Decision};
use crate::engine::{CheckResult, Evaluation, Status};
use crate::protocol::{CheckDef, Protocol};

mod report;

pub use report::report;

fn def<'p>(p: &'p Protocol, id: &str) -> Option<&'p CheckDef> {
    p.checks()
        .into_iter()
        .find(|d| d.id == id)
        .map(|d| d.as_ref())
}

/// Escapes a value for a table cell.
fn cell(s: &str) -> String {
    super::escape::cell(s)
}

fn pass_title(p: &Protocol, id: &str) -> String {
    p.passes.iter().find(|x| x.id == id).map_or_else(
        || format!("Pass {}", text(id)),
        |x| format!("Pass {}: {}", text(id), text(&x.title)),
    )
}

fn evidence_summary(r: &CheckResult) -> String {
    let mut s = format!(
        "expected {}; observed {}",
        r.evidence.expected, r.evidence.observed
    );
    if let Some(d) = r.evidence.details.first() {
        let _ = write!(s, "; {d}");
        if r.evidence.details.len() > 1 {
            let _ = write!(s, " (+{} more)", r.evidence.details.len() - 1);
        }
    }
    s
}

fn file_line(f: &FileRef) -> String {
    let mut s = format!("{} ({} bytes", code(&f.path), f.size);
    if let Some(h) = &f.sha256 {
        let _ = write!(s, ", sha256 {}", code(h));
    }
    if let Some(m) = &f.mtime {
        let _ = write!(s, ", mtime {}", text(m));
    }
    s.push(')');
    s
}

/// The full evidence of one result as a markdown section.
fn result_section(out: &mut String, r: &CheckResult, level: &str) {
    let _ = writeln!(
        out,
        "{level} {}: {} — {} ({})\n",
        text(&r.check),
        r.status.as_str(),
        text(&r.title),
        r.severity.as_str()
    );
    let _ = writeln!(out, "- **Expected:** {}", text(&r.evidence.expected));
    let _ = writeln!(out, "- **Observed:** {}", text(&r.evidence.observed));
    if !r.due && matches!(r.status, Status::Waiting) {
        let _ = writeln!(out, "- **Due:** not yet");
    }
    if !r.evidence.details.is_empty() {
        let _ = writeln!(out, "- **Details:**");
        for d in &r.evidence.details {
            let _ = writeln!(out, "  - {}", text(d));
        }
    }
    if !r.evidence.files.is_empty() {
        let _ = writeln!(out, "- **Files:**");
        for f in &r.evidence.files {
            let _ = writeln!(out, "  - {}", file_line(f));
        }
    }
    out.push('\n');
}

fn header_line(p: &Protocol) -> String {
    format!(
        "Protocol: {} {} (sha256 {}){}",
        code(&p.id),
        text(&p.version),
        code(&p.sha256),
        overridden(p)
    )
}

/// The project's overrides of the protocol's variables (`--vars`/`--set`/`--protect`) as the
/// report header shows them: empty when none.
pub(crate) fn overridden(p: &Protocol) -> String {
    if p.overrides.is_empty() {
        return String::new();
    }
    let each: Vec<String> = p
        .overrides
        .iter()
        .map(|r| {
            format!(
                "{} ({})",
                code(&format!("{} = {}", r.name, r.value)),
                text(&r.from.join(", "))
            )
        })
        .collect();
    format!("; project rules: {}", each.join("; "))
}

/// `OBSERVER-PASS-{N}.md`: every check of one pass with its evidence and history.
pub fn pass_file(p: &Protocol, eval: &Evaluation, pass: &str, ctx: &Context) -> String {
    let mut out = String::new();
    let state = eval.passes.iter().find(|s| s.id == pass);
    let _ = writeln!(out, "# Observer {}\n", pass_title(p, pass));
    let _ = writeln!(
        out,
        "- Build: {}",
        code(&ctx.build_dir.display().to_string())
    );
    let _ = writeln!(out, "- {}", header_line(p));
    if let Some(s) = state {
        if let (Some(at), Some(reason)) = (s.at, s.reason) {
            let _ = writeln!(out, "- Pass ran: {} (on its {:?})", ts(&at), reason);
        }
    }
    if let Some(w) = ctx.written {
        let _ = writeln!(out, "- Updated: {}", ts(&w));
    }
    out.push('\n');
    let results: Vec<&CheckResult> = eval.results.iter().filter(|r| r.pass == pass).collect();
    table_head(&mut out, &["Check", "Severity", "Status", "Title"]);
    for r in &results {
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} |",
            cell(&r.check),
            r.severity.as_str(),
            r.status.as_str(),
            cell(&r.title)
        );
    }
    out.push('\n');
    for r in &results {
        result_section(&mut out, r, "##");
    }
    let history: Vec<&StatusChange> = ctx.history.iter().filter(|c| c.pass == pass).collect();
    history::pass_section(&mut out, &history);
    tidy(&out)
}

/// How many of a failing check's files its STOP block lists: every one up to this, then these
/// and how many more (the pass file lists them all). A STOP is read at a phase transition; a
/// glob that matched thousands of files should not bury the action below them.
const STOP_FILES: usize = 50;

/// A build directory's `OBSERVER-STOP.md`: one block for each BLOCKING failure the decision's
/// STOP stands on ([`Decision::stop`]), as judged in `eval`; written only while one stands
/// ([`Decision::stops`]). Each field of a block is a paragraph of its own (`**Check:** …`,
/// `**Severity:** …`, …, `**Required Action:** …`), so every field starts a line and none
/// renders inside another.
pub fn stop_file(p: &Protocol, eval: &Evaluation, decision: &Decision, ctx: &Context) -> String {
    let failing: Vec<&CheckResult> = decision
        .stop
        .iter()
        .filter_map(|c| match c {
            Cause::Blocking(key) => eval.results.iter().find(|r| r.key() == *key),
            Cause::Veto { .. } | Cause::Escalated(_) => None,
        })
        .collect();
    let mut out = String::from("# OBSERVER STOP — BLOCKING VIOLATION\n\n");
    let _ = writeln!(
        out,
        "{} BLOCKING check{} {}. The orchestrator must not make the next phase transition until this file is gone; the referee removes it when the last violation is resolved.\n",
        failing.len(),
        if failing.len() == 1 { "" } else { "s" },
        if failing.iter().any(|r| r.status == crate::engine::Status::Inconclusive) {
            "failed or cannot be verified"
        } else {
            "failed"
        }
    );
    for (i, r) in failing.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n\n");
        }
        let d = def(p, &r.check);
        let cannot = r.status == crate::engine::Status::Inconclusive;
        let _ = writeln!(
            out,
            "**Check:** {} — {}{}\n",
            text(&r.check),
            text(&r.title),
            if cannot { " (CANNOT VERIFY)" } else { "" }
        );
        let _ = writeln!(out, "**Severity:** {}\n", r.severity.as_str());
        let _ = writeln!(out, "**Phase:** {}\n", pass_title(p, &r.pass));
        let _ = writeln!(
            out,
            "**Description:** expected {}; found {}\n",
            text(&r.evidence.expected),
            text(&r.evidence.observed)
        );
        let mut ev: Vec<String> = r
            .evidence
            .details
            .iter()
            .take(12)
            .map(|d| text(d))
            .collect();
        if r.evidence.details.len() > 12 {
            ev.push(format!(
                "… {} more in {}",
                r.evidence.details.len() - 12,
                code(&super::pass_file(&r.pass))
            ));
        }
        ev.extend(r.evidence.files.iter().take(STOP_FILES).map(file_line));
        if r.evidence.files.len() > STOP_FILES {
            ev.push(format!(
                "… {} more files ({} in all), every one in {}",
                r.evidence.files.len() - STOP_FILES,
                r.evidence.files.len(),
                code(&super::pass_file(&r.pass))
            ));
        }
        if ev.is_empty() {
            let _ = writeln!(out, "**Evidence:** {}\n", text(&r.evidence.observed));
        } else {
            let _ = writeln!(out, "**Evidence:**\n");
            for e in ev {
                let _ = writeln!(out, "- {e}");
            }
            out.push('\n');
        }
        let action = d.map_or("Resolve the violation described above.", |d| {
            d.action.as_str()
        });
        if cannot {
            // Fail closed: what the referee cannot read holds like a FAIL.
            let _ = writeln!(
                out,
                "**Required Action:** CANNOT VERIFY: make the evidence above readable to the referee (a regular file inside the build directory, under the read cap, readable by its user), then: {}\n",
                text(action)
            );
        } else {
            let _ = writeln!(out, "**Required Action:** {}\n", text(action));
        }
        if let Some((_, why)) = ctx.escalations.iter().find(|(k, _)| *k == r.key()) {
            let _ = writeln!(
                out,
                "**ESCALATED: human review required** — {}\n",
                text(why)
            );
        }
    }
    tidy(&out)
}

/// Every file a verdict rests on, once, in path order.
pub fn artifacts(eval: &Evaluation) -> Vec<FileRef> {
    let mut by_path: BTreeMap<&str, &FileRef> = BTreeMap::new();
    for f in eval.results.iter().flat_map(|r| &r.evidence.files) {
        let keep = by_path
            .get(f.path.as_str())
            .is_none_or(|old| old.sha256.is_none());
        if keep {
            by_path.insert(&f.path, f);
        }
    }
    by_path.into_values().cloned().collect()
}
/// The report's waiver section (markdown): the waived FAILs and the expired waivers; empty
/// without `--waivers`.
pub fn waivers_section(eval: &Evaluation, waivers: Option<&crate::waivers::InUse>) -> String {
    let Some(in_use) = waivers else {
        return String::new();
    };
    let expired = &in_use.expired;
    let waived: Vec<_> = eval.results.iter().filter(|r| r.waived()).collect();
    use super::escape::{cell, code, code_cell, text};
    let mut s = format!(
        "### Waivers\n\n{} waiver(s) in {}; {} FAIL(s) waived, {} expired.\n\n",
        in_use.count,
        code(&in_use.file.display().to_string()),
        waived.len(),
        expired.len()
    );
    if !waived.is_empty() {
        s.push_str(
            "Waived FAILs (no STOP, no exit 1):\n\n| Pass | Check | Severity | Reason | Approved by | Expires | Waiver |\n| --- | --- | --- | --- | --- | --- | --- |\n",
        );
        for r in waived {
            if let Some(w) = &r.waiver {
                s.push_str(&format!(
                    "| {} | {} | {} | {} | {} | {} | {} |\n",
                    cell(&r.pass),
                    cell(&r.check),
                    r.severity.as_str(),
                    cell(&w.reason),
                    cell(&w.approved_by),
                    w.expires,
                    code_cell(&w.at)
                ));
            }
        }
        s.push('\n');
    }
    if !expired.is_empty() {
        s.push_str("Expired waivers (ignored):\n\n");
        for e in expired {
            s.push_str(&format!("- {}\n", text(&e.describe())));
        }
        s.push('\n');
    }
    s
}
