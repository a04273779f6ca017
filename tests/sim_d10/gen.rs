//! Random runs: an honest D10 run written phase by phase by random honest writers, with honest
//! noise, sometimes a REFINE round or a second run in the emptied directory, and in hostile runs
//! one BLOCKING violation written by a random writer. Steps whose tags match an open class
//! (`known_open::KNOWN_OPEN`) are drawn again.

use crate::known_open;
use crate::model::*;
use crate::text::Spell;

pub struct Run {
    pub style: Style,
    pub steps: Vec<Step>,
}

fn pick<T: Copy>(rng: &mut fastrand::Rng, xs: &[T]) -> T {
    xs[rng.usize(..xs.len())]
}

const TRACKER_WRITERS: &[Writer] = &[
    Writer::Atomic,
    Writer::Truncate,
    Writer::Chunked,
    Writer::Dd,
    Writer::Cp,
    Writer::CpA,
    Writer::Rsync,
    Writer::EditorBackup,
    Writer::EditorRemove,
    Writer::Emacs,
    Writer::PowerShell,
    Writer::Crlf,
    Writer::Stream,
];

/// Draws a step until its tags match no open class (at most a few hundred tries).
fn draw(
    rng: &mut fastrand::Rng,
    style: &Style,
    mut f: impl FnMut(&mut fastrand::Rng) -> Step,
) -> Step {
    let mut s = f(rng);
    for _ in 0..500 {
        if known_open::matching(&with_style(&s.tags(), style)).is_none() {
            return s;
        }
        s = f(rng);
    }
    s
}

fn phase_step(rng: &mut fastrand::Rng, style: &Style, phase: Phase, verdict: Verdict) -> Step {
    draw(rng, style, |rng| Step::Phase {
        phase,
        writer: pick(rng, Writer::HONEST_FILE),
        tracker: pick(rng, TRACKER_WRITERS),
        verdict,
    })
}

/// A phase of a run over an earlier run's files, by writers that write every file: `rsync -a`
/// leaves a file of the same size and mtime as it was, which is then still the earlier run's
/// leftover (nothing on disk says this run wrote it), not this run's.
fn rewriting_phase_step(rng: &mut fastrand::Rng, style: &Style, phase: Phase) -> Step {
    loop {
        let s = phase_step(rng, style, phase, Verdict::Ship);
        if !matches!(
            s,
            Step::Phase {
                writer: Writer::Rsync,
                ..
            } | Step::Phase {
                tracker: Writer::Rsync,
                ..
            }
        ) {
            return s;
        }
    }
}

fn plant_for(rng: &mut fastrand::Rng, refine_round: bool) -> (Plant, Phase) {
    let r = refine_round && rng.bool();
    let (p3a, p3b, p3bint) = if r {
        (Phase::R3A, Phase::R3B, Phase::R3BInt)
    } else {
        (Phase::P3A, Phase::P3B, Phase::P3BInt)
    };
    let letter = pick(rng, &['A', 'B', 'C', 'D', 'E', 'F', 'G', 'H', 'I']);
    let mut kinds: Vec<u8> = (0..11).collect();
    if refine_round {
        kinds.extend([11, 12, 13, 14]);
    }
    match pick(rng, &kinds) {
        0 => {
            let f = pick(
                rng,
                &[
                    EmptyForm::Underscores,
                    EmptyForm::Strike,
                    EmptyForm::Del,
                    EmptyForm::S,
                    EmptyForm::InFence,
                    EmptyForm::InIndent,
                    EmptyForm::InPre,
                    EmptyForm::InComment,
                ],
            );
            (Plant::BvEmpty(rng.usize(1..=5), f), Phase::P1)
        }
        1 => {
            let f = match rng.u8(0..5) {
                0 | 1 => FailForm::Word(pick(rng, Spell::MARKDOWN)),
                2 => pick(
                    rng,
                    &[FailForm::StrikePass, FailForm::DelPass, FailForm::SPass],
                ),
                _ => FailForm::Decoy(pick(
                    rng,
                    &[
                        Decoy::Fence,
                        Decoy::Indent,
                        Decoy::Pre,
                        Decoy::Comment,
                        Decoy::Section,
                    ],
                )),
            };
            (Plant::BvFail(rng.usize(1..=7), f), Phase::P1)
        }
        2 => (Plant::SpawnEarly(r), p3b),
        3 => {
            let word = pick(
                rng,
                &[
                    "manual",
                    "Manual entry",
                    "hand-entered",
                    "human",
                    "orchestrator",
                ],
            );
            let spell = if rng.bool() {
                Spell::Plain
            } else {
                pick(rng, Spell::JSON)
            };
            let key = if rng.u8(0..4) == 0 {
                pick(rng, Spell::JSON)
            } else {
                Spell::Plain
            };
            let entry = rng.usize(0..50);
            (
                Plant::Manual(
                    r,
                    ManualForm {
                        word,
                        spell,
                        key,
                        entry,
                    },
                ),
                p3a,
            )
        }
        4 => {
            let f = pick(
                rng,
                &[
                    InvalidForm::Truncated,
                    InvalidForm::TrailingGarbage,
                    InvalidForm::DuplicateKey,
                    InvalidForm::LookalikeKey(Spell::Cyrillic),
                    InvalidForm::LookalikeKey(Spell::Fullwidth),
                    InvalidForm::LookalikeKey(Spell::ZeroWidth),
                ],
            );
            (Plant::Invalid(r, f), p3a)
        }
        5 => (
            Plant::NoGr48(r, pick(rng, &[NoGr48::Absent, NoGr48::EmptyResult])),
            p3a,
        ),
        6 => {
            let term = rng.usize(0..VOCAB.len());
            let mut spell = pick(rng, Spell::MARKDOWN);
            if VOCAB[term] == "REFINE" && spell == Spell::SmallCaps {
                spell = Spell::Plain;
            }
            (Plant::Vocab(r, letter, term, spell), p3b)
        }
        7 => (Plant::ExtraAuditor(r), p3b),
        8 => {
            let f = pick(
                rng,
                &[
                    ShotsForm::MissingViewport,
                    ShotsForm::NoColdLook,
                    ShotsForm::TwoScrolls,
                    ShotsForm::ZeroByte,
                    ShotsForm::TextFile,
                ],
            );
            (Plant::Shots(r, f), p3a)
        }
        9 => (Plant::TouchAuditor(r, letter), p3bint),
        10 => (Plant::RemoveAuditor(r, letter), p3bint),
        11 => {
            let spell = if rng.bool() {
                Spell::Plain
            } else {
                pick(rng, Spell::MARKDOWN)
            };
            (
                Plant::Prohibited(
                    rng.usize(0..INPUTS.len()),
                    rng.usize(0..PROHIBITED.len()),
                    spell,
                ),
                Phase::RInputs,
            )
        }
        12 => (Plant::RefineOrder, Phase::RBuild),
        13 => (Plant::SameSpawn, Phase::RBuild),
        _ => (
            Plant::SamePrompt(pick(
                rng,
                &[
                    SamePrompt::Exact,
                    SamePrompt::Rewrapped,
                    SamePrompt::OneLine,
                ],
            )),
            Phase::RInputs,
        ),
    }
}

fn plant_writer(rng: &mut fastrand::Rng, plant: Plant) -> Writer {
    let rewrite = !matches!(
        plant,
        Plant::ExtraAuditor(_)
            | Plant::RemoveAuditor(..)
            | Plant::Shots(..)
            | Plant::TouchAuditor(..)
    );
    if rewrite && rng.u8(0..4) == 0 {
        pick(rng, Writer::HOSTILE_EXTRA)
    } else {
        pick(rng, Writer::HONEST_FILE)
    }
}

/// A step's tags with the run's style tags.
pub fn with_style(tags: &[String], style: &Style) -> Vec<String> {
    let mut t = tags.to_vec();
    t.extend(style.tags());
    t
}

fn draw_style(rng: &mut fastrand::Rng) -> Style {
    let mut style = style_once(rng);
    for _ in 0..500 {
        if known_open::matching(&style.tags()).is_none() {
            break;
        }
        style = style_once(rng);
    }
    style
}

fn style_once(rng: &mut fastrand::Rng) -> Style {
    Style {
        spawned: pick(rng, &["Spawned", "Spawned at", "Spawned (UTC)"]),
        verdict: pick(
            rng,
            &[
                VerdictStyle::Bold,
                VerdictStyle::Plain,
                VerdictStyle::TableRow,
                VerdictStyle::NoBreakSpace,
            ],
        ),
        gates_array: rng.u8(0..4) == 0,
        example_fence: rng.u8(0..6) == 0,
        linked_shots: rng.u8(0..6) == 0,
        live: rng.u8(0..4) == 0,
        times: pick(
            rng,
            &[
                TimeStyle::IsoZ,
                TimeStyle::IsoZ,
                TimeStyle::Minute,
                TimeStyle::PythonOffset,
                TimeStyle::SpacedOffset,
            ],
        ),
        nan_metric: rng.u8(0..6) == 0,
    }
}

/// The run for `seed`.
pub fn generate(seed: u64) -> Run {
    let mut rng = fastrand::Rng::with_seed(seed);
    let style = draw_style(&mut rng);
    let hostile = rng.bool();
    let refine = rng.u8(0..10) < 3;
    let mut phases: Vec<Phase> = Phase::MAIN.to_vec();
    if refine {
        phases.extend_from_slice(Phase::REFINE);
    }
    // Small runs: most honest runs end early; hostile runs go at least past their plant.
    let mut end = phases.len();
    let plant = hostile.then(|| {
        let mut got = None;
        for _ in 0..500 {
            let (p, after) = plant_for(&mut rng, refine);
            let step = Step::Plant {
                plant: p,
                writer: plant_writer(&mut rng, p),
            };
            let open = known_open::matching(&with_style(&step.tags(), &style)).is_some();
            got = Some((step, after));
            if !open {
                break;
            }
        }
        got.expect("a plant")
    });
    if rng.u8(0..10) < 4 {
        let min = match &plant {
            Some((_, after)) => phases.iter().position(|p| p == after).unwrap_or(0) + 1,
            None => 1,
        };
        end = rng.usize(min..=phases.len());
    }
    let mut steps = Vec::new();
    for &ph in &phases[..end] {
        let verdict = if ph == Phase::P3C && refine {
            Verdict::Refine
        } else {
            Verdict::Ship
        };
        steps.push(phase_step(&mut rng, &style, ph, verdict));
        steps.push(Step::Boundary);
        if let Some((p, after)) = &plant {
            if *after == ph {
                steps.push(p.clone());
                steps.push(Step::Boundary);
            }
        }
        // Honest noise where it belongs.
        if rng.u8(0..12) == 0 {
            let n = if refine && ph >= Phase::RInputs {
                pick(
                    &mut rng,
                    &[
                        Noise::GitDir,
                        Noise::EmacsLock,
                        Noise::VimSwap,
                        Noise::TrackerBackup,
                        Noise::CopyBack,
                    ],
                )
            } else {
                pick(
                    &mut rng,
                    &[Noise::RefineName, Noise::TrackerBackup, Noise::CopyBack],
                )
            };
            let s = Step::Noise(n);
            if known_open::matching(&with_style(&s.tags(), &style)).is_none() {
                steps.push(s);
            }
        }
    }
    // A second run in the emptied directory, or (watched live) over the first run's files,
    // after a complete honest one.
    if !hostile && end == phases.len() && rng.u8(0..8) == 0 {
        let over = style.live && rng.bool();
        let s = if over { Step::RerunOver } else { Step::Rerun };
        if known_open::matching(&with_style(&s.tags(), &style)).is_none() {
            steps.push(s);
            for &ph in &Phase::MAIN[..rng.usize(1..=Phase::MAIN.len())] {
                steps.push(if over {
                    rewriting_phase_step(&mut rng, &style, ph)
                } else {
                    phase_step(&mut rng, &style, ph, Verdict::Ship)
                });
                steps.push(Step::Boundary);
            }
        }
    }
    Run { style, steps }
}
