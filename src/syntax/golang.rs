//! What the Go specification requires of a source file's clauses and tree-sitter-go does not
//! check: exactly one `package` clause, first (after comments only), and the imports before every
//! other declaration (`SourceFile = PackageClause ";" { ImportDecl ";" } { TopLevelDecl ";" }`).
//! A file truncated to its comments, or empty, has no package clause: it does not compile.

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
            _ => other_decl = true,
        }
    }
    if package_seen {
        None
    } else {
        Some((
            root.end_byte(),
            "expected 'package', found 'EOF': a Go file starts with its package clause".into(),
        ))
    }
}
