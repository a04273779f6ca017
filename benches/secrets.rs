//! What CC-07's secret rules cost, side by side with other rules (`main`'s, say).
//!
//! - `scan/<rules>`: every line of a corpus of real code scanned as CC-07 scans added lines
//!   (each after the line above it), throughput in bytes; then the same in CPU time, the two
//!   rule sets interleaved (printed: a shared machine's wall clock is noise).
//! - `load/<rules>`: a rule file read and every regex compiled (what a `--secrets FILE` load
//!   costs; the embedded rules compile one by one, at a rule's first keyword hit).
//!
//! The corpus: this repository's `src/` and `tests/`, and every file under
//! `SECRETS_BENCH_CORPUS` (a directory of real code, e.g. a Python installation's library).
//! `SECRETS_BENCH_OLD=/abs/old-secrets.toml` adds the other rules to each group; without it
//! only the embedded ones run. Run:
//!
//! ```text
//! git show main:protocols/secrets.toml > /tmp/old.toml
//! SECRETS_BENCH_OLD=/tmp/old.toml SECRETS_BENCH_CORPUS=/usr/lib/python3.11 \
//!     cargo bench --bench secrets
//! ```
//!
//! The old rules are scanned line by line (`scan`), as `main` did; the embedded ones as CC-07
//! does now (`scan_after`). Figures go in docs/secrets.md.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use referee::protocol::secrets::{Rules, EMBEDDED_TEXT};

/// Every regular file's text under `dir` (not valid UTF-8: left out), up to `limit` bytes.
fn texts(dir: &Path, limit: usize, out: &mut Vec<String>, total: &mut usize) {
    for entry in walkdir::WalkDir::new(dir)
        .sort_by_file_name()
        .into_iter()
        .flatten()
    {
        if *total >= limit {
            return;
        }
        if !entry.file_type().is_file() {
            continue;
        }
        if let Ok(text) = std::fs::read_to_string(entry.path()) {
            *total += text.len();
            out.push(text);
        }
    }
}

fn corpus() -> Vec<String> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let mut out = Vec::new();
    let mut total = 0;
    for dir in ["src", "tests"] {
        texts(&root.join(dir), 8 << 20, &mut out, &mut total);
    }
    if let Some(extra) = std::env::var_os("SECRETS_BENCH_CORPUS") {
        texts(Path::new(&extra), total + (32 << 20), &mut out, &mut total);
    }
    out
}

fn bench(c: &mut Criterion) {
    let corpus = corpus();
    let bytes: usize = corpus.iter().map(String::len).sum();
    let lines: Vec<Vec<&[u8]>> = corpus
        .iter()
        .map(|t| t.lines().map(str::as_bytes).collect())
        .collect();
    let old = std::env::var_os("SECRETS_BENCH_OLD").map(|p| {
        let path = PathBuf::from(p);
        let text = std::fs::read_to_string(&path).expect("the old rules");
        (path, text)
    });
    let embedded = Rules::embedded();
    // Compiles every embedded rule, so the scan measures scanning only.
    let _ = Rules::parse(EMBEDDED_TEXT, "embedded", None).expect("valid");

    let mut g = c.benchmark_group("scan");
    g.throughput(Throughput::Bytes(bytes as u64));
    g.sample_size(10).measurement_time(Duration::from_secs(20));
    g.bench_function("embedded", |b| {
        b.iter(|| scan_after_above(&embedded, &lines))
    });
    let old_rules = old
        .as_ref()
        .map(|(path, _)| Arc::new(Rules::load_file(path).expect("the old rules load")));
    if let Some(rules) = &old_rules {
        g.bench_function("old", |b| b.iter(|| scan_alone(rules, &lines)));
    }
    g.finish();

    // The same, in CPU time, interleaved: a shared machine's wall clock is noise.
    if let Some(rules) = &old_rules {
        let (mut new_ms, mut old_ms) = (Vec::new(), Vec::new());
        for _ in 0..7 {
            new_ms.push(cpu_ms(|| scan_after_above(&embedded, &lines)));
            old_ms.push(cpu_ms(|| scan_alone(rules, &lines)));
        }
        new_ms.sort_by(f64::total_cmp);
        old_ms.sort_by(f64::total_cmp);
        let mb = bytes as f64 / f64::from(1 << 20);
        eprintln!(
            "CPU per pass over {mb:.1} MiB, median of 7 interleaved: embedded (scan after the line \
             above) {:.0} ms ({:.1} MiB/s), old (each line alone) {:.0} ms ({:.1} MiB/s): {:.2}x",
            new_ms[3],
            mb / new_ms[3] * 1000.0,
            old_ms[3],
            mb / old_ms[3] * 1000.0,
            new_ms[3] / old_ms[3]
        );
    }

    let mut g = c.benchmark_group("load");
    g.sample_size(10);
    g.bench_function("embedded", |b| {
        b.iter(|| Rules::parse(EMBEDDED_TEXT, "embedded", None).expect("valid"));
    });
    if let Some((_, text)) = &old {
        g.bench_function("old", |b| {
            b.iter(|| Rules::parse(text, "old", None).expect("valid"));
        });
    }
    g.finish();

    // What each found in the corpus (the same lines for both): printed once, for the record.
    let count = |scan: &dyn Fn(usize, &[&[u8]]) -> bool| -> usize {
        lines
            .iter()
            .map(|file| (0..file.len()).filter(|&i| scan(i, file)).count())
            .sum()
    };
    let new_hits = count(&|i, f| match i {
        0 => embedded.scan(f[i]).is_some(),
        _ => embedded.scan_after(f[i - 1], f[i]).is_some(),
    });
    eprintln!(
        "corpus: {} files, {bytes} bytes; embedded rules flag {new_hits} line(s)",
        corpus.len()
    );
    // SECRETS_BENCH_SHOW=1: each line the embedded rules flag, cut to 120 bytes (the corpus is
    // real code: these are the false flags to look at).
    if std::env::var_os("SECRETS_BENCH_SHOW").is_some() {
        for file in &lines {
            for i in 0..file.len() {
                let hit = match i {
                    0 => embedded.scan(file[i]),
                    _ => embedded.scan_after(file[i - 1], file[i]),
                };
                if let Some(h) = hit {
                    let shown = String::from_utf8_lossy(&file[i][..file[i].len().min(120)]);
                    eprintln!("  {}: {}", h.id, shown.trim());
                }
            }
        }
    }
    if let Some((path, _)) = &old {
        let rules = Rules::load_file(path).expect("the old rules load");
        let old_hits = count(&|i, f| rules.scan(f[i]).is_some());
        eprintln!("old rules flag {old_hits} line(s)");
    }
}

/// Every line scanned after the line above it, as CC-07 does: a line's keywords are looked
/// for once.
fn scan_after_above(rules: &Rules, lines: &[Vec<&[u8]>]) -> usize {
    let mut hits = 0usize;
    for file in lines {
        let mut above = None;
        for line in file {
            let (hit, keyed) = rules.scan_keyed(above.as_ref().map(|(t, k)| (*t, k)), line);
            hits += usize::from(hit.is_some());
            above = Some((*line, keyed));
        }
    }
    hits
}

/// Every line alone, as `main` scanned.
fn scan_alone(rules: &Rules, lines: &[Vec<&[u8]>]) -> usize {
    lines
        .iter()
        .flatten()
        .filter(|line| rules.scan(line).is_some())
        .count()
}

/// The CPU time `f` takes on this thread, in milliseconds.
fn cpu_ms(f: impl FnOnce() -> usize) -> f64 {
    let now = || {
        let mut t = libc::timespec {
            tv_sec: 0,
            tv_nsec: 0,
        };
        // SAFETY: `t` is a valid timespec for the call to fill.
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &raw mut t) };
        t.tv_sec as f64 * 1e3 + t.tv_nsec as f64 / 1e6
    };
    let start = now();
    std::hint::black_box(f());
    now() - start
}

criterion_group!(benches, bench);
criterion_main!(benches);
