//! The execution tracker (`EXECUTION-TRACKER.md`, SPEC §2.1): markdown sections holding tables of
//! fields.
//!
//! This module owns turning the tracker's text into sections, tables and field rows, and the lookups
//! the checks need: a field by name, the rows or a table of a section, a table's column, the fill rate,
//! and what counts as an empty value or a timestamp. It must never fail or panic on any input (the
//! tracker is written by the pipeline, in any state), must stay linear in the size of the text (huge
//! lines, many backticks), and must not judge anything: whether a field is missing, late or wrong is
//! the checks' business. Block structure (line endings, byte-order marks, fenced code, HTML comments,
//! ATX and setext headings) is [`markdown`]'s; this module reads GFM tables out of what is left, with
//! or without outer pipes.

use chrono::{DateTime, NaiveDateTime, Utc};

use super::markdown::{self, Kind};

/// Consecutive table lines not yet turned into tables: (line number, cells, comment text).
#[derive(Default)]
struct Run {
    lines: Vec<(usize, Vec<String>, String)>,
    /// A delimiter row (`|---|`) has been seen: the run is a GFM table, whose rows may omit the
    /// outer pipes.
    delimited: bool,
}

/// Whether the next visible line is a GFM delimiter row with `columns` cells (so the line
/// before it, written without outer pipes, is a header row).
fn delimiter_follows(rest: &[markdown::Line<'_>], columns: usize) -> bool {
    let Some(next) = rest.iter().find(|l| l.kind != Kind::Comment) else {
        return false;
    };
    if !matches!(next.kind, Kind::Text { .. }) {
        return false;
    }
    let visible = next.visible();
    let visible = String::from_utf8_lossy(&visible);
    let cells = split_cells(visible.trim());
    visible.contains('|') && cells.len() == columns && is_separator(&cells)
}

/// The parsed tracker.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tracker {
    /// Headings (ATX and setext), in document order.
    pub sections: Vec<Section>,
    /// Field rows of all tables, in document order.
    pub rows: Vec<FieldRow>,
    /// All tables, in document order.
    pub tables: Vec<Table>,
    /// Rows written inside HTML comments or code fences: not data, but named in evidence so
    /// that "no such row" never contradicts a row a reader can find in the file.
    pub hidden: Vec<HiddenRow>,
}

/// A table row that is not data because of where it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HiddenRow {
    /// The first cell, as for a [`FieldRow`].
    pub name: String,
    /// 1-based line number.
    pub line: usize,
    /// `"an HTML comment"` or `"a code block"`.
    pub inside: &'static str,
}

/// A heading: ATX (`#` … `######`) or setext (underlined with `===` or `---`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The heading text, trimmed, without the `#` markers.
    pub heading: String,
    /// 1 for `#`, up to 6.
    pub level: u8,
    /// 1-based line number.
    pub line: usize,
}

/// A table row that is neither a header nor a separator and whose first cell is non-empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRow {
    /// The first cell, without surrounding `**bold**`, `*emphasis*` or backticks.
    pub name: String,
    /// The second cell, trimmed ("" when missing).
    pub value: String,
    /// The third cell, trimmed, when present.
    pub third: Option<String>,
    /// The third cell parsed as a timestamp.
    pub time: Option<DateTime<Utc>>,
    /// The text of HTML comments on the row's line: no cell holds it (`| P2_START | <!-- todo --> |`
    /// is empty), but the text rules read it, since a term hidden in a comment is still written.
    pub comments: String,
    /// 1-based line number.
    pub line: usize,
    /// Index into [`Tracker::sections`] of the heading above; `None` before the first heading.
    pub section: Option<usize>,
}

/// A run of consecutive table lines (split again at each header row).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// Index into [`Tracker::sections`]; `None` before the first heading.
    pub section: Option<usize>,
    /// The header cells; empty for a table without a `|---|` separator.
    pub header: Vec<String>,
    /// Data rows: every row that is neither the header nor a separator.
    pub rows: Vec<TableRow>,
    /// 1-based line number of the table's first line.
    pub line: usize,
}

/// One data row of a [`Table`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRow {
    /// Cells, trimmed, outer empty cells dropped, `\|` unescaped.
    pub cells: Vec<String>,
    /// 1-based line number.
    pub line: usize,
}

/// Which sections a lookup addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SectionFilter {
    pub text: String,
    /// `true`: the heading equals `text`; `false`: the heading contains `text`. Both ignore case.
    pub exact: bool,
}

impl SectionFilter {
    /// Headings containing `text` (ignoring case; see [`Tracker::section_matches`]).
    pub fn contains(text: &str) -> SectionFilter {
        SectionFilter {
            text: text.to_string(),
            exact: false,
        }
    }

    /// Headings equal to `text` (ignoring case and surrounding whitespace).
    pub fn exact(text: &str) -> SectionFilter {
        SectionFilter {
            text: text.to_string(),
            exact: true,
        }
    }
}

/// The fill rate: field rows with a non-empty value out of all field rows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Fill {
    pub filled: usize,
    pub total: usize,
    /// Name and line of each field row whose value is empty.
    pub empty: Vec<(String, usize)>,
}

impl Fill {
    /// `filled / total`, or `None` when there are no field rows.
    pub fn ratio(&self) -> Option<f64> {
        if self.total == 0 {
            None
        } else {
            Some(self.filled as f64 / self.total as f64)
        }
    }
}

impl Table {
    /// The index of the header column named `column` (ignoring case and decoration).
    pub fn column_index(&self, column: &str) -> Option<usize> {
        let column = strip_decoration(column);
        self.header
            .iter()
            .position(|h| eq_ignore_case(strip_decoration(h), column))
    }
}

impl Tracker {
    /// Parses tracker text. Never fails; anything that is not a heading or a table line is ignored.
    ///
    /// Structure comes from [`markdown::lines`]: fenced code and HTML comments are not data, a
    /// line holding only a comment is invisible (a table goes on across it), and a comment
    /// inside a row is kept apart from its cells ([`FieldRow::comments`]).
    pub fn parse(text: &str) -> Tracker {
        let mut tracker = Tracker::default();
        let mut section: Option<usize> = None;
        let mut run = Run::default();
        let lines: Vec<markdown::Line<'_>> = markdown::lines(text.as_bytes()).collect();
        for (index, line) in lines.iter().enumerate() {
            match &line.kind {
                Kind::Comment => tracker.note_hidden(line, "an HTML comment"),
                Kind::Code => {
                    tracker.flush_table(&mut run, section);
                    tracker.note_hidden(line, "a code block");
                }
                Kind::Heading {
                    level,
                    text,
                    line: number,
                } => {
                    tracker.flush_table(&mut run, section);
                    tracker.sections.push(Section {
                        heading: text.trim().to_string(),
                        level: *level,
                        line: *number,
                    });
                    section = Some(tracker.sections.len() - 1);
                }
                Kind::Text { .. } => {
                    let visible = line.visible();
                    let visible = String::from_utf8_lossy(&visible);
                    let trimmed = visible.trim();
                    let cells = split_cells(trimmed);
                    // GFM: a row needs no outer pipes once a table has begun (a header row
                    // directly above a delimiter row); a pipe-led row is read even without one.
                    let row = trimmed.starts_with('|')
                        || (cells.len() > 1
                            && ((!run.lines.is_empty()
                                && (run.delimited || is_separator(&cells)))
                                || delimiter_follows(&lines[index + 1..], cells.len())));
                    if row {
                        run.delimited |= is_separator(&cells);
                        run.lines.push((line.number, cells, line.hidden()));
                    } else {
                        tracker.flush_table(&mut run, section);
                    }
                }
            }
        }
        tracker.flush_table(&mut run, section);
        tracker
    }

    /// Records a pipe-led row on a line that is not data (see [`Tracker::hidden`]).
    fn note_hidden(&mut self, line: &markdown::Line<'_>, inside: &'static str) {
        let text = String::from_utf8_lossy(line.raw);
        let text = text.trim();
        let text = text.strip_prefix("<!--").unwrap_or(text).trim_start();
        if !text.starts_with('|') {
            return;
        }
        let cells = split_cells(text);
        let name = cells.first().map_or("", |c| strip_decoration(c));
        if !name.is_empty() && !is_separator(&cells) {
            self.hidden.push(HiddenRow {
                name: name.to_string(),
                line: line.number,
                inside,
            });
        }
    }

    /// The first row named `name` written inside a comment or code block.
    pub fn hidden_row(&self, name: &str) -> Option<&HiddenRow> {
        let name = strip_decoration(name);
        self.hidden.iter().find(|r| eq_ignore_case(&r.name, name))
    }

    /// Turns a run of consecutive table lines into tables and field rows.
    fn flush_table(&mut self, run: &mut Run, section: Option<usize>) {
        run.delimited = false;
        if run.lines.is_empty() {
            return;
        }
        let separator: Vec<bool> = run
            .lines
            .iter()
            .map(|(_, cells, _)| is_separator(cells))
            .collect();
        let mut table: Option<Table> = None;
        for (i, (line, cells, comments)) in run.lines.drain(..).enumerate() {
            let is_sep = separator[i];
            let is_header = !is_sep && separator.get(i + 1).copied().unwrap_or(false);
            if is_header {
                self.tables.extend(table.take());
                table = Some(Table {
                    section,
                    header: cells,
                    rows: Vec::new(),
                    line,
                });
                continue;
            }
            let current = table.get_or_insert_with(|| Table {
                section,
                header: Vec::new(),
                rows: Vec::new(),
                line,
            });
            if is_sep {
                continue;
            }
            if let Some(first) = cells.first() {
                let name = strip_decoration(first);
                if !name.is_empty() {
                    let third = cells.get(2).cloned();
                    self.rows.push(FieldRow {
                        name: name.to_string(),
                        value: cells.get(1).cloned().unwrap_or_default(),
                        time: third.as_deref().and_then(parse_timestamp),
                        third,
                        comments,
                        line,
                        section,
                    });
                }
            }
            current.rows.push(TableRow { cells, line });
        }
        self.tables.extend(table);
    }

    /// The first field row named `name` (ignoring case and decoration).
    pub fn field(&self, name: &str) -> Option<&FieldRow> {
        let name = strip_decoration(name);
        self.rows.iter().find(|r| eq_ignore_case(&r.name, name))
    }

    /// The first field row named `name` within a section matching `filter`.
    pub fn field_in(&self, filter: &SectionFilter, name: &str) -> Option<&FieldRow> {
        let name = strip_decoration(name);
        self.rows_in(filter)
            .into_iter()
            .find(|r| eq_ignore_case(&r.name, name))
    }

    /// Whether section number `section` matches `filter`.
    ///
    /// Exact: the heading equals the text, ignoring case, surrounding whitespace and decoration.
    /// Otherwise the heading contains the text, ignoring case — but a heading ending in a parenthesised
    /// part such as `(REFINE)` is its own section and matches only a filter whose text also contains
    /// that part: `Phase 3B Auditors` does not match `Phase 3B Auditors (REFINE)`.
    pub fn section_matches(&self, section: usize, filter: &SectionFilter) -> bool {
        self.sections
            .get(section)
            .is_some_and(|s| heading_matches(&s.heading, filter))
    }

    /// Field rows of every section matching `filter`, in document order.
    pub fn rows_in(&self, filter: &SectionFilter) -> Vec<&FieldRow> {
        let matching = self.matching_sections(filter);
        self.rows
            .iter()
            .filter(|r| {
                r.section
                    .is_some_and(|s| matching.get(s).copied().unwrap_or(false))
            })
            .collect()
    }

    /// The first table in a matching section whose header has `column` (ignoring case).
    pub fn table_in(&self, filter: &SectionFilter, column: &str) -> Option<&Table> {
        let matching = self.matching_sections(filter);
        self.tables.iter().find(|t| {
            t.section
                .is_some_and(|s| matching.get(s).copied().unwrap_or(false))
                && t.column_index(column).is_some()
        })
    }

    /// The cells of `column` in `table`, one `(line, cell)` per data row ("" where a row is short);
    /// empty when the header has no such column.
    pub fn column(&self, table: &Table, column: &str) -> Vec<(usize, String)> {
        let Some(index) = table.column_index(column) else {
            return Vec::new();
        };
        table
            .rows
            .iter()
            .map(|row| (row.line, row.cells.get(index).cloned().unwrap_or_default()))
            .collect()
    }

    /// The fill rate over all field rows.
    pub fn fill(&self) -> Fill {
        let mut fill = Fill {
            total: self.rows.len(),
            ..Fill::default()
        };
        for row in &self.rows {
            if is_empty_value(&row.value) {
                fill.empty.push((row.name.clone(), row.line));
            } else {
                fill.filled += 1;
            }
        }
        fill
    }

    fn matching_sections(&self, filter: &SectionFilter) -> Vec<bool> {
        self.sections
            .iter()
            .map(|s| heading_matches(&s.heading, filter))
            .collect()
    }
}

/// Whether a value counts as empty: trimmed, it is blank, only underscores, `-`, `—`, `[ ]`, or
/// `TBD` (any case).
pub fn is_empty_value(v: &str) -> bool {
    let v = v.trim();
    v.is_empty()
        || v.chars().all(|c| c == '_')
        || v == "-"
        || v == "—"
        || v == "[ ]"
        || v.eq_ignore_ascii_case("tbd")
}

/// Parses a tracker timestamp: RFC 3339 (offsets allowed) or `YYYY-MM-DD HH:MM:SS` (UTC, optionally
/// with fractional seconds and a ` UTC` suffix). Surrounding whitespace, backticks and bold are ignored.
pub fn parse_timestamp(s: &str) -> Option<DateTime<Utc>> {
    let s = strip_decoration(s);
    // No timestamp is this long; refusing early keeps the parser cheap on huge cells.
    if s.len() > 64 {
        return None;
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some(t.with_timezone(&Utc));
    }
    let naive = s.strip_suffix(" UTC").unwrap_or(s).trim_end();
    NaiveDateTime::parse_from_str(naive, "%Y-%m-%d %H:%M:%S%.f")
        .ok()
        .map(|t| t.and_utc())
}

/// Strips surrounding whitespace and matching `**`, `*` or backtick pairs, repeatedly:
/// ``**`P0_START`**`` → `P0_START`. Underscores are left alone (field names contain them).
pub fn strip_decoration(s: &str) -> &str {
    let mut s = s.trim();
    loop {
        let before = s.len();
        for marker in ["**", "*", "`"] {
            if s.len() >= 2 * marker.len() && s.starts_with(marker) && s.ends_with(marker) {
                s = s[marker.len()..s.len() - marker.len()].trim();
                break;
            }
        }
        if s.len() == before {
            return s;
        }
    }
}

/// Case-insensitive (Unicode) comparison without allocating.
fn eq_ignore_case(a: &str, b: &str) -> bool {
    a.chars()
        .flat_map(char::to_lowercase)
        .eq(b.chars().flat_map(char::to_lowercase))
}

fn heading_matches(heading: &str, filter: &SectionFilter) -> bool {
    let heading = normalize_heading(heading).to_lowercase();
    let text = filter.text.trim().to_lowercase();
    if filter.exact {
        return heading == text;
    }
    if !heading.contains(&text) {
        return false;
    }
    match paren_suffix(&heading) {
        Some(suffix) => text.contains(suffix),
        None => true,
    }
}

/// A heading as compared by filters: without decoration or a trailing colon.
fn normalize_heading(heading: &str) -> &str {
    let h = strip_decoration(heading);
    strip_decoration(h.strip_suffix(':').unwrap_or(h))
}

/// The trailing balanced `( … )` of `s`, if it ends with one.
fn paren_suffix(s: &str) -> Option<&str> {
    let s = s.trim_end();
    if !s.ends_with(')') {
        return None;
    }
    let mut depth = 0usize;
    for (i, c) in s.char_indices().rev() {
        match c {
            ')' => depth += 1,
            '(' => {
                depth = depth.saturating_sub(1);
                if depth == 0 {
                    return Some(&s[i..]);
                }
            }
            _ => {}
        }
    }
    None
}

/// Whether every cell (and there is at least one) is `:?-+:?`.
fn is_separator(cells: &[String]) -> bool {
    !cells.is_empty()
        && cells.iter().all(|cell| {
            let c = cell.strip_prefix(':').unwrap_or(cell);
            let c = c.strip_suffix(':').unwrap_or(c);
            !c.is_empty() && c.bytes().all(|b| b == b'-')
        })
}

/// Splits a trimmed table line (starting with `|`) into trimmed cells, as a reader sees them
/// (`\|` read as `|`): [`split_row`].
fn split_cells(line: &str) -> Vec<String> {
    split_row(line, false)
}

/// Splits a trimmed table line (starting with `|`) into trimmed cells: the one rule for where a
/// tracker row's cells are, for reading it and for editing it (`replay`).
///
/// Splits on unescaped `|`; `\|` is a literal pipe. A pipe inside a backtick code span closed on the
/// same line does not split (unclosed backticks are plain text). The empty cell before the leading pipe
/// and after a trailing pipe is dropped. `raw`: each cell as written (`\|` kept), to write the
/// row back; else as read. Linear in the line length.
pub fn split_row(line: &str, raw: bool) -> Vec<String> {
    let bytes = line.as_bytes();
    let spans = markdown::code_spans(bytes);
    let mut spans = spans.iter().peekable();
    let mut cells = Vec::new();
    let mut cell = String::new();
    let mut chunk = 0;
    let mut pos = 0;
    while pos < bytes.len() {
        // Skip spans that start before `pos` (cannot happen, but never loop on them).
        while spans.peek().is_some_and(|&&(start, _)| start < pos) {
            spans.next();
        }
        match bytes[pos] {
            b'\\' if bytes.get(pos + 1) == Some(&b'|') => {
                cell.push_str(&line[chunk..pos]);
                cell.push_str(if raw { "\\|" } else { "|" });
                pos += 2;
                chunk = pos;
            }
            b'`' if spans.peek().is_some_and(|&&(start, _)| start == pos) => {
                if let Some(&(start, end)) = spans.next() {
                    cell.push_str(&line[chunk..start]);
                    if raw {
                        cell.push_str(&line[start..end]);
                    } else {
                        cell.push_str(&line[start..end].replace("\\|", "|"));
                    }
                    pos = end;
                    chunk = pos;
                }
            }
            b'|' => {
                cell.push_str(&line[chunk..pos]);
                cells.push(trim_cell(&cell).to_string());
                cell.clear();
                pos += 1;
                chunk = pos;
            }
            _ => pos += 1,
        }
    }
    cell.push_str(&line[chunk..]);
    cells.push(trim_cell(&cell).to_string());
    // The piece before the leading pipe is always empty.
    if line.starts_with('|') && !cells.is_empty() {
        cells.remove(0);
    }
    if cells.last().is_some_and(|c| c.is_empty()) && ends_with_unescaped_pipe(line) {
        cells.pop();
    }
    cells
}

/// A cell without surrounding whitespace or stray byte-order marks (pasted text carries them).
fn trim_cell(cell: &str) -> &str {
    cell.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
}

fn ends_with_unescaped_pipe(line: &str) -> bool {
    line.ends_with('|') && !line.ends_with("\\|")
}

#[cfg(test)]
mod tests;
