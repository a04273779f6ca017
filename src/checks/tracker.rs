//! Predicates over the execution tracker's fields, sections and tables.

use super::{with_tracker, Ctx, Outcome, Verdict};
use crate::artifacts::tracker::{
    is_empty_value, parse_timestamp, At, FieldRow, SectionFilter, Tracker,
};
use crate::protocol::predicate::{
    ColumnMatches, FieldMatches, FillRate, HowMany, Section, SectionMatch,
};

fn tracker_or(ctx: &Ctx<'_>, expected: &str) -> Result<std::sync::Arc<Tracker>, Outcome> {
    with_tracker(ctx).map_err(|mut o| {
        o.expected = vec![expected.to_string()];
        o
    })
}

fn tracker_file(ctx: &Ctx<'_>, o: &mut Outcome) {
    if let Ok(d) = ctx.read(ctx.tracker_file()) {
        o.push_file(Ctx::data_ref(&d));
    }
}

pub(super) fn filled(ctx: &Ctx<'_>, fields: &[String]) -> Outcome {
    let tracker_name = ctx.tracker_file();
    let expected = format!("non-empty: {}", fields.join(", "));
    let t = match tracker_or(ctx, &expected) {
        Ok(t) => t,
        Err(o) => return o,
    };
    let mut o = Outcome::new(Verdict::Pass, expected, String::new());
    let mut empty = Vec::new();
    let mut values = Vec::new();
    for f in fields {
        match t.field(f) {
            None => empty.push(match t.hidden_row(f) {
                Some(h) => format!(
                    "{f} (no such row; line {} has one inside {}, which is not data)",
                    h.line, h.inside
                ),
                None => format!("{f} (no such row)"),
            }),
            Some(row) if is_empty_value(&row.value) && !row.struck.is_empty() => {
                empty.push(format!(
                    "{f} ({tracker_name}:{}: only struck text `{}`, not a value)",
                    row.at(),
                    row.struck.join(" ")
                ))
            }
            Some(row) if is_empty_value(&row.value) && !row.comments.is_empty() => empty.push(
                format!("{f} (line {}: only an HTML comment, not a value)", row.line),
            ),
            Some(row) if is_empty_value(&row.value) => {
                empty.push(format!("{f} (line {}: `{}`)", row.line, row.value.trim()))
            }
            Some(row) => values.push(format!(
                "{tracker_name}:{}: {} = {}",
                row.at(),
                row.name,
                row.shown()
            )),
        }
    }
    tracker_file(ctx, &mut o);
    if empty.is_empty() {
        o.observed = vec![match fields {
            [one] => t.field(one).map_or_else(String::new, |r| {
                format!("{} = {}", r.name, super::clip(r.value.trim(), 60))
            }),
            _ => format!("all {} filled", fields.len()),
        }];
        for v in values {
            o.push_detail(v);
        }
    } else {
        o.verdict = Verdict::Missing;
        o.observed = vec![format!("empty: {}", empty.join(", "))];
    }
    o
}

pub(super) fn section_filled(ctx: &Ctx<'_>, s: &Section) -> Outcome {
    let tracker_name = ctx.tracker_file();
    let expected = format!("every row of section `{}` filled", s.section);
    let t = match tracker_or(ctx, &expected) {
        Ok(t) => t,
        Err(o) => return o,
    };
    let filter = SectionFilter {
        text: s.section.clone(),
        exact: s.exact == SectionMatch::Exact,
    };
    let rows = t.rows_in(&filter);
    let mut o = Outcome::new(Verdict::Pass, expected, String::new());
    tracker_file(ctx, &mut o);
    if rows.is_empty() {
        o.verdict = Verdict::Missing;
        o.observed = vec![format!("no section `{}` with field rows", s.section)];
        return o;
    }
    let empty: Vec<_> = rows.iter().filter(|r| is_empty_value(&r.value)).collect();
    o.observed = vec![format!(
        "{} of {} rows filled",
        rows.len() - empty.len(),
        rows.len()
    )];
    if !empty.is_empty() {
        o.verdict = Verdict::Missing;
        for r in empty {
            o.push_detail(format!("{tracker_name}:{}: {} is empty", r.line, r.name));
        }
    }
    o
}

pub(super) fn field_matches(ctx: &Ctx<'_>, f: &FieldMatches) -> Outcome {
    let tracker_name = ctx.tracker_file();
    let expected = format!(
        "{} of {} match `{}`",
        match f.any {
            HowMany::Any => "any",
            HowMany::All => "all",
        },
        f.fields.join(", "),
        f.pattern.as_str()
    );
    let t = match tracker_or(ctx, &expected) {
        Ok(t) => t,
        Err(o) => return o,
    };
    let Some(re) = f.pattern.regex() else {
        return Outcome::new(Verdict::Inconclusive, expected, "uncompiled pattern");
    };
    let mut matched = Vec::new();
    let mut unmatched = Vec::new();
    let mut absent = 0;
    // A field written in more than one row (a planned schedule above the record, a repeated
    // summary) is read in every row, as a reader scanning the tracker would: one row that
    // matches is not hidden by another that does not, whichever comes first.
    for name in &f.fields {
        let rows: Vec<&FieldRow> = t
            .fields_named(name)
            .into_iter()
            .filter(|r| !is_empty_value(&r.value))
            .collect();
        if rows.is_empty() {
            absent += 1;
        }
        for row in rows {
            let line = format!(
                "{tracker_name}:{}: {} = {}",
                row.at(),
                row.name,
                row.shown()
            );
            if re.is_match(row.value.trim().as_bytes()) {
                matched.push(line)
            } else {
                unmatched.push(line)
            }
        }
    }
    let verdict = if f.any == HowMany::Any {
        if !matched.is_empty() {
            Verdict::Pass
        } else if unmatched.is_empty() {
            Verdict::Missing
        } else {
            Verdict::Fail
        }
    } else if !unmatched.is_empty() {
        Verdict::Fail
    } else if absent > 0 {
        Verdict::Missing
    } else {
        Verdict::Pass
    };
    let mut o = Outcome::new(
        verdict,
        expected,
        format!(
            "{} match, {} do not, {absent} empty",
            matched.len(),
            unmatched.len()
        ),
    );
    tracker_file(ctx, &mut o);
    for d in matched.into_iter().chain(unmatched) {
        o.push_detail(d);
    }
    o
}

pub(super) fn column(ctx: &Ctx<'_>, c: &ColumnMatches) -> Outcome {
    let tracker_name = ctx.tracker_file();
    let expected = format!(
        "every filled `{}` cell of the `{}` table matches `{}`",
        c.column,
        c.section,
        c.pattern.as_str()
    );
    let t = match tracker_or(ctx, &expected) {
        Ok(t) => t,
        Err(o) => return o,
    };
    let Some(re) = c.pattern.regex() else {
        return Outcome::new(Verdict::Inconclusive, expected, "uncompiled pattern");
    };
    let filter = SectionFilter {
        text: c.section.clone(),
        exact: false,
    };
    let Some(table) = t.table_in(&filter, &c.column) else {
        if let Some(o) = unmapped(ctx, &t, &filter, &c.section, &c.column, &expected) {
            return o;
        }
        return Outcome::new(
            Verdict::Missing,
            expected,
            format!("no `{}` table with a `{}` column", c.section, c.column),
        );
    };
    let cells: Vec<(At, String)> = t
        .column(table, &c.column)
        .into_iter()
        .filter(|(_, v)| !is_empty_value(v))
        .collect();
    let mut o = Outcome::new(Verdict::Pass, expected, String::new());
    tracker_file(ctx, &mut o);
    if cells.is_empty() {
        o.verdict = Verdict::Missing;
        o.observed = vec![format!("no `{}` recorded", c.column)];
        return o;
    }
    let bad: Vec<_> = cells
        .iter()
        .filter(|(_, v)| !re.is_match(v.as_bytes()))
        .collect();
    o.observed = vec![format!(
        "{} of {} cells match",
        cells.len() - bad.len(),
        cells.len()
    )];
    if !bad.is_empty() {
        o.verdict = Verdict::Fail;
        for (line, v) in bad {
            o.push_detail(format!("{tracker_name}:{line}: {} = {v}", c.column));
        }
    }
    o
}

pub(super) fn fill_rate(ctx: &Ctx<'_>, f: &FillRate) -> Outcome {
    let tracker_name = ctx.tracker_file();
    let expected = format!("tracker fill rate >= {:.0}%", f.min * 100.0);
    let t = match tracker_or(ctx, &expected) {
        Ok(t) => t,
        Err(o) => return o,
    };
    let fill = t.fill();
    let mut o = Outcome::new(Verdict::Pass, expected, String::new());
    tracker_file(ctx, &mut o);
    if fill.total == 0 {
        o.verdict = Verdict::Missing;
        o.observed = vec!["no field rows".into()];
        return o;
    }
    let rate = fill.filled as f64 / fill.total as f64;
    o.observed = vec![format!(
        "{:.1}% ({} of {} fields filled)",
        rate * 100.0,
        fill.filled,
        fill.total
    )];
    if rate + 1e-9 < f.min {
        o.verdict = Verdict::Missing;
    }
    for (name, line) in &fill.empty {
        o.push_detail(format!("{tracker_name}:{line}: {name} is empty"));
    }
    o
}

pub(super) fn distinct(ctx: &Ctx<'_>, fields: &[String]) -> Outcome {
    let tracker_name = ctx.tracker_file();
    let expected = format!("{} all different", fields.join(", "));
    let t = match tracker_or(ctx, &expected) {
        Ok(t) => t,
        Err(o) => return o,
    };
    let mut values = Vec::new();
    let mut absent = Vec::new();
    for f in fields {
        match t.field(f) {
            Some(row) if !is_empty_value(&row.value) => values.push(row),
            _ => absent.push(f.as_str()),
        }
    }
    let mut o = Outcome::new(Verdict::Pass, expected, String::new());
    tracker_file(ctx, &mut o);
    if !absent.is_empty() {
        o.verdict = Verdict::Missing;
        o.observed = vec![format!("not recorded: {}", absent.join(", "))];
        return o;
    }
    let key = |v: &str| match parse_timestamp(v) {
        Some(ts) => ts.to_rfc3339(),
        None => v.trim().to_string(),
    };
    let mut same = Vec::new();
    for (i, a) in values.iter().enumerate() {
        for b in &values[i + 1..] {
            if key(&a.value) == key(&b.value) {
                same.push(format!("{} = {} = {}", a.name, b.name, a.value.trim()));
            }
        }
    }
    for r in &values {
        o.push_detail(format!(
            "{tracker_name}:{}: {} = {}",
            r.at(),
            r.name,
            r.shown()
        ));
    }
    if same.is_empty() {
        o.observed = vec!["all different".into()];
    } else {
        o.verdict = Verdict::Fail;
        o.observed = vec![format!("identical: {}", same.join("; "))];
    }
    o
}

/// When a section the contract names holds a table but none of its headers means `column`
/// (`Launched` where `Spawned` is read): INCONCLUSIVE, naming the headers found. What the table
/// says cannot be read, and falling back (to mtimes, or to "not recorded") would judge
/// something else than what the tracker says.
pub(super) fn unmapped(
    ctx: &Ctx<'_>,
    t: &Tracker,
    filter: &SectionFilter,
    section: &str,
    column: &str,
    expected: &str,
) -> Option<Outcome> {
    let tracker_name = ctx.tracker_file();
    let tables = t.tables_in(filter);
    let headed: Vec<_> = tables.iter().filter(|t| !t.header.is_empty()).collect();
    if headed.is_empty() {
        return None;
    }
    let mut o = Outcome::new(
        Verdict::Inconclusive,
        expected,
        format!("the `{section}` table has no column that reads as `{column}`"),
    );
    tracker_file(ctx, &mut o);
    for table in headed {
        o.push_detail(format!(
            "{tracker_name}:{}: headers {}",
            table.line,
            table
                .header
                .iter()
                .map(|h| format!("`{h}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    }
    Some(o)
}
