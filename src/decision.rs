//! What a judgment decided, before anything is written: whether a STOP stands and why, the exit
//! code, and for a workspace each task's verdict and the veto (every protected path that
//! differs from the baseline, with what happened to it, whatever the records say). Both subjects
//! have the same shape: a build directory's STOP is its unwaived BLOCKING failures; a
//! workspace's is its veto and its escalations, and its exit code also counts the attempts that
//! were not let through.
//!
//! This module decides; it renders nothing. `outputs` renders a [`Decision`] in every format
//! (the report, JSON, JUnit, SARIF, GitHub, the STOP file, the verdict files), and never
//! decides by whether it had something to say.

use serde::Serialize;

use crate::checks::change::{protected_paths, Happened};
use crate::engine::{CheckKey, Evaluation, Status};
use crate::exit::ExitCode;
use crate::protocol::{GradeOutcome, Protocol};
use crate::task_verdict::TaskVerdict;
use crate::workspace::Workspace;

/// What was decided.
#[derive(Debug, Clone)]
pub struct Decision {
    /// A workspace: the verdict of each judged task attempt (none for a build directory).
    pub verdicts: Vec<TaskVerdict>,
    /// A workspace: the protected paths that differ from the baseline, by veto check. Empty
    /// when none differs, without a baseline, and for a build directory.
    pub veto: Vec<Veto>,
    /// Why a STOP stands, in the order its blocks are shown; empty: no STOP.
    pub stop: Vec<Cause>,
    /// `Ok`, or `Violation` when the answer is "do not go on".
    pub exit: ExitCode,
}

/// One veto check (`veto = true`, CC-01 in `code-change`) and the protected paths it finds
/// changed in the workspace.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Veto {
    pub check: String,
    pub paths: Vec<Protected>,
}

/// A protected path that differs from the baseline, and what happened to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Protected {
    pub path: String,
    #[serde(flatten)]
    pub happened: Happened,
}

/// Why a STOP stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Cause {
    /// An unwaived BLOCKING check fails or cannot be verified (a build directory's STOP).
    Blocking(CheckKey),
    /// A protected path differs from the baseline. `task`: the verdict whose veto check
    /// FAILs it (its index in [`Decision::verdicts`]); `None`: no verdict carries it (no record
    /// pending, a record deleted or set to another status), and it stands for the workspace.
    Veto { check: String, task: Option<usize> },
    /// A loop guard escalated a task's attempt (its index in [`Decision::verdicts`]).
    Escalated(usize),
}

impl Decision {
    /// Whether a STOP stands.
    pub fn stops(&self) -> bool {
        !self.stop.is_empty()
    }

    /// Whether the answer is "do not go on" (exit 1).
    pub fn violation(&self) -> bool {
        self.exit == ExitCode::Violation
    }

    /// The veto's paths, every check's, in order (a path two checks protect once).
    pub fn vetoed_paths(&self) -> Vec<&Protected> {
        let mut out: Vec<&Protected> = Vec::new();
        for p in self.veto.iter().flat_map(|v| &v.paths) {
            if !out.iter().any(|q| q.path == p.path) {
                out.push(p);
            }
        }
        out
    }
}

/// A build directory's decision: a STOP while an unwaived BLOCKING check fails or cannot be
/// verified (when due), and then exit 1.
pub fn build(eval: &Evaluation) -> Decision {
    let stop: Vec<Cause> = eval.stops().map(|r| Cause::Blocking(r.key())).collect();
    Decision {
        verdicts: Vec::new(),
        veto: Vec::new(),
        exit: exit(!stop.is_empty()),
        stop,
    }
}

/// A workspace's decision. The STOP stands while a protected path differs from the baseline
/// (whatever the records say: none, deleted, or set to another status) or an attempt is
/// escalated; a veto a verdict carries is shown as that verdict's, and one a waiver accepted
/// for a task's attempt (a human's decision) is not raised again as the workspace's. Exit 1
/// when a STOP stands, a BLOCKING check fails unwaived, or an attempt's verdict does not let it
/// through.
pub fn workspace(
    protocol: &Protocol,
    ws: &Workspace,
    eval: &Evaluation,
    verdicts: Vec<TaskVerdict>,
) -> Decision {
    let veto = veto(protocol, ws);
    let carried = verdicts.iter().any(|v| {
        v.results
            .iter()
            .any(|r| r.status == Status::Fail && protocol.is_veto(&r.check))
    });
    let mut stop: Vec<Cause> = Vec::new();
    if !carried {
        stop.extend(veto.iter().map(|v| Cause::Veto {
            check: v.check.clone(),
            task: None,
        }));
    }
    for (i, v) in verdicts.iter().enumerate() {
        for r in v.results.iter().filter(|r| {
            r.status == Status::Fail && protocol.is_veto(&r.check) && r.waiver.is_none()
        }) {
            stop.push(Cause::Veto {
                check: r.check.clone(),
                task: Some(i),
            });
        }
        if v.outcome == GradeOutcome::Escalate {
            stop.push(Cause::Escalated(i));
        }
    }
    let violation = !stop.is_empty()
        || eval.stops().next().is_some()
        || verdicts.iter().any(|v| !v.outcome.lets_through());
    Decision {
        verdicts,
        veto,
        stop,
        exit: exit(violation),
    }
}

fn exit(violation: bool) -> ExitCode {
    if violation {
        ExitCode::Violation
    } else {
        ExitCode::Ok
    }
}

/// Each veto check of the protocol that protects paths, with the protected paths that differ
/// from the baseline in `ws` (checks that find none are left out).
pub fn veto(protocol: &Protocol, ws: &Workspace) -> Vec<Veto> {
    crate::task_verdict::veto_checks(protocol)
        .into_iter()
        .filter_map(|(check, globs)| {
            let paths: Vec<Protected> = protected_paths(ws, &globs)
                .into_iter()
                .map(|(path, happened)| Protected { path, happened })
                .collect();
            (!paths.is_empty()).then_some(Veto { check, paths })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Applied, CheckResult, Evidence};
    use crate::protocol::Severity;
    use crate::workspace::BaselineSpec;
    use std::os::unix::fs::PermissionsExt;
    use std::path::Path;

    fn code_change() -> Protocol {
        Protocol::load("code-change").unwrap()
    }

    /// A workspace beside its pristine copy, both holding the same protected files.
    fn pair() -> (tempfile::TempDir, tempfile::TempDir) {
        let (ws, base) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        for d in [ws.path(), base.path()] {
            for f in [
                "orchestrator.py",
                "roles.py",
                "groq_code_extractor.py",
                "surgical_edit_extractor.py",
                "app.py",
            ] {
                std::fs::write(d.join(f), format!("# {f}\n")).unwrap();
            }
            std::fs::write(d.join(".gitignore"), "build/\n").unwrap();
        }
        (ws, base)
    }

    fn open(ws: &Path, base: &Path) -> Workspace {
        let spec = BaselineSpec::Dir(base.to_path_buf());
        Workspace::open(ws, &spec, 1 << 20).unwrap()
    }

    fn verdict(outcome: GradeOutcome, veto: Option<Option<Applied>>) -> TaskVerdict {
        let results = veto
            .map(|waiver| CheckResult {
                pass: "t1".into(),
                check: "CC-01".into(),
                title: "No protected file touched".into(),
                severity: Severity::Blocking,
                status: Status::Fail,
                due: true,
                evidence: Evidence {
                    expected: "no protected path".into(),
                    observed: "1 finding(s)".into(),
                    details: vec!["protected_file_modified: orchestrator.py (modified)".into()],
                    files: Vec::new(),
                },
                waiver,
                stands: false,
            })
            .into_iter()
            .collect();
        TaskVerdict {
            task_id: "t1".into(),
            attempt: Some(1),
            verdict: format!("{outcome:?}"),
            outcome,
            graded: "REJECT".into(),
            reasons: Vec::new(),
            results,
            restore: Vec::new(),
            cleanup_task: None,
            diff_similarity: None,
            escalation: None,
            protected_diffs: Vec::new(),
            record: ".tasks/t1.json".into(),
            judged_files: Default::default(),
            diff: None,
            record_hash: None,
            replay: false,
        }
    }

    /// A git work tree holding the protected files, committed (the baseline is its `HEAD`).
    fn committed() -> tempfile::TempDir {
        let (ws, _) = pair();
        for args in [
            &["init", "-q"][..],
            &["add", "-A"],
            &["commit", "-q", "-m", "baseline"],
        ] {
            let ok = std::process::Command::new("git")
                .arg("-C")
                .arg(ws.path())
                .args([
                    "-c",
                    "user.name=referee",
                    "-c",
                    "user.email=r@example.invalid",
                ])
                .args(args)
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .status()
                .unwrap()
                .success();
            assert!(ok, "git {args:?}");
        }
        ws
    }

    /// With no record at all, every protected path that differs is decided, with what
    /// happened to it: modified, removed, its mode changed, a package in a protected module's
    /// place, a link to a protected file, a protected name under an ignored folder. The STOP
    /// stands for the workspace and the answer is exit 1; the STOP file names each.
    #[test]
    fn the_veto_names_every_protected_path_and_what_happened_whatever_the_records() {
        let w = committed();
        let root = w.path();
        std::fs::write(root.join("orchestrator.py"), "run(evil)\n").unwrap();
        std::fs::remove_file(root.join("groq_code_extractor.py")).unwrap();
        let exec = std::fs::Permissions::from_mode(0o755);
        std::fs::set_permissions(root.join("surgical_edit_extractor.py"), exec).unwrap();
        std::fs::create_dir(root.join("roles")).unwrap();
        std::fs::write(root.join("roles/__init__.py"), "admin = True\n").unwrap();
        std::os::unix::fs::symlink("roles.py", root.join("alias.py")).unwrap();
        std::fs::create_dir(root.join("build")).unwrap();
        std::fs::write(root.join("build/safety_net.py"), "off = True\n").unwrap();
        std::fs::write(root.join("app.py"), "# changed, not protected\n").unwrap();
        let ws = Workspace::open(root, &BaselineSpec::Auto, 1 << 20).unwrap();
        let p = code_change();
        let d = workspace(&p, &ws, &Evaluation::default(), Vec::new());

        let happened: Vec<(&str, &Happened)> = d
            .vetoed_paths()
            .into_iter()
            .map(|c| (c.path.as_str(), &c.happened))
            .collect();
        let want = [
            (
                "alias.py",
                Happened::Linked {
                    to: "roles.py".into(),
                },
            ),
            ("build/safety_net.py", Happened::Hidden),
            ("groq_code_extractor.py", Happened::Removed),
            ("orchestrator.py", Happened::Modified),
            (
                "roles/__init__.py",
                Happened::Shadowed {
                    of: "**/roles.py".into(),
                },
            ),
        ];
        for (path, how) in &want {
            assert!(happened.contains(&(path, how)), "{path}: {happened:?}");
        }
        let mode = happened
            .iter()
            .find(|(p, _)| *p == "surgical_edit_extractor.py")
            .map(|(_, h)| h);
        assert!(matches!(mode, Some(Happened::Mode { .. })), "{happened:?}");
        assert!(!happened.iter().any(|(p, _)| *p == "app.py"));
        assert_eq!(d.veto.len(), 1);
        assert_eq!(d.veto[0].check, "CC-01");
        assert_eq!(
            d.stop,
            vec![Cause::Veto {
                check: "CC-01".into(),
                task: None
            }]
        );
        assert_eq!(d.exit, ExitCode::Violation);

        let stop = crate::outputs::code_change::stop_md(&p, &ws, &d);
        assert!(stop.contains("**Check:** CC-01"), "{stop}");
        for c in d.vetoed_paths() {
            assert!(
                stop.contains(&crate::outputs::escape::text(&format!(
                    "{} ({})",
                    c.path,
                    c.happened.describe()
                ))),
                "{} in {stop}",
                c.path
            );
        }
        assert!(stop.contains("added, a link to `roles.py`"), "{stop}");
        assert!(stop.contains("added, shadows `**/roles.py`"), "{stop}");
        assert!(stop.contains("added, hidden by an ignore rule"), "{stop}");

        // Put back: nothing to veto, no STOP, exit 0.
        let clean = committed();
        let ws = Workspace::open(clean.path(), &BaselineSpec::Auto, 1 << 20).unwrap();
        let d = workspace(&p, &ws, &Evaluation::default(), Vec::new());
        assert!(d.veto.is_empty() && !d.stops() && !d.violation(), "{d:?}");
    }

    /// A verdict that carries the veto shows it as its own; one a waiver accepted raises no
    /// STOP, neither its own nor the workspace's, yet its REJECT still answers exit 1. An
    /// escalation is a STOP; a cleanup grade lets the attempt through.
    #[test]
    fn a_verdict_carries_the_veto_a_waiver_accepts_it_and_an_escalation_stops() {
        let (w, base) = pair();
        std::fs::write(w.path().join("orchestrator.py"), "run(evil)\n").unwrap();
        let ws = open(w.path(), base.path());
        let p = code_change();
        let none = Evaluation::default();

        let d = workspace(
            &p,
            &ws,
            &none,
            vec![verdict(GradeOutcome::Reject, Some(None))],
        );
        let carried = Cause::Veto {
            check: "CC-01".into(),
            task: Some(0),
        };
        assert_eq!(d.stop, vec![carried]);
        assert_eq!(
            d.veto[0].paths[0].path, "orchestrator.py",
            "decided all the same"
        );
        let stop = crate::outputs::code_change::stop_md(&p, &ws, &d);
        assert!(stop.contains("**Phase:** task `t1` attempt 1"), "{stop}");
        assert!(!stop.contains("whatever the task records say"), "{stop}");

        let waiver = Applied {
            pass: None,
            reason: "a human restored it by hand".into(),
            approved_by: "lead".into(),
            expires: "2999-01-01".into(),
            at: "waivers.toml:1".into(),
        };
        let d = workspace(
            &p,
            &ws,
            &none,
            vec![verdict(GradeOutcome::Reject, Some(Some(waiver)))],
        );
        assert!(!d.stops(), "{d:?}");
        assert_eq!(d.exit, ExitCode::Violation, "a REJECT is not let through");

        let d = workspace(&p, &ws, &none, vec![verdict(GradeOutcome::Escalate, None)]);
        assert_eq!(
            d.stop,
            vec![
                Cause::Veto {
                    check: "CC-01".into(),
                    task: None
                },
                Cause::Escalated(0)
            ]
        );

        let (clean, base) = pair();
        let ws = open(clean.path(), base.path());
        let d = workspace(&p, &ws, &none, vec![verdict(GradeOutcome::Cleanup, None)]);
        assert!(!d.stops() && !d.violation(), "{d:?}");
        let d = workspace(&p, &ws, &none, vec![verdict(GradeOutcome::Reject, None)]);
        assert!(!d.stops() && d.violation(), "{d:?}");
    }

    /// A build directory: a STOP and exit 1 for each unwaived BLOCKING failure, a
    /// SIGNIFICANT one decides nothing.
    #[test]
    fn a_build_stops_on_its_unwaived_blocking_failures() {
        let result = |check: &str, severity: Severity| CheckResult {
            pass: "2".into(),
            check: check.into(),
            title: String::new(),
            severity,
            status: Status::Fail,
            due: true,
            evidence: Evidence {
                expected: String::new(),
                observed: String::new(),
                details: Vec::new(),
                files: Vec::new(),
            },
            waiver: None,
            stands: false,
        };
        let mut eval = Evaluation::default();
        assert!(!build(&eval).stops() && !build(&eval).violation());
        eval.results.push(result("OBS-08", Severity::Significant));
        assert!(!build(&eval).violation());
        eval.results.push(result("OBS-27", Severity::Blocking));
        let d = build(&eval);
        assert_eq!(d.stop, vec![Cause::Blocking(CheckKey::new("2", "OBS-27"))]);
        assert_eq!(d.exit, ExitCode::Violation);
    }
}
