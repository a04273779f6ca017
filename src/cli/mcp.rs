//! `referee mcp`: serve read-only tools to an agent over stdio.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::{load_protocol, ReadArgs};
use crate::exit::ExitCode;

#[derive(Args, Debug)]
pub(super) struct McpArgs {
    /// What `judge` uses when a call names no protocol (default `d10`): an embedded id or a
    /// protocol file. Calls themselves may name embedded protocols only.
    #[arg(long, value_name = "ID|FILE")]
    protocol: Option<String>,
    /// The referee's state directory of the directory the calls judge (as `watch
    /// --state-dir`); default: the one `watch` uses for each directory.
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Refuse every directory outside DIR (symlinks resolved); relative paths in calls are
    /// taken from DIR.
    #[arg(long, value_name = "DIR")]
    root: Option<PathBuf>,
    #[command(flatten)]
    read: ReadArgs,
}

pub(super) fn mcp(a: McpArgs) -> Result<ExitCode> {
    if let Some(spec) = &a.protocol {
        load_protocol(spec)?;
    }
    let cfg = crate::mcp::Config::new(
        a.protocol,
        a.state_dir,
        a.root.as_deref(),
        a.read.max_read_bytes,
    )?;
    crate::mcp::serve(cfg)?;
    Ok(ExitCode::Ok)
}
