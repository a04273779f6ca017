//! The simulated run as data: the steps an orchestrator takes (phases written by honest writers,
//! phase boundaries, hostile edits, honest noise, re-runs) and the logical state they leave. The
//! bytes on disk are rendered from the logical state (`render`), the expected verdicts are read
//! from it (`reference`): the simulator knows what it wrote, so it knows the answer.

use std::collections::{BTreeMap, BTreeSet};

use crate::text::Spell;

/// A phase of the D10 run, in the order an honest orchestrator writes them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Phase {
    P0,
    P1,
    P2,
    P3A,
    P3B,
    P3BInt,
    P3C,
    RInputs,
    RBuild,
    R3A,
    R3B,
    R3BInt,
    R3C,
}

impl Phase {
    pub const MAIN: &'static [Phase] = &[
        Phase::P0,
        Phase::P1,
        Phase::P2,
        Phase::P3A,
        Phase::P3B,
        Phase::P3BInt,
        Phase::P3C,
    ];
    pub const REFINE: &'static [Phase] = &[
        Phase::RInputs,
        Phase::RBuild,
        Phase::R3A,
        Phase::R3B,
        Phase::R3BInt,
        Phase::R3C,
    ];
    pub fn tag(self) -> &'static str {
        match self {
            Phase::P0 => "phase:0",
            Phase::P1 => "phase:1",
            Phase::P2 => "phase:2",
            Phase::P3A => "phase:3a",
            Phase::P3B => "phase:3b",
            Phase::P3BInt => "phase:3b-int",
            Phase::P3C => "phase:3c",
            Phase::RInputs => "phase:r-inputs",
            Phase::RBuild => "phase:r-build",
            Phase::R3A => "phase:r-3a",
            Phase::R3B => "phase:r-3b",
            Phase::R3BInt => "phase:r-3b-int",
            Phase::R3C => "phase:r-3c",
        }
    }
}

/// How a file reaches the build directory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Writer {
    /// Temp file beside it, then rename.
    Atomic,
    /// Open with truncation, write half, pause, write the rest.
    Truncate,
    /// Line by line (a JSON gate runner streaming entry by entry), each line flushed.
    Stream,
    /// Random-sized chunks with pauses.
    Chunked,
    /// `dd` fed slowly through a pipe.
    Dd,
    /// `cp SRC DST` from a staging folder (a folder: `cp -r`).
    Cp,
    /// `cp -a`: mtimes kept.
    CpA,
    /// `rsync -a`: its own temp file in the folder, then rename; mtimes kept.
    Rsync,
    /// A `tar` archive of the files, in shuffled order, extracted with mtimes kept.
    Tar,
    /// An editor that renames the old file to `NAME~` and writes a new one (with a swap file).
    EditorBackup,
    /// An editor that removes the file and writes it again.
    EditorRemove,
    /// Emacs: a dangling `.#NAME` lock link while editing, backup by rename, then the write.
    Emacs,
    /// Windows PowerShell 5.1 `Out-File`: UTF-16LE with a BOM and CRLF, truncate and write.
    PowerShell,
    /// A Windows tool writing UTF-8 with CRLF line ends (atomic).
    Crlf,
    /// Hostile: the file is a hard link to one outside the build, changed through the outside
    /// path (no event in the build directory).
    HardLink,
    /// Hostile: changed in place through python's `mmap` (no write(2), no event).
    Mmap,
}

impl Writer {
    pub const HONEST_FILE: &'static [Writer] = &[
        Writer::Atomic,
        Writer::Truncate,
        Writer::Stream,
        Writer::Chunked,
        Writer::Dd,
        Writer::Cp,
        Writer::CpA,
        Writer::Rsync,
        Writer::Tar,
        Writer::EditorBackup,
        Writer::EditorRemove,
        Writer::Emacs,
        Writer::PowerShell,
        Writer::Crlf,
    ];
    pub const HOSTILE_EXTRA: &'static [Writer] = &[Writer::HardLink, Writer::Mmap];

    pub fn tag(self) -> &'static str {
        match self {
            Writer::Atomic => "writer:atomic",
            Writer::Truncate => "writer:truncate",
            Writer::Stream => "writer:stream",
            Writer::Chunked => "writer:chunked",
            Writer::Dd => "writer:dd",
            Writer::Cp => "writer:cp",
            Writer::CpA => "writer:cp-a",
            Writer::Rsync => "writer:rsync",
            Writer::Tar => "writer:tar",
            Writer::EditorBackup => "writer:editor-backup",
            Writer::EditorRemove => "writer:editor-remove",
            Writer::Emacs => "writer:emacs",
            Writer::PowerShell => "writer:powershell",
            Writer::Crlf => "writer:crlf",
            Writer::HardLink => "writer:hard-link",
            Writer::Mmap => "writer:mmap",
        }
    }

    /// Writes that make no file event in the build directory.
    pub fn eventless(self) -> bool {
        matches!(self, Writer::HardLink | Writer::Mmap)
    }
}

/// How the tracker's times are written: the same instants, as the tools people use write them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeStyle {
    /// `2026-02-25T10:05:00Z`.
    IsoZ,
    /// `2026-02-25 10:05`: to the minute (the seconds dropped).
    Minute,
    /// `2026-02-25T12:05:00+0200`: Python's `%z`, two hours east.
    PythonOffset,
    /// `2026-02-25 12:05:00+02:00`: Python's `str()` of an aware `datetime`, two hours east.
    SpacedOffset,
}

impl TimeStyle {
    pub fn render(self, h: u32, m: u32, s: u32) -> String {
        match self {
            TimeStyle::IsoZ => format!("2026-02-25T{h:02}:{m:02}:{s:02}Z"),
            TimeStyle::Minute => format!("2026-02-25 {h:02}:{m:02}"),
            TimeStyle::PythonOffset => format!("2026-02-25T{:02}:{m:02}:{s:02}+0200", h + 2),
            TimeStyle::SpacedOffset => format!("2026-02-25 {:02}:{m:02}:{s:02}+02:00", h + 2),
        }
    }
}

/// How a weaver writes its verdict line (all read as the verdict by a human).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum VerdictStyle {
    Bold,
    Plain,
    /// `**VERDICT:**` then a no-break space.
    NoBreakSpace,
    /// `| Verdict | SHIP |` in a table.
    TableRow,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Verdict {
    Ship,
    Refine,
}

/// A BV value that is not there, as a human reads it (OBS-15).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EmptyForm {
    Underscores,
    Strike,
    Del,
    S,
    /// The row only inside a fenced code block.
    InFence,
    /// The row only inside an indented code block.
    InIndent,
    /// The row only inside `<pre>`.
    InPre,
    /// The row only inside an HTML comment.
    InComment,
}

/// A BV value that reads FAIL (OBS-18), or a FAIL hidden from a pattern reader by a decoy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FailForm {
    Word(Spell),
    /// `~~PASS~~ FAIL`.
    StrikePass,
    DelPass,
    SPass,
    /// The real row says FAIL; an earlier `PASS` row sits in a fenced block / indented block /
    /// `<pre>` / comment / a "Planned Schedule" section.
    Decoy(Decoy),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Decoy {
    Fence,
    Indent,
    Pre,
    Comment,
    Section,
}

/// A manual gate source (OBS-27).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ManualForm {
    pub word: &'static str,
    pub spell: Spell,
    /// The key `source` itself spelled this way (the entry has no other `source`).
    pub key: Spell,
    pub entry: usize,
}

/// Gate results that do not parse as gate results (OBS-24).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum InvalidForm {
    Truncated,
    TrailingGarbage,
    DuplicateKey,
    /// `result` twice, the second spelled with a look-alike.
    LookalikeKey(Spell),
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum NoGr48 {
    Absent,
    EmptyResult,
}

/// Screenshots that do not cover the viewports (OBS-10, OBS-11).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ShotsForm {
    MissingViewport,
    NoColdLook,
    TwoScrolls,
    /// `cold-look.png` of zero bytes.
    ZeroByte,
    /// `cold-look.png` that is a text file.
    TextFile,
}

/// The REFINE builder prompt that is the Pass-1 prompt again (OBS-06).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SamePrompt {
    Exact,
    Rewrapped,
    OneLine,
}

/// A hostile edit: each BLOCKING check's violation.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Plant {
    BvEmpty(usize, EmptyForm),
    BvFail(usize, FailForm),
    /// Auditor A spawned before the scan was recorded (OBS-01), the spawn column headed `hdr`.
    SpawnEarly(bool),
    Manual(bool, ManualForm),
    Invalid(bool, InvalidForm),
    NoGr48(bool, NoGr48),
    /// Pipeline vocabulary (term index) in an auditor report (OBS-21).
    Vocab(bool, char, usize, Spell),
    /// A tenth auditor report, letter J (OBS-19).
    ExtraAuditor(bool),
    Shots(bool, ShotsForm),
    /// A prohibited word (index) in a REFINE input file (index) (OBS-07).
    Prohibited(usize, usize, Spell),
    /// The BEFORE checklist completed after the REFINE builder was spawned (OBS-05).
    RefineOrder,
    /// The REFINE builder spawned at the Pass-1 builder's time (OBS-06).
    SameSpawn,
    SamePrompt(SamePrompt),
    /// An auditor report rewritten after the integrative report (OBS-20).
    TouchAuditor(bool, char),
    /// An auditor report removed after the integrative report (OBS-19, OBS-20).
    RemoveAuditor(bool, char),
}

pub const VOCAB: &[&str] = &[
    "BV-03",
    "GR-12",
    "suppressor",
    "disposition D-4",
    "mechanism count",
    "content map",
    "brief assembler",
    "gate runner",
    "PA-05 >= 3.5",
    "REFINE",
];

pub const PROHIBITED: &[&str] = &[
    "fix",
    "fixes",
    "fixing",
    "repair",
    "address",
    "corrected",
    "resolve",
    "GR-12: FAIL",
    ">= 15",
];

/// The REFINE builder's input files (OBS-07 reads them).
pub const INPUTS: &[&str] = &[
    "refine-inputs/conviction.md",
    "refine-brief.md",
    "refine-builder-prompt.md",
    "refine-inputs/notes.txt",
];

impl Plant {
    /// The BLOCKING check the edit violates (with the pass it is judged in).
    pub fn check(self) -> (&'static str, &'static str) {
        let p = |r: bool, main: &'static str| if r { "R" } else { main };
        match self {
            Plant::BvEmpty(..) => ("1", "OBS-15"),
            Plant::BvFail(..) => ("1", "OBS-18"),
            Plant::SpawnEarly(r) => (p(r, "2"), "OBS-01"),
            Plant::Manual(r, _) => (p(r, "2"), "OBS-27"),
            Plant::Invalid(r, _) => (p(r, "2"), "OBS-24"),
            Plant::NoGr48(r, _) => (p(r, "4"), "OBS-26"),
            Plant::Vocab(r, ..) => (p(r, "3"), "OBS-21"),
            Plant::ExtraAuditor(r) => (p(r, "3"), "OBS-19"),
            Plant::Shots(r, f) => (
                p(r, "2"),
                if f == ShotsForm::MissingViewport {
                    "OBS-10"
                } else {
                    "OBS-11"
                },
            ),
            Plant::Prohibited(..) => ("R", "OBS-07"),
            Plant::RefineOrder => ("R", "OBS-05"),
            Plant::SameSpawn | Plant::SamePrompt(_) => ("R", "OBS-06"),
            Plant::TouchAuditor(r, _) => (p(r, "3"), "OBS-20"),
            Plant::RemoveAuditor(r, _) => (p(r, "3"), "OBS-20"),
        }
    }

    pub fn tags(self) -> Vec<String> {
        let mut t = vec![format!("plant:{}", self.check().1)];
        let mut add = |s: &str| t.push(s.to_string());
        match self {
            Plant::BvEmpty(_, f) => add(&format!("form:{f:?}")),
            Plant::BvFail(_, FailForm::Word(s)) => add(s.tag()),
            Plant::BvFail(_, FailForm::Decoy(d)) => add(&format!("form:decoy-{d:?}")),
            Plant::BvFail(_, f) => add(&format!("form:{f:?}")),
            Plant::Manual(_, m) => {
                add(m.spell.tag());
                add(&format!("word:{}", m.word));
                if m.key != Spell::Plain {
                    add(&format!("key-{}", m.key.tag()));
                }
            }
            Plant::Invalid(_, f) => add(&format!("form:{f:?}")),
            Plant::NoGr48(_, f) => add(&format!("form:{f:?}")),
            Plant::Vocab(_, _, term, s) => {
                add(s.tag());
                add(&format!("term:{}", VOCAB[term]));
            }
            Plant::Shots(_, f) => add(&format!("form:{f:?}")),
            Plant::Prohibited(file, word, s) => {
                add(s.tag());
                add(&format!("word:{}", PROHIBITED[word]));
                add(&format!("file:{}", INPUTS[file]));
            }
            Plant::SamePrompt(f) => add(&format!("form:{f:?}")),
            Plant::TouchAuditor(..) => add("form:touch"),
            Plant::RemoveAuditor(..) => add("form:remove"),
            _ => {}
        }
        let refine = match self {
            Plant::SpawnEarly(r)
            | Plant::Manual(r, _)
            | Plant::Invalid(r, _)
            | Plant::NoGr48(r, _)
            | Plant::Vocab(r, ..)
            | Plant::ExtraAuditor(r)
            | Plant::Shots(r, _)
            | Plant::TouchAuditor(r, _)
            | Plant::RemoveAuditor(r, _) => r,
            _ => false,
        };
        if refine {
            t.push("refine-artifact".into());
        }
        t
    }
}

/// Honest files that are not pipeline artifacts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Noise {
    /// `notes-on-refinement.md`, `refine-notes.txt`: names with "refine" in a run without REFINE.
    RefineName,
    /// A `.git/` checkout inside `refine-inputs/` (its hook samples say "fix").
    GitDir,
    /// An Emacs lock link `refine-inputs/.#conviction.md` left while the file is open.
    EmacsLock,
    /// A vim swap file `refine-inputs/.conviction.md.swp`.
    VimSwap,
    /// An editor backup `EXECUTION-TRACKER.md~` left beside the tracker.
    TrackerBackup,
    /// The build directory restored from a copy at its own path (`cp -a build build.copy`,
    /// `mv build build.old`, `mv build.copy build`, `rm -rf build.old`): a new inode, the same
    /// files and times.
    CopyBack,
}

impl Noise {
    pub fn tag(self) -> &'static str {
        match self {
            Noise::RefineName => "noise:refine-name",
            Noise::GitDir => "noise:git-dir",
            Noise::EmacsLock => "noise:emacs-lock",
            Noise::VimSwap => "noise:vim-swap",
            Noise::TrackerBackup => "noise:tracker-backup",
            Noise::CopyBack => "noise:copy-back",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Step {
    /// Write a phase's artifacts (and the tracker's rows for it).
    Phase {
        phase: Phase,
        writer: Writer,
        tracker: Writer,
        verdict: Verdict,
    },
    /// A phase transition: `status --sync` (live) and `verify`, compared with the reference.
    Boundary,
    Plant {
        plant: Plant,
        writer: Writer,
    },
    Noise(Noise),
    /// Empty the build directory and start again (a new run in the same directory).
    Rerun,
    /// Start again over the completed run's files, not emptied: a new run, the first run's
    /// files its leftovers until it writes them (the reference judges its own files alone).
    RerunOver,
}

impl Step {
    pub fn tags(&self) -> Vec<String> {
        match self {
            Step::Phase {
                phase,
                writer,
                tracker,
                ..
            } => vec![
                phase.tag().into(),
                writer.tag().into(),
                format!("tracker-{}", tracker.tag()),
            ],
            Step::Boundary => vec!["boundary".into()],
            Step::Plant { plant, writer } => {
                let mut t = plant.tags();
                t.push(writer.tag().into());
                t.push(format!("plant-{}", writer.tag()));
                // An edit of the tracker is a save of the tracker by that writer.
                if matches!(
                    plant,
                    Plant::BvEmpty(..)
                        | Plant::BvFail(..)
                        | Plant::SpawnEarly(_)
                        | Plant::RefineOrder
                        | Plant::SameSpawn
                ) {
                    t.push(format!("tracker-{}", writer.tag()));
                }
                t
            }
            Step::Noise(n) => vec![n.tag().into()],
            Step::Rerun => vec!["rerun".into()],
            Step::RerunOver => vec!["rerun-over".into()],
        }
    }
}

/// Choices that hold for a whole run and are honest whatever they are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Style {
    /// The auditor table's spawn column header.
    pub spawned: &'static str,
    pub verdict: VerdictStyle,
    /// Gate results as a top-level array instead of `{"gates": [...]}`.
    pub gates_array: bool,
    /// The tracker shows an example row `| BV-02 | FAIL |` in a fenced block (not a table).
    pub example_fence: bool,
    /// `screenshots/` is a symlink to `.shots-store/` inside the build.
    pub linked_shots: bool,
    /// Live: a `referee watch` runs beside the writers.
    pub live: bool,
    pub times: TimeStyle,
    /// Each gate entry carries a metric that is not finite (`"flaky_rate": NaN`), as Python's
    /// `json.dump` writes one.
    pub nan_metric: bool,
}

impl Style {
    pub fn tags(&self) -> Vec<String> {
        let mut t = vec![format!("style:spawned={}", self.spawned)];
        t.push(format!("style:verdict={:?}", self.verdict));
        if self.gates_array {
            t.push("style:gates-array".into());
        }
        if self.example_fence {
            t.push("style:example-fence".into());
        }
        if self.linked_shots {
            t.push("style:linked-shots".into());
        }
        if self.live {
            t.push("live".into());
        }
        if self.times != TimeStyle::IsoZ {
            t.push(format!("style:times={:?}", self.times));
        }
        if self.nan_metric {
            t.push("style:nan-metric".into());
        }
        t
    }
}

/// An artifact the run has put on disk.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Art {
    Tracker,
    ContentMap,
    Brief,
    P2Prompt,
    P2Output,
    Shots(bool),
    Gates(bool),
    Aud(bool, char),
    Int(bool),
    Weaver(bool),
    Input(usize),
    ROutput,
}

/// What is on disk, logically.
#[derive(Clone, Debug, Default)]
pub struct State {
    /// Phases whose tracker rows are written.
    pub done: BTreeSet<Phase>,
    pub present: BTreeSet<Art>,
    /// Write order of the artifacts whose order matters (auditors, integrative).
    pub seq: BTreeMap<Art, u64>,
    pub next_seq: u64,
    pub main_verdict: Option<Verdict>,
    pub plants: Vec<Plant>,
    pub noise: BTreeSet<Noise>,
}

impl State {
    pub fn has(&self, p: impl Fn(&Plant) -> bool) -> bool {
        self.plants.iter().any(p)
    }
    pub fn auditors(&self, refine: bool) -> Vec<char> {
        self.present
            .iter()
            .filter_map(|a| match a {
                Art::Aud(r, l) if *r == refine => Some(*l),
                _ => None,
            })
            .collect()
    }
    pub fn stamp(&mut self, art: Art) {
        self.next_seq += 1;
        self.seq.insert(art, self.next_seq);
    }
}

impl State {
    /// The logical effect of `step` (what the runner leaves on disk), without writing anything.
    pub fn apply(&mut self, step: &Step) {
        match step {
            Step::Phase { phase, verdict, .. } => {
                self.done.insert(*phase);
                if *phase == Phase::P3C {
                    self.main_verdict = Some(*verdict);
                }
                self.present.insert(Art::Tracker);
                for a in phase_arts(*phase) {
                    self.present.insert(a);
                    if matches!(a, Art::Aud(..) | Art::Int(_)) {
                        self.stamp(a);
                    }
                }
            }
            Step::Plant { plant, .. } => {
                self.plants.push(*plant);
                match *plant {
                    Plant::ExtraAuditor(r) => {
                        self.present.insert(Art::Aud(r, 'J'));
                        self.stamp(Art::Aud(r, 'J'));
                    }
                    Plant::TouchAuditor(r, l) => {
                        self.present.insert(Art::Aud(r, l));
                        self.stamp(Art::Aud(r, l));
                    }
                    Plant::RemoveAuditor(r, l) => {
                        self.present.remove(&Art::Aud(r, l));
                    }
                    _ => {}
                }
            }
            Step::Noise(n) => {
                self.noise.insert(*n);
            }
            Step::Rerun | Step::RerunOver => *self = State::default(),
            Step::Boundary => {}
        }
    }
}

/// The artifacts a phase writes (the tracker is written first, by its own writer).
pub fn phase_arts(phase: Phase) -> Vec<Art> {
    match phase {
        Phase::P0 => vec![Art::ContentMap],
        Phase::P1 => vec![Art::Brief],
        Phase::P2 => vec![Art::P2Prompt, Art::P2Output],
        Phase::P3A => vec![Art::Shots(false), Art::Gates(false)],
        Phase::P3B => "ABCDEFGHI".chars().map(|l| Art::Aud(false, l)).collect(),
        Phase::P3BInt => vec![Art::Int(false)],
        Phase::P3C => vec![Art::Weaver(false)],
        Phase::RInputs => (0..INPUTS.len()).map(Art::Input).collect(),
        Phase::RBuild => vec![Art::ROutput],
        Phase::R3A => vec![Art::Shots(true), Art::Gates(true)],
        Phase::R3B => "ABCDEFGHI".chars().map(|l| Art::Aud(true, l)).collect(),
        Phase::R3BInt => vec![Art::Int(true)],
        Phase::R3C => vec![Art::Weaver(true)],
    }
}
