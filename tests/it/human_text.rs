//! Text as a human reads it (issue 16 §4, D10): words a reader sees but bytes the rules missed.
//! Each attack is made for real on a build: an auditor report saved as UTF-16 or UTF-32 (with or
//! without a byte-order mark), pipeline words in fullwidth or Cyrillic letters, with a zero-width
//! space, a soft hyphen, markdown escapes, HTML references, a ligature or a line break inside;
//! a gate source `manual` in look-alike letters. Against `verify --final` (exit 1, the FAIL
//! headline, the evidence quoting the file as written) and a live `watch` (the STOP, `status` 1,
//! the final exit 1).

use std::fs;
use std::path::Path;

use crate::util::Output;
use crate::watch::{exit_code, read, run, status, Watch, GATES, STOP, WAIT};

const AUDITOR: &str = "p3b-pa-auditor-C.md";

/// The first bold line of a report: its headline.
fn headline(report: &str) -> &str {
    report
        .lines()
        .find(|l| l.starts_with("**"))
        .unwrap_or_default()
}

/// Auditor C's report with `line` added to its findings, written by `encode`.
fn tainted_report(dir: &Path, line: &str, encode: fn(&str) -> Vec<u8>) {
    let path = dir.join(AUDITOR);
    let text = read(&path).replacen("## Findings", &format!("## Findings\n\n{line}\n"), 1);
    assert!(text.contains(line), "auditor C has a findings section");
    fs::write(&path, encode(&text)).expect("write the report");
}

fn utf8(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

fn utf16le_bom(s: &str) -> Vec<u8> {
    let mut out = vec![0xff, 0xfe];
    out.extend(s.encode_utf16().flat_map(u16::to_le_bytes));
    out
}

fn utf16be_no_bom(s: &str) -> Vec<u8> {
    s.encode_utf16().flat_map(u16::to_be_bytes).collect()
}

fn utf32le_no_bom(s: &str) -> Vec<u8> {
    s.chars().flat_map(|c| u32::from(c).to_le_bytes()).collect()
}

/// `referee verify --final` on a finished build after `attack`: exit 1, a FAIL headline, and
/// every `quotes` (the file as written, as the report prints it) in `check`'s evidence; then the
/// same with `--write`, to the report on disk.
fn verify_fails(base: &str, attack: impl Fn(&Path), check: &str, quotes: &[&str]) {
    let (_tmp, dir) = crate::formats::build(&format!("base = \"{base}\"\n"));
    let d = dir.to_str().expect("utf-8");
    let Output {
        code, stdout: out, ..
    } = run(&["verify", d, "--final"]);
    assert_eq!(code, 0, "the build is clean before the attack: {out}");
    attack(&dir);
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&["verify", d, "--final"]);
    assert_eq!(code, 1, "{err}\n{out}");
    assert!(headline(&out).starts_with("**FAIL: "), "{out}");
    let line = out
        .lines()
        .find(|l| l.starts_with(&format!("- {check} [BLOCKING] **FAIL**")))
        .unwrap_or_else(|| panic!("{check} fails:\n{out}"));
    assert!(!line.is_empty());
    for q in quotes {
        assert!(out.contains(q), "evidence quotes `{q}`:\n{out}");
    }
    let Output {
        code, stderr: err, ..
    } = run(&["verify", d, "--final", "--write"]);
    assert_eq!(code, 1, "{err}");
    let report = read(&dir.join("OBSERVER-REPORT.md"));
    assert!(headline(&report).starts_with("**FAIL: "), "{report}");
    assert!(report.contains(quotes[0]), "{report}");
}

/// A live `referee watch` on a build in progress: after `attack`, the STOP names `check` and
/// quotes the file as written, `status` is 1, and the referee exits 1.
fn watch_stops(attack: impl Fn(&Path), check: &str, quote: &str) {
    let (tmp, dir) = crate::watch::build("audit-done");
    let mut w = Watch::start(&dir, tmp.path(), &[]);
    w.until("the referee is live", || status(&dir, true).code == 0);
    attack(&dir);
    w.until("the STOP quotes the attack", || {
        let stop = read(&dir.join(STOP));
        stop.contains(check) && stop.contains(quote)
    });
    assert_eq!(status(&dir, true).code, 1, "{}", w.output());
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    let report = read(&dir.join("OBSERVER-REPORT.md"));
    assert!(headline(&report).starts_with("**FAIL: "), "{report}");
}

// ---- auditor reports (OBS-21) ------------------------------------------------------------------

#[test]
fn an_auditor_report_saved_as_utf16_is_read() {
    verify_fails(
        "clean",
        |d| tainted_report(d, "The gate runner liked the hero.", utf16le_bom),
        "OBS-21",
        &["`gate runner` matched \"gate runner\" (UTF-16LE)"],
    );
}

#[test]
fn an_auditor_report_in_utf16_or_utf32_without_a_mark_is_read() {
    verify_fails(
        "clean",
        |d| tainted_report(d, "The gate runner liked the hero.", utf16be_no_bom),
        "OBS-21",
        &["`gate runner` matched \"gate runner\" (UTF-16BE)"],
    );
    verify_fails(
        "clean",
        |d| tainted_report(d, "It was written after the content map.", utf32le_no_bom),
        "OBS-21",
        &["`content map` matched \"content map\" (UTF-32LE)"],
    );
}

#[test]
fn pipeline_words_in_lookalike_or_hidden_letters_are_read() {
    verify_fails(
        "clean",
        |d| {
            tainted_report(
                d,
                "The ｇａｔｅ ｒｕｎｎｅｒ and the \u{441}ontent map said R\u{415}F\u{200b}INE; \
                 a sup\u{ad}pressor, GR\\-12 and BV&#45;3.",
                utf8,
            )
        },
        "OBS-21",
        &[
            "`gate runner` matched \"ｇａｔｅ ｒｕｎｎｅｒ\" (reads \"gate runner\")",
            "`content map` matched \"\u{441}ontent map\" (reads \"content map\")",
            "matched \"R\u{415}F\\u{200b}INE\" (reads \"REFINE\")",
            "`suppressor` matched \"sup\\u{ad}pressor\" (reads \"suppressor\")",
            "`GR-` matched \"GR\\\\-\" (reads \"GR-\")",
            "`BV-` matched \"BV\\&#45;\" (reads \"BV-\")",
        ],
    );
}

#[test]
fn a_term_split_over_lines_is_read() {
    verify_fails(
        "clean",
        |d| tainted_report(d, "- the brief\n  assembler and the gate run-\n  ner", utf8),
        "OBS-21",
        &[
            "`brief assembler` matched \"brief\\n  assembler\"",
            "`gate runner` matched \"gate run-\\n  ner\" (reads \"gate runner\")",
        ],
    );
}

#[test]
fn an_auditor_report_saved_as_utf16_stops_watch() {
    watch_stops(
        |d| tainted_report(d, "The gate runner liked the hero.", utf16le_bom),
        "OBS-21",
        "`gate runner` matched \"gate runner\" (UTF-16LE)",
    );
}

#[test]
fn a_fullwidth_pipeline_word_stops_watch() {
    watch_stops(
        |d| tainted_report(d, "The ｃｏｎｔｅｎｔ ｍａｐ was read.", utf8),
        "OBS-21",
        "(reads \"content map\")",
    );
}

// ---- REFINE inputs (OBS-07) --------------------------------------------------------------------

#[test]
fn a_refine_prompt_with_entities_escapes_and_ligatures_is_read() {
    verify_fails(
        "clean-refine",
        |d| {
            let path = d.join("refine-builder-prompt.md");
            let text = read(&path) + "\nKeep the score &gt;= 15 and ﬁx the hero.\n";
            fs::write(&path, text).expect("write the prompt");
        },
        "OBS-07",
        &[
            "matched \"\\&gt;= 1\" (reads \">= 1\")",
            "matched \"ﬁx\" (reads \"fix\")",
        ],
    );
    verify_fails(
        "clean-refine",
        |d| {
            let path = d.join("refine-builder-prompt.md");
            let text = read(&path) + "\nGR\\-12: PASS and GR&#45;13 = FAIL; please re\u{ad}pair.\n";
            fs::write(&path, utf16le_bom(&text)).expect("write the prompt");
        },
        "OBS-07",
        &[
            "matched \"GR\\\\-12: PASS\" (UTF-16LE, reads \"GR-12: PASS\")",
            "matched \"GR\\&#45;13 = FAIL\" (UTF-16LE, reads \"GR-13 = FAIL\")",
            // (the line is cut at the report's width after this)
            "matched \"re\\u{ad}pair\"",
        ],
    );
}

// ---- gate sources (OBS-27) ---------------------------------------------------------------------

fn manual_source(dir: &Path, source: &str) {
    let gates = dir.join(GATES);
    let source = serde_json::to_string(source).expect("json");
    fs::write(&gates, read(&gates).replacen("\"gate-runner\"", &source, 1)).expect("write gates");
}

#[test]
fn a_manual_source_in_lookalike_letters_is_manual() {
    for (source, quoted) in [
        ("ｍａｎｕａｌ", "source ｍａｎｕａｌ (reads \"manual\")"),
        ("m\u{430}nual", "source m\u{430}nual (reads \"manual\")"),
        (
            "man\u{200b}ual",
            "source man\\u{200b}ual (reads \"manual\")",
        ),
        ("H&#65;ND", "source H\\&#65;ND (reads \"HAND\")"),
    ] {
        verify_fails("clean", |d| manual_source(d, source), "OBS-27", &[quoted]);
    }
}

#[test]
fn a_manual_source_in_lookalike_letters_stops_watch() {
    watch_stops(
        |d| manual_source(d, "ｍａｎｕａｌ"),
        "OBS-27",
        "source ｍａｎｕａｌ (reads \"manual\")",
    );
}

// ---- issue 31: a pipeline that saves as Windows PowerShell 5.1 does ---------------------------

/// `verify --final --format json` on `dir`: the exit code and each check instance's status,
/// `pass/check -> status`.
fn statuses(dir: &Path) -> (i32, std::collections::BTreeMap<String, String>) {
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&[
        "verify",
        dir.to_str().expect("utf-8"),
        "--final",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {err}"));
    let map = v["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|r| {
            (
                format!(
                    "{}/{}",
                    r["pass"].as_str().unwrap_or(""),
                    r["check"].as_str().unwrap_or("")
                ),
                r["status"].as_str().unwrap_or("").to_string(),
            )
        })
        .collect();
    (code, map)
}

/// Rewrites every file of `dir` whose name ends in one of `exts` with `encode`, keeping its
/// mtime (the checks read mtimes too).
fn resave(dir: &Path, exts: &[&str], encode: impl Fn(&str) -> Vec<u8>) -> usize {
    let mut n = 0;
    for e in walkdir::WalkDir::new(dir) {
        let e = e.expect("walk");
        let name = e.file_name().to_string_lossy().into_owned();
        if !e.file_type().is_file() || !exts.iter().any(|x| name.ends_with(x)) {
            continue;
        }
        let meta = fs::metadata(e.path()).expect("stat");
        let text = read(e.path());
        fs::write(e.path(), encode(&text)).expect("rewrite");
        let mtime = filetime::FileTime::from_last_modification_time(&meta);
        filetime::set_file_mtime(e.path(), mtime).expect("mtime");
        n += 1;
    }
    n
}

/// What `Out-File` (PowerShell 5.1's default, and `>`) writes: UTF-16LE with a mark, CRLF.
fn powershell(s: &str) -> Vec<u8> {
    utf16le_bom(&s.replace("\r\n", "\n").replace('\n', "\r\n"))
}

/// Issue 31: a pipeline on Windows PowerShell 5.1 (tracker, gate results, briefs, reports and
/// the verdict all written by `Out-File`: UTF-16LE with a byte-order mark, CRLF) is judged as the
/// same pipeline saved as UTF-8: every check the same, exit 0. It failed OBS-15, OBS-01, OBS-24
/// and OBS-26.
#[test]
fn a_powershell_pipeline_in_utf16_passes_as_utf8_does() {
    for base in ["clean", "clean-refine"] {
        let (_tmp, dir) = crate::formats::build(&format!("base = \"{base}\"\n"));
        let (code, utf8) = statuses(&dir);
        assert_eq!(code, 0, "{base} in UTF-8: {utf8:?}");
        let n = resave(&dir, &[".md", ".json", ".html"], powershell);
        assert!(n >= 15, "{n} files resaved");
        let (code, utf16) = statuses(&dir);
        assert_eq!(utf16, utf8, "{base}: UTF-16 judged otherwise than UTF-8");
        assert_eq!(code, 0, "{base} in UTF-16: {utf16:?}");
        for check in ["1/OBS-15", "2/OBS-01", "2/OBS-24", "4/OBS-26"] {
            assert_eq!(utf16[check], "PASS", "{base}: {check}");
        }
    }
}

/// Issue 31: a tracker saved with CR-only line ends (classic Mac editors, some exporters) reads
/// as the same tracker: every check as with LF.
#[test]
fn a_tracker_with_cr_line_ends_reads_as_with_lf() {
    let (_tmp, dir) = crate::formats::build("base = \"clean\"\n");
    let (_, lf) = statuses(&dir);
    resave(&dir, &["EXECUTION-TRACKER.md"], |s| {
        s.replace('\n', "\r").into_bytes()
    });
    let (code, cr) = statuses(&dir);
    assert_eq!(cr, lf);
    assert_eq!(code, 0);
}

// ---- issue 31: the REFINE prompt compared by its words (OBS-06) --------------------------------

/// `clean-refine` with the REFINE builder prompt replaced by the Pass-1 prompt as `rewrite`
/// makes it: OBS-06 (pass R) FAILs on the prompts' word similarity.
fn same_prompt_fails_obs06(rewrite: impl Fn(&str) -> Vec<u8>) {
    let (_tmp, dir) = crate::formats::build("base = \"clean-refine\"\n");
    let pass1 = read(&dir.join("p2-builder-prompt.md"));
    let refine = dir.join("refine-builder-prompt.md");
    let meta = fs::metadata(&refine).expect("stat");
    fs::write(&refine, rewrite(&pass1)).expect("write the REFINE prompt");
    filetime::set_file_mtime(
        &refine,
        filetime::FileTime::from_last_modification_time(&meta),
    )
    .expect("mtime");
    let d = dir.to_str().expect("utf-8");
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&["verify", d, "--final"]);
    assert_eq!(code, 1, "{err}\n{out}");
    let line = out
        .lines()
        .find(|l| l.starts_with("- OBS-06 [BLOCKING] **FAIL**"))
        .unwrap_or_else(|| panic!("OBS-06 fails:\n{out}"));
    assert!(!line.is_empty());
    assert!(out.contains("word similarity 1.000"), "{out}");
}

/// Each paragraph's lines joined and cut again at 50 columns.
fn rewrapped(s: &str) -> Vec<u8> {
    let mut out = String::new();
    for para in s.split("\n\n") {
        let words: Vec<&str> = para.split_whitespace().collect();
        let mut line = String::new();
        for w in words {
            if !line.is_empty() && line.len() + w.len() > 50 {
                out.push_str(&line);
                out.push('\n');
                line.clear();
            }
            if !line.is_empty() {
                line.push(' ');
            }
            line.push_str(w);
        }
        out.push_str(&line);
        out.push_str("\n\n");
    }
    out.into_bytes()
}

#[test]
fn a_refine_prompt_that_is_the_pass1_prompt_rewrapped_fails_obs06() {
    same_prompt_fails_obs06(rewrapped);
}

#[test]
fn a_refine_prompt_that_is_the_pass1_prompt_on_one_line_fails_obs06() {
    same_prompt_fails_obs06(|s| {
        s.split_whitespace()
            .collect::<Vec<_>>()
            .join(" ")
            .into_bytes()
    });
}

#[test]
fn a_refine_prompt_that_is_the_pass1_prompt_in_utf16_fails_obs06() {
    same_prompt_fails_obs06(utf16le_bom);
    same_prompt_fails_obs06(utf16be_no_bom);
}

// ---- issue 31: the tracker read as seen, live -------------------------------------------------

/// A tracker value read as its reader reads it stops a live referee too: `<del>PASS</del> FAIL`
/// is a BV FAIL without a revised brief (OBS-18), and a gate source shown as "manual" through a
/// right-to-left override is a manual source (OBS-27).
#[test]
fn a_struck_tracker_value_stops_watch() {
    watch_stops(
        |d| {
            let path = d.join("EXECUTION-TRACKER.md");
            let text =
                read(&path).replacen("| BV-02 | PASS |", "| BV-02 | <del>PASS</del> FAIL |", 1);
            assert!(text.contains("<del>PASS</del> FAIL"));
            fs::write(&path, text).expect("write the tracker");
        },
        "OBS-18",
        "BV-02 = FAIL (written `<del>PASS</del> FAIL`)",
    );
}

#[test]
fn a_right_to_left_manual_source_stops_watch() {
    watch_stops(
        |d| manual_source(d, "\u{202e}launam"),
        "OBS-27",
        "(reads \"manual\")",
    );
}

/// Issue 31: text is read in display order. A pipeline word written backwards after a
/// right-to-left override is shown, and read, forwards: OBS-21 finds `gate runner`.
#[test]
fn a_pipeline_word_behind_a_right_to_left_override_is_read() {
    verify_fails(
        "clean",
        |d| tainted_report(d, "The \u{202e}rennur etag\u{202c} liked the hero.", utf8),
        "OBS-21",
        &["`gate runner` matched \"The \\u{202e}rennur etag\\u{202c} liked the hero.\" (reads \"gate runner\")"],
    );
}
