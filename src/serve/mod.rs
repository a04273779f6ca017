//! `referee serve`: the agents' hooks answered by a referee the agent cannot touch (issue 32).
//!
//! `referee hook AGENT` run in the agent's own process keeps its memory (the session's pinned
//! workspace, the baseline, what the last tool call saw, the loop guards' attempts) where the
//! agent's user can write: deleting it resets the guards. Run as another user, `referee serve`
//! listens on a Unix socket and answers hook calls with the same judgment
//! ([`crate::hook::run`]), keeping that memory in a state directory of its own; `referee hook
//! AGENT --serve SOCKET` becomes a thin client ([`client::ask`]) that forwards the payload and
//! prints the answer, and blocks (fails closed) when it cannot get one.
//!
//! The wire, one request per connection: a header (one line of JSON, [`Request`]: the agent and
//! the hook's flags), then the payload's bytes as the agent wrote them; the client closes its
//! writing half. The answer is one JSON object, [`crate::hook::Reply`]: the exact stdout, stderr
//! and exit code `referee hook` prints. Requests over [`MAX_HEADER`] + [`crate::hook::MAX_PAYLOAD`]
//! bytes, or not sent whole within [`READ_DEADLINE`], are refused with a blocking reply.

pub mod client;
pub mod daemon;
pub mod http;
pub mod sessions;

pub use crate::hook::{absolute_protocol, Rules};

use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Longest header line (the agent and the hook's flags).
pub const MAX_HEADER: u64 = 64 << 10;

/// Longest answer a client reads back (a reason lists at most a few dozen findings).
pub const MAX_REPLY: u64 = 16 << 20;

/// How long the daemon waits for a whole request, and a client for its answer past the
/// judgment's own `--timeout`.
pub const READ_DEADLINE: Duration = Duration::from_secs(10);

/// What `referee hook` sends before the payload: which agent's format to speak, the hook's
/// own flags, and the rules it asks to be judged by (the state directory is the daemon's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The agent's id, as `referee hook` names it (`claude-code`, `codex`, …).
    pub agent: String,
    /// `--workspace`, absolute.
    pub workspace: Option<PathBuf>,
    /// `--timeout` in milliseconds.
    pub timeout_ms: u64,
    /// `--protocol`, `--protect`, `--set`, `--vars`, `--max-read-bytes`: the daemon answers
    /// only a request for its own.
    pub rules: Rules,
}

impl Request {
    /// The hook's configuration for this request, its state kept under `state_base`, its
    /// workspace under one of `allow` (any when empty).
    pub fn config(
        &self,
        state_base: PathBuf,
        allow: crate::hook::confine::Allowed,
    ) -> Result<crate::hook::Config, UnknownAgent> {
        let agent = crate::hook::Agent::from_id(&self.agent)
            .ok_or_else(|| UnknownAgent(self.agent.clone()))?;
        Ok(crate::hook::Config {
            agent,
            rules: self.rules.clone(),
            workspace: self.workspace.clone(),
            state_dir: None,
            state_base: Some(state_base),
            allow,
            timeout: Duration::from_millis(self.timeout_ms),
        })
    }
}

/// A request for an agent this referee does not speak for.
#[derive(Debug, thiserror::Error)]
#[error("unknown agent `{0}` (a `referee hook` of another version?)")]
pub struct UnknownAgent(pub String);
