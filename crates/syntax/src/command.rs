//! The protocol's syntax commands: one program per file, no shell, never a program from the
//! workspace, killed (with its process group) at the rule's timeout. See the module doc of
//! `syntax` for what the outcome is.

use std::ffi::OsString;
use std::io::{ErrorKind, Read};
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::{CommandExt, ExitStatusExt};
use std::path::{Component, Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::thread;
use std::time::{Duration, Instant};

use super::{CommandRule, Outcome, RefusedProgram};

/// Bytes kept of a command's stdout and of its stderr; the rest is read and dropped.
pub const OUTPUT_LIMIT: usize = 4096;

/// How often a running command is polled for its exit.
const POLL: Duration = Duration::from_millis(10);

/// How long to wait for the output pipes to close once the command is gone: a process that left
/// its group and kept them open does not hold the check.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

pub(super) fn run(rule: &CommandRule, rel: &str, abs: &Path) -> Outcome {
    run_on(rule, rel, abs, abs)
}

/// [`run`] with `{path}` standing for `file` (a copy of the file at `abs`, or a part of it, in
/// a folder of the referee's own): the program is still looked up away from the workspace of
/// `abs`, and the output names `rel` wherever it names `file`.
pub(super) fn run_on(rule: &CommandRule, rel: &str, abs: &Path, file: &Path) -> Outcome {
    let shown = display(&rule.argv);
    let how = format!("command `{shown}`");
    let ran = match execute(rule, rel, abs, file) {
        Ok(ran) => ran,
        Err(not_run) => return not_run,
    };
    let Ran {
        status,
        output,
        file_str,
    } = ran;
    if status.success() {
        return Outcome::Parsed { how };
    }
    let Some(code) = status.code() else {
        let signal = status.signal().unwrap_or_default();
        return Outcome::Inconclusive {
            why: format!(
                "`{shown}` was killed by signal {signal}{}",
                evidence(&output)
            ),
        };
    };
    // What shells and shims (pyenv's `python3`) exit with when the real program is missing or
    // cannot run: the file was not judged.
    if code == 126 || code == 127 {
        return Outcome::Inconclusive {
            why: format!(
                "`{shown}` exited with {code} (program not found or not executable){}",
                evidence(&output)
            ),
        };
    }
    let (line, column) = locate(&output, &file_str, rel).unwrap_or((0, 0));
    let message = if output.trim().is_empty() {
        format!("`{shown}` exited with {code} and printed nothing")
    } else {
        // The file as the evidence names it: its workspace path, not where the workspace is
        // (a temporary directory in tests, another checkout elsewhere).
        output.trim_end().replace(&file_str, rel)
    };
    Outcome::Invalid {
        line,
        column,
        message,
        how,
    }
}

/// A command that ran to its end: how it exited, what it printed (stderr, then stdout), and
/// the path `{path}` stood for.
pub(super) struct Ran {
    pub(super) status: std::process::ExitStatus,
    pub(super) output: String,
    pub(super) file_str: String,
}

/// Runs `rule` on `file` (see [`run_on`]) to its end; `Err` with the [`Outcome::Inconclusive`]
/// that says why it could not be run or did not end (not installed, refused, timed out).
pub(super) fn execute(
    rule: &CommandRule,
    rel: &str,
    abs: &Path,
    file: &Path,
) -> Result<Ran, Outcome> {
    let not_run = |why: String| Outcome::Inconclusive { why };
    let shown = display(&rule.argv);
    let Some(program) = rule.argv.first() else {
        return Err(not_run(format!(
            "the command rule for `.{}` has no program",
            rule.ext.trim_start_matches('.')
        )));
    };
    let workspace = workspace_root(rel, abs);
    let resolved = resolve(program, workspace.as_deref()).map_err(|e| not_run(e.to_string()))?;
    let Some(abs_str) = file.to_str() else {
        return Err(not_run(format!(
            "the path `{}` is not UTF-8: `{{path}}` cannot be given to `{program}`",
            file.display()
        )));
    };
    let args: Vec<OsString> = rule.argv[1..]
        .iter()
        .map(|a| OsString::from(a.replace("{path}", abs_str)))
        .collect();
    // The command's working directory: empty and outside the workspace, so that `python3 -m x`
    // imports nothing the worker wrote; Python's bytecode cache goes there too.
    let scratch = tempfile::tempdir()
        .map_err(|e| not_run(format!("no temporary directory to run `{program}` in: {e}")))?;
    let mut command = Command::new(&resolved);
    command
        .args(&args)
        .current_dir(scratch.path())
        .env("PYTHONPYCACHEPREFIX", scratch.path())
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let mut child = match command.spawn() {
        Ok(child) => child,
        Err(e) if e.kind() == ErrorKind::NotFound => {
            return Err(not_run(format!("`{program}` is not installed")));
        }
        Err(e) => return Err(not_run(format!("`{program}` could not be started: {e}"))),
    };
    let stdout = drain(child.stdout.take());
    let stderr = drain(child.stderr.take());
    // Wait for the exit without reaping, so the group id cannot be reused before the kill.
    let exited = wait_exit(&child, rule.timeout);
    // Whatever happened, nothing the command started outlives the check.
    kill_group(&child);
    let status = child.wait();
    let status = match (exited, status) {
        (Ok(true), Ok(status)) => status,
        (Ok(false), _) => {
            return Err(not_run(format!(
                "`{shown}` did not finish within {}: killed",
                humantime::format_duration(rule.timeout)
            )));
        }
        (Err(e), _) | (_, Err(e)) => {
            return Err(not_run(format!("`{program}` could not be waited for: {e}")));
        }
    };
    Ok(Ran {
        status,
        output: combined(collect(stderr), collect(stdout)),
        file_str: abs_str.to_string(),
    })
}

/// The workspace: `abs` less the components of `rel`, when `abs` ends with them.
fn workspace_root(rel: &str, abs: &Path) -> Option<PathBuf> {
    let depth = Path::new(rel)
        .components()
        .filter(|c| matches!(c, Component::Normal(_)))
        .count();
    let mut root = abs.to_path_buf();
    for _ in 0..depth {
        if !root.pop() {
            return None;
        }
    }
    Some(root)
}

/// The program to run: a bare name looked up on `PATH` (absolute entries outside the workspace
/// only), or an absolute path outside the workspace. Anything else is refused.
fn resolve(program: &str, workspace: Option<&Path>) -> Result<PathBuf, RefusedProgram> {
    let inside = |p: &Path| workspace.is_some_and(|w| p.starts_with(w));
    if program.contains('/') {
        let path = Path::new(program);
        if !path.is_absolute() {
            return Err(RefusedProgram::Relative(path.to_path_buf()));
        }
        if inside(path) {
            return Err(RefusedProgram::InsideWorkspace(path.to_path_buf()));
        }
        return Ok(path.to_path_buf());
    }
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute() && !inside(dir))
        .map(|dir| dir.join(program))
        .find(|candidate| is_executable(candidate))
        .ok_or_else(|| RefusedProgram::NotInstalled(program.to_string()))
}

fn is_executable(path: &Path) -> bool {
    path.metadata()
        .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// Waits until the child exits or `timeout` passes (`Ok(false)`), leaving it unreaped (a zombie
/// keeps its pid, and so its process group id, from being reused before [`kill_group`]).
fn wait_exit(child: &Child, timeout: Duration) -> std::io::Result<bool> {
    use rustix::process::{waitid, Pid, WaitId, WaitIdOptions};
    let pid = Pid::from_child(child);
    let deadline = Instant::now() + timeout;
    loop {
        match waitid(
            WaitId::Pid(pid),
            WaitIdOptions::EXITED | WaitIdOptions::NOHANG | WaitIdOptions::NOWAIT,
        ) {
            Ok(Some(_)) => return Ok(true),
            // No child of that pid has exited yet.
            Ok(None) => {}
            Err(rustix::io::Errno::INTR) => continue,
            Err(e) => return Err(e.into()),
        }
        let now = Instant::now();
        if now >= deadline {
            return Ok(false);
        }
        thread::sleep(POLL.min(deadline - now));
    }
}

/// Kills the child's process group (the child leads it: `process_group(0)`), the child not yet
/// reaped. A group already gone is no error.
fn kill_group(child: &Child) {
    let pid = rustix::process::Pid::from_child(child);
    let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
}

/// Reads a pipe to its end on a thread, keeping the first [`OUTPUT_LIMIT`] bytes.
fn drain<R: Read + Send + 'static>(pipe: Option<R>) -> mpsc::Receiver<Vec<u8>> {
    let (tx, rx) = mpsc::channel();
    if let Some(mut pipe) = pipe {
        thread::spawn(move || {
            let mut kept = Vec::new();
            let mut buf = [0u8; 8192];
            loop {
                match pipe.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => {
                        let room = OUTPUT_LIMIT.saturating_sub(kept.len());
                        kept.extend_from_slice(&buf[..n.min(room)]);
                    }
                    Err(e) if e.kind() == ErrorKind::Interrupted => {}
                    Err(_) => break,
                }
            }
            let _ = tx.send(kept);
        });
    }
    rx
}

fn collect(rx: mpsc::Receiver<Vec<u8>>) -> String {
    let bytes = rx.recv_timeout(DRAIN_GRACE).unwrap_or_default();
    String::from_utf8_lossy(&bytes).into_owned()
}

/// stderr then stdout, where compilers put their errors first.
fn combined(stderr: String, stdout: String) -> String {
    match (stderr.trim().is_empty(), stdout.trim().is_empty()) {
        (false, false) => format!("{}\n{}", stderr.trim_end(), stdout.trim_end()),
        (false, true) => stderr,
        (true, _) => stdout,
    }
}

fn evidence(output: &str) -> String {
    let output = output.trim();
    if output.is_empty() {
        String::new()
    } else {
        format!(": {output}")
    }
}

/// The first position the output names: `FILE:LINE:COL` or `FILE:LINE` for the file (absolute,
/// relative or bare name), else any `:LINE:COL`, else `line N` (with `, column N` / `col N`).
fn locate(output: &str, abs: &str, rel: &str) -> Option<(usize, usize)> {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    for file in [abs, rel, name] {
        if file.is_empty() {
            continue;
        }
        for (at, _) in output.match_indices(file) {
            if let Some((line, column)) = numbers_after_colons(&output[at + file.len()..]) {
                return Some((line, column.unwrap_or(0)));
            }
        }
    }
    for (at, _) in output.match_indices(':') {
        if let Some((line, Some(column))) = numbers_after_colons(&output[at..]) {
            return Some((line, column));
        }
    }
    let lower = output.to_ascii_lowercase();
    for (at, _) in lower.match_indices("line ") {
        let rest = &lower[at + "line ".len()..];
        let Some((line, rest)) = number(rest) else {
            continue;
        };
        let rest = rest.trim_start_matches([',', ' ']);
        let column = ["column ", "col "]
            .iter()
            .find_map(|w| rest.strip_prefix(w))
            .and_then(number)
            .map_or(0, |(c, _)| c);
        return Some((line, column));
    }
    None
}

/// `:L:C` or `:L` at the start of `s`.
fn numbers_after_colons(s: &str) -> Option<(usize, Option<usize>)> {
    let (line, rest) = number(s.strip_prefix(':')?)?;
    let column = rest.strip_prefix(':').and_then(number).map(|(c, _)| c);
    (line > 0).then_some((line, column))
}

/// A decimal number at the start of `s`, and the rest.
fn number(s: &str) -> Option<(usize, &str)> {
    let end = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
    let n = s[..end].parse().ok()?;
    Some((n, &s[end..]))
}

/// The command as a person would type it: arguments with spaces or quotes in single quotes.
fn display(argv: &[String]) -> String {
    let quoted: Vec<String> = argv
        .iter()
        .map(|a| {
            if !a.is_empty() && !a.contains(|c: char| c.is_whitespace() || "'\"\\$`".contains(c)) {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect();
    quoted.join(" ")
}

#[cfg(test)]
pub(super) fn resolve_for_tests(
    program: &str,
    workspace: Option<&Path>,
) -> Result<PathBuf, RefusedProgram> {
    resolve(program, workspace)
}
