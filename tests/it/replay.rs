//! `referee replay` and `referee demo`: timelines (`fixtures/timelines/*.toml`) write the right
//! files with the right mtimes, bad timelines fail with a position and write nothing, the clean
//! timeline is a clean run for `verify`, and the demo raises and resolves a STOP by itself.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::Value;

use crate::util::{Output, TestCommand};

/// A replay or verify that takes longer than this has hung.
const TIMEOUT: Duration = Duration::from_secs(30);

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

fn referee() -> TestCommand {
    let mut cmd = TestCommand::new();
    cmd.timeout(TIMEOUT);
    cmd
}

fn run(args: &[&std::ffi::OsStr]) -> Output {
    referee().args(args).output()
}

fn replay(timeline: &Path, dir: &Path) -> Output {
    run(&[
        "replay".as_ref(),
        timeline.as_os_str(),
        dir.as_os_str(),
        "--speed".as_ref(),
        "0".as_ref(),
    ])
}

fn mtime(p: &Path) -> i64 {
    let md = std::fs::metadata(p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    filetime::FileTime::from_last_modification_time(&md).unix_seconds()
}

fn epoch() -> i64 {
    chrono::DateTime::parse_from_rfc3339("2026-02-25T10:00:00Z")
        .expect("epoch")
        .timestamp()
}

/// Every path under `dir`, relative, sorted.
fn listing(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = walkdir::WalkDir::new(dir)
        .min_depth(1)
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| {
            e.path()
                .strip_prefix(dir)
                .unwrap_or(e.path())
                .to_string_lossy()
                .into_owned()
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_timeline_writes_its_files_with_their_recorded_mtimes() {
    let tmp = tempfile::tempdir().unwrap();
    let timeline = tmp.path().join("t.toml");
    std::fs::write(
        &timeline,
        r###"
epoch = "2026-02-25T10:00:00Z"
root = "."

[[step]]
at = "1m"
write = "notes/{a,b}.md"
text = "hello\n"
every = "30s"

[[step]]
at = "2m"
rename = "p3a-gate-results.json"
text = '{"gates": []}'

[[step]]
at = "3m"
rename = "EXECUTION-TRACKER.md"
text = "## Phase Timestamps\n\n| Field | Value | Notes |\n|---|---|---|\n| P0_START | ___ | |\n"

[[step]]
at = "4m"
tracker = [{ field = "p0_start", value = "2026-02-25T10:00:00Z" }]

[[step]]
wait = "1m"

[[step]]
mkdir = "screenshots/1440"

[[step]]
at = "6m"
remove = "notes/a.md"
"###,
    )
    .unwrap();
    let dir = tmp.path().join("build");
    let out = replay(&timeline, &dir);
    assert_eq!(out.code, 0, "{}{}", out.stdout, out.stderr);
    assert_eq!(
        listing(&dir),
        [
            "EXECUTION-TRACKER.md",
            "notes",
            "notes/b.md",
            "p3a-gate-results.json",
            "screenshots",
            "screenshots/1440"
        ],
        "no temp files are left behind"
    );
    assert_eq!(
        std::fs::read_to_string(dir.join("notes/b.md")).unwrap(),
        "hello\n"
    );
    assert_eq!(mtime(&dir.join("notes/b.md")), epoch() + 90);
    assert_eq!(mtime(&dir.join("p3a-gate-results.json")), epoch() + 120);
    assert_eq!(
        std::fs::read_to_string(dir.join("EXECUTION-TRACKER.md")).unwrap(),
        "## Phase Timestamps\n\n| Field | Value | Notes |\n|---|---|---|\n| P0_START | 2026-02-25T10:00:00Z | |\n"
    );
    assert_eq!(mtime(&dir.join("EXECUTION-TRACKER.md")), epoch() + 240);
    // The wait moves the clock: the mkdir comes at 5m.
    assert_eq!(mtime(&dir.join("screenshots/1440")), epoch() + 300);
    // Each step is printed as it is played.
    assert_eq!(out.stdout.lines().count(), 7, "{}", out.stdout);
    assert!(out
        .stdout
        .contains("rename .p3a-gate-results.json.tmp → p3a-gate-results.json"));
}

#[test]
fn the_clean_timeline_rebuilds_the_clean_run() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("run");
    let out = replay(&fixtures().join("timelines/clean.toml"), &dir);
    assert_eq!(out.code, 0, "{}", out.stderr);

    let content = |name: &str| std::fs::read(fixtures().join("content").join(name)).unwrap();
    assert_eq!(
        std::fs::read(dir.join("EXECUTION-TRACKER.md")).unwrap(),
        content("tracker.md")
    );
    assert_eq!(
        std::fs::read(dir.join("p3c-weaver.md")).unwrap(),
        content("weaver.md")
    );
    assert_eq!(
        std::fs::read(dir.join("p3a-gate-results.json")).unwrap(),
        content("gate-results.json")
    );
    for (path, offset) in [
        ("p0-content-map.md", 4 * 60),
        ("p1-execution-brief.md", 14 * 60),
        ("p2-output.html", 38 * 60),
        ("screenshots/1024/cold-look.png", 41 * 60 + 5),
        ("screenshots/1440/scroll-8.png", 41 * 60 + 20 + 35),
        ("p3a-gate-results.json", 46 * 60),
        ("p3b-pa-auditor-I.md", 66 * 60),
        ("p3b-pa-integrative.md", 72 * 60),
        ("p3c-weaver.md", 80 * 60),
        ("EXECUTION-TRACKER.md", 81 * 60),
    ] {
        assert_eq!(mtime(&dir.join(path)), epoch() + offset, "{path}");
    }
    let pngs = listing(&dir).iter().filter(|p| p.ends_with(".png")).count();
    assert_eq!(pngs, 27);

    let v = run(&[
        "verify".as_ref(),
        dir.as_os_str(),
        "--format".as_ref(),
        "json".as_ref(),
    ]);
    assert_eq!(v.code, 0, "{}{}", v.stdout, v.stderr);
    let json: Value = serde_json::from_str(&v.stdout).expect("one JSON object");
    assert_eq!(json["complete"], true);
    assert_eq!(json["verdict"], "SHIP");
    let results = json["results"].as_array().expect("results");
    assert!(!results.is_empty());
    for r in results {
        let (pass, check, status) = (
            r["pass"].as_str().unwrap_or_default(),
            r["check"].as_str().unwrap_or_default(),
            r["status"].as_str().unwrap_or_default(),
        );
        let want = if pass == "R" || check == "OBS-18" {
            "SKIP"
        } else {
            "PASS"
        };
        assert_eq!(status, want, "{pass}:{check}: {}", r["evidence"]);
    }
}

#[test]
fn the_embedded_timelines_match_the_fixture_files() {
    // `referee replay clean DIR` (embedded) and the file must write the same run.
    let tmp = tempfile::tempdir().unwrap();
    for name in ["clean", "demo", "code-change"] {
        let a = tmp.path().join(format!("{name}-embedded"));
        let b = tmp.path().join(format!("{name}-file"));
        assert_eq!(replay(Path::new(name), &a).code, 0);
        let file = fixtures().join(format!("timelines/{name}.toml"));
        assert_eq!(replay(&file, &b).code, 0);
        assert_eq!(listing(&a), listing(&b), "{name}");
        for p in listing(&a) {
            if a.join(&p).is_file() {
                assert_eq!(
                    std::fs::read(a.join(&p)).unwrap(),
                    std::fs::read(b.join(&p)).unwrap(),
                    "{name}: {p}"
                );
            }
        }
    }
}

/// Runs `replay` on a timeline text and expects exit 2 with `t.toml:LINE:COL: ` and `needle`.
fn rejects(text: &str, line: usize, col: usize, needle: &str) {
    let tmp = tempfile::tempdir().unwrap();
    let timeline = tmp.path().join("t.toml");
    std::fs::write(&timeline, text).unwrap();
    let dir = tmp.path().join("build");
    let out = replay(&timeline, &dir);
    assert_eq!(out.code, 2, "{text}\n{}{}", out.stdout, out.stderr);
    let at = format!("t.toml:{line}:{col}: ");
    assert!(
        out.stderr.contains(&at),
        "expected `{at}` in: {}",
        out.stderr
    );
    assert!(
        out.stderr.contains(needle),
        "expected `{needle}` in: {}",
        out.stderr
    );
    assert!(
        !dir.exists() || listing(&dir).is_empty(),
        "a bad timeline writes nothing"
    );
    assert_eq!(
        listing(tmp.path()),
        ["t.toml"],
        "nothing is written beside DIR"
    );
}

#[test]
fn bad_timelines_fail_with_their_position() {
    rejects(
        "[[step]]\nwrite = \"a.md\"\ntext = \"x\"\ncolour = \"red\"\n",
        4,
        1,
        "colour",
    );
    rejects(
        "descripton = \"typo\"\n[[step]]\nmkdir = \"a\"\n",
        1,
        1,
        "descripton",
    );
    rejects(
        "[[step]]\ntracker = [\n  { field = \"P0_START\", vale = \"x\" },\n]\n",
        3,
        25,
        "vale",
    );
    rejects(
        "[[step]]\nat = \"5 fortnights\"\nmkdir = \"a\"\n",
        2,
        6,
        "bad duration",
    );
    rejects(
        "[[step]]\nat = \"2s\"\nmkdir = \"a\"\n[[step]]\nat = \"1s\"\nmkdir = \"b\"\n",
        5,
        6,
        "recorded order",
    );
    rejects(
        "[[step]]\nwrite = \"a.md\"\nfrom = \"content/no-such-file.md\"\n",
        3,
        8,
        "cannot read",
    );
}

#[test]
fn timelines_cannot_write_outside_dir() {
    rejects(
        "[[step]]\nwrite = \"../escaped.md\"\ntext = \"x\"\n",
        2,
        9,
        "inside DIR",
    );
    rejects(
        "[[step]]\nwrite = \"/tmp/escaped.md\"\ntext = \"x\"\n",
        2,
        9,
        "absolute",
    );
    rejects(
        "[[step]]\nwrite = \"a/{b,../../c}.md\"\ntext = \"x\"\n",
        2,
        9,
        "inside DIR",
    );
    rejects(
        "[[step]]\nrename = \"a.md\"\ntemp = \"../t\"\ntext = \"x\"\n",
        3,
        8,
        "inside DIR",
    );
    rejects("[[step]]\nremove = \"sub/../..\"\n", 2, 10, "inside DIR");

    // A symlink inside DIR that points out of it is never written through.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("build");
    let outside = tmp.path().join("outside");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::create_dir_all(&outside).unwrap();
    std::os::unix::fs::symlink(&outside, dir.join("screenshots")).unwrap();
    let timeline = tmp.path().join("t.toml");
    std::fs::write(
        &timeline,
        "[[step]]\nwrite = \"screenshots/x.png\"\nhex = \"89 50\"\n",
    )
    .unwrap();
    let out = replay(&timeline, &dir);
    assert_eq!(out.code, 2, "{}", out.stderr);
    assert!(out.stderr.contains("symlink"), "{}", out.stderr);
    assert!(listing(&outside).is_empty());
}

#[test]
fn the_demo_raises_and_resolves_a_stop_by_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let out = referee()
        .args(["demo", "--speed", "4", "--keep"])
        .arg(&dir)
        .timeout(Duration::from_secs(60))
        .assert_exit(0);
    let stdout = &out.stdout;
    for needle in [
        "pipeline │ the gate results arrive",
        "STOP raised: OBS-27 (pass 2)",
        "OBSERVER-STOP.md says:",
        "GR-48",
        "STOP resolved: OBS-27 (pass 2)",
        "pass 4 ran",
        "STOP raised 1 time(s), resolved 1 time(s)",
        "verdict SHIP",
    ] {
        assert!(
            stdout.contains(needle),
            "`{needle}` missing from:\n{stdout}"
        );
    }
    let report_path = dir.join("OBSERVER-REPORT.md");
    assert!(
        stdout.contains(&format!("report: {}", report_path.display())),
        "{stdout}"
    );
    assert!(
        !dir.join("OBSERVER-STOP.md").exists(),
        "the STOP was resolved"
    );

    // The report's history keeps the STOP and its resolution.
    let report = std::fs::read_to_string(&report_path).expect("the final report");
    let history: Vec<&str> = report.lines().filter(|l| l.contains("OBS-27")).collect();
    assert!(
        history.iter().any(|l| l.contains("STOP raised")),
        "{report}"
    );
    assert!(
        history.iter().any(|l| l.contains("RESOLVED after STOP")),
        "{report}"
    );
    // And the replay ran to the end: the weaver's verdict is there.
    assert!(dir.join("p3c-weaver.md").exists());
}

/// `referee demo code-change`: the worker's protected-file touch is rejected with a STOP, the
/// identical resubmission escalated, the STOP stands until the orchestrator hands the task to
/// a human (not merely until the files are put back), and the clean task approved; the referee
/// writes only under `.referee/`.
#[test]
fn the_code_change_demo_rejects_escalates_and_approves_by_itself() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("demo");
    let out = referee()
        .args(["demo", "code-change", "--speed", "4", "--keep"])
        .arg(&dir)
        .timeout(Duration::from_secs(60))
        .assert_exit(0);
    let stdout = &out.stdout;
    // The veto stands the moment the protected file is touched (a property of the
    // workspace, not of the records), so the STOP may come before or after the record.
    assert!(
        stdout.contains("the worker asks for review: t1 attempt 1"),
        "{stdout}"
    );
    let order = [
        "STOP raised",
        "OBSERVER-STOP.md says:",
        "task t1 attempt 1: REJECT (protected_file_modified)",
        "task t1 attempt 2: ESCALATE",
        "t1 handed to a human",
        "STOP resolved",
        "task t2 attempt 1: APPROVE",
        "STOP raised 1 time(s), resolved 1 time(s)",
        "exit code 0",
    ];
    // The escalated STOP and the attempt's line are printed as they come, in either order
    // (under load the STOP update came first once).
    assert!(
        stdout.contains("ESCALATED: human review required"),
        "{stdout}"
    );
    let mut at = 0;
    for needle in order {
        let found = stdout[at..].find(needle);
        assert!(
            found.is_some(),
            "`{needle}` missing (in this order) from:\n{stdout}"
        );
        at += found.unwrap_or(0) + needle.len();
    }

    let out_dir = dir.join(".referee");
    let verdict = |task: &str| -> serde_json::Value {
        let text = std::fs::read_to_string(out_dir.join(format!("OBSERVER-VERDICT-{task}.json")))
            .expect("a verdict file");
        serde_json::from_str(&text).expect("verdict JSON")
    };
    let t1 = verdict("t1");
    assert_eq!(t1["attempt"], 2, "{t1}");
    assert_eq!(t1["verdict"], "ESCALATE", "{t1}");
    assert!(
        t1["reasons"]
            .as_array()
            .is_some_and(|r| r.iter().any(|x| x == "identical_diff")),
        "{t1}"
    );
    assert_eq!(verdict("t2")["verdict"], "APPROVE");
    assert!(!out_dir.join("OBSERVER-STOP.md").exists());
    assert!(out_dir.join("OBSERVER-REPORT.md").is_file());

    // Outside `.referee/`, the workspace is exactly what the worker's timeline wrote.
    let plain = tmp.path().join("plain");
    assert_eq!(replay(Path::new("code-change"), &plain).code, 0);
    let mine: Vec<String> = listing(&dir)
        .into_iter()
        .filter(|p| !p.starts_with(".referee"))
        .collect();
    assert_eq!(mine, listing(&plain));
    for p in &mine {
        if plain.join(p).is_file() {
            assert_eq!(
                std::fs::read(dir.join(p)).unwrap(),
                std::fs::read(plain.join(p)).unwrap(),
                "{p}"
            );
        }
    }
}

#[test]
fn the_demo_refuses_a_directory_with_files_in_it() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("precious.md"), "x").unwrap();
    let out = run(&["demo".as_ref(), "--keep".as_ref(), tmp.path().as_os_str()]);
    assert_eq!(out.code, 2, "{}{}", out.stdout, out.stderr);
    assert!(out.stderr.contains("not empty"), "{}", out.stderr);
    assert_eq!(listing(tmp.path()), ["precious.md"]);
}
