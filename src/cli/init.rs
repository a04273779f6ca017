//! `referee init`: write a starting `--vars` file for a repository.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::print;
use crate::exit::ExitCode;

#[derive(Args, Debug)]
pub(super) struct InitArgs {
    /// The repository (default: the current directory).
    #[arg(value_name = "DIR", default_value = ".")]
    dir: PathBuf,
    /// Write the file here instead of stdout; refused inside DIR (the worker could edit it).
    #[arg(long, short, value_name = "FILE")]
    output: Option<PathBuf>,
    /// Overwrite `--output` when it exists.
    #[arg(long, requires = "output")]
    force: bool,
}

pub(super) fn init(a: InitArgs) -> Result<ExitCode> {
    print(&crate::init::run(&crate::init::Options {
        dir: a.dir,
        output: a.output,
        force: a.force,
    })?)?;
    Ok(ExitCode::Ok)
}
