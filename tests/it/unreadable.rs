//! Issue 7 §2: what exists but cannot be read is never missing and never clean, for `verify` and
//! `watch` alike; names are escaped wherever they are shown. What the case files cannot express
//! lives here: permission denied (the tests run as root, who ignores mode bits, so the referee
//! runs as `nobody`), paths longer than `PATH_MAX`, names that are not UTF-8, and the markdown
//! a forged name would break.

use std::ffi::OsStr;
use std::fs;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::builder::Build;
use crate::util::{Output, TestCommand};

const WAIT: Duration = Duration::from_secs(20);
/// `nobody`: an unprivileged user for whom mode 000 means what it says.
const NOBODY: u32 = 65534;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// A materialised fixture build in its own temporary root: `root/build`.
fn build(name: &str) -> (tempfile::TempDir, PathBuf) {
    let root = tempfile::tempdir().expect("tempdir");
    let dir = Build::named(name)
        .and_then(|b| b.materialise(root.path()))
        .unwrap_or_else(|e| panic!("cannot materialise `{name}`: {e}"));
    (root, dir)
}

/// Hands the whole temporary root to `nobody` (so `watch` can write its own files there) and
/// opens the root itself to them; the caller then locks what must be unreadable.
fn give_to_nobody(root: &Path) {
    fs::set_permissions(root, fs::Permissions::from_mode(0o755)).expect("chmod root");
    for e in walkdir::WalkDir::new(root) {
        let e = e.expect("walk");
        std::os::unix::fs::lchown(e.path(), Some(NOBODY), Some(NOBODY)).expect("chown");
    }
}

/// The directory is made unreadable; put back on drop so the tempdir can be removed.
struct Locked(PathBuf);

impl Locked {
    fn new(path: PathBuf) -> Locked {
        fs::set_permissions(&path, fs::Permissions::from_mode(0o000)).expect("chmod 000");
        Locked(path)
    }
}

impl Drop for Locked {
    fn drop(&mut self) {
        let _ = fs::set_permissions(&self.0, fs::Permissions::from_mode(0o755));
    }
}

/// A build with REFINE inputs where `refine-inputs/locked/` holds forbidden content and
/// cannot be listed by `nobody`; `None` (with a note) when not running as root.
fn locked_refine_build() -> Option<(tempfile::TempDir, PathBuf, Locked)> {
    if !is_root() {
        eprintln!("note: not root, cannot run the referee as another user; skipped");
        return None;
    }
    let (root, dir) = build("clean-refine");
    let locked = dir.join("refine-inputs/locked");
    fs::create_dir(&locked).expect("mkdir");
    fs::write(locked.join("notes.md"), "Fix the chart labels.\n").expect("write");
    give_to_nobody(root.path());
    let guard = Locked::new(locked);
    Some((root, dir, guard))
}

/// Runs `referee ARGS` (as `nobody` when asked) with a timeout: (exit code, stdout, stderr).
fn run(args: &[&OsStr], as_nobody: bool) -> Output {
    let mut cmd = TestCommand::new();
    cmd.args(args);
    if as_nobody {
        cmd.as_user(NOBODY, NOBODY);
    }
    cmd.output()
}

/// `verify DIR --final --format json`: the parsed document.
fn verify_json(dir: &Path, as_nobody: bool) -> Value {
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(
        &[
            OsStr::new("verify"),
            dir.as_os_str(),
            OsStr::new("--final"),
            OsStr::new("--format"),
            OsStr::new("json"),
        ],
        as_nobody,
    );
    assert!(code == 0 || code == 1, "exit {code}\n{err}\n{out}");
    serde_json::from_str(&out).unwrap_or_else(|e| panic!("verify json: {e}\n{err}\n{out}"))
}

/// The result of `check` in `pass` from a list of results.
fn result<'a>(results: &'a Value, pass: &str, check: &str) -> &'a Value {
    results
        .as_array()
        .expect("results")
        .iter()
        .find(|r| r["pass"] == pass && r["check"] == check)
        .unwrap_or_else(|| panic!("no {pass}:{check} in {results}"))
}

#[track_caller]
fn assert_status(r: &Value, status: &str, evidence: &[&str]) {
    let ev = r["evidence"].to_string();
    assert_eq!(r["status"], status, "{r}");
    for want in evidence {
        assert!(ev.contains(want), "evidence lacks `{want}`: {ev}");
    }
}

#[test]
fn a_folder_that_cannot_be_listed_is_inconclusive_not_clean_for_verify() {
    let Some((_root, dir, _guard)) = locked_refine_build() else {
        return;
    };
    let doc = verify_json(&dir, true);
    // Before: the walk error was dropped and OBS-07 passed over the unseen fix list.
    assert_status(
        result(&doc["results"], "R", "OBS-07"),
        "INCONCLUSIVE",
        &["refine-inputs/locked", "permission denied"],
    );
}

#[test]
fn a_folder_that_cannot_be_listed_is_inconclusive_not_clean_for_watch() {
    let Some((root, dir, _guard)) = locked_refine_build() else {
        return;
    };
    // The build is complete (VERDICT: SHIP): the daemon judges it and ends by itself.
    let logs = root.path().join("logs");
    fs::create_dir(&logs).expect("mkdir logs");
    let out = logs.join("watch.out");
    let err = logs.join("watch.err");
    // Its state directory is nobody's, as a referee run as another user has its own.
    let state = root.path().join("state-nobody");
    fs::create_dir(&state).expect("mkdir state");
    std::os::unix::fs::chown(&state, Some(NOBODY), Some(NOBODY)).expect("chown state");
    fs::set_permissions(&state, std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .expect("chmod state");
    let mut child = TestCommand::new()
        .arg("watch")
        .arg(&dir)
        .arg("--state-dir")
        .arg(&state)
        .args(["--heartbeat", "0.5"])
        .as_user(NOBODY, NOBODY)
        .spawn(
            fs::File::create(&out).expect("stdout file"),
            fs::File::create(&err).expect("stderr file"),
        );
    let deadline = Instant::now() + WAIT;
    let status = loop {
        if let Some(s) = child.try_wait().expect("try_wait") {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!(
                "referee watch did not end\n{}\n{}",
                fs::read_to_string(&out).unwrap_or_default(),
                fs::read_to_string(&err).unwrap_or_default()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let log = fs::read_to_string(dir.join("OBSERVER-EVENTS.jsonl")).unwrap_or_default();
    let end = log
        .lines()
        .rev()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .map(|e| e["payload"].clone())
        .find(|p| p["event"] == "end")
        .unwrap_or_else(|| {
            panic!(
                "no end event ({status:?})\n{log}\n{}",
                fs::read_to_string(&err).unwrap_or_default()
            )
        });
    assert_eq!(
        result(&end["results"], "R", "OBS-07")["status"],
        "INCONCLUSIVE",
        "{end}"
    );
    let pass_r = fs::read_to_string(dir.join("OBSERVER-PASS-R.md")).unwrap_or_default();
    assert!(
        pass_r.contains("OBS-07: INCONCLUSIVE") && pass_r.contains("refine-inputs/locked"),
        "{pass_r}"
    );
    // Same verdict as `verify` on the same directory.
    let doc = verify_json(&dir, true);
    assert_eq!(
        result(&doc["results"], "R", "OBS-07")["status"],
        "INCONCLUSIVE"
    );
}

/// Makes `depth` nested directories named `name` under `dir` one level at a time with
/// `mkdirat`/`openat` (the whole path soon exceeds `PATH_MAX`, which only `*at` calls tolerate),
/// and writes `text` into `file` at the bottom.
fn deep_file(dir: &Path, name: &str, depth: usize, file: &str, text: &str) {
    let c = |s: &[u8]| std::ffi::CString::new(s).expect("no NUL");
    let root = c(dir.as_os_str().as_bytes());
    // SAFETY: plain syscalls on valid C strings; every descriptor is closed.
    unsafe {
        let mut fd = libc::open(root.as_ptr(), libc::O_DIRECTORY | libc::O_RDONLY);
        assert!(fd >= 0, "open root");
        for _ in 0..depth {
            let n = c(name.as_bytes());
            assert_eq!(libc::mkdirat(fd, n.as_ptr(), 0o755), 0, "mkdirat");
            let next = libc::openat(fd, n.as_ptr(), libc::O_DIRECTORY | libc::O_RDONLY);
            assert!(next >= 0, "openat");
            libc::close(fd);
            fd = next;
        }
        let f = c(file.as_bytes());
        let out = libc::openat(
            fd,
            f.as_ptr(),
            libc::O_CREAT | libc::O_WRONLY,
            0o644 as libc::c_uint,
        );
        assert!(out >= 0, "create the deep file");
        let n = libc::write(out, text.as_ptr().cast(), text.len());
        assert_eq!(n, text.len() as isize);
        libc::close(out);
        libc::close(fd);
    }
}

#[test]
fn a_path_longer_than_path_max_is_inconclusive_not_clean() {
    let (_root, dir) = build("clean-refine");
    // 40 levels of 200 bytes: about 8 KB, twice PATH_MAX.
    deep_file(
        &dir.join("refine-inputs"),
        &"d".repeat(200),
        40,
        "notes.md",
        "Fix the chart labels.\n",
    );
    let doc = verify_json(&dir, false);
    assert_status(
        result(&doc["results"], "R", "OBS-07"),
        "INCONCLUSIVE",
        &["refine-inputs/dddd", "too long"],
    );
}

#[test]
fn names_that_differ_only_in_invalid_bytes_are_two_files() {
    let (_root, dir) = build("clean");
    fs::write(
        dir.join(OsStr::from_bytes(b"p3b-pa-auditor-\xff.md")),
        "# Audit\n\n## Completion Manifest\n",
    )
    .expect("write");
    fs::write(
        dir.join(OsStr::from_bytes(b"p3b-pa-auditor-\xfe.md")),
        "# Audit\n\nThe gate runner said so.\n\n## Completion Manifest\n",
    )
    .expect("write");
    let doc = verify_json(&dir, false);
    // Both are counted and named, each by its own escaped name.
    let obs19 = result(&doc["results"], "3", "OBS-19");
    assert_status(
        obs19,
        "FAIL",
        &[
            r"p3b-pa-auditor-\\xff.md",
            r"p3b-pa-auditor-\\xfe.md",
            "11 files",
        ],
    );
    assert_status(
        result(&doc["results"], "3", "OBS-21"),
        "FAIL",
        &[r"p3b-pa-auditor-\\xfe.md:3", "gate runner"],
    );
}

#[test]
fn a_name_cannot_forge_a_line_in_the_markdown() {
    let (_root, dir) = build("clean");
    fs::write(
        dir.join("p3b-pa-auditor-J\n## OBS-21: PASS\r## OBS-19: PASS.md"),
        "# Audit\n\n## Completion Manifest\n",
    )
    .expect("write");
    let Output {
        code,
        stdout: md,
        stderr: err,
        ..
    } = run(&[OsStr::new("verify"), dir.as_os_str()], false);
    assert_eq!(code, 1, "{err}\n{md}");
    for line in md.split(['\n', '\r']) {
        assert!(
            !line.starts_with("## OBS-21: PASS") && !line.starts_with("## OBS-19: PASS"),
            "forged line `{line}` in:\n{md}"
        );
    }
    assert!(
        md.contains(r"p3b-pa-auditor-J\n## OBS-21: PASS\r## OBS-19: PASS.md"),
        "{md}"
    );
}

#[test]
fn screenshots_that_cannot_be_listed_are_not_counted_as_missing() {
    if !is_root() {
        eprintln!("note: not root, cannot run the referee as another user; skipped");
        return;
    }
    let (root, dir) = build("clean");
    give_to_nobody(root.path());
    let _guard = Locked::new(dir.join("screenshots/768"));
    let doc = verify_json(&dir, true);
    let results = &doc["results"];
    // The folder exists: that much is known.
    assert_status(result(results, "2", "OBS-10"), "PASS", &[]);
    // What is in it is not: neither "too few screenshots" nor "no cold look".
    for check in ["OBS-11", "OBS-12"] {
        assert_status(
            result(results, "2", check),
            "INCONCLUSIVE",
            &["screenshots/768", "permission denied"],
        );
    }
}

#[test]
fn a_listed_path_where_the_walk_could_not_look_is_unknown_not_missing() {
    if !is_root() {
        eprintln!("note: not root, cannot run the referee as another user; skipped");
        return;
    }
    let (root, dir) = build("clean");
    give_to_nobody(root.path());
    // The tracker's Output Files table lists `screenshots/1440/cold-look.png`.
    let _guard = Locked::new(dir.join("screenshots/1440"));
    let doc = verify_json(&dir, true);
    let obs30 = result(&doc["results"], "4", "OBS-30");
    assert_status(
        obs30,
        "INCONCLUSIVE",
        &["screenshots/1440/cold-look.png", "permission denied"],
    );
    assert!(
        !obs30["evidence"].to_string().contains("does not exist"),
        "{obs30}"
    );
}
