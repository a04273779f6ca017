//! The daemon's side: bind the socket, answer each connection on one of a fixed number of
//! threads (so a flood of connections queues instead of growing memory), keep the state in
//! the daemon's own directory.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::time::Instant;

use super::{Request, MAX_HEADER, READ_DEADLINE};
use crate::hook::{Reply, MAX_PAYLOAD};

/// How `referee serve` runs.
#[derive(Debug, Clone)]
pub struct Options {
    /// The socket's path (its directory should be the daemon's own).
    pub socket: PathBuf,
    /// The socket file's mode: who may ask (0666: anyone who can reach the directory; 0660 with
    /// the agent's user in the daemon's group).
    pub mode: u32,
    /// The daemon's state base: each workspace's state directory below it, and the sessions'
    /// pins in `hook-sessions/` (created 0700, owned by the daemon's user).
    pub state_base: PathBuf,
    /// Connections answered at once.
    pub jobs: usize,
    /// The folders whose workspaces may be judged, open (empty: any the daemon's user can read).
    pub allow: crate::hook::confine::Allowed,
    /// The rules every call is judged with; a request for others is refused.
    pub rules: super::Rules,
    /// A session's pin not heard from for this long is forgotten ([`super::sessions`]).
    pub forget_after: std::time::Duration,
}

#[derive(Debug, thiserror::Error)]
pub enum ServeError {
    #[error(transparent)]
    State(#[from] crate::state::StateError),
    #[error("another `referee serve` already answers on `{path}`")]
    InUse { path: PathBuf },
    #[error("`{path}` exists and is not a socket; refusing to replace it")]
    NotSocket { path: PathBuf },
    #[error("cannot listen on `{path}`")]
    Bind {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start the answering threads")]
    Threads {
        #[source]
        source: std::io::Error,
    },
}

/// A request that cannot be answered: the reason becomes a blocking reply.
#[derive(Debug, thiserror::Error)]
enum RequestError {
    #[error("cannot read the request")]
    Read {
        #[source]
        source: std::io::Error,
    },
    #[error("the request's header is over {MAX_HEADER} bytes or has no end of line")]
    HeaderTooLong,
    #[error("the request's header is not understood")]
    Header {
        #[source]
        source: serde_json::Error,
    },
    #[error("the hook's input is over {MAX_PAYLOAD} bytes; refused")]
    TooLarge,
    #[error(transparent)]
    Agent(#[from] super::UnknownAgent),
    #[error(
        "this `referee serve` judges with its own rules ({daemon}); the hook asked for others \
         ({asked}): give the hook the same `--protocol`, `--protect`, `--set`, `--vars` and \
         `--max-read-bytes` as the daemon, or none"
    )]
    OtherRules { daemon: String, asked: String },
}

/// Binds the socket and answers until the process is stopped; `ready` runs once the socket
/// accepts connections.
pub fn serve(
    o: &Options,
    http: Option<&super::http::Listener>,
    ready: impl FnOnce(),
) -> Result<(), ServeError> {
    crate::state::ensure(&o.state_base)?;
    let pins = o.state_base.join(crate::hook::SESSIONS_DIR);
    super::sessions::forget_stale(&pins, o.forget_after);
    let listener = bind(&o.socket, o.mode)?;
    ready();
    let listener = &listener;
    let forget_after = o.forget_after;
    std::thread::Builder::new()
        .name("serve-sessions".into())
        .spawn(move || loop {
            std::thread::sleep(super::sessions::SWEEP_EVERY);
            super::sessions::forget_stale(&pins, forget_after);
        })
        .map_err(|source| ServeError::Threads { source })?;
    std::thread::scope(|s| {
        // Claude Code's HTTP hooks, on as many threads again: the same judgment, rules and
        // memory as the socket's.
        for n in 0..http.map_or(0, |_| o.jobs.max(1)) {
            let Some(http) = http else { break };
            std::thread::Builder::new()
                .name(format!("serve-http-{n}"))
                .spawn_scoped(s, move || {
                    http.answer_forever(&|payload| crate::hook::run(&http_config(o), payload))
                })
                .map_err(|source| ServeError::Threads { source })?;
        }
        for n in 0..o.jobs.max(1) {
            std::thread::Builder::new()
                .name(format!("serve-{n}"))
                .spawn_scoped(s, move || {
                    for stream in listener.incoming() {
                        match stream {
                            Ok(stream) => answer(stream, o),
                            Err(e) => tracing::warn!("cannot accept a hook's connection: {e}"),
                        }
                    }
                })
                .map_err(|source| ServeError::Threads { source })?;
        }
        Ok(())
    })
}

/// The hook's configuration for a call over HTTP: Claude Code's format (the only agent with
/// HTTP hooks), the daemon's rules, state and confinement; the workspace pinned from the
/// session's first event, as over the socket.
fn http_config(o: &Options) -> crate::hook::Config {
    crate::hook::Config {
        agent: crate::hook::Agent::ClaudeCode,
        rules: o.rules.clone(),
        workspace: None,
        state_dir: None,
        state_base: Some(o.state_base.clone()),
        allow: o.allow.clone(),
        timeout: super::http::JUDGMENT_TIMEOUT,
    }
}

/// Listens on `path` with `mode`, after removing a stale socket left by a daemon that is gone
/// (never a live one's, never anything but a socket).
fn bind(path: &Path, mode: u32) -> Result<UnixListener, ServeError> {
    if let Ok(meta) = std::fs::symlink_metadata(path) {
        if !meta.file_type().is_socket() {
            return Err(ServeError::NotSocket {
                path: path.to_path_buf(),
            });
        }
        if UnixStream::connect(path).is_ok() {
            return Err(ServeError::InUse {
                path: path.to_path_buf(),
            });
        }
        let _ = std::fs::remove_file(path);
    }
    let bind_err = |source| ServeError::Bind {
        path: path.to_path_buf(),
        source,
    };
    let listener = UnixListener::bind(path).map_err(bind_err)?;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).map_err(bind_err)?;
    Ok(listener)
}

/// Answers one connection: the reply, or a blocking one saying why there is none.
fn answer(mut stream: UnixStream, o: &Options) {
    let _ = stream.set_write_timeout(Some(READ_DEADLINE));
    let mut input = Deadline {
        stream: &stream,
        until: Instant::now() + READ_DEADLINE,
    };
    let reply = match read_request(&mut input) {
        Ok((req, _)) if req.rules != o.rules => refused(&RequestError::OtherRules {
            daemon: o.rules.describe(),
            asked: req.rules.describe(),
        }),
        Ok((req, payload)) => match req.config(o.state_base.clone(), o.allow.clone()) {
            Ok(cfg) => {
                let reply = crate::hook::run(&cfg, &payload);
                tracing::debug!(agent = req.agent, exit = reply.exit, "answered a hook");
                reply
            }
            Err(e) => refused(&RequestError::from(e)),
        },
        Err(e) => refused(&e),
    };
    let mut text = serde_json::to_vec(&reply).unwrap_or_default();
    text.push(b'\n');
    if let Err(e) = stream.write_all(&text).and_then(|()| stream.flush()) {
        tracing::warn!("cannot answer a hook: {e}");
    }
    // What a refused client still sends is read and dropped (within the deadline): a socket
    // closed with unread input resets the connection, and the client would lose the answer.
    let mut input = Deadline {
        stream: &stream,
        until: Instant::now() + READ_DEADLINE,
    };
    let _ = std::io::copy(&mut input, &mut std::io::sink());
}

/// The connection's input, all of it due before `until`: a client that sends slowly is cut
/// off at the deadline, never holds a thread longer.
struct Deadline<'a> {
    stream: &'a UnixStream,
    until: Instant,
}

impl std::io::Read for Deadline<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let left = self.until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return Err(std::io::Error::new(
                std::io::ErrorKind::TimedOut,
                format!(
                    "the request was not sent whole within {} s",
                    READ_DEADLINE.as_secs()
                ),
            ));
        }
        self.stream.set_read_timeout(Some(left))?;
        self.stream.read(buf)
    }
}

/// A reply that blocks, whatever the event: exit 2 with the reason on stderr.
fn refused(e: &RequestError) -> Reply {
    let mut why = format!("referee serve: {e}");
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        why.push_str(&format!(": {s}"));
        source = s.source();
    }
    tracing::warn!("{why}");
    Reply {
        stdout: String::new(),
        stderr: format!("{why}; blocked, fail closed\n"),
        exit: 2,
    }
}

fn read_request(input: &mut Deadline<'_>) -> Result<(Request, Vec<u8>), RequestError> {
    let read = |source| RequestError::Read { source };
    let mut r = BufReader::new(input.take(MAX_HEADER + MAX_PAYLOAD + 1));
    let mut header = Vec::new();
    (&mut r)
        .take(MAX_HEADER)
        .read_until(b'\n', &mut header)
        .map_err(read)?;
    if header.last() != Some(&b'\n') {
        return Err(RequestError::HeaderTooLong);
    }
    let req: Request =
        serde_json::from_slice(&header).map_err(|source| RequestError::Header { source })?;
    let mut payload = Vec::new();
    (&mut r)
        .take(MAX_PAYLOAD + 1)
        .read_to_end(&mut payload)
        .map_err(read)?;
    if payload.len() as u64 > MAX_PAYLOAD {
        return Err(RequestError::TooLarge);
    }
    Ok((req, payload))
}
