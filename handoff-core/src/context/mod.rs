//! The context builder: what a successor reads, within a budget (in tokens or in characters),
//! with secrets redacted and a manifest of everything included, cut, summarised, dropped and
//! redacted.
//!
//! Mandatory sections (goal, pending steps, instructions, blockers) are always present, cut
//! with a visible marker if they must be. Everything else is chosen item by item by priority,
//! then recency (newest first, and the last added first among items of one time), so the
//! same input always gives the same packet; the best item that no longer fits whole is cut to the room left (a list keeps its
//! most recent entries) or, with a [`Summarizer`], compressed. Nothing is cut or dropped
//! without an entry in the manifest.
//!
//! The folder: this file is the builder; [`messages`] the chat messages it reads and writes,
//! `relevance` lexical scores of facts against a handoff, `markdown` a record rendered for a
//! prompt; `successor` the packet the [`Store`](crate::Store) builds from everything it knows
//! of a handoff, `knowledge` the indexes that packet reads, `ops` the operation `context_for`.

pub(crate) mod knowledge;
mod markdown;
pub mod messages;
pub(crate) mod ops;
mod relevance;
pub(crate) mod successor;

use std::borrow::Cow;
use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap};

use chrono::{DateTime, Utc};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::error::Result;
use crate::messages::ToolCall;
use crate::record::Handoff;
use crate::redact::Redactor;
use crate::tools::Provider;

/// Counts tokens. Plug in an exact tokenizer; the default is a fast estimate.
pub trait Tokenizer: Send + Sync {
    /// The number of tokens `text` costs.
    fn count(&self, text: &str) -> usize;
}

/// About four characters a token, the usual rule of thumb for English text with the major
/// providers' tokenizers; never zero for non-empty text.
#[derive(Clone, Copy, Debug, Default)]
pub struct EstimateTokenizer;

impl Tokenizer for EstimateTokenizer {
    fn count(&self, text: &str) -> usize {
        text.chars().count().div_ceil(4)
    }
}

/// A chat message offered to the builder.
///
/// To read the providers' own message shapes (Chat Completions, Responses items, Anthropic
/// blocks, LangChain dicts), use [`messages::normalize`] or
/// [`ContextBuilder::add_message_values`].
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
#[cfg_attr(feature = "uniffi", uniffi(name = "ConversationMessage"))]
pub struct Message {
    /// `user`, `assistant`, `tool`, `system`.
    pub role: String,
    /// The text.
    pub content: String,
    /// Tool calls the message made. Read from any provider's call shape.
    #[serde(default, deserialize_with = "messages::lenient_tool_calls")]
    pub tool_calls: Vec<ToolCall>,
    /// For a `tool` message, the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For a `tool` message, whether the tool failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// When it was said.
    #[serde(default, with = "crate::clock::rfc3339::option")]
    #[schemars(with = "Option<DateTime<Utc>>")]
    pub at: Option<DateTime<Utc>>,
    /// A stable id for the manifest; `message-<n>` when absent.
    #[serde(default)]
    pub id: Option<String>,
    /// Higher is kept first; messages default to 50.
    #[serde(default)]
    pub priority: Option<i32>,
}

/// What kind of content an item is; it decides the section it is rendered in.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum ItemKind {
    /// The task's state: its goal, plan and current step, or a protocol run's message.
    Task,
    /// Who worked on the task before, in order.
    History,
    /// What the work depends on: finished steps' outcomes, earlier attempts' errors.
    Output,
    /// A section of a handoff record.
    Handoff,
    /// A fact the successor should know.
    Fact,
    /// A conversation message.
    Message,
    /// Anything else.
    Note,
}

#[derive(Clone, Debug)]
struct Item {
    id: String,
    kind: ItemKind,
    title: String,
    text: String,
    priority: i32,
    at: Option<DateTime<Utc>>,
    mandatory: bool,
    role: Option<String>,
    tool_calls: Vec<ToolCall>,
    tool_call_id: Option<String>,
    is_error: bool,
    /// The heading it is listed under with others (a bullet, or a message of a named
    /// conversation); `None` gives a block under its own title (or, for a message, the plain
    /// `Conversation`).
    group: Option<String>,
    /// Cut from the front (a list whose latest entries matter most), not from the end.
    keep_end: bool,
}

/// One piece of content in the packet.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
#[cfg_attr(feature = "uniffi", uniffi(name = "PacketSection"))]
pub struct Section {
    /// The item's id.
    pub id: String,
    /// Its kind.
    pub kind: ItemKind,
    /// Its heading (`Current Goal`, `user`, `Fact`, ...).
    pub title: String,
    /// The text, redacted and possibly truncated.
    pub text: String,
    /// For messages, the speaker's role.
    pub role: Option<String>,
    /// Its cost in tokens.
    pub tokens: usize,
    /// For messages, the tool calls made (redacted), so that they can be sent as calls again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool result, the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For a tool result, whether the tool failed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// The heading it is listed under with others (a bullet of `Verified Facts`, a message of
    /// `Conversation: …`); without one, a section under its own title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub group: Option<String>,
}

/// What happened to every item offered to the builder.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
#[cfg_attr(feature = "uniffi", uniffi(name = "PacketManifest"))]
pub struct Manifest {
    /// Ids included whole.
    pub included: Vec<String>,
    /// Items included in part (cut, marked `…`).
    pub truncated: Vec<Truncation>,
    /// Items included compressed by the builder's [`Summarizer`] instead of cut.
    #[serde(default)]
    pub summarized: Vec<Truncation>,
    /// Items left out.
    pub dropped: Vec<Dropped>,
    /// Secrets replaced, by item and rule.
    pub redacted: Vec<RedactedItem>,
}

/// An item included in part, or summarised; costs are in the packet's [`BudgetUnit`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct Truncation {
    /// The item.
    pub id: String,
    /// Its full cost.
    pub original_tokens: usize,
    /// What was kept.
    pub kept_tokens: usize,
}

/// An item left out.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct Dropped {
    /// The item.
    pub id: String,
    /// What it would have cost.
    pub tokens: usize,
    /// Why it was left out.
    pub reason: DropReason,
}

/// Why an item was left out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum DropReason {
    /// No room was left in the budget.
    Budget,
}

/// Secrets replaced in one item.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[cfg_attr(feature = "uniffi", derive(uniffi::Record))]
pub struct RedactedItem {
    /// The item.
    pub id: String,
    /// The rule that matched.
    pub rule: String,
    /// How many times.
    pub count: usize,
}

/// What a budget counts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[cfg_attr(feature = "uniffi", derive(uniffi::Enum))]
pub enum BudgetUnit {
    /// Tokens, counted with the builder's [`Tokenizer`].
    #[default]
    Tokens,
    /// Characters of the packet's Markdown ([`Packet::to_markdown`]).
    Chars,
}

/// A packet's budget: tokens, or characters of its Markdown.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Budget {
    /// At most this many tokens.
    Tokens(usize),
    /// At most this many characters of Markdown.
    Chars(usize),
}

impl Budget {
    /// How many units it allows.
    pub fn limit(self) -> usize {
        match self {
            Budget::Tokens(n) | Budget::Chars(n) => n,
        }
    }

    /// What it counts.
    pub fn unit(self) -> BudgetUnit {
        match self {
            Budget::Tokens(_) => BudgetUnit::Tokens,
            Budget::Chars(_) => BudgetUnit::Chars,
        }
    }
}

/// What a [`Summarizer`] is asked to compress.
#[derive(Clone, Debug, Serialize)]
pub struct SummaryRequest<'a> {
    /// The item's id.
    pub id: &'a str,
    /// Its heading.
    pub title: &'a str,
    /// Its text, already redacted.
    pub text: &'a str,
    /// At most how long the summary may be, in `unit`.
    pub budget: usize,
    /// What `budget` counts.
    pub unit: BudgetUnit,
}

/// Compresses an item that does not fit whole (an LLM, say), instead of cutting it: the
/// seed's context compression. An answer that is empty, fails or still does not fit is not
/// used: the item is cut as without one. Its answer is redacted like any text.
pub trait Summarizer: Send + Sync {
    /// `request.text` in at most `request.budget` units.
    fn summarize(&self, request: &SummaryRequest<'_>) -> Result<String>;
}

/// The successor's context: sections within the budget, and the manifest.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Packet {
    /// Mandatory sections first, then the rest by kind, messages in chronological order.
    pub sections: Vec<Section>,
    /// What it uses, in `unit`: tokens counted with the builder's tokenizer, or characters of
    /// its Markdown.
    pub tokens: usize,
    /// The budget it was built for, in `unit`.
    pub budget: usize,
    /// What the budget counts.
    #[serde(default)]
    pub unit: BudgetUnit,
    /// What was included, truncated, summarised, dropped and redacted.
    pub manifest: Manifest,
}

/// Marks text cut at its end to fit the budget.
const CUT_MARKER: &str = " … [truncated]";
/// Marks text cut at its start (its latest part kept).
const CUT_FRONT_MARKER: &str = "[truncated] … ";
/// At most this many items are cut (or summarised) to use the room the whole ones leave.
const MAX_CUTS: usize = 4;
/// The least text, in tokens (four times as many characters), worth showing of a cut item.
const MIN_CUT_TOKENS: usize = 16;

/// Builds a [`Packet`] for a successor.
///
/// The packet stays within the budget unless the mandatory sections' headings and
/// truncation markers alone exceed it: those are never left out.
///
/// ```
/// use handoff_core::context::ContextBuilder;
/// use handoff_core::NewHandoff;
///
/// let h = NewHandoff::new("t", "Ship the parser").pending(["tests"])
///     .into_record("h1".into(), chrono::Utc::now());
/// let mut builder = ContextBuilder::new(200);
/// builder.add_handoff(&h).add_facts(["the CI key is sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t"]);
/// let packet = builder.build();
/// assert!(packet.tokens <= 200);
/// assert!(packet.to_markdown().contains("[REDACTED:openai-api-key]"));
/// ```
pub struct ContextBuilder {
    budget: Budget,
    redactor: Option<Redactor>,
    tokenizer: Box<dyn Tokenizer>,
    summarizer: Option<Box<dyn Summarizer>>,
    items: Vec<Item>,
}

impl std::fmt::Debug for ContextBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ContextBuilder")
            .field("budget", &self.budget)
            .field("redact", &self.redactor.is_some())
            .field("summarize", &self.summarizer.is_some())
            .field("items", &self.items.len())
            .finish()
    }
}

/// How an item is rendered, which decides what it costs beyond its text.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// `## title` then its text.
    Block,
    /// `- text`, under its group's heading.
    Bullet,
    /// `**role:** text`, under a conversation's heading.
    Line,
}

impl Item {
    fn shape(&self) -> Shape {
        match (self.kind, &self.group) {
            (ItemKind::Message, _) => Shape::Line,
            (_, Some(_)) => Shape::Bullet,
            (_, None) => Shape::Block,
        }
    }

    /// The heading it shares with others of its group, if it has one.
    fn heading(&self) -> Option<String> {
        match self.shape() {
            Shape::Line => Some(conversation_heading(self.group.as_deref())),
            Shape::Bullet => self.group.clone(),
            Shape::Block => None,
        }
    }
}

/// The heading of a conversation's messages.
fn conversation_heading(group: Option<&str>) -> String {
    group.map_or_else(
        || "Conversation".to_owned(),
        |g| format!("Conversation: {g}"),
    )
}

impl ContextBuilder {
    /// A builder for `budget_tokens`, redacting with the built-in rules, counting with
    /// [`EstimateTokenizer`].
    pub fn new(budget_tokens: usize) -> Self {
        Self::with_budget(Budget::Tokens(budget_tokens))
    }

    /// A builder for `budget`: tokens, or characters of the packet's Markdown (the seed's
    /// 2,000-character packets).
    pub fn with_budget(budget: Budget) -> Self {
        ContextBuilder {
            budget,
            redactor: Some(Redactor::default()),
            tokenizer: Box::new(EstimateTokenizer),
            summarizer: None,
            items: Vec::new(),
        }
    }

    /// Turns redaction off (`false`) or on with the built-in rules.
    pub fn redact(mut self, on: bool) -> Self {
        self.redactor = on.then(Redactor::default);
        self
    }

    /// Redacts with `redactor` (the built-in rules plus your own, say).
    pub fn redactor(mut self, redactor: Redactor) -> Self {
        self.redactor = Some(redactor);
        self
    }

    /// Counts tokens with `tokenizer`.
    pub fn tokenizer(mut self, tokenizer: impl Tokenizer + 'static) -> Self {
        self.tokenizer = Box::new(tokenizer);
        self
    }

    /// Compresses items that do not fit whole with `summarizer` instead of cutting them.
    pub fn summarizer(mut self, summarizer: impl Summarizer + 'static) -> Self {
        self.summarizer = Some(Box::new(summarizer));
        self
    }

    /// The same, boxed (for a face's callable chosen at run time).
    pub fn boxed_summarizer(mut self, summarizer: Option<Box<dyn Summarizer>>) -> Self {
        self.summarizer = summarizer;
        self
    }

    fn push(
        &mut self,
        kind: ItemKind,
        id: String,
        title: &str,
        text: String,
        priority: i32,
    ) -> &mut Item {
        self.items.push(Item {
            id,
            kind,
            title: title.to_owned(),
            text,
            priority,
            at: None,
            mandatory: false,
            role: None,
            tool_calls: Vec::new(),
            tool_call_id: None,
            is_error: false,
            group: None,
            keep_end: false,
        });
        let last = self.items.len() - 1;
        &mut self.items[last]
    }

    /// Adds a handoff record: goal, pending steps, instructions and blockers are mandatory;
    /// the other sections compete by priority, and a list cut to fit keeps its latest entries.
    pub fn add_handoff(&mut self, h: &Handoff) -> &mut Self {
        let list = |items: &[String]| {
            items
                .iter()
                .map(|i| format!("- {i}"))
                .collect::<Vec<_>>()
                .join("\n")
        };
        let files: Vec<String> = h
            .modified_files
            .iter()
            .map(|f| format!("modified: {f}"))
            .chain(h.locked_files.iter().map(|f| format!("locked: {f}")))
            .collect();
        // (field, title, text, priority, mandatory, a list)
        let sections: [(&str, &str, String, i32, bool, bool); 13] = [
            ("goal", "Current Goal", h.goal.clone(), 100, true, false),
            (
                "pending_steps",
                "Pending",
                list(&h.pending_steps),
                100,
                true,
                true,
            ),
            (
                "instructions",
                "Instructions",
                h.instructions.clone().unwrap_or_default(),
                100,
                true,
                false,
            ),
            ("blockers", "Blockers", list(&h.blockers), 100, true, true),
            (
                "progress_summary",
                "Progress",
                h.progress_summary.clone(),
                90,
                false,
                false,
            ),
            ("warnings", "Warnings", list(&h.warnings), 85, false, true),
            (
                "unresolved_errors",
                "Unresolved Errors",
                list(&h.unresolved_errors),
                85,
                false,
                true,
            ),
            (
                "key_decisions",
                "Key Decisions",
                list(&h.key_decisions),
                80,
                false,
                true,
            ),
            (
                "priority_items",
                "Priorities",
                list(&h.priority_items),
                80,
                false,
                true,
            ),
            (
                "success_criteria",
                "Success Criteria",
                list(&h.success_criteria),
                75,
                false,
                true,
            ),
            (
                "assumptions",
                "Assumptions",
                list(&h.assumptions),
                70,
                false,
                true,
            ),
            (
                "completed_steps",
                "Completed",
                list(&h.completed_steps),
                60,
                false,
                true,
            ),
            ("files", "Files", list(&files), 55, false, true),
        ];
        for (field, title, text, priority, mandatory, keep_end) in sections {
            if text.trim().is_empty() {
                continue;
            }
            let item = self.push(
                ItemKind::Handoff,
                format!("{}#{field}", h.id),
                title,
                text,
                priority,
            );
            item.mandatory = mandatory;
            item.keep_end = keep_end;
            item.at = Some(h.created_at);
        }
        self
    }

    /// Adds conversation messages.
    pub fn add_messages(&mut self, messages: impl IntoIterator<Item = Message>) -> &mut Self {
        self.add_conversation(None, messages)
    }

    /// Adds messages under `Conversation: <group>` (or the plain `Conversation`), so that
    /// several conversations stay apart in the packet.
    pub fn add_conversation(
        &mut self,
        group: Option<&str>,
        messages: impl IntoIterator<Item = Message>,
    ) -> &mut Self {
        for message in messages {
            let n = self.items.len();
            let id = message.id.unwrap_or_else(|| format!("message-{n}"));
            let item = self.push(
                ItemKind::Message,
                id,
                "",
                message.content,
                message.priority.unwrap_or(50),
            );
            item.title.clone_from(&message.role);
            item.role = Some(message.role);
            item.at = message.at;
            item.tool_calls = message.tool_calls;
            item.tool_call_id = message.tool_call_id;
            item.is_error = message.is_error;
            item.group = group.map(str::to_owned);
        }
        self
    }

    /// Adds messages in any shape [`messages::normalize`] reads: OpenAI Chat Completions
    /// messages, Responses API / Agents SDK items, Anthropic messages and LangChain message
    /// dicts. On a problem (named `messages[<index>]…`) nothing is added.
    pub fn add_message_values(&mut self, values: &[serde_json::Value]) -> Result<&mut Self> {
        let messages = messages::normalize(values)?;
        Ok(self.add_messages(messages))
    }

    /// Adds facts (priority 70).
    pub fn add_facts<I, S>(&mut self, facts: I) -> &mut Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        for fact in facts {
            let n = self.items.len();
            self.push(ItemKind::Fact, format!("fact-{n}"), "Fact", fact.into(), 70);
        }
        self
    }

    /// Adds a free item with a priority and an optional time.
    pub fn add_item(
        &mut self,
        text: impl Into<String>,
        priority: i32,
        at: Option<DateTime<Utc>>,
    ) -> &mut Self {
        let n = self.items.len();
        self.push(
            ItemKind::Note,
            format!("item-{n}"),
            "Note",
            text.into(),
            priority,
        )
        .at = at;
        self
    }

    /// Adds one bullet under the heading `group` (`Verified Facts`, `Agent History`, …):
    /// what the store's packet is made of.
    pub(crate) fn add_bullet(
        &mut self,
        kind: ItemKind,
        id: String,
        group: &str,
        text: String,
        priority: i32,
        at: Option<DateTime<Utc>>,
    ) -> &mut Self {
        let item = self.push(kind, id, group, text, priority);
        item.group = Some(group.to_owned());
        item.at = at;
        self
    }

    /// Adds a section under its own heading; `keep_end` cuts it from the front.
    pub(crate) fn add_block(
        &mut self,
        kind: ItemKind,
        id: String,
        title: &str,
        text: String,
        priority: i32,
        keep_end: bool,
    ) -> &mut Self {
        if !text.trim().is_empty() {
            self.push(kind, id, title, text, priority).keep_end = keep_end;
        }
        self
    }

    /// Builds the packet. Within a character budget its Markdown is at most that long
    /// (unless the mandatory sections' headings and cut markers alone are longer).
    pub fn build(&self) -> Packet {
        let limit = self.budget.limit();
        let mut packet = self.build_within(limit);
        if self.budget.unit() == BudgetUnit::Chars {
            // The costs are worked out per item; a packet a few characters over (a trimmed
            // text counted whole is the only slack, and it errs short) is built again tighter.
            let length = |packet: &Packet| packet.to_markdown().chars().count();
            let mut used = length(&packet);
            for _ in 0..4 {
                if used <= limit || packet.tokens == 0 {
                    break;
                }
                packet = self.build_within(limit.saturating_sub(used - limit));
                packet.budget = limit;
                used = length(&packet);
            }
            packet.tokens = used;
        }
        packet
    }

    fn build_within(&self, budget: usize) -> Packet {
        let mut manifest = Manifest::default();
        // One pass: each item's cost, and its redacted text when it had secrets. Items are only
        // borrowed; no per-item record is built beyond its cost, so a million items do not
        // allocate (and fault in) tens of megabytes of candidates on every build.
        let mut costs: Vec<usize> = Vec::with_capacity(self.items.len());
        let mut redacted: HashMap<usize, String> = HashMap::new();
        let mut redacted_calls: HashMap<usize, Vec<ToolCall>> = HashMap::new();
        for (index, item) in self.items.iter().enumerate() {
            let mut text = item.text.as_str();
            let mut calls = item.tool_calls.as_slice();
            if let Some(redactor) = &self.redactor {
                let found = redactor.find(&item.text);
                let mut rules: Vec<String> = found.iter().map(|r| r.rule.clone()).collect();
                if !found.is_empty() {
                    text = redacted
                        .entry(index)
                        .or_insert_with(|| crate::redact::replace(&item.text, &found));
                }
                // A call's arguments are redacted string by string, so they stay a JSON object.
                if !calls.is_empty() {
                    let mut clean = calls.to_vec();
                    let before = rules.len();
                    for call in &mut clean {
                        redact_json(redactor, &mut call.arguments, &mut rules);
                    }
                    if rules.len() > before {
                        calls = redacted_calls.entry(index).or_insert(clean);
                    }
                }
                if !rules.is_empty() {
                    rules.sort_unstable();
                    for chunk in rules.chunk_by(|a, b| a == b) {
                        manifest.redacted.push(RedactedItem {
                            id: item.id.clone(),
                            rule: chunk[0].clone(),
                            count: chunk.len(),
                        });
                    }
                }
            }
            costs.push(self.cost(item, text) + self.calls_cost(calls));
        }
        let candidate =
            |index: usize,
             redacted: &mut HashMap<usize, String>,
             redacted_calls: &mut HashMap<usize, Vec<ToolCall>>| {
                let item = &self.items[index];
                Candidate {
                    index,
                    item,
                    text: redacted
                        .remove(&index)
                        .map_or(Cow::Borrowed(item.text.as_str()), Cow::Owned),
                    calls: redacted_calls
                        .remove(&index)
                        .map_or(Cow::Borrowed(item.tool_calls.as_slice()), Cow::Owned),
                    tokens: costs[index],
                }
            };

        // Mandatory items first, each cut to its share of what is left if they cannot all fit.
        let mut chosen: Vec<Candidate<'_>> = Vec::new();
        let mut left = budget;
        let mandatory: Vec<usize> = (0..self.items.len())
            .filter(|&i| self.items[i].mandatory)
            .collect();
        let mandatory_total: usize = mandatory.iter().map(|&i| costs[i]).sum();
        let count = mandatory.len();
        for (i, index) in mandatory.into_iter().enumerate() {
            let mut c = candidate(index, &mut redacted, &mut redacted_calls);
            let share = left / (count - i).max(1);
            if mandatory_total <= budget || c.tokens <= share {
                manifest.included.push(c.item.id.clone());
                left = left.saturating_sub(c.tokens);
                chosen.push(c);
                continue;
            }
            let original_tokens = c.tokens;
            let text = self.truncate(c.item, &c.text, share);
            c.tokens = self.cost(c.item, &text);
            c.text = Cow::Owned(text);
            manifest.truncated.push(Truncation {
                id: c.item.id.clone(),
                original_tokens,
                kept_tokens: c.tokens,
            });
            left = left.saturating_sub(c.tokens);
            chosen.push(c);
        }

        // Every heading shared by optional items is set aside first; those that end up over
        // nothing are given back before the cuts.
        let mut headings: BTreeMap<String, (usize, bool)> = BTreeMap::new();
        for item in self.items.iter().filter(|i| !i.mandatory) {
            if let Some(heading) = item.heading() {
                let cost = self.heading_cost(&heading);
                headings.entry(heading).or_insert((cost, false));
            }
        }
        let reserved: usize = headings.values().map(|(cost, _)| cost).sum();
        let spare = left.saturating_sub(reserved);
        let reserved = left - spare;
        left = spare;

        // The rest: by priority, then newest first, then the last added first, each taken
        // if it still fits. Items of one cost are taken best first, and at most `left / cost`
        // of them can ever be taken, so each cost keeps only its best `left / cost` items (in a
        // bounded min-heap, filled in one pass); the others, and those that cost more than is
        // left, are dropped without being ordered. The next item taken is the best of the
        // costs that still fit: the same choice, in the same order, as ordering every item.
        let mut by_cost: BTreeMap<usize, BinaryHeap<Reverse<Rank>>> = BTreeMap::new();
        for (index, item) in self.items.iter().enumerate() {
            let cost = costs[index];
            if item.mandatory || cost > left {
                continue;
            }
            // `cost` is at least 1 (a bullet's mark), so this never divides by zero.
            let keep = left / cost.max(1);
            let rank = Reverse(rank(item, index));
            let heap = by_cost.entry(cost).or_default();
            if heap.len() < keep {
                heap.push(rank);
            } else if let Some(mut worst) = heap.peek_mut()
                && rank < *worst
            {
                *worst = rank;
            }
        }
        let mut by_cost: BTreeMap<usize, Vec<Rank>> = by_cost
            .into_iter()
            .map(|(cost, heap)| {
                // Sorted ascending, `Reverse` puts the best first; reversed, `pop` takes it.
                let mut ranks: Vec<Rank> =
                    heap.into_sorted_vec().into_iter().map(|r| r.0).collect();
                ranks.reverse();
                (cost, ranks)
            })
            .collect();
        let mut taken = vec![false; self.items.len()];
        loop {
            let best = by_cost
                .range(..=left)
                .filter_map(|(cost, ranks)| ranks.last().map(|rank| (*rank, *cost)))
                .max_by(|a, b| a.0.cmp(&b.0));
            let Some((_, cost)) = best else {
                break;
            };
            let Some(ranks) = by_cost.get_mut(&cost) else {
                break;
            };
            let Some((_, _, index)) = ranks.pop() else {
                break;
            };
            if ranks.is_empty() {
                by_cost.remove(&cost);
            }
            let c = candidate(index, &mut redacted, &mut redacted_calls);
            left -= c.tokens;
            taken[index] = true;
            if let Some(heading) = c.item.heading()
                && let Some(entry) = headings.get_mut(&heading)
            {
                entry.1 = true;
            }
            manifest.included.push(c.item.id.clone());
            chosen.push(c);
        }
        let unused: usize = headings
            .values()
            .filter(|(_, used)| !used)
            .map(|(cost, _)| cost)
            .sum();
        left += unused.min(reserved);

        // The room left goes to the best items that did not fit whole: summarised when a
        // summarizer can make them fit, cut otherwise.
        for _ in 0..MAX_CUTS {
            let best = (0..self.items.len())
                .filter(|&i| !self.items[i].mandatory && !taken[i])
                .max_by_key(|&i| rank(&self.items[i], i));
            let Some(index) = best else { break };
            let item = &self.items[index];
            let heading = item.heading();
            let opening = heading
                .as_ref()
                .and_then(|h| headings.get(h))
                .filter(|(_, used)| !used)
                .map_or(0, |(cost, _)| *cost);
            let frame = self.cost(item, "") + self.calls_cost(&item.tool_calls);
            let room = left.saturating_sub(opening);
            if room < frame + self.min_cut() {
                break;
            }
            let mut c = candidate(index, &mut redacted, &mut redacted_calls);
            let original_tokens = c.tokens;
            let summary = self
                .summarize(item, &c.text, room - frame)
                .filter(|s| self.cost(item, s) + self.calls_cost(&c.calls) <= room);
            let summarized = summary.is_some();
            let calls = self.calls_cost(&c.calls);
            let text = summary.unwrap_or_else(|| self.truncate(item, &c.text, room - calls));
            c.tokens = self.cost(item, &text) + self.calls_cost(&c.calls);
            if c.tokens > room {
                break;
            }
            c.text = Cow::Owned(text);
            let cut = Truncation {
                id: item.id.clone(),
                original_tokens,
                kept_tokens: c.tokens,
            };
            if summarized {
                manifest.summarized.push(cut);
            } else {
                manifest.truncated.push(cut);
            }
            left -= c.tokens + opening;
            taken[index] = true;
            if let Some(entry) = heading.and_then(|h| headings.get_mut(&h)) {
                entry.1 = true;
            }
            chosen.push(c);
        }
        for (index, item) in self.items.iter().enumerate() {
            if !item.mandatory && !taken[index] {
                manifest.dropped.push(Dropped {
                    id: item.id.clone(),
                    tokens: costs[index],
                    reason: DropReason::Budget,
                });
            }
        }

        // Render: mandatory first, then by kind; within a kind, groups in the order they were
        // first offered, a conversation in chronological order, the rest as offered.
        // Messages without a group are one conversation, in time order like any other.
        let mut first_of_group: HashMap<Option<&str>, usize> = HashMap::new();
        for (index, item) in self.items.iter().enumerate() {
            if item.group.is_some() || item.kind == ItemKind::Message {
                first_of_group.entry(item.group.as_deref()).or_insert(index);
            }
        }
        let group_order = |c: &Candidate<'_>| match (c.item.kind, c.item.group.as_deref()) {
            (ItemKind::Message, group) | (_, group @ Some(_)) => first_of_group[&group],
            (_, None) => c.index,
        };
        chosen.sort_by(|a, b| {
            b.item
                .mandatory
                .cmp(&a.item.mandatory)
                .then(a.item.kind.cmp(&b.item.kind))
                .then(group_order(a).cmp(&group_order(b)))
                .then(match a.item.kind {
                    ItemKind::Message => a.item.at.cmp(&b.item.at).then(a.index.cmp(&b.index)),
                    _ => a.index.cmp(&b.index),
                })
        });
        let sections: Vec<Section> = chosen
            .into_iter()
            .map(|c| Section {
                id: c.item.id.clone(),
                kind: c.item.kind,
                title: c.item.title.clone(),
                text: c.text.into_owned(),
                role: c.item.role.clone(),
                tokens: c.tokens,
                tool_calls: c.calls.into_owned(),
                tool_call_id: c.item.tool_call_id.clone(),
                is_error: c.item.is_error,
                group: c.item.group.clone(),
            })
            .collect();
        let opened: usize = headings
            .values()
            .filter(|(_, used)| *used)
            .map(|(cost, _)| cost)
            .sum();
        Packet {
            tokens: sections.iter().map(|s| s.tokens).sum::<usize>() + opened,
            budget,
            unit: self.budget.unit(),
            sections,
            manifest,
        }
    }

    /// `text`'s length in the budget's unit.
    fn count(&self, text: &str) -> usize {
        match self.budget.unit() {
            BudgetUnit::Tokens => self.tokenizer.count(text),
            BudgetUnit::Chars => text.chars().count(),
        }
    }

    /// What an item costs rendered with `text`: its text and its frame (a block's heading
    /// line, a bullet's mark, a message's speaker), as [`Packet::to_markdown`] writes them.
    fn cost(&self, item: &Item, text: &str) -> usize {
        let chars = self.budget.unit() == BudgetUnit::Chars;
        let frame = match item.shape() {
            // `## title\n\n` … `\n\n`
            Shape::Block => self.count(&item.title) + if chars { 7 } else { 2 },
            // `- ` … `\n`
            Shape::Bullet => {
                if chars {
                    3
                } else {
                    1
                }
            }
            // `**role:** ` … `\n\n`, `**tool (id):** ` for a tool's answer
            Shape::Line => {
                let speaker = match (&item.tool_call_id, item.role.as_deref()) {
                    (Some(id), Some("tool")) => self.count(id) + 3,
                    _ => 0,
                };
                self.count(&item.title) + speaker + if chars { 8 } else { 2 }
            }
        };
        frame + self.count(text)
    }

    /// What a shared heading costs: `## heading\n\n`, and the blank line after its items.
    fn heading_cost(&self, heading: &str) -> usize {
        self.count(heading)
            + if self.budget.unit() == BudgetUnit::Chars {
                7
            } else {
                2
            }
    }

    /// What a message's tool calls cost: a line each, as [`ToolCall::to_text`] writes it.
    fn calls_cost(&self, calls: &[ToolCall]) -> usize {
        calls
            .iter()
            .map(|call| 1 + self.count(&call.to_text()))
            .sum()
    }

    /// The least text worth showing of a cut item.
    fn min_cut(&self) -> usize {
        match self.budget.unit() {
            BudgetUnit::Tokens => MIN_CUT_TOKENS,
            BudgetUnit::Chars => MIN_CUT_TOKENS * 4,
        }
    }

    /// The summarizer's compression of `text` into `budget` units, redacted; `None` without
    /// a summarizer, or when it fails or answers nothing.
    fn summarize(&self, item: &Item, text: &str, budget: usize) -> Option<String> {
        let summarizer = self.summarizer.as_ref()?;
        let request = SummaryRequest {
            id: &item.id,
            title: &item.title,
            text,
            budget,
            unit: self.budget.unit(),
        };
        let summary = summarizer.summarize(&request).ok()?;
        let summary = summary.trim();
        if summary.is_empty() {
            return None;
        }
        Some(match &self.redactor {
            Some(redactor) => crate::redact::replace(summary, &redactor.find(summary)),
            None => summary.to_owned(),
        })
    }

    /// `text` cut so that the item costs at most `units`, with a visible marker: its start
    /// kept, or its end for an item whose latest part matters most.
    fn truncate(&self, item: &Item, text: &str, units: usize) -> String {
        let ends: Vec<usize> = text.char_indices().map(|(i, _)| i).collect();
        let marker = if item.keep_end {
            CUT_FRONT_MARKER.trim_end()
        } else {
            CUT_MARKER.trim_start()
        };
        let candidate = |kept: usize| {
            if item.keep_end {
                let start = ends.get(ends.len() - kept).copied().unwrap_or(text.len());
                format!("{CUT_FRONT_MARKER}{}", &text[start..])
            } else {
                let end = ends.get(kept).copied().unwrap_or(text.len());
                format!("{}{CUT_MARKER}", &text[..end])
            }
        };
        let fits = |kept: usize| self.cost(item, &candidate(kept)) <= units;
        // Binary search on the number of characters kept.
        let (mut lo, mut hi) = (0usize, ends.len());
        while lo < hi {
            let mid = (lo + hi).div_ceil(2);
            if fits(mid) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        if fits(lo) {
            candidate(lo)
        } else {
            marker.to_owned()
        }
    }
}

/// An item's place in the order optional items are taken.
fn rank(item: &Item, index: usize) -> Rank {
    (item.priority, item.at, index)
}

/// The order in which optional items are taken: priority, then time (newest first), then
/// insertion (the last added first: among items of one time, the most recent).
type Rank = (i32, Option<DateTime<Utc>>, usize);

/// An item under consideration: borrowed, with its (possibly redacted) text and its cost.
struct Candidate<'a> {
    index: usize,
    item: &'a Item,
    text: Cow<'a, str>,
    calls: Cow<'a, [ToolCall]>,
    tokens: usize,
}

/// Redacts every string in `value` (keys are names, not secrets), adding the rules that
/// matched to `rules`.
fn redact_json(redactor: &Redactor, value: &mut serde_json::Value, rules: &mut Vec<String>) {
    match value {
        serde_json::Value::String(text) => {
            let found = redactor.find(text);
            if !found.is_empty() {
                *text = crate::redact::replace(text, &found);
                rules.extend(found.into_iter().map(|r| r.rule));
            }
        }
        serde_json::Value::Array(items) => {
            for item in items {
                redact_json(redactor, item, rules);
            }
        }
        serde_json::Value::Object(map) => {
            for item in map.values_mut() {
                redact_json(redactor, item, rules);
            }
        }
        _ => {}
    }
}

impl Packet {
    /// The packet as Markdown: a heading per section, or per group of bullets (facts, the
    /// agents' history), each conversation as a transcript under its own heading.
    pub fn to_markdown(&self) -> String {
        let mut md = String::new();
        // The shared heading open, and whether its items are bullets (closed by a blank line).
        let mut open: Option<(String, bool)> = None;
        for section in &self.sections {
            let shared = match (&section.role, section.kind, &section.group) {
                (Some(_), ItemKind::Message, group) => {
                    Some((conversation_heading(group.as_deref()), false))
                }
                (_, _, Some(group)) => Some((group.clone(), true)),
                _ => None,
            };
            if open.is_some() && open != shared {
                if let Some((_, true)) = open {
                    md.push('\n');
                }
                open = None;
            }
            match shared {
                None => md.push_str(&format!(
                    "## {}\n\n{}\n\n",
                    section.title,
                    section.text.trim()
                )),
                Some(heading) => {
                    if open.is_none() {
                        md.push_str(&format!("## {}\n\n", heading.0));
                        open = Some(heading.clone());
                    }
                    if heading.1 {
                        md.push_str(&format!("- {}\n", section.text.trim()));
                        continue;
                    }
                    let role = section.role.as_deref().unwrap_or_default();
                    let mut text = section.text.trim().to_owned();
                    for call in &section.tool_calls {
                        text.push('\n');
                        text.push_str(&call.to_text());
                    }
                    match (&section.tool_call_id, role) {
                        (Some(id), "tool") => {
                            md.push_str(&format!("**tool ({id}):** {}\n\n", text.trim()))
                        }
                        _ => md.push_str(&format!("**{role}:** {}\n\n", text.trim())),
                    }
                }
            }
        }
        if let Some((_, true)) = open {
            md.push('\n');
        }
        md
    }

    /// The packet as OpenAI Chat Completions messages: [`to_messages_for`](Self::to_messages_for)
    /// with [`Provider::OpenAiChat`].
    pub fn to_messages(&self) -> Vec<serde_json::Value> {
        self.to_messages_for(Provider::OpenAiChat)
            .unwrap_or_default()
    }

    /// The packet as input for `provider`'s API, valid whatever the builder kept or left out:
    ///
    /// - [`Provider::OpenAiChat`]: a `system` message with everything but the conversation,
    ///   then the conversation; an assistant message's `tool_calls` are each answered by a
    ///   `tool` message right after it.
    /// - [`Provider::OpenAiResponses`]: input items; the briefing as a `system` message,
    ///   `function_call` items each followed by their `function_call_output`.
    /// - [`Provider::Anthropic`]: `MessageParam`s; the first is the user's and carries the
    ///   briefing, roles alternate, `tool_use` blocks are answered by `tool_result` blocks at
    ///   the start of the next user message, system messages become user text.
    ///
    /// A call whose result is not right after it (the builder left it out, or it never came),
    /// and a result whose call is not right before it, are sent as text (`[tool call <id>]
    /// ...`, `[tool result <id>] ...`); ids the provider would refuse are replaced by stable
    /// ones; empty messages are left out. [`Provider::Mcp`] has no message format: a
    /// validation error.
    ///
    /// ```
    /// use handoff_core::context::{ContextBuilder, Message};
    /// use handoff_core::Provider;
    /// use serde_json::json;
    ///
    /// let mut b = ContextBuilder::new(1_000);
    /// b.add_message_values(&[
    ///     json!({"role": "user", "content": "find x"}),
    ///     json!({"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {"q": "x"}}]}),
    ///     json!({"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "3 hits"}]}),
    /// ]).unwrap();
    /// let chat = b.build().to_messages_for(Provider::OpenAiChat).unwrap();
    /// assert_eq!(chat[1]["tool_calls"][0]["function"]["arguments"], r#"{"q":"x"}"#);
    /// assert_eq!(chat[2], json!({"role": "tool", "tool_call_id": "toolu_1", "content": "3 hits"}));
    /// ```
    pub fn to_messages_for(&self, provider: Provider) -> Result<Vec<serde_json::Value>> {
        let briefing = Packet {
            sections: self
                .sections
                .iter()
                .filter(|s| s.kind != ItemKind::Message)
                .cloned()
                .collect(),
            ..self.clone()
        };
        let briefing = briefing.to_markdown();
        let conversation: Vec<&Section> = self
            .sections
            .iter()
            .filter(|s| s.kind == ItemKind::Message)
            .collect();
        messages::render(briefing.trim_end(), &conversation, provider)
    }

    /// The packet as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}
