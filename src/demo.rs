//! `referee demo`: the live referee beside a pipeline, in about fifteen seconds. It starts the
//! watch daemon in-process on an empty directory, replays the embedded demo timeline (a D10 run
//! whose hand-entered gate result raises STOP and whose re-run gate results resolve it) into that
//! directory, and narrates both sides as they happen: each pipeline step, each pass the referee
//! runs, STOP raised (with the evidence the orchestrator reads) and resolved, and at the end where
//! the report is and what it says. The exit code is the daemon's.
//!
//! `referee demo code-change` does the same for the code-change protocol: the timeline's steps
//! at 0 s (the project) are written first, the referee starts on that workspace (its start
//! snapshot is the baseline), and the rest replays a worker's task attempts; once the last one
//! is judged, the demo asks the referee to finish, as an orchestrator would at the end of its run.
//!
//! This module only connects [`crate::replay`] and [`crate::daemon`] and prints. It must not judge
//! anything, write anything but the replay into the demo directory (the daemon writes its own
//! files there), or use a directory that holds anything already.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::daemon::{self, DaemonError, Outcome, Shutdown};
use crate::engine::Status;
use crate::exit::ExitCode;
use crate::outputs::{REPORT_FILE, STOP_FILE};
use crate::replay::{self, PlayOptions, PlaySummary, ReplayError, Timeline};

/// Which recorded run the demo plays, and under which protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Scenario {
    /// A D10 page build (`fixtures/timelines/demo.toml`).
    #[default]
    D10,
    /// A coding agent's task attempts (`fixtures/timelines/code-change.toml`).
    CodeChange,
}

impl Scenario {
    fn timeline(self) -> &'static str {
        match self {
            Scenario::D10 => "demo",
            Scenario::CodeChange => "code-change",
        }
    }

    fn protocol(self) -> &'static str {
        match self {
            Scenario::D10 => crate::protocol::DEFAULT_ID,
            Scenario::CodeChange => "code-change",
        }
    }

    /// Where the referee's own files are: the build directory, or the workspace's `.referee/`.
    fn out_dir(self, dir: &Path) -> PathBuf {
        match self {
            Scenario::D10 => dir.to_path_buf(),
            Scenario::CodeChange => dir.join(crate::workspace::OUTPUT_DIR),
        }
    }

    fn intro(self, dir: &Path, speed: f64, secs: f64) -> String {
        match self {
            Scenario::D10 => format!(
                "referee demo: a D10 pipeline run replayed into {} at speed {speed} (about {secs:.0} s), with the referee watching.\n\
                 One gate result was entered by hand; watch the referee stop the pipeline and let it go once it is fixed.\n",
                dir.display()
            ),
            Scenario::CodeChange => format!(
                "referee demo code-change: a coding agent's task attempts replayed into the workspace {} at speed {speed} (about {secs:.0} s), with the referee watching.\n\
                 The worker touches a protected file, then resubmits the same diff; watch the referee reject, stop and escalate, then approve a clean task.\n\
                 No git here: the referee's start snapshot of the project is the baseline.\n",
                dir.display()
            ),
        }
    }
}

/// How to run the demo.
#[derive(Debug, Clone)]
pub struct DemoConfig {
    /// The recorded run and its protocol.
    pub scenario: Scenario,
    /// Recorded time runs this many times faster; 0: no waiting at all.
    pub speed: f64,
    /// Where to play (must be empty or absent); default: a new directory under the temp dir.
    pub dir: Option<PathBuf>,
    /// Show every line the referee logs (each check's every change), not just the story.
    pub verbose: bool,
    /// The referee's state directory; default: beside a temporary play directory, or the
    /// default of `watch` for a kept one.
    pub state_dir: Option<PathBuf>,
}

#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    #[error("`{}` is not empty; the demo needs an empty (or new) directory", .path.display())]
    NotEmpty { path: PathBuf },
    #[error("cannot create the demo directory `{}`", .path.display())]
    Dir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Replay(#[from] ReplayError),
    #[error(transparent)]
    Daemon(#[from] DaemonError),
    #[error("cannot start the daemon thread")]
    Thread(#[source] std::io::Error),
    #[error("the referee stopped unexpectedly: {0}")]
    Crashed(String),
    #[error("cannot print: {0}")]
    Print(#[from] std::io::Error),
}

/// What the demo reports back.
#[derive(Debug)]
pub struct DemoOutcome {
    pub dir: PathBuf,
    pub exit: ExitCode,
    pub daemon: Outcome,
    pub replay: Option<PlaySummary>,
    /// STOPs raised and resolved while it ran (from the referee's own lines).
    pub stops_raised: usize,
    pub stops_resolved: usize,
}

enum Msg {
    Referee(String),
    Step(String),
    Played(Result<PlaySummary, ReplayError>),
}

/// How long the referee may take to finish after the last step before the demo asks it to.
const FINISH_GRACE: Duration = Duration::from_secs(20);

/// code-change: how long the referee must have been silent after the worker's last step before
/// the demo ends the run (a settled record is judged within milliseconds).
const QUIET: Duration = Duration::from_millis(1500);

/// Runs the demo, printing the narration to `out`. `signals`: the binary's SIGINT/SIGTERM
/// channel; the first one stops the replay and has the referee write its report.
pub fn run(
    cfg: &DemoConfig,
    signals: Option<Receiver<Shutdown>>,
    out: &mut dyn Write,
) -> Result<DemoOutcome, DemoError> {
    let scenario = cfg.scenario;
    let mut timeline = Timeline::load_embedded(scenario.timeline())?;
    if !cfg.speed.is_finite() || cfg.speed < 0.0 {
        return Err(ReplayError::Speed(cfg.speed).into());
    }
    let dir = prepare_dir(cfg.dir.as_deref())?;
    if scenario == Scenario::CodeChange {
        // The project is in place before the referee starts: it is the baseline.
        let mut setup = timeline.clone();
        setup.steps.retain(|s| s.at.is_zero());
        timeline.steps.retain(|s| !s.at.is_zero());
        let opts = PlayOptions {
            speed: 0.0,
            ..PlayOptions::default()
        };
        replay::play(&setup, &dir, &opts, |_| std::ops::ControlFlow::Continue(()))?;
    }
    let length = timeline.duration();
    let real = if cfg.speed == 0.0 {
        Duration::ZERO
    } else {
        Duration::try_from_secs_f64(length.as_secs_f64() / cfg.speed).unwrap_or(Duration::MAX)
    };
    writeln!(
        out,
        "{}",
        scenario.intro(&dir, cfg.speed, real.as_secs_f64().ceil())
    )?;

    let (tx, rx) = mpsc::channel::<Msg>();
    let (lines_tx, lines_rx) = mpsc::channel::<String>();
    let (stop_tx, stop_rx) = mpsc::channel::<Shutdown>();
    let cancel = Arc::new(AtomicBool::new(false));

    let mut config = daemon::Config::new(&dir);
    config.state_dir = cfg.state_dir.clone().or_else(|| {
        cfg.dir.is_none().then(|| {
            let mut name = dir.file_name().unwrap_or_default().to_os_string();
            name.push(".state");
            dir.with_file_name(name)
        })
    });
    config.protocol = scenario.protocol().to_string();
    config.quiet = true;
    config.lines = Some(lines_tx);
    // A safety net: the demo ends by itself even if the run never completes.
    config.timeout = Some(
        real.saturating_add(FINISH_GRACE)
            .saturating_add(FINISH_GRACE),
    );
    let referee = std::thread::Builder::new()
        .name("referee-daemon".into())
        .spawn(move || daemon::run(config, Some(stop_rx)))
        .map_err(DemoError::Thread)?;
    {
        let tx = tx.clone();
        let _ = std::thread::Builder::new()
            .name("referee-demo-lines".into())
            .spawn(move || {
                for line in lines_rx {
                    if tx.send(Msg::Referee(line)).is_err() {
                        break;
                    }
                }
            });
    }
    if let Some(signals) = signals {
        let stop_tx = stop_tx.clone();
        let cancel = cancel.clone();
        let _ = std::thread::Builder::new()
            .name("referee-demo-signals".into())
            .spawn(move || {
                if let Ok(s) = signals.recv() {
                    cancel.store(true, Ordering::Relaxed);
                    let _ = stop_tx.send(s);
                }
            });
    }

    // The code-change worker waits for each verdict it asked for (in `.referee/`).
    let review = (scenario == Scenario::CodeChange).then(|| scenario.out_dir(&dir));
    let start = Instant::now();
    let mut narrator = Narrator {
        out,
        start,
        verbose: cfg.verbose,
        dir: scenario.out_dir(&dir),
        raised: 0,
        resolved: 0,
        stop_texts: 0,
        verdicts: Vec::new(),
        last_line: start,
    };
    // The replay starts once the referee is watching (its first line), or has given up.
    let mut replay_started = false;
    let mut replay: Option<PlaySummary> = None;
    let mut replay_err: Option<ReplayError> = None;
    let mut replay_done_at: Option<Instant> = None;
    let mut asked_to_stop = false;
    // Each new text of the STOP (raised, or updated) is shown once it is on disk.
    let mut stop_shown = 0;
    loop {
        if narrator.stop_texts > stop_shown
            && (narrator.resolved >= narrator.raised || narrator.stop_file()?)
        {
            stop_shown = narrator.stop_texts;
        }
        if referee.is_finished() {
            break;
        }
        if !replay_started && start.elapsed() > Duration::from_secs(10) {
            // The referee never said it was watching; start anyway rather than hang.
            replay_started = start_replay(&timeline, &dir, &review, cfg.speed, &cancel, &tx);
        }
        if !asked_to_stop {
            let overdue = replay_done_at.is_some_and(|t| t.elapsed() > FINISH_GRACE);
            // A workspace has no end of run of its own: once the worker's last step is done
            // and the referee has had its say, the orchestrator (here, the demo) ends it.
            let worker_done = scenario == Scenario::CodeChange
                && replay_done_at
                    .is_some_and(|t| t.elapsed() > QUIET && narrator.last_line.elapsed() > QUIET);
            if overdue || worker_done || replay_err.is_some() || cancel.load(Ordering::Relaxed) {
                let why = match &replay_err {
                    Some(e) => format!("the demo's replay failed: {}", crate::error::chain(e)),
                    None if cancel.load(Ordering::Relaxed) => "the demo was interrupted".into(),
                    None if worker_done => "the worker's run is over".into(),
                    None => "the demo's run ended without the referee finishing".into(),
                };
                cancel.store(true, Ordering::Relaxed);
                let _ = stop_tx.send(Shutdown::Requested(why));
                asked_to_stop = true;
            }
        }
        match rx.recv_timeout(Duration::from_millis(50)) {
            Ok(Msg::Referee(line)) => {
                let first = !replay_started;
                narrator.referee(&line)?;
                if first {
                    replay_started =
                        start_replay(&timeline, &dir, &review, cfg.speed, &cancel, &tx);
                }
            }
            Ok(Msg::Step(line)) => narrator.pipeline(&line)?,
            Ok(Msg::Played(r)) => {
                replay_done_at = Some(Instant::now());
                match r {
                    Ok(s) => replay = Some(s),
                    Err(e) => {
                        narrator
                            .note(&format!("the replay failed: {}", crate::error::chain(&e)))?;
                        replay_err = Some(e);
                    }
                }
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => break,
        }
    }
    cancel.store(true, Ordering::Relaxed);
    let result = referee
        .join()
        .map_err(|_| DemoError::Crashed("the daemon thread panicked".into()))?;
    // The referee's last lines (its summary) may still be queued.
    while let Ok(msg) = rx.recv_timeout(Duration::from_millis(20)) {
        match msg {
            Msg::Referee(line) => narrator.referee(&line)?,
            Msg::Step(line) => narrator.pipeline(&line)?,
            Msg::Played(_) => {}
        }
    }
    let outcome = result?;
    narrator.summary(&outcome, scenario)?;
    if let Some(e) = replay_err {
        // The referee did its job, but the run it watched was cut short: not a clean demo.
        return Err(e.into());
    }
    let (raised, resolved) = (narrator.raised, narrator.resolved);
    Ok(DemoOutcome {
        dir,
        exit: outcome.exit,
        daemon: outcome,
        replay,
        stops_raised: raised,
        stops_resolved: resolved,
    })
}

/// Starts the replay thread; `true` once started.
fn start_replay(
    timeline: &Timeline,
    dir: &Path,
    review: &Option<PathBuf>,
    speed: f64,
    cancel: &Arc<AtomicBool>,
    tx: &Sender<Msg>,
) -> bool {
    let timeline = timeline.clone();
    let dir = dir.to_path_buf();
    let review = review.clone();
    let stop = cancel.clone();
    let opts = PlayOptions {
        speed,
        cancel: Some(cancel.clone()),
        ..PlayOptions::default()
    };
    let tx = tx.clone();
    let spawned = std::thread::Builder::new()
        .name("referee-demo-replay".into())
        .spawn(move || {
            let steps = tx.clone();
            let r = replay::play(&timeline, &dir, &opts, |p| {
                let mut line = p.step.describe();
                if let Some(n) = &p.step.note {
                    line = format!("{n}  ({line})");
                }
                let _ = steps.send(Msg::Step(line));
                if let Some(out) = &review {
                    await_verdict(&dir, out, p.step, &stop);
                }
                std::ops::ControlFlow::Continue(())
            });
            let _ = tx.send(Msg::Played(r));
        });
    spawned.is_ok()
}

/// How long the demo's worker waits for the verdict on an attempt it asked to be reviewed.
const VERDICT_WAIT: Duration = Duration::from_secs(30);

/// After a step that renames a task record asking for review into `.tasks/`: waits until the
/// verdict of that attempt is in `out` (`.referee/`), at most [`VERDICT_WAIT`] and not once the
/// demo is cancelled. A worker reads its verdict before it resubmits, as an orchestrator waits
/// with `status --task ID --wait`; played at the timeline's pace alone, a loaded machine's
/// referee could find attempt 1 already replaced by attempt 2 and never judge it.
fn await_verdict(dir: &Path, out: &Path, step: &replay::Step, cancel: &AtomicBool) {
    use serde_json::Value;
    let replay::Action::Rename { to, .. } = &step.action else {
        return;
    };
    if !to.starts_with(".tasks/") {
        return;
    }
    let read = |path: &Path| {
        std::fs::read_to_string(path)
            .ok()
            .and_then(|t| serde_json::from_str::<Value>(&t).ok())
    };
    let Some(record) = read(&dir.join(to)) else {
        return;
    };
    if record["status"] != "pending_review" {
        return;
    }
    let (Some(id), Some(attempt)) = (record["task_id"].as_str(), record["attempt"].as_u64()) else {
        return;
    };
    let copy = out.join(crate::outputs::code_change::verdict_file(id, "json"));
    let deadline = Instant::now() + VERDICT_WAIT;
    while Instant::now() < deadline && !cancel.load(Ordering::Relaxed) {
        if read(&copy).is_some_and(|v| v["attempt"] == attempt) {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn prepare_dir(dir: Option<&Path>) -> Result<PathBuf, DemoError> {
    let dir = match dir {
        Some(d) => d.to_path_buf(),
        None => {
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.subsec_nanos());
            std::env::temp_dir().join(format!("referee-demo-{}-{nanos:08x}", std::process::id()))
        }
    };
    let io = |source: std::io::Error| DemoError::Dir {
        path: dir.clone(),
        source,
    };
    std::fs::create_dir_all(&dir).map_err(io)?;
    if std::fs::read_dir(&dir).map_err(io)?.next().is_some() {
        return Err(DemoError::NotEmpty { path: dir });
    }
    Ok(dir)
}

fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let mut c: String = s.chars().take(max - 1).collect();
        c.push('…');
        c
    }
}

struct Narrator<'a> {
    out: &'a mut dyn Write,
    start: Instant,
    verbose: bool,
    /// Where the referee's own files are.
    dir: PathBuf,
    raised: usize,
    resolved: usize,
    /// STOP texts announced (raised or updated).
    stop_texts: usize,
    /// code-change: each attempt's verdict line, as the referee said it.
    verdicts: Vec<String>,
    /// When the referee last said anything.
    last_line: Instant,
}

/// Referee lines that tell the story; the rest (every check's every change) need `--verbose`.
const STORY: &[&str] = &[
    "watching ",
    "pass ",
    "STOP ",
    "ESCALATED",
    "fix attempt",
    "fault",
    "tamper",
    "warning",
    "rescan",
    "finished",
    "report:",
    "task ",
];

impl Narrator<'_> {
    fn stamp(&self) -> String {
        format!("{:>6.2}s", self.start.elapsed().as_secs_f64())
    }

    fn pipeline(&mut self, line: &str) -> std::io::Result<()> {
        writeln!(self.out, "{}  pipeline │ {line}", self.stamp())
    }

    fn note(&mut self, line: &str) -> std::io::Result<()> {
        writeln!(self.out, "{}  demo      │ {line}", self.stamp())
    }

    fn referee(&mut self, line: &str) -> std::io::Result<()> {
        // The daemon stamps its lines with the wall clock; the demo shows time since it started.
        let text = match line.strip_prefix('[').and_then(|l| l.split_once("] ")) {
            Some((_, rest)) => rest,
            None => line,
        };
        self.last_line = Instant::now();
        if text.starts_with("STOP raised") {
            self.raised += 1;
            self.stop_texts += 1;
        } else if text.starts_with("STOP updated") {
            self.stop_texts += 1;
        } else if text.starts_with("STOP resolved") {
            self.resolved += 1;
        } else if text.starts_with("task ") {
            self.verdicts.push(text.to_string());
        }
        let story = STORY.iter().any(|s| text.starts_with(s))
            || text.contains("→ FAIL")
            || text.contains("→ INCONCLUSIVE");
        if !(story || self.verbose) {
            return Ok(());
        }
        let mark = if text.starts_with("STOP raised")
            || text.starts_with("STOP updated")
            || (text.starts_with(STOP_FILE) && text.contains("written"))
        {
            "referee  ▶"
        } else {
            "referee  │"
        };
        writeln!(self.out, "{}  {mark} {text}", self.stamp())
    }

    /// Once a raised STOP is on disk, shows what the orchestrator reads in it: each block's
    /// check and evidence lines. `true` when shown (or when there is nothing to wait for).
    fn stop_file(&mut self) -> std::io::Result<bool> {
        let Ok(stop) = std::fs::read_to_string(self.dir.join(STOP_FILE)) else {
            return Ok(false);
        };
        writeln!(self.out, "{}  referee  ▶ {STOP_FILE} says:", self.stamp())?;
        let mut in_evidence = false;
        for l in stop.lines().map(str::trim) {
            let keep = if l.starts_with("**") {
                in_evidence = l.starts_with("**Evidence:**");
                in_evidence || l.starts_with("**Check:**") || l.starts_with("**Required Action:**")
            } else {
                (in_evidence && l.starts_with("- ")) || l.contains("ESCALATED")
            };
            if keep {
                writeln!(self.out, "{}  {}", " ".repeat(18), clip(l, 140))?;
            }
        }
        Ok(true)
    }

    /// The end of the run: how it ended, what was judged, the STOP's story, where the files are.
    fn summary(&mut self, o: &Outcome, scenario: Scenario) -> std::io::Result<()> {
        writeln!(self.out)?;
        let ended = match scenario {
            Scenario::D10 => o.reason.describe(),
            Scenario::CodeChange => o.reason.describe_tasks(),
        };
        writeln!(self.out, "The referee finished: {ended}.")?;
        match scenario {
            Scenario::D10 => {
                let s = o.evaluation.summary();
                let verdict = o.evaluation.verdict.as_deref().unwrap_or("none");
                writeln!(
                    self.out,
                    "  checks {}: {} PASS, {} FAIL ({} BLOCKING), {} SKIP, {} INCONCLUSIVE, {} WAITING; compliance {}; verdict {verdict}",
                    s.checks,
                    s.pass,
                    s.fail,
                    s.fail_blocking,
                    s.skip,
                    s.inconclusive,
                    s.waiting,
                    s.compliance_rate
                        .map_or("n/a".to_string(), |r| format!("{:.0} %", r * 100.0))
                )?;
            }
            Scenario::CodeChange => {
                for v in &self.verdicts {
                    writeln!(self.out, "  {v}")?;
                }
            }
        }
        writeln!(
            self.out,
            "  STOP raised {} time(s), resolved {} time(s); {} now: {}",
            self.raised,
            self.resolved,
            STOP_FILE,
            if self.dir.join(STOP_FILE).exists() {
                "present"
            } else {
                "absent"
            }
        )?;
        let standing: Vec<String> = o
            .evaluation
            .results
            .iter()
            .filter(|r| scenario == Scenario::D10 && r.status == Status::Fail)
            .map(|r| format!("{} (pass {}, {})", r.check, r.pass, r.severity.as_str()))
            .collect();
        if !standing.is_empty() {
            writeln!(self.out, "  failing: {}", standing.join(", "))?;
        }
        match &o.report {
            Some(p) => writeln!(self.out, "  report: {}", p.display())?,
            None => writeln!(
                self.out,
                "  no report could be written to {}",
                self.dir.join(REPORT_FILE).display()
            )?,
        }
        let beside = match scenario {
            Scenario::D10 => "everything else the referee wrote is beside it: OBSERVER-PASS-*.md, OBSERVER-EVENTS.jsonl, OBSERVER-HEARTBEAT.json",
            Scenario::CodeChange => "each task's verdict, for the worker and for a human, is beside it: OBSERVER-VERDICT-<task>.md and .json",
        };
        writeln!(self.out, "  {beside}")?;
        writeln!(self.out, "  exit code {}", o.exit as u8)
    }
}
