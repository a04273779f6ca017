//! Go's grammar, expressions: the recognizer's productions for them (see the parent module).

use super::*;

impl P<'_> {
    pub(super) fn expr(&mut self) -> R<Ex> {
        self.binary(None, 1)
    }

    /// A list of expressions: how many, the first's summary, where the last starts.
    pub(super) fn expr_list(&mut self) -> R<(usize, Ex, usize)> {
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

    pub(super) fn binary(&mut self, x: Option<Ex>, prec1: u8) -> R<Ex> {
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

    pub(super) fn unary(&mut self) -> R<Ex> {
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

    pub(super) fn operand(&mut self) -> R<Ex> {
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

    pub(super) fn primary(&mut self, x: Option<Ex>) -> R<Ex> {
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

    pub(super) fn index_or_slice(&mut self) -> R<Ex> {
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

    pub(super) fn call(&mut self, fun: Ex) -> R<Ex> {
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

    pub(super) fn literal_value(&mut self) -> R<()> {
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

    pub(super) fn element(&mut self) -> R<()> {
        self.value()?;
        if self.tok == T::Colon {
            self.next()?;
            self.value()?;
        }
        Ok(())
    }

    pub(super) fn value(&mut self) -> R<()> {
        if self.tok == T::LBrace {
            self.literal_value()
        } else {
            self.expr().map(|_| ())
        }
    }
}
