//! The `verdict` predicate: what the weaver said, as a condition (pass R runs once a verdict of
//! the run is REFINE) and as a check (the final verdict can be read). The verdict lines
//! themselves are read by the context ([`Ctx::new`]); this module only judges what they say.

use super::{Ctx, Outcome, PipelineVerdict, Verdict};
use crate::protocol::predicate::{Glob, VerdictIs};

/// What one verdict glob (one round of the run: the main weaver, the REFINE weaver) says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RoundVerdict {
    /// The glob, as resolved.
    pub glob: String,
    /// Something is at one of its names (a file, or something that is not one).
    pub present: bool,
    /// The verdict its newest file with a readable verdict line gives.
    pub verdict: Option<PipelineVerdict>,
    /// Its files with no readable verdict line (newest first), or what keeps one from being
    /// read (`p3c-weaver.md (directory)`).
    pub unread: Vec<String>,
}

impl RoundVerdict {
    fn describe(&self) -> String {
        match &self.verdict {
            Some(v) => format!("verdict {} ({}:{})", v.verdict, v.file, v.line),
            None if !self.present => format!("no file matches `{}`", self.glob),
            None => format!(
                "no readable verdict in `{}`: {}",
                self.glob,
                self.unread
                    .iter()
                    .map(|u| format!("{u} has no readable VERDICT line"))
                    .collect::<Vec<_>>()
                    .join("; ")
            ),
        }
    }
}

/// A verdict as compared: upper case, single spaces (`ship  with fixes` is `SHIP WITH FIXES`).
fn canonical(v: &str) -> String {
    v.split_whitespace()
        .collect::<Vec<_>>()
        .join(" ")
        .to_uppercase()
}

pub(super) fn verdict(ctx: &Ctx<'_>, v: &VerdictIs) -> Outcome {
    let (globs, rounds): (Vec<&Glob>, Vec<RoundVerdict>) = match (&v.files, ctx.verdict_spec) {
        (Some(glob), Some(spec)) => (vec![glob], vec![super::round_verdict(ctx, spec, glob)]),
        (None, Some(spec)) => (spec.files.iter().collect(), ctx.verdict_rounds.clone()),
        (_, None) => {
            return Outcome::new(
                Verdict::Inconclusive,
                "a verdict",
                "the protocol has no `[verdict]` table saying how a verdict is read",
            )
        }
    };
    let place = match &v.files {
        Some(g) => format!("`{}`", g.as_str()),
        None => "the verdict files".to_string(),
    };
    let expected = if v.is.is_empty() {
        format!("a readable verdict in {place}")
    } else {
        format!("a verdict {} in {place}", v.is.join(" or "))
    };
    let observed = rounds
        .iter()
        .filter(|r| r.present)
        .map(RoundVerdict::describe)
        .collect::<Vec<_>>()
        .join("; ");
    let mut o = Outcome::new(Verdict::Pass, expected, observed);
    for (glob, _) in globs.iter().zip(&rounds).filter(|(_, r)| r.present) {
        for e in ctx.files(glob).0 {
            o.push_file(ctx.file_ref(e));
        }
    }
    let present = rounds.iter().any(|r| r.present);
    if !present {
        o.verdict = Verdict::Missing;
        o.observed = vec![format!("no verdict file exists ({place})")];
        return o;
    }
    if v.is.is_empty() {
        // The round that counts: the first with a file (the REFINE weaver before the main one).
        let decides = rounds.iter().find(|r| r.present);
        if decides.is_some_and(|r| r.verdict.is_none()) {
            o.verdict = Verdict::Inconclusive;
        }
        return o;
    }
    let wanted: Vec<String> = v.is.iter().map(|s| canonical(s)).collect();
    let said = rounds
        .iter()
        .filter_map(|r| r.verdict.as_ref())
        .any(|pv| wanted.contains(&canonical(&pv.verdict)));
    o.verdict = if said {
        Verdict::Pass
    } else if rounds.iter().any(|r| r.present && r.verdict.is_none()) {
        // A verdict that cannot be read may be the one asked about.
        Verdict::Inconclusive
    } else {
        Verdict::Fail
    };
    o
}
