//! Predicates over time: resolving a time reference (tracker values, time cells, table
//! columns, file mtimes) and judging the order of a chain of them. An mtime that cannot be
//! had, or files the walk could not see, leave a time unknown (INCONCLUSIVE), never absent.
//!
//! A written time is a claim. When the referee saw the directory change ([`Ctx::seen`], see
//! [`crate::state::observed`]), the order in which it first saw each claimed thing is ordered too, and
//! an order it saw the other way round fails the chain whatever the claims say.

use chrono::{DateTime, TimeDelta, Utc};

use super::{format_time, with_tracker, Ctx, Outcome, Verdict};
use crate::artifacts::tracker::{is_empty_value, parse_timestamp_span, SectionFilter};
use crate::protocol::predicate::{Absent, TimeOrder, TimeRef};
use crate::state::observed::{self, Seen};

/// What a time reference resolved to.
#[derive(Debug, Default)]
struct Times {
    label: String,
    /// (time, how far it is known, where it came from): a time written to the minute stands
    /// for the whole minute; one with its seconds, and an mtime, is exact (a span of 0).
    times: Vec<(DateTime<Utc>, TimeDelta, String)>,
    /// Values recorded but not parseable as timestamps.
    unparseable: Vec<String>,
    /// Why it could not be looked at, if it could not (unreadable tracker).
    blocked: Option<Outcome>,
    /// When the referee first saw what each time stands for (with the referee's memory only).
    seen: Vec<(Seen, String)>,
}

impl Times {
    fn absent(&self) -> bool {
        self.times.is_empty() && self.unparseable.is_empty() && self.blocked.is_none()
    }
}

fn resolve(ctx: &Ctx<'_>, r: &TimeRef) -> Times {
    let tracker_name = ctx.tracker_file();
    match r {
        TimeRef::Field(name) | TimeRef::FieldTime(name) => {
            let by_time = matches!(r, TimeRef::FieldTime(_));
            let label = if by_time {
                format!("time of {name}")
            } else {
                name.clone()
            };
            let mut t = Times {
                label,
                ..Times::default()
            };
            let tracker = match with_tracker(ctx) {
                Ok(tr) => tr,
                Err(o) if o.verdict == Verdict::Missing => return t,
                Err(o) => {
                    t.blocked = Some(o);
                    return t;
                }
            };
            let Some(row) = tracker.field(name) else {
                return t;
            };
            let (raw, parsed) = if by_time {
                (row.third.clone().unwrap_or_default(), row.time)
            } else {
                (row.value.clone(), parse_timestamp_span(&row.value))
            };
            if is_empty_value(&raw) {
                return t;
            }
            let place = if by_time { row.time_at() } else { row.at() };
            let at = format!("{tracker_name}:{place}: {} = {}", t.label, raw.trim());
            if let Some(seen) = ctx.seen {
                let key = observed::field_key(&row.name, &row.value, row.third.as_deref());
                t.seen
                    .push((seen.seen(&key), format!("{} in {tracker_name}", row.name)));
            }
            match parsed {
                Some((ts, span)) => t.times.push((ts, span, at)),
                None => t.unparseable.push(at),
            }
            t
        }
        TimeRef::Column(c) => {
            let mut t = Times {
                label: format!("`{}` column of `{}`", c.column, c.section),
                ..Times::default()
            };
            let tracker = match with_tracker(ctx) {
                Ok(tr) => tr,
                Err(o) if o.verdict == Verdict::Missing => return t,
                Err(o) => {
                    t.blocked = Some(o);
                    return t;
                }
            };
            let filter = SectionFilter {
                text: c.section.clone(),
                exact: false,
            };
            let Some(table) = tracker.table_in(&filter, &c.column) else {
                // A table is there but no header means the column: what it says cannot be
                // read, which is not "not recorded".
                t.blocked = super::tracker::unmapped(
                    ctx, &tracker, &filter, &c.section, &c.column, &t.label,
                );
                return t;
            };
            let heading = table
                .section
                .and_then(|i| tracker.sections.get(i))
                .map_or("", |s| s.heading.as_str());
            let header = table
                .column_index(&c.column)
                .and_then(|i| table.header.get(i))
                .map_or(c.column.as_str(), |h| h.as_str());
            for (line, cell) in tracker.column(table, &c.column) {
                if is_empty_value(&cell) {
                    continue;
                }
                let at = format!("{tracker_name}:{line}: {} = {}", c.column, cell.trim());
                if let Some(seen) = ctx.seen {
                    let key = observed::cell_key(heading, header, &cell);
                    t.seen.push((seen.seen(&key), at.clone()));
                }
                match parse_timestamp_span(&cell) {
                    Some((ts, span)) => t.times.push((ts, span, at)),
                    None => t.unparseable.push(at),
                }
            }
            t
        }
        TimeRef::Mtime(glob) => {
            let mut t = Times {
                label: format!("mtime of `{}`", glob.as_str()),
                ..Times::default()
            };
            let (files, other) = ctx.files(glob);
            // Not a file, or not examinable: its time is not the artifact's.
            for e in other {
                t.unparseable
                    .push(format!("{}: not a regular file, no mtime taken", e.rel));
            }
            for e in files {
                // Read only with the referee's memory: without it, an mtime is only a time.
                if let Some(seen) = ctx.seen {
                    if let Ok(d) = ctx.read(&e.rel) {
                        let key = observed::file_key(&e.rel, &d.sha256);
                        t.seen
                            .push((seen.seen(&key), format!("{} as it is now", e.rel)));
                    }
                }
                match e.mtime() {
                    Some(m) => t.times.push((
                        DateTime::<Utc>::from(m),
                        TimeDelta::zero(),
                        format!("{} mtime {}", e.rel, format_time(m)),
                    )),
                    // Recorded but unknown, like an unparseable timestamp.
                    None => t
                        .unparseable
                        .push(format!("{}: mtime cannot be read", e.rel)),
                }
            }
            let hidden = ctx.hidden(glob);
            if !hidden.is_empty() {
                let mut o = Outcome::new(
                    Verdict::Inconclusive,
                    t.label.clone(),
                    "part of the build directory cannot be listed",
                );
                for h in hidden {
                    o.push_detail(h);
                }
                t.blocked = Some(o);
            }
            t
        }
        TimeRef::FirstOf(refs) => {
            let mut last = Times::default();
            for r in refs {
                let t = resolve(ctx, r);
                if !t.absent() {
                    return t;
                }
                last = t;
            }
            last.label = refs
                .iter()
                .map(|r| resolve_label(ctx, r))
                .collect::<Vec<_>>()
                .join(", else ");
            last
        }
        TimeRef::Earliest(inner) | TimeRef::Latest(inner) => {
            let mut t = resolve(ctx, inner);
            let latest = matches!(r, TimeRef::Latest(_));
            let pick = if latest {
                t.times.iter().max_by_key(|(ts, _, _)| *ts).cloned()
            } else {
                t.times.iter().min_by_key(|(ts, _, _)| *ts).cloned()
            };
            t.label = format!(
                "{} of {}",
                if latest { "latest" } else { "earliest" },
                t.label
            );
            t.times = pick.into_iter().collect();
            // Fails closed: the last seen of what must come first, the first of what must follow.
            let seen = if latest {
                t.seen.iter().max_by_key(|(s, _)| s.round).cloned()
            } else {
                t.seen.iter().min_by_key(|(s, _)| s.round).cloned()
            };
            t.seen = seen.into_iter().collect();
            t
        }
    }
}

fn resolve_label(ctx: &Ctx<'_>, r: &TimeRef) -> String {
    match r {
        TimeRef::Field(n) => n.clone(),
        TimeRef::FieldTime(n) => format!("time of {n}"),
        TimeRef::Column(c) => format!("`{}` column of `{}`", c.column, c.section),
        TimeRef::Mtime(g) => format!("mtime of `{}`", g.as_str()),
        _ => resolve(ctx, r).label,
    }
}

pub(super) fn has_time(ctx: &Ctx<'_>, r: &TimeRef) -> Outcome {
    let t = resolve(ctx, r);
    if let (true, Some(blocked)) = (t.times.is_empty(), &t.blocked) {
        // Why it cannot be told, with its evidence.
        return Outcome {
            expected: vec![format!("{} recorded", t.label)],
            ..blocked.clone()
        };
    }
    let verdict = if t.absent() {
        Verdict::Missing
    } else if t.times.is_empty() && t.blocked.is_some() {
        Verdict::Inconclusive
    } else {
        Verdict::Pass
    };
    Outcome::new(
        verdict,
        format!("{} recorded", t.label),
        format!(
            "{} times, {} unparseable",
            t.times.len(),
            t.unparseable.len()
        ),
    )
}

pub(super) fn time_order(ctx: &Ctx<'_>, spec: &TimeOrder) -> Outcome {
    let refs: Vec<TimeRef> = if spec.chain.is_empty() {
        spec.fields.iter().cloned().map(TimeRef::Field).collect()
    } else {
        spec.chain.clone()
    };
    let resolved: Vec<Times> = refs.iter().map(|r| resolve(ctx, r)).collect();
    let op = match spec.min_gap_seconds {
        Some(g) => format!(" at least {g}s before "),
        None => " < ".to_string(),
    };
    let expected = resolved
        .iter()
        .map(|t| t.label.as_str())
        .collect::<Vec<_>>()
        .join(&op);
    let mut o = Outcome::new(Verdict::Pass, expected, String::new());
    if let Ok(d) = ctx.read(ctx.tracker_file()) {
        o.push_file(Ctx::data_ref(&d));
    }
    for t in &resolved {
        for (_, _, at) in &t.times {
            o.push_detail(at.clone());
        }
    }
    if let Some(blocked) = resolved.iter().find_map(|t| t.blocked.clone()) {
        return Outcome {
            expected: o.expected,
            ..blocked
        };
    }
    let unparseable: Vec<&String> = resolved.iter().flat_map(|t| &t.unparseable).collect();
    if !unparseable.is_empty() {
        o.verdict = Verdict::Inconclusive;
        o.observed = vec![format!(
            "unparseable timestamp: {}",
            unparseable
                .iter()
                .map(|s| s.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        )];
        return o;
    }
    let absent: Vec<&str> = resolved
        .iter()
        .filter(|t| t.absent())
        .map(|t| t.label.as_str())
        .collect();
    if !absent.is_empty() && spec.absent != Absent::Skip {
        o.verdict = match spec.absent {
            Absent::Inconclusive => Verdict::Inconclusive,
            _ => Verdict::Missing,
        };
        o.observed = vec![format!("not recorded: {}", absent.join(", "))];
        return o;
    }
    let present: Vec<&Times> = resolved.iter().filter(|t| !t.absent()).collect();
    let need = spec.min_present.unwrap_or(2).max(2);
    if present.len() < need {
        o.verdict = Verdict::Inconclusive;
        o.observed = vec![format!(
            "only {} of {} recorded (need {need} to compare){}",
            present.len(),
            resolved.len(),
            if absent.is_empty() {
                String::new()
            } else {
                format!("; not recorded: {}", absent.join(", "))
            }
        )];
        return o;
    }
    let mut violations = Vec::new();
    for pair in present.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        for (ta, _, la) in &a.times {
            for (tb, span_b, lb) in &b.times {
                let gap = (*tb - *ta).num_seconds();
                let ok = match spec.min_gap_seconds {
                    Some(min) => (*tb - *ta).num_milliseconds() >= min * 1000,
                    // Out of order when what follows is known to be no later: `10:05` then
                    // `10:05` (the same minute, either may be first) is not; an exact time
                    // equal to or before the one it follows is.
                    None => *ta < *tb + *span_b,
                };
                if !ok {
                    violations.push(format!("{la} → {lb} ({gap:+}s)"));
                }
            }
        }
    }
    let seen_out_of_order = seen_violations(&present);
    if violations.is_empty() && seen_out_of_order.is_empty() {
        let shown: Vec<String> = present
            .iter()
            .map(|t| match t.times.as_slice() {
                [(ts, _, _)] => format!("{} {}", t.label, ts.format("%Y-%m-%dT%H:%M:%SZ")),
                many => format!("{} ({} times)", t.label, many.len()),
            })
            .collect();
        o.observed = vec![format!("in order: {}", shown.join(&op))];
        // Said only when the referee saw some of them written after others (one round, such
        // as all there when it started, orders nothing).
        let mut rounds = present
            .iter()
            .flat_map(|t| t.seen.iter().map(|(s, _)| s.round));
        let first = rounds.next();
        if rounds.any(|r| Some(r) != first) {
            o.observed
                .push("in the order the referee saw them written".into());
        }
    } else {
        o.verdict = Verdict::Fail;
        o.observed = Vec::new();
        if !violations.is_empty() {
            o.observed
                .push(format!("{} out of order", violations.len()));
        }
        if !seen_out_of_order.is_empty() {
            o.observed.push(format!(
                "the referee saw {} written in the other order, whatever the times written say",
                seen_out_of_order.len()
            ));
        }
        o.details.clear();
        for v in violations.into_iter().chain(seen_out_of_order) {
            o.push_detail(v);
        }
    }
    o
}

/// How far apart the referee must first see two things for the order it saw to count: writes
/// closer together are one burst (a copy with `tar`, `cp -a` or `rsync`, an extraction, an
/// editor's save), written in whatever order the tool chose, and their order is what their
/// times say. Phases of a pipeline are minutes apart; a burst of honest writes takes well under
/// this. Documented in docs/d10-pipeline.md.
pub const PHASE_GAP: chrono::TimeDelta = chrono::TimeDelta::seconds(2);

/// Pairs the referee saw in the other order than the chain requires: what must come first was
/// first seen in a later round than what must follow it, and at least [`PHASE_GAP`] later
/// (equal rounds order nothing; a time the record does not hold is later than all it holds).
fn seen_violations(present: &[&Times]) -> Vec<String> {
    let apart = |a: &Seen, b: &Seen| match (a.at, b.at) {
        (Some(a), Some(b)) => a - b >= PHASE_GAP,
        _ => true,
    };
    let mut out = Vec::new();
    for pair in present.windows(2) {
        for (sa, la) in &pair[0].seen {
            for (sb, lb) in &pair[1].seen {
                if sa.round > sb.round && apart(sa, sb) {
                    out.push(format!(
                        "seen in the other order: {la} ({}) after {lb} ({})",
                        sa.describe(),
                        sb.describe()
                    ));
                }
            }
        }
    }
    out
}
