//! `referee accept`: the orchestrator moves a workspace's baseline to a task's judged work
//! (`--task`) or to a commit of its own (`--commit`); a human vouches for the paths no commit
//! holds as they are now (`--start`).

use std::path::PathBuf;

use anyhow::Result;
use clap::Args;

use super::{load_protocol_for, print, RulesArgs};
use crate::exit::ExitCode;

#[derive(Args, Debug)]
pub(super) struct AcceptArgs {
    /// The workspace (run this outside it: it needs the referee's state directory, not the
    /// workspace).
    workspace: PathBuf,
    /// The task whose latest judged attempt is accepted: the files its verdict judged, with
    /// the bytes judged, are the baseline of those paths from now on. Refused (exit 1, and
    /// why) when its verdict is not a good one (APPROVE, MINOR_ISSUES), when one of those files
    /// changed after the verdict (stale: judge it again), or when one is protected.
    #[arg(
        long,
        value_name = "ID",
        required_unless_present_any = ["commit", "start"],
        conflicts_with_all = ["commit", "start"]
    )]
    task: Option<String>,
    /// The orchestrator's own work (a merge from upstream, an asset it committed): re-pin the
    /// baseline at this commit. It must descend from the commit pinned now; refused (exit 1)
    /// when it changes a protected path, unless `--protected-too` is given. Paths accepted
    /// with `--task` that the commit leaves alone stay accepted. Each path the commit changes
    /// is listed, and those whose content no `--task` accept accounts for are named "not judged
    /// as any task's work" (in the event log too): a change a worker staged rides a plain
    /// `git commit`.
    #[arg(long, value_name = "REV", conflicts_with = "start")]
    commit: Option<String>,
    /// A human's word that the paths no commit holds are the start as they are now: git's
    /// hooks and config, ignored protected paths, ignored modules a protected file imports.
    /// For a referee whose first look came after the work (its STOP says "nothing says it was
    /// there before the work"), or a hook of your own added since it started. Look at them
    /// first: each is listed, and logged with the accepts. What the veto still names (a
    /// protected file the baseline holds, code in a protected module's place) is listed too
    /// and not accepted.
    #[arg(long)]
    start: bool,
    /// With `--commit`: accept it even though it changes protected paths (the orchestrator
    /// means it; the event log names them).
    #[arg(long, requires = "commit")]
    protected_too: bool,
    /// The protocol whose good verdicts and protected paths count (default: code-change);
    /// give the same rules as the referee runs with.
    #[arg(long, value_name = "ID|FILE", default_value = "code-change")]
    protocol: String,
    #[command(flatten)]
    rules: RulesArgs,
    /// The referee's state directory (default: the one `watch` uses for the workspace).
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    #[command(flatten)]
    read: super::ReadArgs,
}

pub(super) fn accept(a: AcceptArgs) -> Result<ExitCode> {
    let overrides = a.rules.overrides()?;
    let protocol = load_protocol_for(&a.protocol, None, &overrides, &a.workspace)?;
    let go = crate::status::go_verdicts(&protocol);
    if go.is_empty() {
        anyhow::bail!(
            "protocol `{}` judges no task records: `accept` is for a workspace (code-change)",
            protocol.id
        );
    }
    let protected: Vec<_> = crate::task_verdict::veto_globs(&protocol)
        .into_iter()
        .flat_map(|(_, g)| g)
        .collect();
    let state = crate::judge::state_of(&a.workspace, a.state_dir.as_deref())?;
    let root = std::fs::canonicalize(&a.workspace)?;
    let done = match (&a.task, &a.commit) {
        _ if a.start => {
            crate::accept::accept_start(&root, &state, &protocol, a.read.max_read_bytes)
                .map(|done| start_accepted(&done))
        }
        (Some(task), _) => crate::accept::accept_task(&root, &state, task, &go, &protected)
            .map(|done| task_accepted(&done)),
        (None, Some(rev)) => {
            crate::accept::accept_commit(&root, &state, rev, &protected, a.protected_too)
                .map(|done| commit_accepted(&done))
        }
        (None, None) => anyhow::bail!("give `--task ID`, `--commit REV` or `--start`"),
    };
    match done {
        Ok(text) => {
            print(&text)?;
            Ok(ExitCode::Ok)
        }
        Err(crate::accept::AcceptError::Refused(why)) => {
            eprintln!("referee: accept refused: {why}");
            Ok(ExitCode::Violation)
        }
        Err(e) => Err(e.into()),
    }
}

fn task_accepted(done: &crate::accept::Done) -> String {
    let mut text = format!(
        "accepted task {}{} (accept {}): the baseline of {} path(s) is what was judged\n",
        done.task,
        done.attempt
            .map(|n| format!(" attempt {n}"))
            .unwrap_or_default(),
        done.generation,
        done.paths.len()
    );
    for (p, h) in &done.paths {
        let what = h.as_deref().map_or("removed".to_string(), |h| {
            format!("sha256 {}", h.get(..12).unwrap_or(h))
        });
        text.push_str(&format!(
            "  {} ({what})\n",
            crate::workspace::name::display(p)
        ));
    }
    text
}

fn start_accepted(done: &crate::accept::DoneStart) -> String {
    let mut text = format!(
        "accepted the start (accept {}): {} path(s) no commit holds are pinned as they are now\n",
        done.generation,
        done.paths.len()
    );
    if let Some(why) = &done.was_after_work {
        text.push_str(&format!(
            "  (the start pinned before dated nothing: {why})\n"
        ));
    }
    let samples = done.paths.iter().filter(|p| p.ends_with(".sample")).count();
    for p in done.paths.iter().filter(|p| !p.ends_with(".sample")) {
        text.push_str(&format!("  {}\n", crate::workspace::name::display(p)));
    }
    if samples > 0 {
        text.push_str(&format!(
            "  (and {samples} of git's own `*.sample` hooks)\n"
        ));
    }
    if !done.still_vetoed.is_empty() {
        text.push_str(&format!(
            "{} protected path(s) are still vetoed (a start does not cover them):\n",
            done.still_vetoed.len()
        ));
        for (p, what) in &done.still_vetoed {
            text.push_str(&format!(
                "  {} ({what})\n",
                crate::workspace::name::display(p)
            ));
        }
    }
    text
}

fn commit_accepted(done: &crate::accept::DoneCommit) -> String {
    let short = |c: &str| c.chars().take(12).collect::<String>();
    let mut text = format!(
        "accepted commit {} (accept {}): the baseline is re-pinned there (it was {}); {} path(s) \
         changed between the two\n",
        short(&done.commit),
        done.generation,
        short(&done.from),
        done.paths.len()
    );
    for p in &done.paths {
        let protected = if done.protected.contains(p) {
            " (protected, --protected-too)"
        } else {
            ""
        };
        let judged = if done.unjudged.contains(p) {
            " (not judged as any task's work)"
        } else {
            " (as accepted)"
        };
        text.push_str(&format!(
            "  {}{protected}{judged}\n",
            crate::workspace::name::display(p)
        ));
    }
    if !done.unjudged.is_empty() {
        text.push_str(&format!(
            "{} path(s) were not judged as any task's work: check that the commit was meant to \
             carry them (a change a worker staged in the index rides a plain `git commit`)\n",
            done.unjudged.len()
        ));
    }
    text
}
