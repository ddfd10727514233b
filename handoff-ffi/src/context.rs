//! The context builder: what a successor reads, within a token budget, with secrets redacted
//! and a manifest of everything included, truncated, dropped and redacted.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::SystemTime;

use handoff_core as core;
use handoff_core::context as ctx;
use handoff_core::ops;
use serde::Serialize;

use crate::arguments::{self, json_texts, rfc3339};
use crate::error::{HandoffError, Result};
use crate::record::{Handoff, utc};
use crate::tools::Provider;

pub use handoff_core::context::{
    BudgetUnit, DropReason, Dropped, ItemKind, Manifest as PacketManifest, RedactedItem,
    Section as PacketSection, Truncation,
};
pub use handoff_core::redact::Redaction;

/// Counts tokens for a [`ContextBuilder`]: implement it to plug in the tokenizer of your
/// model. Without one the builder estimates about four characters a token.
#[uniffi::export(with_foreign)]
pub trait Tokenizer: Send + Sync {
    /// The number of tokens `text` costs.
    fn count_tokens(&self, text: String) -> u64;
}

/// A chat message offered to the builder or written in a conversation (`Store.add_conversation`,
/// `Store.append_messages`), under the names the core reads messages by.
#[derive(Clone, Debug, PartialEq, Serialize, uniffi::Record)]
pub struct ContextMessage {
    /// `user`, `assistant`, `tool`, `system`.
    pub role: String,
    /// The text.
    pub content: String,
    /// Tool calls the message made, each as JSON text: `{"id", "name", "arguments"}` or as the
    /// provider sent it.
    #[uniffi(default)]
    #[serde(serialize_with = "json_texts")]
    pub tool_calls: Vec<String>,
    /// For a `tool` message, the id of the call it answers.
    #[uniffi(default)]
    pub tool_call_id: Option<String>,
    /// When it was said.
    #[uniffi(default)]
    #[serde(with = "rfc3339")]
    pub at: Option<SystemTime>,
    /// A stable id for the manifest; `message-<n>` when none.
    #[uniffi(default)]
    pub id: Option<String>,
    /// Higher is kept first; none is 50.
    #[uniffi(default)]
    pub priority: Option<i32>,
    /// For a `tool` message, whether the tool failed (a result's text that starts with an
    /// error says so too).
    #[uniffi(default = false)]
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

/// What a [`Summarizer`] is asked to compress: one item of the packet that does not fit whole.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct SummaryRequest {
    /// The item's id (as the manifest lists it).
    pub id: String,
    /// Its heading.
    pub title: String,
    /// Its text, already redacted.
    pub text: String,
    /// At most how long the summary may be, in `unit`.
    pub budget: u64,
    /// What `budget` counts.
    pub unit: BudgetUnit,
}

/// Compresses an item of a successor's packet that does not fit whole (an LLM, say), instead
/// of cutting it (`Store.context_for`): implement it in Swift, Kotlin or Python.
///
/// An answer that is empty, that still does not fit, or a throw, is not used: the item is cut
/// as without a summarizer. What it returns is redacted like any text of the packet.
#[uniffi::export(with_foreign)]
pub trait Summarizer: Send + Sync {
    /// `request.text` in at most `request.budget` units.
    fn summarize(&self, request: SummaryRequest) -> Result<String>;
}

/// A foreign [`Summarizer`] in the core's shape.
pub(crate) struct ForeignSummarizer(pub(crate) Arc<dyn Summarizer>);

impl ctx::Summarizer for ForeignSummarizer {
    fn summarize(&self, request: &ctx::SummaryRequest<'_>) -> core::Result<String> {
        let request = SummaryRequest {
            id: request.id.to_owned(),
            title: request.title.to_owned(),
            text: request.text.to_owned(),
            budget: tokens(request.budget),
            unit: request.unit,
        };
        self.0
            .summarize(request)
            .map_err(|thrown| core::Error::invalid("summarizer", thrown.to_string()))
    }
}

/// A message of the packet in chat form, without tool calls: [`Packet::to_messages`] gives
/// the full form.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct ChatMessage {
    /// `system` for the briefing, then the conversation's roles.
    pub role: String,
    /// The text.
    pub content: String,
}

/// The successor's context: sections within the budget, and the manifest.
#[derive(Clone, Debug, PartialEq, uniffi::Record)]
pub struct Packet {
    /// The packet as Markdown, for a prompt.
    pub markdown: String,
    /// The packet as chat messages: the briefing as one system message, then the conversation.
    pub messages: Vec<ChatMessage>,
    /// The packet as JSON (the same in every binding).
    pub json: String,
    /// What it uses, in `unit`: tokens counted with the builder's tokenizer, or characters of
    /// its Markdown.
    pub tokens: u64,
    /// The budget it was built for, in `unit`.
    pub budget: u64,
    /// What the budget counts.
    pub unit: BudgetUnit,
    /// Mandatory sections first, then the rest by kind, messages in chronological order.
    pub sections: Vec<PacketSection>,
    /// What was included, truncated, summarised, dropped and redacted.
    pub manifest: PacketManifest,
}

#[uniffi::export]
impl Packet {
    /// The packet as input for `provider` (`OpenaiChat`, `OpenaiResponses`, `Anthropic`), as
    /// JSON text: an array of that API's messages, valid whatever the builder kept (tool calls
    /// go out as calls only with their results right after them, otherwise both as text; roles
    /// alternate where the provider needs it; no message is empty). `Mcp` has no message format:
    /// a validation error.
    pub fn to_messages(&self, provider: Provider) -> Result<String> {
        let packet: ctx::Packet = serde_json::from_str(&self.json)
            .map_err(|e| HandoffError::invalid("json", format!("is not a packet's JSON: {e}")))?;
        let messages = packet.to_messages_for(provider)?;
        serde_json::to_string(&messages)
            .map_err(|e| HandoffError::invalid("packet", format!("cannot be written as JSON: {e}")))
    }
}

/// The text with its secrets replaced, and where they were.
#[derive(Clone, Debug, PartialEq, Eq, uniffi::Record)]
pub struct Redacted {
    /// The text with each secret replaced by `[REDACTED:<rule>]`.
    pub text: String,
    /// The secrets found, in order.
    pub redactions: Vec<Redaction>,
}

/// Replaces the secrets in `text` (API keys, tokens, private keys, passwords in URLs, ...).
#[uniffi::export]
pub fn redact(text: String) -> Redacted {
    let (clean, found) = core::redact(&text);
    Redacted {
        text: clean,
        redactions: found,
    }
}

/// Builds a successor's context packet under a token budget.
///
/// Mandatory sections (goal, pending steps, instructions, blockers) are always present, cut
/// with a visible marker if they must be. The same input always gives the same packet.
#[derive(Debug, uniffi::Object)]
pub struct ContextBuilder {
    inner: Mutex<ctx::ContextBuilder>,
}

#[uniffi::export]
impl ContextBuilder {
    /// A builder for `budget_tokens` (none is 2000) that redacts secrets unless `redact` is
    /// false, counting with `tokenizer` (none estimates about four characters a token).
    #[uniffi::constructor(default(budget_tokens = None, redact = None, tokenizer = None))]
    pub fn new(
        budget_tokens: Option<u64>,
        redact: Option<bool>,
        tokenizer: Option<Arc<dyn Tokenizer>>,
    ) -> Arc<ContextBuilder> {
        // Built directly rather than read: these arguments have no rule to break, and a budget
        // beyond memory's reach is as good as the largest.
        let arguments = ops::ContextArgs {
            budget_tokens: budget_tokens.map(|n| usize::try_from(n).unwrap_or(usize::MAX)),
            redact,
        };
        let mut builder = arguments.builder();
        if let Some(tokenizer) = tokenizer {
            builder = builder.tokenizer(ForeignTokenizer(tokenizer));
        }
        Arc::new(ContextBuilder {
            inner: Mutex::new(builder),
        })
    }

    /// Adds a handoff record's sections.
    pub fn add_handoff(&self, handoff: Handoff) {
        self.lock().add_handoff(&handoff);
    }

    /// Adds conversation messages (`user`, `assistant`, `system`, `developer`, `tool`).
    pub fn add_messages(&self, messages: Vec<ContextMessage>) -> Result<()> {
        let values = messages
            .iter()
            .enumerate()
            .map(|(i, message)| arguments::json(&format!("messages[{i}]"), message))
            .collect::<Result<Vec<_>>>()?;
        self.lock().add_message_values(&values)?;
        Ok(())
    }

    /// Adds conversation messages from JSON text: an array of messages as each provider writes
    /// them (OpenAI Chat Completions messages, Responses API / Agents SDK items, Anthropic
    /// messages with `tool_use` and `tool_result` blocks, LangChain message dicts). A shape
    /// the core cannot read is a validation error naming `messages[i]`; then nothing is added.
    pub fn add_messages_json(&self, messages_json: String) -> Result<()> {
        let values: Vec<serde_json::Value> = serde_json::from_str(&messages_json).map_err(|e| {
            HandoffError::invalid(
                "messages_json",
                format!("must be a JSON array of messages: {e}"),
            )
        })?;
        self.lock().add_message_values(&values)?;
        Ok(())
    }

    /// Adds facts the successor should know (priority 70).
    pub fn add_facts(&self, facts: Vec<String>) {
        self.lock().add_facts(facts);
    }

    /// Adds a free item with a priority (default 50) and an optional time.
    #[uniffi::method(default(priority = 50, at = None))]
    pub fn add_item(&self, text: String, priority: i32, at: Option<SystemTime>) -> Result<()> {
        let at = at.map(|at| utc("at", at)).transpose()?;
        self.lock().add_item(text, priority, at);
        Ok(())
    }

    /// Builds the packet. The same input always gives the same packet.
    pub fn build(&self) -> Packet {
        let packet = self.lock().build();
        packet.into()
    }
}

impl ContextBuilder {
    /// The builder, even after a panic in a caller's tokenizer poisoned the lock: the items
    /// are only ever appended whole, so they are still consistent.
    fn lock(&self) -> MutexGuard<'_, ctx::ContextBuilder> {
        self.inner
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// A foreign [`Tokenizer`] in the core's shape.
struct ForeignTokenizer(Arc<dyn Tokenizer>);

impl ctx::Tokenizer for ForeignTokenizer {
    fn count(&self, text: &str) -> usize {
        usize::try_from(self.0.count_tokens(text.to_owned())).unwrap_or(usize::MAX)
    }
}

fn tokens(n: usize) -> u64 {
    n as u64
}

impl From<ctx::Packet> for Packet {
    fn from(packet: ctx::Packet) -> Self {
        let markdown = packet.to_markdown();
        let json = packet.to_json();
        let messages = packet
            .to_messages()
            .into_iter()
            .map(|m| ChatMessage {
                role: m["role"].as_str().unwrap_or_default().to_owned(),
                content: m["content"].as_str().unwrap_or_default().to_owned(),
            })
            .collect();
        Packet {
            markdown,
            messages,
            json,
            tokens: tokens(packet.tokens),
            budget: tokens(packet.budget),
            unit: packet.unit,
            sections: packet.sections,
            manifest: packet.manifest,
        }
    }
}
