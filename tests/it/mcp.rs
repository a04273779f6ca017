//! `referee mcp` driven by a real MCP client: the official TypeScript SDK's `Client` over its
//! stdio transport (`tools/mcp-client/client.mjs`, installed from its lock file with `npm ci`).
//! The client lists the tools and calls them; the tests assert the transcript: the tool names
//! and input schemas, `judge` on a D10 build that a real `watch` stopped and on a git workspace
//! whose task attempt edited a protected file (REJECT), `task_verdict` and `status` as the
//! referee recorded them, `explain_check`, `protected_paths`, and tool errors for a missing
//! directory, a missing argument, a protocol file named by the caller and a directory outside
//! `--root`. Nothing is written into the judged directories.
//!
//! Under CI the client must be there (`.ci/run` installs it); elsewhere a missing client skips
//! these tests with a notice on the test process's stderr, shown even though they pass.

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::code_change::{self, git_workspace, record, APP, PROTECTED};
use crate::util::Output;
use crate::watch::{manual_gates, referee, run, GATES, STOP};

/// The client script with its SDK installed, or `None` (CI: a failure).
fn client() -> Option<PathBuf> {
    let tool = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/mcp-client");
    let sdk = tool.join("node_modules/@modelcontextprotocol/sdk/package.json");
    let node = std::process::Command::new("node").arg("--version").output();
    if sdk.exists() && node.is_ok_and(|o| o.status.success()) {
        return Some(tool.join("client.mjs"));
    }
    crate::util::missing(
        "the MCP client",
        "`npm ci --prefix tools/mcp-client`, node and npm required",
        "the `referee mcp` test",
    );
    None
}

/// The official Python SDK's client (`tools/mcp-client/client.py`, its SDK pinned in
/// `requirements.txt`, installed by `.ci/run` into the venv `target/mcp-python`): the venv's
/// python and the script, or `None` (CI: a failure).
fn python_client() -> Option<(PathBuf, PathBuf)> {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = here.join("target/mcp-python/bin/python");
    let sdk = std::process::Command::new(&python)
        .args(["-c", "import mcp"])
        .output();
    if sdk.is_ok_and(|o| o.status.success()) {
        return Some((python, here.join("tools/mcp-client/client.py")));
    }
    crate::util::missing(
        "the Python MCP client",
        "`python3 -m venv target/mcp-python && target/mcp-python/bin/pip install -r tools/mcp-client/requirements.txt`",
        "the `referee mcp` test through the Python SDK",
    );
    None
}

/// One client session against `referee mcp ARGS` started in `cwd`: the transcript of its calls.
fn session(client: &Path, cwd: &Path, args: &[&str], calls: &Value) -> Value {
    session_with(Path::new("node"), client, cwd, args, calls)
}

/// [`session`] with the client script `client` run by `program` (node, or the venv's python).
fn session_with(program: &Path, client: &Path, cwd: &Path, args: &[&str], calls: &Value) -> Value {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("calls.json");
    fs::write(&file, calls.to_string()).expect("write calls");
    let out = assert_cmd::Command::new(program)
        .arg(client)
        .arg(&file)
        .arg(referee())
        .arg("mcp")
        .args(args)
        .env("XDG_STATE_HOME", crate::state_home())
        .current_dir(cwd)
        .timeout(Duration::from_secs(120))
        .output()
        .expect("run the MCP client");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the MCP client failed ({:?}):\n{stdout}\n{stderr}",
        out.status
    );
    serde_json::from_str(&stdout).unwrap_or_else(|e| panic!("{e}: {stdout}\n{stderr}"))
}

fn s(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 temp path")
}

/// The `i`th call's result, which must be a success (not a tool error).
fn ok(t: &Value, i: usize) -> &Value {
    let r = &t["calls"][i]["result"];
    assert_eq!(r["isError"], json!(false), "call {i}: {}", t["calls"][i]);
    r
}

/// The `i`th call's tool error text (it must be one).
fn tool_error(t: &Value, i: usize) -> String {
    let r = &t["calls"][i]["result"];
    assert_eq!(r["isError"], json!(true), "call {i}: {}", t["calls"][i]);
    r["content"][0]["text"]
        .as_str()
        .expect("an error text")
        .to_string()
}

/// Every file below `dir` (`.git` included) with its bytes and mtime, and every directory.
fn tree(dir: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    if !dir.exists() {
        return out;
    }
    for e in walkdir::WalkDir::new(dir).sort_by_file_name() {
        let e = e.expect("walk");
        let meta = e.path().symlink_metadata().expect("lstat");
        let what = if meta.is_file() {
            format!(
                "{} {:?}",
                code_change::sha(&fs::read(e.path()).expect("read")),
                meta.modified().ok()
            )
        } else {
            format!("{:?}", meta.file_type())
        };
        out.insert(e.path().display().to_string(), what);
    }
    out
}

/// The `clean` timeline replayed into `root/build` with a hand-entered gate result (OBS-27),
/// refereed by `watch` until the completed pipeline ends it with the STOP standing.
fn d10_stopped(root: &Path) -> PathBuf {
    let dir = root.join("build");
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&["replay", "clean", s(&dir), "--speed", "0", "-q"]);
    assert_eq!(code, 0, "replay: {out}{err}");
    fs::write(dir.join(GATES), manual_gates(1)).expect("gates");
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

/// A git workspace whose task `t1` edited a protected file, judged REJECT by a real `watch`
/// (stopped before returning).
fn rejected_workspace() -> (tempfile::TempDir, PathBuf) {
    let (root, ws, logs) = git_workspace();
    let base = BTreeMap::from([
        (APP, "def main():\n    return 1\n"),
        (PROTECTED, "ROLES = ['worker']\n"),
    ]);
    let mut w = code_change::start(&ws, &logs, &[]);
    fs::write(ws.join(PROTECTED), "ROLES = ['worker', 'admin']\n").expect("write");
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    record(&ws, "t1", 1, &[APP, PROTECTED], &base);
    w.until("t1 attempt 1 judged", || code_change::judged(&ws, "t1", 1));
    assert_eq!(code_change::verdict(&ws, "t1")["verdict"], "REJECT");
    w.signal(libc::SIGTERM);
    w.wait(Duration::from_secs(30));
    (root, ws)
}

#[test]
fn an_mcp_client_lists_the_tools_and_calls_them() {
    let Some(client) = client() else {
        return;
    };
    let root = tempfile::tempdir().expect("tempdir");
    let build = d10_stopped(root.path());
    let (_ws_root, ws) = rejected_workspace();
    let missing = root.path().join("no-such-dir");
    let protocol_file = root.path().join("lax.toml");
    fs::write(&protocol_file, "# a caller's own rules\n").expect("write");
    let before = (tree(&build), tree(&ws));

    let calls = json!([
        {"name": "judge", "arguments": {"dir": s(&build)}},
        {"name": "judge", "arguments": {"dir": s(&ws), "protocol": "code-change"}},
        {"name": "task_verdict", "arguments": {"workspace": s(&ws), "task_id": "t1"}},
        {"name": "task_verdict", "arguments": {"workspace": s(&ws), "task_id": "t9"}},
        {"name": "status", "arguments": {"dir": s(&build)}},
        {"name": "explain_check", "arguments": {"check_id": "CC-01"}},
        {"name": "protected_paths", "arguments": {"workspace": s(&ws)}},
        {"name": "judge", "arguments": {"dir": s(&missing)}},
        {"name": "judge", "arguments": {}},
        {"name": "judge", "arguments": {"dir": s(&ws), "protocol": s(&protocol_file)}},
        {"name": "explain_check", "arguments": {"check_id": "XX-99"}},
    ]);
    let t = session(&client, root.path(), &[], &calls);

    // The tools, each with its input schema and read-only.
    assert_eq!(t["server"]["name"], "referee");
    let tools: BTreeMap<&str, &Value> = t["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|x| (x["name"].as_str().expect("a name"), x))
        .collect();
    let required = |name: &str| -> Vec<&str> {
        tools[name]["inputSchema"]["required"]
            .as_array()
            .expect("required")
            .iter()
            .map(|v| v.as_str().expect("a field"))
            .collect()
    };
    assert_eq!(
        tools.keys().copied().collect::<Vec<_>>(),
        [
            "explain_check",
            "judge",
            "protected_paths",
            "status",
            "task_verdict"
        ]
    );
    assert_eq!(required("judge"), ["dir"]);
    assert_eq!(required("task_verdict"), ["workspace", "task_id"]);
    assert_eq!(required("explain_check"), ["check_id"]);
    assert_eq!(required("protected_paths"), ["workspace"]);
    assert_eq!(required("status"), ["dir"]);
    let judge_props = &tools["judge"]["inputSchema"]["properties"];
    assert_eq!(judge_props["dir"]["type"], "string");
    assert_eq!(judge_props["final"]["type"], "boolean");
    for (name, tool) in &tools {
        assert_eq!(tool["inputSchema"]["type"], "object", "{name}");
        assert_eq!(tool["annotations"]["readOnlyHint"], true, "{name}");
        assert!(
            tool["description"].as_str().is_some_and(|d| d.len() > 40),
            "{name}"
        );
    }

    // judge, D10: the hand-entered gate result stops the pipeline, as `verify` says.
    let r = ok(&t, 0);
    let v = &r["structuredContent"];
    assert_eq!(v["violation"], true, "{v}");
    assert_eq!(v["verdict"]["schema"], "referee.verify/1");
    assert_eq!(v["verdict"]["stop"], true);
    let obs27: Vec<&Value> = v["verdict"]["results"]
        .as_array()
        .expect("results")
        .iter()
        .filter(|x| x["check"] == "OBS-27")
        .collect();
    assert!(
        obs27.iter().any(|x| x["status"] == "FAIL"),
        "OBS-27 should FAIL: {obs27:?}"
    );
    let summary = r["content"][0]["text"].as_str().expect("summary");
    assert!(
        summary.starts_with("STOP") && summary.contains("OBS-27"),
        "{summary}"
    );
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&["verify", s(&build), "--format", "json"]);
    assert_eq!(code, 1, "{err}");
    let cli: Value = serde_json::from_str(&out).expect("verify json");
    let statuses = |v: &Value| -> Vec<(String, String)> {
        v["results"]
            .as_array()
            .expect("results")
            .iter()
            .map(|x| {
                (
                    format!("{}:{}", x["pass"], x["check"]),
                    x["status"].to_string(),
                )
            })
            .collect()
    };
    assert_eq!(
        statuses(&v["verdict"]),
        statuses(&cli),
        "the MCP judgment and `verify` disagree"
    );

    // judge, workspace: the protected edit is a REJECT and a veto.
    let r = ok(&t, 1);
    let v = &r["structuredContent"];
    assert_eq!(v["violation"], true, "{v}");
    assert_eq!(v["protocol"], "code-change");
    let task = &v["verdict"]["tasks"][0];
    assert_eq!(task["task_id"], "t1", "{v}");
    assert_eq!(task["verdict"], "REJECT", "{v}");
    let text = r["content"][0]["text"].as_str().expect("summary");
    assert!(
        text.starts_with("STOP") && text.contains("t1 attempt 1: REJECT"),
        "{text}"
    );
    assert!(text.contains("protected_file_modified"), "{text}");

    // task_verdict: the referee's recorded REJECT is a `stop`; an unknown task is not judged.
    let v = &ok(&t, 2)["structuredContent"];
    assert_eq!(v["answer"], "stop", "{v}");
    assert_eq!(v["exit_code"], 1);
    assert!(
        v["output"].as_str().is_some_and(|o| o.contains("REJECT")),
        "{v}"
    );
    // A task nobody knows is said to be unknown, never given t1's STOP as its verdict; the
    // STOP that stands is said beside it.
    let v = &ok(&t, 3)["structuredContent"];
    assert_eq!(v["answer"], "unknown_task", "{v}");
    assert_eq!(v["task_known"], false, "{v}");
    assert_eq!(v["stop_stands"], true, "{v}");
    assert!(
        v["stop"].as_str().is_some_and(|o| o.contains("CC-01")),
        "{v}"
    );

    // status: the STOP the watch left, from the referee's state.
    let v = &ok(&t, 4)["structuredContent"];
    assert_eq!(v["answer"], "stop", "{v}");
    assert!(
        v["output"].as_str().is_some_and(|o| o.contains("OBS-27")),
        "{v}"
    );

    // explain_check.
    let v = &ok(&t, 5)["structuredContent"];
    assert_eq!(v["protocol"], "code-change");
    let e = v["explanation"].as_str().expect("text");
    assert!(
        e.starts_with("CC-01 [BLOCKING]") && e.contains("**/orchestrator.py"),
        "{e}"
    );

    // protected_paths: the globs, a shadow of one, and the protected file present.
    let v = &ok(&t, 6)["structuredContent"];
    let globs = v["checks"][0]["globs"].as_array().expect("globs");
    assert_eq!(v["checks"][0]["check"], "CC-01");
    assert_eq!(v["checks"][0]["veto"], true);
    assert!(globs.contains(&json!({"glob": "**/orchestrator.py", "shadow_of": null})));
    assert!(globs.contains(
        &json!({"glob": "**/orchestrator/__init__.py", "shadow_of": "**/orchestrator.py"})
    ));
    assert_eq!(
        v["present"],
        json!([{"path": PROTECTED, "globs": ["**/orchestrator.py"]}])
    );

    // Bad input: tool errors with the reason; the server goes on answering after each.
    let e = tool_error(&t, 7);
    assert!(
        e.contains("cannot read directory") && e.contains("no-such-dir"),
        "{e}"
    );
    let e = tool_error(&t, 8);
    assert!(e.contains("missing field `dir`"), "{e}");
    let e = tool_error(&t, 9);
    assert!(
        e.contains("unknown protocol") && e.contains("lax.toml"),
        "{e}"
    );
    let e = tool_error(&t, 10);
    assert!(e.contains("no check `XX-99`"), "{e}");

    // Read-only: the directories and the referee's state are as they were.
    assert_eq!(
        (tree(&build), tree(&ws)),
        before,
        "`referee mcp` wrote into a judged directory"
    );
}

/// The server as `examples/mcp/.mcp.json` starts it (Claude Code runs it in the project:
/// `--root .`): a directory outside the root is refused (a symlink out of it too), a relative
/// path is taken from it, and a workspace no referee has watched has no verdict yet.
#[test]
fn an_mcp_server_with_a_root_refuses_directories_outside_it() {
    let Some(client) = client() else {
        return;
    };
    let example = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/mcp/.mcp.json");
    let config: Value = serde_json::from_str(&fs::read_to_string(&example).expect("read"))
        .expect("examples/mcp/.mcp.json parses");
    let server = &config["mcpServers"]["referee"];
    assert_eq!(server["command"], "referee", "{config}");
    let args: Vec<&str> = server["args"]
        .as_array()
        .expect("args")
        .iter()
        .map(|a| a.as_str().expect("a string"))
        .collect();
    assert_eq!(args[0], "mcp", "{config}");
    assert!(args.windows(2).any(|w| w == ["--root", "."]), "{config}");

    let top = tempfile::tempdir().expect("tempdir");
    let inside = top.path().join("root");
    let outside = top.path().join("elsewhere");
    fs::create_dir_all(inside.join("build")).expect("mkdir");
    fs::create_dir_all(&outside).expect("mkdir");
    std::os::unix::fs::symlink(&outside, inside.join("link")).expect("symlink");
    let calls = json!([
        {"name": "judge", "arguments": {"dir": "build", "protocol": "d10"}},
        {"name": "judge", "arguments": {"dir": s(&outside)}},
        {"name": "status", "arguments": {"dir": "link"}},
        {"name": "protected_paths", "arguments": {"workspace": "../elsewhere"}},
        {"name": "task_verdict", "arguments": {"workspace": "build", "task_id": "t1"}},
        {"name": "status", "arguments": {"dir": "."}},
    ]);
    let t = session(&client, &inside, &args[1..], &calls);
    let v = &ok(&t, 0)["structuredContent"];
    assert_eq!(v["protocol"], "d10");
    assert_eq!(
        v["verdict"]["build_dir"],
        s(&fs::canonicalize(inside.join("build")).expect("canonical"))
    );
    for i in 1..=3 {
        let e = tool_error(&t, i);
        assert!(e.contains("outside the server's --root"), "call {i}: {e}");
    }
    // No record, no referee: the task is unknown, and no STOP stands.
    let v = &ok(&t, 4)["structuredContent"];
    assert_eq!(v["answer"], "unknown_task", "{v}");
    assert_eq!(v["stop_stands"], false, "{v}");
    assert!(
        v["note"].as_str().is_some_and(|n| n.contains("is unknown")),
        "{v}"
    );
    let v = &ok(&t, 5)["structuredContent"];
    assert_eq!(v["answer"], "go", "{v}");
}

/// The project's rules given to the server (`--protect`, as `hook` and `watch` take it) reach
/// `judge` and `protected_paths`; `judge` without a protocol tells a workspace with task records
/// from a build; a sub-folder of the work tree is named as such (once); a 16 MiB argument gets
/// a tool error; and the same workspace without the rule is GO (the rule is what stops it).
/// Through both official SDKs' clients, TypeScript and Python.
#[test]
fn an_mcp_server_judges_by_the_projects_rules_and_answers_every_call() {
    let mut clients = Vec::new();
    if let Some(js) = client() {
        clients.push((PathBuf::from("node"), js));
    }
    if let Some(py) = python_client() {
        clients.push(py);
    }
    for (program, script) in &clients {
        rules_scenario(&|cwd: &Path, args: &[&str], calls: &Value| {
            session_with(program, script, cwd, args, calls)
        });
    }
}

fn rules_scenario(session: &dyn Fn(&Path, &[&str], &Value) -> Value) {
    let (_root, ws, _logs) = git_workspace();
    let base = BTreeMap::from([(APP, "def main():\n    return 1\n")]);
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    record(&ws, "t1", 1, &[APP], &base);
    let long = "a".repeat(16 << 20);
    let calls = json!([
        {"name": "judge", "arguments": {"dir": "."}},
        {"name": "protected_paths", "arguments": {"workspace": "."}},
        {"name": "judge", "arguments": {"dir": "src", "protocol": "code-change"}},
        {"name": "judge", "arguments": {"dir": long}},
        {"name": "task_verdict", "arguments": {"workspace": ".", "task_id": "t9"}},
        {"name": "explain_check", "arguments": {"check_id": "CC-01"}},
    ]);
    let t = session(&ws, &["--root", ".", "--protect", APP], &calls);
    let v = &ok(&t, 0)["structuredContent"];
    assert_eq!(v["protocol"], "code-change", "{v}");
    assert_eq!(v["violation"], true, "{v}");
    assert!(v.to_string().contains("CC-01"), "{v}");
    let v = &ok(&t, 1)["structuredContent"];
    let present: Vec<&str> = v["present"]
        .as_array()
        .expect("present")
        .iter()
        .filter_map(|p| p["path"].as_str())
        .collect();
    assert!(present.contains(&APP), "{v}");
    let text = ok(&t, 2)["content"][0]["text"].as_str().expect("text");
    assert!(!text.contains("no baseline: no baseline"), "{text}");
    assert!(
        text.contains("is a sub-folder of the git work tree"),
        "{text}"
    );
    let e = tool_error(&t, 3);
    assert!(e.contains("more than the 4096"), "{e}");
    assert!(e.len() < 300, "{e}");
    let v = &ok(&t, 4)["structuredContent"];
    assert_eq!(v["answer"], "unknown_task", "{v}");
    let v = &ok(&t, 5)["structuredContent"];
    assert!(
        v["explanation"].as_str().is_some_and(|x| x.contains(APP)),
        "{v}"
    );

    // Without the rule: the same attempt is not stopped.
    let t = session(
        &ws,
        &["--root", "."],
        &json!([{"name": "judge", "arguments": {"dir": "."}}]),
    );
    let v = &ok(&t, 0)["structuredContent"];
    assert_eq!(v["violation"], false, "{v}");
}
