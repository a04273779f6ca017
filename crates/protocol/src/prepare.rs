//! Compiling ahead what judging task records will need: the `added_lines` predicates' forbidden
//! patterns and the globs of protected paths (and of the paths that shadow them) are otherwise
//! compiled at their first use, after the workspace is listed. A one-shot judgment compiles
//! them on a thread while it lists; the compiled matchers are kept per process (`memo`), so
//! the judgment finds them ready. (The secret rules compile one by one, for the lines that hold
//! a rule's keywords.)

use super::predicate::Predicate;
use super::Protocol;

impl Protocol {
    /// Compiles the patterns and globs of the protocol's task checks now.
    pub fn prepare(&self) {
        for c in self.passes.iter().flat_map(|p| &p.checks) {
            c.predicate.each(&mut |p| match p {
                Predicate::AddedLines(a) => {
                    for f in &a.forbid {
                        let _ = f.pattern.regex();
                    }
                    for p in &a.forbid_patterns {
                        let _ = p.regex();
                    }
                }
                Predicate::Unchanged(u) => {
                    for (g, _) in u.all_globs() {
                        g.prepare();
                    }
                }
                _ => {}
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether each of the protocol's protected globs (and those of the paths that shadow one)
    /// and forbidden patterns is compiled: (globs, patterns).
    fn compiled(p: &Protocol) -> (Vec<bool>, Vec<bool>) {
        let (mut globs, mut patterns) = (Vec::new(), Vec::new());
        for c in p.passes.iter().flat_map(|p| &p.checks) {
            c.predicate.each(&mut |q| match q {
                Predicate::AddedLines(a) => {
                    patterns.extend(a.forbid.iter().map(|f| f.pattern.is_compiled()));
                }
                Predicate::Unchanged(u) => {
                    globs.extend(u.all_globs().iter().map(|(g, _)| g.is_prepared()));
                }
                _ => {}
            });
        }
        (globs, patterns)
    }

    #[test]
    fn prepare_compiles_the_task_checks_globs_and_patterns() {
        // With a shadow of its own (`?`: a compiled glob): no other test in this process compiles it
        // first.
        let text = Protocol::load("code-change").expect("load").text.replace(
            "\"{dir}{stem}.*.so\",",
            "\"{dir}{stem}.*.so\", \"{dir}{stem}.prepare-test.?y\",",
        );
        let p = Protocol::parse(&text, "code-change").expect("parse");
        let (globs, patterns) = compiled(&p);
        assert!(
            globs.contains(&false),
            "a protected glob needs compiling: {globs:?}"
        );
        assert!(
            !patterns.is_empty() && !patterns.contains(&true),
            "{patterns:?}"
        );
        p.prepare();
        let (globs, patterns) = compiled(&p);
        assert!(!globs.contains(&false), "{globs:?}");
        assert!(!patterns.contains(&false), "{patterns:?}");
    }
}
