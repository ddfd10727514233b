//! Swarm tools: an agent registry, `transfer_to_<agent>` tool definitions for the major LLM
//! APIs, and a detector that turns a provider's raw response into a handoff intent.
//!
//! Formats follow each provider's documented shapes: OpenAI Chat Completions
//! (`tools[].function`, `tool_calls[].function.arguments` as a JSON string), the OpenAI
//! Responses API (flat function tools, `output[]` items of type `function_call`), Anthropic
//! Messages (`input_schema`, `content[]` blocks of type `tool_use` with `input` as an object)
//! and MCP (`inputSchema`).
//!
//! The folder: this file is the registry, tool definitions and detector; `agent_files` reads a
//! registry from Markdown files; `ops` holds the arguments of the operations that need no
//! store (the context builder's and the registry's).

mod agent_files;
pub(crate) mod ops;

pub use agent_files::AgentFile;

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::str::FromStr;
use std::sync::OnceLock;

use schemars::JsonSchema;
use serde::de::{self, IntoDeserializer, MapAccess, SeqAccess, Visitor};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::{Value, json};

use crate::chain::{ChainPolicy, ChainRule, ChainViolation};
use crate::error::{Error, Result};
use crate::validate;

/// The largest response text the detector reads.
pub const MAX_RESPONSE_BYTES: usize = 4 * 1024 * 1024;

/// Every tool this module makes is named `transfer_to_<agent>`.
pub const TOOL_PREFIX: &str = "transfer_to_";

/// An LLM API whose tool format we speak.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum Provider {
    /// OpenAI Chat Completions.
    #[serde(rename = "openai_chat")]
    #[cfg_attr(feature = "uniffi", uniffi(name = "OpenaiChat"))]
    OpenAiChat,
    /// The OpenAI Responses API.
    #[serde(rename = "openai_responses")]
    #[cfg_attr(feature = "uniffi", uniffi(name = "OpenaiResponses"))]
    OpenAiResponses,
    /// Anthropic Messages.
    #[serde(rename = "anthropic")]
    Anthropic,
    /// Model Context Protocol `tools/list`.
    #[serde(rename = "mcp")]
    Mcp,
}

impl FromStr for Provider {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "openai_chat" => Ok(Provider::OpenAiChat),
            "openai_responses" => Ok(Provider::OpenAiResponses),
            "anthropic" => Ok(Provider::Anthropic),
            "mcp" => Ok(Provider::Mcp),
            _ => Err(Error::invalid(
                "provider",
                "must be one of openai_chat, openai_responses, anthropic, mcp",
            )),
        }
    }
}

/// A registered agent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Agent {
    /// Its name, as used in `from_agent`/`to_agent`.
    pub name: String,
    /// What it is good at: goes into the tool description.
    pub description: String,
    /// Who it may hand off to; `None` is everyone else.
    pub collaborators: Option<Vec<String>>,
}

/// What to do when one response asks for several handoffs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum Multiple {
    /// Refuse the response (the default): an agent should hand off once.
    #[default]
    Error,
    /// Take the first handoff in the response's order (`first` is accepted too).
    #[serde(alias = "first")]
    FirstWins,
}

impl Multiple {
    /// The wire name: `error` or `first_wins`.
    pub fn as_str(self) -> &'static str {
        match self {
            Multiple::Error => "error",
            Multiple::FirstWins => "first_wins",
        }
    }
}

impl FromStr for Multiple {
    type Err = Error;

    /// `error` or `first_wins`; `first` (the Python binding's old spelling) is accepted too.
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "error" => Ok(Multiple::Error),
            "first_wins" | "first" => Ok(Multiple::FirstWins),
            _ => Err(Error::invalid("multiple", "must be error or first_wins")),
        }
    }
}

impl fmt::Display for Multiple {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A handoff an LLM asked for through a `transfer_to_<agent>` tool call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HandoffIntent {
    /// The agent to hand off to.
    pub target: String,
    /// The tool's arguments (`reason`, `summary`, `pending`, `instructions`), as sent.
    pub arguments: serde_json::Map<String, Value>,
    /// The provider's id for the call, to answer it.
    pub call_id: Option<String>,
    /// The tool name the model called.
    pub tool: String,
}

impl HandoffIntent {
    /// The handoff this intent asks for: `summary` becomes the progress summary, `pending` the
    /// pending steps, `instructions` the instructions; the model's `reason` and the call id are
    /// kept in `metadata`. Create it with a store whose policy is [`AgentRegistry::policy`].
    pub fn to_new_handoff(&self, task_id: &str, from_agent: &str, goal: &str) -> crate::NewHandoff {
        let text = |key: &str| {
            self.arguments
                .get(key)
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let pending: Vec<String> = self
            .arguments
            .get("pending")
            .and_then(Value::as_array)
            .map(|steps| {
                steps
                    .iter()
                    .filter_map(Value::as_str)
                    .map(str::to_owned)
                    .collect()
            })
            .unwrap_or_default();
        let mut metadata = crate::Metadata::new();
        if let Some(reason) = text("reason") {
            metadata.insert("handoff_reason".into(), Value::String(reason));
        }
        if let Some(id) = &self.call_id {
            metadata.insert("call_id".into(), Value::String(id.clone()));
        }
        let mut new = crate::NewHandoff::new(task_id, goal)
            .from_agent(from_agent)
            .to_agent(&self.target)
            .progress(text("summary").unwrap_or_default())
            .pending(pending)
            .metadata(metadata);
        new.instructions = text("instructions");
        new
    }
}

/// The agents of a swarm and who may hand off to whom.
#[derive(Clone, Default)]
pub struct AgentRegistry {
    agents: Vec<Agent>,
    /// For each agent (same index), its [`tool_names`](Self::tool_names), worked out on first
    /// use: detection needs them on every call, and they only change when an agent is added.
    names: Vec<OnceLock<Vec<(String, usize)>>>,
}

impl fmt::Debug for AgentRegistry {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The cache is left out: it is derived from `agents`.
        f.debug_struct("AgentRegistry")
            .field("agents", &self.agents)
            .finish()
    }
}

impl AgentRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        AgentRegistry::default()
    }

    /// Registers (or replaces) an agent.
    pub fn add(
        &mut self,
        name: &str,
        description: &str,
        collaborators: Option<Vec<String>>,
    ) -> Result<&mut Self> {
        validate::agent("name", name)?;
        for (i, other) in collaborators.iter().flatten().enumerate() {
            validate::agent(&format!("collaborators[{i}]"), other)?;
        }
        let agent = Agent {
            name: name.to_owned(),
            description: description.to_owned(),
            collaborators,
        };
        match self.agents.iter_mut().find(|a| a.name == name) {
            Some(existing) => *existing = agent,
            None => self.agents.push(agent),
        }
        // Any agent's targets, and so its tool names, may have changed.
        self.names = self.agents.iter().map(|_| OnceLock::new()).collect();
        Ok(self)
    }

    /// The registered agents, in the order they were added.
    pub fn agents(&self) -> &[Agent] {
        &self.agents
    }

    /// The agent named `name` and its index in `agents`.
    fn agent(&self, name: &str) -> Result<(usize, &Agent)> {
        self.agents
            .iter()
            .enumerate()
            .find(|(_, a)| a.name == name)
            .ok_or_else(|| Error::invalid("agent", format!("{name} is not registered")))
    }

    /// Who `from` may hand off to, in registration order, with their indices in `agents`.
    fn targets<'a>(&'a self, from: &'a Agent) -> impl Iterator<Item = (usize, &'a Agent)> {
        self.agents
            .iter()
            .enumerate()
            .filter(|(_, a)| a.name != from.name)
            .filter(|(_, a)| {
                from.collaborators
                    .as_ref()
                    .is_none_or(|allowed| allowed.contains(&a.name))
            })
    }

    /// The tool name for each of `from`'s targets (with the target's index in `agents`): the
    /// SDKs' transform of the display name (see [`tool_name`]), made unique when two names
    /// transform alike. Detection maps a name back to the display name through this table.
    fn tool_names(&self, from: &Agent) -> Vec<(String, usize)> {
        let mut used = BTreeSet::new();
        self.targets(from)
            .map(|(index, target)| {
                let base = tool_name(&target.name);
                let mut name = base.clone();
                let mut n = 2;
                while !used.insert(name.clone()) {
                    let suffix = format!("_{n}");
                    let keep = base.len().min(64 - suffix.len());
                    name = format!("{}{suffix}", &base[..keep]);
                    n += 1;
                }
                (name, index)
            })
            .collect()
    }

    /// [`tool_names`](Self::tool_names) of the agent at `index`, from the cache.
    fn cached_tool_names(&self, index: usize, from: &Agent) -> &[(String, usize)] {
        match self.names.get(index) {
            Some(cell) => cell.get_or_init(|| self.tool_names(from)),
            None => &[], // `names` is rebuilt on every `add`, so this does not happen
        }
    }

    /// The `transfer_to_<agent>` tools `agent` may call, exactly as `provider` expects them.
    pub fn tools(&self, agent: &str, provider: Provider) -> Result<Vec<Value>> {
        let (index, from) = self.agent(agent)?;
        Ok(self
            .cached_tool_names(index, from)
            .iter()
            .map(|(name, target)| {
                let target = &self.agents[*target];
                let description = format!(
                    "Hand the task over to {}{}. Call this when the task needs {}'s skills, or when \
                     you cannot finish it yourself (your context is nearly full, you are stuck, or \
                     the remaining work is outside your role). Summarise what you did and what is \
                     left so that {} can continue without asking.",
                    target.name,
                    if target.description.is_empty() { String::new() } else { format!(" ({})", target.description) },
                    target.name,
                    target.name,
                );
                let schema = parameters();
                match provider {
                    Provider::OpenAiChat => json!({
                        "type": "function",
                        "function": {"name": name, "description": description, "parameters": schema, "strict": true}
                    }),
                    Provider::OpenAiResponses => json!({
                        "type": "function", "name": name, "description": description,
                        "parameters": schema, "strict": true
                    }),
                    Provider::Anthropic => json!({"name": name, "description": description, "input_schema": schema}),
                    Provider::Mcp => json!({"name": name, "description": description, "inputSchema": schema}),
                }
            })
            .collect())
    }

    /// The chain policy this registry implies: each agent may hand off only to its targets.
    pub fn policy(&self, base: ChainPolicy) -> ChainPolicy {
        let mut collaborators = BTreeMap::new();
        for agent in &self.agents {
            let targets = self.targets(agent).map(|(_, t)| t.name.clone()).collect();
            collaborators.insert(agent.name.clone(), targets);
        }
        ChainPolicy {
            collaborators: Some(collaborators),
            ..base
        }
    }

    /// Parses a provider response (or just its message) given as JSON text; the size and
    /// nesting limits apply before parsing.
    pub fn detect_json(
        &self,
        response: &str,
        from_agent: &str,
        multiple: Multiple,
    ) -> Result<Option<HandoffIntent>> {
        // Size and nesting are checked before parsing, as for every input (docs/design.md §12): what the
        // parser skips is not depth-limited by serde_json, so it would accept any nesting.
        let limits = validate::Limits {
            max_record_bytes: MAX_RESPONSE_BYTES,
            ..validate::Limits::default()
        };
        validate::check_json_text("response", response, &limits)?;
        let not_a_response = |e: serde_json::Error| {
            Error::invalid("response", format!("not a provider response: {e}"))
        };
        let calls = if response.trim_start().starts_with('[') {
            // A list is a transcript or one response's items, read element by element.
            let list: Value = serde_json::from_str(response).map_err(not_a_response)?;
            return self.detect(&list, from_agent, multiple);
        } else {
            let envelope: Envelope<'_> = serde_json::from_str(response).map_err(not_a_response)?;
            envelope_calls(envelope)?
        };
        self.detect_calls(calls, from_agent, multiple)
    }

    /// Finds the `transfer_to_<agent>` call in a raw provider response: Chat Completions (whole
    /// or just the message), Responses (whole, its `output` list, or one item), Anthropic
    /// Messages (whole, its `content` list, or one `tool_use` block) or a LangChain `AIMessage`
    /// (its `tool_calls`, or its serialised `kwargs`). `None` when the response is one of these
    /// and did not hand off; a shape that is none of them is a validation error, so that a
    /// handoff is never missed silently.
    pub fn detect(
        &self,
        response: &Value,
        from_agent: &str,
        multiple: Multiple,
    ) -> Result<Option<HandoffIntent>> {
        let not_a_response = |e: serde_json::Error| {
            Error::invalid("response", format!("not a provider response: {e}"))
        };
        let calls = match response {
            Value::Array(elements) => list_calls(elements)?,
            Value::Object(_) => {
                envelope_calls(Envelope::deserialize(response).map_err(not_a_response)?)?
            }
            other => {
                return Err(Error::invalid(
                    "response",
                    format!(
                        "not a provider response: {} instead of an object or a list",
                        crate::validate::json_kind(other)
                    ),
                ));
            }
        };
        self.detect_calls(calls, from_agent, multiple)
    }

    fn detect_calls(
        &self,
        mut calls: Vec<Call<'_>>,
        from_agent: &str,
        multiple: Multiple,
    ) -> Result<Option<HandoffIntent>> {
        let (index, from) = self.agent(from_agent)?;
        let call = match (calls.len(), multiple) {
            (0, _) => return Ok(None),
            (1, _) | (_, Multiple::FirstWins) => calls.swap_remove(0),
            (n, Multiple::Error) => {
                return Err(Error::invalid(
                    "tool_calls",
                    format!("{n} handoffs in one response; an agent hands off once"),
                ));
            }
        };
        let names = self.cached_tool_names(index, from);
        let target = match names.iter().find(|(name, _)| *name == call.name) {
            Some((_, target)) => self.agents[*target].name.clone(),
            None => {
                // A registered agent that is not one of `from`'s targets breaks the policy;
                // anything else is a tool the model made up.
                let every = self.tool_names(&Agent {
                    name: String::new(),
                    description: String::new(),
                    collaborators: None,
                });
                return Err(match every.iter().find(|(name, _)| *name == call.name) {
                    Some((_, target)) => {
                        let target = &self.agents[*target];
                        Error::ChainViolation(ChainViolation {
                            task_id: String::new(),
                            path: vec![from.name.clone(), target.name.clone()],
                            rule: ChainRule::NotCollaborator {
                                from: from.name.clone(),
                                to: target.name.clone(),
                            },
                        })
                    }
                    None => Error::invalid(
                        call.at.field("name"),
                        format!("{} names no registered agent", call.name),
                    ),
                });
            }
        };
        let arguments = match call.arguments {
            Value::Object(map) => map,
            other => {
                return Err(Error::invalid(
                    call.at.field(call.arguments_key),
                    format!(
                        "arguments must be a JSON object, not {}",
                        crate::validate::json_kind(&other)
                    ),
                ));
            }
        };
        Ok(Some(HandoffIntent {
            target,
            arguments,
            call_id: call.id.map(Cow::into_owned),
            tool: call.name.into_owned(),
        }))
    }
}

/// `transfer_to_<name>` as the agent SDKs spell it (the OpenAI Agents SDK's
/// `transform_string_function_style`): whitespace and every character outside `[a-zA-Z0-9_]`
/// become `_`, letters lowercase, so "Tech Support" gives `transfer_to_tech_support`; at most
/// 64 characters, the providers' limit.
fn tool_name(agent: &str) -> String {
    let mut name: String = TOOL_PREFIX.to_owned();
    name.extend(agent.chars().map(|c| {
        if c.is_ascii_alphanumeric() || c == '_' {
            c.to_ascii_lowercase()
        } else {
            '_'
        }
    }));
    name.truncate(64);
    name
}

/// The transfer tools' parameters, valid in OpenAI strict mode: every property required,
/// no others allowed, optional ones nullable.
fn parameters() -> Value {
    json!({
        "type": "object",
        "properties": {
            "reason": {"type": "string", "description": "Why you are handing over, in one sentence."},
            "summary": {"type": "string", "description": "What you did and what you learned that the next agent needs."},
            "pending": {
                "type": ["array", "null"],
                "items": {"type": "string"},
                "description": "The steps still to do, in order; null if none."
            },
            "instructions": {"type": ["string", "null"], "description": "Guidance for the next agent; null if none."}
        },
        "required": ["reason", "summary", "pending", "instructions"],
        "additionalProperties": false
    })
}

struct Call<'a> {
    name: Cow<'a, str>,
    id: Option<Cow<'a, str>>,
    arguments: Value,
    /// Where the call was, for error messages (only formatted when there is one).
    at: At,
    /// `arguments`, `input` or `args`: the key the arguments were under.
    arguments_key: &'static str,
}

impl Call<'_> {
    fn into_owned(self) -> Call<'static> {
        Call {
            name: Cow::Owned(self.name.into_owned()),
            id: self.id.map(|id| Cow::Owned(id.into_owned())),
            arguments: self.arguments,
            at: self.at,
            arguments_key: self.arguments_key,
        }
    }
}

/// Where in a response a call was.
#[derive(Clone, Copy)]
enum At {
    /// `choices[choice].message.tool_calls[call].function`, or `tool_calls[call].function`
    /// in a bare message.
    Chat { choice: Option<usize>, call: usize },
    /// `output[i]`.
    Output(usize),
    /// `content[i]`.
    Content(usize),
    /// `tool_calls[call]` of a LangChain message (`name`, `args`).
    LangChain(usize),
    /// `[i]` of a list of items or blocks.
    Index(usize),
    /// The response is the item itself.
    Item,
}

impl At {
    /// The path of `key` in the call, as errors name it.
    fn field(self, key: &str) -> String {
        match self {
            At::Chat {
                choice: Some(i),
                call: j,
            } => format!("choices[{i}].message.tool_calls[{j}].function.{key}"),
            At::Chat { choice: None, call } => format!("tool_calls[{call}].function.{key}"),
            At::Output(i) => format!("output[{i}].{key}"),
            At::Content(i) => format!("content[{i}].{key}"),
            At::LangChain(i) => format!("tool_calls[{i}].{key}"),
            At::Index(i) => format!("[{i}].{key}"),
            At::Item => key.to_owned(),
        }
    }
}

/// The parts of a provider response the detector reads; serde skips everything else without
/// building it, which is most of a response.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Envelope<'a> {
    /// Chat Completions, whole response.
    #[serde(borrow)]
    choices: Option<Vec<Choice<'a>>>,
    /// Chat Completions, just the message.
    #[serde(borrow)]
    tool_calls: Option<Vec<ChatCall<'a>>>,
    /// Responses API, whole response. (An Agents SDK `function_call_output` item's `output` is
    /// the tool's text: not a list, so not this.)
    #[serde(borrow, deserialize_with = "list_or_ignored")]
    output: Option<Vec<Item<'a>>>,
    /// Anthropic, a message; also a Chat Completions message's text (then not a list).
    content: Option<Value>,
    /// Responses API, a single output item. (Not `#[serde(flatten)]`: that buffers the
    /// whole response before reading it.)
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(borrow, alias = "callId")]
    call_id: Option<Cow<'a, str>>,
    /// A string for items and blocks; a list for a `dumpd`-serialised LangChain message.
    #[serde(borrow, deserialize_with = "string_or_ignored")]
    id: Option<Cow<'a, str>>,
    arguments: Option<Arguments>,
    /// Anthropic, a single `tool_use` block.
    input: Option<Value>,
    /// Any chat message (read only to know the shape).
    #[serde(borrow)]
    role: Option<Cow<'a, str>>,
    /// A LangChain message serialised by `dumpd` (`{"lc": 1, "type": "constructor", ...}`).
    kwargs: Option<Value>,
    /// A LangChain message as `messages_to_dict` writes it (`{"type": "ai", "data": {...}}`).
    data: Option<Value>,
    /// A JS Agents SDK run item (`{type: "tool_call_item", rawItem, agent}`): the item it wraps.
    #[serde(rename = "rawItem", alias = "raw_item", borrow)]
    raw_item: Option<Box<Item<'a>>>,
}

impl Envelope<'_> {
    /// Whether this is any response, message, item or block shape the detector knows; a known
    /// shape without a handoff is `None`, an unknown one an error.
    fn is_known(&self) -> bool {
        self.choices.is_some()
            || self.tool_calls.is_some()
            || self.output.is_some()
            || self.content.is_some()
            || self.kind.is_some()
            || self.role.is_some()
    }

    /// Who speaks in this element of a transcript.
    fn speaker(&self) -> Speaker {
        let word = self.role.as_deref().or(self.kind.as_deref()).unwrap_or("");
        match word {
            "assistant"
            | "ai"
            | "AIMessage"
            | "AIMessageChunk"
            | "model"
            | "function_call"
            | "tool_use"
            | "message"
            | "tool_call_item"
            | "handoff_call_item"
            | "message_output_item" => Speaker::Agent,
            "user"
            | "human"
            | "system"
            | "developer"
            | "tool"
            | "function"
            | "HumanMessage"
            | "SystemMessage"
            | "ToolMessage"
            | "function_call_output"
            | "tool_result"
            | "tool_call_output_item"
            | "handoff_output_item" => Speaker::Other,
            _ => Speaker::Unknown,
        }
    }
}

/// Who speaks in an element of a transcript: the agent's turn runs until someone else speaks.
#[derive(Clone, Copy, PartialEq)]
enum Speaker {
    Agent,
    Other,
    /// Neither (a reasoning item, a LangChain dump, an unknown word): it stays in the turn.
    Unknown,
}

/// The visits of a lenient visitor (`Value = Option<_>`) that skip a scalar or an object as
/// `None`, and read what an option holds as the value itself.
macro_rules! skip_others {
    () => {
        fn visit_bool<E: de::Error>(self, _: bool) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_i64<E: de::Error>(self, _: i64) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_u64<E: de::Error>(self, _: u64) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_f64<E: de::Error>(self, _: f64) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_unit<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_none<E: de::Error>(self) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }
        fn visit_some<D: Deserializer<'de>>(
            self,
            d: D,
        ) -> std::result::Result<Self::Value, D::Error> {
            d.deserialize_any(self)
        }
        fn visit_map<A: MapAccess<'de>>(
            self,
            mut map: A,
        ) -> std::result::Result<Self::Value, A::Error> {
            while map
                .next_entry::<de::IgnoredAny, de::IgnoredAny>()?
                .is_some()
            {}
            Ok(None)
        }
    };
}

/// A list; any other value is skipped as `None`.
fn list_or_ignored<'de, D, T>(deserializer: D) -> std::result::Result<Option<Vec<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct Lenient<T>(std::marker::PhantomData<T>);
    impl<'de, T: Deserialize<'de>> Visitor<'de> for Lenient<T> {
        type Value = Option<Vec<T>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any value")
        }
        fn visit_seq<A: SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> std::result::Result<Self::Value, A::Error> {
            let mut items = Vec::new();
            while let Some(item) = seq.next_element()? {
                items.push(item);
            }
            Ok(Some(items))
        }
        fn visit_str<E: de::Error>(self, _: &str) -> std::result::Result<Self::Value, E> {
            Ok(None)
        }
        skip_others!();
    }
    deserializer.deserialize_any(Lenient(std::marker::PhantomData))
}

/// A string, borrowed where the parser allows; any other value is skipped as `None`.
fn string_or_ignored<'de, D: Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Option<Cow<'de, str>>, D::Error> {
    struct Lenient;
    impl<'de> Visitor<'de> for Lenient {
        type Value = Option<Cow<'de, str>>;
        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any value")
        }
        fn visit_borrowed_str<E: de::Error>(
            self,
            v: &'de str,
        ) -> std::result::Result<Self::Value, E> {
            Ok(Some(Cow::Borrowed(v)))
        }
        fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Self::Value, E> {
            Ok(Some(Cow::Owned(v.to_owned())))
        }
        skip_others!();
        fn visit_seq<A: SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> std::result::Result<Self::Value, A::Error> {
            while seq.next_element::<de::IgnoredAny>()?.is_some() {}
            Ok(None)
        }
    }
    deserializer.deserialize_any(Lenient)
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Choice<'a> {
    #[serde(borrow)]
    message: Option<ChatMessage<'a>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ChatMessage<'a> {
    #[serde(borrow)]
    tool_calls: Option<Vec<ChatCall<'a>>>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct ChatCall<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    function: Option<Function<'a>>,
    /// LangChain's tool calls carry `name` and `args` (an object) themselves.
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    args: Option<Value>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Function<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    arguments: Option<Arguments>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Item<'a> {
    #[serde(rename = "type", borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    /// `callId` in the JS Agents SDK's items.
    #[serde(borrow, alias = "callId")]
    call_id: Option<Cow<'a, str>>,
    /// A JS Agents SDK run item (`{type: "tool_call_item", rawItem, agent}`): the item it
    /// wraps.
    #[serde(rename = "rawItem", alias = "raw_item", borrow)]
    raw_item: Option<Box<Item<'a>>>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    arguments: Option<Arguments>,
    input: Option<Value>,
}

/// A tool call's `arguments` as read. JSON text (OpenAI) is parsed as soon as the parser
/// has unescaped it, straight from its buffer, rather than first copied into a string; a
/// parse error is kept until the call is known to be a handoff, where it is reported.
enum Arguments {
    /// Sent as JSON text: parsed (blank text is an empty object), or why not.
    Text(std::result::Result<Value, serde_json::Error>),
    /// Sent as a value.
    Value(Value),
}

impl<'de> Deserialize<'de> for Arguments {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> std::result::Result<Self, D::Error> {
        deserializer.deserialize_any(ArgumentsVisitor)
    }
}

struct ArgumentsVisitor;

impl<'de> Visitor<'de> for ArgumentsVisitor {
    type Value = Arguments;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_str<E: de::Error>(self, text: &str) -> std::result::Result<Arguments, E> {
        Ok(Arguments::Text(if text.trim().is_empty() {
            Ok(Value::Object(Default::default()))
        } else {
            // What `serde_json::from_str::<Value>` does, with the object's map made for the
            // four arguments the transfer tools define rather than grown to them.
            let mut de = serde_json::Deserializer::from_str(text);
            de.deserialize_any(ArgumentsObject)
                .and_then(|value| de.end().map(|()| value))
        }))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<Arguments, E> {
        Value::deserialize(v.into_deserializer()).map(Arguments::Value)
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Arguments, E> {
        Value::deserialize(v.into_deserializer()).map(Arguments::Value)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Arguments, E> {
        Value::deserialize(v.into_deserializer()).map(Arguments::Value)
    }

    fn visit_i128<E: de::Error>(self, v: i128) -> std::result::Result<Arguments, E> {
        Value::deserialize(v.into_deserializer()).map(Arguments::Value)
    }

    fn visit_u128<E: de::Error>(self, v: u128) -> std::result::Result<Arguments, E> {
        Value::deserialize(v.into_deserializer()).map(Arguments::Value)
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<Arguments, E> {
        Value::deserialize(v.into_deserializer()).map(Arguments::Value)
    }

    fn visit_unit<E: de::Error>(self) -> std::result::Result<Arguments, E> {
        Ok(Arguments::Value(Value::Null))
    }

    fn visit_none<E: de::Error>(self) -> std::result::Result<Arguments, E> {
        Ok(Arguments::Value(Value::Null))
    }

    fn visit_some<D: Deserializer<'de>>(self, d: D) -> std::result::Result<Arguments, D::Error> {
        Arguments::deserialize(d)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> std::result::Result<Arguments, A::Error> {
        Value::deserialize(de::value::SeqAccessDeserializer::new(seq)).map(Arguments::Value)
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> std::result::Result<Arguments, A::Error> {
        Value::deserialize(de::value::MapAccessDeserializer::new(map)).map(Arguments::Value)
    }
}

/// Reads JSON arguments text into a [`Value`] as `Value`'s own visitor does, but makes an
/// object's map with room for the transfer tools' four arguments.
struct ArgumentsObject;

impl<'de> Visitor<'de> for ArgumentsObject {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("any valid JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> std::result::Result<Value, A::Error> {
        let mut values = serde_json::Map::with_capacity(4);
        while let Some((key, value)) = map.next_entry::<String, Value>()? {
            values.insert(key, value);
        }
        Ok(Value::Object(values))
    }

    fn visit_bool<E: de::Error>(self, v: bool) -> std::result::Result<Value, E> {
        Value::deserialize(v.into_deserializer())
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> std::result::Result<Value, E> {
        Value::deserialize(v.into_deserializer())
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> std::result::Result<Value, E> {
        Value::deserialize(v.into_deserializer())
    }

    fn visit_f64<E: de::Error>(self, v: f64) -> std::result::Result<Value, E> {
        Value::deserialize(v.into_deserializer())
    }

    fn visit_str<E: de::Error>(self, v: &str) -> std::result::Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_unit<E: de::Error>(self) -> std::result::Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> std::result::Result<Value, A::Error> {
        Value::deserialize(de::value::SeqAccessDeserializer::new(seq))
    }
}

/// Arguments sent as a JSON string (OpenAI) were parsed on reading; malformed ones are an
/// error.
fn string_arguments(raw: Option<Arguments>, at: At) -> Result<Value> {
    match raw {
        Some(Arguments::Text(parsed)) => parsed.map_err(|e| {
            Error::invalid(
                at.field("arguments"),
                format!("arguments are not valid JSON: {e}"),
            )
        }),
        Some(Arguments::Value(value)) => Ok(value),
        None => Err(Error::invalid(
            at.field("arguments"),
            "arguments are missing",
        )),
    }
}

fn chat_calls<'a>(
    calls: Vec<ChatCall<'a>>,
    choice: Option<usize>,
    out: &mut Vec<Call<'a>>,
) -> Result<()> {
    for (j, call) in calls.into_iter().enumerate() {
        match (call.function, call.name) {
            (Some(function), _) => {
                let Some(name) = function.name else { continue };
                if !name.starts_with(TOOL_PREFIX) {
                    continue;
                }
                let at = At::Chat { choice, call: j };
                out.push(Call {
                    name,
                    id: call.id,
                    arguments: string_arguments(function.arguments, at)?,
                    at,
                    arguments_key: "arguments",
                });
            }
            (None, Some(name)) if name.starts_with(TOOL_PREFIX) => {
                let at = At::LangChain(j);
                out.push(Call {
                    name,
                    id: call.id,
                    arguments: call
                        .args
                        .ok_or_else(|| Error::invalid(at.field("args"), "args are missing"))?,
                    at,
                    arguments_key: "args",
                });
            }
            _ => {}
        }
    }
    Ok(())
}

fn output_item<'a>(item: Item<'a>, at: At, out: &mut Vec<Call<'a>>) -> Result<()> {
    if let Some(raw) = item.raw_item {
        return output_item(*raw, at, out);
    }
    let Some(name) = item.name.filter(|n| n.starts_with(TOOL_PREFIX)) else {
        return Ok(());
    };
    match item.kind.as_deref() {
        Some("function_call") => out.push(Call {
            name,
            id: item.call_id.or(item.id),
            arguments: string_arguments(item.arguments, at)?,
            at,
            arguments_key: "arguments",
        }),
        Some("tool_use") => out.push(Call {
            name,
            id: item.id,
            arguments: item
                .input
                .ok_or_else(|| Error::invalid(at.field("input"), "input is missing"))?,
            at,
            arguments_key: "input",
        }),
        _ => {}
    }
    Ok(())
}

/// What the detector reads, for the error that says a shape is none of it.
const NOT_A_RESPONSE: &str = "not a provider response: expected a Chat Completions response or \
     message (choices, tool_calls), a Responses response or item (output, type), an Anthropic \
     message or block (content, type), a LangChain message (tool_calls, a dumpd or \
     messages_to_dict form), an Agents SDK item, or a list of these (a transcript)";

/// The `transfer_to_` calls of the agent's last turn that made any, in a list: a transcript
/// (chat messages of any provider, LangChain dumps, the Agents SDK's items) or one response's
/// items or blocks. A turn is what the agent says until someone else speaks (a user, a tool's
/// result), so calls made side by side in one turn are one response's, and a handoff answered
/// and followed by later turns still counts if no later turn hands off.
fn list_calls(elements: &[Value]) -> Result<Vec<Call<'_>>> {
    let mut last_turn: Vec<Call<'_>> = Vec::new();
    let mut turn: Vec<Call<'_>> = Vec::new();
    for (i, element) in elements.iter().enumerate() {
        let envelope = Envelope::deserialize(element).map_err(|e| {
            Error::invalid(format!("response[{i}]"), format!("{NOT_A_RESPONSE}: {e}"))
        })?;
        if !envelope.is_known() && envelope.raw_item.is_none() {
            return Err(Error::invalid(format!("response[{i}]"), NOT_A_RESPONSE));
        }
        let speaker = envelope.speaker();
        if speaker == Speaker::Other && !turn.is_empty() {
            last_turn = std::mem::take(&mut turn);
        }
        let calls = envelope_calls(envelope).map_err(|e| match e {
            Error::Validation { problems } => Error::Validation {
                problems: problems
                    .into_iter()
                    .map(|mut p| {
                        p.field = format!("response[{i}].{}", p.field);
                        p
                    })
                    .collect(),
            },
            other => other,
        })?;
        let calls = calls.into_iter().map(|mut call| {
            if let At::Item = call.at {
                call.at = At::Index(i);
            }
            call
        });
        turn.extend(calls);
    }
    Ok(if turn.is_empty() { last_turn } else { turn })
}

/// Every `transfer_to_` call in a response, in order, whatever the provider.
fn envelope_calls(envelope: Envelope<'_>) -> Result<Vec<Call<'_>>> {
    if envelope.kind.as_deref() == Some("constructor")
        && let Some(kwargs) = &envelope.kwargs
    {
        // A serialised LangChain message: the message is its kwargs. Its calls are copied
        // out, as the borrowed form cannot outlive `kwargs`.
        let inner = Envelope::deserialize(kwargs)
            .map_err(|e| Error::invalid("kwargs", format!("not a LangChain message: {e}")))?;
        return Ok(envelope_calls(inner)?
            .into_iter()
            .map(Call::into_owned)
            .collect());
    }
    if let Some(data @ Value::Object(_)) = &envelope.data {
        // A LangChain message as `messages_to_dict` writes it: the message is its data.
        let inner = Envelope::deserialize(data)
            .map_err(|e| Error::invalid("data", format!("not a LangChain message: {e}")))?;
        return Ok(envelope_calls(inner)?
            .into_iter()
            .map(Call::into_owned)
            .collect());
    }
    if let Some(raw) = envelope.raw_item {
        let mut out = Vec::new();
        output_item(*raw, At::Item, &mut out)?;
        return Ok(out);
    }
    if !envelope.is_known() {
        return Err(Error::invalid("response", NOT_A_RESPONSE));
    }
    let mut out = Vec::new();
    for (i, choice) in envelope.choices.into_iter().flatten().enumerate() {
        if let Some(calls) = choice.message.and_then(|m| m.tool_calls) {
            chat_calls(calls, Some(i), &mut out)?;
        }
    }
    if let Some(calls) = envelope.tool_calls {
        chat_calls(calls, None, &mut out)?;
    }
    for (i, item) in envelope.output.into_iter().flatten().enumerate() {
        output_item(item, At::Output(i), &mut out)?;
    }
    let item = Item {
        kind: envelope.kind,
        name: envelope.name,
        call_id: envelope.call_id,
        raw_item: None,
        id: envelope.id,
        arguments: envelope.arguments,
        input: envelope.input,
    };
    if matches!(item.kind.as_deref(), Some("function_call" | "tool_use")) {
        output_item(item, At::Item, &mut out)?;
    }
    // Anthropic: content[] blocks of type tool_use, `input` an object.
    if let Some(Value::Array(blocks)) = envelope.content {
        for (i, block) in blocks.into_iter().enumerate() {
            if let Ok(item) = Item::deserialize(block) {
                output_item(item, At::Content(i), &mut out)?;
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::*;

    #[test]
    fn names_are_sanitised_and_unique() {
        assert_eq!(
            tool_name("gemini-2.5@google"),
            "transfer_to_gemini_2_5_google"
        );
        assert_eq!(tool_name("Tech Support"), "transfer_to_tech_support");
        assert_eq!(tool_name("Billing agent"), "transfer_to_billing_agent");
        assert_eq!(tool_name("Größe"), "transfer_to_gr__e");
        let mut registry = AgentRegistry::new();
        registry.add("boss", "", None).unwrap();
        registry.add("a.b", "", None).unwrap();
        registry.add("a:b", "", None).unwrap();
        let long = "x".repeat(100);
        registry.add(&long, "", None).unwrap();
        registry.add(&format!("{long}y"), "", None).unwrap();
        let names: Vec<String> = registry
            .tool_names(registry.agent("boss").unwrap().1)
            .into_iter()
            .map(|(n, _)| n)
            .collect();
        assert_eq!(names[0], "transfer_to_a_b");
        assert_eq!(names[1], "transfer_to_a_b_2");
        assert_eq!(names[2].len(), 64);
        assert_eq!(names[3].len(), 64);
        assert_ne!(names[2], names[3]);
        for name in names {
            assert!(
                name.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            );
        }
    }
}
