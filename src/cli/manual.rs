//! `referee completions` and `referee man`: the shell completion scripts and manual pages
//! generated from the clap definitions.

use anyhow::{bail, Context as _, Result};
use clap::CommandFactory as _;

use super::{print, Cli};
use crate::exit::ExitCode;

pub(super) fn completions(shell: clap_complete::Shell) -> Result<ExitCode> {
    let mut buf = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "referee", &mut buf);
    print(&String::from_utf8_lossy(&buf))?;
    Ok(ExitCode::Ok)
}

/// The subcommand `path` names (`protocol-explain`: names joined with `-`), from `cmd` down.
fn find_subcommand<'c>(cmd: &'c clap::Command, path: &str) -> Option<&'c clap::Command> {
    cmd.get_subcommands().find_map(|sub| {
        let name = sub.get_name();
        if path == name {
            return Some(sub);
        }
        let rest = path.strip_prefix(name)?.strip_prefix('-')?;
        find_subcommand(sub, rest)
    })
}

/// Every subcommand path under `cmd`, depth first (`protocol`, `protocol list`, …).
fn subcommand_paths(cmd: &clap::Command, prefix: &str, out: &mut Vec<String>) {
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        let path = format!("{prefix}{}", sub.get_name());
        out.push(path.clone());
        subcommand_paths(sub, &format!("{path} "), out);
    }
}

pub(super) fn man(command: &[String]) -> Result<ExitCode> {
    let mut cmd = Cli::command();
    cmd.build();
    let page = if command.is_empty() {
        cmd
    } else {
        let words: Vec<&str> = command.iter().flat_map(|w| w.split_whitespace()).collect();
        let name = words.join("-");
        match find_subcommand(&cmd, &name) {
            Some(sub) => sub
                .clone()
                .display_name(format!("referee-{name}"))
                .version(env!("CARGO_PKG_VERSION")),
            None => {
                let mut all = Vec::new();
                subcommand_paths(&cmd, "", &mut all);
                bail!(
                    "no command `{}` (commands: {})",
                    words.join(" "),
                    all.join(", ")
                )
            }
        }
    };
    let mut buf = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut buf)
        .context("cannot render the manual page")?;
    print(&String::from_utf8_lossy(&buf))?;
    Ok(ExitCode::Ok)
}
