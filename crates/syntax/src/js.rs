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
//! size exceeded`), and the parse runs on a thread of its own whose stack (`oxc::STACK`) holds that
//! many units of the costliest construct measured (a class method: 2.6 KB a unit in a debug
//! build, less in a release build) many times over.

/// What an extension asks for. Told without oxc too, so that a referee built without the
/// `javascript` feature still knows these files are its to judge (and says it cannot).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    not(feature = "javascript"),
    allow(dead_code, reason = "read by the oxc parse only")
)]
pub(super) struct Flavor {
    typescript: bool,
    declaration: bool,
    jsx: bool,
    goals: Goals,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    not(feature = "javascript"),
    allow(dead_code, reason = "read by the oxc parse only")
)]
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
}

/// The oxc parser and semantic checker behind [`parse`] (the `javascript` feature).
#[cfg(feature = "javascript")]
mod oxc;
#[cfg(feature = "javascript")]
pub(super) use oxc::parse;
#[cfg(test)]
#[cfg(feature = "javascript")]
pub(super) use oxc::OXC;
