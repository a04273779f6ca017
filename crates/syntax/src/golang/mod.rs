//! Go judged as go/parser judges it (what `gofmt -e` reports): a recursive-descent recognizer
//! that follows go/parser's productions, over go/scanner's tokens (`goscan`, with the automatic
//! semicolons). It builds no tree: each expression leaves only the summary the grammar's
//! decisions need ([`Ex`]: is it a bare name, a call, a literal type, a type element), and the
//! first error ends the parse (go/parser reports its errors sorted by position; the first one
//! found here is the first in the file but for a lexical error met one token ahead).
//!
//! What go/parser checks beyond the grammar is checked too: exactly one `package` clause, first;
//! imports before other declarations; mixed named and unnamed parameters; a `range` with more
//! than two variables; a type parameter list without constraint; 3-index slices without their
//! indices; `go`/`defer` without a call; a simple statement as an `if`/`switch` condition; a
//! parenthesized composite literal type. What only the type checker reports (unused variables, a
//! constant without value, a method with type parameters where the language has none) is not.
//!
//! Recursion is bounded: past [`MAX_DEPTH`] nested constructs the file is reported as nested too
//! deeply (go/parser's own limit is 100,000), and the parse runs on a thread whose stack
//! ([`STACK`]) holds that depth.

use super::goscan::{fault, Fault, Scanned as R, Scanner, Token, T};
use super::{position, utf8, Outcome};

/// `how` in the outcomes: which parser judged.
mod decl;
mod expr;
mod stmt;
mod types;

pub(super) const HOW: &str = "Go (the referee's port of go/parser)";

/// The deepest nesting (expressions, types, statements, literal values) parsed.
pub(super) const MAX_DEPTH: usize = 10_000;

/// The parse thread's stack: address space, touched only as deep as the file nests.
const STACK: usize = 256 << 20;

/// Judges a Go source file: UTF-8 (go/scanner's "illegal UTF-8 encoding"), then [`check`].
pub(super) fn parse(bytes: &[u8]) -> Outcome {
    let text = match utf8(bytes, HOW) {
        Ok(text) => text,
        Err(invalid) => return invalid,
    };
    match check(text) {
        Ok(()) => Outcome::Parsed { how: HOW.into() },
        Err(Fault { at, message }) => {
            let (line, column) = position(text.as_bytes(), at);
            Outcome::Invalid {
                line,
                column,
                message,
                how: HOW.into(),
            }
        }
    }
}

/// The first syntax error of a Go source file (a leading byte-order mark already removed): its
/// byte offset and go/parser's message; `Ok` when go/parser would accept it.
pub(super) fn check(text: &str) -> Result<(), Fault> {
    let run = || {
        let mut p = P::new(text)?;
        p.file()
    };
    let outcome = std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("go-parser".into())
            .stack_size(STACK)
            .spawn_scoped(s, run)
            .map(|h| h.join())
    });
    match outcome {
        Ok(Ok(result)) => result.map_err(|b| *b),
        // No thread (or a panic, which the parser does not raise): fail closed.
        Ok(Err(_)) => Err(Fault {
            at: 0,
            message: "the Go parser stopped unexpectedly".into(),
        }),
        Err(e) => Err(Fault {
            at: 0,
            message: format!("no thread for the Go parser: {e}"),
        }),
    }
}

/// What kind of expression (or type) was parsed: only what go/parser's decisions look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum K {
    Ident,
    Selector,
    /// An index or an instantiation `x[i]`, `x[A, B]`.
    Index,
    ArrayType,
    StructType,
    MapType,
    FuncType,
    ChanType,
    InterfaceType,
    Call,
    /// `x.(type)`.
    TypeSwitch,
    Other,
}

/// An expression's summary.
#[derive(Debug, Clone, Copy)]
struct Ex {
    kind: K,
    /// Wrapped in parentheses: the kind is of what is inside, which starts at `inner`.
    paren: bool,
    inner: usize,
    /// go/parser's `isTypeElem`: a literal type, `~T`, or an operator over one.
    type_elem: bool,
    /// go/parser's `extractName(x, force)` finds a type parameter name and a type in `x` (a
    /// `P *C`, `P (C)` or `P *C | D` read as an expression), with `force` true / false.
    split_forced: bool,
    split_unforced: bool,
}

impl Ex {
    fn of(kind: K) -> Ex {
        Ex {
            kind,
            paren: false,
            inner: 0,
            type_elem: matches!(
                kind,
                K::ArrayType
                    | K::StructType
                    | K::FuncType
                    | K::InterfaceType
                    | K::MapType
                    | K::ChanType
            ),
            split_forced: false,
            split_unforced: false,
        }
    }

    fn split(&self, force: bool) -> bool {
        if force {
            self.split_forced
        } else {
            self.split_unforced
        }
    }
}

/// A simple statement's shape, for the statements that take one.
#[derive(Debug, Clone, Copy)]
enum Simple {
    Expr(Ex),
    Assign {
        /// Where the `=`, `:=` or `op=` is.
        at: usize,
        define: bool,
        lhs: usize,
        rhs: usize,
        rhs0: Ex,
        range: bool,
    },
    Other,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Mode {
    Basic,
    LabelOk,
    RangeOk,
}

struct P<'a> {
    scanner: Scanner<'a>,
    text: &'a str,
    tok: T,
    pos: usize,
    end: usize,
    newline: bool,
    expr_lev: i32,
    depth: usize,
    /// Where the token before the current one ends.
    prev_end: usize,
    /// The parameter just read was `name ...T`: where its `...` is.
    last_ddd: Option<usize>,
}

impl<'a> P<'a> {
    fn new(text: &'a str) -> R<Self> {
        let mut scanner = Scanner::new(text)?;
        let first = scanner.next()?;
        Ok(P {
            scanner,
            text,
            tok: first.tok,
            pos: first.start,
            end: first.end,
            newline: first.newline,
            expr_lev: 0,
            depth: 0,
            last_ddd: None,
            prev_end: 0,
        })
    }

    fn next(&mut self) -> R<()> {
        let Token {
            tok,
            start,
            end,
            newline,
        } = self.scanner.next()?;
        self.prev_end = self.end;
        self.tok = tok;
        self.pos = start;
        self.end = end;
        self.newline = newline;
        Ok(())
    }

    fn enter(&mut self) -> R<()> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return fault(
                self.pos,
                format!("exceeded max nesting depth ({MAX_DEPTH} nested constructs)"),
            );
        }
        Ok(())
    }

    fn leave(&mut self) {
        self.depth -= 1;
    }

    /// What the current token is, as go/parser says it in `expected X, found Y`.
    fn found(&self) -> String {
        match self.tok {
            T::Semicolon if self.newline => "newline".into(),
            T::Eof => "'EOF'".into(),
            t if t.is_literal() => self.text.get(self.pos..self.end).unwrap_or("").into(),
            t => format!("'{}'", t.name()),
        }
    }

    fn expected<X>(&self, what: &str) -> R<X> {
        fault(self.pos, format!("expected {what}, found {}", self.found()))
    }

    fn expect(&mut self, tok: T) -> R<()> {
        if self.tok != tok {
            return self.expected(&format!("'{}'", tok.name()));
        }
        self.next()
    }

    /// go/parser's `expectClosing`: a newline before the closer is a missing comma.
    fn expect_closing(&mut self, tok: T, context: &str) -> R<()> {
        if self.tok != tok && self.tok == T::Semicolon && self.newline {
            return fault(self.pos, format!("missing ',' before newline in {context}"));
        }
        self.expect(tok)
    }

    /// go/parser's `expectSemi`: a `;` (or none before `)` and `}`).
    fn expect_semi(&mut self) -> R<()> {
        match self.tok {
            T::RParen | T::RBrace => Ok(()),
            T::Semicolon => self.next(),
            _ => self.expected("';'"),
        }
    }

    /// go/parser's `atComma`: true at a `,`; at anything but `follow`, a missing comma.
    fn at_comma(&self, context: &str, follow: T) -> R<bool> {
        if self.tok == T::Comma {
            return Ok(true);
        }
        if self.tok != follow {
            let newline = if self.tok == T::Semicolon && self.newline {
                " before newline"
            } else {
                ""
            };
            return fault(self.pos, format!("missing ','{newline} in {context}"));
        }
        Ok(false)
    }

    fn ident(&mut self) -> R<()> {
        self.expect(T::Ident)
    }
}
