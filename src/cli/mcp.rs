//! `referee mcp`: serve read-only tools to an agent over stdio.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::{ReadArgs, RulesArgs};
use crate::exit::ExitCode;

#[derive(Args, Debug)]
pub(super) struct McpArgs {
    /// The protocol every call uses when it names none: an embedded id or a protocol file.
    /// Without it, `judge` tells from the directory what it is (task records or the referee's
    /// memory of tasks: `code-change`; the execution tracker: `d10`; neither: it asks the
    /// caller to name one). Calls themselves may name embedded protocols only.
    #[arg(long, value_name = "ID|FILE")]
    protocol: Option<String>,
    /// The referee's state directory of the directory the calls judge (as `watch
    /// --state-dir`); default: the one `watch` uses for each directory.
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Refuse every directory outside DIR: each is opened beneath DIR in one step (links
    /// followed only while they stay inside it), and what is judged is the directory opened;
    /// relative paths in calls are taken from DIR.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    #[command(flatten)]
    read: ReadArgs,
    /// The project's rules, as `watch`, `verify` and `hook` take them, applied to every call
    /// (`judge`, `protected_paths`, `task_verdict`, `explain_check`).
    #[command(flatten)]
    rules: RulesArgs,
}

pub(super) fn mcp(a: McpArgs) -> Result<ExitCode> {
    let cfg = crate::mcp::Config::new(
        a.protocol,
        a.state_dir,
        a.root.as_deref(),
        a.read.max_read_bytes,
        a.rules.overrides()?,
    )?;
    crate::mcp::serve(cfg)?;
    Ok(ExitCode::Ok)
}
