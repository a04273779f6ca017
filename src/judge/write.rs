//! What a one-shot judgment leaves behind, for the entry points that write (`verify --write`,
//! the agents' hooks): the one writer of their verdicts and kept attempts. The texts are
//! `outputs`' renderings of the [`Decision`](crate::decision::Decision); `watch` writes the
//! same texts through the files its session keeps (tamper-restored, adopted at start). The
//! STOP goes through its one writer, [`StopFile`], which `watch` uses too.

use std::path::Path;

use super::{BuildJudgment, JudgeError, Judgment, WorkspaceJudgment};
use crate::outputs::{self, code_change, Durability};
use crate::protocol::Protocol;
use crate::state::attempts::Store;
use crate::state::stop::{StopFile, STOP_FILE};
use crate::workspace::OUTPUT_DIR;

/// What an entry point writes of a judgment.
#[derive(Debug, Clone, Copy)]
pub struct Writes<'a> {
    /// The copies for the people and tools that read them in the watched directory (`verify
    /// --write`): a build's pass files and report; a workspace's `.referee/` folder (its
    /// verdicts, STOP and report).
    pub copies: bool,
    /// A workspace's STOP in the state directory (and its copy with `copies`); a hook leaves it
    /// to a live `watch`, which owns it.
    pub stop: bool,
    /// Only this task's verdict (a hook beside a live `watch`, which writes the others'); `None`:
    /// every verdict.
    pub only_task: Option<&'a str>,
}

/// Writes what `w` asks of `j`, judged by `protocol`. A verdict is written into the state
/// directory, then its copy, then its attempt kept (the loop guards' memory, fsynced before it
/// takes its name): a copy that cannot be written costs no memory. Then the STOP, as decided:
/// written while one stands, removed otherwise.
pub fn write(protocol: &Protocol, j: &Judgment, w: Writes<'_>) -> Result<(), JudgeError> {
    match j {
        Judgment::Build(b) if w.copies => build(protocol, b),
        Judgment::Build(_) => Ok(()),
        Judgment::Workspace(ws) => write_workspace(protocol, ws, w),
    }
}

/// [`write`] for a workspace judged.
pub fn write_workspace(
    protocol: &Protocol,
    j: &WorkspaceJudgment,
    w: Writes<'_>,
) -> Result<(), JudgeError> {
    workspace(protocol, j, w).map_err(|source| JudgeError::WriteInto {
        path: if w.copies {
            j.ws.root().join(OUTPUT_DIR)
        } else {
            j.state.clone()
        },
        source,
    })
}

fn workspace(protocol: &Protocol, j: &WorkspaceJudgment, w: Writes<'_>) -> std::io::Result<()> {
    let copy = w
        .copies
        .then(|| code_change::ensure_dir(j.ws.root()))
        .transpose()?;
    let store = Store::open(&crate::state::attempts::dir_for(&j.state));
    let durability = Durability::Contents;
    let d = &j.decision;
    for v in d
        .verdicts
        .iter()
        .filter(|v| w.only_task.is_none_or(|t| t == v.task_id))
    {
        code_change::write_verdict(&j.state, protocol, v, durability)?;
        let copied = copy.as_ref().map_or(Ok(()), |dir| {
            code_change::write_verdict(dir, protocol, v, durability)
        });
        // An attempt is kept as it was first judged, as `watch` keeps it: judged again (its
        // scope changed since), it is the same attempt, and the guards compare the next one
        // with what the worker handed in, not with whatever had landed when this ran.
        if let Some((kept, diff)) = v
            .kept()
            .filter(|(k, _)| !store.is_kept(&k.task_id, k.attempt))
        {
            store.keep(&kept, diff)?;
        }
        if let Some((task, hash)) = v.rejected_replay() {
            store.keep_replay(task, hash)?;
        }
        copied?;
    }
    if w.stop {
        // Through the STOP's one writer, as `watch` writes it: the state directory's first,
        // then the copy; whatever someone else put at the copy's name is never followed.
        let want = d.stops().then(|| code_change::stop_md(protocol, &j.ws, d));
        let mut stop = StopFile::one_shot(&j.state, copy.as_ref());
        if let Some(t) = stop.put(want)? {
            tracing::warn!(
                "`{STOP_FILE}` in `{}` was {} put there by someone else; {}",
                copy.as_ref().map_or_else(
                    || j.state.display().to_string(),
                    |c| c.display().to_string()
                ),
                t.found.map_or("something", |f| f.describe()),
                match &t.moved_to {
                    Some(to) => format!("moved aside to `{}`, not deleted", to.display()),
                    None => "replaced without being followed".to_string(),
                }
            );
        }
    }
    if let Some(dir) = &copy {
        let report = code_change::report_md(protocol, &j.ws, &j.eval, &j.runs, d, &j.ctx);
        outputs::write_atomic(dir, outputs::REPORT_FILE, report)?;
    }
    Ok(())
}

/// `verify --write` of a build directory: a pass file for each pass that ran, and the report.
/// It never writes the STOP file: only the live `watch` daemon owns it.
fn build(protocol: &Protocol, b: &BuildJudgment) -> Result<(), JudgeError> {
    let dir = b.snap.root();
    for pass in b.eval.passes.iter().filter(|p| p.ran) {
        let text = outputs::markdown::pass_file(protocol, &b.eval, &pass.id, &b.ctx);
        write_own(dir, &outputs::pass_file(&pass.id), &text)?;
    }
    let report = outputs::markdown::report(protocol, &b.eval, &b.ctx);
    write_own(dir, outputs::REPORT_FILE, &report)
}

/// One of `verify --write`'s files; a symlink or FIFO found at its name is replaced, never
/// followed, and said.
fn write_own(dir: &Path, name: &str, text: &str) -> Result<(), JudgeError> {
    let w = outputs::write_atomic(dir, name, text).map_err(|source| JudgeError::WriteOwn {
        name: name.to_string(),
        path: dir.join(name),
        source,
    })?;
    if let Some(found) = w.replaced {
        tracing::warn!(
            "`{name}` was {} put there by someone else; replaced without being followed",
            found.describe()
        );
    }
    Ok(())
}
