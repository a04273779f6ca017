//! referee: an independent, deterministic referee for AI build pipelines.
//!
//! Modules in the order data flows: what is on disk (`artifacts`), what the protocol says
//! (`protocol`), how a check is judged (`checks`), when things run and what changed
//! (`engine`), what gets written (`outputs`), and the command line (`cli`).

pub mod accept;
pub mod artifacts;
pub mod atomic;
pub mod checks;
pub mod cli;
pub mod clock;
pub mod color;
pub mod daemon;
pub mod decision;
pub mod demo;
pub mod duration;
pub mod engine;
mod error;
pub mod exit;
pub mod fsevents;
pub mod hook;
pub mod init;
pub mod judge;
pub mod logging;
pub mod mcp;
pub mod outputs;
pub mod protocol_test;
pub mod replay;
pub mod serve;
pub mod state;
pub mod status;
pub mod task_verdict;
pub mod waivers;
pub mod workspace;

/// The protocol model, the workspace crate `referee-protocol` (crates/protocol): the protocol
/// format, its loading, predicates, variables, overrides, secret rules and explanations, with
/// sizes with units and whether a believed file lies inside the watched directory, under the
/// names the rest of the referee uses for them.
pub use referee_protocol as protocol;
pub use referee_protocol::{inside, size};
/// The hostile-file-system layer and the one TOML loader, the workspace crate `referee-safefs`
/// (crates/safefs), under the names the rest of the referee uses for them.
pub use referee_safefs as safefs;
pub use referee_safefs::toml as tomlfile;
/// CC-05's parsers, the workspace crate `referee-syntax` (crates/syntax), under the name the
/// checks have always used for them.
use referee_syntax as syntax;
