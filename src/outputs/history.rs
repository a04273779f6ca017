//! What happened before the evaluation at hand: the list of status changes a pass file and
//! the report show, and what a past failure rested on (its observation and its file:line
//! details), so a STOP that is resolved keeps its cause readable. It renders [`StatusChange`]s;
//! it decides nothing about them.

use std::fmt::Write;

use super::blocks::ts;
use super::escape::text;
use super::StatusChange;
use crate::engine::Status;

/// One bullet per change; a change to FAIL or INCONCLUSIVE carries its details as sub-items.
pub fn lines(out: &mut String, history: &[&StatusChange]) {
    for c in history {
        let from = c.from.map_or("—", |s| s.as_str());
        let note = c
            .note
            .as_deref()
            .map(|n| format!(" — {}: {}", text(&c.check), text(n)))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "- {} {} (pass {}): {from} → {}{note}",
            ts(&c.at),
            text(&c.check),
            text(&c.pass),
            c.to.as_str()
        );
        if matches!(c.to, Status::Fail | Status::Inconclusive) {
            for d in &c.details {
                let _ = writeln!(out, "  - {}", text(d));
            }
        }
    }
}

/// A pass file's `## History`: each resolution with what it resolved, then every change.
pub fn pass_section(out: &mut String, history: &[&StatusChange]) {
    if history.is_empty() {
        return;
    }
    let _ = writeln!(out, "## History\n");
    for (i, c) in history.iter().enumerate() {
        let Some(n) = c.note.as_deref().filter(|n| n.starts_with("RESOLVED")) else {
            continue;
        };
        let failed = history[..i]
            .iter()
            .rev()
            .find(|f| f.check == c.check && matches!(f.to, Status::Fail | Status::Inconclusive));
        match failed {
            Some(f) => {
                let _ = writeln!(
                    out,
                    "{}: {}. It had failed: {}.\n",
                    text(&c.check),
                    text(n),
                    text(&cause(f))
                );
            }
            None => {
                let _ = writeln!(out, "{}: {}.\n", text(&c.check), text(n));
            }
        }
    }
    lines(out, history);
}

/// What a past failure rested on, in one line: what was observed, when, and its first detail
/// (file:line, term, value) with a count of the others.
pub fn cause(c: &StatusChange) -> String {
    let mut s = match &c.observed {
        Some(o) => format!("observed {o} (at {})", ts(&c.at)),
        None => format!("at {}", ts(&c.at)),
    };
    if let Some(d) = c.details.first() {
        let _ = write!(s, "; {d}");
        if c.details.len() > 1 {
            let _ = write!(s, " (+{} more)", c.details.len() - 1);
        }
    }
    s
}
