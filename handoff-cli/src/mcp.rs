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

use crate::args::{DEFAULT_LEASE_SECONDS, EventsArgs, ListArgs};
use crate::commands::{EVENTS_PAGE, claim_ref, event_filter};
use crate::error::{CliError, CliResult};
use crate::fields::{CheckpointArgs, CreateArgs};
use crate::jsonrpc;
use crate::output::{self, Output, Reply, to_json};
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

/// `handoff_claim_and_spawn` arguments: a claim, and what this call adds to the successor's run.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SpawnArgs {
    /// The claiming agent.
    agent: String,
    /// The handoff to claim; without it, the oldest one this agent may take.
    #[serde(default)]
    handoff_id: Option<String>,
    /// With no handoff_id: only look within this task.
    #[serde(default)]
    task_id: Option<String>,
    /// How long the claim lasts without a heartbeat (default 300); the server heartbeats
    /// while the successor runs.
    #[serde(default)]
    lease_seconds: Option<u64>,
    /// More guidance for the successor, appended to its prompt under "## Additional
    /// Instructions".
    #[serde(default)]
    additional_instructions: Option<String>,
    /// Kill the successor and release the handoff after this many seconds (1 to 86400; never
    /// longer than the server's --spawn-timeout).
    #[serde(default)]
    #[schemars(range(min = 1, max = 86400))]
    timeout_seconds: Option<u64>,
}

impl SpawnArgs {
    fn claim(&self) -> ClaimArgs {
        ClaimArgs {
            agent: self.agent.clone(),
            handoff_id: self.handoff_id.clone(),
            task_id: self.task_id.clone(),
            lease_seconds: self.lease_seconds,
        }
    }
}

/// `handoff_reject` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct RejectArgs {
    /// The handoff addressed to you.
    handoff_id: String,
    /// The refusing agent: the addressee, or the holder.
    agent: String,
    /// Why it is refused.
    reason: String,
}

/// `handoff_cancel` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct CancelArgs {
    /// The pending or claimed handoff.
    handoff_id: String,
    /// The creator (from_agent) cancelling by name (anyone, when the handoff names no
    /// creator). The holder gives token and claim_secret instead.
    #[serde(default)]
    by: Option<String>,
    /// The holder's fencing token (with claim_secret).
    #[serde(default)]
    token: Option<u64>,
    /// The holder's claim secret, as handoff_claim returned it (with token).
    #[serde(default)]
    claim_secret: Option<String>,
    /// Why.
    #[serde(default)]
    reason: Option<String>,
}

/// `handoff_policy` arguments: none.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PolicyArgs {}

/// `handoff_stats` arguments: none.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct StatsArgs {}

/// `handoff_stalled` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct StalledArgs {
    /// How long a task in progress may go without a claim, heartbeat or checkpoint.
    older_than_seconds: u64,
}

/// `handoff_heartbeat` arguments.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct HeartbeatArgs {
    /// The claimed handoff.
    handoff_id: String,
    /// The fencing token the claim returned.
    token: u64,
    /// The claim secret the claim returned (only the claimer has it).
    claim_secret: String,
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
    /// The claim secret the claim returned (only the claimer has it).
    claim_secret: String,
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
    /// The claim secret the claim returned (only the claimer has it).
    claim_secret: String,
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
    /// How records are shown: redacted unless the server was started with `--no-redact`
    /// (the owner's choice; no tool argument can change it).
    out: Output,
    tools: Arc<[Tool]>,
}

const INSTRUCTIONS: &str = "Hand unfinished work to another agent, or take it over. \
To hand over: handoff_create with task_id, goal, what is done and pending, decisions and \
warnings. To take over: handoff_claim (returns a fencing token, a claim_secret that only you get, and \
the handoff's Markdown), handoff_heartbeat within the lease while working, then \
handoff_complete (or handoff_release to give it back), each with the token and claim_secret. \
handoff_reject refuses work addressed to you, handoff_cancel withdraws your own. handoff_checkpoint saves progress without handing over; handoff_stalled finds tasks gone \
quiet. handoff_chain, handoff_events and handoff_stats show who passed what to whom. Secrets in \
records are shown as [REDACTED:<rule>].";

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
             Returns the fencing token, the claim_secret (keep it: heartbeat, release and \
             complete need it, and it is shown only here) and the Markdown DNA. Exactly one \
             concurrent claimer wins.",
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
            "Claim a handoff and run the server's configured successor command on its DNA \
             (plus additional_instructions, if given): heartbeats while it runs, completes on \
             exit 0, releases on failure or after timeout_seconds, and reports its output.",
            schema::<SpawnArgs>(),
        ),
        Tool::new(
            "handoff_reject",
            "Refuse a handoff addressed to you (or that you hold), with a reason.",
            schema::<RejectArgs>(),
        ),
        Tool::new(
            "handoff_cancel",
            "Withdraw a pending or claimed handoff: by its creator (by), or by its holder \
             (token and claim_secret).",
            schema::<CancelArgs>(),
        ),
        Tool::new(
            "handoff_events",
            "The event log (created, claimed, heartbeat, released, completed, ...), oldest \
             first: of one handoff, of a task, or of the store. At most 1000 per call (limit \
             lowers it); next_after, when present, is the after of the next page.",
            schema::<EventsArgs>(),
        )
        .with_annotations(read_only()),
        Tool::new(
            "handoff_stats",
            "Per from→to pair of agents: how many handoffs, completed, failed, rejected, and \
             the median seconds to claim and to complete.",
            schema::<StatsArgs>(),
        )
        .with_annotations(read_only()),
        Tool::new(
            "handoff_checkpoint",
            "Save your progress on a task without handing it over: goal, progress, what is \
             done and pending. The checkpoint is never claimable and is not a hop.",
            schema::<CheckpointArgs>(),
        ),
        Tool::new(
            "handoff_policy",
            "The chain policy and limits saved in the store, and the ones this server applies.",
            schema::<PolicyArgs>(),
        )
        .with_annotations(read_only()),
        Tool::new(
            "handoff_stalled",
            "Tasks in progress with no claim, heartbeat or checkpoint for older_than_seconds.",
            schema::<StalledArgs>(),
        )
        .with_annotations(read_only()),
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

impl Server {
    pub(crate) fn new(
        store: Store,
        db: PathBuf,
        spawn: Option<SpawnConfig>,
        out: Output,
    ) -> Server {
        Server {
            store,
            db,
            spawn: spawn.map(Arc::new),
            out,
            tools: tools().into(),
        }
    }

    fn record_reply(&self, h: &handoff_core::Handoff) -> Reply {
        Reply::new(
            self.out.record_line(h),
            json!({ "handoff": self.out.record(h) }),
        )
    }

    /// Runs one tool call to its reply. Blocking: the caller runs it off the async threads.
    fn call(&self, name: &str, arguments: Option<JsonObject>) -> CliResult<Reply> {
        let store = &self.store;
        let out = &self.out;
        match name {
            "handoff_create" => {
                let args: CreateArgs = parse(arguments)?;
                let h = store.create(args.into_new()?)?;
                Ok(Reply::new(
                    format!("created {}", out.record_line(&h)),
                    json!({ "handoff": out.record(&h) }),
                ))
            }
            "handoff_list" => {
                let args: ListArgs = parse(arguments)?;
                let records = store.list(&args.into_filter())?;
                Ok(Reply::new(
                    out.handoff_table(&records),
                    json!({ "count": records.len(), "handoffs": out.records(&records) }),
                ))
            }
            "handoff_get" => {
                let args: GetArgs = parse(arguments)?;
                let h = store.get(&args.handoff_id)?;
                let markdown = out.markdown(&h);
                Ok(Reply::new(
                    markdown.clone(),
                    json!({ "handoff": out.record(&h), "markdown": markdown }),
                ))
            }
            "handoff_claim" => {
                let args: ClaimArgs = parse(arguments)?;
                Ok(match self.claim(&args)? {
                    Some(claim) => {
                        let mut json = out.claim_json(&claim);
                        json["claimed"] = json!(true);
                        Reply::new(out.claim_text(&claim), json)
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
                let claim = claim_ref(&args.handoff_id, args.token, &args.claim_secret, seconds)?;
                Ok(self.record_reply(&store.heartbeat(claim)?))
            }
            "handoff_release" => {
                let args: ReleaseArgs = parse(arguments)?;
                let claim = claim_ref(
                    &args.handoff_id,
                    args.token,
                    &args.claim_secret,
                    DEFAULT_LEASE_SECONDS,
                )?;
                let reason = args.reason.unwrap_or_else(|| "released".to_owned());
                Ok(self.record_reply(&store.release(claim, &reason)?))
            }
            "handoff_complete" => {
                let args: CompleteArgs = parse(arguments)?;
                let claim = claim_ref(
                    &args.handoff_id,
                    args.token,
                    &args.claim_secret,
                    DEFAULT_LEASE_SECONDS,
                )?;
                let outcome = args.outcome.unwrap_or_default();
                Ok(self.record_reply(&store.complete(claim, &outcome)?))
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
                let args: SpawnArgs = parse(arguments)?;
                let Some(config) = self.spawn.as_deref() else {
                    return Err(Error::invalid(
                        "handoff_claim_and_spawn",
                        "no successor command is configured: start the server with \
                         `handoff mcp --spawn CMD`",
                    )
                    .into());
                };
                // Checked before claiming: a bad timeout must not leave a claim behind.
                let config = config.with_timeout(args.timeout_seconds)?;
                Ok(match self.claim(&args.claim())? {
                    Some(claim) => {
                        let prompt =
                            out.prompt(&claim.handoff, args.additional_instructions.as_deref());
                        spawn::run(store, &self.db, &claim, &config, prompt).reply(out)
                    }
                    None => Reply::new(
                        format!("nothing for {} to claim", args.agent),
                        json!({ "claimed": false }),
                    ),
                })
            }
            "handoff_reject" => {
                let args: RejectArgs = parse(arguments)?;
                let h = store.reject(&args.handoff_id, &args.agent, &args.reason)?;
                Ok(self.record_reply(&h))
            }
            "handoff_cancel" => {
                let args: CancelArgs = parse(arguments)?;
                let reason = args.reason.as_deref();
                let h = match (&args.by, args.token, &args.claim_secret) {
                    (None, Some(token), Some(secret)) => {
                        let claim =
                            claim_ref(&args.handoff_id, token, secret, DEFAULT_LEASE_SECONDS)?;
                        store.cancel_claim(claim, reason)?
                    }
                    (Some(by), None, None) => store.cancel(&args.handoff_id, by, reason)?,
                    _ => {
                        return Err(Error::invalid(
                            "by",
                            "give by (the creator), or token and claim_secret (the holder)",
                        )
                        .into());
                    }
                };
                Ok(self.record_reply(&h))
            }
            "handoff_events" => {
                let args: EventsArgs = parse(arguments)?;
                let mut filter = event_filter(&args)?;
                let page = filter.limit.map_or(EVENTS_PAGE, |n| n.min(EVENTS_PAGE));
                // One more than the page tells whether there is a next one.
                filter.limit = Some(page + 1);
                let mut events = store.events_page(&filter)?;
                let more = events.len() > page;
                events.truncate(page);
                let mut json = json!({ "count": events.len(), "events": out.events_json(&events) });
                if more && let Some(last) = events.last() {
                    json["next_after"] = json!(last.seq);
                }
                let mut text = out.events_text(&events);
                if more && let Some(last) = events.last() {
                    text.push_str(&format!("more: call again with after={}\n", last.seq));
                }
                Ok(Reply::new(text, json))
            }
            "handoff_policy" => {
                let _: PolicyArgs = parse(arguments)?;
                let pair = |policy: &handoff_core::ChainPolicy, limits: &handoff_core::Limits| json!({ "chain_policy": to_json(policy), "limits": to_json(limits) });
                let saved = store.saved_policy()?.map(|(p, l)| pair(&p, &l));
                let in_force = pair(store.policy(), store.limits());
                let text = match &saved {
                    Some(saved) => format!("saved: {saved}\nin force: {in_force}"),
                    None => format!("nothing saved in the store\nin force: {in_force}"),
                };
                Ok(Reply::new(
                    text,
                    json!({ "saved": saved, "in_force": in_force }),
                ))
            }
            "handoff_stats" => {
                let _: StatsArgs = parse(arguments)?;
                let stats = store.stats()?;
                Ok(Reply::new(
                    output::stats_text(&stats),
                    json!({ "paths": to_json(&stats) }),
                ))
            }
            "handoff_checkpoint" => {
                let args: CheckpointArgs = parse(arguments)?;
                let (task_id, agent, content) = args.into_parts()?;
                let h = store.checkpoint(&task_id, &agent, content)?;
                Ok(Reply::new(
                    format!("checkpoint {}", out.record_line(&h)),
                    json!({ "handoff": out.record(&h) }),
                ))
            }
            "handoff_stalled" => {
                let args: StalledArgs = parse(arguments)?;
                let tasks = store.stalled(Duration::from_secs(args.older_than_seconds))?;
                Ok(Reply::new(
                    output::stalled_text(&tasks, args.older_than_seconds),
                    json!({ "count": tasks.len(), "task_ids": tasks }),
                ))
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

/// A tool error: the readable message as text, the error object as structured content. An
/// error may quote the call's input, so it leaves through `out` like a result.
fn tool_error(e: &CliError, out: &Output) -> CallToolResult {
    let text = format!("{}: {}", e.code(), e.shown_text(out));
    let mut result = CallToolResult::error(vec![ContentBlock::text(text)]);
    result.structured_content = Some(e.shown_json(out));
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
        let out = self.out;
        let arguments = request.arguments;
        // Store calls block (SQLite, a spawned successor): keep them off the async workers.
        // A panic in a call becomes a tool error too, never the end of the server.
        let result = tokio::task::spawn_blocking(move || server.call(&name, arguments)).await;
        Ok(match result {
            Ok(Ok(reply)) => tool_success(reply),
            Ok(Err(e)) => tool_error(&e, &out),
            Err(join) => tool_error(
                &CliError::Core(Error::storage(format!(
                    "the tool call failed unexpectedly: {join}"
                ))),
                &out,
            ),
        }
        .into())
    }
}

/// Serves `store` on stdin/stdout until the client closes the connection. Requests pass the
/// line guard ([`crate::jsonrpc`]) first, which answers malformed ones itself.
pub(crate) fn serve(
    store: Store,
    db: PathBuf,
    spawn: Option<SpawnConfig>,
    out: Output,
) -> CliResult<()> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| CliError::output("cannot start the async runtime", e))?;
    let served = runtime.block_on(async move {
        let stdout = Arc::new(tokio::sync::Mutex::new(tokio::io::stdout()));
        // The guard writes the good lines into one pipe, rmcp answers into another, and
        // `forward` copies those answers to stdout whole, between the guard's own.
        let (guarded, server_in) = tokio::io::duplex(1 << 20);
        let (server_out, answers) = tokio::io::duplex(1 << 20);
        tokio::spawn(jsonrpc::guard(
            tokio::io::stdin(),
            guarded,
            Arc::clone(&stdout),
        ));
        let forwarding = tokio::spawn(jsonrpc::forward(answers, stdout));
        let service = Server::new(store, db, spawn, out)
            .serve((server_in, server_out))
            .await
            .map_err(|e| {
                CliError::Core(Error::storage(format!("MCP initialisation failed: {e}")))
            })?;
        let stopped = service
            .waiting()
            .await
            .map_err(|e| CliError::Core(Error::storage(format!("MCP server stopped: {e}"))));
        // The server has closed its end: send what it wrote last before leaving.
        let _ = tokio::time::timeout(Duration::from_secs(5), forwarding).await;
        stopped.map(|_| ())
    });
    // A read of stdin may still be pending on a blocking thread: do not wait for it.
    runtime.shutdown_background();
    served
}
