//! Revision suffixes (`~N`, `^N`, `^{}`) as steps, for [`Repo::resolve`](super::Repo::resolve).

/// One step after a revision's base.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Op {
    /// `~N`: the Nth first-parent ancestor.
    Ancestor(usize),
    /// `^N`: the Nth parent (`^0`: the commit itself).
    Parent(usize),
    /// `^{}`: tags peeled off.
    Peel,
}

/// `~2^{commit}^2` → the steps; `None` for anything else.
pub(super) fn parse_suffix(mut s: &str) -> Option<Vec<Op>> {
    let mut ops = Vec::new();
    fn number(s: &str) -> (Option<usize>, &str) {
        let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
        if end == 0 {
            (None, s)
        } else {
            // A count too large to be a real history is no revision.
            (Some(s[..end].parse().unwrap_or(usize::MAX)), &s[end..])
        }
    }
    while let Some(c) = s.chars().next() {
        s = &s[c.len_utf8()..];
        match c {
            '~' => {
                let (n, rest) = number(s);
                ops.push(Op::Ancestor(n.unwrap_or(1)));
                s = rest;
            }
            '^' if s.starts_with('{') => {
                let end = s.find('}')?;
                match &s[1..end] {
                    "commit" => ops.push(Op::Parent(0)),
                    "" => ops.push(Op::Peel),
                    _ => return None,
                }
                s = &s[end + 1..];
            }
            '^' => {
                let (n, rest) = number(s);
                ops.push(Op::Parent(n.unwrap_or(1)));
                s = rest;
            }
            _ => return None,
        }
    }
    Some(ops)
}
