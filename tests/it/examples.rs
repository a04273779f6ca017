//! The integrations under `examples/`, each checked as far as this machine can:
//!
//! - the two orchestrators (`orchestrator.sh`, `orchestrator.py`) run for real, as bash and
//!   python3 processes driving the referee binary against the demo timeline (a hand-entered gate
//!   result raises STOP in Phase 3A): they halt at the STOP, go on once a re-run clears it, halt
//!   for good when no re-run is allowed, and halt loudly when no referee lives;
//! - the shell script is linted by `shellcheck` and the systemd unit by `systemd-analyze verify`
//!   when those commands are installed (elsewhere the test says so and checks nothing more;
//!   under CI a missing one is a failure, and `.ci/run` installs them);
//! - the Dockerfile, the GitHub workflow and the Kubernetes manifest are read and their structure
//!   asserted (no container engine, runner or cluster here).

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use serde_json::{Map, Value};

use crate::watch::{events, payloads, read, STOP};

fn examples() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples")
}

fn referee() -> &'static str {
    env!("CARGO_BIN_EXE_referee")
}

/// Whether `cmd` runs here (`cmd --version` starts); under CI a missing one is a failure.
#[track_caller]
fn installed(cmd: &str, install: &str, skipped: &str) -> bool {
    crate::util::tool(cmd, install, skipped)
}

// ---------------------------------------------------------------------------------------------
// The orchestrators

#[derive(Debug, Clone, Copy)]
enum Script {
    Bash,
    Python,
}

/// One orchestrator run: its exit code and what it printed.
#[derive(Debug)]
struct Run {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Run {
    fn context(&self, dir: &Path) -> String {
        let listing: Vec<String> = fs::read_dir(dir)
            .map(|d| {
                d.filter_map(Result::ok)
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        format!(
            "exit {:?}\n--- stdout\n{}\n--- stderr\n{}\n--- {}: {listing:?}",
            self.code,
            self.stdout,
            self.stderr,
            dir.display()
        )
    }

    /// The orchestrator's own lines (`orchestrator: ...`), without the STOP it quotes.
    fn lines(&self) -> Vec<&str> {
        self.stdout
            .lines()
            .filter_map(|l| l.strip_prefix("orchestrator: "))
            .collect()
    }

    /// Asserts that these lines (each a prefix) come in this order, with no `forbidden` line at
    /// all.
    #[track_caller]
    fn said_in_order(&self, dir: &Path, wanted: &[&str]) {
        let lines = self.lines();
        let mut at = 0;
        for w in wanted {
            match lines[at..].iter().position(|l| l.starts_with(w)) {
                Some(i) => at += i + 1,
                None => panic!("no `{w}` after line {at}\n{}", self.context(dir)),
            }
        }
    }

    #[track_caller]
    fn never_said(&self, dir: &Path, what: &str) {
        assert!(
            !self.lines().iter().any(|l| l.starts_with(what)),
            "the orchestrator said `{what}`\n{}",
            self.context(dir)
        );
    }
}

/// Runs an orchestrator example on `dir` with the referee binary under test. The heartbeat is
/// short so the runs are quick; the timeout only guards against a hang (killing the orchestrator
/// ends its referee too: `--exit-with`).
fn orchestrate(script: Script, dir: &Path, env: &[(&str, &str)]) -> Run {
    let dir_ = examples().join("orchestrator");
    let mut cmd = match script {
        Script::Bash => {
            let mut c = assert_cmd::Command::new("bash");
            c.arg(dir_.join("orchestrator.sh"));
            c
        }
        Script::Python => {
            assert!(
                installed(
                    "python3",
                    "apt-get install python3",
                    "examples/orchestrator/orchestrator.py"
                ),
                "python3 is needed to run examples/orchestrator/orchestrator.py"
            );
            let mut c = assert_cmd::Command::new("python3");
            c.arg(dir_.join("orchestrator.py"));
            c
        }
    };
    cmd.arg(dir)
        .env("REFEREE", referee())
        .env("XDG_STATE_HOME", crate::state_home())
        .env("REFEREE_HEARTBEAT", "0.5")
        .env("STOP_WAIT", "20")
        .env("FINISH_WAIT", "20")
        .env_remove("RERUNS")
        .env_remove("REFEREE_WATCH_ARGS")
        .env_remove("TIMELINE")
        .timeout(Duration::from_secs(180));
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("run the orchestrator");
    Run {
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The payload `event` of each event in the log, in order, with the pass of the pass runs
/// (`pass_run:3`).
fn event_names(dir: &Path) -> Vec<String> {
    events(dir)
        .iter()
        .map(|e| {
            let p = &e["payload"];
            let name = p["event"].as_str().unwrap_or("?").to_string();
            match p["pass"].as_str() {
                Some(pass) if name == "pass_run" => format!("{name}:{pass}"),
                _ => name,
            }
        })
        .collect()
}

fn end_event(dir: &Path, run: &Run) -> Value {
    let ends = payloads(dir, "end");
    assert_eq!(ends.len(), 1, "one end event\n{}", run.context(dir));
    ends[0].clone()
}

fn auditor_reports(dir: &Path) -> usize {
    fs::read_dir(dir)
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().starts_with("p3b-"))
        .count()
}

/// The demo run: the STOP at 3A → 3B halts the pipeline, the re-run of the gate runner clears
/// it, and the pipeline goes on to SHIP; the referee finishes by itself with exit 0.
fn obeys_the_stop_and_resumes_once_it_clears(script: Script) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("build");
    let run = orchestrate(script, &dir, &[]);
    assert_eq!(run.code, Some(0), "{}", run.context(&dir));
    run.said_in_order(
        &dir,
        &[
            "referee started",
            "phase 0 starts",
            "phase 3A done",
            "STOP at the transition 3A -> 3B",
            "re-running phase 3A",
            "STOP cleared after the re-run of phase 3A",
            "phase 3B starts",
            "phase 3C done",
            "pipeline complete; the referee exited 0",
        ],
    );
    run.never_said(&dir, "pipeline HALTED");
    // It quoted the STOP it obeyed.
    assert!(
        run.stdout.contains("OBS-27") && run.stdout.contains("GR-48 = PASS, source manual"),
        "{}",
        run.context(&dir)
    );

    // The referee's side: it raised the STOP once and lifted it before it saw a single file of
    // Phase 3B (pass 3 runs on the auditors' reports), then judged the complete run.
    let names = event_names(&dir);
    let at = |n: &str| names.iter().position(|x| x == n);
    assert_eq!(payloads(&dir, "stop_raised").len(), 1, "{names:?}");
    assert_eq!(payloads(&dir, "stop_raised")[0]["check"], "OBS-27");
    assert_eq!(payloads(&dir, "stop_resolved").len(), 1, "{names:?}");
    let resolved = at("stop_resolved").unwrap();
    assert!(at("stop_raised").unwrap() < resolved, "{names:?}");
    assert!(
        resolved < at("pass_run:3").expect("pass 3 ran"),
        "{names:?}"
    );
    let end = end_event(&dir, &run);
    assert_eq!(end["exit_code"], 0, "{end}");
    assert_eq!(end["verdict"], "SHIP", "{end}");
    assert_eq!(end["stop"], false, "{end}");

    assert!(!dir.join(STOP).exists(), "{}", run.context(&dir));
    for n in 0..=4 {
        assert!(
            dir.join(format!("OBSERVER-PASS-{n}.md")).is_file(),
            "pass {n}\n{}",
            run.context(&dir)
        );
    }
    assert!(read(&dir.join("OBSERVER-PASS-2.md")).contains("OBS-27: RESOLVED after STOP"));
    assert!(dir.join("OBSERVER-REPORT.md").is_file());
    assert_eq!(auditor_reports(&dir), 10, "{}", run.context(&dir));
    assert!(read(&dir.join("OBSERVER-HEARTBEAT.json")).contains("\"finished\""));
}

/// With no re-run allowed the STOP ends the pipeline there: nothing of Phase 3B is written, the
/// referee is ended (SIGTERM) and its report written before the orchestrator exits 1.
fn halts_at_a_stop_it_may_not_fix(script: Script) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("build");
    let run = orchestrate(script, &dir, &[("RERUNS", "0")]);
    assert_eq!(run.code, Some(1), "{}", run.context(&dir));
    run.said_in_order(
        &dir,
        &[
            "phase 3A done",
            "STOP at the transition 3A -> 3B",
            "pipeline HALTED at the STOP before phase 3B; the referee exited 1",
        ],
    );
    run.never_said(&dir, "re-running");
    run.never_said(&dir, "phase 3B starts");
    assert_eq!(auditor_reports(&dir), 0, "{}", run.context(&dir));

    assert!(
        read(&dir.join(STOP)).contains("OBS-27"),
        "{}",
        run.context(&dir)
    );
    assert_eq!(payloads(&dir, "stop_raised").len(), 1);
    assert_eq!(payloads(&dir, "stop_resolved").len(), 0);
    let end = end_event(&dir, &run);
    assert_eq!(end["reason"], "signal", "{end}");
    assert_eq!(end["exit_code"], 1, "{end}");
    assert_eq!(end["unresolved"], serde_json::json!(["2:OBS-27"]), "{end}");
    assert!(read(&dir.join("OBSERVER-REPORT.md")).contains("OBS-27"));
    assert!(!dir.join("OBSERVER-PASS-3.md").exists());
}

/// A referee that is gone (here: told to finish after 300 ms, before the pipeline is done)
/// stops the pipeline at the next transition with exit 3 and the reason `status` gave. (Should its end catch a phase's file
/// mid-write, the end judges the file as it stands and leaves a STOP: the pipeline halts at that
/// STOP with exit 1 instead — never goes on unwatched. The timing decides which; both are
/// checked.)
fn halts_loudly_without_a_live_referee(script: Script) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("build");
    let run = orchestrate(script, &dir, &[("REFEREE_WATCH_ARGS", "--timeout 300ms")]);
    run.never_said(&dir, "pipeline complete");
    assert!(!dir.join("p3c-weaver.md").exists(), "{}", run.context(&dir));
    assert_eq!(end_event(&dir, &run)["reason"], "timeout");
    if run.code == Some(1) && dir.join(STOP).exists() {
        assert!(
            run.stdout.contains("pipeline HALTED at the STOP"),
            "{}",
            run.context(&dir)
        );
        return;
    }
    assert_eq!(run.code, Some(3), "{}", run.context(&dir));
    assert!(
        run.stdout.contains("pipeline HALTED before phase")
            && run.stdout.contains("no live referee"),
        "{}",
        run.context(&dir)
    );
    assert!(
        run.stderr.contains("no live referee watches")
            && run.stderr.contains("nothing may run unwatched"),
        "{}",
        run.context(&dir)
    );
}

/// A referee that cannot start is a setup error (exit 2) before any phase runs.
fn refuses_to_run_without_a_referee(script: Script) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("build");
    let missing = tmp.path().join("no-such-referee");
    let run = orchestrate(
        script,
        &dir,
        &[("REFEREE", missing.to_str().expect("a UTF-8 temp path"))],
    );
    assert_eq!(run.code, Some(2), "{}", run.context(&dir));
    run.never_said(&dir, "phase 0 starts");
    assert!(
        run.stderr.contains("orchestrator: error:"),
        "{}",
        run.context(&dir)
    );
    assert_eq!(
        fs::read_dir(&dir).map_or(0, Iterator::count),
        0,
        "{}",
        run.context(&dir)
    );
}

#[test]
fn bash_orchestrator_obeys_the_stop_and_resumes_once_it_clears() {
    obeys_the_stop_and_resumes_once_it_clears(Script::Bash);
}

#[test]
fn python_orchestrator_obeys_the_stop_and_resumes_once_it_clears() {
    obeys_the_stop_and_resumes_once_it_clears(Script::Python);
}

#[test]
fn bash_orchestrator_halts_at_a_stop_it_may_not_fix() {
    halts_at_a_stop_it_may_not_fix(Script::Bash);
}

#[test]
fn python_orchestrator_halts_at_a_stop_it_may_not_fix() {
    halts_at_a_stop_it_may_not_fix(Script::Python);
}

#[test]
fn bash_orchestrator_halts_loudly_without_a_live_referee() {
    halts_loudly_without_a_live_referee(Script::Bash);
}

#[test]
fn python_orchestrator_halts_loudly_without_a_live_referee() {
    halts_loudly_without_a_live_referee(Script::Python);
}

#[test]
fn bash_orchestrator_refuses_to_run_without_a_referee() {
    refuses_to_run_without_a_referee(Script::Bash);
}

#[test]
fn python_orchestrator_refuses_to_run_without_a_referee() {
    refuses_to_run_without_a_referee(Script::Python);
}

/// `bash -n` everywhere; `shellcheck` where it is installed (always under CI).
#[test]
fn the_shell_orchestrator_is_clean() {
    let script = examples().join("orchestrator/orchestrator.sh");
    let syntax = Command::new("bash")
        .arg("-n")
        .arg(&script)
        .output()
        .unwrap();
    assert!(
        syntax.status.success(),
        "{}",
        String::from_utf8_lossy(&syntax.stderr)
    );
    if !installed(
        "shellcheck",
        "apt-get install shellcheck",
        "the lint of examples/orchestrator/orchestrator.sh",
    ) {
        return;
    }
    let out = Command::new("shellcheck").arg(&script).output().unwrap();
    assert!(
        out.status.success(),
        "shellcheck:\n{}",
        String::from_utf8_lossy(&out.stdout)
    );
}

// ---------------------------------------------------------------------------------------------
// systemd

/// `systemd-analyze verify` on an instance of the template, where it is installed. It needs the
/// ExecStart binary to exist, so a copy of the unit points at the binary under test.
#[test]
fn the_systemd_unit_verifies() {
    let unit = read(&examples().join("systemd/referee@.service"));
    assert!(unit.contains("ExecStart=/usr/local/bin/referee watch %f"));
    assert!(unit.contains("PrivateNetwork=yes") && unit.contains("ReadWritePaths=%f"));
    the_systemd_unit_runs_the_referee_as_its_own_user(&unit);
    if !installed(
        "systemd-analyze",
        "apt-get install systemd",
        "the check of examples/systemd/referee@.service",
    ) {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    fs::write(
        tmp.path().join("referee@.service"),
        unit.replace("/usr/local/bin/referee", referee()),
    )
    .unwrap();
    // The instance is an escaped path (`systemd-escape --path`): `-` separates, `\x2d` is a dash.
    let instance = tmp.path().join(r"referee@srv-pipelines-run\x2d42.service");
    let out = Command::new("systemd-analyze")
        .arg("verify")
        .arg(&instance)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "systemd-analyze verify:\n{stderr}");
    // An unknown or malformed setting is only a warning ("ignoring"): none is allowed.
    assert!(
        !stderr.contains("referee@"),
        "systemd-analyze verify warned:\n{stderr}"
    );
}

/// Every `Key=Value` of a unit's `[Service]` section, in order.
fn service_settings(unit: &str) -> Vec<(String, String)> {
    let mut in_service = false;
    let mut out = Vec::new();
    for line in unit.lines().map(str::trim) {
        if line.starts_with('[') {
            in_service = line == "[Service]";
        } else if in_service && !line.starts_with('#') {
            if let Some((k, v)) = line.split_once('=') {
                out.push((k.to_string(), v.to_string()));
            }
        }
    }
    out
}

/// The deployment docs/deployment.md describes: a user of the referee's own (not
/// `DynamicUser=`, whose 0700 `/var/lib/private` no orchestrator could read), its group the
/// readers group, its state directory made by systemd readable by that group and by nobody else
/// and found where the referee looks for it, the watched directory writable for its copies.
fn the_systemd_unit_runs_the_referee_as_its_own_user(unit: &str) {
    let settings = service_settings(unit);
    let get = |key: &str| -> Vec<&str> {
        settings
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    };
    let user = get("User");
    assert_eq!(user, ["referee"], "a user of its own: {settings:?}");
    assert!(
        get("DynamicUser").iter().all(|v| *v == "no"),
        "DynamicUser's state is 0700 under /var/lib/private: no orchestrator could read it"
    );
    assert_eq!(
        get("Group"),
        ["referee-readers"],
        "the readers group owns the state"
    );
    assert!(
        !get("SupplementaryGroups").is_empty(),
        "a group that may write the watched directory"
    );
    assert_eq!(get("StateDirectory"), ["referee"]);
    let mode = get("StateDirectoryMode");
    let mode = u32::from_str_radix(mode.first().expect("StateDirectoryMode"), 8).expect("octal");
    assert_eq!(
        mode & 0o077,
        0o050,
        "group r-x, nothing for others: {mode:o}"
    );
    assert_ne!(
        mode & 0o2000,
        0,
        "set-group-ID: the state directories made in it are readable by its group: {mode:o}"
    );
    // The referee's default state base is $XDG_STATE_HOME/referee: /var/lib/referee, the
    // StateDirectory=, which ProtectSystem=strict leaves writable.
    assert!(
        get("Environment").contains(&"XDG_STATE_HOME=/var/lib"),
        "{settings:?}"
    );
    assert_eq!(get("ProtectSystem"), ["strict"]);
    assert_eq!(get("ReadWritePaths"), ["%f"]);
    let exec = get("ExecStart");
    assert!(
        exec.len() == 1 && exec[0].contains("--protocol ${REFEREE_PROTOCOL}"),
        "{exec:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// Dockerfile

/// A Dockerfile's instructions: continuation lines joined, comments and blank lines dropped,
/// each as (INSTRUCTION, rest).
fn dockerfile(text: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut current = String::new();
    for line in text.lines() {
        let t = line.trim();
        if current.is_empty() && (t.is_empty() || t.starts_with('#')) {
            continue;
        }
        if let Some(body) = t.strip_suffix('\\') {
            current.push_str(body);
            current.push(' ');
            continue;
        }
        current.push_str(t);
        let (word, rest) = current.split_once(' ').unwrap_or((&current, ""));
        out.push((word.to_uppercase(), rest.trim().to_string()));
        current.clear();
    }
    out
}

/// Multi-stage (a named build stage, a runtime stage that copies the binary from it), runs as a
/// non-root user, and copies from the context exactly what exists and what `cargo build` reads.
#[test]
fn the_dockerfile_is_multi_stage_and_runs_as_non_root() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let ins = dockerfile(&read(&examples().join("docker/Dockerfile")));
    let stages: Vec<usize> = ins
        .iter()
        .enumerate()
        .filter(|(_, (i, _))| i == "FROM")
        .map(|(n, _)| n)
        .collect();
    assert_eq!(stages.len(), 2, "two stages: {ins:?}");
    let build_from = &ins[stages[0]].1;
    let build = build_from
        .split_whitespace()
        .skip_while(|w| !w.eq_ignore_ascii_case("as"))
        .nth(1)
        .expect("the build stage is named");
    let (build_stage, runtime) = ins.split_at(stages[1]);

    // The build stage copies from the context; each source exists, and together they are what
    // `cargo build` reads (the manifest, its targets, the embedded protocols and fixtures).
    let mut copied = Vec::new();
    for (i, rest) in build_stage {
        if i == "COPY" {
            assert!(!rest.starts_with("--from"), "{rest}");
            let words: Vec<&str> = rest.split_whitespace().collect();
            for src in &words[..words.len() - 1] {
                assert!(root.join(src).exists(), "COPY {src}: no such path");
                copied.push(src.trim_end_matches('/').to_string());
            }
        }
    }
    for needed in [
        "Cargo.toml",
        "Cargo.lock",
        "src",
        "protocols",
        "fixtures",
        "benches",
        "tests",
    ] {
        assert!(copied.iter().any(|c| c == needed), "{needed} is not copied");
    }
    assert!(build_stage
        .iter()
        .any(|(i, r)| i == "RUN" && r.contains("cargo build --release --locked")));

    // The runtime stage: the binary from the build stage, a non-root user, the referee as the
    // entry point.
    let copy_from = format!("--from={build} ");
    assert!(
        runtime
            .iter()
            .any(|(i, r)| i == "COPY" && r.starts_with(&copy_from) && r.ends_with("/referee")),
        "{runtime:?}"
    );
    let users: Vec<&String> = runtime
        .iter()
        .filter(|(i, _)| i == "USER")
        .map(|(_, r)| r)
        .collect();
    let user = users.last().expect("the runtime stage sets USER");
    let name = user.split(':').next().unwrap();
    assert!(!["root", "0", ""].contains(&name), "USER {user} is root");
    assert!(runtime
        .iter()
        .any(|(i, r)| i == "ENTRYPOINT" && r.contains("referee")));

    // BuildKit's Dockerfile-specific ignore file keeps `target/` out of the context.
    let ignore = read(&examples().join("docker/Dockerfile.dockerignore"));
    assert!(ignore.lines().any(|l| l.trim() == "target"));
}

// ---------------------------------------------------------------------------------------------
// YAML (the workflow and the manifest)

/// Reads YAML into a JSON value with `saphyr-parser` (YAML 1.2: `on` stays a string, as GitHub
/// reads it). Every scalar is a string; one document.
fn yaml(text: &str) -> Value {
    use saphyr_parser::{Event, Parser};
    enum Open {
        Seq(Vec<Value>),
        Map(Map<String, Value>, Option<String>),
    }
    fn add(stack: &mut [Open], done: &mut Option<Value>, v: Value) {
        match stack.last_mut() {
            Some(Open::Seq(items)) => items.push(v),
            Some(Open::Map(map, key)) => match key.take() {
                Some(k) => {
                    map.insert(k, v);
                }
                None => match v {
                    Value::String(k) => *key = Some(k),
                    other => panic!("a non-scalar mapping key: {other}"),
                },
            },
            None => *done = Some(v),
        }
    }
    let mut stack: Vec<Open> = Vec::new();
    let mut done = None;
    for ev in Parser::new_from_str(text) {
        let (ev, span) = ev.unwrap_or_else(|e| panic!("invalid YAML: {e}"));
        match ev {
            Event::Scalar(s, ..) => add(&mut stack, &mut done, Value::String(s.into_owned())),
            Event::SequenceStart(..) => stack.push(Open::Seq(Vec::new())),
            Event::MappingStart(..) => stack.push(Open::Map(Map::new(), None)),
            Event::SequenceEnd | Event::MappingEnd => {
                let v = match stack.pop() {
                    Some(Open::Seq(items)) => Value::Array(items),
                    Some(Open::Map(map, _)) => Value::Object(map),
                    None => unreachable!("an end without a start"),
                };
                add(&mut stack, &mut done, v);
            }
            Event::Alias(_) => panic!("an alias at {span:?}: not used in the examples"),
            _ => {}
        }
    }
    done.expect("a YAML document")
}

fn s(v: &Value) -> &str {
    v.as_str().unwrap_or_default()
}

#[test]
fn the_yaml_reader_reads_what_the_examples_use() {
    let v = yaml(
        "on:\n  push:\n    branches: [main]\nlist:\n  - a: 1\n    b: \"two\"\n  - c\nempty: {}\n",
    );
    assert_eq!(
        v,
        serde_json::json!({
            "on": {"push": {"branches": ["main"]}},
            "list": [{"a": "1", "b": "two"}, "c"],
            "empty": {},
        })
    );
}

/// The workflow runs `referee verify --format sarif` into a file, uploads that file with
/// `upload-sarif` even when a check failed (exit 1), and fails the job afterwards.
#[test]
fn the_github_workflow_verifies_and_uploads_sarif() {
    let wf = yaml(&read(&examples().join("github/referee.yml")));
    for trigger in ["push", "pull_request"] {
        assert!(wf["on"].get(trigger).is_some(), "on: {}", wf["on"]);
    }
    assert_eq!(wf["permissions"]["security-events"], "write");
    let jobs = wf["jobs"].as_object().expect("jobs");
    assert_eq!(jobs.len(), 1);
    let job = jobs.values().next().unwrap();
    assert!(s(&job["runs-on"]).starts_with("ubuntu"));
    let steps = job["steps"].as_array().expect("steps");

    let verify = steps
        .iter()
        .position(|st| s(&st["run"]).contains("referee verify"))
        .expect("a step runs referee verify");
    let run = s(&steps[verify]["run"]);
    assert!(run.contains("--format sarif"), "{run}");
    let sarif = run
        .split_once("> ")
        .map(|(_, f)| f.split_whitespace().next().unwrap_or_default())
        .expect("the SARIF goes to a file");
    assert!(sarif.ends_with(".sarif"), "{sarif}");
    // Exit 1 (a failing check) must not stop the job before the upload.
    assert!(run.starts_with("set +e"), "{run}");
    let id = s(&steps[verify]["id"]);
    assert!(!id.is_empty(), "the verify step has an id");

    let upload = steps
        .iter()
        .position(|st| s(&st["uses"]).starts_with("github/codeql-action/upload-sarif@"))
        .expect("a step uploads the SARIF");
    assert!(upload > verify);
    assert_eq!(steps[upload]["with"]["sarif_file"], sarif);
    let cond = s(&steps[upload]["if"]);
    assert!(
        cond.contains("!cancelled()") || cond.contains("always()"),
        "the upload runs after a failing verify: if: {cond}"
    );
    // The last step fails the job on the exit code the verify step kept.
    let last = steps.last().unwrap();
    assert!(
        serde_json::to_string(last)
            .unwrap()
            .contains(&format!("steps.{id}.outputs.code")),
        "{last}"
    );
    assert!(s(&last["run"]).contains("exit 1"), "{last}");
}

// ---------------------------------------------------------------------------------------------
// Kubernetes

/// Whether a container (or its pod) says: not root, a read-only root file system, no privilege
/// escalation.
fn locked_down(pod: &Value, c: &Value) -> Result<(), String> {
    let sc = &c["securityContext"];
    let non_root = sc["runAsNonRoot"] == "true" || pod["securityContext"]["runAsNonRoot"] == "true";
    let uid = sc["runAsUser"]
        .as_str()
        .or(pod["securityContext"]["runAsUser"].as_str());
    match () {
        () if !non_root => Err("runAsNonRoot is not true".into()),
        () if uid == Some("0") => Err("runAsUser 0".into()),
        () if sc["readOnlyRootFilesystem"] != "true" => Err("readOnlyRootFilesystem".into()),
        () if sc["allowPrivilegeEscalation"] != "false" => Err("allowPrivilegeEscalation".into()),
        () if !sc["capabilities"]["drop"]
            .as_array()
            .is_some_and(|d| d.iter().any(|x| x == "ALL")) =>
        {
            Err("capabilities are not all dropped".into())
        }
        () => Ok(()),
    }
}

/// The pipeline and the referee share the build volume at the same path, the referee watches it
/// (started first: a native sidecar), the pipeline can see the referee's pid (for
/// `status --require-live`), and both run locked down.
#[test]
fn the_kubernetes_sidecar_shares_the_build_volume() {
    let m = yaml(&read(&examples().join("kubernetes/referee-sidecar.yaml")));
    assert_eq!(m["kind"], "Job");
    let pod = &m["spec"]["template"]["spec"];
    assert_eq!(pod["shareProcessNamespace"], "true");
    let uid = s(&pod["securityContext"]["runAsUser"]);
    assert!(!uid.is_empty() && uid != "0", "pod runAsUser {uid}");

    let init = pod["initContainers"].as_array().expect("initContainers");
    let referee = init
        .iter()
        .find(|c| c["name"] == "referee")
        .expect("the referee container");
    assert_eq!(
        referee["restartPolicy"], "Always",
        "a native sidecar: up before the pipeline, stopped after it"
    );
    let containers = pod["containers"].as_array().expect("containers");
    assert_eq!(
        containers.len(),
        1,
        "the pipeline is the one main container"
    );
    let pipeline = &containers[0];

    let mount = |c: &Value, volume: &str| -> Option<String> {
        c["volumeMounts"]
            .as_array()?
            .iter()
            .find(|m| m["name"] == volume)
            .map(|m| s(&m["mountPath"]).to_string())
    };
    let read_only = |c: &Value, volume: &str| -> bool {
        c["volumeMounts"]
            .as_array()
            .and_then(|ms| ms.iter().find(|m| m["name"] == volume))
            .is_some_and(|m| m["readOnly"] == "true")
    };
    let volumes = pod["volumes"].as_array().expect("volumes");
    let shared: Vec<&str> = volumes
        .iter()
        .map(|v| s(&v["name"]))
        .filter(|v| {
            mount(referee, v).is_some()
                && mount(pipeline, v).is_some()
                && !read_only(referee, v)
                && !read_only(pipeline, v)
        })
        .collect();
    assert_eq!(
        shared.len(),
        1,
        "one volume both containers write: {shared:?}"
    );
    let path = mount(referee, shared[0]).unwrap();
    assert_eq!(mount(pipeline, shared[0]).as_deref(), Some(path.as_str()));

    let args: Vec<&str> = referee["args"]
        .as_array()
        .expect("the referee's args")
        .iter()
        .map(s)
        .collect();
    assert_eq!(args.first(), Some(&"watch"), "{args:?}");
    assert!(args.contains(&path.as_str()), "it watches {path}: {args:?}");

    for c in [referee, pipeline] {
        if let Err(why) = locked_down(pod, c) {
            panic!("container {}: {why}", c["name"]);
        }
    }

    // The referee as its own user: not the pipeline's, its state out of the pipeline's reach.
    let uid = |c: &Value| {
        c["securityContext"]["runAsUser"]
            .as_str()
            .or(pod["securityContext"]["runAsUser"].as_str())
            .unwrap_or_default()
            .to_string()
    };
    assert_ne!(
        uid(referee),
        uid(pipeline),
        "the referee runs as the pipeline's user"
    );
    assert!(
        !s(&pod["securityContext"]["fsGroup"]).is_empty(),
        "an fsGroup: the build volume writable, the state readable, for both"
    );
    let state_at = args
        .iter()
        .position(|a| *a == "--state-dir")
        .and_then(|i| args.get(i + 1))
        .expect("the referee's --state-dir");
    let state_volume = volumes
        .iter()
        .map(|v| s(&v["name"]))
        .find(|v| mount(referee, v).is_some_and(|m| state_at.starts_with(&format!("{m}/"))))
        .expect("--state-dir is on a volume the referee mounts");
    assert!(
        !read_only(referee, state_volume),
        "the referee writes its state"
    );
    assert_ne!(
        state_volume, shared[0],
        "the state is not on the build volume"
    );
    assert!(
        mount(pipeline, state_volume).is_none() || read_only(pipeline, state_volume),
        "the pipeline may read the referee's state, never write it"
    );
}

/// A run halted at a STOP, its build directory emptied (`rm -rf build/*`, the referee's own
/// files too), and the pipeline started again as the example starts it: the second run is a
/// new run and goes to SHIP. The first run's STOP, which `status` reports until the new referee
/// has looked, is not taken for the new referee's answer.
fn a_second_run_after_a_halted_one_ships(script: Script) {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("build");
    let first = orchestrate(script, &dir, &[("RERUNS", "0")]);
    assert_eq!(first.code, Some(1), "{}", first.context(&dir));
    for e in fs::read_dir(&dir).unwrap().flatten() {
        let p = e.path();
        if p.is_dir() {
            fs::remove_dir_all(&p).unwrap();
        } else {
            fs::remove_file(&p).unwrap();
        }
    }
    let second = orchestrate(script, &dir, &[]);
    assert_eq!(second.code, Some(0), "{}", second.context(&dir));
    second.said_in_order(
        &dir,
        &[
            "referee started",
            "phase 0 starts",
            "STOP cleared after the re-run of phase 3A",
            "pipeline complete; the referee exited 0",
        ],
    );
    assert!(
        second.stderr.contains("a new run"),
        "{}",
        second.context(&dir)
    );
}

#[test]
fn bash_orchestrator_second_run_after_a_halted_one_ships() {
    a_second_run_after_a_halted_one_ships(Script::Bash);
}

#[test]
fn python_orchestrator_second_run_after_a_halted_one_ships() {
    a_second_run_after_a_halted_one_ships(Script::Python);
}
