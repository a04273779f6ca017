//! Only regular files are artifacts (issue 16 §2): what a predicate finds at an
//! artifact's name, and what counts as the artifact. A name that is not a file never counts as
//! the file: a directory where a file belongs, a FIFO, socket or device, or a symlink that
//! dangles, loops or leads out of the build directory is the artifact *present and wrong*.
//! [`Ctx::files`], [`Ctx::read`] and [`Ctx::tracker`] record it, and [`super::judge`] makes
//! the predicate that looked FAIL with it as evidence, whichever predicate that is; `not` and
//! `if` never turn it into a pass. This module must not judge anything else.

use super::{Ctx, Kind, Outcome, Verdict};
use crate::artifacts::{Entry, ReadError};
use crate::protocol::predicate::Glob;

impl<'a> Ctx<'a> {
    /// The artifacts at a glob's names, and the other entries there.
    ///
    /// This is the one place a predicate learns what is at a glob, so it decides what counts:
    /// a glob ending in `/` names directories, any other glob regular files (a
    /// symlink counts as its target only inside the build directory). Left out: a directory
    /// matched by a glob whose last part is `**` (the tree's structure), and a regular file
    /// matched by a `/` glob (a file beside the folders it names). Every other entry at the
    /// glob's names comes second. One that certainly is something else (a directory where a
    /// file belongs, a FIFO, socket or device, a dangling, looping or escaping symlink) is
    /// present and wrong: it is recorded, and [`super::judge`] makes the predicate that looked
    /// FAIL with it as evidence. One whose type could not be examined is only unknown (the
    /// predicate makes it INCONCLUSIVE).
    pub fn files(&self, glob: &Glob) -> (Vec<&'a Entry>, Vec<&'a Entry>) {
        let dirs = glob.dirs_only();
        let tree = glob.as_str().ends_with("**");
        let mut right = Vec::new();
        let mut other = Vec::new();
        for e in self.matches(glob) {
            let wrong = if dirs { e.not_a_dir() } else { e.not_a_file() };
            let unknown = e.kind == Kind::Other;
            match wrong {
                None if !unknown => right.push(e),
                None => other.push(e),
                // The structure of the tree a `**` glob names, and a file beside the folders a
                // `/` glob names: neither is what the glob looks for, and neither pretends.
                Some(_) if tree && e.kind == Kind::Dir => {}
                Some(_) if dirs && e.kind == Kind::File => {}
                Some(what) => {
                    let want = if dirs { "directory" } else { "regular file" };
                    self.note_wrong(format!("`{}`: {what}, not a {want}", e.rel));
                    other.push(e);
                }
            }
        }
        (right, other)
    }

    /// Records something present and wrong for the predicate being judged.
    fn note_wrong(&self, what: String) {
        let mut wrong = self.wrong.borrow_mut();
        if !wrong.contains(&what) {
            wrong.push(what);
        }
    }

    /// Records a read refused for what the file is (not a regular file, a symlink out of the
    /// build directory): present and wrong, like an entry [`Ctx::files`] refuses.
    pub(super) fn note_refused(&self, err: &ReadError) {
        if matches!(
            err,
            ReadError::NotRegular { .. } | ReadError::OutsideRoot { .. }
        ) {
            self.note_wrong(err.to_string());
        }
    }
}

impl Outcome {
    /// Marks the outcome present and wrong (FAIL) for the entries `wrong` describes, which
    /// head what was found.
    pub(super) fn present_and_wrong(&mut self, wrong: Vec<String>) {
        self.verdict = Verdict::Fail;
        self.wrong = true;
        // A refusal the predicate already reported as its observation is said once.
        self.observed.retain(|o| !wrong.contains(o));
        let said = format!("present and wrong: {}", wrong.join("; "));
        self.observed.insert(0, said);
    }
}

#[cfg(test)]
mod tests {
    use std::fs;
    use std::path::Path;

    use super::super::{judge, Ctx, Verdict};
    use crate::artifacts::{Limits, Snapshot};
    use crate::protocol::predicate::Predicate;
    use crate::protocol::Protocol;

    fn predicate(toml: &str) -> Predicate {
        toml::from_str::<toml::Table>(&format!("p = {toml}")).unwrap()["p"]
            .clone()
            .try_into()
            .unwrap()
    }

    /// (verdict, wrong, observed) of `toml` judged against `dir`.
    fn judged(dir: &Path, toml: &str) -> (Verdict, bool, String) {
        let protocol = Protocol::load("d10").unwrap();
        let snap = Snapshot::scan(dir, Limits::default()).unwrap();
        let ctx = Ctx::new(&protocol, &snap);
        let o = judge(&ctx, &predicate(toml));
        (o.verdict, o.wrong, o.observed.join("; "))
    }

    fn mkfifo(path: &Path) {
        rustix::fs::mkfifoat(
            rustix::fs::CWD,
            path,
            rustix::fs::Mode::from_raw_mode(0o644),
        )
        .expect("mkfifo");
    }

    #[test]
    fn a_directory_where_a_file_belongs_is_present_and_wrong() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("p1-execution-brief-rev1.md")).unwrap();
        for toml in [
            r#"{ exists = "p1-execution-brief*-rev*.md" }"#,
            r#"{ count = { glob = "p1-execution-brief*.md", min = 1 } }"#,
            r#"{ heading = { files = "p1-*.md", level = 2, text = "Brief" } }"#,
            r#"{ has_time = { mtime = "p1-*.md" } }"#,
        ] {
            let (verdict, wrong, observed) = judged(d.path(), toml);
            assert_eq!(
                (verdict, wrong),
                (Verdict::Fail, true),
                "{toml}: {observed}"
            );
            assert!(
                observed.starts_with(
                    "present and wrong: `p1-execution-brief-rev1.md`: directory, not a regular file"
                ),
                "{toml}: {observed}"
            );
        }
        // Beside a real file, the directory is still wrong.
        fs::write(d.path().join("p1-execution-brief-rev2.md"), "# Brief\n").unwrap();
        let (verdict, ..) = judged(d.path(), r#"{ exists = "p1-execution-brief*-rev*.md" }"#);
        assert_eq!(verdict, Verdict::Fail);
    }

    #[test]
    fn fifos_and_dangling_looping_or_escaping_symlinks_are_wrong() {
        let outer = tempfile::tempdir().unwrap();
        let root = outer.path().join("build");
        fs::create_dir(&root).unwrap();
        fs::write(outer.path().join("secret.png"), "s").unwrap();
        mkfifo(&root.join("a.png"));
        std::os::unix::fs::symlink("gone.png", root.join("b.png")).unwrap();
        std::os::unix::fs::symlink("c.png", root.join("c.png")).unwrap();
        std::os::unix::fs::symlink("../secret.png", root.join("d.png")).unwrap();
        for (name, what) in [
            ("a.png", "fifo"),
            ("b.png", "dangling symlink"),
            ("c.png", "symlink loop"),
            ("d.png", "symlink resolves outside the build directory"),
        ] {
            let (verdict, wrong, observed) = judged(&root, &format!("{{ exists = \"{name}\" }}"));
            assert_eq!(
                (verdict, wrong),
                (Verdict::Fail, true),
                "{name}: {observed}"
            );
            assert!(
                observed.contains(&format!("`{name}`: {what}")),
                "{observed}"
            );
        }
    }

    #[test]
    fn a_symlink_to_a_file_inside_is_the_file() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("shots")).unwrap();
        fs::write(d.path().join("shots/real.png"), "png").unwrap();
        std::os::unix::fs::symlink("real.png", d.path().join("shots/cold-look.png")).unwrap();
        let (verdict, wrong, _) = judged(d.path(), r#"{ exists = "shots/cold-look.png" }"#);
        assert_eq!((verdict, wrong), (Verdict::Pass, false));
    }

    #[test]
    fn folder_globs_want_folders_and_trees_hold_folders() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir_all(d.path().join("refine-inputs/sub")).unwrap();
        fs::write(d.path().join("refine-inputs/sub/a.md"), "a").unwrap();
        fs::write(d.path().join("p2-output-refine.html"), "x").unwrap();
        mkfifo(&d.path().join("screenshots"));
        // A folder inside the tree a `**` glob names is its structure.
        let (verdict, ..) = judged(
            d.path(),
            r#"{ count = { glob = "refine-inputs/**", min = 1, max = 1 } }"#,
        );
        assert_eq!(verdict, Verdict::Pass);
        // A file beside the folders a `/` glob names is not looked at; a FIFO is wrong.
        let (verdict, ..) = judged(d.path(), r#"{ exists = "*-refine*/" }"#);
        assert_eq!(verdict, Verdict::Missing);
        let (verdict, wrong, observed) = judged(d.path(), r#"{ exists = "screenshots/" }"#);
        assert_eq!((verdict, wrong), (Verdict::Fail, true));
        assert!(
            observed.contains("`screenshots`: fifo, not a directory"),
            "{observed}"
        );
        // D10's REFINE trigger: a REFINE folder or file starts nothing; a REFINE verdict does.
        let protocol = Protocol::load("d10").unwrap();
        let r = protocol.passes.iter().find(|p| p.id == "R").unwrap();
        let snap = Snapshot::scan(d.path(), Limits::default()).unwrap();
        assert_ne!(
            judge(&Ctx::new(&protocol, &snap), &r.trigger).verdict,
            Verdict::Pass
        );
        fs::write(d.path().join("p3c-weaver.md"), "**VERDICT:** REFINE\n").unwrap();
        let snap = Snapshot::scan(d.path(), Limits::default()).unwrap();
        assert_eq!(
            judge(&Ctx::new(&protocol, &snap), &r.trigger).verdict,
            Verdict::Pass
        );
    }

    #[test]
    fn not_if_and_any_never_make_wrong_a_pass() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("x.md")).unwrap();
        fs::write(d.path().join("y.md"), "y").unwrap();
        for toml in [
            r#"{ not = { exists = "x.md" } }"#,
            r#"{ if = { cond = { exists = "x.md" }, then = { always = false } } }"#,
            r#"{ if = { cond = { not = { exists = "x.md" } }, then = { always = true } } }"#,
            r#"{ any = [{ exists = "x.md" }, { exists = "z.md" }] }"#,
            r#"{ all = [{ exists = "y.md" }, { exists = "x.md" }] }"#,
        ] {
            let (verdict, wrong, observed) = judged(d.path(), toml);
            assert_eq!(
                (verdict, wrong),
                (Verdict::Fail, true),
                "{toml}: {observed}"
            );
        }
        // Another alternative that holds still holds.
        let (verdict, ..) = judged(
            d.path(),
            r#"{ any = [{ exists = "x.md" }, { exists = "y.md" }] }"#,
        );
        assert_eq!(verdict, Verdict::Pass);
    }

    #[test]
    fn a_tracker_that_is_not_a_file_is_present_and_wrong() {
        let d = tempfile::tempdir().unwrap();
        fs::create_dir(d.path().join("EXECUTION-TRACKER.md")).unwrap();
        let (verdict, wrong, observed) = judged(d.path(), r#"{ filled = "P1_START" }"#);
        assert_eq!((verdict, wrong), (Verdict::Fail, true), "{observed}");
        assert!(observed.contains("EXECUTION-TRACKER.md"), "{observed}");
        assert!(observed.contains("directory"), "{observed}");
    }
}
