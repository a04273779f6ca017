//! CPython's tokenizer rules that tree-sitter-python does not enforce (its scanner is lenient about
//! layout): the logical lines (brackets, strings, comments, backslash continuations), the
//! INDENT/DEDENT stack and its errors (`unexpected indent`, `unindent does not match any outer
//! indentation level`, `expected an indented block after ...` including at the end of the file, and
//! `TabError` for tabs and spaces mixed inconsistently), unterminated strings, a character after a
//! line continuation, a continuation at the end of the file, more than 200 nested brackets and
//! null bytes. The grammar itself is tree-sitter's; this pass only scans, once, without recursion
//! (but for f-strings nested in f-strings, at most [`MAX_FSTRING_NESTING`] deep).
//!
//! Strings follow Python 3.12 (PEP 701): inside an f-string's replacement field any string may
//! appear, of either quote, and the field may span lines. Python 3.11 rejects the same quote
//! nested; the referee accepts it, as the newer language does.

/// CPython's `MAXLEVEL`: `too many nested parentheses` beyond it.
const MAX_BRACKETS: usize = 200;
/// CPython's `MAXINDENT`: `too many levels of indentation` at 100.
const MAX_INDENT: usize = 100;
/// CPython 3.12's `MAXFSTRINGLEVEL`.
const MAX_FSTRING_NESTING: usize = 150;
/// CPython's tab size for indentation; the "alternate" columns count a tab as one.
const TAB: usize = 8;

/// A tokenizer error: the byte offset it is reported at (line 1 column 1 when `at_line_start`
/// applies the whole line) and CPython's message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Fault {
    pub offset: usize,
    pub message: String,
    /// Found only at the end of the file (a bracket never closed): CPython's parser reports its
    /// own error first, so a grammar error anywhere wins over it.
    pub at_eof: bool,
}

/// What the scan found in a file's text.
#[derive(Debug)]
pub(super) struct Layout {
    /// The first tokenizer error, if any.
    pub fault: Option<Fault>,
    /// The text with each logical line on one physical line, byte for byte as long (so offsets
    /// stay): the newlines inside brackets, the comments there and the backslash continuations
    /// blanked out. tree-sitter-python's scanner mistakes a continuation line less indented than
    /// its statement for a dedent (`x = (\n1)` inside a block); Python ignores those bytes.
    pub joined: Vec<u8>,
}

/// Scans `text` (already decoded, any newline convention).
pub(super) fn layout(text: &[u8]) -> Layout {
    let mut scanner = Scanner::new(text);
    let fault = scanner.run().err();
    let mut joined = text.to_vec();
    for (from, to) in scanner.blanks {
        joined[from..to].fill(b' ');
    }
    Layout { fault, joined }
}

type Scan<T> = Result<T, Fault>;

struct Scanner<'a> {
    s: &'a [u8],
    i: usize,
    /// Open brackets (kind, offset).
    brackets: Vec<(u8, usize)>,
    /// Byte ranges Python's tokenizer skips inside a logical line (see [`Layout::joined`]).
    blanks: Vec<(usize, usize)>,
}

/// A logical line that ended with `:`: the next one must be indented.
struct Header {
    line: usize,
    what: &'static str,
    /// Where the line ends (after the colon): the error's place at the end of the file.
    end: usize,
}

impl<'a> Scanner<'a> {
    fn new(s: &'a [u8]) -> Self {
        Scanner {
            s,
            i: 0,
            brackets: Vec::new(),
            blanks: Vec::new(),
        }
    }

    fn peek(&self, ahead: usize) -> u8 {
        self.s.get(self.i + ahead).copied().unwrap_or(0)
    }

    fn at_end(&self) -> bool {
        self.i >= self.s.len()
    }

    fn fault<T>(&self, offset: usize, message: impl Into<String>) -> Scan<T> {
        Err(Fault {
            offset,
            message: message.into(),
            at_eof: false,
        })
    }

    /// A newline at `i`: `\n`, `\r\n` or `\r`; its length.
    fn newline_len(&self, i: usize) -> usize {
        match self.s.get(i) {
            Some(b'\n') => 1,
            Some(b'\r') if self.s.get(i + 1) == Some(&b'\n') => 2,
            Some(b'\r') => 1,
            _ => 0,
        }
    }

    fn line_of(&self, offset: usize) -> usize {
        super::position(self.s, offset).0
    }

    fn run(&mut self) -> Scan<()> {
        if let Some(at) = memchr::memchr(0, self.s) {
            return self.fault(at, "source code cannot contain null bytes");
        }
        // (columns with tabs to 8, columns with tabs as 1)
        let mut indents: Vec<(usize, usize)> = vec![(0, 0)];
        let mut header: Option<Header> = None;
        while !self.at_end() {
            // The start of a logical line: its indentation.
            let line_start = self.i;
            let (mut col, mut alt) = (0usize, 0usize);
            loop {
                match self.peek(0) {
                    b' ' => {
                        col += 1;
                        alt += 1;
                    }
                    b'\t' => {
                        col = (col / TAB + 1) * TAB;
                        alt += 1;
                    }
                    b'\x0C' => {
                        col = 0;
                        alt = 0;
                    }
                    _ => break,
                }
                self.i += 1;
            }
            let c = self.peek(0);
            if self.at_end() {
                break;
            }
            if c == b'#' || self.newline_len(self.i) > 0 {
                // A blank or comment-only line: no INDENT or DEDENT.
                self.skip_comment();
                self.i += self.newline_len(self.i);
                continue;
            }
            let (top, top_alt) = *indents.last().unwrap_or(&(0, 0));
            let tab_error = "inconsistent use of tabs and spaces in indentation";
            if col == top {
                if alt != top_alt {
                    return self.fault(line_start, tab_error);
                }
                if let Some(h) = header.take() {
                    return self.fault(line_start, h.message());
                }
            } else if col > top {
                if alt <= top_alt {
                    return self.fault(line_start, tab_error);
                }
                if header.take().is_none() {
                    return self.fault(line_start, "unexpected indent");
                }
                if indents.len() >= MAX_INDENT {
                    return self.fault(line_start, "too many levels of indentation");
                }
                indents.push((col, alt));
            } else {
                while indents.len() > 1 && col < indents[indents.len() - 1].0 {
                    indents.pop();
                }
                let (top, top_alt) = *indents.last().unwrap_or(&(0, 0));
                if col != top {
                    return self.fault(
                        line_start,
                        "unindent does not match any outer indentation level",
                    );
                }
                if alt != top_alt {
                    return self.fault(line_start, tab_error);
                }
                if let Some(h) = header.take() {
                    return self.fault(line_start, h.message());
                }
            }
            header = self.logical_line()?;
        }
        if let Some(&(kind, at)) = self.brackets.last() {
            return Err(Fault {
                offset: at,
                message: format!("'{}' was never closed", char::from(kind)),
                at_eof: true,
            });
        }
        match header {
            Some(h) => self.fault(h.end, h.message()),
            None => Ok(()),
        }
    }

    /// Scans one logical line from its first token to its end (past the newline); the header it
    /// is, when its last token is `:`.
    fn logical_line(&mut self) -> Scan<Option<Header>> {
        let first_word = self.word_at(self.i);
        let second_word = {
            let after = self.i + first_word.len();
            let gap = self.s[after.min(self.s.len())..]
                .iter()
                .take_while(|&&b| b == b' ' || b == b'\t')
                .count();
            self.word_at(after + gap)
        };
        let what = header_kind(first_word, second_word);
        let start = self.i;
        let mut last = 0u8;
        let mut last_end = self.i;
        while !self.at_end() {
            let c = self.peek(0);
            let nl = self.newline_len(self.i);
            if nl > 0 {
                if self.brackets.is_empty() {
                    self.i += nl;
                    break;
                }
                self.blanks.push((self.i, self.i + nl));
                self.i += nl;
                continue;
            }
            match c {
                b' ' | b'\t' | b'\x0C' => self.i += 1,
                b'#' => {
                    let from = self.i;
                    self.skip_comment();
                    if !self.brackets.is_empty() {
                        self.blanks.push((from, self.i));
                    }
                }
                b'\\' => {
                    let nl = self.newline_len(self.i + 1);
                    if nl > 0 {
                        self.blanks.push((self.i, self.i + 1 + nl));
                        self.i += 1 + nl;
                        if self.at_end() {
                            return self.fault(self.i - nl, "unexpected EOF while parsing");
                        }
                    } else if self.i + 1 >= self.s.len() {
                        return self.fault(self.i, "unexpected EOF while parsing");
                    } else {
                        return self.fault(
                            self.i + 1,
                            "unexpected character after line continuation character",
                        );
                    }
                }
                b'\'' | b'"' => {
                    self.string(0)?;
                    last = c;
                    last_end = self.i;
                }
                _ if is_word(c) => {
                    let word = self.word_at(self.i);
                    let quote = self.peek(word.len());
                    if (quote == b'\'' || quote == b'"') && string_prefix(word).is_some() {
                        self.string(0)?;
                        last = quote;
                    } else if (quote == b'\'' || quote == b'"') && bad_prefix(word) {
                        let at = self.i + word.len();
                        return self.fault(at, "invalid syntax: not a string prefix");
                    } else {
                        self.i += word.len();
                        last = b'a';
                    }
                    last_end = self.i;
                }
                _ => {
                    self.punct(c)?;
                    last = c;
                    last_end = self.i;
                }
            }
        }
        if last != b':' {
            return Ok(None);
        }
        Ok(Some(Header {
            line: self.line_of(start),
            what,
            end: last_end,
        }))
    }

    /// One punctuation byte: brackets are counted.
    fn punct(&mut self, c: u8) -> Scan<()> {
        match c {
            b'(' | b'[' | b'{' => {
                if self.brackets.len() >= MAX_BRACKETS {
                    return self.fault(self.i, "too many nested parentheses");
                }
                self.brackets.push((c, self.i));
            }
            // A mismatch is the grammar's to report (tree-sitter); here it only closes.
            b')' | b']' | b'}' => {
                self.brackets.pop();
            }
            _ => {}
        }
        self.i += 1;
        Ok(())
    }

    fn skip_comment(&mut self) {
        if self.peek(0) == b'#' {
            let rest = &self.s[self.i..];
            self.i += memchr::memchr2(b'\n', b'\r', rest).unwrap_or(rest.len());
        }
    }

    fn word_at(&self, i: usize) -> &'a [u8] {
        let s: &'a [u8] = self.s;
        let rest = s.get(i..).unwrap_or_default();
        let len = rest.iter().take_while(|&&b| is_word(b)).count();
        &rest[..len]
    }

    /// A string literal from its prefix (at `self.i`) to past its closing quote. `nesting`: how
    /// many f-strings it is inside.
    fn string(&mut self, nesting: usize) -> Scan<()> {
        let start = self.i;
        let prefix = self.word_at(self.i);
        let (raw, f) = string_prefix(prefix).unwrap_or((false, false));
        self.i += prefix.len();
        let q = self.peek(0);
        let triple = self.peek(1) == q && self.peek(2) == q;
        self.i += if triple { 3 } else { 1 };
        if f && nesting >= MAX_FSTRING_NESTING {
            return self.fault(start, "too many nested f-strings");
        }
        let _ = raw; // a backslash protects the next character in raw strings too
        loop {
            if self.at_end() {
                return self.unterminated(start, triple);
            }
            let c = self.peek(0);
            if self.newline_len(self.i) > 0 && !triple {
                return self.unterminated(start, triple);
            }
            if c == b'\\' {
                // In an f-string, `\{` still opens a field.
                let next = self.peek(1);
                self.i += if f && (next == b'{' || next == b'}') {
                    1
                } else {
                    1 + self.newline_len(self.i + 1).max(1)
                };
                continue;
            }
            if c == q && (!triple || (self.peek(1) == q && self.peek(2) == q)) {
                self.i += if triple { 3 } else { 1 };
                return Ok(());
            }
            if f && c == b'{' {
                if self.peek(1) == b'{' {
                    self.i += 2;
                } else {
                    self.i += 1;
                    self.field(start, q, triple, nesting + 1)?;
                }
                continue;
            }
            if f && c == b'}' {
                if self.peek(1) == b'}' {
                    self.i += 2;
                    continue;
                }
                return self.fault(self.i, "f-string: single '}' is not allowed");
            }
            self.i += 1;
        }
    }

    /// An f-string's replacement field, after its `{`, to past its `}`: an expression (any
    /// strings, brackets, lines), then a format spec after a top-level `:`, whose text is
    /// literal but for nested fields.
    fn field(&mut self, start: usize, q: u8, triple: bool, nesting: usize) -> Scan<()> {
        let mut depth = 0usize;
        let mut spec = false;
        loop {
            if self.at_end() {
                return self.unterminated(start, triple);
            }
            let c = self.peek(0);
            if spec {
                if self.newline_len(self.i) > 0 && !triple {
                    return self.unterminated(start, triple);
                }
                if c == q && (!triple || (self.peek(1) == q && self.peek(2) == q)) {
                    return self.fault(self.i, "f-string: expecting '}'");
                }
                match c {
                    b'{' => {
                        self.i += 1;
                        self.field(start, q, triple, nesting)?;
                    }
                    b'}' => {
                        self.i += 1;
                        return Ok(());
                    }
                    b'\\' => self.i += 2,
                    _ => self.i += 1,
                }
                continue;
            }
            match c {
                b'\'' | b'"' => self.string(nesting)?,
                _ if is_word(c) => {
                    let word = self.word_at(self.i);
                    let next = self.peek(word.len());
                    if (next == b'\'' || next == b'"') && string_prefix(word).is_some() {
                        self.string(nesting)?;
                    } else {
                        self.i += word.len();
                    }
                }
                b'#' => self.skip_comment(),
                b'(' | b'[' | b'{' => {
                    depth += 1;
                    self.i += 1;
                }
                b')' | b']' => {
                    depth = depth.saturating_sub(1);
                    self.i += 1;
                }
                b'}' if depth == 0 => {
                    self.i += 1;
                    return Ok(());
                }
                b'}' => {
                    depth -= 1;
                    self.i += 1;
                }
                b':' if depth == 0 => {
                    spec = true;
                    self.i += 1;
                }
                _ => self.i += 1,
            }
        }
    }

    fn unterminated<T>(&self, start: usize, triple: bool) -> Scan<T> {
        // CPython counts the line a final newline ends, not the empty one after it.
        let end = self.i.min(self.s.len());
        let end = if end == self.s.len() && self.s.ends_with(b"\n") {
            end - 1
        } else {
            end
        };
        let detected = self.line_of(end);
        let kind = if triple {
            "unterminated triple-quoted string literal"
        } else {
            "unterminated string literal"
        };
        self.fault(start, format!("{kind} (detected at line {detected})"))
    }
}

impl Header {
    fn message(&self) -> String {
        match self.what {
            "" => "expected an indented block".to_owned(),
            what => format!(
                "expected an indented block after {what} on line {}",
                self.line
            ),
        }
    }
}

/// CPython's name for the statement a header line starts.
fn header_kind(first: &[u8], second: &[u8]) -> &'static str {
    let word = if first == b"async" { second } else { first };
    match word {
        b"def" => "function definition",
        b"class" => "class definition",
        b"if" => "'if' statement",
        b"elif" => "'elif' statement",
        b"else" => "'else' statement",
        b"for" => "'for' statement",
        b"while" => "'while' statement",
        b"with" => "'with' statement",
        b"try" => "'try' statement",
        b"except" => "'except' statement",
        b"finally" => "'finally' statement",
        b"match" => "'match' statement",
        b"case" => "'case' statement",
        _ => "",
    }
}

/// Identifier and number characters; any non-ASCII byte (an identifier's, in valid UTF-8).
fn is_word(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80
}

/// Letters that could only be meant as a string prefix but are none (Python 2's `ur`, `bu`).
fn bad_prefix(word: &[u8]) -> bool {
    word.len() <= 3 && word.iter().all(|b| b"rRbBuUfF".contains(b)) && string_prefix(word).is_none()
}

/// `(raw, f-string)` when `word` is a string prefix (`r`, `u`, `b`, `f`, `br`, `rb`, `fr`, `rf`,
/// any case).
fn string_prefix(word: &[u8]) -> Option<(bool, bool)> {
    let lower: Vec<u8> = word.iter().map(u8::to_ascii_lowercase).collect();
    match lower.as_slice() {
        b"" | b"u" | b"b" => Some((false, false)),
        b"r" | b"br" | b"rb" => Some((true, false)),
        b"f" => Some((false, true)),
        b"fr" | b"rf" => Some((true, true)),
        _ => None,
    }
}
