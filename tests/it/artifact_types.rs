//! Only regular files are artifacts (issue 16 §2): a name that is not a file never
//! counts as the file. Each attack is made for real: a directory where the revised brief belongs
//! (OBS-18), a dangling symlink for a cold look (OBS-11), a FIFO for the REFINE gate results
//! (OBS-09) or for the gate results (OBS-24). Against `verify --final` (the check FAILs naming the path and what is there, exit
//! 1, a FAIL headline) and a live `watch` that saw the honest file first (the STOP names the
//! check, the path and what is there; `status` 1; the final exit 1; the report's headline FAIL).

use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::util::Output;
use crate::watch::{exit_code, read, run, status, Watch, STOP, WAIT};

/// One attack: a build where the artifact is honest, and what replaces it.
struct Attack {
    /// A build document (`base = …` plus edits) in which `check` PASSes or waits.
    doc: &'static str,
    check: &'static str,
    /// The artifact's path, relative to the build directory.
    path: &'static str,
    /// What the referee must say is there instead.
    what: &'static str,
    /// Puts the impostor at `path`.
    make: fn(&Path),
}

const BV_FAILED: &str = "[[field]]\nname = \"BV-04\"\nvalue = \"FAIL\"\n\n\
[[field]]\nname = \"REVISION_CYCLES\"\nvalue = \"1\"\n\n\
[[file]]\npath = \"p1-execution-brief-rev1.md\"\nmtime = \"+14m40s\"\n\
from = \"content/execution-brief.md\"\n";

fn directory(path: &Path) {
    fs::remove_file(path).expect("rm");
    fs::create_dir(path).expect("mkdir");
}

fn dangling_symlink(path: &Path) {
    fs::remove_file(path).expect("rm");
    std::os::unix::fs::symlink("cold-look-gone.png", path).expect("symlink");
}

fn fifo(path: &Path) {
    fs::remove_file(path).expect("rm");
    let c = std::ffi::CString::new(path.to_str().expect("utf-8")).expect("no NUL");
    // SAFETY: a valid C string; mkfifo touches nothing else.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0, "mkfifo");
}

fn revised_brief_is_a_directory() -> Attack {
    Attack {
        doc: "base = \"audit-done\"\n",
        check: "OBS-18",
        path: "p1-execution-brief-rev1.md",
        what: "directory",
        make: directory,
    }
}

fn cold_look_is_a_dangling_symlink() -> Attack {
    Attack {
        doc: "base = \"audit-done\"\n",
        check: "OBS-11",
        path: "screenshots/1440/cold-look.png",
        what: "dangling symlink",
        make: dangling_symlink,
    }
}

fn refine_gate_results_are_a_fifo() -> Attack {
    Attack {
        // REFINE under way: its auditors have reported, its weaver has not.
        doc: "base = \"clean-refine\"\n[[remove]]\npath = \"p3c-weaver-refine.md\"\n",
        check: "OBS-09",
        path: "p3a-gate-results-refine.json",
        what: "fifo",
        make: fifo,
    }
}

fn gate_results_are_a_fifo() -> Attack {
    Attack {
        doc: "base = \"audit-done\"\n",
        check: "OBS-24",
        path: "p3a-gate-results.json",
        what: "fifo",
        make: fifo,
    }
}

/// The build document of an attack: its base, with a failed BV gate and its revision for OBS-18.
fn doc(a: &Attack) -> String {
    match a.check {
        "OBS-18" => format!("{}{BV_FAILED}", a.doc),
        _ => a.doc.to_string(),
    }
}

/// The result of `check` (first instance) from `verify --final --format json`.
fn verify_result(dir: &Path, check: &str) -> Value {
    let d = dir.to_str().expect("utf-8");
    let Output {
        stdout: out,
        stderr: err,
        ..
    } = run(&["verify", d, "--final", "--format", "json"]);
    let doc: Value =
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("verify json: {e}\n{err}"));
    doc["results"]
        .as_array()
        .expect("results")
        .iter()
        .find(|r| r["check"] == check)
        .unwrap_or_else(|| panic!("no {check} in {out}"))
        .clone()
}

fn headline(text: &str) -> &str {
    text.lines()
        .find(|l| l.starts_with("**"))
        .unwrap_or_default()
}

fn against_verify(a: &Attack) {
    let (_tmp, dir) = crate::formats::build(&doc(a));
    let honest = verify_result(&dir, a.check);
    assert_eq!(honest["status"], "PASS", "{honest:#}");
    (a.make)(&dir.join(a.path));
    let r = verify_result(&dir, a.check);
    assert_eq!(
        r["status"], "FAIL",
        "present and wrong is not present: {r:#}"
    );
    let evidence = r["evidence"].to_string();
    assert!(evidence.contains(a.path), "{r:#}");
    assert!(evidence.contains(a.what), "{r:#}");
    let d = dir.to_str().expect("utf-8");
    let Output {
        code,
        stdout: out,
        stderr: err,
        ..
    } = run(&["verify", d, "--final"]);
    assert_eq!(code, 1, "{err}\n{out}");
    assert!(headline(&out).starts_with("**FAIL: "), "{out}");
}

fn against_watch(a: &Attack) {
    let (tmp, dir) = crate::formats::build(&doc(a));
    let mut w = Watch::start(&dir, tmp.path(), &[]);
    w.until("the referee is live and content", || {
        status(&dir, true).code == 0
    });
    (a.make)(&dir.join(a.path));
    w.until("the STOP names the impostor", || {
        let stop = read(&dir.join(STOP));
        stop.contains(a.check) && stop.contains(a.path) && stop.contains(a.what)
    });
    assert_eq!(status(&dir, true).code, 1, "{}", w.output());
    w.signal(libc::SIGTERM);
    assert_eq!(exit_code(w.wait(WAIT)), 1, "{}", w.output());
    let report = read(&dir.join("OBSERVER-REPORT.md"));
    assert!(headline(&report).starts_with("**FAIL: "), "{report}");
}

#[test]
fn a_directory_for_the_revised_brief_fails_verify() {
    against_verify(&revised_brief_is_a_directory());
}

#[test]
fn a_directory_for_the_revised_brief_stops_watch() {
    against_watch(&revised_brief_is_a_directory());
}

#[test]
fn a_dangling_symlink_for_a_cold_look_fails_verify() {
    against_verify(&cold_look_is_a_dangling_symlink());
}

#[test]
fn a_dangling_symlink_for_a_cold_look_stops_watch() {
    against_watch(&cold_look_is_a_dangling_symlink());
}

#[test]
fn a_fifo_for_the_refine_gate_results_fails_verify() {
    against_verify(&refine_gate_results_are_a_fifo());
}

#[test]
fn a_fifo_for_the_refine_gate_results_stops_watch() {
    against_watch(&refine_gate_results_are_a_fifo());
}

#[test]
fn a_fifo_for_the_gate_results_fails_verify() {
    against_verify(&gate_results_are_a_fifo());
}

#[test]
fn a_fifo_for_the_gate_results_stops_watch() {
    against_watch(&gate_results_are_a_fifo());
}
