//! JavaScript and TypeScript through oxc (`js`, `nesting`): what tree-sitter got wrong (valid
//! TypeScript rejected, early errors accepted), goals per extension, declaration files, JSX,
//! positions, and hostile input (deep nesting of every kind, invalid UTF-8).

use std::path::Path;
use std::time::{Duration, Instant};

use super::*;

fn check_text(rel: &str, text: impl AsRef<[u8]>) -> Outcome {
    // The built-in parsers never touch the file: a path that does not exist is fine.
    check(
        rel,
        text.as_ref(),
        Path::new("/nonexistent").join(rel).as_path(),
        &[],
    )
}

#[track_caller]
fn parses(rel: &str, text: &str) -> String {
    match check_text(rel, text) {
        Outcome::Parsed { how } => how,
        other => panic!("{rel}: expected Parsed, got {other:?}\n{text}"),
    }
}

/// Asserts an Invalid outcome at `line:column` whose message contains `needle`.
#[track_caller]
fn fails_at(rel: &str, text: &str, line: usize, column: usize, needle: &str) -> String {
    match check_text(rel, text) {
        Outcome::Invalid {
            line: l,
            column: c,
            message,
            how,
        } => {
            assert_eq!((l, c), (line, column), "{rel}: position of `{message}`");
            assert!(
                message.contains(needle),
                "{rel}: `{needle}` not in `{message}`"
            );
            how
        }
        other => panic!("{rel}: expected Invalid at {line}:{column}, got {other:?}"),
    }
}

// --- what tree-sitter rejected ---

#[test]
fn typescript_that_tree_sitter_rejected_parses() {
    let how = parses(
        "a.ts",
        "let x: import(\"m\").T<string>;\nlet y: import(\"m\").T[];\n",
    );
    assert_eq!(how, format!("TypeScript ({})", js::OXC));
    parses("b.ts", "export interface I<in out T> { x: T }\n");
    parses(
        "c.ts",
        "export type * from \"./m\";\nexport type * as ns from \"./n\";\n",
    );
    parses("d.d.ts", "export default function (): T;\n");
}

#[test]
fn declaration_files() {
    let how = parses(
        "types/index.d.ts",
        "declare module \"m\" {\n  export function f<T>(x: import(\"n\").U<T>): T;\n}\n\
         export declare const v: number;\n",
    );
    assert_eq!(how, format!("TypeScript declaration ({})", js::OXC));
    // A global declaration file (no import or export) is a script.
    parses(
        "lib.d.ts",
        "declare var eval: (x: string) => any;\ninterface Array<T> { length: number }\n",
    );
    parses("a.d.mts", "export declare function f(): void;\n");
    parses("a.d.cts", "declare const x: number;\nexport = x;\n");
    parses(
        "styles.d.css.ts",
        "declare const s: { [k: string]: string };\nexport default s;\n",
    );
    // A body is not allowed in a declaration file.
    fails_at("bad.d.ts", "export function f(): void {\n}\n", 1, 27, "");
}

#[test]
fn javascript_that_tree_sitter_rejected_parses() {
    let how = parses("a.js", "function f() {}\nexport { f as function };\n");
    assert_eq!(how, format!("JavaScript ({})", js::OXC));
}

#[test]
fn early_errors_fail() {
    fails_at(
        "a.js",
        "let a = 1;\nlet a = 2;\n",
        2,
        5,
        "`a` has already been declared",
    );
    fails_at(
        "b.ts",
        "const a = 1;\nfunction f() {}\nlet a;\n",
        3,
        5,
        "already been declared",
    );
    // The message names the first declaration too.
    let o = check_text("c.mjs", "let a;\nlet a;\n");
    assert!(o.evidence("c.mjs").contains("1:5"), "{o:?}");
    fails_at(
        "d.js",
        "x: while (1) { break y; }\n",
        1,
        22,
        "undefined label",
    );
    fails_at("e.js", "const re = /(/;\n", 1, 13, "");
    fails_at("f.js", "const c;\n", 1, 7, "");
}

#[test]
fn syntax_errors_fail_at_their_position() {
    fails_at("b.js", "let a = 1;\nlet = ;\n", 2, 7, "");
    fails_at(
        "c.js",
        "function f( {\n  return 1;\n}\n",
        2,
        10,
        "Expected `:`",
    );
    fails_at("b.ts", "const a: = 1;\n", 1, 10, "");
    // Columns count characters: `é` is two bytes.
    fails_at("a.js", "let s = 'é'; x = );\n", 1, 18, "");
    // More errors are counted when the parser recovers.
    let o = check_text("m.ts", "let a = 1;\nlet a = 2;\nlet a = 3;\n");
    assert!(o.evidence("m.ts").contains("and 1 more"), "{o:?}");
}

// --- goals and dialects ---

#[test]
fn goals_follow_the_extension() {
    // A top-level return: CommonJS allows it, a module does not.
    parses("a.cjs", "if (x) return;\nmodule.exports = 1;\n");
    parses("a.js", "if (x) return;\n");
    fails_at("a.mjs", "if (x) return;\n", 1, 8, "");
    // A module is strict: `with` and legacy octals are errors, in a script they are not.
    parses("b.js", "with (o) { x = 010; }\n");
    fails_at("b.mjs", "with (o) { x = 1; }\n", 1, 1, "");
    // A file with module syntax is a module: its strict-mode error is reported.
    fails_at("c.js", "import x from 'x';\nwith (o) {}\n", 2, 1, "");
    // `await` at the top level: a module.
    parses("d.js", "await Promise.resolve(1);\n");
    // `.cjs` is not a module.
    fails_at("e.cjs", "import x from 'x';\n", 1, 1, "");
    // A `.cts` file may use import syntax (TypeScript compiles it to `require`).
    parses(
        "f.cts",
        "import fs = require('fs');\nimport { a } from './a';\nexport = a;\n",
    );
    parses("g.mts", "export const a: number = 1;\n");
}

#[test]
fn jsx_only_where_the_extension_says() {
    let how = parses("a.jsx", "const a = <div className=\"x\">{1}</div>;\n");
    assert_eq!(how, format!("JSX ({})", js::OXC));
    let how = parses(
        "a.tsx",
        "const a = <div>{(1 as number)}</div>;\nconst f = <T,>(x: T) => x;\n",
    );
    assert_eq!(how, format!("TSX ({})", js::OXC));
    assert!(matches!(
        check_text("b.ts", "const a = <div>{1}</div>;\n"),
        Outcome::Invalid { .. }
    ));
    assert!(matches!(
        check_text("b.js", "const a = <div>{1}</div>;\n"),
        Outcome::Invalid { .. }
    ));
    // JSX text with quotes and slashes is text.
    parses(
        "c.jsx",
        "export const C = () => <p>Don't // stop /* here (</p>;\n",
    );
    fails_at(
        "d.tsx",
        "const a = <div>{1}</span>;\n",
        1,
        21,
        "closing tag for 'div'",
    );
}

#[test]
fn extensions_ignore_ascii_case_and_d_ts_needs_a_stem() {
    assert_eq!(
        parses("A.TS", "let a: number = 1;\n"),
        format!("TypeScript ({})", js::OXC)
    );
    assert_eq!(
        parses("B.D.TS", "declare const a: number;\n"),
        format!("TypeScript declaration ({})", js::OXC)
    );
    // `.d.ts` alone is a TypeScript file named `.d`.
    assert_eq!(
        parses(".d.ts", "let a = 1;\n"),
        format!("TypeScript ({})", js::OXC)
    );
    assert_eq!(check_text("a.json5", "{}"), Outcome::NotApplicable);
}

#[test]
fn oxc_named_in_how_is_the_one_cargo_toml_requires() {
    let manifest = include_str!("../Cargo.toml");
    let version = js::OXC.trim_start_matches("oxc ");
    let line = manifest
        .lines()
        .find(|l| l.starts_with("oxc_parser = "))
        .expect("crates/syntax/Cargo.toml names oxc_parser");
    assert!(
        line.contains(&format!("version = \"{version}\"")),
        "crates/syntax/Cargo.toml's oxc_parser is not {version}: {line}"
    );
}

// --- a protocol's own command instead ---

fn command(ext: &str, script: &str, replaces_builtin: bool) -> CommandRule {
    CommandRule {
        ext: ext.into(),
        argv: ["sh", "-c", script, "sh", "{path}"]
            .iter()
            .map(|s| (*s).to_owned())
            .collect(),
        timeout: Duration::from_secs(10),
        replaces_builtin,
    }
}

#[test]
fn a_command_that_replaces_the_builtin_parser_judges_alone() {
    let dir = tempfile::tempdir().unwrap();
    let abs = dir.path().join("a.d.ts");
    // Not TypeScript oxc accepts (a body in a declaration file), but the team's compiler passes it.
    let text = b"export function f(): void {}\n";
    std::fs::write(&abs, text).unwrap();
    let accept = command(".ts", "exit 0", true);
    match check("a.d.ts", text, &abs, std::slice::from_ref(&accept)) {
        Outcome::Parsed { how } => assert!(!how.contains("oxc"), "{how}"),
        other => panic!("{other:?}"),
    }
    // Without `replaces_builtin` the command adds to oxc, and oxc's error stands.
    let adds = command(".ts", "exit 0", false);
    assert!(matches!(
        check("a.d.ts", text, &abs, &[adds]),
        Outcome::Invalid { how, .. } if how.contains("oxc")
    ));
    // The replacing command still fails what it fails.
    let reject = command(".ts", "echo \"$1:1:8: no\"; exit 1", true);
    match check("a.d.ts", text, &abs, &[reject]) {
        Outcome::Invalid { line, column, .. } => assert_eq!((line, column), (1, 8)),
        other => panic!("{other:?}"),
    }
    // Only the files the rule matches lose the built-in parser.
    let abs = dir.path().join("b.js");
    std::fs::write(&abs, "let a; let a;\n").unwrap();
    assert!(matches!(
        check("b.js", b"let a; let a;\n", &abs, &[accept]),
        Outcome::Invalid { .. }
    ));
}

// --- hostile input ---

#[test]
fn not_utf8_is_invalid_at_the_first_bad_byte() {
    match check_text("a.js", b"let a = 1;\nlet s = '\xFF';\n") {
        Outcome::Invalid {
            line,
            column,
            message,
            ..
        } => {
            assert_eq!((line, column), (2, 10));
            assert_eq!(message, "invalid UTF-8 (byte 0xFF)");
        }
        other => panic!("{other:?}"),
    }
    // A byte-order mark is skipped.
    parses("b.js", "\u{FEFF}let a = 1;\n");
}

/// Every construct that makes oxc recurse, nested just under the limit (must parse, on the
/// parse thread's stack, in a debug build), and far over it (must fail, quickly, at the place
/// the limit is passed).
#[test]
fn deep_nesting_of_every_kind_neither_overflows_nor_hangs() {
    let started = Instant::now();
    let shapes: &[(&str, &str, &str, &str, usize)] = &[
        // (file, prefix, open, close-and-rest, units per level)
        ("paren.js", "x = ", "(", ")", 1),
        ("array.js", "x = ", "[", "]", 1),
        ("object.js", "x = ", "{a:", "}", 2),
        ("call.js", "x = ", "f(", ")", 1),
        ("block.js", "", "{", "}", 1),
        ("fn.js", "", "function f(){", "}", 2),
        ("class.js", "x = ", "class{m(){", "}}", 3),
        ("not.js", "x = ", "!", "", 1),
        ("neg.js", "x = ", "- ", "", 1),
        ("typeof.js", "x = ", "typeof ", "", 1),
        ("new.js", "x = ", "new ", "", 1),
        ("ternary.js", "x = ", "a?b:", "", 1),
        ("assign.js", "", "a=", "", 1),
        ("arrow.js", "x = ", "()=>", "", 2),
        ("pow.js", "x = ", "a**", "", 1),
        ("if.js", "", "if(a)", "", 2),
        ("elseif.js", "", "if(a){}else ", "", 4),
        ("for.js", "", "for(;;)", "", 2),
        ("label.js", "", "l:", "", 1),
        ("template.js", "x = ", "`${", "}`", 1),
        ("spread.js", "x = ", "[...", "]", 2),
        ("jsx.jsx", "x = ", "<a>", "</a>", 2),
        ("generic.ts", "let x: ", "Array<", ">", 1),
        ("cond.ts", "type T = ", "A extends B ? C : ", "", 2),
        ("keyof.ts", "type T = ", "keyof ", "", 1),
        ("fntype.ts", "type T = ", "() => ", "", 2),
    ];
    for &(file, prefix, open, close, units) in shapes {
        let below = (nesting::LIMIT - 10) / units;
        let text = format!("{prefix}{}1{};\n", open.repeat(below), close.repeat(below));
        let o = check_text(file, &text);
        assert!(
            !matches!(&o, Outcome::Invalid { message, .. } if message.contains("nested deeper")),
            "{file}: {below} levels are within the limit: {o:?}"
        );
        assert!(!matches!(o, Outcome::Inconclusive { .. }), "{file}: {o:?}");
        let over = 100_000;
        let text = format!("{prefix}{}1{};\n", open.repeat(over), close.repeat(over));
        match check_text(file, &text) {
            Outcome::Invalid { line, message, .. } => {
                assert_eq!(line, 1, "{file}");
                assert!(message.contains("nested deeper than"), "{file}: {message}");
            }
            other => panic!("{file}: {other:?}"),
        }
    }
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "{:?}",
        started.elapsed()
    );
}

/// A closer inside a string, comment or regex cannot close a real bracket: it would hide the
/// real depth from the scan.
#[test]
fn closers_in_strings_comments_and_regexes_do_not_hide_depth() {
    for (file, hide) in [
        ("s.js", "\"))))))))))\""),
        ("c.js", "/* )))))))))) */"),
        ("l.js", "// ))))))))))\n"),
        ("r.js", "/\\)\\)\\)\\)\\)\\)\\)\\)\\)\\)/"),
        ("t.js", "`))))))))))`"),
    ] {
        let round = format!("(((((((((({hide},");
        let text = format!("x = {}1;\n", round.repeat(20_000));
        match check_text(file, &text) {
            Outcome::Invalid { message, .. } => {
                assert!(message.contains("nested deeper than"), "{file}: {message}")
            }
            other => panic!("{file}: {other:?}"),
        }
    }
}

#[test]
fn ordinary_code_is_far_below_the_limit() {
    // Ten thousand statements, ASI style, with chains that never nest.
    let body = "a = !b ? c : -d\nif (a < b) x = y\nelse z = () => !w\n".repeat(10_000);
    parses("long.js", &body);
    // A big object literal of minified booleans.
    let object = format!("x = {{{}}};\n", "a:!0,b:!1,".repeat(20_000));
    parses("min.js", &object);
}
