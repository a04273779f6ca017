//! A build directory judged once: listed while the protocol loads (the walk reads and writes
//! nothing, so a load that fails has done no harm), the reports the protocol reads read ahead,
//! every check evaluated in order of what the referee that watched it saw, the waivers applied,
//! and decided.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::{
    apply_waivers, context, opened, refuse_live, BuildJudgment, JudgeError, Judgment, Loaded,
    Request,
};
use crate::artifacts::{Limits, Listing, Snapshot};
use crate::engine::{self, Options};
use crate::protocol::Protocol;

/// Judges the build directory `req.dir` by a protocol of build directories, `listing` its walk
/// (started before the protocol was loaded, when it could be).
pub(super) fn judge(
    req: &Request<'_>,
    (protocol, waivers): Loaded,
    listing: Listing,
) -> Result<(Loaded, Judgment), JudgeError> {
    if req.baseline.is_some() || req.baseline_dir.is_some() {
        return Err(JudgeError::BaselineForBuild {
            id: protocol.id.clone(),
            dir: req.dir.to_path_buf(),
        });
    }
    // The state directory named once, from the directory opened once.
    let state = if req.write {
        let here = opened(req)?;
        let state = crate::state::locate(&here, req.state_dir)?;
        refuse_live(req.dir, &here, &state)?;
        Some(state)
    } else {
        None
    };
    let snap = scan(req.dir, req.max_read_bytes, &protocol, listing)?;
    let now = chrono::Utc::now();
    let options = Options {
        final_: req.final_,
        now: Some(now),
        seen: seen_record(req, state)?,
        ..Options::default()
    };
    let mut eval = engine::evaluate(&protocol, &snap, &options);
    let waived = apply_waivers(waivers.as_ref(), &mut eval, now);
    if eval.passes.iter().all(|p| !p.ran) && snap.get(&protocol.tracker).is_none() {
        tracing::warn!(
            "no pass has run and there is no {} in `{}`: is this the build directory?",
            protocol.tracker,
            req.dir.display()
        );
    }
    let ctx = context(snap.root(), now, waived);
    let decision = crate::decision::build(&eval);
    let judged = BuildJudgment {
        snap,
        eval,
        decision,
        ctx,
    };
    Ok(((protocol, waivers), Judgment::Build(Box::new(judged))))
}

/// Finishes `listing`, reading ahead the reports `protocol` will read (see
/// [`Snapshot::scan_reading_from`]).
fn scan(
    dir: &Path,
    max_read_bytes: u64,
    protocol: &Protocol,
    listing: Listing,
) -> Result<Snapshot, JudgeError> {
    let limits = Limits {
        max_read_bytes,
        ..Limits::default()
    };
    let _span = tracing::debug_span!("scan", dir = %dir.display()).entered();
    let wanted = |rel: &str| protocol.may_read(rel);
    // The error already names the directory.
    Snapshot::scan_reading_from(listing, limits, &wanted).map_err(JudgeError::Scan)
}

/// What the referee that watched `req.dir` saw, in order ([`crate::state::observed`]), when its
/// state directory holds a record: `verify` orders what it saw like `watch` does. No state
/// directory (or no record in it): the claims alone. Read only; a state directory the referee
/// could not trust is refused.
fn seen_record(
    req: &Request<'_>,
    state: Option<PathBuf>,
) -> Result<Option<Arc<crate::state::observed::Observed>>, JudgeError> {
    let found = match state {
        Some(state) => Ok(state),
        None => opened(req).and_then(|here| Ok(crate::state::locate(&here, req.state_dir)?)),
    };
    let explicit = req.state_dir;
    let state = match found {
        Ok(s) => s,
        // No home to find a default in: no memory to read.
        Err(_) if explicit.is_none() => return Ok(None),
        Err(e) => return Err(e),
    };
    if !crate::state::exists(&state) {
        return Ok(None);
    }
    // Read only: the referee's state need not be this process's, only out of others' reach.
    crate::state::check_readable(&state)?;
    Ok(crate::state::observed::Observed::load(&state)?.map(Arc::new))
}
