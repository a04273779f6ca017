//! What the Go specification requires of a source file's clauses and tree-sitter-go does not
//! check: exactly one `package` clause, first (after comments only), and the imports before every
//! other declaration (`SourceFile = PackageClause ";" { ImportDecl ";" } { TopLevelDecl ";" }`).
//! A file truncated to its comments, or empty, has no package clause: it does not compile.
//!
//! tree-sitter-go also takes statements at the top level (a file truncated inside a word leaves
//! one: `fu`), and a list whose last element is followed by a newline without a comma
//! (`[]int{\n\t1,\n\t2\n}`), where Go's lexer puts a semicolon, and so a binary operator at the
//! start of a line, after an operand that ends the line before it (`1\n-2` in a list is two
//! elements missing a comma, not `1 - 2`). These are errors here, as in go/parser (found by
//! `bench/real_code_mutate.py --lang go`).

use tree_sitter::Node;

/// The first clause out of place: its byte offset and the Go compiler's message.
pub(super) fn clauses(root: Node<'_>) -> Option<(usize, String)> {
    let mut cursor = root.walk();
    let mut package_seen = false;
    let mut other_decl = false;
    for child in root.children(&mut cursor) {
        match child.kind() {
            "comment" => {}
            "package_clause" if package_seen => {
                return Some((
                    child.start_byte(),
                    "syntax error: non-declaration statement outside function body \
                     (a second `package` clause)"
                        .into(),
                ));
            }
            "package_clause" => package_seen = true,
            _ if !package_seen => {
                return Some((
                    child.start_byte(),
                    "expected 'package' first: a Go file starts with its package clause".into(),
                ));
            }
            "import_declaration" if other_decl => {
                return Some((
                    child.start_byte(),
                    "syntax error: imports must appear before other declarations".into(),
                ));
            }
            "import_declaration" => {}
            "function_declaration"
            | "method_declaration"
            | "type_declaration"
            | "const_declaration"
            | "var_declaration" => other_decl = true,
            _ if child.is_named() => {
                return Some((
                    child.start_byte(),
                    "syntax error: non-declaration statement outside function body".into(),
                ));
            }
            _ => other_decl = true,
        }
    }
    if package_seen {
        newline_before_closer(root)
    } else {
        Some((
            root.end_byte(),
            "expected 'package', found 'EOF': a Go file starts with its package clause".into(),
        ))
    }
}

/// The first list (a composite literal's elements, a call's arguments, a parameter list) whose
/// last element ends its line without a comma before the closing bracket: Go's lexer puts a
/// semicolon at that newline (after an identifier, a literal, `)`, `]` or `}`; not after `...`).
/// Its offset (the end of the element) and go/parser's message. Walked with a cursor, no recursion.
fn newline_before_closer(root: Node<'_>) -> Option<(usize, String)> {
    let mut cursor = root.walk();
    loop {
        let node = cursor.node();
        let list = match node.kind() {
            "literal_value" => Some("composite literal"),
            "argument_list" | "special_argument_list" => Some("argument list"),
            "parameter_list" => Some("parameter list"),
            _ => None,
        };
        if node.kind() == "binary_expression" {
            if let Some(found) = operator_after_newline(node) {
                return Some(found);
            }
        }
        if let Some(list) = list {
            if let Some(at) = missing_comma(node) {
                return Some((
                    at,
                    format!("syntax error: unexpected newline in {list}; possibly missing comma or closing bracket"),
                ));
            }
        }
        if cursor.goto_first_child() {
            continue;
        }
        while !cursor.goto_next_sibling() {
            if !cursor.goto_parent() {
                return None;
            }
        }
    }
}

/// Where `list`'s last element ends, when a newline and no comma lie between it and the closer.
fn missing_comma(list: Node<'_>) -> Option<usize> {
    let count = u32::try_from(list.child_count()).ok()?;
    let closer = list.child(count.checked_sub(1)?)?;
    if !matches!(closer.kind(), ")" | "}") || closer.is_missing() {
        return None;
    }
    // The last child before the closer that is not a comment.
    let mut i = count.checked_sub(2)?;
    let last = loop {
        let child = list.child(i)?;
        if child.kind() != "comment" {
            break child;
        }
        i = i.checked_sub(1)?;
    };
    if matches!(last.kind(), "," | "(" | "{" | "..." | "variadic_argument") || i == 0 {
        return None;
    }
    (closer.start_position().row > last.end_position().row).then_some(last.end_byte())
}

/// A binary expression whose operator starts a line after the line its left operand ends: Go's
/// lexer ends the line with a semicolon there (an operand always ends with an identifier, a
/// literal, `)`, `]` or `}`). An error wherever the operator cannot start an expression (`/`,
/// `==`, `&&`...) and, for those that can (`-`, `+`, `!`, `^`, `*`, `&`, `<-`), inside a list or
/// brackets, where no statement may begin; in a statement (`x := a` then `-b`) go/parser reads two
/// statements, and it is left to the compiler.
fn operator_after_newline(node: Node<'_>) -> Option<(usize, String)> {
    let left = node.child_by_field_name("left")?;
    let operator = node.child_by_field_name("operator")?;
    if operator.start_position().row <= left.end_position().row {
        return None;
    }
    let op = operator.kind();
    let message = || {
        Some((
            operator.start_byte(),
            format!(
                "syntax error: unexpected `{op}` at the start of a line (Go ends the line before \
                 it with a semicolon; possibly missing comma)"
            ),
        ))
    };
    if !matches!(op, "-" | "+" | "!" | "^" | "*" | "&" | "<-") {
        return message();
    }
    let mut up = node.parent();
    while let Some(p) = up {
        let kind = p.kind();
        if matches!(
            kind,
            "literal_value"
                | "argument_list"
                | "special_argument_list"
                | "parenthesized_expression"
                | "index_expression"
                | "slice_expression"
                | "type_arguments"
        ) {
            return message();
        }
        if kind == "block"
            || kind == "source_file"
            || kind.ends_with("_statement")
            || kind.ends_with("_declaration")
            || kind.ends_with("_spec")
            || kind.ends_with("_clause")
        {
            return None;
        }
        up = p.parent();
    }
    None
}
