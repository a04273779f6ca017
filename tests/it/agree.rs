//! `verify` and `watch` judge alike: for every fixture case (`fixtures/cases/*.toml`), the
//! one-shot `referee verify DIR --final` and a `referee watch DIR` that finishes because the
//! pipeline's process is gone (`--exit-with` a process that exits once the referee has started,
//! so the run is judged as final) must give every check instance the same status.
//!
//! `verify` runs first, on the directory exactly as the case materialised it (verify writes
//! nothing); then `watch` runs on the same directory and its statuses are read from the `end`
//! event of `OBSERVER-EVENTS.jsonl`. A difference names the case, the check instance and both
//! statuses. Cases that cannot be compared are listed in [`EXCLUDED`] with the reason, and the
//! test fails if such a case no longer exists. `REFEREE_CASES=substr[,substr]` runs only the
//! matching cases, as in `cases`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;

use crate::builder::{fixtures_dir, Build, BuildDoc};

/// How long one `verify` or one `watch` may take before the case counts as hung.
const TIMEOUT: Duration = Duration::from_secs(30);

/// Cases whose `verify` and `watch` results are not comparable, with the reason. None so far:
/// the FIFO cases (`sec-fifo-*`) compare too, since both commands refuse to open a FIFO.
const EXCLUDED: &[(&str, &str)] = &[];

/// The case keys `cases` reads; only `args` matters here (the rest are expectations).
#[derive(Debug, Default, Deserialize)]
struct Keys {
    #[serde(default)]
    args: Vec<String>,
}

fn load(path: &Path) -> Result<(Vec<String>, Build), String> {
    let name = path
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{name}: {e}"))?;
    let mut table: toml::Table = text.parse().map_err(|e| format!("{name}: {e}"))?;
    let mut keys = toml::Table::new();
    for k in crate::cases::CASE_KEYS {
        if let Some(v) = table.remove(*k) {
            keys.insert((*k).to_string(), v);
        }
    }
    let keys: Keys = toml::Value::Table(keys)
        .try_into()
        .map_err(|e| format!("{name}: {e}"))?;
    let doc = BuildDoc::from_table(table, &name)?;
    Ok((keys.args, Build::from_doc(&doc)?))
}

fn case_files() -> Vec<PathBuf> {
    let dir = fixtures_dir().join("cases");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    files.sort();
    if let Ok(filter) = std::env::var("REFEREE_CASES") {
        let wanted: Vec<String> = filter
            .split(',')
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
            .collect();
        files.retain(|p| {
            let n = p.file_name().unwrap_or_default().to_string_lossy();
            wanted.iter().any(|w| n.contains(w.as_str()))
        });
    }
    files
}

fn stem(path: &Path) -> String {
    path.file_stem()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

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

/// Runs `cmd` to its end within [`TIMEOUT`], killing it otherwise. Returns (exit code, stdout,
/// stderr).
fn run(mut cmd: Command, what: &str, logs: &Path) -> Result<(Option<i32>, String, String), String> {
    let out = logs.join(format!("{what}.out"));
    let err = logs.join(format!("{what}.err"));
    let file = |p: &Path| std::fs::File::create(p).map_err(|e| format!("{}: {e}", p.display()));
    let mut child = cmd
        .stdin(Stdio::null())
        .stdout(file(&out)?)
        .stderr(file(&err)?)
        .spawn()
        .map_err(|e| format!("cannot run referee {what}: {e}"))?;
    let deadline = Instant::now() + TIMEOUT;
    let status = loop {
        if let Some(s) = child.try_wait().map_err(|e| e.to_string())? {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(format!("referee {what} did not finish within {TIMEOUT:?}"));
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let read = |p: &Path| std::fs::read_to_string(p).unwrap_or_default();
    Ok((status.code(), read(&out), read(&err)))
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
    let (args, build) = load(path)?;
    let tmp = tempfile::tempdir().map_err(|e| format!("tempdir: {e}"))?;
    let dir = build.materialise(tmp.path())?;
    let referee = assert_cmd::cargo::cargo_bin("referee");

    let mut verify = Command::new(&referee);
    verify
        .arg("verify")
        .arg(&dir)
        .args(["--format", "json", "--final"])
        .args(&args);
    let (code, out, err) = run(verify, "verify", tmp.path())?;
    let doc: Value = serde_json::from_str(&out)
        .map_err(|e| format!("verify (exit {code:?}) printed no JSON: {e}\n{err}"))?;
    let verified = statuses(&doc["results"])?;

    let (pid, ender) = pipeline(&dir)?;
    let mut watch = Command::new(&referee);
    watch
        .arg("watch")
        .arg(&dir)
        .args(["--exit-with", &pid.to_string()])
        .args(["--heartbeat", "0.5", "--quiet"])
        .args(&args);
    let ran = run(watch, "watch", tmp.path());
    let _ = ender.join();
    let (code, out, err) = ran?;
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

#[test]
fn verify_and_watch_agree_on_every_case() {
    let files = case_files();
    let names: Vec<String> = files.iter().map(|p| stem(p)).collect();
    if std::env::var("REFEREE_CASES").is_err() {
        assert!(!files.is_empty(), "no case files");
        for (case, _) in EXCLUDED {
            assert!(
                names.iter().any(|n| n == case),
                "excluded case `{case}` no longer exists: drop it from EXCLUDED"
            );
        }
    }
    let next = AtomicUsize::new(0);
    let compared = AtomicUsize::new(0);
    let problems: Mutex<Vec<String>> = Mutex::new(Vec::new());
    // Each case runs two processes; three at a time keeps a small machine responsive.
    std::thread::scope(|s| {
        for _ in 0..3 {
            s.spawn(|| loop {
                let i = next.fetch_add(1, Ordering::SeqCst);
                let Some(path) = files.get(i) else { break };
                let name = stem(path);
                if EXCLUDED.iter().any(|(c, _)| *c == name) {
                    continue;
                }
                let problem = match judge(path) {
                    Ok((verify, watch)) => {
                        compared.fetch_add(1, Ordering::SeqCst);
                        let diff = differences(&verify, &watch);
                        (!diff.is_empty()).then(|| format!("{name}:\n    {}", diff.join("\n    ")))
                    }
                    Err(e) => Some(format!("{name}: not compared: {e}")),
                };
                if let Some(p) = problem {
                    problems.lock().unwrap_or_else(|e| e.into_inner()).push(p);
                }
            });
        }
    });
    let mut problems = problems.into_inner().unwrap_or_else(|e| e.into_inner());
    problems.sort();
    println!(
        "verify and watch compared on {} of {} cases ({} excluded)",
        compared.load(Ordering::SeqCst),
        files.len(),
        EXCLUDED.len()
    );
    assert!(
        problems.is_empty(),
        "verify --final and a watch judged as final disagree on {} cases:\n  {}",
        problems.len(),
        problems.join("\n  ")
    );
}
