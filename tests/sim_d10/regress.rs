//! Every class the simulator found, each reduced to a minimal run of the simulator with the
//! writers and style of its class. The open ones fail today: ignored, and listed in
//! `known_open::KNOWN_OPEN`, which keeps them out of the random runs; when one is fixed its test
//! passes: delete its `#[ignore]` and its entries. The others were found open at f04aa61 and pass
//! since main's D10 fixes.
use crate::model::*;
use crate::runner;
use crate::text::Spell;

/// Runs `steps` and fails with every disagreement.
pub fn assert_agrees(style: &Style, steps: &[Step]) {
    let o = runner::execute(0x0123_4567, style, steps);
    let text: Vec<String> = o
        .failures
        .iter()
        .map(|f| format!("after step {}: {} — {}", f.step, f.class(), f.detail))
        .collect();
    assert!(o.failures.is_empty(), "{}", text.join("\n"));
}

pub fn plain() -> Style {
    Style {
        spawned: "Spawned",
        verdict: VerdictStyle::Bold,
        gates_array: false,
        example_fence: false,
        linked_shots: false,
        live: false,
        times: TimeStyle::IsoZ,
        nan_metric: false,
    }
}

fn live() -> Style {
    Style {
        live: true,
        ..plain()
    }
}

/// A phase written atomically, then its boundary.
fn ph(phase: Phase) -> [Step; 2] {
    phw(phase, Writer::Atomic, Writer::Atomic)
}

fn phw(phase: Phase, writer: Writer, tracker: Writer) -> [Step; 2] {
    let verdict = Verdict::Ship;
    [
        Step::Phase {
            phase,
            writer,
            tracker,
            verdict,
        },
        Step::Boundary,
    ]
}

/// The main phases up to and including `last`, atomic, each with its boundary; P3C says `v`.
fn main_to(last: Phase, v: Verdict) -> Vec<Step> {
    let mut out = Vec::new();
    for &p in Phase::MAIN.iter().filter(|p| **p <= last) {
        let [mut a, b] = ph(p);
        if let Step::Phase { verdict, .. } = &mut a {
            if p == Phase::P3C {
                *verdict = v;
            }
        }
        out.push(a);
        out.push(b);
    }
    out
}

fn refine_to(last: Phase) -> Vec<Step> {
    let mut out = main_to(Phase::P3C, Verdict::Refine);
    for &p in Phase::REFINE.iter().filter(|p| **p <= last) {
        out.extend(ph(p));
    }
    out
}

fn plant(p: Plant, writer: Writer) -> [Step; 2] {
    [Step::Plant { plant: p, writer }, Step::Boundary]
}

/// The main run with `plant` written by `writer` right after `after`, then on to completion.
fn main_with(after: Phase, p: Plant, writer: Writer) -> Vec<Step> {
    let mut out = Vec::new();
    for &ph_ in Phase::MAIN {
        out.extend(ph(ph_));
        if ph_ == after {
            out.extend(plant(p, writer));
        }
    }
    out
}

/// As `main_with`, ending with `last`'s boundary: enough for the plant's pass to be due.
fn main_until(last: Phase, after: Phase, p: Plant, writer: Writer) -> Vec<Step> {
    let mut out = Vec::new();
    for &ph_ in Phase::MAIN.iter().filter(|x| **x <= last) {
        out.extend(ph(ph_));
        if ph_ == after {
            out.extend(plant(p, writer));
        }
    }
    out
}

/// A self-test of the harness: a plain honest run, with and without a live referee, agrees.
#[test]
fn honest_atomic_run_agrees() {
    assert_agrees(&plain(), &main_to(Phase::P3C, Verdict::Ship));
}

#[test]
fn honest_atomic_run_agrees_live() {
    assert_agrees(&live(), &main_to(Phase::P3C, Verdict::Ship));
}

/// A self-test: a plain manual gate source is caught, live and one-shot.
#[test]
fn manual_source_is_caught_live() {
    let m = ManualForm {
        word: "manual",
        spell: Spell::Plain,
        key: Spell::Plain,
        entry: 3,
    };
    assert_agrees(
        &live(),
        &main_with(Phase::P3A, Plant::Manual(false, m), Writer::Atomic),
    );
}

// ---- open classes -------------------------------------------------------------------------

/// The tracker saved by Windows PowerShell 5.1 (`Out-File`: UTF-16LE, BOM, CRLF) is read: an
/// honest run ends SHIP (found open at f04aa61: it FAILed OBS-15, OBS-01 and more).
#[test]
fn tracker_utf16_powershell() {
    let mut steps = Vec::new();
    for &p in Phase::MAIN {
        steps.extend(phw(p, Writer::Atomic, Writer::PowerShell));
    }
    assert_agrees(&plain(), &steps);
}

/// Gate results written by PowerShell (UTF-16LE with a BOM) are read (found open at f04aa61:
/// OBS-24 FAILed them as invalid).
#[test]
fn gate_results_utf16_powershell() {
    let mut steps = main_to(Phase::P2, Verdict::Ship);
    steps.extend(phw(Phase::P3A, Writer::PowerShell, Writer::Atomic));
    for &p in &Phase::MAIN[4..] {
        steps.extend(ph(p));
    }
    assert_agrees(&plain(), &steps);
}

/// A weaver verdict written by PowerShell is read and the run completes (found open at f04aa61).
#[test]
fn weaver_utf16_powershell() {
    let mut steps = main_to(Phase::P3BInt, Verdict::Ship);
    steps.extend(phw(Phase::P3C, Writer::PowerShell, Writer::Atomic));
    assert_agrees(&plain(), &steps);
}

/// `**VERDICT:**` followed by a no-break space is read as SHIP, as a human reads it (found open
/// at f04aa61: no verdict, never complete).
#[test]
fn verdict_after_no_break_space() {
    let style = Style {
        verdict: VerdictStyle::NoBreakSpace,
        ..plain()
    };
    assert_agrees(&style, &main_to(Phase::P3C, Verdict::Ship));
}

/// A `.git/` checkout in `refine-inputs/` (its hook samples say "fix") is no REFINE input (found
/// open at f04aa61: OBS-07 FAILed).
#[test]
fn git_dir_in_refine_inputs() {
    let mut steps = refine_to(Phase::RInputs);
    steps.push(Step::Noise(Noise::GitDir));
    steps.push(Step::Boundary);
    steps.extend(ph(Phase::RBuild));
    assert_agrees(&plain(), &steps);
}

/// An Emacs lock link (dangling) in `refine-inputs/` is no REFINE input (found open at f04aa61:
/// OBS-07 FAILed).
#[test]
fn emacs_lock_in_refine_inputs() {
    let mut steps = refine_to(Phase::RInputs);
    steps.push(Step::Noise(Noise::EmacsLock));
    steps.push(Step::Boundary);
    steps.extend(ph(Phase::RBuild));
    assert_agrees(&plain(), &steps);
}

/// A vim swap file in `refine-inputs/` is not read as an input (a class found and fixed).
#[test]
fn vim_swap_in_refine_inputs_is_not_an_input() {
    let mut steps = refine_to(Phase::RInputs);
    steps.push(Step::Noise(Noise::VimSwap));
    steps.push(Step::Boundary);
    steps.extend(ph(Phase::RBuild));
    assert_agrees(&plain(), &steps);
}

/// `notes-on-refinement.md` and `refine-notes.txt` in a run without REFINE do not start pass R
/// (found open at f04aa61).
#[test]
fn refine_in_a_name_starts_pass_r() {
    let mut steps = main_to(Phase::P1, Verdict::Ship);
    steps.push(Step::Noise(Noise::RefineName));
    for &p in &Phase::MAIN[2..] {
        steps.extend(ph(p));
    }
    assert_agrees(&plain(), &steps);
}

/// A second run in the emptied build directory, its referee started as the first was, is a new
/// run (found open at f04aa61: `status --sync` said STOP from the old run).
#[test]
fn rerun_in_emptied_directory() {
    let mut steps = main_to(Phase::P3C, Verdict::Ship);
    steps.push(Step::Rerun);
    steps.extend(main_to(Phase::P2, Verdict::Ship));
    assert_agrees(&live(), &steps);
}

/// A second run over a completed run's files, the directory not emptied (issue 31: the referee
/// resumed the finished run and STOPped Phase 0 on OBS-15 and OBS-01): a new run, the first
/// run's files set aside until it writes them.
#[test]
fn rerun_over_a_completed_run() {
    let mut steps = main_to(Phase::P3C, Verdict::Ship);
    steps.push(Step::RerunOver);
    steps.extend(main_to(Phase::P2, Verdict::Ship));
    assert_agrees(&live(), &steps);
}

/// A first run halted at a STOP (a manual gate source), the directory emptied and the referee
/// started again, Phase 0 written as soon as the new referee answers: the new run starts with
/// nothing standing (found under load, seed `0xd105eed002a`: the harness took the previous run's
/// STOP, reported before the new referee had looked, for its answer, wrote Phase 0 at once, and
/// the referee resumed the old run and kept its STOP).
#[test]
fn rerun_after_a_stopped_run() {
    let m = ManualForm {
        word: "manual",
        spell: Spell::Plain,
        key: Spell::Plain,
        entry: 3,
    };
    let mut steps = main_with(Phase::P3A, Plant::Manual(false, m), Writer::Atomic);
    steps.push(Step::Rerun);
    steps.extend(main_to(Phase::P2, Verdict::Ship));
    assert_agrees(&live(), &steps);
}

/// `screenshots` a link to a folder inside the build is read through (found open at f04aa61:
/// OBS-10, OBS-11 FAILed).
#[test]
fn linked_screenshots_folder() {
    let style = Style {
        linked_shots: true,
        ..plain()
    };
    assert_agrees(&style, &main_to(Phase::P3C, Verdict::Ship));
}

/// An auditor spawned before the scan, the spawn column headed `Spawned at`: OBS-01 FAILs (found
/// open at f04aa61: the column was not found).
#[test]
fn spawned_at_header_hides_an_early_spawn() {
    let style = Style {
        spawned: "Spawned at",
        ..plain()
    };
    assert_agrees(
        &style,
        &main_with(Phase::P3B, Plant::SpawnEarly(false), Writer::Atomic),
    );
}

/// The REFINE builder prompt is the Pass-1 prompt on one line: OBS-06 FAILs (found open at
/// f04aa61).
#[test]
fn refine_prompt_one_line() {
    let mut steps = refine_to(Phase::RInputs);
    steps.extend(plant(
        Plant::SamePrompt(SamePrompt::OneLine),
        Writer::Atomic,
    ));
    steps.extend(ph(Phase::RBuild));
    assert_agrees(&plain(), &steps);
}

/// The REFINE builder prompt is the Pass-1 prompt re-wrapped: OBS-06 FAILs (found open at
/// f04aa61).
#[test]
fn refine_prompt_rewrapped() {
    let mut steps = refine_to(Phase::RInputs);
    steps.extend(plant(
        Plant::SamePrompt(SamePrompt::Rewrapped),
        Writer::Atomic,
    ));
    steps.extend(ph(Phase::RBuild));
    assert_agrees(&plain(), &steps);
}

/// An honest REFINE round, atomic writers.
#[test]
fn honest_refine_round_agrees() {
    assert_agrees(&plain(), &refine_to(Phase::R3C));
}

/// Runs each case on its own; fails naming every case that disagrees.
fn assert_all_agree(cases: &[(String, Style, Vec<Step>)]) {
    let mut bad = Vec::new();
    for (name, style, steps) in cases {
        let o = runner::execute(0x0123_4567, style, steps);
        if !o.failures.is_empty() {
            let classes: Vec<String> = o.failures.iter().map(runner::Failure::class).collect();
            bad.push(format!("{name}: {}", classes.join(", ")));
            // The details go to the test's output (shown when it fails).
            for f in &o.failures {
                eprintln!(
                    "{name}: after step {}: {} — {}",
                    f.step,
                    f.class(),
                    f.detail
                );
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {} disagree:\n{}",
        bad.len(),
        cases.len(),
        bad.join("\n")
    );
}

/// A BV result FAIL as a human reads it, written with markup, an entity or look-alike letters.
#[test]
fn tracker_fail_spelled_as_seen() {
    let cases: Vec<_> = Spell::MARKDOWN
        .iter()
        .filter(|sp| !matches!(sp, Spell::Plain | Spell::Bold))
        .map(|sp| {
            (
                format!("{sp:?}"),
                plain(),
                main_until(
                    Phase::P2,
                    Phase::P1,
                    Plant::BvFail(2, FailForm::Word(*sp)),
                    Writer::Atomic,
                ),
            )
        })
        .collect();
    assert_all_agree(&cases);
}

/// A struck value is not the value: `~~PASS~~ FAIL` is FAIL, a struck PASS is no result.
#[test]
fn struck_value_is_read() {
    let mut cases = Vec::new();
    for f in [FailForm::StrikePass, FailForm::DelPass, FailForm::SPass] {
        cases.push((
            format!("{f:?}"),
            plain(),
            main_until(Phase::P2, Phase::P1, Plant::BvFail(2, f), Writer::Atomic),
        ));
    }
    for f in [EmptyForm::Strike, EmptyForm::Del, EmptyForm::S] {
        cases.push((
            format!("{f:?}"),
            plain(),
            main_until(Phase::P2, Phase::P1, Plant::BvEmpty(3, f), Writer::Atomic),
        ));
    }
    assert_all_agree(&cases);
}

/// Rows inside an indented code block or `<pre>` are not tracker rows.
#[test]
fn rows_in_indented_code_and_pre() {
    let mut cases = Vec::new();
    for d in [Decoy::Indent, Decoy::Pre] {
        cases.push((
            format!("decoy {d:?}"),
            plain(),
            main_until(
                Phase::P2,
                Phase::P1,
                Plant::BvFail(2, FailForm::Decoy(d)),
                Writer::Atomic,
            ),
        ));
    }
    for f in [EmptyForm::InIndent, EmptyForm::InPre] {
        cases.push((
            format!("{f:?}"),
            plain(),
            main_until(Phase::P2, Phase::P1, Plant::BvEmpty(3, f), Writer::Atomic),
        ));
    }
    assert_all_agree(&cases);
}

/// A BV row in a `## Planned Schedule` section above the record does not hide the recorded
/// FAIL: a field written in several rows is read in every one (OBS-18 FAILs).
#[test]
fn planned_schedule_section_does_not_hide_a_bv_fail() {
    assert_agrees(
        &plain(),
        &main_until(
            Phase::P2,
            Phase::P1,
            Plant::BvFail(2, FailForm::Decoy(Decoy::Section)),
            Writer::Atomic,
        ),
    );
}

/// JSON keys that read the same are the same key: a look-alike `source` is `source`, a
/// look-alike second `result` is a duplicate.
#[test]
fn json_keys_read_as_seen() {
    let mut cases = Vec::new();
    for sp in Spell::JSON.iter().filter(|sp| **sp != Spell::Plain) {
        let m = ManualForm {
            word: "manual",
            spell: Spell::Plain,
            key: *sp,
            entry: 5,
        };
        cases.push((
            format!("source key {sp:?}"),
            plain(),
            main_until(
                Phase::P3B,
                Phase::P3A,
                Plant::Manual(false, m),
                Writer::Atomic,
            ),
        ));
    }
    for sp in [Spell::Cyrillic, Spell::Fullwidth, Spell::ZeroWidth] {
        let f = InvalidForm::LookalikeKey(sp);
        cases.push((
            format!("result key {sp:?}"),
            plain(),
            main_until(
                Phase::P3B,
                Phase::P3A,
                Plant::Invalid(false, f),
                Writer::Atomic,
            ),
        ));
    }
    assert_all_agree(&cases);
}

/// A word under a right-to-left override, or in small capitals, is the word a human sees.
#[test]
fn bidi_and_small_capitals_read_as_seen() {
    let mut cases = Vec::new();
    for sp in [Spell::Bidi, Spell::SmallCaps] {
        let m = ManualForm {
            word: "manual",
            spell: sp,
            key: Spell::Plain,
            entry: 5,
        };
        cases.push((
            format!("source {sp:?}"),
            plain(),
            main_until(
                Phase::P3B,
                Phase::P3A,
                Plant::Manual(false, m),
                Writer::Atomic,
            ),
        ));
        cases.push((
            format!("GR-12 {sp:?}"),
            plain(),
            main_until(
                Phase::P3BInt,
                Phase::P3B,
                Plant::Vocab(false, 'C', 1, sp),
                Writer::Atomic,
            ),
        ));
        let mut steps = refine_to(Phase::RInputs);
        steps.extend(plant(Plant::Prohibited(0, 0, sp), Writer::Atomic));
        steps.extend(ph(Phase::RBuild));
        cases.push((format!("fix {sp:?}"), plain(), steps));
    }
    assert_all_agree(&cases);
}

/// A zero-byte or text `cold-look.png` is not a screenshot.
#[test]
fn screenshot_that_is_not_an_image() {
    let cases: Vec<_> = [ShotsForm::ZeroByte, ShotsForm::TextFile]
        .into_iter()
        .map(|f| {
            (
                format!("{f:?}"),
                plain(),
                main_until(
                    Phase::P3B,
                    Phase::P3A,
                    Plant::Shots(false, f),
                    Writer::Atomic,
                ),
            )
        })
        .collect();
    assert_all_agree(&cases);
}

/// The tracker saved the ways editors save, or streamed, beside a live referee: no STOP.
#[test]
fn live_no_stop_on_editor_saved_tracker() {
    let cases: Vec<_> = [
        Writer::Stream,
        Writer::EditorBackup,
        Writer::EditorRemove,
        Writer::Emacs,
        Writer::Truncate,
        Writer::Chunked,
        Writer::Dd,
        Writer::Cp,
        Writer::CpA,
        Writer::Tar,
    ]
    .into_iter()
    .map(|w| {
        let mut steps = Vec::new();
        for &p in Phase::MAIN {
            steps.extend(phw(p, Writer::Atomic, w));
        }
        (format!("{w:?}"), live(), steps)
    })
    .collect();
    assert_all_agree(&cases);
}

/// Auditor reports written by PowerShell 5.1 (UTF-16LE with a BOM) are read as text.
#[test]
fn auditor_reports_utf16_powershell() {
    let mut steps = main_to(Phase::P3A, Verdict::Ship);
    steps.extend(phw(Phase::P3B, Writer::PowerShell, Writer::Atomic));
    steps.extend(ph(Phase::P3BInt));
    steps.extend(ph(Phase::P3C));
    assert_agrees(&plain(), &steps);
}

/// A gate file changed through a hard link from outside the build: `status --sync` must judge
/// it before it answers (class `eventless-write-unseen`: the referee compares what it judged
/// with the files' stat identity before it acknowledges, and at each heartbeat).
#[test]
fn hard_link_write_seen_by_sync() {
    let m = ManualForm {
        word: "manual",
        spell: Spell::Plain,
        key: Spell::Plain,
        entry: 5,
    };
    assert_agrees(
        &live(),
        &main_with(Phase::P3A, Plant::Manual(false, m), Writer::HardLink),
    );
}

/// A tenth auditor report, then the integrative report, beside a live referee: the STOP and
/// `verify` name the same checks.
#[test]
fn tenth_auditor_live_and_verify_agree() {
    let mut steps = main_to(Phase::P3B, Verdict::Ship);
    steps.extend(plant(Plant::ExtraAuditor(false), Writer::EditorBackup));
    steps.extend(phw(Phase::P3BInt, Writer::Stream, Writer::Atomic));
    steps.extend(ph(Phase::P3C));
    // It depends on when the live referee looks: four tries.
    let cases: Vec<_> = (0..4)
        .map(|k| (format!("try {k}"), live(), steps.clone()))
        .collect();
    assert_all_agree(&cases);
}

/// The Pass-1 builder prompt saved by PowerShell (UTF-16LE), the REFINE prompt the same words:
/// OBS-06 FAILs.
#[test]
fn builder_prompt_utf16_powershell() {
    let mut steps = main_to(Phase::P1, Verdict::Ship);
    steps.extend(phw(Phase::P2, Writer::PowerShell, Writer::Atomic));
    for &p in &Phase::MAIN[3..] {
        let [mut a, b] = ph(p);
        if let Step::Phase { verdict, .. } = &mut a {
            if p == Phase::P3C {
                *verdict = Verdict::Refine;
            }
        }
        steps.extend([a, b]);
    }
    steps.extend(ph(Phase::RInputs));
    steps.extend(plant(Plant::SamePrompt(SamePrompt::Exact), Writer::Atomic));
    steps.extend(ph(Phase::RBuild));
    assert_agrees(&plain(), &steps);
}

/// Gate results cut short beside a live referee: the STOP and `verify` name the same checks,
/// OBS-24 FAIL and OBS-27 INCONCLUSIVE (its entries cannot be read for their source), which
/// blocks like a FAIL (class `unreadable-gates-live-obs27`: the simulator counted FAIL alone).
#[test]
fn truncated_gate_results_live_and_verify_agree() {
    let mut steps = main_to(Phase::P3A, Verdict::Ship);
    steps.extend(plant(
        Plant::Invalid(false, InvalidForm::Truncated),
        Writer::Atomic,
    ));
    steps.extend(ph(Phase::P3B));
    assert_agrees(&live(), &steps);
}

/// Gate results with trailing garbage, its neighbour: the same two checks block, live and in
/// `verify`.
#[test]
fn trailing_garbage_gate_results_live_and_verify_agree() {
    let mut steps = main_to(Phase::P3A, Verdict::Ship);
    steps.extend(plant(
        Plant::Invalid(false, InvalidForm::TrailingGarbage),
        Writer::Atomic,
    ));
    steps.extend(ph(Phase::P3B));
    assert_agrees(&live(), &steps);
}

/// An honest run whose tracker is saved truncate-then-write (and streamed, chunked, by Emacs)
/// beside a live referee on a heavily loaded machine: the live STOP once named OBS-01 (seed
/// `0xd105eed0044`) or OBS-15, OBS-01, R:OBS-05, R:OBS-06 (`0xd105eed008c`) from a half-saved
/// tracker, in 2 of 200 runs while two `bench-fast` builds ran beside the suite; neither repeated
/// when run again. The referee had read the tracker ahead of the events of its save: a
/// judgment now passes the barrier (`daemon::driver::barrier`) before it publishes. Four tries
/// of the first run's steps.
#[test]
fn honest_tracker_saves_under_load_never_stop() {
    let w = |phase, writer, tracker| Step::Phase {
        phase,
        writer,
        tracker,
        verdict: Verdict::Ship,
    };
    let steps = vec![
        w(Phase::P0, Writer::EditorBackup, Writer::Emacs),
        Step::Boundary,
        w(Phase::P1, Writer::Atomic, Writer::Crlf),
        Step::Boundary,
        w(Phase::P2, Writer::Truncate, Writer::Stream),
        Step::Boundary,
        w(Phase::P3A, Writer::Rsync, Writer::Truncate),
        Step::Boundary,
        Step::Noise(Noise::RefineName),
        w(Phase::P3B, Writer::Chunked, Writer::Truncate),
        Step::Boundary,
        w(Phase::P3BInt, Writer::Stream, Writer::Cp),
        Step::Boundary,
        Step::Noise(Noise::RefineName),
        w(Phase::P3C, Writer::Emacs, Writer::Crlf),
        Step::Boundary,
    ];
    let style = Style {
        spawned: "Spawned (UTC)",
        verdict: VerdictStyle::Plain,
        ..live()
    };
    let cases: Vec<_> = (0..4)
        .map(|k| (format!("try {k}"), style.clone(), steps.clone()))
        .collect();
    assert_all_agree(&cases);
}

/// The REFINE builder prompt replaced by the Pass-1 prompt, saved by Emacs, beside a live
/// referee: `status --sync` and `verify` give the same answer at the boundary.
#[test]
fn sync_waits_for_an_editor_save_to_settle() {
    let mut steps = refine_to(Phase::RInputs);
    steps.extend(plant(Plant::SamePrompt(SamePrompt::Exact), Writer::Emacs));
    // It depends on when the live referee looks: four tries.
    let cases: Vec<_> = (0..4)
        .map(|k| (format!("try {k}"), live(), steps.clone()))
        .collect();
    assert_all_agree(&cases);
}

// ---- classes that were the simulator's own reading, fixed in the reference ----------------

/// A REFINE builder spawned at the Pass-1 builder's time is also spawned before the BEFORE
/// checklist: OBS-05 FAILs beside OBS-06 (the reference once expected OBS-06 alone).
#[test]
fn same_spawn_also_breaks_the_refine_order() {
    let mut steps = refine_to(Phase::RInputs);
    steps.extend(ph(Phase::RBuild));
    steps.extend(plant(Plant::SameSpawn, Writer::Atomic));
    steps.extend(ph(Phase::R3A));
    assert_agrees(&plain(), &steps);
}

/// A tenth auditor report: OBS-19 FAILs, OBS-20 (and in pass R OBS-09) may FAIL with it.
#[test]
fn tenth_auditor_report() {
    assert_agrees(
        &plain(),
        &main_with(Phase::P3B, Plant::ExtraAuditor(false), Writer::Atomic),
    );
    let mut steps = refine_to(Phase::R3B);
    steps.extend(plant(Plant::ExtraAuditor(true), Writer::Atomic));
    steps.extend(ph(Phase::R3BInt));
    steps.extend(ph(Phase::R3C));
    assert_agrees(&plain(), &steps);
}

/// Every open class names a regression test that exists here and is ignored with its class.
#[test]
fn every_open_class_has_its_ignored_test() {
    let src = include_str!("regress.rs");
    for o in crate::known_open::KNOWN_OPEN {
        let at = src
            .find(&format!("fn {}()", o.test))
            .unwrap_or_else(|| panic!("{}: no test `{}` in regress.rs", o.class, o.test));
        let before = &src[..at];
        let attrs = &before[before.rfind("#[test]").unwrap_or(0)..];
        assert!(
            attrs.contains(&format!("#[ignore = \"open: {},", o.class)),
            "{}: `{}` is not ignored with its class",
            o.class,
            o.test
        );
    }
}

/// The build directory restored from a copy at its own path between phases (`cp -a`, renames),
/// watched live with the screenshots folder a link inside the build: every `status --sync`
/// waits for the referee to re-attach to the copy and agrees with the reference (found open at
/// be28636: `status --sync` answered 3, "no live referee watches", at the boundary after the
/// copy).
#[test]
fn copy_back_of_the_build_directory_live() {
    let style = Style {
        linked_shots: true,
        ..live()
    };
    let mut steps = Vec::new();
    for &p in Phase::MAIN {
        steps.extend(ph(p));
        if matches!(p, Phase::P1 | Phase::P3A | Phase::P3BInt) {
            steps.push(Step::Noise(Noise::CopyBack));
            steps.push(Step::Boundary);
        }
    }
    assert_agrees(&style, &steps);
}

/// A violation in the build directory, then the directory restored from a copy of itself: the
/// STOP stands for the copy too.
#[test]
fn copy_back_keeps_a_violation_live() {
    let m = ManualForm {
        word: "manual",
        spell: Spell::Plain,
        key: Spell::Plain,
        entry: 3,
    };
    let mut steps = main_until(
        Phase::P3A,
        Phase::P3A,
        Plant::Manual(false, m),
        Writer::Atomic,
    );
    steps.push(Step::Noise(Noise::CopyBack));
    steps.push(Step::Boundary);
    assert_agrees(&live(), &steps);
}

/// Two scroll screenshots left of eight, the others removed by an editor-style writer through
/// the linked screenshots folder, watched live: OBS-11 waits for its deadline; a screenshot
/// removed between the listing and the look at its first bytes is not counted as one of the
/// wrong format (found by the simulator at seed `0x7b12c976`: a live STOP for OBS-11, "7 files
/// match, 2 begin with the png signature"; the deterministic test is
/// `checks::tests::a_screenshot_removed_after_the_listing_is_not_counted_and_not_wrong`).
#[test]
fn scroll_screenshots_removed_through_a_linked_folder_live() {
    let style = Style {
        linked_shots: true,
        ..live()
    };
    let steps = main_until(
        Phase::P3A,
        Phase::P3A,
        Plant::Shots(false, ShotsForm::TwoScrolls),
        Writer::EditorBackup,
    );
    assert_agrees(&style, &steps);
}

/// The build directory restored from a copy of itself in the REFINE round, watched live: every
/// `status --sync` after the copy answers for the copy (seed `0xd105eed0041`: 3 at the next two
/// boundaries, in a CI run under load; open, see `known_open.rs`).
#[test]
#[ignore = "open: no-live:status-sync after a copy-back, seed 0xd105eed0041 under load"]
fn copy_back_in_the_refine_round_live() {
    let mut steps = refine_to(Phase::RInputs);
    steps.push(Step::Noise(Noise::CopyBack));
    for &p in Phase::REFINE.iter().filter(|p| **p > Phase::RInputs) {
        steps.extend(ph(p));
    }
    assert_agrees(&live(), &steps);
}
