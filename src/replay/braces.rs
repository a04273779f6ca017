//! `{a,b}` and `{1..3}` expansion of a step's path, bounded in count and size.

/// The most paths one brace pattern may expand to, and the most bytes they may hold together:
/// `{0..99999}{0..99999}` would otherwise ask for 10^10 paths (a 240 GB allocation).
const MAX_EXPANDED_PATHS: usize = 100_000;
const MAX_EXPANDED_BYTES: usize = 16 << 20;

/// Expands `{a,b,c}` alternatives and `{1..8}` ranges, left to right (iteratively: a pattern of
/// a million braces must not recurse a million deep).
pub fn expand_braces(pattern: &str) -> Result<Vec<String>, String> {
    let mut out = vec![String::new()];
    let mut rest = pattern;
    while let Some(open) = rest.find('{') {
        let close = rest[open..]
            .find('}')
            .map(|i| open + i)
            .ok_or_else(|| format!("unclosed `{{` in `{pattern}`"))?;
        let (literal, inner) = (&rest[..open], &rest[open + 1..close]);
        let options: Vec<String> = match inner.split_once("..") {
            Some((a, b)) if !inner.contains(',') => {
                let range = |x: &str| {
                    x.trim()
                        .parse::<u32>()
                        .map_err(|_| format!("bad range `{{{inner}}}` in `{pattern}`"))
                };
                let (a, b) = (range(a)?, range(b)?);
                if b < a || b - a > 100_000 {
                    return Err(format!("bad range `{{{inner}}}` in `{pattern}`"));
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
            return Err(format!(
                "`{pattern}` expands to too many paths (at most {MAX_EXPANDED_PATHS}, 16 MiB in all)"
            ));
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
        return Err(format!("unmatched `}}` in `{pattern}`"));
    }
    let bytes: usize = out.iter().map(|p| p.len() + rest.len()).sum();
    if bytes > MAX_EXPANDED_BYTES {
        return Err(format!(
            "`{pattern}` expands to too many paths (at most {MAX_EXPANDED_PATHS}, 16 MiB in all)"
        ));
    }
    for p in &mut out {
        p.push_str(rest);
    }
    Ok(out)
}

// ---- tracker edits ---------------------------------------------------------------------
