//! `{a,b}` and `{1..3}` expansion of a step's path, bounded in count and size.

/// The most paths one brace pattern may expand to, and the most bytes they may hold together:
/// `{0..99999}{0..99999}` would otherwise ask for 10^10 paths (a 240 GB allocation).
const MAX_EXPANDED_PATHS: usize = 100_000;
const MAX_EXPANDED_BYTES: usize = 16 << 20;

/// Why a brace pattern was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BraceError {
    #[error("unclosed `{{` in `{0}`")]
    Unclosed(String),
    #[error("unmatched `}}` in `{0}`")]
    Unmatched(String),
    #[error("bad range `{{{inner}}}` in `{pattern}`")]
    BadRange { inner: String, pattern: String },
    #[error("`{0}` expands to too many paths (at most {MAX_EXPANDED_PATHS}, 16 MiB in all)")]
    TooMany(String),
}

/// Expands `{a,b,c}` alternatives and `{1..8}` ranges, left to right (iteratively: a pattern of
/// a million braces must not recurse a million deep).
pub fn expand_braces(pattern: &str) -> Result<Vec<String>, BraceError> {
    let mut out = vec![String::new()];
    let mut rest = pattern;
    while let Some(open) = rest.find('{') {
        let close = rest[open..]
            .find('}')
            .map(|i| open + i)
            .ok_or_else(|| BraceError::Unclosed(pattern.to_string()))?;
        let (literal, inner) = (&rest[..open], &rest[open + 1..close]);
        let options: Vec<String> = match inner.split_once("..") {
            Some((a, b)) if !inner.contains(',') => {
                let bad = || BraceError::BadRange {
                    inner: inner.to_string(),
                    pattern: pattern.to_string(),
                };
                let range = |x: &str| x.trim().parse::<u32>().map_err(|_| bad());
                let (a, b) = (range(a)?, range(b)?);
                if b < a || b - a > 100_000 {
                    return Err(bad());
                }
                (a..=b).map(|n| n.to_string()).collect()
            }
            _ => inner.split(',').map(str::to_string).collect(),
        };
        let count = out.len().saturating_mul(options.len());
        let held: usize = out.iter().map(String::len).sum();
        let added: usize = options.iter().map(|o| literal.len() + o.len()).sum();
        let bytes = held
            .saturating_mul(options.len())
            .saturating_add(out.len().saturating_mul(added));
        if count > MAX_EXPANDED_PATHS || bytes > MAX_EXPANDED_BYTES {
            return Err(BraceError::TooMany(pattern.to_string()));
        }
        let mut next = Vec::with_capacity(count);
        for p in &out {
            for o in &options {
                next.push(format!("{p}{literal}{o}"));
            }
        }
        out = next;
        rest = &rest[close + 1..];
    }
    if rest.contains('}') {
        return Err(BraceError::Unmatched(pattern.to_string()));
    }
    let bytes: usize = out.iter().map(|p| p.len() + rest.len()).sum();
    if bytes > MAX_EXPANDED_BYTES {
        return Err(BraceError::TooMany(pattern.to_string()));
    }
    for p in &mut out {
        p.push_str(rest);
    }
    Ok(out)
}

// ---- tracker edits ---------------------------------------------------------------------
