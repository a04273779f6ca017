//! Fuzzing on the stable toolchain: property tests (`proptest`) for every parser that reads what a
//! pipeline, or a crashed referee, left on disk: the execution tracker, gate results, protocols,
//! replay timelines, the event log a restarted daemon resumes from, and the heartbeat and STOP
//! files `referee status` reads.
//!
//! Every target checks, for every input:
//! - no panic (proptest catches it and shrinks the input);
//! - no hang: a watchdog thread aborts the whole test binary, printing the target and the input,
//!   when one input runs longer than [`HANG`]; an input that costs more than [`SLOW`] of the
//!   thread's CPU time fails (CPU time, not wall time, so a loaded machine cannot fail it);
//! - bounded memory: the peak heap of the call (counted per thread by `heap::Counting`) stays
//!   within a small multiple of the input's length, so no count or length read from the input can
//!   size an allocation;
//! - and, where cheap, a semantic property (LF and CRLF parse the same, a gate-results object
//!   and the equivalent array parse the same, a torn last log line only counts as skipped, the
//!   STOP text is printed as written, ...).
//!
//! Inputs are structured: markdown-ish lines, JSON-ish values with nesting and huge numbers,
//! near-valid event envelopes, and mutations (byte flips, truncations, line deletions,
//! duplications, swaps and insertions) of the real fixtures and of a recorded event log.
//!
//! `cargo test` runs a modest number of cases per target; `bench/fuzz.sh` runs each target for a
//! million (`REFEREE_FUZZ_CASES`) in release and prints the figures. Failures are never persisted
//! to files: a failing run prints its shrunk input.

use std::collections::HashMap;
use std::fmt::Debug;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use proptest::collection::vec;
use proptest::prelude::*;
use proptest::sample::{select, Index};
use proptest::test_runner::{Config, TestCaseError, TestRunner};

use referee::artifacts::gates::parse_gates;
use referee::artifacts::tracker::{SectionFilter, Tracker};
use referee::daemon::journal;
use referee::exit::ExitCode;
use referee::outputs::STOP_FILE;
use referee::protocol::Protocol;
use referee::replay::Timeline;
use referee::state::heartbeat::{self, HEARTBEAT_FILE};
use referee::state::live;
use referee::status;

use crate::builder::fixtures_dir;
use crate::heap::Peak;

/// One input costing this much CPU time fails its target (debug builds included).
const SLOW: Duration = Duration::from_secs(10);
/// One input taking this long is a hang: the watchdog aborts the test binary.
const HANG: Duration = Duration::from_secs(60);

const TRACKER: &str = include_str!("../../fixtures/content/tracker.md");
const TRACKER_REFINE: &str = include_str!("../../fixtures/content/tracker-refine.md");
const GATES: &str = include_str!("../../fixtures/content/gate-results.json");
const D10: &str = include_str!("../../protocols/d10.toml");
const TIMELINE_CLEAN: &str = include_str!("../../fixtures/timelines/clean.toml");
const TIMELINE_DEMO: &str = include_str!("../../fixtures/timelines/demo.toml");
/// A real `referee watch` log (pre-audit build, a manual gate result raised and resolved, the
/// pipeline's exit judged as final), plus one hand-made line each for `fix_attempt`,
/// `escalation`, `tamper` and `restart`, which that run did not need.
const EVENTS: &str = include_str!("fuzz-events.jsonl");

// ---------------------------------------------------------------------------------------------
// The harness: case counts, the watchdog, the figures

/// The number of inputs for `target`: `REFEREE_FUZZ_CASES_<TARGET>` (upper case, `-` as `_`),
/// else `REFEREE_FUZZ_CASES` (every target), else the target's modest default.
fn cases(target: &str, default: u32) -> u32 {
    let own = format!(
        "REFEREE_FUZZ_CASES_{}",
        target.to_uppercase().replace('-', "_")
    );
    [own.as_str(), "REFEREE_FUZZ_CASES"]
        .iter()
        .find_map(|k| std::env::var(k).ok()?.trim().parse().ok())
        .unwrap_or(default)
}

/// Per test thread: since when, in which target, on which input (clipped, escaped).
type Inputs = HashMap<ThreadId, (Instant, &'static str, String)>;

/// What each test thread is running now, for the watchdog.
fn running() -> &'static Mutex<Inputs> {
    static RUNNING: OnceLock<Mutex<Inputs>> = OnceLock::new();
    RUNNING.get_or_init(|| {
        std::thread::Builder::new()
            .name("fuzz-watchdog".into())
            .spawn(watchdog)
            .expect("spawn the fuzz watchdog");
        Mutex::new(HashMap::new())
    })
}

fn watchdog() {
    loop {
        std::thread::sleep(Duration::from_millis(250));
        let map = running().lock().unwrap_or_else(|e| e.into_inner());
        let hung = map.values().find(|(since, _, _)| since.elapsed() > HANG);
        if let Some((_, target, input)) = hung {
            eprintln!(
                "fuzz target `{target}` hung: one input ran longer than {HANG:?}; the input \
                 (first 4 KiB, escaped):\n{input}"
            );
            // A hung parser cannot be unwound from another thread: end the run loudly.
            std::process::abort();
        }
    }
}

/// The CPU time this thread has used: unlike wall time, not stretched by a loaded machine.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes into the one timespec we own.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    assert_eq!(rc, 0, "clock_gettime(CLOCK_THREAD_CPUTIME_ID)");
    Duration::new(
        u64::try_from(ts.tv_sec).unwrap_or(0),
        u32::try_from(ts.tv_nsec).unwrap_or(0),
    )
}

/// Marks one input as running on this thread until dropped.
struct Running;

impl Running {
    fn new(target: &'static str, input: &[u8]) -> Running {
        let clip = &input[..input.len().min(4096)];
        let shown = String::from_utf8_lossy(clip).escape_debug().to_string();
        running()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(std::thread::current().id(), (Instant::now(), target, shown));
        Running
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        running()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&std::thread::current().id());
    }
}

/// Runs `f` on one input under the watchdog; fails when it is slow or its peak heap exceeds
/// `factor` × the input's length + `slack` bytes. Returns `f`'s result.
fn bounded<T>(
    target: &'static str,
    input: &[u8],
    factor: usize,
    slack: usize,
    f: impl FnOnce() -> T,
) -> Result<T, TestCaseError> {
    let _running = Running::new(target, input);
    let start = thread_cpu();
    let peak = Peak::start();
    let out = f();
    let bytes = peak.bytes();
    let took = thread_cpu().saturating_sub(start);
    prop_assert!(
        took < SLOW,
        "{target}: one input of {} bytes took {took:?} of CPU time",
        input.len()
    );
    let limit = factor * input.len() + slack;
    prop_assert!(
        bytes <= limit,
        "{target}: an input of {} bytes made the heap peak at {bytes} bytes (limit {limit})",
        input.len()
    );
    Ok(out)
}

/// Runs one target: `cases(default)` inputs from `strategy`, each through `test`. Prints one
/// `fuzz-stats` line (read by `bench/fuzz.sh`) and fails with the shrunk input on a failure.
fn fuzz<S>(
    target: &'static str,
    default: u32,
    strategy: S,
    test: impl Fn(S::Value) -> Result<(), TestCaseError>,
) where
    S: Strategy,
    S::Value: Debug,
{
    let config = Config {
        cases: cases(target, default),
        // Failures are printed, never written into the repository.
        failure_persistence: None,
        max_shrink_iters: 2048,
        ..Config::default()
    };
    let inputs = AtomicU64::new(0);
    let start = Instant::now();
    let mut runner = TestRunner::new(config);
    let result = runner.run(&strategy, |v| {
        inputs.fetch_add(1, Ordering::Relaxed);
        test(v)
    });
    let secs = start.elapsed().as_secs_f64();
    let n = inputs.load(Ordering::Relaxed);
    // Inputs include the shrinking steps of a failure; failures are the failing targets (0 or 1).
    println!(
        "fuzz-stats target={target} inputs={n} failures={} secs={secs:.3} per_sec={:.0}",
        u8::from(result.is_err()),
        n as f64 / secs.max(1e-9)
    );
    if let Err(e) = result {
        panic!("fuzz target `{target}` failed: {e}");
    }
}

// ---------------------------------------------------------------------------------------------
// Mutations of real files

/// One edit of a text: what a crash, a bad disk or a careless agent does to a file.
#[derive(Debug, Clone)]
enum Op {
    /// XOR one byte.
    Flip(Index, u8),
    /// Cut the text (a torn write).
    Truncate(Index),
    DeleteLine(Index),
    DuplicateLine(Index),
    SwapLines(Index, Index),
    InsertLine(Index, String),
    /// Repeat a stretch of bytes several times.
    Repeat(Index, Index, u8),
}

fn ops(lines: impl Strategy<Value = String> + Clone) -> impl Strategy<Value = Vec<Op>> {
    let op = prop_oneof![
        3 => (any::<Index>(), 1..=255u8).prop_map(|(i, x)| Op::Flip(i, x)),
        1 => any::<Index>().prop_map(Op::Truncate),
        2 => any::<Index>().prop_map(Op::DeleteLine),
        2 => any::<Index>().prop_map(Op::DuplicateLine),
        1 => (any::<Index>(), any::<Index>()).prop_map(|(a, b)| Op::SwapLines(a, b)),
        4 => (any::<Index>(), lines).prop_map(|(i, l)| Op::InsertLine(i, l)),
        1 => (any::<Index>(), any::<Index>(), 2..16u8).prop_map(|(a, b, n)| Op::Repeat(a, b, n)),
    ];
    vec(op, 1..8)
}

fn split_lines(bytes: &[u8]) -> Vec<Vec<u8>> {
    bytes
        .split_inclusive(|&b| b == b'\n')
        .map(<[u8]>::to_vec)
        .collect()
}

fn mutate(base: &[u8], ops: &[Op]) -> Vec<u8> {
    let mut bytes = base.to_vec();
    for op in ops {
        match op {
            Op::Flip(i, x) if !bytes.is_empty() => {
                let i = i.index(bytes.len());
                bytes[i] ^= x;
            }
            Op::Truncate(i) => {
                let i = i.index(bytes.len() + 1);
                bytes.truncate(i);
            }
            Op::Repeat(a, b, n) if !bytes.is_empty() => {
                let (a, b) = (a.index(bytes.len()), b.index(bytes.len()));
                let (a, b) = (a.min(b), a.max(b).min(a.min(b) + 256));
                let stretch = bytes[a..b].to_vec();
                for _ in 0..*n {
                    bytes.splice(b..b, stretch.iter().copied());
                }
            }
            Op::DeleteLine(i)
            | Op::DuplicateLine(i)
            | Op::SwapLines(i, _)
            | Op::InsertLine(i, _) => {
                let mut lines = split_lines(&bytes);
                if lines.is_empty() {
                    lines.push(Vec::new());
                }
                let at = i.index(lines.len());
                match op {
                    Op::DeleteLine(_) => {
                        lines.remove(at);
                    }
                    Op::DuplicateLine(_) => {
                        let l = lines[at].clone();
                        lines.insert(at, l);
                    }
                    Op::SwapLines(_, j) => {
                        let j = j.index(lines.len());
                        lines.swap(at, j);
                    }
                    Op::InsertLine(_, l) => {
                        let mut l = l.clone().into_bytes();
                        l.push(b'\n');
                        lines.insert(at, l);
                    }
                    _ => {}
                }
                bytes = lines.concat();
            }
            _ => {}
        }
    }
    bytes
}

fn lossy(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

fn lines_of(text: &'static str) -> Vec<&'static str> {
    text.lines().collect()
}

// ---------------------------------------------------------------------------------------------
// The tracker

/// A cell or a bit of text: real field names and values, decoration, time stamps good and
/// absurd, markdown syntax, and the characters that break naive parsers.
fn md_word() -> impl Strategy<Value = String> + Clone {
    const WORDS: &[&str] = &[
        "BUILD_SLUG",
        "P3A_START",
        "EXPERIENTIAL_SCAN",
        "VERDICT",
        "Field",
        "Value",
        "Notes",
        "Spawned",
        "Gate",
        "Result",
        "___",
        "—",
        "-",
        "N/A",
        "TBD",
        "PASS",
        "FAIL",
        "SHIP",
        "2026-02-25T10:00:00Z",
        "2026-02-25 10:00",
        "2026-02-25T10:00:00+14:00",
        "9999-99-99T99:99:99Z",
        "+262143-12-31T23:59:59Z",
        "-262144-01-01T00:00:00Z",
        "1e308",
        "18446744073709551616",
        "`code`",
        "``",
        "`",
        "**bold**",
        "**",
        "*em*",
        "_x_",
        "\\|",
        "\\",
        "|",
        "||",
        "```",
        "~~~",
        "<!--",
        "-->",
        "#",
        "######",
        "#######",
        "\u{feff}",
        "\0",
        "\r",
        "\t",
        " ",
        "  ",
        "é",
        "𝔘",
        "\u{200b}",
        "\u{2028}",
        ":",
        "---",
        ":---:",
    ];
    const CHARS: &[char] = &[
        'a', 'Z', '0', '_', ' ', '|', '`', '*', '#', '-', '\\', ':', '~',
    ];
    prop_oneof![
        4 => select(WORDS).prop_map(String::from),
        2 => vec(select(CHARS), 0..10).prop_map(|v| v.into_iter().collect()),
        1 => vec(any::<char>(), 0..6).prop_map(|v| v.into_iter().collect()),
    ]
}

/// A markdown-ish tracker line (without its line ending).
fn md_line() -> impl Strategy<Value = String> + Clone {
    let real = select(
        lines_of(TRACKER)
            .into_iter()
            .chain(lines_of(TRACKER_REFINE))
            .collect::<Vec<_>>(),
    );
    prop_oneof![
        4 => (vec(md_word(), 1..6), any::<bool>()).prop_map(|(cells, outer)| if outer {
            format!("| {} |", cells.join(" | "))
        } else {
            cells.join("|")
        }),
        1 => (1usize..6, select(&["---", ":---", "---:", ":-:", "-", ""][..]))
            .prop_map(|(n, s)| format!("|{}", format!("{s}|").repeat(n))),
        2 => (0usize..9, md_word(), select(&[" ", "", "\t"][..]))
            .prop_map(|(n, w, sp)| format!("{}{sp}{w}", "#".repeat(n))),
        1 => select(&["```", "~~~", "````", "   ```", "    ```", "```rust", "~~~~~~", "`` `"][..])
            .prop_map(String::from),
        1 => select(&["<!-- x", "-->", "<!-- | A | B | -->", "", "   ", "\u{feff}| a | b |"][..])
            .prop_map(String::from),
        1 => vec(md_word(), 0..5).prop_map(|w| w.concat()),
        3 => real.prop_map(String::from),
    ]
}

/// Sums of what a parsed tracker holds, to bound it by the text's length.
fn tracker_size(t: &Tracker) -> usize {
    let sections: usize = t.sections.iter().map(|s| s.heading.len()).sum();
    let rows: usize = t
        .rows
        .iter()
        .map(|r| r.name.len() + r.value.len() + r.third.as_ref().map_or(0, String::len))
        .sum();
    let cells: usize = t
        .tables
        .iter()
        .flat_map(|t| {
            t.header
                .iter()
                .chain(t.rows.iter().flat_map(|r| r.cells.iter()))
        })
        .map(String::len)
        .sum();
    sections + rows + cells
}

/// The structural invariants of a parsed tracker, and every lookup the checks make.
fn tracker_invariants(text: &str, t: &Tracker) -> Result<(), TestCaseError> {
    // Lines as CommonMark counts them: a CR alone ends one too.
    let lines = text
        .replace("\r\n", "\n")
        .replace('\r', "\n")
        .lines()
        .count();
    prop_assert!(t.sections.len() <= lines);
    prop_assert!(t.rows.len() <= lines);
    prop_assert!(t.tables.len() <= lines);
    prop_assert!(
        tracker_size(t) <= 2 * text.len(),
        "parsed text larger than twice the input"
    );
    for s in &t.sections {
        prop_assert!((1..=6).contains(&s.level));
        prop_assert!(s.line >= 1 && s.line <= lines);
    }
    for r in &t.rows {
        prop_assert!(r.line >= 1 && r.line <= lines);
        prop_assert!(r.section.is_none_or(|s| s < t.sections.len()));
        prop_assert!(!r.name.is_empty(), "a field row with an empty name: {r:?}");
        prop_assert!(
            t.field(&r.name).is_some(),
            "row `{}` not found by name",
            r.name
        );
    }
    for table in &t.tables {
        prop_assert!(table.section.is_none_or(|s| s < t.sections.len()));
        for h in &table.header {
            prop_assert!(table.column_index(h).is_some());
            let _ = t.column(table, h);
        }
    }
    for s in &t.sections {
        for filter in [
            SectionFilter::exact(&s.heading),
            SectionFilter::contains(&s.heading),
        ] {
            let _ = t.rows_in(&filter);
            let _ = t.table_in(&filter, "Spawned");
            let _ = t.field_in(&filter, "P3A_START");
        }
    }
    let fill = t.fill();
    prop_assert_eq!(fill.total, t.rows.len());
    prop_assert_eq!(fill.filled + fill.empty.len(), fill.total);
    Ok(())
}

/// The heap a tracker parse may take whatever its size: the CommonMark parser's working set
/// (its block tree and inline stacks, ~33 KB for a 6-byte table) is allocated up front.
const TRACKER_SLACK: usize = 48 << 10;

#[test]
fn tracker_structured() {
    let doc = (vec(md_line(), 0..60), any::<bool>());
    fuzz("tracker", 256, doc, |(lines, trailing)| {
        // Lines without their own CR or LF, so the two endings differ only in the ending.
        let lines: Vec<String> = lines.iter().map(|l| l.replace(['\r', '\n'], "")).collect();
        let end = if trailing { "\n" } else { "" };
        let lf = format!("{}{end}", lines.join("\n"));
        let crlf = lf.replace('\n', "\r\n");
        let t = bounded("tracker", lf.as_bytes(), 96, TRACKER_SLACK, || {
            Tracker::parse(&lf)
        })?;
        tracker_invariants(&lf, &t)?;
        let t2 = bounded("tracker", crlf.as_bytes(), 96, TRACKER_SLACK, || {
            Tracker::parse(&crlf)
        })?;
        prop_assert_eq!(&t, &t2, "LF and CRLF versions parse differently");
        // One leading byte-order mark is ignored (a second one is text).
        if !lf.starts_with('\u{feff}') {
            let bom = format!("\u{feff}{lf}");
            prop_assert_eq!(
                &t,
                &Tracker::parse(&bom),
                "a byte-order mark changed the parse"
            );
        }
        Ok(())
    });
}

#[test]
fn tracker_mutated() {
    let base = select(vec![TRACKER, TRACKER_REFINE]);
    fuzz(
        "tracker-mutated",
        64,
        (base, ops(md_line())),
        |(base, ops)| {
            let text = lossy(&mutate(base.as_bytes(), &ops));
            let t = bounded(
                "tracker-mutated",
                text.as_bytes(),
                96,
                TRACKER_SLACK,
                || Tracker::parse(&text),
            )?;
            tracker_invariants(&text, &t)
        },
    );
}

/// Long lines and long runs of the characters the parser scans for must stay linear.
#[test]
fn tracker_pathological() {
    let unit = select(
        &[
            "`", "|", "\\|", "**", "#", "<!--", "```\n", "| a |\n", "|---|\n", "\u{feff}",
        ][..],
    );
    // Mostly runs of up to 2,000 (a quadratic parser already takes seconds there), one in five
    // up to 20,000: a million inputs then fit in minutes.
    let run = prop_oneof![4 => 1usize..2_000, 1 => 1usize..20_000];
    let doc = vec((unit, run), 1..4);
    fuzz("tracker-pathological", 16, doc, |parts| {
        let text: String = parts.iter().map(|(u, n)| u.repeat(*n)).collect();
        // A table of one-character rows costs ~110 bytes of parsed form per byte of text, which
        // is why a tracker is parsed only up to `MAX_TRACKER_BYTES`. The peak is up to half as
        // much again when the row count just passes a power of two (the rows' vector holds its
        // old and its doubled buffer while it grows: 2,049 rows peaked at 172 bytes a byte), so
        // the bound is 240: linear still, where a quadratic parser costs megabytes a byte.
        let t = bounded(
            "tracker-pathological",
            text.as_bytes(),
            240,
            TRACKER_SLACK,
            || Tracker::parse(&text),
        )?;
        tracker_invariants(&text, &t)
    });
}

// ---------------------------------------------------------------------------------------------
// Gate results

/// JSON scalars, valid and not: huge and tiny numbers, bad escapes, lone surrogates.
fn json_scalar() -> impl Strategy<Value = String> + Clone {
    const SCALARS: &[&str] = &[
        "null",
        "true",
        "false",
        "0",
        "-0",
        "1e999",
        "-1e999",
        "1.7976931348623157e308",
        "5e-324",
        "18446744073709551616",
        "-9223372036854775809",
        "123456789012345678901234567890",
        "0.1e-99999",
        "1E+2",
        "01",
        "1.",
        ".5",
        "NaN",
        "Infinity",
        "\"PASS\"",
        "\"FAIL\"",
        "\"\"",
        "\"\\u0000\"",
        "\"\\ud800\"",
        "\"\\udc00\\ud800\"",
        "\"gate-runner\"",
        "\"manual\"",
        "\"by hand\"",
        "\"orchestrator\"",
        "\"\\u00e9\"",
        "\"\\x\"",
        "\"\u{1F600}\"",
        "\"GR-01\"",
    ];
    prop_oneof![
        4 => select(SCALARS).prop_map(String::from),
        1 => any::<i64>().prop_map(|n| n.to_string()),
        1 => any::<u64>().prop_map(|n| n.to_string()),
        1 => any::<f64>().prop_map(|f| format!("{f:e}")),
        2 => vec(any::<char>(), 0..6)
            .prop_map(|v| serde_json::to_string(&v.into_iter().collect::<String>()).unwrap_or_default()),
    ]
}

fn json_key() -> impl Strategy<Value = String> + Clone {
    select(
        &[
            "\"id\"",
            "\"gate\"",
            "\"result\"",
            "\"status\"",
            "\"source\"",
            "\"gates\"",
            "\"\"",
            "\"x\"",
            "\"ID\"",
        ][..],
    )
    .prop_map(String::from)
}

fn json_value() -> impl Strategy<Value = String> + Clone {
    json_scalar().prop_recursive(4, 24, 4, |inner| {
        prop_oneof![
            vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(","))),
            vec((json_key(), inner), 0..4).prop_map(|kv| {
                let fields: Vec<String> = kv.iter().map(|(k, v)| format!("{k}:{v}")).collect();
                format!("{{{}}}", fields.join(","))
            }),
        ]
    })
}

/// A gate entry: mostly an object with some of the known keys (any values), sometimes anything.
fn gate_entry() -> impl Strategy<Value = String> + Clone {
    let field = |k: &'static str, v: BoxedStrategy<String>| {
        proptest::option::of(v).prop_map(move |v| v.map(|v| format!("\"{k}\":{v}")))
    };
    let id = prop_oneof![3 => select(&["\"GR-01\"", "\"GR-02\"", "\"\"", "\"BV-06\""][..]).prop_map(String::from), 1 => json_value()].boxed();
    let result = prop_oneof![3 => select(&["\"PASS\"", "\"FAIL\"", "\"pass\"", "null", "1", "true", "\"SKIP\""][..]).prop_map(String::from), 1 => json_value()].boxed();
    let source = prop_oneof![3 => select(&["\"gate-runner\"", "\"manual\"", "\" Human \"", "null"][..]).prop_map(String::from), 1 => json_value()].boxed();
    prop_oneof![
        6 => (
            field("id", id.clone()),
            field("gate", id),
            field("result", result.clone()),
            field("status", result),
            field("source", source),
            vec((json_key(), json_value()), 0..2),
        )
            .prop_map(|(a, b, c, d, e, extra)| {
                let mut fields: Vec<String> = [a, b, c, d, e].into_iter().flatten().collect();
                fields.extend(extra.into_iter().map(|(k, v)| format!("{k}:{v}")));
                format!("{{{}}}", fields.join(", "))
            }),
        1 => json_value(),
    ]
}

fn gates_invariants(
    bytes: &[u8],
    parsed: &Result<referee::artifacts::gates::GateFile, referee::artifacts::gates::GateError>,
) -> Result<(), TestCaseError> {
    let lines = bytes.split(|&b| b == b'\n').count();
    // A position, when given, lies within the input.
    let within = |e: &referee::artifacts::gates::GateError| -> Result<(), TestCaseError> {
        prop_assert!(
            e.line <= lines,
            "error line {} beyond the input's {lines} lines",
            e.line
        );
        prop_assert!(!e.to_string().is_empty());
        Ok(())
    };
    match parsed {
        Ok(file) => {
            prop_assert!(file.entries.len() + file.invalid.len() <= bytes.len());
            // Entries keep their position in the file; a bad entry between them is skipped,
            // never renumbering the others.
            let mut last = None;
            for e in &file.entries {
                prop_assert!(last.is_none_or(|l| e.index > l), "indexes out of order");
                last = Some(e.index);
                prop_assert_eq!(e.file.as_str(), "p3a-gate-results.json");
            }
            for e in &file.invalid {
                within(e)?;
            }
        }
        Err(e) => within(e)?,
    }
    Ok(())
}

#[test]
fn gates_structured() {
    let doc = (
        vec(gate_entry(), 0..12),
        any::<bool>(),
        proptest::option::of(json_value()),
    );
    fuzz("gates", 256, doc, |(entries, pretty, extra)| {
        let sep = if pretty { ",\n    " } else { "," };
        let array = format!("[{}]", entries.join(sep));
        // The equivalent object: the same array beside another (valid) member. A member with a
        // key written twice makes the whole file invalid (it reads two ways), so it is not one.
        let extra = extra.filter(|v| {
            serde_json::from_str::<serde_json::Value>(v).is_ok()
                && referee::artifacts::json_keys::duplicate_keys(
                    v.as_bytes(),
                    &["gates", "id", "gate", "result", "status", "source"],
                )
                .is_ok_and(|d| d.is_empty())
        });
        let object = match &extra {
            Some(v) => format!("{{\"runner\": {v}, \"gates\": {array}}}"),
            None => format!("{{\"gates\": {array}}}"),
        };
        let file = "p3a-gate-results.json";
        let from_array = bounded("gates", array.as_bytes(), 128, 64 << 10, || {
            parse_gates(array.as_bytes(), file)
        })?;
        gates_invariants(array.as_bytes(), &from_array)?;
        let from_object = bounded("gates", object.as_bytes(), 128, 64 << 10, || {
            parse_gates(object.as_bytes(), file)
        })?;
        gates_invariants(object.as_bytes(), &from_object)?;
        match (&from_array, &from_object) {
            (Ok(a), Ok(o)) => {
                // Positions differ between the forms; what was read must not.
                prop_assert_eq!(
                    &a.entries,
                    &o.entries,
                    "the object and the array form parse differently"
                );
                prop_assert_eq!(a.invalid.len(), o.invalid.len());
                // Every entry is read, as a gate entry or as one reported bad entry.
                prop_assert_eq!(a.entries.len() + a.invalid.len(), entries.len());
            }
            (Err(_), Err(_)) => {}
            (a, o) => prop_assert!(false, "array form: {a:?}\nobject form: {o:?}"),
        }
        // A byte-order mark is ignored.
        let bom = [b"\xef\xbb\xbf".as_slice(), array.as_bytes()].concat();
        prop_assert_eq!(parse_gates(&bom, file).ok(), from_array.ok());
        Ok(())
    });
}

#[test]
fn gates_mutated() {
    let insert = prop_oneof![gate_entry(), json_value(), json_scalar()];
    let doc = prop_oneof![
        6 => ops(insert).prop_map(|ops| mutate(GATES.as_bytes(), &ops)),
        // Deep nesting: an error, never a stack overflow.
        1 => (select(&["[", "{\"gates\":", "[{\"id\":"][..]), 1usize..50_000, any::<bool>())
            .prop_map(|(open, n, close)| {
                let mut s = open.repeat(n);
                if close {
                    s.push_str(&"]".repeat(n));
                }
                s.into_bytes()
            }),
        1 => vec(any::<u8>(), 0..512),
    ];
    fuzz("gates-mutated", 192, doc, |bytes| {
        let parsed = bounded("gates-mutated", &bytes, 128, 64 << 10, || {
            parse_gates(&bytes, "p3a-gate-results.json")
        })?;
        gates_invariants(&bytes, &parsed)
    });
}

// ---------------------------------------------------------------------------------------------
// Protocols

/// TOML lines a protocol author (or a fuzzer) might write: patterns that explode, absurd numbers,
/// sections out of place.
fn toml_line() -> impl Strategy<Value = String> + Clone {
    const LINES: &[&str] = &[
        "[[check]]",
        "[[pass]]",
        "[check.predicate]",
        "[vars.main]",
        "[verdict]",
        "[globs]",
        "id = \"OBS-99\"",
        "id = \"OBS-01\"",
        "severity = \"blocking\"",
        "severity = \"x\"",
        "pattern = '(a+)+$'",
        "pattern = '(?i)x{1000}{1000}'",
        "pattern = '((((((((((a*)*)*)*)*)*)*)*)*)*)*'",
        "pattern = '\\p{L}{65535}'",
        "pattern = '['",
        "pattern = '(?-u)\\xff'",
        "predicate = { filled = \"X${sfx}\" }",
        "predicate = { filled = \"${nope}\" }",
        "predicate = { exists = \"**/*{a,b}{c,d}{e,f}{g,h}\" }",
        "predicate = { all = [] }",
        "predicate = { any = [{ any = [{ any = [{ any = [] }] }] }] }",
        "min_gap_seconds = 1e308",
        "min_gap_seconds = -9223372036854775808",
        "min_gap_seconds = nan",
        "deadline = { filled = \"P3A_START\" }",
        "trigger = { exists = \"*\" }",
        "checks = [\"OBS-01\", \"OBS-01\"]",
        "repeat = [{ passes = [\"R\"], vars = \"refine\" }]",
        "schema_version = 2",
        "schema_version = 18446744073709551616",
        "x = \"\\u0000\"",
        "files = []",
        "complete = [\"SHIP\"]",
        "a.b.c.d.e = 1",
        "[[check]] # again",
        "\"\" = 1",
        "title = \"\"\"",
        "\"\"\"",
        "sfx = \"${sfx}${sfx}\"",
        "auditors = \"${auditors}\"",
    ];
    prop_oneof![
        5 => select(LINES).prop_map(String::from),
        3 => select(lines_of(D10)).prop_map(String::from),
        1 => vec(any::<char>(), 0..12).prop_map(|v| v.into_iter().collect()),
    ]
}

#[test]
fn protocol_mutated() {
    // The embedded protocol must load: the mutations start from something valid.
    Protocol::parse(D10, "d10.toml").expect("d10 loads");
    fuzz("protocol", 32, ops(toml_line()), |ops| {
        let text = lossy(&mutate(D10.as_bytes(), &ops));
        bounded("protocol", text.as_bytes(), 1024, 32 << 20, || {
            let _ = Protocol::parse(&text, "fuzz.toml");
        })
    });
}

#[test]
fn protocol_structured() {
    let doc = vec(toml_line(), 0..40);
    fuzz("protocol-structured", 128, doc, |lines| {
        let text = format!(
            "schema_version = 1\nid = \"x\"\nversion = \"1\"\n{}\n",
            lines.join("\n")
        );
        bounded(
            "protocol-structured",
            text.as_bytes(),
            1024,
            32 << 20,
            || {
                let _ = Protocol::parse(&text, "fuzz.toml");
            },
        )
    });
}

// ---------------------------------------------------------------------------------------------
// Timelines

fn timeline_line() -> impl Strategy<Value = String> + Clone {
    const LINES: &[&str] = &[
        "[[step]]",
        "at = \"99999999999999999999h\"",
        "at = \"1e308s\"",
        "at = -1",
        "at = 1e9",
        "at = \"1.5.5m\"",
        "at = \"0ms\"",
        "at = nan",
        "every = \"0ms\"",
        "every = \"1e9s\"",
        "write = \"shot-{1..100000}.png\"",
        "write = \"x-{0..99999}-{0..99999}.png\"",
        "write = \"{a,b}{c,d}{e,f}{g,h}{i,j}{k,l}{m,n}{o,p}{q,r}{s,t}{u,v}{w,x}{y,z}\"",
        "write = \"a{\"",
        "write = \"}\"",
        "write = \"../escape\"",
        "write = \"/abs\"",
        "write = \"a\\u0000b\"",
        "text = \"x\"",
        "hex = \"zz\"",
        "hex = \"89 50 4e 47\"",
        "from = \"content/tracker.md\"",
        "from = \"../../etc/passwd\"",
        "from = \"content\"",
        "rename = \"a\"",
        "to = \"b\"",
        "mkdir = \"d\"",
        "remove = \"x\"",
        "wait = \"1s\"",
        "tracker = [{ field = \"P0_START\", value = \"2026-02-25T10:00:00Z\" }]",
        "tracker = [{ field = \"NOPE\", value = \"x\", time = \"+262143-12-31T23:59:59Z\" }]",
        "replace = [{ find = \"\", with = \"aaaaaaaa\" }]",
        "replace = [{ find = \"a\", with = \"\" }]",
        "epoch = \"+262143-12-31T23:59:59Z\"",
        "epoch = \"0000-01-01T00:00:00Z\"",
        "root = \"..\"",
        "temp = \"tmp\"",
        "source = \"x\"",
        "note = \"\"\"",
        "description = 1",
    ];
    prop_oneof![
        5 => select(LINES).prop_map(String::from),
        3 => select(lines_of(TIMELINE_CLEAN).into_iter().chain(lines_of(TIMELINE_DEMO)).collect::<Vec<_>>())
            .prop_map(String::from),
        1 => vec(any::<char>(), 0..12).prop_map(|v| v.into_iter().collect()),
    ]
}

/// Timelines may expand `{a..b}` patterns to at most 100,000 paths and 16 MiB of path text
/// (`replay::expand_braces`); expanding holds two generations of paths and the timeline keeps
/// its own, so the allowance is a fixed multiple of that cap, independent of any number in the
/// input.
const TIMELINE_SLACK: usize = 128 << 20;

#[test]
fn timeline_mutated() {
    let root = fixtures_dir();
    Timeline::parse(TIMELINE_CLEAN, "clean.toml", &root).expect("clean timeline loads");
    let base = select(vec![TIMELINE_CLEAN, TIMELINE_DEMO]);
    fuzz(
        "timeline",
        48,
        (base, ops(timeline_line())),
        |(base, ops)| {
            let text = lossy(&mutate(base.as_bytes(), &ops));
            bounded("timeline", text.as_bytes(), 1024, TIMELINE_SLACK, || {
                let _ = Timeline::parse(&text, "fuzz.toml", &root);
            })
        },
    );
}

#[test]
fn timeline_structured() {
    let root = fixtures_dir();
    let doc = vec(timeline_line(), 0..24);
    fuzz("timeline-structured", 128, doc, |lines| {
        let text = format!("description = \"fuzz\"\n[[step]]\n{}\n", lines.join("\n"));
        bounded(
            "timeline-structured",
            text.as_bytes(),
            1024,
            TIMELINE_SLACK,
            || {
                let _ = Timeline::parse(&text, "fuzz.toml", &root);
            },
        )
    });
}

/// A `write` path with brace groups: ranges (up to the documented 100,000), lists, empty and
/// unclosed groups, and products of several.
fn brace_pattern() -> impl Strategy<Value = String> {
    let group = prop_oneof![
        // Mostly small ranges (their products still pass the cap), often one over the
        // 100,000-value limit, and rarely a large one under it: those cost a 100,000-path
        // expansion each, and a million of them would take hours.
        (
            0u32..3,
            prop_oneof![60 => 0u32..20, 6 => 100_000u32..120_000, 1 => 0u32..100_000]
        )
            .prop_map(|(a, n)| format!("{{{a}..{}}}", a + n)),
        vec(select(&["a", "b", "", "x/y", "..", "1"][..]), 0..5)
            .prop_map(|v| format!("{{{}}}", v.join(","))),
        select(
            &[
                "{",
                "}",
                "{}",
                "{,}",
                "{1..}",
                "{..}",
                "{4294967295..4294967295}"
            ][..]
        )
        .prop_map(String::from),
    ];
    let literal = select(&["shot-", "s/", "", "-", ".png", "a", "/"][..]);
    (vec((literal, group), 0..6), 0usize..300).prop_map(|(parts, pad)| {
        let mut s = "p".repeat(pad);
        for (l, g) in parts {
            s.push_str(l);
            s.push_str(&g);
        }
        s
    })
}

#[test]
fn timeline_braces() {
    let root = fixtures_dir();
    fuzz("timeline-braces", 48, brace_pattern(), |pattern| {
        let text = format!(
            "[[step]]\nwrite = {}\ntext = \"x\"\n",
            toml::Value::String(pattern.clone())
        );
        let timeline = bounded(
            "timeline-braces",
            text.as_bytes(),
            1024,
            TIMELINE_SLACK,
            || Timeline::parse(&text, "fuzz.toml", &root),
        )?;
        let expanded = referee::replay::expand_braces(&pattern);
        if let Ok(t) = timeline {
            prop_assert_eq!(t.steps.len(), 1);
            if let referee::replay::Action::Write { paths, .. } = &t.steps[0].action {
                prop_assert!(paths.len() <= 100_000);
                prop_assert_eq!(Some(paths), expanded.as_ref().ok());
            }
        }
        Ok(())
    });
}

// ---------------------------------------------------------------------------------------------
// The event log

/// A recorded line with one JSON-level edit: another event kind, a field replaced, removed or
/// given an absurd value. Returned as compact JSON (one line).
fn envelope() -> impl Strategy<Value = String> + Clone {
    let real: Vec<&'static str> = lines_of(EVENTS);
    let event = select(
        &[
            "start",
            "restart",
            "pass_run",
            "result_changed",
            "stop_raised",
            "stop_resolved",
            "fix_attempt",
            "escalation",
            "tamper",
            "fault",
            "protocol_edit",
            "end",
            "",
            "???",
        ][..],
    );
    let key = select(
        &[
            "event",
            "pass",
            "check",
            "to",
            "from",
            "attempt",
            "results",
            "protocol",
            "started",
            "at",
            "reason",
            "text",
            "evidence_sha256",
            "note",
            "observed",
        ][..],
    );
    let absurd = prop_oneof![
        select(
            &[
                "18446744073709551615",
                "18446744073709551616",
                "-1",
                "1e308",
                "4294967296",
                "null",
                "\"+262143-12-31T23:59:59Z\"",
                "\"-262144-01-01T00:00:00Z\"",
                "\"9999-12-31T23:59:60Z\"",
                "\"2026-02-25T10:00:00-23:59\"",
                "\"\"",
                "\"PASS\"",
                "\"FAIL\"",
                "\"WAITING\"",
                "\"BOGUS\"",
                "{\"OBS-01\":\"PASS\",\"OBS-02\":\"FAIL\",\"\":\"SKIP\",\"x\":1}",
                "[]",
                "{}",
                "{\"sha256\":1,\"id\":[]}",
                "{\"kind\":\"trigger\"}",
                "\"final\"",
            ][..]
        )
        .prop_map(String::from),
        json_value(),
    ];
    let edit = prop_oneof![
        2 => (key.clone(), absurd.clone()).prop_map(|(k, v)| (Some(k), Some(v), None)),
        1 => key.prop_map(|k| (Some(k), None, None)),
        2 => event.prop_map(|e| (None, None, Some(e))),
        1 => absurd.prop_map(|v| (None, Some(v), None)),
    ];
    (select(real), vec(edit, 0..3)).prop_map(|(line, edits)| {
        let Ok(mut v) = serde_json::from_str::<serde_json::Value>(line) else {
            return line.to_string();
        };
        for (key, value, event) in edits {
            let value =
                value.map(|s| serde_json::from_str(&s).unwrap_or(serde_json::Value::String(s)));
            match (key, value, event) {
                // A value in the payload, or (without a key) the envelope's timestamp.
                (Some(k), Some(x), _) => v["payload"][k] = x,
                (Some(k), None, _) => {
                    if let Some(p) = v["payload"].as_object_mut() {
                        p.remove(k);
                    }
                }
                (None, Some(x), _) => v["timestamp"] = x,
                (None, None, Some(e)) => v["payload"]["event"] = e.into(),
                _ => {}
            }
        }
        v.to_string()
    })
}

/// The invariants of a resumed state, whatever the log held.
fn resumed_invariants(text: &str, r: &journal::Resumed) -> Result<(), TestCaseError> {
    let nonblank = text.lines().filter(|l| !l.trim().is_empty()).count();
    prop_assert_eq!(r.events + r.skipped, nonblank);
    prop_assert!(r.history.len() <= r.events);
    prop_assert!(r.incidents.len() <= r.events);
    prop_assert!(r.escalations.len() <= r.events);
    prop_assert!(r.ran.len() <= r.events);
    prop_assert!(r.attempts.len() <= r.events);
    prop_assert!(r.trace_ids.len() <= r.events);
    prop_assert!(r.statuses.len() <= text.len());
    Ok(())
}

#[test]
fn events_structured() {
    let doc = (vec(envelope(), 0..24), 1usize..400, any::<Index>());
    fuzz("events", 96, doc, |(lines, cut, which)| {
        let text = format!("{}\n", lines.join("\n"));
        let r = bounded("events", text.as_bytes(), 64, 64 << 10, || {
            journal::replay(&text)
        })?;
        resumed_invariants(&text, &r)?;
        let crlf = text.replace('\n', "\r\n");
        prop_assert_eq!(
            &journal::replay(&crlf),
            &r,
            "CRLF line endings resumed differently"
        );
        // A crash mid-write leaves a torn last line: it is skipped, and nothing else changes.
        let line = lines_of(EVENTS)[which.index(lines_of(EVENTS).len())];
        let mut torn_at = cut.min(line.len() - 1);
        while !line.is_char_boundary(torn_at) {
            torn_at -= 1;
        }
        let torn = format!("{text}{}", &line[..torn_at.max(1)]);
        let mut want = r.clone();
        want.skipped += 1;
        if want.skipped_lines.len() < journal::MAX_SKIPPED_LISTED {
            // Reported by its number: the line after the last newline.
            want.skipped_lines.push(text.matches('\n').count() + 1);
        }
        prop_assert_eq!(
            &journal::replay(&torn),
            &want,
            "a torn last line changed the resumed state"
        );
        Ok(())
    });
}

#[test]
fn events_mutated() {
    let insert = prop_oneof![3 => envelope(), 1 => json_value()];
    fuzz("events-mutated", 96, ops(insert), |ops| {
        let text = lossy(&mutate(EVENTS.as_bytes(), &ops));
        let r = bounded("events-mutated", text.as_bytes(), 64, 64 << 10, || {
            journal::replay(&text)
        })?;
        resumed_invariants(&text, &r)
    });
}

#[test]
fn events_unmutated_log_resumes() {
    // The baseline the mutations start from: every recorded line is understood.
    let r = journal::replay(EVENTS);
    assert_eq!(r.skipped, 0);
    assert_eq!(r.events, EVENTS.lines().count());
    // The hand-made `restart` comes after the recorded `end`.
    assert!(!r.ended);
    let recorded: String = EVENTS
        .lines()
        .take_while(|l| !l.contains("\"event\":\"fix_attempt\""))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(journal::replay(&recorded).ended);
    assert_eq!(r.escalations.len(), 1, "{:?}", r.escalations);
    assert!(r.history.len() > 10);
}

// ---------------------------------------------------------------------------------------------
// The heartbeat and the STOP file, as `referee status` reads them

/// One of `good` (three times in four) or `bad`, as JSON text.
fn good_or_bad(
    good: &'static [&'static str],
    bad: &'static [&'static str],
) -> BoxedStrategy<String> {
    prop_oneof![3 => select(good), 1 => select(bad)]
        .prop_map(String::from)
        .boxed()
}

/// A heartbeat whose fields are mostly well-typed, with absurd values (huge or tiny intervals,
/// pids beyond `pid_t`, the first and last instants chrono knows), sometimes of the wrong type
/// or missing. `SELF` stands for this process's pid, `NOW` for the current time.
fn heartbeat_text() -> impl Strategy<Value = String> {
    let pid = good_or_bad(
        &[
            "SELF",
            "SELF",
            "0",
            "1",
            "4294967295",
            "2147483648",
            "2147483647",
        ],
        &["4294967296", "-1", "1e300", "\"12\""],
    );
    let time = || {
        good_or_bad(
            &[
                "NOW",
                "NOW",
                "\"2026-02-25T10:00:00Z\"",
                "\"+262143-12-31T23:59:59.999999999Z\"",
                "\"-262143-01-01T00:00:00Z\"",
                "\"1970-01-01T00:00:00Z\"",
                "\"2026-02-25T10:00:00+23:59\"",
            ],
            &[
                "\"9999-12-31T23:59:60Z\"",
                "\"2026-13-45T25:61:61Z\"",
                "\"\"",
                "0",
                "null",
            ],
        )
    };
    let interval = good_or_bad(
        &[
            "2",
            "0.5",
            "0",
            "-0",
            "-1",
            "1e300",
            "1.7976931348623157e308",
            "5e-324",
            "1e-9",
            "18446744073709551615",
            "18446744073709551616",
            "1e19",
            "6e18",
            "1e16",
        ],
        &["NaN", "1e999", "\"2\"", "null"],
    );
    let opt = |s: &'static str, v: BoxedStrategy<String>| {
        proptest::option::weighted(0.95, v).prop_map(move |v| v.map(|v| format!("\"{s}\": {v}")))
    };
    (
        opt("pid", pid),
        opt("started", time()),
        opt("last_beat", time()),
        opt("interval_secs", interval),
        opt(
            "protocol",
            good_or_bad(&["{\"id\": \"d10\", \"sha256\": \"ab\"}"], &["{}", "null"]),
        ),
        opt(
            "state",
            good_or_bad(
                &["\"watching\"", "\"finished\"", "\"\"", "\"WATCHING\""],
                &["1"],
            ),
        ),
        opt("stop", good_or_bad(&["true", "false"], &["0"])),
        opt("build_dir", good_or_bad(&["CANON", "\"/b\""], &["[]"])),
        opt("trace_id", json_scalar().boxed()),
        // The directory's identity and the writer's start time, as the real ones or not.
        opt(
            "dir",
            good_or_bad(&["DIRID"], &["{}", "null", "{\"dev\": -1}"]),
        ),
        opt(
            "proc_start",
            good_or_bad(&["PSTART"], &["0", "-1", "1e300", "null"]),
        ),
    )
        .prop_map(|(a, b, c, d, e, f, g, h, i, j, k)| {
            let fields: Vec<String> = [a, b, c, d, e, f, g, h, i, j, k]
                .into_iter()
                .flatten()
                .collect();
            format!("{{\n  {}\n}}\n", fields.join(",\n  "))
        })
}

fn status_config(dir: &Path, require_live: bool, stale: Option<Duration>) -> status::Config {
    status::Config {
        build_dir: dir.to_path_buf(),
        held: None,
        // The heartbeat is fuzzed where `status` reads it: the directory is its own state dir.
        state_dir: Some(dir.to_path_buf()),
        require_live,
        stale,
        task: None,
        expect_protocol: None,
        expect_waivers: None,
        show_run: false,
        sync: None,
    }
}

fn scratch() -> (tempfile::TempDir, PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().to_path_buf();
    (tmp, dir)
}

#[test]
fn heartbeat_and_status() {
    let (_tmp, dir) = scratch();
    let doc = prop_oneof![
        4 => heartbeat_text().prop_map(String::into_bytes),
        2 => (heartbeat_text(), ops(json_scalar())).prop_map(|(t, ops)| mutate(t.as_bytes(), &ops)),
        1 => vec(any::<u8>(), 0..256),
    ];
    let stale =
        // No stale limit of 0 or 1 s: `judge` and `status` read the clock apart, and a beat stamped
        // now would be fresh for one and stale for the other.
        proptest::option::of(select(&[10u64, 3600, u64::MAX][..]).prop_map(Duration::from_secs));
    let canon = std::fs::canonicalize(&dir).expect("canonical dir");
    let here = live::Here::of(&dir).expect("the directory opened");
    let dir_id = serde_json::to_string(&here.dir()).expect("dir id as JSON");
    let pstart = heartbeat::proc_start(std::process::id()).map_or("null".into(), |t| t.to_string());
    let canon_json = serde_json::to_string(&canon.display().to_string()).expect("path as JSON");
    // Half the inputs with the event log's lock held, as a live referee holds it: `status`
    // believes a heartbeat only then (a flock on another open of the file, so this process
    // counts as the other one).
    fuzz(
        "heartbeat",
        192,
        (doc, stale, any::<bool>()),
        |(bytes, stale, held)| {
            let now = chrono::Utc::now();
            let bytes = lossy(&bytes)
                .replace("NOW", &format!("\"{}\"", now.to_rfc3339()))
                .replace("SELF", &std::process::id().to_string())
                .replace("DIRID", &dir_id)
                .replace("PSTART", &pstart)
                .replace("CANON", &canon_json)
                .into_bytes();
            std::fs::write(dir.join(HEARTBEAT_FILE), &bytes).expect("write heartbeat");
            let _lock = held.then(|| referee::state::lock::lock(&dir).expect("lock the log"));
            let (read, answer) = bounded("heartbeat", &bytes, 64, 64 << 10, || {
                (
                    heartbeat::read(&dir),
                    status::status(&status_config(&dir, true, stale)),
                )
            })?;
            let answer = answer.map_err(|e| TestCaseError::fail(format!("status failed: {e}")))?;
            // `status` reads the clock between `now` and `after`: a beat that goes stale in
            // between (a loaded machine) may be answered either way, never anything else.
            let after = chrono::Utc::now();
            let expect = |at| match read
                .as_ref()
                .ok()
                .map(|hb| live::judge(hb, &here, at, stale, &live::process))
            {
                Some(live::Liveness::Live) if held => ExitCode::Ok,
                Some(live::Liveness::StopWanted(_)) if held => ExitCode::Violation,
                Some(live::Liveness::NotLive(why)) => {
                    assert!(!why.is_empty());
                    ExitCode::NotLive
                }
                // No process holds the log's lock: not a live referee's heartbeat.
                _ => ExitCode::NotLive,
            };
            let (first, last) = (expect(now), expect(after));
            prop_assert!(
                answer.code == first || answer.code == last,
                "status answered {:?}; the heartbeat judged {:?} before and {:?} after (lock held: {held})",
                answer.code,
                first,
                last
            );
            if let Ok(hb) = &read {
                let _ = hb.interval();
            }
            Ok(())
        },
    );
}

#[test]
fn stop_file_printed_as_written() {
    let (_tmp, dir) = scratch();
    const STOP: &str =
        "# OBSERVER STOP\n\nOBS-27 FAIL (pass 2): No manual gate results\n\n- observed: 48 of 48\n";
    let doc = prop_oneof![
        2 => vec(any::<u8>(), 0..2048),
        2 => ops(md_line()).prop_map(|ops| mutate(STOP.as_bytes(), &ops)),
        1 => (select(&["\0", "\r", "\u{feff}", "\u{fffd}", "\n", "# OBSERVER STOP"][..]), 1usize..4096)
            .prop_map(|(u, n)| u.repeat(n).into_bytes()),
    ];
    fuzz("stop", 192, (doc, any::<bool>()), |(bytes, live)| {
        std::fs::write(dir.join(STOP_FILE), &bytes).expect("write STOP");
        let answer = bounded("stop", &bytes, 64, 64 << 10, || {
            status::status(&status_config(&dir, live, None))
        })?;
        let answer = answer.map_err(|e| TestCaseError::fail(format!("status failed: {e}")))?;
        prop_assert_eq!(answer.code, ExitCode::Violation);
        let mut want = lossy(&bytes);
        if !want.ends_with('\n') {
            want.push('\n');
        }
        prop_assert_eq!(&answer.stdout, &want);
        // No heartbeat here: --require-live warns beside the STOP.
        prop_assert_eq!(
            matches!(answer.note, Some(referee::status::Note::Warning(_))),
            live
        );
        Ok(())
    });
}
