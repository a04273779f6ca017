//! Go's grammar, source files, declarations and parameters: the recognizer's productions for them (see the parent module).

use super::*;

impl P<'_> {
    pub(super) fn file(&mut self) -> R<()> {
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

    pub(super) fn decl(&mut self) -> R<()> {
        match self.tok {
            T::Const | T::Var | T::Type => self.gen_decl(self.tok),
            T::Func => self.func_decl(),
            _ => self.expected("declaration"),
        }
    }

    pub(super) fn gen_decl(&mut self, keyword: T) -> R<()> {
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

    pub(super) fn spec(&mut self, keyword: T) -> R<()> {
        match keyword {
            T::Import => self.import_spec(),
            T::Type => self.type_spec(),
            _ => self.value_spec(keyword),
        }
    }

    pub(super) fn import_spec(&mut self) -> R<()> {
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

    pub(super) fn value_spec(&mut self, keyword: T) -> R<()> {
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

    pub(super) fn type_spec(&mut self) -> R<()> {
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

    pub(super) fn func_decl(&mut self) -> R<()> {
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

    pub(super) fn ident_list(&mut self) -> R<()> {
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
    pub(super) fn parameters(&mut self, accept_tparams: bool, result: bool) -> R<bool> {
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
    pub(super) fn parameter_list(
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
    pub(super) fn param_decl(&mut self, named: bool, type_sets: bool) -> R<(bool, bool)> {
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
    pub(super) fn array_field_or_instance(&mut self) -> R<bool> {
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

    pub(super) fn result(&mut self) -> R<()> {
        if self.tok == T::LParen {
            self.parameters(false, true)?;
            return Ok(());
        }
        self.try_type()?;
        Ok(())
    }
}
