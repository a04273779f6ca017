//! CC-07's secret rules end to end: a secret is named by file:line and rule in the verdict and
//! appears in nothing the referee prints or writes for the worker to see; `--secrets FILE`
//! replaces the embedded rules and is refused inside the workspace; a flood of findings is
//! bounded. Tokens are built here from parts, so none sits in the repository in one piece.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::code_change::{git_workspace, judged, record, start, verdict, APP, ORIGINAL};
use crate::util::Output;
use crate::watch::{exit_code, read, run, WAIT};

pub(crate) const ALNUM: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
pub(crate) const UPPER32: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
pub(crate) const B64: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// `prefix` joined, then `n` pseudo-random characters of `alphabet` (the same for a seed).
pub(crate) fn token(prefix: &[&str], n: usize, alphabet: &[u8], seed: u64) -> String {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let tail: String = (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            char::from(alphabet[(x % alphabet.len() as u64) as usize])
        })
        .collect();
    format!("{}{tail}", prefix.concat())
}

/// CC-07's result in a verdict file.
pub(crate) fn cc07(v: &Value) -> Value {
    v["results"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["check"] == "CC-07"))
        .cloned()
        .unwrap_or(Value::Null)
}

/// Every file under `dir`, as bytes, by path.
pub(crate) fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    walkdir::WalkDir::new(dir)
        .into_iter()
        .flatten()
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            (
                e.path().display().to_string(),
                fs::read(e.path()).expect("read"),
            )
        })
        .collect()
}

#[track_caller]
pub(crate) fn assert_absent(secrets: &[&str], what: &str, bytes: &[u8]) {
    for s in secrets {
        assert!(
            !bytes.windows(s.len()).any(|w| w == s.as_bytes()),
            "a secret appears in {what}"
        );
    }
}

#[test]
fn a_secret_is_named_by_rule_and_line_and_shown_nowhere() {
    let (_root, ws, logs) = git_workspace();
    let gh = token(&["gh", "p_"], 36, ALNUM, 1);
    let aws = token(&["AK", "IA"], 16, UPPER32, 2);
    let slack = token(&["xo", "xb-", "123456789012-"], 24, ALNUM, 3);
    let text = format!(
        "def main():\n    return 1\n\nGH = \"{gh}\"\nAWS = \"{aws}\"\nKEY = \"{}BEGIN OPENSSH {}{}\"\nSLACK = \"{slack}\"\n",
        "-----", "PRIVATE KEY", "-----"
    );
    fs::write(ws.join(APP), &text).expect("write");
    let mut w = start(&ws, &logs, &[]);
    record(&ws, "t1", 1, &[APP], &BTreeMap::from([(APP, ORIGINAL)]));
    w.until("t1 judged", || judged(&ws, "t1", 1));
    let v = verdict(&ws, "t1");
    assert_eq!(v["verdict"], "REJECT", "{v}");
    let r = cc07(&v);
    assert_eq!(r["status"], "FAIL", "{r}");
    let evidence = r["evidence"].to_string();
    for line in [
        "src/app.py:4: GitHub token",
        "src/app.py:5: AWS access key",
        "src/app.py:6: private key",
        "src/app.py:7: Slack token",
    ] {
        assert!(evidence.contains(line), "{line} not in {evidence}");
    }
    w.until("the verdict event", || {
        read(&ws.join(".referee/OBSERVER-EVENTS.jsonl")).contains("\"verdict\"")
    });
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());

    let secrets = [gh.as_str(), aws.as_str(), slack.as_str()];
    assert_absent(&secrets, "watch's output", w.output().as_bytes());
    // The verdict files, the report, the STOP, the event log: all in `.referee/`.
    let written = files(&ws.join(".referee"));
    assert!(written
        .iter()
        .any(|(p, _)| p.ends_with("OBSERVER-EVENTS.jsonl")));
    assert!(written
        .iter()
        .any(|(p, _)| p.ends_with("OBSERVER-REPORT.md")));
    for (path, bytes) in &written {
        assert_absent(&secrets, path, bytes);
    }
    for format in ["md", "json", "junit", "sarif", "github"] {
        let Output {
            code,
            stdout: out,
            stderr: err,
            ..
        } = run(&[
            "verify",
            ws.to_str().expect("utf-8"),
            "--protocol",
            "code-change",
            "--format",
            format,
        ]);
        assert_eq!(code, 1, "{format}: {err}");
        assert!(out.contains("CC-07"), "{format}: {out}");
        assert_absent(&secrets, format, out.as_bytes());
        assert_absent(&secrets, format, err.as_bytes());
    }
}

#[test]
fn secret_rules_from_a_file_outside_the_workspace_replace_the_embedded_ones() {
    let (root, ws, logs) = git_workspace();
    let gh = token(&["gh", "p_"], 36, ALNUM, 4);
    fs::write(
        ws.join(APP),
        format!("def main():\n    return 1\n\nX = \"HOUSE-123456\"\nGH = \"{gh}\"\n"),
    )
    .expect("write");
    record(&ws, "t1", 1, &[APP], &BTreeMap::from([(APP, ORIGINAL)]));
    let rules = "schema_version = 1\n[[rule]]\nid = \"house\"\nname = \"house token\"\nregex = '''HOUSE-[0-9]{6}'''\nkeywords = [\"house-\"]\n";
    let outside = root.path().join("rules.toml");
    fs::write(&outside, rules).expect("write");
    let ws_arg = ws.to_str().expect("utf-8");
    let verify = |secrets: &str| {
        run(&[
            "verify",
            ws_arg,
            "--protocol",
            "code-change",
            "--format",
            "json",
            "--secrets",
            secrets,
        ])
    };
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = verify(outside.to_str().expect("utf-8"));
    assert_eq!(code, 1, "{err}");
    assert!(out.contains("src/app.py:4: house token"), "{out}");
    assert!(
        !out.contains("GitHub token"),
        "the embedded rules are replaced: {out}"
    );

    // Inside the workspace (or reaching it through a relative path or a symlink): refused.
    let inside = ws.join("rules.toml");
    fs::write(&inside, rules).expect("write");
    let link = root.path().join("link.toml");
    std::os::unix::fs::symlink(&inside, &link).expect("symlink");
    for spec in [
        inside.to_str().expect("utf-8"),
        link.to_str().expect("utf-8"),
    ] {
        let Output {
            code, stderr: err, ..
        } = verify(spec);
        assert_eq!(code, 2, "{spec}: {err}");
        assert!(err.contains("inside the watched directory"), "{err}");
    }
    let Output {
        code, stderr: err, ..
    } = run(&[
        "watch",
        ws_arg,
        "--protocol",
        "code-change",
        "--secrets",
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

    // A broken rule file is a load error at its line; a protocol without secret rules has
    // nothing to replace.
    let broken = root.path().join("broken.toml");
    fs::write(&broken, rules.replace("[0-9]{6}", "[0-9")).expect("write");
    let Output {
        code, stderr: err, ..
    } = verify(broken.to_str().expect("utf-8"));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("broken.toml:2:1: rule `house`: invalid regex"),
        "{err}"
    );
    let Output {
        code, stderr: err, ..
    } = run(&[
        "verify",
        ws_arg,
        "--secrets",
        outside.to_str().expect("utf-8"),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("`--secrets` needs a check with `added_lines"),
        "{err}"
    );

    // A live referee with the outside file judges by it.
    let mut w = start(&ws, &logs, &["--secrets", outside.to_str().expect("utf-8")]);
    w.until("t1 judged", || judged(&ws, "t1", 1));
    let evidence = cc07(&verdict(&ws, "t1"))["evidence"].to_string();
    assert!(evidence.contains("src/app.py:4: house token"), "{evidence}");
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
}

#[test]
fn a_flood_of_findings_is_bounded_and_random_data_raises_none() {
    let (_root, ws, _logs) = git_workspace();
    let mut text = String::from(ORIGINAL);
    for i in 0..1000 {
        text.push_str(&format!(
            "T{i} = \"{}\"\n",
            token(&["gh", "p_"], 36, ALNUM, 100 + i)
        ));
    }
    fs::write(ws.join(APP), &text).expect("write");
    // 256 KiB of random base64, as 76-column lines and as one line (its speed is the benches'
    // business; a debug build under a loaded CI machine must finish well within the run limit).
    let blob = token(&[], 1 << 18, B64, 7);
    let lines: Vec<&str> = (0..blob.len())
        .step_by(76)
        .map(|i| &blob[i..(i + 76).min(blob.len())])
        .collect();
    fs::create_dir_all(ws.join("data")).expect("mkdir");
    fs::write(ws.join("data/blob.b64"), lines.join("\n") + "\n").expect("write");
    fs::write(ws.join("data/line.b64"), blob.clone() + "\n").expect("write");
    record(&ws, "t1", 1, &[APP], &BTreeMap::from([(APP, ORIGINAL)]));
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&[
        "verify",
        ws.to_str().expect("utf-8"),
        "--protocol",
        "code-change",
        "--write",
    ]);
    assert_eq!(code, 1, "{err}");
    let r = cc07(&verdict(&ws, "t1"));
    let evidence: Vec<String> = serde_json::from_value(r["evidence"]["details"].clone())
        .unwrap_or_else(|_| panic!("evidence details: {r}"));
    assert_eq!(evidence.len(), 21, "{evidence:?}");
    assert_eq!(evidence[0], "src/app.py:3: GitHub token");
    assert_eq!(evidence[20], "src/app.py: 980 more finding(s), not listed");
    assert!(
        evidence.iter().all(|e| e.starts_with("src/app.py")),
        "random base64 raised a finding: {evidence:?}"
    );
    assert!(out.contains("CC-07"), "{out}");
}
