//! The client's side: `referee hook AGENT --serve SOCKET` sends its request and reads the
//! reply; every way of not getting one is an error the hook turns into a block.

use std::io::{Read as _, Write as _};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::time::Duration;

use super::{Request, MAX_REPLY, READ_DEADLINE};
use crate::hook::Reply;

/// Why no answer came back from the daemon.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("cannot reach `referee serve` at `{path}`")]
    Connect {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot send the request to `referee serve` at `{path}`")]
    Send {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("no answer from `referee serve` at `{path}`")]
    Receive {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write the request for `referee serve` at `{path}`")]
    Encode {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error("`referee serve` at `{path}` answered something that is not a reply")]
    Reply {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

/// Asks the daemon at `socket` to answer `payload`, waiting up to the judgment's own timeout
/// and [`READ_DEADLINE`] more.
pub fn ask(socket: &std::path::Path, req: &Request, payload: &[u8]) -> Result<Reply, ClientError> {
    let path = socket.to_path_buf();
    let mut stream = UnixStream::connect(socket).map_err(|source| ClientError::Connect {
        path: path.clone(),
        source,
    })?;
    let wait = Duration::from_millis(req.timeout_ms).saturating_add(READ_DEADLINE);
    let _ = stream.set_read_timeout(Some(wait));
    let _ = stream.set_write_timeout(Some(READ_DEADLINE));
    let mut header = serde_json::to_vec(req).map_err(|source| ClientError::Encode {
        path: path.clone(),
        source,
    })?;
    header.push(b'\n');
    let sent = stream
        .write_all(&header)
        .and_then(|()| stream.write_all(payload))
        .and_then(|()| stream.shutdown(std::net::Shutdown::Write));
    let mut answer = Vec::new();
    let received = (&mut stream).take(MAX_REPLY).read_to_end(&mut answer);
    // A daemon that refused a request before reading all of it has answered why: that answer
    // counts, the broken pipe does not.
    if answer.is_empty() {
        if let Err(source) = sent {
            return Err(ClientError::Send { path, source });
        }
        if let Err(source) = received {
            return Err(ClientError::Receive { path, source });
        }
    }
    serde_json::from_slice(&answer).map_err(|source| ClientError::Reply { path, source })
}
