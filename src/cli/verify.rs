//! `referee verify`: judge a build directory or a workspace once, as it stands, and print
//! the report in the chosen format.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::{Args, ValueEnum};

use super::{load_protocol_for, print, ProtocolArg, ReadArgs, RulesArgs, WaiversArg};
use crate::exit::ExitCode;
use crate::judge;
use crate::outputs::{self, markdown};
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
    /// format of the embedded rules, documented in docs/GUIDE.md). Refused when FILE lies inside
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
    /// One JSON object, schema `referee.verify/1` (see docs/GUIDE.md).
    Json,
    /// JUnit XML: a testcase per check instance (FAIL failure, WAITING/SKIP skipped,
    /// INCONCLUSIVE error).
    Junit,
    /// SARIF 2.1.0, for code scanning (BLOCKING error, SIGNIFICANT warning).
    Sarif,
    /// GitHub Actions workflow commands (`::error file=…,line=…::…`).
    Github,
}

/// The report of `j` in `format`; `base` is the directory as the user named it.
fn render(format: Format, p: &Protocol, j: &judge::Judgment, base: &Path) -> String {
    use crate::outputs::code_change;
    let (eval, ctx) = match j {
        judge::Judgment::Build(b) => (&b.eval, &b.ctx),
        judge::Judgment::Workspace(w) => (&w.eval, &w.ctx),
    };
    match (format, j) {
        (Format::Md, judge::Judgment::Build(b)) => markdown::report(p, &b.eval, &b.ctx),
        (Format::Md, judge::Judgment::Workspace(w)) => {
            code_change::report_md(p, &w.ws, &w.eval, &w.runs, &w.decision, &w.ctx)
        }
        (Format::Json, judge::Judgment::Workspace(w)) => {
            code_change::verify_json(p, &w.ws, &w.eval, &w.runs, &w.decision, &w.ctx)
        }
        (Format::Json, _) => outputs::json::render(p, eval, ctx),
        (format, judge::Judgment::Workspace(w)) => {
            // A veto no task verdict carries is shown as the workspace's own BLOCKING FAIL,
            // so a report made of results names it too.
            let mut eval = w.eval.clone();
            eval.results
                .extend(code_change::workspace_veto_results(&w.decision, p));
            results_format(format, p, &eval, ctx, base)
        }
        (format, _) => results_format(format, p, eval, ctx, base),
    }
}

/// The formats made of the evaluation's results.
fn results_format(
    format: Format,
    p: &Protocol,
    eval: &crate::engine::Evaluation,
    ctx: &crate::outputs::Context,
    base: &Path,
) -> String {
    match format {
        Format::Junit => outputs::junit::render(p, eval, ctx),
        Format::Sarif => outputs::sarif::render(p, eval, ctx),
        Format::Github => outputs::github::render(p, eval, ctx, base),
        Format::Md | Format::Json => outputs::json::render(p, eval, ctx),
    }
}

pub(super) fn verify(a: VerifyArgs) -> Result<ExitCode> {
    let overrides = a.rules.overrides()?;
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
    // Rules, secrets or waivers read from files may be refused when the protocol loads.
    let may_refuse = a.secrets.is_some()
        || overrides.file.is_some()
        || !overrides.set.is_empty()
        || !overrides.protect.is_empty()
        || a.waivers.waivers.is_some();
    let req = judge::Request {
        dir: &a.build_dir,
        opened: None,
        max_read_bytes: a.read.max_read_bytes,
        final_: a.final_,
        state_dir: a.state_dir.as_deref(),
        baseline: a.baseline.as_deref(),
        baseline_dir: a.baseline_dir.as_deref(),
        write: a.write,
    };
    let source = judge::Source::named(&a.protocol.protocol, may_refuse, load);
    let ((protocol, _waivers), judgment) = judge::judge(&req, source)?;
    if a.write {
        let everything = judge::Writes {
            copies: true,
            stop: true,
            only_task: None,
        };
        judge::write(&protocol, &judgment, everything)?;
    }
    print(&render(a.format, &protocol, &judgment, &a.build_dir))?;
    // Decided by the judgment, not by what was printed.
    let code = judgment.decision().exit;
    // The process ends here: freeing tens of thousands of entries one by one would only
    // cost time (a tenth of a large build's run), so leave that to the OS.
    std::mem::forget(judgment);
    std::mem::forget(protocol);
    Ok(code)
}
