//! Go: the referee's port of go/parser. Each expectation (accepted, or the first error's line,
//! column and message) is what go1.27.3's `gofmt -e` (go/parser) says of the same text; the
//! valid cases are minimal reproductions of the constructs tree-sitter-go 0.25 rejected in Go's
//! own standard library (issue 17), the broken ones of the edits it let through.

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

/// `math/rand/v2/rand.go`, `runtime/traceback_test.go`: Go 1.27's methods with type parameters.
#[test]
fn methods_with_type_parameters() {
    let how = parsed(&go(
        "package rand\n\ntype Rand struct{}\n\nfunc (r *Rand) N[Int intType](n Int) Int {\n\treturn n\n}\n\nfunc (t T[P]) G[R any](buf []byte) R {\n\tvar r R\n\treturn r\n}\n",
    ));
    assert_eq!(how, golang::HOW);
    // Still not in an interface, nor on a function type.
    invalid_at(
        &go("package p\n\ntype I interface {\n\tM[T any]()\n}\n"),
        4,
        3,
        "interface method must have no type parameters",
    );
    invalid_at(
        &go("package p\n\nvar f func[T any]()\n"),
        3,
        11,
        "function type must have no type parameters",
    );
    invalid_at(
        &go("package p\n\nfunc f[]() {}\n"),
        3,
        8,
        "empty type parameter list",
    );
}

/// `net/http/internal/http2/server.go`, `go/types/trie_test.go` (and `types2`'s),
/// `runtime/secret/secret_test.go`, `encoding/json/v2/arshal_test.go`: Go 1.26's `new(expr)`.
#[test]
fn new_of_an_expression() {
    parsed(&go(
        "package p\n\nvar (\n\tKey = new(\"Key\")\n\tN   = new(42)\n\tPP  = new(new(5))\n)\n\nfunc f() {\n\ts := new(secretType(v))\n\t_ = T{P: new(\"hello\")}\n\t_ = s\n}\n",
    ));
}

/// The type checker's test inputs (`internal/types/testdata`): what only the type checker
/// rejects parses, and the grammar's own ambiguities are resolved as go/parser resolves them.
#[test]
fn what_only_the_type_checker_rejects_parses() {
    // A blank package name, a constant without value or with a type and no value.
    parsed(&go("package _\n\nconst (\n\ta = iota\n\tb\n\tc int\n)\n"));
    // An array length or a type parameter list: `[N * 2]` is a length, `[P *C]` too (go/parser
    // takes it as one), `[P *C,]` and `[P *[]int]` are type parameters; `[P]` a length.
    parsed(&go(
        "package p\n\ntype A [N * 2]int\ntype B[P *C] struct{}\ntype C[P *C,] struct{}\ntype D[P *[]int] struct{}\ntype E[P ~int | ~string, Q any] struct{}\ntype F[P []E, E any] []P\ntype G [len(x)]int\ntype H[P interface{ ~int }] int\ntype I = map[string]int\ntype J[P any] = []P\ntype K[P] int\n\nfunc f[T any, PT interface{ *T; M() }](x T) {}\n\nvar _ = f[int, *int]\nvar _ = m.G[int]\nvar _ = x.(interface{ M() })\n",
    ));
    // Statements of every kind.
    parsed(&go(
        "package p\n\nfunc f(c chan int, xs ...int) (r int, err error) {\nL:\n\tfor i := range 10 {\n\t\tif i > 2 {\n\t\t\tcontinue L\n\t\t}\n\t\tgoto M\n\tM:\n\t}\n\tfor range c {\n\t}\n\tfor k, v := range xs {\n\t\t_, _ = k, v\n\t}\n\tswitch x := any(r).(type) {\n\tcase int, []string, func() error, chan<- int, *T, map[int]struct{}:\n\t\t_ = x\n\tdefault:\n\t}\n\tselect {\n\tcase v, ok := <-c:\n\t\t_, _ = v, ok\n\tcase c <- 1:\n\tdefault:\n\t}\n\tif x := (T{}); x == (T{}) {\n\t}\n\tgo func() {}()\n\tdefer close(c)\n\tvar a [3]int\n\t_ = a[1:2:3]\n\t_ = a[:]\n\treturn len(xs), nil\n}\n",
    ));
    // Every form of number, rune and string literal.
    parsed(&go(
        "package p\n\nvar n = []any{09.5, 0b1010, 0o17, 0x_1F, 1_000, 1e9, 0x1p-2, .5i, 'a', '\\x41', '\\u00e9', \"\\U0001F600\", `raw`}\n",
    ));
}

#[test]
fn the_last_line_needs_no_newline() {
    parsed(&go("package main\n\ntype T int"));
    parsed(&go("package main\n\nvar (\n\tx = 1\n)"));
    parsed(&go("package main\n\nfunc main() {}"));
    parsed(&go("// Package p.\npackage p"));
    // Still broken without one.
    invalid_at(&go("package main\n\nfunc main() {"), 3, 14, "found 'EOF'");
}

#[test]
fn exactly_one_package_clause_first() {
    parsed(&go(
        "// Copyright.\n\n/* doc */\npackage main\n\nimport \"fmt\"\n",
    ));
    invalid_at(
        &go("func main() {}\n"),
        1,
        1,
        "expected 'package', found 'func'",
    );
    invalid_at(
        &go("package a\n\npackage b\n"),
        3,
        1,
        "expected declaration, found 'package'",
    );
    // Truncated to its comments, or empty.
    invalid_at(
        &go("// Copyright 2024.\n// Package p does things.\n"),
        3,
        1,
        "expected 'package', found 'EOF'",
    );
    invalid_at(&go(""), 1, 1, "expected 'package', found 'EOF'");
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
        "expected declaration, found fu",
    );
    invalid_at(
        &go("package main\n\nx := 1\n"),
        3,
        1,
        "expected declaration, found x",
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
        33,
        "missing ',' before newline in composite literal",
    );
    invalid_at(
        &go("package p\n\nfunc f() {\n\tg(\n\t\t1,\n\t\t2\n\t)\n}\n"),
        6,
        4,
        "missing ',' before newline in argument list",
    );
    invalid_at(
        &go("package p\n\nfunc f(\n\ta int,\n\tb string\n) {}\n"),
        5,
        10,
        "missing ',' before newline in parameter list",
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
        5,
        21,
        "missing ',' before newline in composite literal",
    );
    // src/net/http/readrequest_test.go: a string, then `&Request{...}` on the next line.
    invalid_at(
        &go("package http\n\nvar reqs = []any{\n\t\"a\" +\n\t\t\"b\"\n\t&T{},\n}\n"),
        5,
        6,
        "missing ',' before newline in composite literal",
    );
    invalid_at(
        &go("package p\n\nvar b = []bool{\n\ttrue,\n\ttrue\n\t\t&& false,\n}\n"),
        5,
        6,
        "missing ',' before newline in composite literal",
    );
    // At the end of the line, the operator continues the expression; at the start of a statement
    // a unary operator begins another (go/parser takes it; the compiler reports it unused).
    parsed(&go(
        "package p\n\nvar a = []int{\n\t1 +\n\t\t2,\n\t-3,\n}\n\nfunc f(c chan int) int {\n\tx := 1\n\t<-c\n\ty := x &&\n\t\ttrue\n\t_ = y\n\treturn x\n}\n",
    ));
}

/// What go/parser checks after parsing a parameter list; the first is the edit the referee
/// missed before (issue 17: `f(unsafe.Pointer int, int)`).
#[test]
fn parameter_lists() {
    invalid_at(
        &go("package p\n\nfunc f(unsafe.Pointer int, int) {}\n"),
        3,
        23,
        "missing ',' in parameter list",
    );
    invalid_at(
        &go("package p\n\nfunc f(a int, b) {}\n"),
        3,
        16,
        "missing parameter type",
    );
    invalid_at(
        &go("package p\n\nfunc f(a ...int, b int) {}\n"),
        3,
        10,
        "can only use ... with final parameter",
    );
    invalid_at(
        &go("package p\n\nfunc f(a, b ...int) {}\n"),
        3,
        13,
        "can only use ... with final parameter",
    );
    invalid_at(
        &go("package p\n\nfunc f() (...int) {}\n"),
        3,
        11,
        "invalid use of ...",
    );
    invalid_at(
        &go("package p\n\nfunc f()\n{\n}\n"),
        4,
        1,
        "unexpected semicolon or newline before {",
    );
}

#[test]
fn statements_go_parser_rejects() {
    let cases: &[(&str, usize, usize, &str)] = &[
        (
            "package p\n\nfunc f(s []int) {\n\tfor i, j, k := range s {\n\t}\n}\n",
            4,
            12,
            "expected at most 2 expressions",
        ),
        (
            "package p\n\nfunc f() { goto }\n",
            3,
            17,
            "expected 'IDENT', found '}'",
        ),
        (
            "package p\n\nvar _ = a[1::3]\n",
            3,
            12,
            "middle index required in 3-index slice",
        ),
        (
            "package p\n\nfunc f() {\n\tgo f\n}\n",
            4,
            6,
            "expression in go must be function call",
        ),
        (
            "package p\n\nfunc f() {\n\tdefer (f())\n}\n",
            4,
            8,
            "expression in defer must not be parenthesized",
        ),
        (
            "package p\n\nvar _ = (T){}\n",
            3,
            10,
            "cannot parenthesize type in composite literal",
        ),
        (
            "package p\n\nfunc f() {\n\tif x := 1 {\n\t}\n}\n",
            4,
            5,
            "expected boolean expression, found assignment",
        ),
        (
            "package p\n\nfunc f() {\n\tif x := 1;\n\t{\n\t}\n}\n",
            4,
            11,
            "missing condition in if statement",
        ),
        (
            "package p\n\nfunc f() {\n\tfor x := 1 {\n\t}\n}\n",
            4,
            6,
            "expected boolean or range expression, found assignment",
        ),
        (
            "package p\n\nfunc f() {\n\tswitch x = y.(type) {\n\t}\n}\n",
            4,
            11,
            "expected ':=', found '='",
        ),
        (
            "package main\n\nfunc main() {\n\tx := \n}\n",
            5,
            1,
            "expected operand, found '}'",
        ),
        (
            "package p\n\nfunc f() {\n\t(x): \n}\n",
            4,
            5,
            "illegal label declaration",
        ),
    ];
    for &(text, line, column, message) in cases {
        invalid_at(&go(text), line, column, message);
    }
}

/// go/scanner's errors: each at the offending character.
#[test]
fn lexical_errors() {
    let cases: &[(&str, usize, usize, &str)] = &[
        (
            "package p\n\nvar s = \"abc\n",
            3,
            9,
            "string literal not terminated",
        ),
        (
            "package p\n\nvar s = `abc\n",
            3,
            9,
            "raw string literal not terminated",
        ),
        (
            "package p\n\nvar s = \"a\\qb\"\n",
            3,
            12,
            "unknown escape sequence",
        ),
        (
            "package p\n\nvar s = \"\\xZZ\"\n",
            3,
            12,
            "illegal character U+005A 'Z' in escape sequence",
        ),
        (
            "package p\n\nvar s = \"\\uD800\"\n",
            3,
            11,
            "escape sequence is invalid Unicode code point",
        ),
        ("package p\n\nvar r = 'ab'\n", 3, 9, "illegal rune literal"),
        ("package p\n\nvar r = ''\n", 3, 9, "illegal rune literal"),
        (
            "package p\n\nvar n = 0x\n",
            3,
            11,
            "hexadecimal literal has no digits",
        ),
        (
            "package p\n\nvar n = 09\n",
            3,
            10,
            "invalid digit '9' in octal literal",
        ),
        (
            "package p\n\nvar n = 1__0\n",
            3,
            11,
            "'_' must separate successive digits",
        ),
        (
            "package p\n\nvar n = 0x1.0\n",
            3,
            14,
            "hexadecimal mantissa requires a 'p' exponent",
        ),
        ("package p\n\nvar n = 1e\n", 3, 11, "exponent has no digits"),
        (
            "package p\n\nvar x = 1 @ 2\n",
            3,
            11,
            "illegal character U+0040 '@'",
        ),
        ("package p\n\n// a\0b\n", 3, 5, "illegal character NUL"),
        (
            "package p\n\nvar s = \"\u{FEFF}\"\n",
            3,
            10,
            "illegal byte order mark",
        ),
        ("package p\n\n/* open\n", 3, 1, "comment not terminated"),
    ];
    for &(text, line, column, message) in cases {
        invalid_at(&go(text), line, column, message);
    }
    // A leading byte-order mark is not part of the text; invalid UTF-8 is an error.
    parsed(&go("\u{FEFF}package p\n"));
    invalid_at(&go(b"package p\n\n// \xff\n"), 3, 4, "invalid UTF-8");
    // A comment that ends the line ends the statement, one that does not leaves it open.
    parsed(&go(
        "package p\n\nvar a = 1 /* one\n */\nvar b = 2 /* two */ + 3 // three\nvar c = 4 /* four */\n",
    ));
}

/// Bad input never panics, overflows the stack or hangs: deep nesting of every recursive
/// construct is an error at the nesting limit, and every prefix of a real-looking file and bytes
/// of garbage get an answer.
#[test]
fn deep_nesting_and_garbage() {
    let deep = golang::MAX_DEPTH + 10;
    for (open, close) in [
        ("(", ")"),
        ("[]", ""),
        ("*", ""),
        ("- ", ""),
        ("func() ", ""),
    ] {
        let text = format!(
            "package p\n\nvar x = {}1{}\n",
            open.repeat(deep),
            close.repeat(deep)
        );
        let o = go(&text);
        assert!(
            matches!(&o, Outcome::Invalid { message, .. } if message.contains("max nesting depth")),
            "{open}: {o:?}"
        );
    }
    let braces = format!(
        "package p\n\nvar x = T{}{}\n",
        "{".repeat(100_000),
        "}".repeat(100_000)
    );
    assert!(matches!(go(&braces), Outcome::Invalid { .. }));
    let blocks = format!(
        "package p\n\nfunc f() {}{}\n",
        "{".repeat(100_000),
        "}".repeat(100_000)
    );
    assert!(matches!(go(&blocks), Outcome::Invalid { .. }));
    // Within the limit, deep nesting parses.
    let ok = format!(
        "package p\n\nvar x = {}1{}\n",
        "(".repeat(2_000),
        ")".repeat(2_000)
    );
    parsed(&go(&ok));
    // Every prefix of a file using most of the grammar: an answer each, no panic.
    let file = "package p\n\nimport \"fmt\"\n\ntype T[P ~int | string] struct {\n\ta, b P `tag`\n\t*fmt.Stringer\n}\n\nfunc (t *T[P]) M[Q any](xs ...Q) (r int) {\n\tfor i, x := range xs {\n\t\tswitch v := any(x).(type) {\n\t\tcase int:\n\t\t\tr += v << i\n\t\t}\n\t}\n\tselect {\n\tcase <-make(chan int):\n\t}\n\treturn r &^ 0x_ff\n}\n";
    parsed(&go(file));
    for end in 0..file.len() {
        let _ = go(&file[..end]);
    }
    // Pseudo-random garbage built from Go's tokens and bytes (a fixed linear congruential
    // sequence: the same inputs every run).
    let pieces = [
        "(",
        ")",
        "[",
        "]",
        "{",
        "}",
        "func",
        "type",
        "T",
        "x",
        ",",
        ";",
        "\n",
        ":=",
        "...",
        "<-",
        "chan",
        "*",
        "~",
        "|",
        "\"",
        "`",
        "'",
        "/*",
        "//",
        "0x",
        "1.e",
        "interface",
        "struct",
        "map",
        "range",
        "for",
        "if",
        "else",
        "case",
        ":",
        "package p\n",
        "\u{FEFF}",
        "é",
        "\\",
    ];
    let mut seed: u64 = 17;
    for _ in 0..300 {
        let mut text = String::from("package p\n");
        for _ in 0..60 {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            text.push_str(pieces[(seed >> 33) as usize % pieces.len()]);
            text.push(' ');
        }
        let _ = go(&text);
    }
}
