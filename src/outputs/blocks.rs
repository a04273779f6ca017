//! The markdown building blocks every document of the referee shares: how a time is written,
//! a table's head, and the finished document's blank lines. Escaping is [`super::escape`];
//! what the documents say is theirs ([`super::markdown`], [`super::history`],
//! [`super::code_change`]).

use std::fmt::Write;

use chrono::{DateTime, SecondsFormat, Utc};

/// A time as every document writes it: RFC 3339, UTC, milliseconds.
pub fn ts(t: &DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A table's header and delimiter rows, in the `| a | b |` / `| --- | --- |` style throughout.
pub fn table_head(out: &mut String, columns: &[&str]) {
    let _ = writeln!(out, "| {} |", columns.join(" | "));
    let _ = writeln!(out, "|{}", " --- |".repeat(columns.len()));
}

/// A table row of already escaped cells, `| a | b |`; an empty cell is `| |`, never `|  |`,
/// so every row keeps the one-space style of the head (markdownlint MD060).
pub fn table_row(out: &mut String, cells: &[&str]) {
    for c in cells {
        out.push('|');
        if !c.is_empty() {
            out.push(' ');
            out.push_str(c);
        }
        out.push(' ');
    }
    out.push_str("|\n");
}

/// The finished document: one blank line between blocks, none at the end, one final newline
/// (markdownlint MD012/MD047). The referee's markdown holds no fenced code, so every run of
/// blank lines is between blocks.
pub fn tidy(out: &str) -> String {
    let mut t = String::with_capacity(out.len());
    let mut blank = 0;
    for line in out.trim().lines() {
        if line.trim().is_empty() {
            blank += 1;
            continue;
        }
        if blank > 0 && !t.is_empty() {
            t.push('\n');
        }
        blank = 0;
        t.push_str(line.trim_end());
        t.push('\n');
    }
    t
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_has_one_space_around_each_cell_and_one_in_an_empty_one() {
        let mut out = String::new();
        table_head(&mut out, &["a", "b", "c"]);
        table_row(&mut out, &["`t2`", "", "**APPROVE**"]);
        table_row(&mut out, &["", "", ""]);
        assert_eq!(
            out,
            "| a | b | c |\n| --- | --- | --- |\n| `t2` | | **APPROVE** |\n| | | |\n"
        );
    }
}
