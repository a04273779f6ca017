//! `agree::CASE`: `verify` and `watch` judge alike. For a fixture case (`fixtures/cases/*.toml`),
//! the one-shot `referee verify DIR --final` and a `referee watch DIR` that finishes because the
//! pipeline's process is gone (`--exit-with` a process that exits once the referee has started,
//! so the run is judged as final) must give every check instance the same status.
//!
//! `verify` runs first, on the directory exactly as the case materialised it (verify writes
//! nothing); then `watch` runs on the same directory and its statuses are read from the `end`
//! event of `OBSERVER-EVENTS.jsonl`. A difference names the check instance and both statuses.
//! Cases that cannot be compared are listed in [`EXCLUDED`] with the reason (their trials are
//! ignored), and `agree::excluded_cases_exist` fails if such a case no longer exists.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::case;
use crate::util::{Output, TestCommand};

/// How long one `verify` or one `watch` may take before the case counts as hung.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Cases whose `verify` and `watch` results are not comparable, with the reason. None so far:
/// the FIFO cases (`sec-fifo-*`) compare too, since both commands refuse to open a FIFO.
const EXCLUDED: &[(&str, &str)] = &[];

/// `pass:check → status`.
type Statuses = BTreeMap<String, String>;

/// `pass:check → status` from a list of results.
fn statuses(results: &Value) -> Result<Statuses, String> {
    let list = results.as_array().ok_or("no `results` array")?;
    Ok(list
        .iter()
        .map(|r| {
            let s = |k: &str| r[k].as_str().unwrap_or("?").to_string();
            (format!("{}:{}", s("pass"), s("check")), s("status"))
        })
        .collect())
}

/// Runs `cmd` to its end within [`TIMEOUT`], killing it otherwise.
fn run(cmd: &mut TestCommand, what: &str) -> Result<Output, String> {
    let out = cmd.timeout(TIMEOUT).output();
    if out.timed_out() {
        return Err(format!(
            "referee {what} did not finish within {TIMEOUT:?}\n{out}"
        ));
    }
    Ok(out)
}

/// A stand-in for the pipeline's process: it runs until the referee watching `dir` has started
/// (its heartbeat exists, so `--exit-with` found it alive), then exits; the referee then judges
/// the run as final. Joined after the referee has finished.
fn pipeline(dir: &Path) -> Result<(u32, std::thread::JoinHandle<()>), String> {
    let mut child = Command::new("sleep")
        .arg("60")
        .stdin(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot run `sleep`: {e}"))?;
    let pid = child.id();
    let heartbeat = dir.join("OBSERVER-HEARTBEAT.json");
    let ender = std::thread::spawn(move || {
        let deadline = Instant::now() + TIMEOUT;
        while !heartbeat.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = child.kill();
        let _ = child.wait();
    });
    Ok((pid, ender))
}

/// Both sides' statuses for one case, or why they could not be had.
fn judge(path: &Path) -> Result<(Statuses, Statuses), String> {
    let case = case::load(path)?;
    let build = case.build()?;
    let args = case.keys.args;
    let tmp = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let dir = build.materialise(tmp.path())?;
    let mut verify = TestCommand::new();
    verify
        .arg("verify")
        .arg(&dir)
        .args(["--format", "json", "--final"])
        .args(&args);
    let out = run(&mut verify, "verify")?;
    let (code, out, err) = (out.status.code(), out.stdout, out.stderr);
    let doc: Value = serde_json::from_str(&out)
        .map_err(|e| format!("verify (exit {code:?}) printed no JSON: {e}\n{err}"))?;
    let verified = statuses(&doc["results"])?;

    let (pid, ender) = pipeline(&dir)?;
    let mut watch = TestCommand::new();
    watch
        .arg("watch")
        .arg(&dir)
        .args(["--exit-with", &pid.to_string()])
        .args(["--heartbeat", "0.5", "--quiet"])
        .args(&args);
    let ran = run(&mut watch, "watch");
    let _ = ender.join();
    let ran = ran?;
    let (code, out, err) = (ran.status.code(), ran.stdout, ran.stderr);
    let log = std::fs::read_to_string(dir.join("OBSERVER-EVENTS.jsonl")).unwrap_or_default();
    let end = log
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| e["payload"].clone())
        .find(|p| p["event"] == "end")
        .ok_or_else(|| {
            format!("watch (exit {code:?}) wrote no `end` event\nstdout: {out}\nstderr: {err}")
        })?;
    // The pipeline's exit ends the run as final. A case whose run is complete (the weaver's
    // verdict is in) may end by completion first, which also makes every check due.
    let final_ = end["final"] == Value::Bool(true) && end["reason"] == "exit_with";
    let complete = end["reason"] == "complete" && end["complete"] == Value::Bool(true);
    if !final_ && !complete {
        return Err(format!(
            "watch ended neither as final nor complete: final = {}, reason = {}",
            end["final"], end["reason"]
        ));
    }
    let watched = statuses(&end["results"])?;
    // Thirty checks, some in two passes: an empty or truncated list must not agree vacuously.
    if verified.len() < 30 || watched.len() < 30 {
        return Err(format!(
            "too few results: verify {}, watch {}",
            verified.len(),
            watched.len()
        ));
    }
    Ok((verified, watched))
}

/// The differences between the two sides, one line per check instance.
fn differences(verify: &Statuses, watch: &Statuses) -> Vec<String> {
    let none = "(absent)".to_string();
    verify
        .keys()
        .chain(watch.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .filter_map(|k| {
            let (v, w) = (
                verify.get(k).unwrap_or(&none),
                watch.get(k).unwrap_or(&none),
            );
            (v != w).then(|| format!("{k}: verify {v}, watch {w}"))
        })
        .collect()
}

/// Why a case is not compared, if it is in [`EXCLUDED`].
pub fn excluded(name: &str) -> Option<&'static str> {
    EXCLUDED
        .iter()
        .find(|(case, _)| *case == name)
        .map(|(_, why)| *why)
}

/// Every case in [`EXCLUDED`] still exists (an exclusion outliving its case hides nothing, but it
/// is stale).
pub fn excluded_cases_exist() -> Result<(), String> {
    let names: Vec<String> = case::files().iter().map(|p| case::name(p)).collect();
    let stale: Vec<&str> = EXCLUDED
        .iter()
        .map(|(case, _)| *case)
        .filter(|case| !names.iter().any(|n| n == case))
        .collect();
    if stale.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "excluded cases no longer exist: drop them from EXCLUDED: {}",
            stale.join(", ")
        ))
    }
}

/// `verify --final` and a `watch` judged as final give every check instance the same status.
pub fn check(path: &Path) -> Result<(), String> {
    let (verify, watch) = judge(path).map_err(|e| format!("not compared: {e}"))?;
    let diff = differences(&verify, &watch);
    if diff.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "verify --final and a watch judged as final disagree:\n    {}",
            diff.join("\n    ")
        ))
    }
}
