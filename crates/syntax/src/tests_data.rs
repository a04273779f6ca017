//! The data formats: JSON, TOML and YAML, valid and invalid at exact positions.

use super::tests::{invalid_at, parsed, Ws};
use super::*;

// --- JSON ---

#[test]
fn json_valid() {
    let ws = Ws::new();
    assert_eq!(
        parsed(&ws.check("a.json", "{\"a\": [1, 2, {\"b\": null}]}\n")),
        "JSON (serde_json)"
    );
}

#[test]
fn json_invalid_at_the_offending_character() {
    let ws = Ws::new();
    invalid_at(
        &ws.check("cfg/a.json", "{\n  \"a\": 1,\n  \"b\": }\n"),
        3,
        8,
        "expected value",
    );
    invalid_at(
        &ws.check("b.json", "{\"a\": 1,}"),
        1,
        9,
        "key must be a string",
    );
    // An unexpected end is reported at the end.
    invalid_at(
        &ws.check("c.json", "{\"a\": [1,\n"),
        2,
        1,
        "EOF while parsing",
    );
}

/// The files tsc and VS Code read with comments and trailing commas are judged so: an honest
/// `tsconfig.json` with a comment parses; the same text in `package.json` (npm reads strict
/// JSON) does not.
#[test]
fn jsonc_files_take_comments_and_trailing_commas() {
    let ws = Ws::new();
    let text = "{\n  // strict for the app\n  \"compilerOptions\": {\n    \"strict\": true, /* keep */\n  },\n}\n";
    for rel in [
        "tsconfig.json",
        "packages/web/tsconfig.build.json",
        "jsconfig.json",
        ".vscode/settings.json",
        "app/.vscode/launch.json",
        ".devcontainer/devcontainer.json",
        "biome.json",
        "notes.jsonc",
        "TSCONFIG.JSON",
    ] {
        assert_eq!(
            parsed(&ws.check(rel, text)),
            "JSON with comments (jsonc-parser)",
            "{rel}"
        );
    }
    invalid_at(
        &ws.check("package.json", text),
        2,
        3,
        "key must be a string",
    );
    invalid_at(
        &ws.check("vscode/settings.json", text),
        2,
        3,
        "key must be a string",
    );
}

/// JSONC is JSON with comments and trailing commas, nothing more: what tsc and VS Code reject
/// (single quotes, bare keys, a missing comma, hexadecimal numbers, an unclosed comment) is
/// invalid at its place, and a file of comments only holds no value.
#[test]
fn jsonc_is_no_looser_than_its_readers() {
    let ws = Ws::new();
    for (text, line, column, message) in [
        (
            "{\n  'a': 1\n}",
            2,
            3,
            "Single-quoted strings are not allowed",
        ),
        ("{\n  a: 1\n}", 2, 3, ""),
        ("[1\n 2]", 1, 3, "Expected comma"),
        ("{\"a\": 0x10}", 1, 7, "Hexadecimal numbers are not allowed"),
        ("{\"a\": 1} /* open", 1, 10, "Unterminated comment block"),
        ("// nothing here\n", 2, 1, "no value"),
    ] {
        let o = ws.check("tsconfig.json", text);
        invalid_at(&o, line, column, message);
    }
}

/// Nested deeper than the JSONC parser goes: not decided (blocking), never passed, no crash.
#[test]
fn jsonc_too_deep_is_not_decided() {
    let ws = Ws::new();
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    assert!(
        matches!(
            ws.check("tsconfig.json", &deep),
            Outcome::Inconclusive { .. }
        ),
        "{:?}",
        ws.check("tsconfig.json", &deep)
    );
}

#[test]
fn json_columns_count_characters_not_bytes() {
    let ws = Ws::new();
    // "é" is two bytes; serde_json says byte column 10, the editor shows character 9.
    invalid_at(
        &ws.check("a.json", "{\"é\": 1 x}"),
        1,
        9,
        "expected `,` or `}`",
    );
}

#[test]
fn json_message_has_no_duplicate_position() {
    let ws = Ws::new();
    let o = ws.check("a.json", "[1 2]");
    invalid_at(&o, 1, 4, "expected `,` or `]`");
    let Outcome::Invalid { message, .. } = o else {
        unreachable!()
    };
    assert!(!message.contains("line"), "{message}");
}

#[test]
fn json_with_a_byte_order_mark_is_valid() {
    let ws = Ws::new();
    parsed(&ws.check("a.json", b"\xEF\xBB\xBF{}"));
}

#[test]
fn json_not_utf8_is_invalid_at_the_bad_byte() {
    let ws = Ws::new();
    invalid_at(
        &ws.check("a.json", b"{\n \"a\": \"\xFF\"}"),
        2,
        8,
        "invalid UTF-8 (byte 0xFF)",
    );
}

// --- TOML ---

#[test]
fn toml_valid() {
    let ws = Ws::new();
    assert_eq!(
        parsed(&ws.check(
            "Cargo.toml",
            "[package]\nname = \"x\"\n[[bin]]\nname = \"y\"\n"
        )),
        "TOML (toml)"
    );
}

#[test]
fn toml_invalid_at_the_span() {
    let ws = Ws::new();
    invalid_at(&ws.check("a.toml", "[a]\nb = 1\nc = \n"), 3, 5, "");
    invalid_at(&ws.check("b.toml", "a = 1\na = 2\n"), 2, 1, "duplicate key");
}

// --- YAML ---

#[test]
fn yaml_valid() {
    let ws = Ws::new();
    let how = parsed(&ws.check("a.yaml", "a: 1\nb: [x, y]\nc: &anchor {d: 2}\ne: *anchor\n"));
    assert_eq!(how, "YAML (saphyr-parser)");
    parsed(&ws.check("b.yml", "- 1\n- two\n"));
}

#[test]
fn yaml_multi_document_is_valid() {
    let ws = Ws::new();
    parsed(&ws.check("k8s.yaml", "---\nkind: A\n---\nkind: B\n...\n---\n- 1\n"));
}

#[test]
fn yaml_invalid() {
    let ws = Ws::new();
    invalid_at(
        &ws.check("a.yaml", "a: 1\nb: [1, 2\nc: 3\n"),
        3,
        2,
        "illegal placement of ':' indicator",
    );
    invalid_at(
        &ws.check("b.yaml", "a: 1\n  b: 2\n"),
        2,
        4,
        "mapping values are not allowed",
    );
    invalid_at(&ws.check("c.yaml", "a: *nowhere\n"), 1, 4, "unknown anchor");
    // An error in the second document of a stream: at the opening quote.
    invalid_at(
        &ws.check("d.yaml", "a: 1\n---\nb: \"open\n"),
        3,
        4,
        "found unexpected end of stream",
    );
}
