//! Go's lexer as go/scanner has it, for the referee's Go parser (`golang`): tokens, the automatic
//! semicolons ("Semicolons" in the Go specification: at a newline or the end of the file after an
//! identifier, a literal, `break` `continue` `fallthrough` `return`, `++` `--` `)` `]` `}`; a
//! comment that spans or ends the line counts as the newline) and the lexical errors go/scanner
//! reports (an illegal character, a NUL or a byte-order mark anywhere, an unterminated string,
//! rune or comment, a bad escape, a malformed number). It scans one token at a time, on demand,
//! and never recurses. Offsets are byte offsets into the text.

/// A lexical error: the byte offset go/scanner names and its message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Fault {
    pub at: usize,
    pub message: String,
}

pub(super) type Scanned<T> = Result<T, Box<Fault>>;

pub(super) fn fault<T>(at: usize, message: impl Into<String>) -> Scanned<T> {
    Err(Box::new(Fault {
        at,
        message: message.into(),
    }))
}

mod token;

use token::keyword;
pub(super) use token::T;

/// One token: its kind and byte span; `newline` for a semicolon the scanner inserted at a newline
/// or the end of the file (go/parser's `lit == "\n"`).
#[derive(Debug, Clone, Copy)]
pub(super) struct Token {
    pub tok: T,
    pub start: usize,
    pub end: usize,
    pub newline: bool,
}

pub(super) struct Scanner<'a> {
    text: &'a str,
    src: &'a [u8],
    at: usize,
    insert_semi: bool,
}

impl<'a> Scanner<'a> {
    /// A scanner over `text` (a leading byte-order mark already removed). A NUL or a byte-order
    /// mark anywhere is go/scanner's error, even inside a comment or a string: the first is found
    /// here, before any token.
    pub(super) fn new(text: &'a str) -> Scanned<Self> {
        let src = text.as_bytes();
        let nul = memchr::memchr(0, src);
        let bom = memchr::memmem::find(src, "\u{FEFF}".as_bytes());
        match (nul, bom) {
            (Some(n), b) if b.is_none_or(|b| n < b) => return fault(n, "illegal character NUL"),
            (_, Some(b)) => return fault(b, "illegal byte order mark"),
            _ => {}
        }
        Ok(Scanner {
            text,
            src,
            at: 0,
            insert_semi: false,
        })
    }

    fn peek(&self, ahead: usize) -> u8 {
        self.src.get(self.at + ahead).copied().unwrap_or(0)
    }

    fn semicolon(&mut self, at: usize) -> Token {
        self.insert_semi = false;
        Token {
            tok: T::Semicolon,
            start: at,
            end: at,
            newline: true,
        }
    }

    pub(super) fn next(&mut self) -> Scanned<Token> {
        loop {
            let Some(&c) = self.src.get(self.at) else {
                if self.insert_semi {
                    return Ok(self.semicolon(self.src.len()));
                }
                return Ok(Token {
                    tok: T::Eof,
                    start: self.src.len(),
                    end: self.src.len(),
                    newline: false,
                });
            };
            match c {
                b' ' | b'\t' | b'\r' => self.at += 1,
                b'\n' => {
                    if self.insert_semi {
                        let at = self.at;
                        self.at += 1;
                        return Ok(self.semicolon(at));
                    }
                    self.at += 1;
                }
                // The newline (or the end of the file) after it inserts the semicolon.
                b'/' if self.peek(1) == b'/' => {
                    self.at = memchr::memchr(b'\n', &self.src[self.at..])
                        .map_or(self.src.len(), |i| self.at + i);
                }
                b'/' if self.peek(1) == b'*' => {
                    let start = self.at;
                    let Some(len) = memchr::memmem::find(&self.src[start + 2..], b"*/") else {
                        return fault(start, "comment not terminated");
                    };
                    let body = &self.src[start + 2..start + 2 + len];
                    self.at = start + 2 + len + 2;
                    // A comment spanning lines: the semicolon at its first newline.
                    if let Some(nl) = memchr::memchr(b'\n', body).filter(|_| self.insert_semi) {
                        return Ok(self.semicolon(start + 2 + nl));
                    }
                }
                _ => return self.token(c),
            }
        }
    }

    fn token(&mut self, c: u8) -> Scanned<Token> {
        let start = self.at;
        let tok = if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 {
            self.word(start)?
        } else if c.is_ascii_digit() || (c == b'.' && self.peek(1).is_ascii_digit()) {
            self.number(start)?
        } else {
            match c {
                b'"' => self.string(start)?,
                b'`' => {
                    let Some(len) = memchr::memchr(b'`', &self.src[start + 1..]) else {
                        return fault(start, "raw string literal not terminated");
                    };
                    self.at = start + 1 + len + 1;
                    T::Str
                }
                b'\'' => self.rune(start)?,
                _ => self.operator(start, c)?,
            }
        };
        self.insert_semi = matches!(
            tok,
            T::Ident
                | T::Int
                | T::Float
                | T::Imag
                | T::Char
                | T::Str
                | T::Break
                | T::Continue
                | T::Fallthrough
                | T::Return
                | T::Inc
                | T::Dec
                | T::RParen
                | T::RBrack
                | T::RBrace
        );
        Ok(Token {
            tok,
            start,
            end: self.at,
            newline: false,
        })
    }

    /// The character at `at` (the text is UTF-8; `at` is on a character boundary).
    fn char_at(&self, at: usize) -> Option<char> {
        self.text.get(at..).and_then(|s| s.chars().next())
    }

    fn word(&mut self, start: usize) -> Scanned<T> {
        let mut at = start;
        let mut first = true;
        while let Some(ch) = self.char_at(at) {
            let ok = if ch.is_ascii() {
                ch.is_ascii_alphanumeric() || ch == '_'
            } else {
                ch.is_alphabetic() || (!first && ch.is_numeric())
            };
            if !ok {
                break;
            }
            if first && ch.is_ascii_digit() {
                break;
            }
            first = false;
            at += ch.len_utf8();
        }
        if at == start {
            let ch = self.char_at(start).unwrap_or('\u{FFFD}');
            return fault(
                start,
                format!("illegal character U+{:04X} '{ch}'", ch as u32),
            );
        }
        self.at = at;
        Ok(keyword(&self.src[start..at]).unwrap_or(T::Ident))
    }

    fn operator(&mut self, start: usize, c: u8) -> Scanned<T> {
        let (a, b) = (self.peek(1), self.peek(2));
        let (tok, len) = match c {
            b'(' => (T::LParen, 1),
            b')' => (T::RParen, 1),
            b'[' => (T::LBrack, 1),
            b']' => (T::RBrack, 1),
            b'{' => (T::LBrace, 1),
            b'}' => (T::RBrace, 1),
            b',' => (T::Comma, 1),
            b';' => (T::Semicolon, 1),
            b'~' => (T::Tilde, 1),
            b'.' if a == b'.' && b == b'.' => (T::Ellipsis, 3),
            b'.' => (T::Period, 1),
            b':' if a == b'=' => (T::Define, 2),
            b':' => (T::Colon, 1),
            b'+' if a == b'+' => (T::Inc, 2),
            b'-' if a == b'-' => (T::Dec, 2),
            b'+' | b'-' | b'*' | b'/' | b'%' | b'^' if a == b'=' => (T::OpAssign, 2),
            b'+' => (T::Add, 1),
            b'-' => (T::Sub, 1),
            b'*' => (T::Mul, 1),
            b'/' => (T::Quo, 1),
            b'%' => (T::Rem, 1),
            b'^' => (T::Xor, 1),
            b'<' if a == b'-' => (T::Arrow, 2),
            b'<' if a == b'<' && b == b'=' => (T::OpAssign, 3),
            b'<' if a == b'<' => (T::Shl, 2),
            b'<' if a == b'=' => (T::Leq, 2),
            b'<' => (T::Lss, 1),
            b'>' if a == b'>' && b == b'=' => (T::OpAssign, 3),
            b'>' if a == b'>' => (T::Shr, 2),
            b'>' if a == b'=' => (T::Geq, 2),
            b'>' => (T::Gtr, 1),
            b'=' if a == b'=' => (T::Eql, 2),
            b'=' => (T::Assign, 1),
            b'!' if a == b'=' => (T::Neq, 2),
            b'!' => (T::Not, 1),
            b'&' if a == b'^' && b == b'=' => (T::OpAssign, 3),
            b'&' if a == b'^' => (T::AndNot, 2),
            b'&' if a == b'&' => (T::LAnd, 2),
            b'&' if a == b'=' => (T::OpAssign, 2),
            b'&' => (T::And, 1),
            b'|' if a == b'|' => (T::LOr, 2),
            b'|' if a == b'=' => (T::OpAssign, 2),
            b'|' => (T::Or, 1),
            _ => {
                return fault(
                    start,
                    format!("illegal character U+{:04X} '{}'", c, c as char),
                )
            }
        };
        self.at = start + len;
        Ok(tok)
    }

    /// An interpreted string: `"`, characters and escapes, `"`, on one line.
    fn string(&mut self, start: usize) -> Scanned<T> {
        self.at = start + 1;
        loop {
            match self.src.get(self.at) {
                None | Some(b'\n') => return fault(start, "string literal not terminated"),
                Some(b'"') => {
                    self.at += 1;
                    return Ok(T::Str);
                }
                Some(b'\\') => {
                    self.at += 1;
                    self.escape(b'"')?;
                }
                Some(_) => self.at += 1,
            }
        }
    }

    /// A rune literal: exactly one character or escape between `'`s.
    fn rune(&mut self, start: usize) -> Scanned<T> {
        self.at = start + 1;
        let mut n = 0usize;
        loop {
            let Some(ch) = self.char_at(self.at) else {
                return fault(start, "rune literal not terminated");
            };
            if ch == '\n' {
                return fault(start, "rune literal not terminated");
            }
            self.at += ch.len_utf8();
            if ch == '\'' {
                break;
            }
            n += 1;
            if ch == '\\' {
                self.escape(b'\'')?;
            }
        }
        if n != 1 {
            return fault(start, "illegal rune literal");
        }
        Ok(T::Char)
    }

    /// After a backslash (at `self.at`): one escape, as go/scanner's `scanEscape`.
    fn escape(&mut self, quote: u8) -> Scanned<()> {
        let offs = self.at;
        let c = self.peek(0);
        let (mut n, base, max): (u32, u32, u32) = match c {
            b'a' | b'b' | b'f' | b'n' | b'r' | b't' | b'v' | b'\\' => {
                self.at += 1;
                return Ok(());
            }
            _ if c == quote => {
                self.at += 1;
                return Ok(());
            }
            b'0'..=b'7' => (3, 8, 255),
            b'x' => {
                self.at += 1;
                (2, 16, 255)
            }
            b'u' => {
                self.at += 1;
                (4, 16, 0x10FFFF)
            }
            b'U' => {
                self.at += 1;
                (8, 16, 0x10FFFF)
            }
            _ if self.at >= self.src.len() => return fault(offs, "escape sequence not terminated"),
            _ => return fault(offs, "unknown escape sequence"),
        };
        let mut x: u32 = 0;
        while n > 0 {
            let d = self
                .char_at(self.at)
                .and_then(|ch| ch.to_digit(16))
                .filter(|&d| d < base);
            let Some(d) = d else {
                return match self.char_at(self.at) {
                    None => fault(self.at, "escape sequence not terminated"),
                    Some(ch) => fault(
                        self.at,
                        format!(
                            "illegal character U+{:04X} '{ch}' in escape sequence",
                            ch as u32
                        ),
                    ),
                };
            };
            x = x * base + d;
            self.at += 1;
            n -= 1;
        }
        if x > max || (0xD800..0xE000).contains(&x) {
            return fault(offs, "escape sequence is invalid Unicode code point");
        }
        Ok(())
    }

    /// Consumes the digits of `base` (and `_`) from `self.at`: bit 0 if a digit was seen, bit 1
    /// if a `_` was; the first digit not of `base` (decimal bases only) into `invalid`.
    fn digits(&mut self, base: u32, invalid: &mut Option<usize>) -> u8 {
        let mut seen = 0u8;
        loop {
            let c = self.peek(0);
            if c == b'_' {
                seen |= 2;
            } else if base <= 10 && c.is_ascii_digit() {
                if u32::from(c - b'0') >= base && invalid.is_none() {
                    *invalid = Some(self.at);
                }
                seen |= 1;
            } else if base == 16 && c.is_ascii_hexdigit() {
                seen |= 1;
            } else {
                return seen;
            }
            self.at += 1;
        }
    }

    /// A number literal, as go/scanner's `scanNumber`, with its errors.
    fn number(&mut self, start: usize) -> Scanned<T> {
        self.at = start;
        let mut tok = T::Int;
        let mut base = 10;
        let mut prefix = 0u8;
        let mut seen = 0u8;
        let mut invalid = None;
        let name = |prefix: u8| match prefix {
            b'x' => "hexadecimal literal",
            b'o' | b'0' => "octal literal",
            b'b' => "binary literal",
            _ => "decimal literal",
        };
        if self.peek(0) != b'.' {
            if self.peek(0) == b'0' {
                self.at += 1;
                match self.peek(0).to_ascii_lowercase() {
                    b'x' => (base, prefix) = (16, b'x'),
                    b'o' => (base, prefix) = (8, b'o'),
                    b'b' => (base, prefix) = (2, b'b'),
                    _ => (base, prefix, seen) = (8, b'0', 1),
                }
                if prefix != b'0' {
                    self.at += 1;
                }
            }
            seen |= self.digits(base, &mut invalid);
        }
        if self.peek(0) == b'.' {
            tok = T::Float;
            if prefix == b'o' || prefix == b'b' {
                return fault(self.at, format!("invalid radix point in {}", name(prefix)));
            }
            self.at += 1;
            seen |= self.digits(base, &mut invalid);
        }
        if seen & 1 == 0 {
            return fault(self.at, format!("{} has no digits", name(prefix)));
        }
        let e = self.peek(0).to_ascii_lowercase();
        if e == b'e' || e == b'p' {
            if e == b'e' && prefix != 0 && prefix != b'0' {
                return fault(
                    self.at,
                    format!("'{}' exponent requires decimal mantissa", e as char),
                );
            }
            if e == b'p' && prefix != b'x' {
                return fault(
                    self.at,
                    format!("'{}' exponent requires hexadecimal mantissa", e as char),
                );
            }
            self.at += 1;
            tok = T::Float;
            if matches!(self.peek(0), b'+' | b'-') {
                self.at += 1;
            }
            let ds = self.digits(10, &mut None);
            seen |= ds;
            if ds & 1 == 0 {
                return fault(self.at, "exponent has no digits");
            }
        } else if prefix == b'x' && tok == T::Float {
            return fault(self.at, "hexadecimal mantissa requires a 'p' exponent");
        }
        if self.peek(0) == b'i' {
            tok = T::Imag;
            self.at += 1;
        }
        if tok == T::Int {
            if let Some(at) = invalid {
                return fault(
                    at,
                    format!(
                        "invalid digit '{}' in {}",
                        self.src[at] as char,
                        name(prefix)
                    ),
                );
            }
        }
        if seen & 2 != 0 {
            if let Some(i) = invalid_separator(&self.src[start..self.at]) {
                return fault(start + i, "'_' must separate successive digits");
            }
        }
        Ok(tok)
    }
}

/// go/scanner's `invalidSep`: the index of the first `_` in a number literal that does not
/// separate two digits (a prefix counts as a digit).
fn invalid_separator(x: &[u8]) -> Option<usize> {
    let mut hex = false;
    let mut d = b'.';
    let mut i = 0;
    if x.len() >= 2 && x[0] == b'0' {
        let x1 = x[1].to_ascii_lowercase();
        hex = x1 == b'x';
        if matches!(x1, b'x' | b'o' | b'b') {
            d = b'0';
            i = 2;
        }
    }
    while i < x.len() {
        let p = d;
        d = x[i];
        if d == b'_' {
            if p != b'0' {
                return Some(i);
            }
        } else if d.is_ascii_digit() || (hex && d.is_ascii_hexdigit()) {
            d = b'0';
        } else {
            if p == b'_' {
                return Some(i - 1);
            }
            d = b'.';
        }
        i += 1;
    }
    (d == b'_').then(|| x.len() - 1)
}
