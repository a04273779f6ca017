//! The command line as a user meets it: help text, protocol errors that point at the
//! mistake, `verify`'s printed formats (snapshots), `--write` and exit codes.

use std::path::Path;

use crate::util::{run, Output};

use crate::builder::Build;

fn materialise(name: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = Build::named(name)
        .and_then(|b| b.materialise(tmp.path()))
        .unwrap_or_else(|e| panic!("build {name}: {e}"));
    (tmp, dir)
}

fn listing(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = walkdir::WalkDir::new(dir)
        .into_iter()
        .filter_map(Result::ok)
        .map(|e| e.path().strip_prefix(dir).unwrap().display().to_string())
        .collect();
    names.sort();
    names
}

/// Redacts what changes from run to run: times, the temp dir, the protocol hash.
fn redact(text: &str, dir: &Path) -> String {
    let text = text.replace(&dir.display().to_string(), "[BUILD_DIR]");
    let ts = regex::Regex::new(r"20\d\d-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z").unwrap();
    let today = regex::Regex::new(r"— 20\d\d-\d\d-\d\d\n").unwrap();
    let text = today.replace_all(&text, "— [DATE]\n");
    let text = ts.replace_all(&text, |c: &regex::Captures<'_>| {
        // Fixture times (2026-02-25…) are data; only the run's own clock is redacted.
        if c[0].starts_with("2026-02-25") {
            c[0].to_string()
        } else {
            "[NOW]".to_string()
        }
    });
    let sha = regex::Regex::new(r"(sha256.{1,6})[0-9a-f]{64}").unwrap();
    let proto = referee::protocol::Protocol::default_protocol()
        .unwrap()
        .sha256;
    text.replace(&proto, "[PROTOCOL_SHA256]")
        .replace(env!("CARGO_PKG_VERSION"), "[VERSION]")
        .lines()
        .map(|l| {
            if l.contains("[PROTOCOL_SHA256]") {
                l.to_string()
            } else {
                sha.replace_all(l, "$1…").into_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `--version` names the source languages the build parses; the default build has them all,
/// so a default that lost one (its `.py` or `.ts` files then inconclusive) fails here.
#[test]
fn version_lists_the_syntax_languages_built() {
    let Output {
        code, stdout: out, ..
    } = run(&["--version"]);
    assert_eq!(code, 0, "{out}");
    assert!(out.starts_with("referee "), "{out}");
    assert!(
        out.lines()
            .any(|l| l == "syntax: +python +rust +javascript +go"),
        "{out}"
    );
    let Output { stdout: short, .. } = run(&["-V"]);
    assert_eq!(short.lines().count(), 1, "{short}");
}

#[test]
fn help_texts() {
    for args in [
        vec!["--help"],
        vec!["verify", "--help"],
        vec!["protocol", "--help"],
    ] {
        let Output {
            code, stdout: out, ..
        } = run(&args);
        assert_eq!(code, 0, "{args:?}");
        insta::assert_snapshot!(format!("help_{}", args.join("_").replace("--", "")), out);
    }
}

#[test]
fn verify_clean_markdown_and_json() {
    let (_tmp, dir) = materialise("clean");
    let d = dir.to_str().unwrap();
    let Output {
        code,
        stdout: md,
        stderr: err,
        ..
    } = run(&["verify", d]);
    assert_eq!(code, 0, "{err}");
    insta::assert_snapshot!("verify_clean_md", redact(&md, &dir));

    let Output {
        code, stdout: json, ..
    } = run(&["verify", d, "--format", "json"]);
    assert_eq!(code, 0);
    let v: serde_json::Value = serde_json::from_str(&json).expect("valid JSON");
    assert_eq!(v["schema"], "referee.verify/1");
    assert_eq!(v["protocol"]["id"], "d10");
    assert_eq!(v["complete"], true);
    assert_eq!(v["verdict"], "SHIP");
    assert_eq!(v["results"].as_array().unwrap().len(), 53);
    insta::assert_snapshot!("verify_clean_json", redact(&json, &dir));
}

#[test]
fn verify_writes_nothing_unless_asked() {
    let (_tmp, dir) = materialise("clean");
    let before = listing(&dir);
    let Output { code, .. } = run(&["verify", dir.to_str().unwrap()]);
    assert_eq!(code, 0);
    assert_eq!(
        listing(&dir),
        before,
        "verify without --write must not write"
    );

    let Output {
        code, stderr: err, ..
    } = run(&["verify", dir.to_str().unwrap(), "--write"]);
    assert_eq!(code, 0, "{err}");
    let added: Vec<String> = listing(&dir)
        .into_iter()
        .filter(|n| !before.contains(n))
        .collect();
    assert_eq!(
        added,
        [
            "OBSERVER-PASS-0.md",
            "OBSERVER-PASS-1.md",
            "OBSERVER-PASS-2.md",
            "OBSERVER-PASS-3.md",
            "OBSERVER-PASS-4.md",
            "OBSERVER-REPORT.md"
        ]
    );
    let pass2 = std::fs::read_to_string(dir.join("OBSERVER-PASS-2.md")).unwrap();
    assert!(
        pass2.starts_with("# Observer Pass 2: Post-Phase 3A"),
        "{pass2}"
    );
    assert!(pass2.contains("| OBS-27 | BLOCKING | PASS |"), "{pass2}");
    // The referee's own files are never inputs: verifying again gives the same results.
    let Output {
        code, stdout: json, ..
    } = run(&["verify", dir.to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0);
    assert!(json.contains("\"fail\": 0"), "{json}");
}

#[test]
fn verify_reports_a_blocking_failure_with_exit_1() {
    let (_tmp, dir) = materialise("clean");
    let gates = dir.join("p3a-gate-results.json");
    let text = std::fs::read_to_string(&gates).unwrap();
    let text = text.replacen("\"gate-runner\"", "\"manual\"", 1);
    std::fs::write(&gates, text).unwrap();
    let Output {
        code, stdout: md, ..
    } = run(&["verify", dir.to_str().unwrap()]);
    assert_eq!(code, 1, "{md}");
    assert!(md.contains("| OBS-27 | No manual gate results |"), "{md}");
    assert!(md.contains("p3a-gate-results.json[0]"), "{md}");
    assert!(md.contains("- FAIL: 1 (1 BLOCKING, 0 SIGNIFICANT)"), "{md}");
}

#[test]
fn verify_usage_errors_exit_2() {
    let Output {
        code, stderr: err, ..
    } = run(&["verify", "/nonexistent/build"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("cannot read build directory `/nonexistent/build`"),
        "{err}"
    );
    let Output {
        code, stderr: err, ..
    } = run(&["verify"]);
    assert_eq!(code, 2);
    assert!(err.contains("BUILD_DIR"), "{err}");
    let Output {
        code, stderr: err, ..
    } = run(&["verify", ".", "--protocol", "nope"]);
    assert_eq!(code, 2);
    assert!(err.contains("unknown protocol `nope`"), "{err}");
}

#[test]
fn protocol_list_show_check_explain() {
    let Output {
        code, stdout: out, ..
    } = run(&["protocol", "list"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("d10\t1.0.0\t6 passes, 31 checks"), "{out}");

    let Output {
        code, stdout: text, ..
    } = run(&["protocol", "show", "d10"]);
    assert_eq!(code, 0);
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("mine.toml");
    std::fs::write(&file, &text).unwrap();
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&["protocol", "check", file.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("ok: protocol `d10` 1.0.0 — 6 passes, 31 checks, 53 check instances"),
        "{out}"
    );

    let Output {
        code, stdout: out, ..
    } = run(&["protocol", "explain", "OBS-07"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!("explain_obs_07", out);

    let Output {
        code, stderr: err, ..
    } = run(&["protocol", "explain", "OBS-99"]);
    assert_eq!(code, 2);
    assert!(err.contains("no check `OBS-99`"), "{err}");

    // What a BLOCKING FAIL does depends on the protocol: D10 raises STOP; code-change REJECTs
    // the attempt, and only its veto (CC-01) raises STOP.
    let Output { stdout: out, .. } = run(&["protocol", "explain", "OBS-27"]);
    assert!(out.contains("it raises OBSERVER-STOP.md"), "{out}");
    let explain_cc =
        |id: &str| run(&["protocol", "explain", id, "--protocol", "code-change"]).stdout;
    let veto = explain_cc("CC-01");
    assert!(veto.contains("REJECTed, and it is a veto"), "{veto}");
    let listed = explain_cc("CC-02");
    assert!(
        listed.contains("REJECTed (OBSERVER-STOP.md is raised only by a veto"),
        "{listed}"
    );
    assert!(!listed.contains("it raises OBSERVER-STOP.md"), "{listed}");
}

/// `protocol explain` finds a check in whichever embedded protocol has it, without
/// `--protocol`; `--protocol` still picks one, and a check in none is named with every
/// protocol's ids.
#[test]
fn protocol_explain_finds_the_protocol_of_a_check() {
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&["protocol", "explain", "CC-01"]);
    assert_eq!(code, 0, "{err}");
    assert!(out.starts_with("CC-01 [BLOCKING]"), "{out}");
    assert!(out.contains("REJECTed, and it is a veto"), "{out}");
    let Output {
        code, stdout: out, ..
    } = run(&["protocol", "explain", "OBS-07"]);
    assert_eq!(code, 0);
    assert!(out.starts_with("OBS-07 [BLOCKING]"), "{out}");
    let Output {
        code, stderr: err, ..
    } = run(&["protocol", "explain", "CC-01", "--protocol", "d10"]);
    assert_eq!(code, 2);
    assert!(err.contains("no check `CC-01` in protocol `d10`"), "{err}");
    let Output {
        code, stderr: err, ..
    } = run(&["protocol", "explain", "XX-01"]);
    assert_eq!(code, 2);
    assert!(
        err.contains("no check `XX-01` in the embedded protocols")
            && err.contains("OBS-30")
            && err.contains("CC-09"),
        "{err}"
    );
}

/// The check counts `protocol list` prints are computed from the protocol, and any count
/// written in prose — a protocol's title or description, the README's line on D10 — is the
/// true one (D10's description said 11 BLOCKING; it has 15).
#[test]
fn written_check_counts_are_the_true_counts() {
    use referee::protocol::{Protocol, Severity, EMBEDDED};
    let Output {
        code, stdout: list, ..
    } = run(&["protocol", "list"]);
    assert_eq!(code, 0);
    let written = regex::Regex::new(r"(\d+) (checks|BLOCKING)").unwrap();
    for (id, _, _) in EMBEDDED {
        let p = Protocol::load(id).unwrap();
        let checks = p.checks().len();
        let blocking = p
            .checks()
            .iter()
            .filter(|c| c.severity == Severity::Blocking)
            .count();
        let row = list
            .lines()
            .find(|l| l.starts_with(&format!("{id}\t")))
            .unwrap_or_else(|| panic!("{id} not listed: {list}"));
        assert!(
            row.contains(&format!("{checks} checks ({blocking} BLOCKING)")),
            "{row}"
        );
        for prose in [&p.title, &p.description] {
            for c in written.captures_iter(prose) {
                let want = if &c[2] == "checks" { checks } else { blocking };
                assert_eq!(
                    c[1].parse::<usize>().unwrap(),
                    want,
                    "{id}: `{}` in {prose}",
                    &c[0]
                );
            }
        }
    }
    let d10 = Protocol::load("d10").unwrap();
    let blocking = d10
        .checks()
        .iter()
        .filter(|c| c.severity == Severity::Blocking)
        .count();
    let readme =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("README.md")).unwrap();
    let said = format!(
        "D10 Observer\nProtocol ({} checks, {blocking} BLOCKING)",
        d10.checks().len()
    );
    assert!(readme.contains(&said), "the README should say `{said}`");
}

/// A copy of the D10 protocol with one edit; the error must name the right line and column.
fn broken(edit: impl Fn(&str) -> String) -> (i32, String) {
    let d10 = referee::protocol::EMBEDDED[0].2;
    let text = edit(d10);
    assert_ne!(text, d10, "the edit must change the protocol");
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("p.toml");
    std::fs::write(&file, &text).unwrap();
    let Output {
        code, stderr: err, ..
    } = run(&["protocol", "check", file.to_str().unwrap()]);
    let err = err.replace(&file.display().to_string(), "p.toml");
    // verify refuses the same protocol before it looks at anything.
    let Output {
        code: vcode,
        stderr: verr,
        ..
    } = run(&["verify", ".", "--protocol", file.to_str().unwrap()]);
    assert_eq!(vcode, 2, "{verr}");
    (code, err)
}

/// An edit of the protocol text.
type Edit = Box<dyn Fn(&str) -> String>;

fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .expect("needle in protocol")
        + 1
}

#[test]
fn protocol_errors_point_at_the_mistake() {
    let d10 = referee::protocol::EMBEDDED[0].2;
    let cases: Vec<(&str, Edit, String, &str)> = vec![
        (
            "unknown key",
            Box::new(|t: &str| {
                t.replacen(
                    "severity = \"blocking\"",
                    "severity = \"blocking\"\nseverty = 1",
                    1,
                )
            }),
            format!("p.toml:{}:1:", line_of(d10, "severity = \"blocking\"") + 1),
            "unknown field `severty`",
        ),
        (
            "duplicate check id",
            Box::new(|t: &str| t.replacen("id = \"OBS-02\"", "id = \"OBS-01\"", 1)),
            format!("p.toml:{}:", line_of(d10, "id = \"OBS-02\"")),
            "duplicate check id `OBS-01`",
        ),
        (
            "invalid glob",
            Box::new(|t: &str| {
                t.replacen(
                    "{ exists = \"p0-content-map*.md\" }",
                    "{ exists = \"p0-[content\" }",
                    1,
                )
            }),
            format!("p.toml:{}:", line_of(d10, "p0-content-map*.md")),
            "invalid glob `p0-[content`",
        ),
        (
            "invalid regex",
            Box::new(|t: &str| t.replacen("'(?i-u)opus'", "'(?i-u)opus('", 1)),
            format!("p.toml:{}:", line_of(d10, "'(?i-u)opus'")),
            "invalid regex `(?i-u)opus(`",
        ),
        (
            "unknown predicate",
            Box::new(|t: &str| {
                t.replacen(
                    "{ fill_rate = { min = 0.8 } }",
                    "{ fill_ratio = { min = 0.8 } }",
                    1,
                )
            }),
            format!("p.toml:{}:", line_of(d10, "fill_rate = { min = 0.8 }")),
            "unknown variant `fill_ratio`",
        ),
        (
            "dangling check reference",
            Box::new(|t: &str| {
                t.replacen(
                    "checks = [\"OBS-16\"]",
                    "checks = [\"OBS-16\", \"OBS-99\"]",
                    1,
                )
            }),
            format!("p.toml:{}:", line_of(d10, "checks = [\"OBS-16\"]")),
            "pass `0` names unknown check `OBS-99`",
        ),
        (
            "undefined variable",
            Box::new(|t: &str| {
                t.replacen(
                    "{ filled = \"EXPERIENTIAL_SCAN${sfx}\" }",
                    "{ filled = \"EXPERIENTIAL_SCAN${suffix}\" }",
                    1,
                )
            }),
            format!(
                "p.toml:{}:",
                line_of(d10, "{ filled = \"EXPERIENTIAL_SCAN${sfx}\" }")
            ),
            "undefined variable `${suffix}`",
        ),
        (
            "unknown variant of a repeat",
            Box::new(|t: &str| t.replacen("vars = \"refine\"", "vars = \"refined\"", 1)),
            format!("p.toml:{}:", line_of(d10, "vars = \"refine\"")),
            "unknown variant `refined`",
        ),
        (
            "unsupported schema",
            Box::new(|t: &str| t.replacen("schema_version = 1", "schema_version = 2", 1)),
            format!("p.toml:{}:18:", line_of(d10, "schema_version = 1")),
            "unsupported schema_version `2`",
        ),
        (
            "not TOML",
            Box::new(|t: &str| format!("{t}\n[[check]\n")),
            format!("p.toml:{}:", d10.lines().count() + 2),
            "",
        ),
    ];
    for (what, edit, at, message) in cases {
        let (code, err) = broken(edit);
        assert_eq!(code, 2, "{what}: {err}");
        assert!(
            err.contains(&at),
            "{what}: expected position `{at}` in: {err}"
        );
        assert!(
            err.contains(message),
            "{what}: expected `{message}` in: {err}"
        );
    }
}

#[test]
fn verify_warns_about_a_directory_with_nothing_to_judge() {
    let tmp = tempfile::tempdir().unwrap();
    let Output {
        code,
        stdout: json,
        stderr: err,
        ..
    } = run(&["verify", tmp.path().to_str().unwrap(), "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("is this the build directory?"), "{err}");
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["summary"]["waiting"], 26);
    assert_eq!(v["summary"]["skip"], 27);
    assert_eq!(v["summary"]["compliance_rate"], serde_json::Value::Null);
}

/// A weaver file whose verdict cannot be read is named in the printed report, never a silent
/// "in progress".
#[test]
fn verify_names_an_unreadable_weaver_file() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let doc = crate::builder::BuildDoc::parse(
        r#"
base = "clean"
[[replace]]
path = "p3c-weaver.md"
find = "**VERDICT:** SHIP"
with = "Verdict pending"
"#,
        "inline",
    )
    .expect("build doc");
    let dir = Build::from_doc(&doc)
        .and_then(|b| b.materialise(tmp.path()))
        .expect("materialise");
    let Output { stdout: out, .. } = run(&["verify", dir.to_str().unwrap()]);
    assert!(
        out.contains(
            "- Pipeline: not complete: p3c-weaver.md exists but has no readable VERDICT line"
        ),
        "{out}"
    );
}

/// The protocol examples in the user guide (the user's own, the build protocol's and the task
/// protocol's `toml` blocks that declare a `[[check]]`) are protocols `protocol check` accepts,
/// with the header the guide tells a user to add where the block leaves it out.
#[test]
fn the_guide_protocol_examples_are_valid() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/docs/GUIDE.md"))
        .expect("docs/GUIDE.md");
    let tmp = tempfile::tempdir().unwrap();
    let mut checked = 0;
    for (i, block) in readme.split("```toml\n").skip(1).enumerate() {
        let body = block.split("```").next().unwrap_or("");
        if !body.contains("[[check]]") {
            continue;
        }
        let text = if body.contains("schema_version") {
            body.to_string()
        } else {
            format!(
                "schema_version = 1\nid = \"example\"\nversion = \"1.0.0\"\ntitle = \"t\"\n{body}"
            )
        };
        let file = tmp.path().join(format!("example-{i}.toml"));
        std::fs::write(&file, text).unwrap();
        let Output {
            code,
            stdout: out,
            stderr: err,
            ..
        } = run(&["protocol", "check", file.to_str().unwrap()]);
        assert_eq!(code, 0, "GUIDE toml block {i}: {out}{err}\n{body}");
        checked += 1;
    }
    assert_eq!(
        checked, 3,
        "the user's, the build and the task protocol examples"
    );
}
