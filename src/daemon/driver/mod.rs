//! The loop: one thread that drives every session of the process.
//!
//! This module owns what sessions must not: the event source (one for the whole process: the
//! build directory, or under `--root` the root, watched recursively), the channel everything
//! arrives on (signals, the pipeline's exit, "this build has work"), which session an event
//! belongs to, the timers of all sessions, finding new build directories under `--root`, and
//! ending. It sleeps on the channel with a timeout to the earliest timer of any session, and
//! nothing else wakes it.
//!
//! Per-build queues ([`inbox`]): the event source's thread puts each change into its build's
//! queue, where what piles up is coalesced (one entry per path, folders past a bound), and tells
//! the loop once that the build waits. Builds take turns, round robin, one build's batch per turn
//! (one evaluation), with the channel looked at again between two: a build in a storm of events
//! holds up another build's STOP by at most one of its turns, its queue cannot grow without
//! bound, and the event source never waits on the loop. Under `--root` a build that just had a
//! turn cools down for a few times what the turn cost before its next (what arrives meanwhile is
//! coalesced into it), so a storm takes a bounded share of the loop. After lost events, builds
//! that only need a rescan wait while a build with events does.
//!
//! Reaction first: what arrives is handled before due timers, and between two sessions' timers
//! the channel is looked at again, so a violation landing while 500 heartbeats are due waits for
//! at most one of them. Threads are bounded whatever the number of builds: this loop, the event
//! source's, and the signal and `--exit-with` waiters.
//!
//! Here: the loop. Beside it: `sink` (the event source's events routed into the inbox),
//! `inbox` (the per-build queues), `barrier` (what a judgment waits for before it is published)
//! and `root` (`--root` discovery).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::exit::ExitCode;
use crate::fsevents::{self, Mode, Source};
use crate::protocol::Protocol;

use super::session::{Rewatch, Session};
use super::{heartbeat, signals, Config, DaemonError, EndReason, Outcome, RootOutcome, Shutdown};
use barrier::Cookies;

/// What arrives on the loop's one channel.
#[derive(Debug)]
enum Msg {
    /// A build has work waiting in the [`Inbox`] (sent once until its turn takes it).
    Ready(String),
    /// An event on a build directory itself; `lost`: it was deleted or moved (its watch is gone).
    /// `source`: which event source saw it (one still queued from a source already replaced is
    /// about a directory the loop has left).
    Dir {
        name: String,
        lost: bool,
        source: u64,
    },
    Rescan(String),
    Limit(String),
    PipelineExited(i32),
    Shutdown(Shutdown),
}

struct Driver {
    router: Router,
    /// `--root`: the options every build gets, and the protocol, loaded once.
    template: Option<(Config, Arc<Protocol>)>,
    mode: Mode,
    tx: Sender<Msg>,
    rx: Receiver<Msg>,
    /// Each build's changes, waiting for its turn.
    inbox: Arc<Inbox>,
    /// The judgments' barrier ([`barrier`]); `None` when no private folder could be made.
    cookies: Option<Arc<Cookies>>,
    /// Builds whose turn is due, in the order they became waiting (round robin: a build served
    /// goes to the back when more arrives for it).
    turns: VecDeque<String>,
    /// Builds that wait only for a rescan: served when no build with events waits.
    sweeps: VecDeque<String>,
    /// `--root`: a build that just took a turn, not served again before this (its next
    /// evaluation coalesces what arrives meanwhile: a storm costs a bounded share of the loop).
    cool: HashMap<String, Instant>,
    source: Option<Source>,
    /// Counts event sources started, to tell the current one's messages from stale ones.
    gen: u64,
    sessions: BTreeMap<String, Session>,
    /// Messages taken off the channel while timers ran: handled first at the next turn.
    carry: Vec<Msg>,
    /// The session whose timers ran last (timers go round, so none is starved).
    cursor: String,
    known: BTreeMap<String, Known>,
    outcomes: Vec<(String, Outcome)>,
    /// `--root`: when to list the root again (new builds, refused ones retried).
    next_look: Option<Instant>,
    /// `--root`: the whole run's timeout (when, and how long it was).
    timeout_at: Option<(Instant, std::time::Duration)>,
    ending: Option<EndReason>,
}

/// One build directory: the loop with one session, until it ends.
pub(super) fn run_one(
    config: Config,
    shutdown: Option<Receiver<Shutdown>>,
) -> Result<Outcome, DaemonError> {
    // Before anything is written: finishing at once "because the pipeline exited" would judge a
    // live pipeline's half-built directory as final.
    if let Some(pid) = config.exit_with {
        if !u32::try_from(pid).is_ok_and(heartbeat::pid_alive) {
            return Err(DaemonError::NoSuchPid { pid });
        }
    }
    let protocol = Arc::new(config.load_protocol()?);
    let mut session = Session::open(config.clone(), protocol, None)?;
    let mut d = Driver::new(session.canon().to_path_buf(), false, config.watch, None);
    // Watch before the first scan, so nothing written in between is missed.
    let warning = d.start_source()?;
    session.source_is(Ok(d.source_name()));
    session.announce(warning);
    d.forward(shutdown);
    if let Some(pid) = config.exit_with {
        let tx = d.tx.clone();
        let how = signals::watch_pid(pid, move || {
            let _ = tx.send(Msg::PipelineExited(pid));
        });
        session.pid_by_ticks = how == signals::PidWatch::Ticks;
    }
    session.barrier = d.barrier("");
    session.first_evaluation();
    d.sessions.insert(String::new(), session);
    d.run();
    Ok(d.outcomes
        .pop()
        .map(|(_, o)| o)
        .expect("the one session ended with an outcome"))
}

/// Every build directory under `root`, until shutdown (or the timeout).
pub(super) fn run_root(
    root: PathBuf,
    mut template: Config,
    shutdown: Option<Receiver<Shutdown>>,
) -> Result<RootOutcome, DaemonError> {
    let protocol = Arc::new(template.load_protocol()?);
    let canon = std::fs::canonicalize(&root).map_err(|source| DaemonError::BuildDir {
        path: root.to_path_buf(),
        source,
    })?;
    if !canon.is_dir() {
        return Err(DaemonError::NotADirectory {
            path: root.to_path_buf(),
        });
    }
    // Each build holds its event log open (and locked): allow as many files as the system does.
    let _ = rlimit::increase_nofile_limit(u64::MAX);
    let timeout = template.timeout.take();
    template.exit_with = None;
    template.build_dir = root;
    let mut d = Driver::new(canon, true, template.watch, Some((template, protocol)));
    d.timeout_at = timeout.map(|t| (Instant::now() + t, t));
    d.start_source()?;
    d.forward(shutdown);
    d.look();
    d.run();
    let exit = ExitCode::worst_of(d.outcomes.iter().map(|(_, o)| o.exit));
    Ok(RootOutcome {
        exit,
        builds: std::mem::take(&mut d.outcomes),
    })
}

impl Drop for Driver {
    fn drop(&mut self) {
        if let Some(c) = &self.cookies {
            c.close();
        }
    }
}

impl Driver {
    fn new(
        base: PathBuf,
        root: bool,
        mode: Mode,
        template: Option<(Config, Arc<Protocol>)>,
    ) -> Driver {
        let (tx, rx) = mpsc::channel();
        Driver {
            router: Router { base, root },
            template,
            mode,
            tx,
            rx,
            inbox: Arc::default(),
            cookies: Cookies::new(),
            turns: VecDeque::new(),
            sweeps: VecDeque::new(),
            cool: HashMap::new(),
            source: None,
            gen: 0,
            sessions: BTreeMap::new(),
            carry: Vec::new(),
            cursor: String::new(),
            known: BTreeMap::new(),
            outcomes: Vec::new(),
            next_look: root.then(Instant::now),
            timeout_at: None,
            ending: None,
        }
    }

    /// Forwards the first shutdown request into the loop's channel.
    fn forward(&self, shutdown: Option<Receiver<Shutdown>>) {
        let Some(srx) = shutdown else {
            return;
        };
        let tx = self.tx.clone();
        let _ = std::thread::Builder::new()
            .name("referee-shutdown".into())
            .spawn(move || {
                if let Ok(s) = srx.recv() {
                    let _ = tx.send(Msg::Shutdown(s));
                }
            });
    }

    fn source_name(&self) -> String {
        self.source
            .as_ref()
            .map_or_else(|| "nothing".into(), |s| s.kind.to_string())
    }

    /// Starts watching the base in the configured mode (the old source, if any, is dropped once
    /// the new one runs, so nothing is missed in between). Returns the fallback warning.
    fn start_source(&mut self) -> Result<Option<String>, fsevents::WatchError> {
        self.gen += 1;
        let sink = sink(
            self.router.clone(),
            self.gen,
            self.inbox.clone(),
            self.cookies.clone(),
            self.tx.clone(),
        );
        let mut source = fsevents::start(&self.router.base, self.mode, sink)?;
        if let Some(c) = &self.cookies {
            c.set_active(source.watch_also(c.dir()));
        }
        let warning = source.warning.clone();
        if let Some(w) = &warning {
            tracing::warn!("{w}");
        }
        self.source = Some(source);
        Ok(warning)
    }

    /// The barrier of the build `name`'s judgments ([`barrier`]).
    fn barrier(&self, name: &str) -> Option<super::session::Barrier> {
        self.cookies
            .as_ref()
            .map(|c| barrier::for_build(c, &self.inbox, name))
    }

    /// Restarts the source and tells every session what it watches with now.
    fn restart_source(&mut self) {
        let result = self.start_source().map(|_| self.source_name());
        if result.is_err() {
            self.source = None;
        }
        for s in self.sessions.values_mut() {
            s.source_is(result.as_ref().map(String::clone));
        }
    }

    fn run(&mut self) {
        loop {
            self.reap();
            if self.sessions.is_empty() && (!self.router.root || self.ending.is_some()) {
                return;
            }
            let mut msgs = std::mem::take(&mut self.carry);
            let wait = if self.waiting() {
                Duration::ZERO
            } else {
                self.next_deadline()
                    .saturating_duration_since(Instant::now())
            };
            if msgs.is_empty() && !wait.is_zero() {
                match self.rx.recv_timeout(wait) {
                    Ok(m) => msgs.push(m),
                    Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => {}
                }
            }
            // Read even when a timer is already due, so a signal or the pipeline's exit that
            // arrived during a long evaluation is acted on before the timer (which could end the
            // run otherwise). The channel holds little: a build's events wait in the inbox.
            msgs.extend(self.rx.try_iter());
            self.receive(msgs);
            // One build's turn, then what arrived meanwhile and the timers again: a build
            // flooded with events (its evaluation the longest) holds up another build's STOP by
            // at most one of its turns.
            self.turn();
            self.rewatch();
            self.timers();
            // A directory re-attached at a tick is watched anew before anything else arrives:
            // what the old source still has queued about the old directory is then stale.
            self.rewatch();
            if !self.waiting() {
                self.release_memory();
            }
        }
    }

    /// Whether a build's turn is due now.
    fn waiting(&self) -> bool {
        self.ending.is_none() && (!self.turns.is_empty() || !self.sweeps.is_empty())
    }

    fn next_deadline(&self) -> Instant {
        let sessions = self.sessions.values().map(Session::next_deadline);
        let own = [self.next_look, self.timeout_at.map(|t| t.0)]
            .into_iter()
            .flatten();
        // A build cooling down with work waiting is due when it has cooled.
        let cooling = self.cool.values().copied();
        sessions
            .chain(own)
            .chain(cooling)
            .min()
            .unwrap_or_else(|| Instant::now() + Duration::from_secs(3600))
    }

    /// Acts on what arrived: builds with work join the turns, the rest is done at once.
    fn receive(&mut self, msgs: Vec<Msg>) {
        let mut rescan = Vec::new();
        let mut limit = None;
        let mut look = false;
        for m in msgs {
            match m {
                Msg::Ready(name) => self.turns.push_back(name),
                Msg::Dir { name, lost, source } => {
                    look = true;
                    if self.inbox.dir(&name, lost && source == self.gen) {
                        self.turns.push_back(name);
                    }
                }
                Msg::Rescan(why) => rescan.push(why),
                Msg::Limit(m) => limit = Some(m),
                Msg::PipelineExited(pid) => self.end_all(EndReason::PipelineExited { pid }),
                Msg::Shutdown(s) => self.end_all(EndReason::Shutdown(s)),
            }
        }
        if self.ending.is_some() {
            // The final evaluation looks at everything anyway.
            return;
        }
        if let Some(message) = limit {
            let text = format!(
                "inotify watch limit reached while watching ({message}); switching to polling every {} ms — {}",
                fsevents::DEFAULT_POLL.as_millis(),
                fsevents::WATCH_LIMIT_HINT
            );
            tracing::warn!("{text}");
            self.mode = Mode::Poll(fsevents::DEFAULT_POLL);
            self.restart_source();
            rescan.push(text);
        }
        if !rescan.is_empty() {
            look = true;
            let names: Vec<String> = self.sessions.keys().cloned().collect();
            for name in names {
                let mut told = false;
                for why in &rescan {
                    told |= self.inbox.rescan(&name, why);
                }
                if told {
                    self.turns.push_back(name);
                }
            }
        }
        if look && self.router.root {
            self.look();
        }
    }

    /// Serves the next build whose turn it is: its changes since its last turn, as one batch.
    /// A build that only needs a rescan waits while a build with events does (after lost
    /// events every build is rescanned, one turn each, and a new violation goes first); under
    /// `--root` a build that just had a turn cools down first (see [`Driver::cool`]).
    fn turn(&mut self) {
        if self.ending.is_some() {
            return;
        }
        let now = Instant::now();
        let cooled: Vec<String> = self
            .cool
            .iter()
            .filter(|(_, t)| **t <= now)
            .map(|(n, _)| n.clone())
            .collect();
        for name in cooled {
            self.cool.remove(&name);
            if self.inbox.waits(&name) {
                self.turns.push_back(name);
            }
        }
        let name = loop {
            let Some(name) = self.turns.pop_front().or_else(|| self.sweeps.pop_front()) else {
                return;
            };
            if self.cool.contains_key(&name) {
                // Served when it has cooled (its work stays in the inbox, coalescing).
                continue;
            }
            if !self.sessions.contains_key(&name) {
                // Not (or no longer) a build with a session: a new one is looked at whole.
                drop(self.inbox.take(&name));
                continue;
            }
            if self.inbox.only_rescan(&name)
                && !self.turns.is_empty()
                && !self.sweeps.contains(&name)
            {
                self.sweeps.push_back(name);
                continue;
            }
            break name;
        };
        let Some(batch) = self.inbox.take(&name) else {
            return;
        };
        let Some(s) = self.sessions.get_mut(&name) else {
            return;
        };
        let started = Instant::now();
        let paths = batch.paths.len();
        s.handle(batch);
        let cost = started.elapsed();
        tracing::debug!(build = %name, paths, ms = cost.as_secs_f64() * 1e3, "turn");
        if let Some((template, _)) = &self.template {
            // Cool down for up to three times what the turn cost (at most a settle window):
            // a build kept busy takes at most a quarter of the loop, its events coalesced
            // meanwhile, and a build written now and then is never held.
            self.cool
                .insert(name, Instant::now() + (cost * 3).min(template.settle));
        }
    }

    fn end_all(&mut self, reason: EndReason) {
        for s in self.sessions.values_mut() {
            s.end_with(reason.clone());
        }
        self.ending.get_or_insert(reason);
    }

    /// What sessions asked of the event source: a re-created directory is watched anew (under
    /// `--root` the root's watch is renewed); one with nothing usable at its path is no longer
    /// watched (one build directory only: the root's watch stays).
    fn rewatch(&mut self) {
        let mut started = Vec::new();
        let mut drop = false;
        for (key, s) in self.sessions.iter_mut() {
            match s.take_rewatch() {
                Some(Rewatch::Start) => started.push(key.clone()),
                Some(Rewatch::Drop) => drop = true,
                None => {}
            }
        }
        if !started.is_empty() {
            if !self.router.root {
                if let Some(s) = self.sessions.values().next() {
                    self.router.base = s.canon().to_path_buf();
                }
            }
            self.restart_source();
            for key in &started {
                if let Some(s) = self.sessions.get_mut(key) {
                    s.watched_anew();
                }
            }
        } else if drop && !self.router.root {
            self.source = None;
        }
    }

    /// Runs every due timer, one session at a time, looking at the channel between two: what
    /// arrived is handled first, the rest of the timers at the next turn.
    fn timers(&mut self) {
        let now = Instant::now();
        if let Some((at, t)) = self.timeout_at {
            if at <= now {
                self.timeout_at = None;
                self.end_all(EndReason::Timeout(t));
                return;
            }
        }
        if self.next_look.is_some_and(|t| t <= now) {
            self.look();
        }
        let due: Vec<String> = {
            let after = self
                .sessions
                .range::<String, _>((
                    std::ops::Bound::Excluded(&self.cursor),
                    std::ops::Bound::Unbounded,
                ))
                .chain(self.sessions.range::<String, _>(..=&self.cursor));
            after
                .filter(|(_, s)| s.next_deadline() <= now)
                .map(|(n, _)| n.clone())
                .collect()
        };
        for name in due {
            if let Some(s) = self.sessions.get_mut(&name) {
                s.timers();
            }
            self.cursor = name;
            if let Ok(m) = self.rx.try_recv() {
                self.carry.push(m);
                break;
            }
        }
    }

    /// Finishes every session that should end, keeping its outcome.
    fn reap(&mut self) {
        let ended: Vec<(String, EndReason)> = self
            .sessions
            .iter_mut()
            .filter_map(|(n, s)| s.take_end().map(|r| (n.clone(), r)))
            .collect();
        for (name, reason) in ended {
            let Some(mut s) = self.sessions.remove(&name) else {
                continue;
            };
            let outcome = s.finish(reason);
            let id = crate::state::dir_id::DirId::of(s.dir()).ok();
            drop(s);
            self.known.insert(name.clone(), Known::Finished(id));
            self.outcomes.push((name, outcome));
        }
    }

    /// After evaluations (their snapshots, with every file they read, are gone by now), hands the
    /// freed memory back to the OS: glibc keeps freed heap for reuse, and a large read raises its
    /// mmap threshold so later ones land in that heap too — an idle daemon would otherwise hold
    /// the peak of its last evaluation. Runs once no build's turn is due: no latency.
    fn release_memory(&mut self) {
        let mut evaluated = false;
        for s in self.sessions.values_mut() {
            evaluated |= s.take_evaluated();
        }
        if !evaluated {
            return;
        }
        #[cfg(all(target_os = "linux", target_env = "gnu"))]
        // SAFETY: malloc_trim only returns free pages to the OS; no live allocation is touched.
        unsafe {
            libc::malloc_trim(0);
        }
    }
}

mod barrier;
mod inbox;
mod root;
mod sink;
#[cfg(test)]
mod tests;

use inbox::Inbox;
use root::Known;
use sink::{sink, Router};
