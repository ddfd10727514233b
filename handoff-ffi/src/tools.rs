//! Swarm tools: the `transfer_to_<agent>` tools an LLM may call, and the detector that reads a
//! provider's response for such a call.

use std::collections::HashMap;
use std::sync::{Arc, RwLock, RwLockReadGuard};

use handoff_core as core;
use handoff_core::ops;
use handoff_core::tools as t;

use crate::arguments::{self, arguments};
use crate::error::{HandoffError, Result};
use crate::record::CreateOptions;
use crate::store::ChainPolicy;

pub use handoff_core::tools::{Multiple, Provider};

/// A registered agent.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct Agent {
    /// Its name, as used in `from_agent`/`to_agent`.
    pub name: String,
    /// What it is good at: goes into the tool description.
    pub description: String,
    /// Who it may hand off to; none is everyone else.
    pub collaborators: Option<Vec<String>>,
}

/// A handoff an LLM asked for through a `transfer_to_<agent>` tool call.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct HandoffIntent {
    /// The agent to hand off to.
    pub target: String,
    /// The tool's arguments (`reason`, `summary`, `pending`, `instructions`) as a JSON object.
    pub arguments: String,
    /// The provider's id for the call, to answer it.
    pub call_id: Option<String>,
    /// The tool name the model called.
    pub tool: String,
}

/// The agents of a swarm and who may hand off to whom.
#[derive(Debug, Default, uniffi::Object)]
pub struct AgentRegistry {
    inner: RwLock<t::AgentRegistry>,
}

#[uniffi::export]
impl AgentRegistry {
    /// An empty registry.
    #[uniffi::constructor]
    pub fn new() -> Arc<AgentRegistry> {
        Arc::new(AgentRegistry::default())
    }

    /// The agents described by the `*.md` files in the folder `path` (not its sub-folders),
    /// as the Maia swarm keeps them: the name from the front matter's `name:`, else the first
    /// `# ` heading, else the file name; who each may hand off to from its `## Collaborations`
    /// list (nobody without one). `Validation` names the file (`support.name`) or `path`.
    #[uniffi::constructor]
    pub fn from_markdown_dir(path: String) -> Result<Arc<AgentRegistry>> {
        Ok(Arc::new(AgentRegistry {
            inner: RwLock::new(t::AgentRegistry::from_markdown_dir(path)?),
        }))
    }

    /// Registers (or replaces) an agent; `collaborators` lists who it may hand off to
    /// (everyone else when none).
    #[uniffi::method(default(description = "", collaborators = None))]
    pub fn add(
        &self,
        name: String,
        description: String,
        collaborators: Option<Vec<String>>,
    ) -> Result<()> {
        let agent: ops::AgentArgs =
            arguments::read(&arguments! { name, description, collaborators })?;
        let mut registry = self.inner.write().unwrap_or_else(|p| p.into_inner());
        Ok(agent.add_to(&mut registry)?)
    }

    /// The registered agents, in the order they were added.
    pub fn agents(&self) -> Vec<Agent> {
        self.read()
            .agents()
            .iter()
            .map(|a| Agent {
                name: a.name.clone(),
                description: a.description.clone(),
                collaborators: a.collaborators.clone(),
            })
            .collect()
    }

    /// The `transfer_to_<agent>` tools `agent` may call, as the JSON array `provider` expects in
    /// a request's `tools`.
    pub fn tools(&self, agent: String, provider: Provider) -> Result<String> {
        let arguments: ops::ToolsArgs = arguments::read(&arguments! { agent, provider })?;
        Ok(serde_json::Value::Array(arguments.tools(&self.read())?).to_string())
    }

    /// The chain policy the registry implies: each agent may hand off only to its targets
    /// (the other limits keep their defaults). Give it to a store through `OpenOptions.policy`.
    pub fn policy(&self) -> ChainPolicy {
        let policy = self.read().policy(core::ChainPolicy::default());
        ChainPolicy {
            max_handoffs: None,
            max_revisits: None,
            collaborators: policy.collaborators.map(|map| {
                map.into_iter()
                    .map(|(from, to)| (from, to.into_iter().collect()))
                    .collect::<HashMap<_, _>>()
            }),
        }
    }

    /// Reads a provider's response, as JSON text, for a handoff by `from_agent`: Chat
    /// Completions (whole or the message), Responses (whole, its `output` list or one item),
    /// Anthropic Messages (whole, its `content` list or one `tool_use` block) or a LangChain
    /// `AIMessage` (`tool_calls`, or its `{"lc": 1, "type": "constructor", "kwargs": ...}` dump).
    /// The intent, or none when such a response asks for none. A shape that is none of these,
    /// malformed arguments, a target not registered or several handoffs (unless `multiple` is
    /// `FirstWins`) are `Validation` errors; a registered agent `from_agent` may not hand off
    /// to is a `ChainViolation`.
    #[uniffi::method(default(multiple = None))]
    pub fn detect(
        &self,
        response: String,
        from_agent: String,
        multiple: Option<Multiple>,
    ) -> Result<Option<HandoffIntent>> {
        // Not through `ops::DetectArgs`: it holds the response parsed, and the core checks a
        // response text's size and nesting before parsing it, in `detect_json`.
        let multiple = multiple.unwrap_or_default();
        let intent = self.read().detect_json(&response, &from_agent, multiple)?;
        Ok(intent.map(|i| HandoffIntent {
            target: i.target,
            arguments: serde_json::Value::Object(i.arguments).to_string(),
            call_id: i.call_id,
            tool: i.tool,
        }))
    }
}

impl AgentRegistry {
    fn read(&self) -> RwLockReadGuard<'_, t::AgentRegistry> {
        // Only `add` writes, and it leaves the registry whole even if it panics.
        self.inner.read().unwrap_or_else(|p| p.into_inner())
    }
}

#[uniffi::export]
impl HandoffIntent {
    /// The handoff this intent asks for, ready for `Store.create`: `summary` becomes the
    /// progress, `pending` the pending steps, `instructions` the instructions; the model's
    /// `reason` and the call id go into `metadata`.
    pub fn to_create_options(
        &self,
        task_id: String,
        from_agent: String,
        goal: String,
    ) -> Result<CreateOptions> {
        let arguments = match serde_json::from_str(&self.arguments) {
            Ok(serde_json::Value::Object(map)) => map,
            _ => return Err(HandoffError::invalid("arguments", "must be a JSON object")),
        };
        let intent = t::HandoffIntent {
            target: self.target.clone(),
            arguments,
            call_id: self.call_id.clone(),
            tool: self.tool.clone(),
        };
        CreateOptions::from_new(&intent.to_new_handoff(&task_id, &from_agent, &goal))
    }
}
