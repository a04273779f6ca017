//! The flags every command takes (`-q`, `-v`, `--color`, `--log-format`), `REFEREE_LOG`,
//! `NO_COLOR`, sizes and durations with units, `completions` and `man`: each parsed on every
//! command and shown doing what it says.

use std::path::{Path, PathBuf};

use crate::builder::Build;
use crate::util::{Output, TestCommand};

/// The referee with an environment that says nothing about colour or logging, so the
/// developer's or CI's own settings cannot change what a test sees.
fn referee() -> TestCommand {
    let mut cmd = TestCommand::new();
    cmd.env_remove("NO_COLOR")
        .env_remove("CLICOLOR_FORCE")
        .env_remove("CLICOLOR")
        .env_remove("REFEREE_LOG")
        .env("TERM", "xterm");
    cmd
}

fn run_env(args: &[String], env: &[(&str, &str)]) -> Output {
    let mut cmd = referee();
    cmd.args(args);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output()
}

fn run(args: &[&str]) -> Output {
    run_env(&strings(args), &[])
}

fn strings(args: &[&str]) -> Vec<String> {
    args.iter().map(|s| s.to_string()).collect()
}

/// A finished clean D10 build in a new temp dir.
fn clean_build(tmp: &Path, name: &str) -> PathBuf {
    Build::named("clean")
        .and_then(|b| b.materialise(&tmp.join(name)))
        .unwrap_or_else(|e| panic!("build clean: {e}"))
}

/// One run of every command, each finishing by itself, with its exit code when all is well.
struct Case {
    name: &'static str,
    args: Vec<String>,
    code: i32,
}

/// Every command, on fresh directories under `tmp` (`n` keeps the directories of separate
/// calls apart: `watch` and `replay` write into theirs).
fn every_command(tmp: &Path, n: usize) -> Vec<Case> {
    let verify_dir = clean_build(tmp, &format!("verify-{n}"));
    let watch_dir = clean_build(tmp, &format!("watch-{n}"));
    let p = |d: &Path| d.display().to_string();
    let case = |name, args: &[&str], code| Case {
        name,
        args: strings(args),
        code,
    };
    vec![
        case("verify", &["verify", &p(&verify_dir)], 0),
        case("status", &["status", &p(&verify_dir)], 0),
        // A finished build: the daemon judges it, writes its report and ends by itself.
        case("watch", &["watch", &p(&watch_dir), "--timeout", "20s"], 0),
        case("protocol", &["protocol", "list"], 0),
        case("protocol", &["protocol", "show", "d10"], 0),
        case("protocol", &["protocol", "check", "d10"], 0),
        case("protocol", &["protocol", "explain", "OBS-07"], 0),
        case(
            "replay",
            &[
                "replay",
                "clean",
                &p(&tmp.join(format!("replay-{n}"))),
                "--speed",
                "0",
                "--until",
                "50m",
            ],
            0,
        ),
        case(
            "demo",
            &[
                "demo",
                "--speed",
                "0",
                "--keep",
                &p(&tmp.join(format!("demo-{n}"))),
            ],
            0,
        ),
        case("completions", &["completions", "bash"], 0),
        case("man", &["man"], 0),
    ]
}

/// Each set of global flags is its own test (they ran one after another in one test, the
/// longest of the suite): `flags::every_command_takes_the_global_flags` still runs them all.
mod every_command_takes_the_global_flags_before_or_after_its_name {
    use super::{every_command, run, run_env, strings};

    /// Every command, with `flags` before and then after its name, exits as it does without.
    fn with(flags: &[&str]) {
        let tmp = tempfile::tempdir().unwrap();
        for (before, c) in [false, true].into_iter().flat_map(|b| {
            every_command(tmp.path(), usize::from(b))
                .into_iter()
                .map(move |c| (b, c))
        }) {
            let mut args = Vec::new();
            if before {
                args.extend(strings(flags));
                args.extend(c.args.clone());
            } else {
                args.extend(c.args.clone());
                args.extend(strings(flags));
            }
            let out = run_env(&args, &[]);
            assert_eq!(out.code, c.code, "{args:?}: {}", out.stderr);
        }
    }

    #[test]
    fn q() {
        with(&["-q"]);
    }

    #[test]
    fn quiet() {
        with(&["--quiet"]);
    }

    #[test]
    fn v() {
        with(&["-v"]);
    }

    #[test]
    fn vv() {
        with(&["-vv"]);
    }

    #[test]
    fn color_never() {
        with(&["--color", "never"]);
    }

    #[test]
    fn log_format_json_color_always() {
        with(&["--log-format=json", "--color=always"]);
    }

    /// -q and -v say opposite things.
    #[test]
    fn q_and_v_conflict() {
        let out = run(&["protocol", "list", "-q", "-v"]);
        assert_eq!(out.code, 2);
        assert!(out.stderr.contains("cannot be used with"), "{}", out.stderr);
    }
}

#[test]
fn json_logs_are_one_object_a_line_on_every_command() {
    let tmp = tempfile::tempdir().unwrap();
    for c in every_command(tmp.path(), 0) {
        let mut args = c.args.clone();
        args.extend(strings(&["-v", "--log-format", "json"]));
        let out = run_env(&args, &[]);
        assert_eq!(out.code, c.code, "{args:?}: {}", out.stderr);
        let lines: Vec<serde_json::Value> = out
            .stderr
            .lines()
            .map(|l| {
                serde_json::from_str(l).unwrap_or_else(|e| panic!("{args:?}: not JSON ({e}): {l}"))
            })
            .collect();
        assert!(
            lines
                .iter()
                .all(|l| l["timestamp"].is_string() && l["level"].is_string()),
            "{args:?}: {}",
            out.stderr
        );
        assert!(
            lines.iter().any(|l| l["level"] == "DEBUG"
                && l["message"] == "starting"
                && l["command"] == c.name),
            "{args:?}: {}",
            out.stderr
        );
        // Diagnostics never mix into stdout.
        assert!(!out.stdout.contains("\"level\""), "{args:?}");
    }
}

// Two tests (they were one): each runs every command, so apart they run side by side.
#[test]
fn quiet_leaves_stderr_empty() {
    let tmp = tempfile::tempdir().unwrap();
    for c in every_command(tmp.path(), 0) {
        let mut args = c.args.clone();
        args.push("-q".into());
        let out = run_env(&args, &[]);
        assert_eq!(out.code, c.code, "{args:?}");
        assert_eq!(out.stderr, "", "{args:?}");
    }
}

/// `watch` and `replay` print progress lines, and none with -q; `verify` still prints its
/// report.
#[test]
fn quiet_silences_progress_lines() {
    let tmp = tempfile::tempdir().unwrap();
    let loud = every_command(tmp.path(), 1);
    let quiet = every_command(tmp.path(), 2);
    for (l, q) in loud.iter().zip(&quiet) {
        let mut args = q.args.clone();
        args.push("--quiet".into());
        let (l_out, q_out) = (run_env(&l.args, &[]), run_env(&args, &[]));
        match l.name {
            "watch" | "replay" => {
                assert!(
                    l_out.stdout.lines().count() > 2,
                    "{}: {}",
                    l.name,
                    l_out.stdout
                );
                assert_eq!(q_out.stdout, "", "{}", l.name);
            }
            "verify" => {
                assert!(
                    q_out.stdout.starts_with("# Observer Verification Report"),
                    "{}",
                    q_out.stdout
                );
                assert_eq!(q_out.stdout.lines().count(), l_out.stdout.lines().count());
            }
            _ => {}
        }
    }
}

/// A directory that is no build: `verify` warns (exit 0, nothing failed).
fn not_a_build() -> (tempfile::TempDir, String) {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path().display().to_string();
    (tmp, d)
}

const NOT_A_BUILD: &str = "no pass has run and there is no EXECUTION-TRACKER.md";

#[test]
fn warnings_read_as_before_in_text_and_as_objects_in_json() {
    let (_tmp, d) = not_a_build();
    let out = run(&["verify", &d]);
    assert_eq!(out.code, 0);
    assert_eq!(
        out.stderr,
        format!("referee: warning: {NOT_A_BUILD} in `{d}`: is this the build directory?\n")
    );
    let out = run(&["verify", &d, "--log-format", "json"]);
    let v: serde_json::Value = serde_json::from_str(out.stderr.trim()).expect("one JSON line");
    assert_eq!(v["level"], "WARN");
    assert!(
        v["message"].as_str().unwrap().starts_with(NOT_A_BUILD),
        "{v}"
    );
    assert_eq!(v["target"], "referee::judge::build");
    // -q keeps warnings.
    let out = run(&["verify", &d, "-q"]);
    assert!(out.stderr.contains(NOT_A_BUILD), "{}", out.stderr);
    // A fatal error is an ERROR object in JSON, `referee: …` in text.
    let missing = format!("{d}/nope");
    let out = run(&["verify", &missing, "--log-format", "json"]);
    assert_eq!(out.code, 2);
    let v: serde_json::Value = serde_json::from_str(out.stderr.trim()).expect("one JSON line");
    assert_eq!(v["level"], "ERROR");
    assert!(v["message"].as_str().unwrap().contains("nope"), "{v}");
    let out = run(&["verify", &missing]);
    assert!(out.stderr.starts_with("referee: cannot"), "{}", out.stderr);
}

#[test]
fn verbose_shows_each_evaluation_with_its_timing() {
    let tmp = tempfile::tempdir().unwrap();
    let d = clean_build(tmp.path(), "b").display().to_string();
    let out = run(&["verify", &d]);
    assert_eq!(out.stderr, "", "info says nothing on a clean verify");
    let out = run(&["verify", &d, "-v"]);
    assert_eq!(out.code, 0);
    let eval = out
        .stderr
        .lines()
        .find(|l| l.starts_with("referee: debug: evaluate{protocol=d10}: close"))
        .unwrap_or_else(|| panic!("{}", out.stderr));
    assert!(eval.contains("time.busy="), "{eval}");
    assert!(
        out.stderr.contains("referee: debug: scan{dir="),
        "{}",
        out.stderr
    );
}

#[test]
fn referee_log_overrides_q_and_v() {
    let (_tmp, d) = not_a_build();
    let args = strings(&["verify", &d, "-q"]);
    let out = run_env(&args, &[("REFEREE_LOG", "debug")]);
    assert!(
        out.stderr.contains("referee: debug: starting"),
        "{}",
        out.stderr
    );
    let args = strings(&["verify", &d, "-v"]);
    let out = run_env(&args, &[("REFEREE_LOG", "off")]);
    assert_eq!(out.stderr, "");
    // Per module: the engine's spans, and nothing of the cli's.
    let out = run_env(
        &strings(&["verify", &d]),
        &[("REFEREE_LOG", "referee::engine=debug")],
    );
    assert!(
        out.stderr.contains("evaluate{protocol=d10}"),
        "{}",
        out.stderr
    );
    assert!(!out.stderr.contains(NOT_A_BUILD), "{}", out.stderr);
    // A filter that does not parse is said, and -q/-v decide instead.
    let out = run_env(
        &strings(&["verify", &d]),
        &[("REFEREE_LOG", "referee=loud")],
    );
    assert_eq!(out.code, 0);
    assert!(
        out.stderr
            .contains("referee: warning: REFEREE_LOG=`referee=loud` is not a valid filter"),
        "{}",
        out.stderr
    );
    assert!(out.stderr.contains(NOT_A_BUILD), "{}", out.stderr);
}

#[test]
fn color_follows_the_flag_then_no_color_then_clicolor_force() {
    let (_tmp, d) = not_a_build();
    let esc = |o: &Output| o.stderr.contains('\u{1b}');
    let warn = |extra: &[&str], env: &[(&str, &str)]| {
        let mut args = strings(&["verify", &d]);
        args.extend(strings(extra));
        let out = run_env(&args, env);
        assert!(out.stderr.contains(NOT_A_BUILD), "{}", out.stderr);
        out
    };
    assert!(!esc(&warn(&[], &[])), "auto into a pipe: no colour");
    assert!(esc(&warn(&["--color", "always"], &[])));
    assert!(
        esc(&warn(&["--color=always"], &[("NO_COLOR", "1")])),
        "the flag wins"
    );
    assert!(!esc(&warn(
        &["--color", "never"],
        &[("CLICOLOR_FORCE", "1")]
    )));
    assert!(esc(&warn(&[], &[("CLICOLOR_FORCE", "1")])), "auto, forced");
    assert!(
        !esc(&warn(&[], &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")])),
        "NO_COLOR beats CLICOLOR_FORCE"
    );
    assert!(
        !esc(&warn(&["--color", "always", "--log-format", "json"], &[])),
        "JSON is never coloured"
    );
    // clap's own errors and help follow the same choice.
    let usage = |extra: &[&str], env: &[(&str, &str)]| {
        let mut args = strings(&["verify"]);
        args.extend(strings(extra));
        let out = run_env(&args, env);
        assert_eq!(out.code, 2);
        out
    };
    assert!(esc(&usage(&["--color", "always"], &[])));
    assert!(esc(&usage(&[], &[("CLICOLOR_FORCE", "1")])));
    assert!(!esc(&usage(
        &[],
        &[("CLICOLOR_FORCE", "1"), ("NO_COLOR", "1")]
    )));
    assert!(!esc(&usage(
        &["--color", "never"],
        &[("CLICOLOR_FORCE", "1")]
    )));
    let out = run(&["--color", "sometimes", "protocol", "list"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("invalid value 'sometimes'"),
        "{}",
        out.stderr
    );
}

/// The verdicts of `verify --format json`, by check id.
fn verdicts(args: &[&str]) -> (i32, Vec<(String, String)>) {
    let out = run(args);
    let v: serde_json::Value = serde_json::from_str(&out.stdout)
        .unwrap_or_else(|e| panic!("{args:?} ({e}): {}", out.stderr));
    let mut r: Vec<(String, String)> = v["results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                format!("{}/{}", r["pass"], r["check"]),
                r["status"].to_string(),
            )
        })
        .collect();
    r.sort();
    (out.code, r)
}

#[test]
fn read_limits_take_units_and_plain_bytes() {
    let tmp = tempfile::tempdir().unwrap();
    let d = clean_build(tmp.path(), "b").display().to_string();
    let at = |size: &str| verdicts(&["verify", &d, "--format", "json", "--max-read-bytes", size]);
    let default = verdicts(&["verify", &d, "--format", "json"]);
    assert_eq!(at("64MiB"), default);
    assert_eq!(at("67108864"), default);
    let small = at("1KiB");
    assert_eq!(small, at("1024"));
    assert_eq!(small, at("1 kib"));
    assert_ne!(small, default, "a 1 KiB limit leaves files unread");
    assert!(
        small.1.iter().any(|(_, s)| s == "\"INCONCLUSIVE\""),
        "{:?}",
        small.1
    );
    for (bad, says) in [
        ("64XB", "unknown unit `XB` in size `64XB`"),
        ("-1", "size `-1` is negative"),
        ("MiB", "a number must come first"),
        ("99999999EiB", "is too large"),
    ] {
        let out = run(&["verify", &d, &format!("--max-read-bytes={bad}")]);
        assert_eq!(out.code, 2, "{bad}");
        assert!(
            out.stderr.contains("--max-read-bytes <SIZE>"),
            "{bad}: {}",
            out.stderr
        );
        assert!(out.stderr.contains(says), "{bad}: {}", out.stderr);
        assert_eq!(out.stdout, "");
    }
}

#[test]
fn durations_take_units_everywhere_and_bad_ones_exit_2() {
    let tmp = tempfile::tempdir().unwrap();
    let d = clean_build(tmp.path(), "b").display().to_string();
    // `--poll` with its value given either way, or none (even before the directory).
    for (n, poll) in [
        &["--poll", "50"][..],
        &["--poll=50"],
        &["--poll", "50ms"],
        &["--poll"],
    ]
    .iter()
    .enumerate()
    {
        let dir = clean_build(tmp.path(), &format!("poll-{n}"))
            .display()
            .to_string();
        let mut args = strings(&["watch"]);
        args.extend(strings(poll));
        args.extend(strings(&[&dir, "--timeout", "20s", "--settle", "100ms"]));
        let out = run_env(&args, &[]);
        assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
        let first = out.stdout.lines().next().unwrap_or_default();
        let every = if poll.len() == 1 && poll[0] == "--poll" {
            "200"
        } else {
            "50"
        };
        assert!(
            first.contains(&format!("(polling every {every} ms)")),
            "{args:?}: {first}"
        );
    }
    let out = run(&["status", &d, "--stale", "1m30s"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    for (args, says) in [
        (
            &["watch", &d, "--timeout", "5x"][..],
            "unknown unit `x` in duration `5x`",
        ),
        (
            &["watch", &d, "--heartbeat", "2parsecs"],
            "unknown unit `parsecs`",
        ),
        (&["watch", &d, "--settle", "30M"], "unknown unit `M`"),
        (&["watch", &d, "--poll=1h30"], "needs a unit after `30`"),
        (
            &["status", &d, "--stale", "soon"],
            "invalid value 'soon' for '--stale <DURATION>'",
        ),
    ] {
        let out = run(args);
        assert_eq!(out.code, 2, "{args:?}");
        assert!(out.stderr.contains(says), "{args:?}: {}", out.stderr);
    }
}

#[test]
fn protocol_check_takes_an_embedded_id_or_a_file() {
    let out = run(&["protocol", "check", "code-change"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout
            .starts_with("code-change: ok: protocol `code-change`"),
        "{}",
        out.stdout
    );
    let tmp = tempfile::tempdir().unwrap();
    let file = tmp.path().join("mine.toml");
    std::fs::write(&file, run(&["protocol", "show", "d10"]).stdout).unwrap();
    let f = file.display().to_string();
    let out = run(&["protocol", "check", &f]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.starts_with(&format!("{f}: ok: protocol `d10`")),
        "{}",
        out.stdout
    );
    let out = run(&["protocol", "check", "d11"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("d11"), "{}", out.stderr);
}

#[test]
fn completions_for_each_shell_name_the_commands() {
    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let out = run(&["completions", shell]);
        assert_eq!(out.code, 0, "{shell}: {}", out.stderr);
        for word in [
            "verify",
            "watch",
            "status",
            "protocol",
            "completions",
            "log-format",
        ] {
            assert!(out.stdout.contains(word), "{shell}: no `{word}`");
        }
    }
    let out = run(&["completions", "tcsh"]);
    assert_eq!(out.code, 2);
    assert!(out.stderr.contains("possible values"), "{}", out.stderr);
}

#[test]
fn man_renders_roff_pages() {
    let out = run(&["man"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(out.stdout.contains(".TH referee 1"), "{}", out.stdout);
    for section in [".SH NAME", ".SH SYNOPSIS", ".SH OPTIONS", ".SH SUBCOMMANDS"] {
        assert!(out.stdout.contains(section), "no {section}");
    }
    assert!(
        out.stdout.contains("referee\\-verify"),
        "names the commands"
    );
    let out = run(&["man", "verify"]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    assert!(
        out.stdout.contains(".TH referee-verify 1"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("max\\-read\\-bytes"), "{}", out.stdout);
    let out = run(&["man", "nope"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr
            .contains("no command `nope` (commands: watch, verify"),
        "{}",
        out.stderr
    );
}

/// The subcommand paths `--help` lists, from `referee --help` down (`protocol explain`).
fn subcommand_paths(parent: &[String]) -> Vec<Vec<String>> {
    let mut args = parent.to_vec();
    args.push("--help".into());
    let out = run_env(&args, &[]);
    let Some((_, rest)) = out.stdout.split_once("Commands:\n") else {
        return Vec::new();
    };
    let mut paths = Vec::new();
    for line in rest.lines().take_while(|l| l.starts_with("  ")) {
        let Some(name) = line.split_whitespace().next() else {
            continue;
        };
        if name == "help" || line.starts_with("   ") {
            continue;
        }
        let mut path = parent.to_vec();
        path.push(name.to_string());
        paths.extend(subcommand_paths(&path));
        paths.push(path);
    }
    paths
}

/// `referee man` takes every subcommand path, as words (`protocol explain`) or as the page's
/// name (`protocol-explain`), and gives that command's own page.
#[test]
fn man_takes_every_subcommand_path() {
    let paths = subcommand_paths(&[]);
    assert!(
        paths.iter().any(|p| p == &["protocol", "explain"]),
        "{paths:?}"
    );
    for path in &paths {
        let page = format!(".TH referee-{} 1", path.join("-"));
        let mut words = vec!["man".to_string()];
        words.extend(path.iter().cloned());
        let joined = strings(&["man", &path.join("-")]);
        for args in [words, joined] {
            let out = run_env(&args, &[]);
            assert_eq!(out.code, 0, "{args:?}: {}", out.stderr);
            assert!(out.stdout.contains(&page), "{args:?}: no `{page}`");
        }
    }
    let out = run(&["man", "protocol", "nope"]);
    assert_eq!(out.code, 2);
    assert!(
        out.stderr.contains("no command `protocol nope`")
            && out.stderr.contains("protocol explain"),
        "{}",
        out.stderr
    );
}

#[test]
fn every_positional_argument_is_described() {
    let commands: [&[&str]; 11] = [
        &["watch"],
        &["verify"],
        &["status"],
        &["replay"],
        &["demo"],
        &["completions"],
        &["man"],
        &["protocol", "show"],
        &["protocol", "check"],
        &["protocol", "explain"],
        &["protocol", "list"],
    ];
    let mut seen = 0;
    for cmd in commands {
        let mut args = strings(cmd);
        args.push("--help".into());
        let out = run_env(&args, &[]);
        assert_eq!(out.code, 0, "{cmd:?}");
        let Some((_, rest)) = out.stdout.split_once("Arguments:\n") else {
            continue;
        };
        let section = rest.split("\nOptions:").next().unwrap_or_default();
        let lines: Vec<&str> = section.lines().collect();
        for (i, line) in lines.iter().enumerate() {
            // `  <NAME>  Description` (short help), or `  <NAME>` and the description
            // indented on the next line (long help).
            if line.starts_with("  ") && !line.starts_with("   ") {
                let inline = line.trim().split_once("  ").map(|(_, d)| d.trim());
                let next = lines.get(i + 1).copied().unwrap_or_default();
                let below = next.starts_with("   ") && !next.trim().is_empty();
                assert!(
                    inline.is_some_and(|d| !d.is_empty()) || below,
                    "{cmd:?}: `{}` has no description",
                    line.trim()
                );
                seen += 1;
            }
        }
    }
    assert!(seen >= 9, "only {seen} positionals seen");
}
