use std::sync::Arc;

use super::source::readable_runs;
use super::*;
use crate::artifacts::FileData;

/// The evidence lines of some matches.
fn lines(found: Vec<Found>) -> Vec<String> {
    found.into_iter().map(|f| f.line).collect()
}

fn field(label: &str, text: &str) -> Source {
    Source::field(label.into(), text.into())
}

#[test]
fn forbidden_reports_lines_in_order_for_terms_and_patterns() {
    let patterns = vec![Pattern::try_from(r"(?-u:\b)REFINE(?-u:\b)".to_string()).unwrap()];
    let list = vec!["content map".to_string()];
    let src = field(
        "r.md",
        "fine\nthe Content Map says\nREFINED is ok\nbut REFINE is not\n",
    );
    let hits = lines(forbidden(&patterns, &list, &[src]));
    assert_eq!(
        hits,
        vec![
            "r.md:2: `content map` matched \"Content Map\"".to_string(),
            "r.md:4: `(?-u:\\b)REFINE(?-u:\\b)` matched \"REFINE\"".to_string(),
        ]
    );
    assert!(forbidden(&patterns, &list, &[field("ok.md", "nothing here")]).is_empty());
}

#[test]
fn hits_are_found_as_read_and_quoted_as_written() {
    let list = vec!["content map".to_string(), "gate runner".to_string()];
    let src = field(
            "r.md",
            "a\nGR\\-12: PASS, x &gt;= 15\nthe content\n  map and the ga\u{200b}te ｒｕｎｎｅｒ\nre-\npair\n",
        );
    let hits = lines(forbidden(&obs07(), &list, &[src]));
    let fix = obs07()[2].as_str().to_string();
    assert_eq!(
        hits,
        vec![
            format!(
                "r.md:2: `{}` matched \"GR\\-12: PASS\" (reads \"GR-12: PASS\")",
                obs07()[0].as_str()
            ),
            format!(
                "r.md:2: `{}` matched \"&gt;= 1\" (reads \">= 1\")",
                obs07()[1].as_str()
            ),
            "r.md:3: `content map` matched \"content\n  map\"".to_string(),
            "r.md:4: `gate runner` matched \"ga\\u{200b}te ｒｕｎｎｅｒ\" (reads \"gate runner\")"
                .to_string(),
            format!("r.md:5: `{fix}` matched \"re-\npair\" (reads \"repair\")"),
        ]
    );
}

#[test]
fn a_utf16_file_is_searched_decoded_and_each_hit_reported_once() {
    let text = "notes\nplease fix the hero\n";
    let mut bytes = vec![0xff, 0xfe];
    bytes.extend(text.encode_utf16().flat_map(u16::to_le_bytes));
    let s = binary("refine-brief.md", bytes);
    assert_eq!(s.wide(), Some(Encoding::Utf16Le));
    let hits = lines(forbidden(&obs07(), &[], &[s]));
    assert_eq!(
        hits,
        vec![format!(
            "refine-brief.md:2: `{}` matched \"fix\" (UTF-16LE)",
            obs07()[2].as_str()
        )]
    );
}

#[test]
fn snippets_need_length_and_required_language() {
    let t: Text = toml::from_str(
            r#"fields = ["X"]
               min_chars = 10
               require = { patterns = ['(?i)preserved', '(?i)changed', '(?i)next'], at_least = 2 }"#,
        )
        .unwrap();
    assert!(judge_snippet(&t, "we preserved the hero and changed the grid").0);
    let (ok, why) = judge_snippet(&t, "preserved everything");
    assert!(!ok);
    assert!(why.contains("1 of the required: (?i)preserved"), "{why}");
    assert!(!judge_snippet(&t, "changed").0, "too short");
}

fn binary(label: &str, bytes: Vec<u8>) -> Source {
    // Built by hand: hashing 64 MiB in a debug build would cost more than the search.
    let d = FileData {
        rel: label.into(),
        size: bytes.len() as u64,
        bytes: bytes.into(),
        sha256: String::new(),
        mtime: None,
    };
    Source::file(label.into(), Arc::new(d))
}

/// OBS-07's forbid list, as in protocols/d10.toml.
fn obs07() -> Vec<Pattern> {
    [
            r"(?i-u)GR-\d+\s*[:=]\s*(PASS|FAIL)",
            r"(?-u)(>=|<=|≥|≤)\s*\d",
            r"(?i-u)\b(fix|fixes|fixed|fixing|repair|repairs|repaired|repairing|address|addresses|addressed|addressing|correct|corrects|corrected|correcting|resolve|resolves|resolved|resolving)\b",
        ]
        .into_iter()
        .map(|p| Pattern::try_from(p.to_string()).unwrap())
        .collect()
}

#[test]
fn readable_runs_are_maximal_and_at_least_min_long() {
    let min = MIN_READABLE_RUN;
    let text = |n: usize| vec![b'a'; n];
    // A run exactly `min` long counts, at the very start and at the very end; one byte
    // shorter does not.
    let mut b = text(min);
    b.push(0);
    b.extend(text(min - 1));
    b.push(0x01);
    b.extend(text(min));
    let end = b.len();
    assert_eq!(
        readable_runs(&b, min),
        vec![0..min, end - min..end],
        "runs of {min} count, {} does not",
        min - 1
    );
    // Tab, CR, LF and complete UTF-8 sequences (2, 3 and 4 bytes) continue a run; DEL, a
    // cut-off sequence and a lone continuation byte end one.
    let mut b = vec![0xff];
    b.extend("é\t≥ 7\r\n🦀 ok".as_bytes()); // 17 bytes
    b.push(0x7f);
    b.extend(b"ab");
    b.extend([0xe2, 0x89]); // ≥ cut short
    b.extend(b"cd");
    b.push(0x80);
    assert_eq!(readable_runs(&b, 17), vec![1..18]);
    assert_eq!(readable_runs(&b, 2), vec![1..18, 19..21, 23..25]);
    assert!(readable_runs(&b, 18).is_empty());
    assert!(readable_runs(b"", 1).is_empty());
}

#[test]
fn a_hit_in_binary_counts_only_inside_one_readable_run() {
    // The run is taken in the reading, where NUL bytes read as nothing: the `\n` before
    // the NULs joins it. Its offsets are the reading's: the 8 bytes before, minus 2 NULs.
    let mut b = b"\x89PNG\r\n\x1a\n\x00\x00".to_vec();
    b.extend(b"Comment: please fix it"); // 22 bytes, one run
    b.extend(b"\x00\x89\x01fix\x02\xff\x00>=7\x00");
    let s = binary("a.png", b);
    let (text_at, text_end) = (7, 30);
    let readings = s.readings();
    let r = &readings[0];
    assert_eq!(r.runs.as_deref(), Some(&vec![text_at..text_end][..]));
    assert_eq!(
        &r.reading.text(s.original())[text_at..text_end],
        b"\nComment: please fix it"
    );
    assert!(r.counts(text_end - 3..text_end), "`fix` inside the run");
    assert!(r.counts(text_at..text_end), "the whole run");
    assert!(
        !r.counts(text_at - 1..text_at + 3),
        "straddles the run's start"
    );
    assert!(
        !r.counts(text_end - 2..text_end + 1),
        "straddles the run's end"
    );
    let hits = lines(forbidden(&obs07(), &[], &[s]));
    assert_eq!(
            hits,
            vec!["a.png:3: `(?i-u)\\b(fix|fixes|fixed|fixing|repair|repairs|repaired|repairing|address|addresses|addressed|addressing|correct|corrects|corrected|correcting|resolve|resolves|resolved|resolving)\\b` matched \"fix\"".to_string()],
            "only the planted sentence, with its line; not the chance `fix` or `>=7`"
        );
    // The same bytes without the NUL bytes are text: every hit counts.
    let text = field("a.txt", "\u{1}fix\u{2} >=7 ");
    assert_eq!(forbidden(&obs07(), &[], &[text]).len(), 2);
}

#[test]
fn required_language_in_binary_counts_only_in_readable_runs() {
    let t: Text = toml::from_str(
        r#"files = ["a.bin"]
               require = { terms = ["preserved", "changed"], at_least = 2 }"#,
    )
    .unwrap();
    // `preserved` between control bytes is 9 bytes: no run, so no required word.
    let s = binary(
        "a.bin",
        b"\x01preserved\x02 we changed the grid and kept the rest\x00".to_vec(),
    );
    assert_eq!(s.text(), " we changed the grid and kept the rest");
    let (ok, why) = judge_snippet(&t, &s.text());
    assert!(!ok);
    assert!(why.contains("1 of the required: changed"), "{why}");
    // In a run it counts.
    let s = binary(
        "a.bin",
        b"\x00we preserved the hero, changed the grid\x00".to_vec(),
    );
    assert!(judge_snippet(&t, &s.text()).0);
    // NUL bytes read as nothing: words spelled out between them (ASCII saved as UTF-16
    // without its mark) are words.
    let s = binary(
        "a.bin",
        b"p\x00r\x00e\x00s\x00e\x00r\x00v\x00e\x00d\x00 and changed it".to_vec(),
    );
    assert!(judge_snippet(&t, &s.text()).0, "{}", s.text());
}

/// Pseudo-random bytes from a fixed seed (SplitMix64), standing in for compressed image data.
fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut out = Vec::with_capacity(len + 8);
    while out.len() < len {
        x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = x;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        out.extend((z ^ (z >> 31)).to_le_bytes());
    }
    out.truncate(len);
    out
}

/// Searches `len` random bytes with OBS-07's patterns: (raw hits, hits that count).
fn chance_hits(len: usize) -> (usize, usize) {
    let mut bytes = noise(len);
    bytes[0] = 0; // binary whatever the seed gives
    let raw = pattern::search(&obs07()).unwrap().find_iter(&bytes).count();
    (
        raw,
        forbidden(&obs07(), &[], &[binary("noise.png", bytes)]).len(),
    )
}

#[test]
fn random_bytes_give_no_chance_hits() {
    let (raw, counted) = chance_hits(4 << 20);
    assert!(raw > 0, "the raw search does find chance hits in 4 MiB");
    assert_eq!(counted, 0, "{raw} raw chance hits");
}

/// The measurement behind [`MIN_READABLE_RUN`] (about 16 s in a debug build): `cargo test
/// --lib chance_hits_in_64_mib -- --ignored --nocapture`.
#[test]
#[ignore = "64 MiB: slow in a debug build"]
fn chance_hits_in_64_mib() {
    let (raw, counted) = chance_hits(64 << 20);
    println!("64 MiB of random bytes: {raw} raw OBS-07 hits, {counted} in readable runs");
    assert_eq!(counted, 0);
}

/// A match stands whatever the writer appends only in a file with no NUL bytes, and only with a
/// complete line of text after its own: the last line may still grow, a line ending in `-` may
/// join the next text, and a tracker field or a binary file never stands.
#[test]
fn a_match_is_settled_only_with_a_complete_line_of_text_after_it() {
    let list = vec!["gate runner".to_string(), "gr-".to_string()];
    let file = |text: &str| binary("r.md", text.as_bytes().to_vec());
    let settled = |src: Source| -> Vec<bool> {
        forbidden(&[], &list, &[src])
            .into_iter()
            .map(|f| f.settled)
            .collect()
    };
    assert_eq!(settled(file("the gate runner\nmore\n")), [true]);
    assert_eq!(settled(file("a\nthe gate runner\nmore\nand")), [true]);
    // The last line, complete or not: what follows may change how it reads.
    assert_eq!(settled(file("the gate runner")), [false]);
    assert_eq!(settled(file("the gate runner\n")), [false]);
    // Only blank lines after it: the next text may still join it (`GR-` then `12`).
    assert_eq!(settled(file("see GR-\n\n  \n")), [false]);
    assert_eq!(settled(file("see GR-\n12 more\n")), [true]);
    // A file with NUL bytes, and a tracker field: never.
    assert_eq!(
        settled(file("the gate runner in a long readable run\nmore\n\0")),
        [false]
    );
    assert_eq!(
        settled(field("t.md:3 (X)", "the gate runner\nmore\n")),
        [false]
    );
}
