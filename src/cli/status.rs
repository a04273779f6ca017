//! `referee status`: what an orchestrator asks at a phase transition.

use std::path::PathBuf;

use anyhow::{bail, Result};
use clap::Args;

use super::{load_protocol, print};
use crate::exit::ExitCode;

#[derive(Args, Debug)]
pub(super) struct StatusArgs {
    /// The pipeline's build output directory.
    build_dir: PathBuf,
    /// Exit 3 unless a live referee watches this very directory: its heartbeat is fresh, sane,
    /// not finished or faulted, written for this directory (same identity and path), and its
    /// process runs (the same process: a recycled pid is not live).
    #[arg(long)]
    require_live: bool,
    /// A heartbeat older than DURATION is stale (default: 3 × its interval, or 10s; a bare
    /// number is seconds).
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::parse)]
    stale: Option<std::time::Duration>,
    /// Answer for one task of a task protocol (code-change): 0 when its latest attempt is judged
    /// good (a final verdict, or the cleanup grade's) and no STOP stands; 1 when it is judged
    /// bad (REJECT, ESCALATE*) or a STOP stands; 4 when it is not judged yet. Run it before
    /// accepting an attempt: plain `status` says go for a REJECT that raised no STOP.
    #[arg(long, value_name = "ID")]
    task: Option<String>,
    /// With `--task`: wait up to DURATION for the verdict to appear (`30s`; default 0). With
    /// `--sync`: wait up to DURATION for the referee to catch up (default 30s; then exit 3).
    #[arg(long, value_name = "DURATION", value_parser = crate::duration::parse)]
    wait: Option<std::time::Duration>,
    /// First wait until the live referee has judged every file written before this call (a
    /// barrier queued behind the pipeline's own file events: a token file `OBSERVER-SYNC-*` is
    /// put in the build directory and removed, and the referee acknowledges it in its state
    /// directory), then answer. Exit 3 when no live referee catches up within `--wait`. For a
    /// build directory; for a task use `--task ID --wait`.
    #[arg(long)]
    sync: bool,
    /// Exit 1 unless the live referee runs the protocol with this SHA-256 (`referee protocol
    /// hash ID|FILE` prints it; a prefix of 12+ hex digits will do): a referee restarted with
    /// other rules is refused.
    #[arg(long, value_name = "SHA256")]
    expect_protocol: Option<String>,
    /// Exit 1 unless the live referee runs with the waiver file whose bytes have this SHA-256
    /// (`sha256sum FILE`), or, with `none`, without waivers.
    #[arg(long, value_name = "SHA256|none")]
    expect_waivers: Option<String>,
    /// Print how the referee was started (pid, protocol and waiver hashes, `--fresh`) before
    /// the answer, for an orchestrator to pin.
    #[arg(long)]
    show_run: bool,
    /// With `--task`: the protocol whose verdict names count as good (default: code-change).
    #[arg(long, value_name = "ID|FILE", requires = "task")]
    protocol: Option<String>,
    /// The referee's own memory (event log, heartbeat, STOP, verdicts, kept attempts), kept
    /// out of the watched directory's reach (created 0700; a symlink, a directory of another
    /// user or one others can write is refused). Default:
    /// `$XDG_STATE_HOME/referee/<name>-<hash>` (else `~/.local/state/referee/…`), named from the
    /// directory's canonical path and identity.
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
}

pub(super) fn status(a: StatusArgs) -> Result<ExitCode> {
    if a.wait.is_some() && a.task.is_none() && !a.sync {
        bail!("`--wait` applies to `--task ID` or `--sync`");
    }
    let sync = a
        .sync
        .then(|| a.wait.unwrap_or(std::time::Duration::from_secs(30)));
    let task = match a.task {
        Some(id) => {
            let p = load_protocol(a.protocol.as_deref().unwrap_or("code-change"))?;
            let go = crate::status::go_verdicts(&p);
            Some(crate::status::TaskQuery {
                id,
                wait: a.wait.unwrap_or_default(),
                go,
            })
        }
        None => None,
    };
    let answer = crate::status::status(&crate::status::Config {
        build_dir: a.build_dir,
        held: None,
        state_dir: a.state_dir,
        require_live: a.require_live,
        stale: a.stale,
        task,
        expect_protocol: a.expect_protocol,
        expect_waivers: a.expect_waivers,
        show_run: a.show_run,
        sync,
    })?;
    match &answer.note {
        Some(crate::status::Note::Info(text)) => tracing::info!("{text}"),
        Some(crate::status::Note::Warning(text)) => tracing::warn!("{text}"),
        Some(crate::status::Note::Error(text)) => tracing::error!("{text}"),
        None => {}
    }
    if !answer.stdout.is_empty() {
        print(&answer.stdout)?;
    }
    Ok(answer.code)
}
