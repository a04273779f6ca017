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
