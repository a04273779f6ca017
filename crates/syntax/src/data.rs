//! JSON, TOML and YAML, parsed natively. Each parser only validates (no value is kept). JSON is
//! skipped over as `IgnoredAny`, which `serde_json` does with an explicit stack: any depth is
//! checked, without recursion. TOML and YAML stop at their parsers' own nesting limits (an error).
//!
//! TOML is judged by the version its reader uses. The `toml` crate reads TOML 1.1; pip, `tomllib`
//! and the Python tools read TOML 1.0, so their files ([`PYTHON_TOML`]) are also walked through
//! `toml_parser`'s events and anything 1.1 added is an error there: newlines, comments and a
//! trailing comma in an inline table, the `\e` and `\xHH` escapes, times without seconds, and a
//! byte-order mark (`tomllib` reads UTF-8 without one). In any TOML file, a second byte-order
//! mark is an error.

use serde::de::IgnoredAny;

use super::{offset_of, position, utf8, Outcome};

const JSON: &str = "JSON (serde_json)";
const JSONC: &str = "JSON with comments (jsonc-parser)";
const TOML: &str = "TOML (toml)";
const TOML10: &str = "TOML 1.0, as tomllib and pip read it";

/// The files Python tooling reads as TOML 1.0 (`tomllib`, pip's vendored `tomli`): judged as
/// TOML even without a `.toml` extension. (`setup.cfg` is INI, not TOML.)
pub(super) const PYTHON_TOML: &[&str] = &[
    "pyproject.toml",
    "poetry.lock",
    "Pipfile",
    "uv.lock",
    "ruff.toml",
    ".ruff.toml",
    "pdm.lock",
    "tox.toml",
];

/// Whether a file name is one of [`PYTHON_TOML`].
pub(super) fn is_python_toml(name: &str) -> bool {
    PYTHON_TOML.contains(&name)
}
const YAML: &str = "YAML (saphyr-parser)";

pub(super) fn json(bytes: &[u8]) -> Outcome {
    let text = match utf8(bytes, JSON) {
        Ok(text) => text,
        Err(invalid) => return invalid,
    };
    match serde_json::from_str::<IgnoredAny>(text) {
        Ok(_) => Outcome::Parsed { how: JSON.into() },
        Err(e) => {
            let bytes = text.as_bytes();
            // An unexpected end is reported at the end, not at the last character read.
            let at = if e.classify() == serde_json::error::Category::Eof {
                bytes.len()
            } else {
                offset_of(bytes, e.line(), e.column())
            };
            let (line, column) = position(bytes, at);
            // serde_json's message ends with its own " at line L column C" (bytes): drop it.
            let message = e.to_string();
            let message = message
                .rsplit_once(" at line ")
                .map_or(message.as_str(), |(m, _)| m)
                .to_owned();
            Outcome::Invalid {
                line,
                column,
                message,
                how: JSON.into(),
            }
        }
    }
}

/// The JSON files whose readers take comments and trailing commas (JSONC), by name: the
/// TypeScript compiler's, VS Code's and the tools that follow them. A `.jsonc` file is JSONC
/// whatever its name; `package.json` and any other `.json` are strict JSON.
pub(super) fn is_jsonc(rel: &str, name: &str) -> bool {
    let lower = name.to_ascii_lowercase();
    let config = |stem: &str| {
        lower == format!("{stem}.json")
            || (lower.starts_with(&format!("{stem}.")) && lower.ends_with(".json"))
    };
    lower.ends_with(".jsonc")
        || config("tsconfig")
        || config("jsconfig")
        || matches!(
            lower.as_str(),
            "devcontainer.json"
                | ".devcontainer.json"
                | ".eslintrc.json"
                | "biome.json"
                | "deno.json"
                | "turbo.json"
                | "typedoc.json"
                | "tslint.json"
                | "api-extractor.json"
                | "language-configuration.json"
                | ".oxlintrc.json"
        )
        || (lower.ends_with(".json")
            && rel
                .rsplit_once('/')
                .is_some_and(|(dir, _)| dir == ".vscode" || dir.ends_with("/.vscode")))
}

/// A JSONC file: JSON with `//` and `/* */` comments and trailing commas, and nothing more
/// (no single quotes, bare keys or hexadecimal numbers: tsc and VS Code reject those). Nested
/// deeper than the parser's limit (512) is not decided, never passed.
pub(super) fn jsonc(bytes: &[u8]) -> Outcome {
    let text = match utf8(bytes, JSONC) {
        Ok(text) => text,
        Err(invalid) => return invalid,
    };
    let options = jsonc_parser::ParseOptions {
        allow_comments: true,
        allow_trailing_commas: true,
        allow_loose_object_property_names: false,
        allow_missing_commas: false,
        allow_single_quoted_strings: false,
        allow_hexadecimal_numbers: false,
        allow_unary_plus_numbers: false,
    };
    match jsonc_parser::parse_to_value(text, &options) {
        Ok(Some(_)) => Outcome::Parsed { how: JSONC.into() },
        Ok(None) => {
            let (line, column) = position(text.as_bytes(), text.len());
            Outcome::Invalid {
                line,
                column,
                message: "no value: the file holds only whitespace and comments".into(),
                how: JSONC.into(),
            }
        }
        Err(e)
            if matches!(
                e.kind(),
                jsonc_parser::errors::ParseErrorKind::NestingDepthExceeded
            ) =>
        {
            Outcome::Inconclusive {
                why: format!("nested deeper than {JSONC} reads (512 levels)"),
            }
        }
        Err(e) => {
            let (line, column) = position(text.as_bytes(), e.range().start);
            Outcome::Invalid {
                line,
                column,
                message: e.kind().to_string(),
                how: JSONC.into(),
            }
        }
    }
}

/// A TOML file; `name` (its file name) says which TOML version its reader reads.
pub(super) fn toml(name: &str, bytes: &[u8]) -> Outcome {
    let v10 = is_python_toml(name);
    let how = if v10 { TOML10 } else { TOML };
    let invalid = |text: &[u8], at: usize, message: String| {
        let (line, column) = position(text, at);
        Outcome::Invalid {
            line,
            column,
            message,
            how: how.into(),
        }
    };
    if v10 && bytes.starts_with(b"\xEF\xBB\xBF") {
        return invalid(
            bytes,
            0,
            "a byte-order mark (tomllib reads UTF-8 without one)".into(),
        );
    }
    let text = match utf8(bytes, how) {
        Ok(text) => text,
        Err(invalid) => return invalid,
    };
    if text.starts_with('\u{feff}') {
        return invalid(text.as_bytes(), 0, "a second byte-order mark".into());
    }
    if let Err(e) = toml::from_str::<toml::Table>(text) {
        let at = e.span().map_or(0, |span| span.start);
        return invalid(text.as_bytes(), at, e.message().trim_end().to_owned());
    }
    if v10 {
        if let Some((at, message)) = beyond_toml_10(text) {
            return invalid(text.as_bytes(), at, message);
        }
    }
    Outcome::Parsed { how: how.into() }
}

/// The first construct of a valid TOML 1.1 document that TOML 1.0 lacks, with its byte offset.
fn beyond_toml_10(text: &str) -> Option<(usize, String)> {
    use toml_parser::decoder::Encoding;
    use toml_parser::parser::{Event, EventKind};

    let source = toml_parser::Source::new(text);
    let tokens = source.lex().into_vec();
    let mut events = Vec::new();
    let mut errors: Vec<toml_parser::ParseError> = Vec::new();
    toml_parser::parser::parse_document(&tokens, &mut |e: Event| events.push(e), &mut errors);
    // Containers open at each event: `true` for an inline table, `false` for an array.
    let mut open: Vec<bool> = Vec::new();
    // The last event that was not whitespace, inside the innermost container.
    let mut last: Option<EventKind> = None;
    let v11 = |what: &str| format!("{what} (added in TOML 1.1)");
    for e in &events {
        let at = e.span().start();
        let raw = || source.get(e.span()).map_or("", |r| r.as_str());
        let in_inline = open.last() == Some(&true);
        match e.kind() {
            EventKind::InlineTableOpen => open.push(true),
            EventKind::ArrayOpen => open.push(false),
            EventKind::InlineTableClose => {
                if last == Some(EventKind::ValueSep) {
                    return Some((at, v11("a trailing comma in an inline table")));
                }
                open.pop();
            }
            EventKind::ArrayClose => {
                open.pop();
            }
            EventKind::Newline | EventKind::Comment if in_inline => {
                return Some((at, v11("a line break or comment inside an inline table")));
            }
            EventKind::Scalar => match e.encoding() {
                Some(Encoding::BasicString | Encoding::MlBasicString) => {
                    if let Some(i) = new_escape(raw()) {
                        return Some((at + i, v11("the `\\e` or `\\x` escape")));
                    }
                }
                None if time_without_seconds(raw()) => {
                    return Some((at, v11("a time without seconds")));
                }
                _ => {}
            },
            _ => {}
        }
        if e.kind() != EventKind::Whitespace {
            last = Some(e.kind());
        }
    }
    None
}

/// The offset of a `\e` or `\xHH` escape in a basic string's source text.
fn new_escape(raw: &str) -> Option<usize> {
    let b = raw.as_bytes();
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'\\' {
            if matches!(b.get(i + 1), Some(b'e' | b'x')) {
                return Some(i);
            }
            i += 2;
        } else {
            i += 1;
        }
    }
    None
}

/// A local time or the time of a date-time written `HH:MM` (no `:SS`).
fn time_without_seconds(raw: &str) -> bool {
    let b = raw.as_bytes();
    let time = if b.len() > 11 && b[4] == b'-' && matches!(b[10], b'T' | b't' | b' ') {
        &b[11..]
    } else if b.get(2) == Some(&b':') {
        b
    } else {
        return false;
    };
    time.len() >= 5
        && time[..2].iter().all(u8::is_ascii_digit)
        && time[2] == b':'
        && time.get(5) != Some(&b':')
}

pub(super) fn yaml(bytes: &[u8]) -> Outcome {
    let text = match utf8(bytes, YAML) {
        Ok(text) => text,
        Err(invalid) => return invalid,
    };
    for event in saphyr_parser::Parser::new_from_str(text) {
        if let Err(e) = event {
            let mark = e.marker();
            return Outcome::Invalid {
                line: mark.line(),
                column: mark.col() + 1,
                message: e.info().to_owned(),
                how: YAML.into(),
            };
        }
    }
    Outcome::Parsed { how: YAML.into() }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// TOML 1.1 documents the `toml` crate reads and `tomllib` does not.
    const V11: &[(&str, &str, (usize, usize))] = &[
        (
            "newline in an inline table",
            "a = { b = 1,\n  c = 2 }\n",
            (1, 13),
        ),
        (
            "comment in an inline table",
            "a = { b = 1, # x\n c = 2 }\n",
            (1, 14),
        ),
        (
            "trailing comma in an inline table",
            "a = { b = 1, }\n",
            (1, 14),
        ),
        ("\\e escape", "a = \"x\\e\"\n", (1, 7)),
        ("\\x escape", "a = \"\"\"\n\\x41\"\"\"\n", (2, 1)),
        ("local time without seconds", "a = 07:32\n", (1, 5)),
        (
            "date-time without seconds",
            "a = 1979-05-27T07:32Z\n",
            (1, 5),
        ),
        (
            "local date-time without seconds",
            "a = 1979-05-27 07:32\n",
            (1, 5),
        ),
    ];

    /// TOML 1.0 that must stay valid for Python tooling. (Non-ASCII bare keys, in TOML 1.1
    /// drafts, the `toml` crate refuses too.)
    const V10: &[&str] = &[
        "a = { b = [\n  1,\n  2,\n] }\n",
        "a = [\n  { b = 1 }, # c\n]\n",
        "a = \"x\\\\e \\u0041 \\t\"\n",
        "a = 'C:\\e\\x'\n",
        "a = \"\"\"one \\\n  two\"\"\"\n",
        "a = 1979-05-27T07:32:00-08:00\nb = 1979-05-27\nc = 07:32:00.999\nd = 1979-05-27 07:32:00\n",
        "[tool.x]\n\"é\" = 1\n",
    ];

    fn parsed(o: &Outcome) -> bool {
        matches!(o, Outcome::Parsed { .. })
    }

    #[track_caller]
    fn invalid_at(o: &Outcome, at: (usize, usize)) -> String {
        match o {
            Outcome::Invalid {
                line,
                column,
                message,
                ..
            } => {
                assert_eq!((*line, *column), at, "{message}");
                message.clone()
            }
            other => panic!("not invalid: {other:?}"),
        }
    }

    #[test]
    fn python_tooling_reads_toml_1_0_others_the_crate_s_1_1() {
        for (what, doc, at) in V11 {
            assert!(
                parsed(&toml("app.toml", doc.as_bytes())),
                "{what}: app.toml"
            );
            for name in PYTHON_TOML {
                let m = invalid_at(&toml(name, doc.as_bytes()), *at);
                assert!(m.contains("TOML 1.1"), "{what}: {m}");
            }
        }
        for doc in V10 {
            assert!(parsed(&toml("pyproject.toml", doc.as_bytes())), "{doc:?}");
        }
    }

    #[test]
    fn byte_order_marks() {
        let one = "\u{feff}a = 1\n";
        let two = "\u{feff}\u{feff}a = 1\n";
        assert!(parsed(&toml("app.toml", one.as_bytes())));
        let m = invalid_at(&toml("app.toml", two.as_bytes()), (1, 1));
        assert_eq!(m, "a second byte-order mark");
        let m = invalid_at(&toml("pyproject.toml", one.as_bytes()), (1, 1));
        assert!(m.contains("byte-order mark"), "{m}");
    }

    #[test]
    fn python_tooling_files_are_toml_by_name() {
        assert!(is_python_toml("Pipfile"));
        assert!(is_python_toml("poetry.lock"));
        assert!(!is_python_toml("setup.cfg"));
        assert!(!is_python_toml("Cargo.lock"));
        let abs = std::path::Path::new("/nonexistent/ws/Pipfile");
        let o = super::super::check("Pipfile", b"[packages\n", abs, &[]);
        assert!(matches!(o, Outcome::Invalid { .. }), "{o:?}");
        let o = super::super::check("sub/uv.lock", b"a = { b = 1, }\n", abs, &[]);
        assert!(matches!(o, Outcome::Invalid { .. }), "{o:?}");
        let o = super::super::check("sub/Cargo.lock", b"a = { b = 1, }\n", abs, &[]);
        assert!(matches!(o, Outcome::NotApplicable), "{o:?}");
    }

    /// Python's `tomllib` (3.11+) is the oracle: it rejects every V11 document and a byte-order
    /// mark, and reads every V10 one. Where no such Python is installed, the expectations above
    /// stand alone.
    #[test]
    fn tomllib_agrees() {
        let Ok(out) = std::process::Command::new("python3")
            .args(["-c", "import tomllib"])
            .output()
        else {
            return;
        };
        if !out.status.success() {
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let docs = V11
            .iter()
            .map(|(_, d, _)| (*d, false))
            .chain(V10.iter().map(|d| (*d, true)))
            .chain([
                ("\u{feff}a = 1\n", false),
                ("\u{feff}\u{feff}a = 1\n", false),
            ]);
        for (i, (doc, valid)) in docs.enumerate() {
            let path = dir.path().join(format!("{i}.toml"));
            std::fs::write(&path, doc).unwrap();
            let ok = std::process::Command::new("python3")
                .args([
                    "-c",
                    "import tomllib,sys; tomllib.load(open(sys.argv[1],'rb'))",
                ])
                .arg(&path)
                .output()
                .unwrap()
                .status
                .success();
            assert_eq!(ok, valid, "tomllib on {doc:?}");
            assert_eq!(
                parsed(&toml("pyproject.toml", doc.as_bytes())),
                valid,
                "{doc:?}"
            );
        }
    }
}
