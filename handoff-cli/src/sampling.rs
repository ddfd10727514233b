//! The MCP client's own model as the verification gate's verifier, as the decision-point
//! judge (docs/design.md §9, §12), as the extractor of a conversation's facts and as the successor
//! packet's summarizer, through MCP sampling: when the client declares the `sampling`
//! capability and the server has no `--judge-cmd`, `verify`, `cherry_pick` with `verify`,
//! `bundle_verify`, `cherry_pick_to_facts`, `cherry_pick_decisions` and `context_for` ask it,
//! one item or message at a time, unless the call says `use_client_model: false`. A reply the
//! server cannot read fails that item (reported, left as it was) or the pick (nothing
//! written), like any verifier or judge; a summary that does not come, or does not fit,
//! leaves the item cut as without a model.
// rmcp marks sampling deprecated (SEP-2577) for protocols after 2026-07-28; the clients we
// serve negotiate earlier ones, where it is the way to reach the client's model.
#![allow(deprecated)]

use handoff_core::context::{BudgetUnit, Summarizer, SummaryRequest};
use handoff_core::ops::{self, Arguments, JsonJudge};
use handoff_core::{Error, Result, Store};
use rmcp::model::{
    CreateMessageRequestParams, JsonObject, SamplingMessage, SamplingMessageContentBlock,
};
use rmcp::{Peer, RoleServer};
use serde_json::{Value, json};
use tokio::runtime::Handle;

use crate::judge::{self, Ask};
use crate::results::Outcome;

/// The argument that turns the client's model off for one call.
pub(crate) const USE_CLIENT_MODEL: &str = "use_client_model";

/// The operations that can use the client's model.
pub(crate) const SAMPLED: &[&str] = &[
    "verify",
    "cherry_pick",
    "verify_bundle",
    "cherry_pick_to_facts",
    "cherry_pick_decisions",
    "context_for",
];

const VERIFIER_PROMPT: &str = "You check knowledge an AI agent recorded while working on a task \
    before other agents rely on it. Judge whether the item is correct and useful. Answer with \
    one JSON object only: {\"score\": <a number from 0 (wrong) to 1 (certainly right)>, \
    \"explanation\": \"<one sentence>\"}.";

const FACTS_PROMPT: &str = "You turn an AI agent's conversation into the facts other agents \
    should know: root causes, fixes, decisions and their reasons, file names, numbers. Leave out \
    chatter and anything uncertain. Answer with one JSON list only: [\"<one fact per string>\", \
    ...]; an empty list when it states nothing worth keeping.";

const JUDGE_PROMPT: &str = "You pick the decision points of an AI agent's conversation: \
    messages where the agent chose an approach, changed course after a failure, or settled on \
    the strategy that worked. Answer with one word: yes or no.";

const SUMMARY_PROMPT: &str = "You compress part of the briefing an AI agent receives when it \
    takes over another agent's unfinished work. Keep what the next agent needs to act: facts, \
    file names, errors, decisions, what is left to do. Answer with the compressed text only, \
    no preamble, within the length you are given.";

/// The client's model, reached from a blocking thread of the server's runtime.
#[derive(Clone)]
pub(crate) struct ClientModel {
    peer: Peer<RoleServer>,
    runtime: Handle,
}

impl ClientModel {
    /// The client's model, when the client can sample.
    pub(crate) fn of(peer: &Peer<RoleServer>) -> Option<ClientModel> {
        let can = peer
            .peer_info()
            .is_some_and(|info| info.capabilities.sampling.is_some());
        can.then(|| ClientModel {
            peer: peer.clone(),
            runtime: Handle::current(),
        })
    }

    /// Asks the model: `system` then `prompt`, its text answer.
    fn ask(&self, system: &str, prompt: String, max_tokens: u32) -> Result<String> {
        let params =
            CreateMessageRequestParams::new(vec![SamplingMessage::user_text(prompt)], max_tokens)
                .with_system_prompt(system);
        let reply = self
            .runtime
            .block_on(self.peer.create_message(params))
            .map_err(|e| Error::storage(format!("the client's model did not answer: {e}")))?;
        Ok(reply
            .message
            .content
            .into_vec()
            .into_iter()
            .filter_map(|block| match block {
                SamplingMessageContentBlock::Text(text) => Some(text.text),
                _ => None,
            })
            .collect::<Vec<_>>()
            .join("\n"))
    }

    /// The model's answer to an item a judge is asked about (`judge.rs`): a score, or the
    /// facts of a conversation.
    fn judge(&self, item: &Value) -> Result<Value> {
        match Ask::of(item) {
            Ask::Score => {
                let prompt = format!(
                    "A {} on branch {}:\n\n{}",
                    item["kind"].as_str().unwrap_or("item"),
                    item["branch"].as_str().unwrap_or("?"),
                    item["text"].as_str().unwrap_or_default()
                );
                read_score(&self.ask(VERIFIER_PROMPT, prompt, 300)?)
            }
            Ask::Facts => {
                let prompt = format!(
                    "The conversation, on branch {}:\n\n{}",
                    item["branch"].as_str().unwrap_or("?"),
                    item["text"].as_str().unwrap_or_default()
                );
                read_facts(&self.ask(FACTS_PROMPT, prompt, 1500)?)
            }
        }
    }

    /// Runs `op` (one of [`SAMPLED`]) with the client's model as its verifier or judge.
    pub(crate) fn run(&self, store: &Store, op: &str, args: Value) -> Result<Outcome> {
        match op {
            // The verifier's and the extractor's operations, asked as a judge command is.
            "verify" | "cherry_pick" | "verify_bundle" | "cherry_pick_to_facts" => {
                judge::run(store, op, args, "mcp-client-model", &mut |item| {
                    self.judge(&item)
                })
            }
            "cherry_pick_decisions" => {
                let args = ops::CherryPickDecisionsArgs::read(args, store.limits())?;
                let mut judge = JsonJudge(|message: Value| {
                    let prompt = format!(
                        "Message {} ({}):\n\n{}",
                        message["index"],
                        message["role"].as_str().unwrap_or("?"),
                        message["content"].as_str().unwrap_or_default()
                    );
                    read_yes_no(&self.ask(JUDGE_PROMPT, prompt, 5)?)
                });
                Ok(Outcome::new(ops::CherryPickDecisions::run_with(
                    store,
                    args,
                    Some(&mut judge),
                )?))
            }
            "context_for" => {
                let args = ops::ContextForArgs::read(args, store.limits())?;
                let options = args.options()?.summarizer(self.clone());
                Ok(Outcome::new(store.context_for(&args.handoff_id, options)?))
            }
            other => Err(Error::invalid(
                "name",
                format!("{other} cannot use the client's model"),
            )),
        }
    }
}

/// The client's model as the packet's summarizer: asked for one item that does not fit whole,
/// within the room left for it.
impl Summarizer for ClientModel {
    fn summarize(&self, request: &SummaryRequest<'_>) -> Result<String> {
        let (limit, max_tokens) = match request.unit {
            BudgetUnit::Chars => (
                format!("{} characters", request.budget),
                request.budget / 3 + 16,
            ),
            BudgetUnit::Tokens => (
                format!("about {} tokens", request.budget),
                request.budget + 16,
            ),
        };
        let prompt = format!(
            "Compress this section, \"{}\", to at most {limit}:\n\n{}",
            request.title, request.text
        );
        let max_tokens = u32::try_from(max_tokens).unwrap_or(u32::MAX);
        Ok(self
            .ask(SUMMARY_PROMPT, prompt, max_tokens)?
            .trim()
            .to_owned())
    }
}

/// Takes `use_client_model` out of a call's arguments: whether the call may use the model
/// (by default it may).
pub(crate) fn take_switch(args: &mut JsonObject) -> Result<bool> {
    match args.remove(USE_CLIENT_MODEL) {
        None | Some(Value::Null) => Ok(true),
        Some(Value::Bool(on)) => Ok(on),
        Some(other) => Err(Error::invalid(
            USE_CLIENT_MODEL,
            format!("must be true or false, is {other}"),
        )),
    }
}

/// The schema of `use_client_model`, added to the tools of [`SAMPLED`].
pub(crate) fn switch_schema() -> Value {
    json!({
        "type": "boolean",
        "description": "Use this client's own model (MCP sampling) as the verifier, the judge or \
            the summarizer of what does not fit the packet, when the client supports sampling \
            (default true); false: the neutral 0.5, the seed's heuristics, or cutting."
    })
}

/// A score in a model's reply: the JSON object it was asked for (found inside any prose
/// around it), or a bare number.
fn read_score(reply: &str) -> Result<Value> {
    let object = match (reply.find('{'), reply.rfind('}')) {
        (Some(start), Some(end)) if start < end => serde_json::from_str(&reply[start..=end]).ok(),
        _ => None,
    };
    object
        .or_else(|| reply.trim().parse::<f64>().ok().map(|n| json!(n)))
        .ok_or_else(|| {
            Error::invalid(
                "score",
                format!("the client's model answered no score: {:?}", clip(reply)),
            )
        })
}

/// The list of facts in a model's reply (found inside any prose around it).
fn read_facts(reply: &str) -> Result<Value> {
    match (reply.find('['), reply.rfind(']')) {
        (Some(start), Some(end)) if start < end => serde_json::from_str(&reply[start..=end]).ok(),
        _ => None,
    }
    .ok_or_else(|| {
        Error::invalid(
            "facts",
            format!(
                "the client's model answered no list of facts: {:?}",
                clip(reply)
            ),
        )
    })
}

/// Yes or no in a model's reply.
fn read_yes_no(reply: &str) -> Result<Value> {
    let word = reply
        .trim()
        .trim_matches(|c: char| !c.is_alphanumeric())
        .to_lowercase();
    if word.starts_with("yes") {
        Ok(json!(true))
    } else if word.starts_with("no") {
        Ok(json!(false))
    } else {
        Err(Error::invalid(
            "judge",
            format!(
                "the client's model answered neither yes nor no: {:?}",
                clip(reply)
            ),
        ))
    }
}

fn clip(text: &str) -> String {
    text.chars().take(80).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_read_leniently_and_refused_clearly() {
        let read = |reply| read_score(reply).ok();
        assert_eq!(
            read("Sure. {\"score\": 0.8, \"explanation\": \"ok\"} Done."),
            Some(json!({"score": 0.8, "explanation": "ok"}))
        );
        assert_eq!(read(" 0.25 "), Some(json!(0.25)));
        assert_eq!(read("I cannot tell"), None);
        assert_eq!(read_yes_no("Yes.").ok(), Some(json!(true)));
        assert_eq!(read_yes_no("no").ok(), Some(json!(false)));
        assert!(read_yes_no("perhaps").is_err());
        assert_eq!(
            read_facts("Here: [\"tokens last 1h\"]").ok(),
            Some(json!(["tokens last 1h"]))
        );
        assert!(read_facts("nothing").is_err());
    }
}
