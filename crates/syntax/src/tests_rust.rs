//! Rust through syn: what tree-sitter-rust got wrong both ways, the edition of the crate, and
//! hostile input.

use std::path::Path;
use std::time::{Duration, Instant};

use super::tests::{invalid_at, parsed};
use super::*;

fn rs(text: impl AsRef<[u8]>) -> Outcome {
    check(
        "src/lib.rs",
        text.as_ref(),
        Path::new("/nonexistent/src/lib.rs"),
        &[],
    )
}

/// A crate with `Cargo.toml` (`manifest`) and `src/lib.rs` (`text`), checked in place.
fn in_crate(manifest: &str, text: &str) -> Outcome {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("Cargo.toml"), manifest).unwrap();
    std::fs::create_dir(dir.path().join("src")).unwrap();
    let abs = dir.path().join("src/lib.rs");
    std::fs::write(&abs, text).unwrap();
    check("src/lib.rs", text.as_bytes(), &abs, &[])
}

#[test]
fn valid_rust_tree_sitter_rejected() {
    for text in [
        "fn f() -> &'static str { str!(\"a\") }\n",
        "macro_rules! m { ($($x:tt)~*) => {}; ($a:expr $ b) => {}; }\n",
        "fn f() where (): Copy {}\n",
        "struct S where u8: Copy;\n",
        "#![allow(x)]\n//! doc\n/// item\npub struct A;\n",
        "#!/usr/bin/env rustx\nfn main() {}\n",
    ] {
        let how = parsed(&rs(text));
        assert!(how.starts_with("Rust 2021 (syn 2"), "{how}");
    }
}

#[test]
fn broken_rust_tree_sitter_accepted() {
    // An attribute or doc comment left dangling at the end of the file.
    invalid_at(
        &rs("fn f() {}\n#[derive(Debug)]\n"),
        3,
        1,
        "unexpected end of input",
    );
    invalid_at(
        &rs("fn f() {}\n/// documents nothing\n"),
        3,
        1,
        "unexpected end of input",
    );
    let o = rs("fn f() {\n    let x = ;\n}\n");
    invalid_at(&o, 2, 13, "expected an expression");
    assert_eq!(
        o.evidence("src/lib.rs"),
        "src/lib.rs:2:13: expected an expression (Rust 2021 (syn 2))"
    );
    invalid_at(&rs("fn f() {\n    g(1\n}\n"), 3, 1, "");
    invalid_at(&rs("fn f() { let s = \"open; }\n"), 1, 18, "");
}

#[test]
fn the_edition_comes_from_the_nearest_manifest() {
    let old = "[package]\nname = \"a\"\nversion = \"0.1.0\"\n";
    let try_macro = "fn f() -> Result<(), ()> { let x = try!(Ok(1)); let async = 1; Ok(()) }\n";
    let how = parsed(&in_crate(old, try_macro));
    assert!(how.starts_with("Rust 2015"), "{how}");
    // The same text in a 2018 crate: `try` is reserved.
    let new = format!("{old}edition = \"2018\"\n");
    assert!(matches!(in_crate(&new, try_macro), Outcome::Invalid { .. }));
    // A keyword in a string is text, in any edition; `dyn` stays a keyword in 2015 types.
    parsed(&in_crate(
        old,
        "fn f(x: Box<dyn Fn()>) -> &'static str { \"try async\" }\n",
    ));
    // A bare trait object with bounds: valid before 2021 (signal-hook-registry 1.4), not after.
    let bare = "type Action = Fn(&u8) + Send + Sync;\n";
    parsed(&in_crate(old, bare));
    invalid_at(
        &in_crate(&format!("{old}edition = \"2021\"\n"), bare),
        1,
        17,
        "expected `;`",
    );
    // `async fn` is 2018 and later.
    assert!(matches!(
        in_crate(old, "async fn f() {}\n"),
        Outcome::Invalid { .. }
    ));
    // Inherited from the workspace.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("Cargo.toml"),
        "[workspace]\nmembers = [\"a\"]\n[workspace.package]\nedition = \"2015\"\n",
    )
    .unwrap();
    std::fs::create_dir_all(dir.path().join("a/src")).unwrap();
    std::fs::write(
        dir.path().join("a/Cargo.toml"),
        "[package]\nname = \"a\"\nedition.workspace = true\n",
    )
    .unwrap();
    let abs = dir.path().join("a/src/lib.rs");
    std::fs::write(&abs, try_macro).unwrap();
    let how = parsed(&check("a/src/lib.rs", try_macro.as_bytes(), &abs, &[]));
    assert!(how.starts_with("Rust 2015"), "{how}");
}

#[test]
fn not_utf8_is_invalid() {
    invalid_at(
        &rs(b"fn f() {}\n// \xFF\n"),
        2,
        4,
        "invalid UTF-8 (byte 0xFF)",
    );
}

#[test]
fn deep_nesting_neither_hangs_nor_overflows() {
    let started = Instant::now();
    let deep = 100_000;
    // Too deep for syn: tree-sitter-rust judges.
    let o = rs(format!(
        "fn f() {{ let x = {}1{}; }}\n",
        "(".repeat(deep),
        ")".repeat(deep)
    ));
    assert!(
        matches!(&o, Outcome::Parsed { how } if how.contains("too deep for syn")),
        "{o:?}"
    );
    let o = rs(format!("fn f() {{ let x = {}true; }}\n", "!".repeat(deep)));
    assert!(!matches!(o, Outcome::Inconclusive { .. }), "{o:?}");
    assert!(matches!(rs("(".repeat(deep)), Outcome::Invalid { .. }));
    // Within the bound, syn itself on its own thread's stack.
    parsed(&rs(format!(
        "fn f() {{ let x = {}1{}; }}\n",
        "(".repeat(250),
        ")".repeat(250)
    )));
    parsed(&rs(format!(
        "fn f() {{ let x = {}true; }}\n",
        "!".repeat(250)
    )));
    let chain: String = (0..20_000)
        .map(|i| format!("if x == {i} {{ 1 }} else "))
        .collect();
    parsed(&rs(format!("fn f(x: u32) -> u32 {{ {chain} {{ 0 }} }}\n")));
    let closures = "|x| ".repeat(6_000);
    parsed(&rs(format!("fn f() {{ let g = {closures} 1; }}\n")));
    let returns = "return ".repeat(19_000);
    parsed(&rs(format!("fn f() {{ {returns} }}\n")));
    let o = rs(format!("fn f() {{ {} }}\n", "return ".repeat(deep)));
    assert!(
        matches!(&o, Outcome::Parsed { how } if how.contains("too deep for syn")),
        "{o:?}"
    );
    let o = rs(format!(
        "type T = {}u8{};\n",
        "Vec<".repeat(deep),
        ">".repeat(deep)
    ));
    assert!(!matches!(o, Outcome::Inconclusive { .. }), "{o:?}");
    assert!(
        started.elapsed() < Duration::from_secs(120),
        "{:?}",
        started.elapsed()
    );
}
