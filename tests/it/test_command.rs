//! [`TestCommand`](crate::util::TestCommand) itself: a failed expectation shows the command, its
//! directory and its output; stdin, the timeout and the listing's bound do what they say.

use std::time::Duration;

use crate::util::{listing, TestCommand, LISTED};

#[test]
fn a_wrong_exit_code_panics_with_the_command_its_directory_and_its_output() {
    let dir = tempfile::tempdir().expect("tempdir");
    std::fs::write(dir.path().join("planted.txt"), "x").expect("write");
    let caught = std::panic::catch_unwind(|| {
        TestCommand::new()
            .args(["verify", "--no-such-flag"])
            .current_dir(dir.path())
            .assert_exit(0)
    });
    let message = match caught {
        Ok(o) => panic!("exit 0 accepted for a bad flag:\n{o}"),
        Err(e) => e
            .downcast_ref::<String>()
            .cloned()
            .expect("a formatted panic message"),
    };
    for needle in [
        "expected exit code 0, got 2",
        "verify --no-such-flag",
        &format!("cwd: {}", dir.path().display()),
        "planted.txt",
        "status: exit status: 2",
        "--- stderr ---",
        "--no-such-flag",
    ] {
        assert!(message.contains(needle), "no `{needle}` in:\n{message}");
    }
}

#[test]
fn output_keeps_code_stdout_and_stderr_and_reads_stdin() {
    let o = TestCommand::new().arg("--version").assert_exit(0);
    assert!(o.stdout.starts_with("referee "), "{o}");
    // A hook reads its payload on stdin: garbage there is answered, never hung on.
    let o = TestCommand::new()
        .args(["hook", "claude"])
        .stdin("not json")
        .output();
    assert_ne!(o.code, -1, "{o}");
    assert!(!o.stdout.is_empty() || !o.stderr.is_empty(), "{o}");
}

#[test]
fn a_command_that_outlives_its_timeout_is_killed_and_said_to_be() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = TestCommand::new()
        .args(["watch", "--heartbeat", "0.5"])
        .arg(dir.path())
        .timeout(Duration::from_millis(500))
        .output();
    assert_eq!(o.code, -1, "{o}");
    assert!(o.timed_out(), "{o}");
    assert!(
        o.to_string().contains("killed after the 500ms timeout"),
        "{o}"
    );
}

#[test]
fn the_listing_is_bounded() {
    let dir = tempfile::tempdir().expect("tempdir");
    for i in 0..(LISTED + 5) {
        std::fs::write(dir.path().join(format!("f{i:03}")), "").expect("write");
    }
    let text = listing(dir.path());
    assert_eq!(text.lines().count(), LISTED + 1, "{text}");
    assert!(text.ends_with("… and 5 more\n"), "{text}");
}
