//! A team's own rules without forking the protocol (issue 18 §3), end to end on real git
//! workspaces and a real `watch` process: `--protect GLOB` makes a change to the team's path a
//! CC-01 REJECT (and a STOP, live); `--vars FILE` inside the workspace is refused before
//! anything is judged; `--set` names the variables it knows; the overrides change the protocol
//! SHA that `status --expect-protocol` pins; `referee init` suggests the repository's paths and
//! never writes inside it.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::code_change::{git, git_workspace, judged, record, start, stop, verdict, APP, ORIGINAL};
use crate::util::Output;
use crate::watch::{exit_code, payloads, read, run, WAIT};

const DEPLOY: &str = "ci/deploy.sh";
const DEPLOY_V1: &str = "#!/bin/sh\necho deploy\n";

/// A git workspace with `ci/deploy.sh` committed, then a worker's attempt that edits it (and
/// `src/app.py`), recorded as task `t1` attempt 1.
fn edited_deploy() -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let (root, ws, logs) = git_workspace();
    fs::create_dir_all(ws.join("ci")).expect("mkdir");
    fs::write(ws.join(DEPLOY), DEPLOY_V1).expect("write");
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-q", "-m", "ci"]);
    fs::write(ws.join(DEPLOY), "#!/bin/sh\necho deploy --skip-tests\n").expect("write");
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    record(
        &ws,
        "t1",
        1,
        &[APP, DEPLOY],
        &BTreeMap::from([(APP, ORIGINAL), (DEPLOY, DEPLOY_V1)]),
    );
    (root, ws, logs)
}

/// CC-01's result in a verdict.
fn cc01(v: &Value) -> Value {
    v["results"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["check"] == "CC-01"))
        .cloned()
        .unwrap_or(Value::Null)
}

fn verify(ws: &Path, extra: &[&str]) -> Output {
    let mut args = vec![
        "verify",
        ws.to_str().expect("utf-8"),
        "--protocol",
        "code-change",
    ];
    args.extend_from_slice(extra);
    run(&args)
}

fn hash(extra: &[&str]) -> String {
    let mut args = vec!["protocol", "hash", "code-change"];
    args.extend_from_slice(extra);
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&args);
    assert_eq!(code, 0, "{err}");
    let sha = out.trim().to_string();
    assert_eq!(sha.len(), 64, "{out}");
    sha
}

#[test]
fn one_flag_protects_a_teams_path() {
    let (_root, ws, _logs) = edited_deploy();

    // Without the flag, ci/ is nobody's business: CC-01 passes.
    let Output {
        code, stderr: err, ..
    } = verify(&ws, &["--write"]);
    assert!(code == 0 || code == 1, "{err}");
    let v = verdict(&ws, "t1");
    assert_eq!(cc01(&v)["status"], "PASS", "{v}");
    assert_ne!(v["verdict"], "REJECT", "{v}");

    // With it: CC-01 FAIL naming the file, REJECT, exit 1.
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = verify(&ws, &["--protect", "ci/**", "--write"]);
    assert_eq!(code, 1, "{out}{err}");
    let v = verdict(&ws, "t1");
    assert_eq!(v["verdict"], "REJECT", "{v}");
    let r = cc01(&v);
    assert_eq!(r["status"], "FAIL", "{v}");
    assert!(r["evidence"].to_string().contains(DEPLOY), "{r}");
    assert!(
        !r["evidence"].to_string().contains(APP),
        "only the protected file is named: {r}"
    );
    // The report header names the rules in force.
    assert!(out.contains("project rules"), "{out}");
    assert!(out.contains("ci/**") && out.contains("--protect"), "{out}");
    let md = read(&ws.join(".referee/OBSERVER-VERDICT-t1.md"));
    assert!(md.contains("project rules"), "{md}");

    // The same through `--set` (replacing the list) and a `--vars` file outside the workspace.
    let Output {
        code, stderr: err, ..
    } = verify(&ws, &["--set", r#"protected=["ci/*.sh"]"#, "--write"]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(cc01(&verdict(&ws, "t1"))["status"], "FAIL");
    let vars = _root.path().join("team.toml");
    fs::write(&vars, "protected = [\"ci/**\"]\n").expect("write");
    let Output {
        code, stderr: err, ..
    } = verify(&ws, &["--vars", vars.to_str().expect("utf-8"), "--write"]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(cc01(&verdict(&ws, "t1"))["status"], "FAIL");
}

#[test]
fn a_vars_file_inside_the_workspace_is_refused_before_anything_is_judged() {
    let (root, ws, _logs) = edited_deploy();
    let inside = ws.join("team.toml");
    fs::write(&inside, "protected = []\n").expect("write");
    let link = root.path().join("link.toml");
    std::os::unix::fs::symlink(&inside, &link).expect("symlink");
    for spec in [
        inside.to_str().expect("utf-8"),
        link.to_str().expect("utf-8"),
    ] {
        let Output {
            code,
            stdout: out,
            stderr: err,
            ..
        } = verify(&ws, &["--vars", spec, "--write"]);
        assert_eq!(code, 2, "{spec}: {out}{err}");
        assert!(err.contains("inside the watched directory"), "{err}");
        assert!(out.is_empty(), "nothing judged: {out}");
        assert!(
            !ws.join(".referee/OBSERVER-VERDICT-t1.json").exists(),
            "nothing written"
        );
    }
    let Output {
        code, stderr: err, ..
    } = run(&[
        "watch",
        ws.to_str().expect("utf-8"),
        "--protocol",
        "code-change",
        "--vars",
        inside.to_str().expect("utf-8"),
        "--timeout",
        "5s",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("inside the watched directory"), "{err}");
    assert!(
        !ws.join(".referee/OBSERVER-HEARTBEAT.json").exists(),
        "refused before anything ran"
    );
    // A broken file outside is an error at its line.
    let broken = root.path().join("broken.toml");
    fs::write(&broken, "# rules\nprotected = [\n").expect("write");
    let Output {
        code, stderr: err, ..
    } = verify(&ws, &["--vars", broken.to_str().expect("utf-8")]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("broken.toml:"), "{err}");
}

#[test]
fn unknown_names_and_misfits_are_errors_that_say_what_fits() {
    let (_root, ws, _logs) = edited_deploy();
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = verify(&ws, &["--set", "protectd=x"]);
    assert_eq!(code, 2, "{out}{err}");
    assert!(err.contains("unknown variable `protectd`"), "{err}");
    assert!(
        err.contains("protected, shadow_js, shadow_js_index, shadow_py"),
        "{err}"
    );
    // A list where the protocol needs strings, and a glob that does not compile.
    let Output {
        code, stderr: err, ..
    } = verify(&ws, &["--set", "protected=[1]"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("array of strings"), "{err}");
    let Output {
        code, stderr: err, ..
    } = verify(&ws, &["--protect", "ci/[", "--write"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--protect `ci/[`"), "{err}");
    // The D10 protocol has no protected paths to add to.
    let Output {
        code, stderr: err, ..
    } = run(&["verify", ws.to_str().expect("utf-8"), "--protect", "ci/**"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no `protected` variable"), "{err}");
    assert!(
        !ws.join(".referee/OBSERVER-VERDICT-t1.json").exists(),
        "nothing judged"
    );
}

#[test]
fn watch_protect_raises_the_stop_live_and_status_pins_the_rules() {
    let (_root, ws, logs) = edited_deploy();
    let plain = hash(&[]);
    let protected = hash(&["--protect", "ci/**"]);
    assert_ne!(plain, protected, "the overrides are in the hash");
    assert_eq!(protected, hash(&["--protect", "ci/**"]), "and only they");
    assert_ne!(protected, hash(&["--protect", "cd/**"]));
    let Output {
        code,
        stdout: shown,
        ..
    } = run(&["protocol", "show", "code-change", "--protect", "ci/**"]);
    assert_eq!(code, 0);
    assert!(
        shown.contains(&format!("overridden (sha256 {protected})")),
        "{shown}"
    );

    let mut w = start(&ws, &logs, &["--protect", "ci/**"]);
    w.until("t1 judged", || judged(&ws, "t1", 1));
    let v = verdict(&ws, "t1");
    assert_eq!(v["verdict"], "REJECT", "{v}");
    w.until("STOP written", || stop(&ws).exists());
    let text = read(&stop(&ws));
    assert!(text.contains("CC-01") && text.contains(DEPLOY), "{text}");

    let d = ws.to_str().expect("utf-8");
    let Output {
        code, stderr: err, ..
    } = run(&["status", d, "--require-live", "--expect-protocol", &plain]);
    assert_eq!(
        code, 1,
        "the protocol without the team's rules is refused: {err}"
    );
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&["status", d, "--expect-protocol", &protected]);
    // The hash matches; the answer is the STOP's (exit 1) and names no protocol mismatch.
    assert_eq!(code, 1, "{out}{err}");
    assert!(!err.contains("protocol"), "{err}");
    let Output {
        code, stdout: out, ..
    } = run(&["status", d, "--show-run"]);
    assert_eq!(code, 1);
    assert!(out.contains(&format!("sha256 {protected}")), "{out}");

    // The start event records the resolved values.
    let starts = payloads(&ws.join(".referee"), "start");
    let vars = &starts.last().expect("a start event")["options"]["vars"];
    let first = &vars[0];
    assert_eq!(first["name"], "protected", "{vars}");
    assert_eq!(first["from"][0], "--protect", "{vars}");
    let globs = first["value"].as_array().expect("a list");
    assert!(globs.contains(&Value::from("ci/**")), "{vars}");
    assert!(globs.len() > 1, "the protocol's own globs stay: {vars}");

    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
}

#[test]
fn init_suggests_the_repositorys_paths_and_writes_only_outside_it() {
    let (root, ws, _logs) = git_workspace();
    fs::create_dir_all(ws.join(".github/workflows")).expect("mkdir");
    fs::write(ws.join(".github/workflows/ci.yml"), "on: push\n").expect("write");
    fs::create_dir_all(ws.join("web")).expect("mkdir");
    fs::write(ws.join("web/main.ts"), "export {}\n").expect("write");
    fs::write(ws.join("package-lock.json"), "{}\n").expect("write");
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-q", "-m", "ci"]);
    let d = ws.to_str().expect("utf-8");

    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&["init", d]);
    assert_eq!(code, 0, "{err}");
    // git_workspace holds src/app.py and src/orchestrator.py.
    assert!(
        out.contains("Python (2 files), TypeScript (1 file)"),
        "{out}"
    );
    assert!(
        out.contains("\".github/workflows/**\",  # CI configuration"),
        "{out}"
    );
    assert!(out.contains("\"package-lock.json\",  # lock file"), "{out}");
    assert!(out.contains("referee watch"), "{out}");

    let inside = ws.join("referee-vars.toml");
    let Output {
        code, stderr: err, ..
    } = run(&["init", d, "--output", inside.to_str().expect("utf-8")]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("is inside"), "{err}");
    assert!(!inside.exists(), "nothing written inside the repository");

    let outside = root.path().join("team.toml");
    let o = outside.to_str().expect("utf-8");
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&["init", d, "--output", o]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains(&format!("--vars {o}")), "{out}");
    let written = read(&outside);
    let Output {
        code, stderr: err, ..
    } = run(&["init", d, "--output", o]);
    assert_eq!(code, 2, "never overwritten without --force: {err}");
    assert!(err.contains("--force"), "{err}");
    fs::write(&outside, "edited").expect("write");
    let Output {
        code, stderr: err, ..
    } = run(&["init", d, "--output", o, "--force"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(read(&outside), written);

    // The file works: a worker's edit of the CI workflow is CC-01.
    fs::write(ws.join(".github/workflows/ci.yml"), "on: never\n").expect("write");
    record(
        &ws,
        "t1",
        1,
        &[".github/workflows/ci.yml"],
        &BTreeMap::from([(".github/workflows/ci.yml", "on: push\n")]),
    );
    let Output {
        code, stderr: err, ..
    } = verify(&ws, &["--vars", o, "--write"]);
    assert_eq!(code, 1, "{err}");
    let r = cc01(&verdict(&ws, "t1"));
    assert_eq!(r["status"], "FAIL", "{r}");
    assert!(r["evidence"].to_string().contains("ci.yml"), "{r}");
}

/// The `sh` blocks of a markdown document, in order.
fn sh_blocks(doc: &str) -> Vec<String> {
    doc.split("```sh\n")
        .skip(1)
        .map(|b| b.split("\n```").next().unwrap_or("").to_string())
        .collect()
}

/// `docs/d10-pipeline.md`'s minimal example, run as written with `referee` on PATH: the Phase 1
/// directory passes what is due (exit 0), the hand-entered gate result fails OBS-27 (exit 1).
#[test]
fn the_d10_pipeline_doc_example_does_what_it_says() {
    let doc = read(&Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/d10-pipeline.md"));
    let blocks = sh_blocks(&doc);
    let example: Vec<&String> = blocks
        .iter()
        .filter(|b| b.contains("referee verify ."))
        .collect();
    assert_eq!(example.len(), 2, "{blocks:?}");
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = crate::watch::referee();
    let path = format!(
        "{}:{}",
        bin.parent().expect("a directory").display(),
        std::env::var("PATH").unwrap_or_default()
    );
    let sh = |script: &str, cwd: &Path| {
        let out = std::process::Command::new("sh")
            .args(["-c", script])
            .current_dir(cwd)
            .env("PATH", &path)
            .env("XDG_STATE_HOME", crate::state_home())
            .output()
            .expect("run sh");
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
        )
    };
    let (code, out) = sh(example[0], dir.path());
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("OBS-16 [SIGNIFICANT] **PASS**"), "{out}");
    assert!(out.contains("OBS-15 [BLOCKING] **PASS**"), "{out}");
    assert!(out.contains("OBS-17 [SIGNIFICANT] **WAITING**"), "{out}");
    assert!(out.contains("23 not yet due"), "{out}");
    let (code, out) = sh(example[1], &dir.path().join("build"));
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("OBS-27 [BLOCKING] **FAIL**"), "{out}");
    assert!(
        out.contains("p3a-gate-results.json[1]: GR-17 = PASS, source manual"),
        "{out}"
    );
}

/// A check's result in a verdict.
fn result(v: &Value, check: &str) -> Value {
    v["results"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["check"] == check))
        .cloned()
        .unwrap_or(Value::Null)
}

/// The limits and forbidden patterns are variables too: `--set max_py_bytes=16` makes the
/// worker's 24-byte `src/app.py` a CC-06 REJECT, and `--set 'forbid=[…]'` a line it added a
/// CC-07 one, named by the pattern; without the flags the same attempt passes both.
#[test]
fn limits_and_forbidden_patterns_are_the_projects_to_set() {
    let (_root, ws, _logs) = git_workspace();
    fs::write(ws.join(APP), "def main():  # DO NOT MERGE\n    return 2\n").expect("write");
    record(&ws, "t1", 1, &[APP], &BTreeMap::from([(APP, ORIGINAL)]));
    let judge = |extra: &[&str]| {
        let mut args = vec!["--write"];
        args.extend_from_slice(extra);
        let Output {
            code, stderr: err, ..
        } = verify(&ws, &args);
        assert!(code == 0 || code == 1, "{err}");
        (code, verdict(&ws, "t1"))
    };
    let (_, v) = judge(&[]);
    assert_eq!(result(&v, "CC-06")["status"], "PASS", "{v}");
    assert_eq!(result(&v, "CC-07")["status"], "PASS", "{v}");

    let (code, v) = judge(&["--set", "max_py_bytes=16"]);
    assert_eq!(code, 1, "{v}");
    assert_eq!(v["verdict"], "REJECT", "{v}");
    let cc06 = result(&v, "CC-06");
    assert_eq!(cc06["status"], "FAIL", "{v}");
    assert!(cc06.to_string().contains("limit 16 bytes"), "{cc06}");

    let (code, v) = judge(&["--set", r#"forbid=["(?i)do not merge"]"#]);
    assert_eq!(code, 1, "{v}");
    let cc07 = result(&v, "CC-07");
    assert_eq!(cc07["status"], "FAIL", "{v}");
    assert!(
        cc07.to_string()
            .contains("src/app.py:1: forbidden pattern `(?i)do not merge`"),
        "{cc07}"
    );
    // A size that does not read as one is refused before anything is judged.
    let Output {
        code, stderr: err, ..
    } = verify(&ws, &["--set", "max_py_bytes=lots"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("max_py_bytes") || err.contains("lots"),
        "{err}"
    );
}
