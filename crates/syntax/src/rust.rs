//! Rust sources through `syn` (the parser of the ecosystem's procedural macros, `full` grammar):
//! where tree-sitter-rust rejected valid code (`str!`, `$`/`~` in a `macro_rules!` matcher,
//! `where (): Trait`) and accepted broken code (an attribute or doc comment left dangling at the
//! end of the file), syn follows rustc's parser.
//!
//! The edition is the one the nearest `Cargo.toml` between the file and the workspace root names
//! (`edition = "2015"`, or `edition.workspace = true` and the workspace's), 2015 when a manifest
//! names none, as Cargo does; 2021 when there is no manifest. syn parses the 2018+ language, in
//! which `async`, `await` and `try` are keywords; in a 2015 crate they are identifiers
//! (`try!(...)`, `fn async()`), so there they are read as identifiers of the same length first
//! (`dyn` is a keyword in types there too).
//! A bare trait object with bounds (`type A = Fn() + Send;`, valid before 2021) is beyond syn:
//! where syn stops at its `+` in a 2015 or 2018 crate, tree-sitter-rust decides.
//!
//! syn recurses per nesting level, so it runs on a thread of its own with [`STACK`] of stack, and
//! a file nested deeper than [`MAX_DEPTH`] brackets, or with more than [`MAX_PRESSURE`] tokens it
//! might recurse through, is judged by tree-sitter-rust instead, whose parser has a stack
//! of its own. The thread also takes proc-macro2's per-thread source map with it when it ends.

use std::path::Path;

use proc_macro2::{TokenStream, TokenTree};

use super::Outcome;

/// The parsing thread's stack: 256 MiB of address space, touched only as deep as the file goes.
const STACK: usize = 256 << 20;
/// Bracket depth beyond which syn is not used.
const MAX_DEPTH: usize = 256;
/// Tokens that syn may recurse through (see `too_deep`) beyond which it is not used: 20,000 on
/// [`STACK`] leaves room for syn's largest frames in an unoptimised build.
const MAX_PRESSURE: usize = 20_000;
/// The most of a `Cargo.toml` read for its edition.
const MANIFEST_LIMIT: u64 = 1 << 20;

/// Checks a `.rs` file: syn, or tree-sitter-rust for a file too deep for syn.
pub(super) fn check(rel: &str, bytes: &[u8], abs: &Path) -> Outcome {
    let how = "Rust (syn 2)";
    let text = match super::utf8(bytes, how) {
        Ok(text) => text,
        Err(invalid) => return invalid,
    };
    match parse(text, abs, rel) {
        Some(outcome) => outcome,
        None => match super::source::parse(super::source::Lang::Rust, bytes) {
            Outcome::Parsed { how } => Outcome::Parsed {
                how: format!("{how}, nested too deep for syn"),
            },
            Outcome::Invalid {
                line,
                column,
                message,
                how,
            } => Outcome::Invalid {
                line,
                column,
                message,
                how: format!("{how}, nested too deep for syn"),
            },
            other => other,
        },
    }
}

/// How syn judges `text`, or `None` when the file is too deep for it (use tree-sitter).
fn parse(text: &str, abs: &Path, rel: &str) -> Option<Outcome> {
    let edition = edition(abs, rel);
    let how = format!("Rust {edition} (syn 2)");
    let text = text.to_owned();
    let worker = std::thread::Builder::new()
        .name("referee-syn".into())
        .stack_size(STACK)
        .spawn(move || judge(&text, edition, how));
    match worker {
        Ok(handle) => handle.join().unwrap_or_else(|_| {
            Some(Outcome::Inconclusive {
                why: "the Rust parser (syn) failed on this file".into(),
            })
        }),
        Err(e) => Some(Outcome::Inconclusive {
            why: format!("no thread for the Rust parser: {e}"),
        }),
    }
}

fn judge(text: &str, edition: u16, how: String) -> Option<Outcome> {
    let tokens: TokenStream = match text.parse() {
        Ok(tokens) => tokens,
        Err(e) => {
            let start = e.span().start();
            return Some(invalid(text, start.line, start.column, e.to_string(), how));
        }
    };
    if too_deep(tokens) {
        return None;
    }
    let patched;
    let source = if edition == 2015 {
        patched = as_2015(text);
        patched.as_str()
    } else {
        text
    };
    match syn::parse_file(source) {
        Ok(_) => Some(Outcome::Parsed { how }),
        Err(e) => {
            // A bare trait object with bounds (`type A = Fn() + Send;`) is valid before 2021,
            // and syn does not take it: there tree-sitter-rust, which does, decides.
            let at = e.span().byte_range().start;
            let before = source.as_bytes().get(..at).unwrap_or_default();
            let bare = match source.as_bytes().get(at) {
                Some(b'+') => true,
                // `Fn(&u8) + Send`: syn stops at the parenthesis.
                Some(b'(') => [&b"Fn"[..], b"FnMut", b"FnOnce"]
                    .iter()
                    .any(|f| before.ends_with(f)),
                _ => false,
            };
            if edition < 2021 && bare {
                let bytes = text.as_bytes();
                if let Outcome::Parsed { how } =
                    super::source::parse(super::source::Lang::Rust, bytes)
                {
                    return Some(Outcome::Parsed {
                        how: format!("{how}, a bare trait object syn does not take"),
                    });
                }
            }
            let start = e.span().start();
            // The end of the input has no span of its own (an empty one at 0).
            let line = if e.span().byte_range() == (0..0) {
                0
            } else {
                start.line
            };
            Some(invalid(text, line, start.column, e.to_string(), how))
        }
    }
}

/// syn's 1-based line and 0-based character column; line 0 (the end of the input, which has no
/// span of its own) is the end of the text.
fn invalid(text: &str, line: usize, column0: usize, message: String, how: String) -> Outcome {
    let (line, column) = if line == 0 {
        super::position(text.as_bytes(), text.len())
    } else {
        (line, column0 + 1)
    };
    Outcome::Invalid {
        line,
        column,
        message,
        how,
    }
}

/// Whether syn might recurse deeper than its thread's stack allows. syn recurses at most about
/// once per token, and not across a `;` or `,` (statements, items and list elements are parsed in
/// loops) or into a `{}` block: so the tokens since the last such boundary, summed over the open
/// groups, bound its depth. Walked with an explicit stack.
fn too_deep(tokens: TokenStream) -> bool {
    // (the group's tokens, the pressure when it opened)
    let mut stack = vec![(tokens.into_iter(), 0usize)];
    let mut run = 0usize;
    while let Some((top, base)) = stack.last_mut() {
        let base = *base;
        match top.next() {
            None => {
                stack.pop();
                run = base;
            }
            Some(TokenTree::Group(g)) => {
                if stack.len() >= MAX_DEPTH {
                    return true;
                }
                let inner = if g.delimiter() == proc_macro2::Delimiter::Brace {
                    0
                } else {
                    run + 1
                };
                stack.push((g.stream().into_iter(), inner));
                run = inner;
            }
            Some(TokenTree::Punct(p)) if matches!(p.as_char(), ';' | ',') => run = base,
            Some(_) => {
                run += 1;
                if run > MAX_PRESSURE {
                    return true;
                }
            }
        }
    }
    false
}

/// The 2015 identifiers that are 2018 keywords, renamed to identifiers of the same length
/// (`try` as `_ry`), so positions stay. Only identifier tokens are renamed, never text in strings
/// or comments; a raw identifier (`r#try`) is left as it is.
fn as_2015(text: &str) -> String {
    let Ok(tokens) = text.parse::<TokenStream>() else {
        return text.to_owned();
    };
    let mut bytes = text.as_bytes().to_vec();
    let mut stack = vec![tokens.into_iter()];
    while let Some(top) = stack.last_mut() {
        match top.next() {
            None => {
                stack.pop();
            }
            Some(TokenTree::Group(g)) => stack.push(g.stream().into_iter()),
            Some(TokenTree::Ident(ident)) => {
                let name = ident.to_string();
                if matches!(name.as_str(), "try" | "async" | "await") {
                    let range = ident.span().byte_range();
                    if let Some(b) = bytes.get_mut(range.start) {
                        *b = b'_';
                    }
                }
            }
            Some(_) => {}
        }
    }
    String::from_utf8(bytes).unwrap_or_else(|_| text.to_owned())
}

/// The edition of the crate `abs` belongs to: the nearest `Cargo.toml` up to the workspace root
/// (`abs` less `rel`).
fn edition(abs: &Path, rel: &str) -> u16 {
    let depth = rel.split(['/', '\\']).filter(|p| !p.is_empty()).count();
    let mut dir = abs.parent();
    let mut package_edition: Option<Option<u16>> = None;
    for _ in 0..depth {
        let Some(d) = dir else { break };
        if let Some(manifest) = read_manifest(&d.join("Cargo.toml")) {
            let package = manifest.get("package");
            match package_edition {
                None if package.is_some() => {
                    let edition = package.and_then(|p| p.get("edition"));
                    match edition.and_then(toml::Value::as_str) {
                        Some(e) => return e.parse().unwrap_or(2021),
                        // `edition.workspace = true`: the workspace root's, further up.
                        None if edition.is_some() => package_edition = Some(None),
                        None => return 2015,
                    }
                }
                _ => {}
            }
            if package_edition.is_some() {
                let shared = manifest
                    .get("workspace")
                    .and_then(|w| w.get("package"))
                    .and_then(|p| p.get("edition"))
                    .and_then(toml::Value::as_str);
                if let Some(e) = shared {
                    return e.parse().unwrap_or(2021);
                }
            }
        }
        dir = d.parent();
    }
    2021
}

fn read_manifest(path: &Path) -> Option<toml::Table> {
    use std::io::Read;
    // Never a FIFO (an open would block) or a symlink out of the workspace.
    if !std::fs::symlink_metadata(path).ok()?.is_file() {
        return None;
    }
    let file = std::fs::File::open(path).ok()?;
    let mut text = String::new();
    file.take(MANIFEST_LIMIT).read_to_string(&mut text).ok()?;
    text.parse().ok()
}
