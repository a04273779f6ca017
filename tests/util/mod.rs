//! One way to run the `referee` binary in a test, shared by the `it` and `cases` test binaries
//! (each includes this file with `#[path]`).
//!
//! [`TestCommand`] is a builder over [`std::process::Command`] for the binary under test: it
//! keeps every run away from the real `$HOME` (`XDG_STATE_HOME` is a private folder for the test
//! run), bounds it with a timeout, and keeps what a reader of a failure needs: the command line,
//! the working directory, a bounded listing of the directories the command was pointed at, the
//! exit status, stdout and stderr. An expectation made through it (`assert_exit`)
//! panics with all of that at the caller's line; every run also writes it to the test's captured
//! output, which the test harness shows only when the test fails, so an assertion a test makes
//! on the [`Output`] itself still comes with the context of each command the test ran.
//! (The shape follows ripgrep's `tests/util.rs`.)

use std::ffi::{OsStr, OsString};
use std::fmt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How long a one-shot command may run before it counts as hung and is killed: generous, since
/// the machines that run the suite are loaded, and a command that ends returns at once.
pub const TIMEOUT: Duration = Duration::from_secs(60);

/// How many entries of a directory the failure context lists (and how deep).
pub(crate) const LISTED: usize = 40;
const LISTED_DEPTH: usize = 2;

/// Where the referee keeps its state directories in these tests (`XDG_STATE_HOME` of every
/// process spawned): one private folder for the test run, never the real `$HOME`. Each watched
/// directory still gets its own state directory in it (named from its path and identity).
/// An empty configuration home private to the test run (`XDG_CONFIG_HOME`).
pub fn config_home() -> &'static Path {
    static HOME: OnceLock<tempfile::TempDir> = OnceLock::new();
    HOME.get_or_init(|| {
        tempfile::Builder::new()
            .prefix("referee-it-config-")
            .tempdir()
            .expect("a config home")
    })
    .path()
}

pub fn state_home() -> &'static Path {
    static HOME: OnceLock<tempfile::TempDir> = OnceLock::new();
    HOME.get_or_init(|| {
        tempfile::Builder::new()
            .prefix("referee-it-state-")
            .tempdir()
            .expect("a state home")
    })
    .path()
}

/// Whether each run's context goes to the test's captured output (see [`echo_runs`]).
static ECHO: AtomicBool = AtomicBool::new(true);

/// Turns the echo of each run's context off: for a harness that does not capture a test's
/// output (libtest-mimic), which puts the context into its failure messages instead.
pub fn echo_runs(on: bool) {
    ECHO.store(on, Ordering::Relaxed);
}

/// The `referee` binary cargo built for these tests.
pub fn referee_bin() -> &'static Path {
    Path::new(env!("CARGO_BIN_EXE_referee"))
}

/// `referee ARGS`, expecting nothing of it yet: the common case of a [`TestCommand`].
pub fn run<S: AsRef<OsStr>>(args: &[S]) -> Output {
    TestCommand::new().args(args).output()
}

/// `referee …` as a test runs it; see the module documentation.
#[derive(Debug)]
#[must_use = "a TestCommand does nothing until it is run"]
pub struct TestCommand {
    cmd: std::process::Command,
    args: Vec<OsString>,
    cwd: Option<PathBuf>,
    stdin: Option<Vec<u8>>,
    timeout: Duration,
}

impl Default for TestCommand {
    fn default() -> Self {
        TestCommand::new()
    }
}

impl TestCommand {
    /// The referee binary with no arguments, its state home private to the test run.
    pub fn new() -> TestCommand {
        let mut cmd = std::process::Command::new(referee_bin());
        cmd.env("XDG_STATE_HOME", state_home());
        // No excludes of the user running the tests: git's config of the test's own making.
        cmd.env("XDG_CONFIG_HOME", config_home())
            .env("GIT_CONFIG_GLOBAL", "/dev/null");
        TestCommand {
            cmd,
            args: Vec::new(),
            cwd: None,
            stdin: None,
            timeout: TIMEOUT,
        }
    }

    pub fn arg(&mut self, arg: impl AsRef<OsStr>) -> &mut TestCommand {
        self.args.push(arg.as_ref().to_os_string());
        self.cmd.arg(arg);
        self
    }

    pub fn args<I, S>(&mut self, args: I) -> &mut TestCommand
    where
        I: IntoIterator<Item = S>,
        S: AsRef<OsStr>,
    {
        for a in args {
            self.arg(a);
        }
        self
    }

    pub fn env(&mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> &mut TestCommand {
        self.cmd.env(key, value);
        self
    }

    pub fn env_remove(&mut self, key: impl AsRef<OsStr>) -> &mut TestCommand {
        self.cmd.env_remove(key);
        self
    }

    /// Runs the command in `dir` (listed in the failure context).
    pub fn current_dir(&mut self, dir: impl AsRef<Path>) -> &mut TestCommand {
        self.cwd = Some(dir.as_ref().to_path_buf());
        self.cmd.current_dir(dir);
        self
    }

    /// What the command reads on stdin (nothing, at end of file, unless set).
    pub fn stdin(&mut self, bytes: impl Into<Vec<u8>>) -> &mut TestCommand {
        self.stdin = Some(bytes.into());
        self
    }

    /// Kills the command (and reports it) if it runs longer than `within` ([`TIMEOUT`] unless set).
    pub fn timeout(&mut self, within: Duration) -> &mut TestCommand {
        self.timeout = within;
        self
    }

    /// Runs the command as another user (the test must be root to do so).
    pub fn as_user(&mut self, uid: u32, gid: u32) -> &mut TestCommand {
        self.cmd.uid(uid).gid(gid);
        self
    }

    /// The command line as a shell would read it.
    fn line(&self) -> String {
        std::iter::once(referee_bin().as_os_str())
            .chain(self.args.iter().map(OsString::as_os_str))
            .map(|a| {
                let s = a.to_string_lossy();
                if !s.is_empty()
                    && s.chars()
                        .all(|c| c.is_ascii_alphanumeric() || "-_./=:,@%+".contains(c))
                {
                    s.into_owned()
                } else {
                    format!("'{}'", s.replace('\'', r"'\''"))
                }
            })
            .collect::<Vec<_>>()
            .join(" ")
    }

    /// The command line, the working directory and a bounded listing of it and of every
    /// argument that names a directory: what a reader of a failure needs besides the output.
    fn context(&self) -> String {
        let cwd = self
            .cwd
            .clone()
            .or_else(|| std::env::current_dir().ok())
            .unwrap_or_default();
        let mut text = format!("command: {}\ncwd: {}\n", self.line(), cwd.display());
        let mut dirs: Vec<PathBuf> = self.cwd.iter().cloned().collect();
        for a in &self.args {
            // `--flag=DIR` names a directory too.
            let value = a
                .to_str()
                .and_then(|s| s.split_once('=').map(|(_, v)| OsString::from(v)))
                .unwrap_or_else(|| a.clone());
            let p = cwd.join(value);
            if p.is_dir() && !dirs.contains(&p) {
                dirs.push(p);
            }
        }
        for d in dirs {
            text.push_str(&format!("listing of {}:\n{}", d.display(), listing(&d)));
        }
        text
    }

    /// Runs the command to its end (or its timeout) and returns what it did; expects nothing.
    pub fn output(&mut self) -> Output {
        let mut cmd = assert_cmd::Command::from_std(std::mem::replace(
            &mut self.cmd,
            std::process::Command::new(referee_bin()),
        ));
        cmd.timeout(self.timeout);
        if let Some(bytes) = &self.stdin {
            cmd.write_stdin(bytes.clone());
        }
        let started = Instant::now();
        let out = cmd
            .output()
            .unwrap_or_else(|e| panic!("cannot run `{}`: {e}", self.line()));
        let took = started.elapsed();
        let status = out.status;
        let timed_out = status.signal() == Some(libc::SIGKILL) && took >= self.timeout;
        let output = Output {
            code: status.code().unwrap_or(-1),
            status,
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            context: self.context(),
            timed_out: timed_out.then_some(self.timeout),
        };
        // Captured by the test harness and shown only if the test fails: the context of every
        // command a failing test ran, whatever its own assertion prints.
        if ECHO.load(Ordering::Relaxed) {
            eprintln!("{output}");
        }
        output
    }

    /// Runs the command and panics, with the full context, unless it exits with `code`.
    #[track_caller]
    pub fn assert_exit(&mut self, code: i32) -> Output {
        self.output().assert_exit(code)
    }

    /// Starts the command (a daemon such as `referee watch`) with stdin closed and its output
    /// going to `stdout` and `stderr`; the caller waits for it and kills it.
    #[track_caller]
    pub fn spawn(&mut self, stdout: impl Into<Stdio>, stderr: impl Into<Stdio>) -> Child {
        self.cmd
            .stdin(Stdio::null())
            .stdout(stdout)
            .stderr(stderr)
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start `{}`: {e}", self.line()))
    }
}

/// What a [`TestCommand`] did. Its `Display` is the whole context: command line, working
/// directory, listings, status, stdout and stderr.
#[derive(Debug, Clone)]
pub struct Output {
    /// The exit code, or -1 if the command died of a signal (see `status`).
    pub code: i32,
    pub status: ExitStatus,
    pub stdout: String,
    pub stderr: String,
    context: String,
    timed_out: Option<Duration>,
}

impl Output {
    /// The command line, working directory and listings, without the output.
    pub fn context(&self) -> &str {
        &self.context
    }

    /// Whether the command was killed at its timeout.
    pub fn timed_out(&self) -> bool {
        self.timed_out.is_some()
    }

    /// Panics, with the full context, unless the command exited with `code`.
    #[track_caller]
    pub fn assert_exit(self, code: i32) -> Output {
        if self.code != code {
            panic!("\nexpected exit code {code}, got {}\n{self}", self.code);
        }
        self
    }
}

impl fmt::Display for Output {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "===== referee run =====")?;
        write!(f, "{}", self.context)?;
        match self.timed_out {
            Some(t) => writeln!(f, "status: killed after the {t:?} timeout (hung?)")?,
            None => writeln!(f, "status: {}", self.status)?,
        }
        writeln!(f, "--- stdout ---\n{}", self.stdout.trim_end())?;
        writeln!(f, "--- stderr ---\n{}", self.stderr.trim_end())?;
        write!(f, "=====")
    }
}

/// At most [`LISTED`] entries of `dir` (to [`LISTED_DEPTH`] levels), one a line, sorted, with the
/// number left out.
pub(crate) fn listing(dir: &Path) -> String {
    let mut names = Vec::new();
    let mut more = 0usize;
    for entry in walkdir::WalkDir::new(dir)
        .min_depth(1)
        .max_depth(LISTED_DEPTH)
        .sort_by_file_name()
    {
        match entry {
            Ok(e) if names.len() < LISTED => {
                let rel = e.path().strip_prefix(dir).unwrap_or(e.path());
                let slash = if e.file_type().is_dir() { "/" } else { "" };
                names.push(format!("  {}{slash}", rel.display()));
            }
            Ok(_) => more += 1,
            Err(e) => names.push(format!("  ({e})")),
        }
    }
    let mut text = names.join("\n");
    if names.is_empty() {
        text.push_str("  (empty)");
    }
    if more > 0 {
        text.push_str(&format!("\n  … and {more} more"));
    }
    text.push('\n');
    text
}

/// Whether the suite runs under CI (`CI` set, and not to `false` or `0`): there a tool a test
/// needs must be installed, and a missing one is a failure, never a skip.
pub fn in_ci() -> bool {
    std::env::var("CI").is_ok_and(|v| !matches!(v.trim(), "" | "false" | "0"))
}

/// What a test does when a tool it needs is not here: under CI it fails, saying what to install
/// (`.ci/run` installs every such tool); elsewhere it says, on the process's own stderr (the
/// harness captures `eprintln!` of a passing test, and a skip must not pass unseen), that
/// `skipped` is skipped.
#[track_caller]
pub fn missing(tool: &str, install: &str, skipped: &str) {
    assert!(
        !in_ci(),
        "CI is set but {tool} is not installed ({install}; `.ci/run` installs it): {skipped} \
         cannot be skipped under CI"
    );
    let _ = std::io::Write::write_all(
        &mut std::io::stderr().lock(),
        format!("\nnote: {tool} is not installed ({install}): {skipped} is SKIPPED (under CI it fails)\n\n").as_bytes(),
    );
}

/// Whether the command `cmd` runs here (`cmd --version` succeeds); when it does not, see
/// [`missing`] (under CI: a failure).
#[track_caller]
pub fn tool(cmd: &str, install: &str, skipped: &str) -> bool {
    let here = std::process::Command::new(cmd)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
        .is_ok_and(|o| o.status.success());
    if !here {
        missing(&format!("`{cmd}`"), install, skipped);
    }
    here
}
