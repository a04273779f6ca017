//! `verify::CASE`: a fixture case is materialised (see `builder`), run through `referee verify DIR
//! --format json`, and its expectations checked; `tables::*`: the named builds must produce exactly
//! their documented status tables. Every run must also keep the universal contract (no hang, one
//! JSON object, no write into the build directory): see [`run_checked`].

use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, SystemTime};

use serde_json::Value;

use crate::builder::{fixtures_dir, Build};
use crate::case;
use crate::util::TestCommand;

/// A run that takes longer than this has hung (on a FIFO, a deep file, ...): a failure, not a wait.
const TIMEOUT: Duration = Duration::from_secs(20);

/// The checks of each pass. Pass R holds OBS-05..09 and repeats passes 2, 3 and 4.
const PASSES: &[(&str, &[&str])] = &[
    ("0", &["OBS-16"]),
    ("1", &["OBS-15", "OBS-17", "OBS-18"]),
    (
        "2",
        &[
            "OBS-01", "OBS-02", "OBS-03", "OBS-04", "OBS-10", "OBS-11", "OBS-12", "OBS-13",
            "OBS-14", "OBS-24", "OBS-25", "OBS-27",
        ],
    ),
    ("3", &["OBS-19", "OBS-20", "OBS-21", "OBS-22", "OBS-23"]),
    ("4", &["OBS-26", "OBS-28", "OBS-29", "OBS-30", "OBS-31"]),
];
const PASS_R_OWN: &[&str] = &["OBS-05", "OBS-06", "OBS-07", "OBS-08", "OBS-09"];

// ---------------------------------------------------------------------------------------------
// Running the binary

struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
    timed_out: bool,
    /// The command line and the directory listing, for failure messages.
    context: String,
    json: Result<Value, String>,
}

fn run_verify(dir: &Path, final_: bool, args: &[String]) -> Result<Run, String> {
    let out = TestCommand::new()
        .arg("verify")
        .arg(dir)
        .args(["--format", "json"])
        .args(final_.then_some("--final"))
        .args(args)
        .timeout(TIMEOUT)
        .output();
    let json = serde_json::from_str::<Value>(&out.stdout)
        .map_err(|e| format!("stdout is not one JSON object: {e}"));
    Ok(Run {
        code: out.status.code(),
        timed_out: out.timed_out(),
        context: out.context().to_string(),
        stdout: out.stdout,
        stderr: out.stderr,
        json,
    })
}

/// Everything about the build directory that a read-only referee must leave unchanged.
fn snapshot(dir: &Path) -> BTreeMap<String, (String, u64, Option<SystemTime>)> {
    walkdir::WalkDir::new(dir)
        .follow_links(false)
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| {
            let rel = e
                .path()
                .strip_prefix(dir)
                .unwrap_or(e.path())
                .to_string_lossy()
                .into_owned();
            let md = e.path().symlink_metadata().ok();
            let kind = format!("{:?}", e.file_type());
            let len = md.as_ref().filter(|m| m.is_file()).map_or(0, |m| m.len());
            let mtime = md.and_then(|m| m.modified().ok());
            (rel, (kind, len, mtime))
        })
        .collect()
}

/// Runs the referee on a materialised build; checks the universal contract (no hang, exit 0/1/2
/// as expected, one JSON object, nothing written into the build directory).
fn run_checked(
    build: &Build,
    final_: bool,
    args: &[String],
    expect_exit: Option<i32>,
) -> Result<(Value, Run), String> {
    let tmp = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let dir = build.materialise(tmp.path())?;
    let before = snapshot(&dir);
    let run = run_verify(&dir, final_, args)?;
    let after = snapshot(&dir);
    let mut problems = Vec::new();
    if run.code.is_none() || run.timed_out {
        problems.push(format!(
            "referee did not finish within {TIMEOUT:?} (killed)"
        ));
    }
    if run.code == Some(2) && expect_exit != Some(2) {
        problems.push("exit 2: referee error".to_string());
    }
    if before != after {
        let changed: Vec<&String> = before
            .keys()
            .chain(after.keys())
            .filter(|k| before.get(*k) != after.get(*k))
            .collect();
        problems.push(format!(
            "`verify` changed the build directory (read-only): {changed:?}"
        ));
    }
    let json = match &run.json {
        Ok(v) => v.clone(),
        Err(e) => {
            problems.push(e.clone());
            Value::Null
        }
    };
    if json
        .get("schema")
        .and_then(Value::as_str)
        .is_some_and(|s| s != "referee.verify/1")
    {
        problems.push(format!(
            "schema is {}, want referee.verify/1",
            json["schema"]
        ));
    }
    if !problems.is_empty() {
        return Err(format!(
            "{}\n{}    exit: {:?}\n    stderr: {}\n    stdout: {}",
            problems.join("\n    "),
            run.context,
            run.code,
            clip(&run.stderr, 1500),
            clip(&run.stdout, 600)
        ));
    }
    Ok((json, run))
}

fn clip(s: &str, n: usize) -> String {
    let s = s.trim();
    if s.len() <= n {
        return s.to_string();
    }
    let mut end = n;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… ({} bytes)", &s[..end], s.len())
}

fn results(json: &Value) -> Vec<&Value> {
    json.get("results")
        .and_then(Value::as_array)
        .map(|a| a.iter().collect())
        .unwrap_or_default()
}

fn str_of<'a>(v: &'a Value, key: &str) -> &'a str {
    v.get(key).and_then(Value::as_str).unwrap_or("")
}

/// The result for a check: the given pass's instance, else the main one (R only when there is no other).
fn find_result<'a>(json: &'a Value, check: &str, pass: Option<&str>) -> Result<&'a Value, String> {
    let all: Vec<&Value> = results(json)
        .into_iter()
        .filter(|r| str_of(r, "check") == check)
        .collect();
    let pick: Vec<&Value> = match pass {
        Some(p) => all
            .iter()
            .copied()
            .filter(|r| str_of(r, "pass") == p)
            .collect(),
        None => {
            let main: Vec<&Value> = all
                .iter()
                .copied()
                .filter(|r| str_of(r, "pass") != "R")
                .collect();
            if main.is_empty() {
                all.clone()
            } else {
                main
            }
        }
    };
    match pick.as_slice() {
        [one] => Ok(one),
        [] => Err(format!(
            "no result for {check} (pass {})",
            pass.unwrap_or("main")
        )),
        many => Err(format!(
            "{} results for {check} (pass {})",
            many.len(),
            pass.unwrap_or("main")
        )),
    }
}

fn describe(r: &Value) -> String {
    let ev = r.get("evidence").map(|e| e.to_string()).unwrap_or_default();
    format!(
        "{} (due: {}) evidence: {}",
        str_of(r, "status"),
        r.get("due").unwrap_or(&Value::Null),
        clip(&ev, 700)
    )
}

/// The BLOCKING FAILs, to explain an unexpected exit code.
fn blocking_failures(json: &Value) -> String {
    let fails: Vec<String> = results(json)
        .into_iter()
        .filter(|r| str_of(r, "status") == "FAIL" && str_of(r, "severity") == "BLOCKING")
        .map(|r| format!("{} (pass {})", str_of(r, "check"), str_of(r, "pass")))
        .collect();
    if fails.is_empty() {
        String::new()
    } else {
        format!(" (BLOCKING FAIL: {})", fails.join(", "))
    }
}

/// Runs `verify` on a case's build and checks every expectation; the error lists them all.
pub fn check(path: &Path) -> Result<(), String> {
    let case = case::load(path)?;
    let build = case.build()?;
    let (json, run) = run_checked(&build, case.keys.final_, &case.keys.args, case.keys.exit)?;
    let mut failures = Vec::new();
    if let Some(want) = case.keys.exit {
        if run.code != Some(want) {
            failures.push(format!(
                "exit {:?}, want {want}{}",
                run.code,
                blocking_failures(&json)
            ));
        }
    }
    if let Some(want) = case.keys.complete {
        if json.get("complete") != Some(&Value::Bool(want)) {
            failures.push(format!(
                "complete = {}, want {want}",
                json.get("complete").unwrap_or(&Value::Null)
            ));
        }
    }
    if let Some(want) = &case.keys.verdict {
        let got = json.get("verdict").unwrap_or(&Value::Null);
        let ok = if want == "null" {
            got.is_null()
        } else {
            got.as_str() == Some(want.as_str())
        };
        if !ok {
            failures.push(format!("verdict = {got}, want {want}"));
        }
    }
    if let Some(want) = &case.keys.verdict_note {
        let got = json
            .get("verdict_note")
            .and_then(Value::as_str)
            .unwrap_or("");
        if !got.contains(want.as_str()) {
            failures.push(format!(
                "verdict_note = {got:?}, want it to contain {want:?}"
            ));
        }
    }
    for e in &case.keys.expect {
        let label = format!("{} (pass {})", e.check, e.pass.as_deref().unwrap_or("main"));
        if let Some(want) = e.exit {
            if run.code != Some(want) {
                failures.push(format!(
                    "{label}: exit {:?}, want {want}{}",
                    run.code,
                    blocking_failures(&json)
                ));
            }
        }
        let r = match find_result(&json, &e.check, e.pass.as_deref()) {
            Ok(r) => r,
            Err(msg) => {
                failures.push(format!("{label}: {msg}"));
                continue;
            }
        };
        let mut bad = Vec::new();
        let status = str_of(r, "status");
        let allowed = e.status.options();
        if !allowed.contains(&status) {
            bad.push(format!("status {status}, want {}", allowed.join(" or ")));
        }
        let evidence = r.get("evidence").map(|v| v.to_string()).unwrap_or_default();
        let lower = evidence.to_lowercase();
        for needle in &e.evidence {
            let opts = needle.options();
            if !opts.iter().any(|o| lower.contains(&o.to_lowercase())) {
                bad.push(format!(
                    "evidence lacks {}",
                    opts.iter()
                        .map(|o| format!("`{o}`"))
                        .collect::<Vec<_>>()
                        .join(" / ")
                ));
            }
        }
        for needle in &e.evidence_not {
            if lower.contains(&needle.to_lowercase()) {
                bad.push(format!("evidence contains `{needle}`"));
            }
        }
        if let Some(want) = e.due {
            if r.get("due") != Some(&Value::Bool(want)) {
                bad.push(format!(
                    "due = {}, want {want}",
                    r.get("due").unwrap_or(&Value::Null)
                ));
            }
        }
        if let Some(max) = e.evidence_max_len {
            if evidence.len() > max {
                bad.push(format!(
                    "evidence is {} bytes, want at most {max}",
                    evidence.len()
                ));
            }
        }
        if !bad.is_empty() {
            failures.push(format!(
                "{label}: {}\n      got: {}",
                bad.join("; "),
                describe(r)
            ));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n    "))
    }
}

// ---------------------------------------------------------------------------------------------
// The named builds' full tables

/// Every check instance the JSON must contain, with its expected status.
fn table(
    main: impl Fn(&str, &str) -> &'static str,
    refine: impl Fn(&str) -> &'static str,
) -> BTreeMap<(String, String), &'static str> {
    let mut t = BTreeMap::new();
    for (pass, checks) in PASSES {
        for c in *checks {
            t.insert((pass.to_string(), c.to_string()), main(pass, c));
        }
    }
    for c in PASS_R_OWN
        .iter()
        .chain(PASSES[2..].iter().flat_map(|(_, cs)| cs.iter()))
    {
        t.insert(("R".to_string(), c.to_string()), refine(c));
    }
    t
}

fn assert_table(build: &str, want: &BTreeMap<(String, String), &'static str>) -> Value {
    let b = Build::named(build).unwrap_or_else(|e| panic!("{e}"));
    let (json, run) =
        run_checked(&b, false, &[], Some(0)).unwrap_or_else(|e| panic!("build `{build}`: {e}"));
    let mut got: BTreeMap<(String, String), &Value> = BTreeMap::new();
    let mut problems = Vec::new();
    for r in results(&json) {
        let key = (
            str_of(r, "pass").to_string(),
            str_of(r, "check").to_string(),
        );
        if got.insert(key.clone(), r).is_some() {
            problems.push(format!("duplicate instance {key:?}"));
        }
    }
    for (key, status) in want {
        match got.get(key) {
            None => problems.push(format!("pass {} {}: missing", key.0, key.1)),
            Some(r) if str_of(r, "status") != *status => problems.push(format!(
                "pass {} {}: want {status}, got {}",
                key.0,
                key.1,
                describe(r)
            )),
            Some(_) => {}
        }
    }
    for key in got.keys().filter(|k| !want.contains_key(*k)) {
        problems.push(format!("pass {} {}: unexpected instance", key.0, key.1));
    }
    if run.code != Some(0) {
        problems.push(format!("exit {:?}, want 0", run.code));
    }
    // Compliance rate = PASS ÷ (PASS + FAIL + INCONCLUSIVE); FAIL splits BLOCKING/SIGNIFICANT.
    let count = |k: &str| json["summary"][k].as_f64().unwrap_or(f64::NAN);
    let (pass, fail, inc) = (count("pass"), count("fail"), count("inconclusive"));
    if fail != count("fail_blocking") + count("fail_significant") {
        problems.push(format!(
            "summary: fail != fail_blocking + fail_significant: {}",
            json["summary"]
        ));
    }
    if pass + fail + inc > 0.0
        && (count("compliance_rate") - pass / (pass + fail + inc)).abs() > 1e-9
    {
        problems.push(format!(
            "summary: compliance_rate is not PASS/(PASS+FAIL+INCONCLUSIVE): {}",
            json["summary"]
        ));
    }
    assert!(
        problems.is_empty(),
        "build `{build}`:\n  {}",
        problems.join("\n  ")
    );
    json
}

pub fn clean_build_passes_everything() {
    let want = table(
        |_, c| if c == "OBS-18" { "SKIP" } else { "PASS" },
        |_| "SKIP",
    );
    let json = assert_table("clean", &want);
    assert_eq!(json["complete"], Value::Bool(true));
    assert_eq!(json["verdict"], "SHIP");
    assert_eq!(json["final"], Value::Bool(false));
    assert_eq!(json["protocol"]["id"], "d10");
    assert_eq!(json["summary"]["fail"], 0);
}

pub fn clean_refine_build_passes_everything() {
    let want = table(
        |_, c| if c == "OBS-18" { "SKIP" } else { "PASS" },
        |_| "PASS",
    );
    let json = assert_table("clean-refine", &want);
    assert_eq!(json["complete"], Value::Bool(true));
    assert_eq!(
        json["verdict"], "SHIP",
        "the REFINE weaver's SHIP supersedes the main REFINE"
    );
    assert_eq!(json["summary"]["fail"], 0);
}

pub fn in_progress_build_waits() {
    let want = table(
        |pass, c| match (pass, c) {
            ("1", "OBS-18") => "SKIP",
            ("0" | "1", _) => "PASS",
            _ => "WAITING",
        },
        |_| "SKIP",
    );
    let json = assert_table("in-progress", &want);
    assert_eq!(json["complete"], Value::Bool(false));
    assert!(
        json["verdict"].is_null(),
        "no weaver yet: verdict {}",
        json["verdict"]
    );
    let mut problems = Vec::new();
    for r in results(&json) {
        let pass = str_of(r, "pass");
        let want_due = match pass {
            "0" | "1" => Some(true),
            "2" | "3" | "4" => Some(false),
            _ => None,
        };
        if let Some(d) = want_due {
            if r.get("due") != Some(&Value::Bool(d)) {
                problems.push(format!(
                    "pass {pass} {}: due {}, want {d}",
                    str_of(r, "check"),
                    r["due"]
                ));
            }
        }
    }
    let ran: BTreeMap<&str, bool> = json["passes"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|p| (str_of(p, "id"), p["ran"].as_bool().unwrap_or(false)))
                .collect()
        })
        .unwrap_or_default();
    for (id, want) in [
        ("0", true),
        ("1", true),
        ("2", true),
        ("3", false),
        ("4", false),
        ("R", false),
    ] {
        if ran.get(id) != Some(&want) {
            problems.push(format!("pass {id}: ran = {:?}, want {want}", ran.get(id)));
        }
    }
    assert!(
        problems.is_empty(),
        "build `in-progress`:\n  {}",
        problems.join("\n  ")
    );
}

/// Every build and case file parses and materialises (no referee needed).
pub fn fixtures_materialise() {
    let mut problems = Vec::new();
    let builds = fixtures_dir().join("builds");
    for e in std::fs::read_dir(&builds)
        .expect("fixtures/builds")
        .flatten()
    {
        let p = e.path();
        if p.extension().is_some_and(|x| x == "toml") {
            let name = p
                .file_stem()
                .unwrap_or_default()
                .to_string_lossy()
                .into_owned();
            let r = Build::named(&name).and_then(|b| {
                let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
                b.materialise(tmp.path()).map(|_| ())
            });
            if let Err(e) = r {
                problems.push(e);
            }
        }
    }
    for p in case::files() {
        let r = case::load(&p).and_then(|c| c.build()).and_then(|b| {
            let tmp = tempfile::tempdir().map_err(|e| e.to_string())?;
            b.materialise(tmp.path()).map(|_| ())
        });
        if let Err(e) = r {
            problems.push(e);
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// `REFEREE_MATERIALISE=builds/clean:/tmp/x` (or `cases/NAME:DIR`, or `cases/*:DIR` for every case,
/// each in `DIR/NAME/`) writes fixtures out for a look. DIR should be empty.
pub fn materialise() {
    let spec = std::env::var("REFEREE_MATERIALISE")
        .expect("set REFEREE_MATERIALISE=builds/NAME:DIR or cases/NAME:DIR");
    let (what, dir) = spec.split_once(':').expect("NAME:DIR");
    let write = |build: Result<Build, String>, dir: &Path| {
        let build = build.unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(dir).expect("create DIR");
        let out = build.materialise(dir).unwrap_or_else(|e| panic!("{e}"));
        eprintln!("materialised into {}", out.display());
    };
    match what.strip_prefix("cases/") {
        Some("*") => {
            for p in case::files() {
                write(
                    case::load(&p).and_then(|c| c.build()),
                    &Path::new(dir).join(case::name(&p)),
                );
            }
        }
        Some(c) => {
            let path = fixtures_dir()
                .join("cases")
                .join(format!("{}.toml", c.trim_end_matches(".toml")));
            write(case::load(&path).and_then(|c| c.build()), Path::new(dir));
        }
        None => write(
            Build::named(what.trim_start_matches("builds/")),
            Path::new(dir),
        ),
    }
}
