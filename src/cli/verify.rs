//! `referee verify`: judge a build directory or a workspace once, as it stands, and print
//! the report in the chosen format.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::{Args, ValueEnum};

use super::{load_protocol_for, print, ProtocolArg, ReadArgs, RulesArgs, WaiversArg};
use crate::engine;
use crate::exit::ExitCode;
use crate::judge;
use crate::outputs::{self, markdown, Context};
use crate::protocol::Protocol;

#[derive(Args, Debug)]
pub(super) struct VerifyArgs {
    /// The pipeline's build output directory.
    build_dir: PathBuf,
    #[command(flatten)]
    protocol: ProtocolArg,
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Md)]
    format: Format,
    /// Treat every check as due (and every non-optional pass as run): judge a finished run.
    #[arg(long = "final")]
    final_: bool,
    /// Also write OBSERVER-PASS-N.md for each pass that ran and OBSERVER-REPORT.md into
    /// BUILD_DIR (atomically). Without it, verify writes nothing. It never writes
    /// OBSERVER-STOP.md: only the live `watch` daemon owns the STOP file, and while one watches
    /// BUILD_DIR, --write is refused (exit 2).
    #[arg(long)]
    write: bool,
    #[command(flatten)]
    read: ReadArgs,
    #[command(flatten)]
    waivers: WaiversArg,
    /// Code-change protocol: the git revision the workspace is measured against (default:
    /// `HEAD` in a git work tree).
    #[arg(long, value_name = "REV", conflicts_with = "baseline_dir")]
    baseline: Option<String>,
    /// Code-change protocol: a pristine copy of the workspace to measure against (for a
    /// workspace that is not a git work tree).
    #[arg(long, value_name = "DIR")]
    baseline_dir: Option<PathBuf>,
    /// Code-change protocol: CC-07's secret rules from FILE instead of the protocol's (in the
    /// format of the embedded rules, documented in the README). Refused when FILE lies inside
    /// the watched directory: the worker could edit it.
    #[arg(long, value_name = "FILE")]
    secrets: Option<PathBuf>,
    #[command(flatten)]
    rules: RulesArgs,
    /// The referee's own memory (event log, heartbeat, STOP, verdicts, kept attempts), kept
    /// out of the watched directory's reach (created 0700; a symlink, a directory of another
    /// user or one others can write is refused). Default:
    /// `$XDG_STATE_HOME/referee/<name>-<hash>` (else `~/.local/state/referee/…`), named from the
    /// directory's canonical path and identity.
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// The OBSERVER-REPORT.md format.
    Md,
    /// One JSON object, schema `referee.verify/1` (see README).
    Json,
    /// JUnit XML: a testcase per check instance (FAIL failure, WAITING/SKIP skipped,
    /// INCONCLUSIVE error).
    Junit,
    /// SARIF 2.1.0, for code scanning (BLOCKING error, SIGNIFICANT warning).
    Sarif,
    /// GitHub Actions workflow commands (`::error file=…,line=…::…`).
    Github,
}

/// The report in `format`; `base` is the build directory as the user named it.
fn render(
    format: Format,
    p: &Protocol,
    eval: &engine::Evaluation,
    ctx: &Context,
    base: &Path,
    md: impl FnOnce() -> String,
) -> String {
    match format {
        Format::Md => md(),
        Format::Json => outputs::json::render(p, eval, ctx),
        Format::Junit => outputs::junit::render(p, eval, ctx),
        Format::Sarif => outputs::sarif::render(p, eval, ctx),
        Format::Github => outputs::github::render(p, eval, ctx, base),
    }
}

pub(super) fn verify(a: VerifyArgs) -> Result<ExitCode> {
    let overrides = a.rules.overrides()?;
    // A build directory judged by an embedded build protocol (D10) is listed while the
    // protocol loads: the walk reads nothing and writes nothing, so a load that fails has
    // done no harm (its walk ends with the process).
    let listing = Protocol::embedded_lists_build(&a.protocol.protocol)
        .then(|| crate::artifacts::Listing::start(&a.build_dir));
    let load = || {
        let protocol = load_protocol_for(
            &a.protocol.protocol,
            a.secrets.as_deref(),
            &overrides,
            &a.build_dir,
        )?;
        let waivers = a.waivers.load(&protocol, &a.build_dir)?;
        Ok((protocol, waivers))
    };
    let req = judge::Request {
        dir: &a.build_dir,
        max_read_bytes: a.read.max_read_bytes,
        final_: a.final_,
        state_dir: a.state_dir.as_deref(),
        baseline: a.baseline.as_deref(),
        baseline_dir: a.baseline_dir.as_deref(),
        write: a.write,
    };
    // An embedded protocol of task records, as it is (no rule, secret or waiver file that
    // could be refused, nothing to write): loaded while the workspace is opened, not before
    // (it cannot fail, so nothing is done that a refused load would not have done).
    // Otherwise the protocol first: a run it refuses touches nothing.
    let as_is = a.secrets.is_none()
        && overrides.file.is_none()
        && overrides.set.is_empty()
        && overrides.protect.is_empty()
        && a.waivers.waivers.is_none()
        && !a.write;
    let ((protocol, _waivers), judgment) =
        if as_is && Protocol::embedded_judges_records(&a.protocol.protocol) {
            judge::judge_loading(&req, load)?
        } else {
            // Compiling patterns beside the judging cost a small build about as much as it
            // saved (threads are not free on a shared 2-core machine); the large-report scans
            // split across cores instead.
            let (protocol, waivers) = load()?;
            let judgment = judge::judge_listed(&req, &protocol, waivers.as_ref(), listing)?;
            ((protocol, waivers), judgment)
        };
    let text = match &judgment {
        judge::Judgment::Build(b) => {
            render(a.format, &protocol, &b.eval, &b.ctx, &a.build_dir, || {
                markdown::report(&protocol, &b.eval, &b.ctx)
            })
        }
        judge::Judgment::Workspace(w) => {
            use crate::outputs::code_change;
            match a.format {
                Format::Json => code_change::verify_json(
                    &protocol,
                    &w.ws,
                    &w.eval,
                    &w.runs,
                    &w.decision,
                    &w.ctx,
                ),
                f => render(f, &protocol, &w.eval, &w.ctx, &a.build_dir, || {
                    code_change::report_md(&protocol, &w.ws, &w.eval, &w.runs, &w.decision, &w.ctx)
                }),
            }
        }
    };
    print(&text)?;
    // Decided by the judgment, not by what was printed.
    let code = judgment.decision().exit;
    // The process ends here: freeing tens of thousands of entries one by one would only
    // cost time (a tenth of a large build's run), so leave that to the OS.
    std::mem::forget(judgment);
    std::mem::forget(protocol);
    Ok(code)
}
