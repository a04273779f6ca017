//! The markdown the referee writes, as a reader gets it: snapshots of a STOP file, a pass file
//! and the report from one refereed run, and every `OBSERVER-*.md` of replayed runs (D10 with
//! a STOP standing, D10 in progress, code change with a veto and two tasks) linted with
//! markdownlint-cli2 (`tools/markdownlint`, every rule but MD013), the code-change demo's
//! outputs (REJECT, ESCALATE, APPROVE) among them. Under CI the linter must be there (`.ci/run`
//! installs it with `npm ci`); elsewhere a missing linter skips the lint test with a notice on
//! the test process's stderr, shown even though the test passes.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use crate::code_change::git;
use crate::util::{run, Output};
use crate::watch::{manual_gates, GATES, STOP};

/// A name no auditor has, holding markdown and HTML a pipeline could plant: it reaches the
/// evidence of OBS-19 and OBS-20, in the STOP, the pass file and the report.
const PLANTED: &str = "p3b-pa-auditor-K_<b>*x*<i> `tick |pipe [a](b) www.x.com.md";

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temp path")
}

/// Sets a file's mtime to a fixed instant, so the evidence that shows it is the same every run.
fn set_mtime(path: &Path, rfc3339: &str) {
    let t = chrono::DateTime::parse_from_rfc3339(rfc3339).expect("a time");
    filetime::set_file_mtime(path, filetime::FileTime::from_unix_time(t.timestamp(), 0))
        .expect("set mtime");
}

/// The `clean` timeline replayed into `root/build`, then a hand-entered gate result (OBS-27)
/// and a planted auditor report (OBS-19, OBS-20), refereed by `watch` until the completed
/// pipeline ends it: it exits 1 and leaves the pass files, the STOP and the report.
fn d10_with_stop(root: &Path) -> PathBuf {
    let dir = root.join("build");
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&["replay", "clean", s(&dir), "--speed", "0", "-q"]);
    assert_eq!(code, 0, "replay: {out}{err}");
    fs::write(dir.join(GATES), manual_gates(1)).expect("gates");
    set_mtime(&dir.join(GATES), "2026-02-25T10:48:00Z");
    fs::copy(dir.join("p3b-pa-auditor-A.md"), dir.join(PLANTED)).expect("planted");
    set_mtime(&dir.join(PLANTED), "2026-02-25T11:20:00Z");
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&["watch", s(&dir), "--timeout", "50"]);
    assert_eq!(
        code, 1,
        "watch should end with the STOP standing: {out}{err}"
    );
    assert!(dir.join(STOP).exists(), "no STOP: {out}{err}");
    dir
}

/// The demo timeline stopped in Phase 3A (gate results entered by hand), judged by
/// `verify --write`: pass files of a run in progress, and its report.
fn d10_in_progress(root: &Path) -> PathBuf {
    let dir = root.join("progress");
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&[
        "replay",
        "demo",
        s(&dir),
        "--speed",
        "0",
        "-q",
        "--until",
        "9s",
    ]);
    assert_eq!(code, 0, "replay: {out}{err}");
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&["verify", s(&dir), "--write"]);
    assert!(code == 0 || code == 1, "verify: {out}{err}");
    dir
}

/// The clean run with a hand-entered gate result that a waiver covers, and an expired waiver:
/// the report's waiver section, the headline and what-to-do for a waived FAIL.
fn d10_waived(root: &Path) -> PathBuf {
    let dir = root.join("waived");
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&["replay", "clean", s(&dir), "--speed", "0", "-q"]);
    assert_eq!(code, 0, "replay: {out}{err}");
    let gates = dir.join("p3a-gate-results.json");
    let text = std::fs::read_to_string(&gates).expect("gate results");
    std::fs::write(&gates, text.replacen("gate-runner", "manual", 1)).expect("write");
    let waivers = root.join("waivers.toml");
    std::fs::write(
        &waivers,
        "[[waiver]]\ncheck = \"OBS-27\"\nreason = \"gates re-run by hand | INC-42 *urgent*\"\napproved_by = \"jane\"\nexpires = 2999-12-31\n\n[[waiver]]\ncheck = \"OBS-19\"\nreason = \"old\"\napproved_by = \"bob\"\nexpires = 2020-01-01\n",
    )
    .expect("write waivers");
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&[
        "verify",
        s(&dir),
        "--final",
        "--write",
        "--waivers",
        s(&waivers),
    ]);
    assert_eq!(code, 0, "verify: {out}{err}");
    let report = std::fs::read_to_string(dir.join("OBSERVER-REPORT.md")).expect("report");
    assert!(report.contains("**PASS with waivers"), "{report}");
    assert!(report.contains("### Waivers"), "{report}");
    assert!(report.contains("(pass 2, WAIVED)"), "{report}");
    dir
}

/// A code-change workspace: one task edits a protected file (veto, STOP, diff), another adds
/// a file whose name and content are markdown; `verify --write` writes `.referee/`.
fn code_change(root: &Path) -> PathBuf {
    let ws = root.join("ws");
    fs::create_dir_all(ws.join("app")).expect("mkdir");
    fs::write(
        ws.join("app/orchestrator.py"),
        "def next_task(q):\n    return q\n",
    )
    .expect("w");
    fs::write(ws.join("app/main.py"), "a = 1\n").expect("write");
    git(&ws, &["init", "-q"]);
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-q", "-m", "init"]);
    fs::write(
        ws.join("app/orchestrator.py"),
        "def next_task(q):\n    return '```'\n",
    )
    .expect("write");
    fs::write(ws.join("x*y_.md"), "# x \n\n<b>").expect("write");
    fs::create_dir(ws.join(".tasks")).expect("mkdir");
    for (id, summary, modified, added) in [
        ("t1", "did it", "app/orchestrator.py", ""),
        ("t2", "Here's what I did: *x*", "", "x*y_.md"),
    ] {
        let list = |p: &'static str| if p.is_empty() { vec![] } else { vec![p] };
        let record = serde_json::json!({
            "task_id": id, "status": "pending_review", "description": "a task",
            "attempt": 1, "summary": summary,
            "changes": {"added": list(added), "modified": list(modified), "removed": []},
            "pre_hashes": {}, "post_hashes": {},
        });
        fs::write(ws.join(format!(".tasks/{id}.json")), record.to_string()).expect("record");
    }
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&[
        "verify",
        s(&ws),
        "--protocol",
        "code-change",
        "--write",
        "--format",
        "json",
    ]);
    assert_eq!(code, 1, "verify: {out}{err}");
    assert!(ws.join(".referee").join(STOP).exists(), "no STOP: {out}");
    ws.join(".referee")
}

/// `referee demo code-change` played at once into `root/demo`: a REJECT with a STOP, an
/// ESCALATE, then an APPROVE (a verdict row with no reasons), in `.referee/`.
fn code_change_demo(root: &Path) -> PathBuf {
    let dir = root.join("demo");
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&[
        "demo",
        "code-change",
        "--speed",
        "0",
        "--keep",
        s(&dir),
        "-q",
    ]);
    assert_eq!(code, 0, "demo: {out}{err}");
    let report = read(&dir.join(".referee/OBSERVER-REPORT.md"));
    assert!(report.contains("**APPROVE**"), "{report}");
    dir.join(".referee")
}

/// Every `OBSERVER-*.md` directly in `dir`, sorted.
fn observer_md(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("OBSERVER-") && n.ends_with(".md"))
        })
        .collect();
    v.sort();
    v
}

fn read(p: &Path) -> String {
    fs::read_to_string(p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
}

/// What changes from run to run: the temp dir, the run's own clock, today's date.
fn redact(text: &str, dir: &Path) -> String {
    let text = text.replace(s(dir), "[BUILD_DIR]");
    let ts = regex::Regex::new(r"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z").unwrap();
    let text = ts.replace_all(&text, |c: &regex::Captures<'_>| {
        // Fixture times (2026-02-25…) are data; only the run's own clock is redacted.
        if c[0].starts_with("2026-02-25") {
            c[0].to_string()
        } else {
            "[NOW]".to_string()
        }
    });
    let today = regex::Regex::new(r"— 20\d\d-\d\d-\d\d\n").unwrap();
    today.replace_all(&text, "— [DATE]\n").into_owned()
}

#[test]
fn stop_pass_and_report_read_as_written() {
    let root = tempfile::tempdir().expect("tempdir");
    let dir = d10_with_stop(root.path());
    let stop = read(&dir.join(STOP));
    // Every field starts a paragraph of its own (the Required Action used to render inside
    // the last evidence bullet), and nothing a pipeline planted became markup.
    let lines: Vec<&str> = stop.lines().collect();
    for (i, l) in lines.iter().enumerate().skip(1) {
        if l.starts_with("**") || *l == "---" {
            assert!(
                lines[i - 1].is_empty(),
                "`{l}` joins the line above:\n{stop}"
            );
        }
    }
    assert!(stop.contains("\n\n**Required Action:** Discard the hand-written gate results"));
    assert!(
        stop.contains(r"p3b-pa-auditor-K\_\<b>\*x\*\<i> \`tick \|pipe [a\](b) www\.x.com.md"),
        "{stop}"
    );
    insta::assert_snapshot!("stop", redact(&stop, &dir));
    insta::assert_snapshot!(
        "pass_3",
        redact(&read(&dir.join("OBSERVER-PASS-3.md")), &dir)
    );
    let report = read(&dir.join("OBSERVER-REPORT.md"));
    // The headline and what to do come before any table.
    let head = report.split("\n|").next().unwrap_or_default();
    assert!(
        head.contains("\n**FAIL: 3 BLOCKING unresolved** — "),
        "{report}"
    );
    assert!(
        head.contains("\n- OBS-27 (pass 2, BLOCKING): Discard"),
        "{report}"
    );
    insta::assert_snapshot!("report", redact(&report, &dir));
}

/// markdownlint-cli2 from `tools/markdownlint`, or `None` (CI: a failure) when not installed.
fn linter() -> Option<(PathBuf, PathBuf)> {
    let tool = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/markdownlint");
    let bin = tool.join("node_modules/.bin/markdownlint-cli2");
    let config = tool.join(".markdownlint-cli2.jsonc");
    let node = Command::new("node").arg("--version").output();
    if bin.exists() && node.is_ok_and(|o| o.status.success()) {
        return Some((bin, config));
    }
    crate::util::missing(
        "markdownlint-cli2",
        "`npm ci --prefix tools/markdownlint`, node and npm required",
        "the lint of every OBSERVER-*.md",
    );
    None
}

#[test]
fn every_observer_markdown_file_lints_clean() {
    let Some((bin, config)) = linter() else {
        return;
    };
    let root = tempfile::tempdir().expect("tempdir");
    let mut files = Vec::new();
    files.extend(observer_md(&d10_with_stop(root.path())));
    files.extend(observer_md(&d10_in_progress(root.path())));
    files.extend(observer_md(&code_change(root.path())));
    files.extend(observer_md(&d10_waived(root.path())));
    files.extend(observer_md(&code_change_demo(root.path())));
    let names: Vec<String> = files
        .iter()
        .filter_map(|f| f.file_name()?.to_str().map(String::from))
        .collect();
    // What the runs must have written, so the lint cannot pass on fewer files.
    for want in [
        "OBSERVER-STOP.md",
        "OBSERVER-REPORT.md",
        "OBSERVER-PASS-0.md",
        "OBSERVER-PASS-4.md",
        "OBSERVER-VERDICT-t1.md",
        "OBSERVER-VERDICT-t2.md",
    ] {
        assert!(names.iter().any(|n| n == want), "{want} not in {names:?}");
    }
    assert_eq!(names.iter().filter(|n| *n == "OBSERVER-STOP.md").count(), 2);
    assert_eq!(
        names.iter().filter(|n| *n == "OBSERVER-REPORT.md").count(),
        5
    );
    // `:` takes each path literally (no glob); run from the temp root, so no config file of
    // the repository or the runs is picked up beside the one given.
    let out = Command::new(&bin)
        .current_dir(root.path())
        .arg("--config")
        .arg(&config)
        .args(files.iter().map(|f| format!(":{}", f.display())))
        .output()
        .expect("run markdownlint-cli2");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("Linting: {} file(s)", files.len()))
            || stdout.contains(&format!("Linting: {} file(s)", files.len())),
        "markdownlint-cli2 did not lint every file:\n{stdout}\n{stderr}"
    );
    assert!(
        out.status.success(),
        "markdownlint violations in the referee's own files:\n{stdout}\n{stderr}"
    );
}
