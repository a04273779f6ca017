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

/// What `referee hook` sends before the payload: which agent's format to speak, and the
/// hook's own flags (those that choose the rules; the state directory is the daemon's).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Request {
    /// The agent's id, as `referee hook` names it (`claude-code`, `codex`, …).
    pub agent: String,
    /// `--protocol`: an embedded id or an absolute file path.
    pub protocol: String,
    /// `--workspace`, absolute.
    pub workspace: Option<PathBuf>,
    /// `--max-read-bytes`.
    pub max_read_bytes: u64,
    /// `--timeout` in milliseconds.
    pub timeout_ms: u64,
    /// `--vars`, absolute.
    pub vars: Option<PathBuf>,
    /// `--set`, each as given.
    pub set: Vec<String>,
    /// `--protect`, each as given.
    pub protect: Vec<String>,
}

impl Request {
    /// The hook's configuration for this request, its state kept under `state_base`, its
    /// workspace under one of `allow` (any when empty).
    pub fn config(
        &self,
        state_base: PathBuf,
        allow: Vec<PathBuf>,
    ) -> Result<crate::hook::Config, UnknownAgent> {
        let agent = crate::hook::Agent::from_id(&self.agent)
            .ok_or_else(|| UnknownAgent(self.agent.clone()))?;
        Ok(crate::hook::Config {
            agent,
            protocol: self.protocol.clone(),
            workspace: self.workspace.clone(),
            state_dir: None,
            state_base: Some(state_base),
            allow,
            max_read_bytes: self.max_read_bytes,
            timeout: Duration::from_millis(self.timeout_ms),
            overrides: crate::protocol::overrides::Overrides {
                file: self.vars.clone(),
                set: self.set.clone(),
                protect: self.protect.clone(),
            },
        })
    }
}

/// The rules a daemon judges every hook call with (`referee serve --protocol … --protect …`):
/// its own. A request is answered only when it asks for exactly these, so an agent that
/// reaches the socket cannot have itself judged by rules that protect nothing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rules {
    /// `--protocol`: an embedded id, or a file's absolute path.
    pub protocol: String,
    pub vars: Option<PathBuf>,
    pub set: Vec<String>,
    pub protect: Vec<String>,
    pub max_read_bytes: u64,
}

impl Rules {
    /// The rules `protocol` (an embedded id or a file, made absolute), `overrides` and
    /// `max_read_bytes` name, as a hook's request names them.
    pub fn new(
        protocol: &str,
        overrides: crate::protocol::overrides::Overrides,
        max_read_bytes: u64,
    ) -> Rules {
        Rules {
            protocol: absolute_protocol(protocol),
            vars: overrides.file,
            set: overrides.set,
            protect: overrides.protect,
            max_read_bytes,
        }
    }

    /// The rules a request asks for.
    pub fn of(r: &Request) -> Rules {
        Rules {
            protocol: r.protocol.clone(),
            vars: r.vars.clone(),
            set: r.set.clone(),
            protect: r.protect.clone(),
            max_read_bytes: r.max_read_bytes,
        }
    }

    /// One line naming them, for a refusal.
    pub fn describe(&self) -> String {
        let mut s = format!("--protocol {}", self.protocol);
        if let Some(v) = &self.vars {
            s.push_str(&format!(" --vars {}", v.display()));
        }
        for x in &self.set {
            s.push_str(&format!(" --set {x}"));
        }
        for x in &self.protect {
            s.push_str(&format!(" --protect {x}"));
        }
        s.push_str(&format!(" --max-read-bytes {}", self.max_read_bytes));
        s
    }
}

/// `--protocol` as a request carries it: a file's path made absolute (the daemon runs
/// elsewhere), anything else (an embedded id) as it is.
pub fn absolute_protocol(protocol: &str) -> String {
    let path = std::path::Path::new(protocol);
    if path.is_file() {
        std::path::absolute(path).map_or_else(
            |_| protocol.to_string(),
            |p| p.to_string_lossy().into_owned(),
        )
    } else {
        protocol.to_string()
    }
}

/// A request for an agent this referee does not speak for.
#[derive(Debug, thiserror::Error)]
#[error("unknown agent `{0}` (a `referee hook` of another version?)")]
pub struct UnknownAgent(pub String);
