//! The modules a Python file imports by absolute name, read with its grammar (never run): what a
//! file placed on the import path under one of those names would stand in for.

use std::collections::BTreeSet;

use tree_sitter::Node;

/// The first component of every module `bytes` imports by absolute name (`import a.b`,
/// `import a as x`, `from a.b import c`; anywhere in the file, inside functions and `try`
/// blocks too), sorted. Relative imports (`from . import x`) name no top-level module. `None`
/// when the file cannot be decoded or read within the parse budget: then nothing is known.
pub fn python_imports(bytes: &[u8]) -> Option<BTreeSet<String>> {
    let text = super::pyencoding::decode(bytes, "python").ok()?;
    let text = text.as_bytes();
    let language = tree_sitter_python::LANGUAGE.into();
    let tree = super::source::tree_within(&language, text, super::PARSE_BUDGET).ok()?;
    let mut names = BTreeSet::new();
    // An iterative walk: nesting costs no stack.
    let mut cursor = tree.walk();
    'walk: loop {
        let node = cursor.node();
        let descend = match node.kind() {
            "import_statement" => {
                for i in 0..node.named_child_count() {
                    let module = node.named_child(i as u32).and_then(|c| match c.kind() {
                        "dotted_name" => Some(c),
                        "aliased_import" => c.child_by_field_name("name"),
                        _ => None,
                    });
                    if let Some(m) = module {
                        names.extend(first_name(m, text));
                    }
                }
                false
            }
            "import_from_statement" => {
                if let Some(m) = node.child_by_field_name("module_name") {
                    if m.kind() == "dotted_name" {
                        names.extend(first_name(m, text));
                    }
                }
                false
            }
            _ => true,
        };
        if descend && cursor.goto_first_child() {
            continue;
        }
        loop {
            if cursor.goto_next_sibling() {
                continue 'walk;
            }
            if !cursor.goto_parent() {
                break 'walk;
            }
        }
    }
    Some(names)
}

/// The first identifier of a dotted name (`a` of `a.b.c`).
fn first_name(dotted: Node<'_>, text: &[u8]) -> Option<String> {
    let first = dotted.named_child(0)?;
    std::str::from_utf8(&text[first.byte_range()])
        .ok()
        .map(str::to_string)
}
