//! The `Stop` / `SubagentStop` answer: the workspace judged as one attempt, kept in the state
//! directory, and the stop blocked, let through, or let through with a message for the human.

use std::path::Path;

use anyhow::Result;

use super::reason::{blocked_reason, failing};
use super::{
    confine, implicit_record, judged, load_protocol, opened, request, state_for, task_id, Answer,
    Config, Counter, Opened, Payload,
};
use crate::judge;
use crate::protocol::{GradeOutcome, Protocol};
use crate::state::live::Here;
use crate::task_verdict::TaskVerdict;

pub(super) fn stop(cfg: &Config, p: &Payload, ws: &Opened) -> Result<Answer> {
    anyhow::ensure!(
        !p.session.is_empty(),
        "the hook's input has no `session_id` (the implicit task is named by it)"
    );
    let Judged {
        protocol,
        task,
        here,
        w,
    } = judge_attempt(cfg, p, opened(ws)?)?;
    if p.event == "SubagentStop" && unchanged_since_last_stop(&w, &task) {
        // A subagent that changed nothing (a read-only explorer) made no attempt: it counts
        // toward no guard, and the session's standing verdict is answered at the main
        // agent's own stop.
        return Ok(Answer::allow());
    }
    let live = crate::state::live::referee(&here, &w.state);
    keep(&protocol, &w, &task, live.is_some())?;
    if let Some(c) = Counter::for_payload(cfg, p) {
        c.write(0);
    }
    let escalated: Vec<&TaskVerdict> = w
        .decision
        .verdicts
        .iter()
        .filter(|v| v.outcome == GradeOutcome::Escalate)
        .collect();
    let stop_file = w.state.join(crate::outputs::STOP_FILE);
    if !escalated.is_empty() {
        let why: Vec<String> = escalated
            .iter()
            .map(|v| {
                format!(
                    "{} of task `{}`: {}",
                    v.verdict,
                    v.task_id,
                    v.escalation.as_deref().unwrap_or("human review required")
                )
            })
            .collect();
        let kept = if live.is_some() {
            "the running `referee watch` keeps the STOP".to_string()
        } else {
            format!("the STOP is kept in `{}`", stop_file.display())
        };
        return Ok(Answer::tell(&format!(
            "referee: {} — the stop is let through for a human to review the workspace; {kept}. Failing checks: {}",
            why.join("; "),
            failing(&escalated).join(" | ")
        )));
    }
    // A live `watch` owns the STOP: its word counts too.
    let watch_stop = live
        .as_ref()
        .and_then(|_| read_small(&stop_file))
        .filter(|s| !s.trim().is_empty());
    if w.decision.violation() || watch_stop.is_some() {
        let mut reason = blocked_reason(&protocol, &w, cfg.agent);
        if let Some(s) = watch_stop {
            reason.push_str("\n\nThe running `referee watch` holds a STOP:\n");
            reason.push_str(&s);
        }
        return Ok(Answer::block(&reason));
    }
    let minor: Vec<&TaskVerdict> = w
        .decision
        .verdicts
        .iter()
        .filter(|v| v.outcome != GradeOutcome::Pass)
        .collect();
    if minor.is_empty() {
        return Ok(Answer::allow());
    }
    Ok(Answer::tell(&format!(
        "referee: {} — {}",
        minor
            .iter()
            .map(|v| format!("{} (task `{}`)", v.verdict, v.task_id))
            .collect::<Vec<_>>()
            .join(", "),
        failing(&minor).join(" | ")
    )))
}

/// The session's implicit attempt as a stop or a tool call judges it, with what it was judged
/// by and as.
pub(super) struct Judged {
    pub(super) protocol: Protocol,
    /// The implicit task of the session.
    pub(super) task: String,
    /// The workspace as opened for the event: the judgment's state directory is named from it.
    pub(super) here: Here,
    pub(super) w: judge::WorkspaceJudgment,
}

/// Judges the session's implicit attempt on the workspace `root` opened for the event (the
/// judgment of a stop, and of a tool call in memory): its state directory named from the
/// descriptor `root` holds, its protocol loaded with the project's rules, and nothing of the
/// judgment kept when `root` was replaced meanwhile ([`judged`]).
pub(super) fn judge_attempt(cfg: &Config, p: &Payload, root: &confine::Root) -> Result<Judged> {
    let state = state_for(cfg, root)?;
    let protocol = load_protocol(cfg, root)?;
    let task = task_id(cfg.agent, &p.session);
    let here = Here::of_fd(root.fd(), root.path())?;
    let w = judged(root, &state, || {
        let req = judge::Request {
            opened: Some(&here),
            ..request(cfg, root, &state)
        };
        let implicit =
            |ws: &crate::workspace::Workspace| implicit_record(ws, &protocol, cfg.agent, &task);
        Ok(judge::attempt(&req, &protocol, &implicit)?)
    })?;
    Ok(Judged {
        protocol,
        task,
        here,
        w,
    })
}

/// Whether the implicit attempt of `task` judged now has exactly the diff of the last attempt
/// kept for it (nothing changed since the session's last judged stop).
fn unchanged_since_last_stop(w: &judge::WorkspaceJudgment, task: &str) -> bool {
    let Some(now) = w
        .decision
        .verdicts
        .iter()
        .find(|v| v.task_id == task)
        .and_then(|v| v.diff.as_deref())
    else {
        return false;
    };
    let store = crate::state::attempts::Store::open(&crate::state::attempts::dir_for(&w.state));
    store
        .attempts(task)
        .into_iter()
        .max_by_key(|(k, _)| k.attempt)
        .and_then(|(_, diff)| diff)
        .is_some_and(|last| last == now)
}

/// Keeps what a stop judged in the state directory: the verdicts and attempts of the implicit
/// task (the guards' memory), those of the agent's own records and the STOP unless a live
/// `watch` owns them. Never the workspace's `.referee/`.
fn keep(protocol: &Protocol, w: &judge::WorkspaceJudgment, task: &str, live: bool) -> Result<()> {
    let writes = judge::Writes {
        copies: false,
        stop: !live,
        only_task: live.then_some(task),
    };
    Ok(judge::write_workspace(protocol, w, writes)?)
}

fn read_small(path: &Path) -> Option<String> {
    use std::io::Read as _;
    let f = std::fs::File::open(path).ok()?;
    let mut s = String::new();
    f.take(64 << 10).read_to_string(&mut s).ok()?;
    Some(s)
}
