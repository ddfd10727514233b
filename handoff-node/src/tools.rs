//! The agent registry: `transfer_to_<agent>` tool definitions for each provider, and the
//! detector that reads a provider's response for a handoff.

use handoff_core::tools::{self as core, Agent, HandoffIntent, Multiple, Provider};
use handoff_core::{ChainPolicy, Metadata};
use napi::{Env, Unknown, ValueType};
use napi_derive::napi;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::convert;
use crate::errors::{Naming, Outcome, invalid};
use crate::task::{Mirror, guarded, sync};

/// A registered agent.
#[napi(object, js_name = "Agent", object_from_js = false, object_to_js = false, use_nullable = true)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsAgent {
    /// Its name, as used in `fromAgent`/`toAgent`.
    pub name: String,
    /// What it is good at: goes into the tool description.
    pub description: String,
    /// Who it may hand off to; `null` is everyone else.
    pub collaborators: Option<Vec<String>>,
}

impl Mirror for Agent {
    type Out = JsAgent;
    fn mirror(self) -> JsAgent {
        let Agent {
            name,
            description,
            collaborators,
        } = self;
        JsAgent {
            name,
            description,
            collaborators,
        }
    }
}

/// A handoff an LLM asked for through a `transfer_to_<agent>` tool call.
#[napi(object, js_name = "HandoffIntent", object_from_js = false, object_to_js = false, use_nullable = true)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
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
}

impl Mirror for HandoffIntent {
    type Out = JsHandoffIntent;
    fn mirror(self) -> JsHandoffIntent {
        let HandoffIntent {
            target,
            arguments,
            call_id,
            tool,
        } = self;
        JsHandoffIntent {
            target,
            arguments,
            call_id,
            tool,
        }
    }
}

/// `registry.detect` options.
#[napi(object, object_to_js = false, object_from_js = false)]
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DetectOptions {
    /// What to do when one response asks for several handoffs: refuse it (`'error'`, the
    /// default) or take the first.
    #[napi(ts_type = "'error' | 'first_wins'")]
    pub multiple: Option<String>,
}

/// A chain policy as plain data, ready for `open(path, { policy })`.
#[napi(object, js_name = "Policy", object_from_js = false, object_to_js = false)]
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsPolicy {
    /// Most hops one task may make.
    pub max_handoffs: f64,
    /// How often an agent may appear again in a task's path.
    pub max_revisits: f64,
    /// Who may hand off to whom.
    pub collaborators: std::collections::BTreeMap<String, Vec<String>>,
}

struct PolicyOut(ChainPolicy);

impl Mirror for PolicyOut {
    type Out = JsPolicy;
    fn mirror(self) -> JsPolicy {
        let clamp = |n: usize| (n as f64).min(crate::convert::MAX_SAFE_INTEGER);
        JsPolicy {
            max_handoffs: clamp(self.0.max_handoffs),
            max_revisits: clamp(self.0.max_revisits),
            collaborators: self
                .0
                .collaborators
                .unwrap_or_default()
                .into_iter()
                .map(|(from, to)| (from, to.into_iter().collect()))
                .collect(),
        }
    }
}

struct Json(Vec<Value>);

impl Mirror for Json {
    type Out = Vec<Value>;
    fn mirror(self) -> Vec<Value> {
        self.0
    }
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
    pub fn new() -> Self {
        AgentRegistry {
            inner: core::AgentRegistry::new(),
        }
    }

    /// Registers (or replaces) an agent; `collaborators` lists who it may hand off to
    /// (everyone else when left out).
    #[napi(catch_unwind, ts_args_type = "name: string, description?: string, collaborators?: string[]")]
    pub fn add(&mut self, env: Env, name: Unknown<'_>, description: Unknown<'_>, collaborators: Unknown<'_>) -> napi::Result<()> {
        guarded(&env, Naming::Js, || {
            let name = convert::string(&name, "name")?;
            let description = match description.get_type()? {
                ValueType::Undefined => String::new(),
                _ => convert::string(&description, "description")?,
            };
            let collaborators: Option<Vec<String>> = match collaborators.get_type()? {
                ValueType::Undefined | ValueType::Null => None,
                _ => match convert::json(&collaborators, "collaborators")? {
                    json @ Value::Array(_) => Some(convert::from_json(json, "collaborators")?),
                    _ => return Err(invalid("collaborators", "must be an array of agent names")),
                },
            };
            self.inner.add(&name, &description, collaborators)?;
            Ok(())
        })
    }

    /// The registered agents, in the order they were added.
    #[napi(catch_unwind, ts_return_type = "Agent[]")]
    pub fn agents(&self, env: Env) -> napi::Result<Unknown<'static>> {
        sync(&env, Naming::Js, || Ok(self.inner.agents().to_vec()))
    }

    /// The `transfer_to_<agent>` tools `agent` may call, exactly in `provider`'s tool JSON
    /// (`'openai_chat'`, `'openai_responses'`, `'anthropic'` or `'mcp'`).
    #[napi(
        catch_unwind,
        ts_args_type = "agent: string, provider: 'openai_chat' | 'openai_responses' | 'anthropic' | 'mcp'",
        ts_return_type = "JsonObject[]"
    )]
    pub fn tools(&self, env: Env, agent: Unknown<'_>, provider: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        sync(&env, Naming::Js, || {
            let agent = convert::string(&agent, "agent")?;
            let provider: Provider = convert::string(&provider, "provider")?.parse()?;
            Ok(Json(self.inner.tools(&agent, provider)?))
        })
    }

    /// The chain policy the registry implies (collaborators from the registry, the rest from
    /// `base` or the defaults), to pass to `open(path, { policy })`.
    #[napi(catch_unwind, ts_return_type = "Policy")]
    pub fn policy(&self, env: Env) -> napi::Result<Unknown<'static>> {
        sync(&env, Naming::Js, || Ok(PolicyOut(self.inner.policy(ChainPolicy::default()))))
    }

    /// Reads a provider's response (an object, or its JSON text) for a handoff by `fromAgent`:
    /// the intent, or `null` when it asks for none. Malformed arguments, a target not registered or
    /// several handoffs (unless `multiple: 'first_wins'`) are VALIDATION errors.
    #[napi(
        catch_unwind,
        ts_args_type = "response: JsonObject | string, fromAgent: string, options?: DetectOptions",
        ts_return_type = "HandoffIntent | null"
    )]
    pub fn detect(&self, env: Env, response: Unknown<'_>, from_agent: Unknown<'_>, options: Unknown<'_>) -> napi::Result<Unknown<'static>> {
        sync(&env, Naming::Js, || detect(&self.inner, &response, &from_agent, &options))
    }
}

fn detect(
    registry: &core::AgentRegistry,
    response: &Unknown<'_>,
    from_agent: &Unknown<'_>,
    options: &Unknown<'_>,
) -> Outcome<Option<HandoffIntent>> {
    let from_agent = convert::string(from_agent, "fromAgent")?;
    let o: DetectOptions = convert::options(options, "options")?;
    let multiple = match o.multiple.as_deref() {
        None | Some("error") => Multiple::Error,
        Some("first_wins") => Multiple::FirstWins,
        Some(_) => return Err(invalid("multiple", "must be 'error' or 'first_wins'")),
    };
    Ok(match response.get_type()? {
        ValueType::String => {
            registry.detect_json(&convert::string(response, "response")?, &from_agent, multiple)?
        }
        _ => {
            convert::object(response, "response")?;
            let json = convert::json(response, "response")?;
            registry.detect(&json, &from_agent, multiple)?
        }
    })
}
