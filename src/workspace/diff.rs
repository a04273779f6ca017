//! Unified diffs of a file against its baseline, and the similarity ratio of two attempts'
//! diffs: a faithful port of Python difflib's `SequenceMatcher(None, a, b).ratio()` with
//! `autojunk=False` over lines. `similar`'s own ratio is a different algorithm (it
//! counts the operations of a Myers diff), so the loop guard's 0.97 threshold, chosen against
//! difflib in seed 002, would not mean the same thing with it.

use std::collections::HashMap;

/// The most lines of either diff the ratio is computed over. The matcher is O(n·m) in the worst
/// case (many equal lines); past this the ratio is not computed and the guard says so.
pub const MAX_RATIO_LINES: usize = 50_000;

/// A unified diff of one file (`a/PATH` → `b/PATH`, 3 lines of context). `None` on either
/// side is an absent file (`/dev/null`). Binary content (a NUL byte or invalid UTF-8) gives
/// one line saying the files differ, with their sizes.
pub fn unified(path: &str, old: Option<&[u8]>, new: Option<&[u8]>) -> String {
    let (a_name, b_name) = (
        old.map_or("/dev/null".to_string(), |_| format!("a/{path}")),
        new.map_or("/dev/null".to_string(), |_| format!("b/{path}")),
    );
    let old_b = old.unwrap_or_default();
    let new_b = new.unwrap_or_default();
    if old_b == new_b && old.is_some() == new.is_some() {
        return String::new();
    }
    let text = |b: &[u8]| -> Option<String> {
        if b.contains(&0) {
            return None;
        }
        String::from_utf8(b.to_vec()).ok()
    };
    match (text(old_b), text(new_b)) {
        (Some(a), Some(b)) => {
            let diff = similar::TextDiff::from_lines(&a, &b);
            let mut out = format!("--- {a_name}\n+++ {b_name}\n");
            for hunk in diff.unified_diff().context_radius(3).iter_hunks() {
                out.push_str(&hunk.to_string());
            }
            if !out.ends_with('\n') {
                out.push('\n');
            }
            out
        }
        // Sizes and contents: a binary reworked to another of the same size is another diff
        // (the loop guards compare diffs).
        _ => format!(
            "Binary files {a_name} and {b_name} differ ({} → {} bytes, sha256 {} → {})\n",
            old_b.len(),
            new_b.len(),
            short_sha(old_b),
            short_sha(new_b)
        ),
    }
}

/// The first 16 hex digits of the bytes' SHA-256 (`-` for none).
fn short_sha(bytes: &[u8]) -> String {
    if bytes.is_empty() {
        return "-".into();
    }
    let mut hex = crate::artifacts::fsread::sha256_hex(bytes);
    hex.truncate(16);
    hex
}

/// The lines `new` adds relative to `old`, with their 1-based line numbers in `new`.
pub fn added_lines<'a>(old: &str, new: &'a str) -> Vec<(usize, &'a str)> {
    // Indexed once: looking each line up by number would be quadratic in a large file.
    let lines: Vec<&str> = new
        .split_inclusive('\n')
        .map(|l| l.strip_suffix('\n').unwrap_or(l))
        .collect();
    let diff = similar::TextDiff::from_lines(old, new);
    let mut out = Vec::new();
    for change in diff.iter_all_changes() {
        if change.tag() == similar::ChangeTag::Insert {
            if let Some(i) = change.new_index() {
                out.push((i + 1, lines.get(i).copied().unwrap_or("")));
            }
        }
    }
    out
}

/// difflib's `SequenceMatcher(None, a, b, autojunk=False).ratio()` over the lines of `a` and
/// `b` (split at `\n`, as Python's `str.splitlines()` does for such text). `None` when either
/// has more than [`MAX_RATIO_LINES`] lines.
pub fn ratio(a: &str, b: &str) -> Option<f64> {
    let a: Vec<&str> = a.lines().collect();
    let b: Vec<&str> = b.lines().collect();
    if a.len() > MAX_RATIO_LINES || b.len() > MAX_RATIO_LINES {
        return None;
    }
    Some(sequence_ratio(&a, &b))
}

/// `SequenceMatcher(None, a, b, autojunk=False).ratio()`: 2·M / (|a| + |b|), M the number of
/// elements in matching blocks; 1.0 for two empty sequences.
pub fn sequence_ratio<T: Eq + std::hash::Hash>(a: &[T], b: &[T]) -> f64 {
    let total = a.len() + b.len();
    if total == 0 {
        return 1.0;
    }
    let matches: usize = matching_blocks(a, b).iter().map(|m| m.2).sum();
    2.0 * matches as f64 / total as f64
}

/// difflib's `get_matching_blocks()` without the final sentinel: (i, j, size) triples,
/// sorted, adjacent blocks collapsed.
pub fn matching_blocks<T: Eq + std::hash::Hash>(a: &[T], b: &[T]) -> Vec<(usize, usize, usize)> {
    // b2j: every element of b and the indices where it occurs, ascending. No junk, and with
    // autojunk off no "popular" elements are dropped.
    let mut b2j: HashMap<&T, Vec<usize>> = HashMap::new();
    for (j, x) in b.iter().enumerate() {
        b2j.entry(x).or_default().push(j);
    }
    let mut queue = vec![(0, a.len(), 0, b.len())];
    let mut blocks = Vec::new();
    while let Some((alo, ahi, blo, bhi)) = queue.pop() {
        let (i, j, k) = find_longest_match(a, b, &b2j, alo, ahi, blo, bhi);
        if k > 0 {
            blocks.push((i, j, k));
            if alo < i && blo < j {
                queue.push((alo, i, blo, j));
            }
            if i + k < ahi && j + k < bhi {
                queue.push((i + k, ahi, j + k, bhi));
            }
        }
    }
    blocks.sort_unstable();
    let mut collapsed: Vec<(usize, usize, usize)> = Vec::new();
    for (i, j, k) in blocks {
        match collapsed.last_mut() {
            Some(last) if last.0 + last.2 == i && last.1 + last.2 == j => last.2 += k,
            _ => collapsed.push((i, j, k)),
        }
    }
    collapsed
}

/// difflib's `find_longest_match`: the longest matching block in `a[alo..ahi]`, `b[blo..bhi]`;
/// of the longest, the one starting earliest in `a`, then earliest in `b`.
#[allow(
    clippy::too_many_arguments,
    reason = "a line-for-line port of difflib's signature, so it can be compared with it"
)]
fn find_longest_match<T: Eq + std::hash::Hash>(
    a: &[T],
    b: &[T],
    b2j: &HashMap<&T, Vec<usize>>,
    alo: usize,
    ahi: usize,
    blo: usize,
    bhi: usize,
) -> (usize, usize, usize) {
    let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0usize);
    // j2len[j] = length of the longest match ending with a[i-1] and b[j].
    let mut j2len: HashMap<usize, usize> = HashMap::new();
    for (i, x) in a.iter().enumerate().take(ahi).skip(alo) {
        let mut newj2len: HashMap<usize, usize> = HashMap::new();
        if let Some(js) = b2j.get(x) {
            for &j in js {
                if j < blo {
                    continue;
                }
                if j >= bhi {
                    break;
                }
                let prev = if j == 0 {
                    0
                } else {
                    j2len.get(&(j - 1)).copied().unwrap_or(0)
                };
                let k = prev + 1;
                newj2len.insert(j, k);
                if k > bestsize {
                    besti = i + 1 - k;
                    bestj = j + 1 - k;
                    bestsize = k;
                }
            }
        }
        j2len = newj2len;
    }
    // difflib then extends the match over equal non-junk neighbours; without junk the match
    // found is already maximal, but the port keeps the step so it stays the same algorithm.
    while besti > alo && bestj > blo && a[besti - 1] == b[bestj - 1] {
        besti -= 1;
        bestj -= 1;
        bestsize += 1;
    }
    while besti + bestsize < ahi
        && bestj + bestsize < bhi
        && a[besti + bestsize] == b[bestj + bestsize]
    {
        bestsize += 1;
    }
    (besti, bestj, bestsize)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines(s: &str) -> Vec<&str> {
        s.lines().collect()
    }

    fn close(got: f64, want: f64) {
        assert!((got - want).abs() < 1e-12, "got {got}, want {want}");
    }

    /// Expected values from CPython 3's difflib (the python line is above each).
    #[test]
    fn ratio_agrees_with_difflib() {
        // SequenceMatcher(None, "a b c d".split(), "a x c d".split(), autojunk=False).ratio()
        close(
            sequence_ratio(&["a", "b", "c", "d"], &["a", "x", "c", "d"]),
            0.75,
        );
        // SequenceMatcher(None, [], [], autojunk=False).ratio()
        close(sequence_ratio::<&str>(&[], &[]), 1.0);
        // SequenceMatcher(None, ["a"], [], autojunk=False).ratio()
        close(sequence_ratio(&["a"], &[]), 0.0);
        // SequenceMatcher(None, list("abxcd"), list("abcd"), autojunk=False).ratio()
        close(
            sequence_ratio(&['a', 'b', 'x', 'c', 'd'], &['a', 'b', 'c', 'd']),
            0.8888888888888888,
        );
        // SequenceMatcher(None, list("qabxcd"), list("abycdf"), autojunk=False).ratio()
        close(
            sequence_ratio(
                &['q', 'a', 'b', 'x', 'c', 'd'],
                &['a', 'b', 'y', 'c', 'd', 'f'],
            ),
            0.6666666666666666,
        );
        // The crossing case, where the longest block decides what else can match:
        // SequenceMatcher(None, list("abcdXYZabc"), list("XYZabcdabc"), autojunk=False).ratio()
        let a: Vec<char> = "abcdXYZabc".chars().collect();
        let b: Vec<char> = "XYZabcdabc".chars().collect();
        close(sequence_ratio(&a, &b), 0.6);
        // get_matching_blocks() of the same, without the sentinel: [Match(a=4, b=0, size=6)]
        assert_eq!(matching_blocks(&a, &b), vec![(4, 0, 6)]);
        // Where autojunk would change the answer (it gives 0.20634920634920634 here):
        // a = ['x']+['p']*250+['y']; b = ['p']*200+['x']+['p']*50+['y']
        // SequenceMatcher(None, a, b, autojunk=False).ratio()
        let mut a = vec!["x"];
        a.extend(std::iter::repeat_n("p", 250));
        a.push("y");
        let mut b = vec!["p"; 200];
        b.push("x");
        b.extend(std::iter::repeat_n("p", 50));
        b.push("y");
        close(sequence_ratio(&a, &b), 0.996031746031746);
    }

    #[test]
    fn ratio_of_diffs_agrees_with_difflib() {
        let d1 = "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n a = 1\n-b = 2\n+b = 3\n c = 4\n";
        let d2 = "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@\n a = 1\n-b = 2\n+b = 5\n c = 4\n";
        // SequenceMatcher(None, d1.splitlines(), d2.splitlines(), autojunk=False).ratio()
        close(ratio(d1, d2).unwrap(), 0.8571428571428571);
        close(ratio(d1, d1).unwrap(), 1.0);
        // Repeated lines: autojunk would treat "+pass" (≥1% of 200+ lines) as popular;
        // with autojunk off it matches.
        let many = "+pass\n".repeat(250);
        let a = format!("{many}+x = 1\n");
        let b = format!("{many}+x = 2\n");
        // a = "+pass\n"*250 + "+x = 1\n"; b = "+pass\n"*250 + "+x = 2\n"
        // SequenceMatcher(None, a.splitlines(), b.splitlines(), autojunk=False).ratio()
        close(ratio(&a, &b).unwrap(), 0.9960159362549801);
        assert_eq!(lines("x\ny\n"), vec!["x", "y"]);
    }

    #[test]
    fn unified_diff_of_a_change_an_addition_and_a_removal() {
        let d = unified("src/a.py", Some(b"a\nb\nc\n"), Some(b"a\nB\nc\n"));
        assert_eq!(
            d,
            "--- a/src/a.py\n+++ b/src/a.py\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"
        );
        let d = unified("n.txt", None, Some(b"x\n"));
        assert!(
            d.starts_with("--- /dev/null\n+++ b/n.txt\n@@ -0,0 +1 @@\n+x\n"),
            "{d}"
        );
        let d = unified("n.txt", Some(b"x\n"), None);
        assert!(d.contains("+++ /dev/null") && d.contains("-x"), "{d}");
        assert_eq!(unified("same", Some(b"x"), Some(b"x")), "");
        let d = unified("img.png", Some(b"\x89PNG\0"), Some(b"\x89PNG\0\0"));
        assert!(
            d.starts_with("Binary files a/img.png and b/img.png differ"),
            "{d}"
        );
        // Another binary of the same size is another diff.
        let e = unified("img.png", Some(b"\x89PNG\0"), Some(b"\x89PNG\0\x01"));
        assert_ne!(d, e);
    }

    #[test]
    fn added_lines_carry_their_new_line_numbers() {
        let added = added_lines("a\nb\n", "a\nx \nb\ny");
        assert_eq!(added, vec![(2, "x "), (4, "y")]);
    }
}
