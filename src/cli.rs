//! The command line: clap types, and turning them into plain configuration for the rest of
//! the crate. Each subcommand's handler is a few lines that call into the library; clap
//! types never leave this module.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context as _, Result};
use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::artifacts::{Limits, Snapshot};
use crate::engine::{self, Options};
use crate::exit::ExitCode;
use crate::outputs::{self, markdown, Context};
use crate::protocol::{self, Protocol};

/// An independent referee for AI build pipelines: binary PASS/FAIL checks on the artifacts
/// in a build directory, a STOP file the orchestrator obeys, and a report for humans.
#[derive(Parser, Debug)]
#[command(name = "referee", version, about, long_about = None)]
#[command(
    after_help = "Exit codes: 0 no unresolved BLOCKING failure; 1 a BLOCKING failure \
(or, for `status`, STOP present); 2 the referee could not run; 3 `status --require-live` \
found no live referee."
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Audit a build directory once, as it stands, and print the report.
    Verify(VerifyArgs),
    /// Inspect and validate protocols.
    #[command(subcommand)]
    Protocol(ProtocolCommand),
}

#[derive(Args, Debug)]
struct ProtocolArg {
    /// An embedded protocol id (`d10`) or the path of a protocol file.
    #[arg(long, value_name = "ID|FILE", default_value = protocol::DEFAULT_ID)]
    protocol: String,
}

#[derive(Args, Debug)]
struct ReadArgs {
    /// Files larger than this are judged INCONCLUSIVE, never read.
    #[arg(long, value_name = "BYTES", default_value_t = crate::artifacts::DEFAULT_MAX_READ_BYTES)]
    max_read_bytes: u64,
}

#[derive(Args, Debug)]
struct VerifyArgs {
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
    /// OBSERVER-STOP.md: only the live `watch` daemon owns the STOP file.
    #[arg(long)]
    write: bool,
    #[command(flatten)]
    read: ReadArgs,
}

#[derive(ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
enum Format {
    /// The OBSERVER-REPORT.md format.
    Md,
    /// One JSON object, schema `referee.verify/1` (see README).
    Json,
}

#[derive(Subcommand, Debug)]
enum ProtocolCommand {
    /// List the embedded protocols.
    List,
    /// Print a protocol's source (embedded id or file).
    Show {
        #[arg(value_name = "ID|FILE", default_value = protocol::DEFAULT_ID)]
        protocol: String,
    },
    /// Validate a protocol file; errors point at file:line:column.
    Check {
        #[arg(value_name = "FILE")]
        file: PathBuf,
    },
    /// Explain one check: what it reads, when it is due, what makes it PASS/FAIL/WAIT.
    Explain {
        #[arg(value_name = "CHECK-ID")]
        check: String,
        #[command(flatten)]
        protocol: ProtocolArg,
    },
}

/// Parses the arguments and runs the command.
pub fn run<I: IntoIterator<Item = OsString>>(args: I) -> Result<ExitCode> {
    let cli = match Cli::try_parse_from(args) {
        Ok(cli) => cli,
        Err(e) => {
            let code = if e.use_stderr() {
                ExitCode::Error
            } else {
                ExitCode::Ok
            };
            let _ = e.print();
            return Ok(code);
        }
    };
    match cli.command {
        Command::Verify(a) => verify(a),
        Command::Protocol(p) => protocol_command(p),
    }
}

fn load_protocol(spec: &str) -> Result<Protocol> {
    Ok(Protocol::load(spec)?)
}

fn scan(dir: &Path, read: &ReadArgs) -> Result<Snapshot> {
    let limits = Limits {
        max_read_bytes: read.max_read_bytes,
    };
    Snapshot::scan(dir, limits)
        .with_context(|| format!("cannot read build directory `{}`", dir.display()))
}

fn verify(a: VerifyArgs) -> Result<ExitCode> {
    let protocol = load_protocol(&a.protocol.protocol)?;
    let snap = scan(&a.build_dir, &a.read)?;
    let now = chrono::Utc::now();
    let eval = engine::evaluate(
        &protocol,
        &snap,
        &Options {
            final_: a.final_,
            now: Some(now),
            ..Options::default()
        },
    );
    let ctx = Context {
        build_dir: snap.root().to_path_buf(),
        started: Some(now),
        written: Some(now),
        ..Context::default()
    };
    if a.write {
        for pass in eval.passes.iter().filter(|p| p.ran) {
            let text = markdown::pass_file(&protocol, &eval, &pass.id, &ctx);
            outputs::write_atomic(&a.build_dir, &outputs::pass_file(&pass.id), &text)
                .with_context(|| format!("cannot write {}", outputs::pass_file(&pass.id)))?;
        }
        let report = markdown::report(&protocol, &eval, &ctx);
        outputs::write_atomic(&a.build_dir, outputs::REPORT_FILE, &report)
            .with_context(|| format!("cannot write {}", outputs::REPORT_FILE))?;
    }
    let text = match a.format {
        Format::Md => markdown::report(&protocol, &eval, &ctx),
        Format::Json => outputs::json::render(&protocol, &eval, &ctx),
    };
    print(&text)?;
    Ok(if eval.stops().next().is_some() {
        ExitCode::Violation
    } else {
        ExitCode::Ok
    })
}

fn print(text: &str) -> Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|_| {
        if text.ends_with('\n') {
            Ok(())
        } else {
            out.write_all(b"\n")
        }
    }) {
        // A closed pipe (`referee verify … | head`) is not an error.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => Ok(r?),
    }
}

fn protocol_command(c: ProtocolCommand) -> Result<ExitCode> {
    match c {
        ProtocolCommand::List => {
            let mut s = String::new();
            for (id, _, _) in protocol::EMBEDDED {
                let p = load_protocol(id)?;
                s.push_str(&format!(
                    "{}\t{}\t{} passes, {} checks\t{}\n",
                    p.id,
                    p.version,
                    p.passes.len(),
                    p.checks().len(),
                    p.title
                ));
            }
            print(&s)?;
        }
        ProtocolCommand::Show { protocol } => {
            let p = load_protocol(&protocol)?;
            print(&p.text)?;
        }
        ProtocolCommand::Check { file } => {
            let p = Protocol::load_file(&file)?;
            let instances: usize = p.passes.iter().map(|x| x.checks.len()).sum();
            print(&format!(
                "{}: ok: protocol `{}` {} — {} passes, {} checks, {} check instances (sha256 {})",
                file.display(),
                p.id,
                p.version,
                p.passes.len(),
                p.checks().len(),
                instances,
                p.sha256
            ))?;
        }
        ProtocolCommand::Explain { check, protocol } => {
            let p = load_protocol(&protocol.protocol)?;
            match protocol::explain::explain(&p, &check) {
                Some(text) => print(&text)?,
                None => bail!(
                    "no check `{check}` in protocol `{}` (its checks: {})",
                    p.id,
                    p.checks()
                        .iter()
                        .map(|c| c.id.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            }
        }
    }
    Ok(ExitCode::Ok)
}
