//! `handoff mcp`: the store as MCP tools over stdio, on the official Rust SDK (`rmcp`).
//!
//! Every store operation of the core's catalog is a tool (`handoff_<operation>` for a handoff's,
//! `<group>_<verb>` for the others': `task_create`, `memory_get`), whose input
//! schema is the operation's argument schema and whose arguments the core reads, so that a
//! model sees the same names, docs and problems as every other face (docs/design.md §15). Each answers
//! with readable text and `structuredContent`, and reports failure as a tool error (`isError`)
//! carrying `{"error": {"code", "message", ...}}`: bad arguments included, so a model can
//! correct itself and the server keeps serving. `handoff_claim_and_spawn` and
//! `handoff_policy` are the server's own.

use std::sync::Arc;
use std::time::Duration;

use handoff_core::ops::Arguments;
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
use serde_json::{Value, json};

use crate::credentials::{self, Agents};
use crate::error::{CliError, CliResult};
use crate::jsonrpc;
use crate::judge::{self, JudgeCmd};
use crate::location::Location;
use crate::operations::{self, DEFAULTS, Op, cap_to_a_page, name_flat_claim};
use crate::output::{self, Output, Reply};
use crate::results::Shown;
use crate::sampling::{self, ClientModel};
use crate::spawn::{self, SpawnConfig};
use crate::toolsets::{self, Selection};

/// `handoff_claim_and_spawn` arguments: `handoff_claim`'s, and what this call adds to the
/// successor's run.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct SpawnArgs {
    /// The claiming agent.
    #[schemars(extend("x-aliases" = ["agent_name", "agent_id"]))]
    agent: String,
    /// The handoff to claim; without it, the oldest one this agent may take.
    #[serde(default)]
    #[schemars(extend("x-aliases" = ["handover_id"]))]
    handoff_id: Option<String>,
    /// With no handoff_id: only look within this task.
    #[serde(default)]
    task_id: Option<String>,
    /// How long the claim lasts without a heartbeat (default 300); the server heartbeats
    /// while the successor runs.
    #[serde(default)]
    lease_seconds: Option<f64>,
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

impl Arguments for SpawnArgs {}

/// `handoff_policy` arguments: none.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct PolicyArgs {}

impl Arguments for PolicyArgs {}

/// The MCP server: a store, and optionally the successor command for claim-and-spawn.
#[derive(Clone, Debug)]
pub(crate) struct Server {
    store: Store,
    db: Location,
    spawn: Option<Arc<SpawnConfig>>,
    /// How records are shown: redacted unless the server was started with `--no-redact`
    /// (the owner's choice; no tool argument can change it).
    out: Output,
    tools: Arc<[Tool]>,
    /// The agents this session may act as: every agent, unless the server was started with
    /// `--credentials` (then the agents of the token in `HANDOFF_AGENT_TOKEN`).
    caller: Arc<Agents>,
    /// The operator's judge (`--judge-cmd`): asked before the client's own model.
    judge: Option<Arc<JudgeCmd>>,
}

const INSTRUCTIONS: &str = "Hand unfinished work to another agent, or take it over. \
To hand over: handoff_create with task_id, goal, what is done and pending, decisions and \
warnings. To take over: handoff_claim (or handoff_claim_next) returns a fencing token, a \
claim_secret that only you get, and the handoff's Markdown; while working, handoff_heartbeat \
within the lease, then handoff_complete (or handoff_release to give it back), each with the \
claim {handoff_id, token, secret}. handoff_reject refuses work addressed to you, \
handoff_cancel withdraws your own (handoff_cancel_claim one you hold). handoff_checkpoint saves \
progress without handing over; handoff_stalled finds tasks gone quiet. handoff_chain, \
handoff_events and handoff_stats show who passed what to whom; handoff_capabilities says what \
the store can do (durable, shared by processes or machines, backups, waking waiting claims). \
Tasks: task_create with a plan of steps (id, name, agent, dependencies), task_start offers the \
steps that wait for nothing as handoffs to their agents, who take them with handoff_claim_next \
and finish with handoff_complete (step_fail when the work failed: retried, then escalated to a \
human who answers with task_resolve); task_get, task_list, task_events and task_history show \
how it goes. memory_get and memory_put (with expected_version) keep versioned JSON per scope; \
session_get says who owns a conversation. Lists come a page at a time: \
next_after, when present, is the after of the next page. Secrets in records are shown as \
[REDACTED:<rule>].";

/// The input schema of a hand-written tool's arguments `T`.
fn schema<T: JsonSchema + 'static>() -> Arc<JsonObject> {
    // Every argument type is a struct, so the check that the root is an object cannot fail;
    // the fallback keeps the full schema rather than panicking if it ever did.
    schema_for_input::<T>().unwrap_or_else(|_| schema_for_type::<T>())
}

/// The operation's tool: its arguments' schema, and its doc on one line per paragraph.
fn operation_tool(op: &Op) -> Tool {
    let description = op
        .info
        .description()
        .split("\n\n")
        .map(|p| p.split_whitespace().collect::<Vec<_>>().join(" "))
        .collect::<Vec<_>>()
        .join("\n\n");
    let mut schema = match &op.info.arguments {
        Value::Object(schema) => schema.clone(),
        _ => JsonObject::new(),
    };
    compact(&mut schema);
    if sampling::SAMPLED.contains(&op.name())
        && let Some(Value::Object(properties)) = schema.get_mut("properties")
    {
        properties.insert(
            sampling::USE_CLIENT_MODEL.to_owned(),
            sampling::switch_schema(),
        );
    }
    let description = if op.argument("wait_seconds").is_some() {
        format!(
            "{description}\n\nThis server waits at most {} seconds per call: call again to \
             wait longer.",
            MAX_WAIT.as_secs()
        )
    } else {
        description
    };
    let tool = Tool::new(op.info.tool(), description, Arc::new(schema));
    if op.reads_only() {
        tool.with_annotations(ToolAnnotations::new().read_only(true))
    } else {
        tool
    }
}

/// An arguments' schema as a tool lists it: what a model needs to call it, without what only
/// repeats or restates (the tool's description again, titles, `$schema`, empty defaults, number
/// formats) and with each choice of words as an `enum`. Every client reads every tool's schema in every conversation; this takes a third
/// off them. The server still checks the arguments against the full schema.
fn compact(schema: &mut JsonObject) {
    for key in ["$schema", "title", "description"] {
        schema.remove(key);
    }
    fn walk(value: &mut Value) {
        match value {
            Value::Object(object) => {
                // An absent argument is null, empty or false anyway.
                if object.get("default").is_some_and(|default| {
                    default.is_null() || *default == json!([]) || *default == json!(false)
                }) {
                    object.remove("default");
                }
                // Doc comments' line breaks are not the model's business.
                if let Some(Value::String(description)) = object.get_mut("description") {
                    *description = description.split_whitespace().collect::<Vec<_>>().join(" ");
                }
                if object
                    .get("format")
                    .and_then(Value::as_str)
                    .is_some_and(|format| format != "date-time")
                {
                    object.remove("format");
                }
                let words: Option<Vec<Value>> = object
                    .get("oneOf")
                    .and_then(Value::as_array)
                    .and_then(|choices| {
                        choices
                            .iter()
                            .map(|choice| {
                                (choice.get("type")? == "string")
                                    .then(|| choice.get("const").cloned())?
                            })
                            .collect()
                    });
                if let Some(words) = words {
                    object.remove("oneOf");
                    object.insert("type".to_owned(), json!("string"));
                    object.insert("enum".to_owned(), Value::Array(words));
                }
                object.values_mut().for_each(walk);
            }
            Value::Array(items) => items.iter_mut().for_each(walk),
            _ => {}
        }
    }
    schema.values_mut().for_each(walk);
}

/// The tools of the chosen sets.
pub(crate) fn tools(chosen: &Selection) -> Vec<Tool> {
    let mut tools: Vec<Tool> = operations::all()
        .iter()
        .filter(|op| chosen.offers(&toolsets::sets_of_op(op)))
        .map(operation_tool)
        .collect();
    let written_here = [
        Tool::new(
            toolsets::CLAIM_AND_SPAWN,
            "Claim a handoff and run the server's configured successor command on its packet (the \
         record and what the store knows beyond it, as `context` gives it; plus \
         additional_instructions, if given): heartbeats while it runs, completes on \
         exit 0, releases on failure or after timeout_seconds, and reports its output.",
            schema::<SpawnArgs>(),
        ),
        Tool::new(
            toolsets::POLICY,
            "The chain policy and limits saved in the store, and the ones this server applies.",
            schema::<PolicyArgs>(),
        )
        .with_annotations(ToolAnnotations::new().read_only(true)),
    ];
    tools.extend(
        written_here
            .into_iter()
            .filter(|tool| chosen.offers(toolsets::sets_of_tool(tool.name.as_ref()))),
    );
    tools
}

/// The spellings the tools took before they were derived from the core's arguments (issue
/// #13), still read so that existing clients keep working: `handoff_id` for `id`; a claim
/// given flat (`handoff_id`, `token`, `claim_secret`, `lease_seconds`) rather than as
/// `claim`; `handoff_claim` without an id for the next handoff the agent may take
/// (`handoff_claim_next`); `handoff_cancel` with the holder's claim (`handoff_cancel_claim`);
/// and, with a flat claim, the [`DEFAULTS`] of arguments that were optional then.
/// Returns the operation to run, and whether the claim was given flat.
fn old_spellings(op: &'static Op, args: &mut JsonObject) -> (&'static Op, bool) {
    let has = |args: &JsonObject, keys: &[&str]| keys.iter().any(|k| args.contains_key(*k));
    let routed = match op.name() {
        // `handover_id`: seed 000's name for the handoff (`masc_handover_claim`).
        "claim" if !has(args, &["id", "handoff_id", "handover_id"]) => {
            operations::find("claim_next")
        }
        "cancel" if has(args, &["claim", "token", "claim_secret"]) => {
            operations::find("cancel_claim")
        }
        _ => None,
    };
    let op = routed.unwrap_or(op);
    if op.argument("id").is_some()
        && op.argument("handoff_id").is_none()
        && !args.contains_key("id")
        && let Some(id) = args.remove("handoff_id")
    {
        args.insert("id".to_owned(), id);
    }
    let flat = op.argument("claim").is_some()
        && !args.contains_key("claim")
        && has(args, &["handoff_id", "token", "claim_secret"]);
    if flat {
        let mut claim = JsonObject::new();
        for (old, new) in [
            ("handoff_id", "handoff_id"),
            ("token", "token"),
            ("claim_secret", "secret"),
            ("lease_seconds", "lease_seconds"),
        ] {
            if let Some(value) = args.remove(old) {
                claim.insert(new.to_owned(), value);
            }
        }
        args.insert("claim".to_owned(), Value::Object(claim));
        for (_, argument, value) in DEFAULTS.iter().filter(|(name, ..)| *name == op.name()) {
            args.entry(*argument).or_insert_with(|| json!(value));
        }
    }
    (op, flat)
}

/// Tools whose name changed with their CLI command, by their old names: still answered (not
/// listed), so that clients configured with the old name keep working. `context_for` became
/// `context` when `handoff context-for` became `handoff context`.
const RENAMED_TOOLS: &[(&str, &str)] = &[("context_for", "context")];

/// The name a tool goes by now.
fn current_tool_name(name: &str) -> &str {
    RENAMED_TOOLS
        .iter()
        .find(|(old, _)| *old == name)
        .map_or(name, |(_, new)| new)
}

/// The longest one tool call waits for work (`wait_seconds`): under the 60-second request
/// timeout of common MCP clients (the TypeScript SDK's default), so that a waiting call
/// answers "nothing to claim" rather than being abandoned by its client with a claim made
/// after it gave up.
const MAX_WAIT: Duration = Duration::from_secs(50);

impl Server {
    pub(crate) fn new(
        store: Store,
        db: Location,
        spawn: Option<SpawnConfig>,
        out: Output,
        caller: Agents,
        judge: Option<JudgeCmd>,
        chosen: &Selection,
    ) -> Server {
        Server {
            store,
            db,
            spawn: spawn.map(Arc::new),
            out,
            tools: tools(chosen).into(),
            caller: Arc::new(caller),
            judge: judge.map(Arc::new),
        }
    }

    /// Runs one tool call to its reply. Blocking: the caller runs it off the async threads.
    /// `cancelled` says whether the client has given up on the call.
    /// `model`: the client's own model, when it can sample.
    fn call(
        &self,
        name: &str,
        arguments: Option<JsonObject>,
        cancelled: &dyn Fn() -> bool,
        model: Option<&ClientModel>,
    ) -> CliResult<Reply> {
        let arguments = arguments.unwrap_or_default();
        match current_tool_name(name) {
            toolsets::CLAIM_AND_SPAWN => self.claim_and_spawn(arguments),
            toolsets::POLICY => self.policy(arguments),
            name => match operations::all().iter().find(|op| op.info.tool() == name) {
                Some(op) => self.operation(op, arguments, cancelled, model),
                None => Err(Error::invalid("name", format!("no tool is named {name:?}")).into()),
            },
        }
    }

    fn operation(
        &self,
        op: &'static Op,
        mut args: JsonObject,
        cancelled: &dyn Fn() -> bool,
        model: Option<&ClientModel>,
    ) -> CliResult<Reply> {
        let (op, flat) = old_spellings(op, &mut args);
        credentials::check(op, &args, &self.caller)?;
        let page = op.is_paged().then(|| cap_to_a_page(&mut args));
        // A tool that can use the client's model takes the switch out of the arguments
        // whether or not the client can sample.
        let use_model = sampling::SAMPLED.contains(&op.name()) && sampling::take_switch(&mut args)?;
        let model = model.filter(|_| use_model);
        // The handoff whose packet `handoff_get` adds to its answer.
        let read_id = (op.name() == "get")
            .then(|| args.get("id").and_then(Value::as_str).map(str::to_owned))
            .flatten();
        // The operator's judge command, when there is one, goes before the client's model: the
        // server's owner chose it.
        let judge = self
            .judge
            .as_deref()
            .filter(|_| judge::JUDGED.contains(&op.name()));
        let result = match (model, judge) {
            (_, Some(judge)) => {
                judge::run_with_command(&self.store, op.name(), Value::Object(args), judge)
            }
            (Some(model), None) => model.run(&self.store, op.name(), Value::Object(args)),
            (None, None) if operations::waits(op, &args) => {
                operations::claim_waiting(&self.store, args, MAX_WAIT, &mut || cancelled())
            }
            (None, None) => op.call(&self.store, Value::Object(args)),
        }
        .map_err(|e| if flat { name_flat_claim(e) } else { e })?;
        // The answer to a call its client cancelled is never sent (nor one the server is
        // closing under): a claim made for it would be held by nobody until its lease lapsed.
        if cancelled()
            && let Some(claim) = result.claim()
        {
            let _ = self.store.give_back(claim);
        }
        let shown = Shown {
            op,
            outcome: &result,
            out: &self.out,
        };
        let mut text = shown.text();
        let mut json = shown.structured();
        if let (Some(page), Some((count, Some(last)))) = (page, result.extent())
            && count == page
        {
            text.push_str(&format!("more: call again with after={last}\n"));
            json["next_after"] = last;
        }
        // A claim's taker, and whoever reads a handoff, gets the successor's packet too: what
        // the store knows beyond the record (the task's plan, the outputs it depends on, the
        // agents before, the predecessor's findings, the branch to continue on). A packet that
        // cannot be read leaves the answer as it was: a claim is never lost for want of it.
        let context_of = read_id.or_else(|| result.claim().map(|c| c.handoff.id.clone()));
        let context = context_of.and_then(|id| output::packet(&self.store, &id).ok());
        if let Some(markdown) = &context {
            json["context"] = json!(markdown);
        }
        Ok(Reply::new(text, json).with_context(context))
    }

    fn claim_and_spawn(&self, arguments: JsonObject) -> CliResult<Reply> {
        let args = SpawnArgs::read(Value::Object(arguments), self.store.limits())?;
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
        let mut claim_args: JsonObject = [
            ("agent", json!(args.agent)),
            ("handoff_id", json!(args.handoff_id)),
            ("task_id", json!(args.task_id)),
            ("lease_seconds", json!(args.lease_seconds)),
        ]
        .into_iter()
        .filter(|(_, value)| !value.is_null())
        .map(|(name, value)| (name.to_owned(), value))
        .collect();
        let claim_op = operations::find("claim")
            .ok_or_else(|| Error::invalid("name", "no claim operation"))?;
        let (op, _) = old_spellings(claim_op, &mut claim_args);
        credentials::check(op, &claim_args, &self.caller)?;
        let result = op.call(&self.store, Value::Object(claim_args))?;
        Ok(match result.claim() {
            Some(claim) => {
                let prompt = self.out.prompt(
                    &self.store,
                    &claim.handoff,
                    args.additional_instructions.as_deref(),
                );
                spawn::run(&self.store, &self.db, claim, &config, prompt).reply(&self.out)
            }
            None => Reply::new("nothing to claim", json!({ "claimed": false })),
        })
    }

    fn policy(&self, arguments: JsonObject) -> CliResult<Reply> {
        PolicyArgs::read(Value::Object(arguments), self.store.limits())?;
        let (saved, in_force) = crate::commands::policies(&self.store)?;
        let text = match &saved {
            Some(saved) => format!("saved: {saved}\nin force: {in_force}"),
            None => format!("nothing saved in the store\nin force: {in_force}"),
        };
        Ok(Reply::new(
            text,
            json!({ "saved": saved, "in_force": in_force }),
        ))
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
    let mut content = vec![ContentBlock::text(reply.text)];
    // The successor's packet, for the model to read after the answer itself.
    content.extend(reply.context.map(ContentBlock::text));
    let mut result = CallToolResult::success(content);
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
        let name = current_tool_name(name);
        self.tools.iter().find(|tool| tool.name == name).cloned()
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.to_string();
        let current = current_tool_name(&name);
        if !self.tools.iter().any(|tool| tool.name == current) {
            return Err(ErrorData::invalid_params(
                format!("unknown tool {name:?}"),
                None,
            ));
        }
        let server = self.clone();
        let out = self.out;
        let arguments = request.arguments;
        let cancelled = context.ct.clone();
        let model = ClientModel::of(&context.peer);
        // Store calls block (SQLite, a spawned successor, a claim that waits for work): keep
        // them off the async workers, so that other calls are answered meanwhile. A panic in a
        // call becomes a tool error too, never the end of the server.
        let result = tokio::task::spawn_blocking(move || {
            server.call(
                &name,
                arguments,
                &|| cancelled.is_cancelled(),
                model.as_ref(),
            )
        })
        .await;
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
    db: Location,
    spawn: Option<SpawnConfig>,
    out: Output,
    caller: Agents,
    judge: Option<JudgeCmd>,
    chosen: &Selection,
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
        let service = Server::new(store, db, spawn, out, caller, judge, chosen)
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

#[cfg(test)]
mod toolset_sizes {
    #![allow(clippy::unwrap_used)]

    use super::*;

    /// How many tools a set offers and how many bytes their listing takes (`tools/list`'s
    /// JSON: names, descriptions, schemas).
    pub(crate) fn measure(set: &str) -> (usize, usize) {
        let tools = tools(&Selection::parse(Some(set)).unwrap());
        (tools.len(), serde_json::to_string(&tools).unwrap().len())
    }

    #[test]
    fn the_default_set_fits_a_coding_agents_context() {
        for (set, _) in toolsets::SETS {
            let (count, bytes) = measure(set);
            eprintln!("| `{set}` | {count} | {:.1} KB |", bytes as f64 / 1024.0);
        }
        let (count, bytes) = measure("handoffs");
        assert!(count <= 15, "{count} tools");
        assert!(bytes <= 16 * 1024, "{bytes} bytes");
    }

    /// The README's table of sets says what the server offers.
    #[test]
    fn the_readme_lists_each_set_as_measured() {
        let readme =
            std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../README.md")).unwrap();
        for (set, _) in toolsets::SETS {
            let (count, bytes) = measure(set);
            let row = format!("| `{set}` | {count} | {:.1} KB |", bytes as f64 / 1024.0);
            assert!(readme.contains(&row), "README.md should have the row {row}");
        }
    }
}
