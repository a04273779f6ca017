//! `referee task`: the orchestrator registers the tasks it assigned (code-change).

use std::path::PathBuf;

use anyhow::Result;
use clap::{Args, Subcommand};

use super::print;
use crate::exit::ExitCode;

#[derive(Subcommand, Debug)]
pub(super) enum TaskCommand {
    /// Register the tasks the orchestrator assigned. Once any task is registered, a record
    /// for a task that was never opened is CC-00 FAIL (`unknown_task`): it claims no change,
    /// so it excuses no other task's, and it counts toward no guard. Run it outside the
    /// workspace (it writes the referee's state directory, not the workspace). Opening a task
    /// again is harmless.
    Open(OpenArgs),
}

#[derive(Args, Debug)]
pub(super) struct OpenArgs {
    /// The workspace.
    workspace: PathBuf,
    /// The task ids, as the records' `task_id` will name them.
    #[arg(required = true, value_name = "ID")]
    tasks: Vec<String>,
    /// The referee's state directory (default: the one `watch` uses for the workspace).
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
}

pub(super) fn task(c: TaskCommand) -> Result<ExitCode> {
    match c {
        TaskCommand::Open(a) => {
            let state = crate::judge::state_of(&a.workspace, a.state_dir.as_deref())?;
            crate::state::ensure(&state)?;
            let r = crate::state::registry::open(&state, &a.tasks)?;
            print(&format!(
                "open: {} (a record of any other task is CC-00 FAIL, unknown_task)\n",
                r.tasks.iter().cloned().collect::<Vec<_>>().join(", ")
            ))?;
            Ok(ExitCode::Ok)
        }
    }
}
