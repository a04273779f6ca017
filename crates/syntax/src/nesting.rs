//! How deeply a JavaScript or TypeScript text nests, measured before oxc parses it: oxc is a
//! recursive-descent parser with no depth guard of its own (oxc issues #21953, #24375), so a file
//! of a hundred thousand `(` would overflow the stack and abort the referee. This is a lexical
//! scan (no tree, no recursion, one pass) that over-estimates the parser's recursion depth in
//! "units" and stops at [`LIMIT`]; it owns nothing else.
//!
//! # What counts
//!
//! - Each open bracket `(` `[` `{` and template substitution `${`: one unit until its closer. A
//!   closer closes the innermost open bracket of its kind and everything opened after it; a closer
//!   with no open bracket of its kind is ignored (it cannot lower the count).
//! - Each token that makes the parser recurse without a bracket, counted on the innermost open
//!   bracket: statement chains (`if`, `else`, `for`, `while`, `do`, `with`, a label `l:`, and
//!   `<`, which opens type arguments and JSX elements), released at a `;` that no `else` or
//!   `while` follows; expression chains (prefix `!` `~` `+` `-` `...`, `typeof` `void` `delete`
//!   `await` `yield` `new`, `?`, assignments, `=>`, `**`, and the type operators `keyof`
//!   `infer` `readonly` `unique` `extends` `is` `asserts`), released by `,` too.
//! - Inside comments, strings, template text and regular expressions nothing is code, but the
//!   scan may misjudge where such a region ends (a `/` is division or a regex by what precedes
//!   it; JSX text is read as code), so brackets opened there still count, and a closer there only
//!   closes what was opened in the same region: a mistake makes the estimate larger, not smaller.
//!
//! Real code stays far below the limit (the deepest of the real files measured (docs/benchmarks.md) is
//! a few hundred units); the parse thread's stack (`js::STACK`) holds many times [`LIMIT`] units
//! of the costliest construct measured.

/// The most units a file may nest; more is reported as a syntax error at the place it is reached.
pub(super) const LIMIT: usize = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Paren,
    Bracket,
    Brace,
    /// `${` in a template: its `}` resumes the template text.
    Subst,
    /// `<` in JSX files: an element until its `</` or `/>` (a `<` that is a comparison or type
    /// arguments stays open until an enclosing bracket closes).
    Angle,
}

#[derive(Debug)]
struct Frame {
    kind: Kind,
    /// Chain tokens counted on this bracket (see the module doc).
    statements: usize,
    expressions: usize,
    /// `(` after `if`/`while`/`for`/`with`: a `/` after its `)` starts a regex.
    control: bool,
    /// `{` of a block (after `)`, `;`, `{`, `}`, `=>`, `else`, `do`, `try`, `finally`, or at
    /// the start): a `/` after its `}` starts a regex.
    block: bool,
}

/// The scan's state. `units` is kept equal to frames + every frame's chain counts.
struct Scan<'a> {
    text: &'a [u8],
    at: usize,
    frames: Vec<Frame>,
    /// The top level's chain counts (the file is not a bracket).
    root: (usize, usize),
    units: usize,
    /// The previous significant token ends an operand (so `/` divides).
    operand: bool,
    /// A `;` was seen; the next token releases the chains unless it is `else` or `while`.
    release_pending: bool,
    /// The previous two significant tokens, for labels: was the one before an identifier, and
    /// did the one before that start a statement.
    prev_ident: bool,
    prev_prev_starts: bool,
    prev_starts: bool,
    /// The previous token was a keyword opening a control header, or one after which `{` is a
    /// block.
    prev_control: bool,
    prev_block_lead: bool,
    /// A line break since the previous significant token (automatic semicolon insertion).
    newline: bool,
    jsx: bool,
}

/// `Err(offset)`: the text nests deeper than [`LIMIT`]; `offset` is where the limit was passed.
pub(super) fn check(text: &[u8], jsx: bool) -> Result<(), usize> {
    let mut s = Scan {
        text,
        at: 0,
        frames: Vec::new(),
        root: (0, 0),
        units: 0,
        operand: false,
        release_pending: false,
        prev_ident: false,
        prev_prev_starts: true,
        prev_starts: true,
        prev_control: false,
        prev_block_lead: true,
        newline: false,
        jsx,
    };
    s.run()
}

impl Scan<'_> {
    fn run(&mut self) -> Result<(), usize> {
        while let Some(&b) = self.text.get(self.at) {
            let start = self.at;
            match b {
                b' ' | b'\t' | b'\r' | b'\n' => {
                    self.newline |= b == b'\n';
                    self.at += 1;
                    continue;
                }
                b'/' if self.peek(1) == Some(b'/') => {
                    let end = self.line_end(start);
                    self.region(start + 2, end)?;
                    self.at = end;
                    continue;
                }
                b'/' if self.peek(1) == Some(b'*') => {
                    let end = memchr::memmem::find(&self.text[start + 2..], b"*/")
                        .map_or(self.text.len(), |i| start + 2 + i + 2);
                    self.region(start + 2, end)?;
                    self.newline |= memchr::memchr(b'\n', &self.text[start..end]).is_some();
                    self.at = end;
                    continue;
                }
                b'\'' | b'"' => {
                    let end = self.string_end(start, b);
                    self.region(start + 1, end)?;
                    self.token_operand(end);
                }
                b'`' => self.template(start + 1)?,
                b'/' if !self.operand => {
                    let end = self.regex_end(start);
                    self.region(start + 1, end)?;
                    self.token_operand(end);
                }
                b'(' | b'[' | b'{' => {
                    self.before_token(false, false);
                    let kind = match b {
                        b'(' => Kind::Paren,
                        b'[' => Kind::Bracket,
                        _ => Kind::Brace,
                    };
                    let block = kind == Kind::Brace && self.prev_block_lead;
                    let control = kind == Kind::Paren && self.prev_control;
                    self.open(kind, control, block, start)?;
                    self.after_token(false, true, true, false);
                    self.at += 1;
                }
                b')' | b']' | b'}' => {
                    self.before_token(false, false);
                    let kind = match b {
                        b')' => Kind::Paren,
                        b']' => Kind::Bracket,
                        _ => Kind::Brace,
                    };
                    self.at += 1;
                    match self.close(kind) {
                        Some(Frame {
                            kind: Kind::Subst, ..
                        }) => self.template(self.at)?,
                        Some(f) => {
                            let regex_next = f.control || f.block;
                            let brace = kind == Kind::Brace;
                            self.after_token(!regex_next, brace, kind != Kind::Bracket, false);
                        }
                        None => self.after_token(true, false, false, false),
                    }
                }
                b';' => {
                    self.before_token(false, false);
                    self.release_pending = true;
                    self.at += 1;
                    self.after_token(false, true, true, false);
                }
                b',' => {
                    self.before_token(false, false);
                    let e = std::mem::take(self.chains().1);
                    self.units -= e;
                    self.at += 1;
                    self.after_token(false, false, false, false);
                }
                b if b.is_ascii_alphanumeric()
                    || b == b'_'
                    || b == b'$'
                    || b == b'#'
                    || b >= 0x80
                    || b == b'\\' =>
                {
                    self.word(start)?;
                }
                _ => self.punctuator(start)?,
            }
        }
        Ok(())
    }

    fn peek(&self, n: usize) -> Option<u8> {
        self.text.get(self.at + n).copied()
    }

    fn line_end(&self, from: usize) -> usize {
        memchr::memchr(b'\n', &self.text[from..]).map_or(self.text.len(), |i| from + i)
    }

    /// The end (past the closing quote, or at the line's end) of a string starting at `start`.
    fn string_end(&self, start: usize, quote: u8) -> usize {
        let mut i = start + 1;
        while let Some(&c) = self.text.get(i) {
            match c {
                b'\\' => i += 2,
                b'\n' => return i,
                c if c == quote => return i + 1,
                _ => i += 1,
            }
        }
        self.text.len()
    }

    /// The end of a regex literal starting at `start` (a `/` in a class does not end it).
    fn regex_end(&self, start: usize) -> usize {
        let mut i = start + 1;
        let mut class = false;
        while let Some(&c) = self.text.get(i) {
            match c {
                b'\\' => i += 2,
                b'\n' => return i,
                b'[' => class = true,
                b']' => class = false,
                b'/' if !class => {
                    i += 1;
                    while self.text.get(i).is_some_and(|c| c.is_ascii_alphabetic()) {
                        i += 1;
                    }
                    return i;
                }
                _ => {}
            }
            i += 1;
        }
        self.text.len()
    }

    /// Template text from `from` (just past `` ` `` or the `}` of a substitution) to its end or
    /// the next `${`.
    fn template(&mut self, from: usize) -> Result<(), usize> {
        self.before_token(false, false);
        let mut i = from;
        while let Some(&c) = self.text.get(i) {
            match c {
                b'\\' => i += 2,
                b'`' => {
                    self.region(from, i)?;
                    self.token_operand(i + 1);
                    return Ok(());
                }
                b'$' if self.text.get(i + 1) == Some(&b'{') => {
                    self.region(from, i)?;
                    self.open(Kind::Subst, false, false, i)?;
                    self.at = i + 2;
                    self.after_token(false, true, true, false);
                    return Ok(());
                }
                _ => i += 1,
            }
        }
        self.region(from, self.text.len())?;
        self.at = self.text.len();
        Ok(())
    }

    /// A region that is not code (as far as the scan can tell): its brackets count, its closers
    /// close only what it opened.
    fn region(&mut self, from: usize, to: usize) -> Result<(), usize> {
        let floor = self.frames.len();
        for (i, &c) in self.text[from..to.min(self.text.len())].iter().enumerate() {
            match c {
                b'(' | b'[' | b'{' => self.open(Kind::Paren, false, false, from + i)?,
                b')' | b']' | b'}' if self.frames.len() > floor => {
                    if let Some(f) = self.frames.pop() {
                        self.units -= 1 + f.statements + f.expressions;
                    }
                }
                _ => {}
            }
        }
        Ok(())
    }

    fn token_operand(&mut self, end: usize) {
        self.before_token(false, false);
        self.at = end;
        self.after_token(true, false, false, false);
    }

    /// An identifier, keyword or number.
    fn word(&mut self, start: usize) -> Result<(), usize> {
        let mut end = start + 1;
        while self.text.get(end).is_some_and(|&c| {
            c.is_ascii_alphanumeric() || c == b'_' || c == b'$' || c >= 0x80 || c == b'\\'
        }) {
            end += 1;
        }
        let word = &self.text[start..end];
        // `a.if` is a property, not a keyword.
        let member = self.at > 0 && self.prev_is_dot(start);
        let keyword = if member { &b""[..] } else { word };
        // A line break after an operand, before a word that cannot continue the expression,
        // ends the statement (automatic semicolon insertion): release as a `;` would.
        if self.newline
            && self.operand
            && !matches!(
                keyword,
                b"else"
                    | b"while"
                    | b"catch"
                    | b"finally"
                    | b"in"
                    | b"instanceof"
                    | b"of"
                    | b"as"
                    | b"satisfies"
                    | b"extends"
                    | b"implements"
                    | b"is"
                    | b"keyof"
            )
        {
            self.release_pending = true;
        }
        self.before_token(keyword == b"else", keyword == b"while");
        self.at = end;
        let (statement, expression, operand) = match keyword {
            b"if" | b"else" | b"for" | b"while" | b"do" | b"with" => (true, false, false),
            b"typeof" | b"void" | b"delete" | b"await" | b"yield" | b"new" | b"keyof"
            | b"infer" | b"readonly" | b"unique" | b"extends" | b"is" | b"asserts" => {
                (false, true, false)
            }
            b"return" | b"throw" | b"case" | b"in" | b"of" | b"instanceof" | b"try"
            | b"finally" | b"export" | b"default" => (false, false, false),
            _ => (false, false, true),
        };
        if statement {
            self.bump(true, start)?;
        } else if expression {
            self.bump(false, start)?;
        }
        let control = matches!(keyword, b"if" | b"while" | b"for" | b"with");
        let block_lead = matches!(keyword, b"else" | b"do" | b"try" | b"finally");
        self.after_token(operand, false, block_lead, control);
        self.prev_ident = operand && !word[0].is_ascii_digit();
        Ok(())
    }

    fn prev_is_dot(&self, start: usize) -> bool {
        let before = self.text[..start].trim_ascii_end();
        before.ends_with(b".") && !before.ends_with(b"..")
    }

    /// Operators: a run of operator characters, judged as a whole.
    fn punctuator(&mut self, start: usize) -> Result<(), usize> {
        let mut end = start + 1;
        while self
            .text
            .get(end)
            .is_some_and(|c| b"=+-*%&|^!~?:<>.@".contains(c))
        {
            end += 1;
        }
        if self.text[start] == b'/' {
            // Division (a regex was caught before): `/` or `/=`, never part of a longer run, so
            // `=/re/` is not read as one operator.
            end = start + 1 + usize::from(self.text.get(start + 1) == Some(&b'='));
        }
        let op = &self.text[start..end];
        self.before_token(false, false);
        self.at = end;
        let label = op == b":" && self.prev_ident && self.prev_prev_starts;
        let prefix = !self.operand;
        let angles = op.iter().filter(|&&c| c == b'<').count();
        let mut statements = 0;
        if self.jsx {
            // `</`: a closing tag; `/>` (division after an operand): a self-closing one.
            let closing_tag = op.ends_with(b"<") && self.text.get(end) == Some(&b'/');
            let self_closing = op == b"/" && self.text.get(end) == Some(&b'>');
            for _ in 0..angles - usize::from(closing_tag) {
                self.open(Kind::Angle, false, false, start)?;
            }
            if closing_tag || self_closing {
                self.close(Kind::Angle);
                if closing_tag {
                    self.at += 1;
                }
            }
        } else {
            statements = angles;
        }
        if label {
            statements += 1;
        }
        let mut expressions = if matches!(op, b"!=" | b"!==" | b"?." | b"??" | b"??=") {
            0
        } else {
            op.iter()
                .filter(|&&c| matches!(c, b'!' | b'~' | b'?'))
                .count()
        };
        let assignment =
            op.ends_with(b"=") && !matches!(op, b"==" | b"===" | b"!=" | b"!==" | b"<=" | b">=");
        if assignment || op == b"=>" || op.windows(2).any(|w| w == b"**") || op == b"..." {
            expressions += 1;
        }
        if prefix && op.iter().any(|&c| c == b'+' || c == b'-') {
            expressions += op.len();
        }
        for _ in 0..statements {
            self.bump(true, start)?;
        }
        for _ in 0..expressions {
            self.bump(false, start)?;
        }
        // `a++` and `a--` still end an operand; `a!` (TypeScript's non-null) too.
        let operand = self.operand && matches!(op, b"++" | b"--" | b"!");
        self.after_token(operand, label, op == b"=>", false);
        Ok(())
    }

    /// Before each significant token: a pending release happens unless this token continues the
    /// statement (`else`, or `while` after a `do` body).
    fn before_token(&mut self, is_else: bool, is_while: bool) {
        if self.release_pending {
            self.release_pending = false;
            if !is_else && !is_while {
                let (s, e) = self.chains();
                let released = std::mem::take(s) + std::mem::take(e);
                self.units -= released;
            }
        }
    }

    fn after_token(&mut self, operand: bool, starts: bool, block_lead: bool, control: bool) {
        self.newline = false;
        self.operand = operand;
        self.prev_prev_starts = self.prev_starts;
        self.prev_starts = starts;
        self.prev_ident = false;
        self.prev_control = control;
        self.prev_block_lead = block_lead || (starts && !operand);
    }

    fn chains(&mut self) -> (&mut usize, &mut usize) {
        match self.frames.last_mut() {
            Some(f) => (&mut f.statements, &mut f.expressions),
            None => (&mut self.root.0, &mut self.root.1),
        }
    }

    fn bump(&mut self, statement: bool, at: usize) -> Result<(), usize> {
        let (s, e) = self.chains();
        if statement {
            *s += 1;
        } else {
            *e += 1;
        }
        self.units += 1;
        self.limit(at)
    }

    fn open(&mut self, kind: Kind, control: bool, block: bool, at: usize) -> Result<(), usize> {
        self.frames.push(Frame {
            kind,
            statements: 0,
            expressions: 0,
            control,
            block,
        });
        self.units += 1;
        self.limit(at)
    }

    /// Closes the innermost open bracket of `kind` (a `}` closes a `${` too) and everything
    /// opened after it.
    fn close(&mut self, kind: Kind) -> Option<Frame> {
        let matches = |f: &Frame| f.kind == kind || (kind == Kind::Brace && f.kind == Kind::Subst);
        let at = self.frames.iter().rposition(matches)?;
        let mut closed = self.frames.drain(at..);
        let frame = closed.next()?;
        let inner: usize = closed.map(|f| 1 + f.statements + f.expressions).sum();
        self.units -= 1 + frame.statements + frame.expressions + inner;
        Some(frame)
    }

    fn limit(&self, at: usize) -> Result<(), usize> {
        if self.units > LIMIT {
            Err(at)
        } else {
            Ok(())
        }
    }
}
