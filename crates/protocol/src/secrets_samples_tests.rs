//! CC-07 measured on two secret scanners' own samples (`fixtures/secrets/samples.tsv`: gitleaks'
//! rule tests and detect-secrets' plugin tests, with where each came from): the share of each
//! family's true positives the embedded rules find, and the share of every negative they flag.
//! Prints both (`cargo test --lib samples_tests -- --nocapture`); fails when a family's recall
//! is below 99 % or the negatives flagged are above 5 %.

use std::collections::BTreeMap;

use super::*;

/// The fixture, read when the test runs (not compiled in: a regenerated file needs no rebuild).
fn fixture() -> String {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../fixtures/secrets/samples.tsv"
    );
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// The least share of a family's true positives found.
const MIN_RECALL: f64 = 0.99;
/// The most share of the negatives flagged.
const MAX_FLAGGED: f64 = 0.05;

/// Families measured and printed, held to no bar, and why.
const INFORMATIONAL: &[(&str, &str)] = &[(
    "keyword",
    "detect-secrets' KeywordDetector takes any value after a password-like name \
     (`password = \"value with quotes and spaces\"`); a blocking check that did would reject \
     every fixture and example holding a password",
)];

/// True positives that the other project's negatives, or the rules' placeholders, call no
/// secret: (source, upstream rule, a part of the sample, why). Counted apart, not against the
/// family; each must still be in the fixture.
const DISPUTED: &[(&str, &str, &str, &str)] = &[
    (
        "detect-secrets",
        "aws_key",
        "ZZZZZZZZZZZZZZZZ",
        "one letter repeated where the key is random: gitleaks' own negatives hold \
         `AKIAXXXXXXXXXXXXXXXX` a placeholder",
    ),
    (
        "detect-secrets",
        "aws_key",
        "bPxRfiCYEXAMPLEKEY",
        "AWS's documented example secret key: gitleaks allows `…EXAMPLE` for AWS",
    ),
    (
        "gitleaks",
        "aws-amazon-bedrock-api-key-long-lived",
        "EXAMPLEEXAMPLE",
        "AWS's documented example key, a placeholder by the stopword `example` (gitleaks' \
         own AWS rule allows `…EXAMPLE`)",
    ),
    (
        "gitleaks",
        "anthropic-admin-api-key",
        "abc12fake",
        "holds `fake`: a placeholder by the stopwords",
    ),
    (
        "detect-secrets",
        "npm",
        "npm_xxxxxxxxxxx",
        "`npm_` and eleven `x`: a placeholder (gitleaks' own negatives hold \
         `glpat-XXXXXXXXXXX-XXXXXXXX` one)",
    ),
    (
        "detect-secrets",
        "slack",
        "/Txxxxxxxx/Bxxxxxxxx/",
        "Slack's documented placeholder webhook",
    ),
];
struct Sample<'f> {
    /// The line in the fixture.
    line: usize,
    source: &'f str,
    rule: &'f str,
    family: &'f str,
    positive: bool,
    text: String,
}

fn samples(text: &str) -> Vec<Sample<'_>> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#') && !l.trim().is_empty())
        .map(|(i, l)| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 5, "a sample line has 5 fields: {l}");
            let bytes = base64url(f[4].as_bytes()).unwrap_or_else(|| panic!("base64url: {l}"));
            Sample {
                line: i + 1,
                source: f[0],
                rule: f[1],
                family: f[2],
                positive: match f[3] {
                    "tp" => true,
                    "fp" => false,
                    other => panic!("tp or fp, not {other}"),
                },
                text: String::from_utf8(bytes).expect("UTF-8"),
            }
        })
        .collect()
}

/// The rule that flags a sample (a multi-line one is flagged when one of its lines is), as
/// CC-07 scans each added line after the line before it.
fn flagged<'r>(rules: &'r Rules, text: &str) -> Option<Hit<'r>> {
    let lines: Vec<&[u8]> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l).as_bytes())
        .collect();
    lines.iter().enumerate().find_map(|(i, line)| match i {
        0 => rules.scan(line),
        _ => rules.scan_after(lines[i - 1], line),
    })
}

#[derive(Default)]
struct Tally {
    /// Disputed true positives (not counted).
    disputed: usize,
    positives: usize,
    found: usize,
    /// Found by one of the family's own rules (not a generic one).
    own: usize,
    missed: Vec<String>,
}

/// A sample shown in a failure: its source, rule, and the text with every run of 8 or more
/// token characters cut to its first 4 (the samples are public, but the output stays short).
fn shown(s: &Sample<'_>) -> String {
    let mut out = String::new();
    let mut run = 0;
    for c in s.text.chars().take(160) {
        if c.is_ascii_alphanumeric() || "_-+/=.".contains(c) {
            run += 1;
            if run == 5 {
                out.push('…');
            }
            if run > 4 {
                continue;
            }
        } else {
            run = 0;
        }
        out.push(if c == '\n' { '⏎' } else { c });
    }
    format!("samples.tsv:{} {}:{}: {out}", s.line, s.source, s.rule)
}

#[test]
fn recall_per_family_and_flags_on_negatives_on_gitleaks_and_detect_secrets_samples() {
    // Another rule file can be measured the same way: REFEREE_SECRETS_RULES=/abs/rules.toml.
    let rules = match std::env::var_os("REFEREE_SECRETS_RULES") {
        Some(path) => Arc::new(Rules::load_file(std::path::Path::new(&path)).expect("rules")),
        None => Rules::embedded(),
    };
    let text = fixture();
    let all = samples(&text);
    let mut families: BTreeMap<&str, Tally> = BTreeMap::new();
    let mut negatives = 0usize;
    let mut false_flags = Vec::new();
    let mut disputed_seen = vec![0; DISPUTED.len()];
    for s in &all {
        let hit = flagged(&rules, &s.text);
        if s.positive {
            let t = families.entry(s.family).or_default();
            let disputed = DISPUTED.iter().position(|(source, rule, part, _)| {
                s.source == *source && s.rule == *rule && s.text.contains(part)
            });
            if let Some(i) = disputed {
                disputed_seen[i] += 1;
                t.disputed += 1;
                continue;
            }
            t.positives += 1;
            match hit {
                Some(h) => {
                    t.found += 1;
                    if h.id.starts_with(s.family) {
                        t.own += 1;
                    }
                }
                None => t.missed.push(shown(s)),
            }
        } else {
            negatives += 1;
            if let Some(h) = hit {
                false_flags.push(format!("{} (by {})", shown(s), h.id));
            }
        }
    }
    let mut failures = Vec::new();
    for (i, (source, rule, part, _)) in DISPUTED.iter().enumerate() {
        if disputed_seen[i] == 0 {
            failures.push(format!(
                "disputed `{part}` ({source}:{rule}) is in no sample"
            ));
        }
    }
    println!(
        "{:<12} {:>9} {:>7} {:>8} {:>8} {:>8}",
        "family", "positives", "found", "recall", "own rule", "disputed"
    );
    for (family, t) in &families {
        let recall = t.found as f64 / t.positives as f64;
        println!(
            "{family:<12} {:>9} {:>7} {:>7.1}% {:>8} {:>8}",
            t.positives,
            t.found,
            100.0 * recall,
            t.own,
            t.disputed
        );
        let informational = INFORMATIONAL.iter().any(|(f, _)| f == family);
        if !informational {
            for m in &t.missed {
                println!("  missed: {m}");
            }
        }
        if recall < MIN_RECALL && !informational {
            failures.push(format!(
                "{family}: recall {:.1}% < {:.0}%",
                100.0 * recall,
                100.0 * MIN_RECALL,
            ));
        }
    }
    for (family, why) in INFORMATIONAL {
        println!("{family}: no bar: {why}");
    }
    for (source, rule, part, why) in DISPUTED {
        println!("disputed: {source}:{rule} `{part}`: {why}");
    }
    let rate = false_flags.len() as f64 / negatives as f64;
    println!(
        "negatives: {negatives}, flagged: {} ({:.1}%)",
        false_flags.len(),
        100.0 * rate
    );
    for f in &false_flags {
        println!("  flagged: {f}");
    }
    if rate > MAX_FLAGGED {
        failures.push(format!(
            "{} of {negatives} negatives flagged ({:.1}% > {:.0}%)",
            false_flags.len(),
            100.0 * rate,
            100.0 * MAX_FLAGGED
        ));
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
