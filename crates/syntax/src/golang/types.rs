//! Go's grammar, types: the recognizer's productions for them (see the parent module).

use super::*;

impl P<'_> {
    pub(super) fn parse_type(&mut self) -> R<Ex> {
        match self.try_type()? {
            Some(t) => Ok(t),
            None => self.expected("type"),
        }
    }

    /// go/parser's `tryIdentOrType`: a type if one starts here.
    pub(super) fn try_type(&mut self) -> R<Option<Ex>> {
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
    pub(super) fn type_name(&mut self) -> R<K> {
        self.ident()?;
        if self.tok == T::Period {
            self.next()?;
            self.ident()?;
            return Ok(K::Selector);
        }
        Ok(K::Ident)
    }

    /// `[T1, T2]` after a type name.
    pub(super) fn type_instance(&mut self) -> R<()> {
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
    pub(super) fn array_type(&mut self) -> R<Ex> {
        self.expect(T::LBrack)?;
        self.array_type_after_lbrack()
    }

    pub(super) fn array_type_after_lbrack(&mut self) -> R<Ex> {
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
    pub(super) fn array_type_after_len(&mut self) -> R<Ex> {
        if self.tok == T::Comma {
            return fault(self.pos, "unexpected comma; expecting ]");
        }
        self.expect(T::RBrack)?;
        self.parse_type()?;
        Ok(Ex::of(K::ArrayType))
    }

    pub(super) fn chan_type(&mut self) -> R<Ex> {
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

    pub(super) fn func_type(&mut self) -> R<Ex> {
        self.expect(T::Func)?;
        let tparams_at = self.pos;
        if self.parameters(true, false)? {
            return fault(tparams_at, "function type must have no type parameters");
        }
        self.result()?;
        Ok(Ex::of(K::FuncType))
    }

    pub(super) fn struct_type(&mut self) -> R<Ex> {
        self.expect(T::Struct)?;
        self.expect(T::LBrace)?;
        while matches!(self.tok, T::Ident | T::Mul | T::LParen) {
            self.field_decl()?;
        }
        self.expect(T::RBrace)?;
        Ok(Ex::of(K::StructType))
    }

    pub(super) fn field_decl(&mut self) -> R<()> {
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

    pub(super) fn qualified_ident(&mut self) -> R<()> {
        self.type_name()?;
        if self.tok == T::LBrack {
            self.type_instance()?;
        }
        Ok(())
    }

    pub(super) fn interface_type(&mut self) -> R<Ex> {
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
    pub(super) fn method_spec(&mut self) -> R<bool> {
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
    pub(super) fn embedded_elem(&mut self, have_first: bool) -> R<()> {
        if !have_first {
            self.embedded_term()?;
        }
        while self.tok == T::Or {
            self.next()?;
            self.embedded_term()?;
        }
        Ok(())
    }

    pub(super) fn embedded_term(&mut self) -> R<()> {
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
}
