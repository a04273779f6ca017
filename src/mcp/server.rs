//! The MCP glue: the tools as `rmcp` sees them (names, descriptions, input schemas derived
//! from the argument types) and their answers as tool results. The answers are
//! [`super::tools`]'; a refusal or a failure is a tool error (`isError: true`) with the reason,
//! never a protocol error or a crash.

use std::sync::Arc;

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock, Implementation, ServerCapabilities, ServerConfig};
use rmcp::{tool, tool_handler, tool_router, ErrorData, ServerHandler};
use schemars::JsonSchema;
use serde::Deserialize;

use super::tools::{self, Config, Reply, ToolError};

/// `judge`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct JudgeArgs {
    /// The build directory (D10) or workspace (code-change) to judge: absolute, or relative to
    /// the server's --root (else its working directory).
    pub dir: String,
    /// An embedded protocol id (`d10`, `code-change`); default: the server's --protocol, else
    /// told from the directory (task records or the referee's memory of tasks: `code-change`;
    /// the execution tracker: `d10`; neither: a tool error asking for one).
    #[serde(default)]
    pub protocol: Option<String>,
    /// Judge a finished run: every check due, every non-optional pass run (D10; a workspace is
    /// always judged as finished).
    #[serde(default, rename = "final")]
    pub final_: bool,
}

/// `task_verdict`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TaskArgs {
    /// The workspace the referee watches.
    pub workspace: String,
    /// The task id (the name of its record `.tasks/<task_id>.json`).
    pub task_id: String,
    /// An embedded task protocol id; default: the server's --protocol, else `code-change`.
    #[serde(default)]
    pub protocol: Option<String>,
}

/// `explain_check`'s arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ExplainArgs {
    /// The check's id (`OBS-07`, `CC-01`).
    pub check_id: String,
    /// An embedded protocol id; default: the embedded protocol that has the check.
    #[serde(default)]
    pub protocol: Option<String>,
}

/// `protected_paths`' arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ProtectedArgs {
    /// The workspace whose protected paths to list.
    pub workspace: String,
    /// An embedded protocol id; default: the server's --protocol, else `code-change`.
    #[serde(default)]
    pub protocol: Option<String>,
}

/// `status`' arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StatusArgs {
    /// The build directory or workspace a referee watches (or watched).
    pub dir: String,
}

/// The server: its configuration and its tools.
#[derive(Debug, Clone)]
pub struct Referee {
    cfg: Arc<Config>,
    tool_router: ToolRouter<Self>,
}

/// `f` on tokio's blocking pool: its reply as a tool result, its refusal or panic as a tool
/// error.
async fn answer<F>(f: F) -> Result<CallToolResult, ErrorData>
where
    F: FnOnce() -> Result<Reply, ToolError> + Send + 'static,
{
    let result = match tokio::task::spawn_blocking(f).await {
        Ok(r) => r.map_err(|e| crate::error::chain(&e)),
        Err(e) => Err(format!(
            "the referee failed answering this call (a bug): {e}"
        )),
    };
    Ok(match result {
        Ok(reply) => {
            let mut r = CallToolResult::success(vec![
                ContentBlock::text(reply.text),
                ContentBlock::text(reply.json.to_string()),
            ]);
            r.structured_content = Some(reply.json);
            r
        }
        Err(why) => {
            tracing::info!("mcp: tool error: {why}");
            CallToolResult::error(vec![ContentBlock::text(format!("referee: {why}"))])
        }
    })
}

#[tool_router]
impl Referee {
    pub fn new(cfg: Config) -> Referee {
        Referee {
            cfg: Arc::new(cfg),
            tool_router: Self::tool_router(),
        }
    }

    #[tool(
        description = "Judge a build directory (D10) or a coding agent's workspace (code-change) once, as it stands now, and return the verdict: a short summary, and the JSON `referee verify --format json` prints (schema referee.verify/1). `violation: true` means do not go on (an unresolved BLOCKING failure, a rejected task attempt, or a protected file changed). Read-only: nothing is written into the directory.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn judge(
        &self,
        Parameters(a): Parameters<JudgeArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let cfg = self.cfg.clone();
        answer(move || tools::judge(&cfg, &a.dir, a.protocol.as_deref(), a.final_)).await
    }

    #[tool(
        description = "The verdict the watching referee recorded for a task's latest attempt (APPROVE, MINOR_ISSUES, REJECT, ESCALATE), as `referee status --task`: answer `go` (judged good), `stop` (judged bad, or a STOP stands) or `not_judged` (not judged yet), read from the referee's state directory only.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn task_verdict(
        &self,
        Parameters(a): Parameters<TaskArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let cfg = self.cfg.clone();
        answer(move || tools::task_verdict(&cfg, &a.workspace, &a.task_id, a.protocol.as_deref()))
            .await
    }

    #[tool(
        description = "Explain one check of a protocol in plain words: what it reads, when it runs and is due, what makes it PASS, FAIL or wait, and what to do on FAIL (`referee protocol explain`).",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn explain_check(
        &self,
        Parameters(a): Parameters<ExplainArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let cfg = self.cfg.clone();
        answer(move || tools::explain_check(&cfg, &a.check_id, a.protocol.as_deref())).await
    }

    #[tool(
        description = "List the paths a task must never touch (the protocol's protected globs, and the paths that would shadow them, such as a Python package or bytecode of the same name), and the files present in the workspace that they match.",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn protected_paths(
        &self,
        Parameters(a): Parameters<ProtectedArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let cfg = self.cfg.clone();
        answer(move || tools::protected_paths(&cfg, &a.workspace, a.protocol.as_deref())).await
    }

    #[tool(
        description = "What `referee status DIR` answers at a phase transition: `stop` with the OBSERVER-STOP.md text when the referee holds a STOP for the directory, else `go`; read from the referee's state directory only (never from files in the watched directory).",
        annotations(read_only_hint = true, open_world_hint = false)
    )]
    async fn status(
        &self,
        Parameters(a): Parameters<StatusArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let cfg = self.cfg.clone();
        answer(move || tools::status(&cfg, &a.dir)).await
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for Referee {
    fn get_info(&self) -> ServerConfig {
        let mut info = ServerConfig::new(ServerCapabilities::builder().enable_tools().build());
        info.server_info = Implementation::new("referee", env!("CARGO_PKG_VERSION"));
        info.with_instructions(
            "The referee judges AI pipelines (D10 build directories) and coding agents' task attempts \
(code-change workspaces) by a protocol of checks. Every tool is read-only. `judge` judges a \
directory now; `task_verdict` and `status` read what the watching referee decided.",
        )
    }
}
