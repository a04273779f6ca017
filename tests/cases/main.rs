//! The data-driven tests: one named trial per fixture case, so a failure names its case and
//! `cargo test --test cases -- obs-27` runs a subset.
//!
//! - `verify::CASE`: `referee verify` on the case's build reports what the case expects
//!   (`verify.rs`).
//! - `agree::CASE`: `verify --final` and a `watch` judged as final agree on every status
//!   (`agree.rs`).
//! - `tables::*`: the named builds (`clean`, `clean-refine`, `in-progress`) give their full,
//!   documented status tables; `fixtures_materialise`: every build and case file materialises.
//! - `materialise` (ignored; a tool): `REFEREE_MATERIALISE=cases/NAME:DIR cargo test --test cases
//!   -- --ignored materialise` writes a case's build directory out for a look.
//!
//! The harness is `libtest-mimic`, so the usual filters and flags work (`--exact`, `--skip`,
//! `--list`, `--test-threads`).

use std::path::PathBuf;

use libtest_mimic::{Arguments, Failed, Trial};

#[allow(dead_code, reason = "shared with the `it` tests, which use more of it")]
#[path = "../it/builder.rs"]
mod builder;

#[allow(dead_code, reason = "shared with the `it` tests, which use more of it")]
#[path = "../util/mod.rs"]
mod util;

mod agree;
mod case;
mod cc;
mod verify;

fn main() {
    let args = Arguments::from_args();
    // libtest-mimic does not capture a trial's output: failures carry the context instead.
    util::echo_runs(false);
    let mut trials = vec![
        Trial::test("tables::clean_build_passes_everything", || {
            verify::clean_build_passes_everything();
            Ok(())
        }),
        Trial::test("tables::clean_refine_build_passes_everything", || {
            verify::clean_refine_build_passes_everything();
            Ok(())
        }),
        Trial::test("tables::in_progress_build_waits", || {
            verify::in_progress_build_waits();
            Ok(())
        }),
        Trial::test("fixtures_materialise", || {
            verify::fixtures_materialise();
            Ok(())
        }),
        Trial::test("agree::excluded_cases_exist", || {
            agree::excluded_cases_exist().map_err(Failed::from)
        }),
        Trial::test("materialise", || {
            verify::materialise();
            Ok(())
        })
        .with_ignored_flag(true),
    ];
    let files = case::files();
    assert!(!files.is_empty(), "no case files under fixtures/cases");
    for path in files {
        let name = case::name(&path);
        trials.push(case_trial(
            format!("verify::{name}"),
            path.clone(),
            verify::check,
        ));
        trials.push(
            case_trial(format!("agree::{name}"), path, agree::check)
                .with_ignored_flag(agree::excluded(&name).is_some()),
        );
    }
    for path in cc::files() {
        let name = case::name(&path);
        trials.push(case_trial(format!("cc::{name}"), path, cc::check));
    }
    libtest_mimic::run(&args, trials).exit();
}

fn case_trial(
    name: String,
    path: PathBuf,
    check: fn(&std::path::Path) -> Result<(), String>,
) -> Trial {
    Trial::test(name, move || check(&path).map_err(Failed::from))
}
