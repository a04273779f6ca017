//! Speed of `referee verify`, measured side by side with what it cannot beat.
//!
//! - `clean`: the whole `referee verify` process on the clean fixture (target: < 5 ms).
//! - `large`: the clean run plus 30,000 extra screenshots and 9 auditor reports of ~2 MB,
//!   against the floor — one walk of the tree that reads every non-PNG file once — in the
//!   same run (target: within 2x of the floor). Screenshots are counted, never read.
//!
//! Run: `cargo bench --bench verify`. Figures go in README.md ("Performance").

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use criterion::{criterion_group, criterion_main, Criterion};

#[path = "../tests/it/builder.rs"]
#[allow(dead_code, reason = "shared with the tests, which use more of it")]
mod builder;

const REFEREE: &str = env!("CARGO_BIN_EXE_referee");

fn materialise(name: &str, root: &Path) -> PathBuf {
    builder::Build::named(name)
        .and_then(|b| b.materialise(root))
        .unwrap_or_else(|e| panic!("fixture {name}: {e}"))
}

/// Adds 30,000 screenshots (10,000 per viewport) and pads every auditor report to ~2 MB
/// with clean prose, keeping `## Completion Manifest` as the last level-2 heading.
fn enlarge(dir: &Path) {
    for vp in ["1440", "1024", "768"] {
        let d = dir.join("screenshots").join(vp);
        for i in 0..10_000 {
            std::fs::write(d.join(format!("extra-{i:05}.png")), b"\x89PNG\r\n\x1a\n")
                .expect("write a filler image");
        }
    }
    let para = "The hero band reads clearly at every width; the headline keeps its weight and the \
                supporting copy sits comfortably below it with generous spacing around the fold.\n";
    for letter in 'A'..='I' {
        let path = dir.join(format!("p3b-pa-auditor-{letter}.md"));
        let mtime = std::fs::metadata(&path)
            .and_then(|m| m.modified())
            .expect("the tracker's mtime");
        let original = std::fs::read_to_string(&path).expect("read the tracker");
        let (body, manifest) = original
            .split_once("## Completion Manifest")
            .expect("fixture report has a manifest");
        let mut text = String::with_capacity(2_100_000);
        text.push_str(body);
        text.push_str("## Observations\n\n");
        while text.len() < 2_000_000 {
            text.push_str(para);
        }
        text.push_str("\n## Completion Manifest");
        text.push_str(manifest);
        std::fs::write(&path, text).expect("write the tracker");
        filetime::set_file_mtime(&path, filetime::FileTime::from_system_time(mtime))
            .expect("keep the tracker's mtime");
    }
}

fn verify(dir: &Path) {
    let out = Command::new(REFEREE)
        .args(["verify", "--format", "json"])
        .arg(dir)
        .output()
        .expect("referee runs");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The floor: walk the tree once and read every non-PNG file once.
fn walk_and_read(dir: &Path) -> usize {
    let mut total = 0;
    let mut buf = Vec::new();
    for e in walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
    {
        if e.file_type().is_file() && e.path().extension().is_none_or(|x| x != "png") {
            buf.clear();
            std::fs::File::open(e.path())
                .and_then(|mut f| f.read_to_end(&mut buf))
                .expect("read a build file");
            total += buf.len();
        }
    }
    total
}

fn benches(c: &mut Criterion) {
    let tmp = tempfile::tempdir().expect("a temporary directory");
    let clean = materialise("clean", &tmp.path().join("clean"));
    let mut g = c.benchmark_group("clean");
    g.bench_function("referee verify (process)", |b| b.iter(|| verify(&clean)));
    g.finish();

    let large = materialise("clean", &tmp.path().join("large"));
    enlarge(&large);
    let mut g = c.benchmark_group("large");
    g.sample_size(20).measurement_time(Duration::from_secs(10));
    g.bench_function("floor: walk + read non-PNG files (in-process)", |b| {
        b.iter(|| walk_and_read(&large))
    });
    g.bench_function("referee verify (process)", |b| b.iter(|| verify(&large)));
    g.finish();
}

criterion_group!(all, benches);
criterion_main!(all);
