//! What the live referee notes it saw, before each judgment ([`crate::state::observed`]): the content
//! of every file whose mtime a time check orders, and every value and cell of the tracker, each
//! the first time it appears. One evaluation is one round; a restart goes on from the record in
//! the state directory. This module only notes; the checks compare.

use std::collections::BTreeSet;

use chrono::{DateTime, Utc};

use crate::artifacts::Snapshot;
use crate::checks::Ctx;
use crate::protocol::Protocol;
use crate::state::observed::{self, Observed};

/// Notes what `snap` shows of what changed (everything when `changed` is `None`) and closes
/// the round.
pub fn look(
    seen: &mut Observed,
    protocol: &Protocol,
    snap: &Snapshot,
    changed: Option<&BTreeSet<String>>,
    at: DateTime<Utc>,
) {
    let named = |rel: &str| {
        changed.is_none_or(|c| {
            c.contains(rel)
                || c.iter().any(|p| {
                    rel.strip_prefix(p.as_str())
                        .is_some_and(|r| r.starts_with('/'))
                })
        })
    };
    let ctx = Ctx::new(protocol, snap);
    let mut globs = BTreeSet::new();
    for inst in protocol.passes.iter().flat_map(|p| p.checks.iter()) {
        for g in &inst.inputs.timed {
            if globs.insert(g.as_str().to_string()) {
                // Only what counts as the artifact (a regular file, or a link to one inside).
                for e in ctx.files(g).0 {
                    if !named(&e.rel) {
                        continue;
                    }
                    if let Ok(d) = snap.read(&e.rel) {
                        seen.note(observed::file_key(&e.rel, &d.sha256), at);
                    }
                }
            }
        }
    }
    if named(&protocol.tracker) {
        if let Some(Ok(tracker)) = snap.tracker(&protocol.tracker) {
            for row in &tracker.rows {
                seen.note(
                    observed::field_key(&row.name, &row.value, row.third.as_deref()),
                    at,
                );
            }
            for table in &tracker.tables {
                let heading = table
                    .section
                    .and_then(|i| tracker.sections.get(i))
                    .map_or("", |s| s.heading.as_str());
                for row in &table.rows {
                    for (header, cell) in table.header.iter().zip(&row.cells) {
                        seen.note(observed::cell_key(heading, header, cell), at);
                    }
                }
            }
        }
    }
    seen.end_round();
}
