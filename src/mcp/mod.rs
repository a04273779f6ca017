//! `referee mcp`: a Model Context Protocol server over stdio, so an agent (or its host: Claude
//! Code, Claude Desktop, any MCP client) can ask the referee directly: judge a directory now,
//! a task's verdict, a check explained, the protected paths, the status.
//!
//! Read-only: no tool writes into the judged directory (there is no `verify --write` here), no
//! tool runs anything from it, and a call names an embedded protocol only (the server's own
//! `--protocol` aside), so the watched side cannot choose the rules it is judged by. With
//! `--root DIR`, a directory outside DIR (symlinks resolved) is refused. A workspace is judged as
//! `verify` judges it: against the baseline pinned in the referee's state directory where one
//! exists, else against `HEAD` read at the call and kept nowhere (no state directory is
//! created). What counts stays the `watch` daemon's verdicts; this is a way to ask.
//!
//! The protocol (JSON-RPC framing, the initialize handshake, tool listing, input schemas) is the
//! official Rust SDK's (`rmcp`), run on a current-thread tokio runtime confined to this module;
//! each call runs on tokio's blocking pool, so a long judgment never stalls the connection, and a
//! panic in one is a tool error, not a crash. stdout carries the protocol only; diagnostics go to
//! stderr.

mod server;
pub mod tools;

pub use tools::Config;

/// The largest message read from the client: an argument under it that is over its own cap
/// (a path over `PATH_MAX`, an id over 255 bytes) gets a tool error saying so. The SDK's
/// default (16 MiB) drops a longer line without an answer, so a 16 MiB argument went
/// unanswered; a message over this one still is (no id can be read from it), and the
/// server's memory stays bounded by it.
pub const MAX_MESSAGE: usize = 64 << 20;

/// Serves MCP on stdin/stdout until the client closes stdin.
pub fn serve(cfg: Config) -> anyhow::Result<()> {
    use anyhow::Context as _;
    use rmcp::ServiceExt as _;
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the MCP server's runtime")?;
    let result = rt.block_on(async {
        let (stdin, stdout) = rmcp::transport::stdio();
        let transport = rmcp::transport::async_rw::AsyncRwTransport::<rmcp::RoleServer, _, _>::new(
            stdin, stdout,
        )
        .with_max_line_length(MAX_MESSAGE);
        let running = server::Referee::new(cfg)
            .serve(transport)
            .await
            .context("the MCP client's initialization failed")?;
        tracing::debug!("mcp: initialized");
        running
            .waiting()
            .await
            .context("the MCP server stopped abnormally")?;
        anyhow::Ok(())
    });
    // A judgment still running on the blocking pool (its client gone) is not waited for; a
    // read of stdin that cannot be cancelled neither.
    rt.shutdown_background();
    result
}
