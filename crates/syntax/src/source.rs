//! Source files through tree-sitter grammars: parsed, never run. tree-sitter always returns a
//! tree; a syntax error shows as an `ERROR` node (text it could not fit) or a `MISSING` node (a
//! token it had to invent). Both the parse (an explicit stack in C) and the walk over the tree (a
//! cursor) are iterative, so nesting depth costs no Rust stack; time is bounded by cancelling the
//! parse after [`PARSE_BUDGET`].

use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use tree_sitter::{Language, Node, ParseOptions, ParseState, Parser};

#[cfg(feature = "rust")]
use super::utf8;
use super::{position, Outcome, PARSE_BUDGET};

/// Longest excerpt of the offending text quoted in a message, in characters.
const EXCERPT: usize = 40;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Lang {
    #[cfg(feature = "python")]
    Python,
    #[cfg(feature = "rust")]
    Rust,
}

impl Lang {
    fn language(self) -> Language {
        match self {
            #[cfg(feature = "python")]
            Lang::Python => tree_sitter_python::LANGUAGE.into(),
            #[cfg(feature = "rust")]
            Lang::Rust => tree_sitter_rust::LANGUAGE.into(),
        }
    }

    /// The language and the grammar crate, for `how`.
    fn names(self) -> (&'static str, &'static str) {
        match self {
            #[cfg(feature = "python")]
            Lang::Python => ("Python", "tree-sitter-python"),
            #[cfg(feature = "rust")]
            Lang::Rust => ("Rust", "tree-sitter-rust"),
        }
    }

    /// `Python (tree-sitter-python 0.25.0)`: the grammar's version from its own metadata when it
    /// carries some.
    fn how(self, language: &Language) -> String {
        let (lang, grammar) = self.names();
        let version = match language.metadata() {
            Some(m) => format!(
                " {}.{}.{}",
                m.major_version, m.minor_version, m.patch_version
            ),
            None => String::new(),
        };
        // The referee's own pass over Python's layout (super::python) judges with the grammar.
        let tokenizer = match self {
            #[cfg(feature = "python")]
            Lang::Python => " and the referee's tokenizer",
            #[cfg(feature = "rust")]
            Lang::Rust => "",
        };
        format!("{lang} ({grammar}{version}{tokenizer})")
    }
}

pub(super) fn parse(lang: Lang, bytes: &[u8]) -> Outcome {
    parse_within(lang, bytes, PARSE_BUDGET)
}

pub(super) fn parse_within(lang: Lang, bytes: &[u8], budget: Duration) -> Outcome {
    let language = lang.language();
    let how = lang.how(&language);
    match lang {
        #[cfg(feature = "python")]
        Lang::Python => python(&language, how, bytes, budget),
        #[cfg(feature = "rust")]
        Lang::Rust => match utf8(bytes, &how) {
            Ok(text) => tree_sitter(
                lang,
                &language,
                how,
                text.as_bytes(),
                text.as_bytes(),
                budget,
            ),
            Err(invalid) => invalid,
        },
    }
}

/// A Python file: decoded as it declares, the grammar's judgment and the tokenizer's layout.
#[cfg(feature = "python")]
fn python(language: &Language, how: String, bytes: &[u8], budget: Duration) -> Outcome {
    // PEP 263: the declared encoding, else UTF-8.
    let text = match super::pyencoding::decode(bytes, &how) {
        Ok(text) => text,
        Err(outcome) => return outcome,
    };
    let text = text.as_bytes();
    // The layout rules tree-sitter-python does not enforce (CPython's tokenizer): its error
    // unless the grammar's is on an earlier line. The grammar reads the logical lines joined.
    let layout = super::python::layout(text);
    let outcome = tree_sitter(Lang::Python, language, how, text, &layout.joined, budget);
    let Some(fault) = layout.fault else {
        return outcome;
    };
    let (line, column) = position(text, fault.offset);
    match outcome {
        Outcome::Invalid { .. } if fault.at_eof => outcome,
        Outcome::Invalid { line: l, .. } if l < line => outcome,
        Outcome::Inconclusive { .. } => outcome,
        Outcome::Parsed { how } | Outcome::Invalid { how, .. } => Outcome::Invalid {
            line,
            column,
            message: fault.message,
            how,
        },
        Outcome::NotApplicable => outcome,
    }
}

/// Why [`tree_within`] gave no tree.
pub(super) enum Unparsed {
    /// The grammar does not load (its ABI is not this tree-sitter's).
    Grammar(tree_sitter::LanguageError),
    /// The parse was cancelled after its budget.
    OutOfTime,
}

/// `text` parsed with `language`, cancelled after `budget` of wall time.
pub(super) fn tree_within(
    language: &Language,
    text: &[u8],
    budget: Duration,
) -> Result<tree_sitter::Tree, Unparsed> {
    let mut parser = Parser::new();
    parser.set_language(language).map_err(Unparsed::Grammar)?;
    let started = Instant::now();
    let mut out_of_time = |_: &ParseState| {
        if started.elapsed() > budget {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    };
    let options = ParseOptions::new().progress_callback(&mut out_of_time);
    let len = text.len();
    parser
        .parse_with_options(
            &mut |i, _| if i < len { &text[i..] } else { &[] },
            None,
            Some(options),
        )
        .ok_or(Unparsed::OutOfTime)
}

/// Parses `parsed` (`text`, or for Python the same bytes with its logical lines joined) and
/// reports positions in `text`.
fn tree_sitter(
    lang: Lang,
    language: &Language,
    how: String,
    text: &[u8],
    parsed: &[u8],
    budget: Duration,
) -> Outcome {
    let tree = match tree_within(language, parsed, budget) {
        Ok(tree) => tree,
        Err(Unparsed::Grammar(e)) => {
            return Outcome::Inconclusive {
                why: format!("the {how} grammar does not load: {e}"),
            }
        }
        Err(Unparsed::OutOfTime) => {
            return Outcome::Inconclusive {
                why: format!(
                    "parsing with {how} took longer than {}: cancelled",
                    humantime::format_duration(budget)
                ),
            }
        }
    };
    let root = tree.root_node();
    if !root.has_error() {
        // The Python 2 the grammar still accepts.
        let beyond = match lang {
            #[cfg(feature = "python")]
            Lang::Python => super::pygrammar::legacy(root, parsed),
            #[cfg(feature = "rust")]
            Lang::Rust => None,
        };
        {
            if let Some((offset, message)) = beyond {
                let (line, column) = position(text, offset);
                return Outcome::Invalid {
                    line,
                    column,
                    message,
                    how,
                };
            }
        }
        return Outcome::Parsed { how };
    }
    let (first, count) = errors(root);
    let Some(first) = first else {
        // has_error() said yes but the walk found no node: report it rather than pass.
        return Outcome::Invalid {
            line: 1,
            column: 1,
            message: "syntax error".into(),
            how,
        };
    };
    let (line, column) = position(text, first.start_byte());
    super::first_of(line, column, describe(first, text), count, how)
}

/// The first error node in document order and how many there are. An `ERROR` node counts once,
/// whatever it contains; only subtrees that contain an error are walked.
fn errors(root: Node<'_>) -> (Option<Node<'_>>, usize) {
    let mut cursor = root.walk();
    let mut first = None;
    let mut count = 0usize;
    loop {
        let node = cursor.node();
        let is_error = node.is_error() || node.is_missing();
        if is_error {
            count += 1;
            if first.is_none() {
                first = Some(node);
            }
        }
        // Down into a subtree with an error, else across, else up and across.
        if !is_error && node.has_error() && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return (first, count);
            }
        }
    }
}

/// `missing `)``, or `syntax error: unexpected `...``.
fn describe(node: Node<'_>, text: &[u8]) -> String {
    if node.is_missing() {
        let kind = node.kind();
        return if node.is_named() {
            format!("missing {}", kind.replace('_', " "))
        } else {
            format!("missing `{kind}`")
        };
    }
    let bytes = text
        .get(node.start_byte()..node.end_byte())
        .unwrap_or_default();
    let excerpt = String::from_utf8_lossy(bytes);
    let first_line = excerpt
        .lines()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("")
        .trim();
    if first_line.is_empty() {
        return "syntax error".into();
    }
    let mut quoted: String = first_line.chars().take(EXCERPT).collect();
    if first_line.chars().count() > EXCERPT || excerpt.trim() != first_line {
        quoted.push('…');
    }
    format!("syntax error: unexpected `{quoted}`")
}
