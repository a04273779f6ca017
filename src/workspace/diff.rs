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
            let mut out = format!("--- {a_name}\n+++ {b_name}\n");
            let (old_lines, new_lines) = (split_lines(&a), split_lines(&b));
            for group in similar::group_diff_ops(line_ops(&a, &b), 3) {
                out.push_str(&format!(
                    "{}\n",
                    similar::udiff::UnifiedHunkHeader::new(&group)
                ));
                for op in &group {
                    let (old, new) = (op.old_range(), op.new_range());
                    match op.tag() {
                        similar::DiffTag::Equal => push_lines(&mut out, ' ', &old_lines[old]),
                        similar::DiffTag::Delete => push_lines(&mut out, '-', &old_lines[old]),
                        similar::DiffTag::Insert => push_lines(&mut out, '+', &new_lines[new]),
                        similar::DiffTag::Replace => {
                            push_lines(&mut out, '-', &old_lines[old]);
                            push_lines(&mut out, '+', &new_lines[new]);
                        }
                    }
                }
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
    let lines: Vec<&str> = split_lines(new)
        .into_iter()
        .map(|l| l.strip_suffix('\n').unwrap_or(l))
        .collect();
    let mut out = Vec::new();
    for op in line_ops(old, new) {
        if matches!(
            op.tag(),
            similar::DiffTag::Insert | similar::DiffTag::Replace
        ) {
            for i in op.new_range() {
                out.push((i + 1, lines.get(i).copied().unwrap_or("")));
            }
        }
    }
    out
}

/// The lines of `text`, each with its `\n` (the last one without, when the text does not end
/// with one): how both diffs' sides are cut.
fn split_lines(text: &str) -> Vec<&str> {
    text.split_inclusive('\n').collect()
}

/// Appends `lines` to a unified diff, each after `sign`; a last line without a newline gets
/// git's `\ No newline at end of file`.
fn push_lines(out: &mut String, sign: char, lines: &[&str]) {
    for l in lines {
        out.push(sign);
        out.push_str(l);
        if !l.ends_with(['\n', '\r']) {
            out.push_str("\n\\ No newline at end of file\n");
        }
    }
}

/// The edit script turning the lines of `old` into those of `new`, as `similar`'s operations
/// (for its hunk grouping and headers). Computed by imara-diff's Histogram algorithm, git's,
/// whose cost stays close to linear whatever the worker writes, where the Myers diff `similar`
/// computes is O((N+M)·D): a rewritten 100,000-line file kept the referee busy for minutes, and
/// a protected edit behind it waited as long. Deterministic: the same two texts always give the
/// same script (the loop guards compare diffs), with no deadline to race.
fn line_ops(old: &str, new: &str) -> Vec<similar::DiffOp> {
    use imara_diff::{Algorithm, Diff, InternedInput};
    let input = InternedInput::new(old, new);
    let mut diff = Diff::compute(Algorithm::Histogram, &input);
    diff.postprocess_lines(&input);
    let mut ops = Vec::new();
    let (mut i, mut j) = (0usize, 0usize);
    for h in diff.hunks() {
        let (bs, be) = (h.before.start as usize, h.before.end as usize);
        let (as_, ae) = (h.after.start as usize, h.after.end as usize);
        if bs > i {
            ops.push(similar::DiffOp::Equal {
                old_index: i,
                new_index: j,
                len: bs - i,
            });
        }
        ops.push(match (be > bs, ae > as_) {
            (true, true) => similar::DiffOp::Replace {
                old_index: bs,
                old_len: be - bs,
                new_index: as_,
                new_len: ae - as_,
            },
            (true, false) => similar::DiffOp::Delete {
                old_index: bs,
                old_len: be - bs,
                new_index: as_,
            },
            _ => similar::DiffOp::Insert {
                old_index: bs,
                new_index: as_,
                new_len: ae - as_,
            },
        });
        (i, j) = (be, ae);
    }
    let n = input.before.len();
    if i < n {
        ops.push(similar::DiffOp::Equal {
            old_index: i,
            new_index: j,
            len: n - i,
        });
    }
    ops
}

/// difflib's `SequenceMatcher(None, a, b, autojunk=False).ratio()` over the lines of `a` and
/// `b` (split at `\n`, as Python's `str.splitlines()` does for such text). `None` when either
/// has more than [`MAX_RATIO_LINES`] lines.
pub fn ratio(a: &str, b: &str) -> Option<f64> {
    let a: Vec<&str> = a.lines().collect();
    let b: Vec<&str> = b.lines().collect();
    if a.len() > MAX_RATIO_LINES
        || b.len() > MAX_RATIO_LINES
        || equal_pairs(&a, &b) > MAX_RATIO_PAIRS
    {
        return None;
    }
    Some(sequence_ratio(&a, &b))
}

/// The most pairs of equal lines (one of each diff) the ratio is computed over: the matcher
/// visits each such pair once per search, so two diffs of 50,000 lines that repeat one line
/// (`+` alone, `+    }`) would cost 2.5 billion visits a search. Past this the ratio is not
/// computed and the guard says so, as past [`MAX_RATIO_LINES`].
pub const MAX_RATIO_PAIRS: u64 = 20_000_000;

/// How many pairs (i, j) have `a[i] == b[j]`, in linear time.
fn equal_pairs(a: &[&str], b: &[&str]) -> u64 {
    let mut in_b: HashMap<&str, u64> = HashMap::new();
    for l in b {
        *in_b.entry(l).or_default() += 1;
    }
    a.iter().map(|l| in_b.get(l).copied().unwrap_or(0)).sum()
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
    let mut lens = Lens::new(b.len());
    while let Some((alo, ahi, blo, bhi)) = queue.pop() {
        let (i, j, k) = find_longest_match(a, b, &b2j, &mut lens, alo, ahi, blo, bhi);
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

/// difflib's `j2len` and `newj2len` dictionaries as two dense rows indexed by `j + 1` (so the
/// entry for `j - 1` is at `j`, and `j = 0` needs no special case), with the entries each row
/// set, so that clearing one costs what filling it did. A search over many pairs of equal lines
/// then costs an array write per pair, not a hash-map insertion (13 million of those took 14 s
/// in a debug build for two diffs of 3,600 equal lines).
struct Lens {
    old: Vec<usize>,
    new: Vec<usize>,
    old_set: Vec<usize>,
    new_set: Vec<usize>,
}

impl Lens {
    fn new(b_len: usize) -> Lens {
        Lens {
            old: vec![0; b_len + 1],
            new: vec![0; b_len + 1],
            old_set: Vec::new(),
            new_set: Vec::new(),
        }
    }

    /// The new row becomes the old one; the new one is empty.
    fn advance(&mut self) {
        for &k in &self.old_set {
            self.old[k] = 0;
        }
        self.old_set.clear();
        std::mem::swap(&mut self.old, &mut self.new);
        std::mem::swap(&mut self.old_set, &mut self.new_set);
    }

    /// Both rows empty, for the next search.
    fn clear(&mut self) {
        self.advance();
        self.advance();
    }
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
    lens: &mut Lens,
    alo: usize,
    ahi: usize,
    blo: usize,
    bhi: usize,
) -> (usize, usize, usize) {
    let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0usize);
    // lens.old[j + 1] = length of the longest match ending with a[i-1] and b[j].
    for (i, x) in a.iter().enumerate().take(ahi).skip(alo) {
        if let Some(js) = b2j.get(x) {
            for &j in js {
                if j < blo {
                    continue;
                }
                if j >= bhi {
                    break;
                }
                let k = lens.old[j] + 1;
                lens.new[j + 1] = k;
                lens.new_set.push(j + 1);
                if k > bestsize {
                    besti = i + 1 - k;
                    bestj = j + 1 - k;
                    bestsize = k;
                }
            }
        }
        lens.advance();
    }
    lens.clear();
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

    /// difflib's `find_longest_match` as written there, with its dictionaries: what the dense
    /// rows of [`Lens`] must agree with.
    fn longest_by_dicts(
        a: &[u8],
        b: &[u8],
        alo: usize,
        ahi: usize,
        blo: usize,
        bhi: usize,
    ) -> (usize, usize, usize) {
        let mut b2j: HashMap<u8, Vec<usize>> = HashMap::new();
        for (j, x) in b.iter().enumerate() {
            b2j.entry(*x).or_default().push(j);
        }
        let (mut besti, mut bestj, mut bestsize) = (alo, blo, 0usize);
        let mut j2len: HashMap<usize, usize> = HashMap::new();
        for (i, x) in a.iter().enumerate().take(ahi).skip(alo) {
            let mut newj2len = HashMap::new();
            for &j in b2j.get(x).into_iter().flatten() {
                if j < blo {
                    continue;
                }
                if j >= bhi {
                    break;
                }
                let k = j.checked_sub(1).and_then(|p| j2len.get(&p)).unwrap_or(&0) + 1;
                newj2len.insert(j, k);
                if k > bestsize {
                    (besti, bestj, bestsize) = (i + 1 - k, j + 1 - k, k);
                }
            }
            j2len = newj2len;
        }
        (besti, bestj, bestsize)
    }

    proptest::proptest! {
        /// The dense rows find the same block as difflib's dictionaries, for every window of
        /// sequences over a small alphabet (many equal elements, as in diffs), one search
        /// after another with the same rows.
        #[test]
        fn dense_rows_find_what_the_dictionaries_find(
            a in proptest::collection::vec(0u8..4, 0..40),
            b in proptest::collection::vec(0u8..4, 0..40),
            cuts in proptest::collection::vec((0usize..41, 0usize..41, 0usize..41, 0usize..41), 1..6),
        ) {
            let mut b2j: HashMap<&u8, Vec<usize>> = HashMap::new();
            for (j, x) in b.iter().enumerate() {
                b2j.entry(x).or_default().push(j);
            }
            let mut lens = Lens::new(b.len());
            for (p, q, r, t) in cuts {
                let (alo, ahi) = (p.min(q).min(a.len()), p.max(q).min(a.len()));
                let (blo, bhi) = (r.min(t).min(b.len()), r.max(t).min(b.len()));
                let want = longest_by_dicts(&a, &b, alo, ahi, blo, bhi);
                let got = find_longest_match(&a, &b, &b2j, &mut lens, alo, ahi, blo, bhi);
                // difflib extends the block found over equal neighbours; with no junk it is
                // already maximal, so the two agree before and after that step.
                proptest::prop_assert_eq!(got, want);
            }
        }
    }

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

    /// A whole 100,000-line file rewritten: the diff is computed at once (imara-diff's
    /// Histogram; `similar`'s Myers took minutes, O((N+M)·D)), every new line is added, and
    /// the same texts give the same diff. No timing is asserted: a quadratic diff would not
    /// finish within the test harness's patience, which is what this guards.
    #[test]
    fn a_rewritten_large_file_is_diffed_in_linear_time() {
        let old: String = (0..100_000).map(|i| format!("x{i} = {i}\n")).collect();
        let new: String = (0..100_000)
            .map(|i| format!("y{i} = {}\n", i * 7))
            .collect();
        let added = added_lines(&old, &new);
        assert_eq!(added.len(), 100_000);
        assert_eq!(added[99_999], (100_000, "y99999 = 699993"));
        let d = unified("big.py", Some(old.as_bytes()), Some(new.as_bytes()));
        assert!(d.starts_with("--- a/big.py\n+++ b/big.py\n@@ -1,100000 +1,100000 @@\n-x0 = 0\n"));
        assert_eq!(d.lines().count(), 2 + 1 + 200_000);
        assert_eq!(
            d,
            unified("big.py", Some(old.as_bytes()), Some(new.as_bytes()))
        );
    }

    /// Two diffs that repeat one line 50,000 times: the matcher would visit 2.5 billion pairs;
    /// the ratio is not computed (the guard says so) instead.
    #[test]
    fn a_ratio_over_too_many_equal_pairs_is_not_computed() {
        let a = "+\n".repeat(20_000);
        let b = "+\n".repeat(20_000);
        assert_eq!(ratio(&a, &b), None);
        let small = "+\n".repeat(1_000);
        close(ratio(&small, &small).unwrap(), 1.0);
    }

    #[test]
    fn lines_without_a_final_newline_are_marked_as_git_marks_them() {
        let d = unified("a.txt", Some(b"a\nb"), Some(b"a\nc"));
        assert_eq!(
            d,
            "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"
        );
    }

    #[test]
    fn added_lines_carry_their_new_line_numbers() {
        let added = added_lines("a\nb\n", "a\nx \nb\ny");
        assert_eq!(added, vec![(2, "x "), (4, "y")]);
    }
}
