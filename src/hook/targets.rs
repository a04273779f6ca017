//! What a tool call is about to write, as far as it is obvious from its input: the file of a
//! Write/Edit/MultiEdit, the paths of a Codex `apply_patch` envelope, and the targets of a
//! shell command whose writing is plain to see (`sed -i`, `perl -i`, a redirection, `tee`, `cp`,
//! `mv`, `rm`, `truncate`, `touch`, `chmod`, `ln`, `dd of=`). Advisory only (issue 18): a shell
//! has endless ways to write a file, and the stop-point judgment is what holds; this only saves
//! the agent the trip. Nothing here runs or expands anything: words are split as the shell
//! would quote them, and a word with `$`, a backtick or a glob is taken literally.

use std::path::{Component, Path, PathBuf};

/// The paths a shell `command` obviously writes, as written in it (relative to the shell's
/// working directory, or absolute).
pub fn shell(command: &str) -> Vec<String> {
    let mut out = Vec::new();
    for words in simple_commands(command) {
        let mut words = strip_redirections(words, &mut out);
        // `sudo`, `env A=B`, `command`, `nice`, `xargs`: look past them to the command.
        while let Some(first) = words.first() {
            let name = base_name(first);
            if matches!(
                name,
                "sudo" | "env" | "command" | "nice" | "nohup" | "time" | "builtin" | "exec"
            ) || first.contains('=') && !first.starts_with('-')
            {
                words.remove(0);
            } else {
                break;
            }
        }
        let Some(first) = words.first() else {
            continue;
        };
        let args: Vec<&str> = words[1..].iter().map(String::as_str).collect();
        match base_name(first) {
            "sed" | "gsed" => out.extend(in_place(&args, &["-i", "--in-place"], 'i', "-e", "-f")),
            "perl" => out.extend(perl_in_place(&args)),
            "tee" | "truncate" | "rm" | "unlink" | "touch" | "shred" => {
                out.extend(operands(&args, &["-s", "--size", "-r", "--reference"]));
            }
            "chmod" | "chown" | "chgrp" => out.extend(operands(&args, &[]).into_iter().skip(1)),
            "cp" | "install" | "ln" => {
                let ops = operands(&args, &["-t", "--target-directory", "-m", "--mode"]);
                if ops.len() >= 2 {
                    out.extend(ops.last().cloned());
                }
            }
            // A move writes its target and removes its sources.
            "mv" => {
                let ops = operands(&args, &["-t", "--target-directory"]);
                if ops.len() >= 2 {
                    out.extend(ops);
                }
            }
            "dd" => out.extend(
                args.iter()
                    .filter_map(|a| a.strip_prefix("of="))
                    .map(str::to_string),
            ),
            _ => {}
        }
    }
    out.retain(|p| !p.is_empty() && p != "/dev/null" && !p.starts_with("/dev/fd/"));
    out
}

/// The paths of a Codex `apply_patch` envelope (`*** Add File: P`, `*** Update File: P`,
/// `*** Delete File: P`, `*** Move to: P`).
pub fn apply_patch(patch: &str) -> Vec<String> {
    patch
        .lines()
        .filter_map(|l| {
            let l = l.trim_start();
            [
                "*** Add File: ",
                "*** Update File: ",
                "*** Delete File: ",
                "*** Move to: ",
            ]
            .iter()
            .find_map(|p| l.strip_prefix(p))
            .map(|p| p.trim().to_string())
        })
        .filter(|p| !p.is_empty())
        .collect()
}

/// `path` (absolute, or relative to `cwd`) relative to the workspace `root`, `/`-separated,
/// `.` and `..` resolved as written (then through the real parent directory when it exists, so a
/// symlinked directory is seen where it leads). `None` when it lies outside `root`.
pub fn relative(root: &Path, cwd: &Path, path: &str) -> Option<String> {
    let p = Path::new(path);
    let joined = if p.is_absolute() {
        p.to_path_buf()
    } else {
        cwd.join(p)
    };
    let lexical = normalise(&joined);
    let real = lexical
        .parent()
        .and_then(|d| std::fs::canonicalize(d).ok())
        .zip(lexical.file_name())
        .map(|(d, n)| d.join(n))
        .unwrap_or_else(|| lexical.clone());
    let root_real = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
    for (candidate, base) in [(&real, &root_real), (&lexical, &root.to_path_buf())] {
        if let Ok(rest) = candidate.strip_prefix(base) {
            let rel = rest
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect::<Vec<_>>()
                .join("/");
            return (!rel.is_empty()).then_some(rel);
        }
    }
    None
}

/// `.` and `..` taken out as written.
fn normalise(p: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            c => out.push(c.as_os_str()),
        }
    }
    out
}

fn base_name(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// The files of an in-place editor (`sed -i`): none unless an in-place flag is given; the
/// first operand is the script unless one came with `-e`/`-f` (or `--expression`/`--file`).
fn in_place(args: &[&str], long: &[&str], short: char, e: &str, f: &str) -> Vec<String> {
    let mut inplace = false;
    let mut script_given = false;
    let mut ops = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if *a == "--" {
            ops.extend(it.by_ref().map(|s| s.to_string()));
            break;
        }
        if long
            .iter()
            .any(|l| a == l || a.starts_with(&format!("{l}=")))
        {
            inplace = true;
        } else if *a == e || *a == f || *a == "--expression" || *a == "--file" {
            script_given = true;
            it.next();
        } else if a.starts_with("--expression=") || a.starts_with("--file=") {
            script_given = true;
        } else if let Some(flags) = a.strip_prefix('-').filter(|f| !f.starts_with('-')) {
            // `-i`, `-i.bak`, `-ni`, `-Ei`: a cluster naming `i` (sed's suffix follows the `i`).
            let mut chars = flags.chars();
            while let Some(c) = chars.next() {
                if c == short {
                    inplace = true;
                    break;
                }
                if c == 'e' || c == 'f' {
                    script_given = true;
                    if chars.as_str().is_empty() {
                        it.next();
                    }
                    break;
                }
            }
        } else if !a.starts_with('-') {
            ops.push(a.to_string());
        }
    }
    if !inplace {
        return Vec::new();
    }
    if !script_given && !ops.is_empty() {
        ops.remove(0);
    }
    ops
}

/// `perl -i -pe 'script' FILES`, `perl -pi -e …`.
fn perl_in_place(args: &[&str]) -> Vec<String> {
    let mut inplace = false;
    let mut ops = Vec::new();
    let mut script_given = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if let Some(flags) = a.strip_prefix('-').filter(|f| !f.is_empty()) {
            if flags.starts_with('i') || flags.contains('i') && !flags.starts_with('e') {
                inplace = true;
            }
            if flags.ends_with('e') || flags.ends_with('E') {
                script_given = true;
                it.next();
            }
        } else {
            ops.push(a.to_string());
        }
    }
    if !inplace {
        return Vec::new();
    }
    if !script_given && !ops.is_empty() {
        ops.remove(0);
    }
    ops
}

/// The words that are not options (nor the values of `valued` options).
fn operands(args: &[&str], valued: &[&str]) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        if *a == "--" {
            out.extend(it.by_ref().map(|s| s.to_string()));
            break;
        }
        if valued.contains(a) {
            it.next();
        } else if !a.starts_with('-') || *a == "-" {
            out.push(a.to_string());
        }
    }
    out.retain(|a| a != "-");
    out
}

/// Takes the redirections out of a simple command's words, pushing the files written to `out`.
fn strip_redirections(words: Vec<String>, out: &mut Vec<String>) -> Vec<String> {
    let mut kept = Vec::new();
    let mut it = words.into_iter();
    while let Some(w) = it.next() {
        // `>f`, `>>f`, `2>f`, `&>f`, `>|f`, and the same with the file as the next word.
        let digits = w.trim_start_matches(|c: char| c.is_ascii_digit());
        let rest = digits.strip_prefix('&').unwrap_or(digits);
        if let Some(after) = rest.strip_prefix('>') {
            let after = after
                .strip_prefix('>')
                .or_else(|| after.strip_prefix('|'))
                .unwrap_or(after);
            if after.starts_with('&') {
                continue; // `2>&1`: a descriptor, not a file.
            }
            let target = if after.is_empty() {
                it.next().unwrap_or_default()
            } else {
                after.to_string()
            };
            out.push(target);
            continue;
        }
        if let Some(after) = digits.strip_prefix('<') {
            if after.is_empty() {
                it.next();
            }
            continue;
        }
        kept.push(w);
    }
    kept
}

/// The simple commands of a command line, each as its words with quotes taken out: split at
/// `;`, `&`, `|`, newlines and parentheses outside quotes. A `>` or `<` is its own word start.
fn simple_commands(line: &str) -> Vec<Vec<String>> {
    let mut cmds = Vec::new();
    let mut words: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut in_word = false;
    let mut chars = line.chars().peekable();
    let flush_word = |word: &mut String, in_word: &mut bool, words: &mut Vec<String>| {
        if *in_word {
            words.push(std::mem::take(word));
            *in_word = false;
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                in_word = true;
                for d in chars.by_ref() {
                    if d == '\'' {
                        break;
                    }
                    word.push(d);
                }
            }
            '"' => {
                in_word = true;
                while let Some(d) = chars.next() {
                    match d {
                        '"' => break,
                        '\\' => {
                            if let Some(e) = chars.next() {
                                word.push(e);
                            }
                        }
                        d => word.push(d),
                    }
                }
            }
            '\\' => {
                in_word = true;
                if let Some(e) = chars.next() {
                    if e != '\n' {
                        word.push(e);
                    }
                }
            }
            ';' | '|' | '\n' | '(' | ')' | '{' | '}' | '`' => {
                flush_word(&mut word, &mut in_word, &mut words);
                if !words.is_empty() {
                    cmds.push(std::mem::take(&mut words));
                }
            }
            '&' if chars.peek() != Some(&'>') && !word.ends_with('>') => {
                flush_word(&mut word, &mut in_word, &mut words);
                if !words.is_empty() {
                    cmds.push(std::mem::take(&mut words));
                }
            }
            '>' | '<' => {
                // A redirection starts a word of its own (`echo x>f`), keeping a descriptor
                // number written right before it (`2>f`).
                if in_word && !word.chars().all(|d| d.is_ascii_digit() || d == '&') {
                    flush_word(&mut word, &mut in_word, &mut words);
                }
                in_word = true;
                word.push(c);
                while let Some(&d) = chars.peek() {
                    if d == '>' || d == '|' || d == '&' {
                        word.push(d);
                        chars.next();
                    } else {
                        break;
                    }
                }
                // `2>&1`: the descriptor belongs to the same word.
                if word.ends_with('&') {
                    while let Some(&d) = chars.peek() {
                        if d.is_ascii_digit() || d == '-' {
                            word.push(d);
                            chars.next();
                        } else {
                            break;
                        }
                    }
                    flush_word(&mut word, &mut in_word, &mut words);
                } else {
                    flush_word(&mut word, &mut in_word, &mut words);
                }
            }
            c if c.is_whitespace() => flush_word(&mut word, &mut in_word, &mut words),
            c => {
                in_word = true;
                word.push(c);
            }
        }
    }
    flush_word(&mut word, &mut in_word, &mut words);
    if !words.is_empty() {
        cmds.push(words);
    }
    cmds
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn in_place_editors_name_their_files_not_their_scripts() {
        assert_eq!(
            shell("sed -i 's/a/b/' orchestrator.py"),
            ["orchestrator.py"]
        );
        assert_eq!(shell("sed -i.bak -e 's/a/b/' a.py b.py"), ["a.py", "b.py"]);
        assert_eq!(shell("sed -Ei 's/a/b/' src/x.py"), ["src/x.py"]);
        assert_eq!(shell("sed --in-place=.orig 's/a/b/' x"), ["x"]);
        assert!(
            shell("sed 's/a/b/' orchestrator.py").is_empty(),
            "no -i: reads only"
        );
        assert_eq!(shell("perl -pi -e 's/a/b/' roles.py"), ["roles.py"]);
        assert_eq!(shell("perl -i -pe 's/a/b/' roles.py"), ["roles.py"]);
        assert!(shell("perl -ne 'print' roles.py").is_empty());
    }

    #[test]
    fn redirections_and_writers_are_targets() {
        assert_eq!(shell("echo x > a.txt"), ["a.txt"]);
        assert_eq!(shell("echo x>>'b c.txt'"), ["b c.txt"]);
        assert_eq!(shell("cmd 2>err.log >out.log"), ["err.log", "out.log"]);
        assert_eq!(shell("cmd 2>&1 | tee -a log.txt"), ["log.txt"]);
        assert_eq!(shell("cat x >/dev/null"), Vec::<String>::new());
        assert_eq!(shell("cp -r a b dest/"), ["dest/"]);
        assert_eq!(shell("mv old.py new.py"), ["old.py", "new.py"]);
        assert_eq!(shell("rm -f a b"), ["a", "b"]);
        assert_eq!(shell("chmod +x run.sh"), ["run.sh"]);
        assert_eq!(shell("sudo truncate -s 0 f"), ["f"]);
        assert_eq!(
            shell("cd src && sed -i s/a/b/ orchestrator.py"),
            ["orchestrator.py"]
        );
        assert_eq!(shell("dd if=/dev/zero of=disk.img"), ["disk.img"]);
        assert!(shell("ls -la; git status; grep -r x .").is_empty());
        assert!(shell("cat < in.txt").is_empty());
    }

    #[test]
    fn quotes_and_odd_input_never_panic() {
        for s in [
            "",
            "'",
            "\"",
            "\\",
            ">",
            ">>",
            "2>",
            "&",
            "&&",
            "|",
            "sed -i",
            "sed -i -e",
            "perl -pie",
            "mv",
            "cp a",
            "echo \"unterminated",
            "a\\\n> b",
            "((((",
            "x 9>&",
            "tee --",
        ] {
            let _ = shell(s);
        }
        assert_eq!(shell("echo 'a > b'"), Vec::<String>::new());
    }

    #[test]
    fn apply_patch_envelopes_name_every_path() {
        let p = "*** Begin Patch\n*** Update File: src/orchestrator.py\n@@\n-a\n+b\n*** Add File: new.py\n+x\n*** Delete File: old.py\n*** Update File: a.py\n*** Move to: b.py\n*** End Patch\n";
        assert_eq!(
            apply_patch(p),
            ["src/orchestrator.py", "new.py", "old.py", "a.py", "b.py"]
        );
    }

    #[test]
    fn paths_are_made_relative_to_the_workspace_or_left_out() {
        let d = tempfile::tempdir().unwrap();
        let root = d.path();
        std::fs::create_dir(root.join("src")).unwrap();
        let cwd = root.join("src");
        assert_eq!(relative(root, &cwd, "x.py").as_deref(), Some("src/x.py"));
        assert_eq!(
            relative(root, &cwd, "../orchestrator.py").as_deref(),
            Some("orchestrator.py")
        );
        let abs = root.join("src/./../roles.py");
        assert_eq!(
            relative(root, root, abs.to_str().unwrap()).as_deref(),
            Some("roles.py")
        );
        assert_eq!(relative(root, root, "/etc/passwd"), None);
        assert_eq!(relative(root, root, "../outside"), None);
    }
}
