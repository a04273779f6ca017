//! The loop guard (seeds 000, 002, 004): counts fix attempts on failing BLOCKING checks and decides
//! when a STOP must be escalated to a human.
//!
//! A fix attempt is a re-evaluation, caused by a change to a failing BLOCKING check's inputs, that
//! leaves it failing. An attempt is counted once its inputs have settled, so one write that arrives
//! as several file events is one attempt. At `max` attempts, or when an attempt's evidence is
//! identical (file mtimes aside) to the previous attempt's, the check is escalated, once. This
//! module owns only that bookkeeping; it must not read files, write anything or judge checks.

use std::collections::{BTreeMap, BTreeSet};

use sha2::{Digest, Sha256};

use crate::engine::{CheckKey, Evidence};

/// A digest of evidence that ignores file mtimes (a `touch` is no progress).
pub fn evidence_hash(ev: &Evidence) -> String {
    let mut ev = ev.clone();
    for f in &mut ev.files {
        f.mtime = None;
    }
    let text = serde_json::to_string(&ev).unwrap_or_default();
    crate::protocol::hex(&Sha256::digest(text.as_bytes()))
}

/// A digest of evidence plus its files' exact mtimes (`mtimes`, in nanoseconds): equal means
/// no input was rewritten at all.
pub fn state_hash(ev: &Evidence, mtimes: &[Option<u128>]) -> String {
    let text = serde_json::to_string(&(ev, mtimes)).unwrap_or_default();
    crate::protocol::hex(&Sha256::digest(text.as_bytes()))
}

#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct Track {
    count: u32,
    /// Evidence hash after the latest attempt (at first: when STOP was raised).
    last: String,
    escalated: Option<String>,
}

/// What one counted attempt amounted to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Attempt {
    pub number: u32,
    /// Its evidence equals the previous attempt's.
    pub identical: bool,
    /// Set when this attempt escalates the check (only the first time).
    pub escalate: Option<String>,
}

/// Per `pass:check`: fix attempts, escalations, and attempts waiting for their inputs to settle.
#[derive(Debug, Clone)]
pub struct Guard {
    max: u32,
    tracks: BTreeMap<CheckKey, Track>,
    pending: BTreeMap<CheckKey, BTreeSet<String>>,
    /// Per key: the evidence (mtimes included) last seen, to tell a rewrite from an echo.
    states: BTreeMap<CheckKey, String>,
}

impl Guard {
    pub fn new(max: u32) -> Guard {
        Guard {
            max: max.max(1),
            tracks: BTreeMap::new(),
            pending: BTreeMap::new(),
            states: BTreeMap::new(),
        }
    }

    /// Records the evidence state of failing `key`; true when it equals the state last seen,
    /// i.e. an event arrived but no input was rewritten (a duplicate or metadata-only event
    /// of the write that raised the STOP). Such an echo is no fix attempt: its pending
    /// attempt is dropped.
    pub fn echo(&mut self, key: &CheckKey, state: String) -> bool {
        let same = self.states.get(key) == Some(&state);
        if same {
            self.pending.remove(key);
        } else {
            self.states.insert(key.clone(), state);
        }
        same
    }

    /// Restores a key's state from the event log.
    pub fn restore(&mut self, key: &CheckKey, count: u32, last: String, escalated: Option<String>) {
        self.tracks.insert(
            key.clone(),
            Track {
                count,
                last,
                escalated,
            },
        );
    }

    /// A STOP was raised for `key` with this evidence: attempts count from here.
    pub fn raised(&mut self, key: &CheckKey, hash: String) {
        self.tracks.insert(
            key.clone(),
            Track {
                count: 0,
                last: hash,
                escalated: None,
            },
        );
        self.pending.remove(key);
    }

    /// `key` no longer fails: forget its attempts and escalation.
    pub fn resolved(&mut self, key: &CheckKey) {
        self.tracks.remove(key);
        self.pending.remove(key);
        self.states.remove(key);
    }

    /// Inputs of failing `key` changed (`paths`); the attempt is judged once they settle.
    pub fn touched<'a>(&mut self, key: &CheckKey, paths: impl IntoIterator<Item = &'a String>) {
        self.pending
            .entry(key.clone())
            .or_default()
            .extend(paths.into_iter().cloned());
    }

    /// Keys with an attempt waiting, and the paths that made it.
    pub fn pending(&self) -> impl Iterator<Item = (&CheckKey, &BTreeSet<String>)> {
        self.pending.iter()
    }

    pub fn has_pending(&self) -> bool {
        !self.pending.is_empty()
    }

    /// Counts the waiting attempt of `key`, whose evidence is now `hash`.
    pub fn attempt(&mut self, key: &CheckKey, hash: String) -> Attempt {
        self.pending.remove(key);
        let max = self.max;
        let t = self.tracks.entry(key.clone()).or_default();
        // Saturating: a count resumed from a damaged or hostile event log may already be at the top.
        t.count = t.count.saturating_add(1);
        let identical = !t.last.is_empty() && t.last == hash;
        t.last = hash;
        let mut escalate = None;
        if t.escalated.is_none() {
            let reason = if identical {
                Some(format!(
                    "no progress: fix attempt {} left the evidence identical to the previous one",
                    t.count
                ))
            } else if t.count >= max {
                Some(format!(
                    "{} fix attempts left it failing (limit {max})",
                    t.count
                ))
            } else {
                None
            };
            if let Some(r) = reason {
                t.escalated = Some(r.clone());
                escalate = Some(r);
            }
        }
        Attempt {
            number: t.count,
            identical,
            escalate,
        }
    }

    /// Escalated keys with their reasons, for the STOP file.
    pub fn escalations(&self) -> Vec<(CheckKey, String)> {
        self.tracks
            .iter()
            .filter_map(|(k, t)| t.escalated.clone().map(|r| (k.clone(), r)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checks::FileRef;

    fn key(s: &str) -> CheckKey {
        let (pass, check) = s.split_once(':').unwrap();
        CheckKey::new(pass, check)
    }

    fn ev(sha: &str, mtime: &str) -> Evidence {
        Evidence {
            expected: "no manual source".into(),
            observed: "1 manual entry".into(),
            details: vec!["GR-01: manual".into()],
            files: vec![FileRef {
                path: "p3a-gate-results.json".into(),
                size: 10,
                sha256: Some(sha.into()),
                mtime: Some(mtime.into()),
            }],
        }
    }

    #[test]
    fn mtimes_do_not_count_as_progress() {
        assert_eq!(evidence_hash(&ev("a", "t1")), evidence_hash(&ev("a", "t2")));
        assert_ne!(evidence_hash(&ev("a", "t1")), evidence_hash(&ev("b", "t1")));
    }

    #[test]
    fn escalates_at_the_limit_once() {
        let mut g = Guard::new(3);
        g.raised(&key("2:OBS-27"), "h0".into());
        g.touched(&key("2:OBS-27"), &["p3a-gate-results.json".to_string()]);
        assert!(g.has_pending());
        assert_eq!(g.attempt(&key("2:OBS-27"), "h1".into()).escalate, None);
        assert!(!g.has_pending());
        assert_eq!(g.attempt(&key("2:OBS-27"), "h2".into()).escalate, None);
        let third = g.attempt(&key("2:OBS-27"), "h3".into());
        assert_eq!(third.number, 3);
        assert!(third.escalate.unwrap().contains("3 fix attempts"));
        assert_eq!(g.attempt(&key("2:OBS-27"), "h4".into()).escalate, None);
        assert_eq!(g.escalations().len(), 1);
        g.resolved(&key("2:OBS-27"));
        assert!(g.escalations().is_empty());
    }

    #[test]
    fn a_count_resumed_at_the_top_saturates() {
        let mut g = Guard::new(3);
        g.restore(&key("2:OBS-27"), u32::MAX, "h0".into(), None);
        let a = g.attempt(&key("2:OBS-27"), "h1".into());
        assert_eq!(a.number, u32::MAX);
        assert!(a.escalate.is_some());
    }

    #[test]
    fn an_echo_is_no_attempt() {
        let mut g = Guard::new(3);
        g.raised(&key("2:OBS-27"), "h0".into());
        assert!(!g.echo(&key("2:OBS-27"), "s0".into()));
        g.touched(&key("2:OBS-27"), &["p3a-gate-results.json".to_string()]);
        assert!(g.echo(&key("2:OBS-27"), "s0".into()), "nothing rewritten");
        assert!(!g.has_pending());
        assert!(
            !g.echo(&key("2:OBS-27"), "s1".into()),
            "rewritten (if identically)"
        );
    }

    #[test]
    fn escalates_on_identical_evidence() {
        let mut g = Guard::new(5);
        g.raised(&key("2:OBS-27"), "h0".into());
        let a = g.attempt(&key("2:OBS-27"), "h0".into());
        assert!(a.identical);
        assert!(a.escalate.unwrap().starts_with("no progress"));
    }
}
