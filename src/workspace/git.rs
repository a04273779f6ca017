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

/// The work tree against `HEAD` in one `git status` (the common case: the daemon asks this at
/// every judgment, and one process is half the wait of `rev-parse` + `diff` + `ls-files`).
#[derive(Debug, Default, PartialEq)]
pub struct HeadStatus {
    /// The commit `HEAD` names, as status read it (`None`: no commit yet).
    pub head: Option<String>,
    /// Tracked paths that differ between `HEAD` and the work tree.
    pub changes: Vec<(Status, String)>,
    /// Untracked files that no ignore rule excludes.
    pub untracked: Vec<String>,
}

/// [`HeadStatus`] from `git status --porcelain=v2 -z --branch --untracked-files=all
/// --no-renames --ignore-submodules`: the same answers as [`resolve`] of `HEAD`,
/// [`diff_names`] against it and [`untracked`], read in one consistent look.
pub fn head_status(root: &Path) -> Result<HeadStatus, GitError> {
    let args = [
        "status",
        "--porcelain=v2",
        "-z",
        "--branch",
        "--untracked-files=all",
        "--no-renames",
        "--ignore-submodules",
    ];
    let out = run(root, &args)?;
    parse_head_status(&out).map_err(|why| GitError::Output {
        args: args.join(" "),
        why,
    })
}

/// Parses `git status --porcelain=v2 -z --branch` output (see [`head_status`]).
pub fn parse_head_status(out: &[u8]) -> Result<HeadStatus, String> {
    const ABSENT: &str = "000000";
    let mut st = HeadStatus::default();
    let mut fields = out.split(|b| *b == 0).filter(|f| !f.is_empty());
    while let Some(entry) = fields.next() {
        let entry = String::from_utf8_lossy(entry);
        let kind = entry.split(' ').next().unwrap_or("");
        match kind {
            "#" => {
                if let Some(oid) = entry.strip_prefix("# branch.oid ") {
                    st.head = (oid != "(initial)").then(|| oid.to_string());
                }
            }
            "?" => match entry.strip_prefix("? ") {
                Some(path) => st.untracked.push(path.to_string()),
                None => return Err(format!("an untracked entry without a path: {entry}")),
            },
            // Ignored files are not asked for; a line of that kind changes nothing.
            "!" => {}
            // `1 XY sub mH mI mW hH hI path`: the path is everything after the eighth space.
            "1" => {
                let parts: Vec<&str> = entry.splitn(9, ' ').collect();
                let [_, _, _, m_head, _, m_work, _, _, path] = parts[..] else {
                    return Err(format!("a changed entry with too few fields: {entry}"));
                };
                let status = match (m_head == ABSENT, m_work == ABSENT) {
                    (true, true) => continue,
                    (true, false) => Status::Added,
                    (false, true) => Status::Removed,
                    (false, false) => Status::Modified,
                };
                st.changes.push((status, path.to_string()));
            }
            // `2 XY sub mH mI mW hH hI Xscore path` then the original path: not asked for
            // (`--no-renames`), read as a removal plus whatever the new path is.
            "2" => {
                let parts: Vec<&str> = entry.splitn(10, ' ').collect();
                let [_, _, _, m_head, _, m_work, _, _, _, path] = parts[..] else {
                    return Err(format!("a renamed entry with too few fields: {entry}"));
                };
                let orig = fields
                    .next()
                    .ok_or_else(|| format!("a renamed entry without its original path: {entry}"))?;
                st.changes
                    .push((Status::Removed, String::from_utf8_lossy(orig).into_owned()));
                if m_work != ABSENT {
                    let status = if m_head == ABSENT {
                        Status::Added
                    } else {
                        Status::Modified
                    };
                    st.changes.push((status, path.to_string()));
                }
            }
            // `u XY sub m1 m2 m3 mW h1 h2 h3 path`: unmerged, so not the baseline's content.
            "u" => {
                let path = entry
                    .splitn(11, ' ')
                    .nth(10)
                    .ok_or_else(|| format!("an unmerged entry with too few fields: {entry}"))?;
                st.changes.push((Status::Modified, path.to_string()));
            }
            _ => return Err(format!("an entry of an unknown kind: {entry}")),
        }
    }
    Ok(st)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn git(root: &Path, args: &[&str]) {
        let out = command(root)
            .args(["-c", "user.name=t", "-c", "user.email=t@t"])
            .args(args)
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {out:?}");
    }

    /// One `git status` says what `rev-parse HEAD`, `diff HEAD` and `ls-files --others` say,
    /// for every kind of change: modified, added to the index, removed from the work tree,
    /// dropped from the index but still on disk, untracked (in a new folder too), ignored, and
    /// a name with spaces.
    #[test]
    fn head_status_agrees_with_the_three_commands_it_replaces() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        git(root, &["init", "-q"]);
        assert_eq!(head_status(root).unwrap().head, None, "no commit yet");
        for f in ["a.py", "b.py", "c.py", "d.py", "with space.py"] {
            std::fs::write(root.join(f), f).unwrap();
        }
        std::fs::write(root.join(".gitignore"), "*.log\n").unwrap();
        git(root, &["add", "-A"]);
        git(root, &["commit", "-q", "-m", "base"]);
        std::fs::write(root.join("a.py"), "changed").unwrap();
        std::fs::write(root.join("with space.py"), "changed").unwrap();
        std::fs::remove_file(root.join("b.py")).unwrap();
        git(root, &["rm", "-q", "--cached", "c.py"]);
        std::fs::write(root.join("staged.py"), "new").unwrap();
        git(root, &["add", "staged.py"]);
        std::fs::create_dir_all(root.join("new/deep")).unwrap();
        std::fs::write(root.join("new/deep/e.py"), "e").unwrap();
        std::fs::write(root.join("f.py"), "f").unwrap();
        std::fs::write(root.join("noise.log"), "ignored").unwrap();

        let st = head_status(root).unwrap();
        let head = resolve(root, "HEAD").unwrap();
        assert_eq!(st.head, head);
        let mut want = diff_names(root, head.as_deref().unwrap()).unwrap();
        let mut got = st.changes.clone();
        want.sort_by(|a, b| a.1.cmp(&b.1));
        got.sort_by(|a, b| a.1.cmp(&b.1));
        assert_eq!(got, want);
        let mut want = untracked(root).unwrap();
        let mut got = st.untracked.clone();
        want.sort();
        got.sort();
        assert_eq!(got, want);
        assert!(got.contains(&"new/deep/e.py".to_string()), "{got:?}");
        assert!(!got.iter().any(|p| p.ends_with(".log")), "{got:?}");
    }

    #[test]
    fn status_entries_of_every_kind_are_read_and_bad_ones_refused() {
        let out = b"# branch.oid 0123\0# branch.head main\0\
1 .M N... 100644 100644 100644 aa aa a b.py\0\
1 A. N... 000000 100644 100644 00 bb new.py\0\
1 AD N... 000000 100644 000000 00 bb gone.py\0\
2 R. N... 100644 100644 100644 aa aa R100 to.py\0from.py\0\
u UU N... 100644 100644 100644 100644 aa bb cc conflict.py\0\
? u.py\0! ign.log\0";
        let st = parse_head_status(out).unwrap();
        assert_eq!(st.head.as_deref(), Some("0123"));
        assert_eq!(
            st.changes,
            vec![
                (Status::Modified, "a b.py".to_string()),
                (Status::Added, "new.py".to_string()),
                (Status::Removed, "from.py".to_string()),
                (Status::Modified, "to.py".to_string()),
                (Status::Modified, "conflict.py".to_string()),
            ]
        );
        assert_eq!(st.untracked, vec!["u.py".to_string()]);
        assert_eq!(
            parse_head_status(b"# branch.oid (initial)\0").unwrap().head,
            None
        );
        for bad in [
            &b"1 .M N...\0"[..],
            b"?\0",
            b"2 R. N... 1 1 1 a a R100 x\0",
            b"z what\0",
        ] {
            assert!(
                parse_head_status(bad).is_err(),
                "{}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
