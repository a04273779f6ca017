use super::*;
use chrono::TimeZone;

fn split_cells(line: &str) -> Vec<String> {
    split_row(line, false)
}

fn is_separator(cells: &[String]) -> bool {
    !cells.is_empty() && cells.iter().all(|c| is_separator_cell(c))
}

/// A column's cells with their line numbers.
fn lines_of(t: &Tracker, table: &Table, column: &str) -> Vec<(usize, String)> {
    t.column(table, column)
        .into_iter()
        .map(|(at, cell)| (at.line, cell))
        .collect()
}

fn ts(y: i32, mo: u32, d: u32, h: u32, mi: u32, s: u32) -> DateTime<Utc> {
    Utc.with_ymd_and_hms(y, mo, d, h, mi, s).unwrap()
}

const SAMPLE: &str = "\
# Execution Tracker

| Build | yegge-gas-town |
| Date | 2026-02-25 |

## Phase Timestamps

| Field | Value | Notes |
|-------|-------|-------|
| **P0_START** | 2026-02-25T10:00:00Z | |
| P1_START | `2026-02-25 10:05:00` | |
| P2_START | ___ | |

## BV Gates
| Gate | Result | When |
|:-----|:------:|-----:|
| BV-01 | PASS | 2026-02-25T10:06:00+01:00 |
| BV-02 | TBD | |
| REVISION_CYCLES | 1 |

## Phase 3B Auditors
| Auditor | Model | Spawned |
|---|---|---|
| A | opus | 2026-02-25T11:00:00Z |
| B | sonnet | 2026-02-25T11:00:05Z |

## Phase 3B Auditors (REFINE)
| Auditor | Model | Spawned |
|---|---|---|
| A | haiku | 2026-02-25T12:00:00Z |

## REFINE
| REFINE_BEFORE_CHECKLIST | 2026-02-25T12:30:00Z |
| Did you read the brief? | yes |

```
| P0_START | in a code fence |
```
";

#[test]
fn parses_sections_with_levels_and_lines() {
    let t = Tracker::parse(SAMPLE);
    let headings: Vec<_> = t
        .sections
        .iter()
        .map(|s| (s.heading.as_str(), s.level, s.line))
        .collect();
    assert_eq!(
        headings,
        [
            ("Execution Tracker", 1, 1),
            ("Phase Timestamps", 2, 6),
            ("BV Gates", 2, 14),
            ("Phase 3B Auditors", 2, 21),
            ("Phase 3B Auditors (REFINE)", 2, 27),
            ("REFINE", 2, 32),
        ]
    );
}

#[test]
fn parses_field_rows() {
    let t = Tracker::parse(SAMPLE);
    let p0 = t.field("p0_start").unwrap();
    assert_eq!(p0.name, "P0_START");
    assert_eq!(p0.value, "2026-02-25T10:00:00Z");
    assert_eq!(p0.third.as_deref(), Some(""));
    assert_eq!(p0.time, None);
    assert_eq!(p0.line, 10);
    assert_eq!(p0.section, Some(1));
    assert_eq!(parse_timestamp(&p0.value), Some(ts(2026, 2, 25, 10, 0, 0)));

    let bv = t.field("BV-01").unwrap();
    assert_eq!(bv.value, "PASS");
    assert_eq!(bv.time.map(|(t, _)| t), Some(ts(2026, 2, 25, 9, 6, 0)));
    assert_eq!(t.field("REVISION_CYCLES").unwrap().time, None);
    // The header row is not a field row, the row above no separator is.
    assert!(t.field("Field").is_none());
    assert!(t.field("Gate").is_none());
    let build = t.field("Build").unwrap();
    assert_eq!(build.section, Some(0));
    assert_eq!(t.field("date").unwrap().value, "2026-02-25");
    // Code fences hide rows.
    assert_eq!(t.rows.iter().filter(|r| r.name == "P0_START").count(), 1);
    assert!(t.field("in a code fence").is_none());
}

#[test]
fn field_first_occurrence_wins() {
    let t = Tracker::parse("| X | first |\n| x | second |\n");
    assert_eq!(t.field("X").unwrap().value, "first");
    assert_eq!(t.field(" **x** ").unwrap().value, "first");
    assert!(t.field("y").is_none());
}

#[test]
fn rows_before_any_heading_have_no_section() {
    let t = Tracker::parse("| A | 1 |\n# H\n| B | 2 |\n");
    assert_eq!(t.rows[0].section, None);
    assert_eq!(t.rows[1].section, Some(0));
    assert_eq!(t.tables[0].section, None);
    assert!(t.rows_in(&SectionFilter::contains("")).len() == 1);
}

#[test]
fn tables_have_headers_rows_and_lines() {
    let t = Tracker::parse(SAMPLE);
    let auditors = t
        .table_in(&SectionFilter::contains("Phase 3B Auditors"), "model")
        .unwrap();
    assert_eq!(auditors.header, ["Auditor", "Model", "Spawned"]);
    assert_eq!(auditors.line, 22);
    assert_eq!(auditors.rows.len(), 2);
    assert_eq!(
        lines_of(&t, auditors, "Spawned"),
        [
            (24, "2026-02-25T11:00:00Z".to_string()),
            (25, "2026-02-25T11:00:05Z".to_string())
        ]
    );
    assert_eq!(
        lines_of(&t, auditors, "MODEL"),
        [(24, "opus".to_string()), (25, "sonnet".to_string())]
    );
    assert!(lines_of(&t, auditors, "Nope").is_empty());
    let refine = t
        .table_in(
            &SectionFilter::contains("Phase 3B Auditors (REFINE)"),
            "Model",
        )
        .unwrap();
    assert_eq!(lines_of(&t, refine, "Model"), [(30, "haiku".to_string())]);
    assert!(t
        .table_in(&SectionFilter::contains("Phase 3B Auditors"), "Nope")
        .is_none());
    assert!(t
        .table_in(&SectionFilter::contains("Missing"), "Model")
        .is_none());
}

#[test]
fn headerless_table_yields_rows_and_a_table() {
    let t = Tracker::parse("## REFINE\n| A | 1 |\n| B | 2 | 2026-02-25 10:00:00 |\n");
    assert_eq!(t.tables.len(), 1);
    assert!(t.tables[0].header.is_empty());
    assert_eq!(t.tables[0].rows.len(), 2);
    assert_eq!(t.rows.len(), 2);
    assert_eq!(
        t.rows[1].time.map(|(t, _)| t),
        Some(ts(2026, 2, 25, 10, 0, 0))
    );
    assert!(t.table_in(&SectionFilter::exact("REFINE"), "A").is_none());
}

#[test]
fn separator_first_means_no_header() {
    let t = Tracker::parse("|---|---|\n| A | 1 |\n");
    assert_eq!(t.rows.len(), 1);
    assert!(t.tables[0].header.is_empty());
    assert_eq!(t.tables[0].line, 1);
    let only_sep = Tracker::parse("|---|\n|:-:|\n");
    assert!(only_sep.rows.is_empty());
    assert_eq!(only_sep.tables.len(), 1);
    assert!(only_sep.tables[0].rows.is_empty());
}

#[test]
fn a_run_with_two_headers_is_two_tables() {
    let text = "| H1 | V |\n|---|---|\n| A | 1 |\n| H2 | W |\n|---|---|\n| B | 2 |\n";
    let t = Tracker::parse(text);
    assert_eq!(t.tables.len(), 2);
    assert_eq!(t.tables[0].header, ["H1", "V"]);
    assert_eq!(t.tables[1].header, ["H2", "W"]);
    assert_eq!(t.tables[1].line, 4);
    let names: Vec<_> = t.rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["A", "B"]);
}

#[test]
fn blank_line_or_text_ends_a_table() {
    let t = Tracker::parse("| A | 1 |\n\n| B | 2 |\ntext\n| C | 3 |\n");
    assert_eq!(t.tables.len(), 3);
    assert_eq!(t.rows.len(), 3);
}

#[test]
fn empty_first_cell_is_a_table_row_but_not_a_field_row() {
    let t = Tracker::parse("| K | V |\n|---|---|\n|  | orphan |\n| <!-- x --> | x |\n");
    assert!(t.rows.is_empty());
    assert_eq!(t.tables[0].rows.len(), 2);
    assert_eq!(t.fill().total, 0);
}

#[test]
fn indented_table_lines_count() {
    let t = Tracker::parse("  | A | 1 |\n\t| B | 2 |\n");
    assert_eq!(t.rows.len(), 2);
}

#[test]
fn missing_value_is_empty_string() {
    let t = Tracker::parse("| LONELY |\n| TRAIL | x\n");
    assert_eq!(t.field("LONELY").unwrap().value, "");
    assert_eq!(t.field("TRAIL").unwrap().value, "x");
}

#[test]
fn fill_counts_all_field_rows() {
    let t = Tracker::parse(SAMPLE);
    let fill = t.fill();
    assert_eq!(fill.total, t.rows.len());
    assert_eq!(fill.total, 13);
    assert_eq!(
        fill.empty,
        [("P2_START".to_string(), 12), ("BV-02".to_string(), 18)]
    );
    assert_eq!(fill.filled, 11);
    assert_eq!(fill.ratio(), Some(11.0 / 13.0));
    assert_eq!(Tracker::parse("").fill().ratio(), None);
}

#[test]
fn rows_in_and_field_in_respect_sections() {
    let t = Tracker::parse(SAMPLE);
    let names = |f: &SectionFilter| -> Vec<String> {
        t.rows_in(f).iter().map(|r| r.name.clone()).collect()
    };
    assert_eq!(
        names(&SectionFilter::contains("phase timestamps")),
        ["P0_START", "P1_START", "P2_START"]
    );
    assert_eq!(
        names(&SectionFilter::contains("Phase 3B Auditors")),
        ["A", "B"]
    );
    assert_eq!(
        names(&SectionFilter::contains("Phase 3B Auditors (refine)")),
        ["A"]
    );
    assert_eq!(
        names(&SectionFilter::exact(" refine ")),
        ["REFINE_BEFORE_CHECKLIST", "Did you read the brief?"]
    );
    assert!(names(&SectionFilter::contains("nothing")).is_empty());
    assert_eq!(
        t.field_in(&SectionFilter::contains("Auditors (REFINE)"), "a")
            .unwrap()
            .value,
        "haiku"
    );
    assert!(t
        .field_in(&SectionFilter::contains("BV Gates"), "P0_START")
        .is_none());
}

#[test]
fn section_matching_rules() {
    let t = Tracker::parse(
            "# Phase 3B Auditors (REFINE)\n# **REFINE**\n# Phase 2: Builder\n# REFINE:\n# Notes (draft) more\n# Ünïcode HEADING\n",
        );
    let m = |i: usize, text: &str, exact: bool| {
        t.section_matches(
            i,
            &SectionFilter {
                text: text.to_string(),
                exact,
            },
        )
    };
    assert!(!m(0, "Phase 3B Auditors", false));
    assert!(m(0, "Phase 3B Auditors (REFINE)", false));
    assert!(m(0, "auditors (refine)", false));
    assert!(m(0, "(REFINE)", false));
    assert!(!m(0, "REFINE", true));
    assert!(m(1, "REFINE", true));
    assert!(m(1, "refine", false));
    assert!(m(2, "Phase 2", false));
    assert!(!m(2, "Phase 2", true));
    assert!(m(3, "refine", true));
    // Only a trailing parenthesised part makes a heading its own section.
    assert!(m(4, "Notes", false));
    assert!(m(5, "ünïcode heading", true));
    assert!(!m(99, "anything", false));
}

#[test]
fn paren_suffix_finds_balanced_tail() {
    assert_eq!(paren_suffix("a (refine)"), Some("(refine)"));
    assert_eq!(paren_suffix("a (b (c))"), Some("(b (c))"));
    assert_eq!(paren_suffix("a (b) c"), None);
    assert_eq!(paren_suffix("a b)"), None);
    assert_eq!(paren_suffix(""), None);
}

#[test]
fn code_fences_are_skipped() {
    let text =
        "## S\n~~~~\n| A | 1 |\n~~~\n| B | 2 |\n~~~~\n| C | 3 |\n```rust\n# Not a heading\n```\n";
    let t = Tracker::parse(text);
    let names: Vec<_> = t.rows.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names, ["C"]);
    assert_eq!(t.sections.len(), 1);
    assert_eq!(
        t.hidden_row("A").map(|h| (h.line, h.inside)),
        Some((3, "a code block"))
    );
}

#[test]
fn gfm_tables_without_outer_pipes() {
    let text = "## Phase 3B Auditors\nAuditor | Model | Spawned\n:--- | :---: | ---:\nA | claude-opus | 2026-02-25T10:00:00Z\n| B | opus | |\n\nprose a | b\n";
    let t = Tracker::parse(text);
    let table = t
        .table_in(&SectionFilter::contains("Phase 3B Auditors"), "Model")
        .unwrap();
    assert_eq!(table.header, ["Auditor", "Model", "Spawned"]);
    assert_eq!(
        lines_of(&t, table, "Model"),
        [(4, "claude-opus".to_string()), (5, "opus".to_string())]
    );
    assert_eq!(
        t.field("A").unwrap().time.map(|(t, _)| t),
        Some(ts(2026, 2, 25, 10, 0, 0))
    );
    // A pipe in prose with no delimiter row below is not a table.
    assert!(t.field("prose a").is_none());
    // The header needs as many cells as the delimiter row (GFM).
    assert!(Tracker::parse("a | b\n--- | --- | ---\nc | d\n")
        .rows
        .is_empty());
}

#[test]
fn html_comments_are_not_data() {
    let text = "## Phase Timestamps\n| Field | Value |\n|---|---|\n<!-- example rows:\n| P0_START | 2026-01-01T00:00:00Z |\n## Not a section\n-->\n| P1_START | <!-- fill in --> |\n| P2_START | 2026-02-25T10:10:00Z <!-- UTC --> |\n";
    let t = Tracker::parse(text);
    assert!(t.field("P0_START").is_none());
    let hidden = t.hidden_row("p0_start").unwrap();
    assert_eq!((hidden.line, hidden.inside), (5, "an HTML comment"));
    assert_eq!(t.sections.len(), 1);
    let p1 = t.field("P1_START").unwrap();
    assert!(is_empty_value(&p1.value));
    assert_eq!(p1.comments, "fill in");
    assert_eq!(t.field("P2_START").unwrap().value, "2026-02-25T10:10:00Z");
    // The rows after the comment are still read (GFM ends the table at the comment; the
    // rows after it are a table written without its header).
    assert_eq!(t.rows.len(), 2);
}

#[test]
fn setext_headings_and_stray_byte_order_marks() {
    let text = "Phase Timestamps\n================\n| P0_START | x |\n\u{feff}## BV Gates ##\r\r\n| BV-01 | PASS |\n";
    let t = Tracker::parse(text);
    let headings: Vec<_> = t
        .sections
        .iter()
        .map(|s| (s.level, s.heading.as_str()))
        .collect();
    assert_eq!(headings, [(1, "Phase Timestamps"), (2, "BV Gates")]);
    assert_eq!(
        t.field_in(&SectionFilter::contains("bv gates"), "BV-01")
            .unwrap()
            .value,
        "PASS"
    );
    assert!(t
        .field_in(&SectionFilter::contains("phase timestamps"), "P0_START")
        .is_some());
}

#[test]
fn unclosed_fence_runs_to_the_end() {
    let t = Tracker::parse("| A | 1 |\n```\n| B | 2 |\n# H\n");
    assert_eq!(t.rows.len(), 1);
    assert!(t.sections.is_empty());
}

#[test]
fn inline_triple_backticks_do_not_open_a_fence() {
    let t = Tracker::parse("``` `x` ```\n| A | 1 |\n");
    assert_eq!(t.rows.len(), 1);
}

#[test]
fn crlf_line_endings() {
    let t = Tracker::parse("## Phase 2\r\n| BUILDER_SPAWNED | 2026-02-25T10:00:00Z |\r\n");
    assert_eq!(t.sections[0].heading, "Phase 2");
    assert_eq!(
        t.field("BUILDER_SPAWNED").unwrap().value,
        "2026-02-25T10:00:00Z"
    );
}

#[test]
fn split_cells_handles_escapes_and_code() {
    assert_eq!(split_cells("| a | b |"), ["a", "b"]);
    assert_eq!(split_cells("|a|b"), ["a", "b"]);
    assert_eq!(split_cells("| a | |"), ["a", ""]);
    assert_eq!(split_cells("|"), Vec::<String>::new());
    assert_eq!(split_cells("||"), [""]);
    assert_eq!(split_cells(r"| a \| b | c |"), ["a | b", "c"]);
    assert_eq!(split_cells(r"| a | b \|"), ["a", "b |"]);
    // GFM splits on a pipe inside a code span too; `\|` is the way to write one.
    assert_eq!(split_cells("| `a | b` | c |"), ["`a", "b`", "c"]);
    assert_eq!(split_cells(r"| `a \| b` | c |"), ["`a | b`", "c"]);
    // An unclosed backtick is text and does not swallow pipes.
    assert_eq!(split_cells("| it`s | c |"), ["it`s", "c"]);
    assert_eq!(split_cells("| é | ü |"), ["é", "ü"]);
    assert_eq!(split_cells("| \u{feff}P0_START | x\r |"), ["P0_START", "x"]);
}

/// Raw cells (to write a row back, `replay`) split where read cells split, each as written.
#[test]
fn raw_cells_split_where_read_cells_split() {
    for line in [
        r"| a \| b | c |",
        r"| `a \| b` | c |",
        "| `a | b` | c |",
        "| ``a ` | b`` | c |",
        "| it`s | c |",
        "| a | |",
    ] {
        let raw = split_row(line, true);
        assert_eq!(raw.len(), split_cells(line).len(), "{line}");
    }
    assert_eq!(split_row(r"| a \| b | c |", true), [r"a \| b", "c"]);
    assert_eq!(split_row(r"| `a \| b` | c |", true), [r"`a \| b`", "c"]);
    assert_eq!(split_row("| `a | b` | c |", true), ["`a", "b`", "c"]);
}

#[test]
fn separators() {
    let s = |v: &[&str]| is_separator(&v.iter().map(|c| c.to_string()).collect::<Vec<_>>());
    assert!(s(&["---", ":--", "--:", ":-:", "-"]));
    assert!(!s(&["---", ""]));
    assert!(!s(&[":"]));
    assert!(!s(&["::"]));
    assert!(!s(&["- -"]));
    assert!(!s(&["BV-01", "-"]));
    assert!(!s(&[]));
}

#[test]
fn strip_decoration_cases() {
    assert_eq!(strip_decoration("**P0_START**"), "P0_START");
    assert_eq!(strip_decoration(" `P0_START` "), "P0_START");
    assert_eq!(strip_decoration("**`P0_START`**"), "P0_START");
    assert_eq!(strip_decoration("*x*"), "x");
    assert_eq!(strip_decoration("__init__"), "__init__");
    assert_eq!(strip_decoration("P3A+-1a"), "P3A+-1a");
    assert_eq!(strip_decoration("**"), "");
    assert_eq!(strip_decoration("*"), "*");
    assert_eq!(strip_decoration("`"), "`");
    assert_eq!(strip_decoration(""), "");
    assert_eq!(strip_decoration("**a"), "**a");
}

#[test]
fn empty_values() {
    for v in [
        "", "   ", "_", "___", " - ", "—", "[ ]", "TBD", "tbd", " Tbd ",
    ] {
        assert!(is_empty_value(v), "{v:?}");
    }
    for v in ["x", "--", "[x]", "0", "TBD later", "_x_", "N/A"] {
        assert!(!is_empty_value(v), "{v:?}");
    }
}

/// A time to the minute stands for its minute; one with its seconds (with or without a
/// fraction, a zone or a note) is exact.
#[test]
fn a_time_is_known_to_what_is_written() {
    let minute = chrono::TimeDelta::seconds(60);
    for (text, span) in [
        ("2026-02-25 10:04", minute),
        ("2026-02-25T10:04Z", minute),
        ("2026-02-25T12:04+02:00", minute),
        ("2026-02-25 10:04 (after the scan)", minute),
        ("2026-02-25T10:04:00Z", chrono::TimeDelta::zero()),
        ("2026-02-25 10:04:00", chrono::TimeDelta::zero()),
        ("2026-02-25T10:04:00.000000", chrono::TimeDelta::zero()),
    ] {
        let (t, got) = parse_timestamp_span(text).expect(text);
        assert_eq!(t, ts(2026, 2, 25, 10, 4, 0), "{text}");
        assert_eq!(got, span, "{text}");
    }
}

/// An offset as Python's `%z` writes it (no colon), attached or after a space, is read in its
/// zone; a zone the reader does not take (`CET`, `PM`, an offset it cannot read) after a time
/// leaves it unread, never read as UTC with a note.
#[test]
fn a_time_is_read_in_its_zone_or_not_at_all() {
    let t = ts(2026, 2, 25, 10, 4, 0);
    for text in [
        "2026-02-25T10:04:00+0000",
        "2026-02-25T12:04:00+0200",
        "2026-02-25 12:04:00 +0200",
        "2026-02-25 05:04:00 -0500",
        "2026-02-25 10:04:00 GMT",
        "2026-02-25T10:04:00Z UTC (the runner's clock)",
        "2026-02-25T10:04:00Z DONE",
    ] {
        assert_eq!(parse_timestamp(text), Some(t), "{text}");
    }
    for text in [
        "2026-02-25 11:04:00 CET",
        "2026-02-25 10:04:00 PM",
        "2026-02-25 10:04:00 pst (local)",
        "2026-02-25 10:04:00 +02:0x",
    ] {
        assert_eq!(parse_timestamp(text), None, "{text}");
    }
}

/// A shell pipeline writes its times with `date`: the C locale's default in UTC (`date -u`, or
/// `TZ` unset), `date -R`, and `asctime`'s form (Python's `ctime()`); in another zone, or with
/// a weekday that is not the date's, not at all.
#[test]
fn times_as_date_writes_them() {
    let t = ts(2026, 2, 25, 10, 4, 0);
    for text in [
        "Wed Feb 25 10:04:00 UTC 2026",
        "Wed Feb 25 10:04:00 GMT 2026",
        "Wed, 25 Feb 2026 10:04:00 +0000",
        "Wed, 25 Feb 2026 12:04:00 +0200",
        "Wed Feb 25 10:04:00 2026",
        "`Wed Feb 25 10:04:00 UTC 2026`",
        "Wed Feb 25 10:04:00 AM UTC 2026",
        "Wed 25 Feb 10:04:00 UTC 2026",
    ] {
        assert_eq!(
            parse_timestamp_span(text),
            Some((t, chrono::TimeDelta::zero())),
            "{text}"
        );
    }
    let fifth = ts(2026, 2, 5, 10, 4, 0);
    assert_eq!(parse_timestamp("Thu Feb  5 10:04:00 UTC 2026"), Some(fifth));
    assert_eq!(
        parse_timestamp("Wed Feb 25 10:04:00 PM UTC 2026"),
        Some(ts(2026, 2, 25, 22, 4, 0))
    );
    for text in [
        "Wed Feb 25 11:04:00 CET 2026",
        "Wed Feb 25 02:04:00 PST 2026",
        "Thu Feb 25 10:04:00 UTC 2026",
    ] {
        assert_eq!(parse_timestamp(text), None, "{text}");
    }
}

#[test]
fn timestamps() {
    let t = ts(2026, 2, 25, 10, 4, 0);
    assert_eq!(parse_timestamp("2026-02-25T10:04:00Z"), Some(t));
    assert_eq!(parse_timestamp(" 2026-02-25T12:04:00+02:00 "), Some(t));
    assert_eq!(parse_timestamp("2026-02-25T05:04:00-05:00"), Some(t));
    assert_eq!(parse_timestamp("2026-02-25 10:04:00"), Some(t));
    assert_eq!(parse_timestamp("2026-02-25 10:04:00 UTC"), Some(t));
    assert_eq!(parse_timestamp("`2026-02-25 10:04:00`"), Some(t));
    assert_eq!(parse_timestamp("**`2026-02-25T10:04:00Z`**"), Some(t));
    assert_eq!(
        parse_timestamp("2026-02-25T10:04:00.250Z").map(|d| d.timestamp_millis()),
        Some(t.timestamp_millis() + 250)
    );
    assert_eq!(
        parse_timestamp("2026-02-25 10:04:00.5").map(|d| d.timestamp_millis()),
        Some(t.timestamp_millis() + 500)
    );
    // As a human reads them: no zone (UTC, as the contract's `YYYY-MM-DD HH:MM:SS`), Python's
    // `isoformat()`, no seconds, a note after the time.
    for good in [
        "2026-02-25T10:04:00",
        "2026-02-25T10:04:00.000000",
        "2026-02-25 10:04",
        "2026-02-25T10:04",
        "2026-02-25T10:04Z",
        "2026-02-25T12:04+02:00",
        "2026-02-25 10:04 UTC",
        "2026-02-25T10:04:00Z (after the screenshots)",
        "2026-02-25 10:04:00 UTC — second attempt",
        "2026-02-25 10:04 approx.",
    ] {
        assert_eq!(parse_timestamp(good), Some(t), "{good:?}");
    }
    for bad in [
        "",
        "PASS",
        "2026-02-25",
        "10:04:00",
        "2026-02-30T10:04:00Z",
        "2026-02-25T25:04:00Z",
        "2026-02-25T10",
        "about 2026-02-25T10:04:00Z",
        "2026-02-25T10:04:00Zsoon",
        "yesterday",
    ] {
        assert_eq!(parse_timestamp(bad), None, "{bad:?}");
    }
    assert_eq!(parse_timestamp(&"9".repeat(1_000_000)), None);
}

#[test]
fn hand_built_tracker_with_bad_indices_does_not_panic() {
    let mut t = Tracker::parse("# S\n| A | 1 |\n");
    t.rows[0].section = Some(42);
    t.tables[0].section = Some(42);
    let f = SectionFilter::contains("S");
    assert!(t.rows_in(&f).is_empty());
    assert!(t.table_in(&f, "A").is_none());
}

#[test]
fn eq_ignore_case_is_unicode() {
    assert!(eq_ignore_case("Ärger", "äRGER"));
    assert!(!eq_ignore_case("a", "ab"));
}

#[test]
fn table_column_index_ignores_case_and_decoration() {
    let t = Tracker::parse("| **ID** | Artifact | Path | Done |\n|---|---|---|---|\n| 1 | map | {BUILD_DIR}/p0.md | [x] |\n");
    let table = &t.tables[0];
    assert_eq!(table.column_index("id"), Some(0));
    assert_eq!(table.column_index(" PATH "), Some(2));
    assert_eq!(table.column_index("missing"), None);
    assert_eq!(
        lines_of(&t, table, "Path"),
        [(3, "{BUILD_DIR}/p0.md".to_string())]
    );
}

#[test]
fn short_rows_give_empty_column_cells() {
    let t = Tracker::parse("| A | B | C |\n|---|---|---|\n| 1 |\n");
    assert_eq!(lines_of(&t, &t.tables[0], "C"), [(3, String::new())]);
}

#[test]
fn empty_and_garbage_input_never_panic() {
    for text in [
        "",
        "\n\n\n",
        "|",
        "||||",
        "|\\",
        "| \\",
        "`|`|`",
        "#",
        "######",
        "```",
        "~~~\n",
        "| a | b\n|---\n",
        "\u{feff}| A | 1 |",
        "|\u{0}|\u{0}|",
        "| é\\|",
    ] {
        let _ = Tracker::parse(text);
    }
    let t = Tracker::parse("|---|\n| A |\n");
    assert_eq!(t.rows.len(), 1);
    assert_eq!(Tracker::parse("\u{feff}| A | 1 |").rows.len(), 1);
}

#[test]
fn huge_inputs_stay_linear() {
    use std::time::{Duration, Instant};
    let huge_pipes = format!("|{}", "a|".repeat(300_000));
    let huge_ticks = format!("| {} |", "`".repeat(300_000));
    // Runs of lengths 1, 2, 3, … with no partners: quadratic if each looks ahead to the end.
    let mut staircase = String::from("| ");
    for n in 1..=700 {
        staircase.push_str(&"`".repeat(n));
        staircase.push('|');
    }
    let alternating = format!("| {} |", "` ``".repeat(100_000));
    let many_lines = "| X | 1 |\n".repeat(100_000);
    let huge_heading = format!("# {}", "#".repeat(500_000));
    let start = Instant::now();
    let t = Tracker::parse(&huge_pipes);
    assert_eq!(t.rows[0].name, "a");
    assert_eq!(t.tables[0].rows[0].cells.len(), 300_000);
    Tracker::parse(&huge_ticks);
    Tracker::parse(&staircase);
    Tracker::parse(&alternating);
    assert_eq!(Tracker::parse(&many_lines).rows.len(), 100_000);
    assert_eq!(Tracker::parse(&huge_heading).sections[0].heading, "");
    assert!(start.elapsed() < Duration::from_secs(20));
}
