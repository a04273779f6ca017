//! Protocol regexes: Rust `regex` syntax in multi-line mode, matched on bytes. Parsed (so
//! validated) at load; compiled on first use, once per process (`memo`).
//!
//! Compiling costs far more than judging a small build, so a pattern is compiled for what
//! it is used on. A pattern on a short haystack (a tracker value, a file name, a line)
//! skips what only pays off over long text: the full DFA the `regex` crate builds for small
//! patterns, the lazy DFA and its cache, and the literal prefilter. Patterns searched over whole files (`forbid`,
//! `require`, `extract`) keep the prefilter and are compiled together, one regex per list,
//! whose matches say which pattern matched. Both use `regex-automata`'s meta engine, the
//! one behind the `regex` crate, so the syntax and the answers are the same.

use std::fmt;
use std::ops::Range;
use std::sync::OnceLock;

use regex_automata::meta::{Config, Regex};
use regex_automata::util::syntax;
use regex_automata::{Input, MatchKind, PatternSet};
use serde::{Deserialize, Serialize};

use super::memo::{memo, Memo};

/// A regular expression (Rust `regex` syntax; use `(?i)` for case-insensitive matching).
#[derive(Clone, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Pattern {
    src: String,
    /// Whether it parsed at load (`false` only before variable substitution).
    valid: bool,
    regex: OnceLock<Option<Regex>>,
}

impl Pattern {
    pub fn as_str(&self) -> &str {
        &self.src
    }

    /// The regex for short haystacks; `None` only before variable substitution (or past
    /// the size limit).
    pub fn regex(&self) -> Option<&Regex> {
        self.regex
            .get_or_init(|| {
                static MEMO: Memo<Option<Regex>> = OnceLock::new();
                if !self.valid {
                    return None;
                }
                memo(&MEMO, &self.src, || {
                    build(short(), MatchKind::LeftmostFirst, &[&self.src])
                })
            })
            .as_ref()
    }

    /// Whether its short-haystack regex is compiled.
    #[cfg(test)]
    pub fn is_compiled(&self) -> bool {
        self.regex.get().is_some()
    }

    /// The span of capture group `group` in the first match in `haystack`, falling back to
    /// the whole match when `or_whole` and the group did not take part.
    pub fn capture(&self, haystack: &[u8], group: usize, or_whole: bool) -> Option<Range<usize>> {
        let re = self.regex()?;
        let mut caps = re.create_captures();
        re.captures(haystack, &mut caps);
        caps.get_group(group)
            .or_else(|| caps.get_group(0).filter(|_| or_whole))
            .map(|s| s.range())
    }

    /// How many capture groups it has (group 0 included).
    pub fn captures_len(&self) -> usize {
        validate(&self.src).unwrap_or(1)
    }
}

/// For short haystacks: no DFA (full or lazy) and no prefilter; the one-pass DFA, the
/// bounded backtracker and the PikeVM need no large cache.
fn short() -> Config {
    Config::new().dfa(false).hybrid(false).auto_prefilter(false)
}

/// For whole files: the lazy DFA with a literal prefilter.
fn long() -> Config {
    Config::new().dfa(false)
}

fn build(config: Config, kind: MatchKind, patterns: &[&str]) -> Option<Regex> {
    Regex::builder()
        .configure(
            config
                .match_kind(kind)
                .utf8_empty(false)
                .nfa_size_limit(Some(1 << 24)),
        )
        .syntax(syntax::Config::new().multi_line(true).utf8(false))
        .build_many(patterns)
        .ok()
}

fn parser() -> regex_syntax::Parser {
    regex_syntax::ParserBuilder::new()
        .multi_line(true)
        .utf8(false)
        .build()
}

fn list_key(patterns: &[Pattern]) -> String {
    let mut key = String::new();
    for p in patterns {
        key.push('\0');
        key.push_str(p.as_str());
    }
    key
}

/// The patterns as one regex for searching whole files: leftmost-first, and each match's
/// `pattern()` is the index of the pattern that matched. `None` when a pattern is
/// unresolved or the list is past the size limit.
pub fn search(patterns: &[Pattern]) -> Option<Regex> {
    static MEMO: Memo<Option<Regex>> = OnceLock::new();
    list(&MEMO, patterns, MatchKind::LeftmostFirst)
}

/// The patterns as one regex that reports every pattern occurring (overlaps included).
pub fn overlapping(patterns: &[Pattern]) -> Option<Regex> {
    static MEMO: Memo<Option<Regex>> = OnceLock::new();
    list(&MEMO, patterns, MatchKind::All)
}

/// A list of patterns compiled as one whole-file regex, once per distinct list.
fn list(
    memo_of: &'static Memo<Option<Regex>>,
    patterns: &[Pattern],
    kind: MatchKind,
) -> Option<Regex> {
    if patterns.is_empty() || patterns.iter().any(|p| !p.valid) {
        return None;
    }
    memo(memo_of, &list_key(patterns), || {
        let srcs: Vec<&str> = patterns.iter().map(Pattern::as_str).collect();
        build(long(), kind, &srcs)
    })
}

/// The indices of the patterns that occur anywhere in `haystack` (overlaps included), or
/// `None` when they cannot be compiled.
pub fn which(patterns: &[Pattern], haystack: &[u8]) -> Option<Vec<usize>> {
    if patterns.is_empty() {
        return Some(Vec::new());
    }
    let re = overlapping(patterns)?;
    let mut set = PatternSet::new(re.pattern_len());
    re.which_overlapping_matches(&Input::new(haystack), &mut set);
    Some(set.iter().map(|p| p.as_usize()).collect())
}

/// A regex that does not parse, with the pattern as written and the parser's reason (its
/// last line: the caret diagram is left out); shown inside a located protocol error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid regex `{pattern}`: {why}")]
pub struct PatternError {
    pub pattern: String,
    pub why: String,
}

impl TryFrom<String> for Pattern {
    type Error = PatternError;

    fn try_from(src: String) -> Result<Self, PatternError> {
        if src.contains("${") {
            return Ok(Pattern {
                src,
                valid: false,
                regex: OnceLock::new(),
            });
        }
        validate(&src)?;
        Ok(Pattern {
            src,
            valid: true,
            regex: OnceLock::new(),
        })
    }
}

/// Parses a regex (without compiling it), once per distinct pattern per process: its
/// number of capture groups (group 0 included), or what is wrong with it.
fn validate(src: &str) -> Result<usize, PatternError> {
    static MEMO: Memo<Result<usize, PatternError>> = OnceLock::new();
    memo(&MEMO, src, || {
        parser()
            .parse(src)
            .map(|hir| hir.properties().explicit_captures_len() + 1)
            .map_err(|e| PatternError {
                pattern: src.to_string(),
                why: first_line(&e.to_string()),
            })
    })
}

fn first_line(s: &str) -> String {
    // regex errors are multi-line with a caret diagram; the last line carries the reason.
    s.lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or(s)
        .trim()
        .trim_start_matches("error: ")
        .to_string()
}

impl From<Pattern> for String {
    fn from(p: Pattern) -> String {
        p.src
    }
}

impl fmt::Debug for Pattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Pattern({:?})", self.src)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pattern(s: &str) -> Pattern {
        Pattern::try_from(s.to_string()).unwrap()
    }

    #[test]
    fn multi_line_bytes_and_groups() {
        let p = pattern(r"(?i)^verdict:\s*(\w+)$");
        let text = b"x\nVerdict: ship\n";
        assert_eq!(p.capture(text, 1, false), Some(11..15));
        assert_eq!(pattern("a(b)?").capture(b"xa", 1, true), Some(1..2));
        assert_eq!(pattern("a(b)?").capture(b"xa", 1, false), None);
        // Invalid UTF-8 in the haystack is just bytes.
        assert!(pattern("fail").regex().unwrap().is_match(b"\xff\xfefail"));
        assert_eq!(pattern("(a)(b)").captures_len(), 3);
    }

    #[test]
    fn search_names_the_pattern_that_matched() {
        let ps = [pattern("REFINE"), pattern(r"GR-\d+")];
        let re = search(&ps).unwrap();
        let hits: Vec<(usize, Range<usize>)> = re
            .find_iter(b"GR-12 then REFINE")
            .map(|m| (m.pattern().as_usize(), m.range()))
            .collect();
        assert_eq!(hits, vec![(1, 0..5), (0, 11..17)]);
        assert!(search(&[]).is_none());
        assert!(search(&[pattern("${x}")]).is_none());
    }

    #[test]
    fn which_reports_overlapping_patterns() {
        let ps = [pattern("preserved"), pattern("serve"), pattern("absent")];
        assert_eq!(which(&ps, b"we preserved it"), Some(vec![0, 1]));
        assert_eq!(which(&[], b"x"), Some(vec![]));
    }

    #[test]
    fn valid_but_too_large_patterns_do_not_compile() {
        // Parses (so the protocol loads), but its NFA is far past the 16 MiB limit: the
        // `text` predicate judges such a check INCONCLUSIVE rather than matching nothing.
        let huge = pattern(r"\w{50000}");
        assert!(huge.regex().is_none());
        assert!(search(std::slice::from_ref(&huge)).is_none());
        assert!(which(std::slice::from_ref(&huge), b"x").is_none());
    }

    #[test]
    fn invalid_patterns_are_errors() {
        let e = Pattern::try_from("(".to_string()).unwrap_err();
        assert_eq!(e.pattern, "(");
        assert!(e.to_string().starts_with("invalid regex `(`: "), "{e}");
        assert!(!e.why.contains('\n') && !e.why.is_empty(), "{e:?}");
        assert!(Pattern::try_from(r"\p{Nope}".to_string()).is_err());
    }
}
