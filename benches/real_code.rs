//! CC-05 on real files, one by one, without a workspace: the engine of `bench/real-code.sh`.
//!
//! `cargo bench --bench real_code -- [--list FILE] PATH...` walks each PATH (a file or a
//! directory), checks every file whose extension has a built-in parser through
//! `referee_syntax::check` (no commands), and prints one tab-separated line per file:
//!
//! ```text
//! PASS|FAIL|UNDECIDED <TAB> extension <TAB> bytes <TAB> microseconds <TAB> path <TAB> evidence
//! ```
//!
//! `--list FILE` reads further paths from FILE, one a line. Symbolic links are not followed.
//! Nothing is written but standard output.

use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use referee_syntax::{check, Outcome};

fn main() {
    let mut roots: Vec<PathBuf> = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            // `cargo bench` passes `--bench`.
            "--bench" => {}
            "--list" => {
                let Some(list) = args.next() else {
                    eprintln!("real_code: --list needs a file");
                    std::process::exit(2);
                };
                let file = std::fs::File::open(&list).unwrap_or_else(|e| {
                    eprintln!("real_code: {list}: {e}");
                    std::process::exit(2)
                });
                for line in std::io::BufReader::new(file).lines().map_while(Result::ok) {
                    if !line.is_empty() {
                        roots.push(PathBuf::from(line));
                    }
                }
            }
            _ => roots.push(PathBuf::from(arg)),
        }
    }
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    for root in &roots {
        for entry in walkdir::WalkDir::new(root).sort_by_file_name() {
            let Ok(entry) = entry else { continue };
            if entry.file_type().is_file() {
                judge(entry.path(), &mut out);
            }
        }
    }
    let _ = out.flush();
}

fn judge(path: &Path, out: &mut impl Write) {
    let name = path.to_string_lossy();
    let Some((_, ext)) = name.rsplit_once('.') else {
        return;
    };
    if ext.contains('/') {
        return;
    }
    let Ok(bytes) = std::fs::read(path) else {
        return;
    };
    let started = Instant::now();
    let outcome = check(&name, &bytes, path, &[]);
    let micros = started.elapsed().as_micros();
    let verdict = match outcome {
        Outcome::NotApplicable => return,
        Outcome::Parsed { .. } => "PASS",
        Outcome::Invalid { .. } => "FAIL",
        Outcome::Inconclusive { .. } => "UNDECIDED",
    };
    let evidence = outcome.evidence("").replace(['\t', '\n'], " ");
    let _ = writeln!(
        out,
        "{verdict}\t{}\t{}\t{micros}\t{name}\t{evidence}",
        ext.to_ascii_lowercase(),
        bytes.len()
    );
}
