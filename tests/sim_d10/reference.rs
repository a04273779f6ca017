//! The reference reading: what SPEC.md §2, §3 and §10 (and seed 001) say the BLOCKING checks
//! conclude about a logical state, written from the contract alone (not from the referee's
//! code), so that the two can disagree.
//!
//! Every BLOCKING check instance gets one of three expectations: it must FAIL, it must not FAIL,
//! or the contract leaves it open (a present-and-wrong edit before its pass is due, where "fails
//! at once" and "waits for its pass" are both readings). An honest run's final state is also read
//! whole: every instance PASS but OBS-18 (SKIP: no BV gate failed) and pass R (SKIP without a
//! REFINE verdict).

use std::collections::BTreeMap;

use crate::model::*;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Exp {
    /// It must block: FAIL, or INCONCLUSIVE (a due BLOCKING check the artifacts cannot decide
    /// blocks like a FAIL: the STOP says CANNOT VERIFY, `verify` exits 1).
    Fail,
    NotFail,
    Either,
}

/// `(pass, check)`.
pub type Key = (String, String);

#[derive(Clone, Debug, Default)]
pub struct Expected {
    pub blocking: BTreeMap<Key, Exp>,
    /// The pipeline is complete (latest verdict SHIP).
    pub complete: bool,
    /// The whole result table of a complete honest run.
    pub full: Option<BTreeMap<Key, &'static str>>,
}

impl Expected {
    pub fn must_fail(&self) -> Vec<&Key> {
        self.blocking
            .iter()
            .filter(|(_, e)| **e == Exp::Fail)
            .map(|(k, _)| k)
            .collect()
    }
}

const ALL: &[(&str, &str)] = &[
    ("0", "OBS-16"),
    ("1", "OBS-15"),
    ("1", "OBS-17"),
    ("1", "OBS-18"),
    ("2", "OBS-01"),
    ("2", "OBS-02"),
    ("2", "OBS-03"),
    ("2", "OBS-04"),
    ("2", "OBS-10"),
    ("2", "OBS-11"),
    ("2", "OBS-12"),
    ("2", "OBS-13"),
    ("2", "OBS-14"),
    ("2", "OBS-24"),
    ("2", "OBS-25"),
    ("2", "OBS-27"),
    ("3", "OBS-19"),
    ("3", "OBS-20"),
    ("3", "OBS-21"),
    ("3", "OBS-22"),
    ("3", "OBS-23"),
    ("4", "OBS-26"),
    ("4", "OBS-28"),
    ("4", "OBS-29"),
    ("4", "OBS-30"),
];

const R_ALL: &[&str] = &[
    "OBS-05", "OBS-06", "OBS-07", "OBS-08", "OBS-09", "OBS-01", "OBS-02", "OBS-03", "OBS-04",
    "OBS-10", "OBS-11", "OBS-12", "OBS-13", "OBS-14", "OBS-24", "OBS-25", "OBS-27", "OBS-19",
    "OBS-20", "OBS-21", "OBS-22", "OBS-23", "OBS-26", "OBS-28", "OBS-29", "OBS-30",
];

/// Whether the pass has run, whether its (missing-data) checks are due.
#[derive(Clone, Copy, Debug)]
struct Pass {
    ran: bool,
    due: bool,
}

/// The reading of `s`: the due-ness of.1 and the checks of §3.2, with §10's rules for
/// what a human reads (a struck value is not there, a row in a code block is not a row, a
/// look-alike word is the word, a decoy section is not the section).
pub fn judge(s: &State) -> Expected {
    let has = |a: Art| s.present.contains(&a);
    let d = |p: Phase| s.done.contains(&p);
    let refine_started = d(Phase::RInputs);
    // The latest verdict: the REFINE weaver supersedes the main one.
    let latest = if has(Art::Weaver(true)) {
        Some(Verdict::Ship)
    } else if has(Art::Weaver(false)) {
        Some(s.main_verdict.unwrap_or(Verdict::Ship))
    } else {
        None
    };
    let complete = latest == Some(Verdict::Ship);
    let aud_main = s.auditors(false);
    let aud_r = s.auditors(true);

    let p1 = Pass {
        ran: has(Art::Brief) || d(Phase::P2) || has(Art::P2Output) || complete,
        due: d(Phase::P2) || has(Art::P2Output) || complete,
    };
    let pass2 = |r: bool| -> Pass {
        let (shots, gates, auds, p3b) = if r {
            (
                has(Art::Shots(true)),
                has(Art::Gates(true)),
                !aud_r.is_empty(),
                d(Phase::R3B),
            )
        } else {
            (
                has(Art::Shots(false)),
                has(Art::Gates(false)),
                !aud_main.is_empty(),
                d(Phase::P3B),
            )
        };
        Pass {
            ran: shots || gates || auds || p3b || complete,
            due: auds || p3b || complete,
        }
    };
    let pass3 = |r: bool| -> Pass {
        let auds = if r { aud_r.len() } else { aud_main.len() };
        let int = has(Art::Int(r));
        let weaver = has(Art::Weaver(r));
        Pass {
            ran: auds >= 9 || int || weaver || complete,
            due: int || weaver || complete,
        }
    };
    let pass4 = |r: bool| -> Pass {
        let w = has(Art::Weaver(r));
        Pass { ran: w, due: w }
    };
    // Pass R runs after a REFINE verdict (not because a name says "refine").
    let r_ran = s.main_verdict == Some(Verdict::Refine) && has(Art::Weaver(false));

    let mut out = Expected {
        complete,
        ..Expected::default()
    };
    let mut put = |pass: &str, check: &str, e: Exp| {
        out.blocking
            .insert((pass.to_string(), check.to_string()), e);
    };
    // A "missing" failure: FAIL when due, not before. A "present and wrong" one: FAIL when due;
    // before that the contract says "at once", once the pass has run: required too.
    let missing = |p: Pass, bad: bool| {
        if bad && p.due {
            Exp::Fail
        } else {
            Exp::NotFail
        }
    };
    let wrong = |p: Pass, bad: bool| {
        if bad && p.ran {
            Exp::Fail
        } else {
            Exp::NotFail
        }
    };

    // Pass 1.
    let bv_empty = s
        .plants
        .iter()
        .any(|p| matches!(p, Plant::BvEmpty(i, _) if (1..=5).contains(i)));
    let bv_empty_any = s.plants.iter().any(|p| matches!(p, Plant::BvEmpty(..)));
    let bv_fail = s.plants.iter().any(|p| matches!(p, Plant::BvFail(..)));
    let p1_written = d(Phase::P1);
    put("1", "OBS-15", missing(p1, bv_empty || !p1_written));
    let _ = bv_empty_any;
    put("1", "OBS-18", missing(p1, bv_fail && p1_written));

    for r in [false, true] {
        if r && !r_ran {
            continue;
        }
        let pn = |main: &'static str| if r { "R" } else { main };
        let p2 = pass2(r);
        let p3 = pass3(r);
        let p4 = pass4(r);
        let (phase3a, phase3b) = if r {
            (Phase::R3A, Phase::R3B)
        } else {
            (Phase::P3A, Phase::P3B)
        };
        // A REFINE instance is due at its own deadline, and at completion.
        // OBS-01: the scan recorded (3A's tracker rows) before every auditor spawn.
        let early = s.has(|p| *p == Plant::SpawnEarly(r)) && d(phase3b);
        let e01 = if early && p2.ran {
            Exp::Fail
        } else {
            missing(p2, !d(phase3a))
        };
        put(pn("2"), "OBS-01", e01);
        let shots = s.plants.iter().rev().find_map(|p| match p {
            Plant::Shots(rr, f) if *rr == r => Some(*f),
            _ => None,
        });
        let shots_present = has(Art::Shots(r));
        put(
            pn("2"),
            "OBS-10",
            missing(
                p2,
                !shots_present || shots == Some(ShotsForm::MissingViewport),
            ),
        );
        // A `cold-look.png` that is no image (zero bytes, text) is there and wrong: FAIL when
        // due, and "at once" is a reading too.
        let not_image = matches!(shots, Some(ShotsForm::ZeroByte | ShotsForm::TextFile));
        put(
            pn("2"),
            "OBS-11",
            if not_image && shots_present && p2.ran && !p2.due {
                Exp::Either
            } else {
                missing(p2, !shots_present || shots.is_some())
            },
        );
        let gates = has(Art::Gates(r));
        let invalid = gates && s.has(|p| matches!(p, Plant::Invalid(rr, _) if *rr == r));
        let truncated = s.has(|p| *p == Plant::Invalid(r, InvalidForm::Truncated));
        put(
            pn("2"),
            "OBS-24",
            // JSON that ends before the document does may still be streaming: it FAILs when
            // OBS-24 is due, and before that both readings are the contract's.
            if invalid && truncated && !p2.due {
                if p2.ran {
                    Exp::Either
                } else {
                    Exp::NotFail
                }
            } else if invalid && p2.ran {
                Exp::Fail
            } else {
                missing(p2, !gates)
            },
        );
        let manual = gates && s.has(|p| matches!(p, Plant::Manual(rr, _) if *rr == r));
        // Gate results that are no JSON document (cut short, trailing garbage): their entries
        // cannot be judged for their source, so once the pass is due OBS-27 is a BLOCKING check
        // the artifacts cannot decide (INCONCLUSIVE), and it blocks like a FAIL (fail closed).
        // A document with a duplicate key still has its entries: each is judged (a manual one
        // beside the duplicate is open either way, as before the pass is due).
        let unparseable = gates
            && s.has(|p| {
                matches!(p, Plant::Invalid(rr, InvalidForm::Truncated | InvalidForm::TrailingGarbage) if *rr == r)
            });
        put(
            pn("2"),
            "OBS-27",
            if invalid {
                if unparseable && p2.due {
                    Exp::Fail
                } else if manual {
                    Exp::Either
                } else {
                    Exp::NotFail
                }
            } else {
                wrong(p2, manual)
            },
        );

        // Pass 3.
        let auds = if r { &aud_r } else { &aud_main };
        let extra = auds.iter().any(|l| !('A'..='I').contains(l));
        let count = auds.len();
        put(
            pn("3"),
            "OBS-19",
            if extra && p3.ran {
                Exp::Fail
            } else {
                missing(p3, count < 9)
            },
        );
        let int = has(Art::Int(r));
        let int_seq = s.seq.get(&Art::Int(r)).copied().unwrap_or(0);
        let newer = auds
            .iter()
            .any(|l| s.seq.get(&Art::Aud(r, *l)).copied().unwrap_or(0) > int_seq);
        // More than nine reports: the contract's FAIL column names fewer than 9 or an auditor
        // newer than the integrative, its PASS column "9 auditor reports exist"; a tenth report
        // makes both readings possible (OBS-19 FAILs it either way).
        let e20 = if int {
            if (count < 9 || newer) && p3.ran {
                Exp::Fail
            } else if count > 9 {
                Exp::Either
            } else {
                Exp::NotFail
            }
        } else {
            missing(p3, true)
        };
        put(pn("3"), "OBS-20", e20);
        let vocab = s.has(|p| matches!(p, Plant::Vocab(rr, l, ..) if *rr == r && auds.contains(l)));
        put(pn("3"), "OBS-21", wrong(p3, vocab));

        // Pass 4.
        let no48 = s.has(|p| matches!(p, Plant::NoGr48(rr, _) if *rr == r));
        put(
            pn("4"),
            "OBS-26",
            if invalid {
                if p4.due {
                    Exp::Either
                } else {
                    Exp::NotFail
                }
            } else {
                missing(p4, !gates || no48)
            },
        );
    }

    if r_ran {
        // OBS-05, 06, 07 are due when REFINE_BUILDER_SPAWNED is filled or the REFINE HTML exists.
        let due567 = d(Phase::RBuild) || has(Art::ROutput) || complete;
        let ran = Pass {
            ran: true,
            due: due567,
        };
        // A REFINE builder spawned at the Pass-1 builder's time is also spawned before the
        // BEFORE checklist was completed: the same edit breaks the order OBS-05 reads.
        let order = (s.has(|p| *p == Plant::RefineOrder) || s.has(|p| *p == Plant::SameSpawn))
            && d(Phase::RBuild);
        put(
            "R",
            "OBS-05",
            if order {
                Exp::Fail
            } else {
                missing(ran, !refine_started)
            },
        );
        let same_spawn = s.has(|p| *p == Plant::SameSpawn) && d(Phase::RBuild);
        let same_prompt = s.has(|p| matches!(p, Plant::SamePrompt(_)))
            && has(Art::Input(2))
            && has(Art::P2Prompt);
        put(
            "R",
            "OBS-06",
            if (same_spawn || same_prompt) && due567 {
                Exp::Fail
            } else if same_spawn || same_prompt {
                Exp::Either
            } else {
                // Timestamps absent when due are INCONCLUSIVE, not FAIL.
                Exp::NotFail
            },
        );
        let prohibited = s.has(|p| matches!(p, Plant::Prohibited(f, ..) if has(Art::Input(*f))));
        put(
            "R",
            "OBS-07",
            // No input files when due is INCONCLUSIVE: not a FAIL either.
            if prohibited { Exp::Fail } else { Exp::NotFail },
        );
        let due09 = has(Art::Weaver(true));
        let extra_r = aud_r.iter().any(|l| !('A'..='I').contains(l));
        // A tenth report is present and wrong: FAIL when due, and "at once" is a reading too.
        let e09 = if extra_r && !due09 {
            Exp::Either
        } else {
            missing(
                Pass {
                    ran: true,
                    due: due09,
                },
                aud_r.len() != 9 || extra_r || !has(Art::Gates(true)),
            )
        };
        put("R", "OBS-09", e09);
    }

    // The whole table of a complete honest run.
    if complete && s.plants.is_empty() {
        let mut full = BTreeMap::new();
        for (p, c) in ALL {
            let st = if *c == "OBS-18" { "SKIP" } else { "PASS" };
            full.insert((p.to_string(), c.to_string()), st);
        }
        for c in R_ALL {
            full.insert(
                ("R".to_string(), c.to_string()),
                if r_ran { "PASS" } else { "SKIP" },
            );
        }
        out.full = Some(full);
    }
    out
}
