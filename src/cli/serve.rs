//! `referee serve`: answer the agents' hooks over a Unix socket, as another user.

use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::Args;

use crate::exit::ExitCode;

#[derive(Args, Debug)]
pub(super) struct ServeArgs {
    /// The Unix socket to listen on. Put it in a directory the daemon's user owns (0755, or
    /// 0750 with the agent's user in its group), so nobody else can replace it.
    #[arg(long, value_name = "PATH")]
    socket: PathBuf,
    /// The socket file's mode, octal: who may ask. 0666 lets any user who can reach its
    /// directory; 0660 only the daemon's group.
    #[arg(long, value_name = "MODE", default_value = "0666", value_parser = parse_mode)]
    socket_mode: u32,
    /// The daemon's state base: each workspace's state directory below it (as `watch --root`
    /// names them) and the sessions' pinned workspaces (`hook-sessions/`), created 0700 and
    /// owned by the daemon's user (default: `$XDG_STATE_HOME/referee`, else
    /// `~/.local/state/referee`, of that user: a `referee watch` run by it shares them).
    #[arg(long, value_name = "DIR")]
    state_dir: Option<PathBuf>,
    /// Hook calls answered at once; more wait their turn.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = clap::value_parser!(u16).range(1..=256))]
    jobs: u16,
    /// Judge only workspaces under DIR (repeatable; default: any the daemon's user can read).
    /// DIR is opened at start and each workspace beneath it by descriptor (a link out of it is
    /// refused); a stop judged while a folder between DIR and the workspace was replaced or
    /// changed is blocked, nothing of it kept. A workspace that holds or lies in the daemon's
    /// state is always refused.
    #[arg(long, value_name = "DIR")]
    allow: Vec<PathBuf>,
    /// The rules every hook call is judged with: the daemon's own, not the caller's (an agent
    /// that can reach the socket could otherwise ask for rules that protect nothing, and
    /// leave the verdict in the daemon's memory). A call whose `--protocol`, `--protect`,
    /// `--set`, `--vars` or `--max-read-bytes` differ is refused with a blocking answer; give
    /// the hooks the same flags, or none.
    #[arg(long, value_name = "ID|FILE", default_value = "code-change")]
    protocol: String,
    /// Also answer Claude Code's `type: "http"` hooks: POST to `http://ADDR/hook/claude-code`,
    /// judged as over the socket. A loopback address only (e.g. `127.0.0.1:8787`); requires
    /// `--http-token-file`. Set `"onFailure": "block"` on the hook (Claude Code 2.1.295 and
    /// later), or a daemon that is down lets the event through. docs/agents.md
    #[arg(long, value_name = "ADDR", requires = "http_token_file")]
    http: Option<std::net::SocketAddr>,
    /// The bearer token every HTTP hook call must carry (`Authorization: Bearer TOKEN`; at
    /// least 16 characters): any local user can reach a loopback port.
    #[arg(long, value_name = "FILE", requires = "http")]
    http_token_file: Option<PathBuf>,
    /// Forget a session's pinned workspace when the session has not been heard from for this
    /// long (`30d`, `12h`; every hook call of a session marks it heard from). A live session is
    /// never unpinned, and the agent cannot remove a pin: `hook-sessions/` is the daemon's.
    /// A session resumed after that is pinned again at its next event, where its `cwd` is.
    /// Looked at when the daemon starts and every hour.
    #[arg(long, value_name = "DURATION", default_value = crate::serve::sessions::DEFAULT_FORGET_AFTER, value_parser = crate::duration::parse)]
    forget_sessions_after: std::time::Duration,
    #[command(flatten)]
    read: super::ReadArgs,
    #[command(flatten)]
    rules: super::RulesArgs,
}

fn parse_mode(s: &str) -> Result<u32, std::num::ParseIntError> {
    u32::from_str_radix(s.trim_start_matches("0o"), 8).map(|m| m & 0o777)
}

pub(super) fn serve(a: ServeArgs) -> Result<ExitCode> {
    let state_base = match a.state_dir {
        Some(d) => std::path::absolute(&d).unwrap_or(d),
        None => crate::state::default_base()?,
    };
    let o = crate::serve::daemon::Options {
        socket: a.socket,
        mode: a.socket_mode,
        state_base,
        jobs: usize::from(a.jobs),
        allow: crate::hook::confine::Allowed::open(&a.allow)?,
        rules: crate::serve::Rules::new(&a.protocol, a.rules.overrides()?, a.read.max_read_bytes),
        forget_after: a.forget_sessions_after,
    };
    // The socket goes away with the daemon, so a client sees "cannot reach", not a dead file.
    let socket = o.socket.clone();
    let mut signals = signal_hook::iterator::Signals::new([
        signal_hook::consts::SIGTERM,
        signal_hook::consts::SIGINT,
    ])
    .context("cannot handle SIGTERM")?;
    std::thread::Builder::new()
        .name("serve-signals".into())
        .spawn(move || {
            if signals.forever().next().is_some() {
                let _ = std::fs::remove_file(&socket);
                std::process::exit(0);
            }
        })
        .context("cannot handle SIGTERM")?;
    let http = match (a.http, &a.http_token_file) {
        (Some(addr), Some(token)) => Some(crate::serve::http::Listener::bind(addr, token)?),
        _ => None,
    };
    crate::serve::daemon::serve(&o, http.as_ref(), || {
        eprintln!(
            "referee serve: answering hooks on {} (state in {})",
            o.socket.display(),
            o.state_base.display()
        );
        if let Some(h) = &http {
            eprintln!(
                "referee serve: answering Claude Code's HTTP hooks on http://{}{}",
                h.addr,
                crate::serve::http::PATH
            );
        }
    })?;
    Ok(ExitCode::Ok)
}
