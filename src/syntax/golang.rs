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

    // ---- Source file and declarations ----

    fn file(&mut self) -> R<()> {
        if self.tok != T::Package {
            return self.expected("'package'");
        }
        self.next()?;
        self.ident()?;
        self.expect_semi()?;
        while self.tok == T::Import {
            self.gen_decl(T::Import)?;
        }
        while self.tok != T::Eof {
            if self.tok == T::Import {
                return fault(self.pos, "imports must appear before other declarations");
            }
            self.decl()?;
        }
        Ok(())
    }

    fn decl(&mut self) -> R<()> {
        match self.tok {
            T::Const | T::Var | T::Type => self.gen_decl(self.tok),
            T::Func => self.func_decl(),
            _ => self.expected("declaration"),
        }
    }

    fn gen_decl(&mut self, keyword: T) -> R<()> {
        self.expect(keyword)?;
        if self.tok == T::LParen {
            self.next()?;
            while self.tok != T::RParen && self.tok != T::Eof {
                self.spec(keyword)?;
            }
            self.expect(T::RParen)?;
            self.expect_semi()
        } else {
            self.spec(keyword)
        }
    }

    fn spec(&mut self, keyword: T) -> R<()> {
        match keyword {
            T::Import => self.import_spec(),
            T::Type => self.type_spec(),
            _ => self.value_spec(keyword),
        }
    }

    fn import_spec(&mut self) -> R<()> {
        match self.tok {
            T::Ident | T::Period => self.next()?,
            _ => {}
        }
        match self.tok {
            T::Str => self.next()?,
            t if t.is_literal() => return fault(self.pos, "import path must be a string"),
            _ => return fault(self.pos, "missing import path"),
        }
        self.expect_semi()
    }

    fn value_spec(&mut self, keyword: T) -> R<()> {
        self.ident_list()?;
        if keyword == T::Const {
            if !matches!(self.tok, T::Eof | T::Semicolon | T::RParen) {
                self.try_type()?;
                if self.tok == T::Assign {
                    self.next()?;
                    self.expr_list()?;
                }
            }
        } else {
            if self.tok != T::Assign {
                self.parse_type()?;
            }
            if self.tok == T::Assign {
                self.next()?;
                self.expr_list()?;
            }
        }
        self.expect_semi()
    }

    fn type_spec(&mut self) -> R<()> {
        self.ident()?;
        if self.tok == T::LBrack {
            self.next()?;
            if self.tok == T::Ident {
                // An array length or a type parameter list: go/parser reads an expression and
                // looks at its shape.
                self.next()?;
                let x = if self.tok == T::LBrack {
                    // `P []E` / `P [N]E`: never an index (not a constant), so a parameter
                    Ex::of(K::Ident)
                } else {
                    self.expr_lev += 1;
                    let lhs = self.primary(Some(Ex::of(K::Ident)))?;
                    let x = self.binary(Some(lhs), 1)?;
                    self.expr_lev -= 1;
                    x
                };
                let force = self.tok == T::Comma;
                let generic = if x.kind == K::Ident && !x.paren {
                    self.tok != T::RBrack
                } else {
                    x.split(force)
                };
                if generic {
                    // The first parameter's constraint, unless the expression held it.
                    let typed = x.kind != K::Ident || x.paren;
                    self.parameter_list(Some(typed), T::RBrack, true, false)?;
                    self.expect(T::RBrack)?;
                    if self.tok == T::Assign {
                        self.next()?;
                    }
                    self.parse_type()?;
                } else {
                    self.array_type_after_len()?;
                }
            } else {
                self.array_type_after_lbrack()?;
            }
        } else {
            if self.tok == T::Assign {
                self.next()?;
            }
            self.parse_type()?;
        }
        self.expect_semi()
    }

    fn func_decl(&mut self) -> R<()> {
        self.expect(T::Func)?;
        if self.tok == T::LParen {
            self.parameters(false, false)?;
        }
        self.ident()?;
        // Go 1.27 has methods with type parameters; go/parser takes them on both.
        self.parameters(true, false)?;
        self.result()?;
        match self.tok {
            T::LBrace => {
                self.body()?;
                self.expect_semi()
            }
            T::Semicolon => {
                self.next()?;
                if self.tok == T::LBrace {
                    return fault(self.pos, "unexpected semicolon or newline before {");
                }
                Ok(())
            }
            _ => self.expect_semi(),
        }
    }

    fn ident_list(&mut self) -> R<()> {
        self.ident()?;
        while self.tok == T::Comma {
            self.next()?;
            self.ident()?;
        }
        Ok(())
    }

    // ---- Parameters ----

    /// `[T any](params)`: returns whether type parameters were present. `result`: a result list,
    /// where `...` is not allowed.
    fn parameters(&mut self, accept_tparams: bool, result: bool) -> R<bool> {
        let mut tparams = false;
        if accept_tparams && self.tok == T::LBrack {
            self.next()?;
            let n = if self.tok != T::RBrack {
                self.parameter_list(None, T::RBrack, true, false)?
            } else {
                0
            };
            if n == 0 {
                return fault(self.pos, "empty type parameter list");
            }
            self.expect(T::RBrack)?;
            tparams = true;
        }
        self.expect(T::LParen)?;
        if self.tok != T::RParen {
            self.parameter_list(None, T::RParen, false, !result)?;
        }
        self.expect(T::RParen)?;
        Ok(tparams)
    }

    /// go/parser's `parseParameterList`; `first`: the first parameter's name was read already
    /// (`Some(true)`: and its type); `ddd_ok`: the last parameter may be `...T`. Returns how
    /// many parameters there are.
    fn parameter_list(
        &mut self,
        first: Option<bool>,
        closing: T,
        tparams: bool,
        ddd_ok: bool,
    ) -> R<usize> {
        let start = self.pos;
        // Each parameter: (its position, has a name, has a type, where its type's `...` is).
        let mut list: Vec<(usize, bool, bool, Option<usize>)> = Vec::new();
        let mut typed = 0usize;
        let mut named = 0usize;
        let mut first = first;
        while first.is_some() || (self.tok != closing && self.tok != T::Eof) {
            let at = self.pos;
            let ddd = (self.tok == T::Ellipsis).then_some(self.pos);
            let (name, typ) = match first.take() {
                Some(true) => {
                    if tparams {
                        self.embedded_elem(true)?;
                    }
                    (true, true)
                }
                Some(false) => self.param_decl(true, tparams)?,
                None => self.param_decl(false, tparams)?,
            };
            // `name ...T` or `...T`
            let ddd = ddd.or(self.last_ddd.take());
            if name || typ {
                list.push((at, name, typ, ddd));
                if name && typ {
                    named += 1;
                }
                if typ {
                    typed += 1;
                }
            }
            if !self.at_comma("parameter list", closing)? {
                break;
            }
            self.next()?;
        }
        if list.is_empty() {
            return Ok(0);
        }
        if named == 0 {
            if tparams {
                let typed = list.iter().any(|p| p.2);
                return if !typed {
                    fault(self.pos, "missing type constraint")
                } else if list.len() == 1 {
                    fault(start, "missing type parameter name or invalid array length")
                } else {
                    fault(start, "missing type parameter name")
                };
            }
        } else if named != list.len() {
            // Right to left: a type without a name, or names with no type after them.
            let mut err = None;
            let mut typ = false;
            let mut ddd = None;
            for p in list.iter_mut().rev() {
                let (at, name, has_type, own_ddd) = *p;
                if has_type {
                    typ = true;
                    ddd = own_ddd;
                    if !name {
                        err = Some(at);
                    }
                } else if !typ {
                    err = Some(at);
                } else {
                    // a name before `b ...T` takes its type
                    p.3 = ddd;
                }
            }
            if let Some(at) = err {
                return if named == typed {
                    // names without a type after them: at the closer
                    let message = if tparams {
                        "missing type constraint"
                    } else {
                        "missing parameter type"
                    };
                    fault(self.pos, message)
                } else if tparams && list.len() == 1 {
                    fault(at, "missing type parameter name or invalid array length")
                } else if tparams {
                    fault(at, "missing type parameter name")
                } else {
                    fault(at, "missing parameter name")
                };
            }
        }
        // `...` only on the last parameter of a parameter list (not a result list).
        let last = list.len() - 1;
        if let Some(at) = list
            .iter()
            .enumerate()
            .find_map(|(i, p)| p.3.filter(|_| !ddd_ok || i < last))
        {
            let message = if ddd_ok {
                "can only use ... with final parameter"
            } else {
                "invalid use of ..."
            };
            return fault(at, message);
        }
        Ok(list.len())
    }

    /// go/parser's `parseParamDecl`: whether the parameter has a name and a type.
    /// `named`: its name was read already.
    fn param_decl(&mut self, named: bool, type_sets: bool) -> R<(bool, bool)> {
        if !named && type_sets && self.tok == T::Tilde {
            self.embedded_elem(false)?;
            return Ok((false, true));
        }
        let (mut name, mut typ) = (false, false);
        if named || self.tok == T::Ident {
            if !named {
                self.next()?;
            }
            name = true;
            match self.tok {
                T::Ident
                | T::Mul
                | T::Arrow
                | T::Func
                | T::Chan
                | T::Map
                | T::Struct
                | T::Interface
                | T::LParen => {
                    self.parse_type()?;
                    typ = true;
                }
                T::LBrack => {
                    // name [...]: an array-typed parameter or an instantiated type
                    let array = self.array_field_or_instance()?;
                    typ = true;
                    name = array;
                }
                T::Ellipsis => {
                    self.last_ddd = Some(self.pos);
                    self.next()?;
                    self.parse_type()?;
                    return Ok((true, true));
                }
                T::Period => {
                    self.next()?;
                    self.ident()?;
                    if self.tok == T::LBrack {
                        self.type_instance()?;
                    }
                    name = false;
                    typ = true;
                }
                T::Tilde if type_sets => {
                    self.embedded_elem(false)?;
                    return Ok((true, true));
                }
                T::Or if type_sets => {
                    self.embedded_elem(true)?;
                    return Ok((false, true));
                }
                _ => {}
            }
        } else {
            match self.tok {
                T::Mul
                | T::Arrow
                | T::Func
                | T::LBrack
                | T::Chan
                | T::Map
                | T::Struct
                | T::Interface
                | T::LParen => {
                    self.parse_type()?;
                    typ = true;
                }
                T::Ellipsis => {
                    self.next()?;
                    self.parse_type()?;
                    return Ok((false, true));
                }
                _ => return self.expected("')'"),
            }
        }
        if type_sets && self.tok == T::Or && typ {
            self.embedded_elem(true)?;
        }
        Ok((name, typ))
    }

    /// go/parser's `parseArrayFieldOrTypeInstance`, after a name at `[`: true for `name [N]E`
    /// or `name []E` (the name is a field or parameter name), false for an instance `T[A, B]`.
    fn array_field_or_instance(&mut self) -> R<bool> {
        self.expect(T::LBrack)?;
        let mut args = 0usize;
        let mut trailing_comma = None;
        if self.tok != T::RBrack {
            self.expr_lev += 1;
            if self.tok == T::Ellipsis {
                // `[...]E`, accepted by go/parser for tolerance
                self.next()?;
            } else {
                self.expr()?;
            }
            args += 1;
            while self.tok == T::Comma {
                let comma = self.pos;
                self.next()?;
                if self.tok == T::RBrack {
                    trailing_comma = Some(comma);
                    break;
                }
                self.expr()?;
                args += 1;
            }
            self.expr_lev -= 1;
        }
        self.expect(T::RBrack)?;
        if args == 0 {
            self.parse_type()?;
            return Ok(true);
        }
        if args == 1 && self.try_type()?.is_some() {
            if let Some(at) = trailing_comma {
                return fault(at, "unexpected comma; expecting ]");
            }
            return Ok(true);
        }
        Ok(false)
    }

    fn result(&mut self) -> R<()> {
        if self.tok == T::LParen {
            self.parameters(false, true)?;
            return Ok(());
        }
        self.try_type()?;
        Ok(())
    }

    // ---- Types ----

    fn parse_type(&mut self) -> R<Ex> {
        match self.try_type()? {
            Some(t) => Ok(t),
            None => self.expected("type"),
        }
    }

    /// go/parser's `tryIdentOrType`: a type if one starts here.
    fn try_type(&mut self) -> R<Option<Ex>> {
        self.enter()?;
        let t = match self.tok {
            T::Ident => {
                let mut k = self.type_name()?;
                if self.tok == T::LBrack {
                    self.type_instance()?;
                    k = K::Index;
                }
                Some(Ex::of(k))
            }
            T::LBrack => Some(self.array_type()?),
            T::Struct => Some(self.struct_type()?),
            T::Mul => {
                self.next()?;
                self.parse_type()?;
                Some(Ex::of(K::Other))
            }
            T::Func => Some(self.func_type()?),
            T::Interface => Some(self.interface_type()?),
            T::Map => {
                self.next()?;
                self.expect(T::LBrack)?;
                self.parse_type()?;
                self.expect(T::RBrack)?;
                self.parse_type()?;
                Some(Ex::of(K::MapType))
            }
            T::Chan | T::Arrow => Some(self.chan_type()?),
            T::LParen => {
                self.next()?;
                let inner = self.pos;
                let mut t = self.parse_type()?;
                self.expect(T::RParen)?;
                if !t.paren {
                    t.inner = inner;
                }
                t.paren = true;
                Some(t)
            }
            _ => None,
        };
        self.leave();
        Ok(t)
    }

    /// `T` or `pkg.T`.
    fn type_name(&mut self) -> R<K> {
        self.ident()?;
        if self.tok == T::Period {
            self.next()?;
            self.ident()?;
            return Ok(K::Selector);
        }
        Ok(K::Ident)
    }

    /// `[T1, T2]` after a type name.
    fn type_instance(&mut self) -> R<()> {
        self.expect(T::LBrack)?;
        self.expr_lev += 1;
        let mut n = 0;
        while self.tok != T::RBrack && self.tok != T::Eof {
            self.parse_type()?;
            n += 1;
            if !self.at_comma("type argument list", T::RBrack)? {
                break;
            }
            self.next()?;
        }
        self.expr_lev -= 1;
        let at = self.pos;
        self.expect_closing(T::RBrack, "type argument list")?;
        if n == 0 {
            return fault(at, "expected type argument list");
        }
        Ok(())
    }

    /// At `[`: `[N]E`, `[]E`, `[...]E`.
    fn array_type(&mut self) -> R<Ex> {
        self.expect(T::LBrack)?;
        self.array_type_after_lbrack()
    }

    fn array_type_after_lbrack(&mut self) -> R<Ex> {
        self.expr_lev += 1;
        if self.tok == T::Ellipsis {
            self.next()?;
        } else if self.tok != T::RBrack {
            self.expr()?;
        }
        self.expr_lev -= 1;
        self.array_type_after_len()
    }

    /// After an array type's length: `]` and the element type.
    fn array_type_after_len(&mut self) -> R<Ex> {
        if self.tok == T::Comma {
            return fault(self.pos, "unexpected comma; expecting ]");
        }
        self.expect(T::RBrack)?;
        self.parse_type()?;
        Ok(Ex::of(K::ArrayType))
    }

    fn chan_type(&mut self) -> R<Ex> {
        if self.tok == T::Chan {
            self.next()?;
            if self.tok == T::Arrow {
                self.next()?;
            }
        } else {
            self.expect(T::Arrow)?;
            self.expect(T::Chan)?;
        }
        self.parse_type()?;
        Ok(Ex::of(K::ChanType))
    }

    fn func_type(&mut self) -> R<Ex> {
        self.expect(T::Func)?;
        let tparams_at = self.pos;
        if self.parameters(true, false)? {
            return fault(tparams_at, "function type must have no type parameters");
        }
        self.result()?;
        Ok(Ex::of(K::FuncType))
    }

    fn struct_type(&mut self) -> R<Ex> {
        self.expect(T::Struct)?;
        self.expect(T::LBrace)?;
        while matches!(self.tok, T::Ident | T::Mul | T::LParen) {
            self.field_decl()?;
        }
        self.expect(T::RBrace)?;
        Ok(Ex::of(K::StructType))
    }

    fn field_decl(&mut self) -> R<()> {
        match self.tok {
            T::Ident => {
                self.next()?;
                if matches!(self.tok, T::Period | T::Str | T::Semicolon | T::RBrace) {
                    // an embedded type
                    if self.tok == T::Period {
                        self.next()?;
                        self.ident()?;
                        if self.tok == T::LBrack {
                            self.type_instance()?;
                        }
                    }
                } else {
                    let mut names = 1;
                    while self.tok == T::Comma {
                        self.next()?;
                        self.ident()?;
                        names += 1;
                    }
                    if names == 1 && self.tok == T::LBrack {
                        self.array_field_or_instance()?;
                    } else {
                        self.parse_type()?;
                    }
                }
            }
            T::Mul => {
                self.next()?;
                if self.tok == T::LParen {
                    return fault(self.pos, "cannot parenthesize embedded type");
                }
                self.qualified_ident()?;
            }
            T::LParen => return fault(self.pos, "cannot parenthesize embedded type"),
            _ => return self.expected("field name or embedded type"),
        }
        if self.tok == T::Str {
            self.next()?;
        }
        self.expect_semi()
    }

    fn qualified_ident(&mut self) -> R<()> {
        self.type_name()?;
        if self.tok == T::LBrack {
            self.type_instance()?;
        }
        Ok(())
    }

    fn interface_type(&mut self) -> R<Ex> {
        self.expect(T::Interface)?;
        self.expect(T::LBrace)?;
        loop {
            match self.tok {
                T::Ident => {
                    let embedded = self.method_spec()?;
                    if embedded {
                        self.embedded_elem(true)?;
                    }
                    self.expect_semi()?;
                }
                T::Tilde => {
                    self.embedded_elem(false)?;
                    self.expect_semi()?;
                }
                _ => {
                    if self.try_type()?.is_some() {
                        self.embedded_elem(true)?;
                        self.expect_semi()?;
                    } else {
                        break;
                    }
                }
            }
        }
        self.expect(T::RBrace)?;
        Ok(Ex::of(K::InterfaceType))
    }

    /// go/parser's `parseMethodSpec`: true when it was an embedded type (a union may follow).
    fn method_spec(&mut self) -> R<bool> {
        let k = self.type_name()?;
        if k != K::Ident {
            if self.tok == T::LBrack {
                self.type_instance()?;
            }
            return Ok(true);
        }
        match self.tok {
            T::LBrack => {
                let lbrack = self.pos;
                self.next()?;
                self.expr_lev += 1;
                let x = self.expr()?;
                self.expr_lev -= 1;
                if x.kind == K::Ident && !x.paren && self.tok != T::Comma && self.tok != T::RBrack {
                    return fault(lbrack, "interface method must have no type parameters");
                }
                if self.at_comma("type argument list", T::RBrack)? {
                    self.expr_lev += 1;
                    self.next()?;
                    while self.tok != T::RBrack && self.tok != T::Eof {
                        self.parse_type()?;
                        if !self.at_comma("type argument list", T::RBrack)? {
                            break;
                        }
                        self.next()?;
                    }
                    self.expr_lev -= 1;
                }
                self.expect_closing(T::RBrack, "type argument list")?;
                Ok(true)
            }
            T::LParen => {
                self.parameters(false, false)?;
                self.result()?;
                Ok(false)
            }
            _ => Ok(true),
        }
    }

    /// go/parser's `embeddedElem`: `~T | U | …`; `have_first`: the first term was read.
    fn embedded_elem(&mut self, have_first: bool) -> R<()> {
        if !have_first {
            self.embedded_term()?;
        }
        while self.tok == T::Or {
            self.next()?;
            self.embedded_term()?;
        }
        Ok(())
    }

    fn embedded_term(&mut self) -> R<()> {
        if self.tok == T::Tilde {
            self.next()?;
            self.parse_type()?;
            return Ok(());
        }
        if self.try_type()?.is_none() {
            return self.expected("~ term or type");
        }
        Ok(())
    }

    // ---- Expressions ----

    fn expr(&mut self) -> R<Ex> {
        self.binary(None, 1)
    }

    /// A list of expressions: how many, the first's summary, where the last starts.
    fn expr_list(&mut self) -> R<(usize, Ex, usize)> {
        let mut last = self.pos;
        let first = self.expr()?;
        let mut n = 1;
        while self.tok == T::Comma {
            self.next()?;
            last = self.pos;
            self.expr()?;
            n += 1;
        }
        Ok((n, first, last))
    }

    fn binary(&mut self, x: Option<Ex>, prec1: u8) -> R<Ex> {
        let mut x = match x {
            Some(x) => x,
            None => self.unary()?,
        };
        loop {
            let op = self.tok;
            let prec = op.precedence();
            if prec < prec1 || prec == 0 {
                return Ok(x);
            }
            self.next()?;
            let y = self.binary(None, prec + 1)?;
            let split_forced = match op {
                T::Mul => x.kind == K::Ident && !x.paren,
                T::Or => x.split_forced,
                _ => false,
            };
            let split_unforced = match op {
                T::Mul => x.kind == K::Ident && !x.paren && y.type_elem,
                T::Or => x.split(y.type_elem),
                _ => false,
            };
            x = Ex {
                kind: K::Other,
                paren: false,
                inner: 0,
                type_elem: x.type_elem || y.type_elem,
                split_forced,
                split_unforced,
            };
        }
    }

    fn unary(&mut self) -> R<Ex> {
        self.enter()?;
        let x = match self.tok {
            T::Add | T::Sub | T::Not | T::Xor | T::And | T::Tilde => {
                let tilde = self.tok == T::Tilde;
                self.next()?;
                self.unary()?;
                Ex {
                    type_elem: tilde,
                    ..Ex::of(K::Other)
                }
            }
            T::Arrow => {
                self.next()?;
                let x = self.unary()?;
                if x.kind == K::ChanType && !x.paren {
                    x
                } else {
                    Ex::of(K::Other)
                }
            }
            T::Mul => {
                self.next()?;
                self.unary()?;
                Ex::of(K::Other)
            }
            _ => self.primary(None)?,
        };
        self.leave();
        Ok(x)
    }

    fn operand(&mut self) -> R<Ex> {
        match self.tok {
            T::Ident => {
                self.next()?;
                Ok(Ex::of(K::Ident))
            }
            T::Int | T::Float | T::Imag | T::Char | T::Str => {
                self.next()?;
                Ok(Ex::of(K::Other))
            }
            T::LParen => {
                self.next()?;
                let inner = self.pos;
                self.expr_lev += 1;
                let mut x = self.expr()?;
                self.expr_lev -= 1;
                self.expect(T::RParen)?;
                if !x.paren {
                    x.inner = inner;
                }
                x.paren = true;
                x.split_forced = false;
                x.split_unforced = false;
                Ok(x)
            }
            T::Func => {
                let t = self.func_type()?;
                if self.tok != T::LBrace {
                    return Ok(t);
                }
                self.expr_lev += 1;
                self.body()?;
                self.expr_lev -= 1;
                Ok(Ex::of(K::Other))
            }
            _ => match self.try_type()? {
                Some(t) => Ok(t),
                None => self.expected("operand"),
            },
        }
    }

    fn primary(&mut self, x: Option<Ex>) -> R<Ex> {
        let mut x = match x {
            Some(x) => x,
            None => self.operand()?,
        };
        loop {
            match self.tok {
                T::Period => {
                    self.next()?;
                    match self.tok {
                        T::Ident => {
                            self.next()?;
                            x = Ex::of(K::Selector);
                        }
                        T::LParen => {
                            self.next()?;
                            let switch = self.tok == T::Type;
                            if switch {
                                self.next()?;
                            } else {
                                self.parse_type()?;
                            }
                            self.expect(T::RParen)?;
                            x = Ex::of(if switch { K::TypeSwitch } else { K::Other });
                        }
                        _ => return self.expected("selector or type assertion"),
                    }
                }
                T::LBrack => x = self.index_or_slice()?,
                T::LParen => {
                    x = self.call(x)?;
                }
                T::LBrace => {
                    let literal_type = match x.kind {
                        K::Ident | K::Selector | K::Index => self.expr_lev >= 0,
                        K::ArrayType | K::StructType | K::MapType => true,
                        _ => false,
                    };
                    if !literal_type {
                        return Ok(x);
                    }
                    if x.paren {
                        return fault(x.inner, "cannot parenthesize type in composite literal");
                    }
                    self.literal_value()?;
                    x = Ex::of(K::Other);
                }
                _ => return Ok(x),
            }
        }
    }

    fn index_or_slice(&mut self) -> R<Ex> {
        self.expect(T::LBrack)?;
        if self.tok == T::RBrack {
            return self.expected("operand");
        }
        self.expr_lev += 1;
        let mut index = [false; 3];
        let mut colons = [0usize; 2];
        let mut ncolons = 0;
        let mut instance = false;
        if self.tok != T::Colon {
            self.expr()?;
            index[0] = true;
        }
        match self.tok {
            T::Colon => {
                while self.tok == T::Colon && ncolons < 2 {
                    colons[ncolons] = self.pos;
                    ncolons += 1;
                    self.next()?;
                    if !matches!(self.tok, T::Colon | T::RBrack | T::Eof) {
                        self.expr()?;
                        index[ncolons] = true;
                    }
                }
            }
            T::Comma => {
                instance = true;
                while self.tok == T::Comma {
                    self.next()?;
                    if self.tok != T::RBrack && self.tok != T::Eof {
                        self.parse_type()?;
                    }
                }
            }
            _ => {}
        }
        self.expr_lev -= 1;
        self.expect(T::RBrack)?;
        if ncolons == 2 {
            if !index[1] {
                return fault(colons[0], "middle index required in 3-index slice");
            }
            if !index[2] {
                return fault(colons[1], "final index required in 3-index slice");
            }
        }
        Ok(Ex::of(if ncolons > 0 && !instance {
            K::Other
        } else {
            K::Index
        }))
    }

    fn call(&mut self, fun: Ex) -> R<Ex> {
        self.expect(T::LParen)?;
        self.expr_lev += 1;
        let mut args = 0usize;
        let mut ellipsis = false;
        let mut arg0 = None;
        while self.tok != T::RParen && self.tok != T::Eof && !ellipsis {
            let a = self.expr()?;
            if arg0.is_none() {
                arg0 = Some(a);
            }
            args += 1;
            if self.tok == T::Ellipsis {
                ellipsis = true;
                self.next()?;
            }
            if !self.at_comma("argument list", T::RParen)? {
                break;
            }
            self.next()?;
        }
        self.expr_lev -= 1;
        self.expect_closing(T::RParen, "argument list")?;
        let splits = fun.kind == K::Ident && !fun.paren && args == 1 && !ellipsis;
        let arg_elem = arg0.is_some_and(|a| a.type_elem);
        Ok(Ex {
            kind: K::Call,
            paren: false,
            inner: 0,
            type_elem: false,
            split_forced: splits,
            split_unforced: splits && arg_elem,
        })
    }

    fn literal_value(&mut self) -> R<()> {
        self.enter()?;
        self.expect(T::LBrace)?;
        self.expr_lev += 1;
        while self.tok != T::RBrace && self.tok != T::Eof {
            self.element()?;
            if !self.at_comma("composite literal", T::RBrace)? {
                break;
            }
            self.next()?;
        }
        self.expr_lev -= 1;
        self.expect_closing(T::RBrace, "composite literal")?;
        self.leave();
        Ok(())
    }

    fn element(&mut self) -> R<()> {
        self.value()?;
        if self.tok == T::Colon {
            self.next()?;
            self.value()?;
        }
        Ok(())
    }

    fn value(&mut self) -> R<()> {
        if self.tok == T::LBrace {
            self.literal_value()
        } else {
            self.expr().map(|_| ())
        }
    }

    // ---- Statements ----

    fn body(&mut self) -> R<()> {
        self.block()
    }

    fn block(&mut self) -> R<()> {
        self.expect(T::LBrace)?;
        self.stmt_list()?;
        self.expect(T::RBrace)
    }

    fn stmt_list(&mut self) -> R<()> {
        while !matches!(self.tok, T::Case | T::Default | T::RBrace | T::Eof) {
            self.stmt()?;
        }
        Ok(())
    }

    fn stmt(&mut self) -> R<()> {
        self.enter()?;
        match self.tok {
            T::Const | T::Type | T::Var => self.gen_decl(self.tok)?,
            T::Ident
            | T::Int
            | T::Float
            | T::Imag
            | T::Char
            | T::Str
            | T::Func
            | T::LParen
            | T::LBrack
            | T::Struct
            | T::Map
            | T::Chan
            | T::Interface
            | T::Add
            | T::Sub
            | T::Mul
            | T::And
            | T::Xor
            | T::Arrow
            | T::Not => {
                let (_, labeled) = self.simple_stmt(Mode::LabelOk)?;
                if !labeled {
                    self.expect_semi()?;
                }
            }
            T::Go | T::Defer => {
                let what = self.tok.name();
                self.next()?;
                let at = self.pos;
                let x = self.expr()?;
                if x.paren {
                    return fault(
                        at,
                        format!("expression in {what} must not be parenthesized"),
                    );
                }
                if x.kind != K::Call {
                    return fault(
                        self.prev_end,
                        format!("expression in {what} must be function call"),
                    );
                }
                self.expect_semi()?;
            }
            T::Return => {
                self.next()?;
                if self.tok != T::Semicolon && self.tok != T::RBrace {
                    self.expr_list()?;
                }
                self.expect_semi()?;
            }
            T::Break | T::Continue | T::Goto | T::Fallthrough => {
                let tok = self.tok;
                self.next()?;
                // `goto` needs its label (go/parser 1.27), `break`/`continue` may have one.
                if tok == T::Goto || (tok != T::Fallthrough && self.tok == T::Ident) {
                    self.ident()?;
                }
                self.expect_semi()?;
            }
            T::LBrace => {
                self.block()?;
                self.expect_semi()?;
            }
            T::If => self.if_stmt()?,
            T::Switch => self.switch_stmt()?,
            T::Select => self.select_stmt()?,
            T::For => self.for_stmt()?,
            T::Semicolon => self.next()?,
            T::RBrace => {}
            _ => return self.expected("statement"),
        }
        self.leave();
        Ok(())
    }

    /// go/parser's `parseSimpleStmt`: the statement's shape and whether it was a label (then the
    /// labelled statement was parsed too).
    fn simple_stmt(&mut self, mode: Mode) -> R<(Simple, bool)> {
        let x0_at = self.pos;
        let (lhs, x0, last_at) = self.expr_list()?;
        match self.tok {
            T::Define | T::Assign | T::OpAssign => {
                let at = self.pos;
                let define = self.tok == T::Define;
                let plain = matches!(self.tok, T::Define | T::Assign);
                self.next()?;
                if mode == Mode::RangeOk && self.tok == T::Range && plain {
                    if lhs > 2 {
                        return fault(last_at, "expected at most 2 expressions");
                    }
                    self.next()?;
                    let x = self.expr()?;
                    return Ok((
                        Simple::Assign {
                            at,
                            define,
                            lhs,
                            rhs: 1,
                            rhs0: x,
                            range: true,
                        },
                        false,
                    ));
                }
                let (rhs, rhs0, _) = self.expr_list()?;
                return Ok((
                    Simple::Assign {
                        at,
                        define: define && plain,
                        lhs,
                        rhs,
                        rhs0,
                        range: false,
                    },
                    false,
                ));
            }
            _ => {}
        }
        if lhs > 1 {
            return fault(x0_at, format!("expected 1 expression, found {lhs}"));
        }
        match self.tok {
            T::Colon => {
                let colon = self.pos;
                self.next()?;
                if mode == Mode::LabelOk && x0.kind == K::Ident && !x0.paren {
                    self.stmt()?;
                    return Ok((Simple::Other, true));
                }
                fault(colon, "illegal label declaration")
            }
            T::Arrow => {
                self.next()?;
                self.expr()?;
                Ok((Simple::Other, false))
            }
            T::Inc | T::Dec => {
                self.next()?;
                Ok((Simple::Other, false))
            }
            _ => Ok((Simple::Expr(x0), false)),
        }
    }

    /// go/parser's `makeExpr`: a condition or tag must be an expression statement.
    fn make_expr(&self, s: Simple, at: usize, what: &str) -> R<()> {
        let found = match s {
            Simple::Expr(_) => return Ok(()),
            Simple::Assign { .. } => "assignment",
            Simple::Other => "simple statement",
        };
        fault(
            at,
            format!(
                "expected {what}, found {found} (missing parentheses around composite literal?)"
            ),
        )
    }

    fn if_stmt(&mut self) -> R<()> {
        self.enter()?;
        self.expect(T::If)?;
        if self.tok == T::LBrace {
            return fault(self.pos, "missing condition in if statement");
        }
        let prev = self.expr_lev;
        self.expr_lev = -1;
        let mut init = None;
        let mut init_at = self.pos;
        if self.tok != T::Semicolon {
            if self.tok == T::Var {
                self.next()?;
                return fault(self.pos, "var declaration not allowed in if initializer");
            }
            init = Some(self.simple_stmt(Mode::Basic)?.0);
        }
        let cond;
        if self.tok != T::LBrace {
            let semi_at = self.pos;
            let semi_newline = self.newline;
            if self.tok == T::Semicolon {
                self.next()?;
            } else {
                self.expect(T::Semicolon)?;
            }
            if self.tok != T::LBrace {
                init_at = self.pos;
                cond = Some(self.simple_stmt(Mode::Basic)?.0);
            } else {
                let message = if semi_newline {
                    "unexpected newline, expecting { after if clause"
                } else {
                    "missing condition in if statement"
                };
                return fault(semi_at, message);
            }
        } else {
            cond = init;
        }
        if let Some(c) = cond {
            self.make_expr(c, init_at, "boolean expression")?;
        }
        self.expr_lev = prev;
        self.block()?;
        if self.tok == T::Else {
            self.next()?;
            match self.tok {
                T::If => self.if_stmt()?,
                T::LBrace => {
                    self.block()?;
                    self.expect_semi()?;
                }
                _ => return self.expected("if statement or block"),
            }
        } else {
            self.expect_semi()?;
        }
        self.leave();
        Ok(())
    }

    fn switch_stmt(&mut self) -> R<()> {
        self.expect(T::Switch)?;
        let mut tag = None;
        let mut tag_at = self.pos;
        if self.tok != T::LBrace {
            let prev = self.expr_lev;
            self.expr_lev = -1;
            if self.tok != T::Semicolon {
                tag = Some(self.simple_stmt(Mode::Basic)?.0);
            }
            if self.tok == T::Semicolon {
                self.next()?;
                tag = None;
                if self.tok != T::LBrace {
                    tag_at = self.pos;
                    tag = Some(self.simple_stmt(Mode::Basic)?.0);
                }
            }
            self.expr_lev = prev;
        }
        let type_switch = match tag {
            Some(Simple::Expr(x)) => x.kind == K::TypeSwitch,
            Some(Simple::Assign {
                at,
                define,
                lhs: 1,
                rhs: 1,
                rhs0,
                range: false,
            }) if rhs0.kind == K::TypeSwitch => {
                if !define {
                    return fault(at, "expected ':=', found '='");
                }
                true
            }
            _ => false,
        };
        if !type_switch {
            if let Some(t) = tag {
                self.make_expr(t, tag_at, "switch expression")?;
            }
        }
        self.expect(T::LBrace)?;
        while matches!(self.tok, T::Case | T::Default) {
            if self.tok == T::Case {
                self.next()?;
                self.expr_list()?;
            } else {
                self.next()?;
            }
            self.expect(T::Colon)?;
            self.stmt_list()?;
        }
        self.expect(T::RBrace)?;
        self.expect_semi()
    }

    fn select_stmt(&mut self) -> R<()> {
        self.expect(T::Select)?;
        self.expect(T::LBrace)?;
        while matches!(self.tok, T::Case | T::Default) {
            if self.tok == T::Case {
                self.next()?;
                let at = self.pos;
                let (lhs, ..) = self.expr_list()?;
                if self.tok == T::Arrow {
                    if lhs > 1 {
                        return fault(at, "expected 1 expression");
                    }
                    self.next()?;
                    self.expr()?;
                } else if matches!(self.tok, T::Assign | T::Define) {
                    if lhs > 2 {
                        return fault(at, "expected 1 or 2 expressions");
                    }
                    self.next()?;
                    self.expr()?;
                } else if lhs > 1 {
                    return fault(at, "expected 1 expression");
                }
            } else {
                self.next()?;
            }
            self.expect(T::Colon)?;
            self.stmt_list()?;
        }
        self.expect(T::RBrace)?;
        self.expect_semi()
    }

    fn for_stmt(&mut self) -> R<()> {
        self.expect(T::For)?;
        if self.tok != T::LBrace {
            let prev = self.expr_lev;
            self.expr_lev = -1;
            let mut cond = None;
            let mut cond_at = self.pos;
            let mut range = false;
            if self.tok != T::Semicolon {
                if self.tok == T::Range {
                    self.next()?;
                    self.expr()?;
                    range = true;
                } else {
                    let (s, _) = self.simple_stmt(Mode::RangeOk)?;
                    if let Simple::Assign { range: true, .. } = s {
                        range = true;
                    }
                    cond = Some(s);
                }
            }
            if !range && self.tok == T::Semicolon {
                self.next()?;
                cond = None;
                if self.tok != T::Semicolon {
                    cond_at = self.pos;
                    cond = Some(self.simple_stmt(Mode::Basic)?.0);
                }
                self.expect_semi()?;
                if self.tok != T::LBrace {
                    self.simple_stmt(Mode::Basic)?;
                }
            }
            if let (false, Some(c)) = (range, cond) {
                self.make_expr(c, cond_at, "boolean or range expression")?;
            }
            self.expr_lev = prev;
        }
        self.block()?;
        self.expect_semi()
    }
}
