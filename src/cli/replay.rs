//! `referee replay`: write a recorded pipeline run into a directory.

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::{print, GlobalArgs};
use crate::exit::ExitCode;

#[derive(Args, Debug)]
pub(super) struct ReplayArgs {
    /// A timeline file (`fixtures/timelines/*.toml`) or an embedded one (`demo`, `clean`).
    #[arg(value_name = "TIMELINE")]
    timeline: String,
    /// The directory to write into (created if missing); nothing is written outside it.
    #[arg(value_name = "DIR")]
    dir: PathBuf,
    /// Play X times faster than recorded; 0 writes everything without waiting.
    #[arg(long, value_name = "X", default_value_t = 1.0)]
    speed: f64,
    /// Play only the steps recorded at or after this offset (e.g. `49m`).
    #[arg(long, value_name = "OFFSET")]
    from: Option<String>,
    /// Play only the steps recorded before this offset (e.g. `49m`: a run stopped in Phase 3A).
    #[arg(long, value_name = "OFFSET")]
    until: Option<String>,
}

pub(super) fn replay(a: ReplayArgs, g: &GlobalArgs) -> Result<ExitCode> {
    let timeline = crate::replay::Timeline::load(&a.timeline)?;
    let offset = |s: &Option<String>| -> Result<_> {
        s.as_deref()
            .map(crate::replay::parse_offset)
            .transpose()
            .map_err(anyhow::Error::msg)
    };
    let opts = crate::replay::PlayOptions {
        speed: a.speed,
        from: offset(&a.from)?,
        until: offset(&a.until)?,
        ..Default::default()
    };
    crate::replay::play(&timeline, &a.dir, &opts, |played| {
        if !g.quiet && print(&crate::replay::line(played)).is_err() {
            return std::ops::ControlFlow::Break(());
        }
        std::ops::ControlFlow::Continue(())
    })?;
    Ok(ExitCode::Ok)
}
