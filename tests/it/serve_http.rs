//! `referee serve --http`: Claude Code's `type: "http"` hooks, posted by a real HTTP client
//! (curl, as Claude Code posts them: the event's JSON, `Content-Type: application/json`, the
//! bearer token from the hook's `headers`), answered with what `referee hook claude-code`
//! prints.

use std::fs;
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::code_change::{git_workspace, APP, PROTECTED};
use crate::hooks::{fixture, DOC_PROJECT};
use crate::util::TestCommand;

const CC: &str = "claude-code";
const TOKEN: &str = "s3cret-token-0123456789";

/// A running `referee serve --http 127.0.0.1:0`, killed when dropped.
struct Served {
    child: Child,
    url: String,
}

impl Served {
    fn start(dir: &Path) -> Served {
        let run = dir.join("run");
        fs::create_dir_all(&run).unwrap();
        let token = dir.join("token");
        fs::write(&token, format!("{TOKEN}\n")).unwrap();
        let mut child = Command::new(crate::util::referee_bin())
            .args(["serve", "--socket"])
            .arg(run.join("hook.sock"))
            .arg("--state-dir")
            .arg(dir.join("serve-state"))
            .args(["--http", "127.0.0.1:0", "--http-token-file"])
            .arg(&token)
            .env("XDG_STATE_HOME", crate::state_home())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // The daemon says where it listens (the port the kernel chose) once it answers.
        let (tx, rx) = std::sync::mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if let Some(url) = line.split_whitespace().find(|w| w.starts_with("http://")) {
                    let _ = tx.send(url.to_string());
                }
            }
        });
        let url = rx
            .recv_timeout(Duration::from_secs(60))
            .expect("`referee serve --http` did not say where it listens");
        Served { child, url }
    }
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// What an HTTP call got: the status and the body.
#[derive(Debug)]
struct Got {
    status: u16,
    body: String,
}

impl Got {
    fn json(&self) -> Value {
        if self.body.trim().is_empty() {
            return Value::Null;
        }
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {self:?}"))
    }
}

/// POSTs `body` to `url` with curl; `auth` is the `Authorization` header's value, if any.
fn post(url: &str, body: &[u8], auth: Option<&str>, method: &str) -> Got {
    let dir = tempfile::tempdir().unwrap();
    let input = dir.path().join("body.json");
    fs::write(&input, body).unwrap();
    let mut cmd = Command::new("curl");
    cmd.args(["-sS", "-X", method, "-o", "-", "-w", "\n%{http_code}"])
        .args(["-H", "Content-Type: application/json", "--data-binary"])
        .arg(format!("@{}", input.display()))
        .args(["--max-time", "120"]);
    if let Some(a) = auth {
        cmd.args(["-H", &format!("Authorization: {a}")]);
    }
    let out = cmd.arg(url).output().unwrap();
    assert!(out.status.success(), "curl: {out:?}");
    let text = String::from_utf8(out.stdout).unwrap();
    let (body, status) = text.rsplit_once('\n').unwrap();
    Got {
        status: status.trim().parse().unwrap(),
        body: body.to_string(),
    }
}

fn bearer() -> String {
    format!("Bearer {TOKEN}")
}

fn payload(ws: &Path, name: &str) -> Vec<u8> {
    fixture(CC, name)
        .replace(DOC_PROJECT, ws.to_str().unwrap())
        .into_bytes()
}

fn have_curl() -> bool {
    crate::util::tool("curl", "curl", "serve_http")
}

fn sed_i(ws: &Path, script: &str, file: &str) {
    let st = Command::new("sed")
        .current_dir(ws)
        .args(["-i", script, file])
        .status()
        .unwrap();
    assert!(st.success());
}

/// The HTTP hook answers as the command hook does: a protected write denied, a protected edit's
/// stop blocked naming CC-01 and the path (the JSON `referee hook claude-code` prints, byte for
/// byte), and once put back the stop let through with an empty 200.
#[test]
fn claudes_http_hook_is_answered_as_the_command_hook() {
    if !have_curl() {
        return;
    }
    let (root, ws, _logs) = git_workspace();
    let s = Served::start(root.path());
    let got = post(
        &s.url,
        &payload(&ws, "session-start.json"),
        Some(&bearer()),
        "POST",
    );
    assert_eq!((got.status, got.json()), (200, Value::Null), "{got:?}");

    let got = post(
        &s.url,
        &payload(&ws, "pre-tool-use-write.json"),
        Some(&bearer()),
        "POST",
    );
    assert_eq!(got.status, 200, "{got:?}");
    let out = &got.json()["hookSpecificOutput"];
    assert_eq!(out["permissionDecision"], "deny", "{got:?}");
    assert!(
        out["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .contains(PROTECTED),
        "{got:?}"
    );

    sed_i(&ws, "s/worker/admin/", PROTECTED);
    let got = post(&s.url, &payload(&ws, "stop.json"), Some(&bearer()), "POST");
    assert_eq!(got.status, 200, "{got:?}");
    assert_eq!(got.json()["decision"], "block", "{got:?}");
    let reason = got.json()["reason"].as_str().unwrap().to_string();
    assert!(
        reason.contains("CC-01") && reason.contains(PROTECTED),
        "{reason}"
    );
    // The same bytes the command hook prints, judged in process with its own state.
    let local = TestCommand::new()
        .args(["hook", CC, "--state-dir"])
        .arg(root.path().join("in-process-state"))
        .env_remove("REFEREE_SERVE")
        .stdin(payload(&ws, "stop.json"))
        .output();
    assert_eq!(local.code, 0, "{local:?}");
    assert_eq!(got.body.trim(), local.stdout.trim());

    sed_i(&ws, "s/admin/worker/", PROTECTED);
    fs::write(ws.join(APP), "def main():\n    return 2\n").unwrap();
    let got = post(&s.url, &payload(&ws, "stop.json"), Some(&bearer()), "POST");
    assert_eq!((got.status, got.json()), (200, Value::Null), "{got:?}");
}

/// Without the token (or with another), to another path or by another method, the call gets a
/// non-2xx status (which Claude Code's `onFailure: block` turns into a block) and is never
/// judged; an input that is not JSON is answered with the JSON that blocks.
#[test]
fn the_http_hook_answers_only_its_callers_and_blocks_what_it_cannot_read() {
    if !have_curl() {
        return;
    }
    let (root, ws, _logs) = git_workspace();
    let s = Served::start(root.path());
    let stop = payload(&ws, "stop.json");
    assert_eq!(post(&s.url, &stop, None, "POST").status, 401);
    assert_eq!(
        post(
            &s.url,
            &stop,
            Some("Bearer s3cret-token-0123456780"),
            "POST"
        )
        .status,
        401
    );
    assert_eq!(post(&s.url, &stop, Some(TOKEN), "POST").status, 401);
    assert_eq!(post(&s.url, &stop, Some(&bearer()), "PUT").status, 405);
    let other = s.url.replace("/hook/claude-code", "/hook/codex");
    assert_eq!(post(&other, &stop, Some(&bearer()), "POST").status, 404);
    // Nothing was judged for those: the daemon keeps no pin for the session.
    let pins = root.path().join("serve-state/hook-sessions");
    assert!(
        fs::read_dir(&pins).map_or(true, |d| d.count() == 0),
        "a refused call was judged"
    );
    let got = post(&s.url, b"not json", Some(&bearer()), "POST");
    assert_eq!(got.status, 200, "{got:?}");
    assert_eq!(got.json()["decision"], "block", "{got:?}");
    assert!(!got.json()["reason"].as_str().unwrap().is_empty());
}

/// The listener answers this machine only, and only with a token that cannot be guessed.
#[test]
fn a_non_loopback_address_or_a_short_token_is_refused_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good");
    fs::write(&good, TOKEN).unwrap();
    let short = dir.path().join("short");
    fs::write(&short, "abc\n").unwrap();
    let socket = |n: &str| -> PathBuf { dir.path().join(format!("{n}.sock")) };
    let start = |sock: PathBuf, args: &[&str]| {
        let begun = Instant::now();
        let out = TestCommand::new()
            .args(["serve", "--socket"])
            .arg(&sock)
            .arg("--state-dir")
            .arg(dir.path().join("state"))
            .args(args)
            .output();
        assert!(begun.elapsed() < Duration::from_secs(60));
        out
    };
    let g = good.to_str().unwrap();
    let out = start(
        socket("a"),
        &["--http", "0.0.0.0:0", "--http-token-file", g],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("not a loopback address"), "{out:?}");
    let out = start(
        socket("b"),
        &[
            "--http",
            "127.0.0.1:0",
            "--http-token-file",
            short.to_str().unwrap(),
        ],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("shorter than 16"), "{out:?}");
    let out = start(socket("c"), &["--http", "127.0.0.1:0"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("--http-token-file"), "{out:?}");
}

/// The example wiring: every hook POSTs to the daemon's path, blocks when the daemon cannot
/// answer (`onFailure: block`), carries the token from the environment, and waits longer than
/// a judgment may take.
#[test]
fn the_example_http_settings_fail_closed_and_carry_the_token() {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/claude-code/settings-http.json");
    let v: Value = serde_json::from_str(&fs::read_to_string(&path).unwrap()).unwrap();
    let events = v["hooks"].as_object().unwrap();
    for e in [
        "SessionStart",
        "PreToolUse",
        "PostToolUse",
        "Stop",
        "SubagentStop",
    ] {
        let hooks = events[e][0]["hooks"].as_array().unwrap();
        for h in hooks {
            assert_eq!(h["type"], "http", "{e}");
            assert!(
                h["url"]
                    .as_str()
                    .unwrap()
                    .ends_with(referee::serve::http::PATH),
                "{e}"
            );
            assert_eq!(h["onFailure"], "block", "{e}");
            assert_eq!(
                h["headers"]["Authorization"], "Bearer $REFEREE_HTTP_TOKEN",
                "{e}"
            );
            assert_eq!(h["allowedEnvVars"][0], "REFEREE_HTTP_TOKEN", "{e}");
            assert!(
                h["timeout"].as_u64().unwrap() > referee::serve::http::JUDGMENT_TIMEOUT.as_secs(),
                "{e}"
            );
        }
    }
}
