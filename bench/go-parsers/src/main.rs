//! Side by side: the referee's Go parser (the worktree's files, included) and tree-sitter-go 0.25,
//! on the same files in one run, alternating; prints total bytes, each one's time and MB/s.
#[path = "../../../crates/syntax/src/golang/mod.rs"]
#[allow(dead_code)]
mod golang;
#[path = "../../../crates/syntax/src/goscan/mod.rs"]
#[allow(dead_code)]
mod goscan;
#[allow(dead_code)]
#[derive(Debug)]
pub enum Outcome {
    Parsed {
        how: String,
    },
    Invalid {
        line: usize,
        column: usize,
        message: String,
        how: String,
    },
}
pub fn utf8<'a>(bytes: &'a [u8], how: &str) -> Result<&'a str, Outcome> {
    let body = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
    std::str::from_utf8(body).map_err(|_| Outcome::Invalid {
        line: 0,
        column: 0,
        message: "utf8".into(),
        how: how.into(),
    })
}
pub fn go(bytes: &[u8]) -> bool {
    matches!(golang::parse(bytes), Outcome::Parsed { .. })
}
pub fn position(text: &[u8], offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    (memchr::memchr_iter(b'\n', before).count() + 1, 1)
}

use std::io::BufRead;
use std::time::{Duration, Instant};
fn main() {
    let files: Vec<Vec<u8>> = std::io::stdin()
        .lock()
        .lines()
        .map_while(Result::ok)
        .filter_map(|p| std::fs::read(p).ok())
        .collect();
    let bytes: usize = files.iter().map(|f| f.len()).sum();
    let mut ts = tree_sitter::Parser::new();
    ts.set_language(&tree_sitter_go::LANGUAGE.into()).unwrap();
    let rounds: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(3);
    let only = std::env::args().nth(2).unwrap_or_default();
    if !only.is_empty() {
        let mut n = 0;
        for f in &files {
            let pass = if only == "ours" {
                go(f)
            } else {
                !ts.parse(f, None).unwrap().root_node().has_error()
            };
            n += pass as usize;
        }
        println!(
            "{only}: {n} of {} pass, {:.1} MB",
            files.len(),
            bytes as f64 / 1e6
        );
        return;
    }
    for round in 0..rounds {
        let (mut ours, mut theirs) = (Duration::ZERO, Duration::ZERO);
        let (mut ok, mut tok) = (0, 0);
        for f in &files {
            let t = Instant::now();
            if go(f) {
                ok += 1;
            }
            ours += t.elapsed();
            let t = Instant::now();
            let tree = ts.parse(f, None).unwrap();
            if !tree.root_node().has_error() {
                tok += 1;
            }
            theirs += t.elapsed();
        }
        let mbs = |d: Duration| bytes as f64 / 1e6 / d.as_secs_f64();
        println!("round {round}: {} files, {:.1} MB; go/parser port {:.2} s {:.1} MB/s ({ok} pass); tree-sitter-go {:.2} s {:.1} MB/s ({tok} pass)",
            files.len(), bytes as f64 / 1e6, ours.as_secs_f64(), mbs(ours), theirs.as_secs_f64(), mbs(theirs));
    }
}
