//! Setting one field of the execution tracker (a `**Field:** value` line or a table cell), as
//! a pipeline edits it.

use crate::artifacts::tracker::{SectionFilter, Tracker};

use super::timeline::FieldSet;

fn render_row(cells: &[String]) -> String {
    let mut s = String::from("|");
    for c in cells {
        if c.is_empty() {
            s.push_str(" |");
        } else {
            s.push(' ');
            s.push_str(c);
            s.push_str(" |");
        }
    }
    s
}

/// Why a tracker edit cannot be made: the row or column it names is not in the tracker.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FieldError {
    #[error("no field row `{field}` in the tracker")]
    NoRow { field: String },
    #[error("no field row `{field}` in a section `{section}` of the tracker")]
    NoRowInSection { field: String, section: String },
    #[error("field row `{field}` is not in a table")]
    NotInTable { field: String },
    #[error("the table of field row `{field}` has no column `{column}`")]
    NoColumn { field: String, column: String },
}

/// Sets one field row's value and/or time, found the way the referee finds it.
pub fn set_field(text: &str, set: &FieldSet) -> Result<String, FieldError> {
    let parsed = Tracker::parse(text);
    let row = match &set.section {
        Some(sec) => parsed.field_in(&SectionFilter::contains(sec), &set.field),
        None => parsed.field(&set.field),
    }
    .ok_or_else(|| match &set.section {
        Some(sec) => FieldError::NoRowInSection {
            field: set.field.clone(),
            section: sec.clone(),
        },
        None => FieldError::NoRow {
            field: set.field.clone(),
        },
    })?;
    let escape = |v: &str| v.replace('\n', " ").replace('|', "\\|");
    let column = match &set.column {
        Some(col) => {
            let table = parsed
                .tables
                .iter()
                .find(|t| t.rows.iter().any(|r| r.line == row.line))
                .ok_or_else(|| FieldError::NotInTable {
                    field: set.field.clone(),
                })?;
            Some(
                table
                    .column_index(col)
                    .ok_or_else(|| FieldError::NoColumn {
                        field: set.field.clone(),
                        column: col.clone(),
                    })?,
            )
        }
        None => None,
    };
    let bom = usize::from(text.starts_with('\u{feff}'));
    let mut out = String::with_capacity(text.len() + 64);
    for (i, line) in text.split_inclusive('\n').enumerate() {
        if i + 1 != row.line {
            out.push_str(line);
            continue;
        }
        let (body, eol) = match line.strip_suffix("\r\n") {
            Some(b) => (b, "\r\n"),
            None => match line.strip_suffix('\n') {
                Some(b) => (b, "\n"),
                None => (line, ""),
            },
        };
        let body = if i == 0 && bom == 1 {
            out.push('\u{feff}');
            body.trim_start_matches('\u{feff}')
        } else {
            body
        };
        // Where the cells are is the tracker's rule (code spans included), so the cell set is
        // the cell the referee reads.
        let mut cells = crate::artifacts::tracker::split_row(body.trim(), true);
        let value_at = column.unwrap_or(1);
        let want = if set.time.is_some() { 3 } else { value_at + 1 };
        while cells.len() < want {
            cells.push(String::new());
        }
        if let Some(v) = &set.value {
            cells[value_at] = escape(v);
        }
        if let Some(t) = &set.time {
            cells[2] = escape(t);
        }
        out.push_str(&render_row(&cells));
        out.push_str(eol);
    }
    Ok(out)
}

// ---- playing ---------------------------------------------------------------------------
