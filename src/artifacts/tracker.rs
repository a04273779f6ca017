//! The execution tracker (`EXECUTION-TRACKER.md`): markdown sections holding tables of
//! fields.
//!
//! This module owns turning the tracker's document into sections, tables and field rows, and the
//! lookups the checks need: a field by name, the rows or a table of a section, a table's column
//! found by what its header means, the fill rate, and what counts as an empty value or a
//! timestamp. The document is read as a human reads it ([`markdown::parse`]: CommonMark with GFM
//! tables, code and HTML blocks are not data, struck text is not the value, markup and
//! look-alike text read as their text). It must never fail or panic on any input (the tracker
//! is written by the pipeline, in any state), must stay linear in the size of the text, and must
//! not judge anything: whether a field is missing, late or wrong is the checks' business.

use chrono::{DateTime, NaiveDateTime, Utc};

use super::markdown::{self, Cell};
use super::normalize::seen;

/// The parsed tracker.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Tracker {
    /// Headings (ATX and setext), in document order.
    pub sections: Vec<Section>,
    /// Field rows of all tables, in document order.
    pub rows: Vec<FieldRow>,
    /// All tables, in document order.
    pub tables: Vec<Table>,
    /// Rows written inside HTML comments, code or HTML blocks: not data, but named in evidence
    /// so that "no such row" never contradicts a row a reader can find in the file.
    pub hidden: Vec<HiddenRow>,
}

/// A table row that is not data because of where it is written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HiddenRow {
    /// The first cell, as for a [`FieldRow`].
    pub name: String,
    /// 1-based line number.
    pub line: usize,
    /// `"an HTML comment"`, `"an HTML block"` or `"a code block"`.
    pub inside: &'static str,
}

/// A heading: ATX (`#` … `######`) or setext (underlined with `===` or `---`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Section {
    /// The heading text as seen, trimmed, without the `#` markers.
    pub heading: String,
    /// 1 for `#`, up to 6.
    pub level: u8,
    /// 1-based line number.
    pub line: usize,
}

/// A table row that is neither a header nor a separator and whose first cell is non-empty.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldRow {
    /// The first cell as seen (markup read, look-alike text folded).
    pub name: String,
    /// The second cell as seen, trimmed ("" when missing); struck text is not part of it.
    pub value: String,
    /// The second cell as written, when it reads otherwise ([`FieldRow::value`] is what counts).
    pub written: Option<String>,
    /// Struck text in the second cell (`~~PASS~~`): written, but not the value.
    pub struck: Vec<String>,
    /// The third cell as seen, trimmed, when present.
    pub third: Option<String>,
    /// The third cell parsed as a timestamp, with the span it stands for (a minute for a time
    /// written to the minute, none for one with its seconds: [`parse_timestamp_span`]).
    pub time: Option<(DateTime<Utc>, chrono::TimeDelta)>,
    /// The text of HTML comments in the row: no cell holds it (`| P2_START | <!-- todo --> |`
    /// is empty), but the text rules read it, since a term hidden in a comment is still written.
    pub comments: String,
    /// 1-based line number.
    pub line: usize,
    /// 1-based column (in characters) of the value cell, or of the row when it has none.
    pub column: usize,
    /// 1-based column of the third cell (the time), or of the row when it has none.
    pub third_column: usize,
    /// Index into [`Tracker::sections`] of the heading above; `None` before the first heading.
    pub section: Option<usize>,
}

impl FieldRow {
    /// `line:column` of the value, for evidence.
    pub fn at(&self) -> String {
        format!("{}:{}", self.line, self.column)
    }

    /// `line:column` of the time (the third cell), for evidence.
    pub fn time_at(&self) -> String {
        format!("{}:{}", self.line, self.third_column)
    }

    /// The value as evidence shows it: as seen, and as written when that differs.
    pub fn shown(&self) -> String {
        let mut s = self.value.trim().to_string();
        if let Some(w) = &self.written {
            s.push_str(&format!(" (written `{}`)", seen_visible(w)));
        }
        if !self.struck.is_empty() {
            s.push_str(&format!(" (struck: {})", self.struck.join(", ")));
        }
        s
    }
}

/// Invisible characters shown as `\u{…}`, for evidence.
fn seen_visible(s: &str) -> String {
    super::normalize::visible(s)
}

/// A table of the tracker.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Table {
    /// Index into [`Tracker::sections`]; `None` before the first heading.
    pub section: Option<usize>,
    /// The header cells as seen; empty for a table without a `|---|` separator.
    pub header: Vec<String>,
    /// Data rows: every row that is neither the header nor a separator.
    pub rows: Vec<TableRow>,
    /// 1-based line number of the table's first line.
    pub line: usize,
}

/// One data row of a [`Table`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TableRow {
    /// Cells as seen, trimmed.
    pub cells: Vec<String>,
    /// 1-based column of each cell.
    pub columns: Vec<usize>,
    /// 1-based line number.
    pub line: usize,
}

/// Where a cell is: `line:column`, as evidence shows it after the file name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct At {
    pub line: usize,
    pub column: usize,
}

impl std::fmt::Display for At {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.line, self.column)
    }
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
    /// The index of the header column that means `column`: its words, without a parenthesised
    /// part and words that only say it is a time (`at`, `time`, `UTC`, ...), are `column`'s,
    /// a trailing `-ed` or `-s` aside: `Spawned`, `Spawned at`, `Spawned (UTC)` and `Spawn
    /// time` all mean `Spawned`; `Planned spawn` does not.
    pub fn column_index(&self, column: &str) -> Option<usize> {
        let want = meaning(column);
        if want.is_empty() {
            // A header of time words only (`Time`, `UTC`) or none: the same text.
            let plain = |s: &str| seen::value(s).trim().to_lowercase();
            let column = plain(column);
            return self.header.iter().position(|h| plain(h) == column);
        }
        self.header.iter().position(|h| meaning(h) == want)
    }
}

/// What a column header means, as words to compare (see [`Table::column_index`]).
fn meaning(header: &str) -> Vec<String> {
    let mut depth = 0usize;
    let mut kept = String::new();
    for c in seen::value(header).chars() {
        match c {
            '(' | '[' => depth += 1,
            ')' | ']' => depth = depth.saturating_sub(1),
            c if depth == 0 => kept.push(c),
            _ => {}
        }
    }
    const TIME_WORDS: &[&str] = &["at", "on", "time", "timestamp", "utc", "date", "when"];
    kept.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .filter(|w| !TIME_WORDS.contains(&w.as_str()))
        .map(|w| {
            let stem = w
                .strip_suffix("ed")
                .or_else(|| w.strip_suffix('s'))
                .filter(|s| s.len() >= 3);
            stem.map_or(w.clone(), str::to_string)
        })
        .collect()
}

impl Tracker {
    /// Parses tracker text (see [`Tracker::read`] for a file's bytes). Never fails.
    pub fn parse(text: &str) -> Tracker {
        Tracker::read(text.as_bytes())
    }

    /// Parses a tracker file's bytes, in whatever encoding and line ends it was saved with.
    /// Never fails; anything that is not a heading or a table is ignored.
    pub fn read(bytes: &[u8]) -> Tracker {
        let text = seen::document(bytes);
        let doc = markdown::parse_tables(&text);
        let mut tracker = Tracker {
            sections: doc
                .headings
                .iter()
                .map(|h| Section {
                    heading: h.text.clone(),
                    level: h.level,
                    line: h.at.line,
                })
                .collect(),
            ..Tracker::default()
        };
        for h in &doc.hidden {
            let text = h.text.strip_prefix("<!--").unwrap_or(&h.text).trim_start();
            if !text.starts_with('|') {
                continue;
            }
            let spans = markdown::split_spans(text);
            let Some(first) = spans.first().and_then(|r| text.get(r.clone())) else {
                continue;
            };
            let name = seen::value(strip_decoration(first)).trim().to_string();
            let separator = spans
                .iter()
                .filter_map(|r| text.get(r.clone()))
                .all(|c| is_separator_cell(c.trim()));
            if !name.is_empty() && !separator {
                tracker.hidden.push(HiddenRow {
                    name,
                    line: h.at.line,
                    inside: h.inside,
                });
            }
        }
        for t in doc.tables {
            let mut table = Table {
                section: t.section,
                header: t.header.iter().map(|c| c.text.clone()).collect(),
                rows: Vec::new(),
                line: t.at.line,
            };
            // A delimiter row in a table's body starts another table, as it reads in the
            // file: the row above it is that table's header.
            let delimiter: Vec<bool> = t.rows.iter().map(is_delimiter_row).collect();
            for (i, row) in t.rows.into_iter().enumerate() {
                if delimiter[i] {
                    continue;
                }
                if delimiter.get(i + 1).copied().unwrap_or(false) {
                    let next = Table {
                        section: t.section,
                        header: row.cells.iter().map(|c| c.text.clone()).collect(),
                        rows: Vec::new(),
                        line: row.at.line,
                    };
                    tracker.tables.push(std::mem::replace(&mut table, next));
                    continue;
                }
                if let Some(field) = field_row(&row, t.section) {
                    tracker.rows.push(field);
                }
                let columns = row.cells.iter().map(|c| c.at.column).collect();
                table.rows.push(TableRow {
                    cells: row.cells.into_iter().map(|c| c.text).collect(),
                    columns,
                    line: row.at.line,
                });
            }
            tracker.tables.push(table);
        }
        tracker
    }

    /// The first row named `name` written inside a comment, code or HTML block.
    pub fn hidden_row(&self, name: &str) -> Option<&HiddenRow> {
        names(name).find_map(|n| self.hidden.iter().find(|r| eq_ignore_case(&r.name, &n)))
    }

    /// The first field row named `name` (ignoring case and decoration).
    pub fn field(&self, name: &str) -> Option<&FieldRow> {
        names(name).find_map(|n| self.rows.iter().find(|r| eq_ignore_case(&r.name, &n)))
    }

    /// Every field row named `name`, in document order (the spellings [`Tracker::field`] accepts,
    /// the plain one's rows first).
    pub fn fields_named(&self, name: &str) -> Vec<&FieldRow> {
        let mut out: Vec<&FieldRow> = Vec::new();
        for n in names(name) {
            for r in self.rows.iter().filter(|r| eq_ignore_case(&r.name, &n)) {
                if !out.iter().any(|o| std::ptr::eq(*o, r)) {
                    out.push(r);
                }
            }
        }
        out
    }

    /// The first field row named `name` within a section matching `filter`.
    pub fn field_in(&self, filter: &SectionFilter, name: &str) -> Option<&FieldRow> {
        let rows = self.rows_in(filter);
        names(name).find_map(|n| rows.iter().copied().find(|r| eq_ignore_case(&r.name, &n)))
    }

    /// Whether section number `section` matches `filter`.
    ///
    /// Exact: the heading equals the text, ignoring case, surrounding whitespace and decoration.
    /// Otherwise the heading contains the text, ignoring case — but a heading ending in a parenthesised
    /// part such as `(REFINE)` is its own section and matches only a filter whose text also contains
    /// that part: `Phase 3B Auditors` does not match `Phase 3B Auditors (REFINE)`. Where a heading
    /// is the text itself, only such headings match: a `Phase 3B Auditors — planned schedule`
    /// section elsewhere is not the `Phase 3B Auditors` section.
    pub fn section_matches(&self, section: usize, filter: &SectionFilter) -> bool {
        self.matching_sections(filter)
            .get(section)
            .copied()
            .unwrap_or(false)
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

    /// The tables of the sections matching `filter`, in document order.
    pub fn tables_in(&self, filter: &SectionFilter) -> Vec<&Table> {
        let matching = self.matching_sections(filter);
        self.tables
            .iter()
            .filter(|t| {
                t.section
                    .is_some_and(|s| matching.get(s).copied().unwrap_or(false))
            })
            .collect()
    }

    /// The first table in a matching section with a header column that means `column`.
    pub fn table_in(&self, filter: &SectionFilter, column: &str) -> Option<&Table> {
        self.tables_in(filter)
            .into_iter()
            .find(|t| t.column_index(column).is_some())
    }

    /// The cells of `column` in `table`, one `(line:column, cell)` per data row ("" where a
    /// row is short); empty when the header has no such column.
    pub fn column(&self, table: &Table, column: &str) -> Vec<(At, String)> {
        let Some(index) = table.column_index(column) else {
            return Vec::new();
        };
        table
            .rows
            .iter()
            .map(|row| {
                let at = At {
                    line: row.line,
                    column: row.columns.get(index).copied().unwrap_or(1),
                };
                (at, row.cells.get(index).cloned().unwrap_or_default())
            })
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
        let exact = SectionFilter {
            text: filter.text.clone(),
            exact: true,
        };
        let is: Vec<bool> = self
            .sections
            .iter()
            .map(|s| heading_matches(&s.heading, &exact))
            .collect();
        if filter.exact || is.iter().any(|&b| b) {
            return is;
        }
        self.sections
            .iter()
            .map(|s| heading_matches(&s.heading, filter))
            .collect()
    }
}

/// The names a row asked for as `name` may have, in order: `name` as read, then without
/// surrounding `**`, `*` or backticks (a caller may ask for `**P0_START**`).
fn names(name: &str) -> impl Iterator<Item = String> + '_ {
    let read = seen::value(name.trim()).into_owned();
    let bare = seen::value(strip_decoration(name)).into_owned();
    let differs = bare != read;
    std::iter::once(read).chain(differs.then_some(bare))
}

/// A data row as a field row: its first cell non-empty.
fn field_row(row: &markdown::Row, section: Option<usize>) -> Option<FieldRow> {
    let name = row.cells.first()?.text.trim();
    if name.is_empty() {
        return None;
    }
    let value: Option<&Cell> = row.cells.get(1);
    let third = row.cells.get(2).map(|c| c.text.clone());
    let mut comments = String::new();
    for c in row.cells.iter().filter(|c| !c.comments.is_empty()) {
        if !comments.is_empty() {
            comments.push(' ');
        }
        comments.push_str(&c.comments);
    }
    let text = value.map_or("", |c| c.text.as_str());
    let written = value
        .map(|c| c.written.as_str())
        .filter(|w| *w != text && !w.is_empty())
        .map(str::to_string);
    Some(FieldRow {
        name: name.to_string(),
        value: text.to_string(),
        written,
        struck: value.map(|c| c.struck.clone()).unwrap_or_default(),
        time: third.as_deref().and_then(parse_timestamp_span),
        third,
        comments,
        line: row.at.line,
        column: value.map_or(row.at.column, |c| c.at.column),
        third_column: row.cells.get(2).map_or(row.at.column, |c| c.at.column),
        section,
    })
}

/// Whether every cell of a row is written `:?-+:?`.
fn is_delimiter_row(row: &markdown::Row) -> bool {
    !row.cells.is_empty()
        && row
            .cells
            .iter()
            .all(|c| is_separator_cell(c.written.trim()))
}

/// Whether a written cell is `:?-+:?`.
fn is_separator_cell(c: &str) -> bool {
    let c = c.strip_prefix(':').unwrap_or(c);
    let c = c.strip_suffix(':').unwrap_or(c);
    !c.is_empty() && c.bytes().all(|b| b == b'-')
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

/// Parses a tracker timestamp as a human reads one: RFC 3339 (offsets allowed), or a time
/// without a zone (UTC): `YYYY-MM-DD HH:MM:SS` or `YYYY-MM-DDTHH:MM:SS` (what Python's
/// `isoformat()` writes), optionally with fractional seconds and a ` UTC` or ` GMT` suffix; an
/// offset without its colon (`+0200`, Python's `%z`); what `date` writes (`Wed Feb 25 10:00:00
/// UTC 2026`, and `date -R`'s RFC 2822); the seconds may be left out
/// (`2026-02-25T10:04Z`, `2026-02-25 10:04`). A note after the time, past a space, is read
/// past (`2026-02-25T10:04:00Z (after the screenshots)`), unless it starts with a zone the
/// time is not read in (`CET`, `+02`): then the time is not read. Surrounding whitespace,
/// backticks and bold are ignored.
pub fn parse_timestamp(s: &str) -> Option<DateTime<Utc>> {
    parse_timestamp_span(s).map(|(t, _)| t)
}

/// [`parse_timestamp`], with how far the time is known: a time written to the minute stands
/// for that whole minute (60 s): a human reads `10:05` then `10:05` as the same minute, not as
/// two times out of order. A time with its seconds, the contract's form, is exact (a span of
/// 0): equal such times are not in order (`P3B_START` equal to `P3A_START` is not "strictly
/// increasing").
pub fn parse_timestamp_span(s: &str) -> Option<(DateTime<Utc>, chrono::TimeDelta)> {
    let s = strip_decoration(s);
    // The time is at the start of the cell; no timestamp is longer than this (and a huge cell
    // costs no more than its start).
    let head = match s.char_indices().nth(48) {
        Some((i, _)) => &s[..i],
        None => s,
    };
    // The longest start of the cell, in words, that is a time: the whole of it first.
    let ends: Vec<usize> = head
        .char_indices()
        .filter(|(_, c)| c.is_whitespace())
        .map(|(i, _)| i)
        .chain((head.len() == s.len()).then_some(head.len()))
        .collect();
    ends.iter().rev().find_map(|&end| {
        let (time, note) = (head[..end].trim_end(), head[end..].trim_start());
        // A zone the time does not carry is no note: `10:00:00 CET`, or an offset in a form
        // not read, leaves the time unread rather than read in the wrong zone.
        let zone = note.split_whitespace().next().is_some_and(names_a_zone);
        if zone {
            return None;
        }
        one_timestamp(time)
    })
}

/// The zone abbreviations in common use (and the 12-hour clock's `AM`/`PM`, which change the
/// time as much): after a time, none of them is a note.
const ZONE_WORDS: &[&str] = &[
    "AM", "PM", "CET", "CEST", "EET", "EEST", "WET", "WEST", "BST", "IST", "MSK", "EST", "EDT",
    "CST", "CDT", "MST", "MDT", "PST", "PDT", "AKST", "AKDT", "HST", "JST", "KST", "SGT", "HKT",
    "AEST", "AEDT", "ACST", "ACDT", "AWST", "NZST", "NZDT",
];

/// Whether a word after a time names a zone ([`ZONE_WORDS`], any case) or an offset (a sign
/// and a digit: `+0200`, `-05:00`, `+02`).
fn names_a_zone(word: &str) -> bool {
    let b = word.as_bytes();
    let abbreviation = ZONE_WORDS.iter().any(|z| z.eq_ignore_ascii_case(word));
    let offset = matches!(b.first(), Some(b'+' | b'-')) && b.get(1).is_some_and(u8::is_ascii_digit);
    abbreviation || offset
}

/// [`parse_timestamp`] of a cell that is the time and nothing else.
fn one_timestamp(s: &str) -> Option<(DateTime<Utc>, chrono::TimeDelta)> {
    let minute = chrono::TimeDelta::seconds(60);
    if let Ok(t) = DateTime::parse_from_rfc3339(s) {
        return Some((t.with_timezone(&Utc), chrono::TimeDelta::zero()));
    }
    // RFC 3339 without its seconds: `2026-02-25T10:04Z`, `2026-02-25T10:04+02:00`.
    for zoned in ["%Y-%m-%dT%H:%M%#z", "%Y-%m-%d %H:%M%#z"] {
        if let Ok(t) = DateTime::parse_from_str(s, zoned) {
            return Some((t.with_timezone(&Utc), minute));
        }
    }
    // An offset without its colon (`+0000`, what Python's `%z` writes), attached or after a
    // space.
    for zoned in [
        "%Y-%m-%dT%H:%M:%S%.f%#z",
        "%Y-%m-%d %H:%M:%S%.f%#z",
        "%Y-%m-%dT%H:%M:%S%.f %#z",
        "%Y-%m-%d %H:%M:%S%.f %#z",
    ] {
        if let Ok(t) = DateTime::parse_from_str(s, zoned) {
            return Some((t.with_timezone(&Utc), chrono::TimeDelta::zero()));
        }
    }
    // What `date -R` and mail write (RFC 2822): `Wed, 25 Feb 2026 10:00:00 +0000`.
    if let Ok(t) = DateTime::parse_from_rfc2822(s) {
        return Some((t.with_timezone(&Utc), chrono::TimeDelta::zero()));
    }
    // What `date` writes in the C locale, in UTC (`Wed Feb 25 10:00:00 UTC 2026`: `date -u`,
    // or `TZ` unset on a server), and C's `asctime` and Python's `ctime()` without a zone
    // (`Wed Feb 25 10:00:00 2026`). The weekday must be the date's. In another zone
    // (`… CET 2026`) it is not read (the zone check above).
    // glibc's `en_US` and `en_GB` forms of the same (`Wed Feb 25 10:00:00 AM UTC 2026`,
    // `Wed 25 Feb 10:00:00 UTC 2026`).
    for f in [
        "%a %b %e %H:%M:%S UTC %Y",
        "%a %b %e %H:%M:%S GMT %Y",
        "%a %b %e %H:%M:%S %Y",
        "%a %b %e %I:%M:%S %p UTC %Y",
        "%a %e %b %H:%M:%S UTC %Y",
    ] {
        if let Ok(t) = NaiveDateTime::parse_from_str(s, f) {
            return Some((t.and_utc(), chrono::TimeDelta::zero()));
        }
    }
    let naive = s
        .strip_suffix(" UTC")
        .or_else(|| s.strip_suffix(" GMT"))
        .or_else(|| s.strip_suffix('Z'))
        .unwrap_or(s)
        .trim_end();
    for f in ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f"] {
        if let Ok(t) = NaiveDateTime::parse_from_str(naive, f) {
            return Some((t.and_utc(), chrono::TimeDelta::zero()));
        }
    }
    ["%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M"]
        .iter()
        .find_map(|f| NaiveDateTime::parse_from_str(naive, f).ok())
        .map(|t| (t.and_utc(), minute))
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

/// Splits a trimmed table line into trimmed cells as GFM does: the one rule for where a
/// tracker row's cells are, for reading it ([`markdown::split_spans`]) and for editing it
/// (`replay`). Splits on every `|` but an escaped `\|` (inside a code span too, as GFM does);
/// the empty piece before a leading and after a trailing pipe is dropped. `raw`: each cell as
/// written (`\|` kept), to write the row back; else with `\|` read as `|`. Linear.
pub fn split_row(line: &str, raw: bool) -> Vec<String> {
    markdown::split_spans(line)
        .into_iter()
        .filter_map(|r| line.get(r))
        .map(|c| {
            let c = trim_cell(c);
            if raw {
                c.to_string()
            } else {
                c.replace("\\|", "|")
            }
        })
        .collect()
}

/// A cell without surrounding whitespace or stray byte-order marks (pasted text carries them).
fn trim_cell(cell: &str) -> &str {
    cell.trim_matches(|c: char| c.is_whitespace() || c == '\u{feff}')
}

#[cfg(test)]
mod tests;
