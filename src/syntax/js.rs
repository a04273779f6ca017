//! JavaScript and TypeScript through oxc: the parser (syntax errors) and its semantic checker with
//! syntax checking on (the early errors a parser leaves to a second pass: `let a; let a;`, a
//! `break` to a label that does not exist, `await` where it is not allowed, ...). Parsed, never
//! run. It owns which goal (module or script) and dialect each extension gets, and how oxc's
//! diagnostics become an [`Outcome`].
//!
//! # Goals
//!
//! - `.mjs`, `.mts`: module only. `.cjs`: CommonJS (a script run inside a function, so a top-level
//!   `return` is allowed), as Node runs it.
//! - `.js`, `.jsx`, `.ts`, `.tsx`, `.cts`, and declaration files (`.d.ts`, `.d.mts`, `.d.cts`,
//!   `.d.css.ts`): module first, then CommonJS; either parsing is enough (Node's own syntax
//!   detection for `.js` without a `"type"`; TypeScript compiles both, and a `.cts` file may use
//!   `import` syntax that it turns into `require`). When both fail, the module's error is
//!   reported if the file uses module syntax (`import`, `export`, `import.meta`), the script's
//!   otherwise.
//! - `.jsx` and `.tsx` parse JSX; `.js` does not (JSX in a `.js` file is the error Node reports).
//!
//! # Stack
//!
//! oxc is a recursive-descent parser without a depth guard, so the input is first measured by
//! [`super::nesting`] (deeper than [`super::nesting::LIMIT`] units is invalid; Node 20's
//! `node --check` already gives up at 2,000 nested parentheses, `RangeError: Maximum call stack
//! size exceeded`), and the parse runs on a thread of its own whose stack ([`STACK`]) holds that
//! many units of the costliest construct measured (a class method: 2.6 KB a unit in a debug
//! build, less in a release build) many times over.

use oxc_allocator::Allocator;
use oxc_diagnostics::OxcDiagnostic;
use oxc_parser::{ParseOptions, Parser};
use oxc_semantic::SemanticBuilder;
use oxc_span::SourceType;

use super::{nesting, position, utf8, Outcome};

/// The oxc release compiled in (kept equal to the `oxc_parser` requirement in Cargo.toml by a
/// test), named in `how`.
pub(super) const OXC: &str = "oxc 0.146";

/// The parse thread's stack. Virtual memory: only the pages a parse touches are backed. 10,000
/// units at 2.6 KB are 26 MB: the rest is margin for what the lexical estimate may miss.
pub(super) const STACK: usize = 512 << 20;

/// What an extension asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Flavor {
    typescript: bool,
    declaration: bool,
    jsx: bool,
    goals: Goals,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Goals {
    Module,
    CommonJs,
    /// Module, else CommonJS.
    Either,
}

impl Flavor {
    /// The flavor for a file name (ASCII case ignored), or `None` when it is not JavaScript or
    /// TypeScript.
    pub(super) fn of(name: &str) -> Option<Flavor> {
        let lower = name.to_ascii_lowercase();
        let (stem, ext) = lower.rsplit_once('.')?;
        let flavor = |typescript, jsx, goals| Flavor {
            typescript,
            declaration: false,
            jsx,
            goals,
        };
        let mut f = match ext {
            "js" => flavor(false, false, Goals::Either),
            "mjs" => flavor(false, false, Goals::Module),
            "cjs" => flavor(false, false, Goals::CommonJs),
            "jsx" => flavor(false, true, Goals::Either),
            "ts" | "cts" => flavor(true, false, Goals::Either),
            "mts" => flavor(true, false, Goals::Module),
            "tsx" => flavor(true, true, Goals::Either),
            _ => return None,
        };
        // `x.d.ts`, `x.d.mts`, `x.d.cts`, and `x.d.css.ts` (TypeScript's
        // allowArbitraryExtensions); not `.d.ts` alone, nor `.d.tsx`.
        f.declaration = f.typescript
            && !f.jsx
            && (stem.ends_with(".d") && stem.len() > 2
                || ext == "ts" && stem.rfind(".d.").is_some_and(|i| i > 0));
        Some(f)
    }

    /// `TypeScript declaration (oxc 0.146)`.
    fn how(self) -> String {
        let lang = match (self.typescript, self.declaration, self.jsx) {
            (true, true, _) => "TypeScript declaration",
            (true, false, true) => "TSX",
            (true, false, false) => "TypeScript",
            (false, _, true) => "JSX",
            (false, _, false) => "JavaScript",
        };
        format!("{lang} ({OXC})")
    }

    fn source_type(self, module: bool) -> SourceType {
        let base = if self.declaration {
            SourceType::d_ts()
        } else if self.typescript {
            SourceType::ts()
        } else {
            SourceType::mjs()
        };
        let base = base.with_jsx(self.jsx);
        if module {
            base.with_module(true)
        } else {
            base.with_commonjs(true)
        }
    }
}

/// One attempt's result: no error, or the first error (position, message) and how many more.
struct Attempt {
    first: Option<(usize, usize, String)>,
    count: usize,
    module_syntax: bool,
}

/// Parses `bytes` as `flavor` says. See the module doc.
pub(super) fn parse(flavor: Flavor, bytes: &[u8]) -> Outcome {
    let how = flavor.how();
    let text = match utf8(bytes, &how) {
        Ok(text) => text,
        Err(invalid) => return invalid,
    };
    if let Err(at) = nesting::check(text.as_bytes(), flavor.jsx) {
        let (line, column) = position(text.as_bytes(), at);
        return Outcome::Invalid {
            line,
            column,
            message: format!(
                "nested deeper than {} levels: not parsed (split the expression or statement)",
                nesting::LIMIT
            ),
            how,
        };
    }
    let run = || judge(flavor, text);
    let outcome = std::thread::scope(|s| {
        std::thread::Builder::new()
            .name("referee-js-parse".into())
            .stack_size(STACK)
            .spawn_scoped(s, run)
            .map(|h| h.join())
    });
    match outcome {
        Ok(Ok(attempt)) => outcome_of(attempt, how),
        Ok(Err(_)) => Outcome::Inconclusive {
            why: format!("the {how} parser failed (panicked) on this file"),
        },
        Err(e) => Outcome::Inconclusive {
            why: format!("no thread for the {how} parser: {e}"),
        },
    }
}

fn outcome_of(attempt: Attempt, how: String) -> Outcome {
    let Some((line, column, message)) = attempt.first else {
        return Outcome::Parsed { how };
    };
    super::first_of(line, column, message, attempt.count, how)
}

/// Tries the flavor's goals in order; the first clean parse wins.
fn judge(flavor: Flavor, text: &str) -> Attempt {
    match flavor.goals {
        Goals::Module => attempt(flavor, text, true),
        Goals::CommonJs => attempt(flavor, text, false),
        Goals::Either => {
            let module = attempt(flavor, text, true);
            if module.first.is_none() {
                return module;
            }
            let script = attempt(flavor, text, false);
            if script.first.is_none() || module.module_syntax {
                // A file with `import`/`export` is a module: its errors as a module count.
                return if script.first.is_none() {
                    script
                } else {
                    module
                };
            }
            script
        }
    }
}

/// One parse, then (when the parse is clean) the semantic checker's early errors.
fn attempt(flavor: Flavor, text: &str, module: bool) -> Attempt {
    let allocator = Allocator::default();
    let options = ParseOptions {
        // Invalid regular expressions (`/(/`) are early errors too.
        parse_regular_expression: true,
        ..ParseOptions::default()
    };
    let parsed = Parser::new(&allocator, text, flavor.source_type(module))
        .with_options(options)
        .parse();
    let module_syntax = parsed.module_record.has_module_syntax;
    let mut errors: Vec<OxcDiagnostic> = parsed.diagnostics.errors().cloned().collect();
    if errors.is_empty() && !parsed.panicked {
        let checked = SemanticBuilder::new()
            .with_check_syntax_error(true)
            .build(&parsed.program);
        errors.extend(checked.diagnostics.errors().cloned());
    }
    let located: Vec<(u32, String)> = errors
        .iter()
        .map(|e| (offset(e), describe(e, text)))
        .collect();
    let first = located
        .iter()
        .min_by_key(|(at, _)| *at)
        .map(|(at, message)| {
            let (line, column) = position(text.as_bytes(), *at as usize);
            (line, column, message.clone())
        });
    Attempt {
        first,
        count: located.len(),
        module_syntax,
    }
}

/// Where a diagnostic points: its primary label, else the last of its labels in the file (the
/// place the conflict was found, e.g. the second `let a`), else the start.
fn offset(e: &OxcDiagnostic) -> u32 {
    e.labels
        .iter()
        .find(|l| l.primary())
        .or_else(|| e.labels.iter().max_by_key(|l| l.offset()))
        .map_or(0, |l| l.offset())
}

/// The diagnostic's message, with the other labelled places (`first declared at 1:5`).
fn describe(e: &OxcDiagnostic, text: &str) -> String {
    let mut message = e.message.to_string();
    let at = offset(e);
    for label in e.labels.iter().filter(|l| l.offset() != at) {
        let (line, column) = position(text.as_bytes(), label.offset() as usize);
        match label.label() {
            Some(what) => message.push_str(&format!(" ({line}:{column}: {what})")),
            None => message.push_str(&format!(" (see {line}:{column})")),
        }
    }
    message
}
