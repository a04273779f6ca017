//! The JavaScript and TypeScript parse itself: oxc's parser and semantic checker (see [`super`]).

use oxc_allocator::Allocator;
use oxc_diagnostics::OxcDiagnostic;
use oxc_parser::{ParseOptions, Parser};
use oxc_semantic::SemanticBuilder;
use oxc_span::SourceType;

use super::{Flavor, Goals};
use crate::{nesting, position, utf8, Outcome};

/// The oxc release compiled in (kept equal to the `oxc_parser` requirement in crates/syntax/Cargo.toml by a
/// test), named in `how`.
pub(crate) const OXC: &str = "oxc 0.146";

/// The parse thread's stack. Virtual memory: only the pages a parse touches are backed. 10,000
/// units at 2.6 KB are 26 MB: the rest is margin for what the lexical estimate may miss.
pub(crate) const STACK: usize = 512 << 20;

impl Flavor {
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
pub(crate) fn parse(flavor: Flavor, bytes: &[u8]) -> Outcome {
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
    crate::first_of(line, column, message, attempt.count, how)
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
