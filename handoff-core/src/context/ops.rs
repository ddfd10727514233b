//! The operation that builds a successor's packet from the store: `context_for`.

use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;

use crate::context::{Budget, Packet};
use crate::error::{Problem, Result};
use crate::messages;
use crate::ops::{Access, Arguments, DEFAULT_BUDGET_TOKENS, Operation};
use crate::store::{ContextOptions, Store};
use crate::validate::Limits;

/// The successor's packet for a handoff: everything the store knows that the next agent
/// needs (the task's goal and plan, the agents before, the outputs it depends on, verified and
/// predecessor's knowledge, relevant knowledge on `main`), within the budget, redacted, with
/// the manifest of what was kept, cut and left out.
#[derive(Clone, Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ContextForArgs {
    /// The handoff's id.
    pub handoff_id: String,
    /// The packet's budget in tokens (default 2000 when no budget is given).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub budget_tokens: Option<usize>,
    /// The packet's budget in characters of its Markdown, instead of tokens (the seed's
    /// packets hold 2000).
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub budget_chars: Option<usize>,
    /// The framework's own transcript of the run, in any provider's message shape: one more
    /// conversation in the packet, under the same budget and redaction.
    #[serde(default)]
    pub transcript: Option<Vec<Value>>,
}

impl Arguments for ContextForArgs {
    fn problems(&self, _: &Limits) -> Vec<Problem> {
        let mut problems = Vec::new();
        for (field, budget) in [
            ("budget_tokens", self.budget_tokens),
            ("budget_chars", self.budget_chars),
        ] {
            if budget == Some(0) {
                problems.push(Problem::new(field, "must be at least 1"));
            }
        }
        if self.budget_tokens.is_some() && self.budget_chars.is_some() {
            problems.push(Problem::new(
                "budget_chars",
                "give budget_tokens or budget_chars, not both",
            ));
        }
        if let Some(transcript) = &self.transcript
            && let Err(err) = messages::normalize(transcript)
        {
            // `messages[3].role` names the transcript's fourth message.
            problems.extend(err.problems().iter().map(|p| Problem {
                field: p.field.replacen("messages", "transcript", 1),
                ..p.clone()
            }));
        }
        problems
    }
}

impl ContextForArgs {
    /// The options these arguments describe (checked already).
    pub fn options(&self) -> Result<ContextOptions> {
        let budget = match (self.budget_tokens, self.budget_chars) {
            (_, Some(chars)) => Budget::Chars(chars),
            (tokens, None) => Budget::Tokens(tokens.unwrap_or(DEFAULT_BUDGET_TOKENS)),
        };
        let transcript = match &self.transcript {
            Some(values) => messages::normalize(values)?,
            None => Vec::new(),
        };
        Ok(ContextOptions::with_budget(budget).transcript(transcript))
    }
}

/// The `context_for` operation.
pub struct ContextFor;

impl Operation for ContextFor {
    const NAME: &'static str = "context_for";
    const ACCESS: Access = Access::Reads;
    const COMMAND: Option<(&'static str, &'static str)> = Some(("", "context"));
    const POSITIONAL: &'static [&'static str] = &["handoff_id"];
    type Args = ContextForArgs;
    type Output = Packet;

    fn run(store: &Store, args: ContextForArgs) -> Result<Packet> {
        store.context_for(&args.handoff_id, args.options()?)
    }
}
