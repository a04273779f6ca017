//! What tree-sitter-python's grammar accepts but Python 3 does not: it keeps Python 2's `print`
//! and `exec` statements, `<>`, `except A, e:`, and number literals such as `0777`, `10L` and
//! `1_`. Found by one walk over the whole tree (a cursor: no recursion), first in document order,
//! with CPython 3.13's message. `except A, B:` without parentheses is valid from Python 3.14 on
//! (PEP 758); the referee judges by 3.13, as most code still has to run there.

use tree_sitter::Node;

/// The first Python-2-only construct: its byte offset and CPython's message.
pub(super) fn legacy(root: Node<'_>, text: &[u8]) -> Option<(usize, String)> {
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        if let Some(message) = judge(node, text) {
            return Some((node.start_byte(), message));
        }
        if cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                break;
            }
            if !cursor.goto_parent() {
                return None;
            }
        }
    }
}

fn judge(node: Node<'_>, text: &[u8]) -> Option<String> {
    match node.kind() {
        // `print >> f, x`, `print (x), y`, `print -1` and `print [0]` are expressions in Python 3
        // too (a shift, a call in a tuple, a subtraction, a subscript).
        "print_statement" => {
            let after = text.get(node.start_byte() + "print".len()..)?;
            let next = after
                .iter()
                .find(|b| !b.is_ascii_whitespace() && **b != b'\\');
            match next {
                Some(b'>' | b'(' | b'-' | b'+' | b'[' | b'.') => None,
                _ => {
                    Some("Missing parentheses in call to 'print'. Did you mean print(...)?".into())
                }
            }
        }
        "exec_statement" => {
            Some("Missing parentheses in call to 'exec'. Did you mean exec(...)?".into())
        }
        "<>" if !node.is_named() => Some("invalid syntax: `<>` is Python 2's `!=`".into()),
        "except_clause" => {
            let mut cursor = node.walk();
            let comma = node
                .children(&mut cursor)
                .any(|c| !c.is_named() && c.kind() == ",");
            comma.then(|| "multiple exception types must be parenthesized".into())
        }
        // tree-sitter's `try_statement` allows a bare `try:` block.
        "try_statement" => {
            let mut cursor = node.walk();
            let handled = node.children(&mut cursor).any(|c| {
                matches!(
                    c.kind(),
                    "except_clause" | "except_group_clause" | "finally_clause"
                )
            });
            (!handled).then(|| "expected 'except' or 'finally' block".into())
        }
        // `raise E, "message"` (and `raise E, v, tb`).
        "raise_statement" => {
            let mut cursor = node.walk();
            let list = node
                .children(&mut cursor)
                .any(|c| c.kind() == "expression_list" || (!c.is_named() && c.kind() == ","));
            list.then(|| "invalid syntax: `raise E, V` is Python 2's `raise E(V)`".into())
        }
        "integer" | "float" => {
            let literal = text.get(node.start_byte()..node.end_byte())?;
            number(literal).err().map(str::to_owned)
        }
        _ => None,
    }
}

/// A Python 3 number literal, or CPython's complaint about it.
pub(super) fn number(t: &[u8]) -> Result<(), &'static str> {
    let lower: Vec<u8> = t.iter().map(u8::to_ascii_lowercase).collect();
    let radix = |digits: &[u8], ok: fn(u8) -> bool, name: &'static str| {
        // `(_?digit)+`
        let mut after_digit = false;
        let mut any = false;
        for (i, &b) in digits.iter().enumerate() {
            if b == b'_' {
                if (i > 0 && !after_digit) || digits.get(i + 1).is_none_or(|&n| !ok(n)) {
                    return Err(name);
                }
                after_digit = false;
            } else if ok(b) {
                after_digit = true;
                any = true;
            } else {
                return Err(name);
            }
        }
        if any {
            Ok(())
        } else {
            Err(name)
        }
    };
    match lower.as_slice() {
        [b'0', b'x', rest @ ..] => {
            return radix(
                rest,
                |b| b.is_ascii_hexdigit(),
                "invalid hexadecimal literal",
            )
        }
        [b'0', b'o', rest @ ..] => {
            return radix(
                rest,
                |b| (b'0'..=b'7').contains(&b),
                "invalid octal literal",
            )
        }
        [b'0', b'b', rest @ ..] => {
            return radix(rest, |b| b == b'0' || b == b'1', "invalid binary literal")
        }
        _ => {}
    }
    let body = lower.strip_suffix(b"j").unwrap_or(&lower);
    let invalid = "invalid decimal literal";
    // digitpart: digit (_? digit)*
    let digitpart = |part: &[u8]| -> Result<(), &'static str> {
        if part.first() == Some(&b'_') {
            return Err(invalid);
        }
        radix(part, |b| b.is_ascii_digit(), invalid)
    };
    let (mantissa, exponent) = match body.iter().position(|&b| b == b'e') {
        Some(at) => (&body[..at], Some(&body[at + 1..])),
        None => (body, None),
    };
    if let Some(exp) = exponent {
        let exp = exp
            .strip_prefix(b"+")
            .or(exp.strip_prefix(b"-"))
            .unwrap_or(exp);
        digitpart(exp)?;
    }
    match mantissa.iter().position(|&b| b == b'.') {
        Some(at) => {
            let (int, frac) = (&mantissa[..at], &mantissa[at + 1..]);
            if int.is_empty() && frac.is_empty() {
                return Err(invalid);
            }
            if !int.is_empty() {
                digitpart(int)?;
            }
            if !frac.is_empty() {
                digitpart(frac)?;
            }
            Ok(())
        }
        None => {
            digitpart(mantissa)?;
            let float = exponent.is_some() || body.len() != lower.len();
            if !float
                && mantissa.len() > 1
                && mantissa[0] == b'0'
                && mantissa.iter().any(|&b| b != b'0' && b != b'_')
            {
                return Err("leading zeros in decimal integer literals are not permitted; use an 0o prefix for octal integers");
            }
            Ok(())
        }
    }
}
