//! Runs one simulated pipeline against the built `referee`: the steps are written into a fresh
//! build directory, every phase boundary is judged by `referee verify --format json` (and, in
//! live runs, by `referee status --sync` against a `referee watch` beside the writers), and
//! each answer is compared with the reference reading.

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime};

use serde_json::Value;

use crate::model::*;
use crate::reference::{self, Exp, Expected, Key};
use crate::render;
use crate::writers::{self, Ctx};

/// The longest a condition may take before it counts as broken (a loaded machine included).
const WAIT: Duration = Duration::from_secs(20);
/// A STOP later than this after the violation is on disk is a failure of its own.
pub const STOP_WITHIN: Duration = Duration::from_secs(1);

/// The referee under test: the one cargo built beside the simulator, or `SIM_D10_REFEREE` (a
/// copy that a long bench keeps while the tree is rebuilt, or another profile's build).
pub fn referee() -> &'static Path {
    static PATH: std::sync::OnceLock<PathBuf> = std::sync::OnceLock::new();
    PATH.get_or_init(|| {
        std::env::var_os("SIM_D10_REFEREE")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_referee")))
    })
}

/// One way a run disagreed with the reference or with itself.
#[derive(Clone, Debug)]
pub struct Failure {
    /// `honest-stop`, `missed`, `extra`, `complete`, `final-table`, `live-vs-verify`, `late-stop`,
    /// `spurious-stop`, `watch-exit`, `no-live`, `io`.
    pub kind: &'static str,
    /// `pass:check`, or what else the kind is about.
    pub key: String,
    /// The step after which it was seen.
    pub step: usize,
    pub detail: String,
}

impl Failure {
    pub fn class(&self) -> String {
        format!("{}:{}", self.kind, self.key)
    }
}

#[derive(Debug, Default)]
pub struct Outcome {
    pub failures: Vec<Failure>,
    /// From a violation on disk to the STOP naming it (live runs, writes that make events).
    pub latencies: Vec<Duration>,
    pub boundaries: usize,
}

/// What `verify --format json` said.
#[derive(Debug)]
struct Seen {
    /// The BLOCKING instances that block: FAIL or INCONCLUSIVE.
    fails: BTreeSet<Key>,
    statuses: BTreeMap<Key, String>,
    complete: bool,
    code: i32,
}

fn verify(build: &Path, home: &Path) -> Result<Seen, String> {
    let out = Command::new(referee())
        .arg("verify")
        .arg(build)
        .args(["--format", "json"])
        .env("XDG_STATE_HOME", home)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run verify: {e}"))?;
    let code = out.status.code().unwrap_or(-1);
    let doc: Value = serde_json::from_slice(&out.stdout).map_err(|e| {
        format!(
            "verify printed no JSON ({e}), exit {code}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    })?;
    let mut fails = BTreeSet::new();
    let mut statuses = BTreeMap::new();
    for r in doc["results"].as_array().into_iter().flatten() {
        let key = (
            r["pass"].as_str().unwrap_or("").to_string(),
            r["check"].as_str().unwrap_or("").to_string(),
        );
        let status = r["status"].as_str().unwrap_or("").to_string();
        let blocking = r["severity"]
            .as_str()
            .is_some_and(|s| s.eq_ignore_ascii_case("blocking"));
        // A due BLOCKING check that cannot be decided blocks like a FAIL (fail closed): the live
        // STOP names it as well, and `verify` exits 1 for it.
        if blocking && (status == "FAIL" || status == "INCONCLUSIVE") {
            fails.insert(key.clone());
        }
        statuses.insert(key, status);
    }
    Ok(Seen {
        fails,
        statuses,
        complete: doc["complete"].as_bool().unwrap_or(false),
        code,
    })
}

/// The `(pass, check)` blocks of an `OBSERVER-STOP.md`.
pub fn stop_keys(text: &str) -> BTreeSet<Key> {
    let mut keys = BTreeSet::new();
    let mut check = None;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("**Check:** ") {
            check = rest.split_whitespace().next().map(str::to_string);
        } else if let Some(rest) = line.strip_prefix("**Phase:** Pass ") {
            let pass: String = rest.chars().take_while(|c| *c != ':').collect();
            if let Some(c) = check.take() {
                keys.insert((pass.trim().to_string(), c));
            }
        }
    }
    keys
}

/// Watches `OBSERVER-STOP.md` from its own thread: every change of the checks it names, with
/// the time it was seen.
/// Each change of the STOP file's checks, with when it was seen.
type Sightings = Vec<(Instant, BTreeSet<Key>)>;

struct StopPoller {
    stop: Arc<AtomicBool>,
    seen: Arc<Mutex<Sightings>>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl StopPoller {
    fn start(build: PathBuf) -> StopPoller {
        let stop = Arc::new(AtomicBool::new(false));
        let seen = Arc::new(Mutex::new(Vec::new()));
        let (s2, seen2) = (stop.clone(), seen.clone());
        let thread = std::thread::spawn(move || {
            let path = build.join("OBSERVER-STOP.md");
            let mut last: Option<BTreeSet<Key>> = None;
            while !s2.load(Ordering::Relaxed) {
                let now = fs::read_to_string(&path)
                    .ok()
                    .map(|t| stop_keys(&t))
                    .unwrap_or_default();
                if last.as_ref() != Some(&now) {
                    seen2
                        .lock()
                        .expect("poller lock")
                        .push((Instant::now(), now.clone()));
                    last = Some(now);
                }
                std::thread::sleep(Duration::from_millis(4));
            }
        });
        StopPoller {
            stop,
            seen,
            thread: Some(thread),
        }
    }

    fn sightings(&self) -> Vec<(Instant, BTreeSet<Key>)> {
        self.seen.lock().expect("poller lock").clone()
    }

    /// The first time at or after `from` the STOP named `check` (of any pass).
    fn first_with(&self, check: &str, from: Instant) -> Option<Instant> {
        let s = self.sightings();
        let mut named_at: Option<Instant> = None;
        for (t, keys) in &s {
            let has = keys.iter().any(|(_, c)| c == check);
            if has && named_at.is_none() {
                named_at = Some(*t);
            } else if !has {
                named_at = None;
            }
        }
        named_at.map(|t| t.max(from))
    }
}

impl Drop for StopPoller {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

struct Live {
    child: Option<Child>,
    log: PathBuf,
}

impl Live {
    fn start(build: &Path, home: &Path, log: PathBuf) -> Result<Live, String> {
        let out = fs::File::create(&log).map_err(|e| e.to_string())?;
        let err = out.try_clone().map_err(|e| e.to_string())?;
        let child = Command::new(referee())
            .arg("watch")
            .arg(build)
            .args(["--heartbeat", "0.5"])
            .env("XDG_STATE_HOME", home)
            // A disagreement's log says whether a file was judged while its writer still held
            // it open (a writer slower than `--settle-max`), or before the barrier knew of every
            // change made before the reads (its cookie late).
            .env(
                "REFEREE_LOG",
                "info,referee::daemon::rules::settle=debug,referee::daemon::driver::barrier=debug",
            )
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| format!("cannot start watch: {e}"))?;
        let live = Live {
            child: Some(child),
            log,
        };
        // Up once `status` answers for this very referee (its run record names our child):
        // "not 3" alone is not enough, because a STOP left by the previous run is reported
        // (exit 1) before the new referee has looked at the directory, and a pipeline that
        // writes Phase 0 then has raced it (the referee resumes the old run).
        let ours = format!("run: pid {} ", live.pid());
        let deadline = Instant::now() + WAIT;
        loop {
            let st = Command::new(referee())
                .arg("status")
                .arg(build)
                .args(["--require-live", "--show-run"])
                .env("XDG_STATE_HOME", home)
                .stdin(Stdio::null())
                .stderr(Stdio::null())
                .output()
                .map_err(|e| e.to_string())?;
            if st.status.code() != Some(3) && String::from_utf8_lossy(&st.stdout).contains(&ours) {
                return Ok(live);
            }
            if Instant::now() > deadline {
                return Err(format!("the referee never came up\n{}", live.output()));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn pid(&self) -> u32 {
        self.child.as_ref().map_or(0, |c| c.id())
    }

    fn output(&self) -> String {
        let t = fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = t.lines().collect();
        lines[lines.len().saturating_sub(30)..].join("\n")
    }

    /// Waits for the daemon to exit by itself; `None` at the deadline (it is then killed).
    fn wait_exit(&mut self, within: Duration) -> Option<i32> {
        let deadline = Instant::now() + within;
        let child = self.child.as_mut()?;
        loop {
            if let Ok(Some(st)) = child.try_wait() {
                self.child = None;
                return Some(st.code().unwrap_or(-1));
            }
            if Instant::now() > deadline {
                let _ = child.kill();
                let _ = child.wait();
                self.child = None;
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn running(&mut self) -> bool {
        match self.child.as_mut() {
            Some(c) => matches!(c.try_wait(), Ok(None)),
            None => false,
        }
    }

    fn terminate(&mut self) {
        if let Some(c) = self.child.as_ref() {
            // SAFETY: signalling our own child process by its pid.
            unsafe {
                libc::kill(c.id() as i32, libc::SIGTERM);
            }
        }
        let _ = self.wait_exit(WAIT);
    }
}

impl Drop for Live {
    fn drop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

fn status_sync(build: &Path, home: &Path) -> (i32, String) {
    match Command::new(referee())
        .arg("status")
        .arg(build)
        .args(["--sync", "--require-live"])
        .env("XDG_STATE_HOME", home)
        .stdin(Stdio::null())
        .output()
    {
        // Both streams: a 3 says why on stderr.
        Ok(o) => (
            o.status.code().unwrap_or(-1),
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            ),
        ),
        Err(e) => (-1, e.to_string()),
    }
}

/// The artifacts a hostile edit rewrites.
fn plant_arts(p: Plant) -> Vec<Art> {
    match p {
        Plant::BvEmpty(..)
        | Plant::BvFail(..)
        | Plant::SpawnEarly(_)
        | Plant::RefineOrder
        | Plant::SameSpawn => vec![Art::Tracker],
        Plant::Manual(r, _) | Plant::Invalid(r, _) | Plant::NoGr48(r, _) => vec![Art::Gates(r)],
        Plant::Vocab(r, l, ..) => vec![Art::Aud(r, l)],
        Plant::Prohibited(f, ..) => vec![Art::Input(f)],
        Plant::SamePrompt(_) => vec![Art::Input(2)],
        Plant::ExtraAuditor(_) | Plant::TouchAuditor(..) | Plant::RemoveAuditor(..) => vec![],
        Plant::Shots(..) => vec![],
    }
}

fn newest_mtime(build: &Path, s: &State, arts: impl Fn(&Art) -> bool) -> Option<SystemTime> {
    s.present
        .iter()
        .filter(|a| arts(a))
        .filter_map(|a| {
            let name = match a {
                Art::Aud(r, l) => render::aud_name(*r, *l),
                Art::Int(r) => render::int_name(*r).to_string(),
                _ => return None,
            };
            fs::metadata(build.join(name))
                .and_then(|m| m.modified())
                .ok()
        })
        .max()
}

fn empty_dir(dir: &Path) -> std::io::Result<()> {
    for e in fs::read_dir(dir)? {
        let e = e?;
        let p = e.path();
        if e.file_type()?.is_dir() {
            fs::remove_dir_all(&p)?;
        } else {
            fs::remove_file(&p)?;
        }
    }
    Ok(())
}

fn fails_of(e: &Expected, which: Exp) -> BTreeSet<String> {
    e.blocking
        .iter()
        .filter(|(_, x)| **x == which)
        .map(|(k, _)| k.1.clone())
        .collect()
}

/// Runs `steps` with `style`; `seed` names the run in what it prints.
pub fn execute(seed: u64, style: &Style, steps: &[Step]) -> Outcome {
    let mut out = Outcome::default();
    let tmp = match tempfile::Builder::new().prefix("sim-d10-").tempdir() {
        Ok(t) => t,
        Err(e) => {
            out.failures.push(Failure {
                kind: "io",
                key: "tempdir".into(),
                step: 0,
                detail: e.to_string(),
            });
            return out;
        }
    };
    let build = tmp.path().join("build");
    let stage = tmp.path().join("stage");
    let home = tmp.path().join("state");
    for d in [&build, &stage, &home] {
        let _ = fs::create_dir_all(d);
    }
    let mut ctx = Ctx::new(build.clone(), stage.clone(), seed);
    let mut s = State::default();
    let fail = |out: &mut Outcome, kind: &'static str, key: String, step: usize, detail: String| {
        out.failures.push(Failure {
            kind,
            key,
            step,
            detail,
        });
    };

    let mut live: Option<Live> = None;
    let mut generation = 0;
    let start_live = |generation: &mut usize| -> Result<Live, String> {
        *generation += 1;
        Live::start(
            &build,
            &home,
            tmp.path().join(format!("watch-{generation}.log")),
        )
    };
    if style.live {
        match start_live(&mut generation) {
            Ok(l) => live = Some(l),
            Err(e) => fail(&mut out, "no-live", "start".into(), 0, e),
        }
    }
    let poller = style.live.then(|| StopPoller::start(build.clone()));
    // For each step: when it ran, and the checks the reference allows in a STOP around it.
    let mut windows: Vec<(Instant, Instant, BTreeSet<String>)> = Vec::new();
    let mut prev = reference::judge(&s);
    // A run begun over the completed run's files (not emptied): `verify` judges them too, only
    // the live referee sets them aside.
    let mut over_leftovers = false;

    for (i, step) in steps.iter().enumerate() {
        let t0 = Instant::now();
        let mut barrier = || {
            if style.live {
                let _ = status_sync(&build, &home);
            }
        };
        let res: std::io::Result<()> = (|| {
            match step {
                Step::Phase {
                    phase,
                    writer,
                    tracker,
                    verdict,
                } => {
                    s.done.insert(*phase);
                    if *phase == Phase::P3C {
                        s.main_verdict = Some(*verdict);
                    }
                    s.present.insert(Art::Tracker);
                    let tf = render::files(&s, style, Art::Tracker);
                    writers::write(&mut ctx, &tf, *tracker, &mut barrier)?;
                    if *phase == Phase::P3A && style.linked_shots {
                        fs::create_dir_all(build.join(".shots-store"))?;
                        if fs::symlink_metadata(build.join("screenshots")).is_err() {
                            std::os::unix::fs::symlink(".shots-store", build.join("screenshots"))?;
                        }
                    }
                    if let Phase::P3BInt | Phase::R3BInt = phase {
                        let r = *phase == Phase::R3BInt;
                        ctx.after =
                            newest_mtime(&build, &s, |a| matches!(a, Art::Aud(rr, _) if *rr == r));
                    }
                    let arts = phase_arts(*phase);
                    let mut files = Vec::new();
                    for a in &arts {
                        s.present.insert(*a);
                        if matches!(a, Art::Aud(..) | Art::Int(_)) {
                            s.stamp(*a);
                        }
                    }
                    for a in &arts {
                        files.extend(render::files(&s, style, *a));
                    }
                    writers::write(&mut ctx, &files, *writer, &mut barrier)?;
                    ctx.after = None;
                    // The tracker lists the outputs now on disk.
                    let tf = render::files(&s, style, Art::Tracker);
                    writers::write(&mut ctx, &tf, *tracker, &mut barrier)?;
                }
                Step::Plant { plant, writer } => {
                    s.plants.push(*plant);
                    match *plant {
                        Plant::ExtraAuditor(r) => {
                            let a = Art::Aud(r, 'J');
                            s.present.insert(a);
                            s.stamp(a);
                            let f = render::files(&s, style, a);
                            writers::write(&mut ctx, &f, *writer, &mut barrier)?;
                        }
                        Plant::TouchAuditor(r, l) => {
                            let a = Art::Aud(r, l);
                            ctx.after = newest_mtime(&build, &s, |x| *x == Art::Int(r));
                            s.present.insert(a);
                            s.stamp(a);
                            let f = render::files(&s, style, a);
                            writers::write(&mut ctx, &f, *writer, &mut barrier)?;
                            ctx.after = None;
                        }
                        Plant::RemoveAuditor(r, l) => {
                            s.present.remove(&Art::Aud(r, l));
                            let _ = fs::remove_file(build.join(render::aud_name(r, l)));
                        }
                        Plant::Shots(r, _) => {
                            if s.present.contains(&Art::Shots(r)) {
                                let want = render::shots(&s, style, r);
                                let dir = build.join(render::shots_dir(r, style));
                                // Remove what is no longer there, rewrite what changed.
                                for vp in ["1440", "1024", "768"] {
                                    let vdir = dir.join(vp);
                                    let Ok(rd) = fs::read_dir(&vdir) else {
                                        continue;
                                    };
                                    for e in rd.flatten() {
                                        let rel = format!(
                                            "{}/{vp}/{}",
                                            render::shots_dir(r, style),
                                            e.file_name().to_string_lossy()
                                        );
                                        if !want.iter().any(|f| f.path == rel) {
                                            fs::remove_file(e.path())?;
                                        }
                                    }
                                    if fs::read_dir(&vdir)?.next().is_none() {
                                        fs::remove_dir(&vdir)?;
                                    }
                                }
                                let changed: Vec<_> = want
                                    .into_iter()
                                    .filter(|f| match &f.body {
                                        render::Body::Bytes(b) => {
                                            fs::read(build.join(&f.path)).ok().as_ref() != Some(b)
                                        }
                                        render::Body::Text(_) => true,
                                    })
                                    .collect();
                                if !changed.is_empty() {
                                    writers::write(&mut ctx, &changed, *writer, &mut barrier)?;
                                }
                            }
                        }
                        _ => {
                            for a in plant_arts(*plant) {
                                if s.present.contains(&a) {
                                    let f = render::files(&s, style, a);
                                    writers::write(&mut ctx, &f, *writer, &mut barrier)?;
                                }
                            }
                        }
                    }
                }
                Step::Noise(n) => {
                    s.noise.insert(*n);
                    noise(&build, *n)?;
                }
                Step::Rerun | Step::RerunOver => {
                    if let Some(l) = live.as_mut() {
                        if l.running() {
                            l.terminate();
                        }
                    }
                    if *step == Step::Rerun {
                        empty_dir(&build)?;
                    }
                    s = State::default();
                }
                Step::Boundary => {}
            }
            Ok(())
        })();
        if let Err(e) = res {
            fail(&mut out, "io", format!("{step:?}"), i, e.to_string());
            break;
        }
        if matches!(step, Step::Rerun | Step::RerunOver) {
            over_leftovers = *step == Step::RerunOver;
        }
        if matches!(step, Step::Rerun | Step::RerunOver) && style.live {
            live = None;
            match start_live(&mut generation) {
                Ok(l) => live = Some(l),
                Err(e) => fail(&mut out, "no-live", "restart".into(), i, e),
            }
        }
        let t1 = Instant::now();
        let exp = reference::judge(&s);
        let mut allowed = fails_of(&prev, Exp::Fail);
        allowed.extend(fails_of(&exp, Exp::Fail));
        allowed.extend(fails_of(&prev, Exp::Either));
        allowed.extend(fails_of(&exp, Exp::Either));
        if matches!(step, Step::Rerun | Step::RerunOver) {
            // The first run's STOP may stand until the new referee has looked.
            allowed.extend(fails_of(&prev, Exp::NotFail));
        }
        windows.push((t0, t1, allowed));

        // A violation now on disk must raise STOP within a second (eventless writes: by the
        // next `status --sync`, checked at the boundary).
        let eventless = matches!(step, Step::Plant { writer, .. } if writer.eventless());
        if let (Some(p), Some(l)) = (poller.as_ref(), live.as_mut()) {
            if !eventless && l.running() {
                let newly: Vec<String> = fails_of(&exp, Exp::Fail)
                    .difference(&fails_of(&prev, Exp::Fail))
                    .cloned()
                    .collect();
                for c in newly {
                    let deadline = t1 + WAIT;
                    let seen = loop {
                        if let Some(t) = p.first_with(&c, t1) {
                            break Some(t);
                        }
                        if Instant::now() > deadline {
                            break None;
                        }
                        std::thread::sleep(Duration::from_millis(2));
                    };
                    match seen {
                        Some(t) => {
                            let lat = t.saturating_duration_since(t1);
                            out.latencies.push(lat);
                            if lat > STOP_WITHIN * 5 {
                                fail(
                                    &mut out,
                                    "late-stop",
                                    c.clone(),
                                    i,
                                    format!("STOP named {c} {lat:?} after the write"),
                                );
                            }
                        }
                        None => fail(
                            &mut out,
                            "late-stop",
                            c.clone(),
                            i,
                            format!("no STOP named {c} within {WAIT:?}\n{}", l.output()),
                        ),
                    }
                }
            }
        }

        if *step == Step::Boundary {
            out.boundaries += 1;
            boundary(
                i,
                &build,
                &home,
                (&s, &exp),
                live.as_mut(),
                over_leftovers,
                &mut out,
            );
            if exp.complete {
                live = None;
            }
        }
        prev = exp;
    }
    if let Some(l) = live.as_mut() {
        l.terminate();
    }
    // Every STOP the live referee wrote must be one the reference allows at that moment.
    if let Some(p) = poller.as_ref() {
        let sightings = p.sightings();
        for (t, keys) in sightings {
            let allowed = windows
                .iter()
                .rev()
                .find(|(start, _, _)| *start <= t)
                .map(|(_, _, a)| a.clone())
                .unwrap_or_default();
            // A STOP seen after step k's end but before step k+1 is judged by step k's window.
            let step = windows
                .iter()
                .rposition(|(start, _, _)| *start <= t)
                .unwrap_or(0);
            for (pass, check) in keys {
                if !allowed.contains(&check) {
                    fail(
                        &mut out,
                        if s.plants.is_empty() {
                            "honest-stop-live"
                        } else {
                            "spurious-stop"
                        },
                        format!("{pass}:{check}"),
                        step,
                        format!(
                            "the live STOP named {check} (pass {pass}) during step {step}\n{}",
                            watch_logs(tmp.path())
                        ),
                    );
                }
            }
        }
    }
    drop(poller);
    out
}

fn boundary(
    i: usize,
    build: &Path,
    home: &Path,
    (s, exp): (&State, &Expected),
    live: Option<&mut Live>,
    over_leftovers: bool,
    out: &mut Outcome,
) {
    let honest = s.plants.is_empty();
    let mut push = |kind: &'static str, key: String, detail: String| {
        out.failures.push(Failure {
            kind,
            key,
            step: i,
            detail,
        })
    };
    // Live first: the barrier, then the answer.
    let mut live_answer = None;
    if let Some(l) = live {
        if exp.complete {
            // The run is complete: the referee writes its report and exits by itself.
            let want = if exp.must_fail().is_empty() { 0 } else { 1 };
            match l.wait_exit(WAIT) {
                Some(code) => {
                    let either = exp.blocking.values().any(|e| *e == Exp::Either);
                    if code != want && !either {
                        push(
                            "watch-exit",
                            format!("{want}->{code}"),
                            format!("watch exited {code}, expected {want}\n{}", l.output()),
                        );
                    }
                }
                None => push(
                    "watch-exit",
                    "no-exit".into(),
                    format!("watch did not finish at completion\n{}", l.output()),
                ),
            }
        } else if l.running() {
            let (code, text) = status_sync(build, home);
            let stop = fs::read_to_string(build.join("OBSERVER-STOP.md")).unwrap_or_default();
            live_answer = Some((code, text, stop_keys(&stop), l.output()));
        }
    }
    if over_leftovers {
        // `verify` judges the directory as it stands, the earlier run's leftovers with it: the
        // live referee's answer is compared with the reference instead.
        if let Some((code, text, stop, log)) = live_answer {
            live_vs_reference(exp, honest, (code, &text, &stop, &log), &mut push);
        }
        return;
    }
    let seen = match verify(build, home) {
        Ok(v) => v,
        Err(e) => {
            push("io", "verify".into(), e);
            return;
        }
    };
    let (code_ok, fails_ok) = (seen.code == i32::from(!seen.fails.is_empty()), true);
    let _ = fails_ok;
    if !code_ok {
        push(
            "verify-exit",
            seen.code.to_string(),
            format!(
                "verify exited {} with BLOCKING FAILs {:?}",
                seen.code, seen.fails
            ),
        );
    }
    for (k, e) in &exp.blocking {
        let failed = seen.fails.contains(k);
        let key = format!("{}:{}", k.0, k.1);
        match e {
            Exp::Fail if !failed => push(
                "missed",
                key.clone(),
                format!(
                    "{key}: reference FAIL, verify {}",
                    seen.statuses.get(k).map_or("absent", String::as_str)
                ),
            ),
            Exp::NotFail if failed => push(
                if honest { "honest-stop" } else { "extra" },
                key.clone(),
                format!(
                    "{key}: reference does not block, verify {}",
                    seen.statuses.get(k).map_or("absent", String::as_str)
                ),
            ),
            _ => {}
        }
    }
    for k in &seen.fails {
        if !exp.blocking.contains_key(k) {
            let key = format!("{}:{}", k.0, k.1);
            push(
                if honest { "honest-stop" } else { "extra" },
                key.clone(),
                format!(
                    "{key}: verify {} where the reference expects none (pass not run)",
                    seen.statuses.get(k).map_or("absent", String::as_str)
                ),
            );
        }
    }
    if exp.complete != seen.complete {
        push(
            "complete",
            format!("{}->{}", exp.complete, seen.complete),
            format!(
                "reference complete={}, verify complete={}",
                exp.complete, seen.complete
            ),
        );
    }
    if let Some(full) = &exp.full {
        for (k, want) in full {
            let got = seen.statuses.get(k).map_or("absent", String::as_str);
            if got != *want {
                push(
                    "final-table",
                    format!("{}:{}", k.0, k.1),
                    format!("{}:{} reference {want}, verify {got}", k.0, k.1),
                );
            }
        }
    }
    if let Some((code, text, stop, log)) = live_answer {
        let want = i32::from(!seen.fails.is_empty());
        if code == 3 {
            push(
                "no-live",
                "status-sync".into(),
                format!("status --sync answered 3: {text}\n{log}"),
            );
        } else if code != want {
            push(
                "live-vs-verify",
                format!("status={code},verify={want}"),
                format!(
                    "status --sync {code}, verify BLOCKING FAILs {:?}\n{text}\n{log}",
                    seen.fails
                ),
            );
        } else {
            let verify_checks: BTreeSet<&String> = seen.fails.iter().map(|k| &k.1).collect();
            let stop_checks: BTreeSet<&String> = stop.iter().map(|k| &k.1).collect();
            if verify_checks != stop_checks {
                push(
                    "live-vs-verify",
                    "stop-set".into(),
                    format!(
                        "STOP names {stop_checks:?}, verify FAILs {verify_checks:?} (verify's statuses of the STOP's checks: {:?})\n{log}",
                        stop.iter()
                            .map(|k| format!("{}:{} {}", k.0, k.1, seen.statuses.get(k).map_or("absent", String::as_str)))
                            .collect::<Vec<_>>()
                    ),
                );
            }
        }
    }
}

/// The live referee's answer at a boundary (`status --sync` code and text, the STOP's keys, its
/// output) against the reference alone: a STOP names only checks the reference lets fail, and
/// every check it must fail.
fn live_vs_reference(
    exp: &Expected,
    honest: bool,
    (code, text, stop, log): (i32, &str, &BTreeSet<Key>, &str),
    push: &mut impl FnMut(&'static str, String, String),
) {
    if code == 3 {
        push(
            "no-live",
            "status-sync".into(),
            format!("status --sync answered 3: {text}\n{log}"),
        );
        return;
    }
    let may_fail = |k: &Key| {
        exp.blocking
            .get(k)
            .is_some_and(|e| matches!(e, Exp::Fail | Exp::Either))
    };
    for k in stop.iter().filter(|k| !may_fail(k)) {
        push(
            if honest { "honest-stop" } else { "extra" },
            format!("{}:{}", k.0, k.1),
            format!(
                "the live STOP names {}:{}, which the reference does not let fail\n{text}\n{log}",
                k.0, k.1
            ),
        );
    }
    let stop_checks: BTreeSet<&String> = stop.iter().map(|k| &k.1).collect();
    for k in exp.must_fail() {
        if code != 1 || !stop_checks.contains(&k.1) {
            push(
                "missed",
                format!("{}:{}", k.0, k.1),
                format!(
                    "reference FAIL, status --sync {code}, STOP {stop_checks:?}\n{text}\n{log}"
                ),
            );
        }
    }
    if code == 1 && stop.is_empty() && exp.must_fail().is_empty() {
        push(
            if honest { "honest-stop" } else { "extra" },
            "status-sync".into(),
            format!("status --sync 1 with no STOP the reference expects\n{text}\n{log}"),
        );
    }
}

/// The live referees' output (every generation's), for a failure's detail.
fn watch_logs(tmp: &Path) -> String {
    let mut out = String::new();
    for g in 1.. {
        let Ok(t) = fs::read_to_string(tmp.join(format!("watch-{g}.log"))) else {
            break;
        };
        out.push_str(&t);
    }
    out
}

fn noise(build: &Path, n: Noise) -> std::io::Result<()> {
    match n {
        Noise::RefineName => {
            fs::write(
                build.join("notes-on-refinement.md"),
                "# Notes on refinement\n\nIdeas for a later pass.\n",
            )?;
            fs::write(build.join("refine-notes.txt"), "later: widen the map\n")
        }
        Noise::GitDir => {
            let dir = build.join("refine-inputs");
            fs::create_dir_all(&dir)?;
            let st = Command::new("git")
                .args(["init", "-q"])
                .arg(&dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()?;
            if !st.success() {
                return Err(std::io::Error::other("git init failed"));
            }
            Ok(())
        }
        Noise::EmacsLock => {
            let dir = build.join("refine-inputs");
            fs::create_dir_all(&dir)?;
            let lock = dir.join(".#conviction.md");
            let _ = fs::remove_file(&lock);
            std::os::unix::fs::symlink("sim@localhost.4242:1764000000", lock)
        }
        Noise::VimSwap => {
            let dir = build.join("refine-inputs");
            fs::create_dir_all(&dir)?;
            let mut b = b"b0VIM 9.0\0\0\0\0sim\0localhost\0".to_vec();
            b.extend_from_slice(b"The page should feel like a quiet walk through a town.\n");
            fs::write(dir.join(".conviction.md.swp"), b)
        }
        Noise::TrackerBackup => {
            let t = fs::read(build.join("EXECUTION-TRACKER.md")).unwrap_or_default();
            fs::write(build.join("EXECUTION-TRACKER.md~"), t)
        }
        Noise::CopyBack => {
            let aside = |suffix: &str| {
                let mut name = build.as_os_str().to_owned();
                name.push(suffix);
                std::path::PathBuf::from(name)
            };
            let stamp = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            let (copy, old) = (aside(".copy"), aside(&format!(".old-{stamp}")));
            // The live referee writes its own files meanwhile: a temp file of its that is gone
            // before `cp` reaches it fails the copy, which is made again.
            let mut tries = 0;
            loop {
                let st = Command::new("cp")
                    .arg("-a")
                    .arg(build)
                    .arg(&copy)
                    .stdout(Stdio::null())
                    .stderr(Stdio::null())
                    .status()?;
                if st.success() {
                    break;
                }
                tries += 1;
                if tries == 5 {
                    return Err(std::io::Error::other("cp -a failed five times"));
                }
                fs::remove_dir_all(&copy)?;
            }
            fs::rename(build, &old)?;
            fs::rename(&copy, build)?;
            // The live referee writes into the old directory until it sees the swap (at its
            // next heartbeat): what it leaves there stays, out of the build.
            for _ in 0..5 {
                if fs::remove_dir_all(&old).is_ok() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            Ok(())
        }
    }
}
