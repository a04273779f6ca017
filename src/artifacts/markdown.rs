//! Markdown as a document: what a reader of the rendered page (or of the file in an editor
//! that renders it) sees, for every check that reads a document's *structure*: the tracker's
//! sections and tables, the headings of auditor reports, the weaver's verdict line.
//!
//! The text is parsed as CommonMark with GFM tables and strikethrough by pulldown-cmark, with
//! the source offset of every event, so each heading, table, cell and line keeps its
//! line:column. What is read:
//!
//! - A table is a GFM table (a header row over a delimiter row). Rows inside a fenced or
//!   indented code block or an HTML block (`<pre>`, `<script>`, `<style>`, a comment) are not
//!   a table: they are kept apart ([`Document::hidden`]) so that evidence can name them. A
//!   paragraph whose every line is a pipe-led row (a table written without its delimiter row)
//!   is read as a table without a header: what it says is on the page. Cells beyond the
//!   header's count, which GFM drops from view, are read from the row as written.
//! - A cell's, a heading's or a line's text is its rendered text: inline markup (`**FAIL**`,
//!   `<b>FAIL</b>`, `` `FAIL` ``), entities (`&#70;AIL`) and backslash escapes read as their
//!   text; struck text (`~~PASS~~`, `<del>`, `<s>`, `<strike>`) and images are not part of it
//!   (struck text is kept beside it for evidence); HTML comments are kept apart. The text is
//!   then read as seen ([`crate::artifacts::normalize::seen::value`]): display order, NFKC,
//!   look-alike and letter-like forms, zero-width characters dropped.
//!
//! Reports run to megabytes and only their headings are structure ([`headings`]): they are
//! parsed as a skeleton in which each line that can only be paragraph text keeps its first
//! letter (and a run of such lines only its first line), which leaves the block structure (and so every heading) as it is at a fraction of
//! the parsing cost. This module must never panic on any input and must not judge anything.

use std::ops::Range;

use pulldown_cmark::{Event, Options, Parser, Tag, TagEnd};

use super::normalize::seen;

/// Where something is written: 1-based line and column (in characters).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
}

/// A heading (ATX or setext) outside code and HTML blocks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Heading {
    pub level: u8,
    /// The text as seen, trimmed.
    pub text: String,
    pub at: Pos,
}

/// One cell of a table.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Cell {
    /// The rendered text, read as seen and trimmed.
    pub text: String,
    /// The cell as written in the file, trimmed.
    pub written: String,
    /// Struck text in the cell (`~~PASS~~`), not part of [`Cell::text`].
    pub struck: Vec<String>,
    /// The text of HTML comments in the cell, joined by spaces.
    pub comments: String,
    pub at: Pos,
}

/// A table row.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Row {
    pub cells: Vec<Cell>,
    pub at: Pos,
}

/// A table: a GFM table, or a paragraph of pipe-led rows (then without a header).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Table {
    /// Index into [`Document::headings`] of the heading above; `None` before the first.
    pub section: Option<usize>,
    /// The header row's cells; empty for a table without one.
    pub header: Vec<Cell>,
    pub rows: Vec<Row>,
    pub at: Pos,
}

/// A line of text inside a code or HTML block: not structure, but named in evidence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hidden {
    /// The line as written, trimmed.
    pub text: String,
    pub at: Pos,
    /// `"a code block"`, `"an HTML block"` or `"an HTML comment"`.
    pub inside: &'static str,
}

/// A line of visible text (a paragraph's line, a heading, a list item, a table row with its
/// cells joined by ` | `), read as seen; or a line of a code or HTML block.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line {
    pub text: String,
    pub at: Pos,
    /// `None` for text on the page; else the block it is shown in (see [`Hidden::inside`]).
    pub inside: Option<&'static str>,
}

/// A parsed document.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Document {
    pub headings: Vec<Heading>,
    pub tables: Vec<Table>,
    /// Lines inside code blocks, HTML blocks and HTML comments.
    pub hidden: Vec<Hidden>,
    /// Every line of text, in document order.
    pub lines: Vec<Line>,
}

fn options() -> Options {
    let mut o = Options::empty();
    o.insert(Options::ENABLE_TABLES);
    o.insert(Options::ENABLE_STRIKETHROUGH);
    o.insert(Options::ENABLE_TASKLISTS);
    o
}

/// Line starts of a text, to turn offsets into positions.
struct Lines<'a> {
    text: &'a str,
    starts: Vec<usize>,
    /// The last position asked for (offset, column): offsets come mostly in order, so a
    /// column is counted on from there rather than from its line's start (a table written on
    /// one 600 KB line has 300,000 cells).
    last: std::cell::Cell<(usize, usize)>,
}

impl<'a> Lines<'a> {
    fn new(text: &'a str) -> Lines<'a> {
        let mut starts = vec![0];
        starts.extend(memchr::memchr_iter(b'\n', text.as_bytes()).map(|i| i + 1));
        Lines {
            text,
            starts,
            last: std::cell::Cell::new((0, 1)),
        }
    }

    fn pos(&self, offset: usize) -> Pos {
        let offset = offset.min(self.text.len());
        let line = self.starts.partition_point(|&s| s <= offset).max(1);
        let start = self.starts[line - 1];
        let (last, last_column) = self.last.get();
        let (from, base) = if (start..=offset).contains(&last) {
            (last, last_column)
        } else {
            (start, 1)
        };
        let column = base
            + self
                .text
                .get(from..offset)
                .map_or(offset - from, |s| s.chars().count());
        self.last.set((offset, column));
        Pos { line, column }
    }
}

/// Inline content being gathered: a heading's, a paragraph's, a cell's.
#[derive(Debug, Default)]
struct Sink {
    text: String,
    struck: Vec<String>,
    comments: Vec<String>,
    /// Source offset where the content starts.
    start: usize,
    /// (offset in `text`, source offset) where each line of `text` starts.
    breaks: Vec<(usize, usize)>,
    /// A line break was just seen: the next content's offset starts a line.
    broke: bool,
}

impl Sink {
    fn at(start: usize) -> Sink {
        Sink {
            start,
            broke: true,
            ..Sink::default()
        }
    }

    fn content(&mut self, s: &str, source: usize, struck: bool) {
        if self.broke {
            self.breaks.push((self.text.len(), source));
            self.broke = false;
        }
        if struck {
            self.struck.push(s.to_string());
        } else {
            self.text.push_str(s);
        }
    }

    fn line_break(&mut self) {
        self.text.push('\n');
        self.broke = true;
    }
}

/// The walk over pulldown-cmark's events.
struct Walk<'a> {
    lines: Lines<'a>,
    doc: Document,
    sink: Option<Sink>,
    /// Strikethrough depth of markdown `~~` (balanced by the parser's events).
    struck: usize,
    /// Strikethrough depth of inline HTML `<del>`, `<s>`, `<strike>` in the block being read.
    /// An unclosed tag strikes to the end of its block, never into the next one: a `<s>` left
    /// open in one paragraph or table cell must not hide every later `FAIL` in the document.
    html_struck: usize,
    /// Image depth: alt text is not text on the page.
    image: usize,
    /// Inside a code block.
    code: bool,
    /// Inside an HTML block: what it is, for [`Hidden::inside`], and whether its text shows.
    html: (&'static str, bool),
    table: Option<Table>,
    row: Option<Row>,
    /// Source range of the row being read.
    row_range: Range<usize>,
    in_head: bool,
    /// Only headings are wanted (a report's skeleton): no lines, no hidden text, no cells.
    headings_only: bool,
    /// Whether [`Document::lines`] is wanted.
    want_lines: bool,
}

/// Parses a document (see the module's notes).
pub fn parse(text: &str) -> Document {
    parse_as(text, true)
}

/// Parses a document's headings, tables and hidden lines, without [`Document::lines`] (a
/// tracker: its text is read through its tables).
pub fn parse_tables(text: &str) -> Document {
    parse_as(text, false)
}

fn parse_as(text: &str, lines: bool) -> Document {
    let mut w = Walk::new(text, false);
    w.want_lines = lines;
    for (event, range) in Parser::new_ext(text, options()).into_offset_iter() {
        w.event(event, range);
    }
    w.doc
}

impl<'a> Walk<'a> {
    fn new(text: &'a str, headings_only: bool) -> Walk<'a> {
        Walk {
            lines: Lines::new(text),
            doc: Document::default(),
            sink: None,
            struck: 0,
            html_struck: 0,
            image: 0,
            code: false,
            html: ("an HTML block", true),
            table: None,
            row: None,
            row_range: 0..0,
            in_head: false,
            headings_only,
            want_lines: !headings_only,
        }
    }
}

impl Walk<'_> {
    fn event(&mut self, event: Event<'_>, range: Range<usize>) {
        match event {
            Event::Start(tag) => self.start(tag, range),
            Event::End(tag) => self.end(tag, range),
            Event::Text(t) if self.code => self.block_lines(&t, range.start, "a code block"),
            Event::Text(t) | Event::Code(t) => self.content(&t, range.start),
            Event::InlineMath(t) | Event::DisplayMath(t) => self.content(&t, range.start),
            Event::Html(h) => {
                let (inside, _) = self.html;
                self.block_lines(&h, range.start, inside);
            }
            Event::InlineHtml(h) => self.inline_html(&h, range.start),
            Event::SoftBreak | Event::HardBreak => {
                if let Some(s) = &mut self.sink {
                    s.line_break();
                }
            }
            Event::TaskListMarker(done) => {
                self.content(if done { "[x] " } else { "[ ] " }, range.start)
            }
            Event::FootnoteReference(_) | Event::Rule => {}
        }
    }

    fn start(&mut self, tag: Tag<'_>, range: Range<usize>) {
        if !matches!(
            tag,
            Tag::Emphasis
                | Tag::Strong
                | Tag::Strikethrough
                | Tag::Superscript
                | Tag::Subscript
                | Tag::Link { .. }
                | Tag::Image { .. }
        ) {
            // A new block: inline HTML left open in the one before does not reach it.
            self.html_struck = 0;
        }
        match tag {
            Tag::Heading { .. } | Tag::Paragraph | Tag::TableCell => {
                self.flush_item();
                self.sink = Some(Sink::at(range.start));
            }
            Tag::Item => {
                self.flush_item();
                self.sink = Some(Sink::at(range.start));
            }
            Tag::List(_) | Tag::BlockQuote(_) => self.flush_item(),
            Tag::CodeBlock(_) => {
                self.flush_item();
                self.code = true;
            }
            Tag::Table(_) => {
                self.flush_item();
                self.table = Some(Table {
                    section: self.doc.headings.len().checked_sub(1),
                    at: self.lines.pos(range.start),
                    ..Table::default()
                });
            }
            Tag::TableHead => {
                self.in_head = true;
                self.row = Some(Row {
                    at: self.lines.pos(range.start),
                    ..Row::default()
                });
                self.row_range = range;
            }
            Tag::TableRow => {
                self.row = Some(Row {
                    at: self.lines.pos(range.start),
                    ..Row::default()
                });
                self.row_range = range;
            }
            Tag::HtmlBlock => {
                self.flush_item();
                // A comment, a script, a style or a template shows nothing; other HTML shows
                // its text (`<pre>`, `<div>`).
                let head = self.lines.text.get(range).unwrap_or_default().trim_start();
                let name = tag_name(head).map(|(_, n)| n).unwrap_or_default();
                self.html = if head.starts_with("<!--") {
                    ("an HTML comment", false)
                } else {
                    let hidden = matches!(name.as_str(), "script" | "style" | "template");
                    ("an HTML block", !hidden)
                };
            }
            Tag::Strikethrough => self.struck += 1,
            Tag::Image { .. } => self.image += 1,
            _ => {}
        }
    }

    fn end(&mut self, tag: TagEnd, range: Range<usize>) {
        match tag {
            TagEnd::Heading(level) => {
                if let Some(s) = self.sink.take() {
                    let at = self.lines.pos(s.start);
                    let text = collapse_whitespace(&seen::value(&s.text));
                    if self.want_lines {
                        self.doc.lines.push(Line {
                            text: text.clone(),
                            at,
                            inside: None,
                        });
                    }
                    self.doc.headings.push(Heading {
                        level: level as u8,
                        text,
                        at,
                    });
                }
            }
            TagEnd::Paragraph | TagEnd::Item => {
                if let Some(s) = self.sink.take() {
                    let source = &self.lines.text[range.clone()];
                    if tag == TagEnd::Paragraph && self.table.is_none() && !self.headings_only {
                        self.loose_tables(source, range.start);
                    }
                    self.push_lines(&s);
                }
            }
            TagEnd::TableCell => {
                if let Some(s) = self.sink.take() {
                    let cell = self.cell(&s, range);
                    if let Some(row) = &mut self.row {
                        row.cells.push(cell);
                    }
                }
            }
            TagEnd::TableHead | TagEnd::TableRow => {
                let Some(mut row) = self.row.take() else {
                    return;
                };
                self.excess_cells(&mut row);
                if self.want_lines {
                    let joined: Vec<&str> = row.cells.iter().map(|c| c.text.as_str()).collect();
                    self.doc.lines.push(Line {
                        text: joined.join(" | "),
                        at: row.at,
                        inside: None,
                    });
                }
                if let Some(t) = &mut self.table {
                    if self.in_head {
                        t.header = row.cells;
                    } else {
                        t.rows.push(row);
                    }
                }
                self.in_head = false;
            }
            TagEnd::Table => {
                if let Some(t) = self.table.take() {
                    self.doc.tables.push(t);
                }
            }
            TagEnd::CodeBlock => self.code = false,
            TagEnd::Strikethrough => self.struck = self.struck.saturating_sub(1),
            TagEnd::Image => self.image = self.image.saturating_sub(1),
            _ => {}
        }
    }

    /// A list item's own text, before a nested block starts.
    fn flush_item(&mut self) {
        if let Some(s) = self.sink.take() {
            self.push_lines(&s);
        }
    }

    fn push_lines(&mut self, s: &Sink) {
        if !self.want_lines {
            return;
        }
        for (i, &(from, source)) in s.breaks.iter().enumerate() {
            let to = s.breaks.get(i + 1).map_or(s.text.len(), |b| b.0);
            let Some(text) = s.text.get(from..to) else {
                continue;
            };
            let text = seen::value(text.trim()).trim().to_string();
            if !text.is_empty() {
                self.doc.lines.push(Line {
                    text,
                    at: self.lines.pos(source),
                    inside: None,
                });
            }
        }
    }

    fn content(&mut self, s: &str, source: usize) {
        let struck = self.struck > 0 || self.html_struck > 0 || self.image > 0;
        if let Some(sink) = &mut self.sink {
            sink.content(s, source, struck);
        }
    }

    fn inline_html(&mut self, h: &str, source: usize) {
        if let Some(comment) = h.trim().strip_prefix("<!--") {
            let comment = comment.strip_suffix("-->").unwrap_or(comment).trim();
            if let Some(sink) = &mut self.sink {
                sink.comments.push(comment.to_string());
            }
            self.doc.hidden.push(Hidden {
                text: h.trim().to_string(),
                at: self.lines.pos(source),
                inside: "an HTML comment",
            });
            return;
        }
        match tag_name(h) {
            Some((false, name)) if is_strike(&name) => self.html_struck += 1,
            Some((true, name)) if is_strike(&name) => {
                self.html_struck = self.html_struck.saturating_sub(1)
            }
            Some((_, name)) if name == "br" => self.content(" ", source),
            _ => {}
        }
    }

    /// The lines of a code or HTML block's text starting at `source`.
    fn block_lines(&mut self, text: &str, source: usize, inside: &'static str) {
        if self.headings_only {
            return;
        }
        let mut at = source;
        for line in text.split_inclusive('\n') {
            let trimmed = line.trim();
            if !trimmed.is_empty() {
                let pos = self.lines.pos(at + (line.len() - line.trim_start().len()));
                self.doc.hidden.push(Hidden {
                    text: trimmed.to_string(),
                    at: pos,
                    inside,
                });
                // What an HTML block shows on the page is its text without tags; a comment, a
                // script or a style shows nothing, a code block its text.
                let shown = match inside {
                    _ if !self.want_lines => String::new(),
                    "a code block" => seen::value(trimmed).into_owned(),
                    "an HTML block" if self.html.1 => {
                        seen::value(&strip_tags(trimmed)).into_owned()
                    }
                    _ => String::new(),
                };
                if self.want_lines && !shown.trim().is_empty() {
                    self.doc.lines.push(Line {
                        text: shown.trim().to_string(),
                        at: pos,
                        inside: Some(inside),
                    });
                }
            }
            at += line.len();
        }
    }

    fn cell(&self, s: &Sink, range: Range<usize>) -> Cell {
        let written = self
            .lines
            .text
            .get(range.clone())
            .unwrap_or_default()
            .trim();
        let lead = self
            .lines
            .text
            .get(range.clone())
            .map_or(0, |r| r.len() - r.trim_start().len());
        Cell {
            text: collapse_whitespace(&seen::value(&s.text)),
            written: written.to_string(),
            struck: s
                .struck
                .iter()
                .map(|t| seen::value(t).into_owned())
                .collect(),
            comments: s.comments.join(" "),
            at: self.lines.pos(range.start + lead),
        }
    }

    /// Cells a row has beyond its header's count: GFM drops them from the rendered table,
    /// but they are written in the row (a time after a field's value), so they are read from
    /// the row as written.
    fn excess_cells(&self, row: &mut Row) {
        if self.headings_only {
            return;
        }
        let Some(source) = self.lines.text.get(self.row_range.clone()) else {
            return;
        };
        let line = source.lines().next().unwrap_or_default();
        let lead = line.len() - line.trim_start().len();
        let line = line.trim();
        let spans = split_spans(line);
        if spans.len() <= row.cells.len() {
            return;
        }
        let base = self.row_range.start + lead;
        for r in spans.into_iter().skip(row.cells.len()) {
            let src = &line[r.clone()];
            row.cells
                .push(inline_cell(src, base + r.start, &self.lines));
        }
    }

    /// The runs of pipe-led rows in a paragraph, each read as a table without a header.
    fn loose_tables(&mut self, source: &str, start: usize) {
        let mut table: Option<Table> = None;
        let mut at = start;
        for line in source.split_inclusive('\n') {
            let lead = line.len() - line.trim_start().len();
            let trimmed = line.trim();
            let base = at + lead;
            at += line.len();
            let spans = split_spans(trimmed);
            if !is_pipe_row(trimmed, spans.len()) {
                self.doc.tables.extend(table.take());
                continue;
            }
            let cells: Vec<Cell> = spans
                .into_iter()
                .map(|r| inline_cell(&trimmed[r.clone()], base + r.start, &self.lines))
                .collect();
            let t = table.get_or_insert_with(|| Table {
                section: self.doc.headings.len().checked_sub(1),
                at: self.lines.pos(base),
                ..Table::default()
            });
            if !is_delimiter(&cells) {
                t.rows.push(Row {
                    cells,
                    at: self.lines.pos(base),
                });
            }
        }
        self.doc.tables.extend(table);
    }
}

/// One cell's source, rendered as inline markdown on its own.
fn inline_cell(src: &str, source: usize, lines: &Lines<'_>) -> Cell {
    let lead = src.len() - src.trim_start().len();
    // Most cells hold no markup: read as they are, without a parser.
    let plain = !src.bytes().any(|b| {
        matches!(
            b,
            b'\\'
                | b'&'
                | b'<'
                | b'>'
                | b'*'
                | b'_'
                | b'`'
                | b'~'
                | b'['
                | b'!'
                | b'#'
                | b'='
                | b'+'
                | b'-'
                | b'.'
                | b')'
                | b':'
        )
    });
    if plain {
        return Cell {
            text: collapse_whitespace(&seen::value(src)),
            written: src.trim().to_string(),
            at: lines.pos(source + lead),
            ..Cell::default()
        };
    }
    let mut w = Walk::new(src, false);
    w.sink = Some(Sink::at(0));
    // `\|` in a cell is a pipe. A no-break space first keeps the cell one paragraph of
    // inline content (`- `, `1.` or `#` at its start start no block), and is taken off again.
    let inline = format!("\u{a0}{}", src.trim().replace("\\|", "|"));
    for (event, range) in Parser::new_ext(&inline, options()).into_offset_iter() {
        match event {
            Event::Start(Tag::Paragraph) | Event::End(TagEnd::Paragraph) => {}
            e => w.event(e, range),
        }
    }
    let mut s = w.sink.take().unwrap_or_default();
    if s.text.starts_with('\u{a0}') {
        s.text.drain(..'\u{a0}'.len_utf8());
    }
    Cell {
        text: collapse_whitespace(&seen::value(&s.text)),
        written: src.trim().to_string(),
        struck: s
            .struck
            .iter()
            .map(|t| seen::value(t).into_owned())
            .collect(),
        comments: s.comments.join(" "),
        at: lines.pos(source + lead),
    }
}

/// Whether a trimmed line reads as a table row written without its table: it starts with
/// `|` and has two cells, or is one cell between pipes (`| LONELY |`).
fn is_pipe_row(line: &str, cells: usize) -> bool {
    line.starts_with('|') && (cells >= 2 || (line.len() > 1 && line.ends_with('|')))
}

/// Whether a row is a delimiter row (`|---|:--:|`).
fn is_delimiter(cells: &[Cell]) -> bool {
    !cells.is_empty()
        && cells.iter().all(|c| {
            let t = c.written.trim();
            let t = t.strip_prefix(':').unwrap_or(t);
            let t = t.strip_suffix(':').unwrap_or(t);
            !t.is_empty() && t.bytes().all(|b| b == b'-')
        })
}

/// The byte ranges of a trimmed row's cells, as GFM splits a row: on every `|` that is not
/// escaped (`\|`), inside code spans too; the empty piece before a leading and after a
/// trailing pipe dropped.
pub fn split_spans(line: &str) -> Vec<Range<usize>> {
    let bytes = line.as_bytes();
    let mut out = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'\\' => i += 2,
            b'|' => {
                out.push(start..i);
                start = i + 1;
                i += 1;
            }
            _ => i += 1,
        }
    }
    out.push(start.min(line.len())..line.len());
    if line.starts_with('|') && !out.is_empty() {
        out.remove(0);
    }
    if line.ends_with('|') && !line.ends_with("\\|") {
        out.pop();
    }
    out
}

/// `<tag …>` or `</tag>`: whether it closes, and the tag's name in lowercase.
fn tag_name(h: &str) -> Option<(bool, String)> {
    let rest = h.trim().strip_prefix('<')?;
    let (closing, rest) = match rest.trim_start().strip_prefix('/') {
        Some(r) => (true, r.trim_start()),
        None => (false, rest),
    };
    let name: String = rest
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric())
        .collect();
    (!name.is_empty()).then(|| (closing, name.to_ascii_lowercase()))
}

fn is_strike(name: &str) -> bool {
    matches!(name, "del" | "s" | "strike")
}

/// The text an HTML block line shows: without tags and comments.
fn strip_tags(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(open) = rest.find('<') {
        out.push_str(&rest[..open]);
        let after = &rest[open..];
        let close = if after.starts_with("<!--") {
            after.find("-->").map(|i| i + 3)
        } else {
            after.find('>').map(|i| i + 1)
        };
        match close {
            Some(c) => rest = &after[c..],
            None => {
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whitespace runs (line breaks included) as one space, trimmed.
fn collapse_whitespace(s: &str) -> String {
    let t = s.trim();
    let single = !t.contains(|c: char| c.is_whitespace() && c != ' ') && !t.contains("  ");
    if single {
        return t.to_string();
    }
    t.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// The headings of a document's bytes (a report), as [`parse`] finds them, through a
/// skeleton of the text (see the module's notes).
pub fn headings(bytes: &[u8]) -> Vec<Heading> {
    let text = seen::document(bytes);
    let skeleton = skeleton(&text);
    let mut w = Walk::new(&skeleton.text, true);
    for (event, range) in Parser::new_ext(&skeleton.text, options()).into_offset_iter() {
        w.event(event, range);
    }
    let mut out = std::mem::take(&mut w.doc.headings);
    for h in &mut out {
        // A heading starts on a line the skeleton keeps whole, so its leading blanks are the
        // text's; the line number is the text's through the skeleton's map.
        h.at.column = text_column(&w.lines, h.at);
        h.at.line = skeleton.line(h.at.line);
    }
    out
}

/// The column of the first non-blank character on line `p.line` of the text.
fn text_column(lines: &Lines<'_>, p: Pos) -> usize {
    let start = lines.starts.get(p.line - 1).copied().unwrap_or(0);
    let end = lines
        .starts
        .get(p.line)
        .map_or(lines.text.len(), |e| e.saturating_sub(1));
    let line = lines.text.get(start..end).unwrap_or_default();
    line.chars().take_while(|c| *c == ' ' || *c == '\t').count() + 1
}

/// A report's skeleton ([`skeleton`]) and where each of its lines is in the text.
struct Skeleton {
    text: String,
    /// The text's 1-based line number of each line of the skeleton, in order.
    lines: Vec<usize>,
}

impl Skeleton {
    /// The text's line number of the skeleton's 1-based line `line`.
    fn line(&self, line: usize) -> usize {
        line.checked_sub(1)
            .and_then(|i| self.lines.get(i))
            .copied()
            .unwrap_or(line)
    }
}

/// The text with each line that can only be paragraph text cut to its first letter: a line
/// that starts with an ASCII letter in its first column starts no block, and holds no `|`
/// (a table row) and no `>` (the end of an HTML block); what else it says is inline content.
/// Kept whole: every other line, the lines of a paragraph that a setext underline below makes
/// a heading, and a paragraph that starts with `[` (a link reference definition, whose title
/// may run over lines). Of a run of such lines only the first is kept: each of the others
/// continues whatever block the line above it is in (a paragraph, lazily inside a quote or a
/// list item too, a fenced code block, an HTML block, a table's rows) and closes none, so the
/// block structure, and every heading, is the same without them, and a 2 MB report of prose
/// parses as a few hundred lines. [`Skeleton::lines`] maps each line back to the text's.
fn skeleton(text: &str) -> Skeleton {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut keep = vec![false; lines.len()];
    // Lines a walk back from an underline has passed (each is passed once).
    let mut walked = vec![false; lines.len()];
    let mut bracket = false;
    for (i, line) in lines.iter().enumerate() {
        let t = line.trim_start();
        if t.is_empty() {
            bracket = false;
            keep[i] = true;
            continue;
        }
        let first = line.as_bytes()[0];
        let prose =
            first.is_ascii_alphabetic() && memchr::memchr2(b'|', b'>', line.as_bytes()).is_none();
        if !prose {
            keep[i] = true;
            let body = t.trim_start_matches(['>', ' ', '-', '*', '+']);
            if body.starts_with('[') {
                bracket = true;
            }
            if is_underline(line) {
                // The paragraph above may be a setext heading: keep its text.
                let mut j = i;
                while j > 0 && !lines[j - 1].trim().is_empty() && !walked[j - 1] {
                    keep[j - 1] = true;
                    walked[j - 1] = true;
                    j -= 1;
                }
            }
        } else if bracket {
            keep[i] = true;
        }
    }
    let mut out = Skeleton {
        text: String::with_capacity(text.len() / 64),
        lines: Vec::new(),
    };
    for (i, line) in lines.iter().enumerate() {
        if keep[i] {
            out.text.push_str(line);
        } else if i > 0 && !keep[i - 1] {
            // Cut like the line above: it adds nothing to the structure.
            continue;
        } else {
            out.text.push_str(&line[..1]);
        }
        out.text.push('\n');
        out.lines.push(i + 1);
    }
    // The text's last line has no line end.
    out.text.pop();
    out
}

/// Whether a line may be a setext underline, inside quotes or list items too: only `=` or
/// `-` after container markers. Over-approximated: keeping a paragraph whole is never wrong.
fn is_underline(line: &str) -> bool {
    line.bytes().any(|b| b == b'=' || b == b'-')
        && line.bytes().all(|b| {
            matches!(
                b,
                b'=' | b'-' | b'>' | b' ' | b'\t' | b'*' | b'+' | b'.' | b')' | b'0'..=b'9'
            )
        })
}

#[cfg(test)]
mod tests;
