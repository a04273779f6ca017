//! The per-language features: in every build, a file of each source language is either judged
//! by its parser (the feature is on) or inconclusive with the feature named (it is off), never
//! passed and never "no check for this file type". Run in the default build and in
//! `cargo test -p referee-syntax --no-default-features` (CI runs both).

use super::tests::{inconclusive, Ws};
use super::*;

/// A valid file and a broken one of each language, by the name that selects its parser.
fn samples(language: Language) -> [(&'static str, &'static str); 2] {
    match language {
        Language::Python => [("ok.py", "x = 1\n"), ("bad.pyi", "def f(:\n")],
        Language::Rust => [("src/ok.rs", "fn f() {}\n"), ("src/bad.rs", "fn f( {}\n")],
        Language::JavaScript => [("ok.d.ts", "export {};\n"), ("bad.MJS", "let = ;\n")],
        Language::Go => [("ok.go", "package a\n"), ("bad.go", "package\n")],
    }
}

#[test]
fn a_language_left_out_of_the_build_is_inconclusive_never_passed() {
    let ws = Ws::new();
    for language in Language::ALL {
        let [(ok, valid), (bad, broken)] = samples(language);
        let (ok, bad) = (ws.check(ok, valid), ws.check(bad, broken));
        if language.built() {
            assert!(matches!(ok, Outcome::Parsed { .. }), "{language:?}: {ok:?}");
            assert!(
                matches!(bad, Outcome::Invalid { .. }),
                "{language:?}: {bad:?}"
            );
        } else {
            let feature = format!("cargo feature `{}`", language.feature());
            for o in [&ok, &bad] {
                inconclusive(o, "this referee was built without");
                inconclusive(o, &feature);
                inconclusive(o, language.name());
            }
        }
    }
}

#[test]
fn a_command_that_passes_cannot_stand_in_for_a_missing_parser_unless_it_replaces_it() {
    let ws = Ws::new();
    let passes = |replaces_builtin| CommandRule {
        ext: "go".into(),
        argv: vec!["sh".into(), "-c".into(), "exit 0".into()],
        timeout: std::time::Duration::from_secs(10),
        replaces_builtin,
    };
    let added = ws.check_with("a.go", "package a\n", &[passes(false)]);
    if Language::Go.built() {
        assert!(matches!(added, Outcome::Parsed { .. }), "{added:?}");
    } else {
        inconclusive(&added, "cargo feature `go`");
    }
    // A protocol that names its own checker for the type is judged by it in every build.
    let replaced = ws.check_with("a.go", "package a\n", &[passes(true)]);
    assert!(matches!(replaced, Outcome::Parsed { .. }), "{replaced:?}");
}
