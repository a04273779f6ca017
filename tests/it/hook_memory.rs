//! What a hook holds in memory is bounded whatever the worker writes (issue 32): files larger
//! than a judgment holds are known by their hashes, a file over its size limit is not read for
//! the content checks, and under a memory limit the hook judges instead of aborting (an abort
//! is a non-blocking error to Claude Code and Codex: the stop would go through).

use std::fs;
use std::process::{Command, Stdio};

use crate::code_change::git;
use crate::hooks::{fixture, workspace, Answer, DOC_PROJECT};

const CC: &str = "claude-code";

/// Runs `referee hook claude-code` on `payload` under `ulimit -v` of `kib` KiB (the whole
/// process tree: the hook and the process that judges).
fn hook_under_limit(w: &crate::hooks::Ws, payload: &str, kib: u64, extra: &[&str]) -> Answer {
    let text = fixture(CC, payload).replace(DOC_PROJECT, w.ws.to_str().unwrap());
    let out = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit -v {kib} && exec \"$0\" \"$@\""))
        .arg(crate::util::referee_bin())
        .args(["hook", CC, "--timeout", "120s", "--state-dir"])
        .arg(&w.state)
        .args(extra)
        .env("XDG_STATE_HOME", crate::state_home())
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write as _;
            c.stdin.take().unwrap().write_all(text.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    Answer {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Sparse files over the size limit (each larger than a judgment holds) under a 300 MB
/// address-space limit: the stop is judged — REJECT on size, the reason naming the files —
/// never an abort, and never the "cannot judge" of a judgment that died.
#[test]
fn sparse_files_over_the_size_limit_are_judged_under_a_memory_limit() {
    let w = workspace();
    w.hook(CC, "session-start.json").allowed_silently();
    for i in 0..6 {
        let f = fs::File::create(w.ws.join(format!("big{i}.bin"))).unwrap();
        f.set_len(6 << 20).unwrap();
    }
    let a = hook_under_limit(&w, "stop.json", 300_000, &["--max-read-bytes", "8MiB"]);
    let reason = a.blocked_with();
    assert!(reason.contains("CC-06 FAIL"), "{reason}");
    assert!(reason.contains("big0.bin: 6291456 bytes"), "{reason}");
    assert!(
        !reason.contains("cannot judge"),
        "judged, not failed: {reason}"
    );
    // Not read for the content checks: nothing of them is INCONCLUSIVE.
    assert!(!reason.contains("INCONCLUSIVE"), "{reason}");
}

/// A protected file larger than a judgment holds and than a diff is made of, modified: the
/// veto stands, the evidence its two hashes.
#[test]
fn a_protected_file_larger_than_the_budget_is_still_vetoed() {
    let w = workspace();
    let line = "x = 'a line of the protected module'\n";
    let big = line.repeat((5 << 20) / line.len() + 1);
    fs::write(w.ws.join("big.py"), &big).unwrap();
    git(&w.ws, &["add", "big.py"]);
    git(&w.ws, &["commit", "-q", "-m", "big"]);
    // The read cap (and so the budget) at 6 MiB: the two copies of big.py do not both fit.
    let flags = ["--protect", "big.py", "--max-read-bytes", "6MiB"];
    w.hook_with(CC, "session-start.json", &flags, |_| {})
        .allowed_silently();
    fs::write(w.ws.join("big.py"), big.replacen("a line", "A LINE", 1)).unwrap();
    let reason = w.hook_with(CC, "stop.json", &flags, |_| {}).blocked_with();
    assert!(reason.contains("CC-01"), "{reason}");
    assert!(reason.contains("big.py"), "{reason}");
    let verdict = w.verdict("claude-code-abc123").to_string();
    assert!(verdict.contains("too large to diff"), "{verdict}");
}
