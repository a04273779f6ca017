//! The commands that write what a revision or a patch holds: `git checkout`, `restore`,
//! `apply`, `reset --hard`, … and `patch` (its patch file is read for the paths it changes).

use super::options::{operands, option_values};
use super::{escape, normalise, under, Dir, Shell, Stdin, Val, MAX_PATCH};

impl Shell {
    pub(super) fn git(&mut self, args: &[Val], stdin: Option<Stdin>, by: &str) {
        // Global options before the subcommand: `-C DIR` moves, `-c k=v` is set.
        let mut i = 0;
        let mut cwd = self.cwd.clone();
        while let Some(a) = args.get(i) {
            match a.opt() {
                "-C" => {
                    cwd = match (args.get(i + 1), &cwd) {
                        (Some(Val::Lit(d)), Dir::Known(c)) => Dir::Known(normalise(&c.join(d))),
                        _ => Dir::Unknown,
                    };
                    i += 2;
                }
                "-c" | "--git-dir" | "--work-tree" | "--namespace" => i += 2,
                o if o.starts_with('-') => i += 1,
                _ => break,
            }
        }
        let Some(sub) = args.get(i).and_then(Val::lit).map(str::to_string) else {
            return;
        };
        let rest = &args[i + 1..];
        let saved = std::mem::replace(&mut self.cwd, cwd);
        let anywhere = Val::any();
        let has = |o: &[&str]| rest.iter().any(|a| o.contains(&a.opt()));
        match sub.as_str() {
            // Putting files back as `HEAD` or the index has them is how an agent restores a
            // protected path (what a blocked stop asks of it): not a write. Another revision's
            // content is.
            "checkout" => {
                let valued = ["-b", "-B", "--orphan", "--conflict"];
                if let Some(dashes) = rest.iter().position(|a| a.opt() == "--") {
                    let revs = operands(&rest[..dashes], &valued);
                    if !revs.iter().all(is_head) {
                        for p in &rest[dashes + 1..] {
                            self.write(p, by);
                        }
                    }
                } else {
                    let ops = operands(rest, &valued);
                    let new_branch = has(&["-b", "-B", "--orphan"]);
                    match ops.split_first() {
                        // `git checkout -b NEW`: no file changes.
                        None => {}
                        Some((_, [])) if new_branch => {}
                        // `git checkout PATH…`: from the index.
                        Some((first, _)) if self.exists(first) => {}
                        // `git checkout HEAD PATH…`: put back; `git checkout REV PATH…`: written.
                        Some((rev, paths)) if !paths.is_empty() && !new_branch && is_head(rev) => {}
                        Some((_, paths)) if !paths.is_empty() && !new_branch => {
                            for p in paths {
                                self.write(p, by);
                            }
                        }
                        // A branch switch rewrites the work tree.
                        Some(_) => self.write(&anywhere, by),
                    }
                }
            }
            "restore" => {
                let staged_only = has(&["--staged", "-S"]) && !has(&["--worktree", "-W"]);
                let source = option_values(rest, &["-s", "--source"]);
                if !staged_only && !source.iter().all(is_head) {
                    if has(&["--pathspec-from-file"]) {
                        self.write(&anywhere, by);
                    }
                    for p in operands(rest, &["-s", "--source", "--conflict"]) {
                        self.write(&p, by);
                    }
                }
            }
            "rm" if !has(&["--cached"]) => {
                for p in operands(rest, &[]) {
                    self.write(&p, by);
                }
            }
            "mv" => self.copy("mv", rest, by),
            "clean" if !has(&["-n", "--dry-run"]) => {
                let ops = operands(rest, &["-e", "--exclude"]);
                if ops.is_empty() {
                    self.write(&under(&Val::Lit(".".into())), by);
                }
                for p in ops {
                    self.write(&under(&p), by);
                }
            }
            "apply" => {
                let no_write = has(&["--cached", "--check", "--stat", "--numstat", "--summary"]);
                if !no_write {
                    let files = operands(rest, &["-p", "-C", "--directory", "--exclude"]);
                    self.patched(&files, stdin, None, by);
                }
            }
            "am" | "merge" | "rebase" | "pull" | "cherry-pick" | "revert" => {
                self.write(&anywhere, by);
            }
            "reset"
                if has(&["--hard", "--merge", "--keep"])
                    && !operands(rest, &[]).iter().all(is_head) =>
            {
                self.write(&anywhere, by)
            }
            "stash"
                if rest
                    .first()
                    .is_some_and(|s| matches!(s.opt(), "pop" | "apply" | "branch")) =>
            {
                self.write(&anywhere, by)
            }
            "switch" => {
                // `git switch -c NEW` makes a branch where HEAD is: nothing is rewritten.
                let creating = has(&["-c", "-C", "--orphan", "--create", "--force-create"]);
                let ops = operands(
                    rest,
                    &["-c", "-C", "--orphan", "--create", "--force-create"],
                );
                if !(creating && ops.is_empty()) {
                    self.write(&anywhere, by);
                }
            }
            // Subcommands that leave the work tree as it is; any other may write it.
            other => {
                self.opaque |= !matches!(
                    other,
                    "status"
                        | "diff"
                        | "log"
                        | "show"
                        | "branch"
                        | "add"
                        | "commit"
                        | "fetch"
                        | "push"
                        | "rev-parse"
                        | "ls-files"
                        | "ls-tree"
                        | "blame"
                        | "grep"
                        | "tag"
                        | "remote"
                        | "describe"
                        | "shortlog"
                        | "reflog"
                        | "cat-file"
                        | "rev-list"
                        | "name-rev"
                        | "config"
                        | "help"
                        | "version"
                        | "whatchanged"
                )
            }
        }
        self.cwd = saved;
    }

    /// `patch [-pN] [-d DIR] [-i PATCH] [-o OUT] [ORIGFILE [PATCHFILE]]`.
    pub(super) fn patch(&mut self, args: &[Val], stdin: Option<Stdin>, by: &str) {
        for out in option_values(args, &["-o", "--output"]) {
            self.write(&out, by);
        }
        let valued = [
            "-p",
            "-d",
            "-i",
            "-o",
            "-r",
            "-B",
            "-D",
            "-F",
            "-V",
            "-Y",
            "-z",
            "--strip",
            "--directory",
            "--input",
            "--output",
        ];
        let ops = operands(args, &valued);
        if let Some(orig) = ops.first() {
            self.write(orig, by);
            return;
        }
        let strip = args
            .iter()
            .enumerate()
            .find_map(|(i, a)| {
                let o = a.opt();
                if o == "-p" || o == "--strip" {
                    args.get(i + 1).and_then(Val::lit).map(str::to_string)
                } else {
                    o.strip_prefix("-p")
                        .or_else(|| o.strip_prefix("--strip="))
                        .map(str::to_string)
                }
            })
            .and_then(|n| n.parse::<usize>().ok());
        let dir = option_values(args, &["-d", "--directory"]).pop();
        let saved = self.cwd.clone();
        if let Some(d) = &dir {
            self.cwd = match (d, &self.cwd) {
                (Val::Lit(d), Dir::Known(c)) => Dir::Known(normalise(&c.join(d))),
                _ => Dir::Unknown,
            };
        }
        let input = option_values(args, &["-i", "--input"]);
        self.patched(&input, stdin, Some(strip), by);
        self.cwd = saved;
    }

    /// The files a patch changes: read from `files` (or stdin), their paths stripped of
    /// `strip` leading components (`None`: git's one; `Some(None)`: `patch` without `-p`,
    /// which may use the base name, so any directory).
    pub(super) fn patched(
        &mut self,
        files: &[Val],
        stdin: Option<Stdin>,
        strip: Option<Option<usize>>,
        by: &str,
    ) {
        let mut texts = Vec::new();
        let sources: Vec<Option<Val>> = if files.is_empty() {
            vec![None]
        } else {
            files.iter().cloned().map(Some).collect()
        };
        for src in sources {
            let text = match (&src, &stdin) {
                (Some(v), _) if v.opt() != "-" => self.read_small(v),
                (_, Some(Stdin::Text(t))) => Some(t.clone()),
                (_, Some(Stdin::File(v))) => self.read_small(v),
                _ => None,
            };
            match text {
                Some(t) => texts.push(t),
                // A patch the referee cannot read may change anything.
                None => return self.write(&Val::any(), by),
            }
        }
        for text in texts {
            for path in diff_paths(&text) {
                let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
                let val = match strip {
                    None => Val::Lit(parts.iter().skip(1).copied().collect::<Vec<_>>().join("/")),
                    Some(Some(n)) => {
                        Val::Lit(parts.iter().skip(n).copied().collect::<Vec<_>>().join("/"))
                    }
                    Some(None) => Val::Pat {
                        glob: format!("*/{}", escape(parts.last().copied().unwrap_or(""))),
                        anywhere: true,
                    },
                };
                if val.lit() == Some("") {
                    continue;
                }
                // git applies paths from the top of the work tree: wherever the shell is.
                let val = match (strip, val) {
                    (None, Val::Lit(p)) => Val::Pat {
                        glob: format!("*/{}", escape(&p)),
                        anywhere: true,
                    },
                    (_, v) => v,
                };
                self.write(&val, by);
            }
        }
    }

    pub(super) fn read_small(&self, v: &Val) -> Option<String> {
        use std::io::Read as _;
        let path = self.resolve(v.lit()?)?;
        let f = std::fs::File::open(path).ok()?;
        let mut s = String::new();
        f.take(MAX_PATCH).read_to_string(&mut s).ok()?;
        Some(s)
    }
}

/// `HEAD` itself (`@` is its short name).
fn is_head(rev: &Val) -> bool {
    matches!(rev.lit(), Some("HEAD" | "@"))
}

/// The paths a unified or git diff names (`--- a/x`, `+++ b/x`, `diff --git a/x b/y`,
/// `rename to`, …), as written (prefixes included).
fn diff_paths(text: &str) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let path = if let Some(rest) = line
            .strip_prefix("+++ ")
            .or_else(|| line.strip_prefix("--- "))
        {
            rest.split('\t').next().unwrap_or("").trim().to_string()
        } else if let Some(rest) = line.strip_prefix("diff --git ") {
            for p in rest.split_whitespace() {
                if !out.iter().any(|o| o == p) {
                    out.push(p.to_string());
                }
            }
            continue;
        } else if let Some(rest) = line
            .strip_prefix("rename to ")
            .or_else(|| line.strip_prefix("copy to "))
        {
            format!("b/{}", rest.trim())
        } else {
            continue;
        };
        if path.is_empty() || path == "/dev/null" || out.contains(&path) {
            continue;
        }
        out.push(path);
    }
    out
}
