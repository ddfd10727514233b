//! `handoff mcp`: the store as MCP tools over stdio, on the official Rust SDK (`rmcp`).
//!
//! Every tool takes its arguments under the Python binding's names, answers with readable text
//! and `structuredContent`, and reports failure as a tool error (`isError`) carrying
//! `{"error": {"code", "message", ...}}`: bad arguments included, so a model can correct itself
//! and the server keeps serving.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use handoff_core::{Error, Store};
use rmcp::handler::server::tool::{schema_for_input, schema_for_type};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    JsonObject, ListToolsResult, PaginatedRequestParams, ServerCapabilities, ServerConfig, Tool,
    ToolAnnotations,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt};
use schemars::JsonSchema;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};

use crate::args::{DEFAULT_LEASE_SECONDS, ListArgs};
use crate::commands::claim_from_token;
use crate::error::{CliError, CliResult};
use crate::fields::CreateArgs;
use crate::output::{self, Reply};
use crate::spawn::{self, SpawnConfig};

/// `handoff_get` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct GetArgs {
    /// The handoff id.
    handoff_id: String,
}

/// `handoff_claim` and `handoff_claim_and_spawn` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ClaimArgs {
    /// The claiming agent.
    agent: String,
    /// The handoff to claim; without it, the oldest one this agent may take.
    #[serde(default)]
    handoff_id: Option<String>,
    /// With no handoff_id: only look within this task.
    #[serde(default)]
    task_id: Option<String>,
    /// How long the claim lasts without a heartbeat (default 300).
    #[serde(default)]
    lease_seconds: Option<u64>,
}

/// `handoff_heartbeat` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct HeartbeatArgs {
    /// The claimed handoff.
    handoff_id: String,
    /// The fencing token the claim returned.
    token: u64,
    /// The new lease, counted from now (default 300).
    #[serde(default)]
    lease_seconds: Option<u64>,
}

/// `handoff_release` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ReleaseArgs {
    /// The claimed handoff.
    handoff_id: String,
    /// The fencing token the claim returned.
    token: u64,
    /// Why it is given back.
    #[serde(default)]
    reason: Option<String>,
}

/// `handoff_complete` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CompleteArgs {
    /// The claimed handoff.
    handoff_id: String,
    /// The fencing token the claim returned.
    token: u64,
    /// The result, for whoever reads the log.
    #[serde(default)]
    outcome: Option<String>,
}

/// `handoff_chain` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct ChainArgs {
    /// The task.
    task_id: String,
}

/// The MCP server: a store, and optionally the successor command for claim-and-spawn.
#[derive(Clone, Debug)]
pub(crate) struct Server {
    store: Store,
    db: PathBuf,
    spawn: Option<Arc<SpawnConfig>>,
    tools: Arc<[Tool]>,
}

const INSTRUCTIONS: &str = "Hand unfinished work to another agent, or take it over. \
To hand over: handoff_create with task_id, goal, what is done and pending, decisions and \
warnings. To take over: handoff_claim (returns a fencing token and the handoff's Markdown), \
handoff_heartbeat within the lease while working, then handoff_complete (or handoff_release \
to give it back). handoff_chain shows who passed a task to whom.";

/// The input schema of `T`, generated from its serde and schemars derives.
fn schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    // Every argument type is a struct, so the check that the root is an object cannot fail;
    // the fallback keeps the full schema rather than panicking if it ever did.
    schema_for_input::<T>().unwrap_or_else(|_| schema_for_type::<T>())
}

fn tools() -> Vec<Tool> {
    let read_only = || ToolAnnotations::new().read_only(true);
    vec![
        Tool::new(
            "handoff_create",
            "Create a pending handoff: the goal and everything the next agent needs to continue.",
            schema::<CreateArgs>(),
        ),
        Tool::new(
            "handoff_list",
            "List handoffs, oldest first, optionally by status, task, addressee or kind.",
            schema::<ListArgs>(),
        )
        .with_annotations(read_only()),
        Tool::new(
            "handoff_get",
            "Get one handoff as Markdown (the DNA a successor reads) and as a record.",
            schema::<GetArgs>(),
        )
        .with_annotations(read_only()),
        Tool::new(
            "handoff_claim",
            "Claim a handoff (or, without handoff_id, the oldest one the agent may take). \
             Returns the fencing token and the Markdown DNA. Exactly one concurrent claimer wins.",
            schema::<ClaimArgs>(),
        ),
        Tool::new(
            "handoff_heartbeat",
            "Extend a claim's lease; fails with LEASE_LOST when the claim is no longer yours.",
            schema::<HeartbeatArgs>(),
        ),
        Tool::new(
            "handoff_release",
            "Give a claimed handoff back: it becomes pending for another agent.",
            schema::<ReleaseArgs>(),
        ),
        Tool::new(
            "handoff_complete",
            "Finish a claimed handoff with an outcome.",
            schema::<CompleteArgs>(),
        ),
        Tool::new(
            "handoff_chain",
            "A task's chain of hops from agent to agent.",
            schema::<ChainArgs>(),
        )
        .with_annotations(read_only()),
        Tool::new(
            "handoff_claim_and_spawn",
            "Claim a handoff and run the server's configured successor command on its DNA: \
             heartbeats while it runs, completes on exit 0, releases on failure, and reports \
             its output.",
            schema::<ClaimArgs>(),
        ),
    ]
}

/// Parses tool arguments; a mismatch is a validation error naming the problem.
fn parse<T: DeserializeOwned>(arguments: Option<JsonObject>) -> CliResult<T> {
    let value = Value::Object(arguments.unwrap_or_default());
    serde_json::from_value(value).map_err(|e| Error::invalid("arguments", e.to_string()).into())
}

fn lease(seconds: Option<u64>) -> Duration {
    Duration::from_secs(seconds.unwrap_or(DEFAULT_LEASE_SECONDS))
}

fn record_reply(h: &handoff_core::Handoff) -> Reply {
    Reply::new(output::record_line(h), json!({ "handoff": h }))
}

impl Server {
    pub(crate) fn new(store: Store, db: PathBuf, spawn: Option<SpawnConfig>) -> Server {
        Server {
            store,
            db,
            spawn: spawn.map(Arc::new),
            tools: tools().into(),
        }
    }

    /// Runs one tool call to its reply. Blocking: the caller runs it off the async threads.
    fn call(&self, name: &str, arguments: Option<JsonObject>) -> CliResult<Reply> {
        let store = &self.store;
        match name {
            "handoff_create" => {
                let args: CreateArgs = parse(arguments)?;
                let h = store.create(args.into_new())?;
                Ok(Reply::new(
                    format!("created {}", output::record_line(&h)),
                    json!({ "handoff": h }),
                ))
            }
            "handoff_list" => {
                let args: ListArgs = parse(arguments)?;
                let records = store.list(&args.into_filter())?;
                Ok(Reply::new(
                    output::handoff_table(&records),
                    json!({ "count": records.len(), "handoffs": records }),
                ))
            }
            "handoff_get" => {
                let args: GetArgs = parse(arguments)?;
                let h = store.get(&args.handoff_id)?;
                let markdown = h.to_markdown();
                Ok(Reply::new(
                    markdown.clone(),
                    json!({ "handoff": h, "markdown": markdown }),
                ))
            }
            "handoff_claim" => {
                let args: ClaimArgs = parse(arguments)?;
                Ok(match self.claim(&args)? {
                    Some(claim) => {
                        let mut json = output::claim_json(&claim);
                        json["claimed"] = json!(true);
                        Reply::new(output::claim_text(&claim), json)
                    }
                    None => Reply::new(
                        format!("nothing for {} to claim", args.agent),
                        json!({ "claimed": false }),
                    ),
                })
            }
            "handoff_heartbeat" => {
                let args: HeartbeatArgs = parse(arguments)?;
                let seconds = args.lease_seconds.unwrap_or(DEFAULT_LEASE_SECONDS);
                let claim = claim_from_token(store, &args.handoff_id, args.token, seconds)?;
                Ok(record_reply(&store.heartbeat(&claim)?))
            }
            "handoff_release" => {
                let args: ReleaseArgs = parse(arguments)?;
                let claim = claim_from_token(store, &args.handoff_id, args.token, 0)?;
                let reason = args.reason.unwrap_or_else(|| "released".to_owned());
                Ok(record_reply(&store.release(&claim, &reason)?))
            }
            "handoff_complete" => {
                let args: CompleteArgs = parse(arguments)?;
                let claim = claim_from_token(store, &args.handoff_id, args.token, 0)?;
                let outcome = args.outcome.unwrap_or_default();
                Ok(record_reply(&store.complete(&claim, &outcome)?))
            }
            "handoff_chain" => {
                let args: ChainArgs = parse(arguments)?;
                let chain = store.chain(&args.task_id)?;
                Ok(Reply::new(
                    output::chain_text(&chain),
                    output::chain_json(&chain),
                ))
            }
            "handoff_claim_and_spawn" => {
                let args: ClaimArgs = parse(arguments)?;
                let Some(config) = self.spawn.clone() else {
                    return Err(Error::invalid(
                        "handoff_claim_and_spawn",
                        "no successor command is configured: start the server with \
                         `handoff mcp --spawn CMD`",
                    )
                    .into());
                };
                Ok(match self.claim(&args)? {
                    Some(claim) => spawn::run(store, &self.db, &claim, &config).reply(),
                    None => Reply::new(
                        format!("nothing for {} to claim", args.agent),
                        json!({ "claimed": false }),
                    ),
                })
            }
            other => Err(Error::invalid("name", format!("no tool is named {other:?}")).into()),
        }
    }

    fn claim(&self, args: &ClaimArgs) -> CliResult<Option<handoff_core::Claim>> {
        if args.handoff_id.is_some() && args.task_id.is_some() {
            return Err(Error::invalid(
                "task_id",
                "only applies without handoff_id (to claim the next handoff of a task)",
            )
            .into());
        }
        let lease = lease(args.lease_seconds);
        Ok(match &args.handoff_id {
            Some(id) => Some(self.store.claim(id, &args.agent, lease)?),
            None => self
                .store
                .claim_next(&args.agent, args.task_id.as_deref(), lease)?,
        })
    }
}

/// A tool error: the readable message as text, the error object as structured content.
fn tool_error(e: &CliError) -> CallToolResult {
    let mut result = CallToolResult::error(vec![ContentBlock::text(format!("{}: {e}", e.code()))]);
    result.structured_content = Some(e.to_json());
    result
}

fn tool_success(reply: Reply) -> CallToolResult {
    let mut result = CallToolResult::success(vec![ContentBlock::text(reply.text)]);
    result.structured_content = Some(reply.json);
    result
}

impl ServerHandler for Server {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("handoff", env!("CARGO_PKG_VERSION")))
            .with_instructions(INSTRUCTIONS)
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.to_vec()))
    }

    fn get_tool(&self, name: &str) -> Option<Tool> {
        self.tools.iter().find(|tool| tool.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        _context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        if !self.tools.iter().any(|tool| tool.name == name) {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {name:?}"),
                None,
            ));
        }
        let server = self.clone();
        let arguments = request.arguments;
        // Store calls block (SQLite, a spawned successor): keep them off the async workers.
        // A panic in a call becomes a tool error too, never the end of the server.
        let result = tokio::task::spawn_blocking(move || server.call(&name, arguments)).await;
        Ok(match result {
            Ok(Ok(reply)) => tool_success(reply),
            Ok(Err(e)) => tool_error(&e),
            Err(join) => tool_error(&CliError::Core(Error::storage(format!(
                "the tool call failed unexpectedly: {join}"
            )))),
        }
        .into())
    }
}

/// Serves `store` on stdin/stdout until the client closes the connection.
pub(crate) fn serve(store: Store, db: PathBuf, spawn: Option<SpawnConfig>) -> CliResult<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::io("cannot start the async runtime", e))?;
    runtime.block_on(async move {
        let service = Server::new(store, db, spawn)
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|e| {
                CliError::Core(Error::storage(format!("MCP initialisation failed: {e}")))
            })?;
        service
            .waiting()
            .await
            .map_err(|e| CliError::Core(Error::storage(format!("MCP server stopped: {e}"))))?;
        Ok(())
    })
}
