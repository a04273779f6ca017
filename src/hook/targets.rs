//! What a tool call is about to write: the file of a Write/Edit, the paths of an `apply_patch`
//! envelope, and the files a shell command writes, found by parsing the command with
//! brush-parser (the POSIX/bash parser of the brush shell: lists, pipelines, `&&`, subshells,
//! groups, loops and conditionals, functions, redirections, here-documents and command
//! substitutions, as bash reads them) and reading what each simple command does with its
//! words.
//!
//! Advisory (the stop-point judgment is what holds, whatever a shell does), but it errs on the
//! side of a write: a target the referee cannot name exactly becomes a [`Written::Pattern`]
//! (`$F`, a glob, `tar -x`, `find … -delete`, `xargs sed -i`, `git checkout BRANCH`, a `cd` to
//! somewhere unknown), which the caller checks against the protected paths that exist, and a
//! command that cannot be parsed counts every word of it as written. Nothing here runs or
//! expands anything: variables are known only when the command itself assigns them, `~` is the
//! referee's `$HOME`, and a patch file named by `git apply` or `patch` is read to find the files
//! it changes. Commands that write through an interpreter's own code (`python -c`, `node -e`) or
//! a script file are not read: the stop judges what they wrote.

use std::collections::HashMap;
use std::path::{Component, Path, PathBuf};

use brush_parser::ast;
use brush_parser::word::{Parameter, ParameterExpr, TildeExpr, WordPiece, WordPieceWithSource};

/// A file a command writes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Written {
    /// An absolute path, `.` and `..` taken out as written.
    Path(PathBuf),
    /// Absolute paths matching a glob in which `*` also spans `/`: what the command may write
    /// but does not name (`/ws/src/*`, `*/orchestrator.py`, `*` for anywhere).
    Pattern(String),
}

/// A target and the words that name it, for the reason the agent is given.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Write {
    pub written: Written,
    /// The command, or the word, that writes it (as written, cut short).
    pub by: String,
}

/// Commands nested deeper than this (subshells, substitutions, `sh -c` inside `sh -c`) are not
/// parsed: every word counts as written.
pub const MAX_NESTING: usize = 64;

/// Longest command parsed; a longer one counts every word as written.
const MAX_COMMAND: usize = 256 << 10;

/// Biggest patch file read to find what `git apply` or `patch` writes.
const MAX_PATCH: u64 = 8 << 20;

/// The files a shell `command` run in `cwd` (absolute) writes, as far as its text tells.
pub fn shell(command: &str, cwd: &Path) -> Vec<Write> {
    read(command, cwd).out
}

/// Whether `command` certainly writes no file: every command in it is known, none writes, and
/// no redirection does. A call like that needs no judgment after it runs.
pub fn writes_nothing(command: &str, cwd: &Path) -> bool {
    let sh = read(command, cwd);
    !sh.opaque && sh.out.is_empty()
}

fn read(command: &str, cwd: &Path) -> Shell {
    let mut sh = Shell {
        cwd: Dir::Known(normalise(cwd)),
        vars: HashMap::new(),
        depth: 0,
        out: Vec::new(),
        opaque: false,
    };
    sh.script(command);
    sh.out
        .retain(|w| !matches!(&w.written, Written::Path(p) if is_device(p)));
    sh
}

/// The paths of a Codex `apply_patch` envelope (`*** Add File: P`, `*** Update File: P`,
/// `*** Delete File: P`, `*** Move to: P`).
pub fn apply_patch(patch: &str) -> Vec<String> {
    patch
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            [
                "*** Add File: ",
                "*** Update File: ",
                "*** Delete File: ",
                "*** Move to: ",
            ]
            .iter()
            .find_map(|p| l.strip_prefix(p))
            .map(|p| p.trim().to_string())
        })
        .filter(|p| !p.is_empty())
        .collect()
}

/// `path` (absolute, or relative to `cwd`) relative to the workspace `root`, `/`-separated,
/// `.` and `..` resolved as written (then through the real parent directory when it exists, so a
/// symlinked directory is seen where it leads). `None` when it lies outside `root`.
pub fn relative(root: &Path, cwd: &Path, path: &str) -> Option<String> {
    let p = Path::new(path);
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    };
    let lexical = normalise(&joined);
    let real = lexical
        .parent()
        .and_then(|d| std::fs::canonicalize(d).ok())
        .zip(lexical.file_name())
        .map(|(d, n)| d.join(n))
        .unwrap_or_else(|| lexical.clone());
    let root_real = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    for (candidate, base) in [(&real, &root_real), (&lexical, &root.to_path_buf())] {
        if let Ok(rest) = candidate.strip_prefix(base) {
            let rel = rest
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            return (!rel.is_empty()).then_some(rel);
        }
    }
    None
}

/// `.` and `..` taken out as written.
pub fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            c => out.push(c.as_os_str()),
        }
    }
    out
}

fn is_device(p: &Path) -> bool {
    p == Path::new("/dev/null")
        || p.starts_with("/dev/fd")
        || p == Path::new("/dev/stdout")
        || p == Path::new("/dev/stderr")
        || p == Path::new("/dev/tty")
}

/// A word's value as far as it is known.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Val {
    /// Known exactly.
    Lit(String),
    /// A glob (`*` spanning `/`); `anywhere` when it starts with something unknown, so it may
    /// be an absolute path as well as one relative to the working directory.
    Pat { glob: String, anywhere: bool },
}

impl Val {
    fn any() -> Val {
        Val::Pat {
            glob: "*".into(),
            anywhere: true,
        }
    }

    fn lit(&self) -> Option<&str> {
        match self {
            Val::Lit(s) => Some(s),
            Val::Pat { .. } => None,
        }
    }

    /// The text to recognise an option by (a pattern is never an option).
    fn opt(&self) -> &str {
        self.lit().unwrap_or("")
    }

    fn shown(&self) -> String {
        match self {
            Val::Lit(s) => s.clone(),
            Val::Pat { glob, .. } => glob.clone(),
        }
    }
}

/// A glob matching `s` literally.
fn escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '{' | '}' | '\\' | '!') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Dir {
    Known(PathBuf),
    /// After `cd $X`, `cd -`, …
    Unknown,
}

/// What the command reads on its standard input, when the command line says.
#[derive(Debug, Clone)]
enum Stdin {
    File(Val),
    Text(String),
}

struct Shell {
    cwd: Dir,
    vars: HashMap<String, Val>,
    depth: usize,
    out: Vec<Write>,
    /// Whether a command the referee does not know (or cannot name) runs: it may write anything.
    opaque: bool,
}

impl Shell {
    /// Reads a whole script: parsed, or, when it cannot be, every word taken as written.
    fn script(&mut self, text: &str) {
        if self.depth >= MAX_NESTING || text.len() > MAX_COMMAND || nesting(text) > MAX_NESTING {
            return self.unparsed(text);
        }
        let options = brush_parser::ParserOptions::default();
        let mut parser = brush_parser::Parser::new(text.as_bytes(), &options);
        match parser.parse_program() {
            Ok(program) => {
                self.depth += 1;
                for list in &program.complete_commands {
                    self.list(list);
                }
                self.depth -= 1;
            }
            Err(_) => self.unparsed(text),
        }
    }

    /// A command the parser refused: every word that is not an option is a possible target.
    fn unparsed(&mut self, text: &str) {
        self.opaque = true;
        let by = cut(text);
        for word in text.split(|c: char| {
            c.is_whitespace() || matches!(c, ';' | '&' | '|' | '(' | ')' | '<' | '>' | '`')
        }) {
            let word = word.trim_matches(|c| matches!(c, '\'' | '"' | '{' | '}' | '$'));
            if word.is_empty() || word.starts_with('-') {
                continue;
            }
            let val = if word.contains(['$', '*', '?', '[']) {
                Val::any()
            } else {
                Val::Lit(word.to_string())
            };
            self.write(&val, &by);
        }
    }

    fn list(&mut self, list: &ast::CompoundList) {
        for ast::CompoundListItem(and_or, sep) in &list.0 {
            if matches!(sep, ast::SeparatorOperator::Async) {
                self.scoped(|sh| sh.and_or(and_or));
            } else {
                self.and_or(and_or);
            }
        }
    }

    fn and_or(&mut self, l: &ast::AndOrList) {
        self.pipeline(&l.first);
        for next in &l.additional {
            match next {
                ast::AndOr::And(p) | ast::AndOr::Or(p) => self.pipeline(p),
            }
        }
    }

    fn pipeline(&mut self, p: &ast::Pipeline) {
        if p.seq.len() == 1 {
            self.command(&p.seq[0]);
        } else {
            // Each command of a pipeline runs in a subshell: a `cd` there stays there.
            for c in &p.seq {
                self.scoped(|sh| sh.command(c));
            }
        }
    }

    /// Runs `f` with the working directory and variables restored after it.
    fn scoped(&mut self, f: impl FnOnce(&mut Shell)) {
        let (cwd, vars) = (self.cwd.clone(), self.vars.clone());
        f(self);
        self.cwd = cwd;
        self.vars = vars;
    }

    fn command(&mut self, c: &ast::Command) {
        match c {
            ast::Command::Simple(s) => self.simple(s),
            ast::Command::Compound(cc, redirects) => {
                if let Some(r) = redirects {
                    for io in &r.0 {
                        self.redirect(io, "a redirection");
                    }
                }
                self.compound(cc);
            }
            ast::Command::Function(f) => {
                let ast::FunctionBody(body, redirects) = &f.body;
                if let Some(r) = redirects {
                    for io in &r.0 {
                        self.redirect(io, "a redirection");
                    }
                }
                // A function's body counts as if it ran: defining it is on the way to calling it.
                self.scoped(|sh| sh.compound(body));
            }
            ast::Command::ExtendedTest(_, redirects) => {
                if let Some(r) = redirects {
                    for io in &r.0 {
                        self.redirect(io, "a redirection");
                    }
                }
            }
        }
    }

    fn compound(&mut self, c: &ast::CompoundCommand) {
        match c {
            ast::CompoundCommand::BraceGroup(g) => self.list(&g.list),
            ast::CompoundCommand::Subshell(s) => self.scoped(|sh| sh.list(&s.list)),
            ast::CompoundCommand::ForClause(f) => {
                let value = f.values.as_ref().map_or_else(Val::any, |words| {
                    let vals: Vec<Val> = words.iter().map(|w| self.word(w)).collect();
                    alternatives(&vals)
                });
                self.vars.insert(f.variable_name.clone(), value);
                self.list(&f.body.list);
            }
            ast::CompoundCommand::ArithmeticForClause(f) => self.list(&f.body.list),
            ast::CompoundCommand::CaseClause(c) => {
                for item in &c.cases {
                    if let Some(cmd) = &item.cmd {
                        self.list(cmd);
                    }
                }
            }
            ast::CompoundCommand::IfClause(i) => {
                self.list(&i.condition);
                self.list(&i.then);
                for e in i.elses.iter().flatten() {
                    if let Some(cond) = &e.condition {
                        self.list(cond);
                    }
                    self.list(&e.body);
                }
            }
            ast::CompoundCommand::WhileClause(w) | ast::CompoundCommand::UntilClause(w) => {
                self.list(&w.0);
                self.list(&w.1.list);
            }
            ast::CompoundCommand::Coprocess(c) => self.scoped(|sh| sh.command(&c.body)),
            ast::CompoundCommand::Arithmetic(_) => {}
        }
    }

    /// A redirection's target, when it writes one; its here-document or here-string, when it
    /// feeds the command.
    fn redirect(&mut self, io: &ast::IoRedirect, by: &str) -> Option<Stdin> {
        match io {
            ast::IoRedirect::File(_, kind, target) => {
                let word = match target {
                    ast::IoFileRedirectTarget::Filename(w) => w,
                    // `>&file` is `&>file` in bash; `>&2`, `>&-` name descriptors.
                    ast::IoFileRedirectTarget::Duplicate(w)
                        if !w.value.chars().all(|c| c.is_ascii_digit() || c == '-') =>
                    {
                        w
                    }
                    ast::IoFileRedirectTarget::ProcessSubstitution(_, s) => {
                        self.scoped(|sh| sh.list(&s.list));
                        return None;
                    }
                    _ => return None,
                };
                let val = self.word(word);
                match kind {
                    ast::IoFileRedirectKind::Read => Some(Stdin::File(val)),
                    ast::IoFileRedirectKind::Write
                    | ast::IoFileRedirectKind::Append
                    | ast::IoFileRedirectKind::Clobber
                    | ast::IoFileRedirectKind::ReadAndWrite
                    | ast::IoFileRedirectKind::DuplicateOutput => {
                        self.write(&val, &format!("{by} to `{}`", val.shown()));
                        None
                    }
                    ast::IoFileRedirectKind::DuplicateInput => None,
                }
            }
            ast::IoRedirect::OutputAndError(w, _) => {
                let val = self.word(w);
                self.write(&val, &format!("{by} to `{}`", val.shown()));
                None
            }
            ast::IoRedirect::HereDocument(_, doc) => {
                if doc.requires_expansion {
                    self.substitutions(&doc.doc.value);
                }
                Some(Stdin::Text(doc.doc.value.clone()))
            }
            ast::IoRedirect::HereString(_, w) => {
                let val = self.word(w);
                Some(Stdin::Text(val.lit().unwrap_or_default().to_string()))
            }
        }
    }

    fn simple(&mut self, s: &ast::SimpleCommand) {
        let mut words: Vec<Val> = Vec::new();
        let mut assigned: Vec<(String, Val)> = Vec::new();
        let mut stdin = None;
        let items = s
            .prefix
            .iter()
            .flat_map(|p| p.0.iter())
            .map(Some)
            .chain([None])
            .chain(s.suffix.iter().flat_map(|p| p.0.iter()).map(Some));
        for item in items {
            let Some(item) = item else {
                if let Some(w) = &s.word_or_name {
                    let v = self.word(w);
                    words.push(v);
                }
                continue;
            };
            match item {
                ast::CommandPrefixOrSuffixItem::IoRedirect(io) => {
                    if let Some(i) = self.redirect(io, "a redirection") {
                        stdin = Some(i);
                    }
                }
                ast::CommandPrefixOrSuffixItem::Word(w) => {
                    let v = self.word(w);
                    words.push(v);
                }
                // `x=y` after the command's name is an argument (`dd of=f`, `export F=x`).
                ast::CommandPrefixOrSuffixItem::AssignmentWord(_, w) if !words.is_empty() => {
                    let v = self.word(w);
                    words.push(v);
                }
                ast::CommandPrefixOrSuffixItem::AssignmentWord(a, _) => {
                    let value = match &a.value {
                        ast::AssignmentValue::Scalar(w) => self.word(w),
                        ast::AssignmentValue::Array(_) => Val::any(),
                    };
                    if let ast::AssignmentName::VariableName(name) = &a.name {
                        assigned.push((name.clone(), value));
                    }
                }
                ast::CommandPrefixOrSuffixItem::ProcessSubstitution(_, sub) => {
                    self.scoped(|sh| sh.list(&sub.list));
                    words.push(Val::any());
                }
            }
        }
        if words.is_empty() {
            // `F=x` alone sets the shell's variable.
            self.vars.extend(assigned);
            return;
        }
        let by = cut(&words.iter().map(Val::shown).collect::<Vec<_>>().join(" "));
        self.run(words, stdin, &by);
    }

    fn resolve(&self, p: &str) -> Option<PathBuf> {
        if Path::new(p).is_absolute() {
            return Some(normalise(Path::new(p)));
        }
        match &self.cwd {
            Dir::Known(d) => Some(normalise(&d.join(p))),
            Dir::Unknown => None,
        }
    }

    fn is_dir(&self, v: &Val) -> bool {
        match v {
            Val::Lit(p) => {
                p.ends_with('/')
                    || matches!(p.rsplit('/').next(), Some("." | ".."))
                    || self.resolve(p).is_some_and(|p| p.is_dir())
            }
            Val::Pat { .. } => true,
        }
    }

    fn exists(&self, v: &Val) -> bool {
        v.lit()
            .and_then(|p| self.resolve(p))
            .is_some_and(|p| p.symlink_metadata().is_ok())
    }

    /// Records `v` as written (a directory named literally counts for everything under it).
    fn write(&mut self, v: &Val, by: &str) {
        let written = match v {
            Val::Lit(p) if p.is_empty() => return,
            Val::Lit(p) => match self.resolve(p) {
                Some(abs) => {
                    if abs.is_dir() && !abs.is_symlink() {
                        self.out.push(Write {
                            written: Written::Pattern(format!(
                                "{}/*",
                                escape(&abs.to_string_lossy())
                            )),
                            by: cut(by),
                        });
                    }
                    Written::Path(abs)
                }
                None => Written::Pattern(format!("*/{}", escape(p.trim_start_matches("./")))),
            },
            Val::Pat { glob, anywhere } => {
                if glob.starts_with('/') || *anywhere {
                    Written::Pattern(glob.clone())
                } else {
                    match &self.cwd {
                        Dir::Known(d) => {
                            Written::Pattern(format!("{}/{glob}", escape(&d.to_string_lossy())))
                        }
                        Dir::Unknown => Written::Pattern(format!("*/{glob}")),
                    }
                }
            }
        };
        let w = Write {
            written,
            by: cut(by),
        };
        if !self.out.contains(&w) {
            self.out.push(w);
        }
    }

    /// A word's value: quotes taken out, a variable the command line assigned put in, `~` as
    /// `$HOME`, anything else unknown (a command substitution is read for what it writes).
    fn word(&mut self, w: &ast::Word) -> Val {
        let options = brush_parser::ParserOptions::default();
        let Ok(pieces) = brush_parser::word::parse(&w.value, &options) else {
            return Val::any();
        };
        let mut parts = Vec::new();
        self.pieces(pieces, &mut parts, false);
        assemble(&parts)
    }

    fn pieces(&mut self, pieces: Vec<WordPieceWithSource>, out: &mut Vec<Part>, quoted: bool) {
        for piece in pieces.into_iter().map(|p| p.piece) {
            match piece {
                WordPiece::Text(t) if quoted => out.push(Part::Lit(t)),
                WordPiece::Text(t) => {
                    if t.contains(['*', '?', '[']) || (t.contains('{') && t.contains(',')) {
                        out.push(Part::Glob(t));
                    } else {
                        out.push(Part::Lit(t));
                    }
                }
                WordPiece::SingleQuotedText(t) | WordPiece::AnsiCQuotedText(t) => {
                    out.push(Part::Lit(t))
                }
                WordPiece::EscapeSequence(e) => {
                    out.push(Part::Lit(e.trim_start_matches('\\').to_string()))
                }
                WordPiece::DoubleQuotedSequence(inner)
                | WordPiece::GettextDoubleQuotedSequence(inner) => self.pieces(inner, out, true),
                WordPiece::TildeExpansion(TildeExpr::Home) => match std::env::var("HOME") {
                    Ok(h) if !h.is_empty() => out.push(Part::Lit(h)),
                    _ => out.push(Part::Any),
                },
                WordPiece::ParameterExpansion(ParameterExpr::Parameter {
                    parameter: Parameter::Named(name),
                    indirect: false,
                }) => match self.vars.get(&name) {
                    Some(Val::Lit(v)) => out.push(Part::Lit(v.clone())),
                    Some(Val::Pat { glob, .. }) => out.push(Part::Glob(glob.clone())),
                    None => out.push(Part::Any),
                },
                WordPiece::CommandSubstitution(s) | WordPiece::BackquotedCommandSubstitution(s) => {
                    self.scoped_script(&s);
                    out.push(Part::Any);
                }
                _ => out.push(Part::Any),
            }
        }
    }

    /// The command substitutions of a here-document's text, read for what they write.
    fn substitutions(&mut self, text: &str) {
        let options = brush_parser::ParserOptions::default();
        if let Ok(pieces) = brush_parser::word::parse(text, &options) {
            let mut parts = Vec::new();
            self.pieces(pieces, &mut parts, true);
        }
    }
}

#[derive(Debug, Clone)]
enum Part {
    Lit(String),
    /// Glob syntax, as written (`*.py`, `{a,b}`).
    Glob(String),
    Any,
}

fn assemble(parts: &[Part]) -> Val {
    if parts.iter().all(|p| matches!(p, Part::Lit(_))) {
        return Val::Lit(
            parts
                .iter()
                .map(|p| match p {
                    Part::Lit(s) => s.as_str(),
                    _ => "",
                })
                .collect(),
        );
    }
    let mut glob = String::new();
    for p in parts {
        match p {
            Part::Lit(s) => glob.push_str(&escape(s)),
            Part::Glob(g) => glob.push_str(g),
            Part::Any => {
                if !glob.ends_with('*') {
                    glob.push('*');
                }
            }
        }
    }
    // A glob globset cannot read (`[` unclosed, …) may be anything.
    if globset::Glob::new(&glob).is_err() {
        return Val::any();
    }
    Val::Pat {
        anywhere: matches!(parts.first(), Some(Part::Any)),
        glob,
    }
}

/// One value standing for any of `vals`.
fn alternatives(vals: &[Val]) -> Val {
    match vals {
        [] => Val::any(),
        [one] => one.clone(),
        many => {
            let anywhere = many
                .iter()
                .any(|v| matches!(v, Val::Pat { anywhere: true, .. }));
            let globs: Vec<String> = many
                .iter()
                .map(|v| match v {
                    Val::Lit(s) => escape(s),
                    Val::Pat { glob, .. } => glob.clone(),
                })
                .collect();
            let glob = format!("{{{}}}", globs.join(","));
            if globset::Glob::new(&glob).is_err() {
                return Val::any();
            }
            Val::Pat { glob, anywhere }
        }
    }
}

/// Everything under `dir`.
fn under(dir: &Val) -> Val {
    join(
        dir,
        &Val::Pat {
            glob: "*".into(),
            anywhere: false,
        },
    )
}

/// `dir/name`.
fn join(dir: &Val, name: &Val) -> Val {
    if dir.lit() == Some(".") {
        return match name {
            Val::Lit(_) => name.clone(),
            Val::Pat { glob, .. } => Val::Pat {
                glob: glob.clone(),
                anywhere: false,
            },
        };
    }
    match (dir, name) {
        (Val::Lit(d), Val::Lit(n)) => Val::Lit(format!("{}/{n}", d.trim_end_matches('/'))),
        _ => {
            let (d, anywhere) = match dir {
                Val::Lit(d) => (escape(d.trim_end_matches('/')), false),
                Val::Pat { glob, anywhere } => (glob.trim_end_matches('/').to_string(), *anywhere),
            };
            let n = match name {
                Val::Lit(n) => escape(n),
                Val::Pat { glob, .. } => glob.clone(),
            };
            Val::Pat {
                glob: format!("{d}/{n}"),
                anywhere,
            }
        }
    }
}

/// The last component of a path (`*` when unknown).
fn file_name(v: &Val) -> Val {
    match v {
        Val::Lit(s) => Val::Lit(
            s.trim_end_matches('/')
                .rsplit('/')
                .next()
                .unwrap_or(s)
                .to_string(),
        ),
        Val::Pat { .. } => Val::Pat {
            glob: "*".into(),
            anywhere: false,
        },
    }
}

fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

fn cut(s: &str) -> String {
    let s = s.trim();
    if s.chars().count() <= 120 {
        return s.to_string();
    }
    let mut t: String = s.chars().take(120).collect();
    t.push('…');
    t
}

/// How deeply `text` nests, counted loosely (brackets inside quotes count too): a bound on
/// the parser's recursion, never an under-estimate.
fn nesting(text: &str) -> usize {
    let (mut depth, mut max) = (0usize, 0usize);
    for c in text.chars() {
        match c {
            '(' | '{' | '`' => {
                depth += 1;
                max = max.max(depth);
            }
            ')' | '}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    max
}

mod commands;
mod git;
mod options;

#[cfg(test)]
mod tests;
