//! Line endings (and Git LFS) as git checks files out: which baseline files a checkout writes
//! other than as their blob, so that a file as checked out is not a change, while a
//! line-ending-only change of one file is.
//!
//! A file the baseline's `.gitattributes` give `filter=lfs` whose blob is a Git LFS pointer is,
//! as checked out, either the pointer (no git-lfs) or the object it names, whose SHA-256 the
//! pointer holds: when the file on disk at pinning is not the pointer, its baseline is that
//! object (read from `lfs/objects/` in the git directory, verified against the SHA-256, for a
//! diff). No filter is run.
//!
//! # The rule
//!
//! Each baseline file gets the line-ending rule git would give it on checkout, from the
//! baseline's own committed `.gitattributes` files only (never `.git/info/attributes`, never a
//! `.gitattributes` the worker edited: that edit is itself a change): `binary` / `-text`, or
//! `eol=lf`, are never converted; `eol=crlf` always is (with `text=auto`, only where git's text
//! detection says text; a file found as its LF blob is its blob: its attribute was committed
//! after it was checked out, and git converts a file only when it checks it out again); `text`
//! and `text=auto` follow the repository's `core.eol` /
//! `core.autocrlf`, and a file with no attribute follows `core.autocrlf`. Converting writes each
//! LF not already preceded by CR as CRLF; an "auto" file is converted only when it has such an
//! LF, no CR at all and does not look binary (git's own test: a NUL, a lone CR, or more than one
//! control character in 128 printable ones).
//!
//! The configuration (`core.autocrlf`, often set system-wide by git for Windows) is not in the
//! repository the referee trusts, so it is read from the checkout itself, separately for the
//! files with a `text` attribute and for those with none: of the class's files that converting
//! would change, those on disk exactly as their blob converted against those on disk exactly
//! as their LF blob; the class is checked out with CRLF when the converted ones are more (a tie
//! is LF, git's default). Then every file of the class has, as its baseline, its blob
//! converted; else its blob. Files are read in path order until the rest cannot change the
//! count's outcome, or until the first 32 counted are all LF (an LF checkout, decided without
//! reading the rest: git converts every file of a class or none, and deciding LF calls each
//! conversion a change); a file with LF and no CR counts for LF unhashed (edited or not, it is a
//! change in a CRLF checkout either way), a file found converted is hashed to be sure.
//!
//! So a whole-tree CRLF checkout is no change; one file converted (or one file turned back to
//! LF in a CRLF checkout) is a change, listed or vetoed like any. When the referee pins its
//! baseline before the worker starts (`watch`, or a first `verify` with a state directory), the
//! convention is decided on the checkout as found then and kept; a one-shot `verify` that pins
//! only after the work decides on the tree as the worker left it, and cannot tell a worker who
//! converted most text files of a class from a CRLF checkout.

use std::collections::BTreeMap;
use std::path::Path;

use gix::bstr::ByteSlice;

use super::name;

/// How git checks one file out, as its attributes say.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rule {
    /// `-text`, `binary`, `eol=lf`, `text eol=lf`, `text=auto eol=lf`: never converted.
    Never,
    /// `eol=crlf` (`text eol=crlf`): always converted; `auto` with `text=auto eol=crlf`.
    Always { auto: bool },
    /// `text`: converted when the repository's configuration says CRLF.
    Text,
    /// `text=auto`: converted when the configuration says CRLF and the file looks like text.
    Auto,
    /// No attribute: converted (as `auto`) when `core.autocrlf` is true.
    Unspecified,
}

impl Rule {
    /// Whether git's text detection decides (an "auto" rule), or the attribute says text.
    fn auto(self) -> bool {
        matches!(
            self,
            Rule::Auto | Rule::Unspecified | Rule::Always { auto: true }
        )
    }

    /// The class whose convention decides, for a rule that depends on the configuration.
    fn class(self) -> Option<usize> {
        match self {
            Rule::Text | Rule::Auto => Some(0),
            Rule::Unspecified => Some(1),
            Rule::Never | Rule::Always { .. } => None,
        }
    }
}

/// The state of an attribute along the files and lines that set it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Text {
    Set,
    Unset,
    Auto,
    Unspecified,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Eol {
    Lf,
    Crlf,
    Unspecified,
}

/// One line of a `.gitattributes`: its pattern and what it says of `text`, `eol` and
/// `filter` (`Some(true)`: `filter=lfs`).
#[derive(Debug, Clone)]
struct Line {
    pattern: gix::glob::Pattern,
    text: Option<Text>,
    eol: Option<Eol>,
    lfs: Option<bool>,
}

/// The baseline's committed `.gitattributes` files, shallow first, each with its directory.
#[derive(Debug, Clone, Default)]
pub struct Attributes {
    files: Vec<(String, Vec<Line>)>,
}

impl Attributes {
    /// The rules of `files` (each `.gitattributes`'s path, encoded, and bytes).
    pub fn parse(files: &[(String, Vec<u8>)]) -> Attributes {
        let mut out: Vec<(String, Vec<Line>)> = files
            .iter()
            .map(|(path, bytes)| {
                let dir = path
                    .strip_suffix(".gitattributes")
                    .unwrap_or_default()
                    .to_string();
                (dir, parse_file(bytes))
            })
            .collect();
        // Shallow first: a deeper file overrides a shallower one.
        out.sort_by_key(|(dir, _)| dir.matches('/').count());
        Attributes { files: out }
    }

    /// The rule of the baseline path `rel` (encoded).
    pub fn rule(&self, rel: &str) -> Rule {
        self.of(rel).0
    }

    /// The rule of `rel`, and whether Git LFS's filter checks it out (`filter=lfs`).
    pub fn of(&self, rel: &str) -> (Rule, bool) {
        let (mut text, mut eol, mut lfs) = (Text::Unspecified, Eol::Unspecified, false);
        let raw = name::decode(rel);
        for (dir, lines) in &self.files {
            let Some(sub) = raw.strip_prefix(dir.as_bytes()) else {
                continue;
            };
            let sub = sub.as_bstr();
            let base = sub.rfind_byte(b'/').map(|i| i + 1);
            for line in lines {
                if line.pattern.matches_repo_relative_path(
                    sub,
                    base,
                    Some(false),
                    gix::glob::pattern::Case::Sensitive,
                    gix::glob::wildmatch::Mode::NO_MATCH_SLASH_LITERAL,
                ) {
                    text = line.text.unwrap_or(text);
                    eol = line.eol.unwrap_or(eol);
                    lfs = line.lfs.unwrap_or(lfs);
                }
            }
        }
        // As git's convert.c decides a file's conversion from the two attributes.
        let rule = match (text, eol) {
            (Text::Unset, _) => Rule::Never,
            (_, Eol::Lf) => Rule::Never,
            (Text::Auto, Eol::Crlf) => Rule::Always { auto: true },
            (_, Eol::Crlf) => Rule::Always { auto: false },
            (Text::Set, Eol::Unspecified) => Rule::Text,
            (Text::Auto, Eol::Unspecified) => Rule::Auto,
            (Text::Unspecified, Eol::Unspecified) => Rule::Unspecified,
        };
        (rule, lfs)
    }
}

fn parse_file(bytes: &[u8]) -> Vec<Line> {
    let mut out = Vec::new();
    for raw in bytes.split(|b| *b == b'\n') {
        let raw = raw.strip_suffix(b"\r").unwrap_or(raw);
        let mut words = raw
            .split(|b| *b == b' ' || *b == b'\t')
            .filter(|w| !w.is_empty());
        let Some(pattern) = words.next() else {
            continue;
        };
        // Comments, macro definitions, and negative patterns (which git refuses) say nothing.
        if pattern.starts_with(b"#") || pattern.starts_with(b"[attr]") || pattern.starts_with(b"!")
        {
            continue;
        }
        let Some(pattern) = gix::glob::Pattern::from_bytes_without_negation(pattern) else {
            continue;
        };
        let (mut text, mut eol, mut lfs) = (None, None, None);
        for w in words {
            match w {
                b"filter=lfs" => lfs = Some(true),
                w if w.starts_with(b"filter=") || w == b"-filter" || w == b"!filter" => {
                    lfs = Some(false)
                }
                b"text" | b"crlf" => text = Some(Text::Set),
                b"-text" | b"-crlf" | b"binary" => text = Some(Text::Unset),
                b"!text" | b"!crlf" => text = Some(Text::Unspecified),
                b"text=auto" => text = Some(Text::Auto),
                b"eol=lf" | b"crlf=input" => eol = Some(Eol::Lf),
                b"eol=crlf" => eol = Some(Eol::Crlf),
                b"!eol" => eol = Some(Eol::Unspecified),
                _ => {}
            }
        }
        if text.is_some() || eol.is_some() || lfs.is_some() {
            out.push(Line {
                pattern,
                text,
                eol,
                lfs,
            });
        }
    }
    out
}

/// What git's `gather_stats` counts of a file, for its text detection and conversion.
#[derive(Debug, Default, Clone, Copy)]
struct Stats {
    nul: usize,
    lone_cr: usize,
    lone_lf: usize,
    crlf: usize,
    printable: usize,
    nonprintable: usize,
}

/// Git's text statistics of `b` (`gather_convert_stats` in git's `convert.c`): CRLF pairs, lone
/// CRs and LFs, NULs, and printable against non-printable bytes (a CR or LF is neither). One
/// pass counts each byte value; the CRs are then paired with what follows them.
fn stats(b: &[u8]) -> Stats {
    // Four histograms filled in turn, so that a run of one byte value does not wait on itself.
    let mut h = [[0usize; 256]; 4];
    let mut quads = b.chunks_exact(4);
    for q in &mut quads {
        h[0][usize::from(q[0])] += 1;
        h[1][usize::from(q[1])] += 1;
        h[2][usize::from(q[2])] += 1;
        h[3][usize::from(q[3])] += 1;
    }
    for &c in quads.remainder() {
        h[0][usize::from(c)] += 1;
    }
    let count = |c: u8| h.iter().map(|one| one[usize::from(c)]).sum::<usize>();
    let crlf = if count(b'\r') == 0 {
        0
    } else {
        memchr::memmem::find_iter(b, b"\r\n").count()
    };
    let mut s = Stats {
        nul: count(0),
        lone_cr: count(b'\r') - crlf,
        lone_lf: count(b'\n') - crlf,
        crlf,
        ..Stats::default()
    };
    for c in 0..=255u8 {
        match c {
            b'\r' | b'\n' => {}
            // Backspace, tab, escape and form feed count as printable.
            8 | 9 | 27 | 12 => s.printable += count(c),
            127 => s.nonprintable += count(c),
            c if c < 32 => s.nonprintable += count(c),
            _ => s.printable += count(c),
        }
    }
    // A DOS end-of-file mark at the very end is not counted as non-printable.
    if b.last() == Some(&0x1A) {
        s.nonprintable = s.nonprintable.saturating_sub(1);
    }
    s
}

impl Stats {
    fn binary(&self) -> bool {
        self.lone_cr > 0 || self.nul > 0 || (self.printable >> 7) < self.nonprintable
    }
}

/// Whether git converts a blob with `rule`'s kind of conversion when the output is CRLF.
fn converts(rule: Rule, blob: &Stats) -> bool {
    if blob.lone_lf == 0 {
        return false;
    }
    !rule.auto() || (blob.lone_cr == 0 && blob.crlf == 0 && !blob.binary())
}

/// The blob as converted: each LF not preceded by CR written as CRLF.
pub fn to_crlf(blob: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(blob.len() + blob.len() / 16);
    let mut prev = 0u8;
    for &c in blob {
        if c == b'\n' && prev != b'\r' {
            out.push(b'\r');
        }
        out.push(c);
        prev = c;
    }
    out
}

/// The blob `file` would be the checkout of, when `file` is the CRLF conversion of an "auto"
/// blob (no CR in it): every CRLF written back as LF, provided the file holds no lone LF and no
/// lone CR (so converting that blob gives the file back). `None` otherwise.
fn crlf_source(file: &[u8]) -> Option<Vec<u8>> {
    let s = stats(file);
    if s.crlf == 0 || s.lone_lf > 0 || s.lone_cr > 0 {
        return None;
    }
    let mut out = Vec::with_capacity(file.len());
    let mut i = 0;
    while i < file.len() {
        if file[i] == b'\r' && file.get(i + 1) == Some(&b'\n') {
            i += 1;
            continue;
        }
        out.push(file[i]);
        i += 1;
    }
    Some(out)
}

fn oid_of(bytes: &[u8], like: gix::ObjectId) -> gix::ObjectId {
    gix::objs::compute_hash(like.kind(), gix::objs::Kind::Blob, bytes)
        .unwrap_or_else(|_| gix::ObjectId::null(like.kind()))
}

/// What the work tree says of one file as checked out.
enum Found {
    /// LF where converting would have put CRLF (no CR at all): the file's class is not
    /// converted. With `verify`, the file is exactly its blob.
    AsBlob,
    /// Its blob converted: the file's bytes, by SHA-256.
    Converted(String),
    /// Anything else (edited, absent, unreadable, or converting changes nothing).
    Other,
}

/// How the file `rel` (blob `oid`) is found at `root`. Counting a class's files, an LF file is
/// not hashed (`verify` false): a file with no CR that converting would change counts for LF
/// whether or not the worker edited it (an edit is a change either way), so an ordinary LF
/// checkout costs a scan for CR and LF, no hash; a file found converted is always hashed, since
/// it is what lets a file with CRLF count as unchanged.
fn found(root: &Path, rel: &str, oid: gix::ObjectId, rule: Rule, cap: u64, verify: bool) -> Found {
    let path = name::to_path(root, rel);
    let Ok(meta) = std::fs::symlink_metadata(&path) else {
        return Found::Other;
    };
    if !meta.is_file() || meta.len() > cap {
        return Found::Other;
    }
    let Ok(bytes) = std::fs::read(&path) else {
        return Found::Other;
    };
    if memchr::memchr(b'\r', &bytes).is_none() {
        let lf = converts(rule, &stats(&bytes)) && (!verify || oid_of(&bytes, oid) == oid);
        return if lf { Found::AsBlob } else { Found::Other };
    }
    match crlf_source(&bytes) {
        Some(blob) if oid_of(&blob, oid) == oid && converts(rule, &stats(&blob)) => {
            Found::Converted(super::sha256(&bytes))
        }
        _ => Found::Other,
    }
}

/// Files of a class found as their LF blob, with none found converted, that decide an LF
/// checkout without reading the rest of the class.
const LF_QUORUM: usize = 32;

/// Reads a baseline file's blob (`None`: it cannot be read).
pub type ReadBlob<'a> = &'a dyn Fn(&str, gix::ObjectId) -> Option<Vec<u8>>;

/// The baseline files a checkout writes converted, by path, with the SHA-256 of the converted
/// bytes: decided from the work tree at `root` as it is now (see the module doc). `entries`:
/// the baseline's regular files (path, blob id), in path order; `blob` reads a file's blob.
pub fn checked_out<'a>(
    entries: impl Iterator<Item = (&'a String, gix::ObjectId)>,
    attrs: &Attributes,
    root: &Path,
    cap: u64,
    blob: ReadBlob<'_>,
) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut files: Vec<(&String, gix::ObjectId, Rule)> = Vec::new();
    for (p, oid) in entries {
        match attrs.of(p) {
            (_, true) => {
                if let Some(sha) = lfs_checkout(root, p, oid, blob) {
                    out.insert(p.clone(), sha);
                }
            }
            (Rule::Never, false) => {}
            (rule, false) => files.push((p, oid, rule)),
        }
    }
    // Each class's convention, by the majority of its files found as one or the other: the
    // files found converted, or `None` for an LF checkout of the class.
    let mut classes: [Option<BTreeMap<String, String>>; 2] = [None, None];
    for (class, decided) in classes.iter_mut().enumerate() {
        let members: Vec<&(&String, gix::ObjectId, Rule)> = files
            .iter()
            .filter(|(_, _, r)| r.class() == Some(class))
            .collect();
        let (mut as_blob, mut converted) = (0usize, BTreeMap::new());
        for (seen, (rel, oid, rule)) in members.iter().enumerate() {
            match found(root, rel, *oid, *rule, cap, false) {
                Found::AsBlob => as_blob += 1,
                Found::Converted(sha) => {
                    converted.insert((*rel).clone(), sha);
                }
                Found::Other => {}
            }
            // Stop once the files left cannot change the majority, or once the first
            // `LF_QUORUM` files counted are all LF: a CRLF checkout converts every file of the
            // class, so it never shows that many as their LF blob, and deciding LF is the side
            // that calls a conversion a change.
            let left = members.len() - seen - 1;
            if as_blob.abs_diff(converted.len()) > left
                || (as_blob >= LF_QUORUM && converted.is_empty())
            {
                break;
            }
        }
        if converted.len() > as_blob {
            *decided = Some(converted);
        }
    }
    let crlf = classes;
    for (rel, oid, rule) in files {
        let by_class = rule.class().and_then(|c| crlf[c].as_ref());
        if rule.class().is_some() && by_class.is_none() {
            continue;
        }
        if let Some(sha) = by_class.and_then(|m| m.get(rel)) {
            out.insert(rel.clone(), sha.clone());
            continue;
        }
        // An `eol=crlf` file (not looked at yet) found converted on disk: its bytes. Found as
        // its LF blob: its attribute came after it was checked out, and git does not convert a
        // file again until it checks it out again (nor calls it changed): its blob.
        if by_class.is_none() {
            match found(root, rel, oid, rule, cap, true) {
                Found::Converted(sha) => {
                    out.insert(rel.clone(), sha);
                    continue;
                }
                Found::AsBlob => continue,
                Found::Other => {}
            }
        }
        // Converted in this checkout, but not found so on disk (edited, removed): its baseline
        // is its blob converted.
        let Some(b) = blob(rel, oid) else {
            continue;
        };
        if b.len() as u64 <= cap && converts(rule, &stats(&b)) {
            out.insert(rel.clone(), super::sha256(&to_crlf(&b)));
        }
    }
    out
}

/// A Git LFS pointer file's object: its SHA-256 (hex) and size, when `blob` is a pointer
/// (`version https://git-lfs.github.com/spec/v1`, `oid sha256:<64 hex>`, `size <n>`, one key a
/// line, at most 1 KiB).
pub fn lfs_pointer(blob: &[u8]) -> Option<(String, u64)> {
    if blob.len() > 1024 {
        return None;
    }
    let text = std::str::from_utf8(blob).ok()?;
    let mut lines = text.lines();
    if !lines
        .next()?
        .starts_with("version https://git-lfs.github.com/spec/")
    {
        return None;
    }
    let (mut oid, mut size) = (None, None);
    for line in lines {
        if let Some(hex) = line.strip_prefix("oid sha256:") {
            let ok = hex.len() == 64 && hex.bytes().all(|b| b.is_ascii_hexdigit());
            oid = ok.then(|| hex.to_ascii_lowercase());
        } else if let Some(n) = line.strip_prefix("size ") {
            size = n.parse().ok();
        }
    }
    Some((oid?, size?))
}

/// The SHA-256 a Git LFS file's baseline has, as checked out at `root`: the object its pointer
/// names when the file on disk is not the pointer itself (git-lfs's smudge filter wrote the
/// object, or the worker changed it); `None` when the checkout left the pointer (no git-lfs,
/// `GIT_LFS_SKIP_SMUDGE`) or the blob is no pointer. Either form as found is no change.
fn lfs_checkout(root: &Path, rel: &str, oid: gix::ObjectId, blob: ReadBlob<'_>) -> Option<String> {
    let pointer = blob(rel, oid)?;
    let (sha, _) = lfs_pointer(&pointer)?;
    let path = name::to_path(root, rel);
    let as_pointer = std::fs::symlink_metadata(&path)
        .ok()
        .filter(|m| m.is_file() && m.len() == pointer.len() as u64)
        .and_then(|_| std::fs::read(&path).ok())
        .is_some_and(|b| b == pointer);
    (!as_pointer).then_some(sha)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn attrs(text: &str) -> Attributes {
        Attributes::parse(&[(".gitattributes".into(), text.as_bytes().to_vec())])
    }

    #[test]
    fn rules_follow_git_attributes() {
        let a =
            attrs("* text=auto\n*.sh text eol=lf\n*.bat eol=crlf\n*.png binary\ndocs/** text\n");
        assert_eq!(a.rule("src/app.py"), Rule::Auto);
        assert_eq!(a.rule("run.sh"), Rule::Never);
        assert_eq!(a.rule("x/build.bat"), Rule::Always { auto: true });
        assert_eq!(a.rule("logo.png"), Rule::Never);
        assert_eq!(a.rule("docs/guide.txt"), Rule::Text);
        assert_eq!(attrs("").rule("a.txt"), Rule::Unspecified);
        assert_eq!(
            attrs("*.bat eol=crlf\n").rule("b.bat"),
            Rule::Always { auto: false }
        );
        // A deeper file overrides a shallower one.
        let deep = Attributes::parse(&[
            (".gitattributes".into(), b"*.txt eol=crlf\n".to_vec()),
            ("sub/.gitattributes".into(), b"*.txt -text\n".to_vec()),
        ]);
        assert_eq!(deep.rule("sub/a.txt"), Rule::Never);
        assert_eq!(deep.rule("a.txt"), Rule::Always { auto: false });
    }

    /// The statistics as git's `gather_convert_stats` walks them, a byte at a time: the oracle
    /// for [`stats`].
    fn stats_byte_by_byte(b: &[u8]) -> Stats {
        let mut s = Stats::default();
        let mut i = 0;
        while i < b.len() {
            let c = b[i];
            if c == b'\r' {
                if b.get(i + 1) == Some(&b'\n') {
                    s.crlf += 1;
                    i += 2;
                } else {
                    s.lone_cr += 1;
                    i += 1;
                }
                continue;
            }
            match c {
                b'\n' => s.lone_lf += 1,
                127 => s.nonprintable += 1,
                0 => {
                    s.nul += 1;
                    s.nonprintable += 1;
                }
                // Backspace, tab, escape and form feed count as printable.
                8 | 9 | 27 | 12 => s.printable += 1,
                c if c < 32 => s.nonprintable += 1,
                _ => s.printable += 1,
            }
            i += 1;
        }
        // A DOS end-of-file mark at the very end is not counted as non-printable.
        if b.last() == Some(&0x1A) {
            s.nonprintable = s.nonprintable.saturating_sub(1);
        }
        s
    }

    proptest::proptest! {
        #[test]
        fn stats_count_as_git_walks_the_bytes(
            b in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::strategy::Just(b'\r'),
                    proptest::strategy::Just(b'\n'),
                    proptest::strategy::Just(0u8),
                    proptest::strategy::Just(0x1Au8),
                    proptest::strategy::Just(127u8),
                    proptest::num::u8::ANY,
                ],
                0..300,
            )
        ) {
            proptest::prop_assert_eq!(format!("{:?}", stats(&b)), format!("{:?}", stats_byte_by_byte(&b)));
        }
    }

    #[test]
    fn conversion_and_detection_as_git_does() {
        assert_eq!(to_crlf(b"a\nb\r\nc\n"), b"a\r\nb\r\nc\r\n");
        assert!(converts(Rule::Auto, &stats(b"a\nb\n")));
        assert!(
            !converts(Rule::Auto, &stats(b"a\r\nb\n")),
            "auto: a CRLF already"
        );
        assert!(
            converts(Rule::Text, &stats(b"a\r\nb\n")),
            "text: every lone LF"
        );
        assert!(!converts(Rule::Auto, &stats(b"a\0\nb\n")), "binary");
        assert!(!converts(Rule::Auto, &stats(b"no newline")));
        assert_eq!(crlf_source(b"a\r\nb\r\n").as_deref(), Some(&b"a\nb\n"[..]));
        assert_eq!(crlf_source(b"a\r\nb\n"), None);
    }

    #[test]
    fn lfs_pointers_and_the_filter_attribute() {
        let sha = "4d7a214614ab2935c943f9e0ff69d22eadbb8f32b1258daaa5e2ca24d17e2393";
        let pointer =
            format!("version https://git-lfs.github.com/spec/v1\noid sha256:{sha}\nsize 12345\n");
        assert_eq!(
            lfs_pointer(pointer.as_bytes()),
            Some((sha.to_string(), 12345))
        );
        assert_eq!(lfs_pointer(b"version 1\noid sha256:00\nsize 1\n"), None);
        assert_eq!(lfs_pointer(b"\x89PNG"), None);
        let a = attrs("*.bin filter=lfs diff=lfs merge=lfs -text\nsmall.bin -filter\n");
        assert_eq!(a.of("m/model.bin"), (Rule::Never, true));
        assert_eq!(a.of("small.bin"), (Rule::Never, false));
        assert_eq!(a.of("a.txt"), (Rule::Unspecified, false));
    }
}
