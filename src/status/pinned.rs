//! The two questions `status` asks of a live referee before it answers (issue 16 §7): does it
//! run the rules the orchestrator pinned (`--expect-protocol`, `--expect-waivers`, from
//! [`crate::state::run`]), and has it caught up with everything written before this call
//! (`--sync`, [`crate::state::sync`])? Both read only the state directory, apart from the one token
//! file `--sync` puts in the watched directory and removes.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::exit::ExitCode;
use crate::state::run::Started;

use super::{live, no_live, Answer, Asked, Config, Here, Liveness, Note, StatusError};

/// The run's record when it is the live referee's (same pid and trace id as its heartbeat).
fn record(state: &Path) -> Option<Started> {
    let run = Started::read(state)?;
    let hb = crate::state::heartbeat::read(state).ok()?;
    (hb.pid == run.pid && hb.trace_id == run.trace_id).then_some(run)
}

/// `--expect-protocol` / `--expect-waivers`: an answer of 1 when the referee does not run what
/// was pinned (or cannot say what it runs); `None` when it does. `--show-run`: what it runs,
/// put before the answer.
pub(super) fn expectations(cfg: &Config, state: &Path) -> Option<Answer> {
    let pinned = cfg.expect_protocol.is_some() || cfg.expect_waivers.is_some();
    if !pinned {
        return None;
    }
    let why = match record(state) {
        None => format!(
            "the referee cannot be told to run the rules pinned: no record of how it was started in `{}` matches its heartbeat",
            state.join(crate::state::run::RUN_FILE).display()
        ),
        Some(run) => crate::state::run::mismatch(
            &run,
            cfg.expect_protocol.as_deref(),
            cfg.expect_waivers.as_deref(),
        )
        .map(|why| format!("the referee (pid {}) does not run the rules pinned: {why}", run.pid))?,
    };
    Some(Answer {
        code: ExitCode::Violation,
        stdout: format!("# OBSERVER STOP (rules)\n\n{why}\n"),
        note: Some(Note::Error(why)),
    })
}

/// `--show-run`: the live run's record, for an orchestrator to pin.
pub(super) fn show_run(state: &Path) -> String {
    match record(state) {
        Some(run) => run.describe(),
        None => "run: unknown (no record of how the live referee was started)\n".into(),
    }
}

/// `--sync`: puts a token in the watched directory and waits (up to `wait`) until the live
/// referee acknowledges it in its state directory. `Some(answer)`: no live referee, or it did
/// not catch up in time (exit 3); `None`: caught up, answer as usual.
///
/// A referee whose directory was swapped for a copy at the same path (`cp -a`, then a rename)
/// is waited for, not refused: it looks at its path at every heartbeat, re-attaches to what is
/// there, moves its memory to the copy's name, and acknowledges the tokens it finds there once
/// it has judged the copy. So the state directory is looked up again at every look.
pub(super) fn sync(
    cfg: &Config,
    asked: &Asked,
    here: &Here,
    state: &Path,
    wait: Duration,
) -> Result<Option<Answer>, StatusError> {
    let dir = &asked.shown;
    let not_live = |state: &Path| match live(state, here, cfg.stale) {
        Liveness::NotLive(why) if !crate::state::live::reattaching(state, here, cfg.stale) => {
            Some(why)
        }
        _ => None,
    };
    let refused = |why: String| {
        no_live(format!(
            "--sync: no live referee watches `{}`: {why}",
            dir.display()
        ))
    };
    if let Some(why) = not_live(state) {
        return Ok(Some(refused(why)));
    }
    if Started::read(state).is_some_and(|r| r.tasks) {
        return Err(StatusError::Sync(
            "`--sync` waits on a build directory's file events; for a task use `--task ID --wait DURATION`".into(),
        ));
    }
    let token = crate::state::sync::new_token();
    let name = format!("{}{token}", crate::state::sync::TOKEN_PREFIX);
    let path = asked.at.join(&name);
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|source| StatusError::Token {
            path: asked.shown.join(&name).display().to_string(),
            source,
        })?;
    let deadline = Instant::now() + wait;
    let mut next_look = Instant::now();
    let mut state = state.to_path_buf();
    let answer = loop {
        if crate::state::sync::acknowledged(&state, &token) {
            break None;
        }
        let now = Instant::now();
        if now >= deadline {
            break Some(no_live(format!(
                "--sync: the referee did not catch up with `{}` within {} (a referee that is not watching, or a token removed before it was seen)",
                dir.display(),
                crate::duration::human(wait)
            )));
        }
        if now >= next_look {
            next_look = now + Duration::from_millis(250);
            // Where the memory is now (a re-attached referee renamed it), then whether it is
            // live; a rename between the two is caught by looking once more.
            let refind = || super::find_readable_state(cfg, asked, here).ok().flatten();
            if let Some(found) = refind() {
                state = found;
            }
            if let Some(why) = not_live(&state) {
                match refind().filter(|again| *again != state) {
                    Some(again) => state = again,
                    None => break Some(refused(why)),
                }
            }
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let _ = std::fs::remove_file(&path);
    Ok(answer)
}
