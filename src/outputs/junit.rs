//! `verify --format junit`: JUnit XML for CI test reports. One `<testsuite>` per pass, one
//! `<testcase>` per check instance: PASS passes; FAIL is a `<failure>`; WAITING and SKIP are
//! `<skipped>`; INCONCLUSIVE is an `<error>` (the referee could not judge). The evidence is in
//! the message. A waived FAIL is `<skipped>` (it does not fail the run, as it does not set exit
//! 1) with its waiver in `waiver.*` properties. No timestamps: the same build gives the same XML.

use quick_junit::{NonSuccessKind, Property, Report, TestCase, TestCaseStatus, TestSuite};

use super::locate;
use super::Context;
use crate::engine::{CheckResult, Evaluation, Status};
use crate::protocol::Protocol;

/// The evaluation as a JUnit XML document.
pub fn render(p: &Protocol, eval: &Evaluation, _ctx: &Context) -> String {
    let mut report = Report::new(format!("referee {}", p.id));
    // Passes in evaluation order; a task protocol's passes are keyed by task id.
    let mut order: Vec<&str> = Vec::new();
    for r in &eval.results {
        if !order.contains(&r.pass.as_str()) {
            order.push(&r.pass);
        }
    }
    for pass in order {
        let mut suite = TestSuite::new(format!("{} pass {pass}", p.id));
        suite.add_test_cases(
            eval.results
                .iter()
                .filter(|r| r.pass == pass)
                .map(|r| case(p, r)),
        );
        report.add_test_suite(suite);
    }
    match report.to_string() {
        Ok(s) => s,
        // Serialising into memory does not fail; say so in XML rather than panic.
        Err(e) => format!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<!-- cannot write JUnit XML: {} -->\n<testsuites/>",
            e.to_string().replace("--", "- -")
        ),
    }
}

fn case(p: &Protocol, r: &CheckResult) -> TestCase {
    let message = format!(
        "{} {}: {}",
        r.severity.as_str(),
        r.status.as_str(),
        locate::evidence_line(r)
    );
    let mut status = match (r.status, &r.waiver) {
        (Status::Pass, _) => TestCaseStatus::success(),
        (Status::Fail, Some(w)) => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(format!(
                "waived {message} (waiver: {}, approved by {}, expires {})",
                w.reason, w.approved_by, w.expires
            ));
            s
        }
        (Status::Fail, None) => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Failure);
            s.set_message(message).set_type(r.severity.as_str());
            s
        }
        (Status::Inconclusive, _) => {
            let mut s = TestCaseStatus::non_success(NonSuccessKind::Error);
            s.set_message(message).set_type("INCONCLUSIVE");
            s
        }
        (Status::Waiting | Status::Skip, _) => {
            let mut s = TestCaseStatus::skipped();
            s.set_message(message);
            s
        }
    };
    if !r.evidence.details.is_empty() && r.status != Status::Pass {
        status.set_description(r.evidence.details.join("\n"));
    }
    let mut case = TestCase::new(format!("{}: {}", r.check, r.title), status);
    case.set_classname(format!("{}.pass-{}", p.id, r.pass));
    case.add_properties([
        Property::new("status", r.status.as_str()),
        Property::new("severity", r.severity.as_str()),
    ]);
    if let Some(place) = locate::place(r) {
        case.add_property(Property::new("file", place.path));
        if let Some(line) = place.line {
            case.add_property(Property::new("line", line.to_string()));
        }
    }
    if let Some(w) = &r.waiver {
        case.add_properties([
            Property::new("waiver.reason", w.reason.as_str()),
            Property::new("waiver.approved_by", w.approved_by.as_str()),
            Property::new("waiver.expires", w.expires.as_str()),
            Property::new("waiver.at", w.at.as_str()),
        ]);
    }
    case
}
