//! What each command does with its words: the commands that write files (`sed -i`, `cp`,
//! `tar -x`, `git checkout`, `patch`, …), the wrappers in front of commands (`sudo`, `env`,
//! `xargs`, `find -exec`) and the shells that run a script of their own (`sh -c`, `eval`).

use super::options::{in_place_perl, in_place_sed, operands, option_values, strip_wrappers};
use super::{alternatives, base_name, file_name, join, normalise, under, Dir, Shell, Stdin, Val};

/// Commands that write no file (what a redirection or a known option of theirs writes is
/// read separately): a shell call made of these alone needs no judgment after it runs.
const READ_ONLY: &[&str] = &[
    "ls",
    "cat",
    "head",
    "tail",
    "wc",
    "grep",
    "egrep",
    "fgrep",
    "rg",
    "ag",
    "less",
    "more",
    "file",
    "stat",
    "du",
    "df",
    "pwd",
    "echo",
    "printf",
    "true",
    "false",
    "test",
    "[",
    "[[",
    "which",
    "type",
    "whoami",
    "id",
    "date",
    "uname",
    "hostname",
    "diff",
    "cmp",
    "comm",
    "uniq",
    "cut",
    "tr",
    "nl",
    "od",
    "xxd",
    "hexdump",
    "strings",
    "basename",
    "dirname",
    "realpath",
    "readlink",
    "tree",
    "jq",
    "column",
    "sleep",
    "seq",
    "expr",
    "popd",
    "set",
    "shopt",
    "read",
    "exit",
    "return",
    "shift",
    "unset",
    "alias",
    "hash",
    "history",
    "jobs",
    "wait",
    "trap",
    "sha256sum",
    "sha1sum",
    "md5sum",
    "cksum",
    "env",
    "printenv",
    "ps",
    "pgrep",
    "tac",
    "rev",
    "fold",
    "fmt",
    "paste",
    "join",
    "look",
    "man",
    "help",
    ":",
];

impl Shell {
    /// What a command (its words, the wrappers in front already in them) writes.
    pub(super) fn run(&mut self, mut words: Vec<Val>, stdin: Option<Stdin>, by: &str) {
        let mut cwd = self.cwd.clone();
        strip_wrappers(&mut words, &mut cwd);
        if cwd == self.cwd {
            self.command_words(words, stdin, by);
        } else {
            // `env -C DIR cmd` moves for that command only.
            self.scoped(|sh| {
                sh.cwd = cwd;
                sh.command_words(words, stdin, by);
            });
        }
    }

    fn command_words(&mut self, words: Vec<Val>, stdin: Option<Stdin>, by: &str) {
        let Some(first) = words.first() else { return };
        let name = first.lit().map(base_name).unwrap_or("").to_string();
        let args: Vec<Val> = words[1..].to_vec();
        match name.as_str() {
            "cd" | "pushd" => {
                self.cwd = match (args.iter().find(|a| !a.opt().starts_with('-')), &self.cwd) {
                    (Some(Val::Lit(d)), Dir::Known(cwd)) => Dir::Known(normalise(&cwd.join(d))),
                    _ => Dir::Unknown,
                };
            }
            "export" | "declare" | "typeset" | "readonly" | "local" => {
                for a in &args {
                    if let Some((k, v)) = a.lit().and_then(|a| a.split_once('=')) {
                        self.vars.insert(k.to_string(), Val::Lit(v.to_string()));
                    }
                }
            }
            "sed" | "gsed" => {
                for t in in_place_sed(&args) {
                    self.write(&t, by);
                }
            }
            "perl" | "ruby" => {
                for t in in_place_perl(&args) {
                    self.write(&t, by);
                }
            }
            "awk" | "gawk" => {
                // `awk -i inplace 'prog' FILES`
                let inplace = args
                    .windows(2)
                    .any(|w| w[0].opt() == "-i" && w[1].opt() == "inplace");
                if inplace {
                    let ops = operands(&args, &["-i", "-f", "-v", "-F", "-e"]);
                    for t in ops.iter().skip(1) {
                        self.write(t, by);
                    }
                }
            }
            "tee" | "rm" | "unlink" | "shred" | "touch" | "truncate" => {
                for t in operands(
                    &args,
                    &["-s", "--size", "-r", "--reference", "-n", "-d", "-t"],
                ) {
                    self.write(&t, by);
                }
            }
            "chmod" | "chown" | "chgrp" => {
                let reference = args.iter().any(|a| a.opt().starts_with("--reference"));
                for t in operands(&args, &[])
                    .into_iter()
                    .skip(usize::from(!reference))
                {
                    self.write(&t, by);
                }
            }
            "cp" | "install" | "ln" | "mv" => self.copy(&name, &args, by),
            "dd" => {
                for a in &args {
                    if let Some(of) = a.lit().and_then(|a| a.strip_prefix("of=")) {
                        self.write(&Val::Lit(of.to_string()), by);
                    }
                }
            }
            "sort" => {
                for t in option_values(&args, &["-o", "--output"]) {
                    self.write(&t, by);
                }
            }
            "curl" => {
                for t in option_values(&args, &["-o", "--output"]) {
                    self.write(&t, by);
                }
                if args
                    .iter()
                    .any(|a| matches!(a.opt(), "-O" | "--remote-name"))
                {
                    for url in operands(&args, &["-o", "--output", "-H", "-d", "-X", "-u"]) {
                        self.write(&url_name(&url), by);
                    }
                }
            }
            "wget" => {
                let named = option_values(&args, &["-O", "--output-document"]);
                if named.is_empty() {
                    for url in operands(&args, &["-P", "-o", "-a", "-t", "-T", "-U"]) {
                        self.write(&url_name(&url), by);
                    }
                }
                for t in named {
                    self.write(&t, by);
                }
            }
            "rsync" => self.rsync(&args, by),
            "tar" | "bsdtar" | "gtar" => self.tar(&args, by),
            "unzip" => {
                let listing = args
                    .iter()
                    .any(|a| matches!(a.opt(), "-l" | "-t" | "-v" | "-Z" | "-p"));
                if !listing {
                    let dir = option_values(&args, &["-d"])
                        .pop()
                        .unwrap_or(Val::Lit(".".into()));
                    self.write(&under(&dir), by);
                }
            }
            "find" => self.find(&args, by),
            "xargs" => self.xargs(&args, stdin, by),
            "sh" | "bash" | "dash" | "zsh" | "ksh" | "ash" | "busybox" => {
                self.nested_shell(&name, &args, stdin);
            }
            "source" | "." => self.source(&args, by),
            "eval" => {
                let parts: Option<Vec<&str>> = args.iter().map(Val::lit).collect();
                match parts {
                    Some(parts) => {
                        let text = parts.join(" ");
                        self.scoped_script(&text);
                    }
                    None => self.write(&Val::any(), by),
                }
            }
            "git" => self.git(&args, stdin, by),
            "patch" => self.patch(&args, stdin, by),
            "black" | "isort" | "autopep8" | "yapf" | "rustfmt" | "gofmt" | "goimports"
            | "clang-format" | "shfmt" | "prettier" | "eslint" | "ruff" | "autoflake" => {
                self.formatter(&name, &args, by);
            }
            // A shell script run as a program (`./fix.sh`): read like `bash fix.sh`.
            _ if self.shell_script(first).is_some() => {
                if let Some(text) = self.shell_script(first) {
                    self.scoped_script(&text);
                }
                self.opaque = true; // its arguments reach it unread
            }
            // A command the referee does not know may write anything: the call is judged after.
            other => self.opaque |= !READ_ONLY.contains(&other),
        }
    }

    /// `cp`, `install`, `ln`, `mv`: the destination (a directory receives each source by its
    /// name); a move also removes its sources.
    pub(super) fn copy(&mut self, name: &str, args: &[Val], by: &str) {
        let valued: &[&str] = match name {
            "install" => &[
                "-t",
                "--target-directory",
                "-m",
                "--mode",
                "-o",
                "--owner",
                "-g",
                "--group",
                "-S",
                "--suffix",
            ],
            _ => &["-t", "--target-directory", "-S", "--suffix"],
        };
        if name == "install" && args.iter().any(|a| matches!(a.opt(), "-d" | "--directory")) {
            return; // creates directories only
        }
        let target_dir = option_values(args, &["-t", "--target-directory"]).pop();
        let no_target_dir = args
            .iter()
            .any(|a| matches!(a.opt(), "-T" | "--no-target-directory"));
        let mut ops = operands(args, valued);
        let (sources, dest_dir) = match target_dir {
            Some(d) => (ops, Some(d)),
            None if ops.len() >= 2 => {
                let dest = ops.pop().unwrap_or_else(Val::any);
                let is_dir = !no_target_dir && (ops.len() > 1 || self.is_dir(&dest));
                if is_dir {
                    (ops, Some(dest))
                } else {
                    self.write(&dest, by);
                    (ops, None)
                }
            }
            // `ln -s TARGET`: a link named after the target, here.
            None if name == "ln" && ops.len() == 1 => (ops, Some(Val::Lit(".".into()))),
            None => return,
        };
        for src in &sources {
            if let Some(dir) = &dest_dir {
                self.write(&join(dir, &file_name(src)), by);
            }
            if name == "mv" {
                self.write(src, by);
            }
        }
    }

    pub(super) fn rsync(&mut self, args: &[Val], by: &str) {
        let ops = operands(
            args,
            &[
                "-e",
                "--rsh",
                "--exclude",
                "--include",
                "--filter",
                "-f",
                "--files-from",
                "--exclude-from",
                "--include-from",
                "--log-file",
                "--password-file",
                "--port",
                "-T",
                "--temp-dir",
                "--chmod",
                "--chown",
                "-M",
                "--remote-option",
                "--partial-dir",
                "--backup-dir",
                "--suffix",
                "--compare-dest",
                "--copy-dest",
                "--link-dest",
                "--timeout",
                "--bwlimit",
                "--max-size",
                "--min-size",
            ],
        );
        if ops.len() < 2 {
            return;
        }
        if let Some(dest) = ops.last() {
            // A remote destination (`host:path`) is not here.
            if dest.lit().is_some_and(|d| d.contains(':')) {
                return;
            }
            self.write(dest, by);
            self.write(&under(dest), by);
        }
    }

    pub(super) fn tar(&mut self, args: &[Val], by: &str) {
        let mut extract = false;
        for (i, a) in args.iter().enumerate() {
            let a = a.opt();
            if a == "--extract" || a == "--get" {
                extract = true;
            } else if let Some(cluster) = a.strip_prefix('-').filter(|c| !c.starts_with('-')) {
                extract |= cluster.contains('x');
            } else if i == 0 && !a.starts_with('-') {
                // Old style: `tar xzf FILE`.
                extract |= a.contains('x');
            }
        }
        if !extract {
            return;
        }
        let dir = option_values(args, &["-C", "--directory"])
            .pop()
            .unwrap_or(Val::Lit(".".into()));
        self.write(&under(&dir), by);
    }

    pub(super) fn find(&mut self, args: &[Val], by: &str) {
        let starts: Vec<Val> = args
            .iter()
            .take_while(|a| {
                let o = a.opt();
                !(o.starts_with('-') || o == "(" || o == "!")
            })
            .cloned()
            .collect();
        let starts = if starts.is_empty() {
            vec![Val::Lit(".".into())]
        } else {
            starts
        };
        let names: Vec<&Val> = args
            .windows(2)
            .filter(|w| matches!(w[0].opt(), "-name" | "-iname"))
            .map(|w| &w[1])
            .collect();
        let found: Vec<Val> = starts
            .iter()
            .map(|s| match names.as_slice() {
                // At any depth below the start: `**/` also matches no directory at all.
                [name] => join(
                    s,
                    &join(
                        &Val::Pat {
                            glob: "**".into(),
                            anywhere: false,
                        },
                        &as_glob(name),
                    ),
                ),
                _ => under(s),
            })
            .collect();
        let found = alternatives(&found);
        if args.iter().any(|a| a.opt() == "-delete") {
            self.write(&found, by);
        }
        let mut i = 0;
        while i < args.len() {
            if matches!(args[i].opt(), "-exec" | "-execdir" | "-ok" | "-okdir") {
                let end = args[i + 1..]
                    .iter()
                    .position(|a| matches!(a.opt(), ";" | "+"))
                    .map_or(args.len(), |p| i + 1 + p);
                let cmd: Vec<Val> = args[i + 1..end]
                    .iter()
                    .map(|a| {
                        if a.opt() == "{}" {
                            found.clone()
                        } else {
                            a.clone()
                        }
                    })
                    .collect();
                self.scoped(|sh| sh.run(cmd, None, by));
                i = end;
            }
            i += 1;
        }
    }

    pub(super) fn xargs(&mut self, args: &[Val], _stdin: Option<Stdin>, by: &str) {
        let valued = [
            "-I",
            "-i",
            "-n",
            "-P",
            "-d",
            "-a",
            "-L",
            "-s",
            "-E",
            "--max-args",
            "--max-procs",
            "--delimiter",
            "--arg-file",
            "--max-lines",
            "--replace",
        ];
        let mut replace = None;
        let mut i = 0;
        while i < args.len() {
            let a = args[i].opt();
            if !a.starts_with('-') || args[i].lit().is_none() {
                break;
            }
            if a == "-I" || a == "--replace" {
                replace = args.get(i + 1).and_then(Val::lit).map(str::to_string);
            } else if let Some(r) = a.strip_prefix("-I") {
                replace = Some(r.to_string());
            } else if a == "-i" {
                replace = Some("{}".into());
            }
            i += if valued.contains(&a) { 2 } else { 1 };
        }
        let mut cmd: Vec<Val> = args[i.min(args.len())..].to_vec();
        if cmd.is_empty() {
            return;
        }
        // The items read from stdin are unknown: in place of the replace string, or at the end.
        match &replace {
            Some(r) => {
                for w in cmd.iter_mut() {
                    if w.lit().is_some_and(|l| l.contains(r.as_str())) {
                        *w = Val::any();
                    }
                }
            }
            None => cmd.push(Val::any()),
        }
        self.scoped(|sh| sh.run(cmd, None, by));
    }

    pub(super) fn nested_shell(&mut self, name: &str, args: &[Val], stdin: Option<Stdin>) {
        let args = if name == "busybox" {
            match args.split_first() {
                Some((sh, rest)) if matches!(sh.opt(), "sh" | "ash") => rest,
                _ => return,
            }
        } else {
            args
        };
        if let Some(pos) = args.iter().position(|a| {
            a.opt() == "-c" || (a.opt().starts_with('-') && a.opt()[1..].contains('c'))
        }) {
            match args.get(pos + 1) {
                Some(Val::Lit(script)) => self.scoped_script(script),
                Some(_) => self.write(&Val::any(), name),
                None => {}
            }
            return;
        }
        if args
            .iter()
            .any(|a| matches!(a.opt(), "--version" | "--help" | "-n"))
        {
            return; // runs nothing
        }
        // The script is a file, a here-document, a file on stdin, or what a pipe brings (which
        // may be anything).
        let script = match (args.iter().find(|a| !a.opt().starts_with('-')), stdin) {
            (Some(file), _) => self.read_small(file),
            (None, Some(Stdin::Text(text))) => Some(text),
            (None, Some(Stdin::File(file))) => self.read_small(&file),
            (None, None) => None,
        };
        match script {
            Some(text) => self.scoped_script(&text),
            None => self.write(&Val::any(), name),
        }
    }

    /// A formatter or fixer that rewrites the files and folders it is given, in place (with the
    /// flag that makes it do so, for those that print by default).
    pub(super) fn formatter(&mut self, name: &str, args: &[Val], by: &str) {
        let flag = |f: &[&str]| args.iter().any(|a| f.contains(&a.opt()));
        let (writes, mut paths) = match name {
            "black" | "isort" | "rustfmt" | "prettier" | "eslint" => (
                name == "black" && !flag(&["--check", "--diff"])
                    || name == "isort" && !flag(&["--check-only", "-c", "--diff"])
                    || name == "rustfmt" && !flag(&["--check"])
                    || name == "prettier" && flag(&["--write", "-w"])
                    || name == "eslint" && flag(&["--fix"]),
                operands(
                    args,
                    &["--config", "-c", "--ignore-path", "--plugin", "--ext"],
                ),
            ),
            "ruff" => {
                let sub = args.first().map(Val::opt).unwrap_or("");
                (
                    sub == "format" && !flag(&["--check", "--diff"])
                        || sub == "check" && flag(&["--fix"]),
                    operands(&args[1.min(args.len())..], &["--config"]),
                )
            }
            "autopep8" | "yapf" | "clang-format" | "autoflake" => (
                flag(&["-i", "--in-place"]),
                operands(args, &["--style", "--config"]),
            ),
            _ => (flag(&["-w", "-write"]), operands(args, &[])), // gofmt, goimports, shfmt
        };
        if !writes {
            return;
        }
        if paths.is_empty() {
            paths.push(Val::Lit(".".into()));
        }
        for p in paths {
            self.write(&p, by);
        }
    }

    /// The text of `program` when it is a shell script named by its path (`./fix.sh`,
    /// `scripts/x`): its first line a `#!` naming a POSIX shell.
    fn shell_script(&self, program: &Val) -> Option<String> {
        if !program.lit()?.contains('/') {
            return None;
        }
        let text = self.read_small(program)?;
        let first = text.lines().next()?;
        let shebang = first.strip_prefix("#!")?;
        let is_shell = shebang
            .split_whitespace()
            .flat_map(|w| w.rsplit('/').next())
            .any(|w| matches!(w, "sh" | "bash" | "dash" | "zsh" | "ksh" | "ash"));
        is_shell.then_some(text)
    }

    /// `source FILE`, `. FILE`: the file read as part of this shell (its `cd` stays).
    pub(super) fn source(&mut self, args: &[Val], by: &str) {
        match args.first().and_then(|f| self.read_small(f)) {
            Some(text) => self.script(&text),
            None => self.write(&Val::any(), by),
        }
    }

    pub(super) fn scoped_script(&mut self, text: &str) {
        let text = text.to_string();
        self.scoped(|sh| sh.script(&text));
    }
}

/// The file a download is saved as: the URL's last path component.
fn url_name(url: &Val) -> Val {
    match url.lit() {
        Some(u) => {
            let path = u.split(['?', '#']).next().unwrap_or(u);
            let name = path.rsplit('/').next().unwrap_or("");
            if name.is_empty() || !path.contains('/') {
                Val::Lit("index.html".into())
            } else {
                Val::Lit(name.to_string())
            }
        }
        None => Val::Pat {
            glob: "*".into(),
            anywhere: false,
        },
    }
}

/// A `-name` value of `find`, as a glob.
fn as_glob(v: &Val) -> Val {
    match v {
        Val::Lit(s) => Val::Pat {
            glob: s.clone(),
            anywhere: false,
        },
        other => other.clone(),
    }
}
