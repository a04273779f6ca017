//! Shell scripts judged as bash runs them, not only as `bash -n` reads them.
//!
//! bash reads a script one top-level command at a time and runs each before it reads the next,
//! so `shopt -s extglob` at the top of a script changes how the rest of it parses: `@(a|b)`,
//! `!(x)`, `+(…)` are patterns after it and syntax errors before it. `bash -n` runs nothing, so
//! it never turns the option on, and it fails such a script at its first pattern, which bash
//! itself runs without complaint.
//!
//! The rule (for a command rule whose program is `bash` with `-n`): when the plain run finds
//! the script invalid and the script has lines that run `shopt -s extglob` or `shopt -u
//! extglob` as a command (`shopt -s nullglob extglob`, `if x; then shopt -s extglob; fi`),
//! each such line that ends a complete top-level command (the script up to it parses on its
//! own, with no warning: not inside a function body, a block, a string or a here-document)
//! cuts the script. Each part is parsed by the same command with the option as the cuts
//! before it left it (`bash -O extglob -n` where it is on), with the lines before the part
//! blanked so that bash's line numbers stay the script's. The script parses when every part
//! does; else the first part that fails gives the error. An option turned on inside a function
//! (which bash parses whole, before the function runs) or inside the block that uses it
//! changes nothing, as in bash. What cannot be told without running the script (an `if` whose
//! branch is not taken) counts as run.
//!
//! A script whose `#!` line names an interpreter outside the Bourne family (`zsh`, `fish`,
//! `python3`) is not judged by the bash rule at all: bash's verdict is not that interpreter's.

use std::io::Write;
use std::path::Path;

use super::command::{self, Ran};
use super::{CommandRule, Outcome};

/// The most `shopt … extglob` lines a script is cut at; past it, the plain run's outcome.
const MAX_CUTS: usize = 32;

/// Whether `rule` parses with bash without running (`bash -n …`, `/usr/bin/bash -n …`).
pub(super) fn is_bash_parse(rule: &CommandRule) -> bool {
    let Some(program) = rule.argv.first() else {
        return false;
    };
    let name = program.rsplit('/').next().unwrap_or(program);
    name == "bash" && rule.argv.iter().skip(1).any(|a| a == "-n")
}

/// The shells whose scripts bash parses as they do (the Bourne family): a `#!` line naming
/// another interpreter (`zsh`, `fish`, `python3`, ...) is not a bash script, whatever its
/// extension.
const BOURNE: &[&str] = &[
    "bash", "sh", "dash", "ash", "ksh", "ksh93", "mksh", "busybox",
];

/// The interpreter a `#!` line names (`#!/usr/bin/env zsh` → `zsh`), when the script has one.
fn interpreter(bytes: &[u8]) -> Option<String> {
    let first = bytes.strip_prefix(b"#!")?;
    let line = first.split(|b| *b == b'\n').next().unwrap_or_default();
    let line = String::from_utf8_lossy(line);
    let mut words = line.split_whitespace();
    let program = words.next()?;
    let name = program.rsplit('/').next().unwrap_or(program);
    if name != "env" {
        return Some(name.to_string());
    }
    // `env [-S] [-i] [NAME=VALUE…] PROGRAM`.
    words
        .find(|w| !w.starts_with('-') && !w.contains('='))
        .map(|w| w.rsplit('/').next().unwrap_or(w).to_string())
}

/// Runs the bash rule on the script `bytes` at `abs` as described in the module doc. A script
/// whose `#!` line names an interpreter outside the Bourne family is not judged by it
/// ([`Outcome::NotApplicable`]): bash's verdict on zsh or fish is not that shell's.
pub(super) fn run(rule: &CommandRule, rel: &str, abs: &Path, bytes: &[u8]) -> Outcome {
    if interpreter(bytes).is_some_and(|i| !BOURNE.contains(&i.as_str())) {
        return Outcome::NotApplicable;
    }
    let plain = command::run(rule, rel, abs);
    if !matches!(plain, Outcome::Invalid { .. }) {
        return plain;
    }
    let lines: Vec<&[u8]> = bytes.split_inclusive(|b| *b == b'\n').collect();
    let toggles: Vec<(usize, bool)> = lines
        .iter()
        .enumerate()
        .filter_map(|(i, l)| extglob_toggle(l).map(|on| (i, on)))
        .take(MAX_CUTS + 1)
        .collect();
    if toggles.is_empty() || toggles.len() > MAX_CUTS || !toggles.iter().any(|(_, on)| *on) {
        return plain;
    }
    let Ok(dir) = tempfile::tempdir() else {
        return plain;
    };
    let on = with_extglob(rule);
    let mut cuts = Vec::new();
    for (i, state) in toggles {
        // A cut only where a top-level command ends: the script up to here parses on its own
        // (extglob on, so that parts already turned on parse), silently.
        let head = lines[..=i].concat();
        match parse_quietly(&on, rel, abs, &dir, "head", &head) {
            Some(true) => cuts.push((i, state)),
            Some(false) => {}
            None => return plain,
        }
    }
    if !cuts.iter().any(|(_, on)| *on) {
        return plain;
    }
    // The parts: [start, end) of lines, each with the state the cut before it left.
    let mut parts = Vec::new();
    let (mut start, mut state) = (0usize, false);
    for (i, now) in &cuts {
        parts.push((start, i + 1, state));
        start = i + 1;
        state = *now;
    }
    parts.push((start, lines.len(), state));
    for (n, (from, to, extglob)) in parts.iter().enumerate() {
        if from == to {
            continue;
        }
        // The lines before the part blanked: bash's line numbers stay the script's.
        let mut text = vec![b'\n'; *from];
        text.extend(lines[*from..*to].concat());
        let file = dir.path().join(format!("part-{n}.sh"));
        if write(&file, &text).is_err() {
            return plain;
        }
        let part_rule = if *extglob { &on } else { rule };
        match command::run_on(part_rule, rel, abs, &file) {
            Outcome::Parsed { .. } => {}
            other => return other,
        }
    }
    let first_on = cuts.iter().find(|(_, on)| *on).map_or(0, |(i, _)| i + 1);
    Outcome::Parsed {
        how: format!(
            "command `{}`, with `extglob` on after line {first_on} where the script runs `shopt -s extglob`, as bash does",
            rule.argv.join(" ")
        ),
    }
}

/// The rule with `-O extglob` before its other arguments.
fn with_extglob(rule: &CommandRule) -> CommandRule {
    let mut argv = rule.argv.clone();
    argv.splice(1..1, ["-O".to_string(), "extglob".to_string()]);
    CommandRule {
        argv,
        ..rule.clone()
    }
}

/// Whether `text` parses with `rule` (exit 0) and prints nothing (bash warns of a here-document
/// cut short, and still exits 0); `None` when it could not be run.
fn parse_quietly(
    rule: &CommandRule,
    rel: &str,
    abs: &Path,
    dir: &tempfile::TempDir,
    name: &str,
    text: &[u8],
) -> Option<bool> {
    let file = dir.path().join(format!("{name}.sh"));
    write(&file, text).ok()?;
    let Ran { status, output, .. } = command::execute(rule, rel, abs, &file).ok()?;
    Some(status.success() && output.trim().is_empty())
}

fn write(path: &Path, text: &[u8]) -> std::io::Result<()> {
    let mut f = std::fs::File::create(path)?;
    f.write_all(text)
}

/// Whether a line runs `shopt` on `extglob` as a command: `Some(true)` for `-s`, `Some(false)`
/// for `-u`. The line is cut at a comment and into commands at `;`, `&`, `|`; a command may
/// follow `then`, `do`, `else`, `{`, `(` or `!`. Quoted text is not told apart (a string that
/// reads as such a command is taken for one: a cut that is not a command boundary fails the
/// check that follows).
fn extglob_toggle(line: &[u8]) -> Option<bool> {
    let line = String::from_utf8_lossy(line);
    let code = match line
        .find(" #")
        .or_else(|| line.trim_start().starts_with('#').then_some(0))
    {
        Some(i) => &line[..i],
        None => &line[..],
    };
    let mut found = None;
    for command in code.split([';', '&', '|', '\n']) {
        let mut words = command
            .split_whitespace()
            .skip_while(|w| matches!(*w, "then" | "do" | "else" | "{" | "(" | "!" | "elif"));
        if words.next() != Some("shopt") {
            continue;
        }
        let (mut set, mut unset, mut names) = (false, false, Vec::new());
        for w in words {
            match w.strip_prefix('-') {
                Some(flags) => {
                    set |= flags.contains('s');
                    unset |= flags.contains('u');
                }
                None => names.push(w),
            }
        }
        if names.contains(&"extglob") && set != unset {
            found = Some(set);
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shopt_lines_are_found_as_commands() {
        let on = |l: &str| extglob_toggle(l.as_bytes());
        assert_eq!(on("shopt -s extglob\n"), Some(true));
        assert_eq!(on("  shopt -qs nullglob extglob # patterns\n"), Some(true));
        assert_eq!(on("if true; then shopt -s extglob; fi\n"), Some(true));
        assert_eq!(on("shopt -u extglob\n"), Some(false));
        assert_eq!(on("# shopt -s extglob\n"), None);
        assert_eq!(on("echo shopt -s extglob\n"), None);
        assert_eq!(on("shopt -s nullglob\n"), None);
        assert_eq!(on("shopt extglob\n"), None);
    }

    #[test]
    fn the_interpreter_of_a_hashbang_line() {
        let of = |s: &str| interpreter(s.as_bytes());
        assert_eq!(of("#!/bin/bash\necho\n").as_deref(), Some("bash"));
        assert_eq!(of("#!/usr/bin/env zsh\n").as_deref(), Some("zsh"));
        assert_eq!(
            of("#!/usr/bin/env -S LANG=C fish -l\n").as_deref(),
            Some("fish")
        );
        assert_eq!(of("#! /bin/sh -e\n").as_deref(), Some("sh"));
        assert_eq!(of("echo no line\n"), None);
    }

    #[test]
    fn only_bash_with_n_is_a_bash_parse() {
        let rule = |argv: &[&str]| CommandRule {
            ext: ".sh".into(),
            argv: argv.iter().map(|a| a.to_string()).collect(),
            timeout: std::time::Duration::from_secs(5),
            replaces_builtin: false,
        };
        assert!(is_bash_parse(&rule(&["bash", "-n", "{path}"])));
        assert!(is_bash_parse(&rule(&["/usr/bin/bash", "-n", "{path}"])));
        assert!(!is_bash_parse(&rule(&["dash", "-n", "{path}"])));
        assert!(!is_bash_parse(&rule(&["bash", "{path}"])));
        assert_eq!(
            with_extglob(&rule(&["bash", "-n", "{path}"])).argv,
            ["bash", "-O", "extglob", "-n", "{path}"]
        );
    }
}
