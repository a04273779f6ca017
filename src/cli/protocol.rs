//! `referee protocol`: list, show, check, hash, test and explain protocols.

use std::path::{Path, PathBuf};

use anyhow::Result;
use clap::Subcommand;

use super::{load_protocol, print, RulesArgs};
use crate::exit::ExitCode;
use crate::protocol::{self, Protocol};

#[derive(Subcommand, Debug)]
pub(super) enum ProtocolCommand {
    /// List the embedded protocols.
    List,
    /// Print a protocol's source (embedded id or file); with `--protect`/`--set`/`--vars`,
    /// followed by the variables as they resolve.
    Show {
        /// An embedded protocol id (`d10`) or the path of a protocol file.
        #[arg(value_name = "ID|FILE", default_value = protocol::DEFAULT_ID)]
        protocol: String,
        #[command(flatten)]
        rules: RulesArgs,
    },
    /// Validate a protocol (a file, or an embedded id); errors point at file:line:column.
    Check {
        /// The path of a protocol file, or an embedded protocol id (`d10`); a file of that
        /// name wins.
        #[arg(value_name = "FILE|ID")]
        protocol: String,
    },
    /// Print a protocol's SHA-256 (what `watch` records and `status --expect-protocol` pins).
    Hash {
        /// An embedded protocol id (`d10`) or the path of a protocol file.
        #[arg(value_name = "ID|FILE", default_value = protocol::DEFAULT_ID)]
        protocol: String,
        /// As given to `watch`: the hash covers the resolved variables.
        #[command(flatten)]
        rules: RulesArgs,
    },
    /// Run a protocol's fixtures (a case per sub-directory of DIR); exit 1 on any mismatch.
    ///
    /// Each case holds `expect.toml` (`[checks]` CHECK-ID = "PASS"|"FAIL"|…, and optional
    /// `stop`, `verdict`, `final`) and `build/` (the build directory's files). Prints a line per
    /// case and, for a case that differs, a diff of its expect.toml lines with the evidence.
    Test {
        /// The directory of cases.
        #[arg(value_name = "DIR")]
        dir: PathBuf,
        /// The protocol file (or embedded id) to test; default `DIR/protocol.toml`.
        #[arg(long, value_name = "FILE|ID")]
        protocol: Option<String>,
    },
    /// Explain one check: what it reads, when it is due, what makes it PASS/FAIL/WAIT.
    Explain {
        /// The check's id (`OBS-07`, `CC-05`).
        #[arg(value_name = "CHECK-ID")]
        check: String,
        /// An embedded protocol id (`d10`) or the path of a protocol file; by default the
        /// embedded protocol that has the check.
        #[arg(long, value_name = "ID|FILE")]
        protocol: Option<String>,
    },
}

pub(super) fn protocol_command(c: ProtocolCommand) -> Result<ExitCode> {
    match c {
        ProtocolCommand::List => {
            let mut s = String::new();
            for (id, _, _) in protocol::EMBEDDED {
                let p = load_protocol(id)?;
                // Counted, never written by hand (a description once said 11 BLOCKING of 15).
                let blocking = p
                    .checks()
                    .iter()
                    .filter(|c| c.severity == protocol::Severity::Blocking)
                    .count();
                s.push_str(&format!(
                    "{}\t{}\t{} passes, {} checks ({blocking} BLOCKING)\t{}\n",
                    p.id,
                    p.version,
                    p.passes.len(),
                    p.checks().len(),
                    p.title
                ));
            }
            print(&s)?;
        }
        ProtocolCommand::Show { protocol, rules } => {
            let p = Protocol::load_with(&protocol, None, &rules.overrides()?)?;
            let mut text = p.text.clone();
            if !p.overrides.is_empty() {
                text.push_str(&format!("\n# ---- overridden (sha256 {}) ----\n", p.sha256));
                for line in protocol::overrides::describe(&p.overrides) {
                    text.push_str(&format!("# {line}\n"));
                }
            }
            print(&text)?;
        }
        ProtocolCommand::Hash { protocol, rules } => {
            let p = Protocol::load_with(&protocol, None, &rules.overrides()?)?;
            print(&format!("{}\n", p.sha256))?;
        }
        ProtocolCommand::Check { protocol } => {
            let path = Path::new(&protocol);
            let p = if path.exists() {
                Protocol::load_file(path)?
            } else {
                load_protocol(&protocol)?
            };
            let instances: usize = p.passes.iter().map(|x| x.checks.len()).sum();
            print(&format!(
                "{}: ok: protocol `{}` {} — {} passes, {} checks, {} check instances (sha256 {})",
                protocol,
                p.id,
                p.version,
                p.passes.len(),
                p.checks().len(),
                instances,
                p.sha256
            ))?;
        }
        ProtocolCommand::Test { dir, protocol } => {
            let p = match protocol {
                Some(spec) => load_protocol(&spec)?,
                None => Protocol::load_file(&dir.join("protocol.toml"))?,
            };
            let results = crate::protocol_test::run(&p, &dir)?;
            print(&crate::protocol_test::render(&results))?;
            if results.iter().any(|r| !r.ok()) {
                return Ok(ExitCode::Violation);
            }
        }
        ProtocolCommand::Explain { check, protocol } => {
            let (_, text) = protocol::explain::lookup(protocol.as_deref(), &check)?;
            print(&text)?;
        }
    }
    Ok(ExitCode::Ok)
}
