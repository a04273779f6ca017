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

/// Cases from `bench/real_code_mutate.py --lang go` (Go's standard library, edited), which
/// gofmt rejects and tree-sitter-go took.
#[test]
fn a_statement_at_the_top_level() {
    // src/internal/pkgbits/codes.go truncated inside `func`.
    invalid_at(
        &go("package pkgbits\n\ntype CodeObj int\n\nfu"),
        5,
        1,
        "non-declaration statement outside function body",
    );
    invalid_at(
        &go("package main\n\nx := 1\n"),
        3,
        1,
        "non-declaration statement outside function body",
    );
    parsed(&go(
        "package p\n\nimport \"os\"\n\nconst c = 1\n\ntype T int\n\nfunc (T) m() {}\n\nfunc f() { x := 1; _ = x }\n\nvar v = os.Args\n",
    ));
}

#[test]
fn a_list_whose_last_element_ends_its_line_needs_a_comma() {
    // src/math/j1.go: the comma after the last element of a composite literal deleted.
    invalid_at(
        &go("package math\n\nvar p = [6]float64{\n\t0.0,\n\t-4.61e+00 // 0xC01270C23302D9FF\n}\n"),
        5,
        11,
        "unexpected newline in composite literal",
    );
    invalid_at(
        &go("package p\n\nfunc f() {\n\tg(\n\t\t1,\n\t\t2\n\t)\n}\n"),
        6,
        4,
        "unexpected newline in argument list",
    );
    invalid_at(
        &go("package p\n\nfunc f(\n\ta int,\n\tb string\n) {}\n"),
        5,
        10,
        "unexpected newline in parameter list",
    );
    // With the comma, on one line, after `...`, or only a comment left: valid.
    parsed(&go(
        "package p\n\nvar a = []int{\n\t1,\n\t2, // two\n}\nvar b = []int{1, 2}\nvar c = map[string]int{}\nvar d = []int{\n}\n\nfunc f(xs ...int) {\n\tf(\n\t\txs...\n\t)\n\tf(1,\n\t\t2)\n\t_ = struct {\n\t\ta int\n\t}{\n\t\ta: 1,\n\t}\n}\n\nfunc g(\n\ta int,\n) (\n\tr int,\n) {\n\treturn a\n}\n",
    ));
}

#[test]
fn an_operator_at_the_start_of_a_line() {
    // src/math/j1.go with a comma deleted inside the list: two elements, not `a - b`.
    invalid_at(
        &go("package math\n\nvar q = [3]float64{\n\t-5.07e-09, // 0xBE35\n\t-4.61e+00 // 0xC012\n\t-5.78e+01, // 0xC04C\n}\n"),
        6,
        2,
        "unexpected `-` at the start of a line",
    );
    // src/net/http/readrequest_test.go: a string, then `&Request{...}` on the next line.
    invalid_at(
        &go("package http\n\nvar reqs = []any{\n\t\"a\" +\n\t\t\"b\"\n\t&T{},\n}\n"),
        6,
        2,
        "unexpected `&` at the start of a line",
    );
    invalid_at(
        &go("package p\n\nvar b = []bool{\n\ttrue,\n\ttrue\n\t\t&& false,\n}\n"),
        6,
        3,
        "unexpected `&&` at the start of a line",
    );
    // At the end of the line, the operator continues the expression; at the start of a statement
    // a unary operator begins another (go/parser takes it; the compiler reports it unused).
    parsed(&go(
        "package p\n\nvar a = []int{\n\t1 +\n\t\t2,\n\t-3,\n}\n\nfunc f(c chan int) int {\n\tx := 1\n\t<-c\n\ty := x &&\n\t\ttrue\n\t_ = y\n\treturn x\n}\n",
    ));
}
