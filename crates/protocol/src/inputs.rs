//! What a predicate reads: the globs it matches and whether it reads the tracker. The
//! daemon uses this to re-evaluate only the checks whose inputs changed.

use super::predicate::{Glob, Predicate, TimeRef};

/// Whether `rel`, or one of its ancestors (a directory glob, a count in a directory),
/// matches the glob. An uncompiled glob matches nothing.
pub fn touches(glob: &Glob, rel: &str) -> bool {
    let mut path = rel;
    loop {
        if glob.is_match(path) {
            return true;
        }
        match path.rfind('/') {
            Some(i) => path = &path[..i],
            None => return false,
        }
    }
}

/// The inputs of a predicate (or several).
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    pub globs: Vec<Glob>,
    /// The tracker's file name (the protocol's), when it reads the tracker.
    pub tracker: Option<String>,
    /// It depends on the pipeline's verdict (`complete`).
    pub verdict: bool,
    /// Any change at all may change it.
    pub everything: bool,
    /// The globs whose files' mtimes it orders (what the referee must remember seeing).
    pub timed: Vec<Glob>,
    /// The globs whose files' bytes it reads (a subset of `globs`): what a one-shot judgment
    /// may read ahead while it lists the directory.
    pub reads: Vec<Glob>,
}

impl Inputs {
    /// The inputs of `preds` in a protocol whose tracker is the file `tracker`.
    pub fn of(preds: &[&Predicate], tracker: &str) -> Inputs {
        let mut i = Inputs::default();
        for p in preds {
            i.add(p, tracker);
        }
        i
    }

    /// Whether `rel` is the tracker these inputs read.
    pub fn reads_tracker(&self, rel: &str) -> bool {
        self.tracker.as_deref() == Some(rel)
    }

    /// Whether a change to `rel` (a path relative to the build directory) may change the
    /// result. Conservative: a change inside a matched directory counts.
    pub fn touched_by(&self, rel: &str) -> bool {
        // An editor's lock, swap or backup file, or a change inside `.git`, is no check's input.
        if crate::ignored::not_input(rel) {
            return false;
        }
        if self.everything || self.reads_tracker(rel) {
            return true;
        }
        // An uncompiled glob cannot be judged, so it counts as touched (conservative).
        self.globs
            .iter()
            .any(|g| !g.is_resolved() || touches(g, rel))
    }

    fn add(&mut self, p: &Predicate, tracker: &str) {
        use Predicate as P;
        match p {
            P::All(v) | P::Any(v) => v.iter().for_each(|q| self.add(q, tracker)),
            P::Not(q) | P::FailIfMissing(q) => self.add(q, tracker),
            P::If(i) => {
                self.add(&i.cond, tracker);
                self.add(&i.then, tracker);
                if let Some(e) = &i.otherwise {
                    self.add(e, tracker);
                }
            }
            P::Always(_) => {}
            P::Complete(_) => self.verdict = true,
            P::Verdict(v) => match &v.files {
                Some(files) => self.read(std::slice::from_ref(files)),
                // Every `[verdict]` file, which the inputs do not know by name.
                None => {
                    self.verdict = true;
                    self.everything = true;
                }
            },
            P::Exists(g) => self.globs.extend(g.as_slice().iter().cloned()),
            P::Count(c) => self.globs.push(c.glob.clone()),
            P::FileSet(f) => self.globs.push(f.glob.clone()),
            P::Heading(h) => self.read(std::slice::from_ref(&h.files)),
            P::Json(j) => self.read(std::slice::from_ref(&j.file)),
            P::Parses(p) if p.files.is_some() => {
                self.read(p.files.as_ref().map(|f| f.as_slice()).unwrap_or_default());
            }
            P::Dissimilar(d) => self.read(&d.files),
            P::Gate(g) => self.read(std::slice::from_ref(&g.files)),
            P::GateFiles(g) => self.read(std::slice::from_ref(&g.files)),
            P::GateCount(g) => self.read(std::slice::from_ref(&g.files)),
            P::GateSources(g) => self.read(std::slice::from_ref(&g.files)),
            P::Text(t) => {
                self.read(&t.files);
                self.tracker_if(!t.fields.is_empty(), tracker);
            }
            // Workspace predicates read the task record and the workspace, not the snapshot:
            // they are re-judged on every evaluation.
            P::TaskRecord(_)
            | P::Unchanged(_)
            | P::ChangesListed(_)
            | P::HashesMatch(_)
            | P::NoLoss(_)
            | P::Parses(_)
            | P::SizeLimit(_)
            | P::AddedLines(_)
            | P::RecordField(_)
            | P::Style(_)
            | P::Weakened(_) => self.everything = true,
            P::PathsListed(_) => {
                // Any path may be listed: every change counts.
                self.tracker_if(true, tracker);
                self.everything = true;
            }
            P::Filled(_)
            | P::SectionFilled(_)
            | P::FieldMatches(_)
            | P::Column(_)
            | P::FillRate(_)
            | P::Distinct(_) => self.tracker_if(true, tracker),
            P::HasTime(t) => self.add_time(t, tracker),
            P::TimeOrder(t) => {
                self.tracker_if(!t.fields.is_empty(), tracker);
                t.chain.iter().for_each(|r| self.add_time(r, tracker));
            }
        }
    }

    /// Globs whose files it reads (and matches).
    fn read(&mut self, globs: &[Glob]) {
        self.globs.extend(globs.iter().cloned());
        self.reads.extend(globs.iter().cloned());
    }

    /// Notes that it reads the tracker `tracker`, when `reads`.
    fn tracker_if(&mut self, reads: bool, tracker: &str) {
        if reads && self.tracker.is_none() {
            self.tracker = Some(tracker.to_string());
        }
    }

    fn add_time(&mut self, t: &TimeRef, tracker: &str) {
        match t {
            TimeRef::Field(_) | TimeRef::FieldTime(_) | TimeRef::Column(_) => {
                self.tracker_if(true, tracker)
            }
            TimeRef::Mtime(g) => {
                self.globs.push(g.clone());
                self.timed.push(g.clone());
            }
            TimeRef::FirstOf(v) => v.iter().for_each(|r| self.add_time(r, tracker)),
            TimeRef::Earliest(i) | TimeRef::Latest(i) => self.add_time(i, tracker),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn globs_and_ancestors_touch() {
        let p: Predicate = toml::from_str::<toml::Table>(
            "p = { all = [{ exists = \"screenshots/1440/\" }, { filled = \"BV-01\" }] }",
        )
        .unwrap()["p"]
            .clone()
            .try_into()
            .unwrap();
        let i = Inputs::of(&[&p], "EXECUTION-TRACKER.md");
        assert!(i.touched_by("EXECUTION-TRACKER.md"));
        assert!(i.touched_by("screenshots/1440"));
        assert!(i.touched_by("screenshots/1440/cold-look.png"));
        assert!(!i.touched_by("p3b-pa-auditor-A.md"));
    }

    #[test]
    fn the_tracker_is_the_file_the_protocol_names() {
        let p: Predicate = toml::from_str::<toml::Table>("p = { filled = \"BV-01\" }").unwrap()
            ["p"]
            .clone()
            .try_into()
            .unwrap();
        let i = Inputs::of(&[&p], "TRACKER.md");
        assert!(i.touched_by("TRACKER.md"));
        assert!(!i.touched_by("EXECUTION-TRACKER.md"));
        let none: Predicate = toml::from_str::<toml::Table>("p = { exists = \"a.md\" }").unwrap()
            ["p"]
            .clone()
            .try_into()
            .unwrap();
        assert_eq!(Inputs::of(&[&none], "TRACKER.md").tracker, None);
    }
}
