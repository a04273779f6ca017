//! What only a protocol of task records has (code-change): which records are judged,
//! the grade mapping of an attempt, what each grade means, and the loop guards over a task's
//! attempts. Every verdict name is the protocol's data: the referee knows a verdict only by
//! the [`GradeOutcome`] the protocol gives it.

use serde::Deserialize;

use super::Severity;

/// Which task records are judged, and what a well-formed one holds.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TasksSpec {
    /// A record is judged when its `status` is one of these (a malformed record always is).
    pub judge_status: Vec<String>,
    /// Top-level fields a record must have.
    pub required: Vec<String>,
}

/// What a verdict means for the attempt, the exit code and the event's severity.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum GradeOutcome {
    /// The attempt is accepted (exit 0).
    Pass,
    /// The attempt is accepted with a cleanup task to follow (exit 0).
    Cleanup,
    /// The attempt is rejected (exit 1).
    Reject,
    /// A loop guard handed the task to a human (exit 1); never a grade's.
    Escalate,
}

impl GradeOutcome {
    /// Whether the attempt may go on (`verify`, `watch` and `status --task` exit 0 for it).
    pub fn lets_through(self) -> bool {
        matches!(self, GradeOutcome::Pass | GradeOutcome::Cleanup)
    }
}

/// One rung of the verdict mapping: the first grade whose `when` matches a result decides.
#[derive(Debug, Clone)]
pub struct Grade {
    pub verdict: String,
    /// Matches when any result has one of these severities and statuses; empty: always.
    pub when: Vec<GradeWhen>,
    /// Build a cleanup task from the matching results.
    pub cleanup: bool,
    /// List the files to restore.
    pub restore: bool,
    /// What the grade means: `outcome` as written, else `cleanup` when `cleanup = true`, `pass`
    /// when the guards name it a final verdict, `reject` otherwise.
    pub outcome: GradeOutcome,
}

/// A `[[grade]]` as written.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawGrade {
    verdict: String,
    #[serde(default)]
    when: Vec<GradeWhen>,
    #[serde(default)]
    cleanup: bool,
    #[serde(default)]
    restore: bool,
    outcome: Option<GradeOutcome>,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GradeWhen {
    pub severity: Severity,
    /// `FAIL`, `INCONCLUSIVE`, …
    pub status: Vec<String>,
}

/// The loop guards over a task's attempts (seeds 000, 002, 004), applied in this order.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Guards {
    /// Verdicts that end the loop: no guard overrides them.
    #[serde(default)]
    pub final_verdicts: Vec<String>,
    /// The verdict that counts as a rejection.
    pub reject: String,
    /// The task's Nth rejection escalates.
    pub max_rejects: u32,
    /// An attempt whose diff equals the previous attempt's escalates.
    #[serde(default)]
    pub identical_diff: bool,
    /// From this attempt on, a diff similarity ratio at or above `convergence_ratio` with the
    /// previous attempt's diff escalates as convergence.
    pub convergence_from_attempt: u64,
    pub convergence_ratio: f64,
    /// The verdict a guard gives when rejections repeat or a diff repeats.
    #[serde(default = "default_escalate")]
    pub escalate: String,
    /// The verdict the convergence guard gives.
    #[serde(default = "default_escalate_convergence")]
    pub escalate_convergence: String,
}

// The names a protocol written before `escalate` existed got from the referee.
fn default_escalate() -> String {
    "ESCALATE".into()
}

fn default_escalate_convergence() -> String {
    "ESCALATE_CONVERGENCE".into()
}

/// Where a mistake in the task tables is: `[tasks]`, the Nth `[[grade]]`, `[guards]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum At {
    Tasks,
    Grade(usize),
    Guards,
}

/// A protocol of task records: its records, grades and guards.
#[derive(Debug)]
pub struct TaskRules {
    pub records: TasksSpec,
    /// The verdict mapping of a task attempt, first match wins.
    pub grades: Vec<Grade>,
    pub guards: Option<Guards>,
}

impl TaskRules {
    /// Resolves what each grade means and checks the grades and guards; an error says where
    /// for the caller to locate.
    pub(super) fn new(
        records: TasksSpec,
        raw: Vec<RawGrade>,
        guards: Option<Guards>,
    ) -> Result<TaskRules, (At, String)> {
        if raw.is_empty() {
            return Err((
                At::Tasks,
                "a protocol with `[tasks]` needs at least one `[[grade]]` (the verdict mapping)"
                    .into(),
            ));
        }
        let finals: &[String] = guards.as_ref().map_or(&[], |g| &g.final_verdicts);
        let mut grades = Vec::with_capacity(raw.len());
        for (i, g) in raw.into_iter().enumerate() {
            for st in g.when.iter().flat_map(|w| &w.status) {
                if !["PASS", "FAIL", "WAITING", "SKIP", "INCONCLUSIVE"].contains(&st.as_str()) {
                    return Err((At::Grade(i), format!(
                        "grade `{}`: unknown status `{st}` (PASS, FAIL, WAITING, SKIP, INCONCLUSIVE)",
                        g.verdict
                    )));
                }
            }
            let outcome = match g.outcome {
                Some(GradeOutcome::Escalate) => {
                    return Err((At::Grade(i), format!(
                        "grade `{}`: `outcome = \"escalate\"` is the guards' (`[guards] escalate`); a grade is `pass`, `cleanup` or `reject`",
                        g.verdict
                    )));
                }
                Some(o) => o,
                None if g.cleanup => GradeOutcome::Cleanup,
                None if finals.contains(&g.verdict) => GradeOutcome::Pass,
                None => GradeOutcome::Reject,
            };
            grades.push(Grade {
                verdict: g.verdict,
                when: g.when,
                cleanup: g.cleanup,
                restore: g.restore,
                outcome,
            });
        }
        if let Some(g) = &guards {
            if !(0.0..=1.0).contains(&g.convergence_ratio) {
                return Err((
                    At::Guards,
                    format!(
                        "`guards.convergence_ratio` `{}` must be between 0 and 1",
                        g.convergence_ratio
                    ),
                ));
            }
            if g.max_rejects == 0 {
                return Err((At::Guards, "`guards.max_rejects` must be at least 1".into()));
            }
            for (key, name) in [
                ("escalate", &g.escalate),
                ("escalate_convergence", &g.escalate_convergence),
            ] {
                if grades.iter().any(|x| x.verdict == *name) {
                    return Err((
                        At::Guards,
                        format!("`guards.{key}` `{name}` is also a grade's verdict: an escalation needs a name of its own"),
                    ));
                }
            }
        }
        Ok(TaskRules {
            records,
            grades,
            guards,
        })
    }

    /// What a verdict of this protocol means: a guard's escalation, a grade's outcome, and
    /// anything else (no grade matched, a name from elsewhere) rejects, fail closed.
    pub fn outcome(&self, verdict: &str) -> GradeOutcome {
        if self.is_escalation(verdict) {
            return GradeOutcome::Escalate;
        }
        self.grades
            .iter()
            .find(|g| g.verdict == verdict)
            .map_or(GradeOutcome::Reject, |g| g.outcome)
    }

    /// Whether `verdict` is one of the guards' escalations.
    pub fn is_escalation(&self, verdict: &str) -> bool {
        self.guards
            .as_ref()
            .is_some_and(|g| g.escalate == verdict || g.escalate_convergence == verdict)
    }

    /// The verdicts that let an attempt through (what `status --task` answers 0 for).
    pub fn go_verdicts(&self) -> Vec<String> {
        self.grades
            .iter()
            .filter(|g| g.outcome.lets_through())
            .map(|g| g.verdict.clone())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::{Protocol, ProtocolError, Subject, EMBEDDED};
    use super::*;

    fn cc() -> &'static str {
        EMBEDDED[1].2
    }

    fn rules(p: &Protocol) -> &TaskRules {
        match &p.subject {
            Subject::Workspace(r) => r,
            Subject::Build(_) => panic!("{} is a build protocol", p.id),
        }
    }

    /// `(line, message)` of a load error.
    fn error(text: &str) -> (usize, String) {
        match Protocol::parse(text, "p.toml").unwrap_err() {
            ProtocolError::Invalid { line, message, .. } => (line, message),
            e => panic!("{e:?}"),
        }
    }

    /// The line of the first line that is `needle` (a table header) or, failing that, holds it.
    fn line_of(text: &str, needle: &str) -> usize {
        let lines = || text.lines();
        lines()
            .position(|l| l == needle)
            .or_else(|| lines().position(|l| l.contains(needle)))
            .unwrap()
            + 1
    }

    #[test]
    fn each_verdict_means_what_the_protocol_says() {
        let p = Protocol::load("code-change").unwrap();
        let r = rules(&p);
        assert_eq!(r.outcome("APPROVE"), GradeOutcome::Pass);
        assert_eq!(r.outcome("MINOR_ISSUES"), GradeOutcome::Cleanup);
        assert_eq!(r.outcome("REJECT"), GradeOutcome::Reject);
        assert_eq!(r.outcome("ESCALATE"), GradeOutcome::Escalate);
        assert_eq!(r.outcome("ESCALATE_CONVERGENCE"), GradeOutcome::Escalate);
        assert_eq!(r.outcome("UNGRADED"), GradeOutcome::Reject, "fail closed");
        assert_eq!(r.go_verdicts(), ["MINOR_ISSUES", "APPROVE"]);
        // Without `outcome` and `escalate`, a protocol written before them means the same.
        let old = cc()
            .replace("outcome = \"reject\"\n", "")
            .replace("outcome = \"cleanup\"\n", "")
            .replace("outcome = \"pass\"\n", "")
            .replace("escalate = \"ESCALATE\"\n", "")
            .replace("escalate_convergence = \"ESCALATE_CONVERGENCE\"\n", "");
        assert!(!old.contains("outcome =") && !old.contains("escalate ="));
        let p = Protocol::parse(&old, "old.toml").unwrap();
        let r = rules(&p);
        let means: Vec<GradeOutcome> = ["APPROVE", "MINOR_ISSUES", "REJECT", "ESCALATE"]
            .iter()
            .map(|v| r.outcome(v))
            .collect();
        assert_eq!(
            means,
            [
                GradeOutcome::Pass,
                GradeOutcome::Cleanup,
                GradeOutcome::Reject,
                GradeOutcome::Escalate
            ]
        );
        // An explicit outcome wins over the defaults.
        let strict = cc().replacen("outcome = \"cleanup\"", "outcome = \"reject\"", 1);
        let p = Protocol::parse(&strict, "p.toml").unwrap();
        assert_eq!(rules(&p).outcome("MINOR_ISSUES"), GradeOutcome::Reject);
        assert_eq!(rules(&p).go_verdicts(), ["APPROVE"]);
    }

    #[test]
    fn a_protocol_is_one_kind_and_its_task_tables_are_checked_where_they_are() {
        // Both kinds at once: refused at `[verdict]`, with the way out.
        let both = format!(
            "{}\n[verdict]\nfiles = [\"v.md\"]\npattern = '^VERDICT: (\\w+)'\ncomplete = [\"SHIP\"]\n",
            cc()
        );
        let (line, m) = error(&both);
        assert_eq!(line, line_of(&both, "[verdict]"), "{m}");
        assert!(m.contains("not both: split it into two protocols"), "{m}");
        // Grades and guards without `[tasks]`.
        let d10 = EMBEDDED[0].2;
        let graded = format!("{d10}\n[[grade]]\nverdict = \"OK\"\n");
        let (line, m) = error(&graded);
        assert_eq!(line, line_of(&graded, "[[grade]]"), "{m}");
        assert!(m.contains("`[[grade]]` needs a `[tasks]` table"), "{m}");
        let guarded = format!(
            "{d10}\n[guards]\nreject = \"NO\"\nmax_rejects = 3\nconvergence_from_attempt = 3\nconvergence_ratio = 0.9\n"
        );
        let (line, m) = error(&guarded);
        assert_eq!(line, line_of(&guarded, "[guards]"), "{m}");
        assert!(m.contains("`[guards]` needs a `[tasks]` table"), "{m}");
        // A grade cannot escalate; an escalation cannot share a grade's name.
        let text = cc().replacen("outcome = \"cleanup\"", "outcome = \"escalate\"", 1);
        let (line, m) = error(&text);
        assert_eq!(
            line,
            line_of(&text, "verdict = \"MINOR_ISSUES\"") - 1,
            "{m}"
        );
        assert!(m.contains("`outcome = \"escalate\"` is the guards'"), "{m}");
        let text = cc().replacen("escalate = \"ESCALATE\"", "escalate = \"REJECT\"", 1);
        let (line, m) = error(&text);
        assert_eq!(line, line_of(&text, "[guards]"), "{m}");
        assert!(
            m.contains("`guards.escalate` `REJECT` is also a grade's verdict"),
            "{m}"
        );
        let text = cc().replacen("outcome = \"pass\"", "outcome = \"fine\"", 1);
        let (_, m) = error(&text);
        assert!(m.contains("unknown variant `fine`"), "{m}");
        // The other task-table mistakes point at their table too.
        let text = cc().replacen("max_rejects = 3", "max_rejects = 0", 1);
        let (line, m) = error(&text);
        assert_eq!(line, line_of(&text, "[guards]"), "{m}");
        assert!(m.contains("must be at least 1"), "{m}");
        let text = cc().replacen("status = [\"FAIL\"]", "status = [\"BAD\"]", 1);
        let (line, m) = error(&text);
        assert_eq!(
            line,
            line_of(&text, "verdict = \"MINOR_ISSUES\"") - 1,
            "{m}"
        );
        assert!(m.contains("unknown status `BAD`"), "{m}");
    }
}
