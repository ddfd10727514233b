//! The arguments of the context builder and the agent registry, which work without a store.

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::context::ContextBuilder;
use crate::error::{Problem, Result};
use crate::ops::Arguments;
use crate::tools::{AgentRegistry, HandoffIntent, Multiple, Provider};
use crate::validate::{self, Limits};

pub use crate::store::DEFAULT_BUDGET_TOKENS;

/// A context builder: how many tokens the packet may use, and whether it is redacted.
#[derive(Clone, Debug, Default, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextArgs {
    /// The packet's budget in tokens (default 2000).
    #[serde(default)]
    pub budget_tokens: Option<usize>,
    /// Replace secrets with `[REDACTED:<rule>]` (default true).
    #[serde(default)]
    pub redact: Option<bool>,
}

impl Arguments for ContextArgs {}

impl ContextArgs {
    /// The builder these arguments describe.
    pub fn builder(&self) -> ContextBuilder {
        ContextBuilder::new(self.budget_tokens.unwrap_or(DEFAULT_BUDGET_TOKENS))
            .redact(self.redact.unwrap_or(true))
    }
}

/// A free item for the context builder.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextItemArgs {
    /// The item's text.
    pub text: String,
    /// Higher is kept first when the budget is short.
    pub priority: i32,
    /// When it happened (RFC 3339).
    #[serde(default, with = "crate::clock::rfc3339::option")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub at: Option<DateTime<Utc>>,
}

impl Arguments for ContextItemArgs {}

/// An agent for the registry: its name, what it is good at, and whom it may hand off to.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentArgs {
    /// The agent's name, as used in `from_agent` / `to_agent`.
    pub name: String,
    /// What it is good at: goes into its tool's description.
    pub description: String,
    /// Whom it may hand off to; everyone else when absent.
    #[serde(default)]
    pub collaborators: Option<Vec<String>>,
}

impl Arguments for AgentArgs {
    fn problems(&self, _: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        let names = std::iter::once(("name".to_owned(), &self.name)).chain(
            self.collaborators
                .iter()
                .flatten()
                .enumerate()
                .map(|(i, c)| (format!("collaborators[{i}]"), c)),
        );
        for (field, name) in names {
            if let Err(err) = validate::agent(&field, name) {
                problems.extend(err.problems().iter().cloned());
            }
        }
        problems
    }
}

impl AgentArgs {
    /// Registers the agent in `registry`.
    pub fn add_to(self, registry: &mut AgentRegistry) -> Result<()> {
        registry.add(&self.name, &self.description, self.collaborators)?;
        Ok(())
    }
}

/// Which agent's `transfer_to_<agent>` tools, in which provider's format.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolsArgs {
    /// The agent that would call the tools.
    pub agent: String,
    /// The format (default `openai_chat`).
    #[serde(default)]
    pub provider: Option<Provider>,
}

impl Arguments for ToolsArgs {}

impl ToolsArgs {
    /// The tools, from `registry`.
    pub fn tools(&self, registry: &AgentRegistry) -> Result<Vec<Value>> {
        registry.tools(&self.agent, self.provider.unwrap_or(Provider::OpenAiChat))
    }
}

/// A provider response to look for a handoff in.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct DetectArgs {
    /// The response (Chat Completions, Responses, Anthropic Messages, LangChain), whole or
    /// just its message, items or tool calls.
    pub response: Value,
    /// The agent that produced it.
    pub from_agent: String,
    /// What to do when it asks for several handoffs: `error` (default) or `first_wins`.
    #[serde(default)]
    pub multiple: Option<Multiple>,
}

impl Arguments for DetectArgs {}

impl DetectArgs {
    /// The handoff the response asks for, if any, under `registry`.
    pub fn detect(&self, registry: &AgentRegistry) -> Result<Option<HandoffIntent>> {
        registry.detect(
            &self.response,
            &self.from_agent,
            self.multiple.unwrap_or_default(),
        )
    }
}
