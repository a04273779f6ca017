//! `referee serve --http ADDR`: Claude Code's `type: "http"` hooks, answered by the same daemon.
//!
//! Claude Code POSTs the event's JSON to the hook's URL and reads a 2xx response's JSON body
//! as it reads a command hook's stdout. The daemon answers `POST /hook/claude-code` with
//! exactly the JSON `referee hook claude-code` prints, judged with the daemon's own rules and
//! memory. A judgment that blocks without JSON (a payload that cannot be read, a refusal) is
//! given the JSON form that blocks the event (`decision: block`, or a PreToolUse `deny`),
//! because an HTTP hook's exit code does not exist.
//!
//! Failing closed is Claude Code's part: a hook whose request fails (daemon down, a non-2xx
//! status, a timeout) blocks only with `"onFailure": "block"` in the hook's settings (Claude
//! Code 2.1.295 and later); without it Claude Code lets the event through. docs/agents.md
//! says so and its snippet sets it.
//!
//! Who may ask: the listener takes loopback addresses only, and every request must carry
//! `Authorization: Bearer TOKEN` with the token of `--http-token-file` (any local user can
//! reach a loopback port; the token is what the socket's file mode is for the Unix socket).

use std::io::Read as _;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{json, Value};

use crate::hook::{Reply, MAX_PAYLOAD};

/// The one path answered.
pub const PATH: &str = "/hook/claude-code";

/// The shortest token accepted (a guessable one would let any local user ask).
pub const MIN_TOKEN: usize = 16;

/// How long a judgment may take before the stop is blocked, fail closed: as `referee hook`'s
/// `--timeout` default, below Claude Code's own hook timeout.
pub const JUDGMENT_TIMEOUT: Duration = Duration::from_secs(45);

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("`--http {addr}` is not a loopback address: the hooks' HTTP listener answers this machine only")]
    NotLoopback { addr: SocketAddr },
    #[error("cannot listen on `{addr}`: {why}")]
    Bind { addr: SocketAddr, why: String },
    #[error("cannot read the token file `{path}`")]
    Token {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the token in `{path}` is shorter than {MIN_TOKEN} characters (after trimming)")]
    ShortToken { path: PathBuf },
}

/// The listener, bound and ready.
pub struct Listener {
    server: tiny_http::Server,
    token: String,
    pub addr: SocketAddr,
}

impl std::fmt::Debug for Listener {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token.
        f.debug_struct("Listener")
            .field("addr", &self.addr)
            .finish()
    }
}

impl Listener {
    /// Binds `addr` (loopback only) and reads the token from `token_file`.
    pub fn bind(addr: SocketAddr, token_file: &Path) -> Result<Listener, HttpError> {
        if !addr.ip().is_loopback() {
            return Err(HttpError::NotLoopback { addr });
        }
        let token = read_token(token_file)?;
        let server = tiny_http::Server::http(addr).map_err(|e| HttpError::Bind {
            addr,
            why: e.to_string(),
        })?;
        let addr = server
            .server_addr()
            .to_ip()
            .ok_or_else(|| HttpError::Bind {
                addr,
                why: "not an IP listener".into(),
            })?;
        Ok(Listener {
            server,
            token,
            addr,
        })
    }

    /// Answers requests until the process stops, each payload judged by `judge` (the hook's
    /// judgment in Claude Code's format); several threads may call it at once.
    pub fn answer_forever(&self, judge: &(dyn Fn(&[u8]) -> Reply + Sync)) {
        loop {
            match self.server.recv() {
                Ok(req) => self.answer(req, judge),
                Err(e) => tracing::warn!("cannot accept a hook's HTTP request: {e}"),
            }
        }
    }

    fn answer(&self, mut req: tiny_http::Request, judge: &(dyn Fn(&[u8]) -> Reply + Sync)) {
        let (status, body) = match self.check(&req) {
            Err((status, why)) => {
                tracing::warn!("referee serve --http: {why}");
                (status, json!({ "error": why }).to_string())
            }
            Ok(()) => {
                let mut payload = Vec::new();
                let read = req
                    .as_reader()
                    .take(MAX_PAYLOAD + 1)
                    .read_to_end(&mut payload);
                let reply = match read {
                    Err(e) => blocked(&format!("cannot read the hook's input: {e}")),
                    Ok(_) if payload.len() as u64 > MAX_PAYLOAD => blocked(&format!(
                        "the hook's input is over {MAX_PAYLOAD} bytes; refused"
                    )),
                    Ok(_) => judge(&payload),
                };
                (200, body_of(&reply, &payload))
            }
        };
        let mut response = tiny_http::Response::from_string(body).with_status_code(status);
        if let Ok(h) = tiny_http::Header::from_bytes(&b"Content-Type"[..], &b"application/json"[..])
        {
            response = response.with_header(h);
        }
        if let Err(e) = req.respond(response) {
            tracing::warn!("cannot answer a hook's HTTP request: {e}");
        }
    }

    /// The method, path and token: a non-2xx status with the reason when one is wrong (Claude
    /// Code blocks on it with `onFailure: block`).
    fn check(&self, req: &tiny_http::Request) -> Result<(), (u16, String)> {
        if req.url() != PATH {
            return Err((
                404,
                format!("no hook at `{}`; the hooks' path is `{PATH}`", req.url()),
            ));
        }
        if *req.method() != tiny_http::Method::Post {
            return Err((405, format!("`{}` to `{PATH}`: only POST", req.method())));
        }
        let given = req
            .headers()
            .iter()
            .find(|h| h.field.equiv("Authorization"))
            .map(|h| h.value.as_str().trim());
        let ok = given
            .and_then(|v| v.strip_prefix("Bearer "))
            .is_some_and(|t| same(t.trim().as_bytes(), self.token.as_bytes()));
        if !ok {
            return Err((
                401,
                "no `Authorization: Bearer TOKEN` with the daemon's token".to_string(),
            ));
        }
        Ok(())
    }
}

/// Equal bytes, compared in time that does not depend on where they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn read_token(path: &Path) -> Result<String, HttpError> {
    let text = std::fs::read_to_string(path).map_err(|source| HttpError::Token {
        path: path.to_path_buf(),
        source,
    })?;
    let token = text.trim().to_string();
    if token.chars().count() < MIN_TOKEN {
        return Err(HttpError::ShortToken {
            path: path.to_path_buf(),
        });
    }
    Ok(token)
}

/// A reply that blocks, as `referee hook` gives it (exit 2, the reason on stderr).
fn blocked(why: &str) -> Reply {
    Reply {
        stdout: String::new(),
        stderr: format!("referee serve: {why}; blocked, fail closed\n"),
        exit: 2,
    }
}

/// The response body for `reply`: its JSON when it allowed or answered in JSON; otherwise
/// (it blocked by its exit code, or printed something else) the JSON that blocks the event
/// `payload` names, with the reason.
pub fn body_of(reply: &Reply, payload: &[u8]) -> String {
    let out = reply.stdout.trim();
    if reply.exit == 0 {
        if out.is_empty() || serde_json::from_str::<serde_json::Map<String, Value>>(out).is_ok() {
            return out.to_string();
        }
        return json!({ "systemMessage": out }).to_string();
    }
    let reason = match reply.stderr.trim() {
        "" => format!(
            "referee: the hook's judgment ended with exit {}; blocked, fail closed",
            reply.exit
        ),
        r => r.to_string(),
    };
    let event = serde_json::from_slice::<Value>(payload)
        .ok()
        .and_then(|v| v["hook_event_name"].as_str().map(str::to_string));
    match event.as_deref() {
        Some("PreToolUse") => json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }),
        _ => json!({ "decision": "block", "reason": reason }),
    }
    .to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(stdout: &str, stderr: &str, exit: u8) -> Reply {
        Reply {
            stdout: stdout.into(),
            stderr: stderr.into(),
            exit,
        }
    }

    #[test]
    fn a_json_answer_is_the_body_and_a_blocking_exit_becomes_the_json_that_blocks() {
        let stop = br#"{"hook_event_name":"Stop"}"#;
        let pre = br#"{"hook_event_name":"PreToolUse"}"#;
        assert_eq!(body_of(&reply("", "", 0), stop), "");
        let j = r#"{"decision":"block","reason":"CC-01"}"#;
        assert_eq!(body_of(&reply(&format!("{j}\n"), "", 0), stop), j);
        let v: Value = serde_json::from_str(&body_of(&reply("", "unreadable\n", 2), stop)).unwrap();
        assert_eq!(v["decision"], "block");
        assert_eq!(v["reason"], "unreadable");
        let v: Value = serde_json::from_str(&body_of(&reply("", "no\n", 2), pre)).unwrap();
        assert_eq!(v["hookSpecificOutput"]["permissionDecision"], "deny");
        assert_eq!(v["hookSpecificOutput"]["permissionDecisionReason"], "no");
        // An input that is not JSON still gets an answer that blocks, with a reason.
        let v: Value = serde_json::from_str(&body_of(&reply("", "", 1), b"\xff")).unwrap();
        assert_eq!(v["decision"], "block");
        assert!(v["reason"].as_str().unwrap().contains("exit 1"), "{v}");
        // Plain text on an allow is said, never taken for a verdict.
        let v: Value = serde_json::from_str(&body_of(&reply("hello\n", "", 0), stop)).unwrap();
        assert_eq!(v["systemMessage"], "hello");
    }

    #[test]
    fn tokens_compare_whole() {
        assert!(same(b"abcdefghijklmnop", b"abcdefghijklmnop"));
        assert!(!same(b"abcdefghijklmnop", b"abcdefghijklmnoq"));
        assert!(!same(b"abcdefghijklmnop", b"abcdefghijklmno"));
        assert!(!same(b"", b"x"));
    }
}
