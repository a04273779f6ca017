//! Rules that mean what they say (issue 32 part 4), through the binary on a real git workspace:
//! every way a user writes a path (`./Makefile`, `./ci/**`, `ci/`, `ci`) protects it, from
//! `--protect`, `--set` and a `--vars` file alike; what can never match (an absolute path, the
//! directory itself) is refused with a hint, exit 2; CC-01 counts protected paths, not diff
//! lines; `referee init` protects the agents' hook wiring and prints the hook and MCP set-up.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::code_change::{git, git_workspace, record, verdict, APP, ORIGINAL};
use crate::util::Output;
use crate::watch::{read, run};

const MAKEFILE: &str = "Makefile";
const DEPLOY: &str = "ci/deploy.sh";

/// A workspace with `Makefile` and `ci/deploy.sh` committed, both edited by task `t1`.
fn edited() -> (tempfile::TempDir, std::path::PathBuf) {
    let (root, ws, _logs) = git_workspace();
    fs::create_dir_all(ws.join("ci")).expect("mkdir");
    fs::write(ws.join(MAKEFILE), "all:\n\ttrue\n").expect("write");
    fs::write(ws.join(DEPLOY), "#!/bin/sh\necho deploy\n").expect("write");
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-q", "-m", "build"]);
    fs::write(
        ws.join(MAKEFILE),
        "all:\n\tfalse\n\techo 1\n\techo 2\n\techo 3\n",
    )
    .expect("write");
    fs::write(ws.join(DEPLOY), "#!/bin/sh\necho deploy --force\n").expect("write");
    record(
        &ws,
        "t1",
        1,
        &[MAKEFILE, DEPLOY],
        &BTreeMap::from([
            (MAKEFILE, "all:\n\ttrue\n"),
            (DEPLOY, "#!/bin/sh\necho deploy\n"),
        ]),
    );
    (root, ws)
}

fn verify(ws: &Path, extra: &[&str]) -> (i32, Value, String) {
    let mut args = vec![
        "verify",
        ws.to_str().expect("utf-8"),
        "--protocol",
        "code-change",
        "--write",
    ];
    args.extend_from_slice(extra);
    let Output {
        code,
        stdout,
        stderr,
        ..
    } = run(&args);
    (code, verdict(ws, "t1"), format!("{stdout}{stderr}"))
}

fn cc01(v: &Value) -> Value {
    v["results"]
        .as_array()
        .and_then(|r| r.iter().find(|r| r["check"] == "CC-01"))
        .cloned()
        .unwrap_or(Value::Null)
}

#[test]
fn every_written_form_of_a_path_protects_it() {
    let (root, ws) = edited();
    let vars = root.path().join("team.toml");
    for (flags, protected) in [
        (vec!["--protect", "./Makefile"], &[MAKEFILE][..]),
        (vec!["--protect", "./ci/**"], &[DEPLOY][..]),
        (vec!["--protect", "ci/"], &[DEPLOY][..]),
        (vec!["--protect", "ci"], &[DEPLOY][..]),
        (vec!["--protect", "./ci/"], &[DEPLOY][..]),
        (
            vec!["--set", r#"protected=["./Makefile", "ci//"]"#],
            &[MAKEFILE, DEPLOY][..],
        ),
        (vec!["--vars", "VARS"], &[MAKEFILE, DEPLOY][..]),
    ] {
        fs::write(&vars, "protected = [\"./ci\", \"./Makefile\"]\n").expect("write");
        let flags: Vec<&str> = flags
            .iter()
            .map(|f| {
                if *f == "VARS" {
                    vars.to_str().expect("utf-8")
                } else {
                    f
                }
            })
            .collect();
        let (code, v, out) = verify(&ws, &flags);
        assert_eq!(code, 1, "{flags:?}: {out}");
        let r = cc01(&v);
        assert_eq!(r["status"], "FAIL", "{flags:?}: {r}");
        let ev = r["evidence"].to_string();
        for p in protected {
            assert!(
                ev.contains(&format!("protected_file_modified: {p}")),
                "{flags:?}: {ev}"
            );
        }
        // One finding per protected path, however long its diff.
        assert!(
            ev.contains(&format!("{} protected path(s) changed", protected.len())),
            "{flags:?}: {ev}"
        );
    }
    // Without a rule, neither is protected.
    let (_, v, _) = verify(&ws, &[]);
    assert_eq!(cc01(&v)["status"], "PASS", "{v}");
}

#[test]
fn a_path_that_can_never_match_is_refused_with_a_hint() {
    let (root, ws) = edited();
    let abs = ws.join(MAKEFILE);
    for (flags, hint) in [
        (
            vec!["--protect".to_string(), abs.display().to_string()],
            "globs are relative to the build directory and may not leave it (write `ci/**`",
        ),
        (
            vec!["--protect".into(), "../Makefile".into()],
            "may not leave it",
        ),
        (
            vec!["--protect".into(), ".".into()],
            "it names the directory itself; write `**`",
        ),
        (
            vec!["--set".into(), format!("protected=[\"{}\"]", abs.display())],
            "--set: invalid glob",
        ),
    ] {
        let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
        let (code, _, out) = verify(&ws, &flags);
        assert_eq!(code, 2, "{flags:?}: {out}");
        assert!(out.contains(hint), "{flags:?}: {out}");
    }
    let vars = root.path().join("team.toml");
    fs::write(&vars, "protected = [\"/etc/passwd\"]\n").expect("write");
    let (code, _, out) = verify(&ws, &["--vars", vars.to_str().expect("utf-8")]);
    assert_eq!(code, 2, "{out}");
    assert!(
        out.contains(&format!(
            "--vars {}: invalid glob `/etc/passwd`",
            vars.display()
        )),
        "{out}"
    );
    assert!(
        !ws.join(".referee/OBSERVER-VERDICT-t1.json").exists(),
        "nothing judged or written"
    );
}

#[test]
fn init_protects_the_agents_wiring_and_prints_the_hook_and_mcp_setup() {
    let (root, ws, _logs) = git_workspace();
    fs::create_dir_all(ws.join(".claude")).expect("mkdir");
    fs::write(ws.join(".claude/settings.json"), "{\"hooks\": {}}\n").expect("write");
    git(&ws, &["add", "-A"]);
    git(&ws, &["commit", "-q", "-m", "hooks"]);
    let out_file = root.path().join("rules.toml");
    let o = out_file.to_str().expect("utf-8");
    let Output {
        code,
        stdout,
        stderr,
        ..
    } = run(&["init", ws.to_str().expect("utf-8"), "--output", o]);
    assert_eq!(code, 0, "{stderr}");
    for want in [
        format!(
            "referee watch {} --protocol code-change --vars {o}",
            ws.display()
        ),
        format!("referee hook claude-code --vars {o}"),
        format!("referee hook codex --vars {o}"),
        format!(
            "claude mcp add referee -- referee mcp --protocol code-change --root {}",
            ws.display()
        ),
    ] {
        assert!(stdout.contains(&want), "{want}\n{stdout}");
    }
    let text = read(&out_file);
    for glob in [
        ".claude/settings*.json",
        ".codex/**",
        ".cursor/hooks.json",
        ".gemini/settings.json",
        ".github/hooks/**",
    ] {
        assert!(text.contains(&format!("\"{glob}\"")), "{glob}\n{text}");
    }
    // The worker switches the hooks off for every later session: a veto.
    fs::write(
        ws.join(".claude/settings.local.json"),
        "{\"disableAllHooks\": true}\n",
    )
    .expect("write");
    fs::write(ws.join(APP), "def main():\n    return 2\n").expect("write");
    let mut doc: Value = {
        record(&ws, "t1", 1, &[APP], &BTreeMap::from([(APP, ORIGINAL)]));
        serde_json::from_str(&read(&ws.join(".tasks/t1.json"))).expect("record")
    };
    doc["changes"]["added"] = serde_json::json!([".claude/settings.local.json"]);
    crate::code_change::put_record(&ws, "t1", &doc.to_string());
    let (code, v, out) = verify(&ws, &["--vars", o]);
    assert_eq!(code, 1, "{out}");
    let ev = cc01(&v)["evidence"].to_string();
    assert!(
        ev.contains("protected_file_modified: .claude/settings.local.json"),
        "{ev}"
    );
}
