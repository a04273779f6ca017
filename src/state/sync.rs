//! `referee status --sync` (issue 16 §7): a barrier that queues behind the pipeline's own file
//! events, so the answer is about every file written before the call — never a `go` that ran
//! ahead of the referee.
//!
//! `status` creates a uniquely named token file, [`TOKEN_PREFIX`]`<token>`, in the watched
//! directory. Its event reaches the referee after the events of everything written before it
//! (one event queue, in order; a poll finds it in the same scan or a later one). The referee
//! judges the whole directory again, waits until every input written before the token has been
//! quiet for the settle window and been judged after that, and nothing is held back for settling
//! (an editor's save between its rename and its last write is not yet what the pipeline said;
//! each wait bounded by `--settle-max`), and only then acknowledges the token in its state
//! directory ([`ACK_FILE`]),
//! where the watched side cannot write: a forged token earns nothing, a deleted one a timeout
//! (exit 3), never a `go`. `status` then removes its token and answers as usual.
//!
//! This module owns the token's name and the acknowledgement file; the daemon decides when to
//! acknowledge, and `referee status` when to ask.

use std::io::{self, Read};
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The token file's name, before the token.
pub const TOKEN_PREFIX: &str = "OBSERVER-SYNC-";
/// The acknowledgements, in the state directory.
pub const ACK_FILE: &str = "OBSERVER-SYNCED.json";
/// How many acknowledgements are kept (the newest).
const KEEP: usize = 256;

#[derive(Debug, Default, Serialize, Deserialize)]
struct Acks {
    tokens: Vec<String>,
}

/// The token a path names, when it is a token file (top level, a sane name).
pub fn token_of(rel: &str) -> Option<&str> {
    let token = rel.strip_prefix(TOKEN_PREFIX)?;
    (!token.is_empty()
        && token.len() <= 64
        && token
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-'))
    .then_some(token)
}

/// A new token: this process, the time, and randomness from the OS.
pub fn new_token() -> String {
    let mut random = [0u8; 8];
    if let Ok(mut f) = std::fs::File::open("/dev/urandom") {
        let _ = f.read_exact(&mut random);
    }
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!(
        "{}-{nanos:x}-{}",
        std::process::id(),
        crate::protocol::hex(&random)
    )
}

fn read(state: &Path) -> Acks {
    let path = state.join(ACK_FILE);
    match std::fs::symlink_metadata(&path) {
        Ok(m) if m.is_file() && m.len() <= 1 << 20 => {}
        _ => return Acks::default(),
    }
    let mut text = String::new();
    match std::fs::File::open(&path) {
        Ok(f) => {
            let _ = f.take(1 << 20).read_to_string(&mut text);
        }
        Err(_) => return Acks::default(),
    }
    serde_json::from_str(&text).unwrap_or_default()
}

/// Acknowledges `tokens` (the referee has judged everything queued before them).
pub fn acknowledge(state: &Path, tokens: &[String]) -> io::Result<()> {
    let mut acks = read(state);
    for t in tokens {
        if !acks.tokens.contains(t) {
            acks.tokens.push(t.clone());
        }
    }
    let extra = acks.tokens.len().saturating_sub(KEEP);
    acks.tokens.drain(..extra);
    let text = serde_json::to_string(&acks).map_err(io::Error::other)?;
    let tmp = state.join(format!(".{ACK_FILE}.tmp.{}", std::process::id()));
    std::fs::write(&tmp, text)?;
    std::fs::rename(&tmp, state.join(ACK_FILE))
}

/// Whether the referee acknowledged `token`.
pub fn acknowledged(state: &Path, token: &str) -> bool {
    read(state).tokens.iter().any(|t| t == token)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_named_and_acknowledged_in_the_state_directory() {
        let t = new_token();
        let name = format!("{TOKEN_PREFIX}{t}");
        assert_eq!(token_of(&name), Some(t.as_str()));
        assert_eq!(token_of("OBSERVER-SYNC-"), None);
        assert_eq!(token_of("OBSERVER-SYNC-a/b"), None);
        assert_eq!(token_of("OBSERVER-STOP.md"), None);
        assert_ne!(new_token(), t);
        let dir = tempfile::tempdir().expect("tempdir");
        assert!(!acknowledged(dir.path(), &t));
        acknowledge(dir.path(), std::slice::from_ref(&t)).expect("ack");
        assert!(acknowledged(dir.path(), &t));
        for i in 0..KEEP {
            acknowledge(dir.path(), &[format!("x{i}")]).expect("ack");
        }
        assert!(!acknowledged(dir.path(), &t), "only the newest are kept");
        std::fs::write(dir.path().join(ACK_FILE), "garbage").expect("write");
        assert!(!acknowledged(dir.path(), "x1"));
    }
}
