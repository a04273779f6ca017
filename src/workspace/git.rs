//! Reading a git repository through the `git` command line: the baseline commit, what changed
//! in the work tree against it, untracked files that `.gitignore` does not exclude, and the
//! baseline's contents.
//!
//! Why the CLI and not `gix`: it is the same git the worker and the orchestrator use, so
//! `.gitignore`, `core.excludesFile`, `info/exclude`, attributes and filters (CRLF) mean exactly
//! what they mean to them; it adds no dependency tree of ~100 crates; and every call is one
//! short-lived process per evaluation. Every call runs with `GIT_OPTIONAL_LOCKS=0` (git never
//! takes the index lock or refreshes the index for us: the referee changes nothing, `.git/`
//! included), `core.quotepath=off` and NUL-separated output, so any file name comes through.

use std::io::{Read, Write};
use std::path::Path;
use std::process::{Command, Stdio};

/// What went wrong talking to git: the command, and what it said.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot run `git` (is it installed and on PATH?)")]
    Spawn(#[source] std::io::Error),
    #[error("`git {args}` failed: {stderr}")]
    Failed { args: String, stderr: String },
    #[error("`git {args}` printed output that is not what git prints: {why}")]
    Output { args: String, why: String },
}

fn command(root: &Path) -> Command {
    let mut c = Command::new("git");
    c.arg("-C")
        .arg(root)
        .args(["-c", "core.quotepath=off", "--no-pager"])
        .env("GIT_OPTIONAL_LOCKS", "0")
        .env("GIT_TERMINAL_PROMPT", "0")
        // The caller's environment must not point git at another repository or index.
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .env_remove("GIT_INDEX_FILE")
        .env_remove("GIT_OBJECT_DIRECTORY")
        .stdin(Stdio::null());
    c
}

fn run(root: &Path, args: &[&str]) -> Result<Vec<u8>, GitError> {
    let out = command(root)
        .args(args)
        .stderr(Stdio::piped())
        .stdout(Stdio::piped())
        .output()
        .map_err(GitError::Spawn)?;
    if !out.status.success() {
        return Err(GitError::Failed {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    Ok(out.stdout)
}

/// Whether `root` is inside a git work tree (false when git is absent or says no).
pub fn is_work_tree(root: &Path) -> bool {
    matches!(run(root, &["rev-parse", "--is-inside-work-tree"]), Ok(out) if out.trim_ascii() == b"true")
}

/// The commit `rev` names, as a full hex id; `Ok(None)` when it names no commit.
pub fn resolve(root: &Path, rev: &str) -> Result<Option<String>, GitError> {
    let spec = format!("{rev}^{{commit}}");
    match run(
        root,
        &[
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &spec,
        ],
    ) {
        Ok(out) => Ok(Some(String::from_utf8_lossy(out.trim_ascii()).into_owned())),
        Err(GitError::Failed { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

/// How a path differs from the baseline commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Status {
    Added,
    Modified,
    Removed,
}

/// Tracked paths that differ between `commit` and the work tree (paths relative to `root`),
/// without rename detection: a rename is a removal and an addition.
pub fn diff_names(root: &Path, commit: &str) -> Result<Vec<(Status, String)>, GitError> {
    let args = [
        "diff",
        "--no-renames",
        "--no-ext-diff",
        "--ignore-submodules",
        "--name-status",
        "-z",
        "--relative",
        commit,
        "--",
    ];
    let out = run(root, &args)?;
    let mut fields = out.split(|b| *b == 0).filter(|f| !f.is_empty());
    let mut changes = Vec::new();
    while let Some(code) = fields.next() {
        let Some(path) = fields.next() else {
            return Err(GitError::Output {
                args: args.join(" "),
                why: "a status without a path".into(),
            });
        };
        let status = match code.first() {
            Some(b'A') => Status::Added,
            Some(b'D') => Status::Removed,
            // M, T (type change), U (unmerged), X: the content is not the baseline's.
            _ => Status::Modified,
        };
        changes.push((status, String::from_utf8_lossy(path).into_owned()));
    }
    Ok(changes)
}

/// Untracked files that no ignore rule excludes (they count as added).
pub fn untracked(root: &Path) -> Result<Vec<String>, GitError> {
    let out = run(root, &["ls-files", "--others", "--exclude-standard", "-z"])?;
    Ok(split_z(&out))
}

/// Every file git would list in the work tree: tracked, and untracked-not-ignored.
pub fn listed(root: &Path) -> Result<Vec<String>, GitError> {
    let out = run(
        root,
        &[
            "ls-files",
            "--cached",
            "--others",
            "--exclude-standard",
            "-z",
        ],
    )?;
    let mut v = split_z(&out);
    v.sort();
    v.dedup();
    Ok(v)
}

/// Of `paths`, those an ignore rule matches (whether tracked or not).
pub fn ignored(root: &Path, paths: &[String]) -> Result<Vec<String>, GitError> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let mut input = Vec::new();
    for p in paths {
        input.extend_from_slice(p.as_bytes());
        input.push(0);
    }
    let args = ["check-ignore", "--no-index", "-z", "--stdin"];
    let out = pipe(root, &args, input)?;
    // Exit 1 means "none ignored".
    Ok(split_z(&out))
}

/// The contents of `paths` (relative to `root`) in `commit`; `None` for a path not in it.
pub fn blobs(
    root: &Path,
    commit: &str,
    paths: &[String],
) -> Result<Vec<Option<Vec<u8>>>, GitError> {
    if paths.is_empty() {
        return Ok(Vec::new());
    }
    let mut input = Vec::new();
    for p in paths {
        // The batch protocol is line-based: a name with a newline cannot be asked for.
        if p.contains('\n') {
            input.extend_from_slice(b"\n");
            continue;
        }
        input.extend_from_slice(format!("{commit}:./{p}\n").as_bytes());
    }
    let args = ["cat-file", "--batch"];
    let out = pipe(root, &args, input)?;
    let bad = |why: &str| GitError::Output {
        args: args.join(" "),
        why: why.to_string(),
    };
    let mut res = Vec::with_capacity(paths.len());
    let mut rest = &out[..];
    for _ in paths {
        let nl = rest
            .iter()
            .position(|b| *b == b'\n')
            .ok_or_else(|| bad("a header without a newline"))?;
        let header = String::from_utf8_lossy(&rest[..nl]).into_owned();
        rest = &rest[nl + 1..];
        let parts: Vec<&str> = header.split(' ').collect();
        if parts.len() == 3 && parts[1] == "blob" {
            let size: usize = parts[2].parse().map_err(|_| bad("a bad size"))?;
            if rest.len() < size + 1 {
                return Err(bad("a short object"));
            }
            res.push(Some(rest[..size].to_vec()));
            rest = &rest[size + 1..];
        } else if parts.len() == 3 {
            // A tree or a submodule commit at that path: not a file of the baseline.
            let size: usize = parts[2].parse().map_err(|_| bad("a bad size"))?;
            rest = rest.get(size + 1..).ok_or_else(|| bad("a short object"))?;
            res.push(None);
        } else {
            // `<name> missing` (or `ambiguous`): not in the baseline.
            res.push(None);
        }
    }
    Ok(res)
}

/// Runs git with `input` on stdin (written from a thread, so a large answer cannot deadlock).
fn pipe(root: &Path, args: &[&str], input: Vec<u8>) -> Result<Vec<u8>, GitError> {
    let mut child = command(root)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(GitError::Spawn)?;
    let mut stdin = child.stdin.take();
    let writer = std::thread::spawn(move || {
        if let Some(s) = stdin.as_mut() {
            let _ = s.write_all(&input);
        }
        drop(stdin);
    });
    let mut out = Vec::new();
    if let Some(mut s) = child.stdout.take() {
        s.read_to_end(&mut out).map_err(GitError::Spawn)?;
    }
    let mut err = Vec::new();
    if let Some(mut s) = child.stderr.take() {
        let _ = s.read_to_end(&mut err);
    }
    let _ = writer.join();
    let status = child.wait().map_err(GitError::Spawn)?;
    // check-ignore exits 1 when nothing is ignored.
    let ok =
        status.success() || (args.first() == Some(&"check-ignore") && status.code() == Some(1));
    if !ok {
        return Err(GitError::Failed {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&err).trim().to_string(),
        });
    }
    Ok(out)
}

fn split_z(out: &[u8]) -> Vec<String> {
    out.split(|b| *b == 0)
        .filter(|f| !f.is_empty())
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect()
}
