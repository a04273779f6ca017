//! Go: the package clause and imports in their place, and the last line without a newline. No
//! Go toolchain here: each case follows the language specification ("Source file
//! organization", "Semicolons").

use std::path::Path;

use super::tests::{invalid_at, parsed};
use super::*;

fn go(text: impl AsRef<[u8]>) -> Outcome {
    check(
        "main.go",
        text.as_ref(),
        Path::new("/nonexistent/main.go"),
        &[],
    )
}

#[test]
fn the_last_line_needs_no_newline() {
    parsed(&go("package main\n\ntype T int"));
    parsed(&go("package main\n\nvar (\n\tx = 1\n)"));
    parsed(&go("package main\n\nfunc main() {}"));
    parsed(&go("// Package p.\npackage p"));
    // Still broken without one.
    invalid_at(
        &go("package main\n\nfunc main() {"),
        3,
        13,
        "unexpected `{`",
    );
}

#[test]
fn exactly_one_package_clause_first() {
    let how = parsed(&go(
        "// Copyright.\n\n/* doc */\npackage main\n\nimport \"fmt\"\n",
    ));
    assert!(how.starts_with("Go (tree-sitter-go"), "{how}");
    invalid_at(&go("func main() {}\n"), 1, 1, "expected 'package' first");
    invalid_at(
        &go("package a\n\npackage b\n"),
        3,
        1,
        "a second `package` clause",
    );
    // Truncated to its comments, or empty.
    invalid_at(
        &go("// Copyright 2024.\n// Package p does things.\n"),
        3,
        1,
        "found 'EOF'",
    );
    invalid_at(&go(""), 1, 1, "found 'EOF'");
}

#[test]
fn imports_come_before_other_declarations() {
    parsed(&go(
        "package main\n\nimport \"fmt\"\nimport (\n\t\"os\"\n)\n\nvar x = 1\n",
    ));
    invalid_at(
        &go("package main\n\nvar x = 1\n\nimport \"fmt\"\n"),
        5,
        1,
        "imports must appear before other declarations",
    );
}
