//! Go's grammar, statements: the recognizer's productions for them (see the parent module).

use super::*;

impl P<'_> {
    pub(super) fn body(&mut self) -> R<()> {
        self.block()
    }

    pub(super) fn block(&mut self) -> R<()> {
        self.expect(T::LBrace)?;
        self.stmt_list()?;
        self.expect(T::RBrace)
    }

    pub(super) fn stmt_list(&mut self) -> R<()> {
        while !matches!(self.tok, T::Case | T::Default | T::RBrace | T::Eof) {
            self.stmt()?;
        }
        Ok(())
    }

    pub(super) fn stmt(&mut self) -> R<()> {
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
    pub(super) fn simple_stmt(&mut self, mode: Mode) -> R<(Simple, bool)> {
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
    pub(super) fn make_expr(&self, s: Simple, at: usize, what: &str) -> R<()> {
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

    pub(super) fn if_stmt(&mut self) -> R<()> {
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

    pub(super) fn switch_stmt(&mut self) -> R<()> {
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

    pub(super) fn select_stmt(&mut self) -> R<()> {
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

    pub(super) fn for_stmt(&mut self) -> R<()> {
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
