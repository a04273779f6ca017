//! Markdown block structure as CommonMark/GFM reads it, for every parser that looks at a
//! document's *structure*: the tracker's sections and tables, the headings of auditor reports,
//! the weaver's verdict line.
//!
//! This module owns splitting text into lines (LF or CRLF; stray CRs and byte-order marks at a
//! line's edges are not content, so a file concatenated from several BOM-prefixed pieces reads
//! like one), recognising fenced code blocks (three or more backticks or tildes, with or without
//! an info string, closed by a fence of the same character at least as long) and HTML comments
//! (`<!-- … -->`, inline or over several lines), and headings (ATX `## Title ##` with up to three
//! spaces of indent, and setext `Title` over `===` or `---`). Text inside a fence or a comment is
//! not structure: a heading or a table row there is an example, not data.
//!
//! It must stay linear in the size of the text (reports run to megabytes), must never panic, and
//! must not be used by the forbid/require text rules: a term hidden in a comment or a fence is
//! still written in the file, and those rules read every byte.

use std::borrow::Cow;
use std::collections::HashMap;
use std::ops::Range;

use memchr::memmem;

/// One line of a document, classified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Line<'a> {
    /// 1-based line number (lines end at `\n`).
    pub number: usize,
    /// The line as written, without its line ending and without byte-order marks or stray CRs
    /// at its edges.
    pub raw: &'a [u8],
    pub kind: Kind,
}

/// What a line is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Kind {
    /// Content. `comments` are the byte ranges of `raw` inside HTML comments (usually none).
    Text { comments: Vec<Range<usize>> },
    /// An ATX heading, or the underline of a setext heading (then `line` is the first line of
    /// the paragraph above it, which holds the text).
    Heading {
        level: u8,
        text: String,
        line: usize,
    },
    /// A code fence or a line inside a fenced code block.
    Code,
    /// A line with nothing but HTML comments (and whitespace) on it.
    Comment,
}

impl Line<'_> {
    /// The line without its HTML comments.
    pub fn visible(&self) -> Cow<'_, [u8]> {
        match &self.kind {
            Kind::Text { comments } if !comments.is_empty() => {
                Cow::Owned(without(self.raw, comments))
            }
            Kind::Comment => Cow::Borrowed(&[]),
            _ => Cow::Borrowed(self.raw),
        }
    }

    /// The text inside this line's HTML comments, joined by spaces ("" when there are none).
    pub fn hidden(&self) -> String {
        match &self.kind {
            Kind::Text { comments } => comments
                .iter()
                .filter_map(|r| self.raw.get(r.clone()))
                .map(|b| String::from_utf8_lossy(b).trim().to_string())
                .collect::<Vec<_>>()
                .join(" "),
            Kind::Comment => String::from_utf8_lossy(self.raw).trim().to_string(),
            _ => String::new(),
        }
    }
}

/// The lines of `text`, classified, in order. Lazy: a caller that stops early pays for what it
/// read.
pub fn lines(text: &[u8]) -> Lines<'_> {
    Lines {
        text,
        pos: 0,
        number: 0,
        fence: None,
        comment_end: None,
        next_open: None,
        open_window: OPEN_WINDOW,
        close: CloseCache::default(),
        paragraph: None,
        shortcut: true,
    }
}

/// The iterator behind [`lines`].
#[derive(Debug)]
pub struct Lines<'a> {
    text: &'a [u8],
    /// Where the next line starts.
    pos: usize,
    number: usize,
    fence: Option<Fence>,
    /// While inside an HTML comment: the offset just past its `-->` (the text's length when it
    /// never closes).
    comment_end: Option<usize>,
    /// The last look for `<!--` ([`Lines::next_open`]): `(from, n)`, none starts in `from..n`
    /// (`n` is the first one, the end of the window looked in, or `usize::MAX`: none to the
    /// end), so that the lines before `n` skip the comment scan entirely.
    next_open: Option<(usize, usize)>,
    /// How far ahead one look for `<!--` reaches ([`OPEN_WINDOW`]; small only in tests).
    open_window: usize,
    close: CloseCache,
    /// The paragraph a setext underline would make a heading: first line number and byte range.
    paragraph: Option<(usize, Range<usize>)>,
    /// Whether prose lines skip the tests that cannot match them (off only to test that the
    /// shortcut changes nothing).
    shortcut: bool,
}

/// How many bytes one look for `<!--` covers ([`Lines::next_open`]): a cache-sized piece.
const OPEN_WINDOW: usize = 64 << 10;

/// Remembers the last `-->` search, so that many unclosed `<!--` never rescan the text.
#[derive(Debug, Default)]
struct CloseCache {
    /// Where the last search started, and the first `-->` at or after it (`None`: none).
    last: Option<(usize, Option<usize>)>,
}

impl CloseCache {
    fn find(&mut self, text: &[u8], from: usize) -> Option<usize> {
        if let Some((searched, found)) = self.last {
            if searched <= from {
                match found {
                    None => return None,
                    Some(at) if at >= from => return Some(at),
                    Some(_) => {}
                }
            }
        }
        let found = memmem::find(text.get(from..)?, b"-->").map(|i| from + i);
        self.last = Some((from, found));
        found
    }
}

impl<'a> Iterator for Lines<'a> {
    type Item = Line<'a>;

    fn next(&mut self) -> Option<Line<'a>> {
        if self.pos > self.text.len() || (self.pos == self.text.len() && self.number > 0) {
            return None;
        }
        let start = self.pos;
        // The line's end and whether it holds a `|` (a table row ends a paragraph), in one
        // search for most lines, which hold none.
        let rest = &self.text[start..];
        let (end, pipe) = match memchr::memchr2(b'\n', b'|', rest) {
            Some(i) if rest[i] == b'|' => {
                let after = start + i + 1;
                let end = memchr::memchr(b'\n', &self.text[after..])
                    .map_or(self.text.len(), |j| after + j);
                (end, true)
            }
            Some(i) => (start + i, false),
            None => (self.text.len(), false),
        };
        self.pos = end + 1;
        self.number += 1;
        let (from, to) = trim_edges(self.text, start, end);
        let raw = &self.text[from..to];
        if let Some(kind) = self.prose(from, to) {
            // A table row ends a paragraph; any other prose line starts or continues one. (The
            // `|` found is in `raw`: only byte-order marks and CRs are trimmed off its edges.)
            if pipe {
                self.paragraph = None;
            } else {
                let number = self.number;
                let para = self.paragraph.get_or_insert((number, from..to));
                para.1.end = to;
            }
            return Some(Line {
                number: self.number,
                raw,
                kind,
            });
        }
        let kind = self.classify(from, to);
        match &kind {
            Kind::Text { .. } if self.starts_paragraph_or_continues(raw) => {
                let number = self.number;
                let para = self.paragraph.get_or_insert((number, from..to));
                para.1.end = to;
            }
            Kind::Comment => {}
            _ => self.paragraph = None,
        }
        Some(Line {
            number: self.number,
            raw,
            kind,
        })
    }
}

impl<'a> Lines<'a> {
    /// The line `from..to` as text when it is plain prose: it starts with an ASCII letter,
    /// outside a fence and with no HTML comment on it. No fence, heading, setext underline,
    /// thematic break, list item, quote or indented code starts with a letter, so such a line
    /// needs none of [`Lines::classify`]'s tests (most lines of a report are prose).
    fn prose(&mut self, from: usize, to: usize) -> Option<Kind> {
        let letter = self.text.get(from).is_some_and(u8::is_ascii_alphabetic);
        if !self.shortcut || !letter || self.fence.is_some() || self.comment_end.is_some() {
            return None;
        }
        (self.next_open(from, to) >= to).then_some(Kind::Text {
            comments: Vec::new(),
        })
    }

    /// The offset of the first `<!--` in `at..to` if there is one, else an offset `>= to`
    /// (the first `<!--` after it, the end of the window looked in, or `usize::MAX`),
    /// remembered so that the lines before it need no search.
    ///
    /// One look reaches [`OPEN_WINDOW`] bytes ahead (or to `to`), not to the end of the text:
    /// the lines that follow are then read from the cache, where a look over a whole 2 MB
    /// report had them fetched from memory twice.
    fn next_open(&mut self, at: usize, to: usize) -> usize {
        if let Some((from, n)) = self.next_open {
            if from <= at && n >= to {
                return n;
            }
        }
        // A `<!--` that starts before `end` ends by `end + 3`.
        let end = at.saturating_add(self.open_window).max(to);
        let stop = end.saturating_add(3).min(self.text.len());
        let n = match memmem::find(self.text.get(at..stop).unwrap_or_default(), b"<!--") {
            Some(i) => at + i,
            None if stop == self.text.len() => usize::MAX,
            None => end,
        };
        self.next_open = Some((at, n));
        n
    }

    fn classify(&mut self, from: usize, to: usize) -> Kind {
        let raw = &self.text[from..to];
        if let Some(open) = self.fence {
            if closes_fence(raw, open) {
                self.fence = None;
            }
            return Kind::Code;
        }
        let comments = self.comments(from, to);
        let visible: Cow<'_, [u8]> = if comments.is_empty() {
            Cow::Borrowed(raw)
        } else {
            Cow::Owned(without(raw, &comments))
        };
        if !comments.is_empty() && visible.trim_ascii().is_empty() {
            return Kind::Comment;
        }
        if let Some(open) = opens_fence(&visible) {
            self.fence = Some(open);
            return Kind::Code;
        }
        if let Some((level, text)) = atx_heading(&visible) {
            return Kind::Heading {
                level,
                text: String::from_utf8_lossy(text).into_owned(),
                line: self.number,
            };
        }
        if let Some(level) = setext_underline(&visible) {
            if let Some((line, range)) = self.paragraph.take() {
                return Kind::Heading {
                    level,
                    text: paragraph_text(&self.text[range]),
                    line,
                };
            }
        }
        Kind::Text { comments }
    }

    /// The HTML comments on the line `from..to` (offsets into the text), as ranges of the line.
    fn comments(&mut self, from: usize, to: usize) -> Vec<Range<usize>> {
        let mut ranges = Vec::new();
        let mut at = from;
        if let Some(end) = self.comment_end {
            if end >= to {
                ranges.push(0..to - from);
                if end <= to {
                    self.comment_end = None;
                }
                return ranges;
            }
            self.comment_end = None;
            ranges.push(0..end.saturating_sub(from));
            at = end.max(from);
        }
        // Lines before the next `<!--` have no comment to find.
        if self.next_open(at, to) >= to {
            return ranges;
        }
        let line = &self.text[from..to];
        let spans = code_spans(line);
        let mut i = at - from;
        while let Some(found) = memmem::find(&line[i..], b"<!--") {
            let open = i + found;
            // `<!--` inside a code span is literal text.
            if let Some(&(_, span_end)) = spans.iter().find(|&&(s, e)| s <= open && open < e) {
                i = span_end;
                continue;
            }
            // `<!-->` and `<!--->` are (empty) comments, as in HTML.
            match self.close.find(self.text, from + open + 2) {
                Some(close) if close + 3 <= to => {
                    ranges.push(open..close + 3 - from);
                    i = close + 3 - from;
                }
                Some(close) => {
                    ranges.push(open..line.len());
                    self.comment_end = Some(close + 3);
                    break;
                }
                // Never closed: at the start of a line it is an HTML block that runs to the
                // end (CommonMark); inside a line it is literal text.
                None if line[..open].iter().all(|&b| b == b' ') && open <= 3 => {
                    ranges.push(open..line.len());
                    self.comment_end = Some(self.text.len());
                    break;
                }
                None => i = open + 4,
            }
        }
        self.next_open = None;
        ranges
    }

    /// Whether a content line can be (part of) a paragraph a setext underline turns into a
    /// heading: not blank, not indented code, not a table row, list item, quote, or thematic
    /// break.
    fn starts_paragraph_or_continues(&self, raw: &[u8]) -> bool {
        // Four spaces of indent start indented code, not a paragraph (but can continue one).
        if self.paragraph.is_none() && (raw.starts_with(b"    ") || raw.starts_with(b"\t")) {
            return false;
        }
        let t = raw.trim_ascii();
        if t.is_empty() || memchr::memchr(b'|', t).is_some() || t.starts_with(b">") {
            return false;
        }
        if setext_underline(t).is_some() || is_thematic_break(t) {
            return false;
        }
        let marker = t.iter().take_while(|b| b.is_ascii_digit()).count();
        let list = match t.get(marker) {
            Some(b'.' | b')') if marker > 0 => true,
            Some(b'-' | b'*' | b'+') if marker == 0 => true,
            _ => false,
        };
        let after = t.get(marker + 1);
        !(list && matches!(after, None | Some(b' ' | b'\t')))
    }
}

/// The line `start..end` without leading byte-order marks and trailing CRs (and BOMs).
fn trim_edges(text: &[u8], mut start: usize, mut end: usize) -> (usize, usize) {
    const BOM: &[u8] = b"\xef\xbb\xbf";
    // Most lines start and end with neither: one byte compared each way before any slice
    // comparison (this runs on every line of every report).
    while text.get(start) == Some(&BOM[0]) && text[start..end].starts_with(BOM) {
        start += BOM.len();
    }
    loop {
        match text[start..end].last() {
            Some(b'\r') => end -= 1,
            Some(&b) if b == BOM[2] && text[start..end].ends_with(BOM) => end -= BOM.len(),
            _ => return (start, end),
        }
    }
}

/// `bytes` without the given ranges (sorted, non-overlapping).
fn without(bytes: &[u8], ranges: &[Range<usize>]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    for r in ranges {
        out.extend_from_slice(bytes.get(at..r.start.max(at)).unwrap_or_default());
        at = at.max(r.end);
    }
    out.extend_from_slice(bytes.get(at..).unwrap_or_default());
    out
}

/// The text of a setext heading: its lines trimmed, without comments, joined by spaces.
fn paragraph_text(bytes: &[u8]) -> String {
    let text = String::from_utf8_lossy(bytes);
    let mut out = String::new();
    for line in text.lines() {
        let line = strip_inline_comments(line.trim_matches(['\u{feff}', ' ', '\t', '\r']));
        if !line.trim().is_empty() {
            if !out.is_empty() {
                out.push(' ');
            }
            out.push_str(line.trim());
        }
    }
    out
}

/// `s` without `<!-- … -->` comments closed on it.
fn strip_inline_comments(s: &str) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(open) = rest.find("<!--") {
        match rest[open + 2..].find("-->") {
            Some(close) => {
                out.push_str(&rest[..open]);
                rest = &rest[open + 2 + close + 3..];
            }
            None => break,
        }
    }
    out.push_str(rest);
    out
}

/// An open code fence: its character and length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fence {
    ch: u8,
    len: usize,
}

fn fence_run(line: &[u8]) -> Option<(u8, usize, &[u8])> {
    let trimmed = line.trim_ascii_start();
    let ch = *trimmed.first()?;
    if ch != b'`' && ch != b'~' {
        return None;
    }
    let len = trimmed.iter().take_while(|&&c| c == ch).count();
    (len >= 3).then(|| (ch, len, &trimmed[len..]))
}

/// The fence a line opens, if it is one. Indented fences count (fences inside list items are).
pub fn opens_fence(line: &[u8]) -> Option<Fence> {
    let (ch, len, info) = fence_run(line)?;
    // A backtick fence's info string cannot contain backticks (that is inline code instead).
    if ch == b'`' && info.contains(&b'`') {
        return None;
    }
    Some(Fence { ch, len })
}

/// Whether a line closes `open`: the same character, at least as many, nothing after.
pub fn closes_fence(line: &[u8], open: Fence) -> bool {
    matches!(fence_run(line), Some((ch, len, rest)) if ch == open.ch && len >= open.len && rest.trim_ascii().is_empty())
}

/// An ATX heading: up to three spaces, 1–6 `#`, then a space, a tab or the end of the line.
/// Returns the level and the text without the opening and closing `#` sequences.
pub fn atx_heading(line: &[u8]) -> Option<(u8, &[u8])> {
    let indent = line.iter().take_while(|&&b| b == b' ').count();
    if indent > 3 {
        return None;
    }
    let rest = &line[indent..];
    let hashes = rest.iter().take_while(|&&b| b == b'#').count();
    if hashes == 0 || hashes > 6 {
        return None;
    }
    let rest = &rest[hashes..];
    if !(rest.is_empty() || rest[0] == b' ' || rest[0] == b'\t') {
        return None;
    }
    let mut text = rest.trim_ascii();
    // A closing sequence of `#`s counts only when preceded by whitespace (or is the whole text).
    let closing = text.iter().rev().take_while(|&&b| b == b'#').count();
    let without_closing = &text[..text.len() - closing];
    if without_closing.is_empty() {
        text = b"";
    } else if without_closing.ends_with(b" ") || without_closing.ends_with(b"\t") {
        text = without_closing.trim_ascii_end();
    }
    // `hashes` is at most 6.
    Some((u8::try_from(hashes).unwrap_or(6), text))
}

/// A setext underline: up to three spaces, then only `=` (level 1) or only `-` (level 2),
/// then only whitespace.
fn setext_underline(line: &[u8]) -> Option<u8> {
    let indent = line.iter().take_while(|&&b| b == b' ').count();
    if indent > 3 {
        return None;
    }
    let t = line[indent..].trim_ascii_end();
    let level = match t.first()? {
        b'=' => 1,
        b'-' => 2,
        _ => return None,
    };
    t.iter().all(|&b| b == t[0]).then_some(level)
}

/// `***`, `* * *`, `___` (three or more of one of `*`, `_`, `-`, spaces allowed).
fn is_thematic_break(t: &[u8]) -> bool {
    let Some(&c) = t.first() else { return false };
    matches!(c, b'*' | b'_' | b'-')
        && t.iter().all(|&b| b == c || b == b' ' || b == b'\t')
        && t.iter().filter(|&&b| b == c).count() >= 3
}

/// Code spans `(start, end)` (byte offsets, end exclusive) on one line, CommonMark-style: a run of
/// N backticks is closed by the next run of exactly N backticks; runs without a partner are text.
/// Linear: each run's partner is found through a table of the next run of each length.
pub fn code_spans(bytes: &[u8]) -> Vec<(usize, usize)> {
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'`' {
            let start = i;
            while i < bytes.len() && bytes[i] == b'`' {
                i += 1;
            }
            runs.push((start, i - start));
        } else {
            i += 1;
        }
    }
    let mut next_same: Vec<Option<usize>> = vec![None; runs.len()];
    let mut seen: HashMap<usize, usize> = HashMap::new();
    for (index, &(_, len)) in runs.iter().enumerate().rev() {
        next_same[index] = seen.insert(len, index);
    }
    let mut spans = Vec::new();
    let mut r = 0;
    while r < runs.len() {
        let (start, len) = runs[r];
        match next_same[r] {
            Some(close) => {
                let (close_start, _) = runs[close];
                spans.push((start, close_start + len));
                r = close + 1;
            }
            None => r += 1,
        }
    }
    spans
}

#[cfg(test)]
mod tests;
