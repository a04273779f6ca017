//! The bytes of each artifact, rendered from the logical state: an honest D10 run as seed 001
//! describes it, with the hostile edits of `state.plants` written in.

use std::fmt::Write as _;

use crate::model::*;
use crate::text;

const PNG: &[u8] = &[
    0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0, 0, 0, 0x0d,
];

/// One file of an artifact: its path under BUILD_DIR and its logical text or bytes.
#[derive(Clone, Debug)]
pub struct File {
    pub path: String,
    pub body: Body,
}

#[derive(Clone, Debug)]
pub enum Body {
    /// Text, encoded by the writer.
    Text(String),
    /// Bytes written as they are.
    Bytes(Vec<u8>),
}

fn row(out: &mut String, cells: &[&str]) {
    out.push('|');
    for c in cells {
        let _ = write!(out, " {c} |");
    }
    out.push('\n');
}

fn table(out: &mut String, header: &[&str], rows: &[Vec<String>]) {
    row(out, header);
    let sep: Vec<&str> = header.iter().map(|_| "---").collect();
    row(out, &sep);
    for r in rows {
        let cells: Vec<&str> = r.iter().map(String::as_str).collect();
        row(out, &cells);
    }
    out.push('\n');
}

fn v(s: &str) -> String {
    s.to_string()
}

const BLANK: &str = "___";

fn filled(s: &State, p: Phase, value: String) -> String {
    if s.done.contains(&p) {
        value
    } else {
        BLANK.into()
    }
}

/// `EXECUTION-TRACKER.md`.
pub fn tracker(s: &State, st: &Style) -> String {
    let ts = |h: u32, m: u32, sec: u32| st.times.render(h, m, sec);
    let refine = s.done.contains(&Phase::RInputs);
    let mut o = String::from("# Execution Tracker — sim\n\nFilled in as the run proceeds; `___` means not yet recorded.\n\n");
    o.push_str("## Build Metadata\n\n");
    table(
        &mut o,
        &["Field", "Value", "Notes"],
        &[
            vec![v("BUILD_SLUG"), v("sim"), v("")],
            vec![v("MODE"), v("full"), v("")],
            vec![v("ORCHESTRATOR_MODEL"), v("claude-opus-4-6"), v("")],
            vec![v("OBSERVER_SPAWNED"), v(BLANK), v("(auto)")],
        ],
    );

    // Decoys a pattern reader would take for the real rows.
    let bv_fail = s.plants.iter().rev().find_map(|p| match p {
        Plant::BvFail(i, f) => Some((*i, *f)),
        _ => None,
    });
    let bv_empty = s.plants.iter().rev().find_map(|p| match p {
        Plant::BvEmpty(i, f) => Some((*i, *f)),
        _ => None,
    });
    let decoy_rows = |idx: usize| -> String {
        let mut t = String::new();
        table(
            &mut t,
            &["Gate", "Result", "Ran At"],
            &[vec![format!("BV-{idx:02}"), v("PASS"), ts(10, 11, 0)]],
        );
        t
    };
    if let Some((i, FailForm::Decoy(Decoy::Section))) = bv_fail {
        o.push_str("## Planned Schedule\n\n");
        o.push_str(&decoy_rows(i));
    }

    o.push_str("## Phase Timestamps\n\n");
    let mut rows = vec![
        vec![v("P0_START"), filled(s, Phase::P0, ts(10, 0, 0)), v("")],
        vec![v("P1_START"), filled(s, Phase::P1, ts(10, 5, 0)), v("")],
        vec![v("P2_START"), filled(s, Phase::P2, ts(10, 16, 0)), v("")],
        vec![v("P3A_START"), filled(s, Phase::P3A, ts(10, 40, 0)), v("")],
        vec![v("P3B_START"), filled(s, Phase::P3B, ts(10, 50, 0)), v("")],
        vec![v("P3C_START"), filled(s, Phase::P3C, ts(11, 13, 0)), v("")],
    ];
    if refine {
        rows.push(vec![
            v("P3A_START_REFINE"),
            filled(s, Phase::R3A, ts(11, 50, 0)),
            v(""),
        ]);
        rows.push(vec![
            v("P3B_START_REFINE"),
            filled(s, Phase::R3B, ts(12, 0, 0)),
            v(""),
        ]);
        rows.push(vec![
            v("P3C_START_REFINE"),
            filled(s, Phase::R3C, ts(12, 23, 0)),
            v(""),
        ]);
    }
    table(&mut o, &["Field", "Value", "Notes"], &rows);

    o.push_str("## BV Gates\n\n");
    if st.example_fence {
        o.push_str("How a failed gate is recorded (example):\n\n```\n| BV-02 | FAIL | 2026-02-25T10:11:40Z |\n```\n\n");
    }
    if let Some((i, FailForm::Decoy(d))) = bv_fail {
        let rows = decoy_rows(i);
        match d {
            Decoy::Fence => {
                let _ = write!(o, "```\n{rows}```\n\n");
            }
            Decoy::Indent => {
                for l in rows.lines().filter(|l| !l.is_empty()) {
                    let _ = writeln!(o, "    {l}");
                }
                o.push('\n');
            }
            Decoy::Pre => {
                let _ = write!(o, "<pre>\n{rows}</pre>\n\n");
            }
            Decoy::Comment => {
                let _ = write!(o, "<!--\n{rows}-->\n\n");
            }
            Decoy::Section => {}
        }
    }
    let mut hidden = String::new();
    let mut bv = Vec::new();
    let times = [
        ts(10, 11, 5),
        ts(10, 11, 40),
        ts(10, 12, 15),
        ts(10, 12, 50),
        ts(10, 13, 25),
        ts(10, 2, 10),
        ts(10, 15, 20),
    ];
    for i in [6usize, 1, 2, 3, 4, 5, 7] {
        let phase = if i == 6 { Phase::P0 } else { Phase::P1 };
        let mut value = filled(s, phase, v("PASS"));
        let time = filled(s, phase, times[i - 1].clone());
        if let Some((j, f)) = bv_empty.filter(|(j, _)| *j == i) {
            let _ = j;
            match f {
                EmptyForm::Underscores => value = BLANK.into(),
                EmptyForm::Strike => value = v("~~PASS~~"),
                EmptyForm::Del => value = v("<del>PASS</del>"),
                EmptyForm::S => value = v("<s>PASS</s>"),
                EmptyForm::InFence
                | EmptyForm::InIndent
                | EmptyForm::InPre
                | EmptyForm::InComment => {
                    let line = format!("| BV-{i:02} | PASS | {time} |");
                    match f {
                        EmptyForm::InFence => {
                            let _ = write!(hidden, "```\n{line}\n```\n\n");
                        }
                        EmptyForm::InIndent => {
                            let _ = write!(hidden, "    {line}\n\n");
                        }
                        EmptyForm::InPre => {
                            let _ = write!(hidden, "<pre>\n{line}\n</pre>\n\n");
                        }
                        _ => {
                            let _ = write!(hidden, "<!-- {line} -->\n\n");
                        }
                    }
                    continue;
                }
            }
        }
        if let Some((_, f)) = bv_fail.filter(|(j, _)| *j == i) {
            value = match f {
                FailForm::Word(sp) => text::markdown("FAIL", sp),
                FailForm::StrikePass => v("~~PASS~~ FAIL"),
                FailForm::DelPass => v("<del>PASS</del> FAIL"),
                FailForm::SPass => v("<s>PASS</s> FAIL"),
                FailForm::Decoy(_) => v("FAIL"),
            };
        }
        bv.push(vec![format!("BV-{i:02}"), value, time]);
    }
    bv.push(vec![
        v("REVISION_CYCLES"),
        filled(s, Phase::P1, v("0")),
        v(""),
    ]);
    o.push_str(&hidden);
    table(&mut o, &["Gate", "Result", "Ran At"], &bv);

    o.push_str("## Phase 2 — Build\n\n");
    table(
        &mut o,
        &["Field", "Value", "Notes"],
        &[
            vec![
                v("BUILDER_SPAWNED"),
                filled(s, Phase::P2, ts(10, 16, 30)),
                v(""),
            ],
            vec![
                v("BUILDER_MODEL"),
                filled(s, Phase::P2, v("claude-opus-4-6")),
                v(""),
            ],
        ],
    );

    o.push_str("## Phase 3A — Screenshots and Gates\n\n");
    let mut rows = vec![
        vec![
            v("SCREENSHOTS_DONE"),
            filled(s, Phase::P3A, ts(10, 43, 30)),
            v(""),
        ],
        vec![
            v("EXPERIENTIAL_SCAN"),
            filled(s, Phase::P3A, v("I see a cream page with a heavy black headline; the map is rendered as a pale line drawing and its labels are visually small at 768.")),
            filled(s, Phase::P3A, ts(10, 49, 0)),
        ],
    ];
    let subs = [
        "Cold look at 1440: headline first, then the map.",
        "Scroll-through: the middle loses rhythm between scrolls 4 and 6.",
        "Legibility: chart axis labels are small at 768.",
        "Consistency: the single column at 768 keeps the order.",
    ];
    for (k, sub) in subs.iter().enumerate() {
        let name = format!("P3A+-1{}", (b'a' + k as u8) as char);
        rows.push(vec![
            name,
            filled(s, Phase::P3A, v(sub)),
            filled(s, Phase::P3A, ts(10, 47, 10 * k as u32)),
        ]);
    }
    if refine {
        rows.push(vec![
            v("SCREENSHOTS_DONE_REFINE"),
            filled(s, Phase::R3A, ts(11, 53, 30)),
            v(""),
        ]);
        rows.push(vec![
            v("EXPERIENTIAL_SCAN_REFINE"),
            filled(s, Phase::R3A, v("I see the bypass section set in a narrower column; the labels are rendered as crisp dark words and the chart visually fades at its edge.")),
            filled(s, Phase::R3A, ts(11, 59, 0)),
        ]);
        for (k, sub) in subs.iter().enumerate() {
            let name = format!("P3A+-1{}_REFINE", (b'a' + k as u8) as char);
            rows.push(vec![
                name,
                filled(s, Phase::R3A, v(sub)),
                filled(s, Phase::R3A, ts(11, 57, 10 * k as u32)),
            ]);
        }
    }
    table(&mut o, &["Field", "Value", "Time"], &rows);

    let auditors = |refine: bool| -> Vec<Vec<String>> {
        let early = s.has(|p| *p == Plant::SpawnEarly(refine));
        "ABCDEFGHI"
            .chars()
            .enumerate()
            .map(|(k, l)| {
                let (h, m) = if refine { (12, 0) } else { (10, 50) };
                let t = if early && l == 'A' {
                    // Before the scan was recorded.
                    if refine {
                        ts(11, 58, 0)
                    } else {
                        ts(10, 48, 0)
                    }
                } else {
                    ts(
                        h,
                        m + (10 * (k as u32 + 1)) / 60,
                        (10 * (k as u32 + 1)) % 60,
                    )
                };
                vec![l.to_string(), v("claude-opus-4-6"), t]
            })
            .collect()
    };
    if s.done.contains(&Phase::P3B) {
        o.push_str("## Phase 3B Auditors\n\n");
        table(&mut o, &["Auditor", "Model", st.spawned], &auditors(false));
    }
    if refine {
        o.push_str("## REFINE\n\n");
        let bad_order = s.has(|p| *p == Plant::RefineOrder);
        let spawned = if s.has(|p| *p == Plant::SameSpawn) {
            ts(10, 16, 30)
        } else {
            ts(11, 26, 0)
        };
        table(
            &mut o,
            &["Field", "Value", "Time"],
            &[
                vec![
                    v("REFINE_TRIGGER"),
                    v("weaver verdict REFINE (p3c-weaver.md)"),
                    ts(11, 20, 0),
                ],
                vec![v("CONVICTION_WRITTEN"), v("YES"), v("")],
                vec![v("NEW_BUILDER_AGENT"), v("YES"), v("")],
                vec![
                    v("REFINE_BEFORE_CHECKLIST"),
                    if bad_order {
                        ts(11, 27, 0)
                    } else {
                        ts(11, 24, 0)
                    },
                    v(""),
                ],
                vec![
                    v("REFINE_BUILDER_SPAWNED"),
                    filled(s, Phase::RBuild, spawned),
                    v(""),
                ],
            ],
        );
    }
    if s.done.contains(&Phase::R3B) {
        o.push_str("## Phase 3B Auditors (REFINE)\n\n");
        table(&mut o, &["Auditor", "Model", st.spawned], &auditors(true));
    }

    o.push_str("## Phase 3C — Weaver\n\n");
    let mut rows = vec![vec![
        v("WEAVER_VERDICT"),
        filled(
            s,
            Phase::P3C,
            v(match s.main_verdict {
                Some(Verdict::Refine) => "REFINE",
                _ => "SHIP",
            }),
        ),
        v(""),
    ]];
    if refine {
        rows.push(vec![
            v("WEAVER_VERDICT_REFINE"),
            filled(s, Phase::R3C, v("SHIP")),
            v(""),
        ]);
    }
    table(&mut o, &["Field", "Value", "Notes"], &rows);

    o.push_str("## Output Files\n\n");
    let mut rows = Vec::new();
    for a in &s.present {
        let path = match a {
            Art::ContentMap => "{BUILD_DIR}/p0-content-map.md".to_string(),
            Art::Brief => "{BUILD_DIR}/p1-execution-brief.md".into(),
            Art::P2Output => "{BUILD_DIR}/p2-output.html".into(),
            Art::Gates(r) => format!("{{BUILD_DIR}}/{}", gates_name(*r)),
            Art::Int(r) => format!("{{BUILD_DIR}}/{}", int_name(*r)),
            _ => continue,
        };
        rows.push(vec![
            format!("OF-{}", rows.len() + 1),
            v("artifact"),
            path,
            v("[x]"),
        ]);
    }
    rows.push(vec![
        v("TRK"),
        v("Execution tracker"),
        v("{BUILD_DIR}/EXECUTION-TRACKER.md"),
        v("[x]"),
    ]);
    table(&mut o, &["ID", "Artifact", "Path", "Done"], &rows);
    o
}

pub fn gates_name(refine: bool) -> &'static str {
    if refine {
        "p3a-gate-results-refine.json"
    } else {
        "p3a-gate-results.json"
    }
}

pub fn aud_name(refine: bool, l: char) -> String {
    if refine {
        format!("p3b-pa-auditor-{l}-refine.md")
    } else {
        format!("p3b-pa-auditor-{l}.md")
    }
}

pub fn int_name(refine: bool) -> &'static str {
    if refine {
        "p3b-pa-integrative-refine.md"
    } else {
        "p3b-pa-integrative.md"
    }
}

pub fn weaver_name(refine: bool) -> &'static str {
    if refine {
        "p3c-weaver-refine.md"
    } else {
        "p3c-weaver.md"
    }
}

pub fn shots_dir(refine: bool, st: &Style) -> &'static str {
    match (refine, st.linked_shots) {
        (false, false) => "screenshots",
        (false, true) => ".shots-store",
        (true, _) => "screenshots-refine",
    }
}

/// The gate results, one entry a line (a streaming writer writes them line by line).
pub fn gates(s: &State, st: &Style, refine: bool) -> String {
    let manual = s.plants.iter().rev().find_map(|p| match p {
        Plant::Manual(r, m) if *r == refine => Some(*m),
        _ => None,
    });
    let invalid = s.plants.iter().rev().find_map(|p| match p {
        Plant::Invalid(r, f) if *r == refine => Some(*f),
        _ => None,
    });
    let no48 = s.plants.iter().rev().find_map(|p| match p {
        Plant::NoGr48(r, f) if *r == refine => Some(*f),
        _ => None,
    });
    let mut ids: Vec<u32> = (1..=48).collect();
    ids.extend([61, 62]);
    let mut lines = Vec::new();
    for (k, id) in ids.iter().enumerate() {
        let mut result = "PASS".to_string();
        if *id == 48 {
            match no48 {
                Some(NoGr48::Absent) => continue,
                Some(NoGr48::EmptyResult) => result.clear(),
                None => {}
            }
        }
        let (key, source) = match manual.filter(|m| m.entry == k) {
            Some(m) => (text::json("source", m.key), text::json(m.word, m.spell)),
            None => ("source".into(), "gate-runner".into()),
        };
        let mut line =
            format!("{{\"id\": \"GR-{id:02}\", \"result\": \"{result}\", \"{key}\": \"{source}\"");
        if k == 3 {
            match invalid {
                Some(InvalidForm::DuplicateKey) => line.push_str(", \"result\": \"FAIL\""),
                Some(InvalidForm::LookalikeKey(sp)) => {
                    let _ = write!(line, ", \"{}\": \"FAIL\"", text::json("result", sp));
                }
                _ => {}
            }
        }
        if st.nan_metric {
            line.push_str(", \"flaky_rate\": NaN");
        }
        line.push('}');
        lines.push(line);
    }
    let body = lines.join(",\n  ");
    let mut doc = if st.gates_array {
        format!("[\n  {body}\n]\n")
    } else {
        format!("{{\"gates\": [\n  {body}\n]}}\n")
    };
    match invalid {
        Some(InvalidForm::Truncated) => {
            let cut = doc.len() * 2 / 3;
            let mut cut = cut;
            while !doc.is_char_boundary(cut) {
                cut -= 1;
            }
            doc.truncate(cut);
        }
        Some(InvalidForm::TrailingGarbage) => doc.push_str("} ]\n"),
        _ => {}
    }
    doc
}

const AUD_BODY: &str = "## What I see first\n\nAt 1440 the page opens on a cream field with one black headline set very large. \
The subtitle sits below it in a warm grey. On the right, a pale line drawing of a town.\n\n\
## Hierarchy\n\n- The headline is the entry point.\n- The drawing reads as decoration at first glance.\n\n\
## Concerns\n\n1. The labels on the drawing are tiny at 768.\n2. The grey of the subtitle is close to the cream.\n\n";

pub fn auditor(s: &State, refine: bool, l: char) -> String {
    let mut o = format!(
        "# Perceptual Audit — Auditor {l}\n\n**Viewports examined:** 1440, 1024, 768\n\n{AUD_BODY}"
    );
    for p in &s.plants {
        if let Plant::Vocab(r, letter, term, sp) = p {
            if *r == refine && *letter == l {
                let _ = write!(
                    o,
                    "## Context\n\nThe {} shaped what I looked for first.\n\n",
                    text::markdown(VOCAB[*term], *sp)
                );
            }
        }
    }
    o.push_str("## Completion Manifest\n\n- Screenshots viewed: all three widths\n- Questions answered: 6 of 6\n");
    o
}

pub fn integrative(refine: bool) -> String {
    let r = if refine { " (second build)" } else { "" };
    format!("# Integrative Report{r}\n\nNine auditors agree the page is calm and well made; the drawing's labels are too small at 768.\n")
}

pub fn weaver(st: &Style, verdict: Verdict) -> String {
    let w = match verdict {
        Verdict::Ship => "SHIP",
        Verdict::Refine => "REFINE",
    };
    let line = match st.verdict {
        VerdictStyle::Bold => format!("**VERDICT:** {w}"),
        VerdictStyle::Plain => format!("VERDICT: {w}"),
        VerdictStyle::NoBreakSpace => format!("**VERDICT:**\u{a0}{w}"),
        VerdictStyle::TableRow => format!("| Item | Value |\n|---|---|\n| Verdict | {w} |"),
    };
    format!("# Weaver\n\n## Decision\n\nThe page does what the essay needs.\n\n{line}\n\n## Notes\n\n- Keep the opening screen.\n")
}

const P2_PROMPT: &str = "You are the builder for a single long-form page.\n\
Read the execution brief and build the page as one HTML file.\n\
Keep the seven sections in the order of the essay.\n\
Use the cream and ink palette with one red accent.\n\
Set the headline large and the body at a comfortable measure.\n\
Draw the town map as a light line drawing with readable labels.\n\
Leave a RESIDUAL comment at the end of the file describing what you kept and what you changed.\n";

const R_PROMPT: &str = "You are a new builder, starting from a conviction about the page.\n\
Read the conviction and the brief; they describe the page as it should feel.\n\
Give the middle stretch a pause at the bypass and let the map labels read at every width.\n\
Keep the calm of the opening screen.\n\
Write the whole page again as one HTML file.\n";

pub fn p2_prompt() -> String {
    P2_PROMPT.to_string()
}

/// The REFINE builder prompt, or the Pass-1 prompt again (re-wrapped, on one line).
pub fn refine_prompt(s: &State) -> String {
    let same = s.plants.iter().rev().find_map(|p| match p {
        Plant::SamePrompt(f) => Some(*f),
        _ => None,
    });
    let base = match same {
        None => R_PROMPT.to_string(),
        Some(SamePrompt::Exact) => P2_PROMPT.to_string(),
        Some(SamePrompt::OneLine) => format!("{}\n", P2_PROMPT.replace('\n', " ").trim_end()),
        Some(SamePrompt::Rewrapped) => {
            let words: Vec<&str> = P2_PROMPT.split_whitespace().collect();
            let mut out = String::new();
            for (k, w) in words.iter().enumerate() {
                out.push_str(w);
                out.push(if k % 9 == 8 { '\n' } else { ' ' });
            }
            format!("{}\n", out.trim_end())
        }
    };
    with_prohibited(s, 2, base)
}

fn with_prohibited(s: &State, file: usize, mut base: String) -> String {
    for p in &s.plants {
        if let Plant::Prohibited(f, w, sp) = p {
            if *f == file {
                let _ = write!(
                    base,
                    "\nThen {} the spacing of the chart.\n",
                    text::markdown(PROHIBITED[*w], *sp)
                );
            }
        }
    }
    base
}

pub fn input(s: &State, file: usize) -> String {
    let base = match file {
        0 => "# Conviction\n\nThe page should feel like a quiet walk through a town: unhurried, legible, warm.\n".to_string(),
        1 => "# Brief\n\nSeven sections, one column, cream and ink, one red accent. The map is part of the story.\n".to_string(),
        2 => return refine_prompt(s),
        _ => "Reading notes: the essay moves from the founding to the bypass; the map anchors it.\n".to_string(),
    };
    with_prohibited(s, file, base)
}

pub fn output_html(refine: bool) -> String {
    let h = if refine {
        "Gas Town (second build)"
    } else {
        "Gas Town"
    };
    format!("<!doctype html>\n<html><head><title>{h}</title></head>\n<body>\n<h1>{h}</h1>\n<p>Seven sections of the essay.</p>\n\
<!-- RESIDUAL: preserved: the seven-section order and the cream and ink palette.\n\
changed: the map labels were set small to keep the hero quiet.\n\
next: give the middle sections more rhythm.\n\
trade-off: a spare opening screen for a long first scroll. -->\n</body>\n</html>\n")
}

/// The screenshot files (paths relative to the build), with the hostile forms written in.
pub fn shots(s: &State, st: &Style, refine: bool) -> Vec<File> {
    let form = s.plants.iter().rev().find_map(|p| match p {
        Plant::Shots(r, f) if *r == refine => Some(*f),
        _ => None,
    });
    let dir = shots_dir(refine, st);
    let mut out = Vec::new();
    for vp in ["1440", "1024", "768"] {
        if vp == "768" && form == Some(ShotsForm::MissingViewport) {
            continue;
        }
        let cold: Option<Vec<u8>> = match form {
            Some(ShotsForm::NoColdLook) if vp == "1024" => None,
            Some(ShotsForm::ZeroByte) if vp == "768" => Some(Vec::new()),
            Some(ShotsForm::TextFile) if vp == "768" => Some(b"screenshot pending\n".to_vec()),
            _ => Some(PNG.to_vec()),
        };
        if let Some(b) = cold {
            out.push(File {
                path: format!("{dir}/{vp}/cold-look.png"),
                body: Body::Bytes(b),
            });
        }
        let n = if form == Some(ShotsForm::TwoScrolls) && vp == "1440" {
            2
        } else {
            8
        };
        for k in 1..=n {
            out.push(File {
                path: format!("{dir}/{vp}/scroll-{k}.png"),
                body: Body::Bytes(PNG.to_vec()),
            });
        }
    }
    out
}

/// The files of an artifact as it stands in `s`.
pub fn files(s: &State, st: &Style, art: Art) -> Vec<File> {
    let t = |path: &str, text: String| File {
        path: path.into(),
        body: Body::Text(text),
    };
    match art {
        Art::Tracker => vec![t("EXECUTION-TRACKER.md", tracker(s, st))],
        Art::ContentMap => vec![t(
            "p0-content-map.md",
            "# Content map\n\nSeven sections, four zones.\n".into(),
        )],
        Art::Brief => vec![t(
            "p1-execution-brief.md",
            "# Execution brief\n\nBuild the page in one column.\n".into(),
        )],
        Art::P2Prompt => vec![t("p2-builder-prompt.md", p2_prompt())],
        Art::P2Output => vec![t("p2-output.html", output_html(false))],
        Art::ROutput => vec![t("p2-output-refine.html", output_html(true))],
        Art::Shots(r) => shots(s, st, r),
        Art::Gates(r) => vec![t(gates_name(r), gates(s, st, r))],
        Art::Aud(r, l) => vec![t(&aud_name(r, l), auditor(s, r, l))],
        Art::Int(r) => vec![t(int_name(r), integrative(r))],
        Art::Weaver(r) => {
            let verdict = if r {
                Verdict::Ship
            } else {
                s.main_verdict.unwrap_or(Verdict::Ship)
            };
            vec![t(weaver_name(r), weaver(st, verdict))]
        }
        Art::Input(k) => vec![t(INPUTS[k], input(s, k))],
    }
}

/// Text tracked for the spell checker: a text's bytes as a writer encodes it.
pub fn encode(body: &Body, enc: text::Encoding) -> Vec<u8> {
    match body {
        Body::Text(t) => text::encode(t, enc),
        Body::Bytes(b) => b.clone(),
    }
}
