//! Protocol globs: parsed (so validated) by `globset` at load, matched against paths
//! relative to the build directory.
//!
//! Compiling a glob into a regex costs tens of microseconds, more than judging a small
//! build, and nearly every glob a protocol names is a literal directory and a name with
//! `*` in it, optionally at any depth (`p3b-pa-auditor-*.md`, `screenshots/**/*.png`,
//! `refine-inputs/**`), or below a literal directory path at any depth (the shadows of a
//! protected module: `**/__pycache__/roles.*.pyc`, `**/roles/__init__.py`). Those are matched
//! directly: the directory as a prefix, the directory path as a suffix of whole names, the
//! name by its literal pieces in order (the greedy match is exact for `*`, which never
//! crosses `/`). Only globs with `?`, `[...]`, `{a,b}`, `\` escapes, or `*` / `**` anywhere
//! else compile globset's matcher, once per process. `tests::fast_paths_agree_with_globset`
//! holds the two to the same answers.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, OnceLock};

use globset::GlobMatcher;
use serde::{Deserialize, Serialize};

use super::memo::{memo, Memo};

/// A glob matched against paths relative to the build directory.
///
/// A glob without `/` matches names directly in the build directory only. A glob that
/// does not itself contain the protocol's variant marker (D10: `-refine`) never matches a
/// name containing it, so main-phase globs never see REFINE artifacts. A glob ending in
/// `/` matches directories only. Those rules are applied by the caller (`checks::Ctx`);
/// this type answers whether a path matches the glob's pattern.
#[derive(Clone, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct Glob {
    src: String,
    /// `None` only before variable substitution (`${var}` in `src`). Shared: a glob is
    /// cloned into every check instance that names it.
    how: Option<Arc<How>>,
}

#[derive(Clone)]
enum How {
    /// A literal directory prefix (`a/b/`, or empty), then — at any depth below it when
    /// `deep` (`**/`), and then in a directory path ending in the literal `tail` (`c/`, or
    /// empty) — a last component of literal pieces joined by `*` (one piece: the name itself).
    Name {
        dir: String,
        deep: bool,
        tail: String,
        pieces: Vec<String>,
    },
    /// Anything else: globset's matcher, compiled on first use.
    Compiled(OnceLock<Option<GlobMatcher>>),
}

impl Glob {
    pub fn as_str(&self) -> &str {
        &self.src
    }

    /// The pattern without the trailing `/` of a directories-only glob.
    fn body(&self) -> &str {
        self.src.trim_end_matches('/')
    }

    /// Whether the glob is fully resolved (it has no `${var}` left).
    pub fn is_resolved(&self) -> bool {
        self.how.is_some()
    }

    /// Whether `path` matches. An unresolved glob matches nothing.
    pub fn is_match(&self, path: &str) -> bool {
        match self.how.as_deref() {
            None => false,
            Some(How::Name {
                dir,
                deep,
                tail,
                pieces,
            }) => {
                let Some(rest) = after(path, dir) else {
                    return false;
                };
                let (parents, name) = match rest.rfind('/') {
                    Some(_) if !deep => return false,
                    Some(i) => rest.split_at(i + 1),
                    None => ("", rest),
                };
                // The directories above the name end with the tail's, whole names each.
                let in_tail = tail.is_empty()
                    || before(parents, tail)
                        .is_some_and(|above| above.is_empty() || above.ends_with('/'));
                if !in_tail {
                    return false;
                }
                match pieces.as_slice() {
                    [whole] => name == whole,
                    pieces => stars_match(pieces, name),
                }
            }
            Some(How::Compiled(m)) => m
                .get_or_init(|| compiled(self.body()))
                .as_ref()
                .is_some_and(|m| m.is_match(path)),
        }
    }

    /// Compiles the glob's matcher now if it needs one (at its first match otherwise).
    pub fn prepare(&self) {
        if let Some(How::Compiled(m)) = self.how.as_deref() {
            m.get_or_init(|| compiled(self.body()));
        }
    }

    /// Whether its matcher is compiled in this process (always, for a glob matched without
    /// one).
    #[cfg(test)]
    pub fn is_prepared(&self) -> bool {
        let memoized = || {
            COMPILED.get().is_some_and(|m| {
                m.lock()
                    .unwrap_or_else(|e| e.into_inner())
                    .contains_key(self.body())
            })
        };
        !matches!(self.how.as_deref(), Some(How::Compiled(_))) || memoized()
    }

    /// Whether the glob only matches directories (written with a trailing `/`).
    pub fn dirs_only(&self) -> bool {
        self.src.ends_with('/')
    }

    /// Whether the glob can match below the top level.
    pub fn nested(&self) -> bool {
        self.body().contains('/')
    }
}

/// Several globs matched as one: a path matches when any of them does. A glob whose last
/// component is a literal name (`**/orchestrator.py`, `**/roles/__init__.py`) is tried only on
/// paths with that name, the other globs matched directly one by one, and the rest, which
/// would each run globset's matcher, are compiled together into one `GlobSet` (one search per
/// path instead of one per glob). The code-change veto matches every path of the baseline
/// against the protected globs and their shadows, dozens of them: one at a time they were a
/// fifth of a warm `verify` on a 20,000-file tree.
#[derive(Clone, Debug)]
pub struct AnyGlob {
    by_name: HashMap<String, Vec<Glob>>,
    direct: Vec<Glob>,
    set: Option<Arc<globset::GlobSet>>,
}

impl AnyGlob {
    pub fn new<'g>(globs: impl IntoIterator<Item = &'g Glob>) -> AnyGlob {
        let mut by_name: HashMap<String, Vec<Glob>> = HashMap::new();
        let mut direct = Vec::new();
        let mut bodies: Vec<&str> = Vec::new();
        for g in globs {
            match g.how.as_deref() {
                // An unresolved glob matches nothing.
                None => {}
                Some(How::Name { pieces, .. }) => match pieces.as_slice() {
                    [name] => by_name.entry(name.clone()).or_default().push(g.clone()),
                    _ => direct.push(g.clone()),
                },
                Some(How::Compiled(_)) => bodies.push(g.body()),
            }
        }
        bodies.sort_unstable();
        bodies.dedup();
        static SETS: Memo<Option<Arc<globset::GlobSet>>> = OnceLock::new();
        let set = match bodies.as_slice() {
            [] => None,
            _ => memo(&SETS, &bodies.join("\n"), || {
                let mut set = globset::GlobSetBuilder::new();
                // A body that does not build matches nothing, as its own matcher does.
                for g in bodies.iter().filter_map(|b| builder(b).build().ok()) {
                    set.add(g);
                }
                set.build().ok().map(Arc::new)
            }),
        };
        AnyGlob {
            by_name,
            direct,
            set,
        }
    }

    /// Whether any of the globs matches `path`.
    pub fn is_match(&self, path: &str) -> bool {
        let name = path.rsplit('/').next().unwrap_or(path);
        self.by_name
            .get(name)
            .is_some_and(|gs| gs.iter().any(|g| g.is_match(path)))
            || self.direct.iter().any(|g| g.is_match(path))
            || self.set.as_ref().is_some_and(|s| s.is_match(path))
    }
}

/// Whether `name` (no `/`) is `pieces` joined by runs of anything.
fn stars_match(pieces: &[String], name: &str) -> bool {
    let (first, last) = match pieces {
        [first, .., last] => (first, last),
        _ => return false,
    };
    if name.len() < first.len() + last.len()
        || after(name, first).is_none()
        || before(name, last).is_none()
    {
        return false;
    }
    // Each middle piece at its leftmost place leaves the most room for the rest.
    let mut rest = &name[first.len()..name.len() - last.len()];
    for piece in &pieces[1..pieces.len() - 1] {
        match rest.find(piece.as_str()) {
            Some(i) => rest = &rest[i + piece.len()..],
            None => return false,
        }
    }
    true
}

/// `s` after `prefix`, when it starts with it. An empty `String` points nowhere (a dangling
/// pointer), and glibc's AVX-512 `memcmp` reads even zero bytes of it with a masked load: the
/// load is suppressed, through a microcode assist, on every call. Comparing against the empty
/// parts of a glob (the stem of `*.png`, the tail of `d/**/*.png`) cost more than everything else
/// a count of 30,000 screenshots does (a tenth of a large build's `verify`, perf).
fn after<'s>(s: &'s str, prefix: &str) -> Option<&'s str> {
    if prefix.is_empty() {
        Some(s)
    } else {
        s.strip_prefix(prefix)
    }
}

/// `s` before `suffix`, when it ends with it (see [`after`] for why the empty case is apart).
fn before<'s>(s: &'s str, suffix: &str) -> Option<&'s str> {
    if suffix.is_empty() {
        Some(s)
    } else {
        s.strip_suffix(suffix)
    }
}

fn builder(body: &str) -> globset::GlobBuilder<'_> {
    let mut b = globset::GlobBuilder::new(body);
    b.literal_separator(true).backslash_escape(true);
    b
}

/// Every glob's compiled matcher, by its body.
static COMPILED: Memo<Option<GlobMatcher>> = OnceLock::new();

/// globset's matcher for a glob that parsed at load.
fn compiled(body: &str) -> Option<GlobMatcher> {
    memo(&COMPILED, body, || {
        builder(body).build().ok().map(|g| g.compile_matcher())
    })
}

/// Parses (validates) a glob body, once per distinct body.
fn parse(body: &str) -> Result<(), globset::ErrorKind> {
    static MEMO: Memo<Result<(), globset::ErrorKind>> = OnceLock::new();
    memo(&MEMO, body, || {
        builder(body)
            .build()
            .map(drop)
            .map_err(|e| e.kind().clone())
    })
}

/// How a valid glob body is matched.
fn how(body: &str) -> How {
    let compiled = || How::Compiled(OnceLock::new());
    if body.contains(['?', '[', ']', '{', '}', '\\']) {
        return compiled();
    }
    let (parents, last) = match body.rsplit_once('/') {
        Some((parents, last)) => (Some(parents), last),
        None => (None, body),
    };
    // `a/**` is `a/**/*`: everything below `a`.
    let (parents, last) = if last == "**" {
        (Some(body), "*")
    } else {
        (parents, last)
    };
    if last.contains("**") {
        return compiled();
    }
    // `d/**`, `**/t`, `d/**/t`: a literal directory, any depth, a literal tail of directories.
    let (dir, deep, tail) = match parents {
        None => ("", false, ""),
        Some("**") => ("", true, ""),
        Some(p) => match (
            p.strip_suffix("/**"),
            p.strip_prefix("**/"),
            p.split_once("/**/"),
        ) {
            (Some(d), _, _) => (d, true, ""),
            (None, Some(t), _) => ("", true, t),
            (None, None, Some((d, t))) => (d, true, t),
            (None, None, None) => (p, false, ""),
        },
    };
    if dir.contains('*') || tail.contains('*') {
        return compiled();
    }
    let slashed = |d: &str| {
        if d.is_empty() {
            String::new()
        } else {
            format!("{d}/")
        }
    };
    How::Name {
        dir: slashed(dir),
        deep,
        tail: slashed(tail),
        pieces: last.split('*').map(str::to_string).collect(),
    }
}

/// Why a glob was refused, with the glob as written; shown inside a protocol error located at
/// its line and column, so the reason is in the message itself.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GlobError {
    #[error("empty glob")]
    Empty,
    #[error(
        "invalid glob `{glob}`: globs are relative to the build directory and may not leave it (write `ci/**`, not `/repo/ci/**` or `../ci/**`)"
    )]
    Outside { glob: String },
    /// `.` or `./`: the directory itself, which no path relative to it is.
    #[error(
        "invalid glob `{glob}`: it names the directory itself; write `**` for every path in it"
    )]
    Itself { glob: String },
    /// What `globset` refused (`why`: its reason, e.g. an unclosed `[`; globset's error for
    /// it repeats the glob, so only its kind is kept).
    #[error("invalid glob `{glob}`: {why}")]
    Syntax {
        glob: String,
        why: globset::ErrorKind,
    },
}

impl TryFrom<String> for Glob {
    type Error = GlobError;

    fn try_from(src: String) -> Result<Self, GlobError> {
        if src.contains("${") {
            return Ok(Glob { src, how: None });
        }
        if src.is_empty() {
            return Err(GlobError::Empty);
        }
        let src = normalized(src)?;
        let body = src.trim_end_matches('/');
        if body.is_empty() {
            return Err(GlobError::Outside { glob: src });
        }
        if body.starts_with('/') || body.split('/').any(|c| c == "..") {
            return Err(GlobError::Outside { glob: src });
        }
        let how = how(body);
        // Only `?`, `[...]`, `{a,b}`, `\` and a `**` inside a component can be malformed.
        if let How::Compiled(_) = how {
            parse(body).map_err(|why| GlobError::Syntax {
                glob: src.clone(),
                why,
            })?;
        }
        Ok(Glob {
            src,
            how: Some(Arc::new(how)),
        })
    }
}

/// The glob as the paths it is matched against are written: a leading `./`, a `/./` and a
/// doubled `/` taken out (`./ci//x/./*.sh` is `ci/x/*.sh`), which no path holds, so a glob
/// written with them would match nothing.
fn normalized(src: String) -> Result<String, GlobError> {
    if !(src.starts_with("./")
        || src.contains("//")
        || src.contains("/./")
        || src.ends_with("/.")
        || src == ".")
    {
        return Ok(src);
    }
    let dirs_only = src.ends_with('/');
    let parts: Vec<&str> = src
        .split('/')
        .filter(|c| !c.is_empty() && *c != ".")
        .collect();
    if parts.is_empty() {
        return Err(GlobError::Itself { glob: src });
    }
    let mut out = if src.starts_with('/') {
        "/".to_string()
    } else {
        String::new()
    };
    out.push_str(&parts.join("/"));
    if dirs_only {
        out.push('/');
    }
    Ok(out)
}

impl From<Glob> for String {
    fn from(g: Glob) -> String {
        g.src
    }
}

impl fmt::Debug for Glob {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Glob({:?})", self.src)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn glob(s: &str) -> Glob {
        Glob::try_from(s.to_string()).unwrap()
    }

    fn strategy(s: &str) -> &'static str {
        match glob(s).how.as_deref() {
            None => "unresolved",
            Some(How::Name { deep: false, .. }) => "name",
            Some(How::Name { deep: true, .. }) => "deep",
            Some(How::Compiled(_)) => "compiled",
        }
    }

    #[test]
    fn strategies() {
        assert_eq!(strategy("EXECUTION-TRACKER.md"), "name");
        assert_eq!(strategy("screenshots/768/"), "name");
        assert_eq!(strategy("p3b-pa-auditor-*.md"), "name");
        assert_eq!(strategy("screenshots/768/scroll-*.png"), "name");
        assert_eq!(strategy("p3c-weaver*-refine*.md"), "name");
        assert_eq!(strategy("*"), "name");
        assert_eq!(strategy("screenshots/**/*.png"), "deep");
        assert_eq!(strategy("refine-inputs/**"), "deep");
        assert_eq!(strategy("**/x.md"), "deep");
        assert_eq!(strategy("**"), "deep");
        assert_eq!(strategy("*/cold-look.png"), "compiled");
        assert_eq!(strategy("a/**/b/c"), "deep");
        assert_eq!(strategy("**/orchestrator/__init__.py"), "deep");
        assert_eq!(strategy("**/__pycache__/roles.*.pyc"), "deep");
        assert_eq!(strategy("a/**/b/**/c"), "compiled");
        assert_eq!(strategy("**/b*/c"), "compiled");
        assert_eq!(strategy("a**b"), "compiled");
        assert_eq!(strategy("p?.md"), "compiled");
        assert_eq!(strategy("p[12].md"), "compiled");
        assert_eq!(strategy("{a,b}.md"), "compiled");
        assert_eq!(strategy(r"a\*.md"), "compiled");
        assert_eq!(strategy("${auditors}"), "unresolved");
    }

    #[test]
    fn unresolved_matches_nothing() {
        let g = glob("${auditors}");
        assert!(!g.is_resolved());
        assert!(!g.is_match("${auditors}"));
    }

    #[test]
    fn written_paths_are_normalised_never_inert() {
        for (written, is) in [
            ("./Makefile", "Makefile"),
            ("./ci/**", "ci/**"),
            ("ci//deploy.sh", "ci/deploy.sh"),
            ("././ci/./x/", "ci/x/"),
            ("ci/.", "ci"),
            ("ci/", "ci/"),
        ] {
            let g = Glob::try_from(written.to_string()).unwrap();
            assert_eq!(g.as_str(), is, "{written}");
        }
        assert!(glob("./Makefile").is_match("Makefile"));
        assert!(glob("./ci/**").is_match("ci/deploy.sh"));
        for itself in [".", "./", "./."] {
            assert_eq!(
                Glob::try_from(itself.to_string()).unwrap_err(),
                GlobError::Itself {
                    glob: itself.into()
                }
            );
        }
        assert!(matches!(
            Glob::try_from(".//abs".to_string()),
            Ok(g) if g.as_str() == "abs"
        ));
        assert!(
            Glob::try_from("/./abs".to_string()).is_err(),
            "absolute stays refused"
        );
        assert!(Glob::try_from("./../up".to_string()).is_err());
    }

    #[test]
    fn invalid_globs_are_errors() {
        for bad in ["", "/", "/abs/*.md", "../up.md", "a/../b", "p[1.md", "{a,b"] {
            assert!(Glob::try_from(bad.to_string()).is_err(), "{bad:?}");
        }
        assert_eq!(Glob::try_from(String::new()).unwrap_err(), GlobError::Empty);
        assert_eq!(
            Glob::try_from("../up.md".to_string()).unwrap_err(),
            GlobError::Outside {
                glob: "../up.md".into()
            }
        );
        let e = Glob::try_from("p[1.md".to_string()).unwrap_err();
        assert!(
            matches!(&e, GlobError::Syntax { glob, why }
                if glob == "p[1.md" && *why == globset::ErrorKind::UnclosedClass),
            "{e:?}"
        );
        assert_eq!(
            e.to_string(),
            "invalid glob `p[1.md`: unclosed character class; missing ']'"
        );
    }

    /// Every fast path answers exactly as globset does, over globs and paths built to
    /// probe the edges: empty pieces, overlapping pieces, separators, prefixes and suffixes
    /// that share characters, and names shorter than the pattern.
    #[test]
    fn fast_paths_agree_with_globset() {
        let globs = [
            "a",
            "ab.md",
            "*",
            "*.md",
            "a*",
            "a*b",
            "a*a",
            "aa*aa",
            "*a*",
            "a*b*c",
            "a*b*c*d",
            "*-refine*",
            "p3c-weaver*-refine*.md",
            "p1-execution-brief*-rev*.md",
            "p3b-pa-auditor-*.md",
            "d/*",
            "d/a*.png",
            "d/e/*x*",
            "d/e/lit.png",
            "d/",
            "**",
            "d/**",
            "d/**/*.png",
            "d/**/a.png",
            "d/e/**/*x*",
            "**/a.png",
            "**/*",
            "a/**/b",
            "**/b/c",
            "a/**/b/c",
            "a/**/x/b",
            "**/d/e/*x*",
            "**/__pycache__/a.*.pyc",
            "d/**/e/lit.png",
            "**/x/y/a.png",
        ];
        let paths = [
            "",
            "a",
            "aa",
            "aaa",
            "aaaa",
            "ab",
            "ab.md",
            "abc",
            "acb",
            "abbc",
            "abcbd",
            "abdcd",
            "a/b",
            "a/a",
            "b",
            "x.md",
            ".md",
            "a.md/x.md",
            "x-refine",
            "x-refine-y",
            "p3c-weaver-refine.md",
            "p3c-weaver-2-refine-x.md",
            "p3c-weaver.md",
            "p1-execution-brief-rev2.md",
            "p1-execution-brief-refine-rev1.md",
            "p1-execution-brief.md",
            "p3b-pa-auditor-A.md",
            "p3b-pa-auditor-.md",
            "p3b-pa-auditor-A/B.md",
            "d",
            "d/a.png",
            "d/ab.png",
            "d/x/a.png",
            "d/e/x",
            "d/e/axb",
            "d/e/lit.png",
            "d/e/f/x",
            "dd/a.png",
            "d/",
            "d/x/y/a.png",
            "d/e/f/g/zxz",
            "x/y/a.png",
            "a.png",
            "a/x/b",
            "a/x/y/b",
            "ab/b",
            "b/c",
            "x/b/c",
            "xb/c",
            "x/xb/c",
            "a/b/c",
            "a/x/b/c",
            "a/xb/c",
            "a/x/b",
            "ax/b",
            "b/c/d",
            "d/e/zxz",
            "q/d/e/zxz",
            "qd/e/zxz",
            "__pycache__/a.cpython-311.pyc",
            "x/__pycache__/a.1.pyc",
            "x__pycache__/a.1.pyc",
            "__pycache__/a.pyc",
            "d/x/e/lit.png",
            "d/xe/lit.png",
            "x/y/a.png/z",
            "w/x/y/a.png",
            "wx/y/a.png",
        ];
        for g in globs {
            let ours = glob(g);
            let body = g.trim_end_matches('/');
            let reference = builder(body).build().unwrap().compile_matcher();
            for p in paths {
                assert_eq!(
                    ours.is_match(p),
                    reference.is_match(p),
                    "glob {g:?} on {p:?} ({})",
                    strategy(g)
                );
            }
        }
    }

    /// Globs matched as one say what each says alone: fast ones, compiled ones (a `*` inside a
    /// directory's name, `{a,b}`, `?`, a trailing `/`), the same body twice, an unresolved one.
    #[test]
    fn any_glob_is_any_of_its_globs() {
        let globs: Vec<Glob> = [
            "**/orchestrator.py",
            "**/safety_*/__init__.py",
            "**/safety_*.*.so",
            ".git/hooks/**",
            ".git/worktrees/*/config.worktree",
            ".git/modules/**/hooks/**",
            "**/__pycache__/roles.*.pyc",
            "a/{x,y}/b?.md",
            "d/e*/",
            "d/e*/",
            "${later}",
        ]
        .into_iter()
        .map(glob)
        .collect();
        let paths = [
            "orchestrator.py",
            "app/orchestrator.py",
            "app/safety_net/__init__.py",
            "safety_net/__init__.pyc",
            "app/safety_x.cpython-312-x86_64-linux-gnu.so",
            ".git/hooks/pre-commit",
            ".git/worktrees/w1/config.worktree",
            ".git/worktrees/w1/x/config.worktree",
            ".git/modules/sub/hooks/post-checkout",
            "x/__pycache__/roles.cpython-311.pyc",
            "a/x/b1.md",
            "a/z/b1.md",
            "d/ex",
            "d/ex/f",
            "README.md",
        ];
        let any = AnyGlob::new(&globs);
        assert!(any.set.is_some(), "the compiled ones are one set");
        assert!(any.by_name.contains_key("orchestrator.py") && !any.direct.is_empty());
        for p in paths {
            let alone = globs.iter().any(|g| g.is_match(p));
            assert_eq!(any.is_match(p), alone, "{p:?}");
        }
        assert!(any.is_match("app/safety_net/__init__.py"));
        assert!(!any.is_match("README.md"));
        assert!(!AnyGlob::new(&[]).is_match("a"));
    }
}
