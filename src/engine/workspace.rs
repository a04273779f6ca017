//! Judging a workspace of task records: the passes without `for_each` as a build's, and each
//! `for_each = "task"` pass once per judged record, keyed by its task id, until no rejected
//! record's claims excuse another record's changes.

use std::collections::BTreeMap;

use chrono::Utc;

use super::{
    grade, judge_instance, pass_state, CheckResult, Evaluation, Options, PassState, RunReason,
};
use crate::checks::TaskScope;
use crate::protocol::Protocol;

/// One task record seen in a workspace evaluation.
#[derive(Debug, Clone)]
pub struct TaskRun {
    /// The pass instance key: the `task_id`, or the file stem of a malformed record.
    pub key: String,
    pub record: crate::workspace::record::Record,
    /// Whether it was judged (status to judge, or malformed).
    pub judged: bool,
    /// The unified diff of the changes in the task's scope (`None` without a baseline).
    pub diff: Option<String>,
    /// The changed paths in the task's scope.
    pub scope: Vec<String>,
    /// [`crate::state::attempts::record_hash`] of a well-formed record.
    pub record_hash: Option<String>,
    /// Why the record is a replay of an attempt already judged (CC-00 FAILs).
    pub replay: Option<String>,
}

/// One judged record's pass instances, as the decoy fixpoint of [`evaluate_workspace`] keeps
/// them between rounds.
struct Judgment {
    scope: Option<BTreeMap<String, crate::workspace::Change>>,
    passes: Vec<PassState>,
    results: Vec<CheckResult>,
    diff: Option<String>,
    replay: Option<String>,
}

/// Why a record replays an attempt already judged for its task (attempts are counted
/// by the referee): its `attempt` is not above the last one kept. The very attempt kept, its
/// record unchanged, is not a replay — the daemon judges a pending record again on every event,
/// and that must keep its verdict. An attempt kept before record hashes were is taken as the
/// same record (there is nothing to tell them apart by).
///
/// Counted here, in the task's scope, rather than by re-grading in the verdict stage: CC-00 is
/// the check that says a record is not a valid attempt, so its FAIL shows in every output
/// (`verify`'s results, the report, the STOP's reasons) the same way, and grades REJECT
/// through the protocol's own mapping.
fn replay(
    store: &crate::state::attempts::Store,
    record: &crate::workspace::record::Record,
) -> Option<String> {
    let t = record.parsed.as_ref().ok()?;
    let last = store.last(&t.task_id)?;
    if t.attempt > last.attempt {
        return None;
    }
    let hash = crate::state::attempts::record_hash(&t.raw);
    if t.attempt == last.attempt && last.record_hash.as_deref().is_none_or(|h| h == hash) {
        return None;
    }
    Some(format!(
        "attempt {} is not above attempt {}, already judged for task {}",
        t.attempt, last.attempt, t.task_id
    ))
}

/// Whether what `record` lists happened as it says: it is well-formed, no replay, and each
/// path it lists changed against the baseline the way it lists it (added, modified, removed).
/// Such a record owns the changes it lists even when its work is REJECTed; without a baseline
/// nothing can be told, and its claims stand.
fn claims_hold(
    ws: &crate::workspace::Workspace,
    record: &crate::workspace::record::Record,
    store: Option<&crate::state::attempts::Store>,
) -> bool {
    let Ok(t) = &record.parsed else {
        return false;
    };
    if store.is_some_and(|s| replay(s, record).is_some()) {
        return false;
    }
    let Some(changes) = ws.changes() else {
        return true;
    };
    t.listed()
        .all(|(p, how)| changes.get(p).is_some_and(|c| c.as_str() == how))
}

/// Each (task, attempt) `referee accept --task` accepted in the workspace's state directory.
fn accepted_attempts(
    ws: &crate::workspace::Workspace,
) -> std::collections::BTreeSet<(String, u64)> {
    ws.state()
        .and_then(|s| crate::workspace::accepted::load(s).ok().flatten())
        .map(|a| {
            a.log
                .into_iter()
                .filter_map(|e| Some((e.task?, e.attempt?)))
                .collect()
        })
        .unwrap_or_default()
}

/// The limits of the protocol's blocking size-limit check that always runs (no `when`, not
/// switched off), when it has one: what the content checks need not read past.
fn content_limit(protocol: &Protocol) -> Option<crate::workspace::ContentLimit> {
    use crate::protocol::predicate::Predicate;
    protocol
        .passes
        .iter()
        .flat_map(|p| &p.checks)
        .filter(|c| {
            c.when.is_none()
                && c.def.off.is_none()
                && c.def.severity == crate::protocol::Severity::Blocking
        })
        .find_map(|c| match &c.predicate {
            Predicate::SizeLimit(l) => Some(crate::workspace::ContentLimit {
                by_extension: l
                    .by_extension
                    .iter()
                    .map(|e| (e.ext.clone(), e.max.bytes()))
                    .collect(),
                default: l.default.bytes(),
            }),
            _ => None,
        })
}

/// Judges a workspace: the passes without `for_each` as [`evaluate`] does, and each pass with
/// `for_each = "task"` once per judged task record, its results keyed by the record's task id.
pub fn evaluate_workspace(
    protocol: &Protocol,
    rules: &crate::protocol::TaskRules,
    ws: &crate::workspace::Workspace,
    opts: &Options,
) -> (Evaluation, Vec<TaskRun>) {
    let _span =
        tracing::debug_span!("evaluate", protocol = %protocol.id, workspace = true).entered();
    let records = ws.records(&rules.records.required);
    // A file over a blocking size limit FAILs that check: the content checks need not read it.
    ws.limit_content(content_limit(protocol));
    // An attempt the orchestrator accepted is done: its verdict stands, and its record (until
    // the orchestrator settles it) is not judged again against the baseline it moved.
    let accepted = accepted_attempts(ws);
    let judged: Vec<&crate::workspace::record::Record> = records
        .iter()
        .filter(|r| r.is_judged(&rules.records.judge_status))
        .filter(|r| {
            r.parsed.as_ref().map_or(true, |t| {
                !accepted.contains(&(t.task_id.clone(), t.attempt))
            })
        })
        .collect();
    // A workspace has no pipeline verdict: it is never complete.
    let complete = false;
    let now = opts.now.unwrap_or_else(Utc::now);
    let mut passes = Vec::new();
    let mut results = Vec::new();
    let mut runs = Vec::new();
    for pass in protocol.passes.iter().filter(|p| p.for_each.is_none()) {
        let state = pass_state(ws, pass, opts, complete, now);
        for inst in &pass.checks {
            results.push(judge_instance(ws, pass, &state, inst, opts, complete));
        }
        passes.push(state);
    }
    // Each judged record's checks, until no REJECTed record whose claims are false is left
    // excusing another record's changes: judge all; drop the claims of the REJECTed ones that
    // list what did not happen (a decoy); judge again the records whose scope that changed.
    // A record REJECTed for its own work (a file that does not parse) still owns the changes it
    // lists truthfully, so two honest tasks pending at once never fail for each other's
    // files. Each round drops at least one more record's claims or ends, so there are at most
    // as many rounds as records.
    let store = crate::state::attempts::dir_for_workspace(ws)
        .map(|d| crate::state::attempts::Store::open(&d));
    let mut judgments: BTreeMap<String, Judgment> = BTreeMap::new();
    // A record of a task the orchestrator never opened (once it opened any) claims nothing.
    let known = crate::state::registry::Known::of(ws.state());
    let unknown = |record: &crate::workspace::record::Record| {
        known.unknown(&record.parsed.as_ref().ok()?.task_id)
    };
    let mut dropped: Vec<&str> = judged
        .iter()
        .filter(|r| unknown(r).is_some())
        .map(|r| r.rel.as_str())
        .collect();
    for _ in 0..=judged.len() {
        let claimants: Vec<&crate::workspace::record::Record> = judged
            .iter()
            .copied()
            .filter(|r| !dropped.contains(&r.rel.as_str()))
            .collect();
        for record in &judged {
            let mut scope = TaskScope::new(ws, record, &claimants);
            if judgments
                .get(&record.rel)
                .is_some_and(|j| j.scope == scope.scope)
            {
                continue;
            }
            scope.replay = store.as_ref().and_then(|s| replay(s, record));
            scope.unknown = unknown(record);
            let key = record.key().to_string();
            let mut j = Judgment {
                scope: scope.scope.clone(),
                passes: Vec::new(),
                results: Vec::new(),
                diff: scope.attempt_diff(),
                // Either way it is not an attempt: no guard counts it, nothing of it is kept.
                replay: scope.unknown.clone().or_else(|| scope.replay.clone()),
            };
            for pass in protocol.passes.iter().filter(|p| p.for_each.is_some()) {
                let state = PassState {
                    id: key.clone(),
                    ran: true,
                    reason: Some(RunReason::Trigger),
                    at: Some(now),
                };
                for inst in &pass.checks {
                    let mut r = judge_instance(&scope, pass, &state, inst, opts, complete);
                    r.pass = key.clone();
                    j.results.push(r);
                }
                j.passes.push(state);
            }
            judgments.insert(record.rel.clone(), j);
        }
        let rejected: Vec<&str> = judged
            .iter()
            .filter(|r| !dropped.contains(&r.rel.as_str()))
            .filter(|r| {
                judgments
                    .get(&r.rel)
                    .is_some_and(|j| grade::rejects(protocol, rules, &j.results))
                    && !claims_hold(ws, r, store.as_ref())
            })
            .map(|r| r.rel.as_str())
            .collect();
        if rejected.is_empty() {
            break;
        }
        dropped.extend(rejected);
    }
    for record in &records {
        let key = record.key().to_string();
        let record_hash = record
            .parsed
            .as_ref()
            .ok()
            .map(|t| crate::state::attempts::record_hash(&t.raw));
        let Some(j) = judgments.remove(&record.rel) else {
            runs.push(TaskRun {
                key,
                record: record.clone(),
                judged: false,
                diff: None,
                scope: Vec::new(),
                record_hash,
                replay: None,
            });
            continue;
        };
        results.extend(j.results);
        passes.extend(j.passes);
        runs.push(TaskRun {
            key,
            record: record.clone(),
            judged: true,
            diff: j.diff,
            scope: j
                .scope
                .as_ref()
                .map(|s| s.keys().cloned().collect())
                .unwrap_or_default(),
            record_hash,
            replay: j.replay,
        });
    }
    let eval = Evaluation {
        complete,
        verdict: None,
        verdict_at: None,
        verdict_note: None,
        final_: opts.final_,
        passes,
        results,
    };
    (eval, runs)
}
