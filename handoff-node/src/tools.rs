//! The agent registry: `transfer_to_<agent>` tool definitions for each provider, and the
//! detector that reads a provider's response for a handoff.

use handoff_core::ops;
use handoff_core::tools::{self as core, HandoffIntent};
use handoff_core::{ChainPolicy, Limits, Metadata, NewHandoff};
use napi::bindgen_prelude::{FunctionCallContext, JsObjectValue, Object};
use napi::{Env, JsValue, Property, PropertyAttributes, Unknown, ValueType};
use napi_derive::napi;
use serde_json::{Map, Value};

use crate::convert;
use crate::errors::{Naming, Outcome, camel_case, invalid};
use crate::ops::{Given, JsArguments};
use crate::output::{plain_to_js, to_js};
use crate::run::guarded;

/// A registered agent.
#[napi(
    object,
    js_name = "Agent",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[allow(dead_code)] // The TypeScript shape only: JavaScript gets the core's `Agent` (`output`).
pub struct JsAgent {
    /// Its name, as used in `fromAgent`/`toAgent`.
    pub name: String,
    /// What it is good at: goes into the tool description.
    pub description: String,
    /// Who it may hand off to; `null` is everyone else.
    pub collaborators: Option<Vec<String>>,
}

/// A handoff an LLM asked for through a `transfer_to_<agent>` tool call.
#[napi(
    object,
    js_name = "HandoffIntent",
    object_from_js = false,
    object_to_js = false,
    use_nullable = true
)]
#[allow(dead_code)] // The TypeScript shape only: JavaScript gets the core's `HandoffIntent`.
pub struct JsHandoffIntent {
    /// The agent to hand off to.
    pub target: String,
    /// The tool's arguments (`reason`, `summary`, `pending`, `instructions`), as sent.
    #[napi(ts_type = "JsonObject")]
    pub arguments: Metadata,
    /// The provider's id for the call, to answer it.
    pub call_id: Option<String>,
    /// The tool name the model called.
    pub tool: String,
    /// The handoff this intent asks for, as the options `store.create` takes: `toAgent` is the
    /// target, the model's `summary` the progress, `pending` the pending steps, `instructions`
    /// the instructions; its `reason` and the call id go in `metadata`. Only options that differ
    /// from `create`'s defaults are set; extend the object (`kind`, `contextPct`, ...) before
    /// creating. (A method that JSON leaves out, like Python's `intent.create_kwargs`.)
    #[napi(ts_type = "(taskId: string, fromAgent: string, goal: string) => CreateOptions")]
    pub to_create_options: (),
}

/// `registry.detect` options.
#[napi(object, object_to_js = false, object_from_js = false)]
#[allow(dead_code)] // The TypeScript shape only: the core reads the values (`ops::DetectArgs`).
pub struct DetectOptions {
    /// What to do when one response asks for several handoffs: refuse it (`'error'`, the
    /// default) or take the first (`'first_wins'`).
    #[napi(ts_type = "'error' | 'first_wins' | null")]
    pub multiple: Option<String>,
}

/// A chain policy as plain data, ready for `open(path, { policy })`.
#[napi(
    object,
    js_name = "Policy",
    object_from_js = false,
    object_to_js = false
)]
#[allow(dead_code)] // The TypeScript shape only: JavaScript gets the core's `ChainPolicy`.
pub struct JsPolicy {
    /// Most hops along one path of a task (parallel handoffs are separate paths).
    pub max_handoffs: f64,
    /// How often an agent may appear again along a path.
    pub max_revisits: f64,
    /// Who may hand off to whom.
    pub collaborators: std::collections::BTreeMap<String, Vec<String>>,
}

/// The agents of a swarm and who may hand off to whom.
#[napi]
pub struct AgentRegistry {
    inner: core::AgentRegistry,
}

#[napi]
impl AgentRegistry {
    /// An empty registry.
    #[napi(constructor, catch_unwind)]
    #[allow(clippy::new_without_default)] // the JavaScript constructor; Rust never builds one
    pub fn new() -> Self {
        AgentRegistry {
            inner: core::AgentRegistry::new(),
        }
    }

    /// The agents described by the `*.md` files in the folder `path` (not its sub-folders): the
    /// name from the front matter's `name:`, else the first `# ` heading, else the file name;
    /// who each may hand off to from its `## Collaborations` list (none without one). Problems
    /// name the file (`support.name`) or `path`.
    #[napi(factory, catch_unwind, ts_args_type = "path: string")]
    pub fn from_markdown_dir(env: Env, path: Unknown<'_>) -> napi::Result<AgentRegistry> {
        // File names stay as they are in problems: no camelCase.
        let inner = guarded(&env, Naming::AsIs, || {
            let path = convert::string(&path, "path")?;
            Ok(core::AgentRegistry::from_markdown_dir(path)?)
        })?;
        Ok(AgentRegistry { inner })
    }

    /// Registers (or replaces) an agent; `collaborators` lists who it may hand off to
    /// (everyone else when left out).
    #[napi(
        catch_unwind,
        ts_args_type = "name: string, description?: string, collaborators?: string[]"
    )]
    pub fn add(
        &mut self,
        env: Env,
        name: Unknown<'_>,
        description: Unknown<'_>,
        collaborators: Unknown<'_>,
    ) -> napi::Result<()> {
        guarded(&env, Naming::AsIs, || {
            let given = Given {
                positional: &[
                    ("name", &name),
                    ("description", &description),
                    ("collaborators", &collaborators),
                ],
                options: None,
            };
            let mut args = JsArguments::read(&given, &[], &[], false)?;
            args.default("description", Value::String(String::new()));
            let registry = &mut self.inner;
            Ok(args.then(&Limits::default(), |a: ops::AgentArgs| a.add_to(registry))?)
        })
    }

    /// The registered agents, in the order they were added.
    #[napi(catch_unwind, ts_return_type = "Agent[]")]
    pub fn agents(&self, env: Env) -> napi::Result<Unknown<'static>> {
        to_js(&env, &self.inner.agents().to_vec())
    }

    /// The `transfer_to_<agent>` tools `agent` may call, exactly in `provider`'s tool JSON
    /// (`'openai_chat'`, `'openai_responses'`, `'anthropic'` or `'mcp'`), typed so that they
    /// pass as that SDK's `tools` as they are (see `TransferTools`).
    #[napi(
        catch_unwind,
        ts_generic_types = "P extends ToolProvider",
        ts_args_type = "agent: string, provider: P",
        ts_return_type = "Array<TransferTools[P]>"
    )]
    pub fn tools(
        &self,
        env: Env,
        agent: Unknown<'_>,
        provider: Unknown<'_>,
    ) -> napi::Result<Unknown<'static>> {
        let tools = guarded(&env, Naming::AsIs, || {
            let given = Given {
                positional: &[("agent", &agent), ("provider", &provider)],
                options: None,
            };
            let args = JsArguments::read(&given, &[], &[], false)?;
            let tools = args.then(&Limits::default(), |a: ops::ToolsArgs| a.tools(&self.inner))?;
            Ok(tools)
        })?;
        plain_to_js(&env, &tools)
    }

    /// The chain policy the registry implies (collaborators from the registry, the rest from
    /// `base` or the defaults), to pass to `open(path, { policy })`.
    #[napi(catch_unwind, ts_return_type = "Policy")]
    pub fn policy(&self, env: Env) -> napi::Result<Unknown<'static>> {
        to_js(&env, &self.inner.policy(ChainPolicy::default()))
    }

    /// Reads a provider's response (an object or a list, or its JSON text) for a handoff by
    /// `fromAgent`; an SDK's response object passes as it is (read as `JSON.stringify` reads
    /// it: its own enumerable properties, or what its `toJSON()` returns):
    /// Chat Completions (whole or the message), Responses (whole, its `output` list or one item),
    /// Anthropic Messages (whole, its `content` list or one `tool_use` block) or a LangChain
    /// `AIMessage` (`tool_calls`, or its `{lc, type: 'constructor', kwargs}` dump). The intent,
    /// or `null` when such a response asks for none. A shape that is none of these, malformed
    /// arguments, a target not registered or several handoffs (unless
    /// `multiple: 'first_wins'`) are VALIDATION errors. From `@openai/agents`, a run's
    /// `output`, `history` or `newItems`, or one item (a run item is read through its
    /// `rawItem`; `callId` is the call's id).
    #[napi(
        catch_unwind,
        ts_args_type = "response: object | string, fromAgent: string, options?: DetectOptions | null",
        ts_return_type = "HandoffIntent | null"
    )]
    pub fn detect(
        &self,
        env: Env,
        response: Unknown<'_>,
        from_agent: Unknown<'_>,
        options: Unknown<'_>,
    ) -> napi::Result<Unknown<'static>> {
        match guarded(&env, Naming::AsIs, || {
            detect(&self.inner, &response, &from_agent, &options)
        })? {
            Some(intent) => intent_to_js(&env, intent),
            None => plain_to_js(&env, &Value::Null),
        }
    }
}

fn detect(
    registry: &core::AgentRegistry,
    response: &Unknown<'_>,
    from_agent: &Unknown<'_>,
    options: &Unknown<'_>,
) -> Outcome<Option<HandoffIntent>> {
    let t = response.get_type()?;
    if t != ValueType::String && t != ValueType::Object {
        let got = convert::type_name(t);
        return Err(invalid(
            "response",
            format!("must be an object, a list or JSON text, got {got}"),
        ));
    }
    let given = Given {
        positional: &[("from_agent", from_agent)],
        options: Some(("options", Some(options))),
    };
    let mut args = JsArguments::read(&given, &[], &[], false)?;
    // An object, a list of Responses items / Anthropic blocks, or JSON text: read as written.
    args.raw("response", response)?;
    Ok(args.then(&Limits::default(), |a: ops::DetectArgs| {
        match &a.response {
            // JSON text: the core checks its size and nesting before parsing it.
            Value::String(text) => {
                registry.detect_json(text, &a.from_agent, a.multiple.unwrap_or_default())
            }
            _ => a.detect(registry),
        }
    })?)
}

/// The intent as a plain object with a non-enumerable `toCreateOptions` method (so that JSON
/// and `deepEqual` see only the data).
fn intent_to_js(env: &Env, intent: HandoffIntent) -> napi::Result<Unknown<'static>> {
    let value = to_js(env, &intent)?;
    let mut object: Object<'_> = value.coerce_to_object()?;
    let method = env.create_function_from_closure::<napi::bindgen_prelude::FnArgs<(String, String, String)>, _, _>("toCreateOptions", move |ctx| {
        let options = guarded(ctx.env, Naming::Js, || create_options(&intent, &ctx))?;
        plain_to_js(ctx.env, &options)
    })?;
    object.define_properties(&[Property::new()
        .with_utf8_name("toCreateOptions")?
        .with_value(&method)
        .with_property_attributes(
            PropertyAttributes::Writable | PropertyAttributes::Configurable,
        )])?;
    Ok(object.to_unknown())
}

/// `intent.toCreateOptions(taskId, fromAgent, goal)`: the core's handoff under `create`'s option
/// names, keeping `taskId` and `goal` and whatever differs from the defaults.
fn create_options(
    intent: &HandoffIntent,
    ctx: &FunctionCallContext<'_>,
) -> Outcome<Map<String, Value>> {
    let arg = |index: usize, field: &str| -> Outcome<String> {
        if index >= ctx.length() {
            return Err(invalid(field, "is required"));
        }
        convert::string(&ctx.get::<Unknown<'_>>(index)?, field)
    };
    let task_id = arg(0, "taskId")?;
    let from_agent = arg(1, "fromAgent")?;
    let goal = arg(2, "goal")?;
    let new = intent.to_new_handoff(&task_id, &from_agent, &goal);
    let json = |new: &NewHandoff| match serde_json::to_value(new) {
        Ok(Value::Object(map)) => Ok(map),
        _ => Err(invalid("intent", "cannot be written as create options")),
    };
    let defaults = json(&NewHandoff::default())?;
    Ok(json(&new)?
        .into_iter()
        .filter(|(field, value)| {
            field == "task_id" || field == "goal" || defaults.get(field) != Some(value)
        })
        .map(|(field, value)| (camel_case(&ops::argument_name(&field)), value))
        .collect())
}
