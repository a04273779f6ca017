//! CC-10 on real commits, without a workspace: the engine of `bench/weakened.sh`.
//!
//! Reads JSON lines on standard input, one commit each,
//! `{"id": "...", "files": [{"path": "...", "old": "..."|null, "new": "..."|null}]}` (the text of
//! each changed file before and after, `null` when absent), judges each through
//! `referee::checks::weakened::findings` (what CC-10 judges a task's scope with), and writes one
//! line per commit: `{"id": "...", "findings": ["path:line: kind: what", ...], "micros": N}`.
//! Nothing is written but standard output.

use std::io::{BufRead, Write};
use std::time::Instant;

use referee::checks::weakened::{findings, Pair};
use serde_json::{json, Value};

fn main() {
    let stdin = std::io::stdin();
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    for line in stdin.lock().lines() {
        let Ok(line) = line else { break };
        let Ok(v) = serde_json::from_str::<Value>(&line) else {
            eprintln!("weakened_replay: a line that is not JSON");
            std::process::exit(2);
        };
        let files: Vec<(String, Option<String>, Option<String>)> = v["files"]
            .as_array()
            .map(|a| {
                a.iter()
                    .map(|f| {
                        (
                            f["path"].as_str().unwrap_or("").to_string(),
                            f["old"].as_str().map(str::to_string),
                            f["new"].as_str().map(str::to_string),
                        )
                    })
                    .collect()
            })
            .unwrap_or_default();
        let pairs: Vec<Pair<'_>> = files
            .iter()
            .filter(|(p, _, _)| referee::checks::weakened::relevant(p))
            .map(|(p, o, n)| Pair {
                path: p,
                old: o.as_deref(),
                new: n.as_deref(),
            })
            .collect();
        let start = Instant::now();
        let found: Vec<String> = findings(&pairs).iter().map(|f| f.evidence()).collect();
        let micros = start.elapsed().as_micros() as u64;
        let _ = writeln!(
            out,
            "{}",
            json!({"id": v["id"], "findings": found, "micros": micros})
        );
    }
}
