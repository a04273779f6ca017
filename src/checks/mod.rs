//! How a predicate is judged against a build directory as it stands: each predicate gives
//! an [`Outcome`] (pass, fail, missing, inconclusive) with the evidence that decided it.
//! This module knows nothing of passes, deadlines or statuses — turning "missing" into
//! WAITING or FAIL is the engine's job — and it never writes anything.
//!
//! One rule runs through every predicate: what cannot be read is never absent and never clean.
//! A file that matched but cannot be read (over the cap, a FIFO, permission denied) and a place
//! the walk could not list where a glob could match ([`Ctx::hidden`]) make a result that depends
//! on them INCONCLUSIVE, with the path and the cause; only a verdict the unknown part cannot
//! change (a forbidden hit found, a count already over its maximum, a file that exists) stands.

pub mod change;
mod files;
mod gates;
mod json;
mod kinds;
mod outcome;
mod secrets;
mod style;
mod text;
mod time;
mod tracker;
mod verdict;
pub mod weakened;

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::Arc;
use std::time::SystemTime;

use crate::artifacts::gates::{GateError, GateFile};
use crate::artifacts::markdown;
use crate::artifacts::tracker::Tracker;
use crate::artifacts::{Entry, FileData, Kind, ReadError, Snapshot};
use crate::protocol::predicate::{Glob, Predicate};
use crate::protocol::{Protocol, VerdictSpec};

pub use change::TaskScope;
pub use outcome::{clip, FileRef, Outcome, Verdict, MAX_DETAILS, MAX_DETAIL_CHARS};
pub use time::PHASE_GAP;
pub use verdict::RoundVerdict;

/// The pipeline's verdict.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PipelineVerdict {
    pub verdict: String,
    pub file: String,
    pub line: usize,
    pub complete: bool,
}

/// One gate-results file, parsed.
type GateParse = Result<GateFile, GateError>;

/// Everything a predicate may look at during one evaluation, with per-evaluation caches
/// so each file is read at most once and each glob matched at most once.
#[derive(Debug)]
pub struct Ctx<'a> {
    pub snap: &'a Snapshot,
    marker: Option<&'a str>,
    /// The execution tracker's file name, as the protocol names it.
    tracker: &'a str,
    pub verdict: Option<PipelineVerdict>,
    /// Verdict files with no readable verdict line, read before the verdict (newest first).
    pub verdict_unread: Vec<String>,
    /// How verdicts are read (the protocol's `[verdict]`), and what each of its globs (each
    /// round: the REFINE weaver, the main weaver) says, in order of precedence.
    verdict_spec: Option<&'a VerdictSpec>,
    verdict_rounds: Vec<RoundVerdict>,
    globs: RefCell<HashMap<String, Rc<Vec<usize>>>>,
    gates: RefCell<HashMap<String, Rc<GateParse>>>,
    /// What was found at an artifact's name that is not what the name must be, since the
    /// predicate being judged began ([`Ctx::files`], [`Ctx::read`], [`Ctx::tracker`] record it;
    /// [`judge`] turns it into that predicate's FAIL).
    wrong: RefCell<Vec<String>>,
    /// What the referee saw and when ([`crate::state::observed`]); `None`: the claims alone.
    pub seen: Option<&'a crate::state::observed::Observed>,
}

/// A [`Ctx`] without its caches: the verdict read once, to judge the same evaluation on
/// another thread with caches and a record of what is present and wrong of its own.
#[derive(Debug)]
pub struct Seed<'a> {
    snap: &'a Snapshot,
    marker: Option<&'a str>,
    tracker: &'a str,
    verdict: Option<PipelineVerdict>,
    verdict_unread: Vec<String>,
    verdict_spec: Option<&'a VerdictSpec>,
    verdict_rounds: Vec<RoundVerdict>,
    seen: Option<&'a crate::state::observed::Observed>,
}

impl<'a> Seed<'a> {
    fn of(ctx: &Ctx<'a>) -> Seed<'a> {
        Seed {
            snap: ctx.snap,
            marker: ctx.marker,
            tracker: ctx.tracker,
            verdict: ctx.verdict.clone(),
            verdict_unread: ctx.verdict_unread.clone(),
            verdict_spec: ctx.verdict_spec,
            verdict_rounds: ctx.verdict_rounds.clone(),
            seen: ctx.seen,
        }
    }

    /// A context sharing nothing mutable with the one this seed came from.
    pub fn ctx(self) -> Ctx<'a> {
        Ctx {
            snap: self.snap,
            marker: self.marker,
            tracker: self.tracker,
            verdict: self.verdict,
            verdict_unread: self.verdict_unread,
            verdict_spec: self.verdict_spec,
            verdict_rounds: self.verdict_rounds,
            globs: RefCell::new(HashMap::new()),
            gates: RefCell::new(HashMap::new()),
            wrong: RefCell::new(Vec::new()),
            seen: self.seen,
        }
    }
}

impl<'a> Ctx<'a> {
    pub fn new(protocol: &'a Protocol, snap: &'a Snapshot) -> Ctx<'a> {
        let mut ctx = Ctx {
            snap,
            marker: protocol.variant_marker.as_deref(),
            tracker: &protocol.tracker,
            verdict: None,
            verdict_unread: Vec::new(),
            verdict_spec: protocol.verdict_spec(),
            verdict_rounds: Vec::new(),
            globs: RefCell::new(HashMap::new()),
            gates: RefCell::new(HashMap::new()),
            wrong: RefCell::new(Vec::new()),
            seen: None,
        };
        if let Some(spec) = protocol.verdict_spec() {
            (ctx.verdict, ctx.verdict_unread, ctx.verdict_rounds) = find_verdict(&ctx, spec);
            // Reported in `verdict_unread`; no predicate was being judged.
            ctx.wrong.borrow_mut().clear();
        }
        ctx
    }

    /// What a context for the same evaluation on another thread is made from.
    pub fn seed(&self) -> Seed<'a> {
        Seed::of(self)
    }

    /// Says which verdict files exist but have no readable verdict line, when any does (and
    /// would have been read before the verdict that counts).
    pub fn verdict_note(&self) -> Option<String> {
        (!self.verdict_unread.is_empty()).then(|| {
            self.verdict_unread
                .iter()
                .map(|f| format!("{f} exists but has no readable VERDICT line"))
                .collect::<Vec<_>>()
                .join("; ")
        })
    }

    pub fn complete(&self) -> bool {
        self.verdict.as_ref().is_some_and(|v| v.complete)
    }

    /// Entries matching a glob, in path order, of any type. The referee's own files never
    /// match. Private: what a predicate sees of a glob comes through [`Ctx::files`].
    fn matches(&self, glob: &Glob) -> Vec<&'a Entry> {
        let entries = self.snap.entries();
        let idx = self.match_indices(glob);
        idx.iter().map(|&i| &entries[i]).collect()
    }

    /// Evidence lines for the places the walk could not look into (a directory that could not be
    /// listed, an entry that could not be examined) where `glob` could match something: what is
    /// there is unknown, so a result that rests on the glob's matches cannot be decided.
    /// Conservative: a place counts when the glob's literal prefix and the place's path agree.
    pub fn hidden(&self, glob: &Glob) -> Vec<String> {
        let unlisted = self.snap.unlisted();
        if unlisted.is_empty() || !glob.is_resolved() {
            return Vec::new();
        }
        let src = glob.as_str();
        let prefix = literal_prefix(src);
        let nested = glob.nested();
        let marker_ok = |rel: &str| match self.marker {
            Some(m) if !src.contains(m) => !top_component(rel).contains(m),
            _ => true,
        };
        unlisted
            .iter()
            .filter(|u| {
                if u.rel.is_empty() {
                    return true;
                }
                if !marker_ok(&u.rel) || is_own_file(&u.rel) || crate::artifacts::not_input(&u.rel)
                {
                    return false;
                }
                // The place itself was not listed and the glob names it.
                let itself = self.snap.get(&u.rel).is_none()
                    && (nested || !u.rel.contains('/'))
                    && glob.is_match(&u.rel);
                // Something under the place: only a nested glob reaches below the top level.
                let under = format!("{}/", u.rel);
                let below = nested && (prefix.starts_with(&under) || under.starts_with(prefix));
                itself || below
            })
            .map(|u| u.describe())
            .collect()
    }

    fn match_indices(&self, glob: &Glob) -> Rc<Vec<usize>> {
        if let Some(hit) = self.globs.borrow().get(glob.as_str()) {
            return hit.clone();
        }
        let found = Rc::new(self.compute_matches(glob));
        self.globs
            .borrow_mut()
            .insert(glob.as_str().to_string(), found.clone());
        found
    }

    fn compute_matches(&self, glob: &Glob) -> Vec<usize> {
        if !glob.is_resolved() {
            return Vec::new();
        }
        let entries = self.snap.entries();
        let src = glob.as_str();
        // Entries are sorted by path, so all paths with the glob's literal prefix are one run.
        let prefix = literal_prefix(src);
        let start = entries.partition_point(|e| e.rel.as_str() < prefix);
        let marker_ok = |rel: &str| match self.marker {
            Some(m) if !src.contains(m) => !top_component(rel).contains(m),
            _ => true,
        };
        let nested = glob.nested();
        // A prefix with a `/` fixes the top component of every entry in the run, and with it the
        // marker test: made once, not per entry (with 30,000 screenshots the per-entry
        // `contains` was 1.2 million `memcmp` calls in one `verify`).
        let top_ok = prefix.contains('/').then(|| marker_ok(prefix));
        // A glob without wildcards names one path: the run is that entry alone, not everything
        // below it (`screenshots/1440/` is one directory, not its 10,000 screenshots).
        let literal = !src.contains(['*', '?', '[', '{', '\\']);
        // The run ends where the prefix does: found by binary search, not compared per entry.
        let end = start + entries[start..].partition_point(|e| e.rel.starts_with(prefix));
        let mut out = Vec::new();
        for (i, e) in entries.iter().enumerate().take(end).skip(start) {
            if literal && e.rel.len() > prefix.len() {
                break;
            }
            // An own file is at the top level: a prefix with a `/` has none in its run.
            if (!nested && e.depth != 1)
                || (top_ok.is_none() && is_own_file(&e.rel))
                || !top_ok.unwrap_or_else(|| marker_ok(&e.rel))
            {
                continue;
            }
            // An editor's lock, swap or backup file, or anything in a `.git` folder: no input.
            if glob.is_match(&e.rel) && !crate::artifacts::ignored::listed_not_input(&e.rel) {
                out.push(i);
            }
        }
        out
    }

    /// Reads a file (cached) and describes it for evidence.
    /// A read refused for what is at `rel` (not a regular file) is recorded as present and
    /// wrong (see [`Ctx::files`]).
    pub fn read(&self, rel: &str) -> Result<Arc<FileData>, ReadError> {
        let read = self.snap.read(rel);
        if let Err(e) = &read {
            self.note_refused(e);
        }
        read
    }

    /// The execution tracker's file name, as the protocol names it.
    pub fn tracker_file(&self) -> &'a str {
        self.tracker
    }

    /// The parsed tracker; one that is not a regular file is recorded as present and wrong.
    pub fn tracker(&self) -> Option<Result<Arc<Tracker>, ReadError>> {
        let tracker = self.snap.tracker(self.tracker);
        if let Some(Err(e)) = &tracker {
            self.note_refused(e);
        }
        tracker
    }

    /// Evidence for a file: with its hash when it was (or can be) read.
    pub fn file_ref(&self, e: &Entry) -> FileRef {
        let sha256 = match e.kind {
            Kind::File => self.snap.read(&e.rel).ok().map(|d| d.sha256.clone()),
            _ => None,
        };
        FileRef {
            path: e.rel.clone(),
            size: e.size(),
            sha256,
            mtime: e.mtime().map(format_time),
        }
    }

    /// Evidence for an entry whose content the verdict does not rest on (it exists, it is
    /// counted): never reads it, so screenshots are counted, never read. Without a hash: the
    /// evaluation adds the hash of a file that any check read once all are judged (whether
    /// one had read it by now depends on the order the checks run in on two threads).
    pub fn entry_ref(&self, e: &Entry) -> FileRef {
        FileRef {
            path: e.rel.clone(),
            size: e.size(),
            sha256: None,
            mtime: e.mtime().map(format_time),
        }
    }

    pub fn data_ref(d: &FileData) -> FileRef {
        FileRef {
            path: d.rel.clone(),
            size: d.size,
            sha256: Some(d.sha256.clone()),
            mtime: d.mtime.map(format_time),
        }
    }

    /// Gate entries of one file, parsed once per evaluation.
    fn gate_file(&self, rel: &str) -> Rc<GateParse> {
        if let Some(hit) = self.gates.borrow().get(rel) {
            return hit.clone();
        }
        let parsed = match self.snap.read(rel) {
            Ok(data) => crate::artifacts::gates::parse_gates(&data.bytes, rel),
            Err(e) => Err(GateError {
                message: e.to_string(),
                line: 0,
                column: 0,
            }),
        };
        let parsed = Rc::new(parsed);
        self.gates
            .borrow_mut()
            .insert(rel.to_string(), parsed.clone());
        parsed
    }
}

/// The referee's own files (and the temp files it renames into place) are never inputs.
pub fn is_own_file(rel: &str) -> bool {
    let top = top_component(rel);
    !rel.contains('/') && (top.starts_with("OBSERVER-") || top.starts_with(".OBSERVER-"))
}

fn top_component(rel: &str) -> &str {
    rel.split('/').next().unwrap_or(rel)
}

/// Bytes of reports from which a rule's per-file work is shared by two threads.
const SPLIT_BYTES: usize = 4 << 20;

/// `f` over `items`, the results in order: on two threads when `big`, each taking the next
/// item as soon as it is free (one item per call), so that neither waits long for the other
/// at the end (in halves, the half with one report more ran on alone for a report's time).
/// Items a panicking second thread took (a bug) are done again on this one rather than lost.
fn on_two_threads<T: Sync, R: Send>(
    items: &[T],
    big: bool,
    f: impl Fn(&[T]) -> Vec<R> + Sync,
) -> Vec<R> {
    use std::sync::atomic::{AtomicUsize, Ordering};
    if !big || items.len() < 2 {
        return f(items);
    }
    let next = AtomicUsize::new(0);
    let work = || {
        let mut done = Vec::new();
        loop {
            let i = next.fetch_add(1, Ordering::Relaxed);
            let Some(item) = items.get(i..=i) else {
                return done;
            };
            done.push((i, f(item)));
        }
    };
    let mut done = std::thread::scope(|scope| {
        let second = scope.spawn(work);
        let mut mine = work();
        if let Ok(theirs) = second.join() {
            mine.extend(theirs);
        }
        mine
    });
    done.sort_unstable_by_key(|(i, _)| *i);
    let mut out = Vec::new();
    let mut expect = 0;
    for (i, r) in done {
        // What the second thread took before it panicked, again here.
        for lost in expect..i {
            out.extend(f(&items[lost..=lost]));
        }
        out.extend(r);
        expect = i + 1;
    }
    for lost in expect..items.len() {
        out.extend(f(&items[lost..=lost]));
    }
    out
}

fn literal_prefix(glob: &str) -> &str {
    // Entries are sorted by path, so every path starting with these bytes is one run.
    match glob.find(['*', '?', '[', '{', '\\']) {
        Some(end) => &glob[..end],
        None => glob.trim_end_matches('/'),
    }
}

pub fn format_time(t: SystemTime) -> String {
    chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

/// The pipeline's verdict, the verdict files read before it that have none, and what each
/// verdict glob (each round) says: a weaver file whose verdict cannot be read must be visible,
/// never silently "not complete".
///
/// The rounds are read in order of precedence, and the first round with a file decides: its
/// verdict, or none when none of its files has a readable one. An older round's verdict never
/// stands in for a later round's that cannot be read (a REFINE weaver without a readable verdict
/// leaves the pipeline not known to be complete, whatever the main weaver said).
fn find_verdict(
    ctx: &Ctx<'_>,
    spec: &VerdictSpec,
) -> (Option<PipelineVerdict>, Vec<String>, Vec<RoundVerdict>) {
    let rounds: Vec<RoundVerdict> = spec
        .files
        .iter()
        .map(|glob| round_verdict(ctx, spec, glob))
        .collect();
    let mut unread = Vec::new();
    let mut found = None;
    if let Some(round) = rounds.iter().find(|r| r.present) {
        unread.extend(round.unread.iter().cloned());
        found = round.verdict.clone().map(|mut v| {
            v.complete = spec.complete.contains(&v.verdict);
            v
        });
    }
    (found, unread, rounds)
}

/// What the files of one verdict glob say: the newest file with a readable verdict line decides
/// (within a file the last verdict line is the final word); a newer file with none is noted.
/// Each file is read as its reader sees it (see [`read_verdict`]): a line in an HTML comment (a
/// template's `<!-- VERDICT: SHIP | HALT -->`) is never the verdict.
fn round_verdict(ctx: &Ctx<'_>, spec: &VerdictSpec, glob: &Glob) -> RoundVerdict {
    let mut round = RoundVerdict {
        glob: glob.as_str().to_string(),
        ..RoundVerdict::default()
    };
    let Some(regex) = spec.pattern.regex() else {
        return round;
    };
    let (files, other) = ctx.files(glob);
    round.present = !files.is_empty() || !other.is_empty();
    // Something at a verdict file's name that is not a file: what it says is unknown.
    let wrong: Vec<String> = other
        .iter()
        .filter_map(|e| Some(format!("{} ({})", e.rel, e.not_a_file()?)))
        .collect();
    if !wrong.is_empty() {
        round.unread.extend(wrong);
        return round;
    }
    // Newest file first.
    let mut files = files;
    files.sort_by_key(|e| std::cmp::Reverse(e.mtime()));
    for e in files {
        // The newest verdict file cannot be read: the latest verdict is unknown, and an
        // older file's must not stand in for it (the pipeline is not known to be complete).
        let data = match ctx.read(&e.rel) {
            Ok(data) => data,
            Err(err) => {
                round.unread.push(format!("{} ({err})", e.rel));
                return round;
            }
        };
        let found = read_verdict(&data.bytes, regex);
        match found {
            Some((line, verdict)) => {
                round.verdict = Some(PipelineVerdict {
                    complete: spec.complete.contains(&verdict),
                    verdict,
                    file: e.rel.clone(),
                    line,
                });
                return round;
            }
            None => round.unread.push(e.rel.clone()),
        }
    }
    round
}

/// The verdict a weaver file gives, read as its reader sees it: the last line of the page
/// (a paragraph's line, a heading, a list item, a table row, read as seen: markup, no-break
/// and zero-width spaces, look-alike letters) that the pattern matches; only when the page has
/// none, the last such line shown in a code or HTML block (a weaver's whole answer wrapped in a
/// fence). A line in an HTML comment is never read: nobody sees it. The verdict in upper case
/// with single spaces, and the line it is on.
fn read_verdict(bytes: &[u8], regex: &regex_automata::meta::Regex) -> Option<(usize, String)> {
    let text = crate::artifacts::normalize::seen::document(bytes);
    let doc = markdown::parse(&text);
    let mut caps = regex.create_captures();
    let mut on_page = None;
    let mut in_block = None;
    for line in &doc.lines {
        regex.captures(line.text.as_bytes(), &mut caps);
        let Some(m) = caps.get_group(1).or_else(|| caps.get_group(0)) else {
            continue;
        };
        let verdict = line.text[m.range()]
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .to_uppercase();
        let slot = match line.inside {
            None => &mut on_page,
            Some(_) => &mut in_block,
        };
        *slot = Some((line.at.line, verdict));
    }
    on_page.or(in_block)
}

/// What a predicate is judged against: a build directory ([`Ctx`]), one task attempt in a
/// workspace ([`change::TaskScope`]), or a workspace as a whole outside any task attempt
/// ([`crate::workspace::Workspace`], the passes of a workspace protocol without `for_each`).
///
/// The composites (`all`, `any`, `not`, `if`, `fail_if_missing`, `always`) are judged alike
/// for every subject ([`judge`]); each subject judges the leaves it can read, with functions
/// that take that subject and nothing else: a task attempt's predicate takes a
/// [`change::TaskScope`], so judging one against a build directory cannot be written, and a
/// leaf the subject does not have is INCONCLUSIVE with the reason.
pub trait Subject {
    /// A leaf predicate judged against this subject (a composite goes back to [`judge`]).
    fn leaf(&self, p: &Predicate) -> Outcome;

    /// How many present-and-wrong findings the subject has recorded so far (see
    /// [`Ctx::files`]); a subject that records none has none.
    fn wrong_mark(&self) -> usize {
        0
    }

    /// The present-and-wrong findings recorded since `mark`, taken out of the record.
    fn wrong_since(&self, _mark: usize) -> Vec<String> {
        Vec::new()
    }
}

impl Subject for Ctx<'_> {
    fn leaf(&self, p: &Predicate) -> Outcome {
        use Predicate as P;
        let ctx = self;
        match p {
            P::All(_) | P::Any(_) | P::Not(_) | P::If(_) | P::FailIfMissing(_) | P::Always(_) => {
                judge_parts(ctx, p)
            }
            P::Complete(want) => {
                let mut observed = match &ctx.verdict {
                    Some(v) => format!("verdict {} ({}:{})", v.verdict, v.file, v.line),
                    None => "no verdict".to_string(),
                };
                if let Some(note) = ctx.verdict_note() {
                    observed.push_str(&format!("; {note}"));
                }
                let v = if ctx.complete() == *want {
                    Verdict::Pass
                } else {
                    Verdict::Missing
                };
                Outcome::new(v, format!("pipeline complete = {want}"), observed)
            }
            P::Verdict(v) => verdict::verdict(ctx, v),
            P::Exists(globs) => files::exists(ctx, globs.as_slice()),
            P::Count(c) => files::count(ctx, c),
            P::FileSet(f) => files::file_set(ctx, f),
            P::Heading(h) => files::heading(ctx, h),
            P::Json(j) => json::json(ctx, j),
            P::Dissimilar(d) => files::dissimilar(ctx, d),
            P::PathsListed(p) => files::paths_listed(ctx, p),
            P::Filled(fields) => tracker::filled(ctx, fields.as_slice()),
            P::SectionFilled(s) => tracker::section_filled(ctx, s),
            P::FieldMatches(f) => tracker::field_matches(ctx, f),
            P::Column(c) => tracker::column(ctx, c),
            P::FillRate(f) => tracker::fill_rate(ctx, f),
            P::Distinct(fields) => tracker::distinct(ctx, fields),
            P::HasTime(t) => time::has_time(ctx, t),
            P::TimeOrder(t) => time::time_order(ctx, t),
            P::Text(t) => text::text(ctx, t),
            P::Gate(g) => gates::gate(ctx, g),
            P::GateFiles(g) => gates::gate_files(ctx, g),
            P::GateCount(g) => gates::gate_count(ctx, g),
            P::GateSources(g) => gates::gate_sources(ctx, g),
            P::Parses(p) if p.files.is_some() => json::parses_files(ctx, p),
            P::TaskRecord(_)
            | P::Unchanged(_)
            | P::ChangesListed(_)
            | P::HashesMatch(_)
            | P::NoLoss(_)
            | P::Parses(_)
            | P::SizeLimit(_)
            | P::AddedLines(_)
            | P::RecordField(_)
            | P::Style(_)
            | P::Weakened(_) => change::outside_task(),
        }
    }

    fn wrong_mark(&self) -> usize {
        self.wrong.borrow().len()
    }

    fn wrong_since(&self, mark: usize) -> Vec<String> {
        self.wrong.borrow_mut().split_off(mark)
    }
}

impl Subject for TaskScope<'_> {
    fn leaf(&self, p: &Predicate) -> Outcome {
        use Predicate as P;
        match p {
            P::All(_) | P::Any(_) | P::Not(_) | P::If(_) | P::FailIfMissing(_) | P::Always(_) => {
                judge_parts(self, p)
            }
            P::TaskRecord(_) => change::task_record(self),
            P::Unchanged(u) => change::unchanged(self, u),
            P::ChangesListed(_) => change::changes_listed(self),
            P::HashesMatch(_) => change::hashes_match(self),
            P::NoLoss(_) => change::no_loss(self),
            P::Parses(p) if p.files.is_none() => change::parses(self, p),
            P::SizeLimit(l) => change::size_limit(self, l),
            P::AddedLines(a) => secrets::added_lines(self, a),
            P::RecordField(r) => change::record_field(self, r),
            P::Style(st) => style::style(self, st),
            P::Weakened(_) => weakened::weakened(self),
            P::Complete(_)
            | P::Verdict(_)
            | P::Exists(_)
            | P::Count(_)
            | P::FileSet(_)
            | P::Filled(_)
            | P::SectionFilled(_)
            | P::FieldMatches(_)
            | P::Column(_)
            | P::HasTime(_)
            | P::TimeOrder(_)
            | P::Distinct(_)
            | P::Dissimilar(_)
            | P::Text(_)
            | P::Heading(_)
            | P::Json(_)
            | P::FillRate(_)
            | P::Gate(_)
            | P::GateFiles(_)
            | P::GateCount(_)
            | P::GateSources(_)
            | P::PathsListed(_)
            | P::Parses(_) => change::outside_build(),
        }
    }
}

/// A workspace as a whole, outside any task attempt (a workspace protocol's pass without
/// `for_each`): it has no build directory's artifacts and no task record, so only the
/// composites are judged; every leaf says which subject it needs.
impl Subject for crate::workspace::Workspace {
    fn leaf(&self, p: &Predicate) -> Outcome {
        use Predicate as P;
        match p {
            P::All(_) | P::Any(_) | P::Not(_) | P::If(_) | P::FailIfMissing(_) | P::Always(_) => {
                judge_parts(self, p)
            }
            P::TaskRecord(_)
            | P::Unchanged(_)
            | P::ChangesListed(_)
            | P::HashesMatch(_)
            | P::NoLoss(_)
            | P::SizeLimit(_)
            | P::AddedLines(_)
            | P::RecordField(_)
            | P::Style(_)
            | P::Weakened(_) => change::outside_task(),
            P::Parses(p) if p.files.is_none() => change::outside_task(),
            _build => change::outside_build(),
        }
    }
}

/// Judges a predicate against its subject. Whatever it found present and wrong at an
/// artifact's name (see [`Ctx::files`]) makes it FAIL, with what is there in its evidence.
pub fn judge<S: Subject + ?Sized>(s: &S, p: &Predicate) -> Outcome {
    let mark = s.wrong_mark();
    let mut o = judge_parts(s, p);
    // Whether a composite's FAIL would survive an append depends on every part it looked at:
    // only a leaf says so (and `fail_if_missing`, which never turns a FAIL into anything else).
    if matches!(
        p,
        Predicate::All(_) | Predicate::Any(_) | Predicate::Not(_) | Predicate::If(_)
    ) {
        o.stands = false;
    }
    // A composite's parts took theirs; only a leaf leaves any here.
    let wrong = s.wrong_since(mark);
    if !wrong.is_empty() {
        o.present_and_wrong(wrong);
    }
    o
}

/// The composites, judged alike for every subject; a leaf is the subject's.
fn judge_parts<S: Subject + ?Sized>(ctx: &S, p: &Predicate) -> Outcome {
    use Predicate as P;
    match p {
        P::All(parts) => {
            let parts: Vec<Outcome> = parts.iter().map(|p| judge(ctx, p)).collect();
            let worst = parts
                .iter()
                .map(|o| o.verdict)
                .max()
                .unwrap_or(Verdict::Pass);
            // Say what decided the result (the failing parts, unless all passed), but keep
            // every file any part rests on: the shown parts' first, then the others'.
            if worst == Verdict::Pass {
                return Outcome::combine(worst, parts);
            }
            let (shown, passed): (Vec<Outcome>, Vec<Outcome>) =
                parts.into_iter().partition(|o| o.verdict != Verdict::Pass);
            let mut out = Outcome::combine(worst, shown);
            for f in passed.into_iter().flat_map(|o| o.files) {
                out.push_file(f);
            }
            out
        }
        P::Any(parts) => {
            let parts: Vec<Outcome> = parts.iter().map(|p| judge(ctx, p)).collect();
            if let Some(pos) = parts.iter().position(|o| o.verdict == Verdict::Pass) {
                let mut parts = parts;
                return parts.swap_remove(pos);
            }
            // No alternative holds: one that is present and wrong is what there is to say.
            let mildest = match parts.iter().any(|o| o.wrong) {
                true => Verdict::Fail,
                false => parts
                    .iter()
                    .map(|o| o.verdict)
                    .min()
                    .unwrap_or(Verdict::Missing),
            };
            Outcome::combine(mildest, parts)
        }
        P::Not(inner) => {
            let o = judge(ctx, inner);
            // What cannot be decided stays undecided: "not unknown" is not a pass; and a
            // directory where a file belongs is not "no file there", it is wrong.
            let verdict = match o.verdict {
                _ if o.wrong => Verdict::Fail,
                Verdict::Pass => Verdict::Fail,
                Verdict::Inconclusive => Verdict::Inconclusive,
                Verdict::Missing | Verdict::Fail => Verdict::Pass,
            };
            Outcome { verdict, ..o }
        }
        P::If(i) => {
            let cond = judge(ctx, &i.cond);
            // A condition resting on something present and wrong chooses no branch: it FAILs.
            if cond.wrong {
                return cond;
            }
            match cond.verdict {
                Verdict::Pass => judge(ctx, &i.then),
                // A condition that cannot be decided (an unreadable tracker) must not choose
                // the other branch, which would pass on what could not be read.
                Verdict::Inconclusive => cond,
                _ => match &i.otherwise {
                    Some(e) => judge(ctx, e),
                    None => Outcome::pass("(condition not met)", "not applicable"),
                },
            }
        }
        P::FailIfMissing(inner) => {
            let mut o = judge(ctx, inner);
            if o.verdict == Verdict::Missing {
                o.verdict = Verdict::Fail;
            }
            o
        }
        P::Always(b) => {
            let v = if *b { Verdict::Pass } else { Verdict::Missing };
            Outcome::new(v, "always", b.to_string())
        }
        leaf => ctx.leaf(leaf),
    }
}

/// Whether a condition holds (its predicate passes).
pub fn holds<S: Subject + ?Sized>(ctx: &S, p: &Predicate) -> bool {
    judge(ctx, p).verdict == Verdict::Pass
}

/// The tracker, or the outcome to report when it cannot be had: absent is missing, present but
/// unreadable (or not examinable) is INCONCLUSIVE with the cause.
fn with_tracker(ctx: &Ctx<'_>) -> Result<Arc<Tracker>, Outcome> {
    let name = ctx.tracker_file();
    match ctx.tracker() {
        None => Err(Outcome::new(
            Verdict::Missing,
            name,
            format!("{name} does not exist"),
        )),
        Some(Err(e)) => Err(unreadable(name, &e)),
        Some(Ok(t)) => Ok(t),
    }
}

/// The outcome for a file that exists but cannot be read.
fn unreadable(what: &str, e: &ReadError) -> Outcome {
    let verdict = match e {
        ReadError::NotFound(_) => Verdict::Missing,
        _ => Verdict::Inconclusive,
    };
    Outcome::new(verdict, format!("{what} readable"), e.to_string())
}

#[cfg(test)]
mod tests;
