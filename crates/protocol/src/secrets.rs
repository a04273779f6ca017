//! The secret rules of CC-07 as protocol data: the file format (`protocols/secrets.toml`, the
//! embedded default, documented at its top), its strict loading, and the matcher that finds a
//! secret on one added line. A line is first filtered by the rules' keywords (one Aho-Corasick
//! pass), then only the rules whose keyword occurs run; a match counts when its secret is random
//! enough (`entropy`), is no placeholder (the stopwords), is allowed by no allowlist, and passes
//! the rule's validator. What a finding carries is the rule, never the secret: nothing here
//! hands the matched bytes out. This module never looks at a workspace.

use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use aho_corasick::{AhoCorasick, AhoCorasickKind, MatchKind as AcMatchKind};
use regex_automata::meta::Regex;
use regex_automata::util::syntax;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use toml::Spanned;

use super::ProtocolError;

/// The embedded rules' file name and text.
pub const EMBEDDED_NAME: &str = "protocols/secrets.toml";
pub const EMBEDDED_TEXT: &str = include_str!("../../../protocols/secrets.toml");

/// The schema version of secret rule files this referee reads.
pub const SCHEMA_VERSION: u32 = 1;

/// What a protocol or `--secrets` names: `embedded` or an absolute path.
pub const EMBEDDED: &str = "embedded";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRules {
    schema_version: Spanned<u32>,
    #[serde(default)]
    allowlist: RawAllowlist,
    #[serde(rename = "rule")]
    rules: Vec<Spanned<RawRule>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawAllowlist {
    #[serde(default)]
    stopwords: Vec<String>,
    #[serde(default)]
    regexes: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    id: String,
    name: String,
    regex: String,
    #[serde(default)]
    keywords: Vec<String>,
    group: Option<usize>,
    entropy: Option<f64>,
    #[serde(default)]
    allow: Vec<String>,
    #[serde(default)]
    allow_match: Vec<String>,
    validate: Option<Validate>,
}

/// A check of the secret's form beyond its regex.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
enum Validate {
    /// Header and payload decode (base64url) to JSON objects.
    Jwt,
    /// A JWT encoded once more in base64 (either alphabet, padded or not).
    #[serde(rename = "jwt-base64")]
    JwtBase64,
}

#[derive(Debug)]
struct Rule {
    id: String,
    name: String,
    /// Compiled at load (a rule file), or at the rule's first use (the embedded rules: a line
    /// that holds none of a rule's keywords never compiles it).
    regex: OnceLock<Regex>,
    src: String,
    /// The fewest bytes a match takes: a shorter line is not searched.
    min_len: usize,
    group: usize,
    entropy: Option<f64>,
    allow: Vec<Regex>,
    /// Regexes on the whole match (the name and the value): a match of one is allowed.
    allow_match: Vec<Regex>,
    validate: Option<Validate>,
}

/// A loaded rule file: a file's rules are compiled when loaded (a mistake is a load error); the
/// embedded ones, known valid (their tests), only when a line is first scanned, so a judgment
/// that adds no line never pays for compiling them.
#[derive(Debug)]
pub struct Rules {
    /// `embedded:protocols/secrets.toml` or the file's path.
    origin: String,
    /// The SHA-256 of the file's bytes.
    sha256: String,
    /// Where it was read from; `None` when embedded.
    path: Option<PathBuf>,
    /// How many rules.
    count: usize,
    /// The text still to compile (the embedded rules), or `None` when compiled at load.
    text: Option<&'static str>,
    compiled: OnceLock<Compiled>,
}

/// The rules compiled: regexes and keyword automata.
#[derive(Debug)]
struct Compiled {
    rules: Vec<Rule>,
    /// Every rule's keywords, ASCII case-insensitive; `keyword_rules[pattern]` is its rule.
    keywords: Option<AhoCorasick>,
    keyword_rules: Vec<usize>,
    /// The rules without keywords: they run on every line.
    always: Vec<usize>,
    stopwords: Option<AhoCorasick>,
    allow: Vec<Regex>,
}

/// The rule a line was found to hold a secret by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Hit<'r> {
    pub id: &'r str,
    pub name: &'r str,
}

/// At most this many matches of one rule are weighed on one line (a megabyte-long line of
/// base64 stays cheap).
const MAX_MATCHES_PER_LINE: usize = 64;

/// A rule's or allowlist's regex that does not compile; the message names it.
#[derive(Debug, thiserror::Error)]
enum BadRegex {
    /// Refused by the regex engine's builder (its syntax, or over the size limit).
    #[error("invalid regex `{regex}`: {source}")]
    Build {
        regex: String,
        #[source]
        source: Box<regex_automata::meta::BuildError>,
    },
    /// Refused by the regex parser when its shape was read.
    #[error("invalid regex `{regex}`: {source}")]
    Parse {
        regex: String,
        #[source]
        source: Box<regex_syntax::Error>,
    },
}

fn compile(src: &str) -> Result<Regex, BadRegex> {
    Regex::builder()
        .configure(
            Regex::config()
                .utf8_empty(false)
                .nfa_size_limit(Some(1 << 24)),
        )
        .syntax(syntax::Config::new().unicode(false).utf8(false))
        .build(src)
        .map_err(|source| BadRegex::Build {
            regex: src.to_string(),
            source: Box::new(source),
        })
}

/// How many groups `src` has (group 0 included), and the fewest bytes a match of it takes,
/// from its syntax alone (no compiling).
fn shape_of(src: &str) -> Result<(usize, usize), BadRegex> {
    regex_syntax::ParserBuilder::new()
        .unicode(false)
        .utf8(false)
        .build()
        .parse(src)
        .map(|hir| {
            let p = hir.properties();
            (
                p.explicit_captures_len() + 1,
                p.minimum_len().unwrap_or(usize::MAX),
            )
        })
        .map_err(|source| BadRegex::Parse {
            regex: src.to_string(),
            source: Box::new(source),
        })
}

fn case_insensitive(words: &[String]) -> Result<Option<AhoCorasick>, aho_corasick::BuildError> {
    if words.is_empty() {
        return Ok(None);
    }
    // A contiguous NFA, not a DFA: built in a fraction of the time (the DFA took about a
    // millisecond, more than scanning the lines of a change), and fast enough for them.
    AhoCorasick::builder()
        .ascii_case_insensitive(true)
        .kind(Some(AhoCorasickKind::ContiguousNFA))
        .match_kind(AcMatchKind::Standard)
        .build(words)
        .map(Some)
}

impl Rules {
    /// The embedded rules, compiled once per process when first used.
    pub fn embedded() -> Arc<Rules> {
        static EMBEDDED_RULES: OnceLock<Arc<Rules>> = OnceLock::new();
        EMBEDDED_RULES
            .get_or_init(|| {
                Arc::new(Rules {
                    origin: format!("embedded:{EMBEDDED_NAME}"),
                    sha256: format!("{:x}", Sha256::digest(EMBEDDED_TEXT.as_bytes())),
                    path: None,
                    // The tests hold this to the compiled count.
                    count: EMBEDDED_TEXT
                        .lines()
                        .filter(|l| l.trim() == "[[rule]]")
                        .count(),
                    text: Some(EMBEDDED_TEXT),
                    compiled: OnceLock::new(),
                })
            })
            .clone()
    }

    /// The compiled rules (compiling the embedded ones at the first call).
    fn compiled(&self) -> &Compiled {
        self.compiled.get_or_init(|| {
            let text = self.text.unwrap_or(EMBEDDED_TEXT);
            match Rules::parse_with(text, &self.origin, None, false) {
                Ok(mut r) => r.compiled.take().unwrap_or_else(|| unreachable!()),
                Err(e) => panic!("the embedded secret rules are valid: {e}"),
            }
        })
    }

    /// `embedded`, or the rule file at an absolute path.
    pub fn load(spec: &str) -> Result<Arc<Rules>, ProtocolError> {
        if spec == EMBEDDED {
            return Ok(Rules::embedded());
        }
        let path = Path::new(spec);
        if !path.is_absolute() {
            return Err(ProtocolError::SecretsSpec(spec.to_string()));
        }
        Rules::load_file(path).map(Arc::new)
    }

    pub fn load_file(path: &Path) -> Result<Rules, ProtocolError> {
        let text = crate::named::read_text(path, "secret rules file")?;
        Rules::parse(&text, &path.display().to_string(), Some(path))
    }

    /// Parses and compiles rule text; `origin` names it in error messages.
    pub fn parse(text: &str, origin: &str, path: Option<&Path>) -> Result<Rules, ProtocolError> {
        Rules::parse_with(text, origin, path, true)
    }

    /// [`Rules::parse`]; each rule's regex compiled now when `eager`, else only parsed now (a
    /// syntax error is still an error) and compiled at its first use.
    fn parse_with(
        text: &str,
        origin: &str,
        path: Option<&Path>,
        eager: bool,
    ) -> Result<Rules, ProtocolError> {
        let err_at = |at: usize, message: String| {
            let (line, column) = super::line_col(text, at);
            ProtocolError::Invalid {
                origin: origin.to_string(),
                line,
                column,
                message,
            }
        };
        let raw: RawRules = crate::tomlfile::parse(text)
            .map_err(|e| err_at(e.at.map_or(0, |s| s.start), e.message))?;
        if *raw.schema_version.get_ref() != SCHEMA_VERSION {
            return Err(err_at(
                raw.schema_version.span().start,
                format!(
                    "unsupported schema_version `{}` (this referee reads {SCHEMA_VERSION})",
                    raw.schema_version.get_ref()
                ),
            ));
        }
        let global = |m: String| err_at(0, format!("in [allowlist]: {m}"));
        let allow = raw
            .allowlist
            .regexes
            .iter()
            .map(|r| compile(r))
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| global(e.to_string()))?;
        if raw.allowlist.stopwords.iter().any(String::is_empty) {
            return Err(global("an empty stopword allows every secret".into()));
        }
        let stopwords = case_insensitive(&raw.allowlist.stopwords)
            .map_err(|e| global(format!("keywords: {e}")))?;
        if raw.rules.is_empty() {
            return Err(err_at(0, "no `[[rule]]`".into()));
        }
        let mut rules = Vec::new();
        let mut words = Vec::new();
        let mut keyword_rules = Vec::new();
        let mut always = Vec::new();
        for (i, spanned) in raw.rules.iter().enumerate() {
            let r = spanned.get_ref();
            let at = |m: String| err_at(spanned.span().start, format!("rule `{}`: {m}", r.id));
            if r.id.trim().is_empty() || r.name.trim().is_empty() {
                return Err(at("`id` and `name` must not be empty".into()));
            }
            if rules.iter().any(|o: &Rule| o.id == r.id) {
                return Err(at("duplicate rule id".into()));
            }
            let regex = OnceLock::new();
            if eager {
                let _ = regex.set(compile(&r.regex).map_err(|e| at(e.to_string()))?);
            }
            let (groups, min_len) = shape_of(&r.regex).map_err(|e| at(e.to_string()))?;
            let group = r.group.unwrap_or(if groups > 1 { 1 } else { 0 });
            if group >= groups {
                return Err(at(format!(
                    "`group = {group}` but the regex has {} capture group(s)",
                    groups - 1
                )));
            }
            if let Some(e) = r.entropy {
                if !(0.0..=8.0).contains(&e) {
                    return Err(at(format!(
                        "`entropy = {e}` must be between 0 and 8 (bits per byte)"
                    )));
                }
            }
            let allow = r
                .allow
                .iter()
                .map(|a| compile(a))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| at(e.to_string()))?;
            let allow_match = r
                .allow_match
                .iter()
                .map(|a| compile(a))
                .collect::<Result<Vec<_>, _>>()
                .map_err(|e| at(e.to_string()))?;
            if r.keywords.iter().any(|k| k.is_empty()) {
                return Err(at("an empty keyword".into()));
            }
            if r.keywords.is_empty() {
                always.push(i);
            }
            for k in &r.keywords {
                words.push(k.clone());
                keyword_rules.push(i);
            }
            rules.push(Rule {
                id: r.id.clone(),
                name: r.name.clone(),
                regex,
                src: r.regex.clone(),
                min_len,
                group,
                entropy: r.entropy,
                allow,
                allow_match,
                validate: r.validate,
            });
        }
        let keywords = case_insensitive(&words).map_err(|e| err_at(0, format!("keywords: {e}")))?;
        Ok(Rules {
            origin: origin.to_string(),
            sha256: format!("{:x}", Sha256::digest(text.as_bytes())),
            path: path.map(Path::to_path_buf),
            count: rules.len(),
            text: None,
            compiled: OnceLock::from(Compiled {
                rules,
                keywords,
                keyword_rules,
                always,
                stopwords,
                allow,
            }),
        })
    }

    pub fn origin(&self) -> &str {
        &self.origin
    }

    pub fn sha256(&self) -> &str {
        &self.sha256
    }

    /// The file the rules were read from (`None`: embedded).
    pub fn path(&self) -> Option<&Path> {
        self.path.as_deref()
    }

    pub fn len(&self) -> usize {
        self.count
    }

    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// The first rule, in file order, with a finding on `line`.
    pub fn scan(&self, line: &[u8]) -> Option<Hit<'_>> {
        self.compiled().scan(line)
    }

    /// [`Rules::scan`] of `line`, or else the first rule with a finding that lies on `line`
    /// but whose match begins on the line before it, `before` (a name on one line and its
    /// value on the next: `<token>` and the token in XML, `key:` and a YAML block). Only
    /// the rules with a keyword on `before` look at the two lines.
    pub fn scan_after(&self, before: &[u8], line: &[u8]) -> Option<Hit<'_>> {
        let keyed = self.keyed(before);
        self.scan_keyed(Some((before, &keyed)), line).0
    }

    /// Which rules' keywords `line` holds: what [`Rules::scan_keyed`] needs of the line above
    /// the one it scans.
    pub fn keyed(&self, line: &[u8]) -> Keyed {
        Keyed(self.compiled().keyed(line))
    }

    /// [`Rules::scan_after`] of `line` after `above` (with its [`Keyed`], so a line's keywords
    /// are looked for once when the next line is scanned after it), or [`Rules::scan`] when
    /// `above` is `None`; and `line`'s own [`Keyed`].
    pub fn scan_keyed(
        &self,
        above: Option<(&[u8], &Keyed)>,
        line: &[u8],
    ) -> (Option<Hit<'_>>, Keyed) {
        let c = self.compiled();
        let keyed = c.keyed(line);
        let hit = c
            .scan_run(&keyed, line)
            .or_else(|| above.and_then(|(text, k)| c.scan_across(text, &k.0, line)));
        (hit, Keyed(keyed))
    }
}

/// The rules whose keywords occur in a line, by their place in the file.
#[derive(Debug, Clone)]
pub struct Keyed(Vec<bool>);

impl Compiled {
    /// The rules whose keywords occur in `text`, in file order.
    fn keyed(&self, text: &[u8]) -> Vec<bool> {
        let mut run = vec![false; self.rules.len()];
        if let Some(ac) = &self.keywords {
            for m in ac.find_overlapping_iter(text) {
                run[self.keyword_rules[m.pattern().as_usize()]] = true;
            }
        }
        run
    }

    fn scan_across(&self, before: &[u8], keyed: &[bool], line: &[u8]) -> Option<Hit<'_>> {
        if !keyed.contains(&true) {
            return None;
        }
        let mut window = Vec::with_capacity(before.len() + 1 + line.len());
        window.extend_from_slice(before);
        window.push(b'\n');
        window.extend_from_slice(line);
        // A finding counts here when its secret begins on `line`; one wholly on `before` is
        // that line's own (found, or not, when it was scanned).
        let from = before.len() + 1;
        self.rules
            .iter()
            .zip(keyed)
            .filter(|(_, run)| **run)
            .find(|(r, _)| self.finds_from(r, &window, from))
            .map(|(r, _)| Hit {
                id: &r.id,
                name: &r.name,
            })
    }

    fn scan(&self, line: &[u8]) -> Option<Hit<'_>> {
        self.scan_run(&self.keyed(line), line)
    }

    /// The first rule, among those keyed and those that run on every line, with a finding on
    /// `line`.
    fn scan_run(&self, keyed: &[bool], line: &[u8]) -> Option<Hit<'_>> {
        self.rules
            .iter()
            .enumerate()
            .filter(|(i, _)| keyed[*i] || self.always.contains(i))
            .find(|(_, r)| self.finds(r, line))
            .map(|(_, r)| Hit {
                id: &r.id,
                name: &r.name,
            })
    }

    /// A rule's regex, compiled at its first use if it was not at load. The embedded rules'
    /// regexes all compile (their tests hold them to it), as the rules of a file did at load.
    fn regex<'r>(&self, r: &'r Rule) -> &'r Regex {
        r.regex.get_or_init(|| {
            compile(&r.src).unwrap_or_else(|e| panic!("the secret rules are valid: {e}"))
        })
    }

    fn finds(&self, r: &Rule, line: &[u8]) -> bool {
        self.finds_from(r, line, 0)
    }

    /// Whether `r` has a finding in `text` whose secret begins at `from` or after.
    fn finds_from(&self, r: &Rule, text: &[u8], from: usize) -> bool {
        if text.len() < r.min_len {
            return false;
        }
        self.regex(r)
            .captures_iter(text)
            .take(MAX_MATCHES_PER_LINE)
            .filter_map(|caps| Some((caps.get_group(0)?, caps.get_group(r.group)?)))
            .filter(|(_, secret)| secret.start >= from)
            .any(|(whole, secret)| {
                self.counts(r, &text[secret.range()])
                    && !r
                        .allow_match
                        .iter()
                        .any(|a| a.is_match(&text[whole.range()]))
            })
    }

    /// Whether a matched secret counts: random enough, no placeholder, not allowed.
    fn counts(&self, r: &Rule, secret: &[u8]) -> bool {
        if r.entropy.is_some_and(|min| entropy(secret) < min) {
            return false;
        }
        if self.stopwords.as_ref().is_some_and(|s| s.is_match(secret)) {
            return false;
        }
        if self
            .allow
            .iter()
            .chain(&r.allow)
            .any(|a| a.is_match(secret))
        {
            return false;
        }
        match r.validate {
            Some(Validate::Jwt) => is_jwt(secret),
            Some(Validate::JwtBase64) => base64_any(secret).is_some_and(|jwt| jwt_shaped(&jwt)),
            None => true,
        }
    }
}

/// The secret rules a predicate names (`secrets = "embedded"` or an absolute path), loaded and
/// compiled when the protocol is: a mistake in the file is the protocol's load error.
#[derive(Clone, serde::Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SecretRules {
    spec: String,
    rules: Arc<Rules>,
}

impl SecretRules {
    pub fn new(spec: String, rules: Arc<Rules>) -> SecretRules {
        SecretRules { spec, rules }
    }

    pub fn rules(&self) -> &Rules {
        &self.rules
    }
}

/// Secret rules a protocol names (`secrets = "…"`) that cannot be loaded. Shown inside the
/// protocol's error, located at the field, so the reason is in the message itself.
#[derive(Debug, thiserror::Error)]
#[error("secret rules: {0}")]
pub struct SecretRulesError(pub ProtocolError);

impl TryFrom<String> for SecretRules {
    type Error = SecretRulesError;

    fn try_from(spec: String) -> Result<Self, SecretRulesError> {
        let rules = Rules::load(&spec).map_err(SecretRulesError)?;
        Ok(SecretRules { spec, rules })
    }
}

impl From<SecretRules> for String {
    fn from(s: SecretRules) -> String {
        s.spec
    }
}

impl std::fmt::Debug for SecretRules {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SecretRules")
            .field("origin", &self.rules.origin)
            .field("rules", &self.rules.len())
            .finish()
    }
}

/// Refuses a rule file inside `dir` (the watched workspace or root): the worker could edit
/// the rules it is judged by. A symlink into the workspace, or one inside it pointing out, is
/// inside it ([`crate::inside`]).
pub fn refuse_inside(file: &Path, dir: &Path) -> Result<(), RulesInside> {
    if crate::inside::lies_inside(file, dir) {
        return Err(RulesInside {
            file: file.to_path_buf(),
            dir: dir.to_path_buf(),
        });
    }
    Ok(())
}

/// A secret-rules file inside the watched directory, with the hint to move it.
#[derive(Debug, thiserror::Error)]
#[error("the secret rules `{}` are inside the watched directory `{}`: the worker could edit them; keep the file outside it", file.display(), dir.display())]
pub struct RulesInside {
    pub file: std::path::PathBuf,
    pub dir: std::path::PathBuf,
}

/// Shannon entropy in bits per byte.
pub fn entropy(bytes: &[u8]) -> f64 {
    if bytes.is_empty() {
        return 0.0;
    }
    let mut counts = [0usize; 256];
    for &b in bytes {
        counts[usize::from(b)] += 1;
    }
    let n = bytes.len() as f64;
    counts
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n;
            -p * p.log2()
        })
        .sum()
}

/// A JWT: its header and payload are base64url-encoded JSON objects.
fn is_jwt(token: &[u8]) -> bool {
    let mut parts = token.split(|&b| b == b'.');
    let mut json_object = || {
        parts
            .next()
            .and_then(base64url)
            .and_then(|d| serde_json::from_slice::<serde_json::Value>(&d).ok())
            .is_some_and(|v| v.is_object())
    };
    json_object() && json_object()
}

/// Decodes base64url (RFC 4648 §5) without padding, as JWTs carry it; `None` for any other
/// byte or an impossible length. Hand-written: these few lines are all the JWT check needs of
/// base64.
fn base64url(s: &[u8]) -> Option<Vec<u8>> {
    let value = |c: u8| -> Option<u32> {
        Some(u32::from(match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        }))
    };
    if s.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    for chunk in s.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= value(c)? << (18 - 6 * i);
        }
        let bytes = acc.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    Some(out)
}

/// A JWT by its shape: a header and a payload of at least 10 base64url characters each, both
/// beginning `ey` (JSON objects; not decoded: a mangled header is still a JWT's).
fn jwt_shaped(token: &[u8]) -> bool {
    let b64url = |c: &u8| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'_';
    let mut parts = token.split(|&b| b == b'.');
    let mut segment = || {
        parts
            .next()
            .is_some_and(|p| p.len() >= 10 && p.starts_with(b"ey") && p.iter().all(b64url))
    };
    segment() && segment()
}

/// Decodes base64 in either alphabet (RFC 4648 §4 or §5), padded or not; `None` for any other
/// byte or an impossible length.
fn base64_any(s: &[u8]) -> Option<Vec<u8>> {
    let body = s
        .strip_suffix(b"==")
        .or_else(|| s.strip_suffix(b"="))
        .unwrap_or(s);
    let url: Vec<u8> = body
        .iter()
        .map(|&c| match c {
            b'+' => b'-',
            b'/' => b'_',
            c => c,
        })
        .collect();
    base64url(&url)
}

#[cfg(test)]
#[path = "secrets_tests.rs"]
mod tests;

#[cfg(test)]
#[path = "secrets_samples_tests.rs"]
mod samples_tests;
