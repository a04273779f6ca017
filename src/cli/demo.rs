//! `referee demo`: a recorded run played while the daemon watches it.

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::{Args, ValueEnum};

use super::GlobalArgs;
use crate::exit::ExitCode;

#[derive(Args, Debug)]
pub(super) struct DemoArgs {
    /// Which run to show: a D10 page build, or a coding agent's task attempts under the
    /// code-change protocol (about 10 s).
    #[arg(value_enum, default_value_t = DemoRun::D10)]
    run: DemoRun,
    /// Play X times faster than recorded (the run lasts about 15 s at 1); 0: no pauses, so
    /// the referee sees little more than the end state and shows no STOP raised and lifted
    /// (the violations are put right before it looks).
    #[arg(long, value_name = "X", default_value_t = 1.0)]
    speed: f64,
    /// Play into DIR (created; must be empty) instead of a new temporary directory.
    #[arg(long, value_name = "DIR")]
    keep: Option<PathBuf>,
    /// The referee's state directory (default: beside the demo's directory, or, with
    /// `--keep`, the default of `watch`).
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum DemoRun {
    /// A D10 pipeline run: a hand-entered gate result raises STOP, a re-run resolves it.
    D10,
    /// A worker touches a protected file (REJECT, STOP), resubmits the same diff (ESCALATE),
    /// then a clean task (APPROVE).
    CodeChange,
}

pub(super) fn demo(a: DemoArgs, g: &GlobalArgs) -> Result<ExitCode> {
    // SIGINT/SIGTERM reach the daemon as a request to finish.
    let signals = crate::daemon::signals::listen_for_termination()
        .context("cannot listen for SIGINT/SIGTERM")?;
    let cfg = crate::demo::DemoConfig {
        scenario: match a.run {
            DemoRun::D10 => crate::demo::Scenario::D10,
            DemoRun::CodeChange => crate::demo::Scenario::CodeChange,
        },
        speed: a.speed,
        dir: a.keep,
        state_dir: a.state_dir,
        // `-v`: every change the referee logs, not just passes, failures and STOP.
        verbose: g.verbose > 0,
    };
    let outcome = crate::demo::run(&cfg, Some(signals), &mut std::io::stdout().lock())?;
    Ok(outcome.exit)
}
