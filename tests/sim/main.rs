//! A session simulator for the code-change referee: random sessions of honest and hostile
//! steps with real files and real git, each judged by the referee (one-shot `verify`, and for a
//! share of sessions a live `watch` with `verify` on its state) and by a reference model
//! written from the contract alone. Every disagreement is a finding; each class found is a
//! named regression test below and a row of [`KNOWN_OPEN`].
//!
//! `cargo test --test sim` runs `SIM_SESSIONS` sessions (default 300) on `SIM_THREADS` threads;
//! `SIM_SEED=N cargo test --test sim -- sim --exact --nocapture` replays one session, `SIM_KEEP=0,3,5`
//! keeps only those steps of it (the shrinker prints the command), `SIM_ALL=1` includes the
//! known open classes. `bench/sim-code-change.sh` runs the long version.

// Test code unwraps freely: a failed unwrap is a failed session, with its place.
#![allow(clippy::unwrap_used, reason = "test code")]

mod model;
mod session;
mod world;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use session::{Act, Disagreement, Plan, Session, Setup};
use world::Caps;

/// A class of disagreement the simulator found and nobody has fixed yet. Random sessions
/// either leave out the step kind that always produces it (`act`), or recognise it by what the
/// referee answered (`seen`): such a session ends there and is counted under the class instead
/// of failing the run. Its regression test (ignored until fixed) reproduces it, and
/// `SIM_ALL=1` turns both off.
#[derive(Debug)]
pub struct Open {
    pub class: &'static str,
    /// The step kind that produces it (by `Act::name`), or `""`.
    pub act: &'static str,
    /// Whether only live sessions leave the step out.
    pub live_only: bool,
    /// How a disagreement of this class reads.
    pub seen: Option<fn(&Disagreement) -> bool>,
    pub test: &'static str,
}

/// None open: the last, `renamed_task_approved`, was the neighbour of `live_keeps_stale_verdict`
/// and closed with it.
pub const KNOWN_OPEN: &[Open] = &[];

/// The open class a disagreement belongs to, unless `SIM_ALL` is set.
fn known(d: &Disagreement) -> Option<&'static str> {
    if std::env::var_os("SIM_ALL").is_some() {
        return None;
    }
    KNOWN_OPEN
        .iter()
        .find(|o| o.seen.is_some_and(|f| f(d)))
        .map(|o| o.class)
}

fn excluded(act: &Act, setup: &Setup) -> bool {
    if std::env::var_os("SIM_ALL").is_some() {
        return false;
    }
    KNOWN_OPEN
        .iter()
        .any(|o| !o.act.is_empty() && o.act == act.name() && (!o.live_only || setup.live))
}

/// A failing session and its shrunk steps.
type Failed = (Outcome, Option<Plan>);

/// What one session came to.
#[derive(Debug)]
pub struct Outcome {
    pub plan: Plan,
    pub result: Result<(), Disagreement>,
    pub stats: session::Stats,
}

/// Runs one planned session from a fresh workspace.
pub fn run_plan(plan: &Plan, caps: Caps) -> Outcome {
    let mut s = Session::new(plan.setup, caps);
    let mut result = s.begin();
    if result.is_ok() {
        for (i, a) in plan.acts.iter().enumerate() {
            if let Err(d) = s.step(i, *a) {
                result = Err(d);
                break;
            }
        }
    }
    if result.is_ok() {
        result = s.finish(plan.acts.last() == Some(&Act::Judge));
    } else {
        let _ = s.w.stop_live(libc::SIGKILL);
    }
    Outcome {
        plan: plan.clone(),
        result,
        stats: s.stats.clone(),
    }
}

/// The class a disagreement belongs to: its kind and the last non-structural step before it.
pub fn class_of(plan: &Plan, d: &Disagreement) -> String {
    let upto = d.step.min(plan.acts.len());
    let trigger = plan.acts[..upto]
        .iter()
        .rev()
        .find(|a| !a.structural())
        .map(|a| a.name())
        .unwrap_or_else(|| "start".into());
    format!("{}:{trigger}", d.kind)
}

/// Removes steps while the session still fails with the same kind of disagreement.
pub fn shrink(plan: &Plan, caps: Caps, kind: &str, budget: Duration) -> Plan {
    let started = Instant::now();
    let mut best = plan.clone();
    let mut chunk = best.acts.len().div_ceil(2).max(1);
    while chunk >= 1 && started.elapsed() < budget {
        let mut i = 0;
        let mut progressed = false;
        while i < best.acts.len() && started.elapsed() < budget {
            let mut cand = best.clone();
            let end = (i + chunk).min(cand.acts.len());
            cand.acts.drain(i..end);
            let o = run_plan(&cand, caps);
            if matches!(&o.result, Err(d) if d.kind == kind) {
                best = cand;
                progressed = true;
            } else {
                i += chunk;
            }
        }
        if chunk == 1 && !progressed {
            break;
        }
        chunk = if chunk == 1 { 1 } else { chunk / 2 };
        if chunk == 1 && !progressed && best.acts.len() > 40 {
            break;
        }
    }
    best
}

fn keep_indices(plan: &Plan, small: &Plan) -> String {
    // The indices of the small plan's steps in the original (both are in order).
    let mut out = Vec::new();
    let mut j = 0;
    for (i, a) in plan.acts.iter().enumerate() {
        if j < small.acts.len() && small.acts[j] == *a {
            out.push(i.to_string());
            j += 1;
        }
    }
    out.join(",")
}

/// User and system CPU time of this process or of its waited-for children, in seconds.
fn cpu_seconds(who: libc::c_int) -> f64 {
    // SAFETY: getrusage fills the struct it is given.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    if unsafe { libc::getrusage(who, &mut ru) } != 0 {
        return 0.0;
    }
    let t = |tv: libc::timeval| tv.tv_sec as f64 + tv.tv_usec as f64 / 1e6;
    t(ru.ru_utime) + t(ru.ru_stime)
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// The plan for a seed, with `SIM_KEEP` applied.
fn plan_for(seed: u64, caps: Caps, live_share: f64) -> Plan {
    let mut plan = session::generate(seed, caps, live_share, &excluded);
    if let Ok(keep) = std::env::var("SIM_KEEP") {
        let idx: Vec<usize> = keep
            .split(',')
            .filter_map(|s| s.trim().parse().ok())
            .collect();
        plan.acts = idx
            .iter()
            .filter_map(|i| plan.acts.get(*i).copied())
            .collect();
    }
    plan
}

/// The random run: `SIM_SESSIONS` sessions from `SIM_START` (or the one `SIM_SEED`), on
/// `SIM_THREADS` threads; prints the counts and, for each failing session, its seed, the
/// command that replays it and its shrunk step list.
fn run_many() -> Result<(), String> {
    let caps = Caps::detect();
    let live_share: f64 = std::env::var("SIM_LIVE_SHARE")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.05);
    let (first, count) = match std::env::var("SIM_SEED").ok().and_then(|s| s.parse().ok()) {
        Some(seed) => (seed, 1),
        None => (env_u64("SIM_START", 1), env_u64("SIM_SESSIONS", 300)),
    };
    let threads = env_u64(
        "SIM_THREADS",
        std::thread::available_parallelism()
            .map_or(2, |n| n.get() as u64)
            .clamp(2, 4)
            * 3,
    );
    let shrink_on = std::env::var_os("SIM_NO_SHRINK").is_none();
    let next = Arc::new(AtomicU64::new(first));
    let actions = Arc::new(AtomicUsize::new(0));
    let fails: Arc<Mutex<Vec<Failed>>> = Arc::default();
    let stats: Arc<Mutex<session::Stats>> = Arc::default();
    let open_seen: Arc<Mutex<BTreeMap<&'static str, usize>>> = Arc::default();
    let shrunk = Arc::new(AtomicUsize::new(0));
    let panicked: Arc<Mutex<Vec<(u64, String)>>> = Arc::default();
    let started = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            let (next, actions, fails, stats, open_seen, shrunk, panicked) = (
                next.clone(),
                actions.clone(),
                fails.clone(),
                stats.clone(),
                open_seen.clone(),
                shrunk.clone(),
                panicked.clone(),
            );
            std::thread::spawn(move || loop {
                let seed = next.fetch_add(1, Ordering::Relaxed);
                if seed >= first + count {
                    break;
                }
                let plan = plan_for(seed, caps, live_share);
                // A session that panics (a bug of the simulator's own steps) is reported with its
                // seed, and the run goes on.
                let o = match std::panic::catch_unwind(|| run_plan(&plan, caps)) {
                    Ok(o) => o,
                    Err(e) => {
                        let why = e
                            .downcast_ref::<String>()
                            .cloned()
                            .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                            .unwrap_or_default();
                        panicked.lock().unwrap().push((seed, why));
                        continue;
                    }
                };
                actions.fetch_add(o.stats.actions, Ordering::Relaxed);
                {
                    let mut s = stats.lock().unwrap();
                    s.judgments += o.stats.judgments;
                    s.late += o.stats.late;
                    s.vetoes += o.stats.vetoes;
                    s.veto_over_1s += o.stats.veto_over_1s;
                    s.veto_ms_max = s.veto_ms_max.max(o.stats.veto_ms_max);
                }
                if let Some(class) = o.result.as_ref().err().and_then(known) {
                    *open_seen.lock().unwrap().entry(class).or_default() += 1;
                } else if let Err(d) = &o.result {
                    // The first ten failures are shrunk (a long run prints the rest as seeds).
                    let small = (shrink_on && shrunk.fetch_add(1, Ordering::Relaxed) < 10)
                        .then(|| shrink(&plan, caps, &d.kind, Duration::from_secs(60)));
                    fails.lock().unwrap().push((o, small));
                }
            })
        })
        .collect();
    for h in handles {
        h.join()
            .map_err(|_| "a session thread panicked".to_string())?;
    }
    let fails = std::mem::take(&mut *fails.lock().unwrap());
    let st = stats.lock().unwrap().clone();
    let mut classes: BTreeMap<String, usize> = BTreeMap::new();
    let mut report = String::new();
    for (o, small) in &fails {
        let Err(d) = &o.result else { continue };
        let shown = small.as_ref().unwrap_or(&o.plan);
        *classes.entry(class_of(shown, d)).or_default() += 1;
        report.push_str(&format!(
            "\n=== disagreement `{}` at step {} of session {}\n{}\nreplay: SIM_SEED={} cargo test --test sim -- sim --exact --nocapture\n",
            d.kind, d.step, o.plan.seed, d.detail.trim_end(), o.plan.seed
        ));
        if let Some(small) = small {
            report.push_str(&format!(
                "shrunk to {} step(s): SIM_SEED={} SIM_KEEP={} cargo test --test sim -- sim --exact --nocapture\n  {small}\n",
                small.acts.len(),
                o.plan.seed,
                keep_indices(&o.plan, small)
            ));
        } else {
            report.push_str(&format!("  {}\n", o.plan));
        }
    }
    let (own, children) = (
        cpu_seconds(libc::RUSAGE_SELF),
        cpu_seconds(libc::RUSAGE_CHILDREN),
    );
    println!(
        "sim: CPU {own:.1} s in the simulator, {children:.1} s in the referee, git and the tools it ran"
    );
    println!(
        "sim: {count} sessions ({} with a first look after the work), {} actions, {} judgments, {} vetoes (slowest {} ms, {} over 1 s) in {:.1?} on {threads} threads; accept {}, accept --commit {}, task open {}; {} disagreement(s)",
        st.late,
        actions.load(Ordering::Relaxed),
        st.judgments,
        st.vetoes,
        st.veto_ms_max,
        st.veto_over_1s,
        started.elapsed(),
        if caps.accept { "on" } else { "off (not in the binary)" },
        if caps.accept_commit { "on" } else { "off (not in the binary)" },
        if caps.task_open { "on" } else { "off (not in the binary)" },
        fails.len()
    );
    for (c, n) in &classes {
        println!("  class {c}: {n}");
    }
    for (c, n) in open_seen.lock().unwrap().iter() {
        println!("  known open class {c}: {n} session(s) ended there");
    }
    for (seed, why) in panicked.lock().unwrap().iter() {
        report.push_str(&format!(
            "\n=== the simulator panicked in session {seed}: {why}\nreplay: SIM_SEED={seed} cargo test --test sim -- sim --exact --nocapture\n"
        ));
    }
    if fails.is_empty() && panicked.lock().unwrap().is_empty() {
        Ok(())
    } else {
        Err(report)
    }
}

#[test]
fn sim() {
    if let Err(report) = run_many() {
        panic!("the referee and the model disagree:{report}");
    }
}

/// The vocabulary holds at least 30 honest and 30 hostile kinds of step.
#[test]
fn vocabulary_is_wide() {
    let v = session::vocabulary();
    let hostile = v.iter().filter(|a| a.hostile()).count();
    let honest = v.len() - hostile;
    assert!(honest >= 30, "{honest} honest kinds");
    assert!(hostile >= 30, "{hostile} hostile kinds");
}

/// Every open class is in docs/simulators.md with its test, and every test named exists in
/// this file as an ignored test.
#[test]
fn open_classes_are_documented() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let doc = std::fs::read_to_string(root.join("docs/simulators.md")).unwrap();
    let code = std::fs::read_to_string(root.join("tests/sim/main.rs")).unwrap();
    let section = doc.split("## Code change").nth(1).unwrap_or("");
    for o in KNOWN_OPEN {
        assert!(
            section.contains(&format!("`{}`", o.class)),
            "{} not in the doc",
            o.class
        );
        assert!(
            section.contains(&format!("`{}`", o.test)),
            "{} not in the doc",
            o.test
        );
        assert!(
            code.contains(&format!(
                "#[ignore = \"open: {}, see KNOWN_OPEN\"]\nfn {}()",
                o.class, o.test
            )),
            "{} is not an ignored test of class {}",
            o.test,
            o.class
        );
    }
}

/// Runs a fixed list of steps and fails with the disagreement it finds.
#[allow(dead_code, reason = "used by the regression tests of open classes")]
fn reproduce(live: bool, acts: &[Act]) {
    reproduce_in(
        Setup {
            live,
            submodule: false,
            built: false,
            local: false,
            late: false,
        },
        acts,
    );
}

/// [`reproduce`] in the setup `setup`.
fn reproduce_in(setup: Setup, acts: &[Act]) {
    let plan = Plan {
        seed: 0,
        setup,
        acts: acts.to_vec(),
    };
    let o = run_plan(&plan, Caps::detect());
    if let Err(d) = o.result {
        panic!("`{}` at step {}: {}\n{}", d.kind, d.step, d.detail, plan);
    }
}

// ---- the classes found: one regression test each, ignored while open ----------------------

/// Class `extglob_script_rejected` (fixed): a bash script that enables `extglob` before it
/// uses `@(…)` runs under bash and is judged as bash judges it; `bash -n` over the whole file
/// (before `shopt` has run) used to FAIL CC-05 and REJECT the honest attempt.
#[test]
fn extglob_script_approved() {
    reproduce(false, &[Act::Extglob(0), Act::Record(0), Act::Judge]);
}

/// The orchestrator commits (`git add -A && git commit`; here with nothing to commit, which
/// still writes `.git/COMMIT_EDITMSG`), and a read-only subagent runs `git status` (which
/// refreshes `.git/index`). Class `git_internals_vetoed` (fixed): the default protected glob
/// `.git` (meant for the `.git` entry itself) covered every path under `.git/`, so the referee
/// raised the STOP for `.git/COMMIT_EDITMSG` and REJECTed every pending task.
#[test]
fn git_internals_are_not_vetoed() {
    reproduce(false, &[Act::Commit, Act::Judge]);
}

/// `python -m build` leaves unchanged copies of the sources, protected modules included, under
/// the ignored `build/lib/`, which is honest. Class `build_output_copy_vetoed` (fixed): the
/// referee counted the copy as an added protected path and raised the STOP.
#[test]
fn build_output_copy_is_approved() {
    reproduce(false, &[Act::BuildOutput, Act::Judge]);
}

/// Class `shadow_package_extension_missed` (fixed): `app/roles/__init__.abi3.so` makes `import
/// roles` load the worker's extension module instead of the protected `app/roles.py` (a
/// package wins over a module); it used to raise no STOP.
#[test]
fn shadow_package_extension_vetoed() {
    reproduce(false, &[Act::ShadowPkgSo, Act::Judge]);
}

/// `app/os.py` beside the protected `app/orchestrator.py`, which does `import os`: run from its
/// folder, the orchestrator loads the worker's `os`. Vetoed, in the model and the referee alike.
#[test]
fn import_shadow_vetoed() {
    reproduce(false, &[Act::ShadowImport, Act::Judge]);
}

/// `app/os.abi3.so` there instead, hidden by the `*.so` ignore rule: git shows nothing, CPython
/// loads the extension first. Class `ignored_import_shadow_missed` (fixed): it raised no STOP.
#[test]
fn ignored_import_shadow_vetoed() {
    reproduce(false, &[Act::ShadowImportSo, Act::Judge]);
    reproduce(true, &[Act::ShadowImportSo, Act::Judge]);
}

/// An ignored shadow, judged, then another attempt: vetoed at both judgments. (Planted before
/// the referee's first look, the first judgment used to pin it as the start's, and from the
/// next attempt on it stood unjudged: the integration test
/// `a_shadow_there_at_the_first_look_is_vetoed_at_every_attempt`.)
#[test]
fn an_ignored_shadow_stays_vetoed_at_the_next_attempt() {
    for shadow in [Act::ShadowSo, Act::ShadowImportSo] {
        let acts = [
            shadow,
            Act::Write(0, 3),
            Act::Record(0),
            Act::Judge,
            Act::Write(0, 4),
            Act::Record(0),
            Act::Judge,
        ];
        reproduce(false, &acts);
    }
}

/// The user's gitignored `local_settings.py`, which the orchestrator imports, there when the
/// referee starts: the project's, no shadow (an honest task beside it is APPROVEd); written
/// after the start, by the worker, it is a veto.
#[test]
fn local_settings_there_at_the_start_are_the_users() {
    let setup = |live| Setup {
        live,
        submodule: false,
        built: false,
        local: true,
        late: false,
    };
    for live in [false, true] {
        reproduce_in(setup(live), &[Act::Write(0, 3), Act::Record(0), Act::Judge]);
        reproduce_in(
            setup(live),
            &[
                Act::Write(0, 3),
                Act::LocalSettings,
                Act::Record(0),
                Act::Judge,
            ],
        );
    }
    reproduce(false, &[Act::LocalSettings, Act::Judge]);
}

/// The referee's first look comes after the work (setup `late`, one-shot): what no commit
/// holds and holds code that will run is not dated by that look. A hook or a `!` alias planted
/// with the first attempt is vetoed at that judgment and the next; the hook removed, the next
/// task is approved (its removal since that look is no change). An honest session is approved
/// throughout. (Class of issue 30: a first `verify --write` after the work pinned the planted
/// hook as the start's, and every attempt from then on was APPROVEd.)
#[test]
fn a_first_look_after_the_work_dates_nothing() {
    let late = Setup {
        live: false,
        submodule: false,
        built: false,
        local: false,
        late: true,
    };
    reproduce_in(late, &[Act::Write(0, 3), Act::Record(0), Act::Judge]);
    reproduce_in(
        late,
        &[
            Act::HookPlant,
            Act::Write(0, 3),
            Act::Record(0),
            Act::Judge,
            Act::Write(0, 4),
            Act::Record(0),
            Act::Judge,
        ],
    );
    reproduce_in(
        late,
        &[
            Act::GitConfigAlias,
            Act::ShadowImportSo,
            Act::Write(0, 3),
            Act::Record(0),
            Act::Judge,
        ],
    );
    reproduce_in(
        late,
        &[
            Act::HookPlant,
            Act::Write(0, 3),
            Act::Record(0),
            Act::Judge,
            Act::HookRemove,
            Act::Write(1, 3),
            Act::Record(1),
            Act::Judge,
        ],
    );
}

/// The build's output there when the referee starts, then `rm -rf build dist` and a task.
/// Class `clean_build_vetoed` (fixed): the unchanged copy of the protected module in `build/`
/// was "removed since start", a veto that stopped honest work.
#[test]
fn cleaning_the_build_is_approved() {
    let acts = [
        Act::CleanBuild,
        Act::Write(0, 3),
        Act::Record(0),
        Act::Judge,
    ];
    for live in [false, true] {
        let setup = Setup {
            live,
            submodule: false,
            built: true,
            local: false,
            late: false,
        };
        reproduce_in(setup, &acts);
    }
}

/// Class `guard_diff_spans_workspace` (fixed): two tasks pending at once, each with a broken
/// file of its own, are REJECTed. The kept diff of each attempt (what the loop guards compare)
/// used to be the whole workspace's, so the second was "identical" to the first's rejected one
/// and ESCALATEd (`identical_to_rejected_task`, a STOP), and a second `verify` changed a
/// verdict nothing had changed.
#[test]
fn guard_diff_is_the_tasks_scope() {
    reproduce(
        false,
        &[
            Act::Broken(0),
            Act::Broken(1),
            Act::Record(0),
            Act::Record(1),
            Act::Judge,
        ],
    );
}

/// Class `live_keeps_stale_verdict` (fixed): t2 is judged live while t1's asset is still
/// unclaimed (REJECT, `undeclared_changes`); then t1's record claims it, so t2's scope shrinks.
/// The live referee published a verdict once per attempt and kept REJECT while a one-shot
/// `verify` on its state said APPROVE; it now publishes the attempt's verdict again when it
/// changes.
#[test]
fn live_judges_again_when_a_claim_lands() {
    reproduce(
        true,
        &[
            Act::Asset(0),
            Act::Remove(1, 0),
            Act::Record(1),
            Act::Record(0),
            Act::ExcludePlant,
        ],
    );
}

/// Class `verdict_escalate_got_reject` (the model's, fixed there): a record that cannot be
/// read is REJECTed with no attempt number and counts toward no guard (docs/code-change.md), so
/// after it a task's second numbered REJECT is a REJECT, not the cap's ESCALATE. The model
/// counted it when the live referee happened to judge it before the next record landed.
#[test]
fn a_malformed_record_counts_toward_no_guard() {
    reproduce(
        true,
        &[
            Act::Broken(0),
            Act::Malformed(0),
            Act::Judge,
            Act::Record(0),
            Act::Judge,
            Act::Write(0, 0),
            Act::Record(0),
            Act::Judge,
        ],
    );
}

/// Class `veto_missed_live` (fixed): a protected name written into the referee's own folder
/// (`.referee/roles.py`) is vetoed by a one-shot `verify`, but a live referee took every
/// event under `.referee/` for its own and judged nothing until something else changed. Only
/// its own files there (`OBSERVER-*`, their temp files, `.gitignore`) are passed over now.
#[test]
fn a_protected_name_in_the_referees_folder_is_vetoed_live() {
    reproduce(true, &[Act::ProtInReferee, Act::Judge]);
}

/// Class `not_judged_live` under an escalation (fixed): t1's second attempt, identical to its
/// first, is ESCALATEd, t2's unclaimed edit in its scope; then that file is written again. The
/// live referee holds an
/// escalation (it publishes nothing new while the task does not move on), but `status --task`
/// took the held verdict as stale for its files, and answered no verdict until the
/// orchestrator's wait ran out. An escalation now answers as it stands (found at seed 32427).
#[test]
fn an_escalation_is_answered_after_its_files_change() {
    reproduce(
        true,
        &[
            Act::Broken(0),
            Act::Write(1, 0),
            Act::Record(0),
            Act::Judge,
            Act::Record(0),
            Act::Judge,
            Act::Write(1, 0),
            Act::Judge,
        ],
    );
}

/// Class `false_stop_live` (a model fix): t1's second attempt is first judged over t2's edits
/// no record claims yet (REJECT), then again once t2's record claims them: its diff is now the
/// first attempt's, and the live referee ESCALATEs it and raises the STOP. The model allows
/// either verdict there, but expected the STOP from the one first answered. Found at seed 41746
/// (2,000 sessions from 40000).
#[test]
fn an_escalation_settled_after_the_answer_keeps_its_stop() {
    reproduce(
        true,
        &[
            Act::Crlf(0, 46),
            Act::Broken(0),
            Act::Record(0),
            Act::Judge,
            Act::Write(1, 226),
            Act::RecordInPlace(1),
            Act::Judge,
            Act::CodingLine(1),
            Act::Extglob(1),
            Act::RecordSloppySummary(0),
            Act::Record(1),
            Act::Judge,
        ],
    );
}

/// Class `verdict_escalate_got_` after a PowerShell record is accepted (a simulator and model
/// fix, found in 4,000 sessions from seed 60000, 33 of its 34 disagreements): t1's record is
/// written in UTF-16, judged, accepted; a protected file is then removed. The referee, by
/// design, does not judge an accepted attempt again (its verdict stands until the orchestrator
/// settles the record), but the simulator's orchestrator could not settle a UTF-16 record (it
/// read it as UTF-8), and the model expected the accepted attempt to be judged again. The
/// orchestrator now reads the record as the model does, and the model leaves accepted attempts
/// alone.
#[test]
fn a_powershell_record_accepted_then_vetoed_is_judged() {
    reproduce(
        false,
        &[
            Act::Rename(0, 21),
            Act::RecordUtf16(0),
            Act::Judge,
            Act::Accept(0),
            Act::ProtRemove(222),
            Act::Judge,
        ],
    );
}

/// Class `not_judged_live` for a record that is no attempt (fixed): with tasks opened, a decoy
/// record of a task never opened is REJECTed (`unknown_task`); then t1's file it took in is
/// renamed. A live referee judged such a record (a replay, a task never opened, a malformed
/// one) only at its own event, taking it for a new attempt not yet due, so its verdict stayed
/// stale. It is now judged again with every change, as a judged attempt is.
#[test]
fn a_record_that_is_no_attempt_is_judged_again_live() {
    reproduce(
        true,
        &[
            Act::TaskOpen,
            Act::Write(0, 216),
            Act::Decoy(0),
            Act::Record(0),
            Act::Judge,
            Act::Rename(0, 226),
            Act::Judge,
        ],
    );
}

/// Class `not_judged_live` over a large diff (fixed): t2's first attempt adds a 200 KB file
/// of 3,600 equal lines (REJECT, too large); its second adds an asset beside it. The loop
/// guard's similarity ratio over the two diffs (13 million pairs of equal lines) kept a
/// hash-map insertion per pair and took 14 s in a debug build, so the live referee published
/// no verdict before the orchestrator's wait ran out. It now costs an array write per pair.
#[test]
fn a_second_attempt_over_a_large_diff_is_judged_live() {
    reproduce(
        true,
        &[
            Act::Oversize(1),
            Act::Record(1),
            Act::Judge,
            Act::Asset(1),
            Act::Record(1),
            Act::Judge,
        ],
    );
}

/// Class `not_judged_live` after a restart (fixed): t1 is judged (APPROVE) and the referee
/// restarted; then t2's unclaimed edit joins t1's scope. The restarted referee judged t1 again
/// but compared with the verdicts it had written itself (none yet), so it never published the
/// new one: `status --task t1` said "stale" until the orchestrator's wait ran out. It now
/// starts from the verdicts its state directory holds.
#[test]
fn live_judges_again_after_a_restart() {
    reproduce(
        true,
        &[
            Act::Write(0, 0),
            Act::Record(0),
            Act::Judge,
            Act::Restart,
            Act::Write(1, 0),
            Act::Judge,
        ],
    );
}

/// Class `live_keeps_stale_verdict` (fixed): a live referee judged t1 (APPROVE); then t2's
/// edit, which no record claims yet, joins t1's scope. The live referee kept APPROVE while a
/// one-shot `verify` said REJECT (`undeclared_changes`); a verdict whose scope changed is now
/// judged again and published at once in `watch`.
#[test]
fn live_judges_again_when_the_scope_grows() {
    reproduce(
        true,
        &[
            Act::Write(0, 0),
            Act::Record(0),
            Act::Write(1, 0),
            Act::Judge,
        ],
    );
}

/// `git config alias.st '!sh -c …'` (or `core.hooksPath`) edits the protected `.git/config`:
/// class `live_git_config_missed` (fixed): a one-shot `verify` raised the STOP, a live `watch`
/// did not (not within 30 s), for it never looked at events under `.git/` but `HEAD`'s.
#[test]
fn live_git_config_is_vetoed() {
    reproduce(true, &[Act::GitConfigAlias, Act::Judge]);
}

/// A binary asset is reworked (another image of the same size; both attempts MINOR_ISSUES for
/// their summary). Class `binary_rework_identical_diff` (fixed): the kept diff of a binary
/// file named its path and sizes only, so attempt 2 was "identical" to attempt 1 and
/// ESCALATEd (`identical_diff`) where the contract says MINOR_ISSUES.
#[test]
fn binary_rework_is_another_diff() {
    reproduce(
        false,
        &[
            Act::Asset(1),
            Act::RecordSloppySummary(1),
            Act::Judge,
            Act::Asset(1),
            Act::RecordSloppySummary(1),
            Act::Judge,
        ],
    );
}

/// Class `head_commit_protected_missed` (fixed): `git update-index --chmod=+x
/// app/orchestrator.py` and a commit leave the work tree as it was while HEAD records a
/// protected file with another mode. A new commit that touches a protected path is a veto like
/// an edit; the referee used to log `head_moved` only, APPROVE and raise no STOP.
#[test]
fn head_commit_protected_vetoed() {
    reproduce(false, &[Act::ProtIndexChmodCommitted(0), Act::Judge]);
}

/// Class `not_judged_live` (fixed): a nested repository in a task's scope (`nested/.git`, a
/// folder the referee judges as unreadable) made `status --task` take the verdict as stale
/// forever, so it printed no verdict (with a STOP standing: exit 1 and the STOP only) where the
/// model and a one-shot `verify` judge it.
#[test]
fn verdict_over_a_nested_repository_is_answered() {
    reproduce(
        true,
        &[
            Act::Commit,
            Act::Close(0),
            Act::NoFinalNewline(1, 145),
            Act::NestedRepo,
            Act::Record(1),
            Act::Judge,
            Act::AddPackage(1, 126),
            Act::SedI(1, 196),
        ],
    );
}

/// Class `rejudged_attempt_kept_again` (fixed; the model too): t2's attempt 1 (MINOR_ISSUES,
/// no final newline) goes stale when the worker rewrites another file, and is judged again over
/// the grown scope; attempt 2 then hands in exactly that state. A one-shot `verify --write`
/// kept attempt 1 again as judged the second time, so attempt 2 was "identical" to it and
/// ESCALATEd, and the model did the same; a live `watch` kept attempt 1 as first judged and
/// said MINOR_ISSUES (seeds 1472 and 1576 were live). An attempt is what the worker handed in:
/// the guards compare the next one with it as first judged, whenever the referee looked.
#[test]
fn rework_after_a_rejudged_attempt_is_progress() {
    reproduce(
        true,
        &[
            Act::NoFinalNewline(1, 81),
            Act::Record(1),
            Act::Judge,
            Act::RemoveWrite(1, 158),
            Act::RecordSloppySummary(0),
            Act::Record(1),
            Act::Judge,
        ],
    );
    reproduce(
        false,
        &[
            Act::NoFinalNewline(1, 81),
            Act::Record(1),
            Act::Judge,
            Act::RemoveWrite(1, 158),
            Act::Judge,
            Act::Record(1),
            Act::Judge,
        ],
    );
}

/// Class `replay_escapes_reject_cap` (fixed): t1 is REJECTed twice (a broken file, attempts 1
/// and 2), then its record is replayed as attempt 1. The replay is REJECTed (CC-00) and is the
/// task's third judged REJECT, which the cap turns into ESCALATE whatever the record's
/// `attempt` says; the referee skipped every guard for a replay and answered REJECT, so a
/// worker could keep resubmitting under old numbers without a human ever being asked. Found
/// live with a restart (seed 1203); the restart played no part.
#[test]
fn replay_counts_toward_the_reject_cap() {
    let acts = [
        Act::Broken(0),
        Act::Record(0),
        Act::Judge,
        Act::Write(0, 5),
        Act::Record(0),
        Act::Judge,
        Act::Replay(0),
        Act::Judge,
    ];
    reproduce(false, &acts);
    reproduce(true, &acts);
}

/// Class `deep_path_stale_forever` (fixed): a protected name deeper than `PATH_MAX` (judged
/// through descriptors, so the verdict holds its hash) made `status --task` and `accept` take
/// the verdict as stale for good: they looked at the path with one system call, which fails
/// (`ENAMETOOLONG`), so the file read as unreadable, not as judged. The live referee gave no
/// verdict where the model and a one-shot `verify` give REJECT (seeds 1848, 1870).
#[test]
fn verdict_over_a_deep_path_is_answered() {
    reproduce(true, &[Act::Rename(2, 99), Act::DeepPath, Act::Record(2)]);
}

/// Class `renamed_task_approved` (fixed): a renamed task (`t1-retry`) was APPROVEd at the end
/// of a session although `package-lock.json`, regenerated after its judgment and claimed by no
/// record, is in its scope (the model: REJECT, `undeclared_changes`). Not about the name: the
/// lock file joins the scope after the verdict, and the live referee now judges an attempt again
/// when its scope grows (class `live_keeps_stale_verdict`).
#[test]
fn renamed_task_is_judged_again_when_its_scope_grows() {
    reproduce(
        true,
        &[
            Act::Asset(0),
            Act::BuildOutput,
            Act::RenameTask(0),
            Act::Record(0),
            Act::Judge,
            Act::LockRegen(1),
        ],
    );
}

/// pytest's and ruff's caches each carry a `.gitignore` of `*`, so `git status` shows neither
/// folder and an honest record lists neither. Class `tool_cache_unlisted` (fixed): the referee
/// read only the baseline's ignore rules and REJECTed the record for the caches' files
/// (`unlisted: .pytest_cache/…`); live, a cache's `.gitignore` written after its other files is
/// seen too.
#[test]
fn tool_caches_that_ignore_themselves_are_approved() {
    let acts = [Act::Write(0, 3), Act::ToolCache, Act::Record(0), Act::Judge];
    reproduce(false, &acts);
    reproduce(true, &acts);
}

/// t1's link (APPROVEd) is left dangling when t2 removes the file it leads to; t1's next
/// attempt hands in the same link. Class `verdict_escalate_got_reject` (the model's, fixed
/// there; seed 81690): the model took the link's text for its diff both times and escalated
/// an identical resubmission; the referee cannot read a link that leads nowhere, so that
/// attempt's diff is "cannot be read", not the text of the one it approved, and it REJECTs
/// with the link named (CC-05 INCONCLUSIVE).
#[test]
fn a_link_another_task_left_dangling_is_no_identical_resubmission() {
    reproduce(
        false,
        &[
            Act::AddLink(0, 34),
            Act::Record(0),
            Act::Judge,
            Act::Remove(1, 11),
            Act::RecordUtf16(0),
            Act::RecordHalf(1),
        ],
    );
}

/// A worker lists its new package as `git status` shows it: one untracked `pkg_t1_2/`, not
/// its files (step `RecordFolders`). Found by hand (REJECTed: the folder a phantom, its files
/// unlisted); a listed new folder names the additions beneath it now, one-shot and live.
#[test]
fn a_new_folder_listed_as_git_status_shows_it_is_approved() {
    let acts = [
        Act::AddPackage(0, 2),
        Act::Write(0, 3),
        Act::RecordFolders(0),
        Act::Judge,
    ];
    reproduce(false, &acts);
    reproduce(true, &acts);
}

/// A worker that ran the build lists what it made (`dist/…`, `build/`) beside its edit (step
/// `RecordOutput`). Found by hand (REJECTed: each a phantom, "not changed"); a listing of what
/// git ignores claims nothing now.
#[test]
fn a_record_that_lists_its_build_output_is_approved() {
    let acts = [
        Act::Write(0, 3),
        Act::BuildOutput,
        Act::RecordOutput(0),
        Act::Judge,
    ];
    reproduce(false, &acts);
    reproduce(true, &acts);
}

/// A package beside the protected modules that ignores itself (`app/helpers/` with a
/// `.gitignore` of `*` and an `__init__.py`), unlisted. Class `self_ignore_hides_code`
/// (fixed): the referee honoured that `.gitignore` as a tool cache's and APPROVEd; a folder an
/// `import` reaches by name may not ignore itself now, so it is the change the record omits.
#[test]
fn a_package_that_ignores_itself_is_a_change() {
    let acts = [
        Act::Write(0, 3),
        Act::SelfIgnorePkg,
        Act::Record(0),
        Act::Judge,
    ];
    reproduce(false, &acts);
    reproduce(true, &acts);
}

/// A record that lists every path the worker wrote, its own file among them, hashed as it was
/// before its hash was put in. Class `record_lists_itself` (fixed): the referee REJECTed it
/// (`phantom: .tasks/t1.json`); what a record lists in `.git/`, `.tasks/` or `.referee/`
/// claims nothing now.
#[test]
fn a_record_that_lists_itself_is_approved() {
    let acts = [Act::Write(0, 3), Act::RecordSelf(0), Act::Judge];
    reproduce(false, &acts);
    reproduce(true, &acts);
}

/// An attempt that changes nothing, APPROVEd, then another that changes nothing with a sloppy
/// summary (MINOR_ISSUES). Class `empty_resubmission_escalated` (fixed, seed 73257): the
/// identical-diff guard took the second empty change for a resubmission of the first and
/// ESCALATEd it; an empty change repeats no work.
#[test]
fn an_empty_resubmission_is_not_escalated() {
    let acts = [
        Act::ChmodX(0),
        Act::ChmodX(0),
        Act::Record(0),
        Act::Judge,
        Act::RecordSloppySummary(0),
        Act::Judge,
    ];
    reproduce(false, &acts);
    reproduce(true, &acts);
}

/// Attempt 3 ESCALATEd as identical to attempt 1, then judged again after a shadow of the
/// protected module landed: another guard (convergence) would escalate it now. Class
/// `escalation_renamed_on_rejudge` (fixed, seeds 72507, 77859): the referee published
/// `ESCALATE_CONVERGENCE` over the first `ESCALATE`; the first escalation stands as decided.
#[test]
fn an_escalation_keeps_its_guard_when_judged_again() {
    reproduce(
        false,
        &[
            Act::SedI(0, 167),
            Act::AddModule(0, 251),
            Act::Secret(0),
            Act::Record(0),
            Act::Judge,
            Act::RecordSloppySummary(0),
            Act::RecordUtf16(0),
            Act::Judge,
            Act::ShadowPkgSo,
            Act::Judge,
        ],
    );
}
